#!/bin/sh
# e2e: reading sample profiles back (`lbr2prof show`, `lbr2prof merge`,
# `lbr2prof report` on binary profiles), compared with llvm-profdata-22 and
# -19 run now:
#   1. Profiles of every kind: lbr2prof's own (flat text/extbinary/binary,
#      MD5, symbol list, FS discriminators; CS flat and nested; the main
#      job's extbinary of inputs/kernel.data; test.lbr; the main job's
#      probe-based extbinary, CS nested, CS flat and LBR-only, of a probe
#      perf script and of a recording of inlining.c built with pseudo
#      probes), llvm-profgen-22's
#      (probe-based CS flat and nested, CS), and llvm-profdata-22's
#      rewrites of them (zlib-compressed, split layout, partial + MD5,
#      legacy binary, text).
#   2. `lbr2prof show` = `llvm-profdata-22 show --sample` for each, with
#      no option, --detailed-summary, --hot-func-list (rows compared as
#      sets: llvm-profdata orders equal totals by hash), --topn,
#      --show-sec-info-only, --show-prof-sym-list, --function, --json.
#   3. Round trips: `lbr2prof merge --text P` = `llvm-profdata-22 merge
#      --sample --text P` byte for byte for every P; for one P of each kind
#      --extbinary/--binary too (byte for byte, or else the same `show` and
#      section flags), llvm-profdata-19 reads what lbr2prof writes as it
#      reads LLVM 22's, and LLVM 19's text equals ours.
#   4. Weighted merges of several inputs (flat, CS, probe-based; a CFG
#      checksum mismatch; saturation; MD5 output; compressed output) =
#      llvm-profdata-22's.
#   5. `report` on the main job's extbinaries (line-based and probe-based)
#      = `report` on their text (made by llvm-profdata-22).
#   6. Malformed profiles: every truncation and byte flips of an extbinary
#      and a legacy binary exit 2 with the file and offset named (never a
#      crash: checked against signals); raw inputs to merge are refused
#      with the hook's message; bad weights.
set -eu
for t in llvm-profdata-22 llvm-profdata-19 llvm-profgen-22 clang-19; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not installed"; exit 77; }
done
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
D="$TOP/tests/data/llvm-profgen-inputs"
L="$LBR2PROF"
cd "$WORK"
fail() { echo "FAIL: $*"; exit 1; }

# ---- 1. profiles ------------------------------------------------------------
gen() { # name perfscript-base [lbr2prof options]
    n=$1 b=$2; shift 2
    "$L" --perfscript="$D/$b.perfscript" --binary="$D/$b.perfbin" -o "$n" "$@" 2>/dev/null
}
gen flat.txt inline-noprobe2 --format=text
gen flat.ext inline-noprobe2
gen flat.bin inline-noprobe2 --format=binary
gen flat.md5 inline-noprobe2 --use-md5
gen sym.ext inline-noprobe2 --populate-profile-symbol-list
gen cs.txt noinline-cs-noprobe --format=text --gen-cs-nested-profile=0
gen cs.ext noinline-cs-noprobe --gen-cs-nested-profile=0
gen csmd5.ext noinline-cs-noprobe --gen-cs-nested-profile=0 --use-md5
gen nested.ext noinline-cs-noprobe
gen csp.ext cs-preinline-cost --use-dwarf-correlation
"$L" --unsymbolized-profile="$D/fs-discriminator.raw.prof" --binary="$D/fs-discriminator.perfbin" -o fs.ext 2>/dev/null
"$L" "$TOP/inputs/kernel.data" -o main.ext 2>/dev/null
"$L" "$TOP/inputs/kernel.data" -o mainflat.ext --gen-cs-nested-profile=0 2>/dev/null
"$L" "$TOP/inputs/test.lbr" --binary "$TOP/inputs/test.binary" -o lbr.ext 2>/dev/null
# the main job's probe-based profiles: a probe perf script, and a recording
# of a probe build
gen mprobe.ext noinline-cs-pseudoprobe
gen mprobeflat.ext noinline-cs-pseudoprobe --gen-cs-nested-profile=0
gen mprobelbr.ext noinline-cs-pseudoprobe --ignore-stack-samples
clang-19 -O2 -g -fno-omit-frame-pointer -fpseudo-probe-for-profiling -o inlining \
    "$TOP/tests/workloads/inlining.c"
