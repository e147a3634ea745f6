# beonet — the two commands a new user types are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOPOLOGY ?= topologies/routed-mesh.yml
export PATH := $(abspath $(BIN)):$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)

.PHONY: setup test unit test-hermetic lint molecule schema bench demo mpi-demo dry-run lab-up lab-down lab-test lab-timing lab-scale clean

setup: $(VENV)/.done

$(VENV)/.done: requirements.txt pyproject.toml
	bash scripts/host-tools.sh
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

# Everything: unit tests, lint, then every Molecule scenario on the Docker lab.
test: setup unit lint collection-sanity molecule

# The suite on every core (pytest-xdist); `pytest tests/FILE.py` runs one file alone.
unit: setup
	$(BIN)/pytest -n auto

# No unit test reads the controller: the whole suite in two unprivileged containers of a
# Debian controller, with NetworkManager, netplan and ifupdown and without (docs/architecture.md).
test-hermetic: setup
	bash scripts/hermetic-test.sh

# Zero findings: ruff (lint, import order), mypy (every Python file but the tests),
# shellcheck (every script), yamllint and ansible-lint (production profile).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy
	shellcheck scripts/*.sh .ci/run
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production --offline -q

# Molecule scenarios on the embedded Docker lab (create = `beonet lab up`,
# converge = site.yml, idempotence, verify = verify.yml + refusals, destroy).
MOLECULE_SCENARIOS ?= links single-net routed-mesh switch-tree bonded-dual-net cabling testbed rollback
# Scenarios kept out of make test (each proves what another in it proves too): failover
# (routed-mesh runs its dead-gateway playbooks, testbed its gateway choice and every trace),
# vm-mesh (vm-backends reboots networkd and NetworkManager nodes with forwarded routes),
# vm-bonded (vm-backends discovers bond channels, writes bonds with every backend, reboots
# them and cuts a bond member's link). testbed also measures a cable, a LAN and a gateway
# with FRR (docs/frr.md).
EXTENDED_SCENARIOS ?= failover vm-mesh vm-bonded
molecule: setup
	bash scripts/docker-up.sh
	bash scripts/build-image.sh
	bash scripts/molecule.sh $(MOLECULE_SCENARIOS)

schema: setup
	$(BIN)/beonet schema > topologies/beonet.schema.json

# Compile performance: whole-process `beonet build`/`metrics` timings, each run
# beside its baseline commit's (docs/benchmarks.md), peak RSS and output size,
# then the checks the unit tests do not time (hostile inputs, discovery's CPU,
# tokex's deadline); exits 1 on a miss. BENCH_TOLERANCE=1.5 fails only beyond 1.5
# times a baseline or target (CI).
BENCH_TOLERANCE ?= 1
bench: setup
	$(BIN)/python scripts/compile_timing.py --tolerance $(BENCH_TOLERANCE)

LAB_INVENTORY = .lab/beonet-$(basename $(notdir $(TOPOLOGY)))/inventory.yml

# The main job on the embedded Docker lab: engine, the image the topology needs (with
# routing.engine frr, the one with FRR), lab, apply, prove.
demo: setup
	bash scripts/docker-up.sh
	variant=$$($(BIN)/beonet lab image $(TOPOLOGY)) && bash scripts/build-image.sh "$$variant"
	$(BIN)/beonet lab up $(TOPOLOGY)
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/site.yml
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/dry_run.yml -e beonet_dry_run_live=true
	$(BIN)/ansible-playbook -i $(LAB_INVENTORY) playbooks/verify.yml
	@echo "beonet: the lab stays up; 'make lab-down' removes it"

# Open MPI on the routed mesh's Docker lab: the node image with Open MPI, the lab,
# site.yml, playbooks/mpi.yml (results/routed-mesh/mpi-*/), the lab down.
MPI_TOPOLOGY ?= topologies/routed-mesh.yml
mpi-demo: setup
	bash scripts/docker-up.sh
	bash scripts/build-image.sh mpi
	BEONET_IMAGE_VARIANT=mpi $(BIN)/beonet lab up $(MPI_TOPOLOGY) --name mpi-demo
	$(BIN)/ansible-playbook -i .lab/mpi-demo/inventory.yml playbooks/site.yml
	$(BIN)/ansible-playbook -i .lab/mpi-demo/inventory.yml playbooks/mpi.yml
	$(BIN)/beonet lab down $(MPI_TOPOLOGY) --name mpi-demo

dry-run: setup
	$(BIN)/beonet routes $(TOPOLOGY)

lab-up: setup
	bash scripts/docker-up.sh
	variant=$$($(BIN)/beonet lab image $(TOPOLOGY)) && bash scripts/build-image.sh "$$variant"
	$(BIN)/beonet lab up $(TOPOLOGY)

lab-down: setup
	$(BIN)/beonet lab down $(TOPOLOGY)

lab-test: setup
	bash scripts/lab-test.sh

# Timings of the 36-node testbed lab (up, site.yml twice, verify all pairs).
lab-timing: setup
	LAB_TOPOLOGIES=metanode-testbed bash scripts/lab-test.sh

