/* nodwarf.c - workload: a program whose DWARF is incomplete. This file is
 * built with -g, nodwarflib.c without: its functions are in .symtab only
 * (llvm-profgen 22 recovers them from there for pseudo-probe binaries,
 * --load-function-from-symbol). The calls go both ways: main -> nd_work
 * (no DWARF) -> nd_helper (static, no DWARF) and -> dw_leaf (DWARF), and
 * nd_tail ends in a tail call to dw_leaf. Deterministic; the argument
 * scales the work. */
#include <stdio.h>
#include <stdlib.h>

unsigned nd_work(unsigned x);
unsigned nd_tail(unsigned x);

__attribute__((noinline)) unsigned dw_leaf(unsigned x)
{
    unsigned i, a = x;

    for (i = 0; i < 30; i++)
        a = a * 7 + i;
    return a;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 1000, i, acc = 0;

    for (i = 0; i < n; i++) {
        acc += nd_work(i);
        acc += nd_tail(i);
    }
    printf("%u\n", acc);
    return 0;
}
