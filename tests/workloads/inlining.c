/* inlining.c - workload: small functions inlined at -O2 into a noinline
 * caller, so samples land in inlined code (DWARF inline frames). */
#include <stdio.h>
#include <stdlib.h>

static inline unsigned mix(unsigned x)
{
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    return x ^ (x >> 15);
}

static inline unsigned step(unsigned acc, unsigned i)
{
    if (i % 3 == 0)
        return acc + mix(i);
    return acc ^ mix(acc + i);
}

__attribute__((noinline)) static unsigned run(unsigned n)
{
    unsigned acc = 1, i;

    for (i = 0; i < n; i++)
        acc = step(acc, i);
    return acc;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20000;

    printf("%u\n", run(n));
    return 0;
}
