#!/bin/sh
# test_text_split.sh - perf script text whose tail a second thread counts
# (src/reader/pstail.c) gives the profile and the warnings it gives
# without: llvm-profgen's perf scripts that have a binary (the conformance
# tests' pairs), their samples three times over (so that they repeat), CS
# default mode (with --show-detailed-warning too), --no-repair-frames and
# flat, the tail forced (LBR2PROF_TEXT_SPLIT) from a quarter, the half and
# three quarters of the file, waited for (OFFSET) or stopped where the
# head gets to it with new tails after it (OFFSET+), on two CPUs and on
# one, against
# LBR2PROF_TEXT_SPLIT=off (which the conformance tests hold to
# llvm-profgen).
set -u
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
D=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0; n=0

run() { # out split cpu args...
    out=$1 split=$2 cpu=$3; shift 3
    if [ "$cpu" = one ] && command -v taskset >/dev/null 2>&1; then
        LBR2PROF_TEXT_SPLIT=$split taskset -c 0 "$LBR2PROF" "$@" --format=text \
            -o "$out.txt" 2>"$out.err"
    else
        LBR2PROF_TEXT_SPLIT=$split "$LBR2PROF" "$@" --format=text \
            -o "$out.txt" 2>"$out.err"
    fi
    echo $? >"$out.rc"
}

for c in noinline-cs-noprobe.perfscript:noinline-cs-noprobe \
         inline-cs-noprobe.perfscript:inline-cs-noprobe \
         callback-external-addr.perfscript:callback-external-addr \
         cs-interrupt.perfscript:noinline-cs-noprobe \
         external-address.perfscript:inline-cs-noprobe \
         func-split.perfscript:func-split \
         multi-load-segs.perfscript:multi-load-segs \
         recursion-compression-noprobe.perfscript:recursion-compression-noprobe \
         noinline-cs-pseudoprobe.perfscript:noinline-cs-pseudoprobe \
         inline-cs-pseudoprobe.perfscript:inline-cs-pseudoprobe \
         cs-preinline-cost.perfscript:cs-preinline-cost \
         noinline-tailcall-probe.perfscript:noinline-tailcall-probe \
         inline-noprobe2.perfscript:inline-noprobe2 \
         noprobe.perfscript:noprobe cmov_3.perfscript:cmov_3; do
    b=$D/${c##*:}.perfbin
    [ -f "$D/${c%%:*}" ] && [ -f "$b" ] || continue
    # its samples three times over, the MMAP lines once
    t=$WORK/in.perfscript
    { cat "$D/${c%%:*}"; echo; grep -v PERF_RECORD_MMAP "$D/${c%%:*}"
      echo; grep -v PERF_RECORD_MMAP "$D/${c%%:*}"; } >"$t"
    size=$(wc -c <"$t")
    for o in "" "--no-repair-frames" "--ignore-stack-samples" \
             "--show-detailed-warning"; do
        # shellcheck disable=SC2086
        run ref off two --perfscript="$t" --binary="$b" $o
        for at in $((size / 4)) $((size / 2)) $((size * 3 / 4)) \
                  $((size / 4))+ $((size / 2))+; do
            for cpu in two one; do
                n=$((n + 1))
                # shellcheck disable=SC2086
                run got "$at" $cpu --perfscript="$t" --binary="$b" $o
                if ! cmp -s ref.rc got.rc || ! cmp -s ref.txt got.txt ||
                   ! cmp -s ref.err got.err; then
                    echo "FAIL ${c%%:*} $o: tail from $at ($cpu CPU) differs"
                    diff ref.txt got.txt | head -5; diff ref.err got.err | head -5
                    fails=$((fails + 1))
                fi
            done
        done
    done
done
echo "$n cases, $fails failed"
[ "$n" -gt 0 ] && [ $fails -eq 0 ]
