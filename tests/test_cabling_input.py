"""Every input of beonet cabling is checked where it enters: the discovery file
(golden errors in tests/errors/cabling/), the inventory's mapping, the outputs,
the host_vars writer, and the Ansible modules that read reports."""

import copy
import json
import os
import pathlib
import shutil

import pytest
import yaml
from conftest import ROOT, golden, local_play

from beonet.agent import discover
from beonet.agent.names import shown
from beonet.cabling import match, reports
from beonet.compiler import pipeline

TOPOLOGY = os.path.join(ROOT, "topologies", "routed-mesh-2x2.yml")
ERRORS = pathlib.Path(ROOT) / "tests" / "errors" / "cabling"
CASES = sorted(p.stem for p in ERRORS.glob("*.json"))


@pytest.fixture(scope="module")
def comp():
    return pipeline.compile_file(TOPOLOGY)


@pytest.fixture()
def good(comp):
    return match.synthesise(comp)


def cabling(*argv):
    from beonet import cli
    try:
        return cli.main(["cabling", TOPOLOGY, *argv])
    except SystemExit as exc:
        return exc.code


def refused(capsys, tmp_path, *argv, code=2):
    """Run beonet cabling with outputs in tmp_path/out; its stderr, checking the exit
    code, that no traceback was printed and that nothing was written."""
    out = tmp_path / "out"
    assert cabling(*argv, "--host-vars", str(out / "hv"), "--report", str(out / "r.md"),
                   "-o", str(out / "map.yml")) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if code == 1:        # a cabling fault: the report says so, nothing else is written
        assert os.listdir(out) == ["r.md"] and "cabling fault" in (out / "r.md").read_text()
    else:
        assert not out.exists()
    return err


def write(tmp_path, data, name="disc.json"):
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


# --- the discovery file: one golden error file per kind of refusal ---------------------

def test_there_is_a_golden_error_for_each_kind_of_refusal():
    assert {"bad-nic-names", "bad-host-names", "wrong-types", "host-twice", "key-twice",
            "nics-alike", "nan", "too-deep", "empty", "not-utf8", "not-json",
            "reserved-nic-names"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_a_bad_discovery_file_is_refused_with_every_problem(case, tmp_path, capsys, monkeypatch):
    shutil.copy(ERRORS / (case + ".json"), tmp_path / "disc.json")
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path)
    assert cabling("--discovered", "disc.json", "--host-vars", "out/hv", "--report",
                   "out/r.md") == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and os.listdir(tmp_path / "out") == []
    heads = ("disc.json: ", "disc.json:1: ", "disc.json:2: ", "beonet: ")
    assert all(line.startswith(heads) for line in err.splitlines())
    golden(ERRORS / (case + ".txt"), err)


def test_each_message_names_file_host_key_and_the_escaped_value():
    text = (ERRORS / "bad-nic-names.txt").read_text(encoding="utf-8")
    assert "disc.json: node-0-1.nics[1].name: 'a\\nb' holds a line break" in text
    assert "disc.json: node-0-1.nics[0].name: '../etc' holds '/'" in text
    assert "node-0-0.nics[0].name: 'enp1234567890abc' is 16 bytes long" in text
    assert "node-0-0.nics[1].name: '1234' is only digits" in text
    assert "node-1-0.nics[0].name: '-rf' starts with '-'" in text
    wrong = (ERRORS / "wrong-types.txt").read_text(encoding="utf-8")
    assert "node-0-0.nics[1].neighbours[0].node: must be a string, not a list ['node-0-1']" in wrong
    assert "node-0-1.nics[1].neighbours[0].node: must be a string, not a number 7" in wrong
    assert "node-1-0.nics: must be a list, not a mapping" in wrong


def test_one_host_twice_and_one_key_twice_are_named():
    assert "disc.json: node-0-0: reported twice" in (ERRORS / "host-twice.txt").read_text()
    assert "disc.json: node-0-0.nics[0].carrier: given twice" in (ERRORS / "key-twice.txt").read_text()


@pytest.mark.parametrize("name, why", [
    ("eth0/../../x", "holds '/'"), ("..", "folder's name"), ("a\nb", "line break"),
    ("x" * 16, "16 bytes long"), ("0123", "only digits"), ("-x", "starts with '-'"),
    ("é" * 8, "holds 'é'"), ("a b", "a space"), ("a\x00", "control character"),
    ("$(reboot)", "'$'"), ("", "empty text")])
