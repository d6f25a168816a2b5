#!/bin/sh
# bench.sh [flat|cs|all] [COPIES] - end-to-end benchmark of lbr2prof against
# llvm-profgen-19: same input, same binary, same options and output format.
# Each tool runs BENCH_RUNS times (default 3), after one untimed warm-up of
# each (page cache); the run with the median wall time is reported: wall
# time to the millisecond (Time::HiRes around /usr/bin/time: a run of
# lbr2prof takes under 0.1 s on (a), where the 10 ms steps of
# /usr/bin/time's %e would move the ratio by 10%), its CPU time
# (user+sys) from /usr/bin/time, and the largest peak RSS of the runs. The
# ratios llvm-profgen / lbr2prof are printed and the outputs compared.
#
# flat: tests/data/autofdo/test.lbr replicated COPIES times (default 26,
#   ~100 MB) by scripts/perf-replicate.c; lbr2prof perf.data vs
#   `llvm-profgen-19 --perfdata` (its two `perf script` runs included, peak
#   RSS the largest process); extbinary, identical bytes.
#
# cs: context-sensitive profiles from hybrid samples (LBR + frame-pointer
#   callchains), recorded now with `lbr2prof record --simulate`:
#   (a) self/text: lbr2prof itself (built with clang-19 -O2 -g
#       -fno-omit-frame-pointer) making a CS profile of
#       cs-preinline-cost.perfscript, recorded with -c 100, printed by
#       `lbr2prof script --raw-addresses` and its samples repeated to ~100 MB
#       of perf script text: both tools read the text;
#   (b) self/perf.data: the same recording replicated to ~100 MB by
#       perf-replicate.c; lbr2prof reads the perf.data, llvm-profgen the
#       `lbr2prof script --raw-addresses` text of it (outputs compared), and
#       `llvm-profgen --perfdata` is timed too (what users run today; with
#       perf 6.1 its output differs, see docs/cs-profile.md);
#   (c) contexts: scripts/gen-callgraph.pl's 1,500-function program,
#       `cg 3000 8` recorded with -c 60 (~16k distinct samples, ~84k
#       contexts): the text for both, and the perf.data for lbr2prof.
#   Each with the default options (pre-inliner + nested profile, extbinary)
#   and the flat CS text options (--csspgo-preinliner=0
#   --gen-cs-nested-profile=0 --format=text). lbr2prof runs with
#   --no-repair-frames (llvm-profgen's behaviour) so outputs can be
#   compared: text byte for byte; extbinary by `llvm-profdata show` and the
#   bytes before FunctionMetadata (llvm-profgen writes that section in hash
#   order).
# Run from a built tree (make -j2). Uses $TMPDIR (default /tmp); the cs part
# needs ~1.5 GB there and ~3 minutes (recording included).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
MODE=all
case ${1:-} in flat | cs | all) MODE=$1; shift ;; esac
COPIES=${1:-26}
L=$TOP/build/lbr2prof
PG=llvm-profgen-19
command -v $PG >/dev/null 2>&1 || { echo "bench.sh: $PG not found"; exit 1; }
command -v perf >/dev/null 2>&1 || { echo "bench.sh: perf not found ($PG --perfdata needs it)"; exit 1; }
# BENCH_KEEP=DIR keeps the inputs in DIR and reuses those already there
# (for iterating on one recording; delete DIR to record anew).
if [ -n "${BENCH_KEEP:-}" ]; then
    W=$BENCH_KEEP; mkdir -p "$W"
    rmk() { :; }
else
    W=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-bench.XXXXXX")
    trap 'rm -rf "$W"' EXIT INT TERM
    rmk() { rm -f "$@"; }
fi
[ -x "$L" ] || make -C "$TOP" -j2 >/dev/null
cc -O2 -o "$W/perf-replicate" "$TOP/scripts/perf-replicate.c"
bad=0

RUNS=${BENCH_RUNS:-3}

# one_run CMD... : appends "WALL USER SYS KB" of one run to $W/runs
one_run() {
    perl -MTime::HiRes=time -e '
        my $out = shift; my $t0 = time; my $rc = system { $ARGV[0] } @ARGV;
        my $wall = time - $t0; exit 1 if $rc != 0;
        open(T, "<", $out) or exit 1; my $l = <T>; close T; chomp $l;
        printf "%.4f %s\n", $wall, $l;' "$W/t" /usr/bin/time -o "$W/t" -f "%U %S %M" "$@" \
        >>"$W/runs" 2>/dev/null </dev/null
}

