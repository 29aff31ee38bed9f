#!/usr/bin/env bash
# Sets up, runs the demo (ECMP on a leaf-spine, DCTCP, web-search workload)
# into results/demo, and plots it (results/demo/*.png).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/pisanet run experiments/demo/leaf_spine_ecmp.toml --out results/demo
.venv/bin/pisanet plot results/demo