def test_nic_names_follow_the_interface_name_rule(good, name, why):
    for where in ("name", "neighbour"):
        data = copy.deepcopy(good)
        nic = data["node-1-1"]["nics"][1]
        if where == "name":
            nic["name"] = name
        else:
            nic["neighbours"][0]["nic"] = name
        texts = reports.check(data, "d.json").texts()
        assert len(texts) == 1 and why in texts[0] and "\n" not in texts[0], texts
        assert texts[0].startswith("d.json: node-1-1.nics[1].")


RIGHT = {"nics": [], "management": [], "skipped": [], "format": 1, "node": "node-0-0",
         "run": "text", "probe_only": True}
WRONG = [(key, value) for key in RIGHT for value in (None, True, 3, 2.5, "a b", [], {})
         if type(value) is not type(RIGHT[key])]


@pytest.mark.parametrize("key, value", WRONG)
def test_a_wrong_type_at_report_level_is_named(good, key, value):
    data = copy.deepcopy(good)
    data["node-0-0"][key] = value
    texts = reports.check(data, "d.json").texts()
    assert texts and all(t.startswith("d.json: node-0-0.%s: " % key) for t in texts), texts


@pytest.mark.parametrize("value", [None, True, 3, "node-0-0", [], [1]])
def test_a_report_that_is_not_a_mapping_is_named(good, value):
    data = copy.deepcopy(good)
    data["node-0-1"] = value
    assert reports.check(data, "d.json").texts() == [
        "d.json: node-0-1: must be a mapping, not %s" % shown(value)]


@pytest.mark.parametrize("value", [None, 3, "node-0-1", {"node": "node-0-1"}])
def test_a_neighbour_that_is_not_a_mapping_is_named(good, value):
    data = copy.deepcopy(good)
    data["node-0-0"]["nics"][0]["neighbours"][0] = value
    texts = reports.check(data, "d.json").texts()
    assert texts and all(t.startswith("d.json: node-0-0.nics[0].neighbours[0]") for t in texts)


def test_every_report_synthesised_or_written_by_the_agent_passes(comp):
    data = match.synthesise(comp, spare=2)
    for report in data.values():
        report["probe_only"] = False
        for nic in report["nics"]:
            nic["was_up"] = True
    data["node-0-0"]["skipped"] = [{"name": "docker0", "why": "bridge"}]
    assert not reports.check(data, "d.json")
    agent_keys = {"format", "node", "run", "management", "probe_only", "nics", "skipped"}
    assert agent_keys == set(reports.REPORTS_SCHEMA["additionalProperties"]["properties"])


def test_deep_nesting_and_a_huge_file_are_refused_at_once(tmp_path, capsys):
    deep = write(tmp_path, "[" * 100_000 + "]" * 100_000, "deep.json")
    err = refused(capsys, tmp_path, "--discovered", deep)
    assert "nests deeper than 8 levels" in err
    deep = write(tmp_path, '{"a": ' * 100_000 + "1" + "}" * 100_000, "deep2.json")
    assert "nests deeper" in refused(capsys, tmp_path, "--discovered", deep)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as fh:
        fh.truncate(reports.MAX_BYTES + 1)
    err = refused(capsys, tmp_path, "--discovered", str(huge))
    assert "is over 256 MiB" in err


def test_a_pipe_a_folder_and_a_missing_file_are_named_without_hanging(tmp_path, capsys):
    os.mkfifo(tmp_path / "pipe")
    assert "pipe: cannot read: a pipe, socket or device, not a file" in refused(
        capsys, tmp_path, "--discovered", str(tmp_path / "pipe"))
    assert "cannot read: a folder" in refused(capsys, tmp_path, "--discovered", str(tmp_path))
    assert "cannot read: No such file or directory" in refused(capsys, tmp_path, "--discovered",
                                                  str(tmp_path / "none.json"))


# --- cabling faults (exit 1) against bad input (exit 2) -----------------------------------

def test_a_missing_report_and_a_report_of_another_node_are_cabling_faults(good, tmp_path, capsys):
    del good["node-1-1"]
    good["node-1-0"]["node"] = "node-0-0"
    err = refused(capsys, tmp_path, "--discovered", write(tmp_path, good), code=1)
    assert "no discovery report for node-1-1" in err
    assert "the discovery report of node-1-0 is of format 1 for node 'node-0-0'" in err


