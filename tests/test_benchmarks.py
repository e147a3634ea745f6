"""Benchmarks: the planner and report logic (module_utils/beonet/benchmarks),
tokex.c on loopback, the module's documentation, and the playbook's refusal of
bad requests before any node is touched."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest
from conftest import ROOT, needs_host

from beonet.benchmarks import planner as bench
from beonet.benchmarks import report
from beonet.compiler import pipeline
from beonet.outputs import plan as render

TOPO = ROOT / "topologies"


def expected_paths(c, plan):
    """Every pair's allowed hop address lists, as the beonet_plan role returns them."""
    return {a: {b: [[h["address"] for h in hops] for hops in c.path(a, b)]
                for b in plan["nodes"] if b != a}
            for a in plan["nodes"]}


def compiled(name):
    """The plan and path_of as the module builds them: from the plan and the
    expected hop addresses, never from the topology file."""
    c = pipeline.compile_file(str(TOPO / name) if "/" not in name else name)
    plan = render.plan(c)
    return plan, bench.path_lookup(plan, expected_paths(c, plan))


@pytest.fixture(scope="module")
def mesh():
    return compiled("routed-mesh.yml")


# ------------------------------------------------------------------ latency model

def test_model_fit_reproduces_the_sc98_table():
    m = bench.DEFAULT_MODEL
    # The table's own rows, predicted within 10 us (the paper's fit is as close).
    for name, tcp, udp, _ in bench.SC98_TABLE:
        parts = name.split("-")
        if "P" in parts:
            continue
        sw, rt = parts.count("B"), parts.count("L")
        assert abs(bench.predict_rtt(m, "tcp", sw, rt) - tcp) <= 10, name
        assert abs(bench.predict_rtt(m, "udp", sw, rt) - udp) <= 10, name
    # A Linux router costs about 60-75 us, a switch about 19 us (the paper's abstract).
    assert 55 <= m["udp"]["router_us"] <= 75 and 15 <= m["udp"]["switch_us"] <= 25


def test_model_fit_of_synthetic_rows_recovers_parameters():
    rows = [(n, 100 + 10 * n.count("B") + 50 * n.count("L"), 80 + 5 * n.count("B") + 40 * n.count("L"), 0)
            for n in ("e-e", "e-B-e", "e-L-e", "e-B-L-e", "e-B-B-L-L-e")]
    m = bench.fit_model(rows)
    assert m["tcp"] == {"base_us": 100.0, "switch_us": 10.0, "router_us": 50.0}
    assert m["udp"] == {"base_us": 80.0, "switch_us": 5.0, "router_us": 40.0}


def test_bad_latency_model_is_refused(mesh):
    plan, path_of = mesh
    with pytest.raises(bench.BenchError) as exc:
        bench.validate(plan, {"latency_model": {"tcp": {"base_us": -1, "switch_us": 1, "router_us": "x"}}})
    text = str(exc.value)
    assert "latency_model.tcp.base_us: must be a number >= 0" in text
    assert "latency_model.tcp.router_us: must be a number >= 0" in text
    assert "latency_model.udp: missing" in text


# ------------------------------------------------------------------ path classes and pairs

def test_mesh_classes_local_wire_and_one_gateway(mesh):
    plan, path_of = mesh
    cls = bench.classify(plan, path_of, list(plan["nodes"]))
    assert set(cls) == {"same-segment", "gateway-1"}
    # 4x4 mesh: 8 segments of 4 nodes -> 8 * 6 local pairs; the other 72 through a gateway
    assert len(cls["same-segment"]) == 48 and len(cls["gateway-1"]) == 72
    a, b, info = cls["gateway-1"][0]
    assert info["routers"] == 1 and info["switches"] == 2 and len(info["via"]) == 1


def test_metagraph_classes_p2p_and_two_gateways():
    plan, path_of = compiled("metanode-testbed.yml")
    cls = bench.classify(plan, path_of, list(plan["nodes"]))
    assert {"same-segment", "p2p", "gateway-1", "gateway-2"} <= set(cls)
    assert len(cls["p2p"]) == 18                        # the testbed's 18 point-to-point links
    assert all(i["switches"] == 0 for _, _, i in cls["p2p"])
    assert all(i["routers"] == 2 for _, _, i in cls["gateway-2"])


def test_tree_cross_switch_and_bonded_classes():
    plan, path_of = compiled("switch-tree.yml")
    cls = bench.classify(plan, path_of, list(plan["nodes"]))
    assert set(cls) == {"same-segment", "cross-switch"}
    assert all(i["switches"] == 3 for _, _, i in cls["cross-switch"])   # leaf, root, leaf
    sched = bench.schedule(plan, path_of, {"sizes": [64], "remote_copies": []})
    assert sched["link_rates"] == [100] and sched["uplink_rates"] == [1000]
    plan, path_of = compiled("bonded-dual-net.yml")
    assert set(bench.classify(plan, path_of, list(plan["nodes"]))) == {"bonded"}


def test_disjoint_pairs_never_share_a_node(mesh):
    plan, path_of = mesh
    for cands in bench.classify(plan, path_of, list(plan["nodes"])).values():
        for k in range(0, 10):
            chosen = bench.disjoint_pairs(cands, k)
            nodes = [n for a, b, _ in chosen for n in (a, b)]
            assert len(nodes) == len(set(nodes))
            assert len(chosen) <= k
    assert bench.disjoint_pairs([("a", "b", {}), ("b", "c", {}), ("c", "d", {})], 5) == [
        ("a", "b", {}), ("c", "d", {})]


def test_pair_counts():
    assert bench.pair_counts(8) == [1, 2, 4, 8]
    assert bench.pair_counts(7) == [1, 2, 4, 7]
    assert bench.pair_counts(1) == [1]
    assert bench.pair_counts(3, [1, 2, 5]) == [1, 2, 3]


