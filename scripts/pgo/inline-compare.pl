#!/usr/bin/perl
# inline-compare.pl A.txt B.txt [N] - what the pre-inliner decided in two
# nested text CS profiles (llvm-profgen's default output, lbr2prof's too):
# every call-site profile nested in another is a context the pre-inliner
# chose to inline (`!Attributes: 2`). Prints per profile the number of
# inlined contexts and the samples they hold, the contexts inlined in one
# only, and the N (default 15) heaviest of those on each side, as
# `caller:site @ callee` paths. Part of scripts/pgo-bench.sh's diagnosis.
use strict;
use warnings;

my ($fa, $fb, $n) = @ARGV;
die "usage: inline-compare.pl A.txt B.txt [N]\n" unless defined $fb;
$n //= 15;

# path => total of every nested call-site profile; the top-level
# profiles' names are the roots of the paths
sub readnested {
    my ($f) = @_;
    my (%in, @stack);
    open(my $h, "<", $f) or die "inline-compare.pl: $f: $!\n";
    while (<$h>) {
        chomp;
        if (/^(\S.*):(\d+):(\d+)$/) {
            @stack = ($1);
            next;
        }
        my ($ind, $site, $rest) = /^( +)(\d+(?:\.\d+)?): (.*)$/ or next;
        next unless $rest =~ /^(\D\S*):(\d+)$/;    # a call-site profile, not a body line
        my ($callee, $tot) = ($1, $2);
        my $depth = length($ind);
        splice(@stack, $depth);
        $stack[$depth - 1] .= ":$site";
        push @stack, $callee;
        $in{join(" @ ", @stack)} += $tot;
        $stack[$depth - 1] =~ s/:[0-9.]+$//;
    }
    return \%in;
}

my ($pa, $pb) = (readnested($fa), readnested($fb));
my $sum = sub { my $s = 0; $s += $_ for values %{$_[0]}; $s };
printf "%-3s %8s inlined contexts, %12d samples in them\n", "A", scalar keys %$pa, $sum->($pa);
printf "%-3s %8s inlined contexts, %12d samples in them\n", "B", scalar keys %$pb, $sum->($pb);
for my $side ([$pa, $pb, "A only"], [$pb, $pa, "B only"]) {
    my ($x, $y, $tag) = @$side;
    my @only = sort { $x->{$b} <=> $x->{$a} || $a cmp $b } grep { !exists $y->{$_} } keys %$x;
    my $s = 0;
    $s += $x->{$_} for @only;
    printf "\n%s: %d contexts, %d samples; heaviest:\n", $tag, scalar @only, $s;
    printf "  %10d  %s\n", $x->{$_}, substr($_, 0, 150) for @only[0 .. ($#only < $n - 1 ? $#only : $n - 1)];
}
