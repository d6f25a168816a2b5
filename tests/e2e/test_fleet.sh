#!/bin/sh
# test_fleet.sh - `lbr2prof fleet`, the Dask driver (scripts/lbr2prof_fleet.py),
# on a LocalCluster of 2 worker processes talking TCP on 127.0.0.1.
#
# Four recordings (helpers/recordings.sh, plus a third kernel run) as four
# shards, merged in a tree of fan-in 2, generated once: the profile equals
# `lbr2prof` over the four traces, byte for byte. Then again with every
# lbr2prof call slowed by a second (--lbr2prof=a wrapper), killing one
# worker process (kill -9) once the first task is done: the driver sees it
# go, the scheduler reruns its task, and the profile is still the same.
# Then two unreadable inputs (a perf.data cut in its header, random bytes): the
# run fails naming one of them; with --skip-bad-inputs (two files per
# shard, so a shard mixes a good and a bad file) it lists both and the
# profile equals the single run over the good traces (and the single run
# over all five with --skip-bad-inputs). Last, pseudo-probe
# builds of the programs (address contexts): four shards, and two shards
# of two files with the flat CS options in text, equal the single runs.
set -u
W=$WORK
cd "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
/usr/bin/python3 -c "import distributed" 2> /dev/null ||
    { echo "skip: /usr/bin/python3 has no python3-distributed"; exit 77; }
. "$TOP/tests/e2e/helpers/recordings.sh"
L=$LBR2PROF

make_recordings
record_one k3.data 5 ./kernel 120
TRACES="k1.data k2.data i1.data k3.data"
# shellcheck disable=SC2086
"$L" $TRACES --binary=kernel --binary=inlining -o single.prof 2> single.err ||
    { cat single.err; fail "single run"; }

# fleet LOG OPTIONS...: the driver in the background, its stderr in LOG
fleet() {
    log=$1
    shift
    "$L" fleet --local-workers 2 --fan-in 2 --binary=kernel --binary=inlining \
        --timeout 120 "$@" 2> "$log"
}

# shellcheck disable=SC2086
fleet f1.log -o f1.prof $TRACES || { cat f1.log; fail "fleet"; }
cat f1.log
cmp -s f1.prof single.prof || fail "the fleet's profile differs from the single run's"
grep -q "scheduler tcp://127.0.0.1:[0-9]*; workers: tcp://127.0.0.1:[0-9]* pid [0-9]*, tcp://127.0.0.1:[0-9]* pid [0-9]*$" f1.log ||
    fail "not 2 workers on 127.0.0.1"
[ "$(grep -c '^fleet: \[.*\] shard-.* done' f1.log)" -eq 4 ] || fail "not 4 shards"
[ "$(grep -c '^fleet: \[.*\] merge-.* done' f1.log)" -ge 2 ] || fail "no merge tree"
grep -q "done in .* 4 shards, 4 traces" f1.log || fail "no summary"
[ -e f1.prof.fleet.d ] && fail "the work directory was left behind"
echo "ok   4 shards on 2 local workers = the single run ($(wc -c < f1.prof) bytes)"

# a worker killed mid-run
cat > slow.sh << EOF
#!/bin/sh
case "\$1" in merge | --unsymbolized-profile=*) ;; *) sleep 1 ;; esac
exec "$L" "\$@"
EOF
chmod +x slow.sh
# shellcheck disable=SC2086
fleet f2.log --lbr2prof="$W/slow.sh" -o f2.prof $TRACES &
bg=$!
i=0
while ! grep -q '^fleet: \[ *1/' f2.log 2> /dev/null; do
    i=$((i + 1))
    [ $i -gt 600 ] && { kill $bg; cat f2.log; fail "no task finished in 60 s"; }
    sleep 0.1
