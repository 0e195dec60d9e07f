#!/usr/bin/env bash
# Wall time and peak memory against the log's size, side by side in one
# run: `xfs-explorer log --json`, `log` (text), `replay` and `ops` against
# `xfs_logprint -t`, the kernel's recovery of a copy (mount + umount) and
# reading the live log's bytes from the page cache (`dd`), on the images
# of benches/make-log-sizes.sh and benches/make-large-checkpoints.sh.
#
#   benches/make-log-sizes.sh; benches/make-large-checkpoints.sh   # once, as root
#   benches/scale-bench.sh [RUNS] [IMAGE...]        # as root (loop mounts)
#
# BIN=path/to/xfs-explorer measures that build instead of a fresh one
# (a copy of target/release's, made at the start). OTHER=path/to/xfs-explorer also runs another build's commands (for
# before/after figures), interleaved with this build's. CMDS narrows what
# runs (default: "log-json log-text replay ops logprint kernel").
# Prints every run (wall seconds and peak resident set from GNU time), then
# per image and command the median wall and the largest peak.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
shift || true
imgs=("$@")
[[ ${#imgs[@]} -gt 0 ]] || imgs=(benches/large-ckpt.img benches/log-512m.img benches/log-1024m.img benches/log-2038m.img)
CMDS=${CMDS:-log-json log-text replay ops logprint kernel read}
OTHER=${OTHER:-}
[ "$(id -u)" = 0 ] || [[ $CMDS != *kernel* ]] || { echo "needs root for the kernel's mount (or CMDS without kernel)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "needs GNU time (apt-get install time)" >&2; exit 1; }
for i in "${imgs[@]}"; do [ -f "$i" ] || { echo "no image $i: run benches/make-log-sizes.sh" >&2; exit 1; }; done
if [ -z "${BIN:-}" ]; then
    cargo build --release --locked --bin xfs-explorer -q
    # A copy: a build during the run does not change what is measured.
    BIN=$(mktemp /tmp/xfs-explorer.XXXXXX)
    cp target/release/xfs-explorer "$BIN"
    chmod +x "$BIN"
    BIN_COPY=$BIN
fi
WORK=$(mktemp -d "${WORKDIR:-/dev/shm}/scale-bench.XXXXXX")
MNT="$WORK/mnt"
mkdir -p "$MNT"
trap 'umount "$MNT" 2>/dev/null || true; rm -rf "$WORK"; [ -n "${BIN_COPY:-}" ] && rm -f "$BIN_COPY"' EXIT

# One command, timed: prints "wall peak_kib".
timed() {
    /usr/bin/time -f "%e %M" -o "$WORK/t" "$@" > /dev/null 2> "$WORK/err" || { echo "failed: $*" >&2; tail -3 "$WORK/err" >&2; }
    cat "$WORK/t" | tail -1
}
kernel_timed() { # the kernel's recovery of a copy of $1 (copy not timed)
    cp --sparse=always "$1" "$WORK/copy.img"
    sync
    timed sh -c "mount -o loop '$WORK/copy.img' '$MNT' && umount '$MNT'"
    rm -f "$WORK/copy.img"
}
run_one() { # IMAGE WHICH CMD -> "wall peak"
    local img=$1 bin=$2 cmd=$3
    case $cmd in
        log-json) timed "$bin" log --json "$img" ;;
        log-text) timed "$bin" log "$img" ;;
        replay) timed "$bin" replay "$img" ;;
        ops) timed "$bin" ops "$img" ;;
        logprint) timed xfs_logprint -t "$img" ;;
        kernel) kernel_timed "$img" ;;
        read) timed dd if="$img" of=/dev/null bs=1M iflag=skip_bytes,count_bytes skip="${LIVE[0]}" count="${LIVE[1]}" ;;
    esac
}

: > "$WORK/all"
for img in "${imgs[@]}"; do
    cat "$img" > /dev/null
    "$BIN" log --json "$img" > "$WORK/log.json"
    python3 -c '
import json, sys
d = json.load(open(sys.argv[2]))
lsn = lambda l: "%d:%d" % (l["cycle"], l["block"])
print(sys.argv[1] + ": head", lsn(d["head"]), "tail", lsn(d["tail"]), "records", d["records"], "transactions", len(d["transactions"]),
      "items", sum(t["num_items"] or 0 for t in d["transactions"]), file=sys.stderr)
# The live part: its first byte and its length (a wrapped live part is
# read as one run of the same length from its first byte).
L, h, t = d["log"], d["head"], d["tail"]
live = (h["cycle"] - t["cycle"]) * L["len_bbs"] + h["block"] - t["block"]
print((L["start_daddr"] + t["block"]) * 512, live * 512)' "$img" "$WORK/log.json" > "$WORK/live" || true
    read -r -a LIVE < "$WORK/live"
    rm -f "$WORK/log.json"
    for r in $(seq "$RUNS"); do
        for cmd in $CMDS; do
            whos=(this)
            case $cmd in logprint|kernel|read) whos=(-) ;; *) [ -n "$OTHER" ] && whos+=(other) ;; esac
            for who in "${whos[@]}"; do
                bin=$BIN; [ "$who" = other ] && bin=$OTHER
                read -r wall kib < <(run_one "$img" "$bin" "$cmd")
                printf '%s run %d: %-5s %-9s wall %7s s  peak %6d MiB\n' "$(basename "$img")" "$r" "$who" "$cmd" "$wall" $((kib / 1024))
                echo "$(basename "$img") $who $cmd $wall $kib" >> "$WORK/all"
            done
        done
    done
done
echo "medians (wall) and largest peak:"
awk '{k = $1 " " $2 " " $3; w[k] = w[k] " " $4; if ($5 > m[k]) m[k] = $5; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
     END { for (i = 1; i <= n; i++) { k = order[i]; c = split(substr(w[k], 2), a, " ");
           for (x = 1; x <= c; x++) for (y = x + 1; y <= c; y++) if (a[y] + 0 < a[x] + 0) { t = a[x]; a[x] = a[y]; a[y] = t }
           med[k] = a[int((c + 1) / 2)];
           printf "%-40s median %7.2f s  peak %6d MiB\n", k, med[k], m[k] / 1024 }
           print "ratios of medians:";
           for (i = 1; i <= n; i++) { split(order[i], f, " "); if (f[2] != "this") continue; img = f[1];
             if (f[3] == "log-json") {
               if ((img " - logprint") in med) printf "%-24s xfs_logprint -t / log --json %5.1fx\n", img, med[img " - logprint"] / med[order[i]];
               if ((img " - read") in med) printf "%-24s log --json at %.2f of the speed of reading the live log\n", img, med[img " - read"] / med[order[i]] }
             if (f[3] == "replay" && (img " - kernel") in med) printf "%-24s kernel mount / replay %5.1fx\n", img, med[img " - kernel"] / med[order[i]] } }' "$WORK/all"
