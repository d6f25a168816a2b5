#!/bin/sh
# Context-sensitive profiles: lbr2prof against llvm-profgen-19, run now.
# For every hybrid input of the llvm-profgen test suite (DWARF binaries;
# pseudo-probe binaries with --use-dwarf-correlation on both sides),
# llvm-profgen makes the CS unsymbolized profile (--skip-symbolization,
# with default recursion compression, --compress-recursion=0 and
# --csprof-max-context-depth=2); then llvm-profgen and lbr2prof both read
# it with --unsymbolized-profile and the same options, and the text
# profiles and stderr must be identical. Option sets: flat CS (pre-inliner
# off, no nesting) with and without a cold count of 0, cold merging and
# trimming, nesting with merged base profiles, the defaults (pre-inliner +
# nesting) and variations. Then extbinary (llvm-profdata show, section
# flags, bytes up to the FuncMetadata section whose entry order is a hash
# table's in llvm-profgen, our extbinary back to our text), --use-md5, the
# legacy binary format, the perf-script route's !Attributes: 1, the whole
# pipeline from the perf scripts through the virtual unwinder, the
# profile-density-cs input, --llvm-sample-profile re-processing, and
# clang-19 building with a CS profile made from a simulated recording.
set -u
PG=llvm-profgen-19
PD=llvm-profdata-19
command -v $PG >/dev/null 2>&1 || { echo "$PG not found"; exit 77; }
command -v $PD >/dev/null 2>&1 || { echo "$PD not found"; exit 77; }
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
D=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0; n=0
T="timeout 30"

fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# cmp_run NAME OPTIONS... : text output and stderr identical ($MYOPTS: more
# options for lbr2prof only)
MYOPTS=
cmp_run() {
    name=$1; shift
    n=$((n + 1))
    $T $PG "$@" --output=ref.txt --format=text >ref.err 2>&1; rs=$?
    # shellcheck disable=SC2086
    $T "$LBR2PROF" "$@" $MYOPTS --output=my.txt --format=text >my.err 2>&1; ms=$?
    if [ $rs -ne 0 ] || [ $ms -ne 0 ]; then
        if [ $rs -ne 0 ] && [ $ms -ne 0 ]; then echo "ok   $name (both refuse)"; return; fi
        fail "$name: exit llvm-profgen=$rs lbr2prof=$ms"; head -3 my.err; return
    fi
    if ! cmp -s ref.txt my.txt; then fail "$name: text differs"; diff ref.txt my.txt | head -8; return; fi
    if ! cmp -s ref.err my.err; then fail "$name: stderr differs"; diff ref.err my.err | head -4; return; fi
    echo "ok   $name ($(wc -l < my.txt) lines)"
}

FLAT="--csspgo-preinliner=0 --gen-cs-nested-profile=0"
# option sets for every raw profile
SETS="$FLAT
$FLAT --profile-summary-cold-count=0
$FLAT --csprof-merge-cold-context --trim-cold-profile --csprof-max-cold-context-depth=2
$FLAT --csprof-merge-cold-context=0 --trim-cold-profile
$FLAT --update-total-samples
--csspgo-preinliner=0 --generate-merged-base-profiles
-
--profile-summary-cold-count=0
--gen-cs-nested-profile=0 --trim-cold-profile
--use-context-cost-for-preinliner=0 --profile-summary-hot-count=3"
# llvm-profgen 19 never finishes (or crashes) pre-inlining the
# uncompressed recursion of recursion-compression-pseudoprobe: there only
# the sets without the pre-inliner, and one that does finish
SETS_NOPRE=$(echo "$SETS" | grep -- '--csspgo-preinliner=0'; echo --profile-summary-cold-count=0)

CASES="noinline-cs-noprobe.perfscript:noinline-cs-noprobe:
noinline-cs-noprobe.aggperfscript:noinline-cs-noprobe:
inline-cs-noprobe.perfscript:inline-cs-noprobe:
recursion-compression-noprobe.perfscript:recursion-compression-noprobe:R
callback-external-addr.perfscript:callback-external-addr:
cs-interrupt.perfscript:noinline-cs-noprobe:
cs-invalid-ret-addr.perfscript:noinline-cs-noprobe:
external-address.perfscript:inline-cs-noprobe:
func-split.perfscript:func-split:
multi-load-segs.perfscript:multi-load-segs:
unique-linkage-name-dwarf.perfscript:unique-linkage-name-dwarf:
cs-preinline-cost.perfscript:cs-preinline-cost:P
inline-cs-pseudoprobe.perfscript:inline-cs-pseudoprobe:P
noinline-cs-pseudoprobe.perfscript:noinline-cs-pseudoprobe:P
noinline-cs-pseudoprobe.aggperfscript:noinline-cs-pseudoprobe:P
noinline-tailcall-probe.perfscript:noinline-tailcall-probe:P
recursion-compression-pseudoprobe.perfscript:recursion-compression-pseudoprobe:PH
truncated-pseudoprobe.perfscript:truncated-pseudoprobe:P
unique-linkage-name-probe.perfscript:unique-linkage-name-probe:P
invalid-range.perfscript:noinline-cs-pseudoprobe:P"

