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
#include "lbr2prof/listing.h"
#include "lbr2prof/profgen.h"
#include "lbr2prof/pt.h"

/* ---- options ---------------------------------------------------------- */

#define MAX_EVENTS 64
#define MAX_BINARIES 64
#define MAX_FUNCS 256

typedef struct prof_args {
    lp_profgen_opts o;          /* what the driver gets */
    const char *format;         /* --format as given */
    const char *itrace_str;     /* --itrace as given */
    lp_itrace itrace;
    const char *binaries[MAX_BINARIES];  /* --binary, repeatable */
    char *events[MAX_EVENTS];   /* --perf-event / --perf-events filter */
    /* inspection: the binary's listing instead of a profile */
    bool show_disasm;           /* --show-disassembly-only */
    bool show_src;              /* --show-source-locations */
    bool show_canon;            /* --show-canonical-fname */
    const char *asm_syntax;     /* --x86-asm-syntax (att only) */
    char *funcs[MAX_FUNCS];     /* --disassemble-functions=a,b (repeatable) */
    size_t nfuncs;
    char **traces;              /* PERF.DATA arguments, --perfdata and
                                   --perfscript values (comma lists split),
                                   in order; owned */
    size_t ntraces;
    unsigned trace_kinds;       /* 1: perf.data, 2: perf script text */
    bool time_trace;            /* --time-trace, --time-profgen */
    bool quiet;                 /* --quiet: no progress line */
} prof_args;

enum opt_kind { O_STR, O_BOOL, O_I64, O_U32, O_U64, O_DBL, O_EVENT, O_BINARY,
                O_INT, O_TRI, O_U32_OPT, O_FUNCS, O_UNSUPP, O_TRACE };

typedef struct opt_def {
    const char *name;
    enum opt_kind kind;
    size_t off;            /* offset in prof_args */
} opt_def;

#define A(f) offsetof(prof_args, o.f)
#define P(f) offsetof(prof_args, f)
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
    {"itrace", O_STR, offsetof(prof_args, itrace_str)},
    {"skip-symbolization", O_BOOL, A(skip_symbolization)},
    {"use-offset", O_BOOL, A(use_offset)},
    {"use-first-loadable-segment-as-base", O_BOOL, A(first_loadable_base)},
    {"raw-header", O_BOOL, A(raw_header)}, /* lbr2prof's */
    {"skip-bad-inputs", O_BOOL, A(skip_bad_inputs)}, /* lbr2prof's */
    {"ignore-stack-samples", O_BOOL, A(ignore_stack_samples)},
    {"use-md5", O_BOOL, A(use_md5)},
    {"populate-profile-symbol-list", O_BOOL, A(populate_symbol_list)},
    {"show-detailed-warning", O_BOOL, A(show_detailed_warning)},
    {"show-mmap-events", O_BOOL, A(show_mmap_events)},
    {"strict", O_BOOL, A(strict)}, /* lbr2prof's */
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
    {"csprof-max-unsymbolized-context-depth", O_I64, A(max_unsym_context_depth)},
    {"no-repair-frames", O_BOOL, A(no_repair_frames)},
    {"drop-unknown-callers", O_BOOL, A(drop_unknown_callers)}, /* lbr2prof's */
    {"script-fp-callchains", O_BOOL, A(script_fp_callchains)},
    {"csprof-merge-cold-context", O_TRI, A(cs.merge_cold_context)},
    {"csprof-max-cold-context-depth", O_U32, A(cs.max_cold_context_depth)},
    {"gen-cs-nested-profile", O_BOOL, A(cs.gen_nested)},
    {"generate-merged-base-profiles", O_BOOL, A(cs.merged_base_profiles)},
    {"infer-missing-frames", O_TRI, A(infer_missing_frames)},
    {"max-search-depth", O_U32_OPT, A(max_search_depth)},
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
    {"profile-summary-contextless", O_TRI, A(summary_contextless)},
    {"use-dwarf-correlation", O_BOOL, A(use_dwarf_correlation)},
    {"show-pseudo-probe", O_BOOL, A(show_pseudo_probe)},
    {"load-function-from-symbol", O_BOOL, A(load_function_from_symbol)},
    /* llvm-profgen 19's (HWPGO), gone from 22 */
    {"leading-ip-only", O_BOOL, A(leading_ip_only)},
    {"perf-event", O_EVENT, 0}, {"perf-events", O_EVENT, 0},
    {"sample-period", O_U64, A(sample_period)},
    /* llvm-profgen's, not implemented: refused, never silently ignored */
    {"kernel", O_BOOL, A(kernel)}, {"mark-all-context-preinlined", O_UNSUPP, 0},
    {"data-access-perftrace", O_UNSUPP, 0},
    /* inspection (llvm-profgen's): the listing of the binary, no profile */
    {"show-disassembly-only", O_BOOL, P(show_disasm)},
    {"disassemble-functions", O_FUNCS, 0},
    {"show-source-locations", O_BOOL, P(show_src)},
    {"show-canonical-fname", O_BOOL, P(show_canon)},
    {"x86-asm-syntax", O_STR, P(asm_syntax)},
    {"time-trace", O_BOOL, P(time_trace)}, {"time-profgen", O_BOOL, P(time_trace)},
    {"quiet", O_BOOL, P(quiet)},
    {NULL, 0, 0},
};
#undef A
#undef P

