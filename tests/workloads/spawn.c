/* spawn.c - workload: child processes three ways - posix_spawn (a vfork
 * child sharing the parent's memory until exec), system(), and a plain
 * fork whose child runs a little of the program and exits. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

__attribute__((noinline)) static unsigned busy(unsigned n)
{
    unsigned i, x = 1;

    for (i = 0; i < n; i++)
        x = x * 33 + i;
    return x;
}

int main(void)
{
    char *args[] = {"echo", "spawned", NULL};
    pid_t p;
    int st;

    if (posix_spawnp(&p, "echo", NULL, NULL, args, environ) ||
        waitpid(p, &st, 0) != p)
        return 1;
    if (system("echo from-system"))
        return 2;
    fflush(stdout);
    p = fork();
    if (p == 0) {
        printf("child %u\n", busy(1000) & 1);
        fflush(stdout);
        _exit(3);
    }
    if (p < 0 || waitpid(p, &st, 0) != p)
        return 4;
    printf("parent %u, child exit %d\n", busy(2000) & 1, WEXITSTATUS(st));
    return 0;
}
