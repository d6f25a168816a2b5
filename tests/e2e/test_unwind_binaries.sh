#!/bin/sh
# test_unwind_binaries.sh - the virtual unwinder with several binaries: a
# program and its shared library (both -g, frame pointers), built now with
# clang-19, calling each other across the boundary (main -> lib_apply in
# the library -> cb in the program, a callback; lib_apply -> lib_work
# inside the library), recorded with `lbr2prof record --simulate --truth`.
# With both binaries the contexts cross the boundary:
#   [main:N @ lib_apply:M @ cb]      cb's body and its head samples
#   [main:N @ lib_apply:K @ lib_work]
#   [main:N @ lib_apply]              with the call target cb
#   [main:N @ prog_work]
# and no context of either binary starts anywhere but at main. Cut at the
# other binary's frames (what a profile of one binary can say), they must
# be right: `lbr2prof accuracy` judges each binary against the truth
# (>= 99%, no wrong context). With one binary the other's code is external
# as in llvm-profgen (test_profgen_binaries.sh).
set -u
for t in clang-19 perl nm; do
    command -v $t >/dev/null 2>&1 || { echo "skip: $t not found"; exit 77; }
done
W=$WORK
cd "$W" || exit 1
fail() { echo "FAIL: $*"; exit 1; }
CFLAGS="-O2 -g -fno-omit-frame-pointer"
PG_CS="--format=text --csspgo-preinliner=0 --gen-cs-nested-profile=0 --csprof-merge-cold-context=0 --compress-recursion=0"

cat > mblib.c <<'C'
typedef unsigned (*mb_cb)(unsigned);
static volatile unsigned lsink;
__attribute__((noinline)) static unsigned lib_work(unsigned n)
{
    unsigned x = n, i;
    for (i = 0; i < 40 + (n & 7); i++)
        x = x * 3 + (i ^ lsink);
    return x;
}
__attribute__((noinline)) unsigned lib_apply(mb_cb cb, unsigned n)
{
    unsigned s = 0, i;
    for (i = 0; i < n; i++)
        s += cb(i);
    return s + lib_work(s);
}
C
cat > mbprog.c <<'C'
#include <stdio.h>
#include <stdlib.h>
typedef unsigned (*mb_cb)(unsigned);
unsigned lib_apply(mb_cb cb, unsigned n);
static volatile unsigned sink;
__attribute__((noinline)) static unsigned cb(unsigned x)
{
    unsigned y = x, i;
    for (i = 0; i < 8 + (x & 3); i++)
        y += (y >> 1) ^ sink;
    return y;
}
__attribute__((noinline)) static unsigned prog_work(unsigned n)
{
    unsigned x = 1, i;
    for (i = 0; i < n; i++)
        x = x * 5 + (i ^ sink);
    return x;
}
int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100, i;
    for (i = 0; i < rounds; i++) {
        sink += lib_apply(cb, 6 + (unsigned)(i & 3));
        sink += prog_work(30);
    }
    printf("%u\n", sink);
    return 0;
}
C
clang-19 $CFLAGS -fPIC -shared mblib.c -o libmb.so || fail "compile the library"
clang-19 $CFLAGS mbprog.c -L. -lmb -Wl,-rpath,"$W" -o mbprog || fail "compile the program"
"$LBR2PROF" record --simulate -c 97 --seed 7 -o mb.data --truth mb.truth -- ./mbprog 300 \
    > /dev/null 2> rec.err || { cat rec.err; fail "record"; }
"$LBR2PROF" --perfdata=mb.data --binary=mbprog --binary=libmb.so $PG_CS --output=two.prof \
    > two.log 2>&1 || { cat two.log; fail "lbr2prof with two binaries"; }
grep '^\[' two.prof

