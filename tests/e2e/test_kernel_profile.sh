#!/bin/sh
# --kernel: a profile of a kernel image from kernel samples, as
# llvm-profgen 22 makes it. perf cannot record a kernel here, so the test
# makes one: a "kernel part" object is linked into a user program (run by
# `record --simulate`, two processes merged) and alone at a kernel address
# (the test's vmlinux, clang-19 + lld, with DWARF); tests/e2e/helpers/
# kernelize.c moves every address of the part by the distance between the
# two, plus a KASLR offset, turns those samples into kernel ones (perf's
# kernel callchain, PERF_CONTEXT_KERNEL then PERF_CONTEXT_USER), and puts
# the kernel's mmap ([kernel.kallsyms]_text, pid -1, pgoff = start) and a
# kernel module's mmap in front. Then, against llvm-profgen-22 --kernel on
# the same perf.data (which it reads with perf script) and on perf's text:
#   * flat (--ignore-stack-samples), CS (--no-repair-frames) and the
#     unsymbolized CS profile, from perf.data and from the text: equal;
#   * the default mode (frame repair): a CS profile that keeps at least
#     llvm-profgen's counts;
#   * no kernel mmap: llvm-profgen's error, status 2, no profile;
#     without --kernel: no profile either (vmlinux is no mapped file);
#     --kernel without --binary: a usage error.
set -u
for t in clang-19 llvm-profgen-22 perf cc; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
cd "$WORK" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

cat > kpart.c <<'C'
/* the kernel part: self-contained (it is linked alone as the vmlinux) */
static unsigned long kstate[64];
static inline __attribute__((always_inline)) unsigned long kmix(unsigned long x)
{ x ^= x >> 7; x *= 0x9e3779b97f4a7c15ul; return x ^ (x >> 11); }
__attribute__((noinline)) unsigned long k_copy(unsigned long n)
{
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) {
        kstate[i & 63] += kmix(i + s);
        s += kstate[(i * 7) & 63] & 0xff;
    }
    return s;
}
__attribute__((noinline)) unsigned long k_lookup(unsigned long key)
{
    unsigned long h = kmix(key);
    for (int d = 0; d < 8; d++) {
        if ((h & 3) == 0)
            break;
        h = kmix(h + kstate[h & 63]);
    }
    return h;
}
__attribute__((noinline)) unsigned long k_entry(unsigned long nr, unsigned long arg)
{
    switch (nr & 3) {
    case 0: return k_copy(arg & 127);
    case 1: return k_lookup(arg);
    case 2: return k_copy(arg & 31) + k_lookup(arg >> 3);
    default: return kmix(arg);
    }
}
C
cat > umain.c <<'C'
#include <stdio.h>
#include <stdlib.h>
extern unsigned long k_entry(unsigned long nr, unsigned long arg);
static inline unsigned long user_work(unsigned long i)
{ unsigned long r = i * 2654435761ul; for (int k = 0; k < (int)(i & 7); k++) r = (r >> 3) ^ (r * 5); return r; }
int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000, s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += k_entry(i + (s & 1), user_work(i)) ^ user_work(s);
    printf("%lu\n", s);
    return 0;
}
C
F="-O2 -g -fno-omit-frame-pointer -fno-asynchronous-unwind-tables"
# shellcheck disable=SC2086
clang-19 $F -fPIE -c kpart.c -o kpart.o && clang-19 $F -c umain.c -o umain.o &&
    clang-19 -no-pie -fuse-ld=lld umain.o kpart.o -o uprog &&
    clang-19 -fuse-ld=lld -nostdlib -static -Wl,--image-base=0xffffffff80ff0000 \
        -Wl,-Ttext=0xffffffff81000000 -Wl,-e,k_entry -Wl,--build-id kpart.o -o vmlinux ||
    { echo "FAIL: building the program and the vmlinux"; exit 1; }
LIB=$TOP/$BUILD/liblbr2prof.a
SAN=
nm "$LIB" 2>/dev/null | grep -q __asan_init && SAN="-fsanitize=address,undefined"
LIBS=$(make -s -C "$TOP" print-ldlibs) || { echo "FAIL: make print-ldlibs"; exit 1; }
for h in kernelize pdmerge; do
    # shellcheck disable=SC2086
    cc -std=gnu11 -O1 $SAN -D_GNU_SOURCE -I"$TOP/include" -o $h "$TOP/tests/e2e/helpers/$h.c" \
        "$LIB" $LIBS || { echo "FAIL: building $h"; exit 1; }
done
"$LBR2PROF" record --simulate -c 97 --seed 3 -o r1.data -- ./uprog 3000 >/dev/null 2>&1 &&
    "$LBR2PROF" record --simulate -c 89 --seed 5 -o r2.data -- ./uprog 2000 >/dev/null 2>&1 &&
    ./pdmerge merged.data r1.data r2.data || { echo "FAIL: recording"; exit 1; }
