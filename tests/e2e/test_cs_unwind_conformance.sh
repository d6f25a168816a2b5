#!/bin/sh
# test_cs_unwind_conformance.sh - the virtual unwinder against llvm-profgen-19,
# run now on the same inputs:
#  1. every hybrid perf script of tests/data/llvm-profgen-inputs (plain and
#     aggregated; the pseudo-probe binaries with --use-dwarf-correlation on
#     both sides) under 7 option sets: `--skip-symbolization
#     --no-repair-frames` output byte-identical, stderr identical (the
#     --show-detailed-warning lists compared as sets: llvm-profgen prints
#     some in hash-table order, lbr2prof sorts them);
#  2. inputs written here that llvm-profgen's own tests do not have: returns
#     whose target does not follow a call (llvm-profgen 19 makes a frame at
#     address 0 and its collection pops one frame too many, in
#     std::unordered_map order), bogus and one-sided ranges, stacks through
#     external code, and the seed 001 scenarios on the unit test's fixture;
#  3. perf.data: workloads built now with clang-19, recorded with
#     `lbr2prof record --simulate`; lbr2prof on the perf.data must equal
#     llvm-profgen-19 on `lbr2prof script --raw-addresses` of it;
#  4. the frame repair (default): on the same perf.data files it must give
#     exactly what the recorder's true call stacks give (its --truth file
#     put in place of the frame-pointer chains), where --no-repair-frames
#     does not. Samples some of whose ranges no unwinder can know the
#     callers of (helpers/knowable.pl: no frame-pointer chain beyond the IP,
#     say in ld.so at exit) are left out of both (of the perf.data by
#     helpers/pdmerge.c --drop): which samples those are depends on where
#     the sampling period happens to fall, which ASLR and the environment
#     move. The script text with --script-fp-callchains repairs the same
#     as the perf.data.
set -u
for t in llvm-profgen-19 clang-19 perl; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
IN=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0
checks=0

# compare NAME SCRIPT BINARY [options...]: raw profiles and warnings
compare() {
    name=$1 script=$2 bin=$3
    shift 3
    checks=$((checks + 1))
    llvm-profgen-19 --perfscript="$script" --binary="$bin" --skip-symbolization \
        --output=ref.raw "$@" >/dev/null 2>ref.err
    r=$?
    "$LBR2PROF" --perfscript="$script" --binary="$bin" --skip-symbolization \
        --no-repair-frames --output=my.raw "$@" >/dev/null 2>my.err
    m=$?
    sort ref.err >ref.err.s
    sort my.err >my.err.s
    if [ $r -ne 0 ] || [ $m -ne 0 ] || ! [ -s ref.raw ] || ! cmp -s ref.raw my.raw; then
        echo "FAIL $name $* (llvm-profgen $r, lbr2prof $m)"
        diff ref.raw my.raw | head -20
        cat my.err | head -5
        fails=$((fails + 1))
    elif ! cmp -s ref.err.s my.err.s; then
        echo "FAIL $name $*: warnings differ"
        diff ref.err my.err | head -20
        fails=$((fails + 1))
    fi
}

OPTS="|--compress-recursion=0|--csprof-max-context-depth=1|--csprof-max-context-depth=2|--use-offset=0|--use-first-loadable-segment-as-base|--show-detailed-warning"