echo "$CASES" > cases.txt
while IFS=: read -r script bin flags; do
    extra=; case $flags in *P*) extra=--use-dwarf-correlation ;; esac
    for ctx in default --compress-recursion=0 --csprof-max-context-depth=2; do
        copt=; [ "$ctx" = default ] || copt=$ctx
        raw=$script.$ctx.raw
        $PG --perfscript="$D/$script" --binary="$D/$bin.perfbin" --output="$raw" \
            --skip-symbolization $extra $copt >/dev/null 2>&1 ||
            { fail "$script $ctx: llvm-profgen made no raw profile"; continue; }
        grep -q '^\[' "$raw" || { fail "$script: raw profile has no context"; continue; }
        sets=$SETS
        case "$flags:$ctx" in *H*:--compress-recursion=0) sets=$SETS_NOPRE ;; esac
        # the depth-limited variant only with a few sets (time)
        [ "$ctx" = default ] || sets=$(echo "$sets" | sed -n '1p;3p;6p;7p')
        echo "$sets" > sets.txt
        while read -r opts; do
            [ "$opts" = - ] && opts=
            # shellcheck disable=SC2086
            cmp_run "$script [$ctx] ${opts:-(defaults)}" --unsymbolized-profile="$raw" \
                --binary="$D/$bin.perfbin" $extra $opts
        done < sets.txt
    done
done < cases.txt

# Recursive contexts and the pre-inliner. llvm-profgen promotes a context
# to its base profile while the context is still linked, so a recursive
# context gets merged into its own ancestors: recursion-compression-noprobe
# (--compress-recursion=0) loses 2 of fa's 33 samples (lbr2prof matches
# that, above), recursion-compression-pseudoprobe never finishes.
# --cs-fold-recursion (lbr2prof's) keeps every sample, and both modes end.
sum_fa() { awk '/^\[/ && ($0 ~ /@ fa\]:/ || $0 ~ /^\[fa\]:/) { sub(/.*\]:/, ""); split($0, a, ":"); s += a[1] } END { print s + 0 }' "$1"; }
raw=recursion-compression-noprobe.perfscript.--compress-recursion=0.raw
rb="$D/recursion-compression-noprobe.perfbin"
n=$((n + 1))
"$LBR2PROF" --unsymbolized-profile=$raw --binary="$rb" --format=text --output=rec0.txt \
    $FLAT --csprof-merge-cold-context=0 2>/dev/null
"$LBR2PROF" --unsymbolized-profile=$raw --binary="$rb" --format=text --output=rec1.txt \
    --gen-cs-nested-profile=0 2>/dev/null
"$LBR2PROF" --unsymbolized-profile=$raw --binary="$rb" --format=text --output=rec2.txt \
    --gen-cs-nested-profile=0 --cs-fold-recursion 2>/dev/null
all=$(sum_fa rec0.txt); llvm=$(sum_fa rec1.txt); fold=$(sum_fa rec2.txt)
if [ "$all" -eq 33 ] && [ "$llvm" -eq 31 ] && [ "$fold" -eq 33 ]; then
    echo "ok   recursive promotion: fa keeps $fold of $all samples (llvm-profgen's way: $llvm)"
else
    fail "recursive promotion: fa $all in contexts, $llvm llvm-profgen's way, $fold folded"
fi
raw=recursion-compression-pseudoprobe.perfscript.--compress-recursion=0.raw
for opt in "" --cs-fold-recursion; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    if $T "$LBR2PROF" --unsymbolized-profile=$raw --binary="$D/recursion-compression-pseudoprobe.perfbin" \
            --use-dwarf-correlation --format=text --output=hang.txt $opt 2>/dev/null &&
       $PD show --sample hang.txt >/dev/null 2>&1; then
        echo "ok   pre-inlining where llvm-profgen never finishes ($opt)"
    else
        fail "pre-inlining recursion-compression-pseudoprobe $opt"
    fi
done

