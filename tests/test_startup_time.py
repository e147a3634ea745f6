"""scripts/startup_time.py: a command and its yardstick in turn, the figures printed;
what a compile's start-up imports."""

import importlib.util
import json
import subprocess
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


@pytest.mark.parametrize("value,said", [("1", True), ("", False)])
def test_a_start_without_cached_bytecode_is_pointed_out(monkeypatch, capsys, value, said):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", value)
    assert startup_time.main(["-n", "1", "--", sys.executable, "-c", "pass"]) == 0
    assert ("PYTHONDONTWRITEBYTECODE is set" in capsys.readouterr().err) is said


def test_a_failing_command_stops_the_script_and_says_why():
    failing = "import sys; sys.stderr.write('why'); sys.exit(3)"
    with pytest.raises(SystemExit) as exc:
        startup_time.main(["-n", "1", "--", sys.executable, "-c", failing])
    assert str(exc.value).endswith(" failed:\nwhy") and "sys.exit(3)" in str(exc.value)


def test_no_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        startup_time.main(["-n", "2"])
    assert exc.value.code == 2 and "give -- COMMAND" in capsys.readouterr().err


def test_a_compile_to_stdout_imports_only_what_it_uses():
    """The start-up of `beonet compile` of an IPv4 topology: no dataclass module
    (nor inspect, which it imports), no hashlib or socket (IPv6, bond MACs without
    an address), no difflib (a misspelt key's hint)."""
    code = ("import sys; sys.argv = ['beonet', 'compile', %r]; "
            "from beonet.cli import main; code = main(); sys.stdout.flush(); "
            "print(sorted(m for m in %r if m in sys.modules), code, file=sys.stderr)"
            % (str(ROOT / "topologies" / "metanode-testbed.yml"),
               ("dataclasses", "inspect", "hashlib", "socket", "difflib")))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                         env={"PYTHONPATH": str(ROOT / "module_utils")})
    assert out.stderr.splitlines()[-1] == "[] 0"
    assert json.loads(out.stdout)["topology"]["name"]
