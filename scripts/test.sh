#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then runs the Rust tests (the workspace's default
# members, release profile), the Python tests (tests/python) and the wheel check
# (scripts/wheel-check.sh). All always run; the exit code is non-zero if any failed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
source scripts/env.sh
find_rust

echo "== cargo test --release (default members)"
rust=0
cargo test --release || rust=$?

# The dissector test (tests/python/test_capture.py) needs tshark: Debian's is
# installed when missing (about 120 MB with libwireshark, once per machine);
# PISANET_TSHARK=skip does without it. If it cannot be installed, the test is
# skipped with a message saying so (the dpkt check of the same captures runs).
if ! command -v tshark >/dev/null; then
  if [ "${PISANET_TSHARK:-install}" != skip ]; then
    SUDO=""; if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    { $SUDO apt-get update -qq \
      && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends tshark >/dev/null; } \
      || echo "test.sh: could not install tshark: the Wireshark dissector test is skipped" >&2
  else
    echo "test.sh: PISANET_TSHARK=skip: the Wireshark dissector test is skipped" >&2
  fi
fi

echo "== pytest tests/python"
python=0
.venv/bin/python -m pytest -q tests/python || python=$?
# pytest exits 5 when it collected no test: a failure here, not a pass.
if [ "$python" -eq 5 ]; then echo "test.sh: pytest collected no tests" >&2; fi

# The wheel installs with pip alone and runs from a clean venv (issue 20). The
# venv is kept in target/ so that only the first run installs the dependencies;
# the wheel build reuses the release build above.
echo "== wheel check (scripts/wheel-check.sh)"
wheel=0
PISANET_WHEEL_VENV=target/wheel-check-venv bash scripts/wheel-check.sh || wheel=$?

if [ "$rust" -ne 0 ] || [ "$python" -ne 0 ] || [ "$wheel" -ne 0 ]; then
  echo "test.sh: FAILED (cargo test exit $rust, pytest exit $python, wheel check exit $wheel)" >&2
  exit 1
fi
