"""The guard of tests/hermetic.py: a unit test that reads the controller fails."""

import os
import subprocess
import sys
import textwrap

import hermetic
import pytest
from conftest import ROOT

from beonet.agent import apply, discover, netmanager
from beonet.agent.files import read_text
from beonet.outputs import drawing


def test_a_probe_of_the_controllers_network_managers_is_stopped():
    with hermetic.caught() as found:
        netmanager.probe("/")
    assert found and found[0].endswith("(from module_utils/beonet/agent/netmanager.py)")
    assert "/etc" in found[0]


@pytest.mark.parametrize("read,what", [
    (lambda: netmanager.unit_state("/", "NetworkManager.service"), "os.lstat /etc"),
    (lambda: discover.candidates(discover.SYS, [], False, []), "os.listdir /sys/class/net"),
    (lambda: discover.default_route_nics(), "open /proc/net/route"),
    (lambda: read_text(apply.FORWARD), "open /proc/sys/net/ipv4/ip_forward"),
    (lambda: subprocess.run(["ip", "-j", "link"], capture_output=True, check=False), "runs ip"),
    (drawing.graphviz, "shutil.which('dot')"),
])
def test_reads_of_etc_proc_sys_and_installed_programs_are_stopped(read, what):
    with hermetic.caught() as found:
        read()
    assert len(found) == 1 and what in found[0], found


def test_what_the_libraries_and_the_venv_read_is_theirs(tmp_path):
    """A library's read of /etc (a file outside beonet and the tests), the venv's own
    programs and a stand-in a test wrote into its folder are not the test's."""
    library = compile("open('/etc/hostname').close() if __import__('os').path.exists('/etc/hostname') "
                      "else None", "/x/site-packages/somelib/__init__.py", "exec")
    stub = tmp_path / "stub"
    stub.write_text("#!%s\nprint('stub')\n" % sys.executable)
    stub.chmod(0o755)
    with hermetic.caught() as found:
        exec(library, {})
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible"), "--version"],
                       capture_output=True, check=True)
        subprocess.run([str(stub)], capture_output=True, check=True)
        netmanager.probe(str(tmp_path))
    assert found == []


def test_a_test_fails_even_where_the_code_swallows_the_read(tmp_path):
    """pytest on a test whose code catches every exception around a probe of the
    controller, and on a host test with its reason: the first fails, naming the read;
    the second passes; a host marker without a reason is refused."""
    (tmp_path / "conftest.py").write_text(textwrap.dedent("""
        import importlib.util, sys
        sys.path.insert(0, %r)
        spec = importlib.util.spec_from_file_location("beonet_conftest", %r)
        beonet_conftest = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(beonet_conftest)
        globals().update({k: v for k, v in vars(beonet_conftest).items() if k.startswith("pytest_")})
        """) % (str(ROOT / "tests"), str(ROOT / "tests" / "conftest.py")))
    (tmp_path / "test_reads.py").write_text(textwrap.dedent("""
        import pytest
        from beonet.agent import netmanager

        def test_swallowed():
            try:
                netmanager.probe("/")
            except Exception:
                pass

        @pytest.mark.host("reads the machine's units on purpose")
        def test_marked():
            netmanager.probe("/")

        @pytest.mark.host
        def test_marked_without_reason():
            pass
        """))
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rfE",
                          "--rootdir", str(tmp_path), str(tmp_path)],
                         cwd=tmp_path, capture_output=True, text=True, check=False)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "FAILED test_reads.py::test_swallowed" in res.stdout
    assert "(from module_utils/beonet/agent/netmanager.py)" in res.stdout
    assert "ERROR test_reads.py::test_marked_without_reason" in res.stdout
    assert "@pytest.mark.host needs a reason" in res.stdout
    assert "1 failed, 1 passed, 1 error" in res.stdout
