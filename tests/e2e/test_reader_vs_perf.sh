#!/bin/sh
# test_reader_vs_perf.sh - the native perf.data reader against perf 6.1.
#
# For every file of tests/data/perf-corpus, test.lbr, and recordings made
# here with perf (-z, pipe, pipe -z, --buildid-mmap, two events, -g,
# -z --call-graph dwarf, --threads directory), the sequence of delivered
# events (kind and time of every SAMPLE, MMAP/MMAP2, COMM, FORK, EXIT; the
# samples' pid/tid/ip; the mmaps' start/len/pgoff/file) must equal what
# `perf script` prints, in the same order. Branch stacks are compared entry
# by entry with `perf script -F ip,brstack`, raw callchains, user registers
# and user stack sizes with `perf report -D`. Then: the zero-size-sample file must fail with its offset, the
# piped intel_pt file must walk cleanly, and truncated or bit-flipped
# copies of good files must end in an error or cleanly, never a crash.
set -u
command -v perf >/dev/null 2>&1 || { echo "perf not installed"; exit 77; }
perf script --help >/dev/null 2>&1 || true
L=$LBR2PROF
C=$TOP/tests/data/perf-corpus
cd "$WORK" || exit 1
fail=0

# Events as perf prints them: "KIND time_ns" (samples: "SAMPLE pid tid time ip").
perf_events() {
    perf script -i "$1" -F pid,tid,time,ip --ns -G --show-mmap-events \
        --show-task-events 2>/dev/null | awk '
    { split($1, pt, "/"); t = $2; sub(":", "", t); split(t, b, ".");
      ts = sprintf("%d%s", b[1], b[2]); sub(/^0+/, "", ts); if (ts == "") ts = "0";
      k = "SAMPLE";
      if (match($0, /PERF_RECORD_[A-Z0-9]+/)) k = substr($0, RSTART + 12, RLENGTH - 12);
      if (k == "MMAP2") k = "MMAP";
      if (k == "MMAP" && match($0, /\[[0-9a-fx]+\([0-9a-fx]+\) @ [0-9a-fx]+/)) {
          m = substr($0, RSTART + 1, RLENGTH - 1); gsub(/[()@]/, " ", m); split(m, q, " ")
          print k, ts, q[1], q[2], q[3], $NF; next }
      if (k == "SAMPLE") print k, pt[1], pt[2], ts, $3; else print k, ts }'
}
our_events() {
    "$L" readbench --dump "$1" 2>/dev/null | awk '
    $1 == "SAMPLE" { split($2, pt, "/"); print $1, pt[1], pt[2], $3, $4; next }
    $1 == "COMM" || $1 == "FORK" || $1 == "EXIT" { print $1, $3; next }
    $1 ~ /^MMAP/ { m = $4 " " $5 " " $6; gsub(/[][()@]/, " ", m); split(m, q, " ")
                   print "MMAP", $3, q[1], q[2], q[3], $NF }'
}

check_same() { # file label
    perf_events "$1" > p.txt
    our_events "$1" > l.txt
    n=$(grep -c '^SAMPLE' l.txt)
    if [ ! -s p.txt ]; then
        echo "FAIL $2: perf printed nothing"; fail=1
    elif cmp -s p.txt l.txt; then
        echo "ok   $2: $(wc -l < l.txt) events, $n samples, same order as perf"
    else
        echo "FAIL $2: differs from perf script"; diff p.txt l.txt | head -5; fail=1
    fi
}

# Recordings of a small workload (cpu-clock works without a PMU).
W='i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'
rec() { # name args...
    n=$1; shift
    perf record -q -e cpu-clock "$@" -- sh -c "$W" >/dev/null 2>rec.err ||
        { echo "perf record $* failed: $(tail -1 rec.err)"; exit 77; }
}
rec z.data -z -o z.data
perf record -q -e cpu-clock -o - -- sh -c "$W" 2>/dev/null > pipe.data
perf record -q -e cpu-clock -z -o - -- sh -c "$W" 2>/dev/null > pipez.data
rec bid.data --buildid-mmap -o bid.data
rec multi.data -e page-faults -o multi.data
rec g.data -g -o g.data
rec zbig.data -z --call-graph dwarf -o zbig.data
rec dir.data --threads -o dir.data

for f in z.data pipe.data pipez.data bid.data multi.data g.data zbig.data dir.data; do
    check_same "$f" "perf6.1/$f"
done
# stdin (pipe mode, no seeking) gives the same events as the file.
cat pipez.data | "$L" readbench --dump - 2>/dev/null > a.txt
"$L" readbench --dump pipez.data 2>/dev/null > b.txt
cmp -s a.txt b.txt && [ -s a.txt ] && echo "ok   pipez.data from stdin" ||
    { echo "FAIL pipez.data from stdin differs"; fail=1; }
# A file-mode file redirected to stdin is mapped; through a pipe it is refused.
"$L" readbench --dump - < z.data 2>/dev/null > a.txt
"$L" readbench --dump z.data 2>/dev/null > b.txt
cmp -s a.txt b.txt && [ -s a.txt ] && echo "ok   z.data redirected to stdin" ||
    { echo "FAIL z.data redirected to stdin differs"; fail=1; }
cat z.data | "$L" readbench - > o.txt 2>&1
[ $? -eq 2 ] && grep -q 'needs a seekable file' o.txt && echo "ok   file mode through a pipe refused" ||
    { echo "FAIL file mode through a pipe: $(cat o.txt)"; fail=1; }
# zbig must really exercise records that straddle compressed blocks.
blocks=$(perf report -D -i zbig.data 2>/dev/null | awk '$1 == "COMPRESSED" && $2 == "events:" {print $3; exit}')
blocks=${blocks:-0}
[ "$blocks" -gt 1 ] && echo "ok   zbig.data has $blocks compressed blocks" ||
    { echo "FAIL zbig.data: expected several COMPRESSED blocks"; fail=1; }

check_same "$TOP/tests/data/autofdo/test.lbr" test.lbr
for f in "$C"/perf.data.*; do
    b=$(basename "$f")
    case $b in
    *corrupted*|*piped.intel_pt*|*intel_pt*) continue ;; # below
    esac
    check_same "$f" "$b"
