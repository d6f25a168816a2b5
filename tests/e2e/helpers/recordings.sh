# recordings.sh - sourced by the e2e tests of several traces in one run,
# raw profile merges and the fleet driver: builds two programs (kernel.c,
# a PIE, and inlining.c; clang-19 -O2 -g, frame pointers, plus the flags
# make_recordings is given, e.g. -fpseudo-probe-for-profiling) and records
# small runs of them with `lbr2prof record --simulate` in the current
# directory:
#   k1.data, k2.data  kernel, two runs: two pids, two ASLR bases
#   i1.data           inlining: another binary
# and, when asked (make_concat), cat.data: the three merged into one
# recording, interleaved by time (helpers/pdmerge.c), the reference of a
# run over several traces; (make_lib_recordings FLAGS...) m1.data,
# m2.data, m3.data: three runs of mixed.c calling its shared library
# lib/libml.so (mixedlib.c), which calls back: contexts that cross from
# one binary into the other. Needs LBR2PROF, TOP, BUILD and fail().

record_one() { # OUT SEED PROG ARGS...
    out=$1 seed=$2
    shift 2
    "$LBR2PROF" record --simulate -c 97 --seed "$seed" -o "$out" -- "$@" \
        > /dev/null 2> "$out.err" || { cat "$out.err"; fail "record $out"; }
}

make_recordings() { # [CFLAGS...]
    for t in clang-19 cc perl; do
        command -v $t > /dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
    done
    clang-19 -O2 -g -fno-omit-frame-pointer "$@" -fPIE -pie -o kernel \
        "$TOP/tests/workloads/kernel.c" || fail "clang-19 kernel.c"
    clang-19 -O2 -g -fno-omit-frame-pointer "$@" -o inlining \
        "$TOP/tests/workloads/inlining.c" || fail "clang-19 inlining.c"
    record_one k1.data 1 ./kernel 120
    record_one k2.data 2 ./kernel 120
    record_one i1.data 3 ./inlining 8000
}

make_lib_recordings() { # [CFLAGS...]
    mkdir -p lib || fail "mkdir lib"
    clang-19 -O2 -g -fno-omit-frame-pointer "$@" -fPIC -shared -o lib/libml.so \
        "$TOP/tests/workloads/mixedlib.c" || fail "clang-19 mixedlib.c"
    clang-19 -O2 -g -fno-omit-frame-pointer "$@" -o mixed "$TOP/tests/workloads/mixed.c" \
        -Llib -lml -Wl,-rpath,"$PWD/lib" || fail "clang-19 mixed.c"
    record_one m1.data 11 ./mixed 150
    record_one m2.data 12 ./mixed 150
    record_one m3.data 13 ./mixed 100
}

# corrupt_mid IN OUT: IN with the record in the middle of its data section
# given a size below a record header's: readable up to there, then an
# error (a trace that fails half-way).
corrupt_mid() {
    perl -e 'open(F, "<:raw", $ARGV[0]) or die; local $/; my $b = <F>;
        my ($off, $size) = unpack("Q<Q<", substr($b, 40, 16)); my @r;
        for (my $p = $off; $p < $off + $size; $p += unpack("v", substr($b, $p + 6, 2))) { push @r, $p }
        substr($b, $r[@r / 2] + 6, 2) = pack("v", 4);
        open(O, ">:raw", $ARGV[1]) or die; print O $b' "$1" "$2" || fail "corrupt_mid $1"
}

# The pid and load address of each recording's kernel, one line each.
kernel_maps() {
    for d in k1 k2; do
        "$LBR2PROF" script --show-mmap-events -F ip "$d.data" 2> /dev/null |
            perl -ne 'if (/PERF_RECORD_MMAP2 (\d+)\/\d+: \[(0x[0-9a-f]+)\(.*\/kernel$/) { print "$1 $2\n"; exit }'
    done
}

make_concat() {
    lib=$TOP/$BUILD/liblbr2prof.a
    san=
    nm "$lib" 2> /dev/null | grep -q __asan_init && san="-fsanitize=address,undefined"
    libs=$(make -s -C "$TOP" print-ldlibs) || fail "make print-ldlibs"
    # shellcheck disable=SC2086
    cc -std=gnu11 -O1 $san -D_GNU_SOURCE -I"$TOP/include" -o pdmerge \
        "$TOP/tests/e2e/helpers/pdmerge.c" "$lib" $libs || fail "building pdmerge"
    ./pdmerge cat.data k1.data k2.data i1.data || fail "pdmerge"
}
