"""lab: the embedded Docker lab (or the QEMU VM lab) of a topology, with a
subcommand per action. The providers get the parsed values; a lab's own
failure exits 1, options that do not go together exit 2."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator

from .common import Failed, UsageError, count

ACTIONS = {
    "up": "bring the lab of the topology up (taken down first if it runs)",
    "down": "take the lab down (from its state folder: the topology file need not exist)",
    "image": "print the node image the Docker lab of the topology needs, as the argument of "
             "scripts/build-image.sh (node, frr or mpi)",
    "fault": "stop or start a node, cut or restore a NIC's link, a cable or a switch "
             "(--node N --stop|--start, --link NODE:NIC, --cable NODE:NIC or --switch NAME with "
             "--down|--up; alone: what is down); the VM lab's delays (--delays)",
    "link": "a VM NIC's link (--provider vm --node --nic --state): the older form of "
            "fault --link",
    "outage": "one failure (--node, --cable or --switch) made and measured on the Docker lab, "
              "then undone",
}


@contextlib.contextmanager
def _lab_errors() -> Iterator[None]:
    """A lab's LabUsageError as a usage error (exit 2), its LabError as a failure (exit 1)."""
    from ..labs.base import LabError, LabUsageError
    try:
        yield
    except LabUsageError as exc:
        raise UsageError(str(exc)) from None
    except LabError as exc:
        raise Failed(str(exc)) from None


def cmd_up(args: argparse.Namespace) -> None:
    with _lab_errors():
        if args.provider == "vm":
            from ..labs import vm
            images = vm.parse_node_images(args.node_images)
            if args.wiring != "plan" or args.miswire or args.seed:
                raise UsageError("--wiring, --miswire and --seed are the Docker lab's")
            vm.require_root()
            vm.up(args.topology, os.getcwd(), args.name, args.image, images)
            return
        if args.node_images or args.image != "networkd":
            raise UsageError("--image and --node-images are the VM lab's (--provider vm)")
        from ..labs import docker
        docker.up(args.topology, os.getcwd(), args.name, args.wiring, args.miswire, args.seed)


def cmd_down(args: argparse.Namespace) -> None:
    with _lab_errors():
        if args.provider == "vm":
            from ..labs import vm
            vm.require_root()
            vm.down(args.topology, os.getcwd(), args.name)
            return
        from ..labs import docker
        docker.down(args.topology, os.getcwd(), args.name)


def cmd_image(args: argparse.Namespace) -> None:
    from ..labs import docker
    with _lab_errors():
        print(docker.needed_variant(args.topology))


def cmd_fault(args: argparse.Namespace) -> None:
    from ..labs import faults
    with _lab_errors():
        if args.delays:
            if args.fault or args.node or args.link or args.cable or args.switch:
                raise UsageError("--delays goes alone, without a fault")
            print(faults.delays(args.topology, os.getcwd(), args.name, args.provider,
                                args.delays == "on"))
            return
        print(faults.fault(args.topology, os.getcwd(), args.name, args.provider,
                           node=args.node, link=args.link, action=args.fault,
                           cable=args.cable, switch=args.switch))


def cmd_link(args: argparse.Namespace) -> None:
    from ..labs import faults
    if args.provider != "vm" or not (args.node and args.nic and args.state):
        raise UsageError("link needs --provider vm, --node, --nic and --state up|down "
                         "(or use lab fault --link NODE:NIC --down|--up, both labs)")
    with _lab_errors():
        print(faults.fault(args.topology, os.getcwd(), args.name, args.provider,
                           link="%s:%s" % (args.node, args.nic), action=args.state))


def cmd_outage(args: argparse.Namespace) -> None:
    from ..labs import outage
    given = [(k, v) for k, v in (("node", args.node), ("cable", args.cable), ("switch", args.switch)) if v]
    if args.provider != "docker" or len(given) != 1:
        raise UsageError("outage: the Docker lab, and one of --node, --cable or --switch")
    if not 1 <= args.window <= 600:          # NaN fails both
        raise UsageError("outage: --window must be 1 to 600 seconds, not %s" % args.window)
    with _lab_errors():
        with contextlib.redirect_stdout(sys.stderr):      # the fault's own lines; stdout is the result's
            found = outage.measure(args.topology, os.getcwd(), args.name, given[0][0], given[0][1],
                                   args.window, args.family)
    print(outage.report(found, args.format))


