#!/bin/sh
# test_probe_conformance.sh - pseudo-probe (CSSPGO) profiles against
# llvm-profgen-22, run now (lbr2prof with --no-repair-frames), with the
# missing-frame inferrer as llvm-profgen's default has it (on), off
# (--infer-missing-frames=0) and depth-limited (--max-search-depth=N):
#  1. every probe perf script of tests/data/llvm-profgen-inputs: the
#     unsymbolized profile (the 7 option sets of
#     test_cs_unwind_conformance.sh), CS profiles under
#     the option sets of test_cs_generate_conformance.sh, flat profiles
#     (--ignore-stack-samples, 4 sets): text and stderr identical; the
#     same from the unsymbolized profile (which llvm-profgen-22 cannot read
#     back: it crashes) equal to the direct route; --show-pseudo-probe's
#     stdout identical; fs-discriminator-probe's unsymbolized profile
#     (--unsymbolized-profile) too;
#  2. workloads built now with clang-19 -fpseudo-probe-for-profiling
#     (recursion, tail calls, inlining, indirect calls, threaded code, and
#     tailchain.c, whose chains of tail calls the inferrer puts back: one
#     path two frames deep through an inlined frame, two paths, a direct
#     call beside a tail path), recorded with
#     `lbr2prof record --simulate`: lbr2prof on the perf.data and on
#     `lbr2prof script --raw-addresses` text equal to llvm-profgen-22 on
#     that text, in text and in extbinary (llvm-profdata-22 show and the
#     section flags), --use-md5 too; --llvm-sample-profile re-processing;
#     the legacy binary format refused as llvm-profgen does;
#  3. the default mode keeps at least llvm-profgen's counts (totals),
#     puts back tailchain's tail-call frames too, and
#     clang-19/clang-22 compile the workloads with its profiles (text and
#     extbinary; the IR gets entry counts, so the checksums matched);
#     llvm-profdata-19/22 read them, the same functions, checksums and
#     counts from both formats.
# Functions DWARF does not describe (_start; nodwarf.c's program, half of
# it built without -g, its symbols renamed to foo.cold / foo.llvm.N) are
# recovered from .symtab as llvm-profgen 22 does (--load-function-from-
# symbol, on by default; =0 compared too).
set -u
for t in llvm-profgen-22 llvm-profdata-22 llvm-profdata-19 clang-19 clang-22; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
D=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0; n=0
T="timeout 60"
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
# (--show-detailed-warning lists some in hash-table order in llvm-profgen:
# compared as sets)
norm() {
    sort "$1"
}

# same NAME: ref.* vs my.* (text, stderr, stdout)
same() {
    n=$((n + 1))
    if ! [ -s ref.txt ] && [ "${EMPTY_OK:-0}" = 0 ]; then
        fail "$1: llvm-profgen-22 made no profile"; head -3 ref.err; return
    fi
    if ! cmp -s ref.txt my.txt; then
        fail "$1: profile differs"; diff ref.txt my.txt | head -8; return
    fi
    if [ "$(norm ref.err)" != "$(norm my.err)" ]; then
        fail "$1: stderr differs"; diff ref.err my.err | head -4; return
    fi
    if ! cmp -s ref.out my.out; then
        fail "$1: stdout differs"; diff ref.out my.out | head -4; return
    fi
}

# run NAME INPUT-OPTS -- OPTS: both tools, text
run() {
    name=$1 in=$2; shift 2
    rm -f ref.txt my.txt   # (a tool that writes nothing is not compared stale)
    # shellcheck disable=SC2086
    $T llvm-profgen-22 $in --output=ref.txt --format=text "$@" >ref.out 2>ref.err
    # shellcheck disable=SC2086
    $T "$LBR2PROF" $in --output=my.txt --format=text --no-repair-frames "$@" >my.out 2>my.err
    same "$name $*"
}

