#!/bin/sh
# test_pt_simulate.sh - Intel PT from `lbr2prof record --simulate --intel-pt`
# (the exact branch trace encoded with libipt) on two workloads of
# tests/workloads (recursion: one thread; threads: several, one AUX queue
# each), checked three ways:
#  * perf 6.1 decodes it without an instruction trace error;
#  * `lbr2prof script --itrace=X` prints what `perf script --itrace=X`
#    prints, byte for byte, for b, i1000il, i10usle, il32, e, with
#    callchains (g: bi1000ig, bi100ig200l, where perf prints no symbol
#    names - g200 lifts perf's 127-entry limit -, i1000ilg and i10usg4,
#    where it names the functions of the program, ld.so, libc and the
#    vDSO), and with --show-mmap-events (samples interleaved with the
#    records by time);
#  * the branches decoded (--itrace=b, trace begin/end left out) are the
#    truth's taken branches, (from, to) pair by pair with their counts.
set -u
for t in perf cc python3; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
perf version 2>/dev/null | grep -q '^perf version 6\.1' ||
    { echo "skip: perf 6.1 required"; exit 77; }
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
W=$WORK
fail() { echo "FAIL: $*"; exit 1; }
F=comm,pid,tid,time,ip,brstack
n=0

for prog in recursion threads; do
    cc -O1 -g -fno-omit-frame-pointer -pthread -o "$W/$prog" \
        "$TOP/tests/workloads/$prog.c" || fail "cannot build $prog"
    "$LBR2PROF" record --simulate --intel-pt --truth "$W/$prog.truth" \
        -o "$W/$prog.data" -- "$W/$prog" > "$W/$prog.out" 2> "$W/$prog.rec" ||
        fail "record $prog: $(cat "$W/$prog.rec")"
    perf script -i "$W/$prog.data" --itrace=e > "$W/$prog.perr" 2>&1
    ! grep -q "error type" "$W/$prog.perr" ||
        fail "$prog: perf finds errors: $(head -3 "$W/$prog.perr")"
    for it in b i1000il i10usle il32 e bi1000ig bi100ig200l i1000ilg i10usg4; do
        perf script -i "$W/$prog.data" -F $F --itrace=$it > "$W/$prog.$it.perf" 2>/dev/null
        "$LBR2PROF" script -F $F --itrace=$it "$W/$prog.data" > "$W/$prog.$it.ours" 2> "$W/$prog.$it.err" ||
            fail "$prog --itrace=$it: $(cat "$W/$prog.$it.err")"
        cmp -s "$W/$prog.$it.perf" "$W/$prog.$it.ours" ||
            fail "$prog --itrace=$it differs from perf ($(wc -l < "$W/$prog.$it.perf") vs $(wc -l < "$W/$prog.$it.ours") lines): $(diff "$W/$prog.$it.perf" "$W/$prog.$it.ours" | head -4)"
        n=$((n + 1))
    done
    [ "$(wc -l < "$W/$prog.b.perf")" -gt 1000 ] || fail "$prog: too few branches"
    # g without b names the functions: equal to perf's only if resolved
    # (both printing [unknown] would be equal too)
    for fn in main _start __libc_start_call_main; do
        grep -q "^[[:space:]]*[0-9a-f]* $fn\$" "$W/$prog.i1000ilg.ours" ||
            fail "$prog --itrace=i1000ilg: no callchain entry named $fn"
    done
    perf script -i "$W/$prog.data" -F $F --show-mmap-events --itrace=i1000il > "$W/$prog.mm.perf" 2>/dev/null
    "$LBR2PROF" script -F $F --show-mmap-events --itrace=i1000il "$W/$prog.data" > "$W/$prog.mm.ours" ||
        fail "$prog --show-mmap-events"
    cmp -s "$W/$prog.mm.perf" "$W/$prog.mm.ours" ||
        fail "$prog --show-mmap-events differs: $(diff "$W/$prog.mm.perf" "$W/$prog.mm.ours" | head -4)"
    # decoded branches = the truth's taken branches
    "$LBR2PROF" script -F ip,brstack --itrace=b "$W/$prog.data" > /dev/null || fail "b"
    perf script -i "$W/$prog.data" -F hw:ip,addr --itrace=b | tr -d "=>" > "$W/$prog.pairs" 2>/dev/null
    /usr/bin/python3 - "$W/$prog.truth" "$W/$prog.b.ours" <<'EOF' || fail "$prog: decoded branches are not the truth"
import json, sys, collections
truth = json.load(open(sys.argv[1]))
want = collections.Counter()
for f, t, c in truth["branch_counts"]:
    want[(int(f, 16), int(t, 16))] += c
# the branch samples of `lbr2prof script -F ...,ip --itrace=b` give only
# the source; pair them with perf's -F ip,addr output read alongside
srcs = [int(l.split()[-1], 16) for l in open(sys.argv[2]) if l.strip()]
pairs = [tuple(int(x, 16) for x in l.split()) for l in open(sys.argv[2].replace(".b.ours", ".pairs")) if l.strip()]
assert len(srcs) == len(pairs), (len(srcs), len(pairs))
got = collections.Counter()
for (f, t), s in zip(pairs, srcs):
    assert f == s, (hex(f), hex(s))
    if f and t:
        got[(f, t)] += 1
if got != want:
    miss = (want - got).most_common(3); extra = (got - want).most_common(3)
    print("missing", [(hex(a), hex(b), c) for (a, b), c in miss],
          "extra", [(hex(a), hex(b), c) for (a, b), c in extra])
    sys.exit(1)
print("branches: %d pairs, %d taken branches = truth" % (len(got), sum(got.values())))
EOF
done
echo "PASS: $n --itrace outputs equal perf's, truth branches equal"
