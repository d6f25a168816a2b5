#!/bin/sh
# test_split_dwarf_dwp.sh - split DWARF from a DWARF package (.dwp) against
# llvm-profgen-19 and against the .dwo route.
#
# A two-file program with inlining is built with clang-19 -O2 -g
# -fno-omit-frame-pointer -gsplit-dwarf (DWARF 5, and -gdwarf-4: the GNU
# version 2 index), its
# package made with llvm-dwp-19, and recorded with `lbr2prof record
# --simulate`; `lbr2prof script --raw-addresses` prints the trace (absolute
# callchain addresses, as llvm-profgen expects). Then:
#  * with the .dwo files and no package (libdw reads the .dwo files), with
#    the .dwo files deleted and --dwp OTHER.dwp, and with the default
#    <binary>.dwp: the same flat (--ignore-stack-samples) and CS text
#    (--no-repair-frames: llvm-profgen does not recover lost callers)
#    profiles, byte for byte, and the package ones equal llvm-profgen-19's
#    with the same --dwp (or none) on the same trace;
#  * no .dwo and no package: an error saying so, no profile;
#  * a package with a corrupt index, a truncated one, or a non-ELF --dwp:
#    exit status 2, one line naming the file, no output file.
#  * gcc -gdwarf-4 -gsplit-dwarf (if gcc is there), packaged by llvm-dwp-19
#    and by binutils' dwp: the same checks.
# Without a package, where libdw 0.188 cannot read the .dwo (dwp.c does),
# the flat and CS profiles equal llvm-profgen-22's on the same trace:
#  * clang-19 -gsplit-dwarf=single, DWARF 5 and 4 (the .o is the .dwo);
#    with the .o files gone, the error and no profile;
#  * g++ DWARF 5 -gsplit-dwarf -fdebug-types-section (type units, each in
#    a .debug_info.dwo section of its own);
#  * gcc DWARF 5 .dwo files (llvm-dwp-19 and 22 loop on them: no package).
set -u
for t in clang-19 llvm-dwp-19 llvm-profgen-19 readelf timeout od; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
cd "$WORK" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

cat > main.c <<'C'
#include <stdio.h>
#include <stdlib.h>
extern unsigned helper(unsigned x);
static volatile unsigned sink;
static inline __attribute__((always_inline)) unsigned leaf(unsigned x)
{ sink = x; return x * 3 + sink; }
static inline unsigned mid(unsigned x)
{ unsigned r = leaf(x + 1); if (r & 4) r ^= leaf(r); return r + leaf(r >> 1); }
__attribute__((noinline)) unsigned work(unsigned n)
{
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++)
        s += mid(i) + helper(s);
    return s;
}
int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;
    printf("%u\n", work(n));
    return 0;
}
C
cat > helper.c <<'C'
static volatile unsigned h;
static inline __attribute__((always_inline)) unsigned twice(unsigned x)
{ h = x; return x + h; }
unsigned helper(unsigned x) { return twice(x) + (x & 7 ? twice(x >> 2) : 1); }
C

prof() { # out args... : text profile from the lbr2prof script of trace
    out=$1; shift
    rm -f "$out"
    "$LBR2PROF" --perfscript=trace.txt --binary=prog --format=text -o "$out" "$@" \
        > "$out.log" 2>&1 || { cat "$out.log"; fail "lbr2prof $*"; }
}
ref() { # out args... : llvm-profgen-19 on the same trace
    out=$1; shift
    llvm-profgen-19 --perfscript=trace.txt --binary=prog --format=text \
        --output="$out" "$@" > "$out.log" 2>&1 || { cat "$out.log"; fail "llvm-profgen-19 $*"; }
}
same() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -10; fail "$3"; }; }
has_inline() { grep -q '^ \+[0-9.]*: [a-z_]*:[0-9]' "$1" || fail "$2: no inlinee in the profile"; }

