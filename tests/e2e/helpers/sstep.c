/*
 * sstep.c - reference for test_record_simulate.sh: runs a command under
 * plain PTRACE_SINGLESTEP (the slow, obviously exact method) and prints
 * to stderr "ADDR COUNT" per executed instruction address (hex, sorted by the
 * caller), counting a rep-prefixed instruction once per execution, not
 * once per iteration. Single-threaded commands only. Signals are passed
 * on; delivering a caught one stops at the handler's first instruction
 * without executing an instruction, an ignored one executes one.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct ent { unsigned long long addr, count; } ent;

static ent *tab;
static size_t cap = 1 << 16, used;

static void bump(unsigned long long a)
{
    size_t i = (size_t)(a * 0x9e3779b97f4a7c15ull >> 40) & (cap - 1);

    while (tab[i].count && tab[i].addr != a)
        i = (i + 1) & (cap - 1);
    if (!tab[i].count)
        used++;
    tab[i].addr = a;
    tab[i].count++;
    if (used * 2 > cap) {
        ent *old = tab;
        size_t oc = cap, j;
        cap *= 2;
        used = 0;
        tab = calloc(cap, sizeof *tab);
        for (j = 0; j < oc; j++)
            if (old[j].count) {
                unsigned long long n = old[j].count;
                size_t k = (size_t)(old[j].addr * 0x9e3779b97f4a7c15ull >> 40) & (cap - 1);
                while (tab[k].count)
                    k = (k + 1) & (cap - 1);
                tab[k] = old[j];
                tab[k].count = n;
                used++;
            }
        free(old);
    }
}

static int caught(pid_t pid, int sig)
{
    char fn[64], line[256];
    unsigned long long mask = 0;
    FILE *f;

    snprintf(fn, sizeof fn, "/proc/%d/status", (int)pid);
    if (!(f = fopen(fn, "r")))
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "SigCgt: %llx", &mask) == 1)
            break;
    fclose(f);
    return (mask >> (sig - 1)) & 1;
}

int main(int argc, char **argv)
{
    int sig = 0, into_handler = 0;
    struct user_regs_struct r;
    unsigned long long prev;
    int st;
    size_t i;
    pid_t p;

    if (argc < 2)
        return 2;
    tab = calloc(cap, sizeof *tab);
    p = fork();
    if (p == 0) {
        ptrace(PTRACE_TRACEME, 0, 0, 0);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    waitpid(p, &st, 0);
    ptrace(PTRACE_GETREGS, p, 0, &r);
    prev = r.rip;
    for (;;) {
        into_handler = sig && caught(p, sig);
        ptrace(PTRACE_SINGLESTEP, p, 0, (void *)(long)sig);
        sig = 0;
        waitpid(p, &st, 0);
        if (WIFEXITED(st) || WIFSIGNALED(st))
            break;
        ptrace(PTRACE_GETREGS, p, 0, &r);
        if (WSTOPSIG(st) != SIGTRAP) { /* signal-delivery stop: nothing ran */
            sig = WSTOPSIG(st);
            continue;
        }
        if (!into_handler && r.rip != prev) /* same rip: a rep iteration */
            bump(prev);
        prev = r.rip;
    }
    bump(prev); /* the exit_group syscall */
    for (i = 0; i < cap; i++)
        if (tab[i].count)
            fprintf(stderr, "%llx %llu\n", tab[i].addr, tab[i].count);
    return 0;
}
