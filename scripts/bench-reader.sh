#!/bin/sh
# bench-reader.sh [COPIES] - reader benchmark on ~100 MB of LBR samples.
#
# Builds a big perf.data by replicating the samples of
# tests/data/autofdo/test.lbr COPIES times (default 26, ~100 MB) with
# scripts/perf-replicate.c (times shifted per copy, FINISHED_ROUND every
# 1000 samples, feature sections moved after the data), then prints, each
# from one run:
#   - time and peak memory (/usr/bin/time "%e s %M KB") of
#     `lbr2prof script` and of `perf script -F comm,pid,tid,time,ip,brstack`
#     on it (output discarded);
#   - the raw reader throughput (MB/s and samples/s, by wall clock and by
#     CPU time, which is what to trust on a shared machine; best of 5 runs
#     of the `lbr2prof readbench` developer command, which reads every
#     event in perf's order and formats nothing) and its peak memory.
# Run from a built tree (make -j2). Uses $TMPDIR (default /tmp) for the file.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
COPIES=${1:-26}
L=$TOP/build/lbr2prof
W=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
[ -x "$L" ] || make -C "$TOP" -j2 >/dev/null
cc -O2 -o "$W/perf-replicate" "$TOP/scripts/perf-replicate.c"
"$W/perf-replicate" "$TOP/tests/data/autofdo/test.lbr" "$COPIES" "$W/big.data"
size=$(wc -c < "$W/big.data")
echo "input: $W/big.data, $size bytes ($COPIES copies of test.lbr)"
cat "$W/big.data" > /dev/null   # warm the page cache

T="/usr/bin/time -f %e_s_%M_KB"
if "$L" script --help >/dev/null 2>&1 || "$L" help 2>/dev/null | grep -q '^ *script'; then
    printf 'lbr2prof script:             '
    $T "$L" script "$W/big.data" 2>&1 >/dev/null | tail -1 | tr _ ' '
else
    echo "lbr2prof script:             (command not in this build)"
fi
if command -v perf >/dev/null 2>&1; then
    printf 'perf script (6.1):           '
    $T perf script -i "$W/big.data" -F comm,pid,tid,time,ip,brstack 2>&1 >/dev/null |
        tail -1 | tr _ ' '
else
    echo "perf script:                 (perf not installed)"
fi
printf 'lbr2prof readbench memory:   '
$T "$L" readbench "$W/big.data" 2>&1 >/dev/null | tail -1 | tr _ ' '
best=0; line=""
for i in 1 2 3 4 5; do
    out=$("$L" readbench "$W/big.data" | tr '\n' ' ')
    mbs=$(echo "$out" | awk '{print int($32)}')
    if [ "$mbs" -gt "$best" ]; then best=$mbs; line=$out; fi
done
# fields: samples N ... | bytes B seconds S MB/s M samples/s X checksum C cpu_seconds T cpu_MB/s U
echo "$line" | awk '{printf "raw reader throughput:       %s MB/s wall, %s MB/s of CPU time; %.0f samples/s wall, %.0f samples/s of CPU time\n      (%s samples, %s bytes: %s s wall, %s s CPU; best of 5 by CPU time)\n", $24, $32, $2 / $22, $2 / $30, $2, $20, $22, $30}'
# The same data as a pipe-mode stream (perf inject), read through a pipe:
# the refill buffer and the arena-held queue instead of the mapping.
if command -v perf >/dev/null 2>&1 && perf inject -i "$W/big.data" -o - > "$W/pipe.data" 2>/dev/null; then
    printf 'raw reader, pipe from stdin: '
    mbs=$(/usr/bin/time -o "$W/time.txt" -f "%e s %M KB" sh -c "cat '$W/pipe.data' | '$L' readbench -" |
        tail -1 | awk '{print $14}')
    echo "$mbs MB/s of CPU time; $(cat "$W/time.txt") (wall incl. cat, peak RSS)"
fi
