/*
 * cmd_record.c - `lbr2prof record`: option parsing and the summary line.
 * The work is in src/record (hardware) and src/simulate (--simulate).
 * LP_BUILTIN(record, cmd_record, "record perf.data with branch stacks: PMU or exact simulation --simulate")
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "cli/builtin.h"
#include "lbr2prof/lbr2prof.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/record.h"

static const char usage[] =
    "usage: lbr2prof record [-e EVENT] [-c PERIOD | -F FREQ] [-o perf.data]\n"
    "                       [--user-stack=SIZE] [--call-graph=fp|dwarf]\n"
    "                       [--no-branch-stack] (-p PID | -- CMD ARGS...)\n"
    "       lbr2prof record --simulate [-c PERIOD] [--seed N] [--truth FILE]\n"
    "                       [--debug-dump FILE] [--user-stack=SIZE]\n"
    "                       [--call-graph=fp|dwarf] [-o perf.data]\n"
    "                       -- CMD ARGS...\n"
    "       lbr2prof record --simulate --intel-pt [--truth FILE] [-o perf.data]\n"
    "                       -- CMD ARGS...   (the branch trace as Intel PT)\n";

enum { OPT_SIMULATE = 256, OPT_SEED, OPT_TRUTH, OPT_DUMP, OPT_USTACK, OPT_HELP,
       OPT_NOBR, OPT_CALLGRAPH, OPT_PT };

static const struct option longopts[] = {
    {"event", required_argument, NULL, 'e'},
    {"count", required_argument, NULL, 'c'},
    {"freq", required_argument, NULL, 'F'},
    {"output", required_argument, NULL, 'o'},
    {"pid", required_argument, NULL, 'p'},
    {"simulate", no_argument, NULL, OPT_SIMULATE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"truth", required_argument, NULL, OPT_TRUTH},
    {"debug-dump", required_argument, NULL, OPT_DUMP},
    {"user-stack", required_argument, NULL, OPT_USTACK},
    {"call-graph", required_argument, NULL, OPT_CALLGRAPH},
    {"no-branch-stack", no_argument, NULL, OPT_NOBR},
    {"intel-pt", no_argument, NULL, OPT_PT},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

typedef struct cli {
    lp_record_opts o;
    int simulate;
    const char *dump_path;
} cli;

static int parse(int argc, char **argv, cli *c)
{
    int ch;
    uint64_t v;

    while ((ch = getopt_long(argc, argv, "+e:c:F:o:p:", longopts, NULL)) != -1) {
        switch (ch) {
        case 'e': c->o.event = optarg; break;
        case 'o': c->o.output = optarg; break;
        case OPT_SIMULATE: c->simulate = 1; break;
        case OPT_TRUTH: c->o.truth_path = optarg; break;
        case OPT_PT: c->o.intel_pt = 1; break;
        case OPT_DUMP: c->dump_path = optarg; break;
        case OPT_NOBR: c->o.no_branch_stack = 1; break;
        case 'c':
            if (parse_u64(optarg, &c->o.period) || !c->o.period)
                return lp_cli_usage_error("record", "-c wants a period > 0, not '%s'", optarg);
            break;
        case 'F':
            if (parse_u64(optarg, &c->o.freq) || !c->o.freq)
                return lp_cli_usage_error("record", "-F wants a frequency > 0, not '%s'", optarg);
            break;
        case 'p':
            if (parse_u64(optarg, &v) || !v || v > 0x7fffffff)
                return lp_cli_usage_error("record", "-p wants a process id, not '%s'", optarg);
            c->o.pid = (pid_t)v;
            break;
        case OPT_SEED:
            if (parse_u64(optarg, &c->o.seed))
                return lp_cli_usage_error("record", "--seed wants a number, not '%s'", optarg);
            break;
        case OPT_USTACK:
            if (parse_u64(optarg, &v) || !v || v > 32768)
                return lp_cli_usage_error("record", "--user-stack wants 1..32768 bytes, not '%s'", optarg);
            c->o.user_stack = (uint32_t)((v + 7) & ~7ull);
            break;
        case OPT_CALLGRAPH:     /* perf's fp and dwarf (no user callchain) */
            if (strcmp(optarg, "fp") && strcmp(optarg, "dwarf"))
                return lp_cli_usage_error("record", "--call-graph wants fp or dwarf, not '%s'", optarg);
            c->o.no_user_callchain = strcmp(optarg, "dwarf") == 0;
            break;
        case OPT_HELP: fputs(usage, stdout); return 1;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (c->o.no_user_callchain && !c->o.user_stack)
        c->o.user_stack = 8192;         /* perf's default for dwarf */
    c->o.argv = argv + optind;
    c->o.argc = argc - optind;
    return 0;
}

