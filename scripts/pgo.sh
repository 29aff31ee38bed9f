#!/usr/bin/env bash
# Builds pisanet's native module with profile-guided optimisation (PGO, issue
# 18) into .venv, as scripts/setup.sh does by default (PISANET_PGO=0 there
# builds without). Exit 0: the module in .venv is the PGO build; exit 3: PGO
# is not possible on this machine (no llvm-profdata that reads this rustc's
# profiles, or a toolchain without the profiler runtime) and nothing was
# installed; any other non-zero exit is an error.
#
#   scripts/pgo.sh [--runner] [--force]
#
# 1. builds the module instrumented (-Cprofile-generate; target/pgo-gen),
#    installs it into a scratch directory (target/pgo/site) and runs the
#    training set below through `pisanet.run`, in one process;
# 2. merges the profiles with llvm-profdata (rustc's own llvm-tools when
#    rustup has them, else Debian's llvm-profdata-NN, installed from the
#    package `llvm-19` when missing and apt is there);
# 3. builds the module with -Cprofile-use (target/pgo-use) into .venv
#    (`maturin develop --release`).
# With --runner it also builds the example runner (target/pgo-use/release/
# examples/run) from a profile of the same training set run by an
# instrumented runner, for scripts/bench-compare.sh.
#
# PGO changes where the compiler inlines and how it lays out code, never what
# the code computes: every digest is the same as the plain build's (the tests
# run against whichever module .venv has; docs/performance.md gives the
# figures). The training set covers every scheme family, both TCP variants
# and the rate-based hosts, not only the benchmarks, so that the profile is
# not tuned to what is measured.
#
# PISANET_LLVM_PROFDATA=PATH names the llvm-profdata to use; PISANET_PGO_APT=0
# stops the apt install.
#
# A second run with the same sources, toolchain and module does nothing (the
# stamp in .venv/.pisanet-pgo names the sources' hash and the module's).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$PISANET_ROOT"

log() { printf 'pgo: %s\n' "$*" >&2; }

runner=0
force=0
for arg in "$@"; do
  case $arg in
    --runner) runner=1 ;;
    --force) force=1 ;;
    *) log "unknown argument $arg (allowed: --runner, --force)"; exit 2 ;;
  esac
done

find_rust || { log "no Rust toolchain (run scripts/setup.sh)"; exit 3; }
[ -x .venv/bin/python ] || { log "no .venv (run scripts/setup.sh)"; exit 2; }

# The training set: config, then overrides (one run each, in one process).
TRAINING=(
  "experiments/demo/leaf_spine_ecmp.toml workload.flows=300"
  "experiments/demo/leaf_spine_ecmp.toml workload.flows=200 transport.kind=newreno transport.sack=true"
  "experiments/demo/leaf_spine_ecmp.toml workload.flows=200 scheme.kind=conga"
  "experiments/demo/leaf_spine_ecmp.toml workload.flows=200 scheme.kind=flowlet_ecmp transport.kind=cubic"
  "experiments/bench/fat_tree_k8.toml workload.flows=500"
  "experiments/hula/failure_websearch.toml workload.flows=200"
  "experiments/p4te/incast_10g.toml"
  "experiments/p4qcn/fig10.toml"
  "experiments/p4qos/single_bottleneck.toml"
  "experiments/dbb/fig5.toml"
)

