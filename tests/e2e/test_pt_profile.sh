#!/bin/sh
# test_pt_profile.sh - the profile job on Intel PT recordings: `lbr2prof
# perf.data --itrace=OPTS` (samples synthesized from the AUX data in the
# process) against llvm-profgen-22 on what `perf script --itrace=OPTS`
# prints for the same file. Recordings: `record --simulate --intel-pt` of
# tests/workloads/recursion.c and threads.c (one AUX queue per thread).
#  * flat: `-F ip,brstack --show-mmap-events`, two --itrace periods and one
#    extbinary, byte-identical;
#  * context-sensitive (`g`: callchains from the decoder's call stack, with
#    `l` branch stacks: hybrid samples): perf's text made llvm-profgen's
#    input by helpers/absaddr.pl (perf 6.1 prints callchain entries as file
#    offsets); with --no-repair-frames byte-identical in text (extbinary
#    once: the same profile by llvm-profdata show; its FuncMetadata section
#    is in writing order, not LLVM's hash-table order: src/writer/binary.c), including
#    chains cut at g's size; by default (the stack is the
#    decoder's, kept as it is) the sum of the contexts' totals is at least
#    llvm-profgen's (cold merging, pre-inliner and nesting off, as in
#    test_counts_kept.sh), and so is each range's and branch's count over
#    all contexts in the unsymbolized profiles (helpers/rawkept.pl: body
#    counts per function would also hold the call counts llvm-profgen
#    infers from a callee's head where it dropped the call's samples).
set -u
PG=llvm-profgen-22
for t in perf cc perl $PG; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
W=$WORK
ABS="perl $TOP/tests/e2e/helpers/absaddr.pl"
FLAT_CS="--format=text --csspgo-preinliner=0 --gen-cs-nested-profile=0 --profile-summary-cold-count=0 --csprof-merge-cold-context=0"
fail() { echo "FAIL: $*"; exit 1; }
n=0

# total FILE: the sum of the totals of a text profile's top-level entries
total() {
    awk '/^[^ \t!]/ { n = split($0, a, ":"); s += a[n - 1] } END { print s + 0 }' "$1"
}
for prog in recursion threads; do
    cc -O1 -g -fno-omit-frame-pointer -pthread -o "$W/$prog" "$TOP/tests/workloads/$prog.c" ||
        fail "cannot build $prog"
    "$LBR2PROF" record --simulate --intel-pt -o "$W/$prog.data" -- "$W/$prog" \
        > /dev/null 2> "$W/$prog.rec" || fail "record $prog: $(cat "$W/$prog.rec")"
done

# flat profiles
prog=recursion
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

# context-sensitive profiles
for prog in recursion threads; do
    for it in i1000ilg i100il16g4; do
        b="$W/$prog.$it"
        perf script -i "$W/$prog.data" -F ip,dso,brstack --show-mmap-events \
            --itrace=$it 2>/dev/null | $ABS > "$b.hybrid"
        grep -q '^	[0-9a-f]' "$b.hybrid" || fail "$prog $it: perf printed no callchains"
        for fmt in text $([ $prog$it = recursioni1000ilg ] && echo extbinary); do
            $PG --perfscript="$b.hybrid" --binary="$W/$prog" --output="$b.ref.$fmt" \
                --format=$fmt 2> "$b.ref.err" || fail "$PG $prog $it: $(head -3 "$b.ref.err")"
            "$LBR2PROF" "$W/$prog.data" --itrace=$it --binary="$W/$prog" \
                --no-repair-frames -o "$b.my.$fmt" --format=$fmt 2> "$b.my.err" ||
                fail "lbr2prof $prog $it: $(head -3 "$b.my.err")"
            if [ $fmt = extbinary ]; then # FuncMetadata: LLVM's hash-table order
                for f in ref my; do
                    llvm-profdata-22 show --sample --all-functions "$b.$f.$fmt" \
                        > "$b.$f.show" || fail "llvm-profdata-22 show $b.$f.$fmt"
                done
                cmp -s "$b.ref.show" "$b.my.show" ||
                    fail "$prog --itrace=$it --no-repair-frames --format=$fmt differs from $PG"
            else
                cmp -s "$b.ref.$fmt" "$b.my.$fmt" ||
                    fail "$prog --itrace=$it --no-repair-frames --format=$fmt differs from $PG: $(diff "$b.ref.$fmt" "$b.my.$fmt" 2>&1 | head -4)"
            fi
            n=$((n + 1))
        done
        $PG --perfscript="$b.hybrid" --binary="$W/$prog" --output="$b.ref.flat" \
            $FLAT_CS 2> /dev/null || fail "$PG $prog $it $FLAT_CS"
        grep -q '^\[main:[0-9.]* @ ' "$b.ref.flat" || fail "$prog $it: no context under main"
        "$LBR2PROF" "$W/$prog.data" --itrace=$it --binary="$W/$prog" \
            -o "$b.my.flat" $FLAT_CS 2> "$b.my.err" || fail "lbr2prof $prog $it (default)"
        r=$(total "$b.ref.flat"); m=$(total "$b.my.flat")
        [ "$m" -ge "$r" ] || fail "$prog $it: the default mode keeps $m counts, $PG $r"
        grep -q "call stack kept as recorded (Intel PT" "$b.my.err" ||
            fail "$prog $it: the decoder's stacks were not taken as exact"
        $PG --perfscript="$b.hybrid" --binary="$W/$prog" --output="$b.ref.raw" \
            --skip-symbolization 2> /dev/null || fail "$PG $prog $it --skip-symbolization"
        "$LBR2PROF" "$W/$prog.data" --itrace=$it --binary="$W/$prog" \
            -o "$b.my.raw" --skip-symbolization 2> /dev/null || fail "lbr2prof $prog $it raw"
        perl "$TOP/tests/e2e/helpers/rawkept.pl" "$b.ref.raw" "$b.my.raw" > "$b.kept" ||
            fail "$prog $it: the default mode keeps fewer: $(cat "$b.kept")"
        echo "$prog $it: default mode $m counts, $PG $r; $(tail -1 "$b.kept")"
        n=$((n + 1))
    done
done
echo "PASS: $n profiles checked against $PG's"
