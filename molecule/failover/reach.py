#!/usr/bin/env python3
"""Ping every target from this node, again and again, for a while.

    reach.py SECONDS SINCE ADDR [ADDR ...]

Each round pings every target at once (one echo, 1 s wait) and starts every
0.5 s. Prints JSON: per target the seconds after SINCE (a Unix time) of the
last round it did not answer (null if it always did) and whether it answered
in each of the last three rounds."""

import json
import subprocess
import sys
import threading
import time


def ping(addr: str, out: dict, key: str) -> None:
    res = subprocess.run(["ping", "-n", "-q", "-c", "1", "-W", "1", addr],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    out[key] = res.returncode == 0


def main() -> None:
    seconds, since, targets = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
    last_fail = {t: None for t in targets}
    history = {t: [] for t in targets}
    end = time.time() + seconds
    while time.time() < end:
        began = time.time()
        got = {}
        threads = [threading.Thread(target=ping, args=(t, got, t)) for t in targets]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for t in targets:
            history[t].append(got[t])
            if not got[t]:
                last_fail[t] = round(time.time() - since, 2)
        time.sleep(max(0.0, 0.5 - (time.time() - began)))
    print(json.dumps({t: {"last_fail": last_fail[t], "answers": all(history[t][-3:])}
                      for t in targets}))


if __name__ == "__main__":
    main()
