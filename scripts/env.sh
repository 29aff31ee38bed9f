# Sourced by the other scripts (not run): puts a Rust toolchain new enough for
# this workspace (rustc >= 1.85, which pyo3 needs) first on PATH.
# Looks at, in order: what PATH already has, ~/.cargo/bin (rustup), /usr/bin
# (Debian's rustc-web/cargo-web). Sets PISANET_ROOT. Returns 1 if none fits.

PISANET_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PISANET_RUST_MIN_MINOR=85

# rust_fits DIR: DIR (empty for PATH) has cargo and a rustc >= 1.$PISANET_RUST_MIN_MINOR.
rust_fits() {
  local dir="${1:+$1/}" version minor
  [ -x "$(command -v "${dir}cargo" 2>/dev/null)" ] || return 1
  version="$("${dir}rustc" --version 2>/dev/null | awk '{print $2}')" || return 1
  [ "${version%%.*}" = 1 ] || return 1
  minor="$(echo "$version" | cut -d. -f2)"
  [ -n "$minor" ] && [ "$minor" -ge "$PISANET_RUST_MIN_MINOR" ]
}

find_rust() {
  local dir
  if rust_fits ""; then return 0; fi
  for dir in "$HOME/.cargo/bin" /usr/bin; do
    if rust_fits "$dir"; then
      export PATH="$dir:$PATH"
      return 0
    fi
  done
  return 1
}
