#!/usr/bin/env bash
# Installs what building and testing need, skipping whatever is already
# there. Sourced by scripts/run-app and scripts/test.
#   setup_build  : wasm32 target, zstd, Trunk, wasm-bindgen-cli (= Cargo.lock), npm deps, crates
#   setup_browser: Debian's chromium and chromium-driver
set -euo pipefail

TRUNK_VERSION=0.21.14
export TRUNK_SKIP_VERSION_CHECK=true
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

APT_UPDATED=
apt_install() {
  local missing=()
  for p in "$@"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} (apt)"
  if [ -z "$APT_UPDATED" ]; then as_root apt-get update -qq; APT_UPDATED=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

lock_version() {
  # The version of a package in Cargo.lock.
  awk -v n="$1" '$0 == "name = \"" n "\"" { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}

setup_build() {
  command -v zstd >/dev/null || apt_install zstd
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    log "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  if [ "$(trunk --version 2>/dev/null)" != "trunk $TRUNK_VERSION" ]; then
    log "installing trunk $TRUNK_VERSION (about 12 minutes on 2 cores)"
    cargo install trunk --version "$TRUNK_VERSION" --locked
  fi
  local wb
  wb=$(lock_version wasm-bindgen)
  if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $wb" ]; then
    log "installing wasm-bindgen-cli $wb (the Cargo.lock version)"
    # Not --locked: the registry here lacks some of its locked dependencies.
    cargo install wasm-bindgen-cli --version "$wb" --force
  fi
  if [ ! -x node_modules/.bin/wasm-opt ] || [ ! -x node_modules/.bin/playwright ] \
     || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "installing npm packages (binaryen's wasm-opt, Playwright's test runner)"
    npm ci --no-audit --no-fund --loglevel=error
  fi
  # Trunk builds offline: fetch the crates first.
  cargo fetch --locked -q
  # npm's binaryen: Debian's wasm-opt is too old for this rustc's output.
  export PATH="$PWD/node_modules/.bin:$PATH"
}

setup_browser() {
  apt_install chromium chromium-driver
}
