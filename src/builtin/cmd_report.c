/*
 * cmd_report.c - `lbr2prof report PERF.DATA|PROFILE`: a human summary
 * (text), JSON, FlameGraph folded stacks, speedscope JSON or an SVG flame
 * graph of a trace or of an LLVM sample profile.
 * LP_BUILTIN(report, cmd_report, "summaries and flame graphs of a perf.data or sample profile")
 *
 * Owns option parsing and the choice of pipeline for the input: hybrid
 * traces (call stacks + LBR) through the profile driver
 * (include/lbr2prof/profgen.h) to a context-sensitive profile, traces
 * without LBR as sampled callchains; the model and the writers are in
 * src/report.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/profgen.h"
#include "lbr2prof/report.h"

#define MAX_BINARIES 64
#define MAX_DEBUG_DIRS 16

typedef struct rp_args {
    const char *input, *output, *debug_binary, *title;
    const char *binaries[MAX_BINARIES];
    size_t nbinaries;
    const char *debug_dirs[MAX_DEBUG_DIRS];
    size_t ndebug_dirs;
    lp_report_write_opts wo;
    int64_t pid;
    int force_text, no_search, strict;
    enum { R_AUTO, R_SAMPLES, R_CS, R_LBR } route;
} rp_args;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: lbr2prof report [options] PERF.DATA|PROFILE   (PERF.DATA may be '-')\n"
        "  PERF.DATA: perf.data or perf script text. With LBR and call stacks\n"
        "  (hybrid samples): the context-sensitive profile `lbr2prof PERF.DATA`\n"
        "  makes (not nested), with the sample-quality counts of the run;\n"
        "  otherwise the samples' callchains, symbolized (leaf = sampled IP).\n"
        "  PROFILE: an LLVM sample profile (text, binary or extbinary; flat,\n"
        "  nested or context-sensitive; MD5 names are reported as hashes).\n"
        "  --format=FMT        text (default), json, folded, speedscope, svg\n"
        "  -o, --output=FILE   write FILE atomically (default: standard output)\n"
        "  --binary=ELF        symbols and source lines (repeatable: for\n"
        "                      callchains matched by build-id, else base name;\n"
        "                      for a profile the first is the profiled program;\n"
        "                      default: found from the trace as `profile` does)\n"
        "  --debug-binary=ELF  DWARF from this file instead of the binary\n"
        "  --no-search         perf.data: do not open mapped files from disk\n"
        "  --debug-dir=DIR     perf.data: separate debug files of mapped files\n"
        "                      in DIR/.build-id/ (repeatable; default\n"
        "                      /usr/lib/debug)\n"
        "  --pid=N             perf.data: only samples of process N\n"
        "  --cs                perf.data: the profile `lbr2prof PERF.DATA` makes,\n"
        "                      whatever the samples (also from stdin)\n"
        "  --samples           perf.data: the sampled callchains, even with LBR\n"
        "  --lbr               perf.data: the flat LBR profile (as\n"
        "                      `lbr2prof profile --ignore-stack-samples`)\n"
        "  --perfscript        the input is perf script text\n"
        "  --strict            perf.data: a file cut off inside a record is an\n"
        "                      error (default: its complete records, a warning)\n"
        "  --top=N             text: rows per table (default 20)\n"
        "  --no-demangle       keep C++ linkage names\n"
        "  --width=PX          svg: width (default 1200)\n"
        "  --title=TEXT        svg/speedscope title\n");
}

static int parse_num(const char *s, long long min, long long *out)
{
    char *e;

    *out = strtoll(s, &e, 10);
    return (*e || !*s || *out < min) ? -1 : 0;
}

static int parse_args(int argc, char **argv, rp_args *a)
{
    static const struct option lo[] = {
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"binary", required_argument, NULL, 'b'},
        {"debug-binary", required_argument, NULL, 'd'},
        {"no-search", no_argument, NULL, 'S'},
        {"strict", no_argument, NULL, 'X'},
        {"debug-dir", required_argument, NULL, 'g'},
        {"pid", required_argument, NULL, 'p'},
        {"perfscript", no_argument, NULL, 'P'},
        {"lbr", no_argument, NULL, 'L'},
        {"cs", no_argument, NULL, 'C'},
        {"samples", no_argument, NULL, 's'},
        {"top", required_argument, NULL, 't'},
        {"no-demangle", no_argument, NULL, 'D'},
        {"width", required_argument, NULL, 'w'},
        {"title", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    long long v;
    int c;

    memset(a, 0, sizeof *a);
    a->wo.format = LP_REPORT_TEXT;
    a->pid = -1;
    a->output = "-";
    optind = 1;
    while ((c = getopt_long(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (lp_report_format_parse(optarg, &a->wo.format))
                return lp_cli_usage_error("report", "unknown format '%s' "
                                          "(text, json, folded, speedscope, svg)",
                                          optarg);
            break;
        case 'o': a->output = optarg; break;
        case 'b':
            if (a->nbinaries == MAX_BINARIES)
                return lp_cli_usage_error("report", "too many --binary");
            a->binaries[a->nbinaries++] = optarg;
            break;
        case 'd': a->debug_binary = optarg; break;
        case 'S': a->no_search = 1; break;
        case 'g':
            if (a->ndebug_dirs == MAX_DEBUG_DIRS)
                return lp_cli_usage_error("report", "too many --debug-dir");
            a->debug_dirs[a->ndebug_dirs++] = optarg;
            break;
        case 'p':
            if (parse_num(optarg, 0, &v))
                return lp_cli_usage_error("report", "bad --pid '%s'", optarg);
            a->pid = v;
            break;
        case 'P': a->force_text = 1; break;
        case 'X': a->strict = 1; break;
        case 'L': a->route = R_LBR; break;
        case 'C': a->route = R_CS; break;
        case 's': a->route = R_SAMPLES; break;
        case 't':
            if (parse_num(optarg, 1, &v))
                return lp_cli_usage_error("report", "bad --top '%s'", optarg);
            a->wo.top = (size_t)v;
            break;
        case 'D': a->wo.no_demangle = true; break;
        case 'w':
            if (parse_num(optarg, 100, &v) || v > 100000)
                return lp_cli_usage_error("report", "bad --width '%s' "
                                          "(100..100000)", optarg);
            a->wo.width = (unsigned)v;
            break;
        case 'T': a->wo.title = optarg; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        a->input = argv[optind++];
    if (optind < argc)
        return lp_cli_usage_error("report", "unexpected argument '%s'",
                                  argv[optind]);
    if (!a->input) {
        usage(stderr);
        return 2;
    }
    return 0;
}

/* An LLVM sample profile (text, binary or extbinary), lines from the
 * first --binary. */