one() { # name dwp-tool cc cflags...
    name=$1; tool=$2; cc=$3; shift 3
    mkdir -p "$name" && cd "$name" || fail "mkdir $name"
    cp ../main.c ../helper.c .
    $cc "$@" -c main.c -o main.o && $cc "$@" -c helper.c -o helper.o &&
        $cc -o prog main.o helper.o || fail "$name: build"
    ls ./*.dwo > /dev/null 2>&1 || fail "$name: no .dwo files"
    timeout 120 $tool -e prog -o pkg.dwp || fail "$name: $tool"
    readelf -SW pkg.dwp | grep -q debug_cu_index || fail "$name: no index"
    "$LBR2PROF" record --simulate -c 97 --seed 3 -o perf.data -- ./prog 3000 \
        > run.out 2> rec.err || { cat rec.err; fail "$name: record"; }
    "$LBR2PROF" script --show-mmap-events --raw-addresses perf.data > trace.txt 2> script.err ||
        { cat script.err; fail "$name: lbr2prof script"; }
    # the .dwo route (no package)
    prof dwo.flat --ignore-stack-samples
    prof dwo.cs --no-repair-frames
    has_inline dwo.flat "$name .dwo"
    # the package, with the .dwo files gone
    mkdir -p dwo && mv ./*.dwo dwo/
    prof dwp.flat --ignore-stack-samples --dwp pkg.dwp
    prof dwp.cs --dwp pkg.dwp --no-repair-frames
    same dwo.flat dwp.flat "$name: flat profile from the .dwp differs from the .dwo one"
    same dwo.cs dwp.cs "$name: CS profile from the .dwp differs from the .dwo one"
    ref want.flat --ignore-stack-samples --dwp=pkg.dwp
    ref want.cs --dwp=pkg.dwp
    same want.flat dwp.flat "$name: flat profile differs from llvm-profgen-19 --dwp"
    same want.cs dwp.cs "$name: CS profile differs from llvm-profgen-19 --dwp"
    # the default package: <binary>.dwp
    cp pkg.dwp prog.dwp
    prof def.flat --ignore-stack-samples
    ref wantdef.flat --ignore-stack-samples
    same dwp.flat def.flat "$name: prog.dwp is not used by default"
    same wantdef.flat def.flat "$name: default package: differs from llvm-profgen-19"
    rm prog.dwp
    # a default package that is no ELF file is passed over silently (as
    # llvm): the .dwo files are used
    printf 'not an ELF file\n' > prog.dwp && mv dwo/*.dwo . || fail "$name: junk prog.dwp"
    prof junk.flat --ignore-stack-samples
    same dwo.flat junk.flat "$name: a non-ELF prog.dwp is not passed over for the .dwo files"
    grep -q "dwp" junk.flat.log && { cat junk.flat.log; fail "$name: a non-ELF prog.dwp: not silent"; }
    rm prog.dwp && mv ./*.dwo dwo/ || fail "$name: mv"
    # neither: llvm-profgen's warning, and no stacks
    rm -f none.flat
    "$LBR2PROF" --perfscript=trace.txt --binary=prog -o none.flat > none.log 2>&1
    st=$?
    [ $st -eq 2 ] || { cat none.log; fail "$name: no .dwo/.dwp: status $st, expected 2"; }
    grep -q "2 unit(s) found neither in a .dwp" none.log ||
        { cat none.log; fail "$name: no .dwo/.dwp: not the expected error"; }
    echo "ok   $name: .dwp = .dwo route = llvm-profgen-19 (flat $(wc -l < dwp.flat) lines, CS $(wc -l < dwp.cs) lines)"
    cd ..
}

# A build without a package, read from the .dwo / .o files: flat and CS
# profiles equal llvm-profgen-22's; with `gone` files moved away, the error.
nopkg() { # name src "gone" cc flags...
    name=$1; src=$2; gone=$3; cc=$4; shift 4
    mkdir -p "$name" && cd "$name" || fail "mkdir $name"
    cp ../main.c ../helper.c ../cls.cc .
    objs=
    for f in $src; do
        $cc "$@" -c "$f" -o "${f%.*}.o" || fail "$name: build $f"
        objs="$objs ${f%.*}.o"
    done
    # shellcheck disable=SC2086
    $cc -o prog $objs || fail "$name: link"
    "$LBR2PROF" record --simulate -c 97 --seed 3 -o perf.data -- ./prog 3000 \
        > run.out 2> rec.err || { cat rec.err; fail "$name: record"; }
    "$LBR2PROF" script --show-mmap-events --raw-addresses perf.data > trace.txt 2> script.err ||
        { cat script.err; fail "$name: lbr2prof script"; }
    prof my.flat --ignore-stack-samples
    prof my.cs --no-repair-frames
    has_inline my.flat "$name"
    for k in flat cs; do
        opt=; [ $k = flat ] && opt=--ignore-stack-samples
        llvm-profgen-22 --perfscript=trace.txt --binary=prog --format=text \
            --output=want.$k $opt > want.$k.log 2>&1 || { cat want.$k.log; fail "$name: llvm-profgen-22"; }
        same want.$k my.$k "$name: $k profile differs from llvm-profgen-22's"
    done
    grep -q DWO my.flat.log && { cat my.flat.log; fail "$name: a DWO warning"; }
    mkdir -p away && mv $gone away/ || fail "$name: mv"
    "$LBR2PROF" --perfscript=trace.txt --binary=prog -o none.flat > none.log 2>&1
    [ $? -eq 2 ] && grep -q "unit(s) found neither in .*nor in the .dwo or .o files" none.log ||
        { cat none.log; fail "$name: without $gone: not the expected error"; }
    echo "ok   $name: = llvm-profgen-22 (flat $(wc -l < my.flat) lines, CS $(wc -l < my.cs) lines)"
    cd ..
}

bad() { # dir what dwp words
    (cd "$1" && rm -f bad.out &&
        "$LBR2PROF" --perfscript=trace.txt --binary=prog --dwp "$3" -o bad.out > bad.log 2>&1
    st=$?
    [ $st -eq 2 ] || { cat bad.log; echo "FAIL: $2: status $st, expected 2"; exit 1; }
    [ "$(wc -l < bad.log)" -eq 1 ] || { cat bad.log; echo "FAIL: $2: expected one line"; exit 1; }
    [ -e bad.out ] && { echo "FAIL: $2: an output file was written"; exit 1; }
    grep -q "$3" bad.log && grep -q "$4" bad.log ||
        { cat bad.log; echo "FAIL: $2: message lacks '$3' or '$4'"; exit 1; }
    echo "ok   $2: $(cat bad.log)") || exit 1
}

one v5 llvm-dwp-19 clang-19 -O2 -g -fno-omit-frame-pointer -gsplit-dwarf
cat > cls.cc <<'C'
#include <cstdio>
#include <cstdlib>
struct Acc {
    unsigned v[8];
    unsigned total() const;
    void add(unsigned x) { v[x & 7] += x * 3 + (x >> 2); }
};
unsigned Acc::total() const { unsigned s = 0; for (unsigned x : v) s ^= x; return s; }
template <class T> struct Box { T t; T get() const { return t + 1; } };
int main(int argc, char **argv)
{
    Acc a{};
    Box<unsigned> b{argc > 1 ? (unsigned)atoi(argv[1]) : 1000u};
    for (unsigned i = 0; i < b.get(); i++)
        a.add(i + (i & 3 ? a.total() : 0));
    printf("%u\n", a.total());
    return 0;
}
C
if command -v llvm-profgen-22 >/dev/null 2>&1; then
    nopkg single5 "main.c helper.c" "main.o helper.o" clang-19 -O2 -g -fno-omit-frame-pointer -gsplit-dwarf=single
    nopkg single4 "main.c helper.c" "main.o helper.o" clang-19 -O2 -g -fno-omit-frame-pointer -gdwarf-4 -gsplit-dwarf=single
    if command -v g++ >/dev/null 2>&1; then
        nopkg gxx-types "cls.cc" "cls.dwo" g++ -O2 -g -fno-omit-frame-pointer -gdwarf-5 -gsplit-dwarf -fdebug-types-section
        nopkg gcc5 "main.c helper.c" "main.dwo helper.dwo" gcc -O2 -g -fno-omit-frame-pointer -gdwarf-5 -gsplit-dwarf
    fi
else
    echo "note: llvm-profgen-22 not found: no =single, type-unit and gcc DWARF 5 cases"
fi
one v4 llvm-dwp-19 clang-19 -O2 -g -fno-omit-frame-pointer -gdwarf-4 -gsplit-dwarf

# corrupt packages: an index whose slot count is not a power of 2, a row
# whose contribution runs past its section, a truncated file, not an ELF
cd v5 || fail cd
idx=$(readelf -SW pkg.dwp | awk '/\.debug_cu_index/ { for (i = 1; i <= NF; i++) if ($i == "PROGBITS") print $(i + 2) }')
[ -n "$idx" ] || fail "no .debug_cu_index offset"
cp pkg.dwp slots.dwp
printf '\003' | dd of=slots.dwp bs=1 seek=$((0x$idx + 12)) conv=notrunc 2> /dev/null
nslots=$(od -An -tu4 -j $((0x$idx + 12)) -N4 pkg.dwp | tr -d ' ')
ncols=$(od -An -tu4 -j $((0x$idx + 4)) -N4 pkg.dwp | tr -d ' ')
nunits=$(od -An -tu4 -j $((0x$idx + 8)) -N4 pkg.dwp | tr -d ' ')
# the first size of the last row of the size table
cp pkg.dwp size.dwp
at=$((0x$idx + 16 + 12 * nslots + 4 * ncols + 4 * nunits * ncols + 4 * (nunits - 1) * ncols))
printf '\377\377\377\177' | dd of=size.dwp bs=1 seek=$at conv=notrunc 2> /dev/null
head -c $((0x$idx + 20)) pkg.dwp > short.dwp
printf 'not an ELF file\n' > notelf.dwp
cd ..
bad v5 "slot count not a power of 2" slots.dwp "power of 2"
bad v5 "contribution past its section" size.dwp "past the end"
bad v5 "truncated package" short.dwp "trunc"
bad v5 "not an ELF --dwp" notelf.dwp "not an ELF"

# gcc 12's DWARF 5 split units: llvm-dwp-19 loops and binutils' dwp
# crashes on them, so DWARF 4 only, packaged by each tool
if command -v gcc >/dev/null 2>&1; then
    one gcc4 llvm-dwp-19 gcc -O2 -g -fno-omit-frame-pointer -gdwarf-4 -gsplit-dwarf
    if command -v dwp >/dev/null 2>&1; then
        one gcc4-binutils dwp gcc -O2 -g -fno-omit-frame-pointer -gdwarf-4 -gsplit-dwarf
    fi
fi
exit 0
