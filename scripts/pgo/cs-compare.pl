#!/usr/bin/perl
# cs-compare.pl A.txt B.txt [N] - compares two text sample profiles made
# from the same recording (scripts/pgo-bench.sh's diagnosis, docs/pgo-bench.md):
# per function, the total and head samples of every context whose leaf it is
# (flat CS profiles: `[a:1 @ b]:TOTAL:HEAD`), or of its top-level profile
# (nested or flat non-CS profiles: `b:TOTAL:HEAD`). Prints the sums, the
# context counts, how many functions have fewer samples in A than in B (and
# how many fewer), and the N (default 15) functions with the largest
# shortfall of A against B. Exit status 1 when some function has a smaller
# total or head count in A than in B, else 0.
use strict;
use warnings;

my ($fa, $fb, $n) = @ARGV;
die "usage: cs-compare.pl A.txt B.txt [N]\n" unless defined $fb;
$n //= 15;

sub readprof {
    my ($f) = @_;
    my (%tot, %head, $ctx);
    open(my $h, "<", $f) or die "cs-compare.pl: $f: $!\n";
    my ($raw, $israw);
    while (<$h>) {
        chomp;
        if (defined $raw && /^\s/) {
            if (/^\s+([0-9a-f]+)-([0-9a-f]+):(\d+)$/) {
                $tot{$raw} += (hex($2) - hex($1) + 1) * $3;
            } elsif (/^\s+([0-9a-f]+)->([0-9a-f]+):(\d+)$/) {
                $head{$raw} += $3;
            } elsif (!/^\s+\d+$/) {
                die "cs-compare.pl: $f line $.: not a range, branch or count: $_\n";
            }
            next;
        }
        next if /^\s/;
        my ($name, $t, $hd);
        if (/^\[(.*)\]$/) {    # a raw profile's context
            $israw = 1;
            ($raw = $1) =~ s/.* @ //;
            $raw =~ s/:[0-9.]+$//;
            $raw = "(none)" if $raw eq "";
            $ctx++;
            $tot{$raw} += 0;
            $head{$raw} += 0;
            next;
        }
        $raw = undef;
        if (/^\[(.*)\]:(\d+):(\d+)$/) {
            ($name, $t, $hd) = ($1, $2, $3);
            $name =~ s/.* @ //;
            $name =~ s/:[0-9.]+$//;
        } elsif (/^(.*):(\d+):(\d+)$/) {
            ($name, $t, $hd) = ($1, $2, $3);
        } else {
            die "cs-compare.pl: $f line $.: not a profile header: $_\n";
        }
        $ctx++;
        $tot{$name} += $t;
        $head{$name} += $hd;
    }
    return (\%tot, \%head, $ctx // 0, $israw);
}

my ($ta, $ha, $ca, $rawa) = readprof($fa);
my ($tb, $hb, $cb, $rawb) = readprof($fb);
die "cs-compare.pl: $fa and $fb are not both raw or both symbolized\n" if !$rawa != !$rawb;
my ($lt, $lh) = $rawa ? ("range x bytes", "branches") : ("total samples", "head samples");
my %all = map { $_ => 1 } keys %$ta, keys %$tb;
my ($sa, $sb, $sha, $shb) = (0, 0, 0, 0);
my ($nt, $nh, $ltsum, $lhsum) = (0, 0, 0, 0);
my @short;
for my $f (keys %all) {
    my ($a, $b) = ($ta->{$f} // 0, $tb->{$f} // 0);
    my ($x, $y) = ($ha->{$f} // 0, $hb->{$f} // 0);
    ($sa, $sb, $sha, $shb) = ($sa + $a, $sb + $b, $sha + $x, $shb + $y);
    if ($a < $b) { $nt++; $ltsum += $b - $a }
    if ($x < $y) { $nh++; $lhsum += $y - $x }
    push @short, [$f, $a, $b, $x, $y] if $a < $b || $x < $y;
}
printf "%-14s %14s %14s %9s\n", "", "A", "B", "A/B";
printf "%-14s %14d %14d %9.4f\n", $lt, $sa, $sb, $sb ? $sa / $sb : 0;
printf "%-14s %14d %14d %9.4f\n", $lh, $sha, $shb, $shb ? $sha / $shb : 0;
printf "%-14s %14d %14d\n", "profiles", $ca, $cb;
printf "%-14s %14d %14d\n", "functions", scalar keys %$ta, scalar keys %$tb;
printf "functions with a smaller total in A: %d (%d samples short), a smaller head: %d (%d short)\n",
    $nt, $ltsum, $nh, $lhsum;
@short = sort { ($b->[2] - $b->[1]) <=> ($a->[2] - $a->[1]) || $a->[0] cmp $b->[0] } @short;
printf "%-40s %12s %12s %10s %10s\n", "function (A short of B)", "total A", "total B", "head A", "head B"
    if @short;
for my $s (@short[0 .. ($#short < $n - 1 ? $#short : $n - 1)]) {
    printf "%-40s %12d %12d %10d %10d\n", substr($s->[0], 0, 40), @$s[1 .. 4];
}
exit(@short ? 1 : 0);
