/*
 * main.c - the lbr2prof command: picks a subcommand and runs it.
 * Owns argument dispatch only; all work is in the library and in
 * src/builtin/, the shared message helpers in messages.c. `lbr2prof FILE ...` (no subcommand, or llvm-profgen
 * style `--perfdata=...` flags) runs the `profile` command, the main job.
 * It also sets the process's one malloc policy (below).
 */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "builtin.h"

#define LP_BUILTIN(name, fn, help) int fn(int argc, char **argv);
#define LP_BUILTIN_DEV LP_BUILTIN
#include "builtins.inc"
#undef LP_BUILTIN
#undef LP_BUILTIN_DEV

struct lp_cmd {
    const char *name;
    lp_builtin_fn fn;
    const char *help;
    int developer;          /* a developer tool: listed apart */
};

static const struct lp_cmd commands[] = {
#define LP_BUILTIN(name, fn, help) {#name, fn, help, 0},
#define LP_BUILTIN_DEV(name, fn, help) {#name, fn, help, 1},
#include "builtins.inc"
#undef LP_BUILTIN
#undef LP_BUILTIN_DEV
    {NULL, NULL, NULL, 0},
};

static void list(FILE *out, int developer)
{
    const struct lp_cmd *c;
    const char *p;

    for (c = commands; c->name; c++) {
        if (c->developer != developer)
            continue;
        fputs("  ", out);
        for (p = c->name; *p; p++)
            fputc(*p == '_' ? '-' : *p, out);
        fprintf(out, "%*s %s\n", (int)(p - c->name) < 12 ? 12 - (int)(p - c->name) : 0, "",
                c->help);
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: lbr2prof PERF.DATA -o OUT.prof [options]\n"
                 "       lbr2prof COMMAND [args]\n\ncommands:\n");
    list(out, 0);
    fprintf(out, "\n`lbr2prof COMMAND --help` describes each command.\n"
                 "\ndeveloper commands (tools for working on lbr2prof itself):\n");
    list(out, 1);
}

/* Command names are C identifiers in LP_BUILTIN, so `dump-syms` is
 * registered as dump_syms: '-' on the command line matches '_'. */
static int same_name(const char *reg, const char *arg)
{
    for (; *reg && *arg; reg++, arg++)
        if (*reg != *arg && !(*reg == '_' && *arg == '-'))
            return 0;
    return *reg == *arg;
}

static const struct lp_cmd *find(const char *name)
{
    const struct lp_cmd *c;

    for (c = commands; c->name; c++)
        if (same_name(c->name, name))
            return c;
    return NULL;
}

int main(int argc, char **argv)
{
    const struct lp_cmd *c;

    /* A fixed mmap threshold: glibc's default raises it to the largest
     * block freed (up to 32 MB), so the big tables freed along the way
     * (memos, counters, the worker's arena) stay in the heaps and count
     * in the peak; fixed, they go back to the system when freed
     * (sqlite-probe 57.1 -> ~55.8 MB, CPU unchanged: docs/cost-model.md). */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    c = find(argv[1]);
    if (c)
        return c->fn(argc - 1, argv + 1);
    /* The main job: lbr2prof perf.data -o out.prof, or llvm-profgen flags. */
    c = find("profile");
    if (c)
        return c->fn(argc, argv);
    fprintf(stderr, "lbr2prof: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