# ------------------------------------------------------------------ validation errors

def test_node_not_in_plan_is_refused_before_anything(mesh):
    plan, path_of = mesh
    with pytest.raises(bench.BenchError) as exc:
        bench.schedule(plan, path_of, {"nodes": ["node-0-0", "node-9-9"]})
    assert "nodes: node-9-9 not in the plan of routed-mesh" in str(exc.value)


@pytest.mark.parametrize("size", [0, -4, 65537, 1 << 20, "8k", 2.5, True])
def test_size_out_of_range_is_refused(mesh, size):
    plan, _ = mesh
    with pytest.raises(bench.BenchError) as exc:
        bench.validate(plan, {"sizes": [4, size]})
    assert "sizes: %r is out of range (token sizes are integers 1..65536 bytes)" % size in str(exc.value)


def test_every_problem_is_listed_together(mesh):
    plan, _ = mesh
    with pytest.raises(bench.BenchError) as exc:
        bench.validate(plan, {"sizes": [0], "count": 0, "file_mb": [100], "classes": ["hub"],
                              "pairs": [9], "copies": 0, "window": 5000})
    p = exc.value.problems
    assert "count: 0 is out of range (1..1000000)" in p
    assert "window: 5000 is out of range (1..1024)" in p
    assert "file_mb: 100 is out of range (1..64 MB)" in p
    assert any(x.startswith("classes: unknown path class 'hub'") for x in p)
    assert "pairs: 9 disjoint pairs need 18 nodes, the benchmark has 16" in p
    assert "copies: 0 must be an integer >= 1" in p
    assert len(p) == 7


def test_too_many_copies_for_the_nodes(mesh):
    plan, _ = mesh
    nodes = list(plan["nodes"])[:6]
    with pytest.raises(bench.BenchError) as exc:
        bench.validate(plan, {"nodes": nodes, "copies": 7})
    assert "copies: 7 concurrent copies need at least 7 nodes, the benchmark has 6" in str(exc.value)
    with pytest.raises(bench.BenchError) as exc:
        bench.validate(plan, {"copies": 7, "remote_copies": [7, 9]})
    assert "remote_copies: 9 must be an integer 0..copies (7)" in str(exc.value)
    assert "remote_copies: 7 remote of 7 copies need 14 nodes" not in str(exc.value)


def test_single_node_is_refused(mesh):
    plan, _ = mesh
    with pytest.raises(bench.BenchError) as exc:
        bench.validate(plan, {"nodes": ["node-0-0"]})
    assert "nodes: a benchmark needs at least 2 nodes" in str(exc.value)


def test_missing_compiler_names_every_node():
    bench.check_tools({"a": "/usr/bin/gcc", "b": "/usr/bin/cc"})
    with pytest.raises(bench.BenchError) as exc:
        bench.check_tools({"a": "/usr/bin/gcc", "n2": "", "n1": "  \n"})
    assert exc.value.problems == [
        "n1: no C compiler (gcc or cc) to build tokex: install gcc on the node",
        "n2: no C compiler (gcc or cc) to build tokex: install gcc on the node"]


def test_mss_points_and_default_sizes(mesh):
    plan, _ = mesh
    p = bench.validate(plan, {})
    assert [s for s in p["sizes"] if s & (s - 1) == 0] == [2 ** n for n in range(2, 14)]
    assert {1445, 1448, 1451, 2893, 2899} <= set(p["sizes"])     # MSS 1448 at MTU 1500
    assert bench.validate(plan, {"sizes": [64], "mss_points": False})["sizes"] == [64]


# ------------------------------------------------------------------ schedule

def test_schedule_steps_and_commands(mesh):
    plan, path_of = mesh
    s = bench.schedule(plan, path_of, {"count": 50, "sizes": [4, 8192], "pairs": [1, 8],
                                       "file_mb": [2], "remote_copies": [0, 7]})
    ids = [st["id"] for st in s["steps"]]
    assert ids == ["tokex-same-segment-1p", "tokex-same-segment-8p", "tokex-gateway-1-1p",
                   "tokex-gateway-1-8p", "iperf3-same-segment", "iperf3-gateway-1",
                   "copy-r0-2mb", "copy-r7-2mb", "ring"]
    eight = s["steps"][1]
    assert len(eight["hosts"]) == 8 and len(eight["pairs"]) == 8
    cmd = eight["hosts"]["node-0-0"]
    assert "--start-at @START@" in cmd and "-n 50" in cmd and "--piddir /tmp/beonet-bench/run" in cmd
    assert "--sizes 4,1445,1448,1451,2893,2899,8192" in cmd
    server_of = {p["client"]: p["server"] for p in eight["pairs"]}
    assert "-H %s " % plan["nodes"][server_of["node-0-0"]]["address"] in cmd
    ring = s["steps"][-1]
    assert set(ring["hosts"]) == set(plan["nodes"]) and "--rank 15" in ring["hosts"]["node-3-3"]
    r7 = s["steps"][-2]
    assert len(r7["pairs"]) == 7 and r7["local"] == [] and len(r7["hosts"]) == 7
    r0 = s["steps"][-3]
    assert r0["pairs"] == [] and len(r0["local"]) == 7
    assert all(c.count("--deadline 180") >= 1 for st in s["steps"] for c in st["hosts"].values()
               if "tokex " in c and "iperf3 -s" not in c)


def test_schedule_of_a_node_subset(mesh):
    plan, path_of = mesh
    nodes = ["node-0-0", "node-0-1", "node-1-0", "node-1-1"]
    s = bench.schedule(plan, path_of, {"nodes": nodes, "copies": 2, "remote_copies": [1],
                                       "file_mb": [1]})
    for st in s["steps"]:
        assert set(st["hosts"]) <= set(nodes)
    assert s["classes"] == {"same-segment": 4, "gateway-1": 2}


