"""The in-sync fast path (agent/fast.py): the shell command that stands for a node's
state, and the module storing the fingerprint only where the node was found in sync."""

import pytest
import test_node_preflight
from conftest import ROOT
from test_node import _blank_node, _Exit, _FakeModule, _simulate, beonet_node  # noqa: F401

from beonet.agent import fast
from beonet.compiler import pipeline
from beonet.outputs import plan as render

lib, single = test_node_preflight.lib, test_node_preflight.single      # the fixtures


def _node(name, topology="routed-mesh.yml"):
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies" / topology)))
    return plan, plan["nodes"][name]


def test_the_dump_reads_what_the_check_reads_in_the_c_locale_and_only_hashes_it():
    _plan, n = _node("node-0-0")
    cmd = fast.dump_command(n)
    assert cmd.startswith("{ export LC_ALL=C ") and cmd.endswith("; } </dev/null 2>&1 | sha256sum")
    for part in ("ip -j link show dev eth1", "ip -j -4 addr show dev eth2", "ip -j route show table main",
                 "/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv4/neigh/eth1/base_reachable_time_ms",
                 "nft list table inet beonet", "cat $(cat /var/lib/beonet/files)", "/etc/os-release",
                 "/etc/NetworkManager/system-connections/*",
                 "/etc/systemd/system/*.wants/NetworkManager.service",
                 "ls -AR /var/lib/beonet/checkpoint"):
        assert part in cmd, part
    assert fast.dump_command(n) == cmd                       # the same on the controller and the node
    assert fast.check_command(n) == "cat /run/beonet/fingerprint 2>/dev/null || echo none; " + cmd


def test_the_nodes_sha_is_the_dumps_first_word_and_none_when_the_shell_gives_nothing(monkeypatch):
    _plan, n = _node("node-0-0")
    ran = []
    monkeypatch.setattr(fast.procs, "run", lambda argv, timeout: ran.append(argv) or (0, "5ha  -\n", ""))
    assert fast.dump_sha(n) == "5ha" and ran == [["/bin/sh", "-c", fast.dump_command(n)]]
    monkeypatch.setattr(fast.procs, "run", lambda argv, timeout: (fast.procs.TIMED_OUT, "", "no answer"))
    assert fast.dump_sha(n) is None


def test_a_bonds_members_are_read_too():
    _plan, n = _node("node01", "bonded-dual-net.yml")
    members = [m for i in n["interfaces"] for m in i.get("members", [])]
    assert members and all("ip -j link show dev %s;" % m in fast.dump_command(n) for m in members)


@pytest.mark.parametrize("check_mode,token,stored", [(False, "t0k", "t0k 5ha\n"), (True, "t0k", None),
                                                       (False, "", None)])
def test_the_module_stores_the_fingerprint_of_a_node_found_in_sync(lib, single, monkeypatch, tmp_path,
                                                                   check_mode, token, stored):
    plan, n = single
    written = {}
    monkeypatch.setattr(lib.fast, "dump_sha", lambda n: "5ha")
    monkeypatch.setattr(lib, "atomic_write",
                        lambda path, text, mode=None, durable=True: written.update({path: text}))
    params = {"node": "node01", "plan": n, "fingerprint": token, "preflight": True}
    fake = _FakeModule(lib, params, _blank_node(n), check_mode=check_mode)
    with pytest.raises(_Exit) as exc:
        lib._preflight_exit(fake, {"changed": False}, True)
    assert not exc.value.failed and written.get(fast.FINGERPRINT) == stored


def test_a_node_not_in_sync_stores_nothing(lib, single, monkeypatch):
    plan, n = single
    written = {}
    monkeypatch.setattr(lib.fast, "dump_sha", lambda n: "5ha")
    monkeypatch.setattr(lib, "atomic_write",
                        lambda path, text, mode=None, durable=True: written.update({path: text}))
    params = {"node": "node01", "plan": n, "fingerprint": "t0k", "preflight": True}
    fake = _FakeModule(lib, params, _blank_node(n), check_mode=False)
    with pytest.raises(_Exit):
        lib._preflight_exit(fake, {"changed": True}, False)
    assert written == {}


def test_with_frr_the_dump_reads_beonets_routes_and_frrs_daemons_not_what_ospf_learns():
    import yaml

    topo = yaml.safe_load((ROOT / "topologies" / "routed-mesh.yml").read_text())
    topo["routing"] = {"engine": "frr"}
    n = render.plan(pipeline.compile_text(yaml.safe_dump(topo), "t.yml"))["nodes"]["node-0-0"]
    cmd = fast.dump_command(n)
    assert "ip -j route show table main proto 250; ps -C zebra,ospfd,bfdd -o pid=,comm=;" in cmd
    assert "ip -j route show table main;" in fast.dump_command(_node("node-0-0")[1])


def test_the_agent_digest_covers_the_agents_code(monkeypatch):
    import copy
    import importlib.util

    first = fast.agent_digest()
    assert len(first) == 64 and fast.agent_digest() == first
    real = importlib.util.find_spec

    def edited(name, *args):
        spec = real(name, *args)
        if name.endswith(".frr"):
            spec = copy.copy(spec)       # not the imported module's own spec
            spec.loader = type("L", (), {"get_source": lambda self, n: "# another FRR renderer\n"})()
        return spec
    monkeypatch.setattr(importlib.util, "find_spec", edited)
    assert fast.agent_digest() != first


def test_the_agent_digest_is_the_same_under_any_package_name():
    """The controller's compile runs as a module (ansible.module_utils.beonet), in place
    (beonet) or from the collection: one agent, one digest."""
    import importlib

    import ansible.module_utils
    from conftest import ROOT
    if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
        ansible.module_utils.__path__.append(str(ROOT / "module_utils"))
    other = importlib.import_module("ansible.module_utils.beonet.agent.fast")
    assert other is not fast and other.agent_digest() == fast.agent_digest()


def test_only_the_stored_line_for_this_token_and_the_state_now_matches():
    assert fast.matches("tok 5ha\n5ha  -\n", "tok")
    assert not fast.matches("tok 5ha\n6hb  -\n", "tok")          # the node changed since
    assert not fast.matches("old 5ha\n5ha  -\n", "tok")          # another plan or parameters
    assert not fast.matches("none\n5ha  -\n", "tok")             # never found in sync
    assert not fast.matches("tok 5ha\n", "tok")                  # the dump did not answer
    assert not fast.matches("tok 5ha\n\n", "tok")
    assert not fast.matches(" 5ha\n5ha  -\n", "")                # no token: never
    assert not fast.matches("", "tok")