# measure TAG LABEL CMD... : prints "LABEL: W s wall, C s CPU, M MB peak RSS"
# (the median-wall run of RUNS) and sets TAG_wall, TAG_cpu, TAG_kb
measure() {
    tag=$1 name=$2; shift 2
    : >"$W/runs"
    i=0
    while [ $i -lt "$RUNS" ]; do
        one_run "$@" || { echo "$name failed"; exit 1; }
        i=$((i + 1))
    done
    kb=$(awk 'BEGIN { m = 0 } $4 > m { m = $4 } END { print m }' "$W/runs")
    set -- $(sort -n "$W/runs" | sed -n "$(((RUNS + 1) / 2))p")
    wall=$(echo "$1" | awk '{printf "%.3f", $1}')
    cpu=$(echo "$2 $3" | awk '{printf "%.2f", $1 + $2}')
    mb=$(echo "$kb" | awk '{printf "%.1f", $1 / 1024}')
    printf '  %-40s %6s s wall %6s s CPU %7s MB peak RSS\n' "$name:" "$wall" "$cpu" "$mb"
    eval "${tag}_wall=$wall ${tag}_cpu=$cpu ${tag}_kb=$kb"
}

# ratio TAG_LLVM TAG_OURS WHAT
ratio() {
    eval "pw=\$${1}_wall pc=\$${1}_cpu pk=\$${1}_kb lw=\$${2}_wall lc=\$${2}_cpu lk=\$${2}_kb"
    awk -v lw="$lw" -v pw="$pw" -v lc="$lc" -v pc="$pc" -v lk="$lk" -v pk="$pk" \
        -v what="$3" 'BEGIN {
        lw = lw < 0.001 ? 0.001 : lw; lc = lc < 0.01 ? 0.01 : lc;
        printf "  ratio (llvm-profgen / lbr2prof): %.1fx wall, %.1fx CPU, %.2fx peak RSS (lbr2prof uses %.0f%%); outputs %s\n",
            pw / lw, pc / lc, pk / lk, 100 * lk / pk, what }'
}

# same_prof A B : 0 when the profiles are the same (see the header)
same_prof() {
    if perl -ne 'exit 1 if /[^\t\n\x20-\x7e]/' "$1"; then # text
        cmp -s "$1" "$2"; return
    fi
    llvm-profdata-19 show --sample "$1" >"$W/s1" 2>&1 &&
        llvm-profdata-19 show --sample "$2" >"$W/s2" 2>&1 &&
        cmp -s "$W/s1" "$W/s2" || return 1
    off=$(llvm-profdata-19 show --sample --show-sec-info-only "$1" |
        sed -n 's/^FunctionMetadata - Offset: \([0-9]*\),.*/\1/p')
    [ -n "$off" ] || off=$(wc -c < "$1")
    cmp -s -n "$off" "$1" "$2"
}

outcome() { # A B (a difference is kept in $TMPDIR/lbr2prof-bench-diff.*)
    if same_prof "$1" "$2"; then echo identical; return; fi
    d=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-bench-diff.XXXXXX")
    cp "$1" "$d/lbr2prof.prof"; cp "$2" "$d/llvm-profgen.prof"
    echo "DIFFERENT (kept in $d)"
}

flat_bench() {
    BIN=$TOP/tests/data/autofdo/test.binary
    [ -s "$W/big.data" ] ||
        "$W/perf-replicate" "$TOP/tests/data/autofdo/test.lbr" "$COPIES" "$W/big.data" > /dev/null 2>&1
    echo "flat: $(wc -c < "$W/big.data") bytes ($COPIES copies of test.lbr), binary test.binary"
    "$L" "$W/big.data" --binary "$BIN" -o "$W/warm.l" 2>/dev/null
    $PG --perfdata="$W/big.data" --binary="$BIN" --output="$W/warm.p" >/dev/null 2>&1
    measure lbr2prof "lbr2prof perf.data -o out" "$L" "$W/big.data" --binary "$BIN" -o "$W/out.l"
    measure llvm "llvm-profgen-19 --perfdata" $PG --perfdata="$W/big.data" --binary="$BIN" --output="$W/out.p"
    if cmp -s "$W/out.l" "$W/out.p"; then same=identical; else same=DIFFERENT; bad=1; fi
    ratio llvm lbr2prof "$same"
    rmk "$W/big.data"; rm -f "$W/warm.l" "$W/warm.p" "$W/out.l" "$W/out.p"
}

FLATCS="--csspgo-preinliner=0 --gen-cs-nested-profile=0 --format=text"

# cs_pair NAME BINARY OURS_INPUT_OPT LLVM_INPUT_OPT : both option sets
cs_pair() {
    case_name=$1 bin=$2 ours=$3 theirs=$4
    for set in default flatcs; do
        opts=; [ $set = flatcs ] && opts=$FLATCS
        echo " $case_name, ${set} options"
        # shellcheck disable=SC2086
        measure ours "lbr2prof" "$L" "$ours" --binary "$bin" --no-repair-frames $opts -o "$W/o.l"
        # shellcheck disable=SC2086
        measure theirs "llvm-profgen-19" $PG "$theirs" --binary="$bin" $opts --output="$W/o.p"
        what=$(outcome "$W/o.l" "$W/o.p")
        case $what in identical) ;; *) bad=1 ;; esac
        ratio theirs ours "$what"
    done
}

