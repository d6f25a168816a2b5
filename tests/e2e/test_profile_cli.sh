#!/bin/sh
# The profile command's command line: the short form (`lbr2prof PERF.DATA
# -o OUT`, binary found from the mmaps), llvm-profgen's space-separated
# option values, and bad input: every failure is a clear message with exit
# status 2 and no output file, never a crash, on every perf.data of the
# corpus too. The profiles are compared with llvm-profgen-19's, run now.
set -u
PG=llvm-profgen-19
command -v $PG >/dev/null 2>&1 || { echo "$PG not found"; exit 77; }
D=$TOP/tests/data/llvm-profgen-inputs
A=$TOP/tests/data/autofdo
cd "$WORK" || exit 1
fails=0

check() { # name status-expected status-got
    if [ "$2" = "$3" ]; then echo "ok   $1"; else
        echo "FAIL $1: status $3, expected $2"; fails=$((fails + 1)); fi
}

# short form; test.binary is found next to test.lbr by its basename
if command -v perf >/dev/null 2>&1; then
    $PG --perfdata="$A/test.lbr" --binary="$A/test.binary" --format=text \
        --output=ref.prof >/dev/null 2>&1
    "$LBR2PROF" "$A/test.lbr" -o my.prof --format text 2>err.txt
    check "short form exit" 0 $?
    if cmp -s ref.prof my.prof && grep -q 'using binary .*test.binary' err.txt; then
        echo "ok   short form = llvm-profgen"
    else
        echo "FAIL short form differs"; fails=$((fails + 1))
    fi
fi
# profile subcommand, values after a space, binary from a perf script mmap
$PG --perfscript="$D/noprobe.mmap.perfscript" --binary="$D/noprobe.perfbin" \
    --output=ref2.prof >/dev/null 2>&1
"$LBR2PROF" profile --perfscript "$D/noprobe.mmap.perfscript" -o my2.prof 2>/dev/null
check "subcommand form exit" 0 $?
if cmp -s ref2.prof my2.prof; then echo "ok   subcommand form = llvm-profgen (extbinary bytes)"
else echo "FAIL subcommand form differs"; fails=$((fails + 1)); fi

# deliberate difference: an inverted range in a raw profile is ignored
# (llvm-profgen underflows); the rest must match llvm-profgen
printf '2\n5c8-5b0:5\n5dc-5e9:3\n0\n' >inverted.raw
printf '1\n5dc-5e9:3\n0\n' >straight.raw
$PG --unsymbolized-profile=straight.raw --binary="$D/noprobe.perfbin" --format=text \
    --output=ref3.prof >/dev/null 2>&1
"$LBR2PROF" --unsymbolized-profile=inverted.raw --binary="$D/noprobe.perfbin" \
    --format=text -o my3.prof 2>/dev/null
check "inverted range exit" 0 $?
if cmp -s ref3.prof my3.prof; then echo "ok   inverted range ignored"
else echo "FAIL inverted range"; diff ref3.prof my3.prof; fails=$((fails + 1)); fi

# bad input: status 2, a message, no output
bad() { # name args...
    name=$1; shift
    rm -f bad.out
    "$LBR2PROF" "$@" -o bad.out >bad.log 2>&1
    st=$?
    if [ $st -eq 2 ] && [ ! -e bad.out ] && [ -s bad.log ]; then echo "ok   $name"
    else echo "FAIL $name: status $st"; cat bad.log; fails=$((fails + 1)); fi
}
printf '2\n5b0-5c8:7\n' >truncated.raw
printf 'not a number\n' >garbage.raw
bad "missing input" --perfscript=/nonexistent --binary="$D/noprobe.perfbin"
bad "no input" --binary="$D/noprobe.perfbin"
bad "two inputs" --perfscript="$D/noprobe.perfscript" --unsymbolized-profile=garbage.raw \
    --binary="$D/noprobe.perfbin"
bad "unknown option" --perfscript="$D/noprobe.perfscript" --binary="$D/noprobe.perfbin" --frobnicate
bad "gcc format" --perfscript="$D/noprobe.perfscript" --binary="$D/noprobe.perfbin" --format=gcc
bad "not a binary" --perfscript="$D/noprobe.perfscript" --binary="$D/noprobe.perfscript"
bad "missing binary" --perfscript="$D/noprobe.perfscript" --binary=/nonexistent
bad "truncated raw profile" --unsymbolized-profile=truncated.raw --binary="$D/noprobe.perfbin"
bad "garbage raw profile" --unsymbolized-profile=garbage.raw --binary="$D/noprobe.perfbin"
bad "perf.data without the binary's mmap" --perfdata="$A/test.lbr" --binary="$D/noprobe.perfbin"

# every llvm-profgen perf script against a binary it was not recorded from
# (mostly empty profiles), in every format: exit 0 or 2, never a crash
for f in "$D"/*.perfscript "$D"/*.aggperfscript; do
    for o in --format=text --format=binary --use-md5 --skip-symbolization; do
        "$LBR2PROF" --perfscript="$f" --binary="$D/func-split.perfbin" \
            --ignore-stack-samples $o -o mismatch.out >mismatch.log 2>&1
        st=$?
        if [ $st -ne 0 ] && [ $st -ne 2 ]; then
            echo "FAIL $(basename "$f") $o on func-split.perfbin: status $st"
            tail -3 mismatch.log; fails=$((fails + 1))
        fi
    done
done
echo "mismatched binaries: done"

# every perf.data of the corpus: exit 0 or 2, never a crash
for f in "$TOP"/tests/data/perf-corpus/perf.data.*; do
    for b in "" "--binary=$A/test.binary"; do
        "$LBR2PROF" "$f" $b -o corpus.out >corpus.log 2>&1
        st=$?
        if [ $st -ne 0 ] && [ $st -ne 2 ]; then
            echo "FAIL $(basename "$f") $b: status $st"; tail -3 corpus.log
            fails=$((fails + 1))
        fi
    done
done
echo "corpus: done"
[ $fails -eq 0 ]
