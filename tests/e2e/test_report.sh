#!/bin/sh
# e2e: `lbr2prof report` on real inputs, checked against the reference tools
# run now and by independent recomputation:
#   1. CS profiles made by llvm-profgen-19 from the hybrid perf scripts of
#      tests/data (--csspgo-preinliner=0 --gen-cs-nested-profile=0): the
#      folded stacks equal the ones derived from the profile text in Python
#      (each context's total at its frame names), so every count sums to
#      the JSON total; JSON valid against docs/report-schema.json;
#      speedscope weights/frames rebuild the same stacks.
#   2. Nested profiles (flat with inlinees, and llvm-profgen's default
#      nested CS output): self = total - inlinee totals, the same way.
#   3. A perf.data from `lbr2prof record --simulate` of a program compiled
#      now: with --samples, the stacks of symbols equal `perf script`'s
#      (perf 6.1), and the inline chains at the leaf equal
#      llvm-symbolizer-19 --inlines; the sample-quality counts add up.
#      Without it (hybrid samples: the CS pipeline through the driver), the
#      folded stacks equal the contexts of the CS profile `lbr2prof
#      work.data --gen-cs-nested-profile=0` writes, the quality counts are
#      the ones its warnings give. --lbr (flat LBR pipeline) equals
#      llvm-profgen-19's profile; every perf.data of the corpus reports.
#   4. Errors: truncated extbinary input (names the offset), missing
#      file, bad format; -o leaves no file behind on failure.
set -eu
for t in llvm-profgen-19 llvm-profdata-19 llvm-profdata-22 clang-19 perf llvm-symbolizer-19 llvm-readelf-19 llvm-nm-19; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not installed"; exit 77; }
done
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" -c 'import jsonschema' 2>/dev/null || { echo "skip: python3-jsonschema not installed"; exit 77; }
D="$TOP/tests/data/llvm-profgen-inputs"
SCHEMA="$TOP/docs/report-schema.json"
cd "$WORK"

cat > check.py <<'PY'
import json, sys, collections, jsonschema

def parse_profile(path):
    """LLVM text profile -> {stack tuple: self} (self = total - inlinees)."""
    tops, stack = [], []
    for raw in open(path):
        line = raw.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        depth = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if depth == 0:
            name, total, _head = body.rsplit(":", 2)
            if name.startswith("["):
                frames = [f.rsplit(":", 1)[0] if i + 1 < len(name[1:-1].split(" @ ")) else f
                          for i, f in enumerate(name[1:-1].split(" @ "))]
            else:
                frames = [name]
            node = {"stack": tuple(frames), "total": int(total), "kids": []}
            tops.append(node)
            stack = [node]
            continue
        if body.startswith("!"):
            continue
        loc, rest = body.split(": ", 1)
        first = rest.split(" ")[0]
        del stack[depth:]
        if first.isdigit():
            continue
        callee, total = rest.rsplit(":", 1)
        node = {"stack": stack[depth - 1]["stack"] + (callee,), "total": int(total), "kids": []}
        stack[depth - 1]["kids"].append(node)
        stack.append(node)
    out = collections.Counter()
    def walk(n):
        s = n["total"] - sum(k["total"] for k in n["kids"])
        if s > 0:
            out[n["stack"]] += s
        for k in n["kids"]:
            walk(k)
    for t in tops:
        walk(t)
    return out

def read_folded(path):
    out, lines = collections.Counter(), open(path).read().splitlines()
    assert lines == sorted(lines), "folded output not sorted"
    for l in lines:
        st, c = l.rsplit(" ", 1)
        assert int(c) > 0, l
        key = tuple(st.split(";"))
        assert key not in out, "stack repeated: " + st
        out[key] = int(c)
    return out

def check_json(path, schema):
    doc = json.load(open(path))
    jsonschema.Draft202012Validator(json.load(open(schema))).validate(doc)
    def walk(n):
        assert n["total"] == n["self"] + sum(c["total"] for c in n["children"]), n["name"]
        for c in n["children"]:
            walk(c)
    for n in doc["tree"]:
        walk(n)
    assert doc["total"] == sum(n["total"] for n in doc["tree"])
    return doc