# ------------------------------------------------------------------ summaries and writers

def test_summarize_nearest_rank():
    assert report.summarize([]) == {"n": 0, "min": None, "median": None, "p99": None, "max": None}
    s = report.summarize(list(range(100, 0, -1)))
    assert s == {"n": 100, "min": 1, "median": 50, "p99": 99, "max": 100}
    assert report.summarize([7.0]) == {"n": 1, "min": 7.0, "median": 7.0, "p99": 7.0, "max": 7.0}


def _fake_outputs(sched, skew=0.0):
    """Outputs as tokex would write them, with known numbers."""
    out = {}
    for st in sched["steps"]:
        if st["kind"] == "tokex":
            for i, pr in enumerate(st["pairs"]):
                runs = []
                for proto in ("tcp", "udp"):
                    for size in sched["params"]["sizes"]:
                        samples = [100.0 + k for k in range(10)]
                        secs = sum(samples) / 1e6
                        runs.append({"proto": proto, "mode": "pingpong", "size": size, "count": 10,
                                     "window": 1, "start": 1000.0 + skew * i, "seconds": secs, "lost": 0,
                                     "one_way_MBps": size * 10 / secs / 1e6,
                                     "exchange_MBps": 2 * size * 10 / secs / 1e6,
                                     "rtt_us": {"min": 100.0, "median": 104.0, "p99": 109.0,
                                                "max": 109.0}, "samples_us": samples})
                out.setdefault(pr["client"], {})[st["id"] + ".json"] = {"runs": runs}
        elif st["kind"] == "iperf3":
            pr = st["pairs"][0]
            out.setdefault(pr["client"], {})[st["id"] + ".json"] = {
                "end": {"sum_received": {"bits_per_second": 96e6}, "sum_sent": {"retransmits": 3}}}
            out[pr["client"]][st["id"] + "-stream-8192.json"] = {"runs": [
                {"size": 8192, "one_way_MBps": 11.4}]}
        elif st["kind"] == "copy":
            for h in list(st["local"]) + [p["client"] for p in st["pairs"]]:
                out.setdefault(h, {})[st["id"] + ".json"] = {
                    "copy": "local", "bytes": 2000000, "seconds": 0.5, "MBps": 4.0, "start": 50.0,
                    "resident_pages_before": 0}
    return out


def test_collect_aggregates_and_ratios(mesh, tmp_path):
    plan, path_of = mesh
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                       "pairs": [1, 2], "file_mb": [2], "remote_copies": [0, 2]})
    res = report.collect(s, _fake_outputs(s), plan)
    two = [a for a in res["aggregate"] if a["pairs"] == 2 and a["size"] == 8192 and a["proto"] == "tcp"
           and a["class"] == "same-segment"][0]
    one_pair = 8192 * 10 / (sum(100.0 + k for k in range(10)) / 1e6) / 1e6
    assert two["one_way_MBps"] == pytest.approx(2 * one_pair)
    assert two["exchange_MBps"] == pytest.approx(4 * one_pair)
    # Two same-segment pairs of the mesh use four separate NICs: 2 x 12.5 MB/s.
    assert two["capacity_MBps"] == 25.0
    assert two["one_way_pct_of_capacity"] == pytest.approx(round(100 * 2 * one_pair / 25.0, 1))
    assert "one_way_pct_of_link" not in two
    # Pairs that did not run at the same time: the aggregate is bytes over the union
    # of their windows, not the sum of their rates.
    skewed = report.collect(s, _fake_outputs(s, skew=1.0), plan)
    two_s = [a for a in skewed["aggregate"] if a["pairs"] == 2 and a["size"] == 8192
             and a["proto"] == "tcp" and a["class"] == "same-segment"][0]
    assert two_s["sum_one_way_MBps"] == pytest.approx(2 * one_pair)
    span = 1.0 + sum(100.0 + k for k in range(10)) / 1e6
    assert two_s["one_way_MBps"] == pytest.approx(2 * 8192 * 10 / span / 1e6)
    ip = res["iperf3"][0]
    assert ip["iperf3_MBps"] == pytest.approx(12.0) and ip["ratio_stream_8192"] == 0.95
    lat = [r for r in res["latency"] if r["class"] == "gateway-1" and r["proto"] == "udp"][0]
    assert lat["one_way_median_us"] == 52.0
    assert lat["model_one_way_us"] == pytest.approx(bench.predict_rtt(bench.DEFAULT_MODEL, "udp", 2, 1) / 2)
    assert len(res["samples"]) == 10 * len(res["tokex"])
    cp = {c["remote"]: c for c in res["copy_aggregate"]}
    assert cp[0]["copies"] == 7 and cp[0]["aggregate_MBps"] == pytest.approx(7 * 2 / 0.5)
    env = {"kernel": "6.1.0-test", "where": "Docker lab test"}
    report.write_results(str(tmp_path), s, res, env, plan, {"raw": True})
    names = sorted(os.listdir(tmp_path))
    for f in ("aggregate.csv", "samples.csv", "summary.md", "raw.json", "results.json", "latency.csv"):
        assert f in names
    text = (tmp_path / "summary.md").read_text()
    assert "| kernel | 6.1.0-test |" in text and "## Ring round trip" in text
    assert "| same-segment | 2 | 25.00 | 2 disjoint paths, 100 Mbit/s each |" in text
    header = (tmp_path / "aggregate.csv").read_text().splitlines()[0]
    assert header.startswith("class,pairs,proto,size,exchange_MBps,one_way_MBps")


def test_plots_are_written(mesh, tmp_path):
    from beonet.benchmarks import plots  # matplotlib is pinned in requirements.txt
    plan, path_of = mesh
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                       "pairs": [1, 2], "file_mb": [2], "remote_copies": [0, 2]})
    res = report.collect(s, _fake_outputs(s), plan)
    written = plots.plot_all(str(tmp_path), res, "routed-mesh")
    assert {"token-exchange-tcp.png", "round-trip.png", "file-copy.png", "latency.png"} <= set(written)
    for w in written:
        assert (tmp_path / w).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------ tokex.c on loopback