done
victim=$(sed -n 's/.*workers: tcp:[^ ]* pid \([0-9]*\),.*/\1/p' f2.log)
[ -n "$victim" ] || { cat f2.log; fail "no worker pid"; }
kill -9 "$victim" || fail "kill worker $victim"
wait $bg || { cat f2.log; fail "the fleet failed after a worker died"; }
cat f2.log
kill -0 "$victim" 2> /dev/null && fail "worker $victim still runs"
grep -q "worker tcp://127.0.0.1:[0-9]* lost" f2.log || fail "the driver did not see the worker go"
cmp -s f2.prof single.prof || fail "after a worker died, the profile differs"
echo "ok   worker $victim killed mid-run: same profile"

# unreadable inputs (a perf.data cut inside its header: one cut later is
# read up to its last complete record, docs/reader.md "Cut-off files")
head -c 60 k3.data > trunc.data
head -c 3000 /dev/urandom > noise.data
# shellcheck disable=SC2086
fleet f3.log -o f3.prof k1.data trunc.data k2.data noise.data i1.data &&
    { cat f3.log; fail "unreadable inputs did not fail the run"; }
cat f3.log
grep -q "error: shard .*\(trunc\|noise\).data" f3.log || fail "the failing shard is not named"
[ -e f3.prof ] && fail "a failed run wrote its output"
fleet f4.log -o f4.prof --skip-bad-inputs --files-per-shard 2 \
    k1.data trunc.data k2.data noise.data i1.data || { cat f4.log; fail "--skip-bad-inputs"; }
cat f4.log
grep -q "skipped 2 unreadable inputs" f4.log || fail "skipped inputs not listed"
grep -q "/trunc.data: .*trunc.data" f4.log && grep -q "/noise.data: .*noise.data" f4.log ||
    fail "the skipped inputs are not named with their errors"
"$L" k1.data k2.data i1.data --binary=kernel --binary=inlining -o good.prof 2> /dev/null ||
    fail "single run over the good traces"
cmp -s f4.prof good.prof || fail "--skip-bad-inputs: not the profile of the good traces"
"$L" k1.data trunc.data k2.data noise.data i1.data --binary=kernel --binary=inlining \
    --skip-bad-inputs -o one.prof 2> /dev/null || fail "one run with --skip-bad-inputs"
cmp -s f4.prof one.prof || fail "--skip-bad-inputs: the fleet's profile is not the one run's"
echo "ok   unreadable inputs: named and failing; with --skip-bad-inputs listed and left out"

# pseudo-probe builds: address contexts merged, a probe-based profile
mkdir probe && cd probe || fail "mkdir probe"
make_recordings -fpseudo-probe-for-profiling
record_one k3.data 5 ./kernel 120
# shellcheck disable=SC2086
"$L" $TRACES --binary=kernel --binary=inlining -o single.prof 2> /dev/null || fail "probe: single run"
"$L" show single.prof | grep -q "CFG checksum" || fail "probe: not a probe-based profile"
# shellcheck disable=SC2086
fleet f5.log -o f5.prof $TRACES || { cat f5.log; fail "probe: fleet"; }
cmp -s f5.prof single.prof || { cat f5.log; fail "probe: the fleet's profile differs from the single run's"; }
FLATCS="--csspgo-preinliner=0 --gen-cs-nested-profile=0 --format=text"
# shellcheck disable=SC2086
"$L" $TRACES --binary=kernel --binary=inlining $FLATCS -o single.txt 2> /dev/null ||
    fail "probe: single run, flat CS options"
# shellcheck disable=SC2086
fleet f6.log --files-per-shard 2 $FLATCS -o f6.txt $TRACES || { cat f6.log; fail "probe: fleet, flat CS options"; }
[ "$(grep -c '^fleet: \[.*\] shard-.* done' f6.log)" -eq 2 ] || fail "probe: not 2 shards"
cmp -s f6.txt single.txt || fail "probe: the fleet's flat CS text profile differs from the single run's"
grep -q '!CFGChecksum' f6.txt || fail "probe: no checksum in the text profile"
echo "ok   probe: 4 shards, and 2 shards of 2 files with the flat CS options = the single runs"
echo "PASS"
