/* asyncsig.c - workload: signal handlers entered in the middle of the
 * program's own code, as the kernel does for faults and timers: a load
 * through a null pointer in a framed function and in a frameless leaf
 * (built with -momit-leaf-frame-pointer) raises SIGSEGV, whose handler
 * does real work and steps over the load (as runtimes do with implicit
 * null checks and safepoint polls), so the interrupted code resumes where
 * it was. Argument: rounds (default 300). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

static volatile unsigned sink;
static int *volatile nullp;

/* a 2-byte load the handler steps over: mov (%rcx),%eax */
#define POLL() __asm__ volatile("movl (%%rcx), %%eax" ::"c"(nullp) : "rax", "memory")

__attribute__((noinline)) static unsigned hwork(unsigned n)
{
    unsigned x = 0, i;

    for (i = 0; i < n; i++)
        x += (x >> 2) ^ (i + sink);
    return x;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    sink += hwork(30 + (unsigned)sig);
    ((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP] += 2; /* past the load */
}

/* a leaf: no calls, so no frame with -momit-leaf-frame-pointer */
__attribute__((noinline)) static unsigned leaf(unsigned n)
{
    unsigned x = n, i;

    for (i = 0; i < 20 + (n & 7); i++)
        x = x * 5 + sink;
    POLL();
    for (i = 0; i < 20 + (n & 7); i++)
        x ^= x >> (sink & 3);
    return x;
}

__attribute__((noinline)) static unsigned framed(unsigned n)
{
    unsigned x = hwork(n), i;

    for (i = 0; i < 20 + (n & 7); i++)
        x += i * sink;
    POLL();
    return x + leaf(x);
}

__attribute__((noinline)) static unsigned outer(unsigned n)
{
    return framed(n) + 1;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 300, i;
    struct sigaction sa = {0};

    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    for (i = 0; i < rounds; i++)
        sink += outer((unsigned)i & 15);
    printf("%u\n", sink);
    return 0;
}
