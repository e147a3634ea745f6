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

# ansible-test bootstraps pip in its environments with a script it would fetch from
# its project's file host; nothing is fetched from outside the package index here:
# the ensurepip-based stand-in goes where ansible-test looks for its cached copy.
pip_version=$("$bin/python" - <<'PY'
import re, pathlib, ansible_test
src = pathlib.Path(ansible_test.__file__).parent / "_internal" / "python_requirements.py"
print(re.search(r"pip='([0-9.]+)'", src.read_text()).group(1))
PY
)
cache=$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py
mkdir -p "$(dirname "$cache")"
cp scripts/ansible-test-pip.py "$cache"

start=$SECONDS
sanity "$@"
echo "collection-sanity: ansible-test sanity clean in $((SECONDS - start)) s"