# the contexts across the boundary
has() { # KEY-REGEX: a context with body samples
    grep -q "^\\[$1\\]:[1-9][0-9]*:" two.prof || fail "no context $1 with samples"
}
has 'main:[0-9]* @ lib_apply:[0-9]* @ cb'
has 'main:[0-9]* @ lib_apply:[0-9]* @ lib_work'
has 'main:[0-9]* @ lib_apply'
has 'main:[0-9]* @ prog_work'
grep -q '^\[main:[0-9]* @ lib_apply:[0-9]* @ cb\]:[0-9]*:[1-9]' two.prof \
    || fail "the callback's head samples are not in its context"
awk '/^\[main:[0-9]* @ lib_apply\]/ { p = 1; next } /^\[/ { p = 0 } p && / cb:[1-9]/ { f = 1 } END { exit !f }' \
    two.prof || fail "lib_apply has no call target cb"
grep '^\[' two.prof | grep -v '^\[main[]:]' | grep -q ':[1-9][0-9]*:' \
    && fail "a context with samples that does not start at main"

# cut at the other binary: each binary judged against the truth
nm --defined-only mbprog | awk '$2 ~ /^[tTwW]$/ { print $3 }' > prog.funcs
nm --defined-only libmb.so | awk '$2 ~ /^[tTwW]$/ { print $3 }' > lib.funcs
cat > cut.pl <<'P'
# cut.pl FUNCS < CS-TEXT: the contexts of FUNCS' leaves, cut after the
# innermost frame of another binary; blocks that become equal are added
my %own = map { chomp; $_ => 1 } do { open my $f, '<', $ARGV[0] or die; <$f> };
my (@order, %blk, $cur);
while (<STDIN>) {
    if (/^\[(.*)\]:(\d+):(\d+)$/) {
        my @fr = split / @ /, $1;
        $cur = undef;
        next unless $own{(split /:/, $fr[-1])[0]};
        my $j = $#fr;
        $j-- while $j > 0 && $own{(split /:/, $fr[$j - 1])[0]};
        my $key = join ' @ ', @fr[$j .. $#fr];
        push @order, $key unless $blk{$key};
        $cur = $blk{$key} //= {t => 0, h => 0, lines => {}, lo => []};
        $cur->{t} += $2; $cur->{h} += $3;
    } elsif ($cur && /^ ([0-9.]+): (\d+)(.*)$/) {
        my $l = $cur->{lines}{$1} //= do { push @{$cur->{lo}}, $1; {n => 0, c => {}} };
        $l->{n} += $2;
        $l->{c}{$1} += $2 while $3 =~ / (\S+):(\d+)/g;
    } elsif ($cur && /^ !Attributes: (\d+)/) {
        $cur->{a} = $1;
    }
}
for my $k (@order) {
    my $b = $blk{$k};
    print "[$k]:$b->{t}:$b->{h}\n";
    for my $ln (@{$b->{lo}}) {
        my $l = $b->{lines}{$ln};
        print " $ln: $l->{n}", map({ " $_:$l->{c}{$_}" } sort keys %{$l->{c}}), "\n";
    }
    print " !Attributes: $b->{a}\n" if defined $b->{a};
}
P
perl cut.pl prog.funcs < two.prof > prog.cut || fail "cut (program)"
perl cut.pl lib.funcs < two.prof > lib.cut || fail "cut (library)"
for b in mbprog libmb.so; do
    p=prog.cut; [ $b = libmb.so ] && p=lib.cut
    "$LBR2PROF" accuracy --truth mb.truth --binary "$b" --rows 0 $p > $b.acc 2> $b.err \
        || { cat $b.err; fail "accuracy of $b"; }
    line=$(tail -n 1 $b.acc)
    echo "$b (cut): $line"
    echo "$line" | grep -q '^accuracy: \(99\.[0-9]*\|100\.00\)%' || fail "$b: below 99%"
    echo "$line" | grep -q ' 0 wrong;' || fail "$b: contexts the truth does not have"
done
# the library's contexts were made by the unwinder, not by the cut: the
# program's frames are there in two.prof
grep -q '^\[lib_apply:[0-9]* @ lib_work\]' lib.cut || fail "lib.cut has no [lib_apply @ lib_work]"
echo ok