def speedscope_stacks(path):
    ss = json.load(open(path))
    assert ss["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = ss["shared"]["frames"]
    p = ss["profiles"][0]
    assert p["type"] == "sampled" and len(p["samples"]) == len(p["weights"])
    assert sum(p["weights"]) == p["endValue"] - p["startValue"]
    out = collections.Counter()
    for s, w in zip(p["samples"], p["weights"]):
        out[tuple(frames[i]["name"] for i in s)] += w
    return out

if __name__ == "__main__":
    prof, folded, js, ss = sys.argv[1:5]
    want = parse_profile(prof)
    got = read_folded(folded)
    if got != want:
        print("folded differs from the profile:")
        for k in sorted(set(got) | set(want)):
            if got[k] != want[k]:
                print("  %s: report %d, profile %d" % (";".join(k), got[k], want[k]))
        sys.exit(1)
    doc = check_json(js, sys.argv[5])
    assert doc["total"] == sum(want.values()), (doc["total"], sum(want.values()))
    assert speedscope_stacks(ss) == got, "speedscope stacks differ"
    print("ok %s: %d stacks, total %d" % (prof, len(got), doc["total"]))
PY

report_all() { # profile, extra report options
    p=$1; shift
    "$LBR2PROF" report "$p" --no-demangle --format=folded "$@" -o "$p.folded"
    "$LBR2PROF" report "$p" --no-demangle --format=json "$@" -o "$p.json"
    "$LBR2PROF" report "$p" --no-demangle --format=speedscope "$@" -o "$p.ss.json"
    "$LBR2PROF" report "$p" "$@" > "$p.txt"
    "$PY" check.py "$p" "$p.folded" "$p.json" "$p.ss.json" "$SCHEMA"
}

# 1. CS profiles from llvm-profgen-19, not nested.
for n in noinline-cs-noprobe inline-cs-noprobe recursion-compression-noprobe cs-preinline-cost; do
    s=$D/$n.perfscript
    llvm-profgen-19 --perfscript="$s" --binary="$D/$n.perfbin" --csspgo-preinliner=0 \
        --gen-cs-nested-profile=0 --format=text -o "$n.cs.prof" 2> /dev/null
    grep -q '^\[.* @ ' "$n.cs.prof" || { echo "$n: no calling context in the profile"; exit 1; }
    report_all "$n.cs.prof" --binary="$D/$n.perfbin"
    grep -q '"context_sensitive": true' "$n.cs.prof.json"
    grep -q '^  contexts:  calling contexts$' "$n.cs.prof.txt"
done
# Source lines come from the binary: the CS contexts of inline-cs-noprobe
# name inline.c with absolute lines.
grep -q 'inline.c:[0-9]' inline-cs-noprobe.cs.prof.txt

# 2. Nested profiles: llvm-profgen's flat profile with inlinees, and its
#    default (nested, preinlined) CS output.
llvm-profgen-19 --perfscript="$D/inline-noprobe.perfscript" --binary="$D/inline-noprobe.perfbin" \
    --format=text -o flat.prof 2> /dev/null
grep -q '^  [0-9.]*: [a-z_]*:[0-9]*$' flat.prof || { echo "no inlinee in flat.prof"; exit 1; }
report_all flat.prof --binary="$D/inline-noprobe.perfbin"
grep -q '"context_sensitive": false' flat.prof.json
llvm-profgen-19 --perfscript="$D/cs-preinline-cost.perfscript" --binary="$D/cs-preinline-cost.perfbin" \
    --format=text -o nested.prof 2> /dev/null
report_all nested.prof
# Demangled by default; the linkage names with --no-demangle.
"$LBR2PROF" report nested.prof --format=folded > nested.prof.folded.dm
grep -q '^main;foo(int) ' nested.prof.folded.dm
grep -q '^main;_Z3fooi ' nested.prof.folded
# The same profile in extbinary (and compressed, MD5-less) is read
# directly and gives the same report as its text.
llvm-profdata-19 merge --sample --extbinary nested.prof -o nested.extbin
"$LBR2PROF" report nested.extbin --no-demangle --format=folded > ext.folded
cmp ext.folded nested.prof.folded
"$LBR2PROF" report nested.extbin --format=json -o ext.json
"$LBR2PROF" report nested.prof --format=json -o text.json
"$PY" - ext.json text.json <<'PYJ'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for k in ("functions", "tree", "total", "context_sensitive"):
    assert a[k] == b[k], k
PYJ
llvm-profdata-22 merge --sample --extbinary --compress-all-sections nested.prof -o nested.z.extbin
"$LBR2PROF" report nested.z.extbin --no-demangle --format=folded > z.folded
cmp z.folded nested.prof.folded
# A truncated extbinary profile: exit 2, the offset in the message, and -o
# leaves nothing behind.
head -c 300 nested.extbin > cut.extbin
if "$LBR2PROF" report cut.extbin -o out.txt 2> ext.err; then echo "truncated extbinary accepted"; exit 1; else st=$?; fi
[ $st -eq 2 ] || { echo "truncated extbinary: status $st"; exit 1; }
grep -q 'cut.extbin: offset 0x' ext.err || { cat ext.err; exit 1; }
[ ! -e out.txt ] || { echo "-o left a file behind"; exit 1; }
ls | grep -q 'out.txt.tmp' && { echo "-o left a temporary file"; exit 1; }

# 3. perf.data of a program compiled now.
cat > work.c <<'C'
#include <stdio.h>
#include <stdlib.h>
static volatile unsigned sink;
static inline __attribute__((always_inline)) unsigned mix(unsigned x) { x ^= x >> 13; x *= 0x5bd1e995u; return x ^ (x >> 15); }
static inline __attribute__((always_inline)) unsigned step(unsigned a, unsigned i) { return i % 3 ? a ^ mix(a + i) : a + mix(i); }
__attribute__((noinline)) unsigned run(unsigned n) { unsigned a = 1; for (unsigned i = 0; i < n; i++) a = step(a, i); sink = a; return a; }
__attribute__((noinline)) unsigned fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
__attribute__((noinline)) unsigned twice(unsigned n) { return run(n) + fib(12); }
int main(int argc, char **argv) { unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20000; printf("%u\n", twice(n) + run(n / 2)); return 0; }
C
clang-19 -g -O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls -o work work.c
"$LBR2PROF" record --simulate -c 211 -o work.data -- ./work > /dev/null 2> rec.err
"$LBR2PROF" report work.data --samples --format=json -o work.json
"$LBR2PROF" report work.data --samples --format=folded -o work.folded
"$LBR2PROF" report work.data --samples > work.txt
perf script -i work.data -F ip,sym,dso --no-inline > perf.txt 2> perf.err
llvm-readelf-19 -lW work > phdrs.txt
llvm-nm-19 --defined-only work > nm.txt
"$PY" - "$SCHEMA" <<'PY'
import json, sys, subprocess, collections, os
sys.path.insert(0, ".")
from check import check_json, read_folded
doc = check_json("work.json", sys.argv[1])
prog = os.path.abspath("work")
syms = {l.split()[2] for l in open("nm.txt") if len(l.split()) == 3 and l.split()[1] in "tT"}
loads = [(int(p[1], 16), int(p[2], 16), int(p[4], 16)) for p in
         (l.split() for l in open("phdrs.txt")) if p and p[0] == "LOAD"]
def vaddr(off):
    for o, v, sz in loads:
        if o <= off < o + sz:
            return v + off - o
    raise SystemExit("offset %#x in no PT_LOAD" % off)

# perf: samples separated by blank lines; frames "addr sym (dso)", leaf first
samples, cur = [], []
for line in open("perf.txt"):
    if not line.strip():
        if cur: samples.append(cur)
        cur = []
        continue
    a, rest = line.strip().split(" ", 1)
    sym, dso = rest.rsplit(" (", 1)
    cur.append((int(a, 16), sym, dso[:-1]))
if cur: samples.append(cur)
q = doc["quality"]
assert q["samples"] == len(samples), (q, len(samples))
assert q["used"] + q["dropped"] == q["samples"], q
assert q["contextless"] == 0 and q["lost"] == 0, q
assert doc["total"] == q["used"], (doc["total"], q)
folded = read_folded("work.folded")
assert sum(folded.values()) == doc["total"]

want_outer, leaf_addrs = collections.Counter(), []
for s in samples:
    if s[0][2] != prog:
        continue
    want_outer[tuple(f[1] for f in reversed(s) if f[2] == prog)] += 1
    leaf_addrs.append(vaddr(s[0][0]))
# the report: stacks of non-inlined frames of the program; leaf inline chains
got_outer, got_inl = collections.Counter(), collections.Counter()
def walk(n, path):
    path = path + [n]
    if n["self"] and n["name"] in syms | {f["name"] for f in doc["functions"] if not f["external"]}:
        outer = [p["name"] for p in path if not p["inlined"] and p["name"] in syms]
        k = len(path) - 1
        while path[k]["inlined"]:
            k -= 1
        if path[k]["name"] in syms:
            got_outer[tuple(outer)] += n["self"]
            got_inl[tuple(p["name"] for p in path[k:])] += n["self"]
    for c in n["children"]:
        walk(c, path)
for n in doc["tree"]:
    walk(n, [])
if got_outer != want_outer:
    for k in sorted(set(got_outer) | set(want_outer)):
        if got_outer[k] != want_outer[k]:
            print("  %s: report %d, perf %d" % (";".join(k), got_outer[k], want_outer[k]))
    raise SystemExit("stacks differ from perf script")
# llvm-symbolizer: innermost first per address, blocks separated by blank lines
out = subprocess.run(["llvm-symbolizer-19", "--inlines", "--obj=work"] +
                     ["0x%x" % a for a in leaf_addrs], capture_output=True, text=True).stdout
want_inl = collections.Counter()
for block in out.strip("\n").split("\n\n"):
    names = block.splitlines()[0::2]
    want_inl[tuple(reversed(names))] += 1
assert got_inl == want_inl, (got_inl, want_inl)
assert any(len(k) > 1 for k in got_inl), "no inlined leaf frame sampled"
print("ok perf.data: %d samples, %d in the program, %d stacks, %d leaf inline chains"
      % (len(samples), sum(want_outer.values()), len(want_outer), len(want_inl)))
PY
grep -q '^Sample quality' work.txt
grep -q '  run  \[.*work.c:[0-9]*\]$' work.txt

# 3a. Hybrid samples, no route asked: the CS pipeline (lp_profgen_run ->
#     lp_report_from_profile). The report's stacks are the CS profile's
#     contexts; its quality counts are the profile run's: samples as perf
#     script counts them, external and repaired as the unwinder's warnings
#     say, used + dropped = samples.
"$LBR2PROF" work.data --gen-cs-nested-profile=0 --format=text -o work.cs.prof 2> cs.err
grep -q '^\[main:[0-9]* @ ' work.cs.prof || { echo "no calling context in work.cs.prof"; exit 1; }
report_all work.cs.prof
for f in folded json speedscope; do
    "$LBR2PROF" report work.data --no-demangle --format=$f -o "work.csr.$f" 2> csr.err
done
cmp work.cs.prof.folded work.csr.folded || { echo "CS report of work.data != its CS profile"; diff work.cs.prof.folded work.csr.folded | head; exit 1; }
# its functions keep their source files (profiles open their binaries
# without file names: lp_profgen_opts.file_names asks for them)
grep -Eq '"file": ?"[^"]*work\.c"' work.csr.json || { echo "CS report of work.data: no source file"; exit 1; }
"$PY" check.py work.cs.prof work.csr.folded work.csr.json work.csr.speedscope "$SCHEMA"
"$PY" - <<'PY'
import json, re
doc, q = json.load(open("work.csr.json")), None
q = doc["quality"]
assert doc["context_sensitive"] and doc["input"]["kind"] == "perf-cs", doc["input"]
nsamples = sum(1 for b in open("perf.txt").read().split("\n\n") if b.strip())
err = open("cs.err").read()
ext = re.search(r"\((\d+)/(\d+)\) of samples have leaf external", err)
rep = sum(int(n) for n in re.findall(r"\((\d+)/\d+\) of samples had the caller frame missing[^\n]*it was recovered from", err))
cut = sum(int(n) for n in re.findall(r"\((\d+)/\d+\) of samples (?:had code in frames whose callers are not known|had their call stack truncated)", err))
assert q["samples"] == nsamples and q["used"] + q["dropped"] == q["samples"], (q, nsamples)
assert q["external"] == (int(ext.group(1)) if ext else 0), (q, ext)
assert q["repaired"] == rep, (q, rep)
assert q["truncated"] == min(cut, q["used"]), (q, cut)
inf = re.search(r"\((\d+)/\d+\) of samples had a caller frame that neither", err)
assert q["inferred"] == (int(inf.group(1)) if inf else 0), (q, inf)
assert q["used"] > 0 and q["contextless"] <= q["used"], q
print("ok CS report: %d samples, %d used, %d repaired, %d external" %
      (q["samples"], q["used"], q["repaired"], q["external"]))
PY
# --cs on LBR-only samples: the driver makes the flat profile, as --lbr.
"$LBR2PROF" report --cs --binary="$TOP/tests/data/autofdo/test.binary" \
    "$TOP/tests/data/autofdo/test.lbr" --no-demangle --format=folded -o cs-lbr.folded 2> /dev/null
"$LBR2PROF" report --lbr --binary="$TOP/tests/data/autofdo/test.binary" \
    "$TOP/tests/data/autofdo/test.lbr" --no-demangle --format=folded -o lbr-lbr.folded 2> /dev/null
cmp cs-lbr.folded lbr-lbr.folded || { echo "--cs on LBR-only data differs from --lbr"; exit 1; }
# Hybrid samples whose binary is nowhere (another machine's perf.data): the
# sampled callchains, saying why.
"$LBR2PROF" report "$TOP/tests/data/perf-corpus/perf.data.callgraph_and_branch-3.8" \
    --format=json -o fallback.json 2> fallback.err
grep -q 'no context-sensitive report (.*pass --binary); reporting the sampled callchains' fallback.err
grep -q '"kind": "perf-samples"' fallback.json

# 3b. --lbr: the flat LBR pipeline (the driver with --ignore-stack-samples)
#     + lp_report_from_profile. Its stacks equal those of llvm-profgen-19's
#     profile of the same trace (perf script text, and a perf 3.3 perf.data).
lbr_case() { # name, trace, binary
    llvm-profgen-19 "--$4=$2" --binary="$3" --format=text -o "$1.ref.prof" 2> /dev/null
    "$LBR2PROF" report --lbr --binary="$3" "$2" --no-demangle --format=folded -o "$1.folded" 2> /dev/null
    "$LBR2PROF" report --lbr --binary="$3" "$2" --no-demangle --format=json -o "$1.json" 2> /dev/null
    "$LBR2PROF" report --lbr --binary="$3" "$2" --no-demangle --format=speedscope -o "$1.ss.json" 2> /dev/null
    "$PY" check.py "$1.ref.prof" "$1.folded" "$1.json" "$1.ss.json" "$SCHEMA"
    "$PY" -c 'import json, sys; q = json.load(open(sys.argv[1]))["quality"]; assert q["used"] > 0 and q["contextless"] == q["used"] and q["used"] + q["dropped"] == q["samples"], q' "$1.json"
}
lbr_case lbr-text "$D/noprobe.perfscript" "$D/noprobe.perfbin" perfscript
lbr_case lbr-data "$TOP/tests/data/autofdo/test.lbr" "$TOP/tests/data/autofdo/test.binary" perfdata
# without --binary the binary is looked for as `lbr2prof profile` does; this
# perf script has no mmap, so nothing is found: a clear error
if "$LBR2PROF" report --lbr "$D/noprobe.perfscript" 2> lbr.err; then exit 1; else st=$?; fi
[ $st -eq 2 ] && grep -q 'pass --binary' lbr.err

# 3c. Every perf.data of the corpus (perf 3.2 to 6.8, file and pipe mode,
#     several architectures): valid JSON with consistent totals and folded
#     counts; a pipe-mode file also from standard input, same bytes; the
#     deliberately corrupted one is refused with status 2.
for f in "$TOP"/tests/data/perf-corpus/perf.data.*; do
    b=$(basename "$f")
    case $b in
    *corrupted*)
        if "$LBR2PROF" report "$f" > /dev/null 2> corrupt.err; then exit 1; else st=$?; fi
        [ $st -eq 2 ] && grep -q 'offset 0x' corrupt.err || { echo "$b: status $st"; exit 1; }
        continue ;;
    esac
    "$LBR2PROF" report "$f" --format=json -o "corpus.$b.json"
    "$LBR2PROF" report "$f" --format=folded -o "corpus.$b.folded"