sym() { nm -S "$1" | awk -v n="$2" '$4 == n { print $1, $2 }'; }
# 64-bit hex arithmetic (sh's is signed and clamps): hex A op hex B
hexop() { perl -e 'no warnings; my ($a, $o, $b) = (hex $ARGV[0], $ARGV[1], hex $ARGV[2]);
                   printf "%x\n", $o eq "+" ? $a + $b : $a - $b' "$@"; }
set -- $(sym uprog k_copy); lo=$1
set -- $(sym uprog k_entry); hi=$(hexop "$1" + "$2")
set -- $(sym vmlinux k_copy); klink=$1
kstart=$(hexop "$klink" + 1a000000)    # a KASLR offset
./kernelize "$lo" "$hi" "$(hexop "$kstart" - "$lo")" "$kstart" 2000000 kern.data merged.data ||
    { echo "FAIL: kernelize"; exit 1; }
perf script -i kern.data --show-mmap-events -F ip,brstack > kern.txt 2>/dev/null
[ "$(grep -c 'ffffffff9b' kern.txt)" -gt 100 ] || { echo "FAIL: perf script shows no kernel samples"; exit 1; }

# run NAME TOOL INPUT ARGS...: the text profile to NAME, stderr to NAME.err
run() {
    n=$1 tool=$2 in=$3; shift 3
    rm -f "$n"
    if [ "$tool" = ref ]; then
        llvm-profgen-22 --kernel "$in" --binary=vmlinux --output="$n" "$@" >/dev/null 2>"$n.err"
    else
        "$LBR2PROF" --kernel "$in" --binary=vmlinux -o "$n" "$@" >/dev/null 2>"$n.err"
    fi
}
T=--format=text
for input in "--perfdata=kern.data" "--perfscript=kern.txt"; do
    k=${input%%=*}; k=${k#--}
    for mode in "flat --ignore-stack-samples $T" "cs --no-repair-frames $T" \
                "raw --no-repair-frames --skip-symbolization"; do
        set -- $mode; m=$1; shift
        o=$*; [ "$m" != flat ] || o="$T --ignore-stack-samples"
        run ref.$k.$m ref "$input" $(echo "$o" | sed 's/--no-repair-frames//')
        run my.$k.$m my "$input" $o
        if [ -s ref.$k.$m ] && cmp -s ref.$k.$m my.$k.$m; then
            echo "ok   $k $m: = llvm-profgen-22 --kernel ($(wc -l < my.$k.$m) lines)"
        else
            fail "$k $m differs from llvm-profgen-22 --kernel"; diff ref.$k.$m my.$k.$m | head -5; cat my.$k.$m.err
        fi
    done
done
grep -q 'k_copy' ref.perfdata.cs && grep -q 'kmix' ref.perfdata.cs || fail "the kernel functions are not in the profile"
# the default mode keeps at least llvm-profgen's counts
run my.repair my --perfdata=kern.data $T
total() { awk '/^[^ ]/ { split($0, a, ":"); t += a[2] } END { print t + 0 }' "$1"; }
if [ "$(total my.repair)" -ge "$(total ref.perfdata.cs)" ] && [ "$(total my.repair)" -gt 0 ]; then
    echo "ok   default mode: $(total my.repair) >= $(total ref.perfdata.cs) counts"
else
    fail "default mode: $(total my.repair) counts, llvm-profgen $(total ref.perfdata.cs)"; cat my.repair.err
fi

# no kernel mmap: llvm-profgen's error
grep -v 'kernel.kallsyms' kern.txt > nokern.txt
run ref.nokern ref --perfscript=nokern.txt $T
run my.nokern my --perfscript=nokern.txt $T
st=$?
if [ ! -e my.nokern ] && grep -q "Kernel is requested, but no kernel is found in mmap events" my.nokern.err &&
    grep -q "Kernel is requested, but no kernel is found" ref.nokern.err; then
    echo "ok   no kernel mmap: $(tail -1 my.nokern.err)"
else
    fail "no kernel mmap: status $st"; cat my.nokern.err
fi
# without --kernel the vmlinux is no mapped file; --kernel needs --binary
rm -f plain.prof
"$LBR2PROF" kern.data --binary=vmlinux -o plain.prof 2>plain.err
[ $? -eq 2 ] && [ ! -e plain.prof ] || fail "without --kernel: a profile"
"$LBR2PROF" kern.data --kernel -o nobin.prof 2>nobin.err
[ $? -eq 2 ] && grep -q -- "--kernel needs --binary" nobin.err || fail "--kernel without --binary: $(cat nobin.err)"
[ $fails -eq 0 ] && exit 0
exit 1
