#!/bin/sh
# test_script_stdin.sh - `cat F | lbr2prof script -` on pipe-mode perf.data
# files equals `perf script -i F` (and perf reading the same pipe), with
# and without --show-mmap-events: streaming input, no seeking.
set -u
command -v perf >/dev/null 2>&1 || { echo "perf not installed"; exit 77; }
perf version 2>/dev/null | grep -q '^perf version 6\.1' ||
    { echo "perf 6.1 required"; exit 77; }
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
F=comm,pid,tid,time,ip,brstack
fail=0; n=0
for f in "$TOP"/tests/data/perf-corpus/perf.data.piped.*; do
    b=$(basename "$f")
    case $b in *corrupted*|*intel_pt*) continue ;; esac
    for opt in "" --show-mmap-events; do
        n=$((n + 1))
        cat "$f" | perf script -i - -F $F $opt > "$WORK/perf" 2>/dev/null
        cat "$f" | "$LBR2PROF" script -F $F $opt - > "$WORK/ours" 2> "$WORK/err"
        st=$?
        if [ $st -eq 0 ] && [ -s "$WORK/perf" ] && cmp -s "$WORK/perf" "$WORK/ours"; then
            echo "PASS $b $opt ($(wc -l < "$WORK/ours") lines)"
        else
            fail=$((fail + 1)); echo "FAIL $b $opt (status $st)"
            cat "$WORK/err"; diff "$WORK/perf" "$WORK/ours" | head -5
        fi
    done
done
# A pipe that is cut mid-record: with --strict one error line, status 2;
# without, its complete records and one warning line naming the offset
# (tests/e2e/test_truncated_perfdata.sh checks what is printed).
n=$((n + 1))
f=$TOP/tests/data/perf-corpus/perf.data.piped.target-3.8
head -c 100003 "$f" | "$LBR2PROF" script --strict - > /dev/null 2> "$WORK/err"
st=$?
if [ $st -eq 2 ] && [ "$(wc -l < "$WORK/err")" -eq 1 ] && grep -q '^lbr2prof: -: .*offset 0x' "$WORK/err"; then
    echo "PASS truncated stdin, --strict: $(cat "$WORK/err")"
else
    fail=$((fail + 1)); echo "FAIL truncated stdin, --strict (status $st)"; cat "$WORK/err"
fi
n=$((n + 1))
head -c $(($(wc -c < "$f") / 2 + 3)) "$f" | "$LBR2PROF" script - > "$WORK/out" 2> "$WORK/err"
st=$?
if [ $st -eq 0 ] && [ "$(wc -l < "$WORK/err")" -eq 1 ] && [ -s "$WORK/out" ] &&
    grep -q '^lbr2prof script: warning: -: offset 0x.*complete records' "$WORK/err"; then
    echo "PASS truncated stdin: $(cat "$WORK/err")"
else
    fail=$((fail + 1)); echo "FAIL truncated stdin (status $st)"; cat "$WORK/err"
fi
echo "$((n - fail)) of $n passed"
[ $fail -eq 0 ]
