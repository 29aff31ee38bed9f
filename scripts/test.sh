#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs the Rust tests (the workspace's default
# members, release profile) and the Python tests (tests/python). Both always
# run; the exit code is non-zero if either failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
source scripts/env.sh
find_rust

echo "== cargo test --release (default members)"
rust=0
cargo test --release || rust=$?

echo "== pytest tests/python"
python=0
.venv/bin/python -m pytest -q tests/python || python=$?
# pytest exits 5 when it collected no test: a failure here, not a pass.
if [ "$python" -eq 5 ]; then echo "test.sh: pytest collected no tests" >&2; fi

if [ "$rust" -ne 0 ] || [ "$python" -ne 0 ]; then
  echo "test.sh: FAILED (cargo test exit $rust, pytest exit $python)" >&2
  exit 1
fi
