#!/usr/bin/env bash
# beonet with the Ansible users install today, beside the pinned .venv of `make setup`:
# a venv of its own (NEWEST_VENV, .venv-newest) on the newest Python this machine has,
# with the newest ansible and ansible-core the package index offers for that Python
# (the rest as pinned in requirements.txt), then in it: ansible-test sanity of the
# collection, the unit tests that name Ansible and one Molecule scenario on the Docker lab
# (NEWEST_SCENARIO, single-net: converge, idempotence and verify run the modules).
# A break with a new Ansible shows here before a user meets it.
#   bash scripts/newest-ansible.sh           set the venv up, then run the three checks
#   bash scripts/newest-ansible.sh setup     only install the venv's packages (CI does it
#                                            ahead, while the tests run: beonet's own
#                                            editable install, which writes into the
#                                            checkout, waits for the checks)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NEWEST_VENV:-.venv-newest}

version='import sys; print("%d.%d.%d" % sys.version_info[:3])'

# Every Python 3 interpreter found: on PATH, pyenv's, the system's; the newest that
# runs and has venv wins (a pyenv shim of a version not selected fails and is skipped).
newest_python() {
  local candidates=() p
  for p in python3 python3.{11..20}; do
    command -v "$p" >/dev/null && candidates+=("$(command -v "$p")")
  done
  candidates+=("${PYENV_ROOT:-$HOME/.pyenv}"/versions/*/bin/python3 /usr/bin/python3.* /usr/local/bin/python3.*)
  for p in "${candidates[@]}"; do
    [[ -x $p && $p != *-config ]] || continue
    "$p" -c 'import sys, venv, ensurepip; print("%d %d %d" % sys.version_info[:3], sys.executable)' \
      2>/dev/null || true
  done | grep -E '^[0-9]+ [0-9]+ [0-9]+ /' | sort -k1,1n -k2,2n -k3,3n | tail -1 | cut -d' ' -f4-
}

packages() {
  local python
  python=$(newest_python)
  [ -n "$python" ] || { echo "newest-ansible: no Python 3 with venv found" >&2; exit 1; }
  # a venv left by an older newest Python is made anew
  if [ "$("$venv/bin/python" -c "$version" 2>/dev/null)" != "$("$python" -c "$version")" ]; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
  fi
  grep -v -E '^(ansible|ansible-core)==' requirements.txt >"$venv/requirements-pinned.txt"
  "$venv/bin/pip" install -q --disable-pip-version-check -r "$venv/requirements-pinned.txt" \
    --upgrade ansible ansible-core
}

packages
[ "${1:-}" = setup ] && exit 0
"$venv/bin/pip" install -q --disable-pip-version-check --no-deps -e .
"$venv/bin/python" - <<'PY'
import sys
from importlib.metadata import version
print("newest-ansible: Python %d.%d.%d, ansible %s, ansible-core %s"
      % (sys.version_info[:3] + (version("ansible"), version("ansible-core"))))
PY
export PATH="$PWD/$venv/bin:$PATH"
VENV=$venv bash scripts/collection-sanity.sh
# The unit tests that name Ansible (modules, action plugins, roles, playbooks, inventories):
# the pure compiler's tests ran on the pinned venv already.
mapfile -t ansible_tests < <(grep -l -i ansible tests/test_*.py)
"$venv/bin/pytest" -q -n auto "${ansible_tests[@]}"
VENV=$venv bash scripts/molecule.sh "${NEWEST_SCENARIO:-single-net}"
