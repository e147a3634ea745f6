#!/usr/bin/env bash
# Run Molecule scenarios one after another; print each one's time and result,
# the lines a scenario reports as measured, the tail of a failing one's log,
# and fail if any failed. VENV: the venv whose Molecule and Ansible run them (.venv).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="$PWD/${VENV:-.venv}/bin:$PATH" ANSIBLE_NOCOLOR=1 NO_COLOR=1 PY_COLORS=0
log=$(mktemp -d /tmp/beonet-molecule.XXXXXX)
failed=()
for s in "$@"; do
  start=$(date +%s)
  if molecule test -s "$s" >"$log/$s.log" 2>&1; then
    result=passed
  else
    result=FAILED; failed+=("$s")
    grep -E 'fatal:|FAILED!|ERROR|msg' "$log/$s.log" | tail -20
  fi
  printf 'molecule %-18s %s in %ss\n' "$s" "$result" "$(( $(date +%s) - start ))"
  # what a scenario measured (its report lines)
  grep -o "beonet-measured: [^'\"]*" "$log/$s.log" | sed 's/^beonet-measured: /    /'
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "molecule: ${#failed[@]} of $# scenarios failed (${failed[*]}); logs in $log"
  exit 1
fi
rm -rf "$log"
echo "molecule: $# scenarios passed"
