#!/bin/sh
# test_rawmerge.sh - mergeable raw profiles: any split of the traces into
# shards, merged in any tree, then generated once, gives the single run's
# profile byte for byte.
#
# Three recordings (helpers/recordings.sh: kernel.c twice at two ASLR
# bases, inlining.c). Each trace is a shard (`--skip-symbolization
# --raw-header`), plus one shard of two traces; they are merged in three
# trees - ((k1 k2) i1), (i1 (k2 k1)) and the two-trace shard with i1 -
# and in one flat merge in reverse order: the merged raw profiles are
# identical, equal the single run's raw profile over the three traces, and
# `--unsymbolized-profile` of them equals the single run's profile, in
# each mode: CS line-based (extbinary, default options), CS text with two
# binaries, --no-repair-frames, flat (--ignore-stack-samples).
# The same for pseudo-probe builds of the programs (address contexts, kind
# probe): CS extbinary and text with the default options and with the flat
# CS options (no pre-inliner, not nested; two binaries), LBR-only; and a
# program with probes calling its library with probes, which calls back
# (mixed.c, three runs: contexts from one binary into the other). A probe
# shard merged with itself doubles; line contexts of the probe binary
# (--use-dwarf-correlation) are another kind, refused by merge and by
# generation without that flag, and generated with it as the direct run.
# Also: without --raw-header the raw profile is llvm-profgen's (no '#'
# lines, the rest identical); a shard merged with itself has every count
# doubled; mismatched binaries (another build of kernel.c under the same
# name), other counting options, flat with CS, and a headerless file are
# errors naming the files; the binaries are found from the header when no
# --binary is given, and a wrong --binary is refused.
set -u
W=$WORK
cd "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
. "$TOP/tests/e2e/helpers/recordings.sh"
L=$LBR2PROF

make_recordings

# trees MODE-NAME OPTIONS...: over the traces $A and $B (one program, two
# runs) and $C
A=k1 B=k2 C=i1
trees() {
    name=$1
    shift
    "$L" $A.data $B.data $C.data "$@" -o single.prof 2> single.err ||
        { cat single.err; fail "$name: single run"; }
    "$L" $A.data $B.data $C.data "$@" --skip-symbolization --raw-header \
        -o single.raw 2> /dev/null || fail "$name: single raw"
    for d in $A $B $C; do
        "$L" $d.data "$@" --skip-symbolization --raw-header -o $d.raw 2> $d.err ||
            { cat $d.err; fail "$name: shard $d"; }
    done
    "$L" $B.data $A.data "$@" --skip-symbolization --raw-header -o ba.raw 2> /dev/null ||
        fail "$name: shard $B+$A"
    "$L" merge -o a.raw $A.raw $B.raw && "$L" merge -o t1.raw a.raw $C.raw &&
        "$L" merge -o b.raw $B.raw $A.raw && "$L" merge -o t2.raw $C.raw b.raw &&
        "$L" merge -o t3.raw $C.raw ba.raw && "$L" merge -o t4.raw $C.raw $B.raw $A.raw ||
        fail "$name: merge"
    for t in t2 t3 t4; do
        cmp -s t1.raw $t.raw || { diff t1.raw $t.raw | head; fail "$name: tree $t differs from t1"; }
    done
    cmp -s t1.raw single.raw || { diff t1.raw single.raw | head; fail "$name: merged raw differs from one run's"; }
    for t in t1 t2 t3; do
        "$L" --unsymbolized-profile=$t.raw "$@" -o $t.prof 2> gen.err ||
            { cat gen.err; fail "$name: generate $t"; }
        cmp -s $t.prof single.prof || fail "$name: profile of tree $t differs from the single run's"
    done
    cmp -s $A.raw t1.raw && fail "$name: the merge added nothing"
    echo "ok   $name: 3 trees + 1 flat merge = single run ($(wc -c < single.prof) bytes)"
}
trees "CS extbinary" --binary=kernel
trees "CS text, two binaries" --binary=kernel --binary=inlining --format=text
# an inlined leaf: ContextWasInlined, bit 1 (3 when the pre-inliner also
# marks it ShouldBeInlined, which the counts of the recording decide)
grep -q '!Attributes: [13]$' single.prof || fail "no context with an inlined leaf: the attributes are not tested"
trees "no repair, text" --binary=kernel --no-repair-frames --format=text
trees "flat" --binary=kernel --ignore-stack-samples --format=text
head -1 t1.raw | grep -q "^#lbr2prof-raw 1 flat$" || fail "flat mode: not a flat raw profile"

