#!/bin/sh
# test_record_simulate.sh - `lbr2prof record --simulate` on the workloads
# of tests/workloads (compiled now with clang-19 -O2 -g
# -fno-omit-frame-pointer). For each one:
#  * the program's output is the same as when run natively;
#  * perf 6.1 reads the perf.data without a warning: `perf report -D`
#    decodes exactly the callchains and branch stacks the recorder saw
#    (its --debug-dump), and `perf script -F ip,brstack` prints the same
#    branch stacks;
#  * llvm-profgen-19 turns that perf script into a non-empty CS profile.
# Exactness: the truth file's per-instruction counts equal those of plain
# single-stepping (tests/e2e/helpers/sstep.c) for a static build.
set -u
for t in clang-19 perf llvm-profgen-19 cc; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
W=$WORK
fail() { echo "FAIL: $*"; exit 1; }

# "tid=T chain=a,b br=f/t,..." from perf's raw dump of SAMPLE records
perf_dump_samples() {
    perf report -D -i "$1" 2>"$1.D.err" | awk '
    function flush() { if (have) print "tid=" tid " chain=" chain " br=" br; have = 0 }
    /PERF_RECORD_SAMPLE\(/ { flush(); have = 1; chain = ""; br = ""; mode = "";
        for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+:$/) { split($i, pt, "/"); tid = pt[2]; sub(":", "", tid) }
        next }
    /^\.\.\. FP chain:/ { mode = "c"; next }
    /^\.\.\. branch stack:/ { mode = "b"; next }
    /^\.\.\.\.\. / && have && mode == "c" { x = $3; sub(/^0+/, "", x);
        if (length($3) == 16 && $3 >= "fffffffffffff001") next;
        chain = chain (chain == "" ? "" : ",") (x == "" ? "0" : x); next }
    /^\.\.\.\.\. / && have && mode == "b" { f = $3; g = $5; sub(/^0+/, "", f); sub(/^0+/, "", g);
        br = br (br == "" ? "" : ",") f "/" g; next }
    /^[^.]/ { mode = "" }
    END { flush() }'
}

# "f/t,f/t,..." per sample from perf script -F ip,brstack
script_brstacks() {
    awk '/\/-\/|\/M\/|\/P\// { s = "";
        for (i = 1; i <= NF; i++) { split($i, a, "/"); f = a[1]; t = a[2];
            sub(/^0x/, "", f); sub(/^0x/, "", t); s = s (s == "" ? "" : ",") f "/" t }
        print s }' "$1"
}

# perf 6.1 prints callchain entries of mapped user code as binary offsets
# ("Show binary offset for userspace addr", reverted in later perf), which
# llvm-profgen-19 takes for external addresses. Turn `-F ip,dso,brstack`
# output back into absolute addresses with the MMAP2 lines, giving the
# hybrid perf-script format llvm-profgen expects.
absolute_script() {
    perl -ne '
        if (/PERF_RECORD_MMAP2 .*\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0) .* (\S+)$/) {
            $start{$3} = hex($1); $pgoff{$3} = hex($2); print; next }
        if (/^\t\s*([0-9a-f]+) \((.*)\)$/) {
            if (exists $start{$2}) { printf "\t%x\n", hex($1) - $pgoff{$2} + $start{$2} }
            else { print "\t$1\n" }
            next }
        s/\([^)]*\)//g; print' "$1"
}