needs_cc = needs_host("tokex.c built with the machine's C compiler, run on loopback", "cc")


@pytest.fixture(scope="module")
def tokex(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    exe = tmp_path_factory.mktemp("tokex") / "tokex"
    subprocess.run([cc, "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe),
                    str(ROOT / "roles" / "beonet_benchmark" / "files" / "tokex.c")], check=True)
    return str(exe)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tokex, tmp_path):
    port = _free_port()
    proc = subprocess.Popen([tokex, "serve", "-p", str(port), "--idle", "30", "--dir", str(tmp_path)])
    time.sleep(0.2)
    yield port
    proc.terminate()
    proc.wait(timeout=5)


LOOPBACKS = ["127.0.0.1", "::1"]     # one server listens on both families


@needs_cc
@pytest.mark.parametrize("host", LOOPBACKS + ["[::1]"])
def test_tokex_loopback_tcp_and_udp_exchange(tokex, server, host):
    out = subprocess.run([tokex, "client", "-H", host, "-p", str(server), "--proto", "both",
                          "-n", "50", "--sizes", "4,1448,8192,20000"],
                         capture_output=True, text=True, check=True, timeout=60)
    doc = json.loads(out.stdout)
    assert doc["tool"] == "tokex" and doc["version"] == 1 and doc["peer"] == host
    runs = doc["runs"]
    assert [(r["proto"], r["size"]) for r in runs] == [
        (p, s) for p in ("tcp", "udp") for s in (4, 1448, 8192, 20000)]
    for r in runs:
        assert r["count"] == 50 and len(r["samples_us"]) == 50 and r["lost"] == 0
        assert all(v > 0 for v in r["samples_us"])
        st = r["rtt_us"]
        assert st["min"] <= st["median"] <= st["p99"] <= st["max"]
        assert st["min"] == min(r["samples_us"]) and st["max"] == max(r["samples_us"])
        # seconds is printed to the microsecond: allow for that rounding
        assert r["exchange_MBps"] == pytest.approx(2 * r["size"] * 50 / r["seconds"] / 1e6, rel=0.01)


@needs_cc
@pytest.mark.parametrize("host", LOOPBACKS)
def test_tokex_window_stream_and_file_copy(tokex, server, tmp_path, host):
    out = subprocess.run([tokex, "client", "-H", host, "-p", str(server), "--window", "4",
                          "-n", "40", "--sizes", "8192", "--stats-only"],
                         capture_output=True, text=True, check=True, timeout=60)
    run = json.loads(out.stdout)["runs"][0]
    assert run["window"] == 4 and "samples_us" not in run and run["count"] == 40
    out = subprocess.run([tokex, "client", "-H", host, "-p", str(server), "--mode", "stream",
                          "-n", "100", "--sizes", "65536"], capture_output=True, text=True,
                         check=True, timeout=60)
    run = json.loads(out.stdout)["runs"][0]
    assert run["mode"] == "stream" and run["one_way_MBps"] > 0
    src = tmp_path / "src"
    subprocess.run([tokex, "mkfile", str(src), "300000"], check=True, capture_output=True)
    loc = json.loads(subprocess.run([tokex, "copy", str(src), str(tmp_path / "dst")], check=True,
                                    capture_output=True, text=True).stdout)
    assert loc["bytes"] == 300000 and (tmp_path / "dst").read_bytes() == src.read_bytes()
    rem = json.loads(subprocess.run([tokex, "fsend", str(src), "-H", host, "-p", str(server), "-B", host,
                                     "--dest", "got"], check=True, capture_output=True,
                                    text=True).stdout)
    assert rem["copy"] == "remote" and (tmp_path / "got").read_bytes() == src.read_bytes()


@needs_cc
def test_tokex_writes_any_path_as_one_json_string(tokex, tmp_path):
    """Quotes, backslashes, line breaks and bytes outside ASCII in a path: the line
    stays one JSON value, each byte outside printable ASCII written as \\u00XX."""
    src = os.path.join(os.fsencode(tmp_path), b'a"b\\c\nd\xe9 \xe2\x80\xa8')
    dst = os.path.join(os.fsencode(tmp_path), b"e'f\t")
    made = json.loads(subprocess.run([tokex, "mkfile", src, "1000"], check=True, capture_output=True).stdout)
    copied = json.loads(subprocess.run([tokex, "copy", src, dst], check=True, capture_output=True).stdout)
    assert made["mkfile"] == copied["src"] == src.decode("latin-1")
    assert copied["dst"] == dst.decode("latin-1") and copied["bytes"] == made["bytes"] == 1000


@needs_cc
@pytest.mark.parametrize("addrs", ["127.0.0.1,127.0.0.2,127.0.0.3", "127.0.0.1,::1,127.0.0.2"])
def test_tokex_ring_on_loopback(tokex, addrs):
    """Each rank listens on its own address: IPv4 ones, or IPv4 and IPv6 ones in one ring."""
    port = _free_port()
    others = [subprocess.Popen([tokex, "ring", "--rank", str(r), "--addrs", addrs, "-p", str(port),
                                "-n", "20", "--sizes", "4,4096", "--deadline", "30"],
                               stdout=subprocess.PIPE, text=True) for r in (1, 2)]
    zero = subprocess.run([tokex, "ring", "--rank", "0", "--addrs", addrs, "-p", str(port), "-n", "20",
                           "--sizes", "4,4096", "--deadline", "30"], capture_output=True, text=True,
                          check=True, timeout=60)
    for p in others:
        assert json.loads(p.communicate(timeout=30)[0])["ok"] is True
    doc = json.loads(zero.stdout)
    assert doc["ring"] == 3 and [r["size"] for r in doc["runs"]] == [4, 4096]
    assert all(len(r["samples_us"]) == 20 for r in doc["runs"])


