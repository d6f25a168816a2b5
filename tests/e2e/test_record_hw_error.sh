#!/bin/sh
# test_record_hw_error.sh - hardware `lbr2prof record` where the PMU cannot
# sample branches (no core PMU visible to libpfm4 / perf_event_open
# refuses branch sampling): exactly one line on stderr that points to
# --simulate, a non-zero status, and no perf.data left behind. On a
# machine whose PMU can sample branches the command must instead succeed
# and write a perf.data that perf 6.1 reads.
set -u
W=$WORK
cd "$W" || exit 1
"$LBR2PROF" record -c 10007 -o "$W/hw.data" -- true > "$W/out" 2> "$W/err"
st=$?
if [ $st -eq 0 ]; then
    command -v perf >/dev/null 2>&1 || { echo "skip: PMU works but no perf to check"; exit 77; }
    perf script -F ip,brstack -i "$W/hw.data" > /dev/null || { echo "FAIL: perf cannot read"; exit 1; }
    echo "ok: this PMU samples branches; perf reads the file"
    exit 0
fi
cat "$W/err"
[ "$(wc -l < "$W/err")" -eq 1 ] || { echo "FAIL: expected one line of error"; exit 1; }
grep -q -- '--simulate' "$W/err" || { echo "FAIL: the error does not point to --simulate"; exit 1; }
grep -q 'branch' "$W/err" || { echo "FAIL: the error does not say what is missing"; exit 1; }
[ ! -e "$W/hw.data" ] || { echo "FAIL: a perf.data was left behind"; exit 1; }
ls "$W" | grep -q 'hw.data.tmp' && { echo "FAIL: temporary file left behind"; exit 1; }
# a named event that does not exist: also one line, also non-zero
"$LBR2PROF" record -e NO_SUCH_EVENT:FOO -o "$W/hw2.data" -- true 2> "$W/err2"
[ $? -ne 0 ] || { echo "FAIL: unknown event accepted"; exit 1; }
[ "$(wc -l < "$W/err2")" -eq 1 ] || { cat "$W/err2"; echo "FAIL: expected one line"; exit 1; }
# usage errors exit 2
"$LBR2PROF" record --simulate -p 1 2>/dev/null
[ $? -eq 2 ] || { echo "FAIL: --simulate -p should be a usage error"; exit 1; }
"$LBR2PROF" record --simulate -c 0 -- true 2>/dev/null
[ $? -eq 2 ] || { echo "FAIL: -c 0 should be a usage error"; exit 1; }
"$LBR2PROF" record --simulate -o "$W/x.data" -- /nonexistent/cmd 2> "$W/err3"
[ $? -eq 2 ] || { echo "FAIL: a missing command should exit 2"; exit 1; }
grep -q "cannot run" "$W/err3" || { cat "$W/err3"; echo "FAIL: no clear message for a missing command"; exit 1; }
[ ! -e "$W/x.data" ] || { echo "FAIL: x.data left behind"; exit 1; }
echo "ok"
exit 0
