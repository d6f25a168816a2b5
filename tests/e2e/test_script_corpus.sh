#!/bin/sh
# test_script_corpus.sh - `lbr2prof script` against perf 6.1 on every
# perf.data of the corpus (tests/data/perf-corpus, autofdo/test.lbr) that
# perf reads: `perf script -F comm,pid,tid,time,ip,brstack`, plain and with
# --show-mmap-events and --show-task-events, diffed byte for byte at test
# time, plus llvm-profgen's two runs (-F comm,pid and -F ip,brstack with
# --show-mmap-events). Prints one PASS/FAIL line per file and mode; fails
# if any differs.
set -u
command -v perf >/dev/null 2>&1 || { echo "perf not installed"; exit 77; }
perf version 2>/dev/null | grep -q '^perf version 6\.1' ||
    { echo "perf 6.1 required, found: $(perf version 2>&1)"; exit 77; }
: "${LBR2PROF:?}" "${TOP:?}" "${WORK:?}"
F=comm,pid,tid,time,ip,brstack
fail=0; pass=0; failed=""
for f in "$TOP"/tests/data/perf-corpus/perf.data.* "$TOP"/tests/data/autofdo/test.lbr; do
    n=$(basename "$f")
    # perf must read it cleanly; files it rejects are the error tests' job.
    if ! perf script -i "$f" -F $F > "$WORK/$n.perf" 2> "$WORK/$n.perf.err" ||
        grep -q 'bad event header size\|failed to process' "$WORK/$n.perf.err"; then
        echo "SKIP $n: perf 6.1 cannot read it"
        continue
    fi
    # perf's default --itrace (ibxwpe with power events, which lbr2prof
    # does not synthesize) is left out with --no-itrace on files with AUX
    # trace data; the pt_* modes compare the samples lbr2prof does make.
    itrace=
    perf script -i "$f" -F $F --no-itrace > "$WORK/$n.noitrace" 2>/dev/null
    if ! cmp -s "$WORK/$n.perf" "$WORK/$n.noitrace"; then
        itrace=--no-itrace
        echo "NOTE $n: has AUX trace samples; comparing with perf --no-itrace"
    fi
    # plain, mmap and task use the full field list; pass1/pass2 are the two
    # perf script runs llvm-profgen makes on a perf.data.
    modes="plain mmap task pass1 pass2"
    # Files with Intel PT data: also the samples perf synthesizes from it
    # (lbr2prof script --itrace, docs/pt.md), with the same --itrace.
    [ -n "$itrace" ] && modes="$modes pt_b pt_il pt_i1000i pt_b_mmap pt_e pt_be_mmap"
    for mode in $modes; do
        fl=$F
        pt=$itrace
        case $mode in
        plain) opt= ;;
        mmap) opt=--show-mmap-events ;;
        task) opt=--show-task-events ;;
        pass1) opt=--show-mmap-events; fl=comm,pid ;;
        pass2) opt=--show-mmap-events; fl=ip,brstack ;;
        pt_b) opt=; pt=--itrace=b ;;
        pt_il) opt=; pt=--itrace=il ;;
        pt_i1000i) opt=; pt=--itrace=i1000i ;;
        pt_b_mmap) opt=--show-mmap-events; pt=--itrace=b ;;
        pt_e) opt=; pt=--itrace=e ;;
        pt_be_mmap) opt=--show-mmap-events; pt=--itrace=be ;;
        esac
        perf script -i "$f" -F $fl $opt $pt > "$WORK/$n.$mode.perf" 2> "$WORK/$n.$mode.perf.err"
        "$LBR2PROF" script -F $fl $opt $pt "$f" > "$WORK/$n.$mode.ours" 2> "$WORK/$n.$mode.err"
        st=$?
        # with e, the closing count of errors on stderr too
        errs_p=$(grep 'instruction trace errors' "$WORK/$n.$mode.perf.err")
        errs_o=$(grep 'instruction trace errors' "$WORK/$n.$mode.err")
        if [ $st -eq 0 ] && cmp -s "$WORK/$n.$mode.perf" "$WORK/$n.$mode.ours" &&
            [ "$errs_p" = "$errs_o" ]; then
            pass=$((pass + 1)); echo "PASS $n $mode"
        else
            fail=$((fail + 1)); failed="$failed $n:$mode"
            echo "FAIL $n $mode (status $st, $(wc -l < "$WORK/$n.$mode.perf") lines from perf, $(wc -l < "$WORK/$n.$mode.ours") from lbr2prof)"
            head -c 300 "$WORK/$n.$mode.err"
            diff "$WORK/$n.$mode.perf" "$WORK/$n.$mode.ours" | head -6 | cut -c1-200
        fi
    done
done
echo "$pass passed, $fail failed:$failed"
[ $fail -eq 0 ]
