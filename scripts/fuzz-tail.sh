#!/bin/sh
# fuzz-tail.sh SECONDS - run the reader's tails' differential fuzzer
# (tests/fuzz/fuzz_tail.c: every input read walked and with the tail
# forced, perf.data's or perf script text's, the two readings compared)
# for SECONDS. Seeds: the file-mode perf.data files of
# tests/data/perf-corpus, the inputs test_tail builds (samples with rounds,
# side-band records after the split, times going back, cut and corrupt
# tails; kept by LBR2PROF_TAIL_SEEDS), and llvm-profgen's perf scripts
# (tests/data/llvm-profgen-inputs: hybrid and LBR-only, aggregated ones). Everything
# goes under the build folders: new inputs to build-fuzz/tail/corpus,
# findings to build-fuzz/tail/crash-* (and leak-*, timeout-*, oom-*).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
SECS=${1:-60}
cd "$TOP"
[ -x build-fuzz/fuzz_tail ] || make fuzz
[ -x build/tests/test_tail ] || make unit
O=build-fuzz/tail
mkdir -p $O/corpus $O/seeds
for f in tests/data/perf-corpus/perf.data.*; do
    [ "$(wc -c < "$f")" -le 262144 ] && head -c 8 "$f" | grep -q PERFILE2 && cp "$f" $O/seeds/
done
cp tests/data/llvm-profgen-inputs/*.perfscript tests/data/llvm-profgen-inputs/*.aggperfscript $O/seeds/
LBR2PROF_TAIL_SEEDS=$TOP/$O/seeds build/tests/test_tail > /dev/null
exec nice -n 19 build-fuzz/fuzz_tail -max_total_time="$SECS" -rss_limit_mb=2048 \
    -artifact_prefix=$O/ $O/corpus $O/seeds