/* ---- --help: every entry of opt_defs, described ------------------------ */

typedef struct opt_help {
    const char *name;
    const char *value;          /* "=<value>" placeholder, "" for flags */
    const char *text;
} opt_help;

/* lbr2prof's own flags say so; the others are llvm-profgen's (22's
 * wording where it has one). */
static const opt_help help_defs[] = {
    {"perfdata", "=<perfdata>", "Path of raw perf data created by Linux perf tool (it should be profiled with -b); read directly, - is standard input (also: the PERF.DATA arguments). Repeatable, or a comma list: several traces (any processes, hosts, load addresses) make one profile, as one recording holding all their samples"},
    {"pd", "=<perfdata>", "Alias for --perfdata"},
    {"perfscript", "=<perfscript>", "Path of perf-script trace created by Linux perf tool with `script` command (the raw perf.data should be profiled with -b); - is standard input"},
    {"ps", "=<perfscript>", "Alias for --perfscript"},
    {"unsymbolized-profile", "=<unsymbolized profile>", "Path of the unsymbolized profile created by `llvm-profgen` with `--skip-symbolization`"},
    {"up", "=<unsymbolized profile>", "Alias for --unsymbolized-profile"},
    {"llvm-sample-profile", "=<llvm sample profile>", "Path of the LLVM sample profile (text) to post-process"},
    {"binary", "=<binary>", "Path of profiled executable binary. Repeatable: the first is the profiled program, the others shared libraries unwound with it (perf.data). Without it, the most sampled user-space file of the trace, found by recorded path, build-id (perf's ~/.debug) or basename"},
    {"debug-binary", "=<debug-binary>", "Path of debug info binary, lbr2prof will load the DWARF info from it instead of the executable binary"},
    {"binaries-from-trace", "", "[lbr2prof] Also every other sampled file found on disk with its recorded build-id and DWARF functions, most sampled first"},
    {"dwp", "=<string>", "Path of .dwp file. When not specified, it will be <binary>.dwp in the same directory as the main binary"},
    {"output", "=<output>", "Output profile file; - is standard output (written atomically)"},
    {"o", "=<output>", "Alias for --output"},
    {"format", "=<value>", "Format of output profile: extbinary (default), text, binary (gcc is refused)"},
    {"itrace", "=<opts>", "[lbr2prof] Intel PT (a perf.data with AUX data): make the samples as perf script --itrace=OPTS does, e.g. i100usl (docs/pt.md)"},
    {"skip-symbolization", "", "Dump the unsymbolized profile to the output file. It will show unwinder output for CS profile generation"},
    {"raw-header", "", "[lbr2prof] With --skip-symbolization: the mergeable raw profile, with '#' lines naming the binaries (build-ids, bases) and the options the counts depend on; `lbr2prof merge` sums such profiles and --unsymbolized-profile reads them (docs/rawmerge.md)"},
    {"skip-bad-inputs", "", "[lbr2prof] With several traces: leave out those that cannot be read to their end (missing, not a trace, truncated, corrupt), each named in a warning with the reason, and make the profile of the others (as `lbr2prof fleet --skip-bad-inputs`); every trace is read once more first, to check it. Not with standard input"},
    {"use-offset", "[=<bool>]", "Work with `--skip-symbolization` or `--unsymbolized-profile` to write/read the offset instead of virtual address (default true)"},
    {"use-first-loadable-segment-as-base", "", "Use first loadable segment address as base address for offsets in unsymbolized profile. By default first executable segment address is used"},
    {"ignore-stack-samples", "", "Ignore call stack samples for hybrid samples and produce context-insensitive profile"},
    {"use-md5", "", "Use md5 to represent function names in the output profile (only meaningful for --format=extbinary)"},
    {"populate-profile-symbol-list", "", "Populate profile symbol list (only meaningful for --format=extbinary)"},
    {"show-detailed-warning", "", "Show detailed warning message"},
    {"show-mmap-events", "", "Print binary load events"},
    {"strict", "", "[lbr2prof] A perf.data cut off (a recording killed, a disk that filled up) is an error; by default its complete records make the profile, with a warning naming the file, the offset and the records read"},
    {"pid", "=<process Id>", "Process Id for the profiled executable binary"},
    {"fill-zero-for-all-funcs", "", "Attribute all functions' range with zero count even it's not hit by any samples"},
    {"update-total-samples", "", "Update total samples by accumulating all its body samples"},
    {"trim-cold-profile", "", "If the total count of the profile is smaller than threshold, it will be trimmed"},
    {"profile-summary-hot-count", "=<uint>", "A fixed hot count that overrides the count derived from profile-summary-cutoff-hot"},
    {"profile-summary-cold-count", "=<uint>", "A fixed cold count that overrides the count derived from profile-summary-cutoff-cold"},
    {"profile-summary-cutoff-hot", "=<uint>", "A count is hot if it exceeds the minimum count to reach this percentile of total counts (x 10^4, default 990000)"},
    {"profile-summary-cutoff-cold", "=<uint>", "A count is cold if it is below the minimum count to reach this percentile of total counts (x 10^4, default 999999)"},
    {"profile-density-threshold", "=<number>", "If the profile density is below the given threshold, it will be suggested to increase the sampling rate"},
    {"profile-density-cutoff-hot", "=<int>", "Total samples cutoff for functions used to calculate profile density"},
    {"show-density", "", "show profile density details"},
    {"compress-recursion", "=<int>", "Compressing recursion by deduplicating adjacent frame sequences up to the specified size. -1 means no size limit"},
    {"csprof-max-context-depth", "=<int>", "Keep the last K contexts while merging profile. -1 means no depth limit"},
    {"csprof-max-unsymbolized-context-depth", "=<int>", "Keep the last K contexts while merging unsymbolized profile. -1 means no depth limit"},
    {"no-repair-frames", "", "[lbr2prof] Do not put back the caller a frame-pointer walk misses at function entry/exit, nor follow signal frames: llvm-profgen's unwinding exactly"},
    {"drop-unknown-callers", "", "[lbr2prof] Drop code whose callers are not known instead of keeping it in contexts truncated at the unknown frame"},
    {"script-fp-callchains", "", "[lbr2prof] The perf script text's callchains are kernel frame-pointer walks (perf record -g): repair what a perf.data's markers would allow"},
    {"csprof-merge-cold-context", "[=<bool>]", "If the total count of context profile is smaller than the threshold, it will be merged into context-less base profile (default true, false with the pre-inliner unless given)"},
    {"csprof-max-cold-context-depth", "=<uint>", "Keep the last K contexts while merging cold profile. 1 means the context-less base profile"},
    {"gen-cs-nested-profile", "[=<bool>]", "Generate nested function profiles for CSSPGO (default true)"},
    {"generate-merged-base-profiles", "", "When generating nested context-sensitive profiles, always generate extra base profile for function with all its context profiles merged into it"},
    {"infer-missing-frames", "[=<bool>]", "Infer missing call frames due to compiler tail call elimination (default true; context-sensitive pseudo-probe profiles only, as llvm-profgen 22: elsewhere a warning says it had no effect)"},
    {"max-search-depth", "=<uint>", "The maximum levels the DFS-based missing frame search should go with"},
    {"csspgo-preinliner", "[=<bool>]", "Run a global pre-inliner to merge context profile based on estimated global top-down inline decisions (default true)"},
    {"use-context-cost-for-preinliner", "[=<bool>]", "Use context-sensitive byte size cost for preinliner decisions (default true)"},
    {"csspgo-replay-preinline", "", "Replay previous inlining and adjust context profile accordingly"},
    {"csspgo-preinliner-multiplier-for-previous-inlining", "=<int>", "Multiplier to bump up callsite threshold for previous inlining"},
    {"sample-profile-hot-inline-threshold", "=<int>", "Hot callsite threshold for the pre-inliner (default 1500)"},
    {"sample-profile-cold-inline-threshold", "=<int>", "Threshold for inlining cold callsites (default 0)"},
    {"sample-profile-inline-limit-max", "=<int>", "The upper bound of size growth limit for proirity-based sample profile loader inlining (default 50000)"},
    {"sample-profile-inline-limit-min", "=<int>", "The lower bound of size growth limit for proirity-based sample profile loader inlining (default 100)"},
    {"sample-profile-inline-growth-limit", "=<int>", "The size growth ratio limit for proirity-based sample profile loader inlining (default 12)"},
    {"sort-profiled-scc-member", "[=<bool>]", "Sort profiled recursion by edge weights (default true)"},
    {"cs-fold-recursion", "", "[lbr2prof] When the pre-inliner promotes a context to its base profile, unlink it before merging its children, so recursive contexts are not merged into themselves (which loses samples or never ends in llvm-profgen)"},
    {"profile-summary-contextless", "[=<bool>]", "false: the binary summary of a context-sensitive profile that is not nested (--gen-cs-nested-profile=false) is computed per context, not merged by function"},
    {"use-dwarf-correlation", "", "Use dwarf for profile correlation even when binary contains pseudo probe"},
    {"show-pseudo-probe", "", "Print pseudo probe section and disassembled info"},
    {"load-function-from-symbol", "", "Gather additional binary function info "
     "from symbols (e.g. .symtab) in case dwarf info is incomplete (pseudo-probe "
     "binaries; default true)"},
    {"leading-ip-only", "", "[llvm-profgen 19] Form a profile based only on sample IPs"},
    {"perf-event", "=<event>", "[llvm-profgen 19] Ignore samples not matching the given event names (repeatable)"},
    {"perf-events", "=<e1,e2>", "[llvm-profgen 19] Comma-delimited version of --perf-event"},
    {"sample-period", "=<uint>", "[llvm-profgen 19] The sampling period (-c) used for perf data; counts are scaled by it"},
    {"kernel", "", "Generate the profile for Linux kernel binary (--binary=VMLINUX, placed by the [kernel.kallsyms] mmap in every process)"},
    {"mark-all-context-preinlined", "", "Not supported (refused): mark all function samples as preinlined"},
    {"data-access-perftrace", "=<path>", "Not supported (refused): vtable profiles from memory access events"},
    {"show-disassembly-only", "", "Print disassembled code of the binary and stop (no trace is read, no profile written)"},
    {"disassemble-functions", "=<string>", "List of functions to print disassembly for (comma-separated, repeatable). Accept demangled names only. Only work with show-disassembly-only"},
    {"show-source-locations", "", "Print source locations (the inline context, leaf first). Only work with show-disassembly-only"},
    {"show-canonical-fname", "", "Print canonical function name. Only work with show-disassembly-only"},
    {"x86-asm-syntax", "=<att>", "Syntax of the disassembly: att (the only one printed). Only work with show-disassembly-only"},
    {"time-trace", "", "[lbr2prof] Print the wall and CPU time of each phase (opening the binaries, reading, unwinding, generation, pre-inlining, post-processing, writing) on stderr"},
    {"time-profgen", "", "Alias for --time-trace (llvm-profgen's phase timer)"},
    {"quiet", "", "[lbr2prof] No progress line: without it, a run longer than 2 s shows one on stderr when stderr is a terminal"},
    {"help", "", "Display available options (every flag of the command)"},
    {"h", "", "Alias for --help"},
    {NULL, NULL, NULL},
};

