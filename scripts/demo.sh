#!/bin/sh
# Runs the main job on the bundled example (inputs/): a flat AutoFDO
# profile from real LBR data, written atomically, then checked by
# llvm-profdata-19 when it is installed.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
out=${DEMO_OUT:-demo.prof}
echo "+ $BUILD/lbr2prof inputs/test.lbr --binary inputs/test.binary --format=text -o $out"
"$BUILD/lbr2prof" inputs/test.lbr --binary inputs/test.binary --format=text -o "$out"
echo "--- first lines of $out:"
head -n 12 "$out"
if command -v llvm-profdata-19 >/dev/null 2>&1; then
    echo "--- llvm-profdata-19 reads it; functions by total samples:"
    llvm-profdata-19 show --sample "$out" 2>/dev/null | grep '^Function:' | sort -t: -k3 -nr | head -n 5
fi
