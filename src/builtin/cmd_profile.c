/*
 * cmd_profile.c - `lbr2prof profile` (and the default command): perf.data
 * or perf script text + the profiled binary -> an LLVM sample profile,
 * with llvm-profgen 19's command line (`--perfdata=`, `--perfscript=`,
 * `--unsymbolized-profile=`, `--binary=`, `--output=`/`-o`, `--format=`...)
 * and its error messages. Owns option parsing and validation only: the
 * pipeline is the driver's (include/lbr2prof/profgen.h, src/profgen):
 * one lp_profgen_run, one lp_profgen_write, then the exit status.
 * LP_BUILTIN(profile, cmd_profile, "make an LLVM sample profile from LBR samples; llvm-profgen flags")
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/builtin.h"
#include "lbr2prof/profgen.h"

/* ---- options ---------------------------------------------------------- */

#define MAX_EVENTS 64
#define MAX_BINARIES 64

typedef struct prof_args {
    lp_profgen_opts o;          /* what the driver gets */
    const char *format;         /* --format as given */
    const char *binaries[MAX_BINARIES];  /* --binary, repeatable */
    char *events[MAX_EVENTS];   /* --perf-event / --perf-events filter */
    char **traces;              /* PERF.DATA arguments, --perfdata and
                                   --perfscript values (comma lists split),
                                   in order; owned */
    size_t ntraces;
    unsigned trace_kinds;       /* 1: perf.data, 2: perf script text */
} prof_args;

enum opt_kind { O_STR, O_BOOL, O_I64, O_U32, O_U64, O_DBL, O_EVENT, O_BINARY,
                O_INT, O_TRI, O_IGNORED, O_UNSUPP, O_TRACE };

typedef struct opt_def {
    const char *name;
    enum opt_kind kind;
    size_t off;            /* offset in prof_args */
} opt_def;

#define A(f) offsetof(prof_args, o.f)
static const opt_def opt_defs[] = {
    {"perfdata", O_TRACE, A(perfdata)}, {"pd", O_TRACE, A(perfdata)},
    {"perfscript", O_TRACE, A(perfscript)}, {"ps", O_TRACE, A(perfscript)},
    {"unsymbolized-profile", O_STR, A(unsym)}, {"up", O_STR, A(unsym)},
    {"llvm-sample-profile", O_STR, A(llvm_prof)},
    {"binary", O_BINARY, 0}, {"debug-binary", O_STR, A(debug_binary)},
    {"binaries-from-trace", O_BOOL, A(binaries_from_trace)}, /* lbr2prof's */
    {"dwp", O_STR, A(dwp)}, {"output", O_STR, A(output)},
    {"o", O_STR, A(output)},
    {"format", O_STR, offsetof(prof_args, format)},
    {"skip-symbolization", O_BOOL, A(skip_symbolization)},
    {"use-offset", O_BOOL, A(use_offset)},
    {"use-first-loadable-segment-as-base", O_BOOL, A(first_loadable_base)},
    {"raw-header", O_BOOL, A(raw_header)}, /* lbr2prof's */
    {"ignore-stack-samples", O_BOOL, A(ignore_stack_samples)},
    {"use-md5", O_BOOL, A(use_md5)},
    {"populate-profile-symbol-list", O_BOOL, A(populate_symbol_list)},
    {"show-detailed-warning", O_BOOL, A(show_detailed_warning)},
    {"show-mmap-events", O_BOOL, A(show_mmap_events)},
    {"pid", O_I64, A(pid)},
    {"fill-zero-for-all-funcs", O_BOOL, A(flat.fill_zero_for_all_funcs)},
    {"update-total-samples", O_BOOL, A(flat.update_total_samples)},
    {"trim-cold-profile", O_BOOL, A(flat.trim_cold_profile)},
    {"profile-summary-hot-count", O_I64, A(flat.hot_count)},
    {"profile-summary-cold-count", O_I64, A(flat.cold_count)},
    {"profile-summary-cutoff-hot", O_U32, A(flat.cutoff_hot)},
    {"profile-summary-cutoff-cold", O_U32, A(flat.cutoff_cold)},
    {"profile-density-threshold", O_DBL, A(flat.density_threshold)},
    {"profile-density-cutoff-hot", O_U32, A(flat.density_cutoff_hot)},
    {"show-density", O_BOOL, A(flat.show_density)},
    /* context-sensitive options: the unwinder's (recursion compression and
     * context depth, applied when contexts are formed; an unsymbolized
     * profile is read as written), then the CS generator's */
    {"compress-recursion", O_I64, A(compress_recursion)},
    {"csprof-max-context-depth", O_I64, A(max_context_depth)},
    {"no-repair-frames", O_BOOL, A(no_repair_frames)},
    {"script-fp-callchains", O_BOOL, A(script_fp_callchains)},
    {"csprof-merge-cold-context", O_TRI, A(cs.merge_cold_context)},
    {"csprof-max-cold-context-depth", O_U32, A(cs.max_cold_context_depth)},
    {"gen-cs-nested-profile", O_BOOL, A(cs.gen_nested)},
    {"generate-merged-base-profiles", O_BOOL, A(cs.merged_base_profiles)},
    {"infer-missing-frames", O_IGNORED, 0}, {"max-search-depth", O_IGNORED, 0},
    {"csspgo-preinliner", O_BOOL, A(cs.preinliner)},
    {"use-context-cost-for-preinliner", O_BOOL, A(cs.use_context_cost)},
    {"csspgo-replay-preinline", O_BOOL, A(cs.replay_preinline)},
    {"csspgo-preinliner-multiplier-for-previous-inlining", O_INT,
     A(cs.preinl_multiplier)},
    {"sample-profile-hot-inline-threshold", O_INT, A(cs.hot_inline_threshold)},
    {"sample-profile-cold-inline-threshold", O_INT, A(cs.cold_inline_threshold)},
    {"sample-profile-inline-limit-max", O_INT, A(cs.inline_limit_max)},
    {"sample-profile-inline-limit-min", O_INT, A(cs.inline_limit_min)},
    {"sample-profile-inline-growth-limit", O_INT, A(cs.inline_growth_limit)},
    {"sort-profiled-scc-member", O_BOOL, A(cs.sort_scc_members)},
    {"cs-fold-recursion", O_BOOL, A(cs.fold_recursion)}, /* lbr2prof's */
    {"profile-summary-contextless", O_IGNORED, 0},
    {"use-dwarf-correlation", O_BOOL, A(use_dwarf_correlation)},
    /* not implemented: refuse rather than silently ignore */
    {"leading-ip-only", O_BOOL, A(leading_ip_only)},
    {"perf-event", O_EVENT, 0}, {"perf-events", O_EVENT, 0},
    {"sample-period", O_U64, A(sample_period)},
    {"kernel", O_UNSUPP, 0}, {"show-disassembly-only", O_UNSUPP, 0},
    {NULL, 0, 0},
};
#undef A

