#!/bin/sh
# test_flat_multiproc.sh - flat profiles from perf.data use one load base
# per process (unlike llvm-profgen 19, llvm issue #164581).
#
# A PIE (tests/workloads/kernel.c, clang-19 -O2 -g) is recorded twice with
# `lbr2prof record --simulate`; ASLR puts it at two bases. The two
# recordings are merged, interleaved by time, into one perf.data with two
# concurrent processes (tests/e2e/helpers/pdmerge.c, the project's reader
# and writer). Expected result, from the reference tools: for each process
# alone (its own recording), llvm-profgen-19 makes the unsymbolized
# profile (range and branch counters); counters add up over samples, so the
# profile of both processes is their sum. lbr2prof on the merged perf.data
# must print exactly that sum (--skip-symbolization), and the text
# profile llvm-profgen-19 makes from the sum (--unsymbolized-profile). Also:
# llvm-profgen-19 on the merged trace (one base) loses samples, so the sum
# really differs from a single-base result, and lbr2prof keeps
# llvm-profgen's single base for perf script text input.
set -u
for t in clang-19 perf llvm-profgen-19 perl cc; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
[ "$(cat /proc/sys/kernel/randomize_va_space 2>/dev/null)" != 0 ] || { echo "skip: ASLR is off"; exit 77; }
W=$WORK
fail() { echo "FAIL: $*"; exit 1; }
cd "$W" || exit 1

# perf 6.1 prints user callchain entries as file offsets; make them
# absolute again from the MMAP2 lines (as test_record_simulate.sh does) so
# that llvm-profgen sees the hybrid samples' real leaf addresses.
absolute_script() {
    perl -ne '
        if (/PERF_RECORD_MMAP2 .*\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0) .* (\S+)$/) {
            $start{$3} = hex($1); $pgoff{$3} = hex($2); print; next }
        if (/^\t\s*([0-9a-f]+) \((.*)\)$/) {
            if (exists $start{$2}) { printf "\t%x\n", hex($1) - $pgoff{$2} + $start{$2} }
            else { print "\t$1\n" }
            next }
        s/\([^)]*\)//g; print' "$1"
}

# Sum unsymbolized flat profiles, written in llvm-profgen's order (by
# address; the external address 1 is printed minus the base, so it wraps:
# compare as signed 64-bit numbers).
sum_raw() {
    perl -e '
        for $f (@ARGV) { open F, $f or die; $sec = 0;
            while (<F>) { chomp;
                if (/^\d+$/) { $sec++; next }
                if ($sec == 1 && /^([0-9a-f]+)-([0-9a-f]+):(\d+)$/) { $r{"$1 $2"} += $3 }
                elsif ($sec == 2 && /^([0-9a-f]+)->([0-9a-f]+):(\d+)$/) { $b{"$1 $2"} += $3 }
                else { die "$f: bad line $_\n" } } }
        sub k { my @x = split / /, $_[0]; (hex($x[0]), hex($x[1])) }
        sub bykey { use integer; my @p = k($a); my @q = k($b); $p[0] <=> $q[0] || $p[1] <=> $q[1] }
        print scalar(keys %r), "\n";
        for (sort bykey keys %r) { ($s, $e) = split / /; print "$s-$e:$r{$_}\n" }
        print scalar(keys %b), "\n";
        for (sort bykey keys %b) { ($s, $e) = split / /; print "$s->$e:$b{$_}\n" }' "$@"
}

clang-19 -O2 -g -fno-omit-frame-pointer -fPIE -pie -o prog "$TOP/tests/workloads/kernel.c" ||
    fail "clang-19"
LIB=$TOP/$BUILD/liblbr2prof.a
SAN=
nm "$LIB" 2>/dev/null | grep -q __asan_init && SAN="-fsanitize=address,undefined"
LIBS=$(make -s -C "$TOP" print-ldlibs) || fail "make print-ldlibs"
# shellcheck disable=SC2086
cc -std=gnu11 -O1 $SAN -D_GNU_SOURCE -I"$TOP/include" -o pdmerge "$TOP/tests/e2e/helpers/pdmerge.c" \
    "$LIB" $LIBS ||
    fail "building pdmerge"

seed=0
for x in a b; do
    seed=$((seed + 1)) # different sample points: the two processes differ
    "$LBR2PROF" record --simulate -c 211 --seed $seed -o $x.data -- ./prog 100 > /dev/null 2> rec.$x.err ||
        { cat rec.$x.err; fail "record $x"; }
