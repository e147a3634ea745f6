"""The `beonet` command line: compile, dry run, paths, metrics, drawings, exports."""

import argparse
import json
import os
import sys
import tempfile

from .agent import apply as node
from .compiler import pipeline
from .compiler.errors import CompileError, Problem
from .compiler.schema import SCHEMA
from .outputs import drawing, dryrun, export, inventory
from .outputs import plan as render

EXIT_INPUT = 2


def _write(text, output):
    """Print, or write the file atomically (nothing is written on error)."""
    if not output or output == "-":
        sys.stdout.write(text)
        return
    folder = os.path.dirname(os.path.abspath(output))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".beonet-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, output)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _compile(args):
    compiled = pipeline.compile_file(args.topology)
    physical = None
    if getattr(args, "inventory", None):
        hosts, problems = inventory.read_inventory(args.inventory)
        if problems:
            raise CompileError(problems.items)
        physical, problems = inventory.physical_names(compiled.graph, hosts, args.inventory,
                                                      inventory.management_of(hosts))
        if problems:
            raise CompileError(problems.items)
    return compiled, render.plan(compiled, physical)


def cmd_compile(args):
    compiled, plan = _compile(args)
    if args.paths:
        plan["paths"] = _all_paths(compiled)
    _write(render.dumps(plan, args.format), args.output)


def _all_paths(compiled, src=None, dst=None):
    names = [n.name for n in compiled.graph.nodes]
    out = {}
    for a in ([src] if src else names):
        for b in ([dst] if dst else names):
            if a != b:
                out.setdefault(a, {})[b] = [h["address"] for h in compiled.path(a, b)]
    return out


def cmd_routes(args):
    _, plan = _compile(args)
    nodes = plan["nodes"]
    if args.node:
        _known(plan, args.node, "--node")
        nodes = {args.node: nodes[args.node]}
    text = "\n".join(dryrun.ip_route_text(v, k) for k, v in nodes.items())
    _write(text, args.output)


def _known(plan, name, flag):
    if name not in plan["nodes"]:
        raise CompileError([_usage("%s: no node '%s' in %s" % (flag, name, plan["topology"]["source"]))])


def _usage(text):
    return Problem(text, file="beonet")


def cmd_paths(args):
    compiled, plan = _compile(args)
    _known(plan, args.src, "--from")
    if args.dst:
        _known(plan, args.dst, "--to")
    targets = [args.dst] if args.dst else [n for n in plan["nodes"] if n != args.src]
    if args.format == "json":
        out = {t: compiled.path(args.src, t) for t in targets}
        _write(json.dumps(out, indent=2) + "\n", args.output)
        return
    lines = []
    for t in targets:
        hops = compiled.path(args.src, t)
        lines.append("%s -> %s (%d hop%s): %s" % (
            args.src, t, len(hops), "" if len(hops) == 1 else "s",
            " ".join(h["address"] for h in hops)))
    _write("\n".join(lines) + "\n", args.output)


def cmd_metrics(args):
    compiled = pipeline.compile_file(args.topology)
    _write(render.dumps(compiled.metrics, args.format), args.output)


def cmd_graph(args):
    _, plan = _compile(args)
    _write(drawing.GRAPHS[args.format](plan), args.output)


def cmd_export(args):
    _, plan = _compile(args)
    _write(export.EXPORTS[args.what](plan), args.output)


BUILD_FILES = {"plan.json": None, "routes.txt": None, "hosts": "hosts",
               "topology.conf": "slurm", "hostfile": "hostfile"}


