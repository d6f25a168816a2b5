#!/bin/sh
# test_lazy_plt.sh - samples around first calls through lazily bound PLT
# stubs (tests/workloads/lazyplt.c linked without -z now): the first call
# of a libc function jumps through its GOT slot to the next instruction of
# its stub, then to PLT0 and ld.so's resolver. Recorded with
# `record --simulate -c 1` (a sample after every taken branch: every
# position of such a jump in the LBR, the sampled IP at the stub's push
# included) and -c 3, in a thread's start routine (context without
# callers) and a function it calls. lbr2prof --no-repair-frames on the
# perf script text and on the perf.data equals llvm-profgen-19 and -22 on
# the text (flat CS text and the default extbinary under llvm-profdata
# show), and the default mode keeps at least their counts. Reported as
# differing in [producer]'s total when such a sample ended bench (a)'s
# recording of lbr2prof's reader thread (test_simulate_branches links
# with -z now for that reason); not reproduced since (docs/unwind.md).
set -u
for t in clang-19 llvm-profgen-19 llvm-profgen-22 llvm-profdata-22 readelf perl; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
cd "$WORK" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

clang-19 -O2 -g -fno-omit-frame-pointer -Wl,-z,lazy "$TOP/tests/workloads/lazyplt.c" \
    -o lazyplt -lpthread || { echo "FAIL build"; exit 1; }
readelf -d lazyplt | grep -q 'BIND_NOW\|FLAGS.*NOW' && { echo "FAIL: linked with BIND_NOW"; exit 1; }
plt=$(readelf -SW lazyplt | awk '$2 == ".plt" { print $4, $6 }')
[ -n "$plt" ] || { echo "FAIL: no .plt"; exit 1; }

FLAT="--csspgo-preinliner=0 --gen-cs-nested-profile=0 --format=text"
tot() { awk '/^\[/ { k = split($0, a, ":"); s += a[k - 1] } END { print s + 0 }' "$1"; }
for c in 1 3; do
    "$LBR2PROF" record --simulate -c $c --seed 1 -o l$c.data -- ./lazyplt 2 >/dev/null 2>&1 ||
        { fail "record -c $c"; continue; }
    "$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses l$c.data >l$c.txt
    # samples whose newest LBR entry is a stub's jump to its next instruction
    lead=$(perl -e '
        my ($lo, $sz) = map { hex } split / /, $ARGV[1];
        open(F, "<", $ARGV[0]) or die; my ($base, $n) = (undef, 0);
        while (<F>) {
            $base //= hex($1) - hex($2)
                if /\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) \@ (0x[0-9a-f]+) .*r-xp .*\/lazyplt$/;
            next unless defined $base && /^ (0x[0-9a-f]+)\/(0x[0-9a-f]+)\//;
            my ($f, $t) = (hex($1) - $base, hex($2) - $base);
            $n++ if $f >= $lo && $f < $lo + $sz && $t == $f + 6;
        }
        print "$n\n";' l$c.txt "$plt")
    [ "${lead:-0}" -gt 0 ] || fail "-c $c: no sample after a lazy stub's jump (nothing tested)"
    for pg in llvm-profgen-19 llvm-profgen-22; do
        $pg --perfscript=l$c.txt --binary=lazyplt --output=ref.txt $FLAT >/dev/null 2>&1
        "$LBR2PROF" --perfscript=l$c.txt --binary=lazyplt --output=my.txt $FLAT --no-repair-frames 2>/dev/null
        "$LBR2PROF" l$c.data --binary=lazyplt --output=my2.txt $FLAT --no-repair-frames 2>/dev/null
        if ! [ -s ref.txt ] || ! cmp -s ref.txt my.txt || ! cmp -s ref.txt my2.txt; then
            fail "-c $c: flat CS profile differs from $pg's"; diff ref.txt my.txt | head -6
        fi
        $pg --perfscript=l$c.txt --binary=lazyplt --output=ref.bin >/dev/null 2>&1
        "$LBR2PROF" l$c.data --binary=lazyplt --output=my.bin --no-repair-frames 2>/dev/null
        llvm-profdata-22 show --sample --all-functions ref.bin >ref.show 2>&1
        llvm-profdata-22 show --sample --all-functions my.bin >my.show 2>&1
        cmp -s ref.show my.show || { fail "-c $c: default profile differs from $pg's"; diff ref.show my.show | head -4; }
    done
    "$LBR2PROF" l$c.data --binary=lazyplt --output=def.txt $FLAT 2>/dev/null
    [ "$(tot def.txt)" -ge "$(tot ref.txt)" ] ||
        fail "-c $c: the default mode keeps $(tot def.txt) samples, llvm-profgen $(tot ref.txt)"
    echo "-c $c: $lead samples after a lazy stub's jump; $(grep -c '^$' l$c.txt) samples"
done
[ $fails -eq 0 ] && echo ok
[ $fails -eq 0 ]
