#!/bin/sh
# test_cs_ahead_conformance.sh - context-sensitive profiles against
# llvm-profgen-22, run now (lbr2prof with --no-repair-frames), when the
# unwinder records samples ahead in the reader's idle time
# (lp_unwind_warm_next, docs/unwind.md). A context whose leaf is inlined
# for some samples and not for others gets the ContextWasInlined of the
# sample llvm-profgen's unwinding reaches first (its hash table's order),
# whatever the order the samples were read or recorded in. How many are
# recorded ahead depends on timing, so each run is made in every mode of
# LBR2PROF_IDLE (docs/reader.md): "always" (every distinct sample
# recorded as soon as it is read: contexts come into being in reading
# order), a number N (the samples among the first N-1 events only:
# replayed samples and samples unwound at the flush meet in one context,
# the first in llvm-profgen's order maybe unwound last), "never", and
# unset (whatever the run gets); --time-trace's "Distinct samples
# recorded ahead" must show the mode took effect.
#  1. two samples of recursion-compression-noprobe whose context
#     [main:1 @ foo:3 @ fa:2 @ fb:2 @ fa] has an inlined leaf for one and
#     not for the other (test_unwind's test_first_leaf_in_unwinding_order),
#     in both orders (llvm-profgen-22 writes the attribute for one of
#     them: checked): flat CS, nested and pre-inlined profiles, text and
#     stderr identical in every mode;
#  2. tests/workloads/wasinlined.c (leaf() inlined and called out of line
#     at one line: lbr2prof's raw header marks the context mixed) built
#     now with clang-19, recorded with `lbr2prof record --simulate`:
#     lbr2prof on the perf.data and on its `lbr2prof script` text equal to
#     llvm-profgen-22 on that text in every mode (N: for the text, the
#     out-of-line samples recorded and no inlined one) - flat CS,
#     the defaults, and thresholds where the attribute alone decides
#     whether the pre-inliner inlines leaf into mid (llvm-profgen-22
#     decides otherwise without its multiplier for previous inlining:
#     checked); the default mode (the repair) gives one profile in every
#     mode;
#     On two cores the binary is warmed while the perf.data is read
#     (--time-trace says so), and the profile is the one-core run's;
#  3. the DWARF CS perf scripts of tests/data/llvm-profgen-inputs (10)
#     with every sample recorded ahead: flat CS and the defaults.
# Without 0b710d6's ranks (the context kept its creator's leaf) 1 and 2
# fail in modes always and N (24 of 104 checks); if a lower rank met
# later did not win, in mode N (1 always, 2 nearly always: 12).
set -u
for t in llvm-profgen-22 clang-19 nm; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
unset LBR2PROF_IDLE
D=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0; n=0
T="timeout 60"
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
FLAT="--csspgo-preinliner=0 --gen-cs-nested-profile=0"

# in_mode MODE CMD...: CMD with LBR2PROF_IDLE=MODE (default: unset)
in_mode() {
    m=$1; shift
    if [ "$m" = default ]; then "$@"; else LBR2PROF_IDLE=$m "$@"; fi
}

# same NAME: ref.* vs my.* (text; stderr as a set: detailed warnings come
# in hash-table order in llvm-profgen)
same() {
    n=$((n + 1))
    if ! [ -s ref.txt ]; then fail "$1: llvm-profgen-22 made no profile"; head -3 ref.err; return; fi
    if ! cmp -s ref.txt my.txt; then fail "$1: profile differs"; diff ref.txt my.txt | head -8; return; fi
    if [ "$(sort ref.err)" != "$(sort my.err)" ]; then
        fail "$1: stderr differs"; diff ref.err my.err | head -4; return
    fi
}

# ref INPUT-OPTS OPTS...: llvm-profgen-22's text profile, ref.txt/ref.err
ref() {
    in=$1; shift
    rm -f ref.txt
    # shellcheck disable=SC2086
    $T llvm-profgen-22 $in --output=ref.txt --format=text "$@" >/dev/null 2>ref.err
}

# mine MODE INPUT-OPTS OPTS...: lbr2prof's, my.txt/my.err
mine() {
    m=$1 in=$2; shift 2
    rm -f my.txt
    # shellcheck disable=SC2086
    in_mode "$m" $T "$LBR2PROF" $in --output=my.txt --format=text --no-repair-frames "$@" \
        >/dev/null 2>my.err
}

# ahead MODE INPUT-OPTS: the distinct samples recorded ahead
ahead() {
    # shellcheck disable=SC2086
    in_mode "$1" $T "$LBR2PROF" $2 --no-repair-frames --time-trace -o ahead.prof 2>&1 |
        sed -n 's/^  Distinct samples recorded ahead: \([0-9]*\)$/\1/p'
}

# distinct INPUT-OPTS: the distinct samples unwound
distinct() {
    # shellcheck disable=SC2086
    $T "$LBR2PROF" $1 --no-repair-frames --time-trace -o ahead.prof 2>&1 |
        sed -n 's/^  Samples unwound: [0-9]* (\([0-9]*\) distinct)$/\1/p'
}

