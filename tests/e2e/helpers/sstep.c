/*
 * sstep.c - reference for test_record_simulate.sh: runs a command under
 * plain PTRACE_SINGLESTEP (the slow, obviously exact method) and prints
 * to stderr "ADDR COUNT" per executed instruction address (hex, sorted by
 * the caller), counting a rep-prefixed instruction once per execution, not
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

typedef struct ent {
    unsigned long long addr, count;
} ent;

/* Open-addressing table of counts, grown at half full. */
typedef struct table {
    ent *e;
    size_t cap, used;
} table;

static size_t slot(const table *t, unsigned long long a)
{
    size_t i = (size_t)(a * 0x9e3779b97f4a7c15ull >> 40) & (t->cap - 1);

    while (t->e[i].count && t->e[i].addr != a)
        i = (i + 1) & (t->cap - 1);
    return i;
}

static void grow(table *t)
{
    table n = {calloc(t->cap * 2, sizeof *t->e), t->cap * 2, 0};
    size_t j;

    if (!n.e)
        exit(3);
    for (j = 0; j < t->cap; j++)
        if (t->e[j].count) {
            n.e[slot(&n, t->e[j].addr)] = t->e[j];
            n.used++;
        }
    free(t->e);
    *t = n;
}

static void bump(table *t, unsigned long long a)
{
    size_t i = slot(t, a);

    if (!t->e[i].count)
        t->used++;
    t->e[i].addr = a;
    t->e[i].count++;
    if (t->used * 2 > t->cap)
        grow(t);
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
    table t = {calloc(1 << 16, sizeof(ent)), 1 << 16, 0};
    struct user_regs_struct r;
    unsigned long long prev;
    int st, sig = 0, into_handler;
    size_t i;
    pid_t p;

    if (argc < 2 || !t.e)
        return 2;
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
            bump(&t, prev);
        prev = r.rip;
    }
    bump(&t, prev); /* the exit_group syscall */
    for (i = 0; i < t.cap; i++)
        if (t.e[i].count)
            fprintf(stderr, "%llx %llu\n", t.e[i].addr, t.e[i].count);
    free(t.e);
    return 0;
}
