"""FRR's own parser on beonet's FRR configuration: every shipped topology compiled
with ``routing: {engine: frr}`` merged in, every node's /etc/frr/frr.conf rendered
by the node agent (agent/frr.py) into a folder, and each file read by
``vtysh --dryrun --inputfile FILE`` in one container of the FRR node image
(scripts/build-image.sh frr), with no network. A topology of more than ``--huge``
nodes (default 500) is checked on ``--sample`` nodes spread over its node order;
one of more than COMPILE_MAX nodes is left out, named with its reason. With
``--ipv6 dual`` or ``--ipv6 only`` each topology is also checked with IPv6 turned on
beside IPv4 or instead of it (``addressing: {ipv6: true}``, ``{ipv4: false, ipv6:
true}``); without topologies named, the shipped ones are checked as they are and
IPV6_SHIPPED in both.

    python -m beonet.labs.frrcheck [TOPOLOGY ...] [--ipv6 dual|only]... [--sample N] [--huge N]
        [--image IMAGE]

Exit status 0 when FRR accepts every file; 1 on a refusal (the file, FRR's message
and the refused line are printed) or when the check itself cannot run.
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from ..agent import frr
from ..compiler import pipeline
from ..compiler.errors import CompileError
from ..compiler.load import FRR_ONLY
from ..outputs import plan as render
from .base import LabError, clean
from .docker import variant_image

HUGE = 500              # nodes; above it only a sample of nodes is rendered
SAMPLE = 16             # nodes of a huge topology that are checked
COMPILE_MAX = 1000      # nodes; above it a topology is left out (its frr plan is N x (segments + N) routes)
SHIPPED = ("topologies/*.yml", "topologies/benchmarks/*.yml", "topologies/benchmarks/compile/*.yml")
# IPv6 beside IPv4 (dual) or instead of it (only): the addressing keys merged in, what each
# is called in the report
VARIANTS: dict[str, tuple[str, dict[str, bool]]] = {
    "dual": ("IPv4 and IPv6", {"ipv6": True}),
    "only": ("IPv6 only", {"ipv4": False, "ipv6": True})}
IPV6_SHIPPED = ("topologies/metanode-testbed-frr.yml",)   # also checked in every variant
MARK = "@@beonet-frr-check"
MOUNT = "/check"
LIST = "files.txt"
# A refusal as vtysh prints it: "line 43: % Unknown command[21]:  ip ospf bogus 3".
REFUSAL = re.compile(r"^line (\d+): %")
# In the container: FRR's version, then per file a marker line (file, exit status)
# followed by what vtysh printed.
SCRIPT = rf"""
printf '%s-version %s\n' {MARK} "$(dpkg-query -W -f '${{Version}}' frr)"
while IFS= read -r f; do
  out=$(vtysh --dryrun --inputfile "{MOUNT}/$f" 2>&1); rc=$?
  printf '%s %s %d\n' {MARK} "$f" "$rc"
  [ -z "$out" ] || printf '%s\n' "$out"
done < {MOUNT}/{LIST}
"""

Runner = Callable[[list[str]], "subprocess.CompletedProcess[str]"]


@dataclass
class Rendered:
    """One topology's files: their paths relative to the folder, the topology's node
    count, and why it was not checked (compile error) if it was not."""

    topology: str
    nodes: int = 0
    files: list[str] = field(default_factory=list)
    skipped: str = ""


@dataclass
class Verdict:
    """vtysh's answer on one file: its exit status and what it printed."""

    file: str
    status: int
    output: list[str]

    @property
    def accepted(self) -> bool:
        return self.status == 0 and not any(REFUSAL.match(line) for line in self.output)


def shipped(root: str = ".") -> list[str]:
    """The shipped topology files under root (SHIPPED), sorted, relative to root."""
    found = {os.path.relpath(p, root) for pattern in SHIPPED for p in glob.glob(os.path.join(root, pattern))}
    return sorted(found)


def with_frr(text: str, file: str, engine: str = "frr", variant: str = "") -> str:
    """The topology text with routing.engine frr merged in (its other routing keys kept);
    engine static: with the static engine, the settings only frr reads left out; variant
    (VARIANTS): its addressing merged in too (IPv6 pools the topology gives are kept)."""
    doc = yaml.safe_load(text)
    if not isinstance(doc, dict):
        raise LabError("%s: not a topology (a YAML mapping)" % file)
    routing = doc.get("routing") or {}
    if not isinstance(routing, dict):
        raise LabError("%s: routing: must be a mapping" % file)
    doc["routing"] = {**routing, "engine": engine}
    if variant:
        doc["addressing"] = _addressing(doc.get("addressing"), file, variant)
    if engine != "frr":
        for section, key in FRR_ONLY:
            if isinstance(doc.get(section), dict):
                doc[section].pop(key, None)
    return yaml.safe_dump(doc, sort_keys=False)


