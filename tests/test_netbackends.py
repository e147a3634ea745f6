"""The registry of network backends (agent/netbackends): every list of backends in the
project is the registry's, or held to it here (the YAML and shell ones cannot import
it); a registry whose backends clash is refused at import; the sub-package travels
in a bundle as in a module."""

import ast
import dataclasses
import json
import pkgutil
import re
import shlex
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from test_failover_node import diamond

from beonet.agent import apply, backends, bundle, fast, netbackends
from beonet.agent.netbackends import Backend, check, networkd, networkmanager

NAMES = ("networkd", "networkmanager", "netplan", "ifupdown")
PLAN_MODULES = ("names", "nodeplan", "routes", "netbackends.base", "netbackends.networkd",
                "netbackends.networkmanager", "netbackends.netplan", "netbackends.ifupdown", "netbackends")


def _like(b, **changes):
    return dataclasses.replace(b, **changes)


def test_the_registry_holds_every_module_of_its_folder_in_the_choices_order():
    modules = {m.name for m in pkgutil.iter_modules(netbackends.__path__)} - {"base"}
    assert netbackends.NAMES == NAMES and set(NAMES) == modules
    assert all(getattr(netbackends, name).BACKEND is netbackends.BACKENDS[name] for name in NAMES)
    assert [b.name for b in netbackends.by_rank()] == ["netplan", "networkmanager", "networkd", "ifupdown"]
    assert netbackends.units() == ("systemd-networkd.service", "NetworkManager.service", "networking.service")


