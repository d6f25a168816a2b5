/* tailcall.c - workload: functions that end in tail calls (jmp at -O2),
 * so the caller's frame is gone when the callee runs. */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned sink;

__attribute__((noinline)) unsigned leaf(unsigned x)
{
    sink += x;
    return x * 3 + 1;
}

__attribute__((noinline)) unsigned middle(unsigned x)
{
    sink ^= x;
    return leaf(x + 1); /* tail call */
}

__attribute__((noinline)) unsigned top(unsigned x)
{
    if (x & 1)
        return middle(x); /* tail call */
    return leaf(x) + 1;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 20000, i, acc = 0;

    for (i = 0; i < n; i++)
        acc += top(i);
    printf("%u\n", acc);
    return 0;
}