static const opt_help *help_for(const char *name)
{
    for (const opt_help *h = help_defs; h->name; h++)
        if (!strcmp(h->name, name))
            return h;
    return NULL;
}

/* One option the way LLVM's --help prints it: "  --name=<v>  - text". */
static void help_line(const char *name, int width)
{
    const opt_help *h = help_for(name);
    char left[96];

    snprintf(left, sizeof left, "%s%s%s", strlen(name) > 1 ? "--" : "-",
             name, h ? h->value : "");
    printf("  %-*s - %s\n", width, left, h ? h->text : "(undocumented)");
}

/* Every entry of opt_defs in table order, then --help: the list of what
 * the parser accepts, made from the table itself. */
static void print_help(void)
{
    int width = 0;
    const opt_def *d;

    for (d = opt_defs; d->name; d++) {
        const opt_help *h = help_for(d->name);
        int w = (int)(strlen(d->name) + 2 + (h ? strlen(h->value) : 0));
        width = w > width ? w : width;
    }
    printf("OVERVIEW: lbr2prof profile - an LLVM sample profile from perf LBR "
           "samples, with llvm-profgen's command line\n\n"
           "USAGE: lbr2prof [profile] [PERF.DATA] [options]\n\n"
           "  Input: a PERF.DATA argument or one of the input flags (perfdata,"
           " perfscript,\n  unsymbolized-profile, llvm-sample-profile). "
           "Output: the output flag (-o).\n  Flags marked [lbr2prof] are "
           "lbr2prof's own, [llvm-profgen 19] llvm-profgen 19's\n  (not in "
           "22); the others are llvm-profgen 22's. Boolean flags take "
           "=true/=false\n  (also 1/0).\n\nOPTIONS:\n");
    for (d = opt_defs; d->name; d++)
        help_line(d->name, width);
    help_line("help", width);
    help_line("h", width);
}

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

