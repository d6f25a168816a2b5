#!/usr/bin/perl
# rawkept.pl REF MINE - unsymbolized CS profiles (--skip-symbolization):
# prints the ranges and branches whose count summed over all contexts is
# smaller in MINE than in REF, and the totals; exits 1 if there is any.
# (Counts kept, whatever the context: a symbolized profile's line counts
# also hold call counts llvm-profgen infers from a callee's head.)
use strict;
use warnings;
my %t;
for my $i (0, 1) {
    open my $f, "<", $ARGV[$i] or die "$ARGV[$i]: $!";
    while (<$f>) {
        $t{$1}[$i] += $2 if /^\s+([0-9a-f]+-(?:>)?[0-9a-f]+):(\d+)$/;
    }
}
my ($bad, $r, $m) = (0, 0, 0);
for my $k (sort keys %t) {
    my ($a, $b) = map { $_ // 0 } @{$t{$k}};
    $r += $a;
    $m += $b;
    next unless $b < $a;
    print "  $k: llvm-profgen $a, lbr2prof $b\n" if $bad++ < 5;
}
print "ranges and branches: llvm-profgen $r, lbr2prof $m; $bad with fewer\n";
exit($bad || !$r ? 1 : 0);
