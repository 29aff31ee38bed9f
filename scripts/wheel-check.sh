#!/usr/bin/env bash
# Checks that pisanet installs with pip alone: builds the wheel the way
# `pip install .` does (PEP 517, maturin as the build backend, release
# profile), installs it into a fresh virtualenv outside the repository, and
# runs `pisanet run` from there on a small config, with a pcap capture and a
# trace. Exits non-zero if any step fails. Reuses the repository's cargo
# target dir and pip's cache, so a second run only rebuilds what changed.
#
#   bash scripts/wheel-check.sh        (make wheel-check)
#
# PISANET_WHEEL_VENV=DIR keeps the clean venv in DIR between runs (scripts/test.sh
# uses target/wheel-check-venv): its dependencies are installed once, from the
# wheel's metadata, and the wheel is reinstalled into it on every run, so a
# check costs the wheel build (incremental) and a run, not a fresh install of
# pandas, pyarrow, duckdb and matplotlib. The venv never sees the source tree.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$PISANET_ROOT"
find_rust || { echo "wheel-check: no Rust toolchain (bash scripts/setup.sh installs one)" >&2; exit 1; }

log() { printf 'wheel-check: %s\n' "$*" >&2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# NOTE: the clean venv's own pip builds the wheel (python3 may have no pip of
# its own); pip builds in an isolated environment of its own, with maturin
# from PyPI, so nothing lands in the venv until the wheel is installed.
venv="${PISANET_WHEEL_VENV:-$tmp/venv}"
case "$venv" in /*) ;; *) venv="$PISANET_ROOT/$venv" ;; esac
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --upgrade pip
fi
log "building the wheel (pip wheel ., maturin backend)"
"$venv/bin/python" -m pip wheel --quiet --no-deps --wheel-dir "$tmp/dist" .
wheel="$(ls "$tmp"/dist/pisanet-*.whl)"
log "built $(basename "$wheel")"
log "installing it into the clean venv ($venv)"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$wheel"
"$venv/bin/python" -m pip install --quiet "$wheel"

# Run from outside the repository, so that nothing of the source tree is imported.
mkdir "$tmp/work"
cp experiments/demo/leaf_spine_ecmp.toml "$tmp/work/demo.toml"
cd "$tmp/work"
log "pisanet run from the installed wheel"
"$venv/bin/pisanet" run demo.toml --out res -q \
  --set workload.flows=100 \
  --set 'metrics.pcap.ports=["leaf0->spine0"]' \
  --set 'metrics.trace.flows=[1]'
"$venv/bin/python" - "$venv" <<'EOF'
import json
import sys
from pathlib import Path

import pandas as pd

import pisanet

res = Path("res")
summary = json.loads((res / "summary.json").read_text())
assert summary["flows"]["completed"] == 100, summary["flows"]
assert pisanet.__file__.startswith(sys.argv[1]), pisanet.__file__
pcap = (res / "pcap" / "leaf0->spine0.pcap").read_bytes()
assert pcap[:4] == bytes.fromhex("4d3cb2a1"), "nanosecond pcap"
assert len(pd.read_parquet(res / "trace.parquet")) > 0
print(f"wheel-check: ok (digest {summary['digest']}, {len(pcap)} pcap bytes)")
EOF