FLAT="--csspgo-preinliner=0 --gen-cs-nested-profile=0"
SETS="$FLAT
$FLAT --profile-summary-cold-count=0
$FLAT --csprof-merge-cold-context --trim-cold-profile --csprof-max-cold-context-depth=2
$FLAT --csprof-merge-cold-context=0 --trim-cold-profile
$FLAT --compress-recursion=0 --csprof-max-context-depth=2
$FLAT --csprof-max-unsymbolized-context-depth=1
--csspgo-preinliner=0 --generate-merged-base-profiles
-
--profile-summary-cold-count=0
--gen-cs-nested-profile=0 --trim-cold-profile
--use-context-cost-for-preinliner=0 --profile-summary-hot-count=3"
# the inferrer's flags, on the default options and on flat CS output
INFER="--infer-missing-frames=0
--max-search-depth=0
--max-search-depth=1
$FLAT --infer-missing-frames=0
$FLAT --max-search-depth=1"

# ---- 1. llvm-profgen's probe inputs -------------------------------------------
CASES="inline-cs-pseudoprobe.perfscript:inline-cs-pseudoprobe
noinline-cs-pseudoprobe.perfscript:noinline-cs-pseudoprobe
noinline-cs-pseudoprobe.aggperfscript:noinline-cs-pseudoprobe
noinline-tailcall-probe.perfscript:noinline-tailcall-probe
recursion-compression-pseudoprobe.perfscript:recursion-compression-pseudoprobe
recursion-compression-pseudoprobe-nommap.perfscript:recursion-compression-pseudoprobe
truncated-pseudoprobe.perfscript:truncated-pseudoprobe
unique-linkage-name-probe.perfscript:unique-linkage-name-probe
cs-preinline-cost.perfscript:cs-preinline-cost"
for c in $CASES; do
    in="--perfscript=$D/${c%%:*} --binary=$D/${c##*:}.perfbin"
    for o in "" "--compress-recursion=0" "--csprof-max-context-depth=2" \
             "--csprof-max-context-depth=1 --compress-recursion=1" \
             "--use-offset=0" "--use-first-loadable-segment-as-base" \
             "--show-detailed-warning" \
             "--csprof-max-unsymbolized-context-depth=1 --csprof-max-context-depth=3"; do
        # shellcheck disable=SC2086
        run "${c%%:*} raw" "$in" --skip-symbolization $o
    done
    printf '%s\n%s\n' "$SETS" "$INFER" | while IFS= read -r o; do
        [ "$o" = - ] && o=
        # shellcheck disable=SC2086
        run "${c%%:*}" "$in" $o
        [ -s my.txt ] || continue
        # the unsymbolized route (llvm-profgen-22 crashes on it) gives the
        # same profile as the direct one
        # shellcheck disable=SC2086
        "$LBR2PROF" $in --skip-symbolization --no-repair-frames --output=my.raw $o 2>/dev/null
        # shellcheck disable=SC2086
        "$LBR2PROF" --unsymbolized-profile=my.raw --binary=$D/${c##*:}.perfbin \
            --output=via.txt --format=text --no-repair-frames $o 2>/dev/null
        cmp -s my.txt via.txt || { echo "FAIL ${c%%:*} $o: via the unsymbolized profile"; exit 1; }
    done || fails=$((fails + 1))
    for o in "" "--profile-summary-cold-count=0" "--update-total-samples" \
             "--fill-zero-for-all-funcs --trim-cold-profile"; do
        # shellcheck disable=SC2086
        run "${c%%:*} flat" "$in" --ignore-stack-samples $o
    done
    run "${c%%:*} show-pseudo-probe" "$in" --show-pseudo-probe --show-density
    run "${c%%:*} detailed warnings" "$in" --show-detailed-warning
done
# the one probe input given as an unsymbolized (flat) profile
in="--unsymbolized-profile=$D/fs-discriminator-probe.raw.prof --binary=$D/fs-discriminator-probe.perfbin"
for o in "" "--profile-summary-cold-count=0" "--fill-zero-for-all-funcs" "--use-md5" \
         "--show-pseudo-probe --show-density"; do
    # shellcheck disable=SC2086
    run "fs-discriminator-probe $o" "$in" $o
done
echo "llvm-profgen inputs: $n checks, $fails failed"

# ---- 2. workloads built now ----------------------------------------------------------
before=$fails
for w in "recursion 22" "tailcall 3000" "inlining 3000" "dispatch 2000" \
         "threaded 300" "tailchain 1000" "nodwarf 500"; do
    set -- $w
    b=$1
    # threaded's samples are taken right after a taken branch, nearly all
    # at a handler's entry, whose prolog llvm-profgen's filter drops: in
    # some recordings (the environment shifts the period's phase) every
    # one; both tools must then make the same empty profile
    EMPTY_OK=0; [ $b = threaded ] && EMPTY_OK=1
    PCC="clang-19 -O2 -fno-omit-frame-pointer -fpseudo-probe-for-profiling"
    if [ $b = nodwarf ]; then   # nodwarflib.c without DWARF
        $PCC -g -c "$TOP/tests/workloads/nodwarf.c" -o nd1.o &&
            $PCC -c "$TOP/tests/workloads/nodwarflib.c" -o nd2.o &&
            clang-19 nd1.o nd2.o -o $b || { fail "$b: build"; continue; }
    else
        $PCC -g "$TOP/tests/workloads/$b.c" -o $b || { fail "$b: build"; continue; }
    fi
    "$LBR2PROF" record --simulate -c 400 --seed 7 -o $b.data -- ./$b $2 >/dev/null 2>&1 ||
        { fail "$b: record"; continue; }
    "$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses $b.data >$b.script
    for o in "$FLAT" "" "--profile-summary-cold-count=0" "$FLAT --ignore-stack-samples" \
             "$FLAT --infer-missing-frames=0" "$FLAT --max-search-depth=1" \
             "$FLAT --load-function-from-symbol=0" "--show-detailed-warning"; do
        # shellcheck disable=SC2086
        run "$b (text)" "--perfscript=$b.script --binary=$b" $o
        rm -f my.txt
        # shellcheck disable=SC2086
        $T "$LBR2PROF" $b.data --binary=$b --output=my.txt --format=text --no-repair-frames $o >my.out 2>my.err
        # (the leaf-external denominator of a script counts its blank lines)
        grep -v 'leaf external' ref.err >ref.err2; mv ref.err2 ref.err
        grep -v 'leaf external' my.err >my.err2; mv my.err2 my.err
        same "$b (perf.data) $o"
        case $o in *frames=0|*depth=1|*symbol=0|*warning) continue ;; esac # extbinary: once
        for x in "" --use-md5; do
            rm -f ref.bin my.bin
            # shellcheck disable=SC2086
            $T llvm-profgen-22 --perfscript=$b.script --binary=$b --output=ref.bin \
                $o $x >/dev/null 2>&1
            # shellcheck disable=SC2086
            $T "$LBR2PROF" $b.data --binary=$b --output=my.bin --no-repair-frames $o $x >/dev/null 2>&1
            n=$((n + 1))
            llvm-profdata-22 show --sample --all-functions ref.bin >ref.show 2>&1
            llvm-profdata-22 show --sample --all-functions my.bin >my.show 2>&1
            llvm-profdata-22 show --sample --show-sec-info-only ref.bin | sed 's/Offset: [0-9]*, //' >ref.sec
            llvm-profdata-22 show --sample --show-sec-info-only my.bin | sed 's/Offset: [0-9]*, //' >my.sec
            if { ! [ -s ref.show ] && [ $EMPTY_OK = 0 ]; } || ! cmp -s ref.show my.show ||
               ! cmp -s ref.sec my.sec; then
                fail "$b extbinary $o $x"; diff ref.show my.show | head -4; diff ref.sec my.sec
            fi
        done
    done
    if [ $b = nodwarf ]; then   # symbols named as the loader canonicalizes
        R="--redefine-sym nd_work=nd_work.cold --redefine-sym nd_tail=nd_tail.llvm.7"
        objcopy $R nd1.o && objcopy $R nd2.o && clang-19 nd1.o nd2.o -o ndr &&
            sed "s|$WORK/nodwarf|$WORK/ndr|" $b.script >ndr.script &&
            run "nodwarf renamed" "--perfscript=ndr.script --binary=ndr" $FLAT ||
            fail "nodwarf renamed: build"
    fi
    # --llvm-sample-profile: llvm-profgen's flat CS text re-processed
    llvm-profgen-22 --perfscript=$b.script --binary=$b --output=in.txt --format=text \
        $FLAT 2>/dev/null
    for o in "" "--csspgo-replay-preinline" "--gen-cs-nested-profile=0"; do
        # (llvm-profgen-22 crashes reading an empty profile)
        [ -s in.txt ] || [ $EMPTY_OK = 0 ] || continue
        # shellcheck disable=SC2086
        run "$b --llvm-sample-profile" "--llvm-sample-profile=in.txt --binary=$b" $o
    done
    # the legacy binary format has no room for checksums: refused by both
    n=$((n + 1))
    rm -f my.bin
    if llvm-profgen-22 --perfscript=$b.script --binary=$b --output=ref.bin --format=binary \
           >/dev/null 2>&1 ||
       "$LBR2PROF" $b.data --binary=$b --output=my.bin --format=binary >/dev/null 2>&1 ||
       [ -e my.bin ]; then
        fail "$b: --format=binary should be refused for probe profiles"
    fi
    # ---- 3. the default mode: no count lost, and compilers take it
    n=$((n + 1))
    "$LBR2PROF" $b.data --binary=$b --output=def.txt --format=text $FLAT 2>/dev/null
    llvm-profgen-22 --perfscript=$b.script --binary=$b --output=ref.txt --format=text $FLAT \
        2>/dev/null
    tot() { awk '/^[^ ]/ { k = split($0, a, ":"); s += a[k - 1] } END { print s + 0 }' "$1"; }
    if [ "$(tot def.txt)" -lt "$(tot ref.txt)" ]; then
        fail "$b: the default mode keeps $(tot def.txt) samples, llvm-profgen $(tot ref.txt)"
    fi
    if [ $b = tailchain ]; then   # the default mode's (exact) inference
        n=$((n + 1))
        grep -q '^\[main:[0-9]* @ step1:[0-9]* @ [^ ]*forward[^ ]*:[0-9]* @ step2:[0-9]* @ leaf\]' def.txt &&
            grep -q '^\[main:[0-9]* @ step1:[0-9]* @ [^ ]*forward[^ ]*:[0-9]* @ step2:[0-9]* @ leaf\]' ref.txt ||
            fail "tailchain: step1 and step2's frames are not put back"
    fi
    "$LBR2PROF" $b.data --binary=$b --output=$b.ext.prof 2>/dev/null
    "$LBR2PROF" $b.data --binary=$b --output=$b.txt.prof --format=text 2>/dev/null
    for cc in 19 22; do
        for p in ext txt; do
            n=$((n + 1))
            if ! clang-$cc -O2 -fno-omit-frame-pointer -fpseudo-probe-for-profiling \
                   -fprofile-sample-use=$b.$p.prof -Werror -S -emit-llvm \
                   "$TOP/tests/workloads/$b.c" -o $b.ll 2>cc.err; then
                fail "clang-$cc with the $p profile of $b"; head -3 cc.err
            elif ! grep -q function_entry_count $b.ll; then
                fail "clang-$cc did not use the $p profile of $b (no entry counts)"
            fi
            llvm-profdata-$cc show --sample --all-functions $b.$p.prof >$b.$p.$cc.show 2>&1 ||
                { fail "llvm-profdata-$cc cannot read the $p profile of $b"; head -3 $b.$p.$cc.show; }
        done
    done
    # both read the same probe profile (checksums, counts) from both formats
    n=$((n + 1))
    grep -q 'CFG checksum' $b.ext.19.show && cmp -s $b.ext.19.show $b.txt.19.show &&
        cmp -s $b.ext.19.show $b.ext.22.show && cmp -s $b.ext.22.show $b.txt.22.show ||
        fail "$b: llvm-profdata-19/22 read different default-mode profiles from text and extbinary"
done
echo "workloads: $((fails - before)) failed"
echo "$n checks, $fails failed"
[ $fails -eq 0 ]
