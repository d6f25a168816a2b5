#!/bin/sh
# make-demo-input.sh [BUILD] - regenerates the bundled hybrid example,
# inputs/kernel (the program) and inputs/kernel.data (its perf.data with
# LBR branch stacks + frame-pointer call stacks), with lbr2prof's own
# recorder: tests/workloads/kernel.c built with clang-19, recorded by
# `lbr2prof record --simulate` (exact software LBR, no PMU needed).
#
# The build happens in a fixed directory, so the recorded path and the
# DWARF (comp dir mapped to ".") are the same every time; with the same
# seed and period the samples are the same: the profile made from a new
# recording is identical to the bundled one (only timestamps, ASLR bases
# and the host name in the perf.data header change).
set -eu
BUILD=${1:-build}
TOP=$(cd "$(dirname "$0")/.." && pwd)
D=/tmp/lbr2prof-demo
L=$TOP/$BUILD/lbr2prof
[ -x "$L" ] || make -C "$TOP" -j2 BUILD="$BUILD" >/dev/null
rm -rf "$D"
mkdir -p "$D"
cp "$TOP/tests/workloads/kernel.c" "$D/"
cd "$D"
set -x
clang-19 -O2 -g -fno-omit-frame-pointer -fdebug-prefix-map="$D"=. kernel.c -o kernel
"$L" record --simulate -c 149 --seed 7 -o kernel.data -- ./kernel 200
set +x
cp kernel kernel.data "$TOP/inputs/"
cd "$TOP"
rm -rf "$D"   # so that lbr2prof finds inputs/kernel, next to the trace
ls -l "$TOP/inputs/kernel" "$TOP/inputs/kernel.data"