@needs_cc
@pytest.mark.parametrize("args,message", [
    (["client"], "client needs -H HOST"),
    (["client", "-H", "127.0.0.1", "--sizes", "4,0"], "bad size in --sizes '4,0'"),
    (["client", "-H", "127.0.0.1", "--sizes", "2000000"], "bad size in --sizes"),
    (["client", "-H", "127.0.0.1", "--proto", "udp", "--sizes", "100000"], "too large for UDP"),
    (["client", "-H", "127.0.0.1", "--mode", "stream", "--proto", "udp"], "--mode stream is TCP only"),
    (["client", "-H", "127.0.0.1", "--mode", "burst"], "--mode must be pingpong or stream"),
    (["client", "-H", "127.0.0.1", "-n", "zero"], "option -n: 'zero' is not an integer"),
    (["ring", "--rank", "3", "--addrs", "127.0.0.1,127.0.0.2"], "--rank 3 is outside the ring of 2"),
    (["fsend", "/etc/hostname", "-H", "127.0.0.1", "--dest", "../x"], "--dest must be a plain file name"),
    # a UDP token's datagrams: MTU-28 bytes over IPv4, MTU-48 over IPv6, 12 of them tokex's header
    (["client", "-H", "127.0.0.1", "--proto", "udp", "--sizes", "93441"], "max 93440 bytes at MTU 1500"),
    (["client", "-H", "::1", "--proto", "udp", "--sizes", "93000"], "max 92160 bytes at MTU 1500"),
    (["client", "-H", "::1", "-B", "127.0.0.1"], "--bind 127.0.0.1 is an IPv4 address, the peer an IPv6 one"),
    (["client", "-H", "127.0.0.1", "-B", "::1"], "--bind ::1 is an IPv6 address, the peer an IPv4 one"),
    (["client", "-H", "::1", "-B", "node-0-0"], "not an IPv4 or IPv6 address: node-0-0"),
    (["serve", "-B", "10.0.0.300"], "not an IPv4 or IPv6 address: 10.0.0.300"),
    (["ring", "--rank", "0", "--addrs", "::1::2,127.0.0.1"], "not an IPv4 or IPv6 address: ::1::2"),
    (["dance"], "unknown command 'dance'"),
])
def test_tokex_usage_errors(tokex, args, message):
    res = subprocess.run([tokex, *args], capture_output=True, text=True, timeout=10)
    assert res.returncode == 2
    assert message in res.stderr
    assert res.stdout == ""             # refused before a word of output


@needs_cc
def test_tokex_echoes_udp_from_the_address_it_was_sent_to(tokex, server):
    """A node's second address (127.0.0.2 on lo): the kernel would send the echo from
    127.0.0.1, which the client's connected socket drops; it leaves from 127.0.0.2."""
    out = subprocess.run([tokex, "client", "-H", "127.0.0.2", "-p", str(server), "--proto", "udp",
                          "-n", "20", "--sizes", "4,3000", "--deadline", "20", "--stats-only"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert [(r["size"], r["lost"]) for r in json.loads(out.stdout)["runs"]] == [(4, 0), (3000, 0)]


@needs_cc
@pytest.mark.parametrize("mine,other", [("::1", "127.0.0.1"), ("127.0.0.1", "::1")])
def test_tokex_serves_on_one_address_with_bind(tokex, tmp_path, mine, other):
    """-B: the server listens on that address only (TCP and UDP); the other family's
    loopback finds no server."""
    port = _free_port()
    proc = subprocess.Popen([tokex, "serve", "-p", str(port), "-B", mine, "--idle", "30",
                             "--dir", str(tmp_path)])
    try:
        time.sleep(0.2)
        ok = subprocess.run([tokex, "client", "-H", mine, "-p", str(port), "--proto", "both", "-n", "5",
                             "--sizes", "4,3000", "--stats-only"], capture_output=True, text=True, timeout=30)
        refused = subprocess.run([tokex, "client", "-H", other, "-p", str(port), "--proto", "udp",
                                  "-n", "5", "--sizes", "4"], capture_output=True, text=True, timeout=30)
    finally:
        proc.terminate()
        proc.wait(timeout=5)
    assert ok.returncode == 0, ok.stderr
    runs = json.loads(ok.stdout)["runs"]
    assert [(r["proto"], r["lost"]) for r in runs] == [("tcp", 0), ("tcp", 0), ("udp", 0), ("udp", 0)]
    assert refused.returncode == 4 and "no tokex server on the port" in refused.stderr


@needs_cc
def test_tokex_no_server_is_a_clear_error(tokex):
    port = _free_port()
    res = subprocess.run([tokex, "client", "-H", "127.0.0.1", "-p", str(port), "--proto", "udp",
                          "-n", "5", "--sizes", "4"], capture_output=True, text=True, timeout=30)
    assert res.returncode == 4 and "no tokex server on the port" in res.stderr


@needs_cc
def test_tokex_deadline_ends_a_stuck_client(tokex):
    # A UDP server that never answers: the client resends, then the deadline ends it.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        res = subprocess.run([tokex, "client", "-H", "127.0.0.1", "-p", str(port), "--proto", "udp",
                              "-n", "5", "--sizes", "4", "--deadline", "1"], capture_output=True,
                             text=True, timeout=30)
    assert res.returncode == 3 and "deadline passed" in res.stderr


# ------------------------------------------------------------------ the playbook refuses bad requests

