#!/usr/bin/perl
# vdbe-dispatch.pl BINARY... - where SQLite's bytecode interpreter keeps
# its program counter (pOp) at the opcode dispatch, per build.
#
# sqlite3VdbeExec's loop is `for(pOp=...; 1; pOp++) switch(pOp->opcode)`:
# clang compiles the dispatch to `movzbl (%P),%op; cmp $N,%op; ja ...`
# and, a few instructions on, a jump through a table (`jmp *%reg`). When
# the register allocator keeps pOp in a register, %P is that register;
# when it spills pOp (a decision the block frequencies of this 100 KB
# function tip either way), the loop increments it in memory (`addq
# $0x18,-0x58(%rbp)`) and reloads it (`mov -0x58(%rbp),%P`) just before
# the load of the opcode: a store-to-load forwarding on the chain every
# opcode waits for. On the bench's SQLite workload such a build runs
# ~15% slower (CPU time) with the same instruction count
# (docs/pgo-bench.md, "Diagnosis" item 5).
#
# Prints a line per binary: "NAME: pOp in %REG" or "NAME: pOp spilled
# (reloaded from OFF(%rbp))"; exit 1 if any is spilled, 2 if a dispatch is
# not found (another SQLite, another compiler).
use strict;
use warnings;
use List::Util qw(min);

my $spilled = 0;
my $missing = 0;
for my $bin (@ARGV) {
    my @insn;
    open(my $d, "-|", "objdump", "-d", "--no-show-raw-insn",
        "--disassemble=sqlite3VdbeExec", $bin) or die "objdump $bin: $!\n";
    while (<$d>) {
        push @insn, $1 if /^\s*[0-9a-f]+:\s+(\S.*?)\s*$/;
    }
    close($d);
    my $what;
    for my $i (1 .. $#insn - 1) {
        # the opcode's load, checked against the number of opcodes
        next unless $insn[$i] =~ /^movzbl\s+(?:0x0)?\((%\w+)\),(%\w+)$/;
        my ($p, $op) = ($1, $2);
        (my $op64 = $op) =~ s/d$//;
        next unless $insn[$i + 1] =~ /^cmp\s+\$0x[0-9a-f]+,($op|$op64)$/;
        next unless grep { /^jmp\s+\*%\w+$/ } @insn[$i + 2 .. min($i + 8, $#insn)];
        if ($insn[$i - 1] =~ /^mov\s+(-?0x[0-9a-f]+\(%[er][bs]p\)),\Q$p\E$/) {
            $what = "pOp spilled (reloaded from $1)";
            $spilled++;
        } else {
            $what = "pOp in $p";
        }
        last;
    }
    unless (defined $what) {
        $what = "no dispatch found in sqlite3VdbeExec";
        $missing++;
    }
    my $name = $bin;
    $name =~ s{.*/}{};
    print "$name: $what\n";
}
exit($missing ? 2 : $spilled ? 1 : 0);
