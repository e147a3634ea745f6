"""Property tests of compiled plans, checked without the compiler's own prover.

The walker here reads only the rendered plan (a dict): each node's table is
its connected networks (from its interface addresses) plus its static routes,
looked up by longest prefix with the ``ipaddress`` module. Shortest IP-hop
distances come from a BFS over the plan's segments (two nodes are adjacent
when they share a segment of kind lan or p2p).
"""

import ipaddress
import json
import os
import subprocess
import sys
from collections import deque

import pytest
import yaml
from conftest import ROOT
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from beonet.compiler import address, load, normalise, pipeline, prove, route
from beonet.compiler.errors import Problems
from beonet.compiler.model import ON_LINK
from beonet.outputs import plan as render

SETTINGS = dict(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# -- an independent walker over plan dicts ------------------------------------

class PlanTables:
    """Longest-prefix-match tables of every node of a plan in one IP version (4 or
    6: its addresses, loopbacks and routes only), checked as they are built the
    way `ip route add` would take them."""

    def __init__(self, plan, version=4):
        self.plan = plan
        self.version = version
        self.nodes = plan["nodes"]
        self.forwarding = {n: v["forwarding"] for n, v in self.nodes.items()}
        key = "address" if version == 4 else "address6"
        self.address = {n: ipaddress.ip_address(v[key]) for n, v in self.nodes.items()}
        self.on_segment = {name: {m["node"] for m in seg["members"]}
                           for name, seg in plan["segments"].items()}
        self.owner = {}
        for name, node in self.nodes.items():
            for iface in node["interfaces"]:
                for a in self.ours(iface["addresses"]):
                    ip = ipaddress.ip_interface(a).ip
                    assert self.owner.get(ip, name) == name, \
                        "%s is held by %s and %s" % (ip, self.owner[ip], name)
                    self.owner[ip] = name
            if "routing" in node:       # routing.engine frr: the address is a loopback on lo
                self.owner[ipaddress.ip_interface(self.loopback(node)).ip] = name
        for name, addr in self.address.items():
            assert self.owner.get(addr) == name, \
                "%s's address %s is on none of its interfaces" % (name, addr)
        self.tables = {name: self._table(name, node) for name, node in self.nodes.items()}

    def ours(self, cidrs):
        return [a for a in cidrs if ipaddress.ip_interface(a).version == self.version]

    def loopback(self, node):
        return node["routing"]["loopback" if self.version == 4 else "loopback6"]

    def _table(self, name, node):
        entries = []
        connected = {}
        own = set()
        for iface in node["interfaces"]:
            for a in self.ours(iface["addresses"]):
                ii = ipaddress.ip_interface(a)
                own.add(ii.ip)
                connected.setdefault(iface["name"], []).append(ii.network)
                entries.append((ii.network, "link", iface["segment"]))
        if "routing" in node:
            loop = ipaddress.ip_interface(self.loopback(node))
            own.add(loop.ip)
            entries.append((loop.network, "link", "lo"))
        nets = [n for ns in connected.values() for n in ns]
        seen = set()
        for r in node["routes"] + node.get("learned", []):
            to = ipaddress.ip_network(r["to"])
            if to.version != self.version:
                continue
            via = ipaddress.ip_address(r["via"])
            assert to not in seen, "%s: two routes to %s" % (name, to)
            assert to not in nets, "%s: route to its own connected network %s" % (name, to)
            seen.add(to)
            hops = r.get("nexthops", [{"via": r["via"], "dev": r["dev"]}])
            assert len(hops) >= 2 or "nexthops" not in r, "%s: nexthops of one hop to %s" % (name, to)
            assert hops[0] == {"via": r["via"], "dev": r["dev"]}, \
                "%s: via/dev of %s are not its first next hop" % (name, to)
            vias = []
            for hop in hops:
                via = ipaddress.ip_address(hop["via"])
                assert any(via in net for net in connected.get(hop["dev"], ())), \
                    "%s: gateway %s of %s is not on-link on %s" % (name, via, to, hop["dev"])
                assert via in self.owner, "%s: gateway %s of %s belongs to no node" % (name, via, to)
                assert self.owner[via] != name, "%s: gateway %s is its own" % (name, via)
                vias.append(via)
            if "src" in r:
                assert ipaddress.ip_address(r["src"]) in own, \
                    "%s: src %s of %s is not the node's own" % (name, r["src"], to)
            else:   # the kernel sends from the outgoing NIC's address: it must have one alone
                devs = {hop["dev"] for hop in hops}
                assert self.version == 6 and len(devs) == 1 and len(connected.get(r["dev"], ())) == 1, \
                    "%s: the route to %s has no src and leaves through %s" % (name, to, sorted(devs))
            entries.append((to, "via", vias))
        return entries

    def lookup(self, name, addr):
        best = None
        for entry in self.tables[name]:
            net = entry[0]
            if addr in net:
                key = (net.prefixlen, entry[1] == "link")
                if best is None or key > best[0]:
                    best = (key, entry)
        return best[1] if best else None

    def walk(self, src, dst):
        """Nodes visited from src to dst's address over the preferred branch
        (the first next hop everywhere), src and dst included."""
        return self.branches(src, dst)[0]

    def branches(self, src, dst):
        """Every branch from src to dst's address (each a list of the nodes
        visited, src and dst included), the preferred one first."""
        target = self.address[dst]
        out = []
        todo = [[src]]
        while todo:
            path = todo.pop()
            cur = path[-1]
            if cur == dst:
                out.append(path)
                continue
            assert len(path) <= len(self.nodes), \
                "routing loop from %s to %s: %s" % (src, dst, " -> ".join(path))
            entry = self.lookup(cur, target)
            assert entry is not None, "%s has no route to %s (%s)" % (cur, target, dst)
            if entry[1] == "link":
                assert dst in self.on_segment[entry[2]], \
                    "%s sends %s on-link on %s, where %s is not" % (cur, target, entry[2], dst)
                out.append(path + [dst])
                continue
            for via in reversed(entry[2]):
                nxt = self.owner[via]
                if nxt == dst:
                    todo.append(path + [dst])
                    continue
                assert nxt not in path, \
                    "routing loop from %s to %s: %s" % (src, dst, " -> ".join(path + [nxt]))
                todo.append(path + [nxt])
        for path in out:
            for nxt in path[1:-1]:
                assert self.forwarding[nxt], \
                    "%s -> %s passes through %s, which has forwarding off" % (src, dst, nxt)
        return out


def plan_distances(plan):
    """name -> name -> shortest IP-hop distance, by BFS over lan/p2p segments."""
    adj = {n: set() for n in plan["nodes"]}
    for seg in plan["segments"].values():
        if seg["kind"] not in ("lan", "p2p"):
            continue
        members = [m["node"] for m in seg["members"]]
        for a in members:
            adj[a].update(b for b in members if b != a)
    out = {}
    for s in adj:
        dist = {s: 0}
        queue = deque([s])
        while queue:
            a = queue.popleft()
            for b in sorted(adj[a]):
                if b not in dist:
                    dist[b] = dist[a] + 1
                    queue.append(b)
        out[s] = dist
    return out


def walk_all(plan, branches=None, version=4):
    """Walk every ordered pair; return {(src, dst): path} over the preferred
    branch. Asserts the walk properties on every branch: reachable, loop free,
    forwarding on every intermediate node, shortest, and no node forwarding for
    nothing. branches, when given, gets {(src, dst): every branch}. version: the
    IP version walked (its addresses and routes only)."""
    tables = PlanTables(plan, version)
    dist = plan_distances(plan)
    names = list(plan["nodes"])
    paths = {}
    through = set()
    for s in names:
        assert len(dist[s]) == len(names), "the segments do not connect %s to every node" % s
        for d in names:
            if s == d:
                continue
            every = tables.branches(s, d)
            for path in every:
                assert len(path) - 1 == dist[s][d], \
                    "%s -> %s takes %d hops (%s), shortest is %d" % (
                        s, d, len(path) - 1, " -> ".join(path), dist[s][d])
                through.update(path[1:-1])
            paths[s, d] = every[0]
            if branches is not None:
                branches[s, d] = every
    idle = [n for n in names if plan["nodes"][n]["forwarding"] and n not in through]
    assert not idle, "forwarding on but forwarding for no pair: %s" % idle
    return paths


def distinct(paths, cap=16):
    """The first cap distinct paths, in order (parallel links repeat a path)."""
    out = []
    for path in paths:
        if path not in out and len(out) < cap:
            out.append(path)
    return out


def check_compiled(compiled, paths_too=True):
    plan = render.plan(compiled)
    branches = {}
    paths = walk_all(plan, branches)
    if paths_too:
        for (s, d), every in branches.items():
            hops = compiled.path(s, d)
            assert [[h["node"] for h in b] for b in hops] == [p[1:] for p in distinct(every)], \
                (s, d, hops, every)
            assert all(b[-1]["address"] == plan["nodes"][d]["address"] for b in hops)
    hist = {}
    for path in paths.values():
        hist[str(len(path) - 1)] = hist.get(str(len(path) - 1), 0) + 1
    assert compiled.metrics["hops"] == dict(sorted(hist.items(), key=lambda kv: int(kv[0])))
    assert compiled.metrics["pairs"] == len(paths)
    assert compiled.metrics["diameter"] == max((len(p) - 1 for p in paths.values()), default=0)
    return plan, paths


def plan_json(text, file="prop.yml"):
    return json.dumps(render.plan(pipeline.compile_text(text, file)), sort_keys=False)


# -- generators -----------------------------------------------------------------

@st.composite
def custom_topologies(draw, max_nodes=12, extras=True):
    """A connected custom topology as a dict: a random spanning structure of
    LANs and links first (a tree: no two nodes joined twice), then, with
    extras, LANs and links anywhere (cycles, parallel links)."""
    n = draw(st.integers(2, max_nodes))
    names = ["n%d" % i for i in range(n)]
    order = draw(st.permutations(range(n)))
    connected, rest = [order[0]], list(order[1:])
    lans, links = [], []
    while rest:
        anchor = draw(st.sampled_from(connected))
        if draw(st.booleans()):
            new = rest[:draw(st.integers(1, min(4, len(rest))))]
            lans.append(draw(st.permutations([anchor] + new)))
        else:
            new = rest[:1]
            links.append(draw(st.permutations([anchor] + new)))
        rest = rest[len(new):]
        connected.extend(new)
    if extras:
        idx = st.integers(0, n - 1)
        lans += draw(st.lists(st.lists(idx, min_size=2, max_size=min(5, n), unique=True),
                              max_size=3))
        links += draw(st.lists(st.lists(idx, min_size=2, max_size=2, unique=True),
                               max_size=4))
    lans = draw(st.permutations(lans))
    links = draw(st.permutations(links))
    nodes = list(names)
    if draw(st.booleans()):
        ids = draw(st.lists(st.integers(1, 60), min_size=n, max_size=n, unique=True))
        keep = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        nodes = [{"name": nm, "id": i} if k else nm for nm, i, k in zip(names, ids, keep)]
    segments = []
    for k, members in enumerate(lans):
        seg = {"name": "lan%d" % k, "members": [names[m] for m in members]}
        channels = draw(st.sampled_from([1, 1, 1, 2, 3]))
        if channels > 1:
            seg["channels"] = channels
        segments.append(seg)
    topo = {"name": "prop", "family": "custom",
            "custom": {"nodes": nodes, "segments": segments,
                       "links": [{"ends": [names[a], names[b]]} for a, b in links]}}
    prefix = draw(st.sampled_from([None, 30, 31]))
    if prefix:
        topo["addressing"] = {"p2p_prefix": prefix}
    return topo


mesh_dims = st.lists(st.integers(2, 5), min_size=1, max_size=3).filter(
    lambda dims: _product(dims) <= 60)


def _product(values):
    out = 1
    for v in values:
        out *= v
    return out


def dump(topo):
    return yaml.safe_dump(topo, sort_keys=False)


def addresses(plan):
    """name -> {interface: addresses} for every node of a plan."""
    return {name: {i["name"]: i["addresses"] for i in node["interfaces"]}
            for name, node in plan["nodes"].items()}


def host_addresses(plan):
    """addresses(plan) without prefix lengths."""
    return {name: {i: [a.split("/")[0] for a in addrs] for i, addrs in ifaces.items()}
            for name, ifaces in addresses(plan).items()}


# -- properties -----------------------------------------------------------------

def check_custom(topo):
    text = dump(topo)
    compiled = pipeline.compile_text(text, "prop.yml")
    plan, paths = check_compiled(compiled)
    assert plan_json(text) == json.dumps(plan, sort_keys=False)
    return plan, paths


@settings(**SETTINGS)
@given(custom_topologies(extras=False))
def test_custom_trees_route_every_pair_shortest(topo):
    check_custom(topo)


@settings(max_examples=100, deadline=None, database=None, derandomize=True,
          phases=[Phase.explicit, Phase.generate])
@given(custom_topologies())
def test_custom_graphs_route_every_pair_shortest(topo):
    """Random graphs with cycles (once 15% were refused: a gateway of a route
    shadowed by host routes got forwarding on and forwarded for nobody)."""
    check_custom(topo)


TRIANGLE_LINKS = {"name": "tri", "family": "custom", "custom": {
    "nodes": ["n0", "n1", "n2"],
    "links": [{"ends": ["n0", "n1"]}, {"ends": ["n0", "n2"]}, {"ends": ["n1", "n2"]}]}}
TRIANGLE_LANS = {"name": "tri", "family": "custom", "custom": {
    "nodes": ["a", "b", "c"],
    "segments": [{"name": "lan0", "members": ["a", "b"]},
                 {"name": "lan1", "members": ["a", "c"]},
                 {"name": "lan2", "members": ["b", "c"]}]}}
IDLE_GATEWAY = {"name": "fwd", "family": "custom", "custom": {
    "nodes": ["n0", "n1", "n2", "n3"],
    "segments": [{"name": "lan0", "members": ["n3", "n2"]},
                 {"name": "lan1", "members": ["n0", "n3"]},
                 {"name": "lan2", "members": ["n3", "n1", "n0"]}]}}


@pytest.mark.parametrize("topo", [TRIANGLE_LINKS, TRIANGLE_LANS], ids=["links", "lans"])
def test_triangle_compiles(topo):
    """n1's route to n0--n2 (the home of n2 only) goes via n0, but n1 reaches n2
    over n1--n2 with a /32: n0 forwards nothing and must keep forwarding off."""
    check_custom(topo)


def test_triangle_neighbours_are_one_hop():
    """Each node reaches the others in one hop (once the prover said "paths
    are not shortest": no host route for a neighbour whose address is on a
    segment the source is not on)."""
    for topo in (TRIANGLE_LINKS, TRIANGLE_LANS):
        text = dump(topo)
        source, problems = load.load_text(text, "tri.yml")
        graph, problems = normalise.normalise(source)
        assert not address.assign(graph, source)
        route.route(graph)
        problems = Problems()
        tables = prove.checked_tables(graph, route.owners(graph), problems)
        assert not problems
        for x in graph.nodes:
            for y in graph.nodes:
                if x is y:
                    continue
                hop, _src, _more = tables[x.index].lookup(y.address)
                assert hop in (ON_LINK, y.index), (x.name, y.name)


def test_gateway_to_itself_does_not_forward():
    """n1 routes lan1 (the home of n0 only) via n0: n0 is then only a
    destination and keeps forwarding off (once the prover said "on, but the
    node forwards for no pair")."""
    plan, _ = check_custom(IDLE_GATEWAY)
    assert not plan["nodes"]["n0"]["forwarding"]


@settings(**SETTINGS)
@given(mesh_dims)
def test_meshes_route_every_pair_shortest(dims):
    text = dump({"name": "mesh", "family": "mesh", "mesh": {"dims": dims}})
    compiled = pipeline.compile_text(text, "mesh.yml")
    plan, paths = check_compiled(compiled)
    assert compiled.metrics["diameter"] == len(dims)
    assert plan_json(text, "mesh.yml") == json.dumps(plan, sort_keys=False)


@pytest.mark.parametrize("family,params", [
    ("bonded", {"nodes": 5, "channels": 1}),
    ("bonded", {"nodes": 9, "channels": 3}),
    ("tree", {"levels": 2, "fanout": 3, "nodes_per_leaf": 4}),
    ("tree", {"levels": 3, "fanout": 2, "nodes_per_leaf": 3}),
    ("metagraph", {"groups": 2, "nodes_per_group": 2, "p2p_per_node": 1}),
    ("metagraph", {"groups": 3, "nodes_per_group": 2, "p2p_per_node": 1}),
    ("metagraph", {"groups": 4, "nodes_per_group": 9, "p2p_per_node": 1}),
    ("metagraph", {"groups": 4, "nodes_per_group": 5, "p2p_per_node": 1}),
    ("metagraph", {"groups": 5, "nodes_per_group": 3, "p2p_per_node": 2}),
    ("metagraph", {"groups": 3, "nodes_per_group": 4, "p2p_per_node": 2}),
    ("metagraph", {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 2}),
    ("metagraph", {"groups": 5, "nodes_per_group": 2, "p2p_per_node": 2}),
    ("metagraph", {"groups": 3, "nodes_per_group": 5, "p2p_per_node": 1}),
    ("metagraph", {"groups": 6, "nodes_per_group": 5, "p2p_per_node": 1}),
    ("metagraph", {"groups": 4, "nodes_per_group": 7, "p2p_per_node": 1}),
    ("metagraph", {"groups": 5, "nodes_per_group": 5, "p2p_per_node": 3}),
])
def test_generated_families_route_every_pair_shortest(family, params):
    text = dump({"name": "fam", "family": family, family: params})
    check_compiled(pipeline.compile_text(text, "fam.yml"))


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "topologies").glob("*.yml")))
def test_shipped_topologies_route_every_pair_shortest(name):
    check_compiled(pipeline.compile_file(str(ROOT / "topologies" / ("%s.yml" % name))))


