"""A netlab topology of the same nodes and networks as a beonet plan, to time
`netlab create` beside `beonet compile` (docs/benchmarks.md).

    beonet compile topologies/metanode-testbed.yml | python scripts/netlab_topology.py > netlab.yml

Every node is a Linux host; every segment of the plan is a link of netlab's
(a LAN with all its members, a point-to-point link with its two ends) at the
segment's rate, with the plan's prefix, so netlab numbers the same networks.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO


def topology(plan: dict[str, Any]) -> dict[str, Any]:
    """The netlab topology (as data) of a beonet plan."""
    links = []
    for name, seg in plan["segments"].items():
        link: dict[str, Any] = {m["node"]: {} for m in seg["members"]}
        link.update({"bandwidth": seg["rate_mbit"] * 1000, "prefix": {"ipv4": seg["prefix"]},
                     "name": name})
        links.append(link)
    return {"name": plan["topology"]["name"][:16], "provider": "clab",
            "defaults": {"device": "linux"}, "nodes": list(plan["nodes"]), "links": links}


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    try:
        plan = json.load(stdin)
        data = topology(plan)
    except (ValueError, KeyError, TypeError) as exc:
        print("netlab_topology: not a beonet plan on stdin: %s" % exc, file=sys.stderr)
        return 2
    json.dump(data, stdout, indent=1)           # JSON is YAML: netlab reads it as it is
    stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
