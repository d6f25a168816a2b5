#!/bin/sh
# test_script_profgen_roundtrip.sh - the perf script text backend and the
# script printer against llvm-profgen-19: for every llvm-profgen test input
# that has its binary, `lbr2prof script X` re-prints the samples lbr2prof
# parsed; llvm-profgen must make the same profile from that text as from X
# (raw --skip-symbolization profile and the symbolized text profile).
set -u
command -v llvm-profgen-19 >/dev/null 2>&1 || { echo "llvm-profgen-19 missing"; exit 77; }
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
D=$TOP/tests/data/llvm-profgen-inputs
fail=0; n=0
for f in "$D"/*.perfscript "$D"/*.aggperfscript; do
    b=$(basename "$f")
    stem=${b%.*}
    # The binary: named by the MMAP line if there is one, else by the stem.
    bin=$(sed -n 's|.*PERF_RECORD_MMAP2* .*: [-a-z]* .*/\([^/]*\.perfbin\)$|\1|p' "$f" | head -n 1)
    # Inputs whose binary has another name in llvm-profgen's tests.
    case $stem in
    artificial-branch|ip-duplication) bin=inline-noprobe2.perfbin ;;
    noprobe-skid) bin=noprobe.perfbin ;;
    recursion-compression-pseudoprobe-nommap) bin=recursion-compression-pseudoprobe.perfbin ;;
    coff-profile) bin=coff-profile.exe ;;
    esac
    [ -n "$bin" ] || bin=$stem.perfbin
    [ -f "$D/$bin" ] || { echo "SKIP $b: no binary $bin"; continue; }
    "$LBR2PROF" script --show-mmap-events "$f" > "$WORK/$b.txt" 2> "$WORK/$b.err" ||
        { fail=$((fail + 1)); echo "FAIL $b: lbr2prof script failed"; cat "$WORK/$b.err"; continue; }
    for mode in raw text; do
        opt=; [ $mode = raw ] && opt=--skip-symbolization
        llvm-profgen-19 --perfscript="$f" --binary="$D/$bin" $opt \
            --output="$WORK/$b.$mode.want" > /dev/null 2>&1
        st1=$?
        llvm-profgen-19 --perfscript="$WORK/$b.txt" --binary="$D/$bin" $opt \
            --output="$WORK/$b.$mode.got" > /dev/null 2>&1
        st2=$?
        n=$((n + 1))
        if [ $st1 -eq $st2 ] && cmp -s "$WORK/$b.$mode.want" "$WORK/$b.$mode.got"; then
            echo "PASS $b $mode ($(wc -l < "$WORK/$b.$mode.want") profile lines, status $st1)"
        else
            fail=$((fail + 1)); echo "FAIL $b $mode (status $st1 vs $st2)"
            diff "$WORK/$b.$mode.want" "$WORK/$b.$mode.got" | head -5
        fi
    done
done
echo "$((n - fail)) of $n passed"
[ $n -gt 20 ] && [ $fail -eq 0 ]