static lp_report *from_profile(const rp_args *a, lp_error *err)
{
    lp_binary_opts bo = {a->debug_binary, NULL, -1, 0};
    lp_report_source src = {a->input, "llvm-profile", a->binaries,
                            a->nbinaries ? 1 : 0};
    lp_binary *bin = NULL;
    lp_profile *p;
    lp_report *r = NULL;

    if (a->nbinaries > 1)
        fprintf(stderr, "lbr2prof report: a profile takes one --binary; "
                        "using %s\n", a->binaries[0]);
    p = lp_profile_read(a->input, NULL, err);
    if (p && a->nbinaries && !(bin = lp_binary_open(a->binaries[0], &bo, err))) {
        lp_profile_free(p);
        return NULL;
    }
    if (p)
        r = lp_report_from_profile(p, bin, NULL, &src, err);
    lp_binary_close(bin);
    lp_profile_free(p);
    return r;
}

/* perf.data / perf script: the sampled callchains. */
static lp_report *from_perf(const rp_args *a, int text, lp_error *err)
{
    static const char *const default_debug[] = {"/usr/lib/debug"};
    lp_report_perf_opts po;

    memset(&po, 0, sizeof po);
    po.binaries = a->binaries;
    po.nbinaries = a->nbinaries;
    po.pid = a->pid;
    po.force_text = text;
    po.bopts.debug_path = a->debug_binary;
    po.bopts.fs_discriminator = -1;
    po.search_mapped = !a->no_search;
    po.debug_dirs = a->ndebug_dirs ? a->debug_dirs : default_debug;
    po.ndebug_dirs = a->ndebug_dirs ? a->ndebug_dirs : 1;
    po.strict = a->strict;
    po.warn = lp_cli_warn;
    return lp_report_from_perf(a->input, &po, err);
}

/* The profile driver on the trace, as `lbr2prof PERF.DATA` runs it
 * (flat: as with --ignore-stack-samples), except that a CS profile stays
 * a list of calling contexts (not nested into inlinees). */
static int run_driver(const rp_args *a, int text, bool flat,
                      lp_profgen_result *res, lp_error *err)
{
    lp_profgen_opts o;

    lp_profgen_opts_default(&o);
    *(text ? &o.perfscript : &o.perfdata) = a->input;
    o.binaries = a->binaries;
    o.nbinaries = a->nbinaries;
    o.debug_binary = a->debug_binary;
    o.pid = a->pid;
    o.ignore_stack_samples = flat;
    o.strict = a->strict;
    o.cs.gen_nested = false;
    /* a report shows source lines: pseudo-probe binaries through DWARF */
    o.use_dwarf_correlation = true;
    o.file_names = true;        /* a report shows source files */
    o.warn = lp_cli_warn;
    o.note = lp_cli_note;
    return lp_profgen_run(&o, res, err);
}

