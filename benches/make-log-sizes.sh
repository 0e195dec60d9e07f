#!/usr/bin/env bash
# Make the three images of the log-size benchmark (benches/scale-bench.sh):
# benches/log-512m.img, benches/log-1024m.img and benches/log-2038m.img,
# 16 GiB sparse images whose internal logs are 512 MiB, 1 GiB and 2038 MiB
# (the largest log mkfs.xfs accepts), each filled to about 72% by the kernel
# running benches/make-big-log.sh's churn and shut down dirty.
#
# Usage (as root): benches/make-log-sizes.sh [SIZE...]   (default: 512m 1024m 2038m)
#
# The images are git-ignored (/benches/*.img). They take about 0.5, 1 and
# 1.7 GiB of disk each (sparse). The kernel writes all dirty metadata back
# every fs.xfs.xfssyncd_centisecs, which would move the log's tail up before
# a large log fills: SYNCD is raised with the log's size (30 s per 256 MiB,
# at least 60 s).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(512m 1024m 2038m)
for s in "${sizes[@]}"; do
    mib=${s%m}
    syncd=$(( mib * 30 / 256 ))
    (( syncd >= 60 )) || syncd=60
    echo "== log $s (SYNCD=$syncd)"
    LOGSIZE=$s SIZE=${SIZE:-16G} SYNCD=$syncd OUT="$HERE/log-$s.img" "$HERE/make-big-log.sh"
done
