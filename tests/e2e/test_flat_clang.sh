#!/bin/sh
# test_flat_clang.sh - the flat profile lbr2prof makes for a program of the
# project's tests is accepted by clang-19, and bad binaries are refused.
#
#  * tests/workloads/kernel.c is built with clang-19 -O2 -g
#    -fno-omit-frame-pointer, recorded with `lbr2prof record --simulate`,
#    and profiled with `lbr2prof perf.data --ignore-stack-samples` (text,
#    extbinary, extbinary --use-md5). clang-19 -O2 -g
#    -fprofile-sample-use=PROFILE -Wall -Werror compiles kernel.c with each,
#    printing nothing, and the IR carries the profile's entry counts.
#  * Bad input, each one line on stderr, exit status 2, no output file:
#    a binary whose build-id does not match the perf.data (kernel.c
#    rebuilt with -O1, same basename), the binary without DWARF (objcopy
#    --strip-debug), the stripped binary (strip), a non-ELF file.
#  * Without --binary the binary is found by build-id in perf's cache.
set -u
for t in clang-19 objcopy strip readelf; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
cd "$WORK" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
SRC=$TOP/tests/workloads/kernel.c

clang-19 -O2 -g -fno-omit-frame-pointer -o prog "$SRC" || fail "clang-19 build"
"$LBR2PROF" record --simulate -c 211 -o perf.data -- ./prog 100 > /dev/null 2> rec.err ||
    { cat rec.err; fail "record"; }

for f in text extbinary md5; do
    case $f in
    md5) opt="--format=extbinary --use-md5" ;;
    *) opt="--format=$f" ;;
    esac
    "$LBR2PROF" perf.data --binary prog --ignore-stack-samples $opt -o p.$f 2> prof.err ||
        { cat prof.err; fail "lbr2prof $opt"; }
    clang-19 -O2 -g -fno-omit-frame-pointer -fprofile-sample-use=p.$f -Wall -Werror \
        -c "$SRC" -o k.$f.o > cc.out 2>&1 || { cat cc.out; fail "clang-19 with the $f profile"; }
    [ -s cc.out ] && { cat cc.out; fail "clang-19 printed something with the $f profile"; }
    clang-19 -O2 -g -fno-omit-frame-pointer -fprofile-sample-use=p.$f -S -emit-llvm \
        -o k.$f.ll "$SRC" 2>/dev/null || fail "clang-19 -emit-llvm ($f)"
    grep -q '!"function_entry_count", i64 [1-9]' k.$f.ll ||
        fail "the $f profile left no entry count in the IR"
    echo "ok   clang-19 -fprofile-sample-use with the $f profile: no warning, counts applied"
done

# the trace from stdin (pipe mode, as `perf record -o - | lbr2prof -`)
if command -v perf >/dev/null 2>&1; then
    perf inject -i perf.data -o - 2>/dev/null |
        "$LBR2PROF" - --binary prog --ignore-stack-samples --format=text -o p.pipe 2> pipe.err ||
        { cat pipe.err; fail "profile from stdin"; }
    cmp -s p.text p.pipe || fail "profile from stdin differs"
    echo "ok   the same profile from stdin (pipe mode)"
fi

# bad binaries
mkdir -p other nodwarf stripped
clang-19 -O1 -g -fno-omit-frame-pointer -o other/prog "$SRC" || fail "clang-19 -O1"
objcopy --strip-debug prog nodwarf/prog || fail objcopy
strip -o stripped/prog prog || fail strip
printf 'not an ELF file\n' > notelf
bad() { # name binary expected-words
    rm -f bad.out
    "$LBR2PROF" perf.data --binary "$2" --ignore-stack-samples -o bad.out > bad.log 2>&1
    st=$?
    [ $st -eq 2 ] || { cat bad.log; fail "$1: status $st, expected 2"; }
    [ "$(wc -l < bad.log)" -eq 1 ] || { cat bad.log; fail "$1: expected one line"; }
    [ -e bad.out ] && fail "$1: an output file was written"
    grep -q "$3" bad.log || { cat bad.log; fail "$1: message does not say '$3'"; }
    echo "ok   $1: $(cat bad.log)"
}
bad "build-id mismatch" other/prog "build-id mismatch"
bad "no DWARF" nodwarf/prog "no DWARF"
bad "stripped" stripped/prog "stripped binary"
bad "not ELF" notelf "not an ELF file"
# without --binary: the most sampled file, found by build-id in perf's
# cache (~/.debug/.build-id) before a same-named file with another build-id
# next to the trace
mkdir -p run data home
cp prog run/prog
(cd run && "$LBR2PROF" record --simulate -c 211 -o ../data/perf.data -- ./prog 100 > /dev/null 2>&1) ||
    fail "record in run/"
"$LBR2PROF" data/perf.data --binary run/prog --ignore-stack-samples --format=text \
    -o byname.txt 2> /dev/null || fail "explicit --binary"
id=$(readelf -n prog | awk '/Build ID/ {print $3}')
mkdir -p "home/.debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-)"
mv run/prog "home/.debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-)/elf"
cp other/prog data/prog
HOME=$PWD/home PERF_BUILDID_DIR= "$LBR2PROF" data/perf.data --ignore-stack-samples --format=text \
    -o bycache.txt 2> auto.err || { cat auto.err; fail "binary from the build-id cache"; }
grep -q 'using binary .*\.build-id/.*/elf' auto.err || { cat auto.err; fail "not the cached binary"; }
cmp -s byname.txt bycache.txt || fail "cached binary: different profile"
echo "ok   no --binary: found by build-id in ~/.debug, not the same-named file next to the trace"
# perf's PERF_BUILDID_DIR names the cache instead of ~/.debug
mv home/.debug cachedir
HOME=$PWD/home PERF_BUILDID_DIR=$PWD/cachedir "$LBR2PROF" data/perf.data --ignore-stack-samples \
    --format=text -o byenv.txt 2> env.err || { cat env.err; fail "binary from PERF_BUILDID_DIR"; }
grep -q 'using binary .*cachedir/\.build-id/.*/elf' env.err || { cat env.err; fail "not the PERF_BUILDID_DIR binary"; }
cmp -s byname.txt byenv.txt || fail "PERF_BUILDID_DIR binary: different profile"
echo "ok   PERF_BUILDID_DIR: the build-id cache perf was told to use"

# the raw (unsymbolized) profile needs no DWARF (the counts may differ:
# without DWARF functions no hybrid sample is found in a prolog)
"$LBR2PROF" perf.data --binary nodwarf/prog --ignore-stack-samples --skip-symbolization \
    -o raw.out 2> raw.err || { cat raw.err; fail "--skip-symbolization without DWARF"; }
[ "$(head -1 raw.out)" -gt 0 ] || fail "--skip-symbolization without DWARF: no range"
echo "ok   --skip-symbolization works without DWARF"
exit 0
