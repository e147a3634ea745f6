"""The agent's one way of running a program (agent/procs.py): status and output,
a program that cannot start, one that does not end in time (stopped with everything
it started). The programs are the venv's own Python."""

import sys
import time

from beonet.agent import procs


def _python(code):
    return [sys.executable, "-c", code]


def _gone(pid, tries=400):
    """Whether pid is gone within tries looks (its new parent reaps it)."""
    for _ in range(tries):
        if not procs.alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_program_gives_its_status_and_both_outputs_as_text():
    code = "import sys; print('out é'); sys.stderr.write('err'); sys.exit(3)"
    assert procs.run(_python(code), 30) == (3, "out é\n", "err")


def test_a_program_reads_nothing_from_the_caller():
    assert procs.run(_python("import sys; print(repr(sys.stdin.read()))"), 30) == (0, "''\n", "")


def test_a_program_that_cannot_start_says_why_with_the_shells_status(tmp_path):
    rc, out, err = procs.run([str(tmp_path / "missing")], 30)
    assert (rc, out) == (procs.NOT_RUN, "") and err.startswith("cannot run %s: " % (tmp_path / "missing"))


def test_a_program_past_its_time_is_stopped_with_what_it_started(tmp_path):
    pids = tmp_path / "pids"
    code = ("import subprocess, sys, time; c = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(60)']); open(%r, 'w').write(str(c.pid)); print('half'); "
            "sys.stdout.flush(); time.sleep(60)" % str(pids))
    assert procs.run(_python(code), 1) == (procs.TIMED_OUT, "", "no answer within 1 s")
    assert _gone(int(pids.read_text())), "the program's own child is still running"


def test_waiting_past_the_time_stops_the_program_and_says_none():
    proc = procs.start(_python("import time; time.sleep(60)"))
    assert procs.wait(proc, 0.2) is None and proc.returncode is not None


def _small_files():
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_started_program_runs_in_a_session_of_its_own_with_the_environment_and_limits_given(tmp_path):
    code = ("import os, resource; print(os.environ['X'], resource.getrlimit(resource.RLIMIT_FSIZE)[0], "
            "os.getsid(0) == os.getpid())")
    with (tmp_path / "out").open("w+b") as out:
        assert procs.wait(procs.start(_python(code), out, env={"X": "y"}, limits=_small_files), 30) == 0
        out.seek(0)
        assert out.read() == b"y 4096 True\n"