/* A comma-separated value appended to v[*n] (cl::list, CommaSeparated):
 * --perf-event=E (repeatable), --perf-events=E1,E2,
 * --disassemble-functions=a,b. */
static int add_list(char **v, size_t *n, size_t max, const char *val)
{
    const char *p = val, *c;

    for (;;) {
        c = strchr(p, ',');
        if (*n == max)
            return -1;
        if (!(v[*n] = strndup(p, c ? (size_t)(c - p) : strlen(p))))
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
    case O_U32: case O_U32_OPT: {  /* cl::opt<uint32_t>: no sign, <= 2^32-1 */
        unsigned long long x = strtoull(v, &e, 10);
        if (*e || !*v || v[0] == '-' || x > UINT32_MAX)
            return -1;
        if (d->kind == O_U32)
            *(uint32_t *)base = (uint32_t)x;
        else
            *(int64_t *)base = (int64_t)x;
        return 0;
    }
    case O_U64:
        *(uint64_t *)base = strtoull(v, &e, 10);
        a->o.have_sample_period = true;
        return *e || !*v || v[0] == '-' ? -1 : 0;
    case O_EVENT: return add_list(a->events, &a->o.nr_events, MAX_EVENTS, v);
    case O_FUNCS: return add_list(a->funcs, &a->nfuncs, MAX_FUNCS, v);
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
    if (d->kind == O_BOOL || d->kind == O_TRI) {
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
            print_help();
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

/* The listing needs the binary only; its companions need the listing
 * (llvm-profgen refuses --show-source-locations alone and silently
 * ignores the others). */
static int validate_listing(const prof_args *pa)
{
    const char *alone = pa->show_src ? "--show-source-locations"
                        : pa->show_canon ? "--show-canonical-fname"
                        : pa->nfuncs ? "--disassemble-functions"
                        : pa->asm_syntax ? "--x86-asm-syntax" : NULL;
    struct stat st;

    if (pa->asm_syntax && strcmp(pa->asm_syntax, "att") != 0)
        return bad_usage("--x86-asm-syntax=%s: the listing is printed in "
                         "AT&T syntax only (att)", pa->asm_syntax);
    if (!pa->show_disasm && alone)
        return bad_usage("%s should work together with "
                         "--show-disassembly-only!", alone);
    if (!pa->show_disasm)
        return 0;
    if (!pa->o.nbinaries)
        return bad_usage("%s", "--show-disassembly-only needs --binary");
    for (size_t i = 0; i < pa->o.nbinaries; i++)
        if (stat(pa->binaries[i], &st) != 0)
            return bad_usage("Input binary(%s) doesn't exist.",
                             pa->binaries[i]);
    return 0;
}

/* The traces after the first: files (at most one "-" in all, with a
 * --binary; none with --skip-bad-inputs, which reads every trace twice and
 * checks that they exist itself); --raw-header only with
 * --skip-symbolization. */
static int check_more_traces(const prof_args *pa)
{
    size_t i, nstdin = 0;
    struct stat st;

    for (i = 0; i < pa->ntraces; i++) {
        if (strcmp(pa->traces[i], "-") == 0)
            nstdin++;
        else if (i > 0 && !pa->o.skip_bad_inputs && stat(pa->traces[i], &st) != 0)
            return bad_usage("Input perf file does not exist: %s", pa->traces[i]);
    }
    if (pa->o.skip_bad_inputs && pa->ntraces == 0)
        return bad_usage("%s", "--skip-bad-inputs leaves out unreadable traces "
                               "(perf.data or --perfscript inputs); this run has none");
    if (pa->o.skip_bad_inputs && nstdin)
        return bad_usage("%s", "--skip-bad-inputs reads every trace twice (a "
                               "check, then the run): not standard input (-)");
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
    if (!a->nbinaries && a->kernel)
        return bad_usage("%s", "--kernel needs --binary=VMLINUX (the kernel image "
                               "with DWARF, as built; it is not found from the trace)");
    if (strcmp(in, "-") != 0 && !a->skip_bad_inputs && stat(in, &st) != 0)
        return bad_usage("Input perf file does not exist: %s", in);
    if (check_more_traces(pa))
        return -1;
    if (a->compress_recursion < -1)
        return bad_usage("%s", "Value of --compress-recursion should >= -1");
    if (pa->itrace_str) {
        lp_error e;
        if (!a->perfdata || strcmp(in, "-") == 0)
            return bad_usage("%s", "--itrace needs a perf.data file");
        if (lp_itrace_parse(pa->itrace_str, &pa->itrace, &e) < 0)
            return bad_usage("%s", e.msg);
        pa->o.itrace = &pa->itrace;
    }
    return output_format(pa, &pa->o.format);
}

/* ---- the listing ------------------------------------------------------------ */

/* --show-disassembly-only: each binary's listing on stdout, its load
 * warnings on stderr; no trace is read and no profile written. */
static int show_disassembly(const prof_args *a)
{
    lp_binary_opts bo = {a->o.debug_binary, a->o.dwp, -1, 0};
    lp_listing_opts lo = {0};
    lp_error err = {0};
    const char *w;

    lo.functions = (const char *const *)a->funcs;
    lo.nfunctions = a->nfuncs;
    lo.source_locations = a->show_src;
    lo.canonical_names = a->show_canon;
    for (size_t i = 0; i < a->o.nbinaries; i++) {
        lp_binary *b = lp_binary_open(a->binaries[i], i ? NULL : &bo, &err);
        if (!b)
            return lp_cli_fail(&err);
        lo.name = a->binaries[i];
        int rc = lp_binary_print_listing(b, &lo, stdout, &err);
        for (size_t k = 0; (w = lp_binary_warning(b, k)); k++)
            lp_cli_warn(NULL, w);
        lp_binary_close(b);
        if (rc)
            return lp_cli_fail(&err);
    }
    return 0;
}

/* ---- the command ---------------------------------------------------------- */

/* The run's memory is freed at the end only for leak checkers (builds
 * with AddressSanitizer): else the process exits with it, as git's UNLEAK
 * and clang's -disable-free do - on a large CS profile the frees were
 * 0.05 s of wall time (the context trie's, on a second thread while the
 * profile was written, contending for malloc's arena, then waited for). */
#if defined(__SANITIZE_ADDRESS__)            /* gcc */
#define FREE_AT_EXIT true
#elif defined(__has_feature)                   /* clang */
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define FREE_AT_EXIT true
#endif
#endif
#ifndef FREE_AT_EXIT
#define FREE_AT_EXIT false
#endif

static void free_args(prof_args *a)
{
    while (a->o.nr_events > 0)
        free(a->events[--a->o.nr_events]);
    while (a->nfuncs > 0)
        free(a->funcs[--a->nfuncs]);
    while (a->ntraces > 0)
        free(a->traces[--a->ntraces]);
    free(a->traces);
}

int cmd_profile(int argc, char **argv)
{
    lp_error err = {0};
    lp_profgen_result r = {0};
    lp_cli_progress prog;
    lp_phases ph;
    prof_args a;
    int k = parse_args(&a, argc, argv);

    if (k == 0 && validate_listing(&a))
        k = -1;
    if (k == 0 && a.show_disasm) {
        k = show_disassembly(&a);
        free_args(&a);
        return k;
    }
    if (k == 0 && (set_traces(&a) || validate(&a)))
        k = -1;
    lp_cli_progress_init(&prog, a.quiet);
    lp_phases_init(&ph, prog.enabled ? lp_cli_progress_fn : NULL, &prog, 0.2);
    a.o.warn = lp_cli_progress_warn;
    a.o.warn_ctx = &prog;
    a.o.note = lp_cli_progress_note;
    a.o.note_ctx = &prog;
    a.o.info = stdout;
    a.o.phases = &ph;
    a.o.cs.exiting = !FREE_AT_EXIT;
    if (k == 0 && (lp_profgen_run(&a.o, &r, &err) ||
                   lp_profgen_write(&a.o, &r, &err)))
        k = -2;
    if (FREE_AT_EXIT)
        lp_profgen_result_free(&r);
    lp_phases_end(&ph);
    if (k == 0 && a.time_trace)
        lp_phases_print(&ph, "lbr2prof profile: time per phase", stderr);
    free_args(&a);
    return k == 0 || k == 1 ? 0 : k == -1 ? 2 : lp_cli_fail(&err);
}
