#!/bin/sh
# The progress line and the phase timings of `lbr2prof profile`
# (src/cli/progress.c, src/util/phases.c):
#   - on a terminal (a pty made by script(1)) the progress line is drawn
#     in place on stderr: the phase, bytes read of the trace's size,
#     samples; erased at the end (LBR2PROF_PROGRESS_AFTER=0: shown from the
#     start, so a short run shows it);
#   - with the default delay (2 s) a short run shows nothing;
#   - on a pipe, and with --quiet on a terminal, there is none;
#   - --time-trace (and llvm-profgen's --time-profgen) print the CPU time
#     (all threads, the main thread's) and the wall time of each phase on
#     stderr, and the samples unwound (input samples, distinct ones);
#   - none of them changes the profile.
set -u
command -v script >/dev/null 2>&1 || { echo "script(1) not found"; exit 77; }
D=$TOP/tests/data/llvm-profgen-inputs
cd "$WORK" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
ok() { echo "ok   $*"; }
IN="--perfscript=$D/noinline-cs-noprobe.perfscript --binary=$D/noinline-cs-noprobe.perfbin --format=text"
PD="$TOP/tests/data/autofdo/test.lbr --binary=$TOP/tests/data/autofdo/test.binary --format=text"

# on_pty OUT CMD...: CMD with stdin/stdout/stderr on a pty; all it printed
on_pty() {
    out=$1; shift
    script -qec "$*" /dev/null >"$out" 2>&1 </dev/null
}

"$LBR2PROF" $IN -o ref.prof 2>ref.err || fail "reference run"
"$LBR2PROF" $PD -o refpd.prof 2>refpd.err || fail "reference run (perf.data)"

# 1. a terminal: the line is there (text and perf.data), erased at the end
for c in text pd; do
    if [ $c = text ]; then args=$IN; ref=ref.prof; else args=$PD; ref=refpd.prof; fi
    on_pty tty.$c env LBR2PROF_PROGRESS_AFTER=0 "$LBR2PROF" $args -o tty.$c.prof
    if grep -q 'lbr2prof: reading the trace: .* of .* MB (.*%), [0-9]* samples' tty.$c &&
        grep -q "$(printf '\r')" tty.$c && grep -q "$(printf '\033')\[K" tty.$c; then
        ok "$c on a terminal: the progress line is drawn"
    else
        fail "$c on a terminal: no progress line"; od -c tty.$c | head -20
    fi
    # the last thing printed is the erasure
    if [ "$(tail -c 4 tty.$c | od -An -c | tr -d ' \n')" = '\r033[K' ]; then
        ok "$c: the line is erased at the end"
    else
        fail "$c: the line is left on the screen"; tail -c 40 tty.$c | od -c
    fi
    cmp -s tty.$c.prof $ref || fail "$c: the progress line changed the profile"
done

# 2. a terminal, default delay (2 s): this run is shorter, nothing shown
on_pty tty.short "$LBR2PROF" $IN -o tty.short.prof
if grep -q 'reading the trace' tty.short; then fail "a short run shows progress"
else ok "a run shorter than the delay shows nothing"; fi

# 3. a pipe (not a terminal): nothing, even with no delay
LBR2PROF_PROGRESS_AFTER=0 "$LBR2PROF" $IN -o pipe.prof 2>&1 | cat >pipe.out
if grep -q 'reading the trace' pipe.out || grep -q "$(printf '\r')" pipe.out; then
    fail "progress on a pipe"
elif ! cmp -s pipe.prof ref.prof; then fail "pipe run: another profile"
else ok "no progress line on a pipe"; fi
cmp -s pipe.out ref.err || fail "pipe run: stderr differs from the plain run's"

# 4. --quiet on a terminal: nothing
on_pty tty.quiet env LBR2PROF_PROGRESS_AFTER=0 "$LBR2PROF" $IN --quiet -o quiet.prof
if grep -q 'reading the trace' tty.quiet; then fail "--quiet shows progress"
else ok "--quiet: no progress line on a terminal"; fi
cmp -s quiet.prof ref.prof || fail "--quiet changed the profile"

# 5. --time-trace / --time-profgen: the phases with their times
for flag in --time-trace --time-profgen; do
    "$LBR2PROF" $IN $flag -o tt.prof 2>tt.err
    missing=
    for p in "opening the binaries" "reading the trace" "unwinding" "generation" \
        "pre-inlining" "post-processing" "writing" "Total"; do
        grep -q "^ *[0-9.]* ( *[0-9.]*%) *[0-9.]* ( *[0-9.]*%) *[0-9.]* ( *[0-9.]*%)  $p\$" tt.err ||
            missing="$missing [$p]"
    done
    if [ -n "$missing" ] || ! grep -q "Total Execution Time: [0-9.]* seconds CPU" tt.err; then
        fail "$flag: phases missing:$missing"; cat tt.err
    else ok "$flag: wall and CPU per phase"; fi
    cmp -s tt.prof ref.prof || fail "$flag changed the profile"
done
# under the table: the input samples unwound and the distinct ones, also
# when the perf script reader's tail folds repeated samples into one
# (LBR2PROF_TEXT_SPLIT): its samples three times over, counted from the
# text (a sample's LBR line; distinct: its block of lines)
R=$WORK/rep.perfscript
{ cat "$D/noinline-cs-noprobe.perfscript"; echo
  grep -v PERF_RECORD_MMAP "$D/noinline-cs-noprobe.perfscript"; echo
  grep -v PERF_RECORD_MMAP "$D/noinline-cs-noprobe.perfscript"; } >"$R"
ns=$(grep -c '^ 0x' "$R")
nd=$(grep -v -e PERF_RECORD_MMAP -e '^//' "$R" | awk 'BEGIN{RS=""} {gsub(/\n/, " "); print}' |
     sort -u | wc -l)
for split in off $(($(wc -c <"$R") / 2))+; do
    LBR2PROF_TEXT_SPLIT=$split "$LBR2PROF" --perfscript="$R" \
        --binary="$D/noinline-cs-noprobe.perfbin" --time-trace -o rep.prof 2>rep.err
    if grep -qx "  Samples unwound: $ns ($nd distinct)" rep.err && [ "$ns" -gt "$nd" ]; then
        ok "--time-trace (split $split): $ns samples unwound, $nd distinct"
    else fail "--time-trace (split $split): not $ns samples, $nd distinct"; cat rep.err; fi
done
# the flat route has no unwinding or pre-inlining
"$LBR2PROF" $PD --time-trace -o ttpd.prof 2>ttpd.err
if grep -q "reading the trace" ttpd.err && grep -q "generation" ttpd.err &&
    ! grep -q "unwinding" ttpd.err && ! grep -q "pre-inlining" ttpd.err; then
    grep -q "Samples unwound" ttpd.err && fail "--time-trace: samples unwound on a flat profile"
    ok "--time-trace on a flat profile: its own phases"
else fail "--time-trace on a flat profile"; cat ttpd.err; fi
# without it: no table
grep -q "Total Execution Time" ref.err && fail "a table without --time-trace"

[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
echo "all passed"
