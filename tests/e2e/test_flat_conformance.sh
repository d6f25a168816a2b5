#!/bin/sh
# Flat (LBR-only) profiles: lbr2prof against llvm-profgen-19, run now on the
# same inputs with the same options. For each case: the text profile (or the
# unsymbolized profile with --skip-symbolization) must be identical line
# for line; for profiles, llvm-profdata-19 must read our text and our
# extbinary, `show` must print the same for our extbinary as for
# llvm-profgen's, and `overlap` must report 100% similarity.
# Inputs: every LBR-only perf script of the llvm-profgen test suite with an
# ELF binary, the hybrid ones with --ignore-stack-samples (DWARF binaries),
# the unsymbolized profiles, and AutoFDO's test.lbr (perf.data).
set -u
PG=llvm-profgen-19
PD=llvm-profdata-19
command -v $PG >/dev/null 2>&1 || { echo "$PG not found"; exit 77; }
command -v $PD >/dev/null 2>&1 || { echo "$PD not found"; exit 77; }
D=$TOP/tests/data/llvm-profgen-inputs
A=$TOP/tests/data/autofdo
cd "$WORK" || exit 1
fails=0; n=0

# run NAME OPTIONS... : compare one configuration
run() {
    name=$1; shift
    n=$((n + 1))
    $PG "$@" --output=ref.out >ref.err 2>&1; rs=$?
    "$LBR2PROF" "$@" --output=my.out >my.err 2>&1; ms=$?
    if [ $rs -ne 0 ] || [ $ms -ne 0 ]; then
        if [ $rs -ne 0 ] && [ $ms -ne 0 ]; then
            echo "ok   $name (both refuse)"; return
        fi
        echo "FAIL $name: exit llvm-profgen=$rs lbr2prof=$ms"; sed 's/^/  my: /' my.err | head -5
        sed 's/^/  ref: /' ref.err | head -5
        fails=$((fails + 1)); return
    fi
    if ! cmp -s ref.out my.out; then
        echo "FAIL $name: output differs"; diff ref.out my.out | head -10
        fails=$((fails + 1)); return
    fi
    echo "ok   $name"
}

# prof NAME OPTIONS... : text identical, then extbinary checks
prof() {
    name=$1; shift
    run "$name [text]" "$@" --format=text
    cp my.out my.txt
    $PG "$@" --output=ref.ext >/dev/null 2>&1
    "$LBR2PROF" "$@" --output=my.ext >/dev/null 2>&1
    n=$((n + 1))
    if [ ! -s my.txt ] && [ ! -s ref.out ]; then
        echo "ok   $name [both profiles empty]"; return
    fi
    if ! $PD show --sample my.txt >/dev/null 2>&1; then
        echo "FAIL $name: llvm-profdata cannot read our text"; fails=$((fails + 1)); return
    fi
    $PD show --sample ref.ext >ref.show 2>&1
    $PD show --sample my.ext >my.show 2>&1
    if ! cmp -s ref.show my.show; then
        echo "FAIL $name: llvm-profdata show differs on extbinary"; diff ref.show my.show | head
        fails=$((fails + 1)); return
    fi
    $PD merge --sample --text my.ext -o my.merged.txt >/dev/null 2>&1
    case " $* " in *" --use-md5 "*) cp my.txt my.merged.txt ;; esac # names are hashes
    if ! cmp -s my.merged.txt my.txt; then
        echo "FAIL $name: extbinary -> text via llvm-profdata differs from our text"
        fails=$((fails + 1)); return
    fi
    $PD overlap --sample ref.ext my.ext >ov.txt 2>&1
    if ! grep -q 'Sum of sample counts for profile my.ext is 0\.' ov.txt; then
        if ! grep -q 'Whole program profile similarity: 100.000%' ov.txt; then
            echo "FAIL $name: overlap is not 100%"; head -12 ov.txt; fails=$((fails + 1)); return
        fi
    fi
    echo "ok   $name [extbinary: show, merge, overlap]"
}

raw() { name=$1; shift; run "$name [raw]" "$@" --skip-symbolization; }