# ---- extbinary, md5, legacy binary -----------------------------------------------
# sec_prefix FILE: bytes before the FuncMetadata section
meta_offset() { $PD show --sample --show-sec-info-only "$1" | sed -n 's/^FunctionMetadata - Offset: \([0-9]*\),.*/\1/p'; }
for c in noinline-cs-noprobe:noinline-cs-noprobe inline-cs-noprobe:inline-cs-noprobe \
         recursion-compression-noprobe:recursion-compression-noprobe \
         callback-external-addr:callback-external-addr; do
    s=${c%%:*}; b=${c#*:}
    raw=$s.perfscript.default.raw
    for opts in "$FLAT" "-" "--gen-cs-nested-profile=0" "--profile-summary-cold-count=0" \
                "$FLAT --use-md5" "--use-md5"; do
        [ "$opts" = - ] && opts=
        name="$s extbinary ${opts:-(defaults)}"
        n=$((n + 1))
        # shellcheck disable=SC2086
        $PG --unsymbolized-profile=$raw --binary="$D/$b.perfbin" $opts --output=ref.ext >/dev/null 2>&1
        # shellcheck disable=SC2086
        "$LBR2PROF" --unsymbolized-profile=$raw --binary="$D/$b.perfbin" $opts --output=my.ext >/dev/null 2>&1 ||
            { fail "$name: lbr2prof failed"; continue; }
        $PD show --sample ref.ext >ref.show 2>&1
        $PD show --sample my.ext >my.show 2>&1 || { fail "$name: llvm-profdata cannot read ours"; continue; }
        cmp -s ref.show my.show || { fail "$name: show differs"; diff ref.show my.show | head -5; continue; }
        $PD show --sample --show-sec-info-only ref.ext >ref.sec
        $PD show --sample --show-sec-info-only my.ext >my.sec
        cmp -s ref.sec my.sec || { fail "$name: sections differ"; diff ref.sec my.sec; continue; }
        off=$(meta_offset my.ext)
        cmp -s -n "$off" ref.ext my.ext || { fail "$name: bytes before FuncMetadata differ"; continue; }
        case "$opts" in
        *md5*) ;;
        *)  # shellcheck disable=SC2086
            "$LBR2PROF" --unsymbolized-profile=$raw --binary="$D/$b.perfbin" $opts --format=text \
                --output=my.txt >/dev/null 2>&1
            $PD merge --sample --text my.ext -o my.back.txt >/dev/null 2>&1
            cmp -s my.back.txt my.txt || { fail "$name: extbinary -> text differs from our text"; diff my.back.txt my.txt | head -5; continue; }
            $PD show --sample my.txt >/dev/null 2>&1 || { fail "$name: llvm-profdata cannot read our text"; continue; } ;;
        esac
        echo "ok   $name"
    done
    for opts in "$FLAT" "-"; do
        [ "$opts" = - ] && opts=
        # shellcheck disable=SC2086
        cmp_bin() {
            n=$((n + 1))
            $PG --unsymbolized-profile=$raw --binary="$D/$b.perfbin" $opts --format=binary --output=ref.bin >/dev/null 2>&1; rs=$?
            "$LBR2PROF" --unsymbolized-profile=$raw --binary="$D/$b.perfbin" $opts --format=binary --output=my.bin >/dev/null 2>&1; ms=$?
            if [ $rs -ne 0 ] && [ $ms -ne 0 ]; then echo "ok   $s binary ${opts:-(defaults)}: both refuse"; return; fi
            if [ $rs -eq 0 ] && [ $ms -eq 0 ] && cmp -s ref.bin my.bin; then echo "ok   $s binary ${opts:-(defaults)}: identical"; return; fi
            fail "$s binary ${opts:-(defaults)}: status $rs/$ms or bytes differ"
        }
        cmp_bin
    done
done

# ---- the perf-script route keeps !Attributes: 1 (the raw route cannot) -----------------
n=$((n + 1))
$PG --perfscript="$D/inline-cs-noprobe.perfscript" --binary="$D/inline-cs-noprobe.perfbin" \
    --format=text $FLAT --output=ps.txt >/dev/null 2>&1
"$LBR2PROF" --unsymbolized-profile=inline-cs-noprobe.perfscript.default.raw \
    --binary="$D/inline-cs-noprobe.perfbin" --format=text $FLAT --output=up.txt >/dev/null 2>&1
if grep -q '!Attributes: 1' ps.txt && grep -v '!Attributes: 1' ps.txt | cmp -s - up.txt; then
    echo "ok   perf-script route = unsymbolized route + !Attributes: 1"
else
    fail "perf-script route vs unsymbolized route"; diff ps.txt up.txt | head
fi

