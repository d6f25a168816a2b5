#!/bin/sh
# test_simulate_branches.sh - `record --simulate` records only real
# branches, on code its CPU runs that older decoders do not know: every
# taken (from, to) pair of the truth file (branch_counts and every
# sample's LBR) is checked against objdump (binutils, which knows
# AVX-512, AMX and APX) by helpers/branchcheck.pl: `from` is a branch
# instruction, `to` its direct target or an instruction start; and every
# executed address is an instruction start. Workloads:
#  * tests/workloads/strings.c: glibc's string functions, hot (EVEX
#    variants on an AVX-512 CPU: vptestnmb, kmovd, vpcmpeqb... which
#    capstone 4 cannot decode and the simulator once took for branches);
#  * tests/workloads/vecloop.c built with -march=znver4 by clang-19 (and
#    clang-22 if installed) and by gcc (-march=znver4 where gcc knows it,
#    else x86-64-v4): the program's own AVX-512 code. Skipped, with a
#    line, where the CPU cannot run it.
# On an AVX-512 CPU the test also requires that EVEX code ran (libc's,
# and each znver4 program's own). Output under the tracer = native.
# Last, the profile generator on that AVX-512 code: the CS profile
# lbr2prof --no-repair-frames makes of the clang-19 recording is
# llvm-profgen-19's, byte for byte (capstone 4 cannot decode a tenth of
# the program; the generator decodes those VEX/EVEX instructions with
# Zydis, as LLVM's decoder does). The znver4 programs are linked with
# -z now: a sample whose LBR ends in a lazy-binding PLT stub (jmp *GOT to
# the next instruction) is counted differently by the two tools, a
# difference that is not about decoding.
set -u
for t in clang-19 objdump readelf perl; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
W=$WORK
fail() { echo "FAIL: $*"; exit 1; }
avx512=0
grep -qw avx512bw /proc/cpuinfo && avx512=1

# record NAME BINARY ARGS...: record with the truth, same output as native,
# every pair checked; leaves the check's output in $W/NAME.check
record() {
    n=$1; bin=$2; shift 2
    "$bin" "$@" > "$W/$n.native" || fail "$n: native run"
    "$LBR2PROF" record --simulate -c 97 --seed 3 -o "$W/$n.data" \
        --truth "$W/$n.truth.json" -- "$bin" "$@" > "$W/$n.out" 2> "$W/$n.err" \
        || { cat "$W/$n.err"; fail "$n: record"; }
    cmp -s "$W/$n.native" "$W/$n.out" || fail "$n: output differs under the tracer"
    perl "$TOP/tests/e2e/helpers/branchcheck.pl" "$W/$n.truth.json" > "$W/$n.check" \
        || { cat "$W/$n.check"; fail "$n: the simulator recorded what is no branch"; }
    echo "ok $n: $(tail -n 1 "$W/$n.check")"
}

# evex_ran NAME PATH: on an AVX-512 CPU, EVEX instructions of PATH ran
evex_ran() {
    [ $avx512 -eq 1 ] || return 0
    grep -q "^evex-executed $2 [1-9]" "$W/$1.check" \
        || fail "$1: no EVEX instruction of $2 ran (nothing was tested)"
}

clang-19 -O2 -g -fno-omit-frame-pointer "$TOP/tests/workloads/strings.c" \
    -o "$W/strings" || fail "strings: compile"
record strings "$W/strings" 6
libc=$(sed -n 's/.*"path": "\([^"]*libc\.so[^"]*\)".*/\1/p' "$W/strings.truth.json" | head -1)
[ -n "$libc" ] || fail "strings: libc is not among the mappings"
evex_ran strings "$libc"

# znver4 builds: NAME COMPILER FLAGS...
znver4() {
    n=$1; cc=$2; shift 2
    command -v "$cc" >/dev/null 2>&1 || { echo "note: $cc not installed"; return 0; }
    "$cc" -O2 -g -fno-omit-frame-pointer -Wl,-z,now "$@" \
        "$TOP/tests/workloads/vecloop.c" -o "$W/$n" || fail "$n: compile"
    if ! "$W/$n" 3 > /dev/null 2>&1; then
        echo "note: this CPU cannot run $n ($*); not checked"
        return 0
    fi
    record "$n" "$W/$n" 8
    evex_ran "$n" "$W/$n"
}
znver4 vecloop-clang19 clang-19 -march=znver4
znver4 vecloop-clang22 clang-22 -march=znver4
if echo 'int x;' | gcc -march=znver4 -x c -c -o /dev/null - 2>/dev/null; then
    znver4 vecloop-gcc gcc -march=znver4 -O3
else
    echo "note: gcc $(gcc -dumpversion) has no -march=znver4; x86-64-v4 instead"
    znver4 vecloop-gcc gcc -march=x86-64-v4 -O3
fi
echo "all recorded pairs are branches"

# the generator on AVX-512 code = llvm-profgen
if [ -s "$W/vecloop-clang19.data" ] && command -v llvm-profgen-19 >/dev/null 2>&1; then
    n=vecloop-clang19
    "$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses \
        "$W/$n.data" > "$W/$n.txt" || fail "$n: script"
    flat="--csspgo-preinliner=0 --gen-cs-nested-profile=0 --format=text"
    "$LBR2PROF" --perfscript="$W/$n.txt" --binary "$W/$n" --no-repair-frames \
        $flat -o "$W/$n.l.prof" 2> "$W/$n.l.err" || { cat "$W/$n.l.err"; fail "$n: lbr2prof"; }
    llvm-profgen-19 --perfscript="$W/$n.txt" --binary="$W/$n" $flat \
        --output="$W/$n.p.prof" > "$W/$n.p.err" 2>&1 || { cat "$W/$n.p.err"; fail "$n: llvm-profgen"; }
    [ -s "$W/$n.p.prof" ] || fail "$n: llvm-profgen made an empty profile"
    cmp "$W/$n.l.prof" "$W/$n.p.prof" > /dev/null \
        || { diff "$W/$n.l.prof" "$W/$n.p.prof" | head; fail "$n: CS profile differs from llvm-profgen's"; }
    echo "ok $n: CS profile = llvm-profgen-19's ($(wc -l < "$W/$n.l.prof") lines)"
fi
