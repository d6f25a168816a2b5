#!/bin/sh
# pgo-bench.sh [PROGRAM...] - the end-to-end PGO benchmark: what a profile
# buys the program compiled with it (docs/pgo-bench.md has the method).
#
# For each program (default: sqlite lbr2prof json) and each build flavor
# (PGO_FLAVORS, default "line probe"):
#   1. build it with clang-19 -O2 -g -fno-omit-frame-pointer
#      -fdebug-info-for-profiling (the "none" build; the probe flavor adds
#      -fpseudo-probe-for-profiling: CSSPGO's pseudo probes);
#   2. record its training run with `lbr2prof record --simulate`;
#   3. make CS profiles from that one recording: llvm-profgen-22 on
#      `lbr2prof script --raw-addresses` text ("profgen"; its defaults: a
#      probe CS profile for the probe build), lbr2prof's default mode
#      ("default"), `--drop-unknown-callers` ("drop": the default mode
#      before the unwinder kept truncated contexts; line flavor only unless
#      asked) and `--no-repair-frames` ("norepair": llvm-profgen's
#      behaviour, the calibration: a line under the table says whether its
#      profile and build are profgen's, or for probes, if not, whether its
#      profile is llvm-profgen-22 --infer-missing-frames=0's; "(!)" if not);
#   4. rebuild with each (-fprofile-sample-use, and the flavor's flags),
#      check that every build prints the same output as "none" on the
#      evaluation input (a longer, different input than the training run:
#      real PGO trains on one run and ships for others);
#   5. time every build of both flavors on the evaluation input: PGO_PAIRS
#      rounds (default 30), each round runs every build once in a rotated
#      order, so drift of a shared machine's load hits all builds alike;
#      per round the ratio of two builds' times; printed: the median ratio
#      and its interquartile range (IQR), for task-clock (CPU time of the
#      process, perf stat) and wall time;
#   6. optionally (PGO_CALLGRIND=1, the default) instruction counts of
#      each build on a smaller evaluation input under callgrind: exact and
#      repeatable on a loaded machine, but blind to what PGO mostly buys
#      (branch layout, i-cache), so a second column, not the verdict.
#
# Programs:
#   sqlite   SQLite amalgamation from the better-sqlite3 npm package (12.x,
#            deps/sqlite3/sqlite3.c) + scripts/pgo/sqlite-work.c (SQL
#            workload: inserts, joins, grouping, sorting, windows, CTEs);
#            train 600 rows seed 1, evaluate 20000 rows seed 2
#   lbr2prof this tree's lbr2prof making a CS profile from a perf.data of a
#            scripts/gen-callgraph.pl program: train on a 500-function
#            program's run (seed 2, `cgt 100 8`, 671 samples), evaluate on
#            the 1,500-function program's (seed 1, `cg 1000 8`, ~5,500
#            samples)
#   json     nlohmann/json (Debian nlohmann-json3-dev, header-only C++) +
#            scripts/pgo/json-work.cpp: parse, query, modify, dump, CBOR,
#            MessagePack, diff, patch; train 80 records, evaluate 8000
#
# Knobs (environment): PGO_PAIRS (rounds, default 30; 0 reprints the last
# run's timings with what else changed), PGO_SEEDS (the recordings to
# train on, default "1": the training run recorded with `--seed N` for
# each N; each seed has its own recording, profiles and builds, all timed
# in the same rounds, and the table gives each variant's ratio to profgen
# per seed and across seeds: one recording's sampling can land a build on
# a layout that says nothing about the profile), PGO_CALLGRIND
# (0/1), PGO_DIR (cache, default build-pgo/ in the tree), PGO_NICE
# (niceness of everything, default 10), PGO_FLAVORS (default "line
# probe"), PGO_VARIANTS (line builds' profiles, default "profgen default
# drop norepair"), PGO_PROBE_VARIANTS (probe builds', default "profgen
# default norepair"), PGO_LBR2PROF (the lbr2prof that records and
# makes profiles, default build/lbr2prof, which make brings up to date).
# Cached under PGO_DIR: sources, builds, recordings, profiles (each keyed
# by what it is made from: the compiler flags and the profile's digest, the
# binary's digest and the workload, the profiling tool's digest). Delete a
# program's folder to start it anew. Needs the packages of
# `scripts/install-deps.sh pgo` (installed if missing).
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
D=${PGO_DIR:-$TOP/build-pgo}
PAIRS=${PGO_PAIRS:-30}
SEEDS=${PGO_SEEDS:-1}
CALLGRIND=${PGO_CALLGRIND:-1}
NICE="nice -n ${PGO_NICE:-10}"
FLAVORS=${PGO_FLAVORS:-line probe}
VARIANTS=${PGO_VARIANTS:-profgen default drop norepair}
PVARIANTS=${PGO_PROBE_VARIANTS:-profgen default norepair}
PROGRAMS=${*:-sqlite lbr2prof json}
CFLAGS_BASE="-O2 -g -fno-omit-frame-pointer -fdebug-info-for-profiling"
CC=clang-19
CXX=clang++-19
PG=llvm-profgen-22
PD=llvm-profdata-22

