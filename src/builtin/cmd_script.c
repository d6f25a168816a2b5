/*
 * cmd_script.c - `lbr2prof script`: prints the samples of a perf.data (or
 * perf script text) the way perf 6.1 prints them with
 * `perf script -F comm,pid,tid,time,ip,brstack`, byte for byte; or with
 * frame-pointer callchains (--fp-callchain), or as a Symbolication API v5
 * request (--format=symbolicate-v5).
 * LP_BUILTIN(script, cmd_script, "print samples as perf script -F comm,pid,tid,time,ip,brstack does")
 *
 * Owns the command line and stdout's buffering only: the printing is
 * lp_script_run's (include/lbr2prof/script.h, src/script).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/fpunwind.h"
#include "lbr2prof/pt.h"
#include "lbr2prof/script.h"

#define SC_MAX_BINARIES 64
#define SC_OUT_BUF (1 << 16)

typedef struct sc_args {
    lp_script_opts o;
    const char *input;
    int fp_stats;
    lp_itrace itrace;
    const char *binaries[SC_MAX_BINARIES];
} sc_args;

static void usage(FILE *o)
{
    fprintf(o,
            "usage: lbr2prof script [options] FILE   (FILE may be '-')\n"
            "  -F, --fields LIST     comma list of comm,pid,tid,time,ip,brstack\n"
            "                        (default: all of them)\n"
            "  -i, --input FILE      input file (perf script style)\n"
            "      --show-mmap-events  print MMAP/MMAP2 records\n"
            "      --show-task-events  print COMM/FORK/EXIT records\n"
            "      --raw-addresses   print callchain addresses absolute, not\n"
            "                        relative to their mapping\n"
            "      --format=symbolicate-v5  print a Symbolication API v5 request\n"
            "                        (one job per process, one stack per sample)\n"
            "      --binary ELF      v5: ELF standing in for a mapped file\n"
            "      --adjust MODE     v5: all_but_first (default), all, none\n"
            "      --fp-callchain=MODE  user part of the callchain from a\n"
            "                        frame-pointer walk of the sampled user stack\n"
            "                        (perf record --call-graph dwarf): plain (the\n"
            "                        kernel's walk), validated, or repaired (also\n"
            "                        the caller lost at a function's entry/exit)\n"
            "      --fp-stats        with --fp-callchain: counters on stderr\n"
            "      --strict          a perf.data cut off inside a record is an error\n"
            "                        (default: its complete records, and a warning)\n"
            "      --itrace=OPTS     samples from Intel PT data, as perf: i[N[i|t|ns|us|ms]]\n"
            "                        (instructions), b (branches), l[N] (last branches),\n"
            "                        e (errors), s[N] (skip); default: none (--no-itrace)\n"
            "      --no-itrace       the recorded events only (the default)\n");
}

/* One option with a value. 0, or the exit status of a usage error. */
static int set_value(sc_args *a, int c, const char *v)
{
    lp_script_opts *o = &a->o;
    enum lp_fp_mode fm;

    switch (c) {
    case 'F':
        if (lp_script_fields_parse(v, &o->fields) < 0)
            return lp_cli_usage_error("script", "bad field list '%s' (known: "
                                      "comm,pid,tid,time,ip,brstack)", v);
        return 0;
    case 'i': a->input = v; return 0;
    case 'o':
        if (strcmp(v, "symbolicate-v5") && strcmp(v, "perf"))
            return lp_cli_usage_error("script", "unknown format '%s' (perf, "
                                      "symbolicate-v5)", v);
        o->v5 = !strcmp(v, "symbolicate-v5");
        return 0;
    case 'b':
        if (o->v5o.nbinaries == SC_MAX_BINARIES)
            return lp_cli_usage_error("script", "too many --binary");
        a->binaries[o->v5o.nbinaries++] = v;
        return 0;
    case 'a':
        if (lp_adjust_mode_parse(v, &o->v5o.mode) < 0)
            return lp_cli_usage_error("script", "bad --adjust '%s' (auto, all, "
                                      "all_but_first, none)", v);
        o->v5o.adjust = o->v5o.mode != LP_ADJUST_NONE;
        return 0;
    case 'I': {
        lp_error e;
        if (lp_itrace_parse(v, &a->itrace, &e) < 0)
            return lp_cli_usage_error("script", "%s", e.msg);
        o->itrace = &a->itrace;
        return 0;
    }
    case 'c':
        if (lp_fp_mode_parse(v, &fm) < 0)
            return lp_cli_usage_error("script", "bad --fp-callchain '%s' "
                                      "(known: plain, validated, repaired)", v);
        o->fp_mode = fm;
        return 0;
    }
    return 0;
}

static int parse_args(int argc, char **argv, sc_args *a)
{
    static const struct option longopts[] = {
        {"fields", required_argument, NULL, 'F'},
        {"input", required_argument, NULL, 'i'},
        {"show-mmap-events", no_argument, NULL, 'm'},
        {"show-task-events", no_argument, NULL, 't'},
        {"raw-addresses", no_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'o'},
        {"binary", required_argument, NULL, 'b'},
        {"adjust", required_argument, NULL, 'a'},
        {"fp-callchain", required_argument, NULL, 'c'},
        {"fp-stats", no_argument, NULL, 's'},
        {"strict", no_argument, NULL, 'S'},
        {"itrace", required_argument, NULL, 'I'},
        {"no-itrace", no_argument, NULL, 'N'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c, st;

    memset(a, 0, sizeof *a);
    lp_script_opts_default(&a->o);
    a->o.v5o.binaries = a->binaries;
    optind = 1;
    while ((c = getopt_long(argc, argv, "F:i:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': a->o.show_mmap = true; break;
        case 't': a->o.show_task = true; break;
        case 'r': a->o.raw_addr = true; break;
        case 's': a->fp_stats = 1; break;
        case 'S': a->o.strict = true; break;
        case 'N': a->o.itrace = NULL; break;
        case 'h': usage(stdout); return 1;
        case '?': usage(stderr); return 2;
        default:
            if ((st = set_value(a, c, optarg)) != 0)
                return st;
        }
    }
    if (optind < argc && !a->input)
        a->input = argv[optind++];
    if (optind < argc)
        return lp_cli_usage_error("script", "unexpected argument '%s'", argv[optind]);
    if (!a->input)
        a->input = "perf.data"; /* perf's default */
    if (a->fp_stats && !a->o.fp_mode)
        return lp_cli_usage_error("script", "--fp-stats needs --fp-callchain");
    return 0;
}

static void print_warning(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "lbr2prof script: warning: %s\n", msg);
}

int cmd_script(int argc, char **argv)
{
    lp_error err;
    sc_args a;
    char *obuf;
    int st = parse_args(argc, argv, &a);

    if (st)
        return st == 1 ? 0 : st;
    /* stdout keeps this buffer until the process exits: never freed. */
    obuf = malloc(SC_OUT_BUF);
    lp_error_clear(&err);
    a.o.warn = print_warning;
    a.o.fp_stats = a.fp_stats ? stderr : NULL;
    if (obuf)
        setvbuf(stdout, obuf, _IOFBF, SC_OUT_BUF);
    if (lp_script_run(a.input, &a.o, stdout, &err) < 0)
        return lp_cli_fail(&err);
    if (a.o.pt_errors) /* as perf's closing warning */
        fprintf(stderr, "%llu instruction trace errors\n",
                (unsigned long long)a.o.pt_errors);
    if (ferror(stdout)) {
        lp_error_set(&err, LP_EIO, "-: write error on standard output");
        return lp_cli_fail(&err);
    }
    return 0;
}
