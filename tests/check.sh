#!/bin/sh
# Runs the whole test suite once per build directory given (the -Werror
# build and the ASan+UBSan build) and prints one combined closing line.
set -u
cd "$(dirname "$0")/.."
total_pass=0; total_fail=0; total_skip=0
for b in "$@"; do
    echo "=== tests on $b ==="
    out=$(./tests/run.sh "$b" 2>&1 | tee /dev/stderr | tail -n 1)
    p=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1/p')
    f=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\2/p')
    s=$(echo "$out" | sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\3/p')
    [ -n "$p" ] || { p=0; f=1; s=0; echo "run.sh on $b did not finish"; }
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f)); total_skip=$((total_skip + s))
done
echo "$total_pass passed, $total_fail failed, $total_skip skipped"
[ "$total_fail" -eq 0 ]