"$TOP/scripts/install-deps.sh" pgo
# the tree's lbr2prof is brought up to date (a stale one after a pull or
# merge would measure old code); PGO_LBR2PROF is taken as it is
L=${PGO_LBR2PROF:-}
if [ -z "$L" ]; then
    L=$TOP/build/lbr2prof
    $NICE make -C "$TOP" -j2 build/lbr2prof >/dev/null
fi
[ -x "$L" ] || { echo "pgo-bench: no lbr2prof at $L" >&2; exit 1; }
mkdir -p "$D"
log() { echo "pgo-bench: $*" >&2; }
digest() { cat "$@" | md5sum | cut -c1-16; }

# ---- programs: fetch, build, workloads ---------------------------------------
# Each program P defines P_fetch (sources into $S), P_build OUT CFLAGS,
# P_train (the recorded command's arguments), P_eval and P_cg (the timed
# and the callgrind run's arguments, writing to stdout or to $OUTF) and
# P_notes (lines under its table: what else decides its builds' times).

sqlite_fetch() {
    [ -f "$S/package/deps/sqlite3/sqlite3.c" ] && return 0
    log "sqlite: fetching better-sqlite3@12 (npm pack)"
    rm -rf "$S" && mkdir -p "$S"
    (cd "$S" && npm pack --silent better-sqlite3@12 >npm.log 2>&1 && tar xzf better-sqlite3-*.tgz) ||
        { log "npm pack better-sqlite3@12 failed: $(tail -1 "$S/npm.log")"; exit 1; }
    [ -f "$S/package/deps/sqlite3/sqlite3.c" ] ||
        { log "better-sqlite3@12 has no deps/sqlite3/sqlite3.c"; exit 1; }
}
sqlite_srcdigest() { digest "$S/package/deps/sqlite3/sqlite3.c" "$TOP/scripts/pgo/sqlite-work.c"; }
sqlite_build() { # OUT CFLAGS...
    o=$1; shift
    $NICE $CC "$@" -DSQLITE_THREADSAFE=0 -DSQLITE_OMIT_LOAD_EXTENSION \
        -I"$S/package/deps/sqlite3" "$TOP/scripts/pgo/sqlite-work.c" \
        "$S/package/deps/sqlite3/sqlite3.c" -o "$o" -lm
}
sqlite_train() { echo "600 1"; }
sqlite_period() { echo 37; }
sqlite_eval() { echo "20000 2"; }
sqlite_cg() { echo "5000 2"; }
# a build's time hangs first on whether the register allocator kept the
# interpreter's pOp in a register at the opcode dispatch (a spill costs
# ~15%; docs/pgo-bench.md): one line naming the builds that spilled it
sqlite_notes() {
    # shellcheck disable=SC2086
    rc=0
    out=$(cd "$C/bin" && perl "$TOP/scripts/pgo/vdbe-dispatch.pl" $BUILDS) || rc=$?
    case $rc in
    0) echo "$P: sqlite3VdbeExec's dispatch keeps pOp in a register in every build" ;;
    1) echo "$P: sqlite3VdbeExec's dispatch spills pOp (~15% slower, not the profile's doing) in: $(echo "$out" | grep spilled | sed 's/: pOp spilled (reloaded from \(.*\))/ (\1)/' | tr '\n' ' ')" ;;
    *) echo "$P: sqlite3VdbeExec's dispatch not found by scripts/pgo/vdbe-dispatch.pl" ;;
    esac
}

