# beonet — the two commands a new user types are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
TOPOLOGY ?= topologies/routed-mesh.yml
export PATH := $(abspath $(BIN)):$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)

.PHONY: setup test unit lint schema bench demo dry-run clean

setup: $(VENV)/.done

$(VENV)/.done: requirements.txt pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -r requirements.txt
	$(BIN)/pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

test: setup unit lint

unit: setup
	$(BIN)/pytest

lint: setup
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production --offline -q

schema: setup
	$(BIN)/beonet schema > topologies/beonet.schema.json

bench: setup
	$(BIN)/python bench/compile_bench.py

demo: setup dry-run

dry-run: setup
	$(BIN)/beonet routes $(TOPOLOGY)

clean:
	rm -rf $(VENV) .pytest_cache
