"""Hostile topology files: whatever the bytes, `beonet compile` and the
beonet_topology module either succeed or report errors naming the file, never
with a Python traceback or a hang (HANG_LIMIT: a guard against an endless loop or
wait, not a speed check; what the expensive shapes cost is timed by `make bench`,
scripts/bench_checks.py).

Generated documents are the shipped topologies with values swapped for other
types, keys deleted and added, random bytes and YAML-like text; fixed ones are
the known expensive shapes (deep nesting, alias bombs, huge scalars, bad UTF-8).
"""

import argparse
import contextlib
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import yaml
from bench_checks import alias_bomb, merge_bomb
from conftest import ROOT
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from beonet import cli
from beonet.compiler import load
from beonet.compiler.schema import MAX_HOST_NUMBER

HANG_LIMIT = 20.0             # CPU seconds; HANG_FACTOR times that on the clock
HANG_FACTOR = 3
SHIPPED = sorted((ROOT / "topologies").glob("*.yml")) + sorted((ROOT / "topologies/benchmarks").glob("*.yml"))
DOCS = {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in SHIPPED}
# BEONET_FUZZ_EXAMPLES=2000 for a longer hunt than the default run's.
FUZZ = settings(max_examples=int(os.environ.get("BEONET_FUZZ_EXAMPLES", "60")), deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


class Overtime(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise Overtime in the middle of whatever uses more than `seconds` of CPU time,
    or waits more than HANG_FACTOR times that on the clock (a hang). CPU time is what
    the input costs; it does not grow when other work loads the machine."""
    def expire(_sig: int, _frame: object) -> None:
        raise Overtime("took more than %.1f s" % seconds)

    old = {sig: signal.signal(sig, expire) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * HANG_FACTOR)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in old.items():
            signal.signal(sig, handler)


def compile_cli(path: pathlib.Path) -> tuple[int, str]:
    """`beonet compile PATH -o plan.json` in-process: (exit code, stderr)."""
    err = io.StringIO()
    with tempfile.TemporaryDirectory() as out:
        plan = os.path.join(out, "plan.json")
        with time_limit(HANG_LIMIT), contextlib.redirect_stderr(err), \
                contextlib.redirect_stdout(io.StringIO()):
            code = cli.main(["compile", str(path), "-o", plan])
        assert os.path.exists(plan) == (code == 0), "plan written on error or missing on success"
    return code, err.getvalue()


def assert_compiles_or_names_file(path: pathlib.Path) -> tuple[int, str]:
    """Compile; on errors every line names the file and the summary ends it."""
    code, err = compile_cli(path)
    assert code in (0, 2), err
    if code == 2:
        lines = err.splitlines()
        assert lines and lines[-1].startswith("beonet: ") and lines[-1].endswith(", nothing written")
        for line in lines[:-1]:
            assert line.startswith(str(path) + ":"), line
        assert "Traceback" not in err
    return code, err


def write(tmp: pathlib.Path, content: bytes | str, name: str = "t.yml") -> pathlib.Path:
    path = tmp / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


# -- generated documents ---------------------------------------------------

def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a document (dict keys and list indexes)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


SCALARS = st.one_of(
    st.none(), st.booleans(), st.floats(), st.integers(-3, 3), st.text(max_size=12),
    st.sampled_from([10**30, -10**30, 2**63, 10**6, 1025, -1, 0, 4.0, "", "10.0.0.0/8",
                     "{index:999999999}", "x" * 300]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)),
    max_leaves=6)
KEYS = st.one_of(st.sampled_from(["name", "family", "nodes", "dims", "channels", "mesh", "tree",
                                  "custom", "pattern", "first_index", "mtu", "prefix", "id"]),
                 st.text(max_size=8), st.integers(-2, 2), st.booleans())


def _mutate(doc: Any, draw: Callable[..., Any]) -> Any:
    """One change: a value swapped for another type, a key deleted or added."""
    paths = _paths(doc)
    path = draw(st.sampled_from(paths))
    action = draw(st.sampled_from(["swap", "delete", "add"]))
    if not path:
        return draw(VALUES) if action == "swap" else doc
    parent = _parent(doc, path)
    if action == "swap":
        parent[path[-1]] = draw(VALUES)
    elif action == "delete":
        del parent[path[-1]]
    elif isinstance(parent, dict):
        parent[draw(KEYS)] = draw(VALUES)
    else:
        parent.append(draw(VALUES))
    return doc


@FUZZ
@given(st.sampled_from(sorted(DOCS)), st.integers(1, 3), st.data())
def test_mutated_topologies(tmp_path_factory: pytest.TempPathFactory, name: str, count: int,
                            data: st.DataObject) -> None:
    doc = json.loads(json.dumps(DOCS[name]))
    for _ in range(count):
        doc = _mutate(doc, data.draw)
    text = yaml.safe_dump(doc, allow_unicode=True)
    assert_compiles_or_names_file(write(tmp_path_factory.mktemp("fuzz"), text))


CIDRS = st.sampled_from(["10.0.0.0/8", "10.0.0.0/16", "10.1.0.0/24", "10.2.0.0/28", "192.168.0.0/30",
                         "172.16.0.0/31", "0.0.0.0/0", "255.255.255.255/32"])
NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f"])


def _custom(draw: Callable[..., Any]) -> dict[str, Any]:
    names = draw(st.lists(NAMES, min_size=2, max_size=6, unique=True))
    nodes: list[Any] = [draw(st.sampled_from([n, {"name": n}, {"name": n, "id": draw(
        st.sampled_from([1, 2, 3, 254, 255, 256, 65534, MAX_HOST_NUMBER]))}])) for n in names]
    member = st.sampled_from(names)
    segments = [dict({"name": "s%d" % i, "members": draw(st.lists(member, min_size=2, unique=True))},
                     **draw(st.fixed_dictionaries({}, optional={
                         "channels": st.integers(1, 3), "prefix": CIDRS, "mtu": st.sampled_from([576, 9000]),
                         "mode": st.sampled_from(["802.3ad", "balance-rr"]), "tso": st.booleans()})))
                for i in range(draw(st.integers(0, 3)))]
    links = [dict({"ends": draw(st.lists(member, min_size=2, max_size=2, unique=True))},
                  **draw(st.fixed_dictionaries({}, optional={"prefix": CIDRS})))
             for _ in range(draw(st.integers(0, 4)))]
    return {"nodes": nodes, "segments": segments, "links": links}


def _family(draw: Callable[..., Any], family: str) -> dict[str, Any]:
    small = st.integers(2, 4)
    if family == "bonded":
        return {"nodes": draw(st.integers(2, 12)), "channels": draw(st.integers(1, 16)),
                "miimon": draw(st.sampled_from([0, 100, 60000]))}
    if family == "mesh":
        return {"dims": draw(st.lists(small, min_size=1, max_size=3))}
    if family == "tree":
        return {"levels": draw(st.integers(2, 6)), "fanout": draw(st.integers(1, 2)),
                "nodes_per_leaf": draw(st.integers(1, 3))}
    if family == "metagraph":
        return {"groups": draw(st.integers(2, 7)), "nodes_per_group": draw(small),
                "p2p_per_node": draw(st.integers(1, 3))}
    return _custom(draw)


_optional = st.fixed_dictionaries
COMMON_SECTIONS = {
    "addressing": _optional({}, optional={"lan": CIDRS, "p2p": CIDRS, "lan_prefix": st.integers(8, 30),
                                          "p2p_prefix": st.sampled_from([30, 31])}),
    "management": _optional({"interface": st.sampled_from(["eth0", "eth1", "bond0", "ens3"])}),
    "link": _optional({}, optional={"rate_mbit": st.sampled_from([1, 1000, 10_000_000]),
                                    "mtu": st.sampled_from([576, 1500, 65535])}),
}
COMMON = _optional({}, optional=COMMON_SECTIONS)
COMMON_GENERATED = _optional({}, optional=dict(COMMON_SECTIONS, nodes=_optional({}, optional={
    "pattern": st.sampled_from(["n{index}", "g{group}m{member}", "x{coords}", "n{index:03d}", "same",
                                "n{coords:03d}", "n{index:x}"]),
    "first_index": st.sampled_from([0, 1, 1_000_000])})))


@FUZZ
@given(st.sampled_from(["bonded", "mesh", "tree", "metagraph", "custom"]), st.data())
def test_generated_topologies(tmp_path_factory: pytest.TempPathFactory, family: str,
                              data: st.DataObject) -> None:
    """Documents the schema accepts, with edge values: the later stages must cope too."""
    doc = {"name": "gen", "family": family, family: _family(data.draw, family)}
    doc.update(data.draw(COMMON if family == "custom" else COMMON_GENERATED))
    code, err = assert_compiles_or_names_file(write(tmp_path_factory.mktemp("fuzz"), yaml.safe_dump(doc)))
    event("%s: %s" % (family, "compiles" if code == 0 else err.split(": ", 2)[-1][:40]))


@FUZZ
@given(st.binary(max_size=400))
def test_random_bytes(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    assert_compiles_or_names_file(write(tmp_path_factory.mktemp("fuzz"), raw))


@FUZZ
@given(st.text(alphabet="[]{}:,-&*!<|>'\"#%@`?~\n\t abc019.=\x00\ufeff\u2028", max_size=200))
def test_yaml_like_text(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    path = write(tmp_path_factory.mktemp("fuzz"), text.encode("utf-8", "surrogatepass"))
    assert_compiles_or_names_file(path)


def test_every_shipped_topology_compiles() -> None:
    for path in SHIPPED:
        assert assert_compiles_or_names_file(path)[0] == 0, path


# -- fixed hostile documents -----------------------------------------------

VALID_HEAD = "name: t\nfamily: bonded\nbonded:\n  nodes: "
HOSTILE: dict[str, tuple[bytes | str, str]] = {
    # name: (content, expected message part)
    "flow-nesting": ("[" * 10_000, "YAML nesting deeper than 50 levels"),
    "mapping-nesting": ("a: " + "{b: " * 10_000, "YAML nesting deeper than 50 levels"),
    "block-nesting": ("- " * 10_000 + "x\n", "YAML nesting deeper than 50 levels"),
    "alias-bomb": (alias_bomb(), "YAML aliases expand to more than 100000 nodes"),
    "alias-chain": ("".join("a%d: &a%d [[[[[[[[[[%s]]]]]]]]]]\n" % (i, i, "*a%d" % (i - 1) if i else "x")
                            for i in range(12)), "YAML nesting deeper than 50 levels"),
    "recursive-alias": ("a: &a [1, *a]\n", "a YAML alias refers to a collection that contains it"),
    "recursive-merge": ("a: &a {b: 1, <<: *a}\n",
                        "a YAML merge key (<<) refers to a mapping that contains it"),
    "merge-bomb": (merge_bomb(), "expand to more than 100000"),
    "merge-chain": ("a0: &a0 {k0: 0}\n" + "".join("a%d: &a%d {<<: *a%d, k%d: 0}\n" % (i, i, i - 1, i)
                                                 for i in range(1, 460)),
                    "YAML aliases expand to more than 100000 nodes"),
    "huge-file": ("name: " + "x" * (load.MAX_BYTES + 1), "is over 1 MiB, the limit for a topology"),
    "big-scalar": ("name: " + "x" * 200_000 + "\nfamily: bonded\nbonded: {nodes: 2}\n", "name: must be"),
    "long-integer": (VALID_HEAD + "9" * 5000 + "\n", "cannot read the value '9999"),
    "bad-utf8": (b"name: \xff\xfe\nfamily: bonded\n", "is not UTF-8 text (byte 0xff"),
    "nul-byte": ("name: a\x00b\n", "not YAML text"),
    "bad-int-tag": (VALID_HEAD + "!!int many\n", "cannot read the value 'many' as int"),
    "bad-bool-tag": (VALID_HEAD + "!!bool maybe\n", "cannot read the value 'maybe' as bool"),
    "bad-timestamp-tag": (VALID_HEAD + "!!timestamp soon\n", "cannot read the value 'soon' as timestamp"),
    "python-tag": (VALID_HEAD + "!!python/object:os.system x\n", "YAML syntax error"),
    "float-count": (VALID_HEAD + "4.0\n", "bonded.nodes: must be an integer from 2 to 1024"),
    "bool-count": (VALID_HEAD + "true\n", "bonded.nodes: must be an integer from 2 to 1024"),
    "huge-count": (VALID_HEAD + str(10**30) + "\n", "bonded.nodes: must be an integer from 2 to 1024"),
    "integer-key": (VALID_HEAD + "4\n7: x\n", "keys must be strings (got an integer)"),
    "list-key": (VALID_HEAD + "4\n? [a]\n: x\n", "keys must be strings"),
    "big-mesh": ("name: t\nfamily: mesh\nmesh: {dims: [1000, 1000, 1000]}\n",
                 "the mesh has 1000000000 nodes; beonet supports at most 10000"),
    "big-tree": ("name: t\nfamily: tree\ntree: {levels: 6, fanout: 1000, nodes_per_leaf: 1000}\n",
                 "the tree puts %d nodes on its one LAN" % (1000**5 * 1000)),
    "wide-pattern": ("name: t\nfamily: bonded\nbonded: {nodes: 2}\nnodes: {pattern: 'n{index:999999999}'}\n",
                     "nodes.pattern: must be a node name pattern"),
    "attribute-pattern": ("name: t\nfamily: bonded\nbonded: {nodes: 2}\nnodes: {pattern: 'n{index.real}'}\n",
                          "nodes.pattern: must be a node name pattern"),
    "netmask-prefix": (VALID_HEAD + "2\naddressing: {lan: 10.0.0.0/255.0.0.0}\n",
                       "addressing.lan: must be an IPv4 network in CIDR form"),
    "spaced-prefix": (VALID_HEAD + "2\naddressing: {lan: '10.0.0.0/8 '}\n",
                      "addressing.lan: must be an IPv4 network in CIDR form"),
    "multiple-documents": ("name: a\n---\nname: b\n", "YAML syntax error"),
    "directory": ("", "cannot read: a folder, not a file"),
}


def _hostile(tmp: pathlib.Path, name: str) -> pathlib.Path:
    if name == "directory":
        (tmp / "dir.yml").mkdir()
        return tmp / "dir.yml"
    return write(tmp, HOSTILE[name][0], name + ".yml")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_document(tmp_path: pathlib.Path, name: str) -> None:
    code, err = assert_compiles_or_names_file(_hostile(tmp_path, name))
    assert code == 2, err
    assert HOSTILE[name][1] in err


def test_sizes_inside_the_limits_still_compile(tmp_path: pathlib.Path) -> None:
    text = "name: t\nfamily: mesh\nmesh: {dims: [2, 2, 2]}\nnodes: {pattern: 'n{coords}x{index:03d}'}\n"
    assert assert_compiles_or_names_file(write(tmp_path, text))[0] == 0
    assert load.load_text("a: " + "[" * 49 + "]" * 49 + "\n", "t.yml")[1].texts() == [
        "t.yml: family: missing required key", "t.yml: name: missing required key",
        "t.yml:1: a: unknown key (allowed: %s)" % ", ".join(sorted(load.SCHEMA["properties"]))]


# -- the Ansible module, run directly as an old-style module ---------------

RUNNER = r'''
import json, os, runpy, signal, sys, time
import ansible.module_utils
ansible.module_utils.__path__.append(sys.argv[1])
import ansible.module_utils.basic
import ansible.module_utils.beonet.compiler.pipeline
module, limit, results = sys.argv[2], float(sys.argv[3]), {}
for args in sys.argv[4:]:
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        signal.setitimer(signal.ITIMER_PROF, limit)
        signal.setitimer(signal.ITIMER_REAL, limit * 3)
        for fd, suffix in ((1, ".out"), (2, ".err")):
            os.dup2(os.open(args + suffix, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
        sys.argv = [module, args]
        try:
            runpy.run_path(module, run_name="__main__")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        sys.stdout.flush()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    out = {suffix: open(args + "." + suffix).read() for suffix in ("out", "err")}
    results[args] = dict(out, status=status, seconds=time.monotonic() - start)
print(json.dumps(results))
'''


def run_modules(module: str, calls: list[dict[str, Any]], tmp: pathlib.Path) -> list[dict[str, Any]]:
    """library/<module>.py with each of calls as its arguments, each in a process of its
    own under the time limit: the module results, in order (rc added); no call may
    end in a traceback or be killed."""
    runner = tmp / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    argv = []
    for i, call in enumerate(calls):
        args = tmp / ("%s-args%d.json" % (module, i))
        args.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": call}))
        argv.append(str(args))
    proc = subprocess.run([sys.executable, str(runner), str(ROOT / "module_utils"),
                           str(ROOT / "library" / (module + ".py")), str(HANG_LIMIT), *argv],
                          capture_output=True, text=True, timeout=60 + 3 * len(argv), check=False)
    assert proc.returncode == 0, proc.stderr
    out = []
    for call, args in zip(calls, argv):
        res = json.loads(proc.stdout)[args]
        assert os.WIFEXITED(res["status"]), "%s %s: killed after %.1f s" % (module, call, res["seconds"])
        assert "Traceback" not in res["out"] + res["err"], res["out"] + res["err"]
        out.append(dict(json.loads(res["out"]), rc=os.WEXITSTATUS(res["status"])))
    return out


def run_module(topologies: list[pathlib.Path], tmp: pathlib.Path) -> dict[str, dict[str, Any]]:
    """library/beonet_topology.py on each topology: {path: module result}."""
    results = run_modules("beonet_topology", [{"topology": str(t)} for t in topologies], tmp)
    return {str(t): r for t, r in zip(topologies, results)}


MODULE_SAMPLE = ["flow-nesting", "block-nesting", "alias-bomb", "recursive-alias", "huge-file",
                 "bad-utf8", "nul-byte", "long-integer", "bad-bool-tag", "big-mesh", "integer-key"]


def test_module_fails_naming_the_file(tmp_path: pathlib.Path) -> None:
    bad = [_hostile(tmp_path, name) for name in MODULE_SAMPLE]
    good = ROOT / "topologies/metanode-testbed.yml"
    results = run_module(bad + [good], tmp_path)
    for topo in bad:
        res = results[str(topo)]
        assert res["rc"] == 1 and res["failed"], res
        assert res["msg"].startswith("beonet: ") and (str(topo) + ":") in res["msg"], res["msg"]
        assert all(e.startswith(str(topo) + ":") for e in res["errors"]), res["errors"]
    assert results[str(good)]["rc"] == 0 and len(results[str(good)]["plan"]["nodes"]) == 36


def test_time_limit_stops_busy_and_hung_work() -> None:
    with pytest.raises(Overtime):
        with time_limit(0.2):
            while True:
                pass
    with pytest.raises(Overtime):
        with time_limit(0.02):
            time.sleep(5)  # no CPU time: the clock guard (HANG_FACTOR) stops it


# --- every entry point is fuzzed: the CLI's subcommands from its own parser, the modules
# from library/; a new one is covered without being added to a list, or fails here.

def _subcommands() -> dict[str, argparse.ArgumentParser]:
    top = cli.parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _hostile_files(tmp: pathlib.Path) -> list[str]:
    """A pipe, a folder, nesting past every limit, NaN and a key twice, bytes that are no text."""
    os.mkfifo(tmp / "pipe")
    (tmp / "folder").mkdir()
    (tmp / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "nan.json").write_text('{"name": NaN, "name": 1}')
    (tmp / "bytes.yml").write_bytes(b"\xff\xfe\x00name: \x85\n")
    return [str(tmp / n) for n in ("pipe", "folder", "deep.json", "nan.json", "bytes.yml")]


def _arguments(sub: argparse.ArgumentParser, hostile: str, out: str, name: str) -> list[str]:
    """The arguments of one (sub-)command: a hostile file wherever a file or folder is read;
    an action of its own (lab's) taken as the last of them, with that action's arguments."""
    argv: list[str] = []
    for action in sub._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = sorted(action.choices)[-1]
            argv += [chosen, *_arguments(action.choices[chosen], hostile, out, name + " " + chosen)]
        elif not action.option_strings:
            if action.choices:
                argv.append(sorted(action.choices)[-1])
            else:
                assert action.dest in ("topology", "old", "new", "folder"), (
                    "beonet %s: positional %s: give the fuzz table a hostile value for it"
                    % (name, action.dest))
                argv.append(hostile)
        elif action.required:
            argv += [action.option_strings[0], out if action.dest == "output" else hostile]
    return argv


def _argvs(name: str, sub: argparse.ArgumentParser, files: list[str], out: str) -> list[list[str]]:
    """Command lines of subcommand name, each with one hostile file wherever a file or
    folder is read; a positional this does not know fails (say what a hostile value is)."""
    return [[name, *_arguments(sub, hostile, out, name)] for hostile in files]


def test_every_subcommand_refuses_hostile_files_cleanly(tmp_path: pathlib.Path, capsys) -> None:
    """Every subcommand the parser has, each file it reads replaced by a pipe, a folder,
    deep JSON, NaN and doubled keys, bytes that are no text: exit 1 or 2 with a message,
    no traceback, nothing written, no hang."""
    files = _hostile_files(tmp_path)
    out = str(tmp_path / "out" / "x")
    commands = _subcommands()
    assert {"diff", "lab", "schema", "compile"} <= set(commands)
    for name, sub in commands.items():
        for argv in _argvs(name, sub, files, out) if name != "schema" else [[name, "-o", files[1]]]:
            with time_limit(HANG_LIMIT):
                try:
                    code = cli.main(argv)
                except SystemExit as exc:
                    code = exc.code
            err = capsys.readouterr().err
            assert code in (1, 2) and err.strip() and "Traceback" not in err, (argv, code, err)
            assert not os.path.exists(out), argv


# Arguments each module gets that its own checks must refuse; a module in library/ that
# is not here fails the test below.
MODULE_HOSTILE: dict[str, list[dict[str, Any]]] = {
    "beonet_benchmark": [{"action": "plan", "plan": {"nodes": {"a\n": {}}}}],
    "beonet_cabling": [{"topology": "/nonexistent\n.yml", "discovered": {"a": 1.5}}],
    "beonet_discover": [{"action": "collect", "reports": {"a": float("inf")}}],
    "beonet_files": [{"dest": "/tmp/x", "files": [{"name": "a\ud800", "content": "\ud800", "mode": "7777"}]}],
    "beonet_mpi": [{"action": "plan", "plan": {"nodes": {"a": []}}, "paths": {}}],
    "beonet_node": [{"plan": {"interfaces": "lo"}, "node": "a\nb"}],
    "beonet_slurm": [{"action": "plan", "plan": {"nodes": {"x\nSlurmUser=root": {}}}}],
    "beonet_topology": [{"topology": "/dev/zero"}],
    "beonet_verify": [{"plan": [], "node": "\u2028"}],
    "beonet_verify_live": [{"plan": {"nodes": 1}, "state": "[[[["}],
}


def test_every_module_in_library_refuses_hostile_arguments_cleanly(tmp_path: pathlib.Path) -> None:
    modules = sorted(p.stem for p in (ROOT / "library").glob("*.py"))
    assert set(modules) == set(MODULE_HOSTILE), "fuzz these modules too: %s" % (
        sorted(set(modules) ^ set(MODULE_HOSTILE)))
    for module in modules:
        calls = MODULE_HOSTILE[module] + [_with_surrogates(MODULE_HOSTILE[module][0])]
        results = run_modules(module, calls, tmp_path)
        for result in results:
            assert result["rc"] == 1 and result.get("failed") and result["msg"], (module, result)


def _with_surrogates(call: dict[str, Any]) -> dict[str, Any]:
    """call with a lone surrogate at the end of every top-level string (AnsibleModule
    logs those before any check runs)."""
    return {k: v + "\udc80" if isinstance(v, str) else v for k, v in call.items()}


# --- what nodes send: every controller-side reader (gate.node.READERS) and every action
# plugin gets hostile node data; a reader or plugin without a case here fails.

NODE_TEXT = ["", "\x00" * 8, "@@beonet@@ out routes 0\n" + "[" * 100_000,
             '@@beonet@@ out routes 0\n[{"dst": NaN}]\n@@beonet@@ err routes 0\n',
             '@@beonet@@ out links 0\n[{"ifname": 5, "flags": {}}]\n@@beonet@@ err links 0\n',
             '@@beonet@@ out nft 0\n{"nftables": [{"set": {"name": "cluster", "elem": [[1]]}}]}\n',
             "@@beonet@@ trace 0 0 1\n 1  x\nnode-0-0: 0 mismatches, every pair proven\n",
             "@@beonet@@ files - 0\n/proc/sys/net/ipv4/ip_forward:\u2028x\n"
             "@@beonet@@ settle - 0\nsettled? \x1b[2J",
             '@@beonet@@ out routes6 0\n[{"dst": "fe80::1%eth0\\n/64", "gateway": "fe80::1%eth0"}]\n',
             '@@beonet@@ out addrs6 0\n[{"ifname": "eth1", "addr_info": [{"local": "::ffff:10.0.0.1", '
             '"prefixlen": 999, "family": "inet6"}]}]\n'
             '@@beonet@@ out netconf6 0\n[{"interface": "\\u2028"}]\n',
             "@@beonet@@ out routes6 0\n" + '{"dst": "ff00::/8"},' * 50_000]
NODE_STATES: list[Any] = ["[[[[", 5, {"routes": 5},
                          {"format": 2, "links": {"eth0": []}, "routes": [{"dst": None}]},
                          {"format": 2, "links": {}, "addrs": {}, "routes": [{"dst": "10.0.0.0/-100"}],
                           "filter": {"chains": [], "sets": {"x": [1]}}},
                          {"format": 1, "links": {"eth1": {"state": "up"}}, "addrs": {}, "routes": [],
                           "sysctl": {}, "filter": {}, "routes6": [{"dst": "fe80::1%eth1/128", "hops": []}]},
                          {"format": 1, "links": {}, "addrs": {}, "routes": [], "sysctl": {}, "filter": {},
                           "addrs6": {"eth\n1": ["fd00::1/64"] * 5000},
                           "sysctl6": {"forwarding": {"all": 7}}},
                          {"format": 1, "links": {"eth1": {"state": "up"}}, "addrs": {}, "routes": [],
                           "sysctl": {}, "filter": {}, "addrs6": {"eth1": ["fd00::1/64"]},
                           "routes6": [{"dst": "::/0", "hops": [{"via": "fd00::1", "dev": "eth1"}] * 256}]}]


def _plan_mesh(**addressing: bool) -> dict[str, Any]:
    """The 2x2 routed mesh's plan (with addressing: its IPv6 or dual-stack one)."""
    from beonet.compiler import pipeline
    from beonet.outputs import plan as render
    text = (ROOT / "topologies/routed-mesh-2x2.yml").read_text()
    if addressing:
        text += "addressing: %s\n" % json.dumps(addressing)
    return render.plan(pipeline.compile_text(text, "routed-mesh-2x2.yml"))


def _verify_live(**args: Any) -> list[dict[str, Any]]:
    """beonet_verify_live's results on the plain, the dual-stack and the IPv6-only mesh."""
    from beonet import controller
    from beonet.livestate import task
    from beonet.outputs import plan as render
    out = []
    for addressing in ({}, {"ipv6": True}, {"ipv4": False, "ipv6": True}):
        plan = _plan_mesh(**addressing)
        call = dict({"plan": plan, "prefixes": render.prefixes(plan) if "ipv4" not in addressing else []},
                    **args)
        out.append(controller.run("beonet_verify_live", task.ARGUMENT_SPEC, task.prove_task, call, False,
                                  False))
    return out


def _printable(result: Any) -> bool:
    todo = [result]
    while todo:
        v = todo.pop()
        if isinstance(v, str) and not v.isprintable():
            return False
        todo += list(v.items()) if isinstance(v, dict) else list(v) if isinstance(v, (list, tuple)) else []
    return True


def _hostile_outputs() -> None:
    for text in NODE_TEXT:
        nodes = ("node-0-0", "node-0-1", "node-1-0", "node-1-1")
        for result in _verify_live(outputs=dict.fromkeys(nodes, text)):
            assert "failed" not in result and _printable(result), result


def _hostile_states() -> None:
    for state in NODE_STATES:
        for result in _verify_live(states={"node-0-0": state, "node-1-1": state}):
            assert _printable(result) and ("failed" not in result or result["msg"]), result


def _hostile_collects() -> None:
    from beonet.agent import discover
    for text in NODE_TEXT + ["%s: report\n%s" % (discover.COLLECT_MARK, s) for s in
                             ("{}", "[" * 100_000, '{"discovery": 1, "ended": 2, "listened": NaN}',
                              '{"error": "x\\ny"}')]:
        with pytest.raises(discover.DiscoveryError) as exc:
            discover.parse_collected("A", "r1", text)
        assert str(exc.value).isprintable()


def _hostile_fast_lines() -> None:
    from beonet.agent import fast
    for text in NODE_TEXT:
        assert fast.matches(text, "fingerprint") is False


def _hostile_benchmark_outputs() -> None:
    from test_benchmarks import compiled

    from beonet.benchmarks import planner as bench
    from beonet.benchmarks import report
    plan, path_of = compiled("routed-mesh.yml")
    sched = bench.schedule(plan, path_of, {"count": 10, "sizes": [4], "mss_points": False, "pairs": [1],
                                           "file_mb": [2], "remote_copies": [0]})
    step = next(st for st in sched["steps"] if st["kind"] == "tokex")
    client = step["pairs"][0]["client"]
    for doc in ({"runs": 5}, {"x": 1}, {"runs": [{"proto": "tcp"}]},
                {"runs": [{"samples_us": [float("nan")]}]},
                {"runs": [{"proto": 1, "size": "4", "count": 1, "seconds": 1, "lost": 0, "one_way_MBps": 1,
                           "exchange_MBps": 1, "start": 0}]}):
        with pytest.raises(bench.BenchError):
            report.collect(sched, {client: {step["id"] + ".json": doc}}, plan)


NODE_READER_CASES: dict[str, Callable[[], None]] = {
    "beonet.livestate.readout:judge": _hostile_outputs,
    "beonet.livestate.proof:prove": _hostile_states,
    "beonet.agent.discover:parse_collected": _hostile_collects,
    "beonet.agent.fast:matches": _hostile_fast_lines,
    "beonet.benchmarks.report:collect": _hostile_benchmark_outputs,
}
# action plugin -> the readers of what it gets back from a node or the module's arguments
ACTION_CASES = {"beonet_discover": ["beonet.agent.discover:parse_collected"],
                "beonet_node": ["beonet.agent.fast:matches"],
                "beonet_topology": [], "beonet_verify_live": ["beonet.livestate.readout:judge",
                                                              "beonet.livestate.proof:prove"]}


def test_every_reader_of_node_data_refuses_hostile_data_cleanly() -> None:
    from beonet.gate import node
    assert set(node.READERS) == set(NODE_READER_CASES), "fuzz these readers too: %s" % (
        sorted(set(node.READERS) ^ set(NODE_READER_CASES)))
    for case in NODE_READER_CASES.values():
        with time_limit(HANG_LIMIT):
            case()


def test_every_action_plugin_is_fuzzed() -> None:
    """Each action plugin's node data goes through readers fuzzed above; beonet_topology's
    and beonet_verify_live's arguments are the modules' own (fuzzed with library/)."""
    from beonet.gate import node
    plugins = sorted(p.stem for p in (ROOT / "action_plugins").glob("*.py"))
    assert set(plugins) == set(ACTION_CASES), "fuzz these action plugins too: %s" % (
        sorted(set(plugins) ^ set(ACTION_CASES)))
    assert set(plugins) <= set(MODULE_HOSTILE)
    for plugin, readers in ACTION_CASES.items():
        assert set(readers) <= set(node.READERS), plugin
        text = (ROOT / "action_plugins" / (plugin + ".py")).read_text()
        for reader in readers:
            assert reader.split(":")[1] in text or plugin == "beonet_verify_live", (plugin, reader)
