#!/bin/sh
# bench-fleet.sh [SHARDS] - the fleet: `lbr2prof fleet` on 1 and 2 local
# workers, and `lbr2prof merge`'s throughput, on the large benchmark
# recording of scripts/bench.sh (c): scripts/gen-callgraph.pl's
# 1,500-function program, `cg 3000 8` recorded with `lbr2prof record
# --simulate -c 60 --seed 1` (~16k samples, ~84k contexts, 14 MB), split
# into SHARDS (default 16) perf.data files by scripts/perf-split.c (every
# mmap in each, the samples in consecutive runs).
#
# Printed, medians of BENCH_RUNS runs (default 3), wall time to the
# millisecond and CPU time of every process (user+sys, children included):
#   - the reference: one `lbr2prof` run over the SHARDS files (checked equal
#     to the run over the unsplit recording);
#   - `lbr2prof fleet --local-workers 1` and `--local-workers 2` (fan-in 4),
#     outputs checked equal to the reference; the wall ratio 1 worker /
#     2 workers, and each against the reference; then the same with every
#     shard waiting 1 s before its lbr2prof (no CPU: what the engine
#     overlaps when the machine's CPUs are not the limit);
#   - merge throughput: the SHARDS raw profiles (--skip-symbolization
#     --raw-header) summed by one `lbr2prof merge`, MB of raw profiles per
#     second of wall and of CPU time; the sum checked equal to the single
#     run's raw profile.
# The machine is shared: wall ratios move with the other load, CPU times
# less. BENCH_KEEP=DIR keeps the recording and shards in DIR for reruns.
# Run from a built tree (make -j2; BENCH_BUILD=DIR: another build folder
# of the tree, default build). Needs clang-19, perl, /usr/bin/python3 with
# python3-distributed.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=${BENCH_BUILD:-build}
L=$TOP/$B/lbr2prof
N=${1:-16}
RUNS=${BENCH_RUNS:-3}
/usr/bin/python3 -c "import distributed" 2> /dev/null ||
    { echo "bench-fleet.sh: /usr/bin/python3 lacks python3-distributed (scripts/install-deps.sh)"; exit 1; }
if [ -n "${BENCH_KEEP:-}" ]; then
    W=$BENCH_KEEP
    mkdir -p "$W"
else
    W=$(mktemp -d "${TMPDIR:-/tmp}/lbr2prof-bench-fleet.XXXXXX")
    trap 'rm -rf "$W"' EXIT INT TERM
fi
[ -x "$L" ] || make -C "$TOP" -j2 BUILD="$B" > /dev/null
cd "$W"
# shellcheck disable=SC2046
cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$TOP/include" -o perf-split "$TOP/scripts/perf-split.c" \
    "$TOP/$B/liblbr2prof.a" $(make -s -C "$TOP" print-ldlibs)
if [ ! -s cg.data ]; then
    perl "$TOP/scripts/gen-callgraph.pl" 1500 1 > cg.c
    clang-19 -O2 -g -fno-omit-frame-pointer -o cg cg.c
    "$L" record --simulate -c 60 --seed 1 -o cg.data -- ./cg 3000 8 > /dev/null 2>&1
fi
if [ ! -s "shard.$((N - 1)).data" ]; then
    rm -f shard.*.data
    ./perf-split cg.data "$N" shard
fi
SHARDS=$(i=0; while [ $i -lt "$N" ]; do printf 'shard.%d.data ' $i; i=$((i + 1)); done)
echo "recording: $(wc -c < cg.data) bytes; $N shards of $(($(cat shard.*.data | wc -c) / N)) bytes on average"

