#!/bin/sh
# Every flag `lbr2prof profile` accepts does what it says. The flags come
# from `lbr2prof profile --help`, which prints the option table itself
# (src/builtin/cmd_profile.c), so a flag added to the table without a row
# here fails the test, and so does a row for a flag the table lost. Each
# flag has one kind of row:
#   ref       on an input where the flag matters, the output with it
#             differs from the output without it, and equals the reference
#             llvm-profgen's with it (22; 19 for its own HWPGO flags):
#             the flag changes behaviour, in the right way;
#   input     the flag names the input or output: the run equals the
#             reference's with the same flag;
#   alias     the same output as the flag it stands for;
#   own       lbr2prof's flag: the output differs from the run without it,
#             in what the row checks (the flag's own tests named there
#             check how);
#   warns     a flag llvm-profgen 22 takes but ignores for this kind of
#             profile: the profile equals llvm-profgen's with and without
#             it, and a warning says why it had no effect;
#   refused   not implemented: status 2 and a message naming the flag,
#             never accepted and ignored;
#   elsewhere tested by another test, which must exist and use the flag.
# A flag cannot be a documented no-op: none is accepted that changes
# nothing.
set -u
PG=llvm-profgen-22 PG19=llvm-profgen-19 PD=llvm-profdata-22
for t in $PG $PG19 $PD; do
    command -v $t >/dev/null 2>&1 || { echo "$t not found"; exit 77; }
done
D=$TOP/tests/data/llvm-profgen-inputs
A=$TOP/tests/data/autofdo
cd "$WORK" || exit 1
fails=0 covered=" "

fail() { echo "FAIL $*"; fails=$((fails + 1)); }
cover() { covered="$covered$1 "; }

# A run: the output profile (text, or llvm-profdata-22 show for binary
# formats) to $2.prof, stdout to $2.out, stderr to $2.err. lbr2prof runs
# with --no-repair-frames unless told otherwise (l_repair).
SHOW=--detailed-summary   # + --show-prof-sym-list where a row needs it
show() { # file -> text on stdout (nothing for an empty or missing file)
    [ -s "$1" ] || return 0
    if head -c 1 "$1" | grep -q '[[:print:]]'; then cat "$1"
    else $PD show --sample $SHOW "$1" 2>&1 | sed "s|$1|FILE|g"; fi
}
l_run() { # name args...
    n=$1; shift
    # shellcheck disable=SC2068
    "$LBR2PROF" $@ --no-repair-frames -o "$n.raw" >"$n.out" 2>"$n.err"
    echo $? >"$n.st"; show "$n.raw" >"$n.prof" 2>/dev/null
}
l_repair() { # name args...
    n=$1; shift
    # shellcheck disable=SC2068
    "$LBR2PROF" $@ -o "$n.raw" >"$n.out" 2>"$n.err"
    echo $? >"$n.st"; show "$n.raw" >"$n.prof" 2>/dev/null
}
r_run() { # tool name args...
    t=$1 n=$2; shift 2
    rm -f "$n.raw"
    # shellcheck disable=SC2068
    $t $@ --output="$n.raw" >"$n.out" 2>"$n.err"
    echo $? >"$n.st"; show "$n.raw" >"$n.prof" 2>/dev/null
}
same() { # a b what
    cmp -s "$1.$3" "$2.$3" && [ "$(cat "$1.st")" = "$(cat "$2.st")" ]
}

