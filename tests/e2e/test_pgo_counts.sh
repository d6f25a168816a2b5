#!/bin/sh
# test_pgo_counts.sh - the default mode keeps, per function, at least the
# counts llvm-profgen-22 keeps from the same recording (the brief's rule,
# and the first suspect of issue 20: scripts/pgo-bench.sh, docs/pgo-bench.md).
# Workloads built now with clang-19 (the bench's flags), recorded with
# `lbr2prof record --simulate`; llvm-profgen-22 reads
# `lbr2prof script --raw-addresses` of the perf.data, lbr2prof the perf.data:
#  1. raw CS profiles (--skip-symbolization): per function (the contexts'
#     leaf), the range counts weighted by their bytes and the branch
#     counts of lbr2prof >= llvm-profgen's;
#  2. flat CS profiles, symbolized, cold contexts not merged: per function,
#     total and head samples of lbr2prof >= llvm-profgen's.
# Both by scripts/pgo/cs-compare.pl. (2 can fall short where 1 does not:
# llvm-profgen infers a call-site count from a child context without head
# samples, docs/pgo-bench.md; not on these workloads.)
# The same checks must fail for `--drop-unknown-callers` (the default mode
# before it kept truncated contexts) on at least one workload: they can fail.
set -u
for t in llvm-profgen-22 clang-19 perl; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
cd "$WORK" || exit 1
fails=0
bites=0
FLAT="--csspgo-preinliner=0 --gen-cs-nested-profile=0 --csprof-merge-cold-context=0 --format=text"

CMP="perl $TOP/scripts/pgo/cs-compare.pl"

for w in "qsort_cb 300" "sigjmp 200" "kernel 40"; do
    set -- $w
    b=$1
    clang-19 -O2 -g -fno-omit-frame-pointer -fdebug-info-for-profiling \
        "$TOP/tests/workloads/$b.c" -o $b || { fails=$((fails + 1)); continue; }
    "$LBR2PROF" record --simulate -c 53 --seed 3 -o $b.data -- ./$b $2 >/dev/null 2>&1 ||
        { echo "FAIL $b: record"; fails=$((fails + 1)); continue; }
    "$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses $b.data >$b.script
    llvm-profgen-22 --perfscript=$b.script --binary=$b --skip-symbolization \
        --output=$b.pg.raw >/dev/null 2>&1
    # shellcheck disable=SC2086
    llvm-profgen-22 --perfscript=$b.script --binary=$b $FLAT --output=$b.pg.txt >/dev/null 2>&1
    [ -s $b.pg.raw ] && [ -s $b.pg.txt ] || { echo "FAIL $b: llvm-profgen-22"; fails=$((fails + 1)); continue; }
    for mode in default drop; do
        opt=
        [ $mode = drop ] && opt=--drop-unknown-callers
        # shellcheck disable=SC2086
        "$LBR2PROF" $b.data --binary=$b --skip-symbolization $opt --output=$b.$mode.raw >/dev/null 2>&1 &&
            "$LBR2PROF" $b.data --binary=$b $FLAT $opt --output=$b.$mode.txt >/dev/null 2>&1 ||
            { echo "FAIL $b $mode: lbr2prof"; fails=$((fails + 1)); continue; }
        $CMP $b.$mode.raw $b.pg.raw 5 >$b.$mode.rawcmp
        raw=$?
        $CMP $b.$mode.txt $b.pg.txt 5 >$b.$mode.cmp
        flat=$?
        if [ $raw -gt 1 ] || [ $flat -gt 1 ]; then
            echo "FAIL $b $mode: cs-compare.pl"; cat $b.$mode.rawcmp $b.$mode.cmp; fails=$((fails + 1))
        elif [ $mode = default ]; then
            if [ $raw -ne 0 ] || [ $flat -ne 0 ]; then
                echo "FAIL $b: the default mode keeps fewer counts than llvm-profgen-22 in some functions"
                sed -n '6,$p' $b.$mode.rawcmp $b.$mode.cmp
                fails=$((fails + 1))
            else
                echo "ok $b: every function keeps >= llvm-profgen-22's counts ($(sed -n 2p $b.$mode.cmp))"
            fi
        elif [ $raw -ne 0 ] && [ $flat -ne 0 ]; then
            bites=$((bites + 1))
            echo "   ($b: --drop-unknown-callers is short: $(sed -n 6p $b.$mode.cmp))"
        fi
    done
done
[ $bites -gt 0 ] || { echo "FAIL: --drop-unknown-callers kept as much as llvm-profgen everywhere: the check proves nothing here"; fails=$((fails + 1)); }
echo "$fails failed"
[ $fails -eq 0 ]