def test_a_host_not_in_the_topology_is_a_warning(good, tmp_path, capsys):
    good["node-9-9"] = copy.deepcopy(good["node-0-0"])
    good["node-9-9"]["node"] = "node-9-9"
    assert cabling("--discovered", write(tmp_path, good)) == 0
    captured = capsys.readouterr()
    assert "warning: %s: node-9-9: not a node of the topology" % (tmp_path / "disc.json") \
        in captured.err
    assert "node-9-9" not in captured.out


def test_a_neighbour_of_an_unknown_node_is_ignored(good, tmp_path, capsys):
    good["node-0-0"]["nics"][0]["neighbours"].append(
        {"node": "stranger", "nic": "eth9", "mac": "02:00:00:00:99:99"})
    assert cabling("--discovered", write(tmp_path, good)) == 0
    assert "stranger" not in capsys.readouterr().out


def test_matching_never_hashes_a_neighbour_that_is_not_a_name(comp, good):
    good["node-0-0"]["nics"][0]["neighbours"][0]["node"] = ["node-0-1"]
    assert match.match(comp, good).ok      # the library call reads leniently: ignored


# --- the inventory's mapping is a hint ----------------------------------------------------

INVENTORY = """all:
  children:
    beonet_nodes:
      hosts:
        node-0-0: {beonet_interfaces: 5}
        node-0-1: {beonet_interfaces: [eth1, eth2]}
        node-1-0: {beonet_interfaces: {eth1: 3, eth2: "../x"}}
        node-1-1: {beonet_interfaces: {eth1: eth1, eth2: eth2}}
"""


def test_an_inventory_of_any_shape_still_gives_the_fault_list(comp, tmp_path, capsys):
    inv = write(tmp_path, INVENTORY, "hosts.yml")
    disc = write(tmp_path, match.synthesise(comp, moves=[match.Move("node-1-1", "d1-1")]))
    err = refused(capsys, tmp_path, "--discovered", disc, "-i", inv, code=1)
    assert "%s: node-0-0.beonet_interfaces: must be a mapping of logical to physical NIC " \
        "names, not a number 5; node-0-0's mapping is not used for matching" % inv in err
    assert "node-0-1.beonet_interfaces: must be a mapping" in err and "a list ['eth1'" in err
    assert "node-1-0.beonet_interfaces.eth1: must be an interface name, not a number" in err
    assert "node-1-0.beonet_interfaces.eth2: '../x' holds '/'" in err
    assert err.splitlines()[-1] == "beonet: 2 cabling fault(s), no mapping written"
    assert "node-1-1 eth2 (its NIC on switch sw-d1-1) has no carrier" in err   # its hint is used


def test_mapping_hint_keeps_the_good_hosts_and_only_the_topology_nodes():
    hint, warnings = match.mapping_hint(
        {"a": {"eth1": "enp1s0"}, "b": {"eth1": None}, "c": 5}, ["a", "b"], "inv")
    assert hint == {"a": {"eth1": "enp1s0"}}
    assert warnings == ["inv: b.beonet_interfaces.eth1: must be an interface name, not null; "
                        "b's mapping is not used for matching"]


# --- the outputs ----------------------------------------------------------------------------

def test_outputs_that_cannot_be_written_are_named_and_nothing_is_written(good, tmp_path, capsys):
    disc = write(tmp_path, good)
    afile = write(tmp_path, "x", "a-file")
    for argv, says in [
            (["--host-vars", afile], "--host-vars %s: not a folder" % afile),
            (["--host-vars", afile + "/hv"], "cannot be made: %s is not a folder" % afile),
            (["--report", str(tmp_path)], "--report %s: a folder, not a file" % tmp_path),
            (["-o", afile + "/m.yml"], "-o %s/m.yml: cannot be made" % afile)]:
        out = tmp_path / "hv"
        assert cabling("--discovered", disc, "--report", str(tmp_path / "r.md"), *argv,
                       *([] if "--host-vars" in argv else ["--host-vars", str(out)])) == 2
        err = capsys.readouterr().err
        assert err.startswith("beonet cabling: nothing written: ") and says in err, err
        assert "None" not in err and "Traceback" not in err
        assert not out.exists() and not (tmp_path / "r.md").exists()
    assert cabling("--discovered", disc, "--report", str(tmp_path / ("x" * 300))) == 2
    assert "--report '%s': cannot be written: File name too long" % (tmp_path / ("x" * 300)) in \
        capsys.readouterr().err