json_fetch() {
    [ -f /usr/include/nlohmann/json.hpp ] || { log "json: no /usr/include/nlohmann/json.hpp"; exit 1; }
}
json_srcdigest() { digest /usr/include/nlohmann/json.hpp "$TOP/scripts/pgo/json-work.cpp"; }
json_build() {
    o=$1; shift
    $NICE $CXX "$@" "$TOP/scripts/pgo/json-work.cpp" -o "$o"
}
json_train() { echo "80 1"; }
json_period() { echo 37; }
json_eval() { echo "8000 2"; }
json_cg() { echo "1500 2"; }
json_notes() { :; }

# lbr2prof: the tree's sources (copied, so a build does not race with the
# developer's), built by the Makefile with clang-19 and the bench's flags
lbr2prof_fetch() {
    mkdir -p "$S"
    (cd "$TOP" && tar cf - Makefile include src) | (cd "$S" && rm -rf include src && tar xf -)
    # its inputs, recordings of scripts/gen-callgraph.pl programs (many
    # contexts, inline frames, recursion), made once. Training: a
    # 500-function program (seed 2) run long enough for lbr2prof to spend
    # its time where the evaluation does (unwinding, contexts, the
    # generator and pre-inliner; not start-up): 671 samples, ~420 M
    # instructions of lbr2prof to record. Evaluation and callgrind: the
    # 1,500-function program (seed 1), a long and a shorter run.
    if ! [ -f "$S/cg.data" ] || ! [ -f "$S/cg-small.data" ] || ! [ -f "$S/cgt.data" ]; then
        log "lbr2prof: recording its inputs (gen-callgraph.pl 500 2: cgt 100 8; 1500 1: cg 1000 8 and cg 250 8)"
        perl "$TOP/scripts/gen-callgraph.pl" 500 2 >"$S/cgt.c"
        perl "$TOP/scripts/gen-callgraph.pl" 1500 1 >"$S/cg.c"
        $NICE $CC -O2 -g -fno-omit-frame-pointer "$S/cgt.c" -o "$S/cgt"
        $NICE $CC -O2 -g -fno-omit-frame-pointer "$S/cg.c" -o "$S/cg"
        $NICE "$L" record --simulate -c 60 --seed 3 -o "$S/cgt.data" -- "$S/cgt" 100 8 >/dev/null 2>&1
        $NICE "$L" record --simulate -c 60 --seed 1 -o "$S/cg-small.data" -- "$S/cg" 250 8 >/dev/null 2>&1
        $NICE "$L" record --simulate -c 60 --seed 1 -o "$S/cg.data.tmp" -- "$S/cg" 1000 8 >/dev/null 2>&1
        mv "$S/cg.data.tmp" "$S/cg.data"
    fi
}
lbr2prof_srcdigest() { (cd "$S" && find Makefile include src -type f | LC_ALL=C sort | xargs cat) | md5sum | cut -c1-16; }
lbr2prof_build() {
    o=$1; shift
    b=$(dirname "$o")/make
    rm -rf "$b"
    $NICE make -s -C "$S" -j2 BUILD="$b" CC=$CC OPT= CFLAGS="$* -Wno-error" "$b/lbr2prof" >/dev/null &&
        mv "$b/lbr2prof" "$o" && rm -rf "$b"
}
lbr2prof_train() { echo "$S/cgt.data --binary $S/cgt -o \$OUTF"; }
lbr2prof_period() { echo 211; }
lbr2prof_eval() { echo "$S/cg.data --binary $S/cg -o \$OUTF"; }
lbr2prof_cg() { echo "$S/cg-small.data --binary $S/cg -o \$OUTF"; }
lbr2prof_notes() { :; }

