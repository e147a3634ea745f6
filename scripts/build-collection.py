#!/usr/bin/env python3
"""Build the Ansible collection beonet.cluster from the repository.

    python3 scripts/build-collection.py [--out build/collection] [--no-tarball]

Lays the collection out in OUT/ansible_collections/beonet/cluster (the path
ansible-test expects) and builds OUT/beonet-cluster-VERSION.tar.gz with
`ansible-galaxy collection build`. In the repository the modules import
`ansible.module_utils.beonet` and the roles and playbooks call modules and roles
by their short names (found through ansible.cfg); in the collection the imports
point into plugins/module_utils and every call uses the FQCN beonet.cluster.NAME.
Prints the path of the tarball (or of the collection with --no-tarball).
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE, NAME = "beonet", "cluster"
FQCN = "%s.%s" % (NAMESPACE, NAME)
MODULES = ("beonet_topology", "beonet_node", "beonet_verify", "beonet_verify_live", "beonet_benchmark",
           "beonet_discover", "beonet_cabling", "beonet_mpi", "beonet_slurm", "beonet_files")
# Modules that run on the controller also run in its own Python, as action plugins;
# beonet_node's reads the node by one shell command first (the fast path), and
# beonet_discover's collects a background listener's report by one.
ACTION_PLUGINS = ("beonet_topology", "beonet_verify_live", "beonet_node", "beonet_discover")
ROLES = ("beonet_plan", "beonet_preflight", "beonet_node", "beonet_benchmark", "beonet_mpi",
         "beonet_slurm")
PLAYBOOKS = ("site.yml", "verify.yml", "dry_run.yml", "benchmark.yml", "heal.yml", "mpi.yml",
             "slurm.yml")
REQUIRES_ANSIBLE = ">=2.16.0"

_IMPORT = re.compile(r"\bansible\.module_utils\.beonet\b")
# A task's module key (`  beonet_node:`, or with a YAML anchor `  beonet_node: &args`) or a
# role entry (`- beonet_plan`, `- role: beonet_plan`, import_role's or include_role's
# `name: beonet_plan`).
_TASK_KEY = re.compile(r"^(\s*(?:- )?)(%s):([ \t]*(?:&[\w-]+[ \t]*)?)$" % "|".join(MODULES), re.M)
_ROLE_ENTRY = re.compile(r"^([ \t]*(?:-[ \t]+(?:role:[ \t]*)?|name:[ \t]*))(%s)([ \t]*)$"
                         % "|".join(ROLES), re.M)


class BuildError(Exception):
    """The repository cannot be built into a collection."""


def package_version(root: Path = ROOT) -> str:
    """__version__ of module_utils/beonet/__init__.py, read without importing it."""
    path = root / "module_utils" / "beonet" / "__init__.py"
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
            value = ast.literal_eval(node.value)
            if isinstance(value, str):
                return value
    raise BuildError("%s: no __version__ = \"X.Y.Z\" string" % path.relative_to(root))


def controller_requirements(root: Path = ROOT) -> list[str]:
    """What the compiler needs on the controller: pyproject.toml's [project] dependencies."""
    with open(root / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"])


def _resolve(base: Path, parts: list[str]) -> Path | None:
    for candidate in (base.joinpath(*parts).with_suffix(".py"), base.joinpath(*parts, "__init__.py")):
        if parts and candidate.is_file():
            return candidate
    return None


def _imported(path: Path, base: Path) -> set[Path]:
    """Files under base (module_utils) that path imports as ansible.module_utils.beonet.X or relatively."""
    found = set()
    package = path.relative_to(base).parent.parts if path.is_relative_to(base) else ()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module or ""
        if node.level:
            parts = list(package[:len(package) - node.level + 1]) + module.split(".")
        elif module.startswith("ansible.module_utils.beonet"):
            parts = module.split(".")[2:]
        else:
            continue
        parts = [p for p in parts if p]
        for alias in node.names:
            # `from pkg import mod` names a module, `from pkg.mod import name` something in it.
            target = _resolve(base, parts + [alias.name]) or _resolve(base, parts)
            if target:
                found.add(target)
    return found


def module_utils_files(root: Path = ROOT) -> set[Path]:
    """module_utils files the modules import, directly or through each other, with their packages.

    The rest (the `beonet` command, the labs, drawings, exports) is the pip-installed CLI's.
    """
    base = root / "module_utils"
    todo = [root / "library" / ("%s.py" % m) for m in MODULES]
    files: set[Path] = set()
    while todo:
        for path in _imported(todo.pop(), base) - files:
            files.add(path)
            todo.append(path)
    for path in list(files):
        files.update(p / "__init__.py" for p in path.parents if p.is_relative_to(base / "beonet"))
    return files


def to_collection_imports(text: str) -> str:
    """Point `ansible.module_utils.beonet` imports into the collection's module_utils."""
    return _IMPORT.sub("ansible_collections.%s.%s.plugins.module_utils.beonet" % (NAMESPACE, NAME), text)


def to_fqcn(text: str) -> str:
    """Call beonet modules and roles by FQCN in task and role lists (also modules' EXAMPLES)."""
    text = _TASK_KEY.sub(lambda m: "%s%s.%s:%s" % (m[1], FQCN, m[2], m[3]), text)
    return _ROLE_ENTRY.sub(lambda m: "%s%s.%s%s" % (m[1], FQCN, m[2], m[3]), text)


def galaxy_yml(root: Path, version: str) -> str:
    """collection/galaxy.yml with the package version added."""
    text = (root / "collection" / "galaxy.yml").read_text(encoding="utf-8")
    if re.search(r"^version\s*:", text, re.M):
        raise BuildError("galaxy.yml must not set version: it is __version__ of "
                         "module_utils/beonet/__init__.py")
    return text + "version: %s\n" % version


def readme(root: Path, version: str, requirements: list[str]) -> str:
    """A short collection preamble (install, controller requirements, FQCNs), then README.md."""
    modules = ", ".join("%s.%s" % (FQCN, m) for m in MODULES)
    roles = ", ".join("%s.%s" % (FQCN, r) for r in ROLES)
    playbooks = ", ".join("%s.%s" % (FQCN, p[:-len(".yml")]) for p in PLAYBOOKS)
    head = [
        "# Ansible collection %s %s" % (FQCN, version), "",
        "Install the collection and, on the controller, the Python packages of the compiler:", "",
        "    ansible-galaxy collection install %s-%s-%s.tar.gz" % (NAMESPACE, NAME, version),
        "    pip install %s   # the requirements.txt of this collection" % " ".join(requirements),
        "", "Nodes need only Python 3 and iproute2.", "",
        "- Modules: %s" % modules, "- Roles: %s" % roles, "- Playbooks: %s" % playbooks, "",
        "Run a playbook by name, e.g. `ansible-playbook -i INVENTORY %s.dry_run`." % FQCN, "",
        "---", "",
    ]
    return "\n".join(head) + (root / "README.md").read_text(encoding="utf-8")


def _mkparent(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def _copy_text(src: Path, dst: Path, rewrite: Callable[[str], str]) -> None:
    _mkparent(dst)
    dst.write_text(rewrite(src.read_text(encoding="utf-8")), encoding="utf-8")
    shutil.copymode(src, dst)


def _copy_tree(src: Path, dst: Path, rewrite: Callable[[str], str]) -> None:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in dst.rglob("*.yml"):
        path.write_text(rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")


def lay_out(root: Path, dest: Path) -> Path:
    """Write the collection's tree into dest (emptied first); returns dest."""
    version = package_version(root)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    for module in MODULES:
        _copy_text(root / "library" / ("%s.py" % module), dest / "plugins" / "modules" / ("%s.py" % module),
                   lambda t: to_fqcn(to_collection_imports(t)))
    for plugin in ACTION_PLUGINS:
        _copy_text(root / "action_plugins" / ("%s.py" % plugin),
                   dest / "plugins" / "action" / ("%s.py" % plugin), to_collection_imports)
    for path in sorted(module_utils_files(root)):
        target = dest / "plugins" / "module_utils" / path.relative_to(root / "module_utils")
        shutil.copy2(path, _mkparent(target))
    for role in ROLES:
        _copy_tree(root / "roles" / role, dest / "roles" / role, to_fqcn)
    for playbook in PLAYBOOKS:
        _copy_text(root / "playbooks" / playbook, dest / "playbooks" / playbook, to_fqcn)
    (dest / "meta").mkdir()
    (dest / "meta" / "runtime.yml").write_text('---\nrequires_ansible: "%s"\n' % REQUIRES_ANSIBLE,
                                               encoding="utf-8")
    (dest / "galaxy.yml").write_text(galaxy_yml(root, version), encoding="utf-8")
    requirements = controller_requirements(root)
    (dest / "README.md").write_text(readme(root, version, requirements), encoding="utf-8")
    (dest / "requirements.txt").write_text(
        "# Python packages the beonet compiler needs on the Ansible controller.\n"
        + "".join("%s\n" % r for r in requirements), encoding="utf-8")
    if not (root / "LICENSE").exists():
        raise BuildError("LICENSE is missing at the repository root")
    shutil.copyfile(root / "LICENSE", dest / "LICENSE")
    return dest


def build_tarball(collection: Path, out: Path, version: str) -> Path:
    """`ansible-galaxy collection build` of the laid-out collection into out."""
    beside = Path(sys.executable).parent / "ansible-galaxy"
    galaxy = str(beside) if beside.exists() else shutil.which("ansible-galaxy") or "ansible-galaxy"
    command = [galaxy, "collection", "build", str(collection), "--output-path", str(out), "--force"]
    run = subprocess.run(command, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise BuildError("ansible-galaxy collection build failed:\n%s%s" % (run.stdout, run.stderr))
    return out / ("%s-%s-%s.tar.gz" % (NAMESPACE, NAME, version))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Ansible collection %s." % FQCN)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "collection",
                        help="output folder (default: build/collection)")
    parser.add_argument("--no-tarball", action="store_true", help="only lay the collection out")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    try:
        collection = lay_out(ROOT, out / "ansible_collections" / NAMESPACE / NAME)
        print(collection if args.no_tarball else build_tarball(collection, out, package_version(ROOT)))
    except BuildError as exc:
        print("build-collection: %s" % exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
