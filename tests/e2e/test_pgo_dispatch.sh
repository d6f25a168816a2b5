#!/bin/sh
# test_pgo_dispatch.sh - scripts/pgo/vdbe-dispatch.pl, the check the PGO
# bench runs on its SQLite builds (docs/pgo-bench.md, Diagnosis item 5):
# it must tell a dispatch that keeps SQLite's pOp in a register from one
# that reloads it from the stack (the spill that made a build ~15% slower,
# whichever profile it came from), and say when there is no dispatch.
# Small objects with a function sqlite3VdbeExec, in the shapes clang-19
# gave the bench's builds (pOp in a register; spilled as in profgen-s4,
# and as in default-s5, whose reload into %r13 objdump shows as
# `movzbl 0x0(%r13)`).
set -u
command -v cc >/dev/null 2>&1 || { echo "skip: cc not found"; exit 77; }
command -v objdump >/dev/null 2>&1 || { echo "skip: objdump not found"; exit 77; }
cd "$WORK" || exit 1
fails=0
mk() { # NAME LOAD-OF-POP: an object whose dispatch loads the opcode via %rax or %r10
    cat >"$1.s" <<EOF
	.text
	.globl sqlite3VdbeExec
	.type sqlite3VdbeExec, @function
sqlite3VdbeExec:
	push %rbp
	mov %rsp, %rbp
	$2
	inc %r8
	$3
	cmp \$0xba, %r13
	ja 2f
	lea table(%rip), %rcx
	movslq (%rcx,%r13,4), %rax
	add %rcx, %rax
	jmp *%rax
2:	pop %rbp
	ret
	.size sqlite3VdbeExec, .-sqlite3VdbeExec
	.section .rodata
table:	.long 0
EOF
    cc -c "$1.s" -o "$1.o" || { echo "FAIL: cc $1.s"; fails=$((fails + 1)); }
}
mk reg "add \$0x18, %r10" "movzbl (%r10), %r13d"
mk spill "addq \$0x18, -0x58(%rbp)" "mov -0x58(%rbp), %rax
	movzbl (%rax), %r13d"
mk spill13 "addq \$0x18, -0x40(%rbp)" "mov -0x40(%rbp), %r13
	movzbl (%r13), %r13d"
mk none "add \$0x18, %r10" "movzbl 4(%r10), %r13d"

check() { # WANT-RC WANT-OUTPUT OBJECTS...
    want_rc=$1 want=$2
    shift 2
    out=$(perl "$TOP/scripts/pgo/vdbe-dispatch.pl" "$@")
    rc=$?
    if [ "$rc" -ne "$want_rc" ] || [ "$out" != "$want" ]; then
        echo "FAIL: vdbe-dispatch.pl $* gave rc $rc and:"
        echo "$out"
        echo "expected rc $want_rc and:"
        echo "$want"
        fails=$((fails + 1))
    else
        echo "ok: $* -> rc $rc"
    fi
}
check 0 "reg.o: pOp in %r10" reg.o
check 1 "reg.o: pOp in %r10
spill.o: pOp spilled (reloaded from -0x58(%rbp))" reg.o spill.o
check 1 "spill13.o: pOp spilled (reloaded from -0x40(%rbp))" spill13.o
check 2 "none.o: no dispatch found in sqlite3VdbeExec" none.o
echo "$fails failed"
[ "$fails" -eq 0 ]
