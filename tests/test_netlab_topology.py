"""scripts/netlab_topology.py: a beonet plan as a netlab topology of the same networks."""

import importlib.util
import io
import json

from conftest import ROOT

from beonet.compiler import pipeline
from beonet.outputs import plan as render

SPEC = importlib.util.spec_from_file_location("netlab_topology", ROOT / "scripts" / "netlab_topology.py")
netlab_topology = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(netlab_topology)


def test_every_node_and_segment_of_the_plan_is_in_the_netlab_topology():
    plan = render.plan(pipeline.compile_file(str(ROOT / "topologies/metanode-testbed.yml")))
    out = io.StringIO()
    assert netlab_topology.main(io.StringIO(json.dumps(plan)), out) == 0
    data = json.loads(out.getvalue())
    assert data["nodes"] == list(plan["nodes"]) and len(data["nodes"]) == 36
    assert [link["name"] for link in data["links"]] == list(plan["segments"])
    group0 = data["links"][0]
    assert sorted(k for k in group0 if k.startswith("node")) == ["node%02d" % n for n in range(1, 10)]
    assert group0["prefix"] == {"ipv4": "10.0.0.0/24"} and group0["bandwidth"] == 100_000
    assert all(len([k for k in link if k.startswith("node")]) == 2 for link in data["links"][4:])


def test_what_is_not_a_plan_is_refused(capsys):
    assert netlab_topology.main(io.StringIO('{"nodes": {}}'), io.StringIO()) == 2
    assert "not a beonet plan on stdin" in capsys.readouterr().err
