#!/bin/sh
# A perf.data cut off (a recording killed, a disk that filled up) keeps
# every complete record: `script`, `report` and the profile read up to the
# cut, warn once with the file, the offset and the number of records read,
# and give what the same records give in a complete file; --strict makes
# the cut an error (status 2, no output file). Real files, cut here:
#   * AutoFDO's test.lbr (file mode, LBR) cut inside its header (an error:
#     nothing is complete), at the start of the data, inside a record
#     header, inside records, at the last record, inside the features;
#   * a pipe-mode corpus file cut inside a record, read through a pipe;
#   * a zstd-compressed perf 6.1 recording (`perf record -z`, made now),
#     cut inside a COMPRESSED record;
#   * a recording of `record --simulate` cut short the way a killed perf
#     leaves it: the header's data size still 0, no features, the last
#     record half written.
# The reference for a cut file is the file repaired by hand: the complete
# file up to the first record lost, its header's data size set to what is
# left, its features put back after it, which perf 6.1 reads: `perf
# script` on it must print what `lbr2prof script` prints on the cut file,
# llvm-profgen-22 must make the profile lbr2prof makes from the cut file.
set -u
for t in perf llvm-profgen-22 perl; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
A=$TOP/tests/data/autofdo
C=$TOP/tests/data/perf-corpus
cd "$WORK" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

# repair WHOLE OFF OUT: the first OFF bytes of the complete file WHOLE;
# file mode: data size = OFF - data offset, and WHOLE's feature table and
# sections after it (moved)
repair() {
    perl -e '
        my ($in, $off, $out) = @ARGV;
        open(I, "<:raw", $in) or die "$in: $!"; local $/; my $w = <I>;
        my $b = substr($w, 0, $off);
        if (unpack("Q<", substr($b, 8, 8)) == 104) {
            my ($doff, $dsz) = unpack("Q<Q<", substr($w, 40, 16));
            my $nf = unpack("%32b*", substr($w, 72, 32));
            my $ft = $doff + $dsz;
            my $d = $off - $ft;
            substr($b, 48, 8) = pack("Q<", $off - $doff);
            my $t = substr($w, $ft, 16 * $nf);
            for my $i (0 .. $nf - 1) {
                my ($o, $z) = unpack("Q<Q<", substr($t, 16 * $i, 16));
                substr($t, 16 * $i, 8) = pack("Q<", $o + $d);
            }
            $b .= $t . substr($w, $ft + 16 * $nf);
        }
        open(O, ">:raw", $out) or die; print O $b; close(O);' "$1" "$2" "$3"
}
# the offset of the first record lost, from the warning in file $1
cut_offset() { sed -n 's/.*: offset \(0x[0-9a-f]*\): .*cut off.*/\1/p' "$1" | head -1; }

# script_cut NAME FILE WHOLE: lbr2prof script on the cut file = perf
# script on it repaired from the complete file; one warning; --strict an
# error
script_cut() {
    n=$1 f=$2 whole=$3
    "$LBR2PROF" script "$f" >$n.my 2>$n.err
    st=$?
    off=$(cut_offset $n.err)
    if [ $st -ne 0 ] || [ "$(wc -l <$n.err)" -ne 1 ] || [ -z "$off" ] ||
        ! grep -q "^lbr2prof script: warning: $f: offset $off: .*the [0-9]* complete records" $n.err; then
        fail "$n: status $st, warning: $(cat $n.err)"; return 1
    fi
    repair "$whole" $((off)) $n.fixed.data
    perf script -i $n.fixed.data -F comm,pid,tid,time,ip,brstack >$n.ref 2>$n.ref.err
    if ! cmp -s $n.ref $n.my; then
        fail "$n: script differs from perf script on the repaired file"; diff $n.ref $n.my | head -5
        return 1
    fi
    "$LBR2PROF" script --strict "$f" >/dev/null 2>$n.serr
    [ $? -eq 2 ] && grep -q "^lbr2prof: $f: offset" $n.serr || fail "$n: --strict is no error"
    echo "ok   $n: $(grep -c . $n.my) lines = perf script's on the file repaired at $off"
}

# 1. test.lbr cut inside the header and attrs: an error naming the file
L=$A/test.lbr
size=$(wc -c <"$L")
for cut in 60 200; do
    head -c $cut "$L" >h$cut.data
    "$LBR2PROF" script h$cut.data >/dev/null 2>h$cut.err
    [ $? -eq 2 ] && grep -q "^lbr2prof: .*h$cut.data.*offset 0x" h$cut.err ||
        fail "cut at $cut (header): $(cat h$cut.err)"
done
# ... at the start of the data (0x198), in a record header, in records,
# in the last record (an EXIT record ends at the data end, 0x3bcaa8)
for cut in 408 412 1000003 2000000 3918503; do
    head -c $cut "$L" >lbr$cut.data
    script_cut lbr$cut lbr$cut.data "$L"
done
# ... inside the features: every record, the features lost
head -c $((size - 100)) "$L" >feat.data
"$LBR2PROF" script feat.data >feat.my 2>feat.err
perf script -i "$L" -F comm,pid,tid,time,ip,brstack >feat.ref 2>/dev/null
[ $? -eq 0 ] && cmp -s feat.ref feat.my && grep -q "cut off after its data section" feat.err ||
    fail "cut in the features: $(cat feat.err)"

