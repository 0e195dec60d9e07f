#!/usr/bin/env bash
# Log decoding speed, side by side in one run: `xfs-explorer log --json`
# against `xfs_logprint -t` on the same large dirty image.
#
#   benches/make-big-log.sh          # once, as root: makes benches/big-dirty.img
#   benches/log-bench.sh [IMAGE] [RUNS]
#
# Prints each run's wall time, the median of each tool and the ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
IMG=${1:-benches/big-dirty.img}
RUNS=${2:-3}
[ -f "$IMG" ] || { echo "no image $IMG: run benches/make-big-log.sh first" >&2; exit 1; }
command -v xfs_logprint >/dev/null || { echo "xfs_logprint missing (apt-get install xfsprogs)" >&2; exit 1; }
cargo build --release --locked --bin xfs-explorer -q
BIN=target/release/xfs-explorer

secs() { # run a command, print its wall time in seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null 2>&1 || true
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Warm the page cache so both read from memory.
cat "$IMG" > /dev/null
ours=(); theirs=()
for i in $(seq "$RUNS"); do
  ours+=("$(secs "$BIN" log --json "$IMG")")
  theirs+=("$(secs xfs_logprint -t "$IMG")")
  echo "run $i: xfs-explorer ${ours[-1]} s, xfs_logprint -t ${theirs[-1]} s"
done
mo=$(printf '%s\n' "${ours[@]}" | median)
mt=$(printf '%s\n' "${theirs[@]}" | median)
echo "median: xfs-explorer log --json $mo s; xfs_logprint -t $mt s; ratio $(echo "scale=1; $mt / $mo" | bc)x"
"$BIN" log --json "$IMG" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("transactions", len(d["transactions"]), "records", d["records"])' || true
