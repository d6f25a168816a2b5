#!/bin/sh
# bench-cfi.sh [CALLS] - what CFI stacks cost: the default mode (the repair,
# CFI walks of the user stacks) against --no-repair-frames (llvm-profgen's
# behaviour, which never looks at user stacks) on the same perf.data, in
# the same run. scripts/gen-callgraph.pl's 1,500-function program (`cg
# CALLS 8`, default 1000) built with clang-19 -O2 -g
#   nofp:       without frame pointers, recorded with --user-stack=8192;
#   fp:         with -fno-omit-frame-pointer, --user-stack=8192;
#   fp-nostack: with frame pointers, no user stacks (no CFI walk at all:
#               what the intake's new check costs where it cannot apply).
# Each command runs BENCH_RUNS times (default 5), the two modes alternating,
# after one untimed warm-up (page cache); prints the medians of wall and
# CPU (user+sys) time and the ratios default / --no-repair-frames. With
# BENCH_BASE=path/to/an/older/lbr2prof its default mode is timed too, in
# the same alternation (what the change costs where the outputs differ:
# the older one has no CFI stacks).
# Run from a built tree (make -j2). Uses $TMPDIR (~1 GB).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
CALLS=${1:-1000}
RUNS=${BENCH_RUNS:-5}
L=$TOP/build/lbr2prof
W=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-bench-cfi.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
export TF="$W/t"                # /usr/bin/time's output, read by one()
[ -x "$L" ] || make -C "$TOP" -j2 >/dev/null
OPTS="--format=text --csspgo-preinliner=0 --gen-cs-nested-profile=0"

perl "$TOP/scripts/gen-callgraph.pl" 1500 1 >"$W/cg.c"
clang-19 -O2 -g -o "$W/cg-nofp" "$W/cg.c"
clang-19 -O2 -g -fno-omit-frame-pointer -o "$W/cg-fp" "$W/cg.c"
"$L" record --simulate -c 60 --seed 1 --user-stack=8192 -o "$W/nofp.data" -- "$W/cg-nofp" "$CALLS" 8 >/dev/null 2>&1
"$L" record --simulate -c 60 --seed 1 --user-stack=8192 -o "$W/fp.data" -- "$W/cg-fp" "$CALLS" 8 >/dev/null 2>&1
"$L" record --simulate -c 60 --seed 1 -o "$W/fp-nostack.data" -- "$W/cg-fp" "$CALLS" 8 >/dev/null 2>&1

# one timed run: "wall cpu" appended to $1
one() {
    out=$1; shift
    perl -MTime::HiRes=time -e '
        my $t0 = time; my $rc = system(@ARGV); my $w = time - $t0;
        open my $f, "<", $ENV{TF} or die; my ($u, $s) = split " ", <$f>;
        printf "%.3f %.3f\n", $w, $u + $s; exit($rc != 0)' \
        /usr/bin/time -o "$TF" -f "%U %S" "$@" >>"$out" 2>/dev/null
}

median() { # file column
    sort -n -k"$2" "$1" | awk -v c="$2" '{ v[NR] = $c } END { print v[int((NR + 1) / 2)] }'
}

for input in nofp fp fp-nostack; do
    bin=$W/cg-fp
    [ $input = nofp ] && bin=$W/cg-nofp
    : >"$W/def"; : >"$W/ref"; : >"$W/base"
    "$L" --perfdata="$W/$input.data" --binary="$bin" $OPTS -o "$W/o" >"$W/log" 2>&1
    "$L" --perfdata="$W/$input.data" --binary="$bin" $OPTS --no-repair-frames -o "$W/o" >/dev/null 2>&1
    i=0
    while [ $i -lt "$RUNS" ]; do
        one "$W/def" "$L" --perfdata="$W/$input.data" --binary="$bin" $OPTS -o "$W/o"
        one "$W/ref" "$L" --perfdata="$W/$input.data" --binary="$bin" $OPTS --no-repair-frames -o "$W/o"
        [ -z "${BENCH_BASE:-}" ] ||
            one "$W/base" "$BENCH_BASE" --perfdata="$W/$input.data" --binary="$bin" $OPTS -o "$W/o"
        i=$((i + 1))
    done
    dw=$(median "$W/def" 1); dc=$(median "$W/def" 2)
    rw=$(median "$W/ref" 1); rc=$(median "$W/ref" 2)
    cfi=$(sed -n 's/.*warning: \([0-9.]*%\)([0-9/]*) of samples had a call stack no recorded.*/\1/p' "$W/log")
    printf '%-11s %4s MB  default %6.3f s wall %6.3f s cpu  --no-repair-frames %6.3f s wall %6.3f s cpu  ratio %.2fx wall %.2fx cpu  (CFI stacks: %s)\n' \
        "$input" "$(( $(wc -c <"$W/$input.data") / 1048576 ))" "$dw" "$dc" "$rw" "$rc" \
        "$(echo "$dw $rw" | awk '{ print $1 / $2 }')" "$(echo "$dc $rc" | awk '{ print $1 / $2 }')" "${cfi:-none}"
    [ -z "${BENCH_BASE:-}" ] || printf '%-11s          %s: default %6.3f s wall %6.3f s cpu  ratio now/then %.2fx wall %.2fx cpu\n' \
        "" "$BENCH_BASE" "$(median "$W/base" 1)" "$(median "$W/base" 2)" \
        "$(echo "$dw $(median "$W/base" 1)" | awk '{ print $1 / $2 }')" \
        "$(echo "$dc $(median "$W/base" 2)" | awk '{ print $1 / $2 }')"
done
