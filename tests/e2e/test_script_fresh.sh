#!/bin/sh
# test_script_fresh.sh - `lbr2prof script` against perf 6.1 on files perf
# records here at test time (cpu-clock: this machine may have no LBR):
# file and pipe mode, a --threads directory, zstd-compressed data,
# frame-pointer callchains over fork+exec (comm, maps
# and map-relative callchain addresses), two events, build-id mmaps.
# Pipe-mode files with callchains make perf add symbol names: user code
# named as perf names it (src/script/symbols.c), kernel code not (lbr2prof
# reads no kallsyms), so perf runs with --kallsyms pointing nowhere.
set -u
command -v perf >/dev/null 2>&1 || { echo "perf not installed"; exit 77; }
perf version 2>/dev/null | grep -q '^perf version 6\.1' ||
    { echo "perf 6.1 required"; exit 77; }
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
cd "$WORK" || exit 1
W='for i in 1 2; do ls -R /usr/share/doc > /dev/null; cat /etc/passwd > /dev/null; done'
if ! perf record -q -o probe.data -e cpu-clock -- true > /dev/null 2>&1; then
    echo "perf record is not permitted here (perf_event_paranoid?)"; exit 77
fi
rec() { # name perf-record-args...
    n=$1; shift
    perf record -q "$@" -- sh -c "$W" > /dev/null 2> "$n.rec.err" ||
        { echo "FAIL $n: perf record failed"; cat "$n.rec.err"; return 1; }
}
rec file-g -o file-g.data -e cpu-clock -c 200000 -g &&
rec file-2ev -o file-2ev.data -e cpu-clock,task-clock -c 500000 &&
rec file-bid -o file-bid.data --buildid-mmap -e cpu-clock -c 500000 -g &&
rec dir -o dir.data --threads -e cpu-clock -c 200000 -g &&
rec zstd -o zstd.data -z -e cpu-clock -c 200000 -g &&
{ perf record -q -o - -e cpu-clock -c 200000 -g -- sh -c "$W" > pipe-g.data 2>/dev/null; } &&
{ perf record -q -o - -e cpu-clock -c 500000 -- sh -c "$W" > pipe-nog.data 2>/dev/null; } ||
    exit 1
F=comm,pid,tid,time,ip,brstack
fail=0; n=0
for d in file-g file-2ev file-bid dir zstd pipe-g pipe-nog; do
    nosym=
    # pipe mode adds the sym field: user code is named as perf names it,
    # kernel code is not (lbr2prof reads no kallsyms)
    case $d in pipe-g) nosym="--kallsyms=/dev/null" ;; esac
    for opt in "" --show-mmap-events --show-task-events; do
        n=$((n + 1))
        perf script -i $d.data -F $F $opt $nosym > $d.perf 2>/dev/null
        "$LBR2PROF" script -F $F $opt $d.data > $d.ours 2> $d.err
        st=$?
        if [ $st -eq 0 ] && [ -s $d.perf ] && cmp -s $d.perf $d.ours; then
            echo "PASS $d $opt ($(wc -l < $d.ours) lines)"
        else
            fail=$((fail + 1)); echo "FAIL $d $opt (status $st)"
            cat $d.err; diff $d.perf $d.ours | head -6
        fi
    done
done
# The same pipe-mode file through stdin.
n=$((n + 1))
cat pipe-nog.data | "$LBR2PROF" script -F $F - > stdin.ours 2> stdin.err
perf script -i pipe-nog.data -F $F > stdin.perf 2>/dev/null
if cmp -s stdin.perf stdin.ours; then echo "PASS pipe-nog via stdin"; else
    fail=$((fail + 1)); echo "FAIL pipe-nog via stdin"; cat stdin.err; fi
# --raw-addresses: same lines, but every frame that perf shows relative to
# its mapping is absolute (a larger number) in the raw output.
n=$((n + 1))
perf script -i file-g.data -F $F > raw.perf 2>/dev/null
"$LBR2PROF" script --raw-addresses -F $F file-g.data > raw.ours
paste raw.perf raw.ours | awk -F'\t' '
    NF == 4 && $2 != $4 { d++; a = $2; b = $4; gsub(/ /, "", a); gsub(/ /, "", b);
        if (length(b) < length(a) || (length(b) == length(a) && b <= a)) bad++ }
    NF != 4 && $1 != $2 { other++ }
    END { printf "%d %d %d\n", d, bad, other }' > raw.cmp
read d bad other < raw.cmp
if [ "$(wc -l < raw.ours)" -eq "$(wc -l < raw.perf)" ] && [ "$d" -gt 10 ] &&
    [ "$bad" -eq 0 ] && [ "$other" -eq 0 ]; then
    echo "PASS --raw-addresses: $d frames absolute instead of map-relative"
else
    fail=$((fail + 1)); echo "FAIL --raw-addresses: $d differ, $bad not larger, $other other lines"
fi
echo "$((n - fail)) of $n passed"
[ $fail -eq 0 ]