static const char usage_text[] =
    "usage: lbr2prof [profile] PERF.DATA... -o OUT [--binary=PATH] [options]\n"
    "       lbr2prof --perfscript=FILE|--perfdata=FILE|--unsymbolized-profile=FILE\n"
    "       (PERF.DATA or FILE may be - for stdin, e.g. perf record -o - | lbr2prof -)\n"
    "                --binary=PATH --output=OUT [llvm-profgen options]\n"
    "several traces (any processes, hosts, load addresses): more PERF.DATA\n"
    "  arguments, --perfdata/--perfscript repeated or FILE1,FILE2; one profile as\n"
    "  from one recording holding all their samples\n"
    "--skip-symbolization --raw-header: the mergeable raw profile (binaries,\n"
    "  build-ids, bases; `lbr2prof merge` sums them, --unsymbolized-profile reads it)\n"
    "options (as llvm-profgen 19): --format=extbinary|text|binary, --use-md5,\n"
    "  --skip-symbolization, --use-offset=BOOL, --use-first-loadable-segment-as-base,\n"
    "  --ignore-stack-samples, --update-total-samples, --fill-zero-for-all-funcs,\n"
    "  --populate-profile-symbol-list, --trim-cold-profile, --pid=N,\n"
    "  --profile-summary-cold-count=N, --profile-summary-hot-count=N,\n"
    "  --show-detailed-warning, --show-density, --debug-binary=PATH,\n"
    "  --llvm-sample-profile=FILE, --leading-ip-only, --perf-event=EVENT,\n"
    "  --sample-period=N, --use-dwarf-correlation\n"
    "several binaries: --binary may be repeated (the first is the profiled\n"
    "  program), --binaries-from-trace adds every sampled file found with DWARF\n"
    "hybrid samples (call stacks + LBR): --compress-recursion=N,\n"
    "  --csprof-max-context-depth=N, --no-repair-frames (do not put back the\n"
    "  caller a frame-pointer walk misses at function entry/exit),\n"
    "  --script-fp-callchains (perf script text whose callchains are frame-pointer\n"
    "  walks, perf record -g: repairs what a perf.data's markers would allow)\n"
    "Without --binary, the most sampled user-space file of the trace is used, found\n"
    "by its recorded path, build-id (perf's ~/.debug cache) or basename.\n";

static int bad_usage(const char *fmt, const char *arg)
    __attribute__((format(printf, 1, 0)));

static int bad_usage(const char *fmt, const char *arg)
{
    fputs("lbr2prof profile: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return -1;
}

static int parse_bool(const char *v, bool *out)
{
    if (!v || !strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "TRUE"))
        *out = true;
    else if (!strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "FALSE"))
        *out = false;
    else
        return -1;
    return 0;
}