# attr FILE CONTEXT: its !Attributes (0: none; empty: no such context)
attr() {
    awk -v c="$2" 'index($0, c ":") == 1 { in_c = 1; a = 0; next }
                   /^[^ ]/ { if (in_c) { print a; in_c = 0; done = 1 } }
                   in_c && /^ !Attributes: / { a = $2 }
                   END { if (in_c) print a }' "$1"
}

# ---- 1. two samples, one context, an inlined leaf and not -----------------------
# ab.A_FIRST.perfscript: recursion-compression-noprobe's MMAP, then its
# first sample's stack twice, with the LBR's two newest entries (A: the
# leaf inlined) and with all but the newest (B: not), A first or second
ab() {
    awk -v af="$1" 'NR == 1 { mm = $0 } NR == 3 { st = $0 } NR == 4 { n = split($0, l, " ") }
        END { print mm
              for (i = 0; i < 2; i++) {
                  a = (i == 0) == af; print st
                  for (k = a ? 1 : 2; k <= (a ? 2 : 16); k++) printf " %s ", l[k]
                  printf "\n\n" } }' "$D/recursion-compression-noprobe.perfscript" \
        >"ab.$1.perfscript"
}
CTX="[main:1 @ foo:3 @ fa:2 @ fb:2 @ fa]"
for af in 0 1; do
    ab $af
    in="--perfscript=ab.$af.perfscript --binary=$D/recursion-compression-noprobe.perfbin"
    # shellcheck disable=SC2086
    ref "$in" $FLAT
    # B first in the trace: A first in llvm-profgen's order, and the other way
    n=$((n + 1))
    [ "$(attr ref.txt "$CTX")" = $((1 - af)) ] ||
        fail "ab.$af: llvm-profgen-22 gives $CTX attributes '$(attr ref.txt "$CTX")'"
    for m in always 3 never default; do
        n=$((n + 1))
        want=$(case $m in always) echo 2 ;; 3) echo 1 ;; never) echo 0 ;; esac)
        got=$(ahead $m "$in")
        # (unset: as timing has it)
        [ "$got" = "${want:-$got}" ] && [ -n "$got" ] ||
            fail "ab.$af $m: '$got' samples recorded ahead, not $want"
        for o in "$FLAT" "" "--gen-cs-nested-profile=0" "--csspgo-preinliner=0"; do
            # shellcheck disable=SC2086
            ref "$in" $o
            # shellcheck disable=SC2086
            mine $m "$in" $o
            same "ab.$af [$m] ${o:-(defaults)}"
        done
    done
done
echo "two samples: $n checks, $fails failed"

# ---- 2. a workload built now ------------------------------------------------------
before=$fails
b=wasinlined
clang-19 -std=c2x -O2 -g -fno-omit-frame-pointer -no-pie -fno-pie -o $b \
    "$TOP/tests/workloads/$b.c" ||
    { fail "$b: build"; echo "$n checks, $fails failed"; exit 1; }
"$LBR2PROF" record --simulate -c 97 --seed 7 -o $b.data -- ./$b 3000 >/dev/null 2>&1 ||
    { fail "$b: record"; echo "$n checks, $fails failed"; exit 1; }
"$LBR2PROF" script -F ip,brstack --show-mmap-events --raw-addresses $b.data >$b.script
TEXT="--perfscript=$b.script --binary=$b"
DATA="$b.data --binary=$b"
# the context with both leaves (lbr2prof's raw header marks it mixed),
# and mid calls leaf out of line
WCTX="[main:5 @ mid:3 @ leaf]"
# shellcheck disable=SC2086
ref "$TEXT" $FLAT
"$LBR2PROF" $DATA --no-repair-frames --skip-symbolization --raw-header -o $b.raw 2>/dev/null
n=$((n + 1))
[ -n "$(attr ref.txt "$WCTX")" ] && grep -q '^#leaf-inlined [01] mixed$' $b.raw &&
    grep -A3 '^\[main:5 @ mid\]' ref.txt | grep -q '^ 3: [0-9]* leaf:' ||
    { fail "$b: no $WCTX both inlined and called"; head -20 ref.txt; }
# the pre-inliner: with every context above the cold count and a
# threshold of 11 (the size of leaf's code is above it, not above 100x
# it: CSPreinlMultiplierForPrevInl), it inlines leaf into mid for its
# ContextWasInlined alone, when llvm-profgen's first leaf is the inlined
# one: in nearly every recording (the hash order of ~240 distinct
# samples, 1/40 of them out of line)
PREINL="--sample-profile-hot-inline-threshold=0 --sample-profile-cold-inline-threshold=10 --profile-summary-cold-count=0"
if [ "$(attr ref.txt "$WCTX")" = 1 ]; then
    # shellcheck disable=SC2086
    ref "$TEXT" $PREINL --csspgo-preinliner-multiplier-for-previous-inlining=1
    mv ref.txt nomult.txt
    # shellcheck disable=SC2086
    ref "$TEXT" $PREINL
    n=$((n + 1))
    cmp -s ref.txt nomult.txt && fail "$b: ContextWasInlined decides nothing with $PREINL"
