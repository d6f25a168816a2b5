/* tailchain.c - workload: chains of tail calls (jmp at -O2) between a call
 * and the code that runs, the frames llvm-profgen's missing-frame
 * inferrer puts back in pseudo-probe CS profiles:
 *   main -call-> step1 -jmp-> step2 -jmp-> leaf   one path, two frames
 *     (step1's jump is in an inlined helper: its probe has an inline stack)
 *   main -call-> pick -jmp*-> via_a | via_b -jmp-> leaf2   two paths
 *   main -call*-> leaf3 | wrap3 -jmp-> leaf3       a direct call beside a
 *                                                  tail path
 * Deterministic; the argument scales the work. */
#include <stdio.h>
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile unsigned sink;

NOINLINE unsigned leaf(unsigned x)
{
    unsigned i, a = x;

    for (i = 0; i < 40; i++)
        a = a * 33 + (a >> 3) + i;
    sink += a;
    return a;
}

NOINLINE unsigned step2(unsigned x)
{
    sink ^= x;
    return leaf(x + 1); /* tail call */
}

static inline unsigned forward(unsigned x)
{
    sink += x;
    return step2(x * 3); /* tail call, inlined into step1 */
}

NOINLINE unsigned step1(unsigned x)
{
    sink ^= x >> 1;
    return forward(x + 7);
}

NOINLINE unsigned leaf2(unsigned x)
{
    unsigned i, a = x;

    for (i = 0; i < 30; i++)
        a = a * 17 + (a >> 5);
    sink ^= a;
    return a;
}

NOINLINE unsigned via_a(unsigned x)
{
    sink += 1;
    return leaf2(x ^ 0x55); /* tail call */
}

NOINLINE unsigned via_b(unsigned x)
{
    sink += 2;
    return leaf2(x + 9); /* tail call */
}

typedef unsigned (*fn)(unsigned);
static fn volatile vias[2] = {via_a, via_b};

NOINLINE unsigned pick(unsigned x)
{
    return vias[x & 1](x); /* indirect tail call */
}

NOINLINE unsigned leaf3(unsigned x)
{
    unsigned i, a = x;

    for (i = 0; i < 20; i++)
        a = a * 5 + 1;
    sink -= a;
    return a;
}

NOINLINE unsigned wrap3(unsigned x)
{
    sink ^= 3;
    return leaf3(x * 5); /* tail call */
}

static fn volatile threes[2] = {leaf3, wrap3};

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 2000, i, acc = 0;

    for (i = 0; i < n; i++) {
        acc += step1(i);
        acc += pick(i);
        acc += threes[(i >> 1) & 1](i);
    }
    printf("%u\n", acc);
    return 0;
}
