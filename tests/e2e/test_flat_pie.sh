#!/bin/sh
# A PIE built now with clang-19 (-O1 -g, an inlined helper) and with the
# system gcc (-O2 -g: DWARF 5, discriminators, more inlining), and a perf
# script made from its disassembly: LBR chains that follow real taken
# branches and fall through to the next branch, at two ASLR bases (the
# binary is re-mapped half-way, the last mmap wins), with external (libc)
# entries mixed in. lbr2prof and llvm-profgen-19 must write the same
# unsymbolized profile, the same text profile and the same extbinary bytes.
# (This machine has no LBR, so the trace is synthesized.)
set -u
for t in llvm-profgen-19 clang-19 objdump; do
    command -v $t >/dev/null 2>&1 || { echo "$t not found"; exit 77; }
done
cd "$WORK" || exit 1
cat >prog.c <<'C'
#include <stdio.h>
#include <stdlib.h>
static int __attribute__((noinline)) work(int x)
{
    int s = 0;
    for (int i = 0; i < x; i++)
        s += (i % 3) ? i : -i;
    return s;
}
static inline int helper(int a) { return a * 3 + (a & 1 ? 1 : 2); }
int main(int argc, char **argv)
{
    long t = 0;
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    for (int i = 0; i < n; i++) {
        t += work(i % 50);
        if (i & 1)
            t += helper(i);
    }
    printf("%ld\n", t);
    return 0;
}
C
fails=0
one_build() { # compiler flags...
    BIN=$PWD/prog
    # text segment file offset (page) of the first executable PT_LOAD
    pgoff=$(readelf -lW prog | awk '$1 == "LOAD" && / R E / { print $2; exit }')
    objdump -d --no-show-raw-insn prog |
        awk '/^[0-9a-f]+ <.*>:$/ { fn = $2 }
             /^ +[0-9a-f]+:/ && fn !~ /@plt/ {
                 a = $1; sub(":", "", a)
                 if ($2 ~ /^(j[a-z]+|call)$/ && $3 ~ /^[0-9a-f]+$/) print a, $3 }' >branches.txt
    [ -s branches.txt ] || { echo "no branches found"; exit 1; }
    awk -v pgoff="$pgoff" -v bin="$BIN" '
    # 64-bit safe (awk numbers are doubles; printf %x may stop at 32 bits)
    function hex(x,   s) { s = ""; do { s = substr("0123456789abcdef", x % 16 + 1, 1) s; x = int(x / 16) } while (x > 0); return s }
    function h2d(s,   i, c, v) { v = 0; s = tolower(s)
        for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
        return v }
    BEGIN { seed = 12345 }
    function rnd(n) { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    { from[NR] = h2d($1); to[NR] = h2d($2); nb = NR }
    # the first branch at or after address a
    function next_branch(a,   i) { for (i = 1; i <= nb; i++) if (from[i] >= a) return i; return 0 }
    function chain(base, len,   i, k, e, line, n) {
        k = 1 + rnd(nb); n = 0
        while (n < len && k) {
            src[n] = from[k]; dst[n] = to[k]; n++
            if (rnd(7) == 0) { src[n] = h2d("7f3a00001000") + rnd(4096) - base; dst[n] = from[k]; n++ }
            k = next_branch(to[k])
        }
        line = "           " hex(src[n - 1] + base)
        for (e = n - 1; e >= 0; e--)
            line = line " 0x" hex(src[e] + base) "/0x" hex(dst[e] + base) "/P/-/-/1"
        print line
    }
    END {
        b1 = h2d("5604a0c00000"); b2 = h2d("7ffd10200000"); pg = h2d(substr(pgoff, 3))
        printf "PERF_RECORD_MMAP2 4242/4242: [0x%s(0x1000) @ 0x%s 08:01 77 0]: r-xp %s\n", hex(b1 + pg), hex(pg), bin
        for (s = 0; s < 150; s++) chain(b1, 4 + rnd(13))
        printf "PERF_RECORD_MMAP2 4243/4243: [0x%s(0x1000) @ 0x%s 08:01 77 0]: r-xp %s\n", hex(b2 + pg), hex(pg), bin
        for (s = 0; s < 150; s++) chain(b2, 4 + rnd(13))
    }' branches.txt >prog.perfscript
    cmp_out() { # name options...
        name=$1; shift
        llvm-profgen-19 --perfscript=prog.perfscript --binary="$BIN" "$@" --output=ref.out >ref.err 2>&1
        r=$?
        "$LBR2PROF" --perfscript=prog.perfscript --binary="$BIN" "$@" --output=my.out >my.err 2>&1
        m=$?
        if [ $r -eq 0 ] && [ $m -eq 0 ] && cmp -s ref.out my.out && [ -s my.out ]; then
            echo "ok   $name"
        else
            echo "FAIL $name (llvm-profgen $r, lbr2prof $m)"; cat my.err; diff ref.out my.out | head -20
            fails=$((fails + 1))
        fi
    }
    cmp_out "raw" --skip-symbolization
    cmp_out "text" --format=text
    cmp_out "extbinary"
    cmp_out "text, all functions zero-filled" --format=text --fill-zero-for-all-funcs
    grep -q 'inline\|helper' ref.out || true
}
for cc in "clang-19 -O1 -g -fPIE -pie" "cc -O2 -g"; do
    command -v ${cc%% *} >/dev/null 2>&1 || continue
    echo "== $cc"
    $cc prog.c -o prog || exit 1
    one_build
done
[ $fails -eq 0 ]