/* --perf-event=E (repeatable) or --perf-events=E1,E2 */
static int add_events(prof_args *a, const char *v)
{
    const char *p = v, *c;
    size_t *n = &a->o.nr_events;

    for (;;) {
        c = strchr(p, ',');
        if (*n == MAX_EVENTS)
            return -1;
        if (!(a->events[*n] = strndup(p, c ? (size_t)(c - p) : strlen(p))))
            return -1;
        (*n)++;
        if (!c)
            return 0;
        p = c + 1;
    }
}

/* One trace in order; text: perf script. */
static int add_trace(prof_args *a, const char *v, size_t len, bool text)
{
    char **nv = realloc(a->traces, (a->ntraces + 1) * sizeof *nv);

    if (!nv)
        return -1;
    a->traces = nv;
    if (!(nv[a->ntraces] = strndup(v, len)))
        return -1;
    a->ntraces++;
    a->trace_kinds |= text ? 2 : 1;
    return 0;
}

/* --perfdata/--perfscript: repeatable, and a comma list unless the whole
 * value names a file. */
static int add_traces(prof_args *a, const char *v, bool text)
{
    const char *c;
    struct stat st;

    if (!*v)
        return -1;
    if (!strchr(v, ',') || stat(v, &st) == 0)
        return add_trace(a, v, strlen(v), text);
    for (; (c = strchr(v, ',')); v = c + 1)
        if (c == v || add_trace(a, v, (size_t)(c - v), text))
            return -1;
    return *v ? add_trace(a, v, strlen(v), text) : -1;
}

static int set_opt(prof_args *a, const opt_def *d, const char *v)
{
    char *base = (char *)a + d->off, *e;

    switch (d->kind) {
    case O_STR: *(const char **)base = v; return 0;
    case O_BOOL: return parse_bool(v, (bool *)base);
    case O_I64: *(int64_t *)base = strtoll(v, &e, 10); return *e || !*v ? -1 : 0;
    case O_U32: *(uint32_t *)base = (uint32_t)strtoul(v, &e, 10); return *e || !*v ? -1 : 0;
    case O_U64:
        *(uint64_t *)base = strtoull(v, &e, 10);
        a->o.have_sample_period = true;
        return *e || !*v || v[0] == '-' ? -1 : 0;
    case O_EVENT: return add_events(a, v);
    case O_TRACE: return add_traces(a, v, d->off == offsetof(prof_args, o.perfscript));
    case O_BINARY:
        if (a->o.nbinaries == MAX_BINARIES)
            return -1;
        a->binaries[a->o.nbinaries++] = v;
        return 0;
    case O_INT: {
        long x = strtol(v, &e, 10);
        if (*e || !*v || x < INT32_MIN || x > INT32_MAX)
            return -1;
        *(int *)base = (int)x;
        return 0;
    }
    case O_TRI: {
        bool b;
        if (parse_bool(v, &b))
            return -1;
        *(int *)base = b;
        return 0;
    }
    case O_DBL: *(double *)base = strtod(v, &e); return *e || !*v ? -1 : 0;
    default: return 0;
    }
}

/* One argument (and maybe the next); returns args consumed, or -1. */
static int parse_one(prof_args *a, int argc, char **argv, int i)
{
    const char *arg = argv[i], *name = arg + (arg[1] == '-' ? 2 : 1), *eq;
    const opt_def *d;
    size_t len;

    eq = strchr(name, '=');
    len = eq ? (size_t)(eq - name) : strlen(name);
    for (d = opt_defs; d->name; d++)
        if (strlen(d->name) == len && strncmp(d->name, name, len) == 0)
            break;
    if (!d->name)
        return bad_usage("Unknown command line argument '%s'", arg);
    if (d->kind == O_UNSUPP)
        return bad_usage("option '%s' is not supported yet", arg);
    if (d->kind == O_BOOL || d->kind == O_TRI || (d->kind == O_IGNORED && !eq)) {
        if (set_opt(a, d, eq ? eq + 1 : NULL))
            return bad_usage("'%s': expected true or false", arg);
        return 1;
    }
    if (!eq && i + 1 >= argc)
        return bad_usage("option '%s' needs a value", arg);
    if (set_opt(a, d, eq ? eq + 1 : argv[i + 1]))
        return bad_usage("'%s': bad value", arg);
    return eq ? 1 : 2;
}