# llvm-profgen's format without --raw-header: the same lines, no '#'
"$L" k1.data --binary=kernel --skip-symbolization -o plain.raw 2> /dev/null || fail "plain raw"
"$L" k1.data --binary=kernel --skip-symbolization --raw-header -o hdr.raw 2> /dev/null || fail "hdr raw"
grep -q '^#' plain.raw && fail "--skip-symbolization without --raw-header has '#' lines"
grep -v '^#' hdr.raw | cmp -s - plain.raw || fail "--raw-header changed llvm-profgen's lines"
grep -q '^#binary 0 [0-9a-f]\{40\} 0x[0-9a-f]* /.*/kernel$' hdr.raw || { head hdr.raw; fail "no #binary line"; }
echo "ok   without --raw-header: llvm-profgen's raw profile; with it, the same plus '#' lines"

# doubled NAME SHARD: the shard merged with itself has every count doubled,
# statistics too; weight 3 triples them
doubled() {
    "$L" merge -o dbl.raw "$2" "$2" || fail "$1: merge with itself"
    grep -v '^#' "$2" | awk -F: '!/^\[/ && NF == 2 { print $1 ":" $2 * 2; next } { print }' > want.dbl
    grep -v '^#' dbl.raw | cmp -s - want.dbl || fail "$1: merge with itself: counts not doubled"
    cmp -s want.dbl "$2" && fail "$1: nothing to double"
    s1=$(sed -n 's/^#stats .* samples=\([0-9]*\) .*/\1/p' "$2")
    s2=$(sed -n 's/^#stats .* samples=\([0-9]*\) .*/\1/p' dbl.raw)
    [ -n "$s1" ] && [ "$s2" = $((2 * s1)) ] || fail "$1: merge with itself: samples $s1 -> $s2"
    "$L" merge -o w3.raw --weighted-input=3,"$2" || fail "$1: weighted"
    grep -v '^#' "$2" | awk -F: '!/^\[/ && NF == 2 { print $1 ":" $2 * 3; next } { print }' > want.w3
    grep -v '^#' w3.raw | cmp -s - want.w3 || fail "$1: weight 3: counts not tripled"
    echo "ok   $1: a shard merged with itself: counts and statistics doubled; weight 3 triples"
}
doubled "line-based" hdr.raw

# binaries from the header
"$L" --unsymbolized-profile=t1.raw --format=text -o nobin.prof 2> nobin.err ||
    { cat nobin.err; fail "no --binary"; }
cmp -s nobin.prof t1.prof || fail "binary from the header: another profile"
grep -q "using binary .*/kernel" nobin.err || fail "binary from the header: not announced"

# mismatched binaries: kernel.c built again with other flags, same name
mkdir other
clang-19 -O1 -g -fno-omit-frame-pointer -o other/kernel "$TOP/tests/workloads/kernel.c" || fail "clang-19"
record_one other/k.data 4 other/kernel 30
"$L" other/k.data --binary=other/kernel --skip-symbolization --raw-header -o other.raw 2> /dev/null ||
    fail "other shard"
"$L" merge -o x.raw hdr.raw other.raw 2> err && fail "mismatched binaries were merged"
id1=$(sed -n 's/^#binary 0 \([0-9a-f]*\) .*/\1/p' hdr.raw)
id2=$(sed -n 's/^#binary 0 \([0-9a-f]*\) .*/\1/p' other.raw)
for w in hdr.raw other.raw "$id1" "$id2" "mismatched binaries"; do
    grep -q -- "$w" err || { cat err; fail "mismatch message lacks $w"; }
done
[ -e x.raw ] && fail "a failed merge left its output"
"$L" --unsymbolized-profile=hdr.raw --binary=other/kernel -o x.prof 2> err &&
    fail "generated with another build's binary"
grep -q "$id2" err || { cat err; fail "wrong --binary: message"; }
echo "ok   another build-id under the same name: refused, naming both"

# other counting options, flat with CS, no header
"$L" k1.data --binary=kernel --skip-symbolization --raw-header --compress-recursion=0 \
    -o opt.raw 2> /dev/null || fail "options shard"
"$L" merge -o x.raw hdr.raw opt.raw 2> err && fail "other options were merged"
grep -q "compress-recursion=0" err || { cat err; fail "options: message"; }
"$L" k1.data --binary=kernel --skip-symbolization --raw-header --ignore-stack-samples \
    -o flat.raw 2> /dev/null || fail "flat shard"
