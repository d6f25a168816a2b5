/* mixed.c - workload: a program built with frame pointers calling a
 * library built without them (mixedlib.c), which calls back into the
 * program: main -> outer -> stage -> ml_reduce (library) -> cb -> mix.
 * The program's frames above and below the library's are framed; the
 * library's frame in the middle is not (and uses rbp for data). */
#include <stdio.h>
#include <stdlib.h>

typedef unsigned (*ml_cb)(unsigned);
unsigned ml_reduce(ml_cb cb, const unsigned *v, unsigned n);

static volatile unsigned sink;

__attribute__((noinline)) static unsigned mix(unsigned x)
{
    unsigned i, y = x;

    for (i = 0; i < 10 + (x & 3); i++)
        y += (y >> 2) ^ (i * sink);
    return y;
}

__attribute__((noinline)) static unsigned cb(unsigned x)
{
    unsigned y = mix(x), i;

    for (i = 0; i < 4; i++)
        y ^= y << (i + 1);
    return y;
}

__attribute__((noinline)) static unsigned stage(unsigned n, unsigned seed)
{
    unsigned v[16], i;

    for (i = 0; i < n; i++)
        v[i] = seed * (i + 1) + sink;
    return ml_reduce(cb, v, n);
}

__attribute__((noinline)) static unsigned outer(unsigned r)
{
    unsigned s = stage(6 + (r & 7), r), i;

    for (i = 0; i < 8; i++)
        s = s * 31 + i;
    return s;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 100, i;

    for (i = 0; i < rounds; i++)
        sink += outer((unsigned)i);
    printf("%u\n", sink);
    return 0;
}
