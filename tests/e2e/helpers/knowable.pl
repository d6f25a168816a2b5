#!/usr/bin/perl
# knowable.pl [--stack] BINARY < TRUTH > KNOWABLE - test helper for test_accuracy.sh:
# the simulator's truth (docs/record.md, version 2) with every LBR range
# whose calling context no unwinder can know from the sample marked cut
# (not counted), and the branch taken at its end made to come from outside
# (no context), so that the ideal profile of the result is what an
# unwinder that only claims what the data proves can reach. Two cases,
# both from the truth's own stacks:
#
#  * non-local exits: a branch into BINARY after which the stack is no
#    descendant of the parent of the stack before it left frames without
#    returning from them (longjmp, exceptions). Every range older than it
#    ran in frames the sample's call stack does not have, reached by no
#    return: nothing shows their callers.
#  * no frame: the frame-pointer walk found nothing beyond the IP (rbp was
#    0 or garbage: fp_chain has no second entry, or it is none of the true
#    stack's return addresses), or it skipped the leaf's
#    caller (a function entry or exit) and the LBR has no branch taken in
#    the caller's frame, so not the call either. A range is still
#    known if its context starts (at a frame returning to code outside
#    BINARY) in a frame the LBR shows being entered by a return, i.e. above
#    the frames it shares with the sampled stack; otherwise its callers
#    are the sampled stack's, which the walk does not show.
#
# With --stack (samples with user stacks, unwound with CFI: the whole
# call stack is known whatever the frame pointers) only the first case.
#
# Signal returns (the truth's lbr_cut) are not non-local: the restorer
# shows them. Only addresses of BINARY's mappings (same basename) count as
# inside it.
use strict;
use warnings;
no warnings "portable";

my $stack_known = @ARGV && $ARGV[0] eq '--stack' ? shift @ARGV : 0;
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

# whether the context of the code running on stack $n starts in a frame
# the LBR can show entered: above the frames it shares with the sampled
# stack $s (its leaf frame, whose caller the LBR may show, excepted)
sub starts_above {
    my ($pid, $n, $s) = @_;
    my %anc;
    for (my $k = $par{$s} // 0; $k; $k = $par{$k}) { $anc{$k} = 1; }
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
    my $no_frame = @f < 2 || !grep { $_ eq $f[1] } @s[1 .. $#s];
    # the walk skipped the leaf's caller (it has the true stack but the
    # first return address), and no branch of the LBR was taken in the
    # caller's frame (the call is older): the leaf frame's callers are
    # not known either
    my $skipped = 0;
    for my $j (1 .. $#f) {
        next if defined $s[$j] && $f[$j] eq $s[$j];
        $skipped = defined $s[$j + 1] && $f[$j] eq $s[$j + 1] && $j == 1;
        last;
    }
    my $caller_seen = grep { $_ == ($par{$snode} // 0) } @node;
    $no_frame = 1 if !$no_frame && $skipped && !$caller_seen;
    $no_frame = 0 if $stack_known;
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
    # run c (ending at lbr[c].from) and branch c ran on node[c]: an
    # unknowable one is cut, and its branch made to come from outside
    # (which gives it no context); run c-1 keeps its start lbr[c].to
    my %unk;
    for my $c (0 .. $#e) {
        $unk{$c} = 1 if $c >= $old ||
            ($no_frame && !starts_above($pid, $node[$c], $snode));
    }
    return $l unless %unk;
    for my $c (keys %unk) {
        $e[$c] =~ s/^\["0x[0-9a-f]+"/["0x1"/;
        $cut{$c} = 1 if $c < $#e;
    }
    my $new = join(', ', @e);
    $l =~ s/"lbr": \[.*?\]\]/"lbr": [$new]/;
    my $c = join(', ', sort { $a <=> $b } keys %cut);
    if ($l =~ /"lbr_cut": /) {
        $l =~ s/"lbr_cut": \[[\d, ]*\]/"lbr_cut": [$c]/;
    } else {
        $l =~ s/\}(,?)$/, "lbr_cut": [$c]}$1/;
    }
    return $l;
}

$t =~ s{^(  \{"time".*)$}{cut_sample($1)}gme;
print $t;
