#!/bin/sh
# e2e: `lbr2prof script --format=symbolicate-v5` piped into
# `lbr2prof symbolicate --binary`, checked against perf 6.1 at test time.
# A C program with a call chain is linked with lld as a PIE whose text
# segment has p_offset != p_vaddr (seed 002, T002-8: the module offset is
# not the file offset), recorded with `record --simulate` (callchains), and
# for every sample and frame in the program:
#   - module_offset == the vaddr of perf's file offset minus the lowest
#     PT_LOAD vaddr, minus 1 for return addresses (frames > 0, seed 000
#     all_but_first);
#   - the function symbolicate finds == perf script's symbol.
# Also: the request validates (symbolicate accepts it), found_modules is
# true for the program, and --adjust=none keeps raw offsets.
set -eu
for t in clang-19 perf llvm-readelf-19; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not installed"; exit 77; }
done
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
cd "$WORK"

cat > chain.c <<'C'
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned sink;
__attribute__((noinline)) unsigned leaf(unsigned x) { for (unsigned i = 0; i < 40; i++) sink += x * i; return sink; }
__attribute__((noinline)) unsigned mid(unsigned x) { return leaf(x) + leaf(x + 1); }
__attribute__((noinline)) unsigned top(unsigned x) { unsigned s = 0; for (unsigned i = 0; i < 30; i++) s += mid(x + i); return s; }
int main(int argc, char **argv) { unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20; unsigned s = 0; for (unsigned i = 0; i < n; i++) s += top(i); printf("%u\n", s); return 0; }
C
# lld places .text at a vaddr one page above its file offset.
clang-19 -g -O1 -fno-omit-frame-pointer -fno-optimize-sibling-calls -fPIE -pie \
    -fuse-ld=lld -Wl,--build-id -o chain chain.c
llvm-readelf-19 -lW chain > phdrs.txt
"$PY" - phdrs.txt <<'PY'
import sys
loads = [l.split() for l in open(sys.argv[1]) if l.strip().startswith("LOAD")]
assert any(int(l[1], 16) != int(l[2], 16) for l in loads), "want p_offset != p_vaddr"
PY

"$LBR2PROF" record --simulate -c 211 -o chain.data -- ./chain 20 > /dev/null 2> rec.err
"$LBR2PROF" script --format=symbolicate-v5 chain.data > req.json
"$LBR2PROF" script --format=symbolicate-v5 --adjust=none chain.data > req_raw.json
[ "$(wc -l < req.json)" -eq 1 ] || { echo "expected one request line"; exit 1; }
"$LBR2PROF" symbolicate --binary ./chain req.json > resp.json
perf script -i chain.data -F ip,sym --no-inline > perf.txt 2> perf.err

"$PY" - <<'PY'
import json
loads = []
for l in open("phdrs.txt"):
    p = l.split()
    if p and p[0] == "LOAD":
        loads.append((int(p[1], 16), int(p[2], 16), int(p[4], 16)))  # off, vaddr, filesz
base = min(v for _, v, _ in loads)
def module_offset(fileoff):
    for off, va, sz in loads:
        if off <= fileoff < off + sz:
            return va + fileoff - off - base
    raise SystemExit("file offset %#x in no PT_LOAD" % fileoff)

# perf script: samples separated by blank lines, frames "addr sym", leaf first
samples, cur = [], []
for line in open("perf.txt"):
    if not line.strip():
        if cur:
            samples.append(cur)
        cur = []
        continue
    a, _, sym = line.strip().partition(" ")
    cur.append((int(a, 16), sym))
if cur:
    samples.append(cur)

req = json.load(open("req.json"))
raw = json.load(open("req_raw.json"))
resp = json.load(open("resp.json"))
assert len(req["jobs"]) == 1, req["jobs"]
job, rjob = req["jobs"][0], raw["jobs"][0]
mm = job["memoryMap"]
prog = [i for i, (n, _) in enumerate(mm) if n == "chain"]
assert len(prog) == 1, mm
prog = prog[0]
res = resp["results"][0]
key = "chain/" + mm[prog][1]
assert res["found_modules"][key] is True, res["found_modules"]
stacks = job["stacks"]
assert len(stacks) == len(samples), (len(stacks), len(samples))
checked = funcs = 0
for s, (st, rst, pst, out) in enumerate(zip(stacks, rjob["stacks"], samples, res["stacks"])):
    assert len(st) == len(pst), (s, st, pst)
    for j, ((mi, off), (rmi, roff), (addr, sym), fr) in enumerate(zip(st, rst, pst, out)):
        if mi != prog:
            continue
        want = module_offset(addr) - (1 if j > 0 else 0)
        assert off == want, (s, j, hex(off), hex(want))
        assert roff == module_offset(addr), (s, j, hex(roff))
        assert fr["module_offset"] == hex(off), fr
        checked += 1
        if sym != "[unknown]":
            assert fr.get("function") == sym, (s, j, fr, sym)
            funcs += 1
assert checked >= 50 and funcs >= 50, (checked, funcs)
print("ok: %d samples, %d frames in the program, %d functions equal to perf's"
      % (len(samples), checked, funcs))
PY

# Kernel frames (addresses >= 2^63) and files that are not on this machine
# (perf 3.8 corpus file): frames [-1, address], or [-1, -1] when the
# address does not fit a signed 64-bit JSON integer; still valid requests.
"$LBR2PROF" script --format=symbolicate-v5 "$TOP/tests/data/perf-corpus/perf.data.callgraph-3.8" \
    > corpus.json 2> corpus.err
grep -q 'warning: cannot read /opt/google/chrome/chrome' corpus.err
grep -q '\[-1,-1\]' corpus.json
# More than 10 processes: one request per line, each valid on its own.
[ "$(wc -l < corpus.json)" -ge 2 ] || { echo "expected several requests"; exit 1; }
while IFS= read -r line; do
    printf '%s\n' "$line" | "$LBR2PROF" symbolicate - > /dev/null
done < corpus.json
# No sample: still a valid request.
"$LBR2PROF" record --simulate -c 100000000 -o empty.data -- ./chain 1 > /dev/null 2>&1
"$LBR2PROF" script --format=symbolicate-v5 empty.data > empty.json
grep -qx '{"jobs":\[\]}' empty.json || { echo "empty input: $(cat empty.json)"; exit 1; }
"$LBR2PROF" symbolicate empty.json > /dev/null
# Bad option values are usage errors.
if "$LBR2PROF" script --format=bogus chain.data > /dev/null 2>&1; then exit 1; fi
if "$LBR2PROF" script --format=symbolicate-v5 --adjust=sideways chain.data > /dev/null 2>&1; then exit 1; fi
echo "ok"
