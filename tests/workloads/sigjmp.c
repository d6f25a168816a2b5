/* sigjmp.c - workload: a signal handler that does real work (its code is
 * called from the kernel's signal frame, i.e. from libc's restorer), and
 * longjmp out of a recursion (frames are dropped without returns).
 * Argument: rounds (default 200). */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf jb;
static volatile unsigned sink;

__attribute__((noinline)) static unsigned hwork(unsigned n)
{
    unsigned x = 0, i;

    for (i = 0; i < n; i++)
        x += (x >> 3) ^ i;
    return x;
}

static void handler(int sig)
{
    sink += hwork(40 + (unsigned)sig);
}

__attribute__((noinline)) static void dive(int depth)
{
    sink += (unsigned)depth;
    if (depth == 0)
        longjmp(jb, 1);
    dive(depth - 1);
    sink ^= (unsigned)depth; /* never reached: no tail call */
}

__attribute__((noinline)) static unsigned after_jump(unsigned n)
{
    unsigned x = 1, i;

    for (i = 0; i < n; i++)
        x = x * 3 + i;
    return x;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200, i;
    struct sigaction sa = {0};

    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, NULL);
    for (i = 0; i < rounds; i++) {
        if (setjmp(jb) == 0)
            dive(5 + i % 7);
        sink += after_jump(30);
        if (i % 4 == 0)
            raise(SIGUSR1);
    }
    printf("%u\n", sink);
    return 0;
}
