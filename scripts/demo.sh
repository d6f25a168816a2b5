#!/bin/sh
# Runs the main job on the bundled examples (inputs/, see its README):
#   1. a context-sensitive profile from hybrid samples (LBR + call stacks)
#      of inputs/kernel, `lbr2prof inputs/kernel.data -o demo-ctx.prof`,
#      read back by llvm-profdata-19, then a short `lbr2prof report`;
#   2. a flat AutoFDO profile from real LBR data (AutoFDO's test.lbr).
# Outputs are written atomically; the script stops at the first failure.
set -eu
BUILD=${1:-build}
cd "$(dirname "$0")/.."
L=$BUILD/lbr2prof
ctx=${DEMO_CTX:-demo-ctx.prof}
out=${DEMO_OUT:-demo.prof}

echo "=== 1. the main job: context-sensitive profile of inputs/kernel.data"
echo "+ $L inputs/kernel.data -o $ctx"
"$L" inputs/kernel.data -o "$ctx"
echo "--- llvm-profdata-19 reads it (extbinary, CS flags and hottest functions):"
llvm-profdata-19 show --sample --show-sec-info-only "$ctx" | grep -E 'Summary|CSName'
llvm-profdata-19 show --sample --topn=4 "$ctx" | tail -n 5
echo "--- the same trace summarized (contexts, sample quality):"
echo "+ $L report inputs/kernel.data --top 3 -o $ctx.txt"
"$L" report inputs/kernel.data --top 3 -o "$ctx.txt" 2>/dev/null
sed '/^Hot paths/,$d' "$ctx.txt"

echo
echo "=== 2. a flat AutoFDO profile from real LBR data (inputs/test.lbr)"
echo "+ $L inputs/test.lbr --binary inputs/test.binary --format=text -o $out"
"$L" inputs/test.lbr --binary inputs/test.binary --format=text -o "$out"
echo "--- first lines of $out:"
head -n 8 "$out"
echo "--- llvm-profdata-19 reads it; functions by total samples:"
llvm-profdata-19 show --sample "$out" | grep '^Function:' | sort -t: -k3 -nr | head -n 5
