#!/usr/bin/env bash
# FRR's own parser on beonet's frr.conf: every shipped topology compiled with
# routing.engine frr, each node's frr.conf (a sample of nodes above 500) read by
# `vtysh --dryrun --inputfile` in one container of the FRR node image, no network;
# the FRR testbed also with IPv6 beside IPv4 and alone (--ipv6 dual|only: named ones).
#   scripts/frr-check.sh [TOPOLOGY...] [--ipv6 dual|only]... [--sample N] [--huge N]
# (module_utils/beonet/labs/frrcheck.py; exit status 1 on any refusal).
# BEONET_FRR_CHECK_VARIANT: the image variant to run it in (default frr; mpi has FRR too).
set -euo pipefail
cd "$(dirname "$0")/.."
variant=${BEONET_FRR_CHECK_VARIANT:-frr}
bash scripts/docker-up.sh >/dev/null
bash scripts/build-image.sh "$variant"
image=$(PYTHONPATH=$PWD/module_utils .venv/bin/python -c \
  "import sys; from beonet.labs.docker import variant_image; print(variant_image(sys.argv[1]))" "$variant")
PYTHONPATH=$PWD/module_utils exec .venv/bin/python -m beonet.labs.frrcheck --image "$image" "$@"