def _play(*args):
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run([os.path.join(bindir, "ansible-playbook"), "-i",
                           "inventories/example/hosts.yml", "playbooks/benchmark.yml", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def test_playbook_refuses_a_bad_request_before_touching_a_node():
    # The example inventory's hosts are documentation addresses: any connection
    # would fail as unreachable, so a clean refusal proves none was attempted.
    res = _play("-e", json.dumps({"beonet_benchmark_params": {"nodes": ["node-0-0", "ghost"],
                                                          "sizes": [4, 100000], "family": 6}}))
    assert res.returncode != 0
    assert "nodes: ghost not in the plan of routed-mesh" in res.stdout
    assert "family: 6: the plan of routed-mesh has no IPv6 addresses" in res.stdout
    assert "sizes: 100000 is out of range" in res.stdout
    assert "nothing started" in res.stdout
    assert "unreachable=1" not in res.stdout and "UNREACHABLE" not in res.stdout


def test_exchange_window_runs_the_token_exchange_with_tokens_in_flight(mesh):
    plan, path_of = mesh
    s = bench.schedule(plan, path_of, {"sizes": [8192], "mss_points": False, "pairs": [2],
                                       "exchange_window": 8, "classes": ["gateway-1"],
                                       "remote_copies": []})
    tok = [st for st in s["steps"] if st["kind"] == "tokex"]
    assert [st["id"] for st in tok] == ["tokex-gateway-1-2p"]
    assert all("--proto tcp --window 8" in c for c in tok[0]["hosts"].values())
    assert "(window 8)" in tok[0]["label"] and tok[0]["label"].startswith("1/")
    assert not [st for st in s["steps"] if st["kind"] == "copy"]
    with pytest.raises(bench.BenchError) as exc:
        bench.validate(plan, {"exchange_window": 0})
    assert "exchange_window: 0 is out of range (1..1024)" in str(exc.value)


def test_a_bond_is_one_link_of_all_its_channels():
    """% of link on a bonded net is against the bond (2 x 100 Mbit/s), not one member."""
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/bonded-dual-net.yml")))
    assert report._link_rate(plan, ["node01", "node02"]) == 200


# ------------------------------------------------------------------ the module works from the compiled plan

@pytest.mark.parametrize("name", ["routed-mesh.yml", "metanode-testbed.yml", "switch-tree.yml",
                                  "bonded-dual-net.yml"])
def test_hop_addresses_map_to_the_compilers_hop_nodes(name):
    c = pipeline.compile_file(str(TOPO / name))
    plan = render.plan(c)
    path_of = bench.path_lookup(plan, expected_paths(c, plan))
    for a in plan["nodes"]:
        for b in plan["nodes"]:
            if a != b:
                assert path_of(a, b) == [h["node"] for h in c.path(a, b)[0]]


def test_paths_that_do_not_fit_the_plan_are_refused(mesh):
    plan, _ = mesh
    with pytest.raises(bench.BenchError, match="paths: empty: .*beonet_plan_paths: true"):
        bench.path_lookup(plan, {})
    path_of = bench.path_lookup(plan, {"node-0-0": {"node-0-1": [["10.0.1.1", "192.0.2.7"]]}})
    with pytest.raises(bench.BenchError, match="node-0-0 -> node-0-1: hop 192.0.2.7 is no address"):
        path_of("node-0-0", "node-0-1")
    with pytest.raises(bench.BenchError, match="no expected path from node-0-1 to node-0-0"):
        path_of("node-0-1", "node-0-0")


def _six(addressing):
    import yaml

    doc = yaml.safe_load((TOPO / "routed-mesh.yml").read_text())
    doc["addressing"] = addressing
    c = pipeline.compile_text(yaml.safe_dump(doc), "routed-mesh.yml")
    return c, render.plan(c)


def _six_paths(addressing, key):
    """The plan of routed-mesh with this addressing and path_of from its hop lists of `key`."""
    from beonet.outputs.ipfamily import Paths

    c, plan = _six(addressing)
    paths = Paths(c)
    hops = {a: {b: paths.addresses(a, b)[key] for b in plan["nodes"] if b != a} for a in plan["nodes"]}
    return c, plan, bench.path_lookup(plan, hops)


DUAL, ONLY6 = {"ipv6": True}, {"ipv4": False, "ipv6": True}
SMALL = {"nodes": ["node-0-0", "node-0-1", "node-1-1"], "copies": 1, "remote_copies": [1], "file_mb": [1],
         "classes": ["same-segment"]}


@pytest.mark.parametrize("addressing,key", [(DUAL, "address"), (DUAL, "address6"), (ONLY6, "address6")])
def test_the_hops_of_a_dual_stack_or_ipv6_only_plan_map_to_their_nodes(addressing, key):
    c, plan, path_of = _six_paths(addressing, key)
    assert path_of("node-0-0", "node-3-3") == [h["node"] for h in c.path("node-0-0", "node-3-3")[0]]


def _commands(s):
    return [cmd for st in s["steps"] for cmd in st["hosts"].values()]


@pytest.mark.parametrize("addressing,params,key", [
    (DUAL, {}, "address"), (DUAL, {"family": 4}, "address"), (DUAL, {"family": 6}, "address6"),
    (ONLY6, {}, "address6"), (ONLY6, {"family": 6}, "address6")])
def test_every_step_runs_over_the_family_asked_for(addressing, params, key):
    """IPv4 where the plan has it, unless family: 6; an IPv6-only plan over IPv6. Every
    tool a step runs (tokex client, iperf3, fsend, the ring) reaches its peer at the
    peer's address of that family."""
    _c, plan, path_of = _six_paths(addressing, "address6" if addressing is ONLY6 else "address")
    s = bench.schedule(plan, path_of, dict(SMALL, **params))
    assert s["family"] == ("IPv6" if key == "address6" else "IPv4")
    assert s["params"]["family"] == (6 if key == "address6" else 4)
    ours = {n: plan["nodes"][n][key] for n in SMALL["nodes"]}
    other = {plan["nodes"][n].get("address" if key == "address6" else "address6") for n in SMALL["nodes"]}
    commands = " ".join(_commands(s))
    assert "-H %s " % ours["node-0-1"] in commands and "iperf3 -c %s " % ours["node-0-1"] in commands
    assert "--addrs %s " % ",".join(ours.values()) in commands
    assert not [a for a in other if a and a in commands]
    # MSS points of the family: IPv6's header is 20 bytes longer than IPv4's
    assert set(bench.mss_points(1500, version=4 if key == "address" else 6)) <= set(s["params"]["sizes"])
    assert bench.mss_points(1500) == [1445, 1448, 1451, 2893, 2899]            # MSS 1500 - 52
    assert bench.mss_points(1500, version=6) == [1425, 1428, 1431, 2853, 2859]  # MSS 1500 - 72


BAD_FAMILY = "family: must be 4 or 6 (the IP family the benchmark runs over), "


@pytest.mark.parametrize("addressing,family,problem", [
    (ONLY6, 4, "family: 4: the plan of routed-mesh has no IPv4 addresses (it has IPv6); "
               "leave family out or set 6"),
    (None, 6, "family: 6: the plan of routed-mesh has no IPv6 addresses (it has IPv4); "
              "addressing: {ipv6: true} adds IPv6"),
    (DUAL, 5, BAD_FAMILY + "not a number 5"),
    (DUAL, "6", BAD_FAMILY + "not '6'"),
    (DUAL, "ipv6", BAD_FAMILY + "not 'ipv6'"),
    (DUAL, True, BAD_FAMILY + "not a boolean True"),
    (DUAL, 6.0, BAD_FAMILY + "not a number 6.0"),
    (DUAL, [6], BAD_FAMILY + "not a list [6]"),
    (DUAL, {"v": 6}, BAD_FAMILY + "not a mapping {'v': 6}"),
    (DUAL, "\x1b[2J" * 30, BAD_FAMILY + "not '\\x1b[2J"),
])
def test_a_family_the_plan_has_not_or_a_hostile_one_is_refused(addressing, family, problem):
    if addressing is None:
        plan, path_of = compiled("routed-mesh.yml")
    else:
        _c, plan, path_of = _six_paths(addressing, "address6" if addressing is ONLY6 else "address")
    with pytest.raises(bench.BenchError) as caught:
        bench.schedule(plan, path_of, dict(SMALL, family=family, count=0))
    assert caught.value.problems[0].startswith(problem)
    assert "\x1b" not in str(caught.value) and len(caught.value.problems[0]) < 200
    assert "count: 0 is out of range" in caught.value.problems[-1]       # listed with the others


@pytest.mark.parametrize("addressing,params,said", [
    (DUAL, {}, "Measured over IPv4."), (DUAL, {"family": 6}, "Measured over IPv6."),
    (ONLY6, {}, "Measured over IPv6.")])
def test_the_results_of_an_ipv6_run_say_so(addressing, params, said, tmp_path):
    _c, plan, path_of = _six_paths(addressing, "address6" if addressing is ONLY6 else "address")
    s = bench.schedule(plan, path_of, dict(SMALL, count=10, sizes=[4, 8192], mss_points=False, **params))
    res = report.collect(s, _fake_outputs(s), plan)
    assert res["aggregate"] and res["latency"]
    text = report.summary_markdown(s, res, {}, "routed-mesh")
    assert said in text and text.count("Measured over") == 1
    report.write_results(str(tmp_path), s, res, {}, plan, _fake_outputs(s))
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["params"]["family"] == (6 if "6" in said else 4)
    assert said in (tmp_path / "summary.md").read_text()


def test_a_node_without_an_address_of_the_family_is_named():
    _c, plan, path_of = _six_paths(DUAL, "address")
    plan = json.loads(json.dumps(plan))
    del plan["nodes"]["node-0-1"]["address6"]
    with pytest.raises(bench.BenchError) as caught:
        bench.validate(plan, dict(SMALL, family=6))
    assert caught.value.problems == ["family: 6: node-0-1 have no IPv6 address in the plan"]


def test_module_documentation_parses():
    bindir = os.path.dirname(sys.executable)
    res = subprocess.run([os.path.join(bindir, "ansible-doc"), "--json", "-M", "library",
                          "beonet_benchmark"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)["beonet_benchmark"]["doc"]
    assert {"plan", "paths"} <= set(doc["options"]) and "topology" not in doc["options"]


def test_module_without_a_compiled_plan_says_what_to_run():
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    res = subprocess.run([os.path.join(bindir, "ansible"), "localhost", "-i", "localhost,", "-c", "local",
                          "-e", "ansible_python_interpreter=" + sys.executable, "-m", "beonet_benchmark",
                          "-a", json.dumps({"action": "plan", "plan": {}, "paths": {}})],
                         cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert res.returncode != 0
    assert "no compiled plan; run the beonet_plan role first" in res.stdout


def test_aggregate_counts_the_window_all_pairs_ran_in():
    """Pair a: 10 exchanges of 0.1 s from t=0; pair b: the same from t=0.5. Together
    they moved 10 exchanges in 0.5..1.0; the union of their windows (0..1.5) counts
    less, and is all that is left when several tokens were in flight."""
    res: dict = {"tokex": [], "samples": []}
    for client, start in (("a", 0.0), ("b", 0.5)):
        res["tokex"].append({"class": "c", "pairs": 2, "size": 1000, "proto": "udp", "client": client,
                             "start": start, "seconds": 1.0, "count": 10})
        res["samples"] += [{"class": "c", "pairs": 2, "size": 1000, "proto": "udp", "client": client,
                            "rtt_us": 100000.0}] * 10

    def agg(in_flight):
        return {"class": "c", "pairs": 2, "size": 1000, "proto": "udp", "exchange_MBps": 0.04,
                "one_way_MBps": 0.02, "reported": 2, "first_start": 0.0, "last_end": 1.5,
                "in_flight": in_flight}
    a = report._finish_aggregate(agg(1), res)
    assert a["counted_over"] == "common window"
    assert a["exchange_MBps"] == pytest.approx(2 * 1000 * 10 / 0.5 / 1e6)
    assert a["sum_exchange_MBps"] == 0.04
    w = report._finish_aggregate(agg(16), res)
    assert w["counted_over"] == "union of windows"
    assert w["one_way_MBps"] == pytest.approx(20 * 1000 / 1.5 / 1e6)
    res["tokex"][1]["start"] = 5.0                      # never ran together
    assert report._finish_aggregate(agg(1), res)["counted_over"] == "union of windows"
    one = dict(agg(1), reported=1)
    assert report._finish_aggregate(one, res)["counted_over"] == "pair"


def test_report_counts_stored_aggregates_again(mesh, tmp_path):
    """benchmark-report on results written with the union-of-windows count gives
    the common-window count, and its percentage of the capacity."""
    tokex, samples = [], []
    for client, start in (("a", 0.0), ("b", 0.5)):
        tokex.append({"class": "c", "pairs": 2, "size": 1000, "proto": "udp", "client": client,
                      "start": start, "seconds": 1.0, "count": 10})
        samples += [{"class": "c", "pairs": 2, "size": 1000, "proto": "udp", "client": client,
                     "rtt_us": 100000.0}] * 10
    union = 20 * 1000 / 1.5 / 1e6
    agg = {"class": "c", "pairs": 2, "size": 1000, "proto": "udp", "exchange_MBps": 2 * union,
           "one_way_MBps": union, "sum_exchange_MBps": 0.04, "sum_one_way_MBps": 0.02, "reported": 2,
           "first_start": 0.0, "last_end": 1.5, "capacity_MBps": 0.025}
    (tmp_path / "results.json").write_text(json.dumps(
        {"tokex": tokex, "samples": samples, "aggregate": [agg],
         "params": bench.schedule(*mesh, {"count": 10, "sizes": [1000], "mss_points": False,
                                          "pairs": [2]})["params"]}))
    _sched, res, _title = report.render(str(tmp_path))
    a = res["aggregate"][0]
    assert a["counted_over"] == "common window" and a["one_way_MBps"] == pytest.approx(0.02)
    assert a["one_way_pct_of_capacity"] == 80.0
    assert "| c | udp | 2 | 1000 | 0.04 | 0.02 | 0.03 | 80.0 % | common window |" in (
        tmp_path / "summary.md").read_text()


def _first(sched, kind):
    return next(st for st in sched["steps"] if st["kind"] == kind)


@pytest.mark.parametrize(("kind", "name", "bad", "why"), [
    ("iperf3", "%s.json", {"end": {"sum_received": {"bits_per_second": "fast"}}},
     "end.sum_received.bits_per_second: must be an integer or float"),
    ("iperf3", "%s.json", {"end": []}, "end: must be a mapping"),
    ("iperf3", "%s-stream-8192.json", {"runs": [{"size": 8192}]}, "runs[0]: has no 'one_way_MBps'"),
    ("copy", "%s.json", {"copy": "local", "bytes": 1, "seconds": 0.5, "MBps": 1.0, "start": 1.0},
     "the output: has no 'resident_pages_before'"),
    ("copy", "%s.json", {"copy": ["x"], "bytes": 1, "seconds": 0.5, "MBps": 1.0, "start": 1.0,
                         "resident_pages_before": 0}, "copy: must be"),
])
def test_a_node_output_of_the_wrong_shape_is_refused_naming_the_node_and_file(mesh, kind, name, bad, why):
    # what a node sends is input: no KeyError or TypeError, nothing written
    plan, path_of = mesh
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                       "pairs": [1, 2], "file_mb": [2], "remote_copies": [0, 2]})
    st = _first(s, kind)
    host = st["pairs"][0]["client"] if kind == "iperf3" else (list(st["local"]) + [
        p["client"] for p in st["pairs"]])[0]
    out = _fake_outputs(s)
    out.setdefault(host, {})[name % st["id"]] = bad
    with pytest.raises(bench.BenchError) as exc:
        report.collect(s, out, plan)
    assert any(p.startswith("%s: %s: %s" % (host, name % st["id"], why)) for p in exc.value.problems), \
        exc.value.problems


def test_a_ring_output_of_the_wrong_shape_is_refused(mesh):
    plan, path_of = mesh
    s = {"params": {"nodes": ["node-0-0"], "sizes": [4]}, "steps": [
        {"id": "ring", "kind": "ring", "order": ["node-0-0", "node-0-1"], "pairs": []}]}
    out = {"node-0-0": {"ring-0.json": {"runs": [{"size": 4, "count": 3, "rtt_us": [1, 2]}]}}}
    with pytest.raises(bench.BenchError) as exc:
        report.collect(s, out, plan)
    assert exc.value.problems[0] == "node-0-0: ring-0.json: runs[0].rtt_us: must be a mapping"


def test_a_token_exchange_run_without_its_round_trip_times_is_refused(mesh):
    plan, path_of = mesh
    s = bench.schedule(plan, path_of, {"count": 10, "sizes": [4, 8192], "mss_points": False,
                                       "pairs": [1, 2], "file_mb": [2], "remote_copies": [0, 2]})
    out = _fake_outputs(s)
    st = _first(s, "tokex")
    client = st["pairs"][0]["client"]
    del out[client][st["id"] + ".json"]["runs"][0]["rtt_us"]["p99"]
    with pytest.raises(bench.BenchError) as exc:
        report.collect(s, out, plan)
    assert exc.value.problems[0] == "%s: %s.json: runs[0].rtt_us: has no 'p99'" % (client, st["id"])
