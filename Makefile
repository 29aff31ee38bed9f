# pisanet developer commands. `make help` lists them.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Experiment folders `make lint` type-checks, one mypy run each (every folder
# has its own `run` module).
MYPY_EXPERIMENTS := hula p4te dbb p4qcn p4qos soak crosscheck
SCENARIO ?= fat_tree_k8

.PHONY: help setup pgo test test-rust test-python bench lint fmt demo clean headers wheel-check

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: ## Install toolchains and build the Python package into .venv
	bash scripts/setup.sh

pgo: ## Rebuild the native module with profile-guided optimisation (setup does it; PISANET_PGO=0 make setup does not)
	bash scripts/pgo.sh --force

test: ## Set up, then run the Rust and Python tests (what CI runs)
	bash scripts/test.sh

test-rust: ## Rust tests only (default members, release profile)
	source scripts/env.sh && find_rust && cargo test --release

test-python: setup ## Python tests only
	$(PY) -m pytest -q tests/python

bench: setup ## Simulator speed on a standard scenario (SCENARIO=fat_tree_k8|fat_tree_k16)
	$(VENV)/bin/pisanet bench --scenario $(SCENARIO)

lint: setup ## clippy -D warnings, rustfmt --check, ruff (python, tests, experiments), mypy and stubtest
	source scripts/env.sh && find_rust && cargo clippy --workspace --all-targets -- -D warnings
	source scripts/env.sh && find_rust && cargo fmt --all -- --check
	$(VENV)/bin/ruff check python tests/python experiments
	$(VENV)/bin/ruff format --check python tests/python experiments
	$(PY) -m mypy python/pisanet
	$(PY) -m mypy experiments/points.py
	for d in $(MYPY_EXPERIMENTS); do $(PY) -m mypy experiments/$$d || exit 1; done
	$(PY) -m mypy.stubtest --mypy-config-file pyproject.toml pisanet._core

headers: ## Regenerate docs/headers.md and tools/wireshark/pisanet.lua from the header tables
	source scripts/env.sh && find_rust && PISANET_BLESS=1 cargo test --release -p pisanet-schemes generated

wheel-check: ## Build the wheel, install it into a clean venv, run `pisanet run` from it
	bash scripts/wheel-check.sh

fmt: ## Format Rust and Python sources
	source scripts/env.sh && find_rust && cargo fmt --all
	$(VENV)/bin/ruff format python tests/python experiments

demo: ## Run and plot the demo into results/demo
	bash scripts/demo.sh

clean: ## Remove build outputs and results (keeps .venv)
	source scripts/env.sh && find_rust && cargo clean
	rm -rf results python/pisanet/*.so
