"""scripts/lab-scale.sh refuses settings that are not what it takes before it makes anything."""

import os
import subprocess

import pytest
from conftest import ROOT, needs_host

runs_bash = needs_host("runs scripts/lab-scale.sh's checks with the machine's bash (nothing made)", "bash")


def _check(**env):
    run = dict(os.environ, SCALE_CHECK_ONLY="1", **env)
    return subprocess.run(["bash", str(ROOT / "scripts" / "lab-scale.sh")], env=run, capture_output=True,
                          text=True, check=False, timeout=30)


@runs_bash
@pytest.mark.parametrize(("key", "value"), [
    ("NODES", "7"), ("NODES", "abc"), ("NODES", "1e3"), ("NODES", "128\n"), ("NODES", "../128"),
    ("NODES", "999999"), ("NODES", "nan"),
    ("SCALE_SERIAL", "0"), ("SCALE_SERIAL", "25%"), ("SCALE_SERIAL", "-1"), ("SCALE_SERIAL", "1/2"),
    ("SCALE_SERIAL", "4\nrm"), ("SCALE_SERIAL", "1234567"), ("SCALE_SERIAL", "NaN"), ("SCALE_SERIAL", ".."),
])
def test_lab_scale_refuses_a_setting_it_cannot_take(key, value):
    done = _check(**{key: value})
    assert done.returncode == 2 and ("lab-scale: %s must be" % key) in done.stderr


@runs_bash
def test_lab_scale_takes_its_settings():
    assert _check(NODES="1024", SCALE_SERIAL="256").returncode == 0
    assert _check().returncode == 0