done

# Branch stacks, entry by entry (from/to/M|P/X/A/cycles; the type column
# is dropped), in perf's order.
for f in "$TOP/tests/data/autofdo/test.lbr" "$C/perf.data.branch-4.14" \
         "$C/perf.data.branch_stack_hw_index" "$C/perf.data.branch_stack_spec" \
         "$C/perf.data.callgraph_and_branch-3.8"; do
    perf script -i "$f" -F ip,brstack -G 2>/dev/null | awk '{
        printf "%s", $1
        for (i = 2; i <= NF; i++) { n = split($i, p, "/"); printf " %s/%s/%s/%s/%s/%s", p[1], p[2], p[3], p[4], p[5], p[6] }
        printf "\n" }' > p.txt
    "$L" readbench --brstack "$f" 2>/dev/null > l.txt
    if [ -s p.txt ] && cmp -s p.txt l.txt; then
        echo "ok   brstack $(basename "$f"): $(wc -l < l.txt) samples identical"
    else
        echo "FAIL brstack $(basename "$f") differs"; diff p.txt l.txt | head -4; fail=1
    fi
done

# Raw callchains (with context markers), user registers and user stack
# sizes, as `perf report -D` prints them at delivery (time order).
for f in "$C/perf.data.callgraph-3.4" "$C/perf.data.callgraph-3.8" \
         "$C/perf.data.callgraph_and_branch-3.8" g.data zbig.data; do
    perf report -D -i "$f" 2>/dev/null | awk '
        /chain: nr:/ { split($0, a, "nr:"); n = a[2] + 0; print "chain nr:" n; next }
        n > 0 && /^\.\.\.\.\. / { print $3; n--; next }
        /^\.\.\. user regs: mask/ { print "regs mask", $5; next }
        /^\.\.\.\. / { print $3; next }
        /^\.\.\. ustack: size/ { s = $4; sub(",", "", s); print "ustack", s }' > p.txt
    "$L" readbench --callchain "$f" 2>/dev/null > l.txt
    if [ -s p.txt ] && cmp -s p.txt l.txt; then
        echo "ok   callchains $(basename "$f"): $(grep -c '^chain' l.txt) chains, $(grep -c '^ustack' l.txt) user stacks identical"
    else
        echo "FAIL callchains $(basename "$f") differ"; diff p.txt l.txt | head -4; fail=1
    fi
done

