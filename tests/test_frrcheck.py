"""make frr-check without Docker: which topologies, the frr.conf files written for
them, the container's output read back, and the report of a refusal. The container
is a fake that answers as `vtysh --dryrun --inputfile` does."""

from __future__ import annotations

import os
import re
import subprocess

import pytest
import yaml
from conftest import ROOT

from beonet.labs import frrcheck
from beonet.labs.base import LabError

MESH = {"name": "t", "family": "mesh", "mesh": {"dims": [2, 2]},
        "routing": {"engine": "static", "bfd": {"interval_ms": 50, "multiplier": 4}}}


def _topology(tmp_path, name, doc):
    path = tmp_path / ("%s.yml" % name)
    path.write_text(yaml.safe_dump(doc, sort_keys=False) if isinstance(doc, dict) else doc)
    return str(path)


class FakeDocker:
    """docker image inspect / docker run of the check: vtysh refuses every line
    matching `refuse` ("line N: % Unknown command[..]: TEXT", exit status 2)."""

    def __init__(self, image=True, refuse=None, stop_after=None):
        self.image, self.refuse, self.stop_after = image, refuse, stop_after
        self.calls = []

    def __call__(self, cmd):
        self.calls.append(cmd)
        if cmd[:3] == ["docker", "image", "inspect"]:
            return subprocess.CompletedProcess(cmd, 0 if self.image else 1, "", "")
        folder = next(a for a in cmd if a.endswith(":%s:ro" % frrcheck.MOUNT)).split(":")[0]
        with open(os.path.join(folder, frrcheck.LIST)) as fh:
            files = fh.read().split()
        out = ["%s-version 10.3-3+deb13u1" % frrcheck.MARK]
        for f in files[:self.stop_after]:
            with open(os.path.join(folder, f)) as fh:
                bad = [(k, line) for k, line in enumerate(fh.read().splitlines(), 1)
                       if self.refuse and re.search(self.refuse, line)]
            out.append("%s %s %d" % (frrcheck.MARK, f, 2 if bad else 0))
            out += ["line %d: %% Unknown command[%d]: %s" % (k, k, line) for k, line in bad]
            if bad:
                out.append("Configuration file[/etc/frr/frr.conf] processing failure: 2")
        return subprocess.CompletedProcess(cmd, 0, "\n".join(out) + "\n", "")


def test_shipped_lists_the_three_topology_folders_only(tmp_path):
    for rel in ("topologies/a.yml", "topologies/benchmarks/b.yml", "topologies/benchmarks/compile/c.yml",
                "topologies/beonet.schema.json", "topologies/benchmarks/compile/deeper/d.yml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    assert frrcheck.shipped(str(tmp_path)) == ["topologies/a.yml", "topologies/benchmarks/b.yml",
                                               "topologies/benchmarks/compile/c.yml"]


def test_the_shipped_topologies_are_found_from_the_project_root():
    found = frrcheck.shipped(str(ROOT))
    assert "topologies/routed-mesh.yml" in found and "topologies/benchmarks/mesh-1996.yml" in found
    assert all(f.endswith(".yml") for f in found)


def test_with_frr_keeps_the_other_routing_keys():
    doc = yaml.safe_load(frrcheck.with_frr(yaml.safe_dump(MESH), "t.yml"))
    assert doc["routing"] == {"engine": "frr", "bfd": {"interval_ms": 50, "multiplier": 4}}
    bare = yaml.safe_load(frrcheck.with_frr("name: t\nfamily: mesh\n", "t.yml"))
    assert bare["routing"] == {"engine": "frr"}


@pytest.mark.parametrize("text,message", [
    ("- a\n- b\n", "t.yml: not a topology"),
    ("name: t\nrouting: frr\n", "t.yml: routing: must be a mapping"),
])
def test_with_frr_refuses_what_is_not_a_topology(text, message):
    with pytest.raises(LabError, match=message):
        frrcheck.with_frr(text, "t.yml")


@pytest.mark.parametrize("k,want", [(4, ["a", "d", "g", "j"]), (2, ["a", "j"]), (1, ["a"]),
                                    (10, list("abcdefghij")), (20, list("abcdefghij"))])
def test_sample_spreads_over_the_node_order(k, want):
    assert frrcheck.sample(list("abcdefghij"), k) == want


def test_every_node_gets_the_agents_frr_conf(tmp_path):
    out = tmp_path / "out"
    done = frrcheck.render_topology(_topology(tmp_path, "mesh", MESH), str(out))
    assert done.nodes == 4 and not done.skipped
    assert [os.path.basename(f) for f in done.files] == ["node-0-0.conf", "node-0-1.conf",
                                                         "node-1-0.conf", "node-1-1.conf"]
    assert len({os.path.dirname(f) for f in done.files}) == 1 and not done.files[0].startswith("/")
    # routing.engine frr merged into a static topology, its BFD timers kept: the golden file
    assert (out / done.files[0]).read_text() == (ROOT / "tests/golden/frr/mesh-node-0-0.conf").read_text()


