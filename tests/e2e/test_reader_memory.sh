#!/bin/sh
# test_reader_memory.sh - streaming: peak memory does not grow with the
# number of samples. test.lbr is replicated 4 and 16 times
# (scripts/perf-replicate.c: 16 MB and 63 MB, FINISHED_ROUND every 1000
# samples); the peak RSS (/usr/bin/time %M) of the raw reader (file mode,
# and pipe mode from stdin through `perf inject -o -`), of `lbr2prof
# script` and of the flat profile must grow by less than 6 MB while the
# input grows by 47 MB. (The reader maps the file and prefetches 2 MB
# ahead, so smaller inputs do not reach the plateau.) The same for the
# context-sensitive pipeline (unwinder, CS generator, pre-inliner, writer):
# tests/workloads/kernel.c built with clang-19 -fno-omit-frame-pointer,
# recorded with `lbr2prof record --simulate` (8 MB of hybrid samples),
# replicated 4 and 16 times as perf.data; its `lbr2prof script
# --raw-addresses` text (12 MB) with the samples repeated 2 and 8 times. Skipped under AddressSanitizer (its allocator and
# shadow memory make RSS meaningless).
set -u
[ -x /usr/bin/time ] || { echo "skip: /usr/bin/time not installed"; exit 77; }
nm "$LBR2PROF" 2>/dev/null | grep -q __asan_init && { echo "skip: ASan build"; exit 77; }
cd "$WORK" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
A=$TOP/tests/data/autofdo
cc -O2 -o replicate "$TOP/scripts/perf-replicate.c" || fail "building perf-replicate"
for c in 4 16; do
    ./replicate "$A/test.lbr" $c r$c.data 2>/dev/null || fail "replicate $c"
done

# rss KB-variable CMD... : peak RSS in KB of CMD (output discarded)
rss() {
    /usr/bin/time -o t.txt -f %M "$@" > /dev/null 2> err.txt || { cat err.txt; fail "$*"; }
    tail -1 t.txt
}

pipe=0
if command -v perf >/dev/null 2>&1; then
    pipe=1
    for c in 4 16; do
        perf inject -i r$c.data -o - > p$c.data 2>/dev/null || pipe=0
    done
fi

check() { # name small-KB big-KB
    grow=$(( $3 - $2 ))
    echo "$1: $2 KB -> $3 KB (input x4)"
    [ $grow -lt 6144 ] || fail "$1: peak RSS grew by $grow KB"
}
check "readbench (file)" "$(rss "$LBR2PROF" readbench r4.data)" "$(rss "$LBR2PROF" readbench r16.data)"
if [ $pipe -eq 1 ]; then
    s=$(rss sh -c "cat p4.data | \"$LBR2PROF\" readbench -")
    b=$(rss sh -c "cat p16.data | \"$LBR2PROF\" readbench -")
    check "readbench (pipe from stdin)" "$s" "$b"
fi
check "script" "$(rss "$LBR2PROF" script r4.data)" "$(rss "$LBR2PROF" script r16.data)"
check "flat profile" "$(rss "$LBR2PROF" r4.data --binary "$A/test.binary" -o o4.prof)" \
    "$(rss "$LBR2PROF" r16.data --binary "$A/test.binary" -o o16.prof)"
cmp -s o4.prof o16.prof && fail "profiles of x4 and x16 should differ (counts)"
rm -f r4.data r16.data p4.data p16.data

command -v clang-19 >/dev/null 2>&1 || { echo "CS part skipped: clang-19 not installed"; exit 0; }
clang-19 -O2 -g -fno-omit-frame-pointer -o kernel "$TOP/tests/workloads/kernel.c" ||
    fail "building kernel.c"
"$LBR2PROF" record --simulate -c 50 --seed 3 -o k.data -- ./kernel 600 > /dev/null 2>&1 ||
    fail "recording kernel.c"
for c in 4 16; do
    ./replicate k.data $c k$c.data 2>/dev/null || fail "replicate k.data $c"
done
check "CS profile from perf.data" \
    "$(rss "$LBR2PROF" k4.data --binary kernel -o c4.prof)" \
    "$(rss "$LBR2PROF" k16.data --binary kernel -o c16.prof)"
cmp -s c4.prof c16.prof && fail "CS profiles of x4 and x16 should differ (counts)"
rm -f k4.data k16.data
"$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses k.data > k.txt ||
    fail "script k.data"
for c in 2 8; do
    awk -v c=$c '/PERF_RECORD_MMAP/ { print; next } { b[n++] = $0 }
        END { for (k = 0; k < c; k++) for (i = 0; i < n; i++) print b[i] }' k.txt > k$c.txt
done
check "CS profile from perf script ($(wc -c < k2.txt) -> $(wc -c < k8.txt) bytes)" \
    "$(rss "$LBR2PROF" --perfscript=k2.txt --binary kernel -o t2.prof)" \
    "$(rss "$LBR2PROF" --perfscript=k8.txt --binary kernel -o t8.prof)"
cmp -s t2.prof t8.prof && fail "CS profiles of x2 and x8 should differ (counts)"
exit 0
