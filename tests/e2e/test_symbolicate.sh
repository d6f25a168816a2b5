#!/bin/sh
# e2e: dump-syms and symbolicate against the reference llvm-symbolizer-19.
# Compiles a small C program with inlined calls (PIE and non-PIE), writes
# its .sym with `lbr2prof dump-syms`, symbolicates every line-record
# address and every function start (from llvm-nm-19) once through the .sym
# store and once straight from the ELF: the two responses must be equal,
# and function/file/line/inline chain must match llvm-symbolizer-19 run now.
set -eu
for t in clang-19 llvm-symbolizer-19 llvm-nm-19 python3; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not installed"; exit 77; }
done
# The system python3 (a version-manager shim can cost 0.3 s per start).
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
cd "$WORK"

mkdir -p inc
cat > inc/inl.h <<'C'
static inline __attribute__((always_inline)) int from_header(int x) { return x ^ (x >> 3); }
C
cat > prog.c <<'C'
#include <stdio.h>
#include <stdlib.h>
#include "inl.h"
extern int helper(int x);
static volatile int sink;
static inline __attribute__((always_inline)) int leaf(int x) { sink = x; return x * 3 + sink; }
static inline __attribute__((always_inline)) int middle(int x) { int r = leaf(x + 1); sink = r; return r + leaf(r); }
__attribute__((noinline)) int work(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += middle(i) + from_header(s);
    return s;
}
__attribute__((noinline)) int rec(int n) { return n <= 0 ? sink : rec(n - 1) + helper(n); }
int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 10;
    printf("%d %d\n", work(n), rec(n % 7));
    return 0;
}
C
cat > helper.c <<'C'
static volatile int h;
static inline __attribute__((always_inline)) int twice(int x) { h = x; return x + h; }
int helper(int x) { return twice(x) + 1; }
C

check() { # name, clang flags
    name=$1; shift
    clang-19 -g -O2 -Iinc "$@" -o "$name" prog.c helper.c
    check_built "$name"
}

