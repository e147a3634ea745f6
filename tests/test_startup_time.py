"""scripts/startup_time.py: a command and its yardstick in turn, the figures printed."""

import importlib.util
import sys

import pytest
from conftest import ROOT

SPEC = importlib.util.spec_from_file_location("startup_time", ROOT / "scripts" / "startup_time.py")
startup_time = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(startup_time)


def test_the_command_and_the_yardstick_run_in_turn(capsys):
    assert startup_time.main(["-n", "2", "--", sys.executable, "-c", "pass"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "A %s -c pass" % sys.executable and out[3] == "B %s -c pass" % sys.executable
    assert [line.split()[0] for line in out] == ["A", "wall", "cpu", "B", "wall", "cpu", "A/B", "A/B"]
    assert all("median" in line for line in out[1:3] + out[4:])


def test_a_failing_command_stops_the_script_and_says_why():
    failing = "import sys; sys.stderr.write('why'); sys.exit(3)"
    with pytest.raises(SystemExit) as exc:
        startup_time.main(["-n", "1", "--", sys.executable, "-c", failing])
    assert str(exc.value).endswith(" failed:\nwhy") and "sys.exit(3)" in str(exc.value)


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        startup_time.main(["-n", "2"])
    assert exc.value.code == 2 and "give -- COMMAND" in capsys.readouterr().err