def test_a_huge_topology_is_sampled(tmp_path):
    done = frrcheck.render_topology(_topology(tmp_path, "mesh", MESH), str(tmp_path / "out"), huge=3, k=2)
    assert done.nodes == 4 and [os.path.basename(f) for f in done.files] == ["node-0-0.conf", "node-1-1.conf"]


def test_a_topology_that_does_not_compile_is_skipped_with_the_reason(tmp_path):
    bad = _topology(tmp_path, "bad", {"name": "t", "family": "mesh", "mesh": {"dims": [2, 2]},
                                      "addressing": {"loopback": "10.254.0.0/30"}})
    done = frrcheck.render_topology(bad, str(tmp_path / "out"))
    assert not done.files and "does not compile with routing.engine frr" in done.skipped
    assert "addressing.loopback" in done.skipped
    assert "does not compile" in frrcheck.render_topology(_topology(tmp_path, "list", "- a\n"),
                                                          str(tmp_path / "out")).skipped


def test_parse_reads_each_files_verdict():
    out = ("%s-version 10.3\n%s a/n1.conf 0\n%s a/n2.conf 2\nline 3: %% Unknown command[3]: x\n"
           "Configuration file[/etc/frr/frr.conf] processing failure: 2\n" % ((frrcheck.MARK,) * 3))
    version, verdicts = frrcheck.parse(out, ["a/n1.conf", "a/n2.conf"])
    assert version == "10.3"
    assert [(v.file, v.status, v.accepted) for v in verdicts] == [("a/n1.conf", 0, True),
                                                                  ("a/n2.conf", 2, False)]
    assert verdicts[1].output[0] == "line 3: % Unknown command[3]: x"


def test_a_refusal_line_refuses_even_with_status_zero():
    assert not frrcheck.Verdict("f", 0, ["line 9: % Unknown command[9]: y"]).accepted
    assert not frrcheck.Verdict("f", 1, []).accepted


def test_parse_refuses_an_output_missing_files():
    with pytest.raises(LabError, match="no answer on 1 of 2 files \\(first: b.conf\\)"):
        frrcheck.parse("%s a.conf 0\n" % frrcheck.MARK, ["a.conf", "b.conf"])


def test_main_accepts_and_counts(tmp_path, capsys):
    fake = FakeDocker()
    assert frrcheck.main([_topology(tmp_path, "mesh", MESH), "--image", "img:1"], runner=fake) == 0
    out = capsys.readouterr().out
    assert "mesh.yml: 4 nodes, 4 accepted, 0 refused" in out
    assert ("FRR 10.3-3+deb13u1 (img:1): 1 topologies (0 skipped), 4 frr.conf files: "
            "4 accepted, 0 refused") in out
    run = fake.calls[-1]
    assert run[:6] == ["docker", "run", "--rm", "--network", "none", "-v"] and "img:1" in run


def test_main_names_the_refused_file_frrs_message_and_the_line(tmp_path, capsys):
    meta = {"name": "m", "family": "metagraph",
            "metagraph": {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1}}
    fake = FakeDocker(refuse="network point-to-point")
    assert frrcheck.main([_topology(tmp_path, "mesh", MESH), _topology(tmp_path, "meta", meta)],
                         runner=fake) == 1
    out = capsys.readouterr().out
    assert "mesh.yml: 4 nodes, 4 accepted, 0 refused" in out
    refused = re.findall(r"REFUSED (\S+) \(vtysh exit status 2\)", out)
    assert refused and all("meta" in f for f in refused)
    assert re.search(r"  FRR: line (\d+): % Unknown command\[\1\]:  ip ospf network point-to-point\n"
                     r"  line \1 of the file: ' ip ospf network point-to-point'", out)
    assert "%d refused" % len(refused) in out.splitlines()[-1]


def test_main_says_how_to_build_a_missing_image(tmp_path, capsys):
    assert frrcheck.main([_topology(tmp_path, "mesh", MESH), "--image", "img:1"],
                         runner=FakeDocker(image=False)) == 1
    assert "image img:1 missing: run scripts/build-image.sh frr" in capsys.readouterr().err


def test_main_fails_when_the_container_stops_early(tmp_path, capsys):
    assert frrcheck.main([_topology(tmp_path, "mesh", MESH)], runner=FakeDocker(stop_after=2)) == 1
    assert "vtysh gave no answer on 2 of 4 files" in capsys.readouterr().err