check_built() { # name (built in $WORK)
    name=$1
    "$LBR2PROF" dump-syms --id "$name" > id.txt
    id=$(sed -n 's/^debug_id //p' id.txt)
    [ ${#id} -eq 33 ] || { echo "bad debug id '$id'"; exit 1; }
    mkdir -p "store/$name/$id"
    "$LBR2PROF" dump-syms "$name" -o "store/$name/$id/$name.sym"
    grep -q '^INLINE ' "store/$name/$id/$name.sym" || { echo "no INLINE records"; exit 1; }
    llvm-nm-19 --defined-only "$name" > nm.txt
    "$PY" - "$name" "$id" "store/$name/$id/$name.sym" nm.txt > req.json <<'PY'
import sys, json, subprocess
name, did, sym, nm = sys.argv[1:5]
# module load address = lowest PT_LOAD vaddr (from readelf-independent parse)
out = subprocess.run(["llvm-readelf-19", "-lW", name], capture_output=True, text=True).stdout
base = min(int(l.split()[2], 16) for l in out.splitlines() if l.strip().startswith("LOAD"))
offs = set()
for l in open(sym):
    p = l.split()
    if p and all(c in "0123456789abcdef" for c in p[0]) and len(p) == 4:
        offs.add(int(p[0], 16))
for l in open(nm):
    p = l.split()
    if len(p) == 3 and p[1] in "tT":
        offs.add(int(p[0], 16) - base)
offs = sorted(offs)
json.dump({"base": base, "offsets": offs,
           "req": {"jobs": [{"memoryMap": [[name, did]], "stacks": [[[0, o] for o in offs]]}]}},
          open("meta.json", "w"))
print(json.dumps({"jobs": [{"memoryMap": [[name, did]], "stacks": [[[0, o] for o in offs]]}]}))
PY
    "$LBR2PROF" symbolicate --symbols store req.json > via_sym.json
    "$LBR2PROF" symbolicate --binary "$name" req.json > via_elf.json
    cmp via_sym.json via_elf.json || { echo "$name: .sym and ELF responses differ"; diff via_sym.json via_elf.json | head; exit 1; }
    "$PY" - "$name" <<'PY'
import sys, json, subprocess
name = sys.argv[1]
meta = json.load(open("meta.json"))
resp = json.load(open("via_sym.json"))
res = resp["results"][0]
assert list(res["found_modules"].values()) == [True], res["found_modules"]
frames = res["stacks"][0]
addrs = [hex(meta["base"] + o) for o in meta["offsets"]]
ref = subprocess.run(["llvm-symbolizer-19", "--obj=" + name, "--inlines", "--output-style=JSON"] + addrs,
                     capture_output=True, text=True, check=True).stdout
ref = json.loads(ref)  # one array for all the addresses
assert len(ref) == len(frames)
checked = inl = 0
for fr, r in zip(frames, ref):
    syms = [s for s in r["Symbol"] if s.get("FunctionName")]
    if not syms:
        assert "function" not in fr, fr
        continue
    ours = (fr.get("inlines") or []) + [fr]
    got = [(x.get("function"), x.get("file"), x.get("line", 0)) for x in ours]
    # Code known only from the symbol table: llvm prints line 0 and a file
    # from STT_FILE symbols; the service omits the line (0 is unknown) and
    # .sym has no file there.
    exp = [(s["FunctionName"], s["FileName"] or None, s["Line"]) for s in syms]
    got = [(f, fi if (fi or l) else e[1], l) if e[2] == 0 else (f, fi, l)
           for (f, fi, l), e in zip(got, exp)] if len(got) == len(exp) else got
    if got != exp:
        print("mismatch at", fr["module_offset"], "\n ours", got, "\n llvm", exp)
        sys.exit(1)
    start = syms[-1].get("StartAddress")
    if start:
        fo = int(start, 16) - meta["base"]
        if hex(int(fr["module_offset"], 16) - fo) != fr["function_offset"]:
            print("function_offset mismatch at", fr["module_offset"], fr["function_offset"], start)
            sys.exit(1)
    checked += 1
    inl += len(ours) > 1
print(name, "frames checked:", checked, "with inlines:", inl, "of", len(frames))
if checked < 20 or inl < 3:
    print("too few frames compared"); sys.exit(1)
PY
}

check prog_pie -fPIE -pie
check prog_nopie -fno-PIE -no-pie
# Relative comp_dir and include directories (as distributions build):
# paths must be joined like llvm-symbolizer does ("./inc/inl.h").
check prog_rel -fdebug-prefix-map="$WORK"=. -fPIE -pie
# Split DWARF: the functions, lines and inlines are in .dwo files, a .dwp
# package, or (-gsplit-dwarf=single) the .o files themselves.
check prog_dwo -gsplit-dwarf -fPIE -pie
if command -v llvm-dwp-19 >/dev/null 2>&1; then
    clang-19 -g -O2 -gdwarf-4 -gsplit-dwarf -Iinc -c prog.c -o pk_prog.o
    clang-19 -g -O2 -gdwarf-4 -gsplit-dwarf -Iinc -c helper.c -o pk_helper.o
    clang-19 pk_prog.o pk_helper.o -o prog_dwp
    llvm-dwp-19 -e prog_dwp -o prog_dwp.dwp && rm pk_prog.dwo pk_helper.dwo
    check_built prog_dwp
fi
for v in 4 5; do
    clang-19 -g -O2 -gdwarf-$v -gsplit-dwarf=single -Iinc -c prog.c -o s${v}_prog.o
    clang-19 -g -O2 -gdwarf-$v -gsplit-dwarf=single -Iinc -c helper.c -o s${v}_helper.o
    clang-19 s${v}_prog.o s${v}_helper.o -o prog_single$v
    check_built prog_single$v
done
if command -v gcc >/dev/null 2>&1; then
    gcc -g -O2 -gsplit-dwarf -Iinc -c prog.c -o g_prog.o
    gcc -g -O2 -gsplit-dwarf -Iinc -c helper.c -o g_helper.o
    gcc g_prog.o g_helper.o -o prog_gcc_dwo
    check_built prog_gcc_dwo
fi

# Seed 000 on a real call: a return address after `call work` in main,
# with --adjust=all_but_first, is looked up one byte earlier, inside the
# call, and must give llvm-symbolizer's answer for that byte (the leaf stays
# as it is).
if command -v llvm-objdump-19 >/dev/null 2>&1; then
    ret=$(llvm-objdump-19 -d --no-show-raw-insn prog_pie | awk '/<main>:/,/^$/' |
          grep -A1 'call.*<work>' | sed -n '2s/^ *\([0-9a-f]*\):.*/\1/p')
    leaf=$(llvm-nm-19 prog_pie | awk '$3 == "work" { print $1 }')
    id=$("$LBR2PROF" dump-syms --id prog_pie | sed -n 's/^debug_id //p')
    printf '{"memoryMap":[["prog_pie","%s"]],"stacks":[[[0,%s],[0,%s]]]}' "$id" $((0x$leaf)) $((0x$ret)) > adj.json
    "$LBR2PROF" symbolicate --binary prog_pie --adjust=all_but_first adj.json > adj.out
    "$PY" - "$ret" "$leaf" <<'PY'
import json, subprocess, sys
ret, leaf = int(sys.argv[1], 16), int(sys.argv[2], 16)
fr = json.load(open("adj.out"))["results"][0]["stacks"][0]
assert fr[0]["lookup_offset"] == hex(leaf) and fr[0]["module_offset"] == hex(leaf), fr[0]
assert fr[1]["module_offset"] == hex(ret) and fr[1]["lookup_offset"] == hex(ret - 1), fr[1]
ref = json.loads(subprocess.run(["llvm-symbolizer-19", "--obj=prog_pie", "--inlines", "--output-style=JSON",
                                 hex(ret - 1)], capture_output=True, text=True, check=True).stdout)
exp = [(s["FunctionName"], s["FileName"], s["Line"]) for s in ref[0]["Symbol"]]
got = [(x["function"], x.get("file"), x.get("line", 0)) for x in (fr[1].get("inlines") or []) + [fr[1]]]
assert exp[-1][0] == "main" and got == exp, (got, exp)
print("adjusted call site", hex(ret), "->", hex(ret - 1), got)
PY
fi

# Identical code folding (lld --icf=all): the folded copy's DWARF range is a
# tombstone at address 0 and must not become a FUNC; the kept FUNC carries
# "m" (several symbols at one address), as dump_syms writes.
if command -v ld.lld-19 >/dev/null 2>&1 || command -v ld.lld >/dev/null 2>&1; then
    printf 'int f1(int x) { return x * 7 + 1; }\nint f2(int x) { return x * 7 + 1; }\nint main(int c, char **v) { (void)v; return f1(c) + f2(c); }\n' > icf.c
    if clang-19 -g -O2 -ffunction-sections -fuse-ld=lld -Wl,--icf=all -o icf icf.c 2> icf.err; then
        "$LBR2PROF" dump-syms icf > icf.sym
        ! grep -q '^FUNC \(m \)\?0 ' icf.sym || { echo "tombstone FUNC at 0"; cat icf.sym; exit 1; }
        grep -q '^FUNC m [0-9a-f]* c 0 f[12]$' icf.sym || { echo "no folded FUNC m"; cat icf.sym; exit 1; }
        [ "$(grep -c '^FUNC ' icf.sym)" -eq 2 ]
    fi
fi

# Separate debug files: the GNU .build-id layout (--debug-dir), found from
# the debug id alone; same answers as from the unstripped ELF.
if command -v llvm-objcopy-19 >/dev/null 2>&1; then
    bid=$("$LBR2PROF" dump-syms --id prog_pie | sed -n 's/^code_id //p' | tr 'A-F' 'a-f')
    d=$(echo "$bid" | cut -c1-2); rest=$(echo "$bid" | cut -c3-)
    mkdir -p "dbg/.build-id/$d"
    llvm-objcopy-19 --only-keep-debug prog_pie "dbg/.build-id/$d/$rest.debug"
    id=$("$LBR2PROF" dump-syms --id prog_pie | sed -n 's/^debug_id //p')
    printf '{"memoryMap":[["prog_pie","%s"]],"stacks":[[[0,%s],[0,%s]]]}' "$id" \
        $((0x$(llvm-nm-19 prog_pie | awk '$3 == "work" { print $1 }') + 4)) \
        $((0x$(llvm-nm-19 prog_pie | awk '$3 == "helper" { print $1 }'))) > dbg.json
    "$LBR2PROF" symbolicate --debug-dir dbg dbg.json > via_dbg.json
    "$LBR2PROF" symbolicate --binary prog_pie dbg.json > via_bin.json
    cmp via_dbg.json via_bin.json || { echo "--debug-dir differs:"; cat via_dbg.json via_bin.json; exit 1; }
    grep -q '"function":"work"' via_dbg.json && grep -q '"function":"helper"' via_dbg.json
fi

# Binaries built elsewhere (tests/data: clang and gcc, C and C++, PIE and
# not, split functions, coroutines, unique linkage names): every line-record
# address through --binary against llvm-symbolizer-19. Tolerated: the outer
# name llvm takes from the symbol table for split parts (main.cold.0), and
# demangler spellings.
cat > data_check.py <<'PY'
import sys, json, subprocess, re
lbr, name = sys.argv[1:3]
idtxt = subprocess.run([lbr, "dump-syms", "--id", name], capture_output=True, text=True, check=True).stdout
did = [l.split()[1] for l in idtxt.splitlines() if l.startswith("debug_id")][0]
sym = subprocess.run([lbr, "dump-syms", name], capture_output=True, text=True, check=True).stdout
out = subprocess.run(["llvm-readelf-19", "-lW", name], capture_output=True, text=True).stdout
base = min(int(l.split()[2], 16) for l in out.splitlines() if l.strip().startswith("LOAD"))
offs = set()
for l in sym.splitlines():
    p = l.split()
    if p and len(p) == 4 and all(c in "0123456789abcdef" for c in p[0]):
        offs.add(int(p[0], 16))
offs = sorted(offs)
req = json.dumps({"jobs": [{"memoryMap": [["x", did]], "stacks": [[[0, o] for o in offs]]}]})
resp = json.loads(subprocess.run([lbr, "symbolicate", "--binary", name], input=req, capture_output=True, text=True, check=True).stdout)
frames = resp["results"][0]["stacks"][0]
addrs = [hex(base + o) for o in offs]
ref = json.loads(subprocess.run(["llvm-symbolizer-19", "--obj=" + name, "--inlines", "--output-style=JSON"] + addrs, capture_output=True, text=True, check=True).stdout) if addrs else []
bad = 0
for fr, r in zip(frames, ref):
    syms = [s for s in r["Symbol"] if s.get("FunctionName") and s["FunctionName"] != "??"]
    if not syms: continue
    # Demangler spellings: GNU "[clone .x]" / "decltype(nullptr)" are LLVM's
    # " (.x)" / "std::nullptr_t".
    for x in (fr.get("inlines") or []) + [fr]:
        if "function" in x:
            x["function"] = re.sub(r" \[clone (\.[^\]]*)\]", r" (\1)", x["function"]).replace(
                "decltype(nullptr)", "std::nullptr_t")
    ours = (fr.get("inlines") or []) + [fr]
    got = [(x.get("function"), x.get("file"), x.get("line", 0)) for x in ours]
    exp = [(s["FunctionName"], s["FileName"] or None, s["Line"]) for s in syms]
    # llvm-symbolizer names the outer frame from the symbol table (split
    # parts: main.cold.0, ticker(int) (.resume)); .sym uses the DWARF name.
    if got and exp and len(got) == len(exp) and got[-1] != exp[-1] and got[-1][1:] == exp[-1][1:] and \
            exp[-1][0].startswith(got[-1][0]) and exp[-1][0][len(got[-1][0]):][:1] in (".", " "):
        got[-1] = exp[-1]
    if got != exp:
        bad += 1
        if bad <= 3: print(" mismatch", fr["module_offset"], "\n  ours", got, "\n  llvm", exp)
print(name.split("/")[-1], len(frames), "frames,", bad, "mismatches")
sys.exit(1 if bad else 0)
PY
for b in "$TOP"/tests/data/llvm-profgen-inputs/*.perfbin "$TOP"/tests/data/autofdo/test.binary; do
    "$PY" data_check.py "$LBR2PROF" "$b"
done

# v4 through the ELF index and a missing module (knownModules false).
id=$("$LBR2PROF" dump-syms --id prog_pie | sed -n 's/^debug_id //p')
hex=$(llvm-nm-19 prog_pie | awk '$3 == "work" { print $1 }')
off=$((0x$hex))
printf '{"memoryMap":[["prog_pie","%s"],["nothere.so","ABC"]],"stacks":[[[0,%s],[1,16]]],"version":4}' "$id" "$off" > v4.json
"$LBR2PROF" symbolicate --api=v4 --binary . v4.json > v4.out
cat v4.out
grep -q '"work (in prog_pie)"' v4.out
grep -q '"0x10 (in nothere.so)"' v4.out
grep -q '"knownModules":\[true,false\]' v4.out

# Bad input: exit status 2 with the service's title, never a crash.
set +e
echo '{"memoryMap":[["../../etc/passwd","AB"]],"stacks":[[[0,1]]]}' | "$LBR2PROF" symbolicate --symbols store - 2> err.txt
st=$?
set -e
[ $st -eq 2 ] || { echo "status $st"; exit 1; }
grep -q 'module index 0 has an invalid debug_filename' err.txt
set +e
"$LBR2PROF" dump-syms prog.c > /dev/null 2> err.txt; st=$?
set -e
[ $st -eq 2 ] && grep -q 'not an ELF file' err.txt
head -c 12000 prog_pie > cut.bin
set +e
"$LBR2PROF" dump-syms cut.bin > /dev/null 2> err.txt; st=$?
set -e
[ $st -eq 2 ] && grep -q 'truncated ELF file' err.txt
echo PASS