# ref FLAG WHAT TOOL "BASE" "FLAGARGS": WHAT is prof, out or err
ref() {
    flag=$1 what=$2 tool=$3 base=$4 args=$5
    cover "$flag"
    l_run lb $base; l_run lf $base $args; r_run $tool rf $base $args
    if same lb lf "$what"; then
        fail "$flag: no effect on $what ($args)"
    elif ! same lf rf "$what" || [ "$(cat lf.st)" != 0 ]; then
        fail "$flag: $what differs from $tool's ($args)"; diff rf.$what lf.$what | head -5
    else
        echo "ok   $flag ($args): $what changes as $tool's"
    fi
}
input() { # FLAG WHAT TOOL "ARGS"
    cover "$1"
    l_run li $4; r_run $3 ri $4
    if [ "$(cat li.st)" != 0 ] || ! same li ri "$2" || [ ! -s li.$2 ]; then
        fail "$1: $2 differs from $3's ($4)"; diff ri.$2 li.$2 | head -5
    else
        echo "ok   $1: $2 = $3's"
    fi
}
alias_of() { # FLAG MAIN "ARGS WITH FLAG" "ARGS WITH MAIN"
    cover "$1"
    l_run la $3; l_run lm $4
    if [ "$(cat la.st)" = 0 ] && same la lm prof && same la lm out && [ -s la.prof ]; then
        echo "ok   $1 = $2"
    else fail "$1 is not $2"; fi
}
own() { # FLAG WHAT "BASE" "FLAGARGS" WHY
    cover "$1"
    l_repair ob $3; l_repair of $3 $4
    if [ "$(cat of.st)" = 0 ] && ! same ob of "$2"; then
        echo "ok   $1: $2 changes ($5)"
    else fail "$1: no effect on $2 ($4)"; fi
}
warns() { # FLAG "BASE" "FLAGARGS"
    cover "$1"
    l_run wb $2; l_run wf $2 $3; r_run $PG wr $2 $3
    if same wf wr prof && same wb wf prof && grep -q -- "--$1.*had no effect" wf.err; then
        echo "ok   $1: llvm-profgen's profile, and a warning says why it had no effect"
    else fail "$1: ($3) profile or warning"; cat wf.err; fi
}
refused() { # FLAG ARGS
    cover "$1"
    rm -f rf.raw
    # shellcheck disable=SC2086
    "$LBR2PROF" --perfscript="$D/noprobe.perfscript" --binary="$D/noprobe.perfbin" \
        $2 -o rf.raw >rf.out 2>rf.err
    st=$?
    if [ $st -eq 2 ] && grep -q -- "--$1" rf.err && [ ! -e rf.raw ]; then
        echo "ok   $1: refused ($(head -1 rf.err))"
    else fail "$1: status $st, not refused"; fi
}
elsewhere() { # FLAG TEST
    cover "$1"
    if grep -q -- "--$1" "$TOP/tests/e2e/$2"; then echo "ok   $1: tested by $2"
    else fail "$1: $2 does not use it"; fi
}

NP="--perfscript=$D/noprobe.perfscript --binary=$D/noprobe.perfbin"
NPM="--perfscript=$D/noprobe.mmap.perfscript --binary=$D/noprobe.perfbin"
IN="--perfscript=$D/inline-noprobe.perfscript --binary=$D/inline-noprobe.perfbin"
IC="--perfscript=$D/inline-cs-noprobe.perfscript --binary=$D/inline-cs-noprobe.perfbin"
NI="--perfscript=$D/noinline-cs-noprobe.perfscript --binary=$D/noinline-cs-noprobe.perfbin"
RC="--perfscript=$D/recursion-compression-noprobe.perfscript --binary=$D/recursion-compression-noprobe.perfbin"
CB="--perfscript=$D/callback-external-addr.perfscript --binary=$D/callback-external-addr.perfbin"
CT="--unsymbolized-profile=$D/cold-profile-trimming.raw.prof --binary=$D/inline-noprobe2.perfbin --use-offset=0"
CM="--perfscript=$D/cmov_3.perfscript --binary=$D/cmov_3.perfbin"
T=--format=text
FLAT_CS="--csspgo-preinliner=0 --gen-cs-nested-profile=0"

# ---- inputs and outputs ------------------------------------------------------
input perfscript prof $PG "$NP $T"
alias_of ps perfscript "--ps=$D/noprobe.perfscript --binary=$D/noprobe.perfbin $T" "$NP $T"
if command -v perf >/dev/null 2>&1; then
    input perfdata prof $PG "--perfdata=$A/test.lbr --binary=$A/test.binary $T"
