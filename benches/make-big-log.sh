#!/usr/bin/env bash
# Make benches/big-dirty.img: a large dirty XFS image whose internal log
# (1100 MiB by default) is mostly live, for the log-decoding and replay
# benchmarks. The image is NOT committed (/benches/*.img is git-ignored).
#
# Usage (as root; Linux with XFS, loop devices, xfsprogs, python3):
#   benches/make-big-log.sh [--timings]
#   LOGSIZE=2038m SIZE=16G SYNCD=240 OUT=benches/log-2038m.img benches/make-big-log.sh
#
# OUT names the image made (default benches/big-dirty.img). LOGSIZE goes up
# to 2038m, the largest internal log mkfs.xfs accepts (521,728 blocks of
# 4 KiB); the log must fit in one AG, so a log over about a quarter of SIZE
# needs a larger SIZE (16G holds 2038m). benches/make-log-sizes.sh makes the
# three images of the log-size benchmark with this script.
#
# What it does:
#   1. truncate a sparse image (SIZE, default 6G) and mkfs.xfs -l size=LOGSIZE
#      (default 1100m) with a fixed UUID and label, in WORKDIR (default
#      /dev/shm when it has room: log forces then cost no disk flushes, which
#      makes the churn several times faster; else benches/);
#   2. mount it and run JOBS (default 3) parallel tests/fixtures/make/log_churn.py
#      workers, each in its own tree, every operation fsync'ed (create, rename,
#      link, unlink, set/remove user.* and security.* xattrs up to 3000 bytes,
#      writes, truncates, mkdir, symlink), watching the live part of the log
#      (head - tail, from /sys/fs/xfs/<dev>/log);
#   3. stop when the live part reaches TARGET_PCT (default 72) % of the log or
#      when the mount is DEADLINE (default 27) seconds old: the kernel's log
#      worker writes all dirty metadata back every 30 s (fs.xfs.xfssyncd_centisecs),
#      which moves the tail up to the head, so the live part can only be what
#      was logged since the mount. On a busy machine that is too short to
#      fill the log: SYNCD=SECONDS sets fs.xfs.xfssyncd_centisecs to that for
#      the churn (and DEADLINE just below it), restoring it afterwards;
#      and once head - tail passes 75% of the log the kernel pushes the AIL
#      to make room, which also moves the tail: hence the 72% target;
#   4. xfs_io -x -c "shutdown -f" (log flushed, then the fs is shut down), umount,
#      copy the image to benches/big-dirty.img (sparse);
#   5. print the log size, head and tail (sysfs before the shutdown, and
#      xfs_logprint -t afterwards) and how long each step took. With --timings
#      also: the number of transactions `xfs_logprint -t` prints and how long it
#      takes, and how long the kernel takes to recover a sparse copy (mount +
#      umount of benches/big-dirty.recovered.img, deleted afterwards).
# The churn is seeded, but how much of it lands in the log before the deadline
# depends on the machine, so two runs do not give the same image.
set -euo pipefail
export LC_ALL=C

if [[ $(id -u) -ne 0 ]]; then
    echo "make-big-log.sh: must be run as root (mkfs, mount -o loop)" >&2
    exit 1
fi
for tool in mkfs.xfs xfs_io xfs_logprint xfs_db mount umount findmnt python3; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done

TIMINGS=no
[[ ${1-} == --timings ]] && TIMINGS=yes

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHURN="$HERE/../tests/fixtures/make/log_churn.py"
OUT=${OUT:-$HERE/big-dirty.img}
SIZE=${SIZE:-6G}
LOGSIZE=${LOGSIZE:-1100m}
JOBS=${JOBS:-3}
TARGET_PCT=${TARGET_PCT:-72}
DEADLINE=${DEADLINE:-27}
SYNCD=${SYNCD-}
OLD_SYNCD=
if [[ -n $SYNCD ]]; then
    OLD_SYNCD=$(sysctl -n fs.xfs.xfssyncd_centisecs)
    sysctl -q fs.xfs.xfssyncd_centisecs=$(( SYNCD * 100 ))
    DEADLINE=${DEADLINE_SET:-$(( SYNCD - 3 ))}
fi
if [[ -z ${WORKDIR-} ]]; then
    if (( $(df --output=avail -B 1G /dev/shm 2>/dev/null | tail -1 || echo 0) >= 4 )); then WORKDIR=/dev/shm; else WORKDIR=$HERE; fi
