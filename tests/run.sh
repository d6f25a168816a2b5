#!/bin/sh
# Runs the unit tests (cmocka binaries in BUILD/tests/) and the end-to-end
# tests (tests/e2e/test_*.sh) against one build directory. An e2e script
# exits 0 (pass), 77 (skip: a reference tool is missing) or anything else
# (fail); it gets LBR2PROF (the binary), TOP (the project) and WORK (a fresh
# scratch directory). Prints one line per test and a closing count line.
set -u
BUILD=${1:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
cd "$TOP"
pass=0; fail=0; skip=0
LOGDIR="$TOP/$BUILD/test-logs"
rm -rf "$LOGDIR"; mkdir -p "$LOGDIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

report() { # name status log seconds
    case $2 in
    0) pass=$((pass + 1)); echo "PASS $1 (${4}s)" ;;
    77) skip=$((skip + 1)); echo "SKIP $1: $(tail -n 1 "$3")" ;;
    *) fail=$((fail + 1)); echo "FAIL $1 (status $2, ${4}s), last lines of $3:"; tail -n 30 "$3" | sed 's/^/    /' ;;
    esac
}

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    t0=$(date +%s)
    "$t" > "$LOGDIR/$n.log" 2>&1
    report "unit/$n" $? "$LOGDIR/$n.log" $(($(date +%s) - t0))
done

for t in tests/e2e/test_*.sh; do
    [ -f "$t" ] || continue
    n=$(basename "$t" .sh)
    work=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-e2e.XXXXXX")
    t0=$(date +%s)
    # perf's build-id cache per test: check.sh runs two suites at once
    LBR2PROF="$TOP/$BUILD/lbr2prof" TOP="$TOP" WORK="$work" BUILD="$BUILD" \
        PERF_BUILDID_DIR="$work/.perf-buildid" sh "$t" > "$LOGDIR/$n.log" 2>&1
    st=$?
    report "e2e/$n" $st "$LOGDIR/$n.log" $(($(date +%s) - t0))
    [ $st -eq 0 ] && rm -rf "$work"
done
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
