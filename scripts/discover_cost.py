"""What one discovery listener costs: CPU seconds per second of listening, on fake NICs.

    python scripts/discover_cost.py [--neighbours 31] [--nics 2] [--seconds 10]

Each fake NIC is one end of a Unix socket pair of messages (the agent's select and
reads run on it as on a raw socket; its queue holds 4 MiB, as the agent asks of a
raw socket's); a sender thread puts the beacons of ``--neighbours`` other nodes
into each at their pace, as a LAN of 32 nodes would.
The listener (``discover.exchange``) runs in the main thread, whose CPU time alone
is measured (``time.thread_time``). Three cases:

- ``short run``: a one-batch run (the first 10 s of any run), neighbours at
  0.25 s: one wake-up per frame, today's pace;
- ``long run, new neighbours``: a background listener past its first 10 s while
  its neighbours still beacon every 0.25 s (the batch just started);
- ``long run``: a background listener and its neighbours all past their first
  10 s (one beacon a second each), what nearly every listener costs while the
  batches start.

Nothing leaves the process; no NIC or raw socket is used.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import tempfile
import threading
import time
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "module_utils"))

from beonet.agent import discover  # noqa: E402


class SocketNic:
    """A fake NIC: one end of a datagram socket pair; frames read from it come with the
    address a raw socket bound to NIC name would give; frames sent are counted."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.sock, self.wire = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.wire.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, discover.RCVBUF)
        self.sock.setblocking(False)
        self.wire.setblocking(False)
        self.sent = self.received = self.lost = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    def recvfrom(self, size: int) -> tuple[bytes, tuple[str, int, int, int, bytes]]:
        frame = self.sock.recv(size)
        self.received += 1
        return frame, (self.name, discover.ETHERTYPE, 0, 1, b"")

    def send(self, frame: bytes) -> int:
        self.sent += 1
        return len(frame)

    def getsockopt(self, level: int, option: int, size: int = 0) -> bytes:
        return struct.pack("II", 0, 0)          # PACKET_STATISTICS: nothing dropped

    def close(self) -> None:
        self.sock.close()
        self.wire.close()


def beacons(nics: list[SocketNic], neighbours: int, interval: float, run: str, until: float) -> None:
    """Every neighbour's beacon into every NIC, each neighbour at its own phase, until
    the monotonic clock reaches until."""
    frames = [(nic, discover.encode_beacon(run, "peer%02d" % k, "eth0", "02:00:00:00:%02x:%02x" % (i, k)))
              for i, nic in enumerate(nics) for k in range(neighbours)]
    start = time.monotonic()
    step = interval / max(1, len(frames))
    tick = 0
    while time.monotonic() < until:
        nic, frame = frames[tick % len(frames)]
        try:
            nic.wire.send(frame)
        except BlockingIOError:
            nic.lost += 1               # the queue is full: the frame is dropped, as a NIC's would be
        tick += 1
        time.sleep(max(0.0, start + tick * step - time.monotonic()))


def measure(neighbours: int, nics: int, seconds: float, interval: float, fast: float) -> dict[str, Any]:
    """CPU seconds per second of the listener, with what it heard and sent."""
    fakes = [SocketNic("eth%d" % k) for k in range(nics)]
    socks: dict[str, Any] = {nic.name: nic for nic in fakes}
    frames = {nic.name: discover.encode_beacon("cost", "me", nic.name, "02:00:00:00:00:01") for nic in fakes}
    until = time.monotonic() + seconds
    sender = threading.Thread(target=beacons, args=(fakes, neighbours, interval, "cost", until), daemon=True)
    sender.start()
    with tempfile.TemporaryDirectory() as sysfs:
        cpu = time.thread_time()
        heard, _carried = discover.exchange("me", "cost", socks, frames, seconds, sysfs, fast=fast)
        cpu = time.thread_time() - cpu
    sender.join()
    for nic in fakes:
        nic.close()
    return {"cpu_per_second": round(cpu / seconds, 5), "heard": sum(len(h) for h in heard.values()),
            "frames_per_second": round(sum(n.received for n in fakes) / seconds, 1),
            "dropped": sum(n.lost for n in fakes),
            "sent_per_second": round(sum(n.sent for n in fakes) / seconds, 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--neighbours", type=int, default=31, help="other nodes on each NIC's LAN")
    parser.add_argument("--nics", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds each case runs")
    args = parser.parse_args(argv)
    cases = {"short run": (discover.INTERVAL, args.seconds + 1),
             "long run, new neighbours": (discover.INTERVAL, 0.0),
             "long run": (discover.MAX_INTERVAL, 0.0)}
    out = {}
    for label, (interval, fast) in cases.items():
        out[label] = measure(args.neighbours, args.nics, args.seconds, interval, fast)
    print(json.dumps({"neighbours": args.neighbours, "nics": args.nics, "seconds": args.seconds,
                      "cases": out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
