#!/bin/sh
# test_pt_profile.sh - the profile job on Intel PT recordings: `lbr2prof
# perf.data --itrace=OPTS` (samples synthesized from the AUX data in the
# process) against llvm-profgen-22 on what `perf script --itrace=OPTS -F
# ip,brstack --show-mmap-events` prints for the same file. Recordings:
# `record --simulate --intel-pt` of tests/workloads/recursion.c; the text
# profiles of two --itrace periods and one extbinary must be byte-identical.
# (Kept to three runs of each tool: the test is part of make check.)
set -u
PG=llvm-profgen-22
for t in perf cc $PG; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
W=$WORK
fail() { echo "FAIL: $*"; exit 1; }
n=0
for prog in recursion; do
    cc -O1 -g -fno-omit-frame-pointer -o "$W/$prog" "$TOP/tests/workloads/$prog.c" ||
        fail "cannot build $prog"
    "$LBR2PROF" record --simulate --intel-pt -o "$W/$prog.data" -- "$W/$prog" \
        > /dev/null 2> "$W/$prog.rec" || fail "record $prog: $(cat "$W/$prog.rec")"
    for it in i1000il i10usl32; do
        perf script -i "$W/$prog.data" -F ip,brstack --show-mmap-events \
            --itrace=$it > "$W/$prog.$it.script" 2>/dev/null
        for fmt in text $([ $it = i1000il ] && echo extbinary); do
            $PG --perfscript="$W/$prog.$it.script" --binary="$W/$prog" \
                --output="$W/ref.$prog.$it.$fmt" --format=$fmt 2> "$W/ref.err" ||
                fail "$PG $prog $it: $(head -3 "$W/ref.err")"
            "$LBR2PROF" "$W/$prog.data" --itrace=$it --binary="$W/$prog" \
                -o "$W/my.$prog.$it.$fmt" --format=$fmt 2> "$W/my.err" ||
                fail "lbr2prof $prog $it: $(head -3 "$W/my.err")"
            cmp -s "$W/ref.$prog.$it.$fmt" "$W/my.$prog.$it.$fmt" ||
                fail "$prog --itrace=$it --format=$fmt differs from $PG"
            n=$((n + 1))
        done
        [ "$(wc -l < "$W/ref.$prog.$it.text")" -gt 3 ] || fail "$prog $it: empty profile"
    done
done
echo "PASS: $n profiles equal $PG's"