@settings(max_examples=10, deadline=None, database=None)
@given(custom_topologies(max_nodes=10, extras=False))
def test_plan_does_not_depend_on_hash_seed(topo):
    text = dump(topo)
    code = ("import sys, json; from beonet.compiler import pipeline; "
            "from beonet.outputs import plan as render; "
            "c = pipeline.compile_text(sys.stdin.read(), 'prop.yml'); "
            "sys.stdout.write(json.dumps(render.plan(c), sort_keys=False))")
    outs = set()
    for seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=str(ROOT / "module_utils"))
        run = subprocess.run([sys.executable, "-c", code], input=text, env=env,
                             capture_output=True, text=True, check=True)
        outs.add(run.stdout)
    assert outs == {plan_json(text)}


# -- growth never renumbers -----------------------------------------------------

def assert_kept(before, after):
    for name, ifaces in before.items():
        assert name in after, "node %s disappeared" % name
        for iface, addrs in ifaces.items():
            assert after[name].get(iface) == addrs, \
                "%s %s: %s became %s" % (name, iface, addrs, after[name].get(iface))


@settings(**SETTINGS)
@given(custom_topologies(extras=False), st.data())
def test_custom_growth_keeps_addresses(topo, data):
    before = render.plan(pipeline.compile_text(dump(topo), "grow.yml"))
    names = [n if isinstance(n, str) else n["name"] for n in topo["custom"]["nodes"]]
    anchor = data.draw(st.sampled_from(names))
    topo["custom"]["nodes"].append("added")
    lans = topo["custom"]["segments"]
    grown = None
    if lans and data.draw(st.booleans()):
        grown = data.draw(st.sampled_from(lans))
        grown["members"].append("added")
    else:
        topo["custom"]["links"].append({"ends": data.draw(st.permutations([anchor, "added"]))})
    after = render.plan(pipeline.compile_text(dump(topo), "grow.yml"))
    for name in names:
        assert before["nodes"][name]["address"] == after["nodes"][name]["address"]
    for seg, body in before["segments"].items():
        if "prefix" not in body:
            continue
        old = ipaddress.ip_network(body["prefix"])
        new = ipaddress.ip_network(after["segments"][seg]["prefix"])
        # A LAN is sized by its own members: the one that grew may take a
        # shorter prefix at the same network address; nothing else changes.
        assert new == old or (grown is not None and seg == grown["name"]
                              and new.network_address == old.network_address and new.supernet_of(old))
    assert_kept(host_addresses(before), host_addresses(after))


