"""Every value that ends up in a file or a command is checked where it enters:
names (agent/names.py), inventories, the node module's parameters, CLI options;
and the writers keep a second wall (paths inside their folder, no control
characters from input in any rendered file)."""

import copy
import os
import re
import stat

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from test_node import _blank_node, _module_params, _run_module, beonet_node  # noqa: F401

from beonet import cli
from beonet.agent import apply, backends, names
from beonet.compiler import pipeline
from beonet.gate.validate import anchored
from beonet.outputs import build, dryrun, inventory, tree
from beonet.outputs import plan as render

MESH = str(ROOT / "topologies/routed-mesh-2x2.yml")


@pytest.mark.parametrize("value,word", [
    ("eth0", None), ("enp1s0f0np0", None), ("eth0.100", None), ("ib0", None), ("a@b+c_d-e", None),
    ("x" * 15, None), ("x" * 16, "16 bytes"), ("", "empty"), (".", "folder"), ("..", "folder"),
    ("../etc", "'/'"), ("a/b", "'/'"), ("a b", "a space"), ("eth0\nDNS=1", "a line break"),
    ("a\tb", "a tab"), ("a\x00b", "control character"), ("eth0:1", "':'"), ("en%d", "'%'"),
    ("12", "only digits"), ("-eth0", "'-'"), ("e*", "'*'"), ('e"', "'\"'"), ("ét", "'é'"),
    (7, "not a number"), (None, "not null"), ({"a": 1}, "not a mapping"), (["a"], "not a list")])
def test_interface_names_follow_the_kernel_and_the_files_beonet_writes(value, word):
    why = names.ifname_problem(value)
    assert (why is None) == (word is None), why
    if word:
        assert word in why and "\n" not in why


@settings(max_examples=300, deadline=None, database=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x200), max_size=20))
def test_the_schema_pattern_and_the_check_agree(text):
    """The topology schema's patterns (for editors; '$' the end of the text, as
    ECMA-262 and the loader read it) and the checks are one rule."""
    assert (anchored(names.IFNAME_PATTERN).search(text) is not None) == (names.ifname_problem(text) is None)
    assert (anchored(names.NODE_NAME_PATTERN).search(text) is not None) == (
        names.node_name_problem(text) is None)


def _patterns(doc):
    """Every pattern of a JSON Schema: "pattern" values and "patternProperties" keys."""
    todo, out = [doc], []
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            out += [v["pattern"]] if isinstance(v.get("pattern"), str) else []
            keyed = v.get("patternProperties")
            out += list(keyed) if isinstance(keyed, dict) else []
            todo += list(v.values())
        elif isinstance(v, list):
            todo += v
    return out


@pytest.mark.parametrize("schema", ["topology", "cabling", "results"])
def test_no_schema_pattern_takes_a_name_with_a_line_break_at_its_end(schema):
    """Python's '$' (jsonschema's re.search, patternProperties) matches before a final line
    break: every pattern ends in names.END, the end of the text in ECMA-262 and in re."""
    from beonet.benchmarks import results_schema
    from beonet.cabling import reports
    from beonet.compiler.schema import SCHEMA
    doc = {"topology": SCHEMA, "cabling": reports.REPORTS_SCHEMA,
           "results": results_schema.schema("report")}[schema]
    found = _patterns(doc)
    assert found and all(p.endswith(names.END) for p in found), found
    for text in ("node-0-0", "rtt_p99_us", "tokex_stream_4_MBps", "ratio_window_8", "00:11:22:33:44:55"):
        assert not any(re.search(p, text + "\n") for p in found), text


@pytest.mark.parametrize("value,ok", [("node-0-0", True), ("a" * 63, True), ("a" * 64, False),
                                      ("0node", False), ("../x", False), ("a b", False),
                                      ("a\nb", False), (3, False)])
def test_node_names(value, ok):
    assert (names.node_name_problem(value) is None) == ok


def test_messages_escape_what_they_quote():
    assert names.shown("a\nb\x1b") == "'a\\nb\\x1b'"
    assert names.shown("x" * 100).endswith("...'")
    assert names.quoted("a\rb") == "'a\\rb'"
    assert list(names.control_characters({"a": ["ok", "b\u2028"], "k\n": 1})) == [
        ("a[1]", "b\u2028"), ("k\n", "k\n")]


def test_inside_resolves_dot_dot_and_links(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "out" / "link")
    assert names.inside(str(tmp_path / "out"), "nodes/a/x") == str(tmp_path / "out/nodes/a/x")
    for bad in ("../x", str(tmp_path / "elsewhere/x"), "link/passwd", "a/../../x"):
        with pytest.raises(ValueError, match="outside"):
            names.inside(str(tmp_path / "out"), bad)