static int check(cli *c)
{
    if (c->o.argc == 0 && !c->o.pid)
        return lp_cli_usage_error("record", "no command to run (give -- CMD ARGS%s)",
                                  c->simulate ? "" : " or -p PID");
    if (c->o.argc && c->o.pid)
        return lp_cli_usage_error("record", "give either -p PID or a command, not both");
    if (c->o.period && c->o.freq)
        return lp_cli_usage_error("record", "give either -c or -F, not both");
    if (c->simulate && (c->o.pid || c->o.freq || c->o.event || c->o.no_branch_stack))
        return lp_cli_usage_error("record", "--simulate takes neither -p, -F, -e nor "
                                  "--no-branch-stack (it simulates taken branches, "
                                  "every -c of them)");
    if (!c->simulate && (c->o.truth_path || c->dump_path || c->o.seed))
        return lp_cli_usage_error("record", "--truth, --debug-dump and --seed need --simulate");
    if (c->o.intel_pt && !c->simulate)
        return lp_cli_usage_error("record", "--intel-pt needs --simulate (this "
                                  "machine has no PT hardware access)");
    if (c->o.intel_pt && (c->o.period || c->o.seed || c->dump_path ||
                          c->o.user_stack))
        return lp_cli_usage_error("record", "--intel-pt records the whole branch "
                                  "trace: it takes neither -c, --seed, "
                                  "--debug-dump nor --user-stack");
    return 0;
}

static void summary(const cli *c, const lp_record_stats *st)
{
    fprintf(stderr, "[ lbr2prof record: wrote %llu samples to %s",
            (unsigned long long)st->samples, c->o.output);
    if (c->simulate)
        fprintf(stderr, "; traced %llu instructions, %llu taken branches, "
                "%llu thread(s) in %.3f s = %.0f instructions/s",
                (unsigned long long)st->instructions,
                (unsigned long long)st->taken_branches,
                (unsigned long long)st->threads, st->seconds,
                st->seconds > 0 ? (double)st->instructions / st->seconds : 0.0);
    if (st->lost)
        fprintf(stderr, "; LOST %llu records", (unsigned long long)st->lost);
    if (WIFSIGNALED(st->exit_status))
        fprintf(stderr, "; the command was killed by signal %d",
                WTERMSIG(st->exit_status));
    else if (WIFEXITED(st->exit_status) && WEXITSTATUS(st->exit_status))
        fprintf(stderr, "; the command exited with status %d",
                WEXITSTATUS(st->exit_status));
    fprintf(stderr, " ]\n");
}

int cmd_record(int argc, char **argv)
{
    cli c;
    lp_record_stats st;
    lp_error err;
    lp_outfile dump;
    int rc;

    memset(&c, 0, sizeof c);
    memset(&dump, 0, sizeof dump);
    lp_error_clear(&err);
    if ((rc = parse(argc, argv, &c)))
        return rc == 1 ? 0 : rc;
    if ((rc = check(&c)))
        return rc;
    if (!c.o.output)
        c.o.output = "perf.data";
    if (!c.o.period && !c.o.freq)
        c.o.period = c.simulate ? 1000 : 100003;
    c.o.record_argv = argv - 1;
    c.o.record_argc = argc + 1;
    if (c.dump_path) {
        if (lp_outfile_open(&dump, c.dump_path, &err))
            return lp_cli_fail(&err);
        c.o.debug_dump = dump.fp;
    }
    rc = c.simulate ? lp_simulate_record(&c.o, &st, &err)
                    : lp_hw_record(&c.o, &st, &err);
    if (c.dump_path) {
        if (rc == 0)
            rc = lp_outfile_commit(&dump, &err);
        else
            lp_outfile_abort(&dump);
    }
    if (rc)
        return lp_cli_fail(&err);
    summary(&c, &st);
    return 0;
}