# repeat_text IN MB > OUT: the MMAP lines once, the samples until MB
repeat_text() {
    perl -e '
        my ($f, $mb) = @ARGV; open(F, "<", $f) or die; my ($mm, $body) = ("", "");
        while (<F>) { if (/PERF_RECORD_MMAP/) { $mm .= $_ } else { $body .= $_ } }
        print $mm; my $n = int($mb * 1048576 / length($body)) + 1; print $body for 1 .. $n;' "$1" "$2"
}

cs_bench() {
    I=$TOP/tests/data/llvm-profgen-inputs
    SELF=$W/fpb/lbr2prof
    n=$(awk -v s="$(wc -c < "$W/self.data" 2>/dev/null || echo 1)" 'BEGIN { printf "%d", 100 * 1048576 / s + 1 }')
    if [ ! -s "$W/selfbig.data.txt" ] || [ ! -x "$SELF" ]; then
        echo "cs: building lbr2prof with clang-19 -fno-omit-frame-pointer and recording it"
        make -C "$TOP" -j2 BUILD="$W/fpb" CC=clang-19 CFLAGS=-fno-omit-frame-pointer \
            "$W/fpb/lbr2prof" >/dev/null 2>&1
        "$L" record --simulate -c 100 --seed 1 -o "$W/self.data" -- "$SELF" \
            --perfscript="$I/cs-preinline-cost.perfscript" --binary "$I/cs-preinline-cost.perfbin" \
            --use-dwarf-correlation -o "$W/job.prof" >/dev/null 2>&1
        n=$(awk -v s="$(wc -c < "$W/self.data")" 'BEGIN { printf "%d", 100 * 1048576 / s + 1 }')
        "$L" script -F ip,brstack --show-mmap-events --raw-addresses "$W/self.data" >"$W/self.txt"
        repeat_text "$W/self.txt" 100 >"$W/selfbig.txt"
        "$W/perf-replicate" "$W/self.data" "$n" "$W/selfbig.data" >/dev/null 2>&1
        "$L" script -F ip,brstack --show-mmap-events --raw-addresses "$W/selfbig.data" >"$W/selfbig.data.txt"
        rmk "$W/self.txt"
    fi
    echo "(a) lbr2prof's own trace as text: $(wc -c < "$W/selfbig.txt") bytes"
    "$L" --perfscript="$W/selfbig.txt" --binary "$SELF" -o /dev/null >/dev/null 2>&1
    $PG --perfscript="$W/selfbig.txt" --binary="$SELF" --output=/dev/null >/dev/null 2>&1
    cs_pair "(a) text" "$SELF" --perfscript="$W/selfbig.txt" --perfscript="$W/selfbig.txt"
    rmk "$W/selfbig.txt"
    echo "(b) the same as perf.data: $(wc -c < "$W/selfbig.data") bytes ($n copies;" \
        "its script text $(wc -c < "$W/selfbig.data.txt") bytes for llvm-profgen)"
    cs_pair "(b) perf.data vs llvm-profgen on its text" "$SELF" "$W/selfbig.data" \
        --perfscript="$W/selfbig.data.txt"
    echo " (b) perf.data vs llvm-profgen --perfdata, default options"
    measure ours "lbr2prof" "$L" "$W/selfbig.data" --binary "$SELF" --no-repair-frames -o "$W/o.l"
    measure theirs "llvm-profgen-19 --perfdata" $PG --perfdata="$W/selfbig.data" --binary="$SELF" --output="$W/o.p"
    if same_prof "$W/o.l" "$W/o.p"; then w=identical; else w="different (perf 6.1's script text, docs/cs-profile.md)"; fi
    ratio theirs ours "$w"
    rmk "$W/selfbig.data" "$W/selfbig.data.txt"

    if [ ! -s "$W/cg.txt" ]; then
        perl "$TOP/scripts/gen-callgraph.pl" 1500 1 >"$W/cg.c"
        clang-19 -O2 -g -fno-omit-frame-pointer -o "$W/cg" "$W/cg.c"
        "$L" record --simulate -c 60 --seed 1 -o "$W/cg.data" -- "$W/cg" 3000 8 >/dev/null 2>&1
        "$L" script -F ip,brstack --show-mmap-events --raw-addresses "$W/cg.data" >"$W/cg.txt"
    fi
    echo "(c) 1,500-function program: perf.data $(wc -c < "$W/cg.data") bytes, text $(wc -c < "$W/cg.txt") bytes"
    cs_pair "(c) text" "$W/cg" --perfscript="$W/cg.txt" --perfscript="$W/cg.txt"
    cs_pair "(c) perf.data vs llvm-profgen on its text" "$W/cg" "$W/cg.data" --perfscript="$W/cg.txt"
}

case $MODE in
flat) flat_bench ;;
cs) cs_bench ;;
all) flat_bench; cs_bench ;;
esac
[ $bad -eq 0 ]