# ---- 1. llvm-profgen's inputs ----------------------------------------------
dwarf_inputs="noinline-cs-noprobe.perfscript:noinline-cs-noprobe
noinline-cs-noprobe.aggperfscript:noinline-cs-noprobe
inline-cs-noprobe.perfscript:inline-cs-noprobe
callback-external-addr.perfscript:callback-external-addr
cs-interrupt.perfscript:noinline-cs-noprobe
cs-invalid-ret-addr.perfscript:noinline-cs-noprobe
external-address.perfscript:inline-cs-noprobe
func-split.perfscript:func-split
multi-load-segs.perfscript:multi-load-segs
recursion-compression-noprobe.perfscript:recursion-compression-noprobe
unique-linkage-name-dwarf.perfscript:unique-linkage-name-dwarf"
probe_inputs="noinline-cs-pseudoprobe.perfscript:noinline-cs-pseudoprobe
noinline-cs-pseudoprobe.aggperfscript:noinline-cs-pseudoprobe
recursion-compression-pseudoprobe.perfscript:recursion-compression-pseudoprobe
recursion-compression-pseudoprobe-nommap.perfscript:recursion-compression-pseudoprobe
inline-cs-pseudoprobe.perfscript:inline-cs-pseudoprobe
cs-preinline-cost.perfscript:cs-preinline-cost
invalid-range.perfscript:noinline-cs-pseudoprobe
noinline-tailcall-probe.perfscript:noinline-tailcall-probe
truncated-pseudoprobe.perfscript:truncated-pseudoprobe
unique-linkage-name-probe.perfscript:unique-linkage-name-probe"

each_opts() { # name script bin [extra]
    IFS='|'
    for o in $OPTS; do
        unset IFS
        # shellcheck disable=SC2086
        compare "$1" "$2" "$3" ${4:-} $o
        IFS='|'
    done
    unset IFS
}
for p in $dwarf_inputs; do
    each_opts "${p%%:*}" "$IN/${p%%:*}" "$IN/${p##*:}.perfbin"
done
for p in $probe_inputs; do
    each_opts "${p%%:*}" "$IN/${p%%:*}" "$IN/${p##*:}.perfbin" --use-dwarf-correlation
done
echo "llvm-profgen inputs: $checks checks, $fails failed"

# ---- 2. inputs written here ---------------------------------------------------
# Returns into 0x400637 / 0x40063c / 0x400686 of noinline-cs-noprobe.perfbin,
# none of them right after a call: getCallAddrFromFrameAddr gives 0.
mmap='PERF_RECORD_MMAP2 2854748/2854748: [0x400000(0x1000) @ 0 00:1d 123291722 526021]: r-xp /home/noinline-cs-noprobe.perfbin'
cat >ret0.perfscript <<EOF
$mmap

	          4005dc
	          400634
	          400684
	    7f68c5788793
 0x4005c8/0x4005dc/P/-/-/0  0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x400637/0x400645/P/-/-/0  0x4005e9/0x400637/P/-/-/0  0x4005d7/0x4005e5/P/-/-/0  0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x400637/0x400645/P/-/-/0  0x4005e9/0x400634/P/-/-/0  0x4005d7/0x4005e5/P/-/-/0  0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x400637/0x400645/P/-/-/0  0x4005e9/0x400634/P/-/-/0  0x4005c8/0x4005dc/P/-/-/0

	          400645
	          400684
 0x400637/0x400645/P/-/-/0  0x4005e9/0x40063c/P/-/-/0  0x4005d7/0x4005e5/P/-/-/0  0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x400637/0x400645/P/-/-/0  0x4005e9/0x400634/P/-/-/0  0x4005c8/0x4005dc/P/-/-/0 0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0

	          4005e5
	          400634
	          400684
 0x4005d7/0x4005e5/P/-/-/0  0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x40068b/0x400645/P/-/-/0  0x4005e9/0x400686/P/-/-/0  0x4005c8/0x4005dc/P/-/-/0 0x40062f/0x4005b0/P/-/-/0
EOF
# A bogus range in the middle (start after end), a one-sided external entry
# at the end, a stack through external code, the same sample twice.
cat >mixed.perfscript <<EOF
$mmap
2
	          4005dc
	          400634
	    7f0000001000
	          400684
 0x4005c8/0x4005dc/P/-/-/0  0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x400637/0x400645/P/-/-/0  0x4005e9/0x400634/P/-/-/0  0x4005d7/0x4005e5/P/-/-/0  0x40062f/0x4005e9/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x7f0000001234/0x400637/P/-/-/0

	          4005dc
	          400634
	    7f0000001000
	          400684
 0x4005c8/0x4005dc/P/-/-/0  0x40062f/0x4005b0/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x400637/0x400645/P/-/-/0  0x4005e9/0x400634/P/-/-/0  0x4005d7/0x4005e5/P/-/-/0  0x40062f/0x4005e9/P/-/-/0  0x400645/0x4005ff/P/-/-/0  0x7f0000001234/0x400637/P/-/-/0
