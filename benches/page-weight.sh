#!/usr/bin/env bash
# The page's weight: `gzip -9` of every file opening the page fetches (the
# HTML, CSS, icon, the page's JS and wasm, which is also the light worker,
# and the light worker's starter), and of the full worker fetched on
# demand. Reads a built site (`trunk build --release` writes dist/).
# Usage: benches/page-weight.sh [DIST]
set -euo pipefail
D=${1:-dist}
[ -f "$D/index.html" ] || { echo "no built site in $D: run trunk build --release" >&2; exit 1; }
gz() { gzip -9c "$1" | wc -c; }
open=0
full=0
printf "%10s %10s  %s\n" raw gzip file
for f in "$D"/*; do
  name=$(basename "$f")
  case "$name" in
    sample.img|read-ahead.js) continue ;;
  esac
  n=$(gz "$f")
  printf "%10d %10d  %s\n" "$(stat -c %s "$f")" "$n" "$name"
  case "$name" in
    xfs-explorer-worker.js|xfs-explorer-worker_bg.wasm|xfs-explorer-worker_loader.js) full=$((full + n)) ;;
    *) open=$((open + n)) ;;
  esac
done
echo "fetched to open the page: $open bytes gzipped (goal: 500 KB)"
echo "full worker, fetched when replay or the operations are first asked for: $full bytes gzipped"