@pytest.mark.parametrize("family,small,big", [
    ("bonded", {"nodes": 16}, {"nodes": 17}),
    ("bonded", {"nodes": 16, "channels": 3}, {"nodes": 17, "channels": 3}),
    ("mesh", {"dims": [4, 4]}, {"dims": [4, 5]}),
    ("mesh", {"dims": [4, 4]}, {"dims": [5, 4]}),
    ("mesh", {"dims": [2, 3, 2]}, {"dims": [2, 3, 3]}),
])
def test_family_growth_keeps_addresses(family, small, big):
    before = render.plan(pipeline.compile_text(
        dump({"name": "g", "family": family, family: small}), "g.yml"))
    after = render.plan(pipeline.compile_text(
        dump({"name": "g", "family": family, family: big}), "g.yml"))
    assert len(after["nodes"]) > len(before["nodes"])
    for name, node in before["nodes"].items():
        assert after["nodes"][name]["address"] == node["address"]
    assert_kept(addresses(before), addresses(after))
    for name, ifaces in addresses(before).items():
        assert addresses(after)[name] == ifaces, "%s gained or lost an interface" % name


@settings(**SETTINGS)
@given(mesh_dims.filter(lambda dims: _product(dims) <= 40), st.data())
def test_mesh_growth_keeps_addresses(dims, data):
    d = data.draw(st.integers(0, len(dims) - 1))
    grown = list(dims)
    grown[d] += 1
    before = render.plan(pipeline.compile_text(
        dump({"name": "g", "family": "mesh", "mesh": {"dims": dims}}), "g.yml"))
    after = render.plan(pipeline.compile_text(
        dump({"name": "g", "family": "mesh", "mesh": {"dims": grown}}), "g.yml"))
    assert_kept(addresses(before), addresses(after))