/* The run's statistics as the report's sample-quality counts. */
static void quality_of(const lp_profgen_stats *s, lp_report_quality *q)
{
    memset(q, 0, sizeof *q);
    q->present = 1;
    q->samples = s->samples;
    q->used = s->used;
    q->dropped = s->dropped;
    q->repaired = s->repaired;
    q->inferred = s->inferred;
    q->truncated = s->truncated;
    q->external = s->external;
    q->contextless = s->contextless;
    q->lost = s->lost;
}

/* A driver result -> the report (THE HOOK: lp_report_from_profile). */
static lp_report *from_result(const rp_args *a, const lp_profgen_result *res,
                              lp_error *err)
{
    lp_report_source src = {a->input, res->context_sensitive ? "perf-cs"
                                                             : "perf-lbr-flat",
                            (const char *const *)res->paths, res->nbins};
    lp_report_quality q;

    quality_of(&res->stats, &q);
    return lp_report_from_profile(res->profile, res->bins[0], &q, &src, err);
}

/* --cs / --lbr: the driver, errors are errors. */
static lp_report *from_driver(const rp_args *a, int text, bool flat,
                              lp_error *err)
{
    lp_profgen_result res;
    lp_report *r = NULL;

    if (run_driver(a, text, flat, &res, err) == 0)
        r = from_result(a, &res, err);
    lp_profgen_result_free(&res);
    return r;
}

/* No route asked: hybrid samples (call stack and LBR in the first sample)
 * make the CS report; others, or no binary found for them, the sampled
 * callchains. */
static lp_report *from_trace(const rp_args *a, int text, lp_error *err)
{
    lp_profgen_result res;
    lp_report *r = NULL;
    bool stack, lbr;

    if (lp_profgen_trace_kind(a->input, text, &stack, &lbr, err))
        return NULL;
    if (!stack || !lbr)
        return from_perf(a, text, err);
    if (run_driver(a, text, false, &res, err) == 0)
        r = from_result(a, &res, err);
    else if (res.failed == LP_PROFGEN_BINARY && a->nbinaries == 0) {
        fprintf(stderr, "warning: no context-sensitive report (%s); reporting "
                        "the sampled callchains instead\n", err->msg);
        lp_error_clear(err);
        r = from_perf(a, text, err);
    }
    lp_profgen_result_free(&res);
    return r;
}

static lp_report *from_trace_route(const rp_args *a, int text, lp_error *err)
{
    switch (a->route) {
    case R_CS: return from_driver(a, text, false, err);
    case R_LBR: return from_driver(a, text, true, err);
    case R_SAMPLES: return from_perf(a, text, err);
    default: /* a stream cannot be looked at twice: callchains */
        return strcmp(a->input, "-") ? from_trace(a, text, err)
                                     : from_perf(a, text, err);
    }
}

static lp_report *build(const rp_args *a, lp_error *err)
{
    lp_report_input_kind kind = LP_RIN_PERF_SCRIPT;

    if (!strcmp(a->input, "-")) /* a stream: perf.data pipe or perf script */
        return from_trace_route(a, a->force_text, err);
    if (!a->force_text && lp_report_detect(a->input, &kind, err))
        return NULL;
    switch (kind) {
    case LP_RIN_LLVM_TEXT:
    case LP_RIN_LLVM_BINARY:
        return from_profile(a, err);
    case LP_RIN_PERF_DATA:
    case LP_RIN_PERF_SCRIPT:
        return from_trace_route(a, kind == LP_RIN_PERF_SCRIPT, err);
    }
    return NULL;
}

int cmd_report(int argc, char **argv)
{
    lp_error err = {0};
    lp_outfile out;
    lp_report *r;
    rp_args a;
    int st = parse_args(argc, argv, &a);

    if (st)
        return st == 1 ? 0 : st;
    if (!(r = build(&a, &err)))
        return lp_cli_fail(&err);
    if (lp_outfile_open(&out, a.output, &err) ||
        lp_report_write(out.fp, r, &a.wo, &err) ||
        lp_outfile_commit(&out, &err)) {
        lp_outfile_abort(&out);
        lp_report_free(r);
        return lp_cli_fail(&err);
    }
    lp_report_free(r);
    return 0;
}