sed 's/ignore-stack-samples=1/ignore-stack-samples=0/' flat.raw > flat2.raw
"$L" merge -o x.raw hdr.raw flat2.raw 2> err && fail "flat merged with CS"
grep -q "flat" err || { cat err; fail "flat with CS: message"; }
"$L" merge -o x.raw hdr.raw plain.raw 2> err && fail "a headerless file was merged"
grep -q "plain.raw: an unsymbolized profile without lbr2prof's header" err || { cat err; fail "no header: message"; }
printf 'main:1:0\n 1: 1\n' > sample.txt
"$L" merge -o x.raw hdr.raw sample.txt 2> err && fail "a raw and a sample profile merged"
grep -q "cannot merge unsymbolized (raw) profiles with sample profiles" err || { cat err; fail "raw + sample: message"; }
sed 's/^#binary 0 [0-9a-f]*/#binary 0 zz/' hdr.raw > bad.raw
"$L" merge -o x.raw bad.raw 2> err && fail "a bad header was accepted"
grep -q "bad.raw: line 4" err || { cat err; fail "bad header: message"; }
"$L" --unsymbolized-profile=hdr.raw --skip-symbolization --raw-header -o x.raw 2> err &&
    fail "--raw-header of a raw profile"
grep -q "raw-header needs traces" err || { cat err; fail "--raw-header of a raw profile: message"; }
echo "ok   other options, flat with CS, no header, bad header, rewriting a raw profile: refused"

# ---- pseudo-probe binaries: address contexts ("[0x2b8 @ 0x7d8]", kind probe)
mkdir probe && cd probe || fail "mkdir probe"
make_recordings -fpseudo-probe-for-profiling
FLATCS="--csspgo-preinliner=0 --gen-cs-nested-profile=0"
trees "probe: CS extbinary" --binary=kernel
"$L" show single.prof | grep -q "CFG checksum" || fail "probe: not a probe-based profile"
head -1 t1.raw | grep -q "^#lbr2prof-raw 1 probe$" || fail "probe: not a probe raw profile"
grep -q '^\[0x[0-9a-f]* @ 0x[0-9a-f]*\]$' t1.raw || fail "probe: no address context of two call sites"
trees "probe: CS text" --binary=kernel --format=text
trees "probe: flat CS options, extbinary" --binary=kernel $FLATCS
trees "probe: flat CS options, text, two binaries" --binary=kernel --binary=inlining $FLATCS --format=text
grep -q '!CFGChecksum' single.prof || fail "probe: no checksum in the text profile"
trees "probe: LBR only (flat), text" --binary=kernel --ignore-stack-samples --format=text
grep -q '!CFGChecksum' single.prof || fail "probe, flat: no checksum in the text profile"
"$L" k1.data --binary=kernel --skip-symbolization --raw-header -o hdr.raw 2> /dev/null || fail "probe shard"
doubled "probe" hdr.raw

# line contexts of the same binary (--use-dwarf-correlation) are another kind
"$L" k1.data --binary=kernel --skip-symbolization --raw-header --use-dwarf-correlation \
    -o dw.raw 2> /dev/null || fail "--use-dwarf-correlation shard"
head -1 dw.raw | grep -q "^#lbr2prof-raw 1 cs$" || fail "--use-dwarf-correlation: not line contexts"
"$L" merge -o x.raw hdr.raw dw.raw 2> err && fail "address and line contexts merged"
grep -q "hdr.raw is a context-sensitive pseudo-probe (address contexts) raw profile, dw.raw a context-sensitive (line contexts) one" err ||
    { cat err; fail "address and line contexts: message"; }
"$L" --unsymbolized-profile=hdr.raw --use-dwarf-correlation -o x.prof 2> err &&
    fail "address contexts generated line-based"
grep -q "leave out --use-dwarf-correlation" err || { cat err; fail "address contexts, line-based: message"; }
"$L" --unsymbolized-profile=dw.raw -o x.prof 2> err && fail "line contexts generated probe-based"
grep -q "counted with --use-dwarf-correlation, pass it again" err || { cat err; fail "line contexts, probe-based: message"; }
"$L" --unsymbolized-profile=dw.raw --use-dwarf-correlation --format=text -o dw.prof 2> /dev/null &&
    "$L" k1.data --binary=kernel --use-dwarf-correlation --format=text -o dw1.prof 2> /dev/null &&
    cmp -s dw.prof dw1.prof || fail "--use-dwarf-correlation: the raw route differs from the direct one"
echo "ok   probe: line contexts (--use-dwarf-correlation) are another kind: not merged, generated only line-based"

# a program and its library, both with probes: contexts cross the binaries
make_lib_recordings -fpseudo-probe-for-profiling
A=m1 B=m2 C=m3
trees "probe: program and library, text" --binary=mixed --binary=lib/libml.so --format=text
awk '/^#section 1$/ { s = 1 } s && /^\[0x8000000000[0-9a-f]* @ / { n++ } END { exit !n }' t1.raw ||
    fail "probe: no context of the library called from the program"
awk '/^#section 1$/ { exit !n } /^\[0x[0-9a-f]* @ .*@ 0x8001000000[0-9a-f]*/ { n++ }' t1.raw ||
    fail "probe: no context of the program called back from the library"
grep -q "ml_reduce" single.prof || fail "probe: the library has no profile"
echo "PASS"