# ---- the pipeline --------------------------------------------------------------

# flavors: a build's name is its variant, prefixed "probe-" in the probe
# flavor; each flavor has its own "none" build, recording and profiles
fl_pre() { case $1 in probe) echo probe- ;; *) echo ;; esac; }
fl_flags() {
    case $1 in
    probe) echo "$CFLAGS_BASE -fpseudo-probe-for-profiling" ;;
    *) echo "$CFLAGS_BASE" ;;
    esac
}
fl_variants() { case $1 in probe) echo "$PVARIANTS" ;; *) echo "$VARIANTS" ;; esac; }
# seeds: seed 1 keeps the names of a bench without seeds (rec/, profgen);
# seed N another recording and its profiles and builds (rec-sN/,
# profgen-sN)
sfx() { [ "$1" = 1 ] || echo "-s$1"; }
fl_rec() { case $1 in probe) echo "$C/rec-probe$(sfx "$2")" ;; *) echo "$C/rec$(sfx "$2")" ;; esac; }

# run_args FUNC OUTF: the arguments of a workload, $OUTF put in
# shellcheck disable=SC2034 # OUTF is read by the eval
run_args() { OUTF=$2; eval "echo $($1)"; }

# build NAME FLAVOR [PROFILE]: $C/bin/NAME, rebuilt when its key changes
build() {
    name=$1 prof=${3:-}
    flags=$(fl_flags "$2")
    [ -n "$prof" ] && flags="$flags -fprofile-sample-use=$prof"
    key="$($CC --version | head -1) $flags $(${P}_srcdigest) ${prof:+$(digest "$prof")}"
    if [ -x "$C/bin/$name" ] && [ "$(cat "$C/bin/$name.key" 2>/dev/null)" = "$key" ]; then
        return 0
    fi
    log "$P: building $name"
    rm -f "$C/bin/$name" "$C/bin/$name.key"
    # shellcheck disable=SC2086
    ${P}_build "$C/bin/$name" $flags 2>"$C/bin/$name.log" ||
        { log "$P: build $name failed, see $C/bin/$name.log"; tail -5 "$C/bin/$name.log" >&2; exit 1; }
    echo "$key" >"$C/bin/$name.key"
}

# record FLAVOR SEED: the training run of the flavor's "none" build,
# sampled with --seed SEED, and its perf script text, in $(fl_rec FLAVOR
# SEED)
record() {
    R=$(fl_rec "$1" "$2")
    none=$C/bin/$(fl_pre "$1")none
    period=$(${P}_period)
    # (seed 1's key is the key of the bench before seeds: its cache holds)
    key="$(digest "$none") -c $period $(${P}_train)"
    [ "$2" = 1 ] || key="$key --seed $2"
    if [ -f "$R/perf.data" ] && [ "$(cat "$R/key" 2>/dev/null)" = "$key" ]; then
        return 0
    fi
    rm -rf "$R" && mkdir -p "$R"
    log "$P: recording the training run of $(fl_pre "$1")none (-c $period --seed $2)"
    # shellcheck disable=SC2046
    $NICE "$L" record --simulate -c "$period" --seed "$2" -o "$R/perf.data" -- \
        "$none" $(run_args ${P}_train "$R/train.out") >"$R/train.stdout" 2>"$R/record.log" ||
        { log "$P: recording failed"; tail -3 "$R/record.log" >&2; exit 1; }
    grep 'lbr2prof record' "$R/record.log" >&2 || true
    $NICE "$L" script -F ip,brstack --show-mmap-events --raw-addresses "$R/perf.data" >"$R/script.txt"
    echo "$key" >"$R/key"
}

