#!/usr/bin/env bash
# Build the web app with the core at opt-level 3, "s" and "z" (cargo and
# wasm-opt alike) and time the worker's decode of a big log in headless
# Chromium, side by side. Usage: benches/wasm-opt-levels.sh [IMAGE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
setup_build
IMG=$(realpath "${1:-benches/big-dirty.img}")
RUNS=${2:-3}
for level in 3 s z; do
  html=".bench-index-$level.html"
  sed "s/data-bin=\"xfs-explorer-worker\" data-type=\"worker\" data-loader-shim data-wasm-opt=\"3\"/data-bin=\"xfs-explorer-worker\" data-type=\"worker\" data-loader-shim data-wasm-opt=\"$level\"/" index.html > "$html"
  log "building with opt-level $level"
  CARGO_PROFILE_RELEASE_OPT_LEVEL=$level trunk build --release --dist "target/bench-dist-$level" "$html" > /dev/null 2>&1
  rm -f "$html"
  w=$(ls target/bench-dist-$level/xfs-explorer-worker_bg.wasm)
  echo "opt-level $level: worker wasm $(stat -c %s "$w") bytes, $(gzip -9c "$w" | wc -c) gzipped"
  node benches/browser-log-bench.mjs "target/bench-dist-$level" "$IMG" "$RUNS"
done
