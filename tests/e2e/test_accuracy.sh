#!/bin/sh
# test_accuracy.sh - `lbr2prof accuracy` on the workloads of tests/workloads
# (compiled now with clang-19 -O2 -g -fno-omit-frame-pointer), recorded
# with `record --simulate --truth`. For each one:
#  * the ideal CS profile (--emit-ideal) scores 100% against itself, and
#    llvm-profgen-19 fed the ideal counters as an unsymbolized profile
#    (--emit-ideal-raw, --unsymbolized-profile) makes the same profile,
#    line for line and in the same order, but for the `!Attributes: 1`
#    lines that format cannot carry: the ideal profile is what llvm-
#    profgen's CS generator makes of the true counters (accuracy uses
#    lbr2prof's generator, lp_cs_profile, for it);
#  * llvm-profgen-19's flat profile from the LBR-only perf script is the
#    flat ideal byte for byte and scores 100% against it (the truth's LBR
#    is the perf.data's);
#  * llvm-profgen-19's CS profile from `lbr2prof script --raw-addresses`
#    scores within plausible bounds, and `llvm-profdata-19 overlap`
#    prints the same similarity as `accuracy` for it; where it scores
#    100.00% it is the ideal profile byte for byte, `!Attributes` included;
#  * the true contexts of tail calls, callbacks from libc, signal handlers
#    and longjmp are what docs/accuracy.md says.
# Both numbers are printed; lbr2prof's own CS profile is one more `judge`
# line (see run_one).
set -u
for t in clang-19 llvm-profgen-19 llvm-profdata-19; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
W=$WORK
fail() { echo "FAIL: $*"; exit 1; }
CFLAGS="-O2 -g -fno-omit-frame-pointer"
PG_CS="--format=text --csspgo-preinliner=0 --gen-cs-nested-profile=0 --csprof-merge-cold-context=0 --compress-recursion=0"

# judge NAME PROFILE LABEL MIN [FLOOR]: `accuracy` of PROFILE against
# NAME's truth; prints its closing line, fails below MIN percent (and below
# FLOOR, another tool's score, when given). Sets SCORE and SIM.
judge() {
    "$LBR2PROF" accuracy --truth "$W/$1.truth" --binary "$W/$1" --rows 0 "$2" \
        > "$W/$1.$3.acc" 2> "$W/$1.$3.err" || { cat "$W/$1.$3.err"; fail "$1: accuracy of $3"; }
    line=$(tail -n 1 "$W/$1.$3.acc")
    echo "$1 $3: $line"
    SCORE=$(echo "$line" | sed -n 's/^accuracy: \([0-9.]*\)%.*/\1/p')
    SIM=$(echo "$line" | sed -n 's/.*), similarity \([0-9.]*\),.*/\1/p')
    [ -n "$SCORE" ] && [ -n "$SIM" ] || fail "$1 $3: no closing line"
    awk -v s="$SCORE" -v m="$4" -v f="${5:-0}" 'BEGIN { exit !(s >= m && s >= f) }' \
        || fail "$1 $3: accuracy $SCORE% below ${4}% (or ${5:-0}%)"
}

# overlap_agrees BASE TEST SIM: llvm-profdata's similarity is SIM
overlap_agrees() {
    ours=$(awk -v s="$3" 'BEGIN { printf "%.3f%%", s * 100 }')
    theirs=$(llvm-profdata-19 overlap --sample "$1" "$2" | sed -n 's/.*Whole program profile similarity: //p')
    [ "$ours" = "$theirs" ] || fail "similarity of $2: accuracy says $ours, llvm-profdata $theirs"
}

# a CS text profile without its "!Attributes: 1" (ContextWasInlined) lines,
# which llvm-profgen's unsymbolized profile reader cannot know
no_inlined_attr() {
    grep -v '^ *!Attributes: 1$' "$1"
}