def test_main_refuses_a_zero_sample(capsys):
    with pytest.raises(SystemExit):
        frrcheck.main(["t.yml", "--sample", "0"], runner=FakeDocker())
    assert "--huge and --sample must be 1 or more" in capsys.readouterr().err


def test_a_topology_too_big_for_an_frr_plan_is_left_out_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(frrcheck, "COMPILE_MAX", 3)
    done = frrcheck.render_topology(_topology(tmp_path, "mesh", MESH), str(tmp_path / "out"))
    assert not done.files
    assert done.skipped.startswith("4 nodes, more than 3: the plan with routing.engine frr")


# -- IPv6 variants: dual stack and IPv6-only ----------------------------------------

@pytest.mark.parametrize("given,variant,want", [
    (None, "dual", {"ipv6": True}),
    (None, "only", {"ipv4": False, "ipv6": True}),
    ({"ipv4": False, "ipv6": True}, "dual", {"ipv6": True}),
    ({"loopback": "10.253.0.0/16", "ipv6": {"lan": "fd00:1::/48"}}, "only",
     {"loopback": "10.253.0.0/16", "ipv6": {"lan": "fd00:1::/48"}, "ipv4": False}),
])
def test_a_variant_merges_its_addressing_and_keeps_the_topologys_pools(given, variant, want):
    doc = dict(MESH, **({"addressing": given} if given else {}))
    text = frrcheck.with_frr(yaml.safe_dump(doc), "t.yml", variant=variant)
    assert yaml.safe_load(text)["addressing"] == want
    assert "addressing" not in yaml.safe_load(frrcheck.with_frr(yaml.safe_dump(MESH), "t.yml"))


def test_a_variant_refuses_addressing_that_is_not_a_mapping():
    with pytest.raises(LabError, match="t.yml: addressing: must be a mapping"):
        frrcheck.with_frr("name: t\naddressing: [a]\n", "t.yml", variant="dual")


def test_the_shipped_check_adds_the_frr_testbed_in_both_ipv6_variants():
    found = frrcheck.jobs([], [], str(ROOT))
    assert [j for j in found if j[1]] == [("topologies/metanode-testbed-frr.yml", "dual"),
                                          ("topologies/metanode-testbed-frr.yml", "only")]
    assert [t for t, v in found if not v] == frrcheck.shipped(str(ROOT))
    assert [j for j in frrcheck.jobs([], ["only"], str(ROOT)) if j[1]] == [
        ("topologies/metanode-testbed-frr.yml", "only")]
    assert frrcheck.jobs(["a.yml"], ["only", "dual", "only"]) == [("a.yml", ""), ("a.yml", "only"),
                                                                 ("a.yml", "dual")]
    assert frrcheck.jobs(["a.yml"], []) == [("a.yml", "")]


@pytest.mark.parametrize("variant,v4", [("dual", True), ("only", False)])
def test_each_variant_is_rendered_into_a_folder_of_its_own(tmp_path, variant, v4):
    path = _topology(tmp_path, "mesh", dict(MESH, routing={"engine": "frr"}))
    plain = frrcheck.render_topology(path, str(tmp_path / "out"))
    done = frrcheck.render_topology(path, str(tmp_path / "out"), variant=variant)
    assert done.nodes == 4 and not done.skipped
    assert done.topology == path + (" (IPv4 and IPv6)" if v4 else " (IPv6 only)")
    assert {os.path.dirname(f) for f in done.files} == {os.path.dirname(plain.files[0]) + "-" + variant}
    text = (tmp_path / "out" / done.files[0]).read_text()
    assert "router ospf6\n" in text and (" ip ospf area 0\n" in text) == v4


def test_main_checks_the_variants_asked_for_and_names_them(tmp_path, capsys):
    fake = FakeDocker(refuse="ipv6 ospf6 network broadcast")
    meta = {"name": "m", "family": "metagraph",
            "metagraph": {"groups": 4, "nodes_per_group": 3, "p2p_per_node": 1}}
    assert frrcheck.main([_topology(tmp_path, "meta", meta), "--ipv6", "only"], runner=fake) == 1
    out = capsys.readouterr().out
    assert "meta.yml: 12 nodes, 12 accepted, 0 refused" in out
    assert re.search(r"meta.yml \(IPv6 only\): 12 nodes, 0 accepted, 12 refused", out)
    assert re.search(r"REFUSED \S+-only/node\d+\.conf", out)
    assert "2 topologies (0 skipped), 24 frr.conf" in out


def test_main_refuses_an_unknown_variant(capsys):
    with pytest.raises(SystemExit):
        frrcheck.main(["t.yml", "--ipv6", "both"], runner=FakeDocker())
    assert "invalid choice: 'both'" in capsys.readouterr().err