# The BUILD_ID feature table against `perf buildid-list` (ids padded to 20
# bytes as perf prints them; perf shows each DSO once). Files without the
# feature (perf lists DSOs with hits and no id there) are left out.
for f in multi.data dir.data g.data "$C"/perf.data.*; do
    case $f in *corrupted*|*piped*) continue ;; esac
    perf buildid-list -i "$f" 2>/dev/null | awk 'NF == 2 && length($1) >= 16' | sort -u > p.txt
    [ -s p.txt ] || continue
    "$L" readbench --buildids "$f" 2>/dev/null |
        awk '{ id = $1; while (length(id) < 40) id = id "0"; print id, $2 }' | sort -u > l.txt
    if cmp -s p.txt l.txt; then nb=$((${nb:-0} + 1)); else
        echo "FAIL build-ids $(basename "$f") differ"; diff p.txt l.txt | head -4; fail=1
    fi
done
echo "ok   build-id tables of ${nb:-0} files equal perf buildid-list"

# Event names (EVENT_DESC) against `perf evlist`, file mode (in pipe mode
# perf names events from their attrs instead).
ne=0
for f in multi.data dir.data "$TOP/tests/data/autofdo/test.lbr" "$C"/perf.data.*; do
    case $f in *piped*) continue ;; esac
    perf evlist -i "$f" 2>/dev/null > p.txt
    "$L" readbench --events "$f" 2>/dev/null > l.txt
    if [ -s p.txt ] && cmp -s p.txt l.txt; then ne=$((ne + 1)); else
        echo "FAIL event names of $(basename "$f"): perf: $(tr '\n' ' ' < p.txt) ours: $(tr '\n' ' ' < l.txt)"; fail=1
    fi
done
echo "ok   event names of $ne files equal perf evlist"

# perf synthesizes PT samples for intel_pt-4.14: compare the non-sample events.
perf_events "$C/perf.data.intel_pt-4.14" | grep -v '^SAMPLE' > p.txt
our_events "$C/perf.data.intel_pt-4.14" | grep -v '^SAMPLE' > l.txt
cmp -s p.txt l.txt && echo "ok   intel_pt-4.14 non-sample events" ||
    { echo "FAIL intel_pt-4.14 non-sample events differ"; fail=1; }

# perf 6.1 itself fails on this file; its records are well formed.
if "$L" readbench "$C/perf.data.piped.intel_pt-4.14" > o.txt 2>&1; then
    echo "ok   piped.intel_pt-4.14 walks: $(head -1 o.txt)"
else
    echo "FAIL piped.intel_pt-4.14: $(cat o.txt)"; fail=1
fi

"$L" readbench "$C/perf.data.piped.corrupted.zero_size_sample-3.2" > o.txt 2>&1
st=$?
if [ $st -eq 2 ] && grep -q 'offset 0x[0-9a-f]*: record (type 9) has size 0' o.txt; then
    echo "ok   zero_size_sample: $(cat o.txt)"
else
    echo "FAIL zero_size_sample: status $st: $(cat o.txt)"; fail=1
fi

# Truncations and bit flips: status 0 or 2, never a signal or sanitizer report.
robust() { # file
    "$L" readbench "$1" > o.txt 2>&1
    st=$?
    if [ $st -ne 0 ] && [ $st -ne 2 ]; then
        echo "FAIL $(basename "$1"): status $st"; tail -5 o.txt; fail=1
    fi
}
for f in z.data pipe.data pipez.data multi.data zbig.data "$C/perf.data.branch_stack_hw_index" \
         "$C/perf.data.callgraph-3.8" "$C/perf.data.piped.header_feautres_group_desc-6.8"; do
    sz=$(wc -c < "$f")
    for cut in 7 15 16 100 104 200 1000 4096 $((sz / 3)) $((sz / 2)) $((sz - 1)); do
        [ "$cut" -lt "$sz" ] || continue
        head -c "$cut" "$f" > cut.data
        robust cut.data
    done
    k=1
    while [ $k -le 12 ]; do
        off=$(( (k * 7919 * 13) % sz ))
        cp "$f" flip.data
        printf '\377' | dd of=flip.data bs=1 seek="$off" conv=notrunc 2>/dev/null
        robust flip.data
        k=$((k + 1))
    done
done
[ $fail -eq 0 ] && echo "ok   truncated and bit-flipped copies"
exit $fail
