#!/bin/sh
# Runs the whole test suite once per build directory given (the -Werror
# build and the ASan+UBSan build), the builds side by side (each suite is
# one test at a time; their tests share nothing but the machine), and
# prints one combined closing line. Each line is prefixed with its build;
# BUILD/test-logs/check.log keeps each build's own output.
set -u
cd "$(dirname "$0")/.."
pids=""
for b in "$@"; do
    mkdir -p "$b/test-logs"
    echo "=== tests on $b ==="
    (./tests/run.sh "$b" 2>&1 | tee "$b/check.out" | sed -u "s|^|[$b] |") &
    pids="$pids $!"
done
for p in $pids; do
    wait "$p"
done
total_pass=0; total_fail=0; total_skip=0
for b in "$@"; do
    out=$(tail -n 1 "$b/check.out" 2>/dev/null)
    mv -f "$b/check.out" "$b/test-logs/check.log" 2>/dev/null
    p=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1/p')
    f=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\2/p')
    s=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\3/p')
    [ -n "$p" ] || { p=0; f=1; s=0; echo "run.sh on $b did not finish"; }
    echo "$b: $p passed, $f failed, $s skipped"
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))
done
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