def cmd_build(args):
    """Every artefact into one folder; nothing is written unless all compile."""
    _, plan = _compile(args)
    texts = {"plan.json": render.dumps(plan),
             "routes.txt": "\n".join(dryrun.ip_route_text(v, k) for k, v in plan["nodes"].items())}
    for name, what in BUILD_FILES.items():
        if what:
            texts[name] = export.EXPORTS[what](plan)
    # Each node's persistent files, as the beonet_node role would write them.
    nets = render.prefixes(plan)
    for name, n in plan["nodes"].items():
        for path, text in node.persistent_files(n, nets, args.backend).items():
            texts[os.path.join("nodes", name) + path] = text
    for name, text in texts.items():
        path = os.path.join(args.output, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write(text, path)
    print("beonet: wrote %s and %s files of %d nodes to %s/"
          % (", ".join(t for t in texts if not t.startswith("nodes/")), args.backend,
             len(plan["nodes"]), args.output.rstrip("/")))


def cmd_schema(args):
    _write(json.dumps(SCHEMA, indent=2) + "\n", args.output)


def cmd_lab(args):
    if args.provider == "vm":
        from .labs import vm as vmlab
        code = vmlab.main([args.action, args.topology], args.name, image=args.image,
                          nm_nodes=[n for n in (args.nm_nodes or "").split(",") if n],
                          node=args.node, nic=args.nic, link_state=args.state)
        if code:
            sys.exit(code)
        return
    from .labs import docker as lab
    if args.action == "link":
        print("beonet lab: 'link' needs --provider vm", file=sys.stderr)
        sys.exit(2)
    code = lab.main([args.action, args.topology], args.name)
    if code:
        sys.exit(code)


def parser():
    p = argparse.ArgumentParser(prog="beonet", description="Compile a cluster network "
                                "topology into per-node plans, dry runs and exports.")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name, func, help_, topology=True, inv=True):
        s = sub.add_parser(name, help=help_, description=help_)
        if topology:
            s.add_argument("topology", help="topology YAML file")
        if inv:
            s.add_argument("-i", "--inventory", help="Ansible inventory mapping NIC names "
                           "(host variable beonet_interfaces)")
        s.add_argument("-o", "--output", help="write here (atomically) instead of stdout")
        s.set_defaults(func=func)
        return s

    s = add("compile", cmd_compile, "print the plan")
    s.add_argument("--format", choices=["json", "yaml"], default="json")
    s.add_argument("--paths", action="store_true", help="include every pair's expected hops")
    s = add("routes", cmd_routes, "dry run: each node's addresses, bonds, forwarding, routes")
    s.add_argument("--node", help="only this node")
    s = add("paths", cmd_paths, "expected `traceroute -n` hop lists")
    s.add_argument("--from", dest="src", required=True, help="source node")
    s.add_argument("--to", dest="dst", help="destination node (default: all)")
    s.add_argument("--format", choices=["text", "json"], default="text")
    s = add("metrics", cmd_metrics, "size, hops, routes, gateway load, bisection", inv=False)
    s.add_argument("--format", choices=["json", "yaml"], default="json")
    s = add("graph", cmd_graph, "drawing of the topology")
    s.add_argument("--format", choices=sorted(drawing.GRAPHS), default="dot")
    s = add("export", cmd_export, "/etc/hosts lines, Slurm topology.conf or MPI hostfile")
    s.add_argument("what", choices=sorted(export.EXPORTS))
    s = add("build", cmd_build, "write plan.json, routes.txt, hosts, topology.conf, "
            "hostfile and each node's persistent files (nodes/NODE/etc/...) into the "
            "folder given by -o")
    s.set_defaults(output="build")
    s.add_argument("--backend", choices=["networkd", "networkmanager"], default="networkd",
                   help="persistent configuration files to render (default networkd)")
    s = add("lab", cmd_lab, "bring the embedded Docker lab (or, with --provider vm, the "
            "QEMU VM lab) of a topology up or down", topology=False, inv=False)
    s.add_argument("action", choices=["up", "down", "link"],
                   help="link: take a VM NIC's link up or down (--provider vm)")
    s.add_argument("topology", help="topology YAML file")
    s.add_argument("--name", help="lab name: container prefix and .lab/NAME/ state folder "
                   "(default beonet-<topology file name>); lets labs of one topology coexist; "
                   "down and link work from the state folder (the file need not exist)")
    s.add_argument("--provider", choices=["docker", "vm"], default="docker",
                   help="docker: containers (shared kernel, no bonding); vm: QEMU VMs "
                   "with their own Debian kernel (scripts/build-vm-image.sh first)")
    s.add_argument("--image", choices=["networkd", "nm"], default="networkd",
                   help="vm: base image of every VM (default networkd)")
    s.add_argument("--nm-nodes", help="vm: comma-separated nodes booted from the "
                   "NetworkManager image (backend networkmanager in the inventory)")
    s.add_argument("--node", help="link: the VM")
    s.add_argument("--nic", help="link: the plan NIC (eth1, ...) or mgmt")
    s.add_argument("--state", choices=["up", "down"], help="link: new link state")
    add("schema", cmd_schema, "print the topology JSON Schema", topology=False, inv=False)
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    try:
        args.func(args)
    except CompileError as exc:
        for p in exc.problems:
            print(str(p), file=sys.stderr)
        n = len(exc.problems)
        print("beonet: %d error%s, nothing written" % (n, "" if n == 1 else "s"), file=sys.stderr)
        return EXIT_INPUT
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