else
    cover perfdata; echo "note: perf missing, --perfdata compared with nothing"
fi
alias_of pd perfdata "--pd=$A/test.lbr --binary=$A/test.binary $T" \
    "--perfdata=$A/test.lbr --binary=$A/test.binary $T"
input unsymbolized-profile prof $PG "$CT $T"
alias_of up unsymbolized-profile "--up=$D/cold-profile-trimming.raw.prof --binary=$D/inline-noprobe2.perfbin --use-offset=0 $T" "$CT $T"
input llvm-sample-profile prof $PG "--llvm-sample-profile=$D/filter-ambiguous-profile.prof --binary=$D/inline-cs-noprobe.perfbin $T"
input binary prof $PG "$IN $T"
input output prof $PG "$NP"
cover o    # l_run writes every output with -o: every row above is its test
ref format prof $PG "$NP" "$T"
# --debug-binary: the code from a stripped copy, the DWARF from the original
objcopy --strip-debug "$D/inline-noprobe.perfbin" stripped.bin 2>/dev/null
ref debug-binary prof $PG "--perfscript=$D/inline-noprobe.perfscript --binary=stripped.bin $T" \
    "--debug-binary=$D/inline-noprobe.perfbin"
elsewhere binaries-from-trace test_profgen_binaries.sh
elsewhere dwp test_split_dwarf_dwp.sh

# ---- what is read and how ------------------------------------------------------
ref skip-symbolization prof $PG "$NP" --skip-symbolization
ref use-offset prof $PG "$NP --skip-symbolization" --use-offset=0
ref use-first-loadable-segment-as-base prof $PG \
    "--perfscript=$D/multi-load-segs.perfscript --binary=$D/multi-load-segs.perfbin --skip-symbolization" \
    --use-first-loadable-segment-as-base
ref ignore-stack-samples prof $PG "$IC $T" --ignore-stack-samples
ref pid err $PG "$NPM $T" --pid=1
ref show-mmap-events out $PG "$NPM $T" --show-mmap-events
ref show-detailed-warning err $PG \
    "--perfscript=$D/cs-invalid-ret-addr.perfscript --binary=$D/noinline-cs-noprobe.perfbin $T" \
    --show-detailed-warning
ref use-dwarf-correlation prof $PG \
    "--perfscript=$D/noinline-cs-pseudoprobe.perfscript --binary=$D/noinline-cs-pseudoprobe.perfbin $T --ignore-stack-samples" \
    --use-dwarf-correlation
ref leading-ip-only prof $PG19 "--perfscript=$D/noprobe-skid.perfscript --binary=$D/noprobe.perfbin $T" \
    --leading-ip-only
ref perf-event prof $PG19 "$CM $T" --perf-event=br_inst_retired.near_taken:upp
ref perf-events prof $PG19 "$CM $T" --perf-events=br_misp_retired.all_branches:upp
ref sample-period prof $PG19 "$CM $T" --sample-period=1000

# ---- output ------------------------------------------------------------------------
ref use-md5 prof $PG "$NP" --use-md5
SHOW="--detailed-summary --show-prof-sym-list" # (llvm-profdata-22 crashes on it
ref populate-profile-symbol-list prof $PG "$NP" --populate-profile-symbol-list # without a list)
SHOW=--detailed-summary
ref fill-zero-for-all-funcs prof $PG "$IN $T" --fill-zero-for-all-funcs
ref update-total-samples prof $PG "$IN $T" --update-total-samples
ref trim-cold-profile prof $PG "$RC $T $FLAT_CS --profile-summary-hot-count=100" --trim-cold-profile
ref profile-summary-hot-count prof $PG "$RC $T $FLAT_CS" --profile-summary-hot-count=100
ref profile-summary-cold-count prof $PG "$CT $T --trim-cold-profile" --profile-summary-cold-count=1000
ref profile-summary-cutoff-hot prof $PG "$RC $T $FLAT_CS" --profile-summary-cutoff-hot=500000
ref profile-summary-cutoff-cold prof $PG \
    "--perfscript=$D/coroutine.perfscript --binary=$D/coroutine.perfbin $T --trim-cold-profile" \
    --profile-summary-cutoff-cold=500000
