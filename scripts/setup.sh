#!/usr/bin/env bash
# Sets up a machine to build, run and test pisanet; idempotent (a second run
# only rebuilds what changed). Made for a fresh Debian 12 (bookworm) that
# reaches only the package registries (Debian, PyPI, crates.io):
#   1. a Rust toolchain >= 1.85: PATH, ~/.cargo/bin, else Debian's rustc-web
#      and cargo-web (bookworm(-security); binaries in /usr/bin);
#   2. python3 (>= 3.10) with venv and headers, a C toolchain (apt, when missing);
#   3. .venv in the repo with requirements.txt;
#   4. the pisanet package (native module built by maturin, release, with
#      profile-guided optimisation unless PISANET_PGO=0: scripts/pgo.sh) into .venv.
# Uses sudo for apt when not root.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$PISANET_ROOT"

log() { printf 'setup: %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
APT_UPDATED=0
apt_install() {
  log "apt-get install $*"
  if [ "$APT_UPDATED" = 0 ]; then
    $SUDO apt-get update -qq
    APT_UPDATED=1
  fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# 1. Rust.
if ! find_rust; then
  apt_install rustc-web cargo-web
  find_rust || { log "no rustc >= 1.$PISANET_RUST_MIN_MINOR after installing rustc-web"; exit 1; }
fi
log "using $(rustc --version) ($(command -v cargo))"

# 2. Python with venv and headers, and a C compiler and linker.
missing=()
command -v python3 >/dev/null || missing+=(python3)
command -v cc >/dev/null || missing+=(build-essential)
if command -v python3 >/dev/null; then
  python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
  python3 -c 'import os, sysconfig; raise SystemExit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    || missing+=(python3-dev)
else
  missing+=(python3-venv python3-dev)
fi
if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
python3 -c 'import sys; raise SystemExit(sys.version_info < (3, 10))' \
  || { log "python3 >= 3.10 needed, found $(python3 --version)"; exit 1; }

# 3. The virtualenv and the Python dependencies (reinstalled when requirements.txt changes).
if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  python3 -m venv .venv
fi
stamp=.venv/.requirements.sha256
want="$(sha256sum requirements.txt | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  log "installing requirements.txt into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements.txt
  echo "$want" > "$stamp"
fi

# 4. The package itself: an editable install, the native module built in
#    release mode with profile-guided optimisation (scripts/pgo.sh; about 10%
#    faster, same digests) where the machine allows it, else without.
#    PISANET_PGO=0 skips PGO (a quicker set-up).
pgo=3
if [ "${PISANET_PGO:-1}" != 0 ]; then
  bash scripts/pgo.sh && pgo=0 || pgo=$?
  if [ "$pgo" -ne 0 ] && [ "$pgo" -ne 3 ]; then exit "$pgo"; fi
fi
if [ "$pgo" -ne 0 ]; then
  log "building the native module (maturin develop --release)"
  VIRTUAL_ENV="$PISANET_ROOT/.venv" .venv/bin/maturin develop --release --quiet
  rm -f .venv/.pisanet-pgo
fi
log "ready: .venv/bin/pisanet"
