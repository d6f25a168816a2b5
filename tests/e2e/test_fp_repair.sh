#!/bin/sh
# test_fp_repair.sh - frame-pointer callchains against perf's own DWARF
# unwinding, sample by sample, on programs built now with frame pointers
# (clang-19 and gcc, -O2 -g -fno-omit-frame-pointer) and recorded now with
# `perf record -e cpu-clock:u --call-graph dwarf` (a software event: no PMU
# needed). For every sample:
#   (a) `lbr2prof script --fp-callchain=plain`: the kernel's FP walk of the
#       recorded user stack, nothing checked or repaired;
#   (b) `lbr2prof script --fp-callchain=repaired`: the validated walk, with
#       the caller lost at a function's entry/exit (or in a frameless leaf)
#       put back from the stack;
#   (c) `perf script`: perf's DWARF (CFI) unwinding of the same stack.
# Agreement rule: cut (c) before its first frame outside the program's
# binary (libc and ld.so have no frame pointers, so no FP walk can be asked
# to match there); a walk agrees if it starts with every remaining frame
# of (c): frame 0 equal, frame i >= 1 equal after perf's -1 on return
# addresses. Samples whose leaf is outside the program are not compared
# (counted). Pass: (b) agrees on >= 99.9% of each program's samples, and
# more often than (a).
set -u
for t in perf clang-19 readlink awk; do
    command -v $t >/dev/null 2>&1 || { echo "$t not found"; exit 77; }
done
cd "$WORK" || exit 1
W=$PWD

cat >cmp.awk <<'AWK'
# awk -v prog=BINARY -f cmp.awk c.txt a.txt b.txt  (each: -F time,ip)
function h2d(s,   i, c, v) { v = 0; s = tolower(s)
    for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
    return v }
FNR == 1 { file++; n = 0 }
/^ *[0-9]+\.[0-9]+: *$/ { n++; t[file, n] = $1; k[file, n] = 0; next }
/^\t/ {
    k[file, n]++
    f[file, n, k[file, n]] = h2d($1)
    if (file == 1) d[n, k[file, n]] = ($2 == "(" prog ")")
    next
}
END {
    if (n == 0) { print "no samples"; exit 2 }
    for (i = 1; i <= n; i++) {
        if (t[1, i] != t[2, i] || t[1, i] != t[3, i]) {
            print "sample " i ": times differ: " t[1, i] " " t[2, i] " " t[3, i]; exit 2 }
        for (c = 0; c < k[1, i] && d[i, c + 1]; c++) ;
        if (c == 0) { outside++; continue }
        used++; frames += c
        for (w = 2; w <= 3; w++) {
            ok = k[w, i] >= c
            for (j = 1; ok && j <= c; j++)
                ok = f[w, i, j] - (j > 1 ? 1 : 0) == f[1, i, j]
            agree[w] += ok
            if (!ok && w == 3 && shown++ < 5) {
                printf "  (b) disagrees on sample %d (%s): (c)", i, t[1, i]
                for (j = 1; j <= c; j++) printf " %x", f[1, i, j]
                printf ", (b)"
                for (j = 1; j <= k[3, i]; j++) printf " %x", f[3, i, j] - (j > 1)
                printf "\n"
            }
        }
    }
    printf "%d %d %d %d %d %d\n", n, outside, used, agree[2], agree[3], frames
}
AWK

# perf record works here (no PMU: cpu-clock is a software event)?
cat >probe.c <<'C'
int main(void) { volatile unsigned long x = 0; while (x < 20000000) x++; return 0; }
C
clang-19 -O1 probe.c -o probe || exit 1
if ! perf record -q -e cpu-clock:u -c 100000 --call-graph dwarf,1024 -o probe.data ./probe >probe.log 2>&1; then
    echo "perf record -e cpu-clock:u --call-graph dwarf does not work here:"
    cat probe.log
    exit 77
fi

fails=0
# option errors: one line, status 2
for bad in "--fp-callchain=bogus" "--fp-stats"; do
    "$LBR2PROF" script $bad probe.data >/dev/null 2>bad.err
    st=$?
    if [ $st -ne 2 ] || [ "$(wc -l <bad.err)" -ne 1 ]; then
        echo "FAIL: script $bad: status $st (expected 2), stderr:"; cat bad.err; fails=$((fails + 1))
    fi
