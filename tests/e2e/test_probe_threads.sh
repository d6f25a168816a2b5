#!/bin/sh
# test_probe_threads.sh - a probe CS profile is the same on one CPU as on
# two: with two, the pre-inliner's context sizes are built on a second
# thread while the profile is generated (src/context/sizes.c,
# cs_sizes_start), sharing the binaries under a lock, with its warnings
# held until the join. Every probe perf script of llvm-profgen's inputs,
# default mode and --no-repair-frames, with --show-detailed-warning and
# low hot/cold thresholds, and tailcall.c built now with clang-19
# -fpseudo-probe-for-profiling and recorded with `record --simulate`,
# with a hot-inline threshold low enough that the pre-inliner's choices
# depend on the sizes (an empty size trie changes its profile): the text
# profile and stderr under `taskset -c 0` (one thread) equal to those on
# all CPUs.
set -u
command -v taskset >/dev/null 2>&1 || { echo "skip: taskset not found"; exit 77; }
[ "$(nproc)" -ge 2 ] || { echo "skip: one CPU: nothing runs alongside"; exit 77; }
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
D=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0; n=0

# same NAME IN... -- OPTS: one CPU against all of them
same() {
    name=$1; shift
    n=$((n + 1))
    "$LBR2PROF" "$@" --format=text -o two.txt 2>two.err
    r2=$?
    taskset -c 0 "$LBR2PROF" "$@" --format=text -o one.txt 2>one.err
    r1=$?
    if [ $r1 != $r2 ] || ! [ -s one.txt ] || ! cmp -s one.txt two.txt ||
       ! cmp -s one.err two.err; then
        echo "FAIL $name: one CPU (rc $r1) and two (rc $r2) differ"
        diff one.txt two.txt | head -5; diff one.err two.err | head -5
        fails=$((fails + 1))
    fi
}

if command -v clang-19 >/dev/null 2>&1; then
    # shellcheck disable=SC2015
    clang-19 -O2 -g -fno-omit-frame-pointer -fpseudo-probe-for-profiling \
        "$TOP/tests/workloads/tailcall.c" -o tailcall &&
        "$LBR2PROF" record --simulate -c 400 --seed 7 -o tailcall.data -- ./tailcall 3000 \
            >/dev/null 2>&1 || { echo "FAIL tailcall: build or record"; exit 1; }
    for o in "" "--sample-profile-hot-inline-threshold=1" \
             "--no-repair-frames --sample-profile-hot-inline-threshold=1"; do
        # shellcheck disable=SC2086
        same "tailcall $o" tailcall.data --binary tailcall $o
    done
else
    echo "(clang-19 not found: llvm-profgen's inputs only)"
fi

for c in inline-cs-pseudoprobe.perfscript:inline-cs-pseudoprobe \
         noinline-cs-pseudoprobe.perfscript:noinline-cs-pseudoprobe \
         noinline-tailcall-probe.perfscript:noinline-tailcall-probe \
         recursion-compression-pseudoprobe.perfscript:recursion-compression-pseudoprobe \
         truncated-pseudoprobe.perfscript:truncated-pseudoprobe \
         unique-linkage-name-probe.perfscript:unique-linkage-name-probe \
         cs-preinline-cost.perfscript:cs-preinline-cost; do
    for o in "" "--no-repair-frames" "--show-detailed-warning" \
             "--no-repair-frames --profile-summary-cold-count=0" \
             "--profile-summary-hot-count=1" \
             "--no-repair-frames --profile-summary-hot-count=3"; do
        # shellcheck disable=SC2086
        same "${c%%:*} $o" --perfscript="$D/${c%%:*}" --binary="$D/${c##*:}.perfbin" $o
    done
done
echo "$n cases, $fails failed"
[ $fails -eq 0 ]