ref profile-density-threshold err $PG "$IN $T" --profile-density-threshold=1000
ref profile-density-cutoff-hot out $PG "$IN $T --show-density" --profile-density-cutoff-hot=500000
ref show-density out $PG "$IN $T" --show-density
ref profile-summary-contextless prof $PG "$RC $FLAT_CS" --profile-summary-contextless=false

# ---- contexts ------------------------------------------------------------------------
ref compress-recursion prof $PG "$RC $T" --compress-recursion=0
ref csprof-max-context-depth prof $PG "$RC $T" --csprof-max-context-depth=1
ref csprof-merge-cold-context prof $PG "$RC $T $FLAT_CS --profile-summary-hot-count=100" \
    --csprof-merge-cold-context=0
ref csprof-max-cold-context-depth prof $PG "$RC $T $FLAT_CS --profile-summary-hot-count=100" \
    --csprof-max-cold-context-depth=2
ref gen-cs-nested-profile prof $PG "$IC $T" --gen-cs-nested-profile=0
ref generate-merged-base-profiles prof $PG "$RC $T" --generate-merged-base-profiles
ref csspgo-preinliner prof $PG "$IC $T" --csspgo-preinliner=0
ref use-context-cost-for-preinliner prof $PG "$CB $T --sample-profile-inline-limit-max=100" \
    --use-context-cost-for-preinliner=0
ref sample-profile-hot-inline-threshold prof $PG "$CB $T" --sample-profile-hot-inline-threshold=0
ref sample-profile-cold-inline-threshold prof $PG "$IC $T" --sample-profile-cold-inline-threshold=500
ref sample-profile-inline-limit-max prof $PG "$CB $T" --sample-profile-inline-limit-max=1
ref sample-profile-inline-limit-min prof $PG "$CB $T --sample-profile-inline-limit-max=100" \
    --sample-profile-inline-limit-min=1000
ref sample-profile-inline-growth-limit prof $PG "$CB $T" --sample-profile-inline-growth-limit=0
# replaying earlier inlining needs a profile that says which contexts the
# compiler inlined (!Attributes: 1): llvm-profgen's own, not pre-inlined
for b in inline-cs-noprobe recursion-compression-noprobe; do
    $PG --perfscript="$D/$b.perfscript" --binary="$D/$b.perfbin" $FLAT_CS $T \
        --output=prev-$b.prof 2>/dev/null
done
ref csspgo-replay-preinline prof $PG \
    "--llvm-sample-profile=prev-inline-cs-noprobe.prof --binary=$D/inline-cs-noprobe.perfbin $T" \
    --csspgo-replay-preinline
ref csspgo-preinliner-multiplier-for-previous-inlining prof $PG \
    "--llvm-sample-profile=prev-recursion-compression-noprobe.prof --binary=$D/recursion-compression-noprobe.perfbin $T" \
    --csspgo-preinliner-multiplier-for-previous-inlining=0
# the order of a recursion's functions matters to the pre-inliner only in
# some call graphs: this one (reduced from a random one) has it
cat >scc.prof <<'EOF'
[main]:1000:0
[main:1 @ fc:3 @ fa]:1823:258
[main:1 @ fc:3 @ fa:2 @ fd]:2930:237
 10: 1177
[main:1 @ fd]:436:268
 10: 743
[main:1 @ fd:3 @ fb]:340:59
 2: 11 fb:11
 3: 66 fc:66
 9: 322
 10: 1505