# At scale: a meta-graph lab of about NODES containers (128: the shipped
# lab-metagraph-128.yml), site.yml twice, discover.yml, verify.yml, each time against
# its target, one summary line (docs/benchmarks.md).
NODES ?= 128
lab-scale: setup
	NODES=$(NODES) bash scripts/lab-scale.sh

clean:
	rm -rf $(VENV) .pytest_cache

# --- network benchmarks (playbooks/benchmark.yml) ----------------------------
.PHONY: benchmark-demo benchmark-interrupt-test molecule-extended slurm-topology-check
# A short network benchmark on the Docker lab: its own labs (bench-demo-mesh,
# bench-demo-tree), site.yml, benchmark.yml with small counts, labs down; results in results/.
benchmark-demo: setup
	bash scripts/benchmark-demo.sh

# Ctrl-C during a benchmark, then the cleanup play: no tokex/iperf3 left on any node.
benchmark-interrupt-test: setup
	bash scripts/benchmark-interrupt-test.sh

# --- VM lab: QEMU VMs with their own Debian kernel ---------------------------
VM_TOPOLOGY ?= topologies/bonded-dual-net.yml
VM_NAME ?= vm-demo
VM_INVENTORY = .lab/$(VM_NAME)/inventory.yml
.PHONY: vm-image vm-test vm-demo vm-down

vm-image: setup
	bash scripts/build-vm-image.sh all

# Molecule on the VM lab: backends-chain on 4 VMs, one per network manager (discovery,
# bonds, forwarded routes, idempotence, verify, all rebooted, a bond member's link cut).
vm-test: setup
	bash scripts/molecule.sh vm-backends

# topology.yaml loaded by a real slurmctld of Slurm 25.05 or later (Debian's next release
# in a container): every switch with the plan's nodes, on four topology families.
slurm-topology-check: setup
	bash scripts/slurm-topology-check.sh

# beonet's frr.conf read by FRR's own parser (vtysh --dryrun, Debian's FRR in the node
# image's frr variant): every node of every shipped topology compiled with routing.engine
# frr, a sample of nodes above 500; the FRR testbed also with IPv6 beside IPv4 and alone.
.PHONY: frr-check
frr-check: setup
	bash scripts/frr-check.sh

# The scenarios make test leaves out (EXTENDED_SCENARIOS), Docker and VM.
molecule-extended: setup
	bash scripts/docker-up.sh
	bash scripts/build-image.sh
	bash scripts/molecule.sh $(EXTENDED_SCENARIOS)

# Manual: the full 16-node Beowulf (or VM_TOPOLOGY) on VMs; stays up ('make vm-down').
vm-demo: vm-image
	$(BIN)/beonet lab up --provider vm $(VM_TOPOLOGY) --name $(VM_NAME)
	$(BIN)/ansible-playbook -i $(VM_INVENTORY) playbooks/site.yml
	$(BIN)/ansible-playbook -i $(VM_INVENTORY) playbooks/verify.yml
	@echo "beonet: the VM lab stays up; 'make vm-down' removes it"

vm-down: setup
	$(BIN)/beonet lab down --provider vm $(VM_TOPOLOGY) --name $(VM_NAME)

# --- VM lab network benchmark: bonded gain over the real bond ----------------
# Token exchange over a 2-channel balance-rr bond vs the same bond with one
# member down, 10 Mbit/s per channel, on 4 QEMU VMs; the lab is taken down after.
.PHONY: vm-benchmark
vm-benchmark: setup
	bash scripts/vm-benchmark.sh

# --- the papers' figures from the labs (results/figures/, see docs/figures.md) ---
.PHONY: figure-latency figure-mesh figure-bonded
# SC98's latency by path class (Table 1) on 6 VMs with SC98's per-hop delays
# emulated (netem), measured with and without them; the lab is taken down after.
figure-latency: setup
	bash scripts/figure-latency.sh

# The 1996 paper's token exchange (its Figure 7) on the Docker lab: a single
# shared 10 Mbit/s net and the 4x4 software-routed mesh, 1 to 7 pairs, 8 KB tokens.
figure-mesh: setup
	bash scripts/figure-mesh.sh

# The 1995/1996 papers' token exchange on the channel-bonded dual net: 14 VMs,
# two shared 10 Mbit/s channels bonded round robin against one, 1 to 7 pairs.
figure-bonded: setup
	bash scripts/figure-bonded.sh

# --- Ansible collection beonet.cluster ---------------------------------------
.PHONY: collection collection-test collection-sanity
# The collection in build/collection/ansible_collections/beonet/cluster and its
# tarball build/collection/beonet-cluster-VERSION.tar.gz.
collection: setup
	$(BIN)/python scripts/build-collection.py --out build/collection

# Tarball installed into a scratch project, dry run by FQCN, ansible-doc of every
# module and role, the Python wheel's metadata (also part of `make unit`).
collection-test: setup
	$(BIN)/pytest tests/test_collection.py

# ansible-test sanity on the built collection, zero findings, no ignore file.
collection-sanity: setup
	bash scripts/collection-sanity.sh

# The same with the Ansible users install today: sanity, the unit suite and the single-net
# scenario in a venv of the newest ansible-core on the newest Python here (.venv-newest).
.PHONY: newest-ansible
newest-ansible: setup
	bash scripts/newest-ansible.sh