# profile FLAVOR VARIANT SEED: $C/prof/NAME.prof (extbinary, for clang),
# .txt (text, to read), .err (the tool's warnings, with
# --show-detailed-warning) for the build NAME (the variant,
# flavor-prefixed, seed-suffixed), from the flavor's recording of its
# "none" build with that seed
profile() {
    R=$(fl_rec "$1" "$3") v=$2
    none=$C/bin/$(fl_pre "$1")none
    name=$(fl_pre "$1")$v$(sfx "$3")
    key="$(cat "$R/key") $(digest "$L") $($PG --version | grep -i version | head -1)"
    if [ -f "$C/prof/$name.prof" ] && [ "$(cat "$C/prof/$name.key" 2>/dev/null)" = "$key" ]; then
        return 0
    fi
    mkdir -p "$C/prof"
    log "$P: profile $name"
    out=$C/prof/$name.prof
    err=$C/prof/$name.err
    t0=$(date +%s.%N)
    case $v in
    profgen) $NICE $PG --perfscript="$R/script.txt" --binary="$none" \
        --show-detailed-warning --output="$out" >/dev/null 2>"$err" ;;
    default) $NICE "$L" "$R/perf.data" --binary="$none" \
        --show-detailed-warning --output="$out" >/dev/null 2>"$err" ;;
    drop) $NICE "$L" "$R/perf.data" --binary="$none" --drop-unknown-callers \
        --show-detailed-warning --output="$out" >/dev/null 2>"$err" ;;
    norepair) $NICE "$L" "$R/perf.data" --binary="$none" --no-repair-frames \
        --show-detailed-warning --output="$out" >/dev/null 2>"$err" ;;
    *) log "unknown variant $v (profgen default drop norepair)"; exit 2 ;;
    esac || { log "$P: profile $name failed"; tail -3 "$err" >&2; exit 1; }
    echo "$t0 $(date +%s.%N)" | awk '{printf "%.1f\n", $2 - $1}' >"$C/prof/$name.secs"
    $PD merge --sample --text "$out" -o "$C/prof/$name.txt"
    echo "$key" >"$C/prof/$name.key"
}

# samecode A B: do two builds hold the same code? The whole file, else its
# .text (the extbinary's metadata order, which need not be llvm-profgen's,
# reaches a probe build's .pseudo_probe section and so its build-id)
samecode() {
    if cmp -s "$1" "$2"; then echo "the same binary"; return; fi
    objcopy -O binary --only-section=.text "$1" "$1.text.tmp"
    objcopy -O binary --only-section=.text "$2" "$2.text.tmp"
    if cmp -s "$1.text.tmp" "$2.text.tmp"; then
        echo "the same code (.text; other sections differ)"
    else
        echo "different code (!)"
    fi
    rm -f "$1.text.tmp" "$2.text.tmp"
}

# calibrate FLAVOR SEED: --no-repair-frames must reproduce llvm-profgen. One
# line to $C/calib.txt: is the norepair profile profgen's (same text), and
# so its build (same code)? For probes, where it is not, also against
# llvm-profgen-22 --infer-missing-frames=0: llvm-profgen 22 infers a probe
# CS profile's missing tail-call frames by default, and an lbr2prof that
# does not must equal that run instead (either one is the calibration)
calibrate() {
    pre=$(fl_pre "$1") R=$(fl_rec "$1" "$2") s=$(sfx "$2")
    case " $(fl_variants "$1") " in *" profgen "*) ;; *) return 0 ;; esac
    case " $(fl_variants "$1") " in *" norepair "*) ;; *) return 0 ;; esac
    a=$C/prof/${pre}norepair$s.txt
    if cmp -s "$a" "$C/prof/${pre}profgen$s.txt"; then
        same=$(samecode "$C/bin/${pre}norepair$s" "$C/bin/${pre}profgen$s")
        echo "$P $1 seed $2: calibration: norepair's profile = profgen's (identical text), $same"
        return 0
    fi
    msg="$P $1 seed $2: calibration: norepair's profile differs from profgen's"
    if [ "$1" = probe ]; then
        n=$C/prof/${pre}profgen-noinfer$s
        key="$(cat "$C/prof/${pre}profgen$s.key")"
        if ! [ -f "$n.txt" ] || [ "$(cat "$n.key" 2>/dev/null)" != "$key" ]; then
            rm -f "$n.txt" "$n.key"
            if $NICE $PG --perfscript="$R/script.txt" --binary="$C/bin/${pre}none" \
                --infer-missing-frames=0 --output="$n.prof" >/dev/null 2>"$n.err" &&
                $PD merge --sample --text "$n.prof" -o "$n.txt"; then
                echo "$key" >"$n.key"
            else
                log "$P: $PG --infer-missing-frames=0 failed, see $n.err"
            fi
        fi
        if ! [ -f "$n.key" ]; then
            msg="$msg; llvm-profgen-22 --infer-missing-frames=0 failed (!)"
        elif cmp -s "$a" "$n.txt"; then
            msg="$msg (llvm-profgen-22 infers missing frames) and = llvm-profgen-22 --infer-missing-frames=0's (identical text)"
        else
            msg="$msg, and from llvm-profgen-22 --infer-missing-frames=0's (!)"
        fi
    else
        msg="$msg (!)"
    fi
    echo "$msg"
}