"$L" record --simulate -c 97 --seed 3 -o rec.data -- ./inlining 8000 >/dev/null 2>&1
"$L" rec.data --binary=inlining -o mrec.ext 2>/dev/null
"$L" rec.data --binary=inlining -o mrecflat.ext --gen-cs-nested-profile=0 2>/dev/null
pg() { # name perfscript-base [llvm-profgen-22 options]
    n=$1 b=$2; shift 2
    llvm-profgen-22 --perfscript="$D/$b.perfscript" --binary="$D/$b.perfbin" --output="$n" "$@" 2>/dev/null
}
pg probe.txt noinline-cs-pseudoprobe --format=text
pg probecs.ext inline-cs-pseudoprobe --gen-cs-nested-profile=0
pg probenest.ext inline-cs-pseudoprobe
pg probe2.ext noinline-cs-pseudoprobe --gen-cs-nested-profile=0
pg recur.ext recursion-compression-noprobe --gen-cs-nested-profile=0
for f in flat.ext sym.ext cs.ext probecs.ext probenest.ext; do
    b=${f%.ext}
    llvm-profdata-22 merge --sample --compress-all-sections $f -o $b.z.ext
    llvm-profdata-22 merge --sample --gen-partial-profile --use-md5 $f -o $b.pmd5.ext
    llvm-profdata-22 merge --sample --text $f -o $b.m.txt
done
llvm-profdata-22 merge --sample --split-layout flat.ext -o flat.split.ext
llvm-profdata-22 merge --sample --binary sym.ext -o sym.bin 2>/dev/null
ALL="flat.txt flat.ext flat.bin flat.md5 sym.ext cs.txt cs.ext csmd5.ext nested.ext
csp.ext fs.ext main.ext mainflat.ext lbr.ext probe.txt probecs.ext probenest.ext
probe2.ext recur.ext flat.z.ext sym.z.ext cs.z.ext probecs.z.ext probenest.z.ext
flat.pmd5.ext sym.pmd5.ext cs.pmd5.ext probecs.pmd5.ext probenest.pmd5.ext
flat.m.txt cs.m.txt probecs.m.txt probenest.m.txt flat.split.ext sym.bin
mprobe.ext mprobeflat.ext mprobelbr.ext mrec.ext mrecflat.ext"
n=0
for f in $ALL; do
    [ -s $f ] || fail "$f was not made"
    n=$((n + 1))
done
grep -q '!CFGChecksum' probe.txt || fail "probe.txt has no checksums"
for f in mprobe.ext mprobeflat.ext mprobelbr.ext mrec.ext mrecflat.ext; do
    llvm-profdata-22 show --sample --show-sec-info-only $f | grep -q 'FunctionMetadata.*probe' ||
        fail "$f is not probe-based"
done
llvm-profdata-22 show --sample mrec.ext | grep -q 'Samples collected in inlined callsites' ||
    fail "mrec.ext is not nested"
llvm-profdata-22 show --sample --show-sec-info-only flat.z.ext | grep -q compressed || fail "no compressed section"
llvm-profdata-22 show --sample --show-sec-info-only fs.ext | grep -q fs-discriminator || fail "no FS flag"
llvm-profdata-22 show --sample --show-sec-info-only csmd5.ext | grep -q fixlenmd5 || fail "no MD5 CS"

# ---- 2. show ----------------------------------------------------------------
same() { # what file1 file2
    cmp -s "$2" "$3" || { diff "$2" "$3" | head -20; fail "$1"; }
}
# header lines as they are, the table rows as a set
rows() { sed -n '1,3p' "$1"; sed '1,3d' "$1" | sort; }
checks=0
for f in $ALL; do
    for o in "" --detailed-summary; do
        "$L" show $o $f > a.out
        llvm-profdata-22 show --sample $o $f > b.out
        same "show $o $f" a.out b.out
        checks=$((checks + 1))
    done
    "$L" show --hot-func-list $f | awk '/ out of .* functions with profile/{p=1} p' > a.raw
    llvm-profdata-22 show --sample --hot-func-list $f | awk '/ out of .* functions with profile/{p=1} p' > b.raw
    rows a.raw > a.out
    rows b.raw > b.out
    same "show --hot-func-list $f" a.out b.out
    checks=$((checks + 1))
    case $f in *.txt|*.bin) continue ;; esac
    "$L" show --show-sec-info-only $f > a.out
    llvm-profdata-22 show --sample --show-sec-info-only $f > b.out
    same "show --show-sec-info-only $f" a.out b.out
    checks=$((checks + 1))
done
# JSON (--json, --show-format=json) for one profile of each kind
for f in flat.ext flat.md5 cs.ext nested.ext probecs.ext probenest.z.ext main.ext lbr.ext \
    mprobeflat.ext mrec.ext; do
    "$L" show --show-format=json $f > a.out
    llvm-profdata-22 show --sample --json $f > b.out
    same "show --json $f" a.out b.out
