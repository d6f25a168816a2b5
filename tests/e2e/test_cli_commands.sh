#!/bin/sh
# The command list of `lbr2prof help`: the user commands, then the
# developer tools apart under their own heading (readbench is one: it must
# not be offered among the user commands, and must still run). Every
# command listed answers `--help` or runs; an unknown word is refused.
set -u
cd "$WORK" || exit 1
fails=0
fail() { echo "FAIL $*"; fails=$((fails + 1)); }

"$LBR2PROF" help >help.txt 2>&1 || fail "help exits non-zero"
# the user list: from "commands:" to the first blank line
sed -n '/^commands:$/,/^$/p' help.txt | sed -n 's/^  \([a-z-]*\) .*/\1/p' >user.txt
sed -n '/^developer commands/,/^$/p' help.txt | sed -n 's/^  \([a-z-]*\) .*/\1/p' >dev.txt
for c in profile script report record symbolicate dump-syms serve; do
    grep -qx "$c" user.txt || fail "user command $c not listed"
done
grep -qx readbench user.txt && fail "readbench (a developer tool) is listed among the user commands"
grep -qx readbench dev.txt || fail "readbench is not listed under the developer commands"
[ -z "$(sort user.txt dev.txt | uniq -d)" ] || fail "a command is listed twice"
# still runnable: counts the records of a corpus file
"$LBR2PROF" readbench "$TOP/tests/data/autofdo/test.lbr" >rb.txt 2>&1 || fail "readbench does not run"
grep -qi sample rb.txt || fail "readbench printed no sample count: $(head -3 rb.txt)"
# -h and --help print the same list
"$LBR2PROF" --help >h2.txt 2>&1 && cmp -s help.txt h2.txt || fail "--help differs from help"
"$LBR2PROF" nosuchcommand-xyz >/dev/null 2>err.txt
[ $? -eq 2 ] || fail "an unknown command is not refused with status 2"
[ $fails -eq 0 ] && echo "ok   command list" && exit 0
exit 1