# -- the walker itself catches broken plans -----------------------------------

def _plan(path):
    return render.plan(pipeline.compile_file(str(ROOT / "topologies" / path)))


CHAIN = {"name": "chain", "family": "custom", "custom": {
    "nodes": ["a", "b", "c", "d"],
    "links": [{"ends": ["a", "b"]}, {"ends": ["b", "c"]}, {"ends": ["c", "d"]}]}}


def test_walker_catches_a_missing_route():
    plan = _plan("routed-mesh.yml")
    node = next(n for n in plan["nodes"].values() if n["routes"])
    node["routes"] = []
    with pytest.raises(AssertionError, match="no route"):
        walk_all(plan)


def test_walker_catches_forwarding_off_on_a_gateway():
    plan = _plan("custom-example.yml")
    walk_all(plan)
    node = next(n for n in plan["nodes"].values() if n["forwarding"])
    node["forwarding"] = False
    with pytest.raises(AssertionError, match="forwarding off"):
        walk_all(plan)


def test_walker_catches_idle_forwarding():
    plan = _plan("switch-tree.yml")
    walk_all(plan)
    next(iter(plan["nodes"].values()))["forwarding"] = True
    with pytest.raises(AssertionError, match="forwarding for no pair"):
        walk_all(plan)


def test_walker_catches_loops_and_detours():
    plan = render.plan(pipeline.compile_text(dump(CHAIN), "chain.yml"))
    walk_all(plan)
    cd = plan["segments"]["c--d"]["prefix"]
    a_on_ab = next(m["address"] for m in plan["segments"]["a--b"]["members"] if m["node"] == "a")
    route = next(r for r in plan["nodes"]["b"]["routes"] if r["to"] == cd)
    route["via"], route["dev"] = a_on_ab, plan["segments"]["a--b"]["members"][1]["interface"]
    for n in plan["nodes"].values():
        n["forwarding"] = True
    with pytest.raises(AssertionError, match="routing loop"):
        walk_all(plan)
    plan = render.plan(pipeline.compile_text(dump(CHAIN), "chain.yml"))
    b_on_bc = next(m["address"] for m in plan["segments"]["b--c"]["members"] if m["node"] == "b")
    plan["nodes"]["d"]["routes"][0]["via"] = b_on_bc
    with pytest.raises(AssertionError, match="is not on-link"):
        walk_all(plan)


def test_walker_catches_a_detour():
    plan = _plan("routed-mesh.yml")
    seg = next(s for s in plan["segments"].values()
               if s["kind"] == "lan" and "node-0-0" in [m["node"] for m in s["members"]])
    x, z, y = seg["members"][:3]
    assert x["node"] == "node-0-0"
    node = plan["nodes"][x["node"]]
    node["routes"].append({"to": y["address"] + "/32", "via": z["address"],
                           "dev": x["interface"], "src": node["address"]})
    plan["nodes"][z["node"]]["forwarding"] = True
    with pytest.raises(AssertionError, match="takes 2 hops .* shortest is 1"):
        walk_all(plan)
