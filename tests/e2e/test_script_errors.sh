#!/bin/sh
# test_script_errors.sh - `lbr2prof script` on broken input: the corrupted
# corpus file and truncated / bit-flipped copies of good files (made here
# with head, dd and printf) must each give exit status 2 and exactly one
# stderr line "lbr2prof: FILE: ... offset 0x...: ..." naming the file and
# the byte offset, and never crash (this also runs under ASan+UBSan).
# Truncated files are errors with --strict; without it their complete
# records are read (test_truncated_perfdata.sh).
set -u
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
C=$TOP/tests/data/perf-corpus
fail=0; n=0

expect_error() { # file what [flag]
    n=$((n + 1))
    "$LBR2PROF" script ${3:-} "$1" > "$WORK/out" 2> "$WORK/err"
    st=$?
    lines=$(wc -l < "$WORK/err")
    msg=$(cat "$WORK/err")
    base=$(basename "$1")
    if [ $st -eq 2 ] && [ "$lines" -eq 1 ] &&
        printf '%s' "$msg" | grep -q "^lbr2prof: .*$base.*offset 0x[0-9a-f]*: ."; then
        echo "PASS $2: $msg"
    else
        fail=$((fail + 1))
        echo "FAIL $2: status $st, $lines stderr lines:"; head -5 "$WORK/err"
    fi
}

# A u64 of the perf.data header at byte offset $2 of file $1, in decimal.
hdr_u64() { od -A n -t u8 -j "$2" -N 8 "$1" | tr -d ' '; }

# Overwrite bytes of $1 at offset $2 with the octal-escaped string $3.
poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null; }

expect_error "$C/perf.data.piped.corrupted.zero_size_sample-3.2" "corpus zero-size sample"

good=$C/perf.data.callgraph-3.8
size=$(wc -c < "$good")
for cut in 7 50 104 200 1000 $((size / 2)) $((size - 3)); do
    head -c $cut "$good" > "$WORK/trunc-$cut.data"
    expect_error "$WORK/trunc-$cut.data" "file mode truncated to $cut bytes" --strict
done

pipe=$C/perf.data.piped.target-3.8
psize=$(wc -c < "$pipe")
head -c $((psize / 2 + 3)) "$pipe" > "$WORK/pipe-trunc.data"
expect_error "$WORK/pipe-trunc.data" "pipe mode truncated mid-record" --strict

# First data record: size 0, then a size that runs past the end.
doff=$(hdr_u64 "$good" 40)
cp "$good" "$WORK/size0.data"; poke "$WORK/size0.data" $((doff + 6)) '\000\000'
expect_error "$WORK/size0.data" "record size 0"
cp "$good" "$WORK/size4.data"; poke "$WORK/size4.data" $((doff + 6)) '\004\000'
expect_error "$WORK/size4.data" "record size 4"
# Data section claimed larger than the file.
cp "$good" "$WORK/dsize.data"; poke "$WORK/dsize.data" 48 '\377\377\377\377'
expect_error "$WORK/dsize.data" "data section past end of file"
# attr_size not a valid perf_event_attr size.
cp "$good" "$WORK/attrsz.data"; poke "$WORK/attrsz.data" 16 '\003'
expect_error "$WORK/attrsz.data" "bad attr size"
# A flipped bit in the magic: neither perf.data nor text.
cp "$good" "$WORK/magic.data"; poke "$WORK/magic.data" 0 'Q'
expect_error "$WORK/magic.data" "bad magic"
# A pipe-mode record with size 0: the first record, right after the
# 16-byte pipe header (its size field is at +6).
cp "$pipe" "$WORK/pipe-size0.data"; poke "$WORK/pipe-size0.data" 22 '\000\000'
expect_error "$WORK/pipe-size0.data" "pipe record size 0"

# Single-bit flips at spread positions of three good files: whatever the
# flip hits, lbr2prof either prints (status 0) or stops with one error line
# (status 2); never a crash, a hang, anything else on stderr, or a silent
# empty output (every sample of these files would have to be gone).
for g in "$good" "$pipe" "$TOP/tests/data/autofdo/test.lbr"; do
    gs=$(wc -c < "$g")
    for k in 1 2 3 4 5 6 7 8 9 10 11 12; do
        n=$((n + 1))
        pos=$(( (k * 7919 * 104729 + k * k * 31) % gs ))
        [ $k -le 4 ] && pos=$(( k * 13 + 5 ))    # header bytes too
        byte=$(od -A n -t u1 -j $pos -N 1 "$g" | tr -d ' ')
        flip=$(( byte ^ (1 << (k % 8)) ))
        cp "$g" "$WORK/flip.data"
        poke "$WORK/flip.data" $pos "\\$(printf '%03o' $flip)"
        timeout 60 "$LBR2PROF" script "$WORK/flip.data" > "$WORK/out" 2> "$WORK/err"
        st=$?
        lines=$(wc -l < "$WORK/err")
        if { [ $st -eq 0 ] && [ "$lines" -eq 0 ] && [ -s "$WORK/out" ]; } ||
            { [ $st -eq 2 ] && [ "$lines" -eq 1 ] && grep -q '^lbr2prof: .*offset 0x' "$WORK/err"; }; then
            echo "PASS flip bit $((k % 8)) at $pos of $(basename "$g"): status $st $(cat "$WORK/err")"
        else
            fail=$((fail + 1))
            echo "FAIL flip bit $((k % 8)) at $pos of $(basename "$g"): status $st"; head -5 "$WORK/err"
        fi
    done
done

echo "$((n - fail)) of $n error cases passed"
[ $fail -eq 0 ]
