#!/bin/sh
# test_reader_split.sh - the perf.data walk over both cores (src/reader/
# tail.c): the back part of a recording read on a second thread, its
# samples folded and delivered once each with their count. Forced at
# several split points (LBR2PROF_DATA_SPLIT), on simulated recordings of one
# process and of three processes merged into one file (pdmerge: the later
# processes' COMM and MMAP records come after early split points), every
# profile and message is byte-identical to reading without the split, in
# the default mode, --no-repair-frames and flat; readbench --fold shows the
# split happened (fewer sample events, the same checksum weighed by the
# repeats) and that --sample-period's reading is not folded.
set -u
W=$WORK
cd "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$TOP/tests/e2e/helpers/recordings.sh"

make_recordings
# a round (FINISHED_ROUND) every 1000 samples: the tail's region needs a
# few of them, so record k1 and k2 again with more samples (~7,700 each)
record_one() { # OUT SEED PROG ARGS...
    out=$1 seed=$2
    shift 2
    "$LBR2PROF" record --simulate -c 11 --seed "$seed" -o "$out" -- "$@" \
        > /dev/null 2> "$out.err" || { cat "$out.err"; fail "record $out"; }
}
record_one k1.data 1 ./kernel 200
record_one k2.data 2 ./kernel 200
make_concat

# readbench --fold: folded when split, same checksum and statistics
"$LBR2PROF" readbench k1.data > plain.txt || fail "readbench k1.data"
LBR2PROF_DATA_SPLIT=30% "$LBR2PROF" readbench --fold k1.data > fold.txt || fail "readbench --fold"
set -- $(grep '^sample_events' fold.txt)
[ "$2" -lt "$4" ] || { cat fold.txt; fail "k1.data: nothing folded ($2 events for $4 samples)"; }
grep -q "samples $4 " plain.txt || { cat plain.txt fold.txt; fail "folded samples' repeats do not add up"; }
sum() { sed -n 's/.*\(bytes [0-9]*\).*\(checksum [0-9a-f]*\).*/\1 \2/p' "$1"; }
[ "$(sum plain.txt)" = "$(sum fold.txt)" ] || { cat plain.txt fold.txt; fail "checksum or bytes differ"; }
echo "ok   readbench --fold at 30%: $2 sample events for $4 samples, same checksum"
LBR2PROF_DATA_SPLIT=50% "$LBR2PROF" readbench --fold cat.data > fold.txt || fail "readbench --fold cat.data"
set -- $(grep '^sample_events' fold.txt)
[ "$2" -lt "$4" ] || { cat fold.txt; fail "cat.data: nothing folded"; }

same() { # FILE NAME OPTIONS...
    f=$1 name=$2
    shift 2
    LBR2PROF_DATA_SPLIT=0 "$LBR2PROF" $f "$@" -o one.out > one.err 2>&1 ||
        { cat one.err; fail "$f $name: without the split"; }
    [ -s one.out ] || fail "$f $name: empty output"
    for at in 10% 35% 60% 85%; do
        LBR2PROF_DATA_SPLIT=$at "$LBR2PROF" $f "$@" -o split.out > split.err 2>&1 ||
            { cat split.err; fail "$f $name: split at $at"; }
        cmp -s one.out split.out || fail "$f $name: split at $at: the profiles differ"
        cmp -s one.err split.err || { diff one.err split.err; fail "$f $name: split at $at: the messages differ"; }
    done
    echo "ok   $f $name: split at 10/35/60/85%: identical ($(wc -c < one.out) bytes, $(grep -c '^warning' one.err) warnings)"
}
for f in k1.data cat.data; do
    same $f "CS extbinary" --binary=kernel --binary=inlining
    same $f "no repair, text" --binary=kernel --binary=inlining --no-repair-frames --format=text
    same $f "flat" --binary=kernel --binary=inlining --ignore-stack-samples --format=text
done
same k1.data "flat --sample-period" --binary=kernel --ignore-stack-samples --sample-period=97 --format=text