done
./pdmerge two.data a.data b.data || fail "pdmerge"

perf script -i two.data -F ip,dso,brstack --show-mmap-events 2>/dev/null > two.dso.script
perl -ne 'print "$1 $2\n" if /PERF_RECORD_MMAP2 (\d+)\/\d+: \[(0x[0-9a-f]+)\(.* \/\S*\/prog$/' \
    two.dso.script > bases
[ "$(wc -l < bases)" -eq 2 ] || { cat bases; fail "expected one mmap of prog per process"; }
[ "$(cut -d' ' -f2 bases | sort -u | wc -l)" -eq 2 ] || { echo "skip: both runs got the same base"; exit 77; }
echo "prog mapped at: $(tr '\n' ' ' < bases)"

# the reference, one process at a time (each recording holds one)
refs=
for x in a b; do
    p=$(perf script -i $x.data -F pid 2>/dev/null | tr -d " " | sort -u)
    grep -q "^$p " bases || fail "$x.data: pid $p is not in the merged file"
    perf script -i $x.data -F ip,dso,brstack --show-mmap-events 2>/dev/null > p$p.dso
    absolute_script p$p.dso > p$p.hybrid
    llvm-profgen-19 --perfscript=p$p.hybrid --binary=prog --ignore-stack-samples \
        --skip-symbolization --output=p$p.raw > p$p.log 2>&1 || { cat p$p.log; fail "llvm-profgen pid $p"; }
    [ "$(head -1 p$p.raw)" -gt 10 ] || fail "pid $p: reference has too few ranges"
    refs="$refs p$p.raw"
done
cmp -s $refs && fail "both processes have the same profile: choose other seeds"
sum_raw $refs > expected.raw || fail "summing"

"$LBR2PROF" --perfdata=two.data --binary=prog --ignore-stack-samples --skip-symbolization \
    --output=my.raw 2> my.err || { cat my.err; fail "lbr2prof raw"; }
cmp -s expected.raw my.raw || { diff expected.raw my.raw | head -20; fail "unsymbolized profile is not the sum of the per-process ones"; }
for r in $refs; do
    cmp -s $r my.raw && fail "the profile equals one process's ($r)"
done
echo "ok   unsymbolized profile = sum of the $(echo $refs | wc -w) processes' ($(head -1 my.raw) ranges)"

llvm-profgen-19 --unsymbolized-profile=expected.raw --binary=prog --format=text \
    --output=expected.txt > exp.log 2>&1 || { cat exp.log; fail "llvm-profgen on the sum"; }
"$LBR2PROF" two.data --binary prog --ignore-stack-samples --format text -o my.txt 2> my.err ||
    { cat my.err; fail "lbr2prof text"; }
cmp -s expected.txt my.txt || { diff expected.txt my.txt | head -20; fail "text profile differs"; }
echo "ok   text profile = llvm-profgen's profile of the summed counters"

# llvm-profgen's single base on the merged trace: samples get lost
absolute_script two.dso.script > two.hybrid
llvm-profgen-19 --perfscript=two.hybrid --binary=prog --ignore-stack-samples \
    --skip-symbolization --output=single.raw > single.log 2>&1 || { cat single.log; fail "llvm-profgen merged"; }
cmp -s single.raw expected.raw && fail "single-base result equals the per-process one: the test shows nothing"
echo "ok   llvm-profgen's single base differs ($(head -1 single.raw) ranges instead of $(head -1 expected.raw))"
# ... and that is what lbr2prof gives for perf script text (no pids there)
"$LBR2PROF" --perfscript=two.hybrid --binary=prog --ignore-stack-samples \
    --skip-symbolization --output=my.single.raw 2> my.err || { cat my.err; fail "lbr2prof text input"; }
cmp -s single.raw my.single.raw || { diff single.raw my.single.raw | head; fail "perf script input: not llvm-profgen's single base"; }
echo "ok   perf script input keeps llvm-profgen's single base"

# --pid keeps one process
p=$(head -1 bases | cut -d' ' -f1)
"$LBR2PROF" --perfdata=two.data --binary=prog --ignore-stack-samples --skip-symbolization \
    --pid=$p --output=my.pid.raw 2> my.err || { cat my.err; fail "lbr2prof --pid"; }
cmp -s p$p.raw my.pid.raw || { diff p$p.raw my.pid.raw | head; fail "--pid=$p differs from the reference"; }
echo "ok   --pid=$p"
exit 0
