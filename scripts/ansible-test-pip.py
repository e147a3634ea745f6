"""Pip bootstrap for ansible-test's virtual environments, from Python's own ensurepip.

ansible-test creates its virtual environments without pip and runs a pip bootstrap
script that it would download from its project's file host into
~/.ansible/test/cache/get_pip_<version>.py. scripts/collection-sanity.sh puts
this file there first, so nothing is fetched from outside the package index.
Called like the
original, with pip install arguments (`--disable-pip-version-check pip==X`,
optionally --no-setuptools and --no-wheel): installs the bundled pip with
ensurepip, then the requested packages from the package index.
"""

import subprocess
import sys

OWN_OPTIONS = {"--no-setuptools", "--no-wheel"}


def main() -> int:
    subprocess.run([sys.executable, "-m", "ensurepip", "--default-pip"], check=True,
                   stdout=subprocess.DEVNULL)
    args = [a for a in sys.argv[1:] if a not in OWN_OPTIONS]
    return subprocess.run([sys.executable, "-m", "pip", "install", *args], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
