"""The CPU split of a lab run (beonet.labs.cpusplit), on fake /proc/stat and cgroup trees."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from beonet.labs import cpusplit

STAT = "cpu  %d 10 %d 9000 50 5 5 0 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n"


def _stat(tmp_path: Path, user: int, system: int) -> str:
    path = tmp_path / "stat"
    path.write_text(STAT % (user, system))
    return str(path)


def test_host_seconds_leaves_idle_and_iowait_out() -> None:
    assert cpusplit.host_seconds(STAT % (100, 40), 100) == pytest.approx((100 + 10 + 40 + 5 + 5) / 100)


def test_host_seconds_without_a_cpu_line_is_an_error() -> None:
    with pytest.raises(ValueError, match="no 'cpu' line"):
        cpusplit.host_seconds("intr 1\n", 100)


def test_nodes_from_cgroup_v1(tmp_path: Path) -> None:
    v1 = tmp_path / "cpuacct" / "docker"
    v1.mkdir(parents=True)
    (v1 / "cpuacct.usage").write_text("2500000000\n")
    assert cpusplit.nodes_seconds(str(tmp_path)) == pytest.approx(2.5)


def test_nodes_from_cgroup_v2_scopes(tmp_path: Path) -> None:
    for name, usec in (("docker-aa.scope", 1_500_000), ("docker-bb.scope", 500_000)):
        scope = tmp_path / "system.slice" / name
        scope.mkdir(parents=True)
        (scope / "cpu.stat").write_text("usage_usec %d\nuser_usec 1\nsystem_usec 1\n" % usec)
    (tmp_path / "system.slice" / "ssh.service").mkdir()
    assert cpusplit.nodes_seconds(str(tmp_path)) == pytest.approx(2.0)


def test_no_docker_cgroup_counts_nothing(tmp_path: Path) -> None:
    assert cpusplit.nodes_seconds(str(tmp_path)) == 0.0


def test_split_line_takes_controller_and_nodes_from_the_host() -> None:
    before = cpusplit.Counters(host=100.0, nodes=10.0, children=1.0)
    after = cpusplit.Counters(host=130.0, nodes=22.0, children=9.0)
    assert cpusplit.split_line(before, after, 15.04) == (
        "cpu: wall 15.0 s; host 30.0 s; controller 8.0 s; nodes 12.0 s; rest 10.0 s")


def test_rest_is_never_negative() -> None:
    before = cpusplit.Counters(0.0, 0.0, 0.0)
    assert cpusplit.split_line(before, cpusplit.Counters(1.0, 1.0, 1.0), 1.0).endswith("rest 0.0 s")


def test_run_reports_the_exit_status_and_the_child_cpu(tmp_path: Path) -> None:
    stat = _stat(tmp_path, 100, 40)
    rc, line = cpusplit.run([sys.executable, "-c", "import sys; sum(range(10**7)); sys.exit(3)"],
                            proc_stat=stat, cgroup=str(tmp_path))
    assert rc == 3
    controller = float(line.split("controller ")[1].split(" s")[0])
    assert controller > 0.0 and "host 0.0 s" in line


def test_a_command_that_cannot_run_is_named(tmp_path: Path) -> None:
    rc, line = cpusplit.run([str(tmp_path / "missing")], proc_stat=_stat(tmp_path, 1, 1),
                            cgroup=str(tmp_path))
    assert rc == 127 and "cannot run" in line and "missing" in line


def test_main_writes_the_line_to_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stat = _stat(tmp_path, 1, 1)
    monkeypatch.setattr(cpusplit, "PROC_STAT", stat)
    monkeypatch.setattr(cpusplit, "CGROUP", str(tmp_path))
    monkeypatch.setattr(cpusplit.run, "__defaults__", (stat, str(tmp_path)))
    out = tmp_path / "line"
    assert cpusplit.main(["--out", str(out), "--", sys.executable, "-c", "pass"]) == 0
    assert out.read_text().startswith("cpu: wall ") and os.path.getsize(out) > 0


def test_main_without_a_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        cpusplit.main(["--"])
    assert exit_info.value.code == 2 and "give the command" in capsys.readouterr().err


def test_an_output_that_cannot_be_written_is_named_not_a_traceback(tmp_path, monkeypatch, capsys):
    stat = _stat(tmp_path, 1, 1)
    monkeypatch.setattr(cpusplit.run, "__defaults__", (stat, str(tmp_path)))
    bad = str(tmp_path / "no" / "such\ndir" / ".." / "line")
    assert cpusplit.main(["--out", bad, "--", sys.executable, "-c", "pass"]) == 2
    err = capsys.readouterr().err
    assert "cpusplit: cannot write" in err and "cpu: wall" in err
