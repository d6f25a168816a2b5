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
# (Probe-based profiles: add a mode to MODES once they are made.)
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

# trees MODE-NAME OPTIONS...
trees() {
    name=$1
    shift
    "$L" k1.data k2.data i1.data "$@" -o single.prof 2> single.err ||
        { cat single.err; fail "$name: single run"; }
    "$L" k1.data k2.data i1.data "$@" --skip-symbolization --raw-header \
        -o single.raw 2> /dev/null || fail "$name: single raw"
    for d in k1 k2 i1; do
        "$L" $d.data "$@" --skip-symbolization --raw-header -o $d.raw 2> $d.err ||
            { cat $d.err; fail "$name: shard $d"; }
    done
    "$L" k2.data k1.data "$@" --skip-symbolization --raw-header -o k21.raw 2> /dev/null ||
        fail "$name: shard k2+k1"
    "$L" merge -o a.raw k1.raw k2.raw && "$L" merge -o t1.raw a.raw i1.raw &&
        "$L" merge -o b.raw k2.raw k1.raw && "$L" merge -o t2.raw i1.raw b.raw &&
        "$L" merge -o t3.raw i1.raw k21.raw && "$L" merge -o t4.raw i1.raw k2.raw k1.raw ||
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
    cmp -s k1.raw t1.raw && fail "$name: the merge added nothing"
    echo "ok   $name: 3 trees + 1 flat merge = single run ($(wc -c < single.prof) bytes)"
}
trees "CS extbinary" --binary=kernel
trees "CS text, two binaries" --binary=kernel --binary=inlining --format=text
grep -q '!Attributes: 1' single.prof || fail "no context with an inlined leaf: the attributes are not tested"
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

# a shard with itself: every count doubled, statistics too
"$L" merge -o dbl.raw hdr.raw hdr.raw || fail "merge with itself"
grep -v '^#' hdr.raw | awk -F: '!/^\[/ && NF == 2 { print $1 ":" $2 * 2; next } { print }' > want.dbl
grep -v '^#' dbl.raw | cmp -s - want.dbl || fail "merge with itself: counts not doubled"
s1=$(sed -n 's/^#stats .* samples=\([0-9]*\) .*/\1/p' hdr.raw)
s2=$(sed -n 's/^#stats .* samples=\([0-9]*\) .*/\1/p' dbl.raw)
[ -n "$s1" ] && [ "$s2" = $((2 * s1)) ] || fail "merge with itself: samples $s1 -> $s2"
"$L" merge -o w3.raw --weighted-input=3,hdr.raw || fail "weighted"
grep -v '^#' hdr.raw | awk -F: '!/^\[/ && NF == 2 { print $1 ":" $2 * 3; next } { print }' > want.w3
grep -v '^#' w3.raw | cmp -s - want.w3 || fail "weight 3: counts not tripled"
echo "ok   a shard merged with itself: counts and statistics doubled; weight 3 triples"

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
echo "PASS"