# -- the writers' second wall ---------------------------------------------------------

def _plan():
    return render.plan(pipeline.compile_file(MESH))


def test_no_rendered_file_or_dry_run_holds_a_control_character_from_the_plan():
    plan = _plan()
    host = next(iter(plan["nodes"]))
    n = copy.deepcopy(plan["nodes"][host])
    n["interfaces"][0]["name"] = "eth1\nDNS=192.0.2.1"
    for backend in ("networkd", "networkmanager", "netplan", "ifupdown"):
        with pytest.raises(ValueError, match=r"control character at interfaces\[0\]\.name"):
            apply.persistent_files(n, [], backend)
    with pytest.raises(ValueError, match="control character"):
        dryrun.ip_route_text(n, host)
    with pytest.raises(ValueError, match="control character"):
        dryrun.ip_route_text(plan["nodes"][host], host + "\r")


def test_persistent_files_stay_in_the_network_configuration_folders():
    plan = _plan()
    n = copy.deepcopy(next(iter(plan["nodes"].values())))
    n["interfaces"][0]["name"] = "../../../../tmp/x"
    with pytest.raises(ValueError, match="outside the network configuration folders|plain absolute"):
        apply.persistent_files(n, [], "networkd")
    for path in ("/etc/passwd", "/etc/systemd/network/../../passwd", "relative/beonet"):
        assert backends.config_path_problem(path) is not None
    assert backends.config_path_problem("/etc/systemd/network/60-beonet-eth1.network") is None


def test_a_tampered_record_names_no_file_outside_the_folders():
    record = "/etc/systemd/network/60-beonet-old.network\n/etc/beonet-passwd\n" \
             "/etc/systemd/network/../../shadow-beonet\nrelative-beonet\n"
    assert backends.stale_paths(record, []) == ["/etc/systemd/network/60-beonet-old.network"]


def test_the_build_writer_refuses_control_characters_in_a_file(tmp_path):
    tree.fill(str(tmp_path), [("ok", "a\tb\nc é\n")])
    for bad in ("a\rb", "x\x1b[2J", "\u2028", "é\x00"):
        with pytest.raises(ValueError, match="control character"):
            tree.fill(str(tmp_path), [("bad", bad)])
    assert os.listdir(tmp_path) == ["ok"]


def test_a_build_checks_every_name_once():
    compiled = pipeline.compile_file(MESH)
    node = compiled.graph.nodes[0]
    build.plain_names(compiled.graph, {node.name: {"eth1": "ens4"}})
    with pytest.raises(ValueError, match="control character"):
        build.plain_names(compiled.graph, {node.name: {"eth1": "ens4\nDNS=1"}})


def test_the_build_writer_refuses_a_path_leaving_its_folder(tmp_path):
    for bad in ("../x", "a/../../x", "/a/./b", "a//b", "a\nb"):
        with pytest.raises(ValueError, match="outside"):
            tree.fill(str(tmp_path), [(bad, "text")])
    assert os.listdir(tmp_path) == []


# -- the node module's parameters --------------------------------------------------------

@pytest.mark.parametrize("change,expect", [
    (lambda n: n["interfaces"][0].update(name="../../etc/x"), "plan.interfaces[0].name: '../../etc/x'"),
    (lambda n: n["interfaces"][0].update(name=5), "plan.interfaces[0].name: must be an interface name"),
    (lambda n: n["routes"][0].update(via="10.0.0.1\nDNS=1"), "plan.routes[0].via:"),
    (lambda n: n["routes"][0].update(to="10.0.0.0/33"), "plan.routes[0].to: '10.0.0.0/33' is not"),
    (lambda n: n.update(address=None), "plan.address: must be an IPv4 address, not null"),
    (lambda n: n["interfaces"][0].update(mtu=10**9), "plan.interfaces[0].mtu: must be a whole number"),
    (lambda n: n.update(forwarding="yes"), "plan.forwarding: must be true or false"),
    (lambda n: n["interfaces"][0].update(segment="x\x1b[2J"), "plan.interfaces[0].segment: holds a "
     "control character: 'x\\x1b[2J'")])
def test_the_node_module_refuses_a_bad_plan_before_reading_the_node(beonet_node, monkeypatch,  # noqa: F811
                                                                   change, expect):
    plan = _plan()
    host = next(h for h, n in plan["nodes"].items() if n["routes"])
    params = _module_params(plan, host)
    live = _blank_node(plan["nodes"][host])
    params["plan"] = copy.deepcopy(params["plan"])
    change(params["plan"])
    out, commands = _run_module(beonet_node, monkeypatch, params, live)
    assert out.failed and not out.result["changed"] and commands == []
    assert any(p.startswith("%s: %s" % (host, expect)) for p in out.result["problems"]), \
        out.result["problems"]