fi
export TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1

TMP=$(mktemp -d "$WORKDIR/big-log.XXXXXX")
MNT="$TMP/mnt"
IMG="$TMP/big-dirty.img"
PIDS=()
cleanup() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true; fi
    rm -rf "$TMP"
    [[ -z $OLD_SYNCD ]] || sysctl -q fs.xfs.xfssyncd_centisecs="$OLD_SYNCD"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

t0=$(now)
truncate -s "$SIZE" "$IMG"
mkfs.xfs -f -l size="$LOGSIZE" -L big-dirty -m uuid=5a3c0001-0000-4000-8000-0000000000b1 "$IMG" > "$TMP/mkfs.txt"
logblocks=$(xfs_db -r -c 'sb 0' -c 'p logblocks' "$IMG" | awk '{print $3}')
blocksize=$(xfs_db -r -c 'sb 0' -c 'p blocksize' "$IMG" | awk '{print $3}')
L=$(( logblocks * blocksize / 512 ))
echo "image: $SIZE sparse in $WORKDIR; log: $logblocks blocks of $blocksize = $L BB ($(( L / 2048 )) MiB)"

mkdir -p "$MNT"
mount -o loop "$IMG" "$MNT"
tm=$(now)
dev=$(findmnt -no SOURCE "$MNT")
S="/sys/fs/xfs/${dev##*/}/log"
distance() { # HEAD-LSN TAIL-LSN (cycle:block) -> blocks from tail to head
    local hc=${1%%:*} hb=${1##*:} tc=${2%%:*} tb=${2##*:}
    echo $(( (hc - tc) * L + hb - tb ))
}
live() { # -> the live part of the log now, in BB
    distance "$(cat "$S/log_head_lsn")" "$(cat "$S/log_tail_lsn")"
}

for (( j = 1; j <= JOBS; j++ )); do
    python3 "$CHURN" "$MNT/w$j" --seed $(( j * 1000003 )) --ops 10000000 --fsync-every 1 \
        --dirs 16 --max-files 6000 --data-max 1000 --xattr-max 3000 > "$TMP/churn-$j.txt" 2>&1 &
    PIDS+=($!)
done
target=$(( L * TARGET_PCT / 100 ))
why="deadline ${DEADLINE}s after the mount"
while awk -v a="$tm" -v b="$(now)" -v d="$DEADLINE" 'BEGIN { exit !(b - a < d) }'; do
    sleep 0.5
    if (( $(live) >= target )); then why="live part reached ${TARGET_PCT}%"; break; fi
    for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null || { echo "a churn worker stopped:" >&2; cat "$TMP"/churn-*.txt >&2; exit 1; }; done
done
hl=$(cat "$S/log_head_lsn"); tl=$(cat "$S/log_tail_lsn"); lv=$(distance "$hl" "$tl")
xfs_io -x -c "shutdown -f" "$MNT"
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
wait 2>/dev/null || true
PIDS=()
umount "$MNT"
churn_s=$(since "$tm")
echo "churn: $JOBS workers, stopped after ${churn_s}s ($why)"
echo "sysfs before the shutdown: head $hl tail $tl, live $lv BB = $(( lv * 100 / L ))% of the log"
cp --sparse=always "$IMG" "$OUT"
rm -f "$IMG"
echo "wrote $OUT ($(du -h "$OUT" | cut -f1) allocated) in $(since "$t0")s in all"
{ xfs_logprint -t "$OUT" 2>/dev/null || true; } | sed -n -e '/log tail:/{s/^ */xfs_logprint -t: /;p;q}' || true

if [[ $TIMINGS == yes ]]; then
    s=$(now)
    n=$({ xfs_logprint -t "$OUT" 2>/dev/null || true; } | grep -c '^TRANS: ' || true)
    echo "xfs_logprint -t: $n transactions, $(since "$s")s (counting pipe included)"
    s=$(now)
    xfs_logprint -t "$OUT" > /dev/null 2>&1 || true
    echo "time xfs_logprint -t > /dev/null: $(since "$s")s"
    copy="$HERE/big-dirty.recovered.img"
    cp --sparse=always "$OUT" "$copy"
    sync
    s=$(now)
    mount -o loop "$copy" "$MNT" && umount "$MNT"
    echo "kernel recovery of a copy (mount + umount): $(since "$s")s"
    rm -f "$copy"
fi
