#!/usr/bin/env bash
# Make benches/large-ckpt.img: the large-checkpoint benchmark image of issue
# 20. An 8 GiB sparse image with a 1 GiB internal log, 20 directories of
# 1,000 files each, then ROUNDS (default 90) rounds that touch every file
# (its times and mode: one inode core logged per file) and end with one
# fsync: each round is one checkpoint of about 20,000 inode items, which is
# the shape that makes the log's transactions large. A file made before the
# rounds and never touched again keeps the tail before them (relogged items
# move up in the AIL; that one does not), so all 91 checkpoints are live. The filesystem is then
# shut down with `xfs_io -x -c "shutdown -f"`, so the whole churn is live in
# the log. The image is NOT committed (/benches/*.img is git-ignored).
#
# Usage (as root; Linux with XFS, loop devices, xfsprogs, python3):
#   benches/make-large-checkpoints.sh
#   OUT=... ROUNDS=... DIRS=... FILES=... SIZE=... LOGSIZE=... benches/make-large-checkpoints.sh
#
# The kernel writes dirty metadata back every fs.xfs.xfssyncd_centisecs
# (30 s), which moves the tail; the script raises that to 10 minutes for
# the churn and restores it, so what was logged since the files were made
# stays live.
set -euo pipefail
export LC_ALL=C

if [[ $(id -u) -ne 0 ]]; then
    echo "make-large-checkpoints.sh: must be run as root (mkfs, mount -o loop)" >&2
    exit 1
fi
for tool in mkfs.xfs xfs_io xfs_logprint mount umount python3; do
    command -v "$tool" >/dev/null || { echo "missing tool: $tool" >&2; exit 1; }
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$HERE/large-ckpt.img}
SIZE=${SIZE:-8G}
LOGSIZE=${LOGSIZE:-1024m}
DIRS=${DIRS:-20}
FILES=${FILES:-1000}
ROUNDS=${ROUNDS:-90}
if [[ -z ${WORKDIR-} ]]; then
    if (( $(df --output=avail -B 1G /dev/shm 2>/dev/null | tail -1 || echo 0) >= 4 )); then WORKDIR=/dev/shm; else WORKDIR=$HERE; fi
fi
export TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1

OLD_SYNCD=$(sysctl -n fs.xfs.xfssyncd_centisecs)
TMP=$(mktemp -d "$WORKDIR/large-ckpt.XXXXXX")
MNT="$TMP/mnt"
IMG="$TMP/large-ckpt.img"
cleanup() {
    if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true; fi
    rm -rf "$TMP"
    sysctl -q fs.xfs.xfssyncd_centisecs="$OLD_SYNCD"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$(date +%s.%N)
truncate -s "$SIZE" "$IMG"
mkfs.xfs -f -l size="$LOGSIZE" -L large-ckpt -m uuid=5a3c0001-0000-4000-8000-0000000000c2 "$IMG" > "$TMP/mkfs.txt"
mkdir -p "$MNT"
mount -o loop "$IMG" "$MNT"
# The files first, written back, so that the live log is the rounds.
python3 - "$MNT" "$DIRS" "$FILES" <<'EOF'
import os, sys
root, dirs, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    p = os.path.join(root, f"d{d:02}")
    os.mkdir(p)
    for f in range(files):
        with open(os.path.join(p, f"f{f:04}"), "w"):
            pass
EOF
sync
xfs_io -x -c "freeze" -c "thaw" "$MNT"
sysctl -q fs.xfs.xfssyncd_centisecs=60000
python3 - "$MNT" "$DIRS" "$FILES" "$ROUNDS" <<'EOF'
import os, sys
root, dirs, files, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# One file made and never touched again: its inode stays at this first
# checkpoint's LSN in the AIL and holds the tail there. Without it every
# round relogs every inode and the tail follows the last round.
fd = os.open(os.path.join(root, "pin"), os.O_CREAT | os.O_WRONLY, 0o644)
os.fsync(fd)
os.close(fd)
paths = [os.path.join(root, f"d{d:02}", f"f{f:04}") for d in range(dirs) for f in range(files)]
for r in range(rounds):
    t = 1_700_000_000 + r
    for p in paths:
        os.utime(p, (t, t))
        os.chmod(p, 0o600 | (r & 0o77))
    fd = os.open(paths[r % len(paths)], os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
EOF
dev=$(findmnt -no SOURCE "$MNT")
S="/sys/fs/xfs/${dev##*/}/log"
echo "sysfs before the shutdown: head $(cat "$S/log_head_lsn") tail $(cat "$S/log_tail_lsn")"
xfs_io -x -c "shutdown -f" "$MNT"
umount "$MNT"
cp --sparse=always "$IMG" "$OUT"
echo "wrote $OUT in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')s"
{ xfs_logprint -t "$OUT" 2>/dev/null || true; } | sed -n -e '/log tail:/{s/^ */xfs_logprint -t: /;p;q}' || true
