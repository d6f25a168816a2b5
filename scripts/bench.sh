#!/bin/sh
# bench.sh [COPIES] - end-to-end flat profile benchmark: lbr2prof vs
# llvm-profgen-19 --perfdata on the same ~100 MB perf.data, the same
# binary, the same output format (extbinary, the default of both).
#
# The input is tests/data/autofdo/test.lbr replicated COPIES times
# (default 26, ~100 MB) by scripts/perf-replicate.c, as bench-reader.sh
# does. Each tool runs once (after one untimed warm-up of each, so that
# both find the file and their own binaries in the page cache); wall time,
# CPU time and peak RSS come from /usr/bin/time. llvm-profgen runs
# `perf script` twice as child processes: their time is included, and the
# peak RSS is the largest of the processes. The two outputs are compared
# (they must be identical) and the ratios printed.
# Run from a built tree (make -j2). Uses $TMPDIR (default /tmp).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
COPIES=${1:-26}
L=$TOP/build/lbr2prof
BIN=$TOP/tests/data/autofdo/test.binary
PG=llvm-profgen-19
command -v $PG >/dev/null 2>&1 || { echo "bench.sh: $PG not found"; exit 1; }
command -v perf >/dev/null 2>&1 || { echo "bench.sh: perf not found ($PG --perfdata needs it)"; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
[ -x "$L" ] || make -C "$TOP" -j2 >/dev/null
cc -O2 -o "$W/perf-replicate" "$TOP/scripts/perf-replicate.c"
"$W/perf-replicate" "$TOP/tests/data/autofdo/test.lbr" "$COPIES" "$W/big.data" > /dev/null 2>&1
echo "input: $(wc -c < "$W/big.data") bytes ($COPIES copies of test.lbr), binary test.binary"

"$L" "$W/big.data" --binary "$BIN" -o "$W/warm.l" 2>/dev/null
$PG --perfdata="$W/big.data" --binary="$BIN" --output="$W/warm.p" >/dev/null 2>&1

# measure TAG NAME CMD... : prints "NAME: W s wall, C s CPU, M MB peak RSS"
# and sets TAG_wall, TAG_cpu, TAG_kb
measure() {
    tag=$1 name=$2; shift 2
    /usr/bin/time -o "$W/t" -f "%e %U %S %M" "$@" >/dev/null 2>&1 ||
        { echo "$name failed"; exit 1; }
    read -r wall user sys kb < "$W/t"
    cpu=$(echo "$user $sys" | awk '{printf "%.2f", $1 + $2}')
    mb=$(echo "$kb" | awk '{printf "%.1f", $1 / 1024}')
    printf '%-34s %6s s wall %6s s CPU %7s MB peak RSS\n' "$name:" "$wall" "$cpu" "$mb"
    eval "${tag}_wall=$wall ${tag}_cpu=$cpu ${tag}_kb=$kb"
}

measure lbr2prof "lbr2prof perf.data -o out" "$L" "$W/big.data" --binary "$BIN" -o "$W/out.l"
measure llvm "llvm-profgen-19 --perfdata" $PG --perfdata="$W/big.data" --binary="$BIN" --output="$W/out.p"
if cmp -s "$W/out.l" "$W/out.p"; then same="identical"; else same="DIFFERENT"; fi
awk -v lw="$lbr2prof_wall" -v pw="$llvm_wall" -v lc="$lbr2prof_cpu" -v pc="$llvm_cpu" \
    -v lk="$lbr2prof_kb" -v pk="$llvm_kb" -v same="$same" 'BEGIN {
    lw = lw < 0.01 ? 0.01 : lw; lc = lc < 0.01 ? 0.01 : lc;
    printf "ratio (llvm-profgen / lbr2prof): %.1fx wall, %.1fx CPU, %.1fx peak RSS; outputs %s\n",
        pw / lw, pc / lc, pk / lk, same }'
[ "$same" = identical ]