CFLAGS="-O2 -g -fno-omit-frame-pointer"
run_one() { # name args...
    n=$1; shift
    extra=""; [ "$n" = threads ] && extra=-pthread
    clang-19 $CFLAGS $extra "$TOP/tests/workloads/$n.c" -o "$W/$n" || fail "$n: compile"
    "$W/$n" "$@" > "$W/$n.native" || fail "$n: native run"
    "$LBR2PROF" record --simulate -c 97 --seed 7 -o "$W/$n.data" \
        --debug-dump "$W/$n.dump" --truth "$W/$n.truth.json" -- "$W/$n" "$@" \
        > "$W/$n.out" 2> "$W/$n.rec.err" || { cat "$W/$n.rec.err"; fail "$n: record"; }
    cat "$W/$n.rec.err"
    cmp -s "$W/$n.native" "$W/$n.out" || fail "$n: output differs under the tracer"
    [ -s "$W/$n.dump" ] || fail "$n: no samples"
    if command -v python3 >/dev/null 2>&1; then
        python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["samples"] and d["mappings"] and d["insn_counts"] and d["branch_counts"]' \
            "$W/$n.truth.json" || fail "$n: truth file is not the documented JSON"
    fi
    perf_dump_samples "$W/$n.data" > "$W/$n.perfD"
    [ -s "$W/$n.data.D.err" ] && { cat "$W/$n.data.D.err"; fail "$n: perf report -D complained"; }
    cmp "$W/$n.dump" "$W/$n.perfD" || { diff "$W/$n.dump" "$W/$n.perfD" | head -5; fail "$n: perf decodes other samples than recorded"; }
    perf script -F ip,brstack --show-mmap-events -i "$W/$n.data" > "$W/$n.script" 2> "$W/$n.script.err" \
        || fail "$n: perf script failed"
    [ -s "$W/$n.script.err" ] && { cat "$W/$n.script.err"; fail "$n: perf script printed warnings"; }
    script_brstacks "$W/$n.script" > "$W/$n.br.perf"
    sed 's/.* br=//' "$W/$n.dump" > "$W/$n.br.rec"
    cmp "$W/$n.br.rec" "$W/$n.br.perf" || fail "$n: perf script brstack differs from the recorder's"
    grep -q "PERF_RECORD_MMAP2 .*r-xp $W/$n\$" "$W/$n.script" || fail "$n: no MMAP2 of the program"
    perf script -F ip,dso,brstack --show-mmap-events -i "$W/$n.data" 2>/dev/null > "$W/$n.dso.script"
    absolute_script "$W/$n.dso.script" > "$W/$n.hybrid"
    llvm-profgen-19 --perfscript="$W/$n.hybrid" --binary="$W/$n" \
        --format=text --gen-cs-nested-profile=0 --output="$W/$n.prof" > "$W/$n.pg.log" 2>&1 || { cat "$W/$n.pg.log"; fail "$n: llvm-profgen"; }
    grep -q '^\[main' "$W/$n.prof" || { head "$W/$n.prof"; fail "$n: no CS context rooted at main in the profile"; }
    echo "ok $n: $(wc -l < "$W/$n.dump") samples"
}

run_one recursion 14
run_one inlining 3000
run_one tailcall 3000
run_one qsort_cb 300
run_one kernel 60
run_one threads

# seed 003: a sample taken at fib's `push %rbp` (a call target) has the
# frame-pointer chain the kernel walks: the caller (stack[1]) is missing
# and the next frame is the grandparent; samples inside fib's body have
# their first two frames right. The truth file has both stacks.
fib=$(nm "$W/recursion" | awk '$3 == "fib" { print $1 }')
map=$(grep -m1 "PERF_RECORD_MMAP2 .*r-xp $W/recursion\$" "$W/recursion.script")
perl -e '
    my ($fib, $map, $file) = @ARGV;
    $map =~ /\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0) / or die "no map\n";
    my ($start, $pgoff) = (hex($1), hex($2));
    my $entry = hex($fib) + $start - $pgoff;
    my ($at_entry, $in_body, $bad) = (0, 0, 0);
    open(my $f, "<", $file) or die;
    while (<$f>) {
        next unless /"stack": \[([^\]]*)\], "fp_chain": \[([^\]]*)\]/;
        my ($s1, $s2) = ($1, $2);
        my @st = map { hex } ($s1 =~ /"(0x[0-9a-f]+)"/g);
        my @fp = map { hex } ($s2 =~ /"(0x[0-9a-f]+)"/g);
        next if @st < 3;
        my $inbin = sub { $_[0] >= $start && $_[0] < $start + 0x1000 };
        if ($st[0] == $entry) { # fp[i] == st[i + 1]: stack[1] skipped
            $at_entry++;
            for (my $i = 1; $i + 1 < @st && $inbin->($st[$i + 1]); $i++) {
                next if defined $fp[$i] && $fp[$i] == $st[$i + 1];
                $bad++; print "entry sample: frame $i is not the grandparent chain\n"; last;
            }
        } elsif ($st[0] > $entry + 1 && $st[0] < $entry + 0x43) { # fp[i] == st[i]
            $in_body++;
            for (my $i = 1; $i < @st && $inbin->($st[$i]); $i++) {
                next if defined $fp[$i] && $fp[$i] == $st[$i];
                $bad++; print "body sample: frame $i differs\n"; last;
            }
        }
    }
    print "fib entry samples $at_entry, body samples $in_body, bad $bad\n";
    exit($bad || !$at_entry || !$in_body ? 1 : 0);