EOF
before=$fails
for s in ret0 mixed; do
    each_opts $s $s.perfscript "$IN/noinline-cs-noprobe.perfbin"
done
# The seed 001 scenarios of tests/unit/test_unwind.c on its fixture (a known
# layout at 0x401000): external code between frames, callbacks, a sample in
# external code, an unpaired external entry, a return to no call site.
clang-19 -g -O0 -ffunction-sections -fno-asynchronous-unwind-tables -nostdlib \
    -static -Wl,-Ttext=0x401000 -Wl,-e,main -Wl,--build-id=none -o fixture \
    "$TOP/tests/unit/fixtures/unwind_fixture.c" || fails=$((fails + 1))
fmap='PERF_RECORD_MMAP2 1000/1000: [0x401000(0x1000) @ 0x1000 08:01 1 0]: r-xp /home/user/fixture'
cat >seed001.perfscript <<EOF
$fmap

	          40108a
	    7f0000001235
	          401012
	    7f00000f1000
 0x401084/0x401088/P/-/-/0  0x7f0000001230/0x401080/P/-/-/0  0x4010ff/0x7f0000001220/P/-/-/0  0x7f0000001210/0x4010e0/P/-/-/0  0x401010/0x7f0000001000/P/-/-/0

	          401064
	          401025
	    7f00000f1000
 0x401058/0x401060/P/-/-/0  0x7f0000002100/0x401052/P/-/-/0  0x4010ff/0x7f00000020f0/P/-/-/0  0x7f00000020e0/0x4010e0/P/-/-/0  0x401050/0x7f0000002000/P/-/-/0  0x401020/0x401040/P/-/-/0

	    7f0000002050
	          401052
	          401025
	    7f00000f1000
 0x4010bf/0x7f0000002040/P/-/-/0  0x4010df/0x401095/P/-/-/0  0x401090/0x4010c0/P/-/-/0  0x7f0000002030/0x401080/P/-/-/0  0x401050/0x7f0000002000/P/-/-/0  0x401020/0x401040/P/-/-/0

	          40108a
	    7f0000001235
	          401012
	    7f00000f1000
 0x401084/0x401088/P/-/-/0  0x7f0000001230/0x401080/P/-/-/0  0x401058/0x401060/P/-/-/0  0x401020/0x401040/P/-/-/0

	          401064
	          401025
 0x401058/0x401060/P/-/-/0  0x4010ff/0x401054/P/-/-/0  0x401050/0x4010e0/P/-/-/0  0x401020/0x401040/P/-/-/0

	          4010c8
	          401135
	          401135
	          401155
	          401035
 0x401106/0x401108/P/-/-/0  0x401102/0x401104/P/-/-/0

	          401185
	          401025
 0x401050/0x401180/P/-/-/0  0x401041/0x401048/P/-/-/0
EOF
# llvm-profgen warns "Found N invalid instructions" for the fixture's
# layout (it decodes from the section start); the loader does not report it
grep_out_invalid() { grep -iv 'invalid instructions' ref.err >ref.err2; mv ref.err2 ref.err; }
IFS='|'
for o in $OPTS; do
    unset IFS
    checks=$((checks + 1))
    # shellcheck disable=SC2086
    llvm-profgen-19 --perfscript=seed001.perfscript --binary=fixture --skip-symbolization \
        --use-offset=0 --output=ref.raw $o >/dev/null 2>ref.err
    # shellcheck disable=SC2086
    "$LBR2PROF" --perfscript=seed001.perfscript --binary=fixture --skip-symbolization \
        --use-offset=0 --no-repair-frames --output=my.raw $o >/dev/null 2>my.err
    grep_out_invalid
    if ! [ -s ref.raw ] || ! cmp -s ref.raw my.raw || ! cmp -s ref.err my.err; then
        echo "FAIL seed 001 scenarios $o"; diff ref.raw my.raw | head -20; diff ref.err my.err
        fails=$((fails + 1))
    fi
    IFS='|'