def _addressing(addressing: Any, file: str, variant: str) -> dict[str, Any]:
    """The topology's addressing with the variant's families: IPv6 pools it gives kept."""
    if not isinstance(addressing, (dict, type(None))):
        raise LabError("%s: addressing: must be a mapping" % file)
    out: dict[str, Any] = {k: v for k, v in (addressing or {}).items() if k != "ipv4"}
    keys = VARIANTS[variant][1]
    out.update({k: v for k, v in keys.items() if not (k == "ipv6" and isinstance(out.get(k), dict))})
    return out


def sample(names: list[str], k: int) -> list[str]:
    """k of names spread evenly over their order, the first and last among them (all if k >= len)."""
    if k >= len(names):
        return list(names)
    if k <= 1:
        return names[:k]
    return [names[round(i * (len(names) - 1) / (k - 1))] for i in range(k)]


def render_topology(path: str, folder: str, huge: int = HUGE, k: int = SAMPLE, variant: str = "") -> Rendered:
    """Compile path with routing.engine frr (and the variant's addressing) and write each
    (sampled) node's frr.conf as folder/<path without .yml, / as -[, -variant]>/<node>.conf."""
    out = Rendered(path + (" (%s)" % VARIANTS[variant][0] if variant else ""))
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    try:
        size = len(pipeline.compile_text(with_frr(text, path, "static", variant), path).graph.nodes)
        if size > COMPILE_MAX:   # the frr compile holds every node's OSPF routes: N x (segments + N)
            out.skipped = ("%d nodes, more than %d: the plan with routing.engine frr holds every "
                           "node's OSPF routes" % (size, COMPILE_MAX))
            return out
        nodes = render.plan(pipeline.compile_text(with_frr(text, path, "frr", variant), path))["nodes"]
    except (CompileError, LabError, yaml.YAMLError) as exc:
        out.skipped = "does not compile with routing.engine frr: %s" % str(exc).strip().splitlines()[0]
        return out
    out.nodes = len(nodes)
    names = list(nodes) if len(nodes) <= huge else sample(list(nodes), k)
    base = clean(os.path.splitext(os.path.normpath(path))[0] + ("-" + variant if variant else "")).strip("-")
    os.makedirs(os.path.join(folder, base), exist_ok=True)
    for name in names:
        rel = os.path.join(base, "%s.conf" % name)
        with open(os.path.join(folder, rel), "w", encoding="utf-8") as fh:
            fh.write(frr.frr_files(nodes[name])[frr.FRR_CONF])
        out.files.append(rel)
    return out


def parse(output: str, files: list[str]) -> tuple[str, list[Verdict]]:
    """(FRR's version, a verdict per file) from the container's output; LabError when
    a file has no verdict (the container stopped early)."""
    version = ""
    verdicts: list[Verdict] = []
    for line in output.splitlines():
        if line.startswith(MARK + "-version "):
            version = line.split(" ", 1)[1].strip()
        elif line.startswith(MARK + " "):
            file, _, status = line[len(MARK) + 1:].rpartition(" ")
            verdicts.append(Verdict(file, int(status), []))
        elif verdicts:
            verdicts[-1].output.append(line)
    missing = sorted(set(files) - {v.file for v in verdicts})
    if missing:
        raise LabError("vtysh gave no answer on %d of %d files (first: %s); the container said:\n%s"
                       % (len(missing), len(files), missing[0], output.strip()[-2000:]))
    return version, verdicts