static int parse_args(prof_args *a, int argc, char **argv)
{
    int i = 1, n;

    memset(a, 0, sizeof *a);
    lp_profgen_opts_default(&a->o);
    a->o.binaries = a->binaries;
    a->o.events = (const char *const *)a->events;
    while (i < argc) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            if ((n = parse_one(a, argc, argv, i)) < 0)
                return -1;
            i += n;
            continue;
        }
        if (add_trace(a, argv[i], strlen(argv[i]), false))
            return bad_usage("out of memory at '%s'", argv[i]);
        i++;
    }
    return 0;
}

/* The traces to the driver: the first as perfdata or perfscript, the
 * others after it; one kind only. */
static int set_traces(prof_args *a)
{
    if (a->ntraces == 0)
        return 0;
    if (a->trace_kinds == 3)
        return bad_usage("%s", "perf.data and perf script (--perfscript) "
                               "inputs cannot be mixed in one run");
    if (a->trace_kinds == 2)
        a->o.perfscript = a->traces[0];
    else
        a->o.perfdata = a->traces[0];
    a->o.more_traces = (const char *const *)a->traces + 1;
    a->o.nmore_traces = a->ntraces - 1;
    return 0;
}

/* ---- validation ----------------------------------------------------------- */

static int output_format(const prof_args *a, lp_prof_format *f)
{
    const char *s = a->format ? a->format : "extbinary";

    if (lp_profgen_format_parse(s, f) == 0)
        return 0;
    if (!strcmp(s, "gcc"))
        return bad_usage("%s: Profile encoding format unsupported for writing "
                         "operations", s);
    return bad_usage("Cannot find option named '%s' for --format", s);
}

/* The traces after the first: files (at most one "-" in all, with a
 * --binary); --raw-header only with --skip-symbolization. */
static int check_more_traces(const prof_args *pa)
{
    size_t i, nstdin = 0;
    struct stat st;

    for (i = 0; i < pa->ntraces; i++) {
        if (strcmp(pa->traces[i], "-") == 0)
            nstdin++;
        else if (i > 0 && stat(pa->traces[i], &st) != 0)
            return bad_usage("Input perf file does not exist: %s", pa->traces[i]);
    }
    if (nstdin > 1)
        return bad_usage("%s", "standard input (-) can be only one of the inputs");
    if (nstdin && !pa->o.nbinaries)
        return bad_usage("%s", "--binary is required when a trace comes from stdin");
    if (pa->o.raw_header && !pa->o.skip_symbolization)
        return bad_usage("%s", "--raw-header needs --skip-symbolization");
    if (pa->o.raw_header && pa->ntraces == 0)
        return bad_usage("%s", "--raw-header needs traces (its header says what "
                               "counted them; `lbr2prof merge` sums raw profiles)");
    return 0;
}

static int validate(prof_args *pa)
{
    const lp_profgen_opts *a = &pa->o;
    int inputs = !!a->perfdata + !!a->perfscript + !!a->unsym + !!a->llvm_prof;
    struct stat st;
    const char *in = a->perfdata    ? a->perfdata
                     : a->perfscript ? a->perfscript
                     : a->unsym      ? a->unsym
                                     : a->llvm_prof;

    if (inputs != 1)
        return bad_usage("%s", "exactly one of --perfdata, --perfscript, "
                               "--unsymbolized-profile or --llvm-sample-profile "
                               "(or a perf.data argument) is required");
    if (!a->output)
        return bad_usage("%s", "--output (-o) is required");
    if (!a->nbinaries && a->llvm_prof) /* a raw profile's header may name them */
        return bad_usage("%s", "--binary is required");
    if (!a->nbinaries && strcmp(in, "-") == 0)
        return bad_usage("%s", "--binary is required when the trace comes from stdin");
    if (strcmp(in, "-") != 0 && stat(in, &st) != 0)
        return bad_usage("Input perf file does not exist: %s", in);
    if (check_more_traces(pa))
        return -1;
    if (a->compress_recursion < -1)
        return bad_usage("%s", "Value of --compress-recursion should >= -1");
    return output_format(pa, &pa->o.format);
}

/* ---- the command ---------------------------------------------------------- */

int cmd_profile(int argc, char **argv)
{
    lp_error err = {0};
    lp_profgen_result r = {0};
    prof_args a;
    int k = parse_args(&a, argc, argv);

    if (k == 0 && (set_traces(&a) || validate(&a)))
        k = -1;
    a.o.warn = lp_cli_warn;
    a.o.note = lp_cli_note;
    a.o.info = stdout;
    if (k == 0 && (lp_profgen_run(&a.o, &r, &err) ||
                   lp_profgen_write(&a.o, &r, &err)))
        k = -2;
    lp_profgen_result_free(&r);
    while (a.o.nr_events > 0)
        free(a.events[--a.o.nr_events]);
    while (a.ntraces > 0)
        free(a.traces[--a.ntraces]);
    free(a.traces);
    return k == 0 || k == 1 ? 0 : k == -1 ? 2 : lp_cli_fail(&err);
}
