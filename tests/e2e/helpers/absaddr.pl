#!/usr/bin/perl
# absaddr.pl - perf 6.1 `perf script -F ip,dso,brstack --show-mmap-events`
# text made llvm-profgen's hybrid input: perf 6.1 prints a callchain entry
# of a file-backed user map as its file offset ("OFFSET [SYM] (DSO)"), which
# llvm-profgen reads as an address; each becomes the address again with the
# process's MMAP/MMAP2 line of that file (offset - pgoff + start), and the
# "(DSO)" after every brstack address goes. Reads files or stdin.
use strict;
use warnings;
no warnings "portable";
my (%start, %pgoff);
while (<>) {
    if (/PERF_RECORD_MMAP2? .*\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+|0)[ \]].* (\S+)$/) {
        $start{$3} = hex($1);
        $pgoff{$3} = hex($2);
        print;
        next;
    }
    if (/^\t\s*([0-9a-f]+) .*\((.*)\)$/) {
        if (exists $start{$2}) { printf "\t%x\n", hex($1) - $pgoff{$2} + $start{$2} }
        else { print "\t$1\n" }
        next;
    }
    s/\([^)]*\)//g;
    print;
}
