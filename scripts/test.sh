#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs the Rust tests (the workspace's default
# members, release profile) and the Python tests (tests/python).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
source scripts/env.sh
find_rust

echo "== cargo test --release (default members)"
cargo test --release

echo "== pytest tests/python"
status=0
.venv/bin/python -m pytest -q tests/python || status=$?
# pytest exits 5 when it collected no test: that is a failure here, not a pass.
if [ "$status" -eq 5 ]; then echo "test.sh: pytest collected no tests" >&2; fi
exit "$status"
