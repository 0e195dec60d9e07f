#!/usr/bin/env bash
# `xfs-explorer ops` against the log decode (`log --json`) on the same
# large dirty image, side by side in one run; with OTHER (another build of
# xfs-explorer, e.g. of an earlier commit) its `ops` runs interleaved with
# this build's, for before/after figures.
#
#   benches/make-big-log.sh                       # once, as root
#   benches/ops-bench.sh [IMAGE] [RUNS] [OTHER]
#
# Prints, per run and command, wall, user and system seconds and the peak
# resident set (GNU time), then each command's median wall and user time.
set -euo pipefail
cd "$(dirname "$0")/.."
IMG=${1:-benches/big-dirty.img}
RUNS=${2:-3}
OTHER=${3:-}
[ -f "$IMG" ] || { echo "no image $IMG: run benches/make-big-log.sh first" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
cargo build --release --locked --bin xfs-explorer -q
BIN=target/release/xfs-explorer
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

# Warm the page cache so every command reads from memory.
cat "$IMG" > /dev/null
cmds=("this:log --json" "this:ops" "this:ops --json")
[ -n "$OTHER" ] && cmds+=("other:ops" "other:ops --json")
for i in $(seq "$RUNS"); do
  for c in "${cmds[@]}"; do
    which=${c%%:*}; args=${c#*:}
    bin=$BIN; [ "$which" = other ] && bin=$OTHER
    # shellcheck disable=SC2086
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/t" "$bin" $args "$IMG" > /dev/null
    read -r wall user sys rss < "$OUT/t"
    echo "$which $args" "$wall" "$user" >> "$OUT/all"
    printf 'run %d: %-6s %-12s wall %6s s  user %6s s  sys %5s s  peak %4d MiB\n' \
      "$i" "$which" "$args" "$wall" "$user" "$sys" $((rss / 1024))
  done
done
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for c in "${cmds[@]}"; do
  key="${c%%:*} ${c#*:}"
  w=$(grep -F "$key " "$OUT/all" | awk -v k="$key" 'substr($0, 1, length(k)) == k && NF == split(k, _) + 2 {print $(NF-1)}' | median)
  u=$(grep -F "$key " "$OUT/all" | awk -v k="$key" 'substr($0, 1, length(k)) == k && NF == split(k, _) + 2 {print $NF}' | median)
  printf 'median: %-6s %-12s wall %s s, user %s s\n' "${c%%:*}" "${c#*:}" "$w" "$u"
done