@pytest.mark.parametrize("backends,message", [
    ([networkd.BACKEND, _like(networkmanager.BACKEND, name="networkd")],
     "name networkd is already networkd's"),
    ([networkd.BACKEND, _like(networkmanager.BACKEND, aliases=("networkd",))],
     "backend networkmanager: name networkd is already networkd's"),
    ([networkd.BACKEND, _like(networkmanager.BACKEND, rank=networkd.BACKEND.rank)],
     "backend networkmanager: rank 2 is already networkd's"),
    ([networkd.BACKEND, _like(networkmanager.BACKEND, aliases=("Nm",))],
     "name 'Nm' is not a lower-case word"),
    ([networkd.BACKEND, _like(networkmanager.BACKEND, name="net-manager")],
     "'net-manager' is not a lower-case"),
    ([networkd.BACKEND, "networkmanager"], "'networkmanager' is not a Backend"),
])
def test_a_registry_whose_backends_clash_is_refused(backends, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check(backends)


def test_a_backend_missing_a_declaration_fails_where_it_is_made():
    with pytest.raises(TypeError, match="present"):
        Backend(name="wicked", title="wicked", unit=None, rank=9, detect=bool, files=dict, reload=list,
                folders=(), watched=(), packages=())  # type: ignore[call-arg]


def test_a_name_or_an_alias_finds_its_backend_and_another_is_refused(monkeypatch):
    assert netbackends.get("netplan") is netbackends.BACKENDS["netplan"]
    with pytest.raises(ValueError,
                       match="backend 'nm' is not one of networkd, networkmanager, netplan, ifupdown"):
        netbackends.get("nm")
    with_alias = check([networkd.BACKEND, _like(networkmanager.BACKEND, aliases=("nm",))])
    monkeypatch.setattr(netbackends, "BACKENDS", with_alias)
    assert netbackends.canonical("nm") == "networkmanager" and netbackends.canonical("networkd") == "networkd"


def test_an_unknown_backend_renders_nothing():
    with pytest.raises(ValueError, match="backend 'wicked' is not one of"):
        backends.backend_files({"interfaces": [], "routes": []}, "wicked")


def test_the_words_listing_the_backends():
    assert netbackends.in_words() == "networkd, networkmanager, netplan or ifupdown"
    assert netbackends.in_words(["a"]) == "a"


def _documentation(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    text = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == "DOCUMENTATION")
    return yaml.safe_load(text)


def test_the_modules_documented_choices_are_the_registrys():
    """The argument spec takes them from the registry; ansible-test holds the doc to the spec."""
    doc = _documentation(ROOT / "library/beonet_node.py")
    assert doc["options"]["backend"]["choices"] == ["auto", *NAMES]


def test_the_roles_argument_spec_and_default_are_the_registrys():
    spec = yaml.safe_load((ROOT / "roles/beonet_node/meta/argument_specs.yml").read_text(encoding="utf-8"))
    assert spec["argument_specs"]["main"]["options"]["beonet_node_backend"]["choices"] == ["auto", *NAMES]
    defaults = yaml.safe_load((ROOT / "roles/beonet_node/defaults/main.yml").read_text(encoding="utf-8"))
    assert defaults["beonet_node_backend"] in ["auto", *NAMES]


def test_the_vm_images_are_the_registrys_with_its_packages():
    script = (ROOT / "scripts/build-vm-image.sh").read_text(encoding="utf-8")
    variants = re.search(r"^VARIANTS=\((.*)\)$", script, re.M)
    assert variants and tuple(variants.group(1).split()) == NAMES
    body = re.search(r"^extra_packages\(\) \{\n(.*?)^\}", script, re.M | re.S)
    assert body
    cases = dict(re.findall(r"^\s+([\w*]+)\) echo ?(.*?) ;;$", body.group(1), re.M))
    assert {k: tuple(v.split()) for k, v in cases.items() if k != "*"} == {
        b.name: b.packages for b in netbackends.BACKENDS.values() if b.packages}
    assert cases["*"] == "" and "[%s|all]" % "|".join(NAMES) in script


@pytest.fixture()
def node():
    """Node a of a diamond: a multipath route and a single one."""
    return diamond()


def test_the_fast_paths_fingerprint_reads_every_backends_files_units_and_programs(node):
    parts = fast.dump_command(node).split("; ")
    read = {word for p in parts if p.startswith("cat ") for word in p.split()}
    listed = {word for p in parts if p.startswith("ls -d ") for word in p.split()}
    for b in netbackends.BACKENDS.values():
        assert set(b.watched) <= read and set(b.present) <= listed, b.name
        assert b.unit is None or "/etc/systemd/system/*.wants/%s" % b.unit in listed
    assert {"/etc/NetworkManager/conf.d/*", "/etc/network/interfaces", "/etc/netplan/*.yaml"} <= read


@pytest.mark.parametrize("name", NAMES)
def test_every_file_a_backend_writes_lies_in_its_folders_with_its_mode(node, name):
    b = netbackends.BACKENDS[name]
    files = apply.persistent_files(node, [], name, "networkmanager" if name == "netplan" else "networkd")
    own = [p for p in files if any(p.startswith(d + "/") for d in b.folders)]
    assert own and all(backends.config_path_problem(p) is None for p in files)
    assert all(apply.file_mode(p) == (b.mode(p) or 0o644) for p in own)


def _python(command):
    argv = shlex.split(command)
    assert argv[0] == "python3" and argv[1:3] == ["-I", "-S"]
    return subprocess.run([sys.executable] + argv[1:], capture_output=True, text=True, timeout=60, env={})


def test_the_backends_sub_package_travels_in_a_bundle_and_renders_the_same(node):
    main = ("r=sys.modules['beonet_agent.netbackends']\n"
            "print(json.dumps([r.__package__, r.base.__package__, sorted(r.NAMES),\n"
            " {n: r.get(n).files(A['node'], 'networkd') for n in r.NAMES}]))\n")
    done = _python(bundle.command(PLAN_MODULES, main, {"node": node}))
    assert done.returncode == 0, done.stderr
    package, base_package, names, files = json.loads(done.stdout)
    assert (package, base_package, names) == ("beonet_agent.netbackends", "beonet_agent.netbackends",
                                              sorted(NAMES))
    assert files == {n: backends.backend_files(node, n) for n in NAMES}


def test_a_bundle_names_a_sub_packages_module_by_its_path():
    got = bundle.sources(["netbackends.base", "netbackends"])
    assert [(name, package) for name, _source, package in got] == [("netbackends.base", False),
                                                                    ("netbackends", True)]
    init = ROOT / "module_utils/beonet/agent/netbackends/__init__.py"
    assert got[1][1] == init.read_text(encoding="utf-8")
    with pytest.raises(FileNotFoundError):
        bundle.sources(["netbackends.wicked"])


def test_the_agent_digest_covers_the_backends_modules(monkeypatch):
    import copy
    import importlib.util

    first = fast.agent_digest()
    real = importlib.util.find_spec

    def edited(name, *args):
        spec = real(name, *args)
        if name.endswith(".netbackends.ifupdown"):
            spec = copy.copy(spec)
            spec.loader = type("L", (), {"get_source": lambda self, n: "# another ifupdown renderer\n"})()
        return spec
    monkeypatch.setattr(importlib.util, "find_spec", edited)
    assert fast.agent_digest() != first


def test_beonet_build_offers_every_backend_of_the_registry(tmp_path):
    from beonet import cli
    args = cli.parser(["build"]).parse_args(["build", "t.yml", "-o", str(tmp_path)])
    assert args.backend == "networkd"
    for name in netbackends.NAMES:
        assert cli.parser(["build"]).parse_args(
            ["build", "t.yml", "-o", str(tmp_path), "--backend", name]).backend == name
    with pytest.raises(SystemExit) as refused:
        cli.parser(["build"]).parse_args(["build", "t.yml", "-o", str(tmp_path), "--backend", "nm"])
    assert refused.value.code == 2