# The sources' hash: every crate's files, the lock file and the toolchain.
stamp_of_sources() {
  {
    rustc -vV
    printf '%s\n' "${TRAINING[@]}"
    find crates Cargo.toml Cargo.lock -type f \( -name '*.rs' -o -name '*.toml' -o -name '*.lock' \) \
      -not -path '*/target/*' -print0 | sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1
}
module() { ls python/pisanet/_core*.so 2>/dev/null | head -n 1; }
stamp_file=.venv/.pisanet-pgo
sources="$(stamp_of_sources)"
if [ "$force" = 0 ] && [ "$runner" = 0 ] && [ -f "$stamp_file" ] && [ -n "$(module)" ]; then
  if [ "$(cat "$stamp_file")" = "$sources $(sha256sum "$(module)" | cut -d' ' -f1)" ]; then
    log "the PGO module in .venv is up to date"
    exit 0
  fi
fi

# llvm-profdata: rustup's llvm-tools (matches rustc's LLVM), else the newest
# Debian llvm-profdata-NN (reads older raw profile versions of newer LLVMs'
# instrumentation in practice; the merge below is checked), else install one.
find_profdata() {
  local sysroot host cand v
  if [ -n "${PISANET_LLVM_PROFDATA:-}" ]; then
    # The user's own (e.g. an LLVM built to match rustc's).
    [ -x "$PISANET_LLVM_PROFDATA" ] && { echo "$PISANET_LLVM_PROFDATA"; return 0; }
    log "PISANET_LLVM_PROFDATA=$PISANET_LLVM_PROFDATA is not an executable"
    return 1
  fi
  sysroot="$(rustc --print sysroot)"
  host="$(rustc -vV | sed -n 's/^host: //p')"
  cand="$sysroot/lib/rustlib/$host/bin/llvm-profdata"
  if [ -x "$cand" ]; then echo "$cand"; return 0; fi
  for v in 22 21 20 19 18; do
    if command -v "llvm-profdata-$v" >/dev/null; then command -v "llvm-profdata-$v"; return 0; fi
  done
  return 1
}
if ! profdata="$(find_profdata 2>/dev/null)"; then
  if [ -z "${PISANET_LLVM_PROFDATA:-}" ] && command -v apt-get >/dev/null && [ "${PISANET_PGO_APT:-1}" != 0 ]; then
    SUDO=""; if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
    log "apt-get install llvm-19 (for llvm-profdata)"
    { $SUDO apt-get update -qq \
      && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends llvm-19 >/dev/null; } \
      || { log "could not install llvm-19"; exit 3; }
  fi
  profdata="$(find_profdata)" || { log "no llvm-profdata found"; exit 3; }
fi
log "using $profdata"

prof="$PISANET_ROOT/target/pgo"
gen_flags="${RUSTFLAGS:-} -Cprofile-generate=$prof/raw"
use_flags="${RUSTFLAGS:-} -Cprofile-use=$prof/pisanet.profdata"

train_module() {
  local site="$prof/site"
  rm -rf "$prof/raw" "$prof/wheel" "$site"
  mkdir -p "$prof/raw"
  log "building the instrumented module (target/pgo-gen)"
  RUSTFLAGS="$gen_flags" CARGO_TARGET_DIR=target/pgo-gen \
    .venv/bin/maturin build --release --quiet -o "$prof/wheel" >/dev/null 2>"$prof/build-gen.log" \
    || { log "instrumented build failed (no profiler runtime?): $prof/build-gen.log"; return 3; }
  .venv/bin/python -m pip install -q --no-deps --target "$site" "$prof"/wheel/*.whl
  log "training: ${#TRAINING[@]} runs"
  PYTHONPATH="$site" .venv/bin/python - "${TRAINING[@]}" <<'EOF'
import sys
import pisanet
for line in sys.argv[1:]:
    config, *overrides = line.split()
    pisanet.run(config, set=overrides)
EOF
}

train_runner() {
  rm -rf "$prof/raw"
  mkdir -p "$prof/raw"
  log "building the instrumented runner (target/pgo-gen)"
  RUSTFLAGS="$gen_flags" CARGO_TARGET_DIR=target/pgo-gen \
    cargo build --release --quiet -p pisanet --example run 2>"$prof/build-gen.log" \
    || { log "instrumented build failed: $prof/build-gen.log"; return 3; }
  local line
  for line in "${TRAINING[@]}"; do
    # shellcheck disable=SC2086
    target/pgo-gen/release/examples/run $line >/dev/null
  done
}

merge() {
  "$profdata" merge -o "$prof/pisanet.profdata" "$prof/raw" 2>"$prof/merge.log" \
    || { log "llvm-profdata could not merge this rustc's profiles: $prof/merge.log"; return 3; }
}

mkdir -p "$prof"
if [ "$runner" = 1 ]; then
  train_runner && merge || exit 3
  log "building the runner with the profile (target/pgo-use/release/examples/run)"
  RUSTFLAGS="$use_flags" CARGO_TARGET_DIR=target/pgo-use \
    cargo build --release --quiet -p pisanet --example run 2>"$prof/build-use.log" \
    || { log "build failed: $prof/build-use.log"; exit 1; }
fi
train_module && merge || exit 3
log "building the module with the profile into .venv (target/pgo-use)"
RUSTFLAGS="$use_flags" CARGO_TARGET_DIR=target/pgo-use VIRTUAL_ENV="$PISANET_ROOT/.venv" \
  .venv/bin/maturin develop --release --quiet >/dev/null 2>"$prof/build-use.log" \
  || { log "build failed: $prof/build-use.log"; exit 1; }
echo "$sources $(sha256sum "$(module)" | cut -d' ' -f1)" > "$stamp_file"
log "ready: the native module in .venv is built with PGO"