def _common(s: argparse.ArgumentParser, func: Callable[[argparse.Namespace], None],
            lab: bool = True, compiles: bool = False) -> None:
    """The topology; the lab's --name and --provider (not for image: it names what a
    Docker lab needs)."""
    s.add_argument("topology", help="topology YAML file")
    s.set_defaults(func=func, compiles=compiles)
    if not lab:
        return
    s.add_argument("--name", help="lab name: container prefix and .lab/NAME/ state folder "
                   "(default beonet-<topology file name>); lets labs of one topology coexist; "
                   "down, fault and link work from the state folder (the file need not exist)")
    s.add_argument("--provider", choices=["docker", "vm"], default="docker",
                   help="docker: containers (shared kernel, no bonding); vm: QEMU VMs "
                   "with their own Debian kernel (scripts/build-vm-image.sh first)")


def _up(s: argparse.ArgumentParser) -> None:
    from ..labs import VM_IMAGES
    _common(s, cmd_up, compiles=True)
    s.add_argument("--image", choices=VM_IMAGES, default="networkd",
                   help="vm: base image of every VM, named after the network manager it "
                   "boots with (default networkd)")
    s.add_argument("--node-images", metavar="NODE=IMAGE,...", help="vm: nodes booted from "
                   "another image than --image (the node role detects its manager)")
    s.add_argument("--wiring", choices=["plan", "scrambled"], default="plan",
                   help="docker: plan (default): NICs named and mapped as planned; scrambled: "
                   "as on a new cluster (realistic names, random order, spare NICs, no "
                   "mapping in the inventory; the truth in .lab/NAME/wiring.json)")
    s.add_argument("--miswire", type=count(0, 10_000), default=0, metavar="N",
                   help="docker, scrambled: move N cables (point-to-point to a wrong node, "
                   "switch to another segment's switch)")
    s.add_argument("--seed", type=int, default=0, help="docker, scrambled: seed of the "
                   "names, order, spares and moved cables (default 0)")


def _targets(s: argparse.ArgumentParser, action: str) -> None:
    """--node, --cable and --switch (fault and outage); --link for fault."""
    s.add_argument("--node", help="%s: the node" % action)
    if action == "fault":
        s.add_argument("--link", metavar="NODE:NIC", help="a node's NIC (the plan's name, "
                       "eth1, ...): that NIC loses carrier")
    s.add_argument("--cable", metavar="NODE:NIC", help="the cable at a node's NIC: both "
                   "ends of a point-to-point link lose carrier, on a LAN only that NIC")
    s.add_argument("--switch", metavar="NAME", help="a segment or switch as the plan "
                   "names it (a tree's leaf switch, a bonded LAN): every NIC on it loses carrier")


def _fault(s: argparse.ArgumentParser) -> None:
    _common(s, cmd_fault)
    _targets(s, "fault")
    what = s.add_mutually_exclusive_group()
    for flag, help_ in (("stop", "--node: stop it as if its power were cut"),
                        ("start", "--node: start it again"),
                        ("down", "--link, --cable, --switch: cut it (carrier loss)"),
                        ("up", "--link, --cable, --switch: restore it")):
        what.add_argument("--" + flag, dest="fault", action="store_const", const=flag, help=help_)
    s.add_argument("--delays", choices=["on", "off"], help="vm: the topology's per-hop "
                   "delays (latency) off in every VM, or on again")


def _link(s: argparse.ArgumentParser) -> None:
    _common(s, cmd_link)
    s.add_argument("--node", help="the node")
    s.add_argument("--nic", help="the plan NIC (eth1, ...) or mgmt")
    s.add_argument("--state", choices=["up", "down"], help="new link state")


def _outage(s: argparse.ArgumentParser) -> None:
    _common(s, cmd_outage, compiles=True)
    _targets(s, "outage")
    s.add_argument("--window", type=float, default=10.0, metavar="SECONDS",
                   help="seconds the probes run after the failure (default 10)")
    s.add_argument("--family", type=int, choices=[4, 6],
                   help="the address family probed (default: IPv4 where the plan has it)")
    s.add_argument("--format", "--outage-format", dest="format", choices=["text", "json"],
                   default="text", help="one line (default) or the JSON with every probed pair")


def populate(_name: str, s: argparse.ArgumentParser) -> None:
    """lab's subcommands, each with its own options."""
    sub = s.add_subparsers(dest="action", required=True, metavar="ACTION",
                           help="one of the actions below; 'beonet lab ACTION -h' for its options")
    build = {"up": _up, "down": lambda p: _common(p, cmd_down),
             "image": lambda p: _common(p, cmd_image, lab=False, compiles=True),
             "fault": _fault, "link": _link, "outage": _outage}
    for action, help_ in ACTIONS.items():
        build[action](sub.add_parser(action, help=help_, description=help_))
