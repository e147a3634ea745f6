"""The Ansible collection beonet.cluster and the Python package, as users install them.

The collection is built with scripts/build-collection.py, installed from its
tarball into a scratch project that knows nothing of this repository (no
ansible.cfg of ours, no library/module_utils/roles paths) and used by FQCN only.
The wheel is built from a copy of the sources with the setuptools of the venv (no network).
"""

import configparser
import email.parser
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest
import yaml
from conftest import ROOT

BIN = os.path.dirname(sys.executable)
TOPOLOGY = ROOT / "topologies" / "routed-mesh-2x2.yml"
NODES = ("node-0-0", "node-0-1", "node-1-0", "node-1-1")
CORE = {"pyyaml", "jsonschema"}
EXTRAS = {"lab", "plots", "dev"}


def _load_build_script():
    path = ROOT / "scripts" / "build-collection.py"
    spec = importlib.util.spec_from_file_location("build_collection", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = _load_build_script()


def run(cmd, cwd, env=None):
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert res.returncode == 0, "%s failed:\n%s%s" % (" ".join(map(str, cmd)), res.stdout, res.stderr)
    return res.stdout


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(collection tree, tarball) built into a scratch folder."""
    out = tmp_path_factory.mktemp("collection")
    tarball = run([sys.executable, ROOT / "scripts" / "build-collection.py", "--out", out], ROOT).strip()
    return out / "ansible_collections" / "beonet" / "cluster", tarball


@pytest.fixture(scope="module")
def project(built, tmp_path_factory):
    """(scratch project folder, environment) with the tarball installed and nothing of ours configured."""
    folder = tmp_path_factory.mktemp("project")
    (folder / "ansible.cfg").write_text("", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(folder / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_COLLECTIONS_PATH=str(folder / "collections"), ANSIBLE_HOME=str(folder / ".ansible"),
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    run([os.path.join(BIN, "ansible-galaxy"), "collection", "install", "--offline",
         "-p", folder / "collections", built[1]], folder, env)
    # Documentation addresses: any connection attempt would fail the run.
    hosts = {n: {"ansible_host": "192.0.2.%d" % (10 + i)} for i, n in enumerate(NODES)}
    inventory = {"beonet_nodes": {"hosts": hosts, "vars": {"beonet_topology_file": str(TOPOLOGY)}}}
    (folder / "hosts.yml").write_text(yaml.safe_dump(inventory), encoding="utf-8")
    return folder, env


def playbook(project, *args):
    folder, env = project
    return run([os.path.join(BIN, "ansible-playbook"), "-i", "hosts.yml", *args], folder, env)


def tasks_of(data):
    """Every task of a list of plays or tasks, blocks included."""
    for item in data or []:
        yield item
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from tasks_of(item.get(key))


# --- the build ---------------------------------------------------------------

def test_fqcn_rewrite_touches_module_and_role_calls_only():
    text = ("- name: Compile\n  beonet_topology:\n    topology: x\n"
            "  roles:\n    - beonet_plan\n    - role: beonet_node\n"
            "module: beonet_topology\nbeonet_node_backend: auto\n  loop:\n    - beonet_plan_result\n"
            "- name: Check\n  ansible.builtin.import_role:\n    name: beonet_preflight\n")
    assert build.to_fqcn(text) == (
        "- name: Compile\n  beonet.cluster.beonet_topology:\n    topology: x\n"
        "  roles:\n    - beonet.cluster.beonet_plan\n    - role: beonet.cluster.beonet_node\n"
        "module: beonet_topology\nbeonet_node_backend: auto\n  loop:\n    - beonet_plan_result\n"
        "- name: Check\n  ansible.builtin.import_role:\n    name: beonet.cluster.beonet_preflight\n")
    assert build.to_collection_imports("from ansible.module_utils.beonet.agent import apply\n"
                                       "from ansible.module_utils.basic import AnsibleModule\n") == (
        "from ansible_collections.beonet.cluster.plugins.module_utils.beonet.agent import apply\n"
        "from ansible.module_utils.basic import AnsibleModule\n")


def test_module_utils_are_what_the_modules_import(tmp_path):
    files = {
        "library/beonet_topology.py": "try:\n    from ansible.module_utils.beonet.compiler import pipeline\n"
                                      "except ImportError:\n    pass\n",
        "module_utils/beonet/__init__.py": "",
        "module_utils/beonet/cli.py": "from .compiler import unused\n",
        "module_utils/beonet/compiler/__init__.py": "",
        "module_utils/beonet/compiler/pipeline.py": "from . import load\nfrom .model import Graph\n",
        "module_utils/beonet/compiler/load.py": "def f():\n    from ..outputs.plan import render\n",
        "module_utils/beonet/compiler/model.py": "import yaml\n",
        "module_utils/beonet/compiler/unused.py": "",
        "module_utils/beonet/outputs/__init__.py": "",
        "module_utils/beonet/outputs/plan.py": "",
    }
    for module in build.MODULES:
        files.setdefault("library/%s.py" % module, "")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    base = tmp_path / "module_utils" / "beonet"
    found = {p.relative_to(base).as_posix() for p in build.module_utils_files(tmp_path)}
    assert found == {"__init__.py", "compiler/__init__.py", "compiler/pipeline.py", "compiler/load.py",
                     "compiler/model.py", "outputs/__init__.py", "outputs/plan.py"}


def test_version_comes_from_the_package_only(tmp_path):
    (tmp_path / "collection").mkdir()
    (tmp_path / "collection" / "galaxy.yml").write_text("namespace: beonet\nversion: 1.0.0\n",
                                                        encoding="utf-8")
    with pytest.raises(build.BuildError, match="galaxy.yml must not set version"):
        build.galaxy_yml(tmp_path, "0.2.0")
    init = tmp_path / "module_utils" / "beonet" / "__init__.py"
    init.parent.mkdir(parents=True)
    init.write_text('"""No version."""\n', encoding="utf-8")
    with pytest.raises(build.BuildError, match="no __version__"):
        build.package_version(tmp_path)


def test_built_collection_uses_fqcn_and_collection_imports(built):
    tree, tarball = built
    version = build.package_version()
    assert tarball.endswith("beonet-cluster-%s.tar.gz" % version)
    assert yaml.safe_load((tree / "galaxy.yml").read_text())["version"] == version
    assert yaml.safe_load((tree / "meta" / "runtime.yml").read_text())["requires_ansible"] == ">=2.16.0"
    assert (tree / "requirements.txt").read_text().split()[-2:] == ["PyYAML", "jsonschema"]
    for module in build.MODULES:
        text = (tree / "plugins" / "modules" / ("%s.py" % module)).read_text()
        assert "ansible.module_utils.beonet" not in text
        assert "ansible_collections.beonet.cluster.plugins.module_utils.beonet." in text
    short = set(build.MODULES) | set(build.ROLES)
    for path in list(tree.glob("roles/*/tasks/*.yml")) + list(tree.glob("playbooks/*.yml")):
        data = yaml.safe_load(path.read_text())
        for task in tasks_of(data):
            assert not short & set(task), "%s: %s called by short name" % (path.name, short & set(task))
            roles = [r["role"] if isinstance(r, dict) else r for r in task.get("roles", [])]
            assert all(r.startswith("beonet.cluster.") for r in roles), "%s: roles %s" % (path.name, roles)
            for key in ("ansible.builtin.import_role", "ansible.builtin.include_role"):
                name = (task.get(key) or {}).get("name", "beonet.cluster.")
                assert name.startswith("beonet.cluster."), "%s: %s %s" % (path.name, key, name)
    package = tree / "plugins" / "module_utils" / "beonet"
    shipped = {p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file()}
    assert shipped == {p.relative_to(ROOT / "module_utils" / "beonet").as_posix()
                       for p in build.module_utils_files()}
    assert {"compiler/pipeline.py", "agent/apply.py", "benchmarks/plots.py", "outputs/dryrun.py"} <= shipped
    assert not {"cli.py", "labs/__init__.py", "outputs/drawing.py"} & shipped


# --- the installed collection ------------------------------------------------

def test_dry_run_by_fqcn_from_the_installed_tarball(project, tmp_path):
    play = tmp_path / "dry.yml"
    play.write_text(yaml.safe_dump([
        {"name": "Plan", "hosts": "beonet_nodes", "gather_facts": False,
         "roles": [{"role": "beonet.cluster.beonet_plan"}],
         "tasks": [{"name": "Routes", "ansible.builtin.debug": {
             "msg": "{{ beonet_plan_result.routes_text[inventory_hostname].splitlines() }}"}}]},
        {"name": "Module", "hosts": "localhost", "gather_facts": False,
         "tasks": [{"name": "Compile", "beonet.cluster.beonet_topology": {"topology": str(TOPOLOGY)},
                    "register": "direct"},
                   {"name": "Check", "ansible.builtin.assert": {
                       "that": ["direct.plan.nodes | length == 4", "direct.routes_text | length == 4"]}}]},
    ]), encoding="utf-8")
    out = playbook(project, play)
    assert "ip route replace 10.0.1.0/24 via 10.0.128.2 dev eth2 src 10.0.0.1 proto 250" in out
    assert out.count("forwarding on") == 4
    recap = [line for line in out.splitlines() if " : ok=" in line]
    assert len(recap) == 5 and all("failed=0" in line and "unreachable=0" in line for line in recap)


def test_shipped_dry_run_playbook_runs_by_fqcn(project):
    out = playbook(project, "beonet.cluster.dry_run")
    assert out.count("forwarding on") == 4
    assert "ip addr add 10.0.128.2/24 dev eth2" in out


def test_ansible_doc_of_every_module_and_role(project):
    folder, env = project
    doc = os.path.join(BIN, "ansible-doc")
    modules = ["beonet.cluster.%s" % m for m in build.MODULES]
    docs = json.loads(run([doc, "--json", *modules], folder, env))
    for name in modules:
        assert docs[name]["doc"]["module"] == name.rsplit(".", 1)[1], name
        assert "beonet.cluster." in docs[name]["examples"], name
    roles = ["beonet.cluster.%s" % r for r in build.ROLES]
    docs = json.loads(run([doc, "-t", "role", "--json", *roles], folder, env))
    for name in roles:
        assert docs[name]["entry_points"]["main"]["short_description"], name


# --- Python packaging ----------------------------------------------------------

def _requirement_name(spec):
    return re.split(r"[\s;=<>!~\[]", spec, maxsplit=1)[0].lower()


def test_wheel_has_core_deps_extras_and_every_subpackage(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "module_utils" / "beonet", src / "module_utils" / "beonet",
                    ignore=shutil.ignore_patterns("__pycache__"))
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "--disable-pip-version-check", "-w", tmp_path / "dist", src], tmp_path)
    (wheel,) = (tmp_path / "dist").glob("beonet-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(zf.read(meta_name).decode())
        entry_points = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    assert meta["Version"] == build.package_version()
    requires = meta.get_all("Requires-Dist")
    assert {_requirement_name(r) for r in requires if "extra ==" not in r} == CORE
    assert set(meta.get_all("Provides-Extra")) == EXTRAS
    extras: dict[str, set[str]] = {}
    for r in requires:
        if "extra ==" in r:
            extras.setdefault(r.split('extra == "')[1].rstrip('"'), set()).add(_requirement_name(r))
    assert extras["lab"] == {"ansible-core", "ansible"} and extras["plots"] == {"matplotlib"}
    assert {"pytest", "ruff", "mypy", "ansible-lint", "pre-commit"} <= extras["dev"]
    assert "beonet = beonet.cli:run" in entry_points
    packages = {p.parent.relative_to(ROOT / "module_utils").as_posix()
                for p in (ROOT / "module_utils" / "beonet").rglob("__init__.py")}
    assert packages >= {"beonet", "beonet/compiler", "beonet/outputs", "beonet/agent", "beonet/labs",
                        "beonet/benchmarks"}
    for package in packages:
        assert "%s/__init__.py" % package in names, package


def test_requirements_pin_every_dependency_exactly():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_requirement_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted |= {_requirement_name(r) for r in extra}
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, "not an exact pin: %s" % line
            pins[name.lower()] = version
    assert wanted <= set(pins), "unpinned: %s" % sorted(wanted - set(pins))


# --- safe defaults and hooks -------------------------------------------------

def test_ansible_cfg_keeps_ssh_host_key_checking():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    assert cfg.getboolean("defaults", "host_key_checking", fallback=True)


def test_pre_commit_runs_every_make_lint_command():
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^lint:.*\n((?:\t.*\n)+)", makefile, re.M)[1]
    commands = [line.strip().replace("$(BIN)/", ".venv/bin/") for line in recipe.splitlines()]
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    entries = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    for command in commands:
        assert any(command in entry for entry in entries), "no pre-commit hook runs %r" % command