# ---- the whole pipeline: perf script -> virtual unwinder -> CS profile ---------------
# (the unwinder's frame repair, an lbr2prof extension, off: llvm-profgen's
# contexts; this route also keeps !Attributes: 1)
MYOPTS=--no-repair-frames
while IFS=: read -r script bin flags; do
    extra=; case $flags in *P*) extra=--use-dwarf-correlation ;; esac
    for opts in "$FLAT" - "--profile-summary-cold-count=0"; do
        [ "$opts" = - ] && opts=
        # shellcheck disable=SC2086
        cmp_run "perf script $script ${opts:-(defaults)}" --perfscript="$D/$script" \
            --binary="$D/$bin.perfbin" $extra $opts
    done
done < cases.txt
MYOPTS=

# ---- profile-density-cs.raw.prof, --show-density ----------------------------------------
for opts in "--show-density" "$FLAT --show-density" "--profile-density-threshold=10000"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    $PG --unsymbolized-profile="$D/profile-density-cs.raw.prof" --binary="$D/inline-noprobe2.perfbin" \
        --format=text $opts --output=ref.txt >ref.out 2>&1
    # shellcheck disable=SC2086
    "$LBR2PROF" --unsymbolized-profile="$D/profile-density-cs.raw.prof" --binary="$D/inline-noprobe2.perfbin" \
        --format=text $opts --output=my.txt >my.out 2>&1
    if cmp -s ref.txt my.txt && cmp -s ref.out my.out; then echo "ok   profile-density-cs $opts"
    else fail "profile-density-cs $opts"; diff ref.out my.out | head -3; diff ref.txt my.txt | head -3; fi
done

# ---- --llvm-sample-profile: post-processing a CS text profile ---------------------------
$PG --perfscript="$D/inline-cs-noprobe.perfscript" --binary="$D/inline-cs-noprobe.perfbin" \
    --format=text $FLAT --output=cs.txt >/dev/null 2>&1
for opts in - "--profile-summary-cold-count=0" "--gen-cs-nested-profile=0" "--csspgo-replay-preinline" \
            "--csspgo-preinliner=0"; do
    [ "$opts" = - ] && opts=
    # shellcheck disable=SC2086
    cmp_run "llvm-sample-profile ${opts:-(defaults)}" --llvm-sample-profile=cs.txt \
        --binary="$D/inline-cs-noprobe.perfbin" $opts
done

# ---- a CS profile clang-19 accepts -----------------------------------------------------
if command -v clang-19 >/dev/null 2>&1; then
    CF="-O2 -g -fno-omit-frame-pointer -fdebug-info-for-profiling -funique-internal-linkage-names"
    # shellcheck disable=SC2086
    clang-19 $CF -o rec "$TOP/tests/workloads/recursion.c" &&
    "$LBR2PROF" record --simulate -c 300 -o rec.data -- ./rec 21 >/dev/null 2>&1 &&
    "$LBR2PROF" script --show-mmap-events rec.data > rec.script 2>/dev/null &&
    $PG --perfscript=rec.script --binary=rec --output=rec.raw --skip-symbolization >/dev/null 2>&1
    if [ -s rec.raw ] && grep -q '^\[.*fib' rec.raw; then
        for opts in - "$FLAT"; do
            [ "$opts" = - ] && opts=
            # shellcheck disable=SC2086
            cmp_run "recursion.c ${opts:-(defaults)}" --unsymbolized-profile=rec.raw --binary=rec $opts
            for fmt in text extbinary; do
                n=$((n + 1))
                # shellcheck disable=SC2086
                "$LBR2PROF" --unsymbolized-profile=rec.raw --binary=rec $opts --format=$fmt \
                    --output=rec.prof >/dev/null 2>&1
                # shellcheck disable=SC2086
                if clang-19 $CF -Werror -fprofile-sample-use=rec.prof -o rec2 \
                        "$TOP/tests/workloads/recursion.c" >clang.err 2>&1; then
                    echo "ok   clang-19 -fprofile-sample-use ($fmt ${opts:-defaults}), no warnings"
                else
                    fail "clang-19 with our CS profile ($fmt $opts)"; head -5 clang.err
                fi
            done
        done
        # straight from the perf.data (unwinder + generator, defaults)
        n=$((n + 1))
        if "$LBR2PROF" rec.data --binary=rec -o rec.direct.prof >/dev/null 2>&1 &&
           $PD show --sample rec.direct.prof >/dev/null 2>&1 &&
           clang-19 $CF -Werror -fprofile-sample-use=rec.direct.prof -o rec3 \
               "$TOP/tests/workloads/recursion.c" >clang.err 2>&1; then
            echo "ok   clang-19 with the CS profile lbr2prof made from the perf.data"
        else
            fail "CS profile straight from the perf.data"; head -5 clang.err
        fi
    else
        fail "no CS raw profile from the simulated recording"
    fi
fi

echo "$((n - fails)) of $n passed"
[ "$fails" -eq 0 ] && [ "$n" -gt 450 ]