def test_a_host_entry_in_the_way_of_its_folder_is_named(good, tmp_path, capsys):
    (tmp_path / "hv" / "node-0-1").mkdir(parents=True)
    (tmp_path / "hv" / "node-0-1" / match.VAR_FILE).mkdir()
    (tmp_path / "hv" / "node-1-0").write_text("not a folder")
    assert cabling("--discovered", write(tmp_path, good), "--host-vars", str(tmp_path / "hv")) == 2
    err = capsys.readouterr().err
    assert "%s is not a folder (it would hold beonet_interfaces.yml)" % (tmp_path / "hv" / "node-1-0") in err
    assert "node-0-1/beonet_interfaces.yml is a folder, not a file" in err
    assert sorted(os.listdir(tmp_path / "hv")) == ["node-0-1", "node-1-0"]


def test_the_host_vars_writer_is_a_second_wall(tmp_path):
    hv = tmp_path / "hv"
    for mapping, says in [({"../x": {"eth1": "eth1"}}, "'../x' is not a name"),
                          ({"node01": {"eth1": "a/b"}}, "node01.beonet_interfaces.eth1: 'a/b'"),
                          ({"node01": {"eth1": "eth1\n"}}, "line break"),
                          ({"node01": {"eth1": "eth1"}, "node02": {"e\n": "eth1"}}, "node02")]:
        with pytest.raises(ValueError, match="nothing written to") as err:
            match.write_host_vars(str(hv), mapping)
        assert says in str(err.value)
        assert not hv.exists()
    hv.mkdir()
    (hv / "node01").symlink_to(tmp_path)
    with pytest.raises(ValueError, match="lies outside"):
        match.write_host_vars(str(hv), {"node01": {"eth1": "eth1"}})
    assert not (tmp_path / match.VAR_FILE).exists()
    assert match.write_host_vars(str(hv), {"node02": {"eth1": "enp1s0"}}) == [
        str(hv / "node02" / match.VAR_FILE)]
    assert yaml.safe_load((hv / "node02" / match.VAR_FILE).read_text()) == {
        "beonet_interfaces": {"eth1": "enp1s0"}}


# --- the node agent -----------------------------------------------------------------------

def test_the_agent_skips_a_nic_whose_name_beonet_does_not_write(tmp_path):
    why = discover.skip_reason("a#b", str(tmp_path), [], False, [], lambda _n: None)
    assert why.startswith("a name beonet does not write")


def test_a_bond_member_reports_its_permanent_mac(tmp_path):
    nic = tmp_path / "enp1s0"
    (nic / "bonding_slave").mkdir(parents=True)
    (nic / "address").write_text("02:00:00:00:00:aa\n")
    assert discover.report_mac(str(tmp_path), "enp1s0") == "02:00:00:00:00:aa"
    (nic / "bonding_slave" / "perm_hwaddr").write_text("52:54:00:12:34:56\n")
    assert discover.report_mac(str(tmp_path), "enp1s0") == "52:54:00:12:34:56"


# --- the Ansible modules ------------------------------------------------------------------

MODULE_PLAY = """- name: hostile reports
  hosts: localhost
  gather_facts: false
  tasks:
    - name: A report with a bad NIC name
      beonet_cabling:
        topology: {topo}
        discovered: "{{{{ lookup('file', '{bad}') | from_json }}}}"
        host_vars_dir: {hv}
      register: cabling
      ignore_errors: true
    - name: A node name beonet does not accept
      beonet_discover: {{node: "bad/name", probe_only: true}}
      register: discovered
      ignore_errors: true
    - name: Keep the results
      ansible.builtin.copy:
        dest: {out}
        mode: "0644"
        content: "{{{{ [cabling.failed, cabling.msg, discovered.failed, discovered.msg] | to_json }}}}"
"""


def test_the_modules_refuse_with_the_same_messages(tmp_path):
    bad = tmp_path / "bad.json"
    shutil.copy(ERRORS / "bad-nic-names.json", bad)
    (tmp_path / "play.yml").write_text(MODULE_PLAY.format(
        topo=TOPOLOGY, bad=bad, hv=tmp_path / "hv", out=tmp_path / "out.json"))
    res = local_play(tmp_path / "play.yml")
    assert res.returncode == 0, res.stdout + res.stderr
    failed, msg, discover_failed, discover_msg = json.loads((tmp_path / "out.json").read_text())
    assert failed and "Traceback" not in msg and not (tmp_path / "hv").exists()
    cli_lines = (ERRORS / "bad-nic-names.txt").read_text().replace("disc.json: ", "discovered: ")
    assert msg.splitlines()[1:] == cli_lines.splitlines()[:-1]
    assert discover_failed and discover_msg.startswith("node: 'bad/name' is not a name")
