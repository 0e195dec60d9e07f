#!/usr/bin/env bash
# Log replay speed, side by side in one run: `xfs-explorer replay` (in
# memory; and with -o, the recovered image written) against the kernel's own
# recovery of a copy of the same image (mount, which replays the log, and
# umount), on a large dirty image.
#
#   benches/make-big-log.sh            # once, as root: makes benches/big-dirty.img
#   benches/replay-bench.sh [IMAGE] [RUNS]      # as root (loop mounts)
#
# Prints each run's wall time, the medians and the ratios. The copies for the
# kernel and the exported images go to WORKDIR (default /dev/shm when it has
# room, else benches/); copying is not timed.
set -euo pipefail
cd "$(dirname "$0")/.."
IMG=${1:-benches/big-dirty.img}
RUNS=${2:-3}
[ -f "$IMG" ] || { echo "no image $IMG: run benches/make-big-log.sh first" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (loop mounts)" >&2; exit 1; }
cargo build --release --locked --bin xfs-explorer -q
BIN=target/release/xfs-explorer
size=$(stat -c %s "$IMG")
WORK=${WORKDIR:-}
if [ -z "$WORK" ]; then
    if [ "$(df --output=avail -B1 /dev/shm 2>/dev/null | tail -1)" -gt $((size * 3)) ] 2>/dev/null; then
        WORK=/dev/shm
    else
        WORK=benches
    fi
fi
WORK=$(mktemp -d "$WORK/replay-bench.XXXXXX")
MNT="$WORK/mnt"
mkdir -p "$MNT"
trap 'umount "$MNT" 2>/dev/null || true; rm -rf "$WORK"' EXIT

secs() { # run a command, print its wall time in seconds
  local t0 t1
  t0=$(date +%s.%N)
  "$@" > /dev/null 2>&1
  t1=$(date +%s.%N)
  echo "$t1 - $t0" | bc
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
kernel() { mount -o loop "$1" "$MNT" && umount "$MNT"; }

cat "$IMG" > /dev/null
"$BIN" replay "$IMG" | head -4
mem=(); out=(); ker=()
for i in $(seq "$RUNS"); do
    m=$(secs "$BIN" replay "$IMG")
    rm -f "$WORK/out.img"
    o=$(secs "$BIN" replay "$IMG" -o "$WORK/out.img")
    cp --sparse=always "$IMG" "$WORK/copy.img"
    sync
    k=$(secs kernel "$WORK/copy.img")
    echo "run $i: xfs-explorer replay ${m}s, replay -o ${o}s, kernel mount+umount ${k}s"
    mem+=("$m"); out+=("$o"); ker+=("$k")
    rm -f "$WORK/copy.img"
done
M=$(printf '%s\n' "${mem[@]}" | median)
O=$(printf '%s\n' "${out[@]}" | median)
K=$(printf '%s\n' "${ker[@]}" | median)
echo "median: replay ${M}s, replay -o ${O}s, kernel ${K}s"
echo "kernel / replay: $(echo "scale=2; $K / $M" | bc)x; kernel / (replay -o): $(echo "scale=2; $K / $O" | bc)x"
/usr/bin/time -f "peak memory of replay: %M KiB" "$BIN" replay "$IMG" > /dev/null
