#!/usr/bin/env bash
# End-to-end lab test (CI): for each topology bring the Docker lab up, apply
# site.yml, apply it again expecting 0 changed, verify every pair, and take the
# lab down. bonded-dual-net must be refused before any
# change (this kernel has no bonding). Prints timings. verify.yml proves every pair
# from the live state and traceroutes a sample.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/.venv/bin:$PATH" ANSIBLE_CONFIG="$PWD/ansible.cfg" ANSIBLE_NOCOLOR=1
bash scripts/docker-up.sh
bash scripts/build-image.sh
TOPOLOGIES=${LAB_TOPOLOGIES:-"routed-mesh metanode-testbed switch-tree single-net"}
log=$(mktemp -d /tmp/beonet-lab-test.XXXXXX)
fail=0
total=0
stamp() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
for t in $TOPOLOGIES; do
  total=$((total + 1))
  topo=topologies/$t.yml inv=.lab/beonet-$t/inventory.yml
  t0=$(stamp); beonet lab up "$topo" >"$log/$t.up" 2>&1 || { cat "$log/$t.up"; fail=1; continue; }
  t1=$(stamp); ansible-playbook -i "$inv" playbooks/site.yml >"$log/$t.site1" 2>&1 || { tail -30 "$log/$t.site1"; fail=1; }
  t2=$(stamp); ansible-playbook -i "$inv" playbooks/site.yml >"$log/$t.site2" 2>&1 || { tail -30 "$log/$t.site2"; fail=1; }
  t3=$(stamp); ansible-playbook -i "$inv" playbooks/verify.yml >"$log/$t.verify" 2>&1 || { tail -40 "$log/$t.verify"; fail=1; }
  t4=$(stamp)
  changed=$(grep -E '^\S+ +: ok=' "$log/$t.site2" | grep -vc 'changed=0' || true)
  [ "$changed" = 0 ] || { echo "FAIL $t: second site.yml run changed $changed hosts"; fail=1; }
  traced=$(grep -oE '[0-9]* pairs (proven from the live state|traced) in [0-9.]* s[^;]*; [0-9]* mismatches' \
    "$log/$t.verify" | paste -sd ' ' - || true)
  [ -n "$traced" ] || traced="no report"
  beonet lab down "$topo" >/dev/null
  # Down works from .lab/NAME/state.json and leaves neither containers nor the state folder.
  if [ -e ".lab/beonet-$t" ] || [ -n "$(docker ps -aq --filter "label=beonet.lab=beonet-$t")" ]; then
    echo "FAIL $t: lab down left containers or .lab/beonet-$t"; fail=1
  fi
  printf '%-18s up %5ss  site %5ss  again %5ss (%s hosts changed)  verify %5ss: %s\n' "$t" \
    "$(secs "$t0" "$t1")" "$(secs "$t1" "$t2")" "$(secs "$t2" "$t3")" "$changed" \
    "$(secs "$t3" "$t4")" "$traced"
done
# bonded-dual-net: refused before any change, with a clear message.
topo=topologies/bonded-dual-net.yml inv=.lab/beonet-bonded-dual-net/inventory.yml
beonet lab up "$topo" >"$log/bond.up" 2>&1
if ansible-playbook -i "$inv" playbooks/site.yml >"$log/bond.site" 2>&1; then
  echo "FAIL bonded-dual-net: site.yml succeeded on a kernel without bonding"; fail=1
elif ! grep -q "this kernel has no bonding driver" "$log/bond.site"; then
  tail -20 "$log/bond.site"; echo "FAIL bonded-dual-net: no clear bonding message"; fail=1
elif docker exec beonet-bonded-dual-net-node01 test -e /etc/systemd/network/60-beonet-bond0.netdev; then
  echo "FAIL bonded-dual-net: files were written before the refusal"; fail=1
else
  echo "bonded-dual-net    refused before any change: this kernel has no bonding driver"
fi
beonet lab down "$topo" >/dev/null
total=$((total + 1))
rm -rf "$log"
if [ "$fail" = 0 ]; then echo "lab: $total passed, 0 failed"; else echo "lab: FAILED"; fi
exit "$fail"
