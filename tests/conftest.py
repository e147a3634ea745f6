import os
import pathlib
import subprocess
import sys

import hermetic
import hypothesis
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def ansible_render(template: str, variables: dict) -> object:
    """TEMPLATE (a task's Jinja text) as ansible-playbook renders it on localhost with
    VARIABLES (the project's ansible.cfg; the json callback reads the result)."""
    import json

    import yaml
    play = [{"hosts": "localhost", "gather_facts": False, "vars": variables,
             "tasks": [{"ansible.builtin.debug": {"msg": template}}]}]
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json")
    res = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                          "localhost,", "-c", "local", "/dev/stdin"], cwd=ROOT, env=env,
                         input=yaml.safe_dump(play), capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stdout + res.stderr
    return json.loads(res.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]["msg"]
sys.path.insert(0, str(ROOT / "module_utils"))
sys.path.insert(0, str(ROOT / "scripts"))        # make bench's modules (bench_checks)
hermetic.install()
needs_host = hermetic.needs_host  # @needs_host("why", "program", netns=True): a test needing the machine


def on_ci(environ=os.environ):
    """True on a CI runner (CI set, as GitHub, GitLab and .ci/run set it, to anything but
    an empty string, 0 or false)."""
    return environ.get("CI", "").strip().lower() not in ("", "0", "false")


def regenerating(environ=os.environ):
    """BEONET_REGEN=1: golden files are rewritten instead of compared. Refused on CI,
    where a rewrite would make every golden test pass whatever the output."""
    if environ.get("BEONET_REGEN") != "1":
        return False
    if on_ci(environ):
        raise pytest.UsageError("BEONET_REGEN=1 with CI=%s: golden files are compared on CI, "
                                "never rewritten" % environ.get("CI"))
    return True


def golden(path, text):
    """Compare text with a golden file; BEONET_REGEN=1 rewrites it instead (not on CI)."""
    path = pathlib.Path(path)
    if regenerating():
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), "missing golden file %s (run BEONET_REGEN=1 pytest)" % path
    assert text == path.read_text(encoding="utf-8"), "differs from %s" % path


def local_play(play):
    """ansible-playbook of this Python on localhost (the controller side); the finished process."""
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"),
                           "-i", "localhost,", "-c", "local", "-e",
                           "ansible_python_interpreter=%s" % sys.executable, str(play)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)


_HOST_SYSCTLS = ("/proc/sys/net/ipv4/ip_forward", "/proc/sys/net/ipv4/fib_multipath_use_neigh",
                 "/proc/sys/net/ipv4/fib_multipath_hash_policy")


@hermetic.reads_the_host
def _host_sysctls():
    out = {}
    for path in _HOST_SYSCTLS:
        try:
            with open(path, encoding="utf-8") as fh:
                out[path] = fh.read()
        except OSError:
            out[path] = None
    return out


@pytest.fixture(autouse=True, scope="session")
def _the_host_kernel_is_left_alone():
    """No test writes the test machine's own /proc/sys (the agent's sysctls go to
    simulated nodes or network namespaces)."""
    before = _host_sysctls()
    yield
    assert _host_sysctls() == before, "a test changed the host's sysctls"


def pytest_configure(config):
    regenerating()                  # BEONET_REGEN=1 on CI stops the run before any test
    # Hypothesis takes CI=true for its "ci" profile (the same examples every run); the
    # suite draws new ones on CI as elsewhere
    hypothesis.settings.load_profile("default")
    config.addinivalue_line("markers", "host(reason): the test needs the machine itself (a network "
                                       "namespace, a program the venv does not provide); the guard "
                                       "of tests/hermetic.py leaves it alone")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    return (yield from hermetic.guard_phase(item, setup=True))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    return (yield from hermetic.guard_phase(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    return (yield from hermetic.guard_phase(item))


SKIPPED_ON_CI = "skipped on CI, where every test must run: "


def fail_a_skip_on_ci(report, environ=os.environ):
    """A skipped test's report turned into a failure on CI (CI=true: root, network
    namespaces, cc and dot are there, so a skip means a test lost); others as they are."""
    if report.skipped and on_ci(environ) and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = SKIPPED_ON_CI + reason
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    return fail_a_skip_on_ci((yield))


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector):
    return fail_a_skip_on_ci((yield))


def pytest_terminal_summary(terminalreporter):
    """The number of skipped tests, always; on CI the skips that failed the run."""
    stats = terminalreporter.stats
    lost = [r for r in stats.get("failed", []) + stats.get("error", [])
            if str(getattr(r, "longrepr", "")).startswith(SKIPPED_ON_CI)]
    skipped = len([r for r in stats.get("skipped", []) if not hasattr(r, "wasxfail")])
    terminalreporter.write_line("beonet: %d test(s) skipped%s" % (
        skipped + len(lost), " (CI: each one failed the run)" if lost else ""))
