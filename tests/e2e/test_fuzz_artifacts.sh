#!/bin/sh
# Fuzzing leaves nothing in the tree: no libFuzzer finding (crash-*,
# leak-*, timeout-*, oom-*, slow-unit-*) is tracked, .gitignore covers
# them wherever they land, `make fuzz` links every target with
# tests/fuzz/common/artifact_dir.c, and that file really sends findings
# to build-fuzz/artifacts/<target>/ unless -artifact_prefix= is given
# (checked by calling its LLVMFuzzerInitialize from a small driver, no
# fuzzer needed). scripts/fuzz-reader.sh writes under build-fuzz/.
set -u
cd "$WORK" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }
pat='(^|/)(crash|leak|timeout|oom|slow-unit)-[^/]*$'

if git -C "$TOP" rev-parse --git-dir >/dev/null 2>&1; then
    tracked=$(git -C "$TOP" ls-files | grep -E "$pat")
    [ -z "$tracked" ] || fail "fuzz artifacts tracked: $tracked"
    for f in crash-57faede leak-1 timeout-2 oom-3 slow-unit-4 tests/fuzz/crash-5; do
        git -C "$TOP" check-ignore -q --no-index "$f" || fail ".gitignore does not cover $f"
    done
else
    echo "skip the git checks: $TOP is not a git checkout"
fi

# make fuzz: the command that links each target has artifact_dir.c
make -C "$TOP" -n fuzz 2>/dev/null | grep -Eq 'fuzzer[^ ]* tests/fuzz/fuzz_[a-z0-9_]+\.c tests/fuzz/common/artifact_dir\.c ' ||
    fail "make fuzz does not link tests/fuzz/common/artifact_dir.c into the targets"

# its LLVMFuzzerInitialize, driven by hand
cat >drv.c <<'C'
#include <stdio.h>
int LLVMFuzzerInitialize(int *argc, char ***argv);
int main(int argc, char **argv)
{
    int i;
    LLVMFuzzerInitialize(&argc, &argv);
    for (i = 0; i < argc; i++)
        printf("%s\n", argv[i]);
    return 0;
}
C
cc -o build-fuzz-drv drv.c "$TOP/tests/fuzz/common/artifact_dir.c" || { echo "cannot build the driver"; exit 1; }
mkdir -p proj/build-fuzz && cp build-fuzz-drv proj/build-fuzz/fuzz_x
(cd proj && ./build-fuzz/fuzz_x -max_total_time=1 corpus) >out1.txt
[ "$(sed -n 2p out1.txt)" = "-artifact_prefix=./build-fuzz/artifacts/fuzz_x/" ] ||
    fail "artifact prefix: $(cat out1.txt)"
[ "$(sed -n 3,4p out1.txt | tr '\n' ' ')" = "-max_total_time=1 corpus " ] || fail "other arguments: $(cat out1.txt)"
[ -d proj/build-fuzz/artifacts/fuzz_x ] || fail "artifact directory not made"
"$WORK/proj/build-fuzz/fuzz_x" >out2.txt
[ "$(sed -n 2p out2.txt)" = "-artifact_prefix=$WORK/proj/build-fuzz/artifacts/fuzz_x/" ] ||
    fail "absolute path: $(cat out2.txt)"
(cd proj && ./build-fuzz/fuzz_x -artifact_prefix=mine/ c) >out3.txt
[ "$(cat out3.txt | tr '\n' ' ')" = "./build-fuzz/fuzz_x -artifact_prefix=mine/ c " ] ||
    fail "an explicit -artifact_prefix is not kept: $(cat out3.txt)"

# the reader's fuzz script
grep -q -- '-artifact_prefix=\$O/' "$TOP/scripts/fuzz-reader.sh" &&
    grep -q '^O=build-fuzz/' "$TOP/scripts/fuzz-reader.sh" ||
    fail "scripts/fuzz-reader.sh does not write under build-fuzz/"
[ $fails -eq 0 ] && echo "ok   fuzz artifacts stay under build-fuzz/" && exit 0
exit 1
