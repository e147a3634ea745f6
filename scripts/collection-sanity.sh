#!/usr/bin/env bash
# ansible-test sanity on the built collection beonet.cluster: every sanity test,
# each in ansible-test's own virtual environment (pip-installed on first use and
# cached in ~/.ansible/test). Zero findings and no ignore file.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
bin=$root/${VENV:-.venv}/bin
python_version=$("$bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
# Outside this git work tree: inside it, ansible-test would list only git's files
# (build/ is ignored) and skip every target.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$work/sanity.log
collection=$("$bin/python" scripts/build-collection.py --out "$work" --no-tarball)

sanity() {
  (cd "$collection" && "$bin/ansible-test" sanity --venv --python "$python_version" --color no "$@") 2>&1 \
    | tee "$log"
  return "${PIPESTATUS[0]}"
}

start=$SECONDS
if ! sanity "$@"; then
  # ansible-test fetches its pip bootstrap from ci-files.testing.ansible.com; where
  # that fails, put the ensurepip-based stand-in where it looks and run again.
  cache=$(sed -n 's/^The bootstrap script can be manually downloaded and saved to: //p' "$log")
  [[ -n $cache && ! -e $cache ]] || exit 1
  echo "collection-sanity: pip bootstrap from ensurepip at $cache"
  mkdir -p "$(dirname "$cache")"
  cp scripts/ansible-test-pip.py "$cache"
  sanity "$@"
fi
echo "collection-sanity: ansible-test sanity clean in $((SECONDS - start)) s"
