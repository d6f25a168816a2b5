/* tinycalls.c - workload: many tiny non-inlined calls, so that a good
 * share of samples lands on a function's first instructions or on its ret
 * (where a frame-pointer walk loses the caller), with direct recursion
 * (the lost caller has the same return address as its own caller) and a
 * tail call. Deterministic; the argument scales the work. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

NOINLINE static unsigned leaf_add(unsigned a, unsigned b)
{
    return a + b;
}

NOINLINE static unsigned leaf_mix(unsigned a)
{
    return (a ^ (a >> 7)) * 0x9e3779b1u;
}

NOINLINE static unsigned mid(unsigned x)
{
    return leaf_add(leaf_mix(x), x) + 1;
}

NOINLINE static unsigned tail(unsigned x)
{
    return leaf_mix(x + 3); /* a tail call at -O2 */
}

NOINLINE static unsigned rec(unsigned d, unsigned x)
{
    if (d == 0)
        return leaf_mix(x);
    return rec(d - 1, x * 3 + 1) + leaf_add(d, x);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 100000, i;
    unsigned acc = 0;

    for (i = 0; i < n; i++) {
        acc += mid((unsigned)i);
        acc ^= tail(acc);
        if ((i & 7) == 0)
            acc += rec(6, acc);
    }
    printf("%u\n", acc);
    return 0;
}
