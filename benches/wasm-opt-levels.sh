#!/usr/bin/env bash
# Build the web app with both workers (the light one that decodes the log on
# opening, which is the page's own wasm, and the full one) at opt-level 3,
# "s" and "z" (cargo and wasm-opt alike) and time the light worker's decode
# of a big log in headless Chromium, side by side. LEVELS="3 s z" by default.
# Usage: [LEVELS=...] benches/wasm-opt-levels.sh [IMAGE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
setup_build
IMG=$(realpath "${1:-benches/big-dirty.img}")
RUNS=${2:-3}
for level in ${LEVELS:-3 s z}; do
  html=".bench-index-$level.html"
  # Both workers (the page's wasm is the light one) on the `release`
  # profile at this level.
  sed -E -e "/data-bin=\"xfs-explorer-(web|worker)\"/s/data-cargo-profile-release=\"[^\"]*\"/data-cargo-profile-release=\"release\"/" \
    -e "/data-bin=\"xfs-explorer-(web|worker)\"/s/data-wasm-opt=\"[^\"]*\"/data-wasm-opt=\"$level\"/" index.html > "$html"
  [ "$(grep -c "data-cargo-profile-release=\"release\" data-wasm-opt=\"$level\"" "$html")" = 2 ] || { echo "index.html's worker lines changed: update this script" >&2; exit 1; }
  log "building with opt-level $level"
  CARGO_PROFILE_RELEASE_OPT_LEVEL=$level trunk build --release --dist "target/bench-dist-$level" "$html" > /dev/null 2>&1
  rm -f "$html"
  for w in target/bench-dist-$level/xfs-explorer-web-*_bg.wasm target/bench-dist-$level/xfs-explorer-worker_bg.wasm; do
    echo "opt-level $level: $(basename "$w") $(stat -c %s "$w") bytes, $(gzip -9c "$w" | wc -c) gzipped"
  done
  node benches/browser-log-bench.mjs "target/bench-dist-$level" "$IMG" "$RUNS"
done