# timed LABEL CMD...: runs CMD RUNS times; prints and sets T_WALL, T_CPU
# (the run with the median wall time)
timed() {
    label=$1
    shift
    : > runs
    i=0
    while [ $i -lt "$RUNS" ]; do
        perl -MTime::HiRes=time -e '
            my $t0 = time; my $rc = system { $ARGV[0] } @ARGV; my $w = time - $t0;
            my ($u, $s, $cu, $cs) = times;
            exit 1 if $rc; printf "%.4f %.3f\n", $w, $cu + $cs' "$@" >> runs 2> /dev/null ||
            { echo "bench-fleet.sh: $label failed: $*"; exit 1; }
        i=$((i + 1))
    done
    set -- $(sort -n runs | sed -n "$(((RUNS + 1) / 2))p")
    T_WALL=$1 T_CPU=$2
    printf '%-34s %8.3f s wall %8.3f s CPU\n' "$label:" "$T_WALL" "$T_CPU"
}
ratio() { perl -e 'printf "%.2f", $ARGV[0] / $ARGV[1]' "$1" "$2"; }
quiet() { "$@" 2> /dev/null; }

# shellcheck disable=SC2086
timed "one lbr2prof run over $N shards" sh -c "exec '$L' $SHARDS --binary=cg -o single.prof 2> /dev/null"
single=$T_WALL
quiet "$L" cg.data --binary=cg -o whole.prof
cmp -s single.prof whole.prof && echo "  = the run over the unsplit recording" ||
    { echo "bench-fleet.sh: the $N shards do not give the recording's profile"; exit 1; }
for k in 1 2; do
    # shellcheck disable=SC2086
    timed "lbr2prof fleet, $k worker(s)" sh -c \
        "exec '$L' fleet --local-workers $k --fan-in 4 --binary=cg -o fleet$k.prof $SHARDS 2> fleet$k.log"
    eval "fleet$k=\$T_WALL"
    cmp -s fleet$k.prof single.prof || { echo "bench-fleet.sh: fleet ($k) output differs"; exit 1; }
done
# shellcheck disable=SC2154
echo "wall ratio 1 worker / 2 workers: $(ratio "$fleet1" "$fleet2")x; 2 workers vs one run: $(ratio "$single" "$fleet2")x (outputs identical)"

# The same with every shard waiting a second first (no CPU): what the
# engine overlaps when the CPUs are not the limit (on a shared machine the
# lines above are bound by the other load).
printf '#!/bin/sh\ncase "$1" in merge | --unsymbolized-profile=*) ;; *) sleep 1 ;; esac\nexec "%s" "$@"\n' \
    "$L" > wait-lbr2prof.sh
chmod +x wait-lbr2prof.sh
for k in 1 2; do
    # shellcheck disable=SC2086
    timed "fleet, $k worker(s), 1 s wait a shard" sh -c \
        "exec '$L' fleet --local-workers $k --fan-in 4 --lbr2prof='$W/wait-lbr2prof.sh' --binary=cg -o wait$k.prof $SHARDS 2> wait$k.log"
    eval "wait$k=\$T_WALL"
    cmp -s wait$k.prof single.prof || { echo "bench-fleet.sh: fleet ($k, waiting) output differs"; exit 1; }
done
# shellcheck disable=SC2154
echo "with a 1 s wait a shard: wall ratio 1 worker / 2 workers: $(ratio "$wait1" "$wait2")x"

i=0
for s in $SHARDS; do
    quiet "$L" "$s" --binary=cg --skip-symbolization --raw-header -o "shard.$i.raw"
    i=$((i + 1))
done
# shellcheck disable=SC2086
quiet "$L" $SHARDS --binary=cg --skip-symbolization --raw-header -o single.raw
bytes=$(cat shard.*.raw | wc -c)
timed "lbr2prof merge of $N raw profiles" sh -c "exec '$L' merge -o merged.raw shard.*.raw"
cmp -s merged.raw single.raw || { echo "bench-fleet.sh: merged raw differs from the single run's"; exit 1; }
echo "merge: $bytes bytes of raw profiles ($(($(wc -c < merged.raw) / 1024)) KiB out): $(perl -e \
    'printf "%.1f MB/s wall, %.1f MB/s CPU", $ARGV[0] / 1e6 / $ARGV[1], $ARGV[0] / 1e6 / $ARGV[2]' \
    "$bytes" "$T_WALL" "$T_CPU") (sum = the single run's raw profile)"