done
"$LBR2PROF" script -F time,ip --fp-callchain=validated probe.data >validated.txt || fails=$((fails + 1))
grep -q "$(printf '\t')" validated.txt || { echo "FAIL: --fp-callchain=validated printed no frames"; fails=$((fails + 1)); }
sum_e0=0; sum_e1=0; sum_x0=0
one() { # name compiler source arg
    name=$1 cc=$2 src=$3 arg=$4
    command -v "$cc" >/dev/null 2>&1 || { echo "== $name: $cc not found, skipped"; return; }
    $cc -O2 -g -fno-omit-frame-pointer "$TOP/tests/workloads/$src.c" -o "$name" || { fails=$((fails + 1)); return; }
    prog=$(readlink -f "$name")
    perf record -q -e cpu-clock:u -c 50000 --call-graph dwarf,4096 -o "$name.data" "./$name" "$arg" >/dev/null 2>"$name.rec.log" ||
        { echo "FAIL $name: perf record"; cat "$name.rec.log"; fails=$((fails + 1)); return; }
    perf script -F time,ip,dso --no-inline -i "$name.data" >"$name.c.txt" 2>/dev/null
    "$LBR2PROF" script -F time,ip --fp-callchain=plain "$name.data" >"$name.a.txt" || { fails=$((fails + 1)); return; }
    "$LBR2PROF" script -F time,ip --fp-callchain=repaired --fp-stats "$name.data" >"$name.b.txt" 2>"$name.stats" || { fails=$((fails + 1)); return; }
    res=$(awk -v prog="$prog" -f cmp.awk "$name.c.txt" "$name.a.txt" "$name.b.txt") || { echo "FAIL $name: $res"; fails=$((fails + 1)); return; }
    echo "$res" | sed -n '/^  /p'
    set -- $(echo "$res" | tail -n 1)
    n=$1 outside=$2 used=$3 a=$4 b=$5 frames=$6
    e0=$(sed -n 's/.* E0=\([0-9]*\).*/\1/p' "$name.stats")
    e1=$(sed -n 's/.* E1=\([0-9]*\).*/\1/p' "$name.stats")
    x0=$(sed -n 's/.* X0=\([0-9]*\).*/\1/p' "$name.stats")
    f=$(sed -n 's/.* F=\([0-9]*\).*/\1/p' "$name.stats")
    eq=$(sed -n 's/.*equal to frame 1: \([0-9]*\).*/\1/p' "$name.stats")
    sum_e0=$((sum_e0 + e0)); sum_e1=$((sum_e1 + e1)); sum_x0=$((sum_x0 + x0))
    awk -v name="$name" -v n="$n" -v o="$outside" -v u="$used" -v a="$a" -v b="$b" -v fr="$frames" \
        -v e0="$e0" -v e1="$e1" -v x0="$x0" -v f="$f" -v eq="$eq" 'BEGIN {
        printf "== %s: %d samples (%d with the leaf outside the program), %d compared over %d frames of (c)\n", name, n, o, u, fr
        printf "   leaves: E0 %d, E1 %d, X0 %d, frameless %d; repairs equal to frame 1 (recursion; perf'"'"'s dedup rule would skip them): %d\n", e0, e1, x0, f, eq
        printf "   (a) plain FP walk agrees with perf DWARF on %d (%.2f%%), (b) repaired on %d (%.3f%%)\n", a, 100 * a / u, b, 100 * b / u
        exit !(u >= 200 && b * 1000 >= u * 999 && b > a) }' ||
        { echo "FAIL $name: (b) must agree on >= 99.9% of >= 200 samples and more often than (a)"; fails=$((fails + 1)); }
}

one tinycalls_clang clang-19 tinycalls 30000000
one tinycalls_gcc gcc tinycalls 30000000
one recursion_clang clang-19 recursion 37
one qsort_gcc gcc qsort_cb 2000000
# a binary rebuilt since the recording is refused by its build-id
if [ -f tinycalls_clang.data ]; then
    clang-19 -O1 -g -fno-omit-frame-pointer "$TOP/tests/workloads/tinycalls.c" -o tinycalls_clang
    "$LBR2PROF" script -F time,ip --fp-callchain=repaired --fp-stats tinycalls_clang.data >/dev/null 2>stale.stats
    walked=$(sed -n 's/^fp-callchain: \([0-9]*\) samples walked.*/\1/p' stale.stats)
    refused=$(sed -n 's/.*; \([0-9]*\) leaves in a file whose build-id differs/\1/p' stale.stats)
    if [ -n "$walked" ] && [ -n "$refused" ] && [ $((refused * 100)) -ge $((walked * 95)) ]; then
        echo "rebuilt binary: $refused of $walked leaves refused by build-id"
    else
        echo "FAIL: a rebuilt binary was used for the repair:"; cat stale.stats; fails=$((fails + 1))
    fi
fi
echo "entry/exit leaves over all programs: E0 $sum_e0, E1 $sum_e1, X0 $sum_x0"
[ "$sum_e0" -gt 0 ] && [ "$sum_e1" -gt 0 ] && [ "$sum_x0" -gt 0 ] ||
    { echo "FAIL: the entry/exit cases did not occur"; fails=$((fails + 1)); }
[ $fails -eq 0 ]
