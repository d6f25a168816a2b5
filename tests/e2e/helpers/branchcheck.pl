#!/usr/bin/perl
# branchcheck.pl TRUTH.json - checks a `record --simulate --truth` file
# against objdump (binutils), a decoder that knows AVX-512, AMX and APX:
#  * every taken (from, to) pair (branch_counts, and every sample's lbr
#    entries) has `from` at an instruction objdump calls a branch (jcc,
#    jmp, call, ret, loop*, jrcxz, with any prefix), and `to` at its
#    direct target, or for returns and indirect branches at an instruction
#    start of some mapped file;
#  * every address of insn_counts is an instruction start (a decoder that
#    takes a wrong length would count addresses inside instructions).
# Addresses in mappings without a file ([vdso]) are counted, not checked.
# Prints one line per problem (at most 20 of each kind) and a summary
# "pairs N checked, fake F, bad-target T, insns I, not-starts S,
# unchecked U, evex E, vex V" (E, V: executed EVEX / VEX instructions, to
# show what the run exercised; also one line "evex-executed PATH N" per
# file); exits 1 if any problem was found (2 on
# bad input).
use strict;
use warnings;
no warnings "portable"; # 64-bit hex()

my $truth = shift or die "usage: branchcheck.pl TRUTH.json\n";
open(my $fh, "<", $truth) or die "$truth: $!\n";
my (@maps, %pairs, @insns, $sect);
while (<$fh>) {
    $sect = $1 if /^ "(\w+)": \[/;
    if (/"start": "0x([0-9a-f]+)", "end": "0x([0-9a-f]+)", "pgoff": "0x([0-9a-f]+)", "path": "([^"]*)"/) {
        push @maps, [hex($1), hex($2), hex($3), $4];
    } elsif (defined $sect && $sect eq "branch_counts" && /^\s*\["0x([0-9a-f]+)", "0x([0-9a-f]+)", \d+\]/) {
        $pairs{"$1 $2"} = 1;
    } elsif (defined $sect && $sect eq "insn_counts" && /^\s*\["0x([0-9a-f]+)", \d+\]/) {
        push @insns, hex($1);
    } elsif (/"lbr": \[(.*)\]/) {
        my $l = $1;
        $pairs{"$1 $2"} = 1 while $l =~ /\["0x([0-9a-f]+)", "0x([0-9a-f]+)"/g;
    }
}
close $fh;
die "$truth: no mappings or no branch_counts\n" unless @maps && %pairs;

# file -> its PT_LOAD segments [offset, vaddr, filesz]
my %loads;
sub load_segments {
    my ($path) = @_;
    return if exists $loads{$path};
    my @l;
    open(my $r, "-|", "readelf", "-lW", $path) or die "readelf $path: $!\n";
    while (<$r>) {
        push @l, [hex($1), hex($2), hex($3)]
            if /^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)/;
    }
    close $r;
    $loads{$path} = \@l;
}

# run-time address -> (path, vaddr) or () when unmapped / no file
sub where {
    my ($addr) = @_;
    for my $m (@maps) {
        next unless $addr >= $m->[0] && $addr < $m->[1];
        return () if $m->[3] !~ m{^/};
        load_segments($m->[3]);
        my $off = $addr - $m->[0] + $m->[2];
        for my $s (@{$loads{$m->[3]}}) {
            return ($m->[3], $off - $s->[0] + $s->[1])
                if $off >= $s->[0] && $off < $s->[0] + $s->[2];
        }
        return ();
    }
    return ();
}

# Every address asked about, placed; then file -> { vaddr -> [mnemonic,
# direct target or undef, "evex"/"vex"/""] } for those addresses only
# (objdump disassembles whole files: libc is 340k lines)
my (%at, %need, %code);
for my $a ((map { map { hex } split ' ' } keys %pairs), @insns) {
    next if exists $at{$a};
    my @w = where($a);
    $at{$a} = \@w;
    $need{$w[0]}{$w[1]} = 1 if @w;
}
for my $path (keys %need) {
    my ($n, %c) = ($need{$path});
    open(my $o, "-|", "objdump", "-d", "-w", $path) or die "objdump $path: $!\n";
    while (<$o>) {
        next unless /^\s*([0-9a-f]+):\t/ && $n->{hex($1)};
        next unless /^\s*([0-9a-f]+):\t([0-9a-f ]+?)\s*\t(.*)$/;
        my ($a, $raw, $text) = (hex($1), $2, $3);
        $text =~ s/\s+#.*//;
        my @w = split ' ', $text;
        shift @w while @w > 1 && $w[0] =~ /^(bnd|notrack|rep|repz|repnz|repe|repne|ds|cs|ss|es|fs|gs|data16|addr32|rex\S*|lock)$/;
        my $m = $w[0] // "";
        my $t = (@w > 1 && $w[1] =~ /^([0-9a-f]+)$/) ? hex($1) : undef;
        my @b = split ' ', $raw;
        shift @b while @b > 1 && $b[0] =~ /^(66|67|f2|f3|f0|2e|3e|26|36|64|65)$/;
        my $enc = $b[0] eq "62" ? "evex" : $b[0] =~ /^c[45]$/ ? "vex" : "";
        $c{$a} = [$m, $t, $enc];
    }
    close $o;
    $code{$path} = \%c;
}

my $branch = qr/^(j[a-z]+|call[a-z]?|ret[a-z]?|loop[a-z]*|xbegin|l?jmp[a-z]?|lcall[a-z]?)$/;
my ($checked, $fake, $badto, $unchecked, $notstart) = (0, 0, 0, 0, 0);
my %shown;
sub problem {
    my ($kind, $msg) = @_;
    print "$msg\n" if ++$shown{$kind} <= 20;
}
for my $p (sort keys %pairs) {
    my ($f, $t) = map { hex } split ' ', $p;
    my ($fp, $fv) = @{$at{$f}};
    if (!defined $fp) { $unchecked++; next; }
    $checked++;
    my $i = $code{$fp}{$fv};
    if (!$i || $i->[0] !~ $branch) {
        $fake++;
        problem("fake", sprintf("fake branch: 0x%x (%s+0x%x) is %s -> 0x%x",
            $f, $fp, $fv, $i ? "'$i->[0]'" : "not an instruction start", $t));
        next;
    }
    my ($tp, $tv) = @{$at{$t}};
    next unless defined $tp;
    my $ok = defined $i->[1] ? ($tp eq $fp && $tv == $i->[1])
                             : exists $code{$tp}{$tv};
    next if $ok;
    $badto++;
    problem("to", sprintf("bad target: %s at 0x%x (%s+0x%x) -> 0x%x (%s+0x%x)",
        $i->[0], $f, $fp, $fv, $t, $tp, $tv));
}
my (%enc, %evex_in) = (evex => 0, vex => 0);
for my $a (@insns) {
    my ($p, $v) = @{$at{$a}};
    next unless defined $p;
    if (my $i = $code{$p}{$v}) {
        $enc{$i->[2]}++ if $i->[2];
        $evex_in{$p}++ if $i->[2] eq "evex";
        next;
    }
    $notstart++;
    problem("start", sprintf("not an instruction start: 0x%x (%s+0x%x)", $a, $p, $v));
}
print "evex-executed $_ $evex_in{$_}\n" for sort keys %evex_in;
printf "pairs %d checked, fake %d, bad-target %d, insns %d, not-starts %d, unchecked %d, evex %d, vex %d\n",
    $checked, $fake, $badto, scalar(@insns), $notstart, $unchecked, $enc{evex}, $enc{vex};
exit($fake || $badto || $notstart ? 1 : 0);