# LBR-only perf scripts
for c in noprobe.perfscript:noprobe noprobe.mmap.perfscript:noprobe \
         noprobe.aggperfscript:noprobe noprobe-skid.perfscript:noprobe \
         inline-noprobe.perfscript:inline-noprobe \
         inline-noprobe2.perfscript:inline-noprobe2 \
         artificial-branch.perfscript:inline-noprobe2 \
         ip-duplication.perfscript:inline-noprobe2 \
         coroutine.perfscript:coroutine; do
    s=${c%%:*}; b=${c#*:}
    raw "$s" --perfscript="$D/$s" --binary="$D/$b.perfbin"
    prof "$s" --perfscript="$D/$s" --binary="$D/$b.perfbin"
done
prof "noprobe update-total-samples" --perfscript="$D/noprobe.perfscript" \
    --binary="$D/noprobe.perfbin" --update-total-samples
prof "inline-noprobe update-total-samples" --perfscript="$D/inline-noprobe.perfscript" \
    --binary="$D/inline-noprobe.perfbin" --update-total-samples
prof "inline-noprobe fill-zero" --perfscript="$D/inline-noprobe.perfscript" \
    --binary="$D/inline-noprobe.perfbin" --fill-zero-for-all-funcs
raw "noprobe use-offset=0" --perfscript="$D/noprobe.perfscript" \
    --binary="$D/noprobe.perfbin" --use-offset=0
raw "inline-noprobe2 first-loadable" --perfscript="$D/inline-noprobe2.perfscript" \
    --binary="$D/inline-noprobe2.perfbin" --use-first-loadable-segment-as-base
prof "inline-noprobe2 md5" --perfscript="$D/inline-noprobe2.perfscript" \
    --binary="$D/inline-noprobe2.perfbin" --use-md5
run "inline-noprobe2 extbinary+md5 bytes" --perfscript="$D/inline-noprobe2.perfscript" \
    --binary="$D/inline-noprobe2.perfbin" --use-md5
run "inline-noprobe2 extbinary+symbol-list bytes" --perfscript="$D/inline-noprobe2.perfscript" \
    --binary="$D/inline-noprobe2.perfbin" --populate-profile-symbol-list
run "inline-noprobe2 legacy binary bytes" --perfscript="$D/inline-noprobe2.perfscript" \
    --binary="$D/inline-noprobe2.perfbin" --format=binary

# HWPGO options: leading IP only, event filter, sample period
printf '           7f0000001000 0x40062f/0x4005b0/P/-/-/9  0x400645/0x4005ff/P/-/-/1\n           4005d7 0x4005d7/0x4005e5/P/-/-/8  0x40062f/0x4005b0/P/-/-/6\n           4005d8 0x4005d7/0x4005e5/P/-/-/8  0x40062f/0x4005b0/P/-/-/6\n' >ip-external.ps
for c in "$D/noprobe-skid.perfscript noprobe --leading-ip-only" \
         "ip-external.ps noprobe --leading-ip-only" \
         "$D/ip-duplication.perfscript inline-noprobe2 --leading-ip-only" \
         "$D/cmov_3.perfscript cmov_3 --perf-event=br_inst_retired.near_taken:upp --leading-ip-only" \
         "$D/cmov_3.perfscript cmov_3 --perf-events=br_misp_retired.all_branches:upp" \
         "$D/cmov_3.perfscript cmov_3 --sample-period=1000003 --perf-event=br_inst_retired.near_taken:upp" \
         "$D/noprobe.perfscript noprobe --sample-period=62" \
         "$D/noprobe.aggperfscript noprobe --sample-period=62 --leading-ip-only" \
         "$D/noprobe.perfscript noprobe --sample-period=1" \
         "$D/noinline-cs-noprobe.perfscript noinline-cs-noprobe --ignore-stack-samples --sample-period=62" \
         "$D/noinline-cs-noprobe.perfscript noinline-cs-noprobe --ignore-stack-samples --leading-ip-only"; do
    set -- $c
    s=$1; b=$2; shift 2
    raw "$(basename "$s") $*" --perfscript="$s" --binary="$D/$b.perfbin" "$@"
    prof "$(basename "$s") $*" --perfscript="$s" --binary="$D/$b.perfbin" "$@"
done

# hybrid perf scripts, stacks ignored (DWARF binaries only)
for c in noinline-cs-noprobe.perfscript:noinline-cs-noprobe \
         noinline-cs-noprobe.aggperfscript:noinline-cs-noprobe \
         inline-cs-noprobe.perfscript:inline-cs-noprobe \
         recursion-compression-noprobe.perfscript:recursion-compression-noprobe \
         func-split.perfscript:func-split \
         callback-external-addr.perfscript:callback-external-addr \
         multi-load-segs.perfscript:multi-load-segs \
         unique-linkage-name-dwarf.perfscript:unique-linkage-name-dwarf \
         cs-interrupt.perfscript:noinline-cs-noprobe \
         cs-invalid-ret-addr.perfscript:noinline-cs-noprobe \
         external-address.perfscript:inline-cs-noprobe; do
    s=${c%%:*}; b=${c#*:}
    raw "$s ignore-stack" --perfscript="$D/$s" --binary="$D/$b.perfbin" --ignore-stack-samples
    prof "$s ignore-stack" --perfscript="$D/$s" --binary="$D/$b.perfbin" --ignore-stack-samples
done

run "unique-linkage-name-dwarf extbinary bytes (uniq flag)" \
    --perfscript="$D/unique-linkage-name-dwarf.perfscript" \
    --binary="$D/unique-linkage-name-dwarf.perfbin" --ignore-stack-samples

# a pseudo-probe binary read through DWARF (inline-probe-afdo)
prof "cs-preinline-cost dwarf-correlation" --perfscript="$D/cs-preinline-cost.perfscript" \
    --binary="$D/cs-preinline-cost.perfbin" --ignore-stack-samples --use-dwarf-correlation
prof "cmov_3 (event names)" --perfscript="$D/cmov_3.perfscript" --binary="$D/cmov_3.perfbin"

# refusals: COFF binaries (hybrid input without --ignore-stack-samples
# makes a CS profile: test_cs_generate_conformance.sh). Probe binaries
# without --use-dwarf-correlation make probe-based profiles:
# test_probe_conformance.sh
ln -sf "$D/coff-profile.exe" coff-profile.perfbin
ln -sf "$D/coff-profile.perfscript" coff-profile.perfscript
for c in "coff-profile"; do
    n=$((n + 1))
    set -- $c
    b=$1; shift
    dir=$D; [ -e "$b.perfbin" ] && dir=.
    rm -f refused.out
    "$LBR2PROF" --perfscript="$dir/$b.perfscript" --binary="$dir/$b.perfbin" "$@" \
        --output=refused.out >refused.err 2>&1
    st=$?
    if [ $st -eq 2 ] && [ ! -e refused.out ] &&
       grep -q 'not supported yet\|not an ELF file' refused.err; then
        echo "ok   $b refused (status 2, no output)"
    else
        echo "FAIL $b: expected a clear refusal, got status $st"; fails=$((fails + 1))
    fi
done

# unsymbolized profiles
prof "out-of-bounds.raw.prof" --unsymbolized-profile="$D/out-of-bounds.raw.prof" \
    --binary="$D/inline-noprobe.perfbin"
prof "cold-profile-trimming" --unsymbolized-profile="$D/cold-profile-trimming.raw.prof" \
    --binary="$D/inline-noprobe2.perfbin" --use-offset=0 --trim-cold-profile \
    --profile-summary-cold-count=100
prof "profile-density" --unsymbolized-profile="$D/profile-density.raw.prof" \
    --binary="$D/inline-noprobe2.perfbin" --use-offset=0
# fs-discriminator: also the header flags (not visible in show's output)
# --llvm-sample-profile re-processing (cold-profile-trimming-symbolized,
# filter-ambiguous-profile)
$PG --unsymbolized-profile="$D/cold-profile-trimming.raw.prof" --binary="$D/inline-noprobe2.perfbin" \
    --use-offset=0 --format=text --output=cpt.txt >/dev/null 2>&1
prof "llvm-sample-profile trim-cold" --llvm-sample-profile=cpt.txt \
    --binary="$D/inline-noprobe2.perfbin" --trim-cold-profile --profile-summary-cold-count=100
run "llvm-sample-profile trim-cold extbinary bytes" --llvm-sample-profile=cpt.txt \
    --binary="$D/inline-noprobe2.perfbin" --trim-cold-profile --profile-summary-cold-count=100
prof "filter-ambiguous-profile" --llvm-sample-profile="$D/filter-ambiguous-profile.prof" \
    --binary="$D/inline-cs-noprobe.perfbin"
# ... and from extbinary input (llvm-profgen reads every format too)
$PD merge --sample --extbinary cpt.txt -o cpt.ext
prof "llvm-sample-profile extbinary input" --llvm-sample-profile=cpt.ext \
    --binary="$D/inline-noprobe2.perfbin" --trim-cold-profile --profile-summary-cold-count=100

# --show-density and the density warning: stdout and stderr identical
n=$((n + 1))
set -- --unsymbolized-profile="$D/profile-density.raw.prof" --binary="$D/inline-noprobe2.perfbin" \
    --use-offset=0 --show-density --profile-density-threshold=10 --profile-density-cutoff-hot=800000
$PG "$@" --output=ref.out >ref.log 2>&1
"$LBR2PROF" "$@" --output=my.out >my.log 2>&1
if cmp -s ref.log my.log && grep -q 'Functions with density' my.log; then echo "ok   show-density output"
else echo "FAIL show-density output"; diff ref.log my.log; fails=$((fails + 1)); fi

prof "fs-discriminator" --unsymbolized-profile="$D/fs-discriminator.raw.prof" \
    --binary="$D/fs-discriminator.perfbin"
run "fs-discriminator extbinary bytes" --unsymbolized-profile="$D/fs-discriminator.raw.prof" \
    --binary="$D/fs-discriminator.perfbin"
n=$((n + 1))
$PG --unsymbolized-profile="$D/fs-discriminator.raw.prof" --binary="$D/fs-discriminator.perfbin" \
    --output=ref.ext >/dev/null 2>&1
"$LBR2PROF" --unsymbolized-profile="$D/fs-discriminator.raw.prof" \
    --binary="$D/fs-discriminator.perfbin" --output=my.ext >/dev/null 2>&1
$PD show --sample --show-sec-info-only ref.ext | grep Flags | sed 's/Offset.*Flags/Flags/' >ref.sec
$PD show --sample --show-sec-info-only my.ext | grep Flags | sed 's/Offset.*Flags/Flags/' >my.sec
if grep -q fs-discriminator ref.sec && cmp -s ref.sec my.sec; then
    echo "ok   fs-discriminator section flags"
else
    echo "FAIL fs-discriminator section flags"; diff ref.sec my.sec; fails=$((fails + 1))
fi
printf '0\n0\n' > empty.raw
prof "empty raw fill-zero" --unsymbolized-profile=empty.raw \
    --binary="$D/inline-noprobe.perfbin" --fill-zero-for-all-funcs

# AutoFDO's perf.data (perf 3.3), through perf script for llvm-profgen
if command -v perf >/dev/null 2>&1; then
    raw "test.lbr" --perfdata="$A/test.lbr" --binary="$A/test.binary"
    prof "test.lbr" --perfdata="$A/test.lbr" --binary="$A/test.binary"
    run "test.lbr md5+symbol list extbinary bytes" --perfdata="$A/test.lbr" \
        --binary="$A/test.binary" --use-md5 --populate-profile-symbol-list
    run "test.lbr trim-cold, zero-fill, update totals [text]" --perfdata="$A/test.lbr" \
        --binary="$A/test.binary" --trim-cold-profile --fill-zero-for-all-funcs \
        --update-total-samples --format=text
fi
echo "$((n - fails))/$n checks passed"
[ $fails -eq 0 ]