@pytest.mark.parametrize("key,value,expect", [
    ("management_interface", "eth0;reboot", "management_interface: 'eth0;reboot' holds ';'"),
    ("prefixes", ["10.0.0.0/8", "x"], "prefixes[1]: 'x' is not an IPv4 network"),
    ("down", ["../x"], "down[0]: '../x' is not a name"),
    ("node", "a\nb", None)])
def test_the_node_module_refuses_bad_parameters(beonet_node, monkeypatch, key, value, expect):  # noqa: F811
    plan = _plan()
    host = next(iter(plan["nodes"]))
    params = dict(_module_params(plan, host), **{key: value})
    out, commands = _run_module(beonet_node, monkeypatch, params, _blank_node(plan["nodes"][host]))
    assert out.failed and commands == []
    problems = out.result["problems"]
    assert any(expect in p for p in problems) if expect else problems == [
        "node: 'a\\nb' is not a name: a letter, then letters, digits, '_', '.' or '-' (at most 63)"]


# -- inventories -----------------------------------------------------------------------

def _compile_with(tmp_path, inv, capsys, *extra):
    out = tmp_path / "plan.json"
    code = cli.main(["compile", MESH, "-i", str(inv), "-o", str(out), *extra])
    err = capsys.readouterr().err
    assert not out.exists() and "Traceback" not in err
    return code, err


def test_an_inventory_ansible_cannot_parse_is_an_error_not_an_empty_inventory(tmp_path, capsys):
    inv = tmp_path / "hosts.ini"
    inv.write_text("[nodes\nnode-0-0 ansible_host=\n")
    code, err = _compile_with(tmp_path, inv, capsys)
    assert code == 2 and "not an inventory Ansible can read" in err and "lacks node" not in err
    assert err.startswith(str(inv))


