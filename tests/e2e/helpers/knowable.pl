#!/usr/bin/perl
# knowable.pl BINARY < TRUTH > KNOWABLE - test helper for test_accuracy.sh:
# the simulator's truth (docs/record.md, version 2) with each sample's LBR
# ended at its newest range whose calling context no unwinder can know
# from the sample, so that the ideal profile of the result is (a lower
# bound of) what an unwinder that only claims what the data proves can
# reach. Two cases, both from the truth's own stacks:
#
#  * non-local exits: a branch into BINARY after which the stack is no
#    descendant of the parent of the stack before it left frames without
#    returning from them (longjmp, exceptions). Every range older than it
#    ran in frames the sample's call stack does not have, reached by no
#    return: nothing shows their callers.
#  * no frame: the frame-pointer walk found nothing beyond the IP (rbp was
#    0 or garbage: fp_chain has no second entry, or it is not one of the
#    true stack's first two return addresses). A range is still
#    known if its context starts (at a frame returning to code outside
#    BINARY) in a frame the LBR shows being entered by a return, i.e. above
#    the frames it shares with the sampled stack; otherwise its callers
#    are the sampled stack's, which the walk does not show.
#
# Signal returns (the truth's lbr_cut) are not non-local: the restorer
# shows them. Only addresses of BINARY's mappings (same basename) count as
# inside it.
use strict;
use warnings;
no warnings "portable";

my $bin = $ARGV[0] =~ s{.*/}{}r;
my $t = do { local $/; <STDIN> };
my (%par, %ret);
while ($t =~ /^  \[(\d+), (\d+), "0x([0-9a-f]+)"\]/mg) {
    $par{$1} = $2;
    $ret{$1} = hex $3;
}
my @maps;   # [pid, start, end] of BINARY
while ($t =~ /^  \{"time": \d+, "pid": (\d+), "start": "0x([0-9a-f]+)", "end": "0x([0-9a-f]+)", "pgoff": "0x[0-9a-f]+", "path": "([^"]*)"\}/mg) {
    my ($pid, $start, $end, $path) = ($1, hex $2, hex $3, $4);
    push @maps, [$pid, $start, $end] if ($path =~ s{.*/}{}r) eq $bin;
}

sub inside {
    my ($pid, $a) = @_;
    for my $m (@maps) {
        return 1 if $a >= $m->[1] && $a < $m->[2];
    }
    return 0;
}

sub desc_or_self {
    my ($b, $a) = @_;
    for (my $n = $b; ; $n = $par{$n}) {
        return 1 if $n == $a;
        return 0 if !$n;
    }
}

# whether the context of the code running on stack $n starts above the
# frames it shares with the sampled stack (ancestors of $s)
sub starts_above {
    my ($pid, $n, $s) = @_;
    my %anc;
    for (my $k = $s; $k; $k = $par{$k}) { $anc{$k} = 1; }
    for (my $k = $n; $k && !$anc{$k}; $k = $par{$k}) {
        return 1 if !inside($pid, $ret{$k});
    }
    return 0;
}

sub cut_sample {
    my ($l) = @_;
    my ($lbr) = $l =~ /"lbr": \[(.*?\])\]/ or return $l;
    my @e = $lbr =~ /\["0x[0-9a-f]+", "0x[0-9a-f]+", \d+\]/g;
    my @to = map { /", "0x([0-9a-f]+)"/ ? hex $1 : 0 } @e;
    my @node = map { /(\d+)\]$/ } @e;
    my ($pid) = $l =~ /"pid": (\d+)/;
    my ($snode) = $l =~ /"node": (\d+)/;
    my ($fp) = $l =~ /"fp_chain": \[(.*?)\]/;
    my ($stk) = $l =~ /"stack": \[(.*?)\]/;
    my @f = $fp =~ /0x[0-9a-f]+/g;
    my @s = $stk =~ /0x[0-9a-f]+/g;
    my $no_frame = @f < 2 || !grep { defined $_ && $_ eq $f[1] } @s[1, 2];
    my ($cuts) = $l =~ /"lbr_cut": \[([\d, ]*)\]/;
    my %cut = map { $_ => 1 } ($cuts // '') =~ /\d+/g;
    my $old = scalar @e;    # ranges older than this branch: unknowable
    for my $i (0 .. $#e) {
        next if ($i > 0 && $cut{$i - 1}) || !inside($pid, $to[$i]);
        my $after = $i > 0 ? $node[$i - 1] : $snode;
        if (!desc_or_self($after, $par{$node[$i]} // 0)) {
            $old = $i;
            last;
        }
    }
    # range c (run ending at lbr[c].from) ran on node[c]; the LBR ends at
    # the first unknowable one (its branch, also in an unknowable context,
    # is made to come from outside, which gives it no context)
    my $first = $old;
    for my $c (0 .. $old - 1) {
        if ($no_frame && !$cut{$c} && !starts_above($pid, $node[$c], $snode)) {
            $first = $c;
            last;
        }
    }
    return $l if $first >= $#e;
    $e[$first] =~ s/^\["0x[0-9a-f]+"/["0x1"/;
    my $new = join(', ', @e[0 .. $first]);
    $l =~ s/"lbr": \[.*?\]\]/"lbr": [$new]/;
    my $c = join(', ', grep { $_ < $first } sort { $a <=> $b } keys %cut);
    $l =~ s/"lbr_cut": \[[\d, ]*\]/"lbr_cut": [$c]/;
    return $l;
}

$t =~ s{^(  \{"time".*)$}{cut_sample($1)}gme;
print $t;
