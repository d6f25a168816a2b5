#!/bin/sh
# test_record_hw_ring.sh - the hardware recording path (perf_event_open,
# per-CPU ring buffers, drain, LOST accounting, perf.data) exercised with a
# software event, which every machine has: `--no-branch-stack -e
# PERF_COUNT_SW_TASK_CLOCK`. perf 6.1 must read the file without warnings
# and find as many samples as the recorder reported, the program's MMAP2,
# and for `-p PID` the synthesized COMM and MMAP2 of the running process.
set -u
for t in clang-19 perf; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
W=$WORK
fail() { echo "FAIL: $*"; exit 1; }
clang-19 -O2 -g -fno-omit-frame-pointer "$TOP/tests/workloads/kernel.c" -o "$W/kernel" || fail compile

"$LBR2PROF" record -e PERF_COUNT_SW_TASK_CLOCK --no-branch-stack -c 20000 \
    -o "$W/sw.data" -- "$W/kernel" 400 > "$W/out" 2> "$W/err" || { cat "$W/err"; fail "record"; }
cat "$W/err"
n=$(sed -n 's/.*wrote \([0-9]*\) samples.*/\1/p' "$W/err")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "no samples reported"
perf script -F ip,sym -i "$W/sw.data" > "$W/script" 2> "$W/script.err" || fail "perf script"
[ -s "$W/script.err" ] && { cat "$W/script.err"; fail "perf script warnings"; }
got=$(perf report -D -i "$W/sw.data" 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE(')
[ "$got" -eq "$n" ] || fail "perf sees $got samples, the recorder wrote $n"
perf script --show-mmap-events -i "$W/sw.data" 2>/dev/null | grep -q "PERF_RECORD_MMAP2 .* $W/kernel\$" \
    || fail "no MMAP2 of the program"
grep -q 'LOST' "$W/err" && fail "records lost at this rate"

# -p PID: a process that runs for ~1.2 s
sh -c 'i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done' &
bg=$!
( sleep 1.2; kill $bg ) &
"$LBR2PROF" record -e PERF_COUNT_SW_TASK_CLOCK --no-branch-stack -c 100000 -p $bg \
    -o "$W/p.data" 2> "$W/perr" || { cat "$W/perr"; fail "record -p"; }
wait
cat "$W/perr"
perf script -F comm,ip,sym,dso --show-mmap-events --show-task-events -i "$W/p.data" > "$W/pscript" 2> "$W/pscript.err" || fail "perf script -p"
[ -s "$W/pscript.err" ] && { cat "$W/pscript.err"; fail "perf script -p warnings"; }
grep -q "PERF_RECORD_COMM: sh:$bg/$bg" "$W/pscript" || fail "no synthesized COMM"
grep -q "PERF_RECORD_MMAP2 $bg/$bg: .*r-xp .*/dash\$" "$W/pscript" || grep -q "PERF_RECORD_MMAP2 $bg/$bg: .*r-xp .*/sh\$" "$W/pscript" \
    || fail "no synthesized MMAP2 of the shell"
grep -q '(/usr/bin/dash)\|(/bin/dash)\|(/usr/bin/sh)' "$W/pscript" || fail "no sample resolved to the shell binary"
echo ok