done
unset IFS
echo "written inputs: $((fails - before)) failed"

# ---- 3 and 4. perf.data from workloads built now --------------------------------
# the true stacks of a --truth file in place of the callchains of a script
truthify() { # truth.json script
    perl -e '
        open(T, "<", $ARGV[0]) or die; my @st;
        while (<T>) { push @st, [ map { hex } (/"stack": \[([^\]]*)\]/)[0] =~ /"(0x[0-9a-f]+)"/g ] if /"stack":/ }
        open(S, "<", $ARGV[1]) or die; my ($i, $in) = (0, 0);
        while (<S>) {
            if (/^\t/) { if (!$in) { printf "\t%16x\n", $_ for @{$st[$i++]}; $in = 1 } next }
            $in = 0; print;
        }
        die "samples: $i of " . scalar(@st) . "\n" if $i != @st;' "$1" "$2"
}
# the numbers (0 = first) of the samples some of whose LBR ranges ran in
# frames no unwinder can know the callers of: helpers/knowable.pl cuts
# them (the frame-pointer walk found no caller, or a non-local exit), the
# truth knows their callers, the sample does not
unknowable() { # truth.json knowable.json -> N,N,...
    perl -e '
        my @cut;
        for my $f (@ARGV) {
            open(T, "<", $f) or die "$f: $!\n"; my $i = 0;
            while (<T>) { next unless /"stack":/; my ($c) = /"lbr_cut": \[([^\]]*)\]/; $cut[$i++] .= ($c // "") . "|" }
        }
        print join(",", grep { my ($a, $b) = split /\|/, $cut[$_]; $a ne $b } 0 .. $#cut), "\n";' "$1" "$2"
}
# the script without the samples numbered in the list
dropsamples() { # N,N,... script
    perl -e '
        my %d = map { $_ => 1 } split /,/, $ARGV[0];
        open(S, "<", $ARGV[1]) or die; my ($i, $keep) = (-1, 1);
        while (<S>) { if (/^$/) { $i++; $keep = !$d{$i} } print if $keep || /^PERF_RECORD/ }' "$1" "$2"
}
LIB=$TOP/$BUILD/liblbr2prof.a
SAN=
nm "$LIB" 2>/dev/null | grep -q __asan_init && SAN="-fsanitize=address,undefined"
LIBS=$(make -s -C "$TOP" print-ldlibs) || { echo "FAIL: make print-ldlibs"; exit 1; }
# shellcheck disable=SC2086
cc -std=gnu11 -O1 $SAN -D_GNU_SOURCE -I"$TOP/include" -o pdmerge "$TOP/tests/e2e/helpers/pdmerge.c" \
    "$LIB" $LIBS || { echo "FAIL: building pdmerge"; exit 1; }
before=$fails
for w in "recursion 22" "inlining 3000" "qsort_cb 2500" "tailcall 3000"; do
    set -- $w
    b=$1
    clang-19 -O2 -g -fno-omit-frame-pointer "$TOP/tests/workloads/$b.c" -o $b || { fails=$((fails + 1)); continue; }
    "$LBR2PROF" record --simulate -c 400 --seed 7 --truth $b.truth -o $b.data -- ./$b $2 >/dev/null 2>&1 ||
        { echo "FAIL $b: record"; fails=$((fails + 1)); continue; }
    "$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses $b.data >$b.script
    # 3: perf.data read directly = llvm-profgen on the absolute-address script
    checks=$((checks + 1))
    llvm-profgen-19 --perfscript=$b.script --binary=$b --skip-symbolization \
        --output=$b.ref >/dev/null 2>$b.ref.err
    "$LBR2PROF" $b.data --binary=$b --skip-symbolization --no-repair-frames \
        --output=$b.my >/dev/null 2>$b.my.err
    "$LBR2PROF" --perfscript=$b.script --binary=$b --skip-symbolization \
        --no-repair-frames --output=$b.mytext >/dev/null 2>$b.mytext.err
    # (the leaf-external denominator of a script counts its blank lines)
    grep -v 'leaf external' $b.ref.err >$b.ref.err2
    grep -v 'leaf external' $b.my.err >$b.my.err2
    if ! [ -s $b.ref ] || ! cmp -s $b.ref $b.my || ! cmp -s $b.ref $b.mytext ||
        ! cmp -s $b.ref.err $b.mytext.err || ! cmp -s $b.ref.err2 $b.my.err2; then
        echo "FAIL $b: perf.data vs llvm-profgen on its script"
        diff $b.ref $b.my | head; diff $b.ref.err $b.my.err
        fails=$((fails + 1))
    fi
    # 4: repair = truth, on the samples whose context the data shows
    checks=$((checks + 1))
    truthify $b.truth $b.script >$b.true.script || { fails=$((fails + 1)); continue; }
    perl "$TOP/tests/e2e/helpers/knowable.pl" $b <$b.truth >$b.know &&
        drop=$(unknowable $b.truth $b.know) &&
        dropsamples "$drop" $b.true.script >$b.known.true.script &&
        ./pdmerge ${drop:+--drop "$drop"} $b.known.data $b.data ||
        { echo "FAIL $b: leaving out the unknowable samples"; fails=$((fails + 1)); continue; }
    echo "   ($b: $(grep -c '^$' $b.known.true.script) of $(grep -c '^$' $b.script) samples show every caller)"
    "$LBR2PROF" --perfscript=$b.known.true.script --binary=$b --skip-symbolization \
        --compress-recursion=0 --output=$b.true >/dev/null 2>&1
    "$LBR2PROF" $b.known.data --binary=$b --skip-symbolization --compress-recursion=0 \
        --output=$b.rep >/dev/null 2>$b.rep.err
    "$LBR2PROF" $b.known.data --binary=$b --skip-symbolization --compress-recursion=0 \
        --no-repair-frames --output=$b.norep >/dev/null 2>&1
    # the same repair from the script text told its callchains are
    # frame-pointer walks (text has no PERF_CONTEXT markers to show it)
    "$LBR2PROF" $b.data --binary=$b --skip-symbolization --compress-recursion=0 \
        --output=$b.repdata >/dev/null 2>&1
    "$LBR2PROF" --perfscript=$b.script --binary=$b --skip-symbolization \
        --compress-recursion=0 --script-fp-callchains --output=$b.reptext >/dev/null 2>&1
    if ! [ -s $b.repdata ] || ! cmp -s $b.repdata $b.reptext; then
        echo "FAIL $b: --script-fp-callchains on the script does not repair as from perf.data"
        diff $b.repdata $b.reptext | head; fails=$((fails + 1))
    fi
    if ! [ -s $b.true ] || ! cmp -s $b.true $b.rep; then
        echo "FAIL $b: repaired frame-pointer stacks do not give the true stacks' profile"
        diff $b.true $b.rep | head -20
        fails=$((fails + 1))
    fi
    if cmp -s $b.true $b.norep; then
        echo "   ($b: the frame-pointer walk missed no caller here)"
    else
        echo "   ($b: repair needed: $(grep -o '[0-9.]*%([0-9/]*) of samples had the caller' $b.rep.err))"
        repaired=1
    fi
done
[ "${repaired:-0}" = 1 ] || { echo "FAIL: no workload needed a repair; the check proves nothing"; fails=$((fails + 1)); }
echo "perf.data: $((fails - before)) failed"
echo "$checks checks, $fails failed"
[ $fails -eq 0 ]
