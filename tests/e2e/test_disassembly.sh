#!/bin/sh
# llvm-profgen's inspection flags: --show-disassembly-only with
# --show-source-locations, --show-canonical-fname and
# --disassemble-functions print, byte for byte, what llvm-profgen-22 prints
# (run now): section headers, symbols, addresses, instruction text and
# source locations, on every llvm-profgen test binary, AutoFDO's
# test.binary and programs built now with clang-19 and gcc whose code has
# what capstone spells differently from LLVM (lock and rep prefixes, shifts
# by one, string instructions, signed and unsigned immediates, SSE moves and
# conversions). The companions without the listing, and an unknown syntax,
# are refused.
set -u
PG=llvm-profgen-22
command -v $PG >/dev/null 2>&1 || { echo "$PG not found"; exit 77; }
D=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0 runs=0

# Both tools run where the binary is, named by its basename: the listing's
# first line is "Disassembly of NAME:" with the path as given.
compare() { # binary options...
    bin=$1; shift
    dir=$(dirname "$bin") base=$(basename "$bin")
    (cd "$dir" && $PG --show-disassembly-only --binary="$base" \
        --output=/dev/null "$@" 2>/dev/null) >"$WORK/ref.txt"
    (cd "$dir" && "$LBR2PROF" --show-disassembly-only --binary="$base" "$@" \
        2>"$WORK/err.txt") >"$WORK/got.txt"
    st=$?
    runs=$((runs + 1))
    if [ $st -ne 0 ] || ! cmp -s "$WORK/ref.txt" "$WORK/got.txt" ||
        [ "$(wc -l <"$WORK/got.txt")" -lt 5 ]; then
        echo "FAIL $base $*: status $st"
        diff "$WORK/ref.txt" "$WORK/got.txt" | head -6
        head -3 "$WORK/err.txt"
        fails=$((fails + 1))
    fi
}

# programs with the instructions whose spelling differs between capstone
# and LLVM (the unit of each difference handled in src/binary/insttext.c)
cat >spell.c <<'EOF'
#include <string.h>
long counter;
unsigned char buf[4096], dst[4096];
__attribute__((noinline)) long atomics(long v)
{
    __atomic_fetch_add(&counter, v, __ATOMIC_SEQ_CST);
    __atomic_fetch_sub(&counter, 1, __ATOMIC_SEQ_CST);
    return __atomic_exchange_n(&counter, v, __ATOMIC_SEQ_CST);
}
__attribute__((noinline)) double conv(long a, int b, unsigned u)
{
    return (double)a + (float)b + (double)(u >> 1) + (double)(a >> 1);
}
__attribute__((noinline)) int imms(int x, long y, signed char c)
{
    x &= 0xffffff00; x |= -1 == c ? 0x80000000u : 3; y &= -4097;
    c += -8; y += 0x1234567890LL; x ^= -43;
    return x + (int)y + c + (x < -100000 ? 1 : 0);
}
__attribute__((noinline)) void strings(int n)
{
    memset(dst, n, sizeof dst);
    memcpy(dst + 8, buf, (size_t)n);
}
int main(int argc, char **argv)
{
    (void)argv;
    strings(argc);
    return (int)atomics(argc) + (int)conv(argc, argc, (unsigned)argc) +
           imms(argc, argc, (signed char)argc) + dst[argc];
}
EOF
built=""
if command -v clang-19 >/dev/null 2>&1 &&
    clang-19 -O2 -g -fno-builtin-memset -o "$WORK/spell-clang" spell.c; then
    built="$built $WORK/spell-clang"
fi
if command -v gcc >/dev/null 2>&1 &&
    gcc -O2 -g -mno-sse4 -minline-all-stringops -o "$WORK/spell-gcc" spell.c; then
    built="$built $WORK/spell-gcc"
fi
[ -n "$built" ] || { echo "FAIL neither clang-19 nor gcc built spell.c"; fails=$((fails + 1)); }
# the built code has each difference at least once (else the test proves
# nothing about it): lock alone, rep prefix, a conversion from a register,
# signed immediates, the %es destination, a shift by one, a 32-bit
# immediate printed unsigned
: >spell.txt
for b in $built; do
    (cd "$WORK" && $PG --show-disassembly-only --binary="$(basename "$b")" \
        --output=/dev/null 2>/dev/null) >>spell.txt