' "$fib" "$map" "$W/recursion.truth.json" || fail "seed 003: frame-pointer chains are not the kernel walk"

# child processes: posix_spawn and system() (vfork children, traced until
# they exec) and fork (the child gets its breakpoints removed and runs
# untraced): same output as natively, one FORK per vfork child
clang-19 $CFLAGS "$TOP/tests/workloads/spawn.c" -o "$W/spawn" || fail "spawn: compile"
"$W/spawn" > "$W/spawn.native" || fail "spawn: native run"
"$LBR2PROF" record --simulate -c 97 -o "$W/spawn.data" -- "$W/spawn" > "$W/spawn.out" 2> "$W/spawn.err" \
    || { cat "$W/spawn.err"; fail "spawn: record"; }
cmp "$W/spawn.native" "$W/spawn.out" || fail "spawn: output differs under the tracer"
[ "$(perf report -D -i "$W/spawn.data" 2>/dev/null | grep -c 'PERF_RECORD_FORK')" -eq 2 ] || fail "spawn: expected 2 FORK records"
perf script -F ip,brstack -i "$W/spawn.data" > /dev/null 2> "$W/spawn.script.err" || fail "spawn: perf script"
[ -s "$W/spawn.script.err" ] && { cat "$W/spawn.script.err"; fail "spawn: perf script warnings"; }
# the vfork children's samples resolve through the maps perf copied at FORK
main_pid=$(perf report -D -i "$W/spawn.data" 2>/dev/null | sed -n 's/.*PERF_RECORD_COMM exec: spawn:\([0-9]*\)\/.*/\1/p' | head -1)
perf script -F pid,ip,dso -i "$W/spawn.data" 2>/dev/null |
    awk -v m="$main_pid" '$1 ~ /^[0-9]+$/ && NF == 1 { p = $1; next } p != m && /libc\.so/ { n++ } END { exit !(n > 0) }' \
    || fail "spawn: no sample of a child resolved to libc"

# --seed: the jittered periods are a function of the seed alone; they
# stay within PERIOD +- PERIOD/8 (the first sample's count is also the
# first period: one thread)
periods() { grep -o '"period": [0-9]*' "$1" | sed 's/.*: //' | tr '\n' ' '; }
for sd in 7 7 8; do
    "$LBR2PROF" record --simulate -c 97 --seed $sd -o "$W/seed.data" --truth "$W/seed$sd.json" \
        -- "$W/recursion" 10 > /dev/null 2>&1 || fail "record --seed $sd"
    periods "$W/seed$sd.json" | cut -d' ' -f2- > "$W/seed$sd.p"
done
[ "$(periods "$W/recursion.truth.json" | cut -d' ' -f2-21)" = "$(cut -d' ' -f1-20 "$W/seed7.p")" ] \
    || fail "--seed 7 gave other periods in two runs"
cmp -s "$W/seed7.p" "$W/seed8.p" && fail "--seed 8 gave the same periods as --seed 7"
for p in $(cat "$W/seed8.p"); do
    [ "$p" -ge 85 ] && [ "$p" -le 109 ] || fail "period $p outside 97 +- 12"
done

# --user-stack: REGS_USER (the `--call-graph dwarf` mask) and STACK_USER in
# every sample, decoded by perf, which can DWARF-unwind from them
"$LBR2PROF" record --simulate -c 200 --user-stack=2048 -o "$W/us.data" \
    --debug-dump "$W/us.dump" -- "$W/recursion" 12 > /dev/null 2>&1 || fail "record --user-stack"
