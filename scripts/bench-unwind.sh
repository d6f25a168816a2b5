#!/bin/sh
# bench-unwind.sh [MB] - the virtual unwinder (`lbr2prof ... --skip-symbolization`
# on hybrid samples) against llvm-profgen-19, on ~MB (default 100) of perf
# script, two ways:
#   replicated: noinline-cs-noprobe.perfscript and
#     callback-external-addr.perfscript copied until MB (a handful of
#     distinct samples repeated: aggregation and text parsing dominate);
#   distinct: tests/workloads/kernel.c built now with clang-19, recorded
#     with `lbr2prof record --simulate -c 50`, printed with `lbr2prof script
#     --raw-addresses`, then each sample repeated with its 0..31 newest LBR
#     entries dropped and its leaf moved to the new newest target (every
#     variant a distinct sample to unwind), until MB;
#     and the same trace as perf.data (lbr2prof reads it directly;
#     llvm-profgen would run perf script, whose perf 6.1 output breaks it).
# Prints time (wall and user CPU) and peak memory from /usr/bin/time -v, and
# checks that the outputs are identical (--no-repair-frames, as llvm-profgen).
# Run from a built tree (make -j2). Uses $TMPDIR (default /tmp).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
MB=${1:-100}
L=$TOP/build/lbr2prof
IN=$TOP/tests/data/llvm-profgen-inputs
W=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT INT TERM
[ -x "$L" ] || make -C "$TOP" -j2 >/dev/null

measure() { # label command...
    label=$1
    shift
    /usr/bin/time -v "$@" >/dev/null 2>"$W/time"
    awk -v l="$label" '/Elapsed \(wall/ { w = $NF } /User time/ { u = $NF }
        /Maximum resident/ { m = $NF }
        END { printf "  %-34s %7s wall %6s s user %8d KB max RSS\n", l, w, u, m }' "$W/time"
}

# replicate FILE: the MMAP lines once, the rest until MB
replicate() {
    perl -e '
        my ($f, $mb) = @ARGV; open(F, "<", $f) or die; my ($mm, $body) = ("", "");
        while (<F>) { next if m{^//}; if (/PERF_RECORD_MMAP/) { $mm .= $_ } else { $body .= $_ } }
        print $mm; my $n = int($mb * 1048576 / length($body)) + 1; print $body for 1 .. $n;' "$1" "$MB"
}

compare() { # name script binary
    measure "llvm-profgen-19" llvm-profgen-19 --perfscript="$2" --binary="$3" \
        --skip-symbolization --output="$W/ref.raw"
    measure "lbr2prof" "$L" --perfscript="$2" --binary="$3" --skip-symbolization \
        --no-repair-frames --output="$W/my.raw"
    if cmp -s "$W/ref.raw" "$W/my.raw"; then echo "  outputs identical"; else echo "  OUTPUTS DIFFER"; fi
}

for n in noinline-cs-noprobe callback-external-addr; do
    replicate "$IN/$n.perfscript" >"$W/$n.txt"
    echo "replicated $n: $(wc -c <"$W/$n.txt") bytes"
    compare $n "$W/$n.txt" "$IN/$n.perfbin"
done

clang-19 -O2 -g -fno-omit-frame-pointer "$TOP/tests/workloads/kernel.c" -o "$W/kernel"
"$L" record --simulate -c 50 --seed 3 -o "$W/kernel.data" -- "$W/kernel" 300 >/dev/null 2>&1
"$L" script -F ip,brstack --show-mmap-events --raw-addresses "$W/kernel.data" >"$W/kernel.script"
perl -e '
    my ($f, $mb) = @ARGV; open(F, "<", $f) or die; my (@mm, @s, $st);
    while (<F>) {
        if (/PERF_RECORD_MMAP/) { push @mm, $_; next }
        if (/^\t/) { $st .= $_; next }
        if (/^ 0x/) { push @s, [$st, $_]; $st = ""; next }
    }
    print @mm; my ($out, $k) = (0, 0);
    while ($out < $mb * 1048576) {
        for my $x (@s) {
            my @t = split " ", $x->[1]; next if @t <= $k;
            my @r = @t[$k .. $#t]; my ($to) = $r[0] =~ m{^0x[0-9a-f]+/0x([0-9a-f]+)};
            my $stk = $x->[0]; $stk =~ s/^\t\s*[0-9a-f]+/sprintf("\t%16s", $to)/e;
            my $line = "\n" . $stk . " " . join("  ", @r) . "\n"; print $line; $out += length $line;
        }
        $k = ($k + 1) % 32;
    }' "$W/kernel.script" "$MB" >"$W/distinct.txt"
echo "distinct kernel.c samples: $(wc -c <"$W/distinct.txt") bytes"
compare distinct "$W/distinct.txt" "$W/kernel"
echo "kernel.c trace as perf.data ($(wc -c <"$W/kernel.data") bytes; its script: $(wc -c <"$W/kernel.script") bytes)"
measure "llvm-profgen-19 (on the script)" llvm-profgen-19 --perfscript="$W/kernel.script" \
    --binary="$W/kernel" --skip-symbolization --output="$W/ref.raw"
measure "lbr2prof (perf.data)" "$L" "$W/kernel.data" --binary="$W/kernel" \
    --skip-symbolization --no-repair-frames --output="$W/my.raw"
if cmp -s "$W/ref.raw" "$W/my.raw"; then echo "  outputs identical"; else echo "  OUTPUTS DIFFER"; fi