done
"$L" show --json --function=main flat.ext > /dev/null 2> a.err && fail "--json --function accepted"
grep -q 'JSON format is supported only when all functions' a.err
# exact order where totals are distinct
"$L" show --topn=2 flat.ext > a.out
llvm-profdata-22 show --sample --topn=2 flat.ext > b.out
same "show --topn=2 flat.ext" a.out b.out
for f in sym.ext sym.z.ext; do
    "$L" show --show-prof-sym-list $f > a.out
    llvm-profdata-22 show --sample --show-prof-sym-list $f > b.out
    same "show --show-prof-sym-list $f" a.out b.out
    grep -q '^main$' a.out || fail "no symbol list in $f"
done
for fn in main swap; do
    for f in flat.ext flat.md5 flat.txt; do
        "$L" show --function=$fn $f > a.out
        llvm-profdata-22 show --sample --function=$fn $f > b.out
        same "show --function=$fn $f" a.out b.out
    done
done
# a function that is not there: the same empty profile and a warning
"$L" show --function=nosuch flat.ext > a.out 2> a.err
llvm-profdata-22 show --sample --function=nosuch flat.ext > b.out
same "show --function=nosuch" a.out b.out
grep -q "no profile of function 'nosuch'" a.err || fail "no warning for a missing function"
# a CS context (llvm-profdata finds none: it looks names up, not contexts)
"$L" show --function='main:1 @ foo' cs.ext > a.out
grep -q '^Function: main:1 @ foo: ' a.out || fail "show --function=CONTEXT"
echo "ok show: $n profiles, $checks comparisons"

# ---- 3. round trips -----------------------------------------------------------
flags() { llvm-profdata-22 show --sample --show-sec-info-only "$1" | sed 's/ - Offset.*Flags//'; }
# one profile of each kind in every format; the text of every profile
SOME="flat.txt flat.md5 sym.ext cs.ext csmd5.ext nested.ext fs.ext main.ext
probe.txt probecs.z.ext probenest.pmd5.ext flat.split.ext sym.bin mrec.ext mprobelbr.ext"
rt=0
for f in $SOME; do
    for fmt in extbinary binary; do
        if ! llvm-profdata-22 merge --sample --$fmt $f -o ref.out 2>/dev/null; then
            # LLVM writes no CS or probe-based profile as binary: neither do we
            "$L" merge --$fmt $f -o mine.out 2>/dev/null && fail "merge --$fmt $f accepted"
            continue
        fi
        "$L" merge --$fmt $f -o mine.out
        if ! cmp -s mine.out ref.out; then
            llvm-profdata-22 show --sample mine.out > a.out
            llvm-profdata-22 show --sample ref.out > b.out
            same "merge --$fmt $f (show)" a.out b.out
            [ $fmt = binary ] || { flags mine.out > a.out; flags ref.out > b.out; same "merge --$fmt $f (flags)" a.out b.out; }
        fi
        # LLVM 19 reads ours as it reads LLVM 22's
        llvm-profdata-19 show --sample mine.out > a.out
        llvm-profdata-19 show --sample ref.out > b.out
        same "llvm-profdata-19 show of merge --$fmt $f" a.out b.out
        rt=$((rt + 1))
    done
done
for f in $ALL; do
    llvm-profdata-22 merge --sample --text $f -o ref.out
    "$L" merge --text $f -o mine.out
    same "merge --text $f" mine.out ref.out
    rt=$((rt + 1))
done
# LLVM 19's text writer agrees too
for f in $SOME; do
    llvm-profdata-19 merge --sample --text $f -o ref.out
    "$L" merge --text $f -o mine.out
    same "llvm-profdata-19 merge --text $f" mine.out ref.out
    rt=$((rt + 1))
done
echo "ok round trips: $rt"