# check: every build's output on the evaluation input equals "none"'s
check() {
    mkdir -p "$C/out"
    for b in $BUILDS; do
        # shellcheck disable=SC2046
        "$C/bin/$b" $(run_args ${P}_eval "$C/out/$b.file") >"$C/out/$b.stdout" 2>/dev/null ||
            { log "$P: $b failed on the evaluation input"; exit 1; }
        [ -f "$C/out/$b.file" ] && cat "$C/out/$b.file" >>"$C/out/$b.stdout"
        cmp -s "$C/out/none.stdout" "$C/out/$b.stdout" ||
            { log "$P: $b's output differs from the build without profile"; exit 1; }
    done
}

# timing: PAIRS rounds, every build once a round, order rotated
timing() {
    : >"$C/times.tsv"
    # shellcheck disable=SC2086
    set -- $BUILDS
    n=$#
    r=0
    while [ $r -lt "$PAIRS" ]; do
        i=0
        while [ $i -lt $n ]; do
            k=$(( (i + r) % n + 1 ))
            eval "b=\${$k}"
            # shellcheck disable=SC2046
            $NICE perf stat -x, -e task-clock,duration_time -o "$C/stat.txt" -- \
                "$C/bin/$b" $(run_args ${P}_eval "$C/out/t.file") >/dev/null 2>&1 ||
                { log "$P: timed run of $b failed"; exit 1; }
            awk -F, -v r=$r -v b=$b '$3 == "task-clock" { t = $1 } $3 == "duration_time" { w = $1 / 1e6 }
                END { printf "%d\t%s\t%.3f\t%.3f\n", r, b, t, w }' "$C/stat.txt" >>"$C/times.tsv"
            i=$((i + 1))
        done
        r=$((r + 1))
    done
}

# instructions: callgrind's count of each build on the callgrind input
# (a copy without debug info: valgrind 3.19 cannot read clang-19's DWARF 5)
instructions() {
    for b in $BUILDS; do
        key="$(digest "$C/bin/$b") $(${P}_cg)"
        if ! [ -f "$C/bin/$b.ir" ] || [ "$(cat "$C/bin/$b.irkey" 2>/dev/null)" != "$key" ]; then
            objcopy --strip-debug "$C/bin/$b" "$C/bin/$b.nodebug"
            # shellcheck disable=SC2046
            $NICE valgrind --tool=callgrind --callgrind-out-file=/dev/null "$C/bin/$b.nodebug" \
                $(run_args ${P}_cg "$C/out/cg.file") 2>"$C/bin/$b.cglog" >/dev/null ||
                { log "$P: callgrind run of $b failed"; exit 1; }
            sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$C/bin/$b.cglog" >"$C/bin/$b.ir"
            rm -f "$C/bin/$b.nodebug"
            echo "$key" >"$C/bin/$b.irkey"
        fi
    done
}

