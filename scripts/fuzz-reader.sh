#!/bin/sh
# fuzz-reader.sh SECONDS - run the perf.data reader fuzzer (make fuzz) for
# SECONDS with a seed corpus of the small files of tests/data/perf-corpus.
# Everything goes under the build folder: new inputs to
# build-fuzz/reader/corpus, findings to build-fuzz/reader/crash-* (and
# leak-*, timeout-*, oom-*).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-60}
cd "$TOP"
[ -x build-fuzz/fuzz_reader ] || make fuzz
O=build-fuzz/reader
mkdir -p $O/corpus $O/seeds
for f in tests/data/perf-corpus/perf.data.*; do
    [ "$(wc -c < "$f")" -le 262144 ] && cp "$f" $O/seeds/
done
# Seeds of the shapes the corpus lacks (compressed, pipe, two events,
# build-id mmaps, dwarf stacks), recorded here with perf when it works.
if command -v perf >/dev/null 2>&1; then
    W='i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done'
    S=$O/seeds
    perf record -q -e cpu-clock -z -o $S/z.data -- sh -c "$W" >/dev/null 2>&1 || true
    perf record -q -e cpu-clock -z -o - -- sh -c "$W" 2>/dev/null > $S/pipez.data || true
    perf record -q -e cpu-clock -o - -- sh -c "$W" 2>/dev/null > $S/pipe.data || true
    perf record -q -e cpu-clock -e page-faults -o $S/multi.data -- sh -c "$W" >/dev/null 2>&1 || true
    perf record -q -e cpu-clock --buildid-mmap -o $S/bid.data -- sh -c "$W" >/dev/null 2>&1 || true
    perf record -q -e cpu-clock -z --call-graph dwarf,1024 -o $S/zdw.data -- sh -c "$W" >/dev/null 2>&1 || true
    rm -f $S/*.old
fi
exec nice -n 19 build-fuzz/fuzz_reader -max_total_time="$SECS" -rss_limit_mb=2048 \
    -max_len=262144 -timeout=10 -artifact_prefix=$O/ -print_final_stats=1 \
    $O/corpus $O/seeds