done
if [ -n "$built" ]; then
    for want in '	lock$' '	rep		stos' 'cvtsi2sd	%' '	$-' '%es:(%rdi)' \
        '	shr[lq]	%[a-z0-9]*$' '$[0-9]\{10\}'; do
        grep -q -- "$want" spell.txt ||
            { echo "FAIL the built programs have no '$want'"; fails=$((fails + 1)); }
    done
fi

# every binary with locations (the instruction lines are those of the
# plain listing, padded); the plain listing and the filter on a few
for b in "$D"/*.perfbin "$TOP/tests/data/autofdo/test.binary" $built; do
    compare "$b" --show-source-locations
done
for b in "$D/inline-cs-noprobe.perfbin" "$D/fs-discriminator.perfbin" $built; do
    compare "$b"
    compare "$b" --show-source-locations --show-canonical-fname
    compare "$b" --disassemble-functions=main,foo,bar --show-source-locations
done
# canonical names: the filter matches the names as printed
U=$D/unique-linkage-name-dwarf.perfbin
compare "$U" --show-canonical-fname --disassemble-functions=foo,main
compare "$U" --disassemble-functions=foo --disassemble-functions=main
compare "$D/func-split.perfbin" --show-canonical-fname --x86-asm-syntax=att
echo "compared $runs listings"

# The profile sees the instructions the listing shows: a leading lock is
# an instruction of its own for llvm-profgen, and a CS profile's TOTAL
# counts instructions, so atomics recorded now give llvm-profgen-22's
# profile only with the same boundaries (208238 against 336382 before).
cat >lockloop.c <<'EOF'
long counter;
__attribute__((noinline)) void work(long n)
{
    for (long i = 0; i < n; i++) {
        __atomic_fetch_add(&counter, i, __ATOMIC_SEQ_CST);
        __atomic_fetch_sub(&counter, 1, __ATOMIC_SEQ_CST);
    }
}
int main(void) { work(20000); return (int)(counter & 1); }
EOF
if command -v clang-19 >/dev/null 2>&1 &&
    clang-19 -O2 -g -fno-omit-frame-pointer -o lockloop lockloop.c &&
    "$LBR2PROF" record --simulate -c 97 --seed 3 -o lock.data -- ./lockloop >/dev/null 2>&1 &&
    "$LBR2PROF" script --show-mmap-events --raw-addresses lock.data >lock.txt; then
    $PG --perfscript=lock.txt --binary=lockloop --format=text --output=lock.ref 2>/dev/null
    "$LBR2PROF" --perfscript=lock.txt --binary=lockloop --format=text \
        --no-repair-frames -o lock.my 2>/dev/null
    if [ -s lock.ref ] && cmp -s lock.ref lock.my; then
        echo "ok   CS profile of lock-prefixed code = llvm-profgen-22"
    else
        echo "FAIL CS profile of lock-prefixed code"; diff lock.ref lock.my | head -4
        fails=$((fails + 1))
    fi
else
    echo "FAIL building or recording lockloop"; fails=$((fails + 1))
fi

# refused: the companions alone, another syntax; status 2 and a message
refused() { # name expected-message args...
    name=$1 msg=$2; shift 2
    "$LBR2PROF" "$@" >out.txt 2>err.txt
    st=$?
    if [ $st -eq 2 ] && grep -q -- "$msg" err.txt && [ ! -s out.txt ]; then
        echo "ok   refused: $name"
    else
        echo "FAIL refused $name: status $st"; cat err.txt; fails=$((fails + 1))
    fi
}
P=$D/noprobe.perfscript B=$D/noprobe.perfbin
refused "locations alone" "show-source-locations should work together with --show-disassembly-only" \
    --perfscript="$P" --binary="$B" -o x.prof --show-source-locations
refused "canonical names alone" "show-canonical-fname should work together" \
    --perfscript="$P" --binary="$B" -o x.prof --show-canonical-fname
refused "functions alone" "disassemble-functions should work together" \
    --perfscript="$P" --binary="$B" -o x.prof --disassemble-functions=main
refused "intel syntax" "AT&T syntax only" --show-disassembly-only --binary="$B" \
    --x86-asm-syntax=intel
refused "no binary" "needs --binary" --show-disassembly-only
refused "missing binary" "Input binary(/nonexistent) doesn't exist" \
    --show-disassembly-only --binary=/nonexistent
[ ! -e x.prof ] || { echo "FAIL a refused run wrote a profile"; fails=$((fails + 1)); }
[ $fails -eq 0 ]