textsize() { size -A "$1" | awk '$1 == ".text" { print $2 }'; }
# total samples of a text profile: the sum of its top-level profiles' totals
proftotal() { awk -F: '/^[^ \t]/ { n = split($0, a, ":"); s += a[n - 1] } END { printf "%d\n", s }' "$1"; }
# contexts the pre-inliner inlined: call-site profiles nested in others
profinlined() { grep -cE '^ +[0-9]+(\.[0-9]+)?: [^0-9 ][^ ]*:[0-9]+$' "$1" || true; }

# summary: one table row per build: ratios to the flavor's "none" and to
# the "profgen" build of the same seed (the probe flavor's "none" to the
# line flavor's "none": what the probes cost); with several seeds, a line
# per flavor and variant: its ratio to profgen per seed, the median of
# those medians, and the median [IQR] of all seeds' rounds pooled
summary() {
    for b in $BUILDS; do
        total=- secs=- inl=- seed=1
        case $b in probe-*) fl=probe v=${b#probe-} ;; *) fl=line v=$b ;; esac
        case $v in *-s[0-9]*) seed=${v##*-s} v=${v%-s*} ;; esac
        if [ "$v" != none ]; then
            total=$(proftotal "$C/prof/$b.txt")
            secs=$(cat "$C/prof/$b.secs")
            inl=$(profinlined "$C/prof/$b.txt")
        fi
        ir=-
        [ "$CALLGRIND" = 1 ] && ir=$(cat "$C/bin/$b.ir")
        echo "$b $fl $v $(textsize "$C/bin/$b") $total $secs $ir $inl $seed"
    done >"$C/builds.txt"
    perl -e '
        my ($prog, $times, $builds) = @ARGV;
        my (%t, %w, @order);
        open(T, "<", $times) or die;
        while (<T>) { my ($r, $b, $tc, $wa) = split; $t{$b}[$r] = $tc; $w{$b}[$r] = $wa }
        open(B, "<", $builds) or die;
        my %info; while (<B>) { my @f = split; push @order, $f[0]; $info{$f[0]} = [@f[1..8]] }
        sub quart { my @s = sort { $a <=> $b } @_; my $at = sub { my $p = $_[0] * $#s;
            my $i = int($p); $i == $#s ? $s[$i] : $s[$i] + ($p - $i) * ($s[$i + 1] - $s[$i]) };
            (&$at(0.25), &$at(0.5), &$at(0.75)) }
        sub ratios { my ($h, $a, $b) = @_; my @r;
            return () unless exists $h->{$a} && exists $h->{$b};
            for my $i (0 .. $#{$h->{$a}}) { push @r, $h->{$a}[$i] / $h->{$b}[$i] if $h->{$b}[$i] }
            @r }
        sub fmt { return "-" unless @_; my ($q1, $m, $q3) = quart(@_);
            sprintf("%.3f [%.3f-%.3f]", $m, $q1, $q3) }
        sub ratio { fmt(ratios(@_)) }
        sub pgof { my ($pre, $seed) = @_; "${pre}profgen" . ($seed == 1 ? "" : "-s$seed") }
        printf "%-8s %-5s %-8s %-4s %-22s %-22s %-22s %-7s %-9s %-10s %-7s %s\n", "program",
            "kind", "build", "seed", "cpu vs none [IQR]", "cpu vs profgen [IQR]",
            "wall vs none [IQR]", "Ir/none", ".text", "samples", "inlined", "prof s";
        my (%seeds, %vars);
        for my $b (@order) {
            my ($fl, $v, $text, $tot, $secs, $ir, $inl, $seed) = @{$info{$b}};
            my $pre = $fl eq "probe" ? "probe-" : "";
            my $none = $v eq "none" ? "none" : "${pre}none";
            my $irr = $ir ne "-" && $info{$none}[5] ne "-" ? sprintf("%.4f", $ir / $info{$none}[5]) : "-";
            printf "%-8s %-5s %-8s %-4s %-22s %-22s %-22s %-7s %-9s %-10s %-7s %s\n", $prog,
                $fl, $v, $v eq "none" ? "-" : $seed, ratio(\%t, $b, $none),
                ratio(\%t, $b, pgof($pre, $seed)), ratio(\%w, $b, $none),
                $irr, $text, $tot, $inl, $secs;
            next if $v eq "none" || $v eq "profgen";
            push @{$vars{$fl}}, $v unless grep { $_ eq $v } @{$vars{$fl}};
            push @{$seeds{$fl}{$v}}, [$seed, $b, pgof($pre, $seed)];
        }
        my (undef, $mn) = quart(@{$t{none}});
        printf "%-8s (none: median cpu %.1f ms a run, %d rounds; probe none: against line none)\n",
            $prog, $mn, scalar @{$t{none}};
        for my $fl (sort keys %vars) {
            for my $v (@{$vars{$fl}}) {
                my @s = @{$seeds{$fl}{$v}};
                next if @s < 2;
                my (@med, @all, @each);
                for my $e (@s) {
                    my @r = ratios(\%t, $e->[1], $e->[2]);
                    next unless @r;
                    push @med, (quart(@r))[1];
                    push @all, @r;
                    push @each, "seed $e->[0] " . fmt(@r);
                }
                next unless @med;
                printf "%s %s %s/profgen cpu by seed: %s; median of the %d seeds: %.3f; rounds pooled: %s\n",
                    $prog, $fl, $v, join(", ", @each), scalar @med, (quart(@med))[1], fmt(@all);
            }
        }
    ' "$P" "$C/times.tsv" "$C/builds.txt"
}

for P in $PROGRAMS; do
    case $P in sqlite | lbr2prof | json) ;; *) log "unknown program $P (sqlite lbr2prof json)"; exit 2 ;; esac
    C=$D/$P
    S=$C/src
    mkdir -p "$C/bin"
    ${P}_fetch
    BUILDS=
    for F in $FLAVORS; do
        case $F in line | probe) ;; *) log "unknown flavor $F (line probe)"; exit 2 ;; esac
        pre=$(fl_pre "$F")
        build "${pre}none" "$F"
        BUILDS="$BUILDS ${pre}none"
        for s in $SEEDS; do
            case $s in '' | *[!0-9]*) log "PGO_SEEDS wants numbers, not '$s'"; exit 2 ;; esac
            record "$F" "$s"
            for v in $(fl_variants "$F"); do
                profile "$F" "$v" "$s"
                build "$pre$v$(sfx "$s")" "$F" "$C/prof/$pre$v$(sfx "$s").prof"
                BUILDS="$BUILDS $pre$v$(sfx "$s")"
            done
        done
    done
    for F in $FLAVORS; do for s in $SEEDS; do calibrate "$F" "$s"; done; done >"$C/calib.txt"
    check
    if [ "$PAIRS" -gt 0 ]; then
        log "$P: timing $PAIRS rounds of:$BUILDS"
        timing
    fi
    [ -s "$C/times.tsv" ] || { log "$P: no timings (PGO_PAIRS=0 reuses the last run's)"; exit 1; }
    [ "$CALLGRIND" = 1 ] && instructions
    { summary; cat "$C/calib.txt"; ${P}_notes; } | tee "$C/table.txt"
done
echo
echo "pgo-bench: ratios are medians over rounds of (build's time / other build's time), IQR in brackets;"
echo "  cpu = task-clock of the run, wall = elapsed; Ir = callgrind instructions on the smaller input;"
echo "  samples = total samples of the profile (text, top-level totals); inlined = contexts the"
echo "  pre-inliner inlined; prof s = seconds to make the profile."
echo "  This machine may be shared (load average now: $(cut -d' ' -f1-3 /proc/loadavg)): wall times are"
echo "  noisy there; the rounds' rotation spreads load drift over all builds alike."
for P in $PROGRAMS; do cat "$D/$P/table.txt"; done