def test_an_inventory_script_that_hangs_is_stopped(tmp_path, capsys, monkeypatch):
    inv = tmp_path / "inventory.sh"
    inv.write_text("#!/bin/sh\nsleep 30\n")
    inv.chmod(inv.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("BEONET_INVENTORY_TIMEOUT", "1")
    code, err = _compile_with(tmp_path, inv, capsys)
    assert code == 2 and "took more than 1 s" in err


def test_host_vars_files_are_checked_and_named(tmp_path, capsys):
    inv = tmp_path / "hosts.yml"
    hosts = list(_plan()["nodes"])
    inv.write_text("nodes:\n  hosts:\n" + "".join("    %s:\n" % h for h in hosts))
    (tmp_path / "host_vars").mkdir()
    (tmp_path / "host_vars" / ("%s.yml" % hosts[1])).write_text(
        "beonet_interfaces:\n  eth1: ens4\n  eth2: \"ens5\\n[Network]\"\n")
    code, err = _compile_with(tmp_path, inv, capsys)
    assert code == 2
    assert err.splitlines()[0] == (
        "%s/host_vars/%s.yml:3: beonet_interfaces.eth2: host %s: 'ens5\\n[Network]' holds a line "
        "break, '[', ']': an interface name is %s" % (tmp_path, hosts[1], hosts[1], names.IFNAME_RULE))


def test_yaml_beside_the_inventory_is_bounded_too(tmp_path, capsys):
    inv = tmp_path / "hosts.yml"
    inv.write_text("nodes:\n  hosts:\n    node-0-0:\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("x: " + "[" * 10000 + "]" * 10000 + "\n")
    code, err = _compile_with(tmp_path, inv, capsys)
    assert code == 2 and "group_vars/all.yml:1: YAML nesting deeper than 50 levels" in err


def test_the_management_interface_of_the_inventory_must_be_a_name():
    assert inventory.management_of({"a": {inventory.MANAGEMENT: 3}, "b": {}}) is None
    assert inventory.management_of({"a": {inventory.MANAGEMENT: "eno1"}}) == "eno1"


# -- CLI options -----------------------------------------------------------------------

@pytest.mark.parametrize("argv,expect", [
    (["build", MESH, "-o", ""], "beonet build: -o: an empty value"),
    (["compile", MESH, "-o", ""], "beonet compile: -o: an empty value"),
    (["export", MESH, "hostfile", "--slots", "1" + "0" * 26], "from 1 to 65536"),
    (["lab", "up", MESH, "--miswire", "-1"], "from 0 to 10000")])
def test_options_out_of_bounds_are_refused(argv, expect, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    try:
        code = cli.main(argv)
    except SystemExit as exc:           # argparse's own usage error
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and expect in err and os.listdir(tmp_path) == []


def test_a_write_error_names_the_file_it_could_not_write(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    code = cli.main(["compile", MESH, "-o", str(tmp_path / "file/plan.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert "None" not in err and "cannot write '%s/file" % tmp_path in err


# -- pipes, links and clashes: nothing blocks, nothing is written beside the point -------

def test_a_pipe_is_named_not_waited_on(tmp_path, capsys):
    os.mkfifo(tmp_path / "t.yml")
    assert cli.main(["compile", str(tmp_path / "t.yml")]) == 2
    assert "t.yml: cannot read: a pipe, socket or device, not a file" in capsys.readouterr().err
    assert cli.main(["compile", MESH, "-o", str(tmp_path / "t.yml")]) == 2
    assert "cannot write '%s': no process reads this pipe" % (tmp_path / "t.yml") in capsys.readouterr().err


def _inventory(tmp_path):
    hosts = list(_plan()["nodes"])
    (tmp_path / "hosts.yml").write_text("nodes:\n  hosts:\n" + "".join("    %s:\n" % h for h in hosts))
    (tmp_path / "host_vars").mkdir()
    return tmp_path / "hosts.yml", hosts


def test_what_ansible_reads_beside_an_inventory_is_bounded_too(tmp_path, capsys):
    inv, hosts = _inventory(tmp_path)
    os.mkfifo(tmp_path / "host_vars" / hosts[0])                     # would block Ansible
    (tmp_path / "host_vars" / hosts[1]).write_text(_bomb())          # no extension: YAML all the same
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.json").write_text("[" * 100 + "]" * 100)
    for k in range(3):                                               # links to folders: not followed
        os.symlink("..", tmp_path / "group_vars" / ("loop%d" % k))
    code, err = _compile_with(tmp_path, inv, capsys)
    assert code == 2
    assert "host_vars/%s: a pipe, socket or device where Ansible would read a file" % hosts[0] in err
    assert "host_vars/%s: YAML aliases expand to more than 100000 nodes" % hosts[1] in err
    assert "group_vars/all.json: JSON nesting deeper than 50 levels" in err


def _bomb():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += ["a%d: &a%d [%s]" % (k, k, ", ".join(["*a%d" % (k - 1)] * 10)) for k in range(1, 7)]
    return "\n".join(lines) + "\n"


def test_a_host_vars_file_is_named_over_the_inventory_it_overrides(tmp_path, capsys):
    inv, hosts = _inventory(tmp_path)
    inv.write_text(inv.read_text().replace("    %s:\n" % hosts[0], "    %s:\n      beonet_interfaces:\n"
                                           % hosts[0]))
    (tmp_path / "host_vars" / ("%s.yml" % hosts[0])).write_text("beonet_interfaces: ens4\n")
    code, err = _compile_with(tmp_path, inv, capsys)
    assert code == 2 and err.startswith("%s/host_vars/%s.yml:1: beonet_interfaces: host %s: must be a "
                                        "mapping" % (tmp_path, hosts[0], hosts[0]))


def test_a_build_that_cannot_write_every_file_writes_none(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "routes.txt").mkdir(parents=True)
    assert cli.main(["build", MESH, "-o", str(out)]) == 2
    assert "cannot write '%s/routes.txt': a folder, not a file" % out in capsys.readouterr().err
    assert os.listdir(out) == ["routes.txt"]


@pytest.mark.parametrize("argv,expect", [
    (["compile", MESH, "-o", MESH], "is also what the command reads"),
    (["compile", MESH, "-i", ""], "-i (inventory): an empty value"),
    (["cabling", MESH, "--discovered", MESH, "--report", MESH], "--report"),
    (["compile", MESH, "-o", "x" * 300], "File name too long")])
def test_an_output_that_clashes_is_refused_before_anything(argv, expect, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = (ROOT / "topologies/routed-mesh-2x2.yml").read_bytes()
    assert cli.main(argv) == 2
    assert expect in capsys.readouterr().err
    assert (ROOT / "topologies/routed-mesh-2x2.yml").read_bytes() == before and os.listdir(tmp_path) == []


def test_text_that_is_no_address_is_a_value_error_never_an_os_error():
    # the command line reports an OSError as a file it could not write
    from beonet.compiler.model import ip_int
    assert ip_int("10.0.0.1") == 0x0A000001
    for bad in ("10.0.0.300", "abc", "", "1.2.3.4.5"):
        with pytest.raises(ValueError, match="not an IPv4 address"):
            ip_int(bad)
