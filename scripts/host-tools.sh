#!/usr/bin/env bash
# Install (if absent) the controller's host tools from the machine's Debian
# archive: Graphviz (`beonet graph --format svg|png`), shellcheck (`make lint`),
# nftables (`make test`'s network-namespace tests load the plan's forward filter) and
# Chromium and its WebDriver (`make test`'s browser test of `beonet view`).
# Idempotent; `make setup` runs it. Without root it only says what is missing.
set -euo pipefail
need=()
command -v dot >/dev/null || need+=(graphviz)
command -v shellcheck >/dev/null || need+=(shellcheck)
command -v nft >/dev/null || [ -x /usr/sbin/nft ] || need+=(nftables)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
  echo "beonet: please install ${need[*]} (needed by 'beonet graph --format svg|png', 'make lint' and 'make test')" >&2
  exit 0
fi
echo "beonet: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