[main:1 @ fd:3 @ fb:2 @ fd]:188:136
 10: 1354
[main:1 @ fd:3 @ fc:3 @ fb]:1062:135
 2: 10 fb:10
EOF
ref sort-profiled-scc-member prof $PG "--llvm-sample-profile=scc.prof --binary=$D/recursion-compression-noprobe.perfbin $T --use-context-cost-for-preinliner=0 --sample-profile-hot-inline-threshold=3 --csprof-merge-cold-context=0" \
    --sort-profiled-scc-member=0

# lbr2prof's own
own no-repair-frames prof "$NI $T" --no-repair-frames "frame repair off: llvm-profgen's contexts, the ref rows above"
own drop-unknown-callers prof "$RC $T --compress-recursion=0" --drop-unknown-callers \
    "code of unknown callers dropped, not kept truncated"
elsewhere script-fp-callchains test_cs_unwind_conformance.sh
elsewhere cs-fold-recursion test_cs_generate_conformance.sh
elsewhere strict test_truncated_perfdata.sh

# the missing-frame inferrer of probe CS profiles (on by default, as in
# llvm-profgen 22): go's tail call put back in [main:5 @ go:2 @ foo]; on a
# line-number-based profile llvm-profgen 22 ignores both: a warning says so
TC="--perfscript=$D/noinline-tailcall-probe.perfscript --binary=$D/noinline-tailcall-probe.perfbin --csspgo-preinliner=0 --gen-cs-nested-profile=0"
ref infer-missing-frames prof $PG "$TC $T" --infer-missing-frames=0
ref max-search-depth prof $PG "$TC $T" --max-search-depth=0
warns infer-missing-frames "--perfscript=$D/noinline-tailcall-probe.perfscript --binary=$D/noinline-tailcall-probe.perfbin --use-dwarf-correlation $T" \
    --infer-missing-frames
warns max-search-depth "$IC $T" --max-search-depth=1

# refused
elsewhere kernel test_kernel_profile.sh
refused mark-all-context-preinlined --mark-all-context-preinlined
refused data-access-perftrace --data-access-perftrace=x

# Intel PT
elsewhere itrace test_pt_profile.sh
# several traces, mergeable raw profiles
elsewhere raw-header test_rawmerge.sh
elsewhere skip-bad-inputs test_multi_input.sh

# pseudo probes
elsewhere show-pseudo-probe test_probe_conformance.sh
elsewhere csprof-max-unsymbolized-context-depth test_probe_conformance.sh
elsewhere load-function-from-symbol test_probe_conformance.sh

# the listing
for f in show-disassembly-only disassemble-functions show-source-locations \
    show-canonical-fname x86-asm-syntax; do
    elsewhere $f test_disassembly.sh
done

# --help itself
cover help; cover h
"$LBR2PROF" profile --help >help.txt 2>&1 && "$LBR2PROF" profile -h >h.txt 2>&1 &&
    cmp -s help.txt h.txt && grep -q -- '--perfscript=<perfscript>' help.txt &&
    ! grep -q '(undocumented)' help.txt || fail "--help / -h"

# ---- every flag of the table has a row, and every row a flag --------------------------
flags=$(sed -n '/^OPTIONS:/,$ s/^  --\{0,1\}\([a-z0-9][a-z0-9-]*\).*/\1/p' help.txt)
[ -z "$(echo "$flags" | sort | uniq -d)" ] || fail "--help lists a flag twice"
[ "$(echo "$flags" | wc -l)" -gt 60 ] || fail "--help lists $(echo "$flags" | wc -l) flags"
for f in $flags; do
    case "$covered" in *" $f "*) ;; *) fail "--$f: accepted, but no row checks what it does" ;; esac
done
for f in $covered; do
    echo "$flags" | grep -qx -- "$f" || fail "row for --$f, which --help does not list"
done
echo "$(echo "$flags" | wc -l) flags, $(echo $covered | wc -w) rows"
[ $fails -eq 0 ]