done
"$LBR2PROF" report - --format=json < "$TOP/tests/data/perf-corpus/perf.data.piped.target-3.8" > stdin.json
"$PY" - "$SCHEMA" <<'PY'
import sys, glob, json
sys.path.insert(0, ".")
from check import check_json, read_folded
n = 0
for js in sorted(glob.glob("corpus.*.json")):
    doc = check_json(js, sys.argv[1])
    folded = read_folded(js[:-5] + ".folded")
    assert sum(folded.values()) == doc["total"], js
    q = doc["quality"]
    assert q["used"] + q["dropped"] == q["samples"] and doc["total"] == q["used"], (js, q)
    n += 1
a = json.load(open("corpus.perf.data.piped.target-3.8.json"))
b = json.load(open("stdin.json"))
a["input"]["path"] = b["input"]["path"] = None
assert a == b, "stdin differs"
print("ok corpus: %d files" % n)
PY

# 4. Errors.
if "$LBR2PROF" report /nonexistent/perf.data 2> miss.err; then exit 1; fi
grep -q '/nonexistent/perf.data' miss.err
if "$LBR2PROF" report flat.prof --format=pdf 2> fmt.err; then exit 1; else st=$?; fi
[ $st -eq 2 ] && grep -q "unknown format 'pdf'" fmt.err
printf 'main:1:0\n 1: x\n' > bad.prof
if "$LBR2PROF" report bad.prof -o bad.out 2> bad.err; then exit 1; else st=$?; fi
[ $st -eq 2 ] && grep -q 'bad.prof:2' bad.err && [ ! -e bad.out ]
echo "ok"
