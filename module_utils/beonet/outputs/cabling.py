"""The cabling sheet as Markdown (a table per switch, then the point-to-point
cables), CSV (one row per cable) and JSON (switches and cables; `from_json`
reads it back)."""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING, Any

from ..cabling.sheet import Cable, NicEnd, PortEnd, Sheet, SwitchInfo
from ..compiler.cables import asdict

if TYPE_CHECKING:
    from ..cabling.sheet import End

Physical = dict[tuple[str, str], str]     # (node, logical NIC) -> physical NIC name

CSV_HEADER = ["label", "a", "a_nic_or_port", "b", "b_nic_or_port", "network", "channel"]


def _device(end: End, physical: Physical | None = None) -> tuple[str, str]:
    """(node or switch, NIC name or port number) of a cable end; with physical,
    a renamed NIC as `eth1 (enp1s0)`."""
    if isinstance(end, NicEnd):
        real = (physical or {}).get((end.node, end.nic))
        return end.node, "%s (%s)" % (end.nic, real) if real else end.nic
    return end.switch, str(end.port)


def physical_names(plan: dict[str, Any]) -> Physical:
    """(node, logical NIC) -> physical name, for the NICs a plan renames (-i INVENTORY)."""
    return {(name, i["logical"]): i["name"] for name, node in plan["nodes"].items()
            for i in node["interfaces"] if "logical" in i}


def _switch_line(sw: SwitchInfo) -> str:
    parts = ["network %s" % sw.network]
    if sw.channel is not None:
        parts.append("bond channel %d" % sw.channel)
    parts.append("%d ports" % sw.ports if sw.ports is not None else "port count not given")
    return ", ".join(parts)


def _ports(sheet: Sheet) -> dict[str, list[tuple[int, Cable, End]]]:
    """switch -> its used ports in order: (port, cable, the cable's other end)."""
    out: dict[str, list[tuple[int, Cable, End]]] = {sw.name: [] for sw in sheet.switches}
    for cable in sheet.cables:
        for here, there in ((cable.a, cable.b), (cable.b, cable.a)):
            if isinstance(here, PortEnd):
                out[here.switch].append((here.port, cable, there))
    for rows in out.values():
        rows.sort(key=lambda row: row[0])
    return out


def markdown(sheet: Sheet, title: str, physical: Physical | None = None) -> str:
    """A table per switch (port, cable label, what it reaches), then the point-to-point
    cables; NICs by their plan names, with their physical names where `physical` has them."""
    out = ["# Cabling of %s" % title, "",
           "%d switches, %d cables. A cable's label is printed on both of its ends."
           % (len(sheet.switches), len(sheet.cables))]
    ports = _ports(sheet)
    for sw in sheet.switches:
        out += ["", "## Switch %d: %s" % (sw.number, sw.name), "", _switch_line(sw), "",
                "| port | cable | to | NIC or port |", "| ---: | --- | --- | --- |"]
        out += ["| %d | %s | %s | %s |" % ((port, cable.label) + _device(there, physical))
                for port, cable, there in ports[sw.name]]
    p2p = [c for c in sheet.cables if isinstance(c.a, NicEnd) and isinstance(c.b, NicEnd)]
    if p2p:
        out += ["", "## Point-to-point cables", "",
                "| cable | node | NIC | node | NIC |", "| --- | --- | --- | --- | --- |"]
        out += ["| %s | %s | %s | %s | %s |" % ((c.label,) + _device(c.a, physical)
                                                + _device(c.b, physical))
                for c in p2p]
    return "\n".join(out) + "\n"


def csv_text(sheet: Sheet) -> str:
    """One row per cable: label, end A, its NIC or port, end B, its NIC or port, network, channel."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for c in sheet.cables:
        writer.writerow((c.label,) + _device(c.a) + _device(c.b)
                        + (c.network, "" if c.channel is None else c.channel))
    return buf.getvalue()


def _end_data(end: End) -> dict[str, Any]:
    return {"node": end.node, "nic": end.nic} if isinstance(end, NicEnd) else \
        {"switch": end.switch, "port": end.port}


def json_text(sheet: Sheet) -> str:
    """{"switches": [...], "cables": [...]}; an end is {"node", "nic"} or {"switch", "port"}.
    One switch or cable a line: readable, diffable, and fast for large clusters."""
    switches = [json.dumps(asdict(sw)) for sw in sheet.switches]
    cables = [json.dumps({"label": c.label, "a": _end_data(c.a), "b": _end_data(c.b),
                          "network": c.network, "channel": c.channel}) for c in sheet.cables]
    return '{\n  "switches": [\n    %s\n  ],\n  "cables": [\n    %s\n  ]\n}\n' % (
        ",\n    ".join(switches), ",\n    ".join(cables))


def _end(data: dict[str, Any]) -> End:
    return PortEnd(data["switch"], data["port"]) if "switch" in data else NicEnd(data["node"],
                                                                                   data["nic"])


def from_json(text: str) -> Sheet:
    """The sheet `json_text` wrote."""
    data = json.loads(text)
    return Sheet([SwitchInfo(**sw) for sw in data["switches"]],
                 [Cable(c["label"], _end(c["a"]), _end(c["b"]), c["network"], c["channel"])
                  for c in data["cables"]])


FORMATS = ("md", "csv", "json")
BUILD_FILES = {"cabling.md": "md", "cabling.csv": "csv", "cabling.json": "json"}


def render(sheet: Sheet, fmt: str, title: str, physical: Physical | None = None) -> str:
    """The sheet in one of FORMATS (CSV and JSON name NICs by their plan names only)."""
    if fmt == "md":
        return markdown(sheet, title, physical)
    return csv_text(sheet) if fmt == "csv" else json_text(sheet)
