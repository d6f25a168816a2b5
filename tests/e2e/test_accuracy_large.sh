#!/bin/sh
# test_accuracy_large.sh - the frame repair on a large real program: the
# SQLite amalgamation (deps/sqlite3/sqlite3.c of the npm package
# better-sqlite3@12, 270k lines) built with clang-19 -O2 -g
# -fno-omit-frame-pointer and driven by scripts/pgo/sqlite-work.c (an SQL
# workload: inserts, joins, grouping, sorting, window functions, a
# recursive CTE...), recorded with `record --simulate --truth`. Against
# the simulator's truth (`lbr2prof accuracy`, docs/accuracy.md):
#  * lbr2prof's CS profile (default mode) has >= 99% of the range counts
#    in the right context and no count in a context the truth does not
#    have (contexts truncated at an unknown caller are allowed);
#  * it has at least llvm-profgen-22's share, from the same recording;
#  * its unsymbolized counts are >= llvm-profgen-22's, in sum and per
#    function (scripts/pgo/cs-compare.pl).
# The package and the build are cached under $BUILD/cache (gitignored).
# Not on the ASan build: ~1 minute of CPU on the plain one, and nothing
# the workloads of test_accuracy.sh do not already run under ASan.
set -u
case "${BUILD:-build}" in *asan*) echo "skip: measured on the plain build"; exit 77 ;; esac
for t in clang-19 llvm-profgen-22 npm perl; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
W=$WORK
C="$TOP/${BUILD:-build}/cache/sqlite"
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
fails=0
PG_CS="--format=text --csspgo-preinliner=0 --gen-cs-nested-profile=0 --csprof-merge-cold-context=0 --compress-recursion=0"

mkdir -p "$C"
if [ ! -f "$C/sqlite3.o" ]; then
    (cd "$C" && rm -rf package ./*.tgz && npm pack better-sqlite3@12 --silent > pack.log 2>&1 &&
        tar xzf better-sqlite3-*.tgz package/deps/sqlite3) ||
        { cat "$C/pack.log"; echo "skip: npm could not fetch better-sqlite3@12"; exit 77; }
    clang-19 -O2 -g -fno-omit-frame-pointer -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION \
        -c "$C/package/deps/sqlite3/sqlite3.c" -o "$C/sqlite3.o.tmp" && mv "$C/sqlite3.o.tmp" "$C/sqlite3.o" ||
        { echo "FAIL: build sqlite3.c"; exit 1; }
fi
clang-19 -O2 -g -fno-omit-frame-pointer -I"$C/package/deps/sqlite3" \
    "$TOP/scripts/pgo/sqlite-work.c" "$C/sqlite3.o" -o "$W/sqw" || { echo "FAIL: link"; exit 1; }
"$LBR2PROF" record --simulate -c 97 --seed 7 --truth "$W/sq.truth" -o "$W/sq.data" \
    -- "$W/sqw" 200 1 > /dev/null 2> "$W/rec.err" || { cat "$W/rec.err"; echo "FAIL: record"; exit 1; }
"$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses "$W/sq.data" > "$W/sq.script" ||
    { echo "FAIL: script"; exit 1; }

# judge PROFILE LABEL: the accuracy line; sets SCORE, WRONG
judge() {
    "$LBR2PROF" accuracy --truth "$W/sq.truth" --binary "$W/sqw" --rows 0 "$1" > "$W/$2.acc" 2>&1 ||
        { cat "$W/$2.acc"; fail "accuracy of $2"; SCORE=0; WRONG=1; return; }
    line=$(tail -n 1 "$W/$2.acc")
    echo "sqlite $2: $line"
    SCORE=$(echo "$line" | sed -n 's/^accuracy: \([0-9.]*\)%.*/\1/p')
    WRONG=$(echo "$line" | sed -n 's/.* \([0-9]*\) wrong;.*/\1/p')
}
"$LBR2PROF" --perfdata="$W/sq.data" --binary="$W/sqw" $PG_CS -o "$W/lp.prof" 2> "$W/lp.err" ||
    { cat "$W/lp.err"; fail "lbr2prof"; }
llvm-profgen-22 --perfscript="$W/sq.script" --binary="$W/sqw" $PG_CS -o "$W/pg.prof" > /dev/null 2>&1 ||
    fail "llvm-profgen-22"
judge "$W/lp.prof" lbr2prof
LP=$SCORE LPW=$WRONG
judge "$W/pg.prof" llvm-profgen-22
awk -v s="$LP" 'BEGIN { exit !(s >= 99) }' || fail "lbr2prof: $LP% of range counts in the right context (< 99%)"
awk -v s="$LP" -v f="$SCORE" 'BEGIN { exit !(s >= f) }' || fail "lbr2prof $LP% < llvm-profgen-22 $SCORE%"
[ "$LPW" = 0 ] || { grep ' wrong ' "$W/lbr2prof.acc" | head -5; fail "lbr2prof: $LPW contexts the truth does not have"; }

# the counts kept, before the generator
"$LBR2PROF" --perfdata="$W/sq.data" --binary="$W/sqw" --skip-symbolization -o "$W/lp.raw" 2> /dev/null ||
    fail "lbr2prof --skip-symbolization"
llvm-profgen-22 --perfscript="$W/sq.script" --binary="$W/sqw" --skip-symbolization -o "$W/pg.raw" \
    > /dev/null 2>&1 || fail "llvm-profgen-22 --skip-symbolization"
perl "$TOP/scripts/pgo/cs-compare.pl" "$W/lp.raw" "$W/pg.raw" 5 > "$W/cmp.out" 2>&1 ||
    { cat "$W/cmp.out"; fail "functions with fewer counts than llvm-profgen-22's"; }
head -3 "$W/cmp.out"

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo ok
