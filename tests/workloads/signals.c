/* signals.c - workload: a caught signal (the handler runs between two
 * instructions of the program) and an ignored one, raised synchronously so
 * the run is deterministic. With an argument it then crashes (SIGSEGV). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile int hits;

static void handler(int sig)
{
    (void)sig;
    hits++;
}

__attribute__((noinline)) static int work(int n)
{
    int x = 0, i;

    for (i = 0; i < n; i++)
        x += i * (x & 3) + 1;
    return x;
}

int main(int argc, char **argv)
{
    struct sigaction sa;
    int x = 0, i;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGUSR2, SIG_IGN);
    for (i = 0; i < 20; i++) {
        x += work(50);
        raise(SIGUSR1);
        raise(SIGUSR2);
    }
    printf("%d %d\n", hits, x);
    fflush(stdout);
    if (argc > 1)
        return *(volatile int *)argv[argc]; /* NULL: SIGSEGV */
    return 0;
}