else
    echo "note: $b's first leaf in llvm-profgen's order is the out-of-line one"
fi
# N for the text: the event after the last sample in the out-of-line
# leaf (its leaf address in leaf's code, the script's first frame line),
# so that those samples are recorded and no inlined one; for the
# perf.data (other events between the samples): a third of the samples'
# events, all but the start-up in the out-of-line calls or after them
range=$(nm -S $b | awk '$4 == "leaf" { print $1, $2 }')
lo=$(printf %x $((0x${range% *}))); hi=$(printf %x $((0x${range% *} + 0x${range#* })))
edge=$(awk -v lo="$lo" -v hi="$hi" '/^PERF_RECORD/ { ev++; next } /^$/ { inb = 0; next }
    !inb { inb = 1; ev++; if (length($1) == length(lo) && $1 >= lo && $1 < hi) last = ev }
    END { print last + 1 }' $b.script)
third=$(($(grep -c '^$' $b.script) / 3))
nd=$(distinct "$DATA")
for route in DATA TEXT; do
    eval in=\$$route
    n_m=$third; [ $route = TEXT ] && n_m=$edge
    for m in always "$n_m" never default; do
        n=$((n + 1))
        got=$(ahead "$m" "$in")
        case $m in
        always) [ "$got" = "$nd" ] ;;
        "$n_m") [ "$got" -gt 0 ] && [ "$got" -lt "$nd" ] ;;
        never) [ "$got" = 0 ] ;;
        *) [ -n "$got" ] ;;            # as timing has it
        esac || fail "$b $route $m: '$got' of $nd distinct samples recorded ahead"
        for o in "$FLAT" "" "$PREINL"; do
            # shellcheck disable=SC2086
            ref "$TEXT" $o
            # shellcheck disable=SC2086
            mine $m "$in" $o
            # (the leaf-external denominator of a script counts its blank lines)
            grep -v 'leaf external' ref.err >ref.err2; mv ref.err2 ref.err
            grep -v 'leaf external' my.err >my.err2; mv my.err2 my.err
            same "$b $route [$m] ${o:-(defaults)}"
        done
        # the default mode: one profile, whatever is recorded ahead
        n=$((n + 1))
        # shellcheck disable=SC2086
        in_mode "$m" $T "$LBR2PROF" $in --format=text --output="repair.$route.$m.txt" 2>/dev/null &&
            cmp -s "repair.$route.always.txt" "repair.$route.$m.txt" ||
            fail "$b $route: the default mode's profile with LBR2PROF_IDLE=$m is not always's"
    done
done
# the binary warmed while the perf.data is read, on a second core that
# would idle (src/binary/warm.c): --time-trace says what it did (here
# maybe nothing: the reading takes ~2 ms; test_binary's warm tests check
# the work), and the profile is the one made on one core, where no warmer
# runs; the text's parser takes the second core itself: no warmer
warm_line() {
    sed -n 's/^  Binary warmed while reading: \([0-9]*\) code regions decoded, \([0-9]*\) instructions symbolized$/\1 \2/p' "$1"
}
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    $T "$LBR2PROF" $DATA --no-repair-frames --format=text --time-trace -o warm.txt 2>warm.err
    # shellcheck disable=SC2086
    taskset -c 0 $T "$LBR2PROF" $DATA --no-repair-frames --format=text --time-trace -o one.txt 2>one.err
    # shellcheck disable=SC2086
    $T "$LBR2PROF" $TEXT --no-repair-frames --format=text --time-trace -o warmtext.txt 2>warmtext.err
    n=$((n + 3))
    w=$(warm_line warm.err)
    [ -n "$w" ] || { fail "$b: no binary warmed while reading the perf.data"; tail -4 warm.err; }
    [ -z "$(warm_line one.err)" ] && cmp -s warm.txt one.txt ||
        fail "$b: one core: a warmer, or another profile"
    [ -z "$(warm_line warmtext.err)" ] || fail "$b: a warmer while the text's parser runs"
fi
echo "$b: $((fails - before)) failed"

# ---- 3. the llvm-profgen inputs, every sample recorded ahead -------------------------
before=$fails
for c in noinline-cs-noprobe inline-cs-noprobe recursion-compression-noprobe \
         callback-external-addr cs-interrupt:noinline-cs-noprobe \
         cs-invalid-ret-addr:noinline-cs-noprobe external-address:inline-cs-noprobe \
         func-split multi-load-segs unique-linkage-name-dwarf; do
    in="--perfscript=$D/${c%%:*}.perfscript --binary=$D/${c##*:}.perfbin"
    for o in "$FLAT" ""; do
        # shellcheck disable=SC2086
        ref "$in" $o
        # shellcheck disable=SC2086
        mine always "$in" $o
        same "${c%%:*} [always] ${o:-(defaults)}"
    done
done
echo "llvm-profgen inputs: $((fails - before)) failed"
echo "$n checks, $fails failed"
[ $fails -eq 0 ] && [ $n -ge 100 ]