# the profile from the cut file = llvm-profgen-22's from the repaired one,
# and report's = report's on the repaired one
for cut in 1000003 2000000; do
    "$LBR2PROF" lbr$cut.data --binary="$A/test.binary" --format=text -o lbr$cut.prof 2>p$cut.err
    st=$?
    llvm-profgen-22 --perfdata=lbr$cut.fixed.data --binary="$A/test.binary" --format=text \
        --output=lbr$cut.ref.prof >/dev/null 2>&1
    if [ $st -ne 0 ] || ! [ -s lbr$cut.prof ] || ! cmp -s lbr$cut.ref.prof lbr$cut.prof ||
        ! grep -q "warning: lbr$cut.data: offset .*complete records" p$cut.err; then
        fail "profile of test.lbr cut at $cut (status $st)"; diff lbr$cut.ref.prof lbr$cut.prof | head -5
    else
        echo "ok   profile of test.lbr cut at $cut = llvm-profgen-22's of the repaired file"
    fi
    "$LBR2PROF" lbr$cut.data --strict --binary="$A/test.binary" -o s$cut.prof 2>/dev/null
    [ $? -eq 2 ] && [ ! -e s$cut.prof ] || fail "profile --strict of test.lbr cut at $cut"
    "$LBR2PROF" report lbr$cut.data --binary="$A/test.binary" >r$cut.txt 2>r$cut.err &&
        "$LBR2PROF" report lbr$cut.fixed.data --binary="$A/test.binary" >rf$cut.txt 2>/dev/null &&
        sed "s/lbr$cut.fixed.data/lbr$cut.data/" rf$cut.txt | cmp -s - r$cut.txt &&
        grep -q "warning: lbr$cut.data: offset" r$cut.err || fail "report of test.lbr cut at $cut"
    "$LBR2PROF" report --strict lbr$cut.data --binary="$A/test.binary" >/dev/null 2>&1
    [ $? -eq 2 ] || fail "report --strict of test.lbr cut at $cut"
done

# 2. a pipe-mode file cut inside a record, through a real pipe
P=$C/perf.data.piped.target-3.8
head -c $(($(wc -c <"$P") / 2 + 3)) "$P" >pipe.data
cat pipe.data | "$LBR2PROF" script - >pipe.my 2>pipe.err
off=$(cut_offset pipe.err)
if [ -n "$off" ]; then
    head -c $((off)) "$P" >pipe.fixed.data
    perf script -i pipe.fixed.data -F comm,pid,tid,time,ip,brstack >pipe.ref 2>/dev/null
    cmp -s pipe.ref pipe.my && [ -s pipe.my ] || fail "pipe: differs from perf script"
else
    fail "pipe: no warning: $(cat pipe.err)"
fi

# 3. a compressed recording, cut inside a COMPRESSED record
W='i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done'
if perf record -q -e cpu-clock -c 20000 -z -o z.data -- sh -c "$W" >/dev/null 2>&1; then
    zs=$(wc -c <z.data)
    head -c $((zs * 2 / 5)) z.data >zcut.data
    script_cut zcut zcut.data z.data
else
    echo "note: perf record -z does not run here: no compressed case"
fi

# 4. a simulated recording cut short as a killed perf leaves it
if command -v clang-19 >/dev/null 2>&1 &&
    clang-19 -O2 -g -fno-omit-frame-pointer "$TOP/tests/workloads/recursion.c" -o rec &&
    "$LBR2PROF" record --simulate -c 400 --seed 7 -o rec.data -- ./rec 22 >/dev/null 2>&1; then
    rs=$(wc -c <rec.data)
    cp rec.data rec.whole.data
    perl -e 'open(F, "+<:raw", $ARGV[0]) or die; seek(F, 48, 0); print F pack("Q<", 0);
             seek(F, 72, 0); print F "\0" x 32; close(F); truncate($ARGV[0], $ARGV[1]) or die' \
        rec.data $((rs * 3 / 5))
    script_cut killed rec.data rec.whole.data
    for mode in "" --ignore-stack-samples; do
        "$LBR2PROF" rec.data --binary=rec $mode --format=text -o k.prof 2>k.err
        st=$?
        "$LBR2PROF" killed.fixed.data --binary=rec $mode --format=text -o kf.prof 2>/dev/null
        if [ $st -ne 0 ] || ! [ -s k.prof ] || ! cmp -s k.prof kf.prof ||
            ! grep -q "warning: rec.data: offset .*complete records" k.err; then
            fail "killed recording ${mode:-(CS)}: status $st"; diff kf.prof k.prof | head -5
        else
            echo "ok   killed recording ${mode:-(CS)}: the profile of its complete records"
        fi
    done
    "$LBR2PROF" rec.data --strict --binary=rec -o ks.prof 2>/dev/null
    [ $? -eq 2 ] && [ ! -e ks.prof ] || fail "killed recording: --strict"
else
    echo "note: clang-19 or record --simulate unavailable: no simulated recording"
fi
[ $fails -eq 0 ] && echo "all cut-off files read up to their cut" && exit 0
exit 1
