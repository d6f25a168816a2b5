#!/bin/sh
# test_profgen_binaries.sh - the driver with several binaries: a program
# and its shared library (both with DWARF), built now with clang-19 and
# recorded with `lbr2prof record --simulate`.
#  1. --binaries-from-trace finds the library (sampled, found at its
#     recorded path with its build-id, DWARF) and says so; the system
#     libraries without DWARF are not added;
#  2. the library passed as a second --binary, or found by
#     --binaries-from-trace, adds the library's functions to the CS profile
#     (the unwinder counts every binary, docs/unwind.md; the contexts are
#     checked in test_unwind_binaries.sh) and leaves the program's own
#     function as it was; the flat route counts binary 0 only: unchanged;
#  3. the library as the only --binary profiles the library's functions
#     (the address map finds its mapping by path);
#  4. --binaries-from-trace on stdin is a usage error (exit 2).
set -u
command -v clang-19 >/dev/null 2>&1 || { echo "skip: clang-19 not found"; exit 77; }
cd "$WORK" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

cat > lib.c <<'C'
__attribute__((noinline)) unsigned lib_mix(unsigned x) { x ^= x >> 13; x *= 0x5bd1e995u; return x ^ (x >> 15); }
__attribute__((noinline)) unsigned lib_loop(unsigned n) { unsigned a = 1; for (unsigned i = 0; i < n; i++) a += lib_mix(a + i); return a; }
C
cat > main.c <<'C'
#include <stdio.h>
unsigned lib_loop(unsigned n);
__attribute__((noinline)) static unsigned own(unsigned n) { unsigned a = 0; for (unsigned i = 0; i < n; i++) a = a * 31 + i; return a; }
int main(void) { printf("%u\n", lib_loop(20000) + own(30000)); return 0; }
C
CF="-O2 -g -fno-omit-frame-pointer"
clang-19 $CF -fPIC -shared lib.c -o libwork.so || { echo "compile lib"; exit 1; }
clang-19 $CF main.c -o prog -L. -lwork -Wl,-rpath,"$WORK" || { echo "compile prog"; exit 1; }
"$LBR2PROF" record --simulate -c 97 --seed 3 -o prog.data -- ./prog >/dev/null 2>rec.err ||
    { cat rec.err; exit 1; }

# 1. discovery of the library
"$LBR2PROF" prog.data --binary=prog --binaries-from-trace --format=text -o from-trace.prof 2>ft.err ||
    { cat ft.err; fail "--binaries-from-trace exit"; }
grep -q "also using binary .*libwork.so" ft.err || { cat ft.err; fail "libwork.so not added"; }
grep -q "also using binary .*libc" ft.err && fail "libc (no DWARF) added"

# 2. extra binaries add theirs
"$LBR2PROF" prog.data --binary=prog --format=text -o one.prof 2>/dev/null || fail "one binary"
"$LBR2PROF" prog.data --binary=prog --binary=libwork.so --format=text -o two.prof 2>/dev/null || fail "two binaries"
grep -q '^own:' one.prof || fail "one.prof has no profile of own"
grep -q 'lib_mix' one.prof && fail "one.prof has the library's functions"
grep -q 'lib_mix' two.prof || fail "two.prof has no lib_mix"
own() { awk '/^own:/ { p = 1; print; next } /^[^ ]/ { p = 0 } p' "$1"; }
[ "$(own one.prof)" = "$(own two.prof)" ] || { diff one.prof two.prof | head; fail "second --binary changed own's profile"; }
cmp -s two.prof from-trace.prof || fail "--binaries-from-trace differs from a second --binary"
"$LBR2PROF" prog.data --binary=prog --ignore-stack-samples --format=text -o flat1.prof 2>/dev/null || fail "flat one"
"$LBR2PROF" prog.data --binary=prog --binary=libwork.so --ignore-stack-samples --format=text -o flat2.prof 2>/dev/null || fail "flat two"
cmp -s flat1.prof flat2.prof || fail "second --binary changed the flat profile"

# 3. the library alone: its own functions
"$LBR2PROF" prog.data --binary=libwork.so --format=text -o lib.prof 2>lib.err || { cat lib.err; fail "library as the binary"; }
grep -q 'lib_mix' lib.prof || fail "lib.prof has no lib_mix"
grep -q 'own' lib.prof && fail "lib.prof has the program's function"

# 4. stdin
"$LBR2PROF" - --binary=prog --binaries-from-trace -o stdin.prof < prog.data >/dev/null 2>stdin.err
st=$?
[ $st -eq 2 ] && grep -q 'binaries-from-trace needs a trace file' stdin.err || { cat stdin.err; fail "stdin: status $st"; }
[ -e stdin.prof ] && fail "stdin: output left behind"

[ $fails -eq 0 ] && echo "ok"
[ $fails -eq 0 ]