def explain(verdict: Verdict, folder: str) -> list[str]:
    """A refusal for the report: FRR's messages, each followed by the file's line it names."""
    with open(os.path.join(folder, verdict.file), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    out = ["REFUSED %s (vtysh exit status %d)" % (verdict.file, verdict.status)]
    for message in verdict.output or ["(vtysh printed nothing)"]:
        out.append("  FRR: %s" % message)
        found = REFUSAL.match(message)
        if found and 0 < int(found.group(1)) <= len(lines):
            out.append("  line %s of the file: %r" % (found.group(1), lines[int(found.group(1)) - 1]))
    return out


def run_vtysh(image: str, folder: str, files: list[str], runner: Runner) -> str:
    """One container of image, folder mounted read-only, vtysh --dryrun over files; its output."""
    with open(os.path.join(folder, LIST), "w", encoding="utf-8") as fh:
        fh.write("".join(f + "\n" for f in files))
    if runner(["docker", "image", "inspect", image]).returncode != 0:
        raise LabError("image %s missing: run scripts/build-image.sh frr" % image)
    proc = runner(["docker", "run", "--rm", "--network", "none", "-v", "%s:%s:ro" % (folder, MOUNT),
                   image, "bash", "-c", SCRIPT])
    if proc.returncode != 0:
        raise LabError("docker run %s failed (status %d): %s"
                       % (image, proc.returncode, (proc.stderr or proc.stdout).strip()[-400:]))
    return proc.stdout


def _docker(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


Job = tuple[str, str]        # a topology file and its variant ("": as it is)


def jobs(topologies: list[str], variants: list[str], root: str = ".") -> list[Job]:
    """What to check: each topology as it is and in each variant; without topologies, the
    shipped ones under root as they are and IPV6_SHIPPED in every variant."""
    variants = list(dict.fromkeys(variants))        # each once
    if topologies:
        return [(t, v) for t in topologies for v in [""] + variants]
    found = shipped(root)
    return [(t, "") for t in found] + [(t, v) for t in IPV6_SHIPPED if t in found
                                       for v in variants or list(VARIANTS)]


def check(topologies: list[Job], image: str, folder: str, huge: int = HUGE, k: int = SAMPLE,
          runner: Runner = _docker, say: Callable[[str], Any] = print) -> bool:
    """Render every topology's files (each in its variant) into folder and have FRR read
    them; whether every file was accepted. Says one line per topology and one per refusal."""
    done = [render_topology(t, folder, huge, k, v) for t, v in topologies]
    files = [f for r in done for f in r.files]
    version, verdicts = parse(run_vtysh(image, folder, files, runner), files)
    by_file = {v.file: v for v in verdicts}
    refused = [v for v in verdicts if not v.accepted]
    for r in done:
        if r.skipped:
            say("%s: skipped, %s" % (r.topology, r.skipped))
            continue
        bad = sum(1 for f in r.files if not by_file[f].accepted)
        what = "%d nodes" % r.nodes if len(r.files) == r.nodes else \
            "%d nodes, %d sampled (more than %d)" % (r.nodes, len(r.files), huge)
        say("%s: %s, %d accepted, %d refused" % (r.topology, what, len(r.files) - bad, bad))
    for verdict in refused:
        for line in explain(verdict, folder):
            say(line)
    checked = sum(1 for r in done if not r.skipped)
    say("beonet frr-check: FRR %s (%s): %d topologies (%d skipped), %d frr.conf files: "
        "%d accepted, %d refused" % (version or "?", image, checked, len(done) - checked, len(files),
                                     len(files) - len(refused), len(refused)))
    return not refused and bool(files)


def main(argv: list[str] | None = None, runner: Runner = _docker) -> int:
    ap = argparse.ArgumentParser(prog="python -m beonet.labs.frrcheck", description=__doc__.split("\n\n")[0])
    ap.add_argument("topologies", nargs="*",
                    help="topology files (default: the shipped ones, %s, and %s in every --ipv6 variant, "
                    "both without one)" % (", ".join(SHIPPED), ", ".join(IPV6_SHIPPED)))
    ap.add_argument("--ipv6", action="append", default=[], choices=sorted(VARIANTS),
                    help="also check each topology with IPv6 beside IPv4 (dual) or alone (only)")
    ap.add_argument("--huge", type=int, default=HUGE, help="above this many nodes, check a sample")
    ap.add_argument("--sample", type=int, default=SAMPLE, help="nodes checked of a huge topology")
    ap.add_argument("--image", default=None,
                    help="the FRR node image (default: scripts/build-image.sh frr's)")
    args = ap.parse_args(argv)
    if args.huge < 1 or args.sample < 1:
        ap.error("--huge and --sample must be 1 or more")
    topologies = jobs(args.topologies, args.ipv6)
    if not topologies:
        ap.error("no topology files (run it from the project's root or name them)")
    try:
        with tempfile.TemporaryDirectory(prefix="beonet-frr-check.") as folder:
            os.chmod(folder, 0o755)
            ok = check(topologies, args.image or variant_image("frr"), folder, args.huge, args.sample, runner)
    except (LabError, OSError) as exc:
        print("beonet frr-check: %s" % exc, file=sys.stderr)
        return 1
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