run_one() { # name min max args... (llvm-profgen's bounds, see below)
    n=$1 PG_MIN=$2 PG_MAX=$3; shift 3
    extra=""; [ "$n" = threads ] && extra=-pthread
    clang-19 $CFLAGS $extra "$TOP/tests/workloads/$n.c" -o "$W/$n" || fail "$n: compile"
    "$LBR2PROF" record --simulate -c 97 --seed 7 -o "$W/$n.data" --truth "$W/$n.truth" \
        -- "$W/$n" "$@" > /dev/null 2> "$W/$n.rec.err" || { cat "$W/$n.rec.err"; fail "$n: record"; }
    "$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses "$W/$n.data" \
        > "$W/$n.hybrid" || fail "$n: script"
    "$LBR2PROF" script -F brstack --show-mmap-events "$W/$n.data" > "$W/$n.lbr" || fail "$n: script"

    # the ideal profile, and llvm-profgen's generator on the ideal counters
    "$LBR2PROF" accuracy --truth "$W/$n.truth" --binary "$W/$n" --emit-ideal "$W/$n.ideal" \
        --emit-ideal-raw "$W/$n.iraw" --emit-ideal-flat "$W/$n.iflat" || fail "$n: --emit-ideal"
    judge "$n" "$W/$n.ideal" ideal 100
    grep -q ', 0 missing, 0 wrong;' "$W/$n.ideal.acc" || fail "$n: ideal vs itself: contexts differ"
    llvm-profgen-19 --unsymbolized-profile="$W/$n.iraw" --binary="$W/$n" $PG_CS \
        -o "$W/$n.iprof" > "$W/$n.up.log" 2>&1 || { cat "$W/$n.up.log"; fail "$n: llvm-profgen --unsymbolized-profile"; }
    no_inlined_attr "$W/$n.ideal" > "$W/$n.ideal.c"
    grep -q '!Attributes' "$W/$n.ideal.c" && fail "$n: the ideal profile has attributes other than 1"
    cmp "$W/$n.ideal.c" "$W/$n.iprof" || { diff "$W/$n.ideal.c" "$W/$n.iprof" | head; fail "$n: the ideal profile is not llvm-profgen's from the same counters"; }

    # flat: llvm-profgen from the LBR alone equals the flat ideal
    llvm-profgen-19 --perfscript="$W/$n.lbr" --binary="$W/$n" --format=text \
        -o "$W/$n.flat" > "$W/$n.flat.log" 2>&1 || { cat "$W/$n.flat.log"; fail "$n: llvm-profgen (LBR only)"; }
    cmp "$W/$n.iflat" "$W/$n.flat" || { diff "$W/$n.iflat" "$W/$n.flat" | head; fail "$n: the flat ideal is not llvm-profgen's LBR-only profile"; }
    judge "$n" "$W/$n.flat" flat 100
    overlap_agrees "$W/$n.iflat" "$W/$n.flat" "$SIM"

    # llvm-profgen's CS profile
    llvm-profgen-19 --perfscript="$W/$n.hybrid" --binary="$W/$n" $PG_CS \
        -o "$W/$n.pg.prof" > "$W/$n.pg.log" 2>&1 || { cat "$W/$n.pg.log"; fail "$n: llvm-profgen (CS)"; }
    judge "$n" "$W/$n.pg.prof" llvm-profgen "$PG_MIN"
    PG_SCORE=$SCORE
    overlap_agrees "$W/$n.ideal" "$W/$n.pg.prof" "$SIM"
    if [ "$PG_SCORE" = 100.00 ]; then # right everywhere: the same profile
        cmp "$W/$n.ideal" "$W/$n.pg.prof" || { diff "$W/$n.ideal" "$W/$n.pg.prof" | head; fail "$n: llvm-profgen scores 100% but its profile is not the ideal one"; }
    fi
    [ -n "$PG_MAX" ] && { awk -v s="$PG_SCORE" -v m="$PG_MAX" 'BEGIN { exit !(s <= m) }' \
        || fail "$n: llvm-profgen scores $PG_SCORE%, more than the $PG_MAX% it can reach here"; }
    # lbr2prof's CS profile, once its CS pipeline exists (one line):
    "$LBR2PROF" --perfdata="$W/$n.data" --binary="$W/$n" $PG_CS --output="$W/$n.lp.prof" && judge "$n" "$W/$n.lp.prof" lbr2prof 99 "$PG_SCORE"
    :
}

# llvm-profgen's bounds: at least MIN%; at most MAX% where its
# prolog/epilog filter must drop samples (tiny functions, tail calls) or
# longjmp misleads its unwinder
run_one recursion 40 90 20
run_one inlining 90 "" 20000
run_one tailcall 30 80 20000
run_one qsort_cb 50 95 3000
run_one kernel 80 "" 200
run_one threads 90 ""
run_one sigjmp 10 60 1000

# the true contexts
grep -q '^\[main:[0-9.]* @ leaf\]' "$W/tailcall.ideal" \
    || fail "tailcall: no [main @ leaf] context (a tail-called leaf replaces its caller's frame)"
grep -q '^\[cmp\]' "$W/qsort_cb.ideal" \
    || fail "qsort_cb: no [cmp] context (the callback's callers are cut at libc)"
grep -q '^\[handler:[0-9.]* @ hwork\]' "$W/sigjmp.ideal" \
    || fail "sigjmp: no [handler @ hwork] context (a handler is called from the restorer)"
grep -q '^\[main:[0-9.]* @ after_jump\]' "$W/sigjmp.ideal" \
    || fail "sigjmp: no [main @ after_jump] context"
grep '^\[' "$W/sigjmp.ideal" | grep -q ' @ main[]:]' \
    && fail "sigjmp: main below another frame: longjmp left dead frames on the true stack"
grep -q '^\[worker:[0-9.]* @ work\]' "$W/threads.ideal" || fail "threads: no [worker @ work] context"
c=$(sed -n 's/.* \([0-9]*\) cut by a signal or exec.*/\1/p' "$W/sigjmp.ideal.acc")
[ "${c:-0}" -gt 0 ] || fail "sigjmp: no LBR range cut by a signal"

# bad input: one line, status 2
"$LBR2PROF" accuracy --truth "$W/kernel.data" --binary "$W/kernel" "$W/kernel.pg.prof" \
    > /dev/null 2> "$W/bad.err"; st=$?
[ $st -eq 2 ] && [ "$(wc -l < "$W/bad.err")" -eq 1 ] || { cat "$W/bad.err"; fail "a perf.data as truth: status $st"; }
"$LBR2PROF" accuracy --truth "$W/kernel.truth" --binary "$W/recursion" "$W/kernel.pg.prof" \
    > /dev/null 2> "$W/bad.err"; st=$?
[ $st -eq 2 ] && grep -q 'no mapping of this binary' "$W/bad.err" || { cat "$W/bad.err"; fail "a foreign binary: status $st"; }
# a nested (default) llvm-profgen profile is compared as flat, with a warning
llvm-profgen-19 --perfscript="$W/kernel.hybrid" --binary="$W/kernel" --format=text \
    -o "$W/kernel.nested" > /dev/null 2>&1 || fail "llvm-profgen (nested)"
"$LBR2PROF" accuracy --truth "$W/kernel.truth" --binary "$W/kernel" -q "$W/kernel.nested" \
    > /dev/null 2> "$W/nested.err" || fail "accuracy on a nested profile"
grep -q 'has no contexts' "$W/nested.err" || fail "no warning for a nested profile"
echo "ok"
