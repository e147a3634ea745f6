#!/usr/bin/env bash
# Run Molecule scenarios one after another; print each one's time and result,
# the time of each of its stages and of its slowest plays, the lines a scenario
# reports as measured, the tail of a failing one's log, and fail if any failed.
# VENV: the venv whose Molecule and Ansible run them (.venv).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export PATH="$PWD/${VENV:-.venv}/bin:$PATH" ANSIBLE_NOCOLOR=1 NO_COLOR=1 PY_COLORS=0
log=$(mktemp -d /tmp/beonet-molecule.XXXXXX)
failed=()
# Each line of the log starts with the second it was written (bash's own clock).
stamp() { local line; while IFS= read -r line; do printf '%(%s)T %s\n' -1 "$line"; done; }
# The seconds each stage (create, converge, ...) and the five slowest plays took.
timings() {
  awk '
    { last = $1 }
    function close_play(t) { if (play != "") plays[play] += t - pstart; play = "" }
    function close_stage(t, note) {
      close_play(t); if (stage != "") stages = stages sprintf(" %s %ds%s", stage, t - sstart, note); stage = "" }
    / INFO +\[[^]]*> [a-z_]+\] Executing$/ {
      close_stage($1, ""); stage = $0; sub(/.*> /, "", stage); sub(/\].*/, "", stage); sstart = $1 }
    / INFO +\[[^]]*\] Executed: / { close_stage($1, "") }
    / PLAY \[/ { close_play($1); play = $0; sub(/^[0-9]+ PLAY \[/, "", play)
      sub(/\] \**$/, "", play); pstart = $1 }
    END {
      close_stage(last, " (unfinished)")
      print "    stages:" stages
      n = 0; for (p in plays) order[++n] = p
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
        if (plays[order[j]] > plays[order[i]]) { t = order[i]; order[i] = order[j]; order[j] = t }
      for (i = 1; i <= n && i <= 5; i++) printf "    play %ds: %s\n", plays[order[i]], substr(order[i], 1, 90)
    }' "$1"
}
for s in "$@"; do
  start=$(date +%s)
  molecule test -s "$s" 2>&1 | stamp >"$log/$s.log"
  if [ "${PIPESTATUS[0]}" -eq 0 ]; then
    result=passed
  else
    result=FAILED; failed+=("$s")
    grep -E 'fatal:|FAILED!|ERROR|msg' "$log/$s.log" | tail -20
  fi
  printf 'molecule %-18s %s in %ss\n' "$s" "$result" "$(( $(date +%s) - start ))"
  timings "$log/$s.log"
  # what a scenario measured (its report lines)
  grep -o "beonet-measured: [^'\"]*" "$log/$s.log" | sed 's/^beonet-measured: /    /'
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "molecule: ${#failed[@]} of $# scenarios failed (${failed[*]}); logs in $log"
  exit 1
fi
rm -rf "$log"
echo "molecule: $# scenarios passed"