# ---- 4. weighted merges ---------------------------------------------------------
mrg() { # lbr2prof merge args = llvm-profdata-22 merge --sample args, byte for byte
    "$L" merge "$@" -o mine.out 2> mine.err
    llvm-profdata-22 merge --sample "$@" -o ref.out 2> ref.err
    cmp -s mine.out ref.out || { diff mine.out ref.out | head; fail "merge $*"; }
}
mrg --text flat.ext sym.ext
mrg --text --weighted-input=3,flat.ext sym.ext --weighted-input=7,flat.bin
mrg --weighted-input=3,flat.ext --weighted-input=7,sym.ext
mrg --text cs.ext mainflat.ext --weighted-input=5,cs.txt
mrg --text probecs.ext --weighted-input=2,probe2.ext
mrg --text probenest.ext --weighted-input=4,probe.txt
mrg --text mrec.ext --weighted-input=2,mprobe.ext
mrg --text mrecflat.ext --weighted-input=3,mprobeflat.ext
mrg --use-md5 --weighted-input=2,flat.ext lbr.ext
mrg --compress-all-sections --weighted-input=2,flat.ext lbr.ext
mrg --text flat.md5 flat.pmd5.ext
printf '# a list\n3,flat.ext\nsym.ext\n' > list.txt
mrg --text --input-files=list.txt
mrg --text --weighted-input=18446744073709551615,flat.ext
grep -q 'counter overflow' mine.err || fail "no overflow warning"
sed 's/^ !CFGChecksum: [0-9]*$/ !CFGChecksum: 1234/' probe.txt > probe.bad.txt
mrg --text probe.txt probe.bad.txt
grep -q 'function hash mismatch' mine.err || fail "no hash mismatch warning"
# merging a profile with itself doubles its counts
"$L" merge --text flat.ext flat.ext -o twice.txt
"$L" merge --text --weighted-input=2,flat.ext -o double.txt
same "A+A = 2A" twice.txt double.txt
# kinds that do not mix, as llvm-profdata
"$L" merge flat.ext cs.ext -o x.out 2> x.err && fail "flat + CS merged"
grep -q 'cannot merge CS profile with non-CS profile' x.err
"$L" merge flat.ext probe.txt -o x.out 2> x.err && fail "probe + non-probe merged"
grep -q 'cannot merge probe-based profile' x.err
"$L" merge --weighted-input=0,flat.ext -o x.out 2> x.err && fail "weight 0 accepted"
grep -q 'input weight must be a positive integer' x.err
"$L" merge --failure-mode=warn flat.ext "$D/noprobe.perfscript" --text -o x.out 2> x.err
grep -q 'skipped' x.err || fail "--failure-mode=warn"
"$L" merge flat.ext "$D/noprobe.perfscript" --text -o x.out 2> x.err && fail "a bad input merged"
echo "ok weighted merges"

# ---- 5. report on the main job's extbinaries ---------------------------------------
for f in main mrec mrecflat mprobe mprobelbr; do
    llvm-profdata-22 merge --sample --text $f.ext -o $f.txt
    for fmt in folded text; do
        "$L" report --format=$fmt $f.ext > a.out
        "$L" report --format=$fmt $f.txt > b.out
        sed -i "s/$f\\.ext/INPUT/g" a.out
        sed -i "s/$f\\.txt/INPUT/g" b.out
        same "report --format=$fmt $f.ext" a.out b.out
    done
    [ "$(wc -l < a.out)" -gt 5 ] || fail "report of $f.ext is empty"
done
echo "ok report"

# ---- 6. malformed profiles ------------------------------------------------------
crashes=0 errs=0
bad() { # file: exit 2 with "FILE: offset 0x" (binary) and no crash
    set +e
    "$L" show "$1" > /dev/null 2> bad.err
    st=$?
    set -e
    [ $st -lt 128 ] || { crashes=$((crashes + 1)); echo "crash on $1"; cat bad.err; }
    [ $st -ne 0 ] || return 0 # a flip can give another valid profile
    [ $st -eq 2 ] || fail "status $st on $1: $(cat bad.err)"
    grep -q "$1: " bad.err || fail "message without the file: $(cat bad.err)"
    errs=$((errs + 1))
}
for f in csmd5.ext probenest.z.ext sym.bin; do
    size=$(wc -c < $f)
    i=0
    while [ $i -lt "$size" ]; do
        head -c $i $f > cut.prof
        bad cut.prof
        grep -q 'offset 0x\|empty file\|no sample profile' bad.err || fail "no offset: $(cat bad.err)"
        i=$((i + 29))
    done
done
"$PY" - csmd5.ext probenest.z.ext <<'PY'
import sys
for f in sys.argv[1:]:
    d = bytearray(open(f, 'rb').read())
    for i in range(0, len(d), 23):
        e = bytearray(d); e[i] ^= 0xff
        open('%s.flip%d' % (f, i), 'wb').write(e)
PY
for f in *.flip*; do bad $f; done
[ $crashes -eq 0 ] || fail "$crashes crashes"
printf 'main:10:1\n 1: 5\n 2 x\n' > bad.txt
"$L" show bad.txt > /dev/null 2> bad.err && fail "bad text accepted"
grep -q 'bad.txt:3: ' bad.err || fail "text error without its line: $(cat bad.err)"
: > empty.prof
"$L" show empty.prof 2> bad.err && fail "empty file accepted"
grep -q 'empty file' bad.err
# llvm-profgen's raw (unsymbolized) profiles: no header naming the binaries,
# so not merged (lbr2prof's own, --raw-header, are: test_rawmerge.sh)
"$L" merge "$D/out-of-bounds.raw.prof" -o x.out 2> bad.err && fail "raw merged"
grep -q "unsymbolized profile without lbr2prof's header" bad.err || fail "raw: $(cat bad.err)"
"$L" merge "$D/out-of-bounds.raw.prof" flat.ext -o x.out 2> bad.err && fail "raw + sample merged"
grep -q "without lbr2prof's header" bad.err || fail "raw + sample: $(cat bad.err)"
echo "ok malformed: $errs errors, no crash"
echo ok