perf report -D -i "$W/us.data" > "$W/us.D" 2>&1 || fail "perf report -D (user stack)"
ns=$(wc -l < "$W/us.dump")
[ "$(grep -c 'user regs: mask 0xff0fff ABI 64-bit' "$W/us.D")" -eq "$ns" ] || fail "user regs missing"
[ "$(grep -c 'ustack: size 2048' "$W/us.D")" -eq "$ns" ] || fail "user stack missing"
perf script -F ip,sym -i "$W/us.data" > "$W/us.script" 2> "$W/us.err" || fail "perf script (user stack)"
grep -q ' fib$' "$W/us.script" || fail "perf found no fib frame with the user stack"

# llvm-profgen reading the perf.data itself (it runs perf script)
llvm-profgen-19 --perfdata="$W/kernel.data" --binary="$W/kernel" \
    --format=text --output="$W/kernel.pd.prof" > "$W/pd.log" 2>&1 || { cat "$W/pd.log"; fail "llvm-profgen --perfdata"; }
grep -q 'run' "$W/kernel.pd.prof" || fail "llvm-profgen --perfdata: no function 'run' in the profile"

# the threads recording has all three threads' samples and FORK records
tids=$(sed 's/ .*//' "$W/threads.dump" | sort -u | wc -l)
[ "$tids" -eq 3 ] || fail "threads: samples from $tids threads, expected 3"
[ "$(perf report -D -i "$W/threads.data" 2>/dev/null | grep -c 'PERF_RECORD_FORK')" -eq 2 ] || fail "threads: expected 2 FORK records"

# exactness against single-stepping (static: no dynamic loader, fast),
# for plain code and for caught and ignored signals. Both runs with ASLR
# off (same stack addresses): libc's strlen takes another path when a
# string lies within 32 bytes of a page end, which ASLR decides anew.
cc -O2 -o "$W/sstep" "$TOP/tests/e2e/helpers/sstep.c" || fail "sstep build"
NOASLR="setarch $(uname -m) -R"
$NOASLR true 2>/dev/null || NOASLR=""
exact() { # workload args...
    n=$1; shift
    clang-19 $CFLAGS -static "$TOP/tests/workloads/$n.c" -o "$W/$n.static" 2>/dev/null \
        || { echo "no static libc: skipping exactness"; return 0; }
    $NOASLR "$W/sstep" "$W/$n.static" "$@" 2> "$W/$n.ref.raw" > /dev/null || fail "sstep run"
    sort "$W/$n.ref.raw" > "$W/$n.ref"
    $NOASLR "$LBR2PROF" record --simulate -c 50 -o "$W/$n.s.data" --truth "$W/$n.s.json" -- "$W/$n.static" "$@" \
        > /dev/null 2>&1 || fail "record $n.static"
    awk -F'"' '/^  \["0x[0-9a-f]+", [0-9]+\]/ { sub(/^0x/, "", $2); c = $3; gsub(/[^0-9]/, "", c); print $2, c }' \
        "$W/$n.s.json" | sort > "$W/$n.truth"
    [ -s "$W/$n.ref" ] || fail "empty single-step reference"
    cmp "$W/$n.ref" "$W/$n.truth" || { diff "$W/$n.ref" "$W/$n.truth" | head; fail "$n: per-instruction counts differ from single-stepping"; }
    echo "ok exact $n: $(wc -l < "$W/$n.ref") instruction addresses match single-stepping"
}
exact recursion 9
exact signals

# a command that crashes: the recording is still complete, perf reads it
"$LBR2PROF" record --simulate -c 97 -o "$W/crash.data" -- "$W/signals.static" crash \
    > /dev/null 2> "$W/crash.err" || { cat "$W/crash.err"; fail "record of a crashing command"; }
grep -q 'signal 11' "$W/crash.err" || { cat "$W/crash.err"; fail "the crash is not reported"; }
perf script -F ip,brstack -i "$W/crash.data" > /dev/null 2> "$W/crash.perr" || fail "perf script (crash)"
[ -s "$W/crash.perr" ] && { cat "$W/crash.perr"; fail "perf script warnings (crash)"; }
exit 0
