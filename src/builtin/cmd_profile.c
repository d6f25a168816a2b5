/*
 * cmd_profile.c - `lbr2prof profile` (and the default command): perf.data
 * or perf script text + the profiled binary -> an LLVM sample profile,
 * with llvm-profgen 19's command line (`--perfdata=`, `--perfscript=`,
 * `--unsymbolized-profile=`, `--binary=`, `--output=`/`-o`, `--format=`...)
 * and its flat (LBR-only) semantics; hybrid samples (call stacks + LBR) go
 * to the virtual unwinder (context-sensitive counters). Owns option parsing
 * and the order of the pipeline stages; the work is in src/flat,
 * src/unwind, src/writer, src/binary.
 * LP_BUILTIN(profile, cmd_profile, "make an LLVM sample profile from LBR samples; llvm-profgen flags")
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/builtin.h"
#include "lbr2prof/binary.h"
#include "lbr2prof/csprofile.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/flat.h"
#include "lbr2prof/machine.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/profile.h"
#include "lbr2prof/reader.h"
#include "lbr2prof/unwind.h"

/* ---- options ---------------------------------------------------------- */

#define MAX_EVENTS 64

typedef struct prof_args {
    const char *perfdata, *perfscript, *unsym, *llvm_prof;
    const char *binary, *debug_binary, *dwp, *output, *format;
    bool skip_symbolization, use_offset, first_loadable_base;
    bool ignore_stack_samples, use_md5, populate_symbol_list;
    bool show_detailed_warning, show_mmap_events, use_dwarf_correlation;
    int64_t pid;
    bool leading_ip_only;
    uint64_t sample_period;
    bool have_sample_period;
    char *events[MAX_EVENTS];   /* --perf-event / --perf-events filter */
    size_t nr_events;
    lp_flat_opts flat;
    int64_t compress_recursion, max_context_depth;  /* CS, -1 unlimited */
    bool no_repair_frames;
    lp_cs_opts cs;              /* context-sensitive generation options */
} prof_args;

enum opt_kind { O_STR, O_BOOL, O_I64, O_U32, O_U64, O_DBL, O_EVENT,
                O_INT, O_TRI, O_IGNORED, O_UNSUPP };

typedef struct opt_def {
    const char *name;
    enum opt_kind kind;
    size_t off;            /* offset in prof_args */
} opt_def;

#define A(f) offsetof(prof_args, f)
static const opt_def opt_defs[] = {
    {"perfdata", O_STR, A(perfdata)}, {"pd", O_STR, A(perfdata)},
    {"perfscript", O_STR, A(perfscript)}, {"ps", O_STR, A(perfscript)},
    {"unsymbolized-profile", O_STR, A(unsym)}, {"up", O_STR, A(unsym)},
    {"llvm-sample-profile", O_STR, A(llvm_prof)},
    {"binary", O_STR, A(binary)}, {"debug-binary", O_STR, A(debug_binary)},
    {"dwp", O_STR, A(dwp)}, {"output", O_STR, A(output)},
    {"o", O_STR, A(output)}, {"format", O_STR, A(format)},
    {"skip-symbolization", O_BOOL, A(skip_symbolization)},
    {"use-offset", O_BOOL, A(use_offset)},
    {"use-first-loadable-segment-as-base", O_BOOL, A(first_loadable_base)},
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
    "usage: lbr2prof [profile] PERF.DATA -o OUT [--binary=PATH] [options]\n"
    "       lbr2prof --perfscript=FILE|--perfdata=FILE|--unsymbolized-profile=FILE\n"
    "       (PERF.DATA or FILE may be - for stdin, e.g. perf record -o - | lbr2prof -)\n"
    "                --binary=PATH --output=OUT [llvm-profgen options]\n"
    "options (as llvm-profgen 19): --format=extbinary|text|binary, --use-md5,\n"
    "  --skip-symbolization, --use-offset=BOOL, --use-first-loadable-segment-as-base,\n"
    "  --ignore-stack-samples, --update-total-samples, --fill-zero-for-all-funcs,\n"
    "  --populate-profile-symbol-list, --trim-cold-profile, --pid=N,\n"
    "  --profile-summary-cold-count=N, --profile-summary-hot-count=N,\n"
    "  --show-detailed-warning, --show-density, --debug-binary=PATH,\n"
    "  --llvm-sample-profile=FILE, --leading-ip-only, --perf-event=EVENT,\n"
    "  --sample-period=N, --use-dwarf-correlation\n"
    "hybrid samples (call stacks + LBR): --compress-recursion=N,\n"
    "  --csprof-max-context-depth=N, --no-repair-frames (do not put back the\n"
    "  caller a frame-pointer walk misses at function entry/exit)\n"
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

    for (;;) {
        c = strchr(p, ',');
        if (a->nr_events == MAX_EVENTS)
            return -1;
        if (!(a->events[a->nr_events] = strndup(p, c ? (size_t)(c - p) : strlen(p))))
            return -1;
        a->nr_events++;
        if (!c)
            return 0;
        p = c + 1;
    }
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
        a->have_sample_period = true;
        return *e || !*v || v[0] == '-' ? -1 : 0;
    case O_EVENT: return add_events(a, v);
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
    a->use_offset = true;
    a->pid = -1;
    a->compress_recursion = a->max_context_depth = -1;
    lp_flat_opts_default(&a->flat);
    lp_cs_opts_default(&a->cs);
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
        if (a->perfdata)
            return bad_usage("more than one input: '%s'", argv[i]);
        a->perfdata = argv[i++];
    }
    return 0;
}

/* ---- input -------------------------------------------------------------- */

static void print_warning(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "warning: %s\n", msg);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');

    return s ? s + 1 : p;
}

/* The sample's process for the address map: perf script text and
 * perf.data without TID have none (llvm-profgen's single base applies). */
static uint32_t sample_pid(const lp_sample *s)
{
    return (s->sample_type & LP_SAMPLE_TID) ? s->pid : LP_ADDRMAP_ANY_PID;
}

/* One sample: hybrid ones (with a call stack) to the unwinder `uw` unless
 * the stacks are ignored (then uw is NULL); `markers`: the callchain is a
 * perf.data one, with PERF_CONTEXT_* markers. */
static int feed_sample(const prof_args *a, lp_lbr_agg *agg, lp_unwinder *uw,
                       bool markers, const lp_sample *s, lp_error *err)
{
    uint64_t n = s->repeat ? s->repeat : 1;
    size_t i;

    if (a->nr_events > 0 && s->attr && s->attr->name) {
        for (i = 0; i < a->nr_events; i++)
            if (strcmp(a->events[i], s->attr->name) == 0)
                break;
        if (i == a->nr_events)
            return 0; /* filtered out by --perf-event */
    }
    if (a->leading_ip_only) {
        /* a hybrid sample's LBR line has no leading IP: nothing to count */
        if (!(s->sample_type & LP_SAMPLE_IP) || s->branch_nr == 0 ||
            s->callchain_nr > 0)
            return 0;
        return lp_lbr_agg_ip_sample(agg, s->ip, n, err);
    }
    if (s->callchain_nr > 0 && uw) {
        lp_hybrid_sample h = {.stack = s->callchain, .nstack = s->callchain_nr,
                              .markers = markers, .fp_walk = markers,
                              .br = s->branches, .nbr = s->branch_nr,
                              .pid = sample_pid(s), .repeat = n,
                              .regs_stack = s->stack_user_size ? s : NULL};
        return lp_unwind_sample(uw, &h, err);
    }
    if (s->callchain_nr > 0)
        return lp_lbr_agg_stack_sample(agg, s->callchain, s->callchain_nr,
                                       s->branches, s->branch_nr, n, err);
    return lp_lbr_agg_sample(agg, s->branches, s->branch_nr, n, err);
}

/* Events after which the address map may resolve differently. */
static bool changes_map(const lp_event *ev)
{
    return ev->kind == LP_EV_MMAP || (ev->kind == LP_EV_COMM && ev->u.comm.exec) ||
           (ev->kind == LP_EV_FORK && ev->u.task.pid != ev->u.task.ppid);
}

/* One pass over the trace. perf.data: every event goes to the per-process
 * address map `map` (NULL for perf script text, where the aggregator's own
 * single-base map follows the mmaps). */
static int read_trace(const prof_args *a, lp_lbr_agg *agg, lp_unwinder *uw,
                      lp_addrmap *map, lp_error *err)
{
    const char *path = a->perfdata ? a->perfdata : a->perfscript;
    lp_reader_opts ro = {0};
    const lp_file_info *info;
    const lp_event *ev;
    lp_reader *r;
    size_t nids = 0;
    int k;

    ro.force_text = a->perfscript != NULL;
    ro.skip_payloads = !uw; /* the unwinder reads user registers and stacks */
    if (!(r = lp_reader_open(path, &ro, err)))
        return -1;
    info = lp_reader_info(r);
    while ((k = lp_reader_next(r, &ev, err)) == 1) {
        /* file mode: the header's table; pipe mode: HEADER_BUILD_IDs */
        if (map && info->nr_build_ids > nids &&
            lp_addrmap_add_build_ids(map, info->build_ids + nids,
                                     info->nr_build_ids - nids, err))
            break;
        nids = info->nr_build_ids;
        if (map && changes_map(ev) &&
            (lp_lbr_agg_flush(agg, err) || lp_addrmap_event(map, ev, err)))
            break;
        if (ev->kind == LP_EV_MMAP) {
            if (a->show_mmap_events &&
                (a->pid < 0 || (int64_t)ev->u.mmap.pid == a->pid))
                printf("Mmap: Binary %s loaded at 0x%" PRIx64 ": \n",
                       ev->u.mmap.filename, ev->u.mmap.start);
            if (lp_lbr_agg_mmap(agg, &ev->u.mmap, err) ||
                (uw && lp_unwind_mmap(uw, &ev->u.mmap, err)))
                break;
        } else if (ev->kind == LP_EV_SAMPLE) {
            lp_lbr_agg_set_pid(agg, sample_pid(&ev->u.sample));
            if (feed_sample(a, agg, uw, !ro.force_text &&
                            info->format != LP_FMT_PERF_SCRIPT,
                            &ev->u.sample, err))
                break;
        }
    }
    if (uw && (ro.force_text || info->format == LP_FMT_PERF_SCRIPT))
        lp_unwind_set_total_samples(uw, lp_reader_stats_get(r)->text_sample_starts);
    if (k == 1)
        k = -1;
    lp_reader_close(r);
    return k < 0 ? -1 : 0;
}

/* ---- finding the binary (no --binary) ------------------------------------ */

typedef struct file_hits {      /* samples whose IP fell in a mapped file */
    char *path;
    uint64_t hits;
    uint8_t build_id[20];       /* as recorded (MMAP2 or BUILD_ID table) */
    uint8_t build_id_size;
} file_hits;

typedef struct text_map {       /* an mmap line of a perf script */
    uint64_t start, end;
    char *path;
} text_map;

typedef struct hit_table {
    file_hits *v;
    size_t n, cap;
    text_map *maps;             /* for samples without a pid (perf script) */
    size_t nmaps, mcap;
} hit_table;

static int add_text_map(hit_table *t, const lp_mmap_event *m)
{
    text_map *nv;

    if (!m->filename || m->filename[0] != '/')
        return 0;
    if (t->nmaps == t->mcap) {
        t->mcap = t->mcap ? t->mcap * 2 : 16;
        if (!(nv = realloc(t->maps, t->mcap * sizeof *nv)))
            return -1;
        t->maps = nv;
    }
    if (!(t->maps[t->nmaps].path = strdup(m->filename)))
        return -1;
    t->maps[t->nmaps].start = m->start;
    t->maps[t->nmaps++].end = m->start + m->len;
    return 0;
}

/* the latest text mmap covering addr */
static const char *text_map_find(const hit_table *t, uint64_t addr)
{
    size_t i;

    for (i = t->nmaps; i-- > 0;)
        if (addr >= t->maps[i].start && addr < t->maps[i].end)
            return t->maps[i].path;
    return NULL;
}

static int add_hit(hit_table *t, const char *path, const lp_map *mp)
{
    file_hits *nv;
    size_t i;

    for (i = 0; i < t->n; i++)
        if (strcmp(t->v[i].path, path) == 0) {
            t->v[i].hits++;
            return 0;
        }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        if (!(nv = realloc(t->v, t->cap * sizeof *nv)))
            return -1;
        t->v = nv;
    }
    if (!(t->v[t->n].path = strdup(path)))
        return -1;
    t->v[t->n].build_id_size = mp ? mp->build_id_size : 0;
    if (mp)
        memcpy(t->v[t->n].build_id, mp->build_id, sizeof mp->build_id);
    t->v[t->n++].hits = 1;
    return 0;
}

static int count_sample(hit_table *t, const lp_machine *m, const lp_event *ev)
{
    const lp_sample *s = &ev->u.sample;
    const lp_map *mp;

    const char *f;

    if (!(s->sample_type & LP_SAMPLE_IP) || s->branch_nr == 0)
        return 0;
    if (!(s->sample_type & LP_SAMPLE_TID))
        return (f = text_map_find(t, s->ip)) ? add_hit(t, f, NULL) : 0;
    mp = lp_machine_find_map(m, s->pid, s->ip, ev->misc & LP_MISC_CPUMODE_MASK);
    if (!mp || mp->kernel || mp->anon || !mp->filename || mp->filename[0] != '/')
        return 0;
    return add_hit(t, mp->filename, mp);
}

/* Whether the ELF file at `path` has build-id `id` (or no id is known). */
static bool id_matches(const char *path, const file_hits *h)
{
    lp_binary *b;
    const uint8_t *id;
    size_t n;
    bool ok;

    if (!h->build_id_size)
        return true;
    if (!(b = lp_binary_open(path, NULL, NULL)))
        return false;
    n = lp_binary_build_id(b, &id);
    ok = n >= h->build_id_size && memcmp(id, h->build_id, h->build_id_size) == 0;
    lp_binary_close(b);
    return ok;
}

/* perf's build-id cache: ~/.debug/.build-id/xx/yyyy.../elf */
static char *cache_path(const file_hits *h)
{
    const char *home = getenv("HOME");
    char hex[41], *p;
    size_t i;

    if (!h->build_id_size || !home)
        return NULL;
    for (i = 0; i < h->build_id_size; i++)
        sprintf(hex + 2 * i, "%02x", h->build_id[i]);
    if (asprintf(&p, "%s/.debug/.build-id/%.2s/%s/elf", home, hex, hex + 2) < 0)
        return NULL;
    return p;
}

/* Where the recorded file is now: its recorded path, perf's build-id
 * cache, its basename next to the trace, its basename in the current
 * directory; the first readable one whose build-id is the recorded one,
 * else the first readable one (the address map then reports the
 * mismatch). NULL if none (malloc'ed result). */
static char *locate(const file_hits *h, const char *trace)
{
    const char *slash = strrchr(trace, '/'), *bn = base_name(h->path);
    char *cand[4] = {strdup(h->path), cache_path(h), NULL, strdup(bn)}, *best = NULL;
    size_t i;

    if (slash && asprintf(&cand[2], "%.*s/%s", (int)(slash - trace), trace, bn) < 0)
        cand[2] = NULL;
    for (i = 0; i < 4 && !best; i++)
        if (cand[i] && access(cand[i], R_OK) == 0 && id_matches(cand[i], h))
            best = cand[i];
    for (i = 0; i < 4 && !best; i++)
        if (cand[i] && access(cand[i], R_OK) == 0)
            best = cand[i];
    for (i = 0; i < 4; i++)
        if (cand[i] != best)
            free(cand[i]);
    return best;
}

/* The user-space file that holds the most sampled IPs (with branch
 * stacks), found at its recorded path or by basename (see locate). */
static char *find_binary(const char *path, int text, lp_error *err)
{
    lp_reader_opts ro = {0};
    hit_table t = {0};
    lp_machine *m = lp_machine_new(LP_MACHINE_KEEP_MAPS_ON_EXEC, err);
    lp_reader *r;
    const lp_event *ev;
    char *best = NULL;
    size_t i, b = 0;
    int k = -1;

    ro.force_text = text;
    ro.skip_payloads = 1;
    if (m && (r = lp_reader_open(path, &ro, err))) {
        while ((k = lp_reader_next(r, &ev, err)) == 1) {
            if (lp_machine_process_event(m, ev, err) ||
                (ev->kind == LP_EV_MMAP && add_text_map(&t, &ev->u.mmap) &&
                 lp_error_set(err, LP_ENOMEM, "out of memory")) ||
                (ev->kind == LP_EV_SAMPLE && count_sample(&t, m, ev) &&
                 lp_error_set(err, LP_ENOMEM, "out of memory"))) {
                k = -1;
                break;
            }
        }
        lp_reader_close(r);
    }
    for (i = 0; i < t.n; i++)
        if (t.v[i].hits > t.v[b].hits)
            b = i;
    if (k == 0 && t.n == 0)
        lp_error_set(err, LP_EFORMAT, "%s: no sample with a branch stack falls "
                     "in a mapped file; pass --binary", path);
    else if (k == 0 && !(best = locate(&t.v[b], path)))
        lp_error_set(err, LP_EIO, "%s: the most sampled binary is %s, which is "
                     "neither there nor next to the trace nor in the current "
                     "directory; pass --binary", path, t.v[b].path);
    for (i = 0; i < t.n; i++)
        free(t.v[i].path);
    for (i = 0; i < t.nmaps; i++)
        free(t.maps[i].path);
    free(t.v);
    free(t.maps);
    lp_machine_free(m);
    return best;
}

/* ---- output ------------------------------------------------------------- */

static int output_format(const prof_args *a, lp_prof_format *f)
{
    const char *s = a->format ? a->format : "extbinary";

    if (!strcmp(s, "text"))
        *f = LP_PROF_TEXT;
    else if (!strcmp(s, "extbinary"))
        *f = LP_PROF_EXTBINARY;
    else if (!strcmp(s, "binary"))
        *f = LP_PROF_BINARY;
    else if (!strcmp(s, "gcc"))
        return bad_usage("%s: Profile encoding format unsupported for writing "
                         "operations", s);
    else
        return bad_usage("Cannot find option named '%s' for --format", s);
    return 0;
}

static int write_profile(const prof_args *a, lp_binary *bin, lp_profile *p,
                         lp_error *err)
{
    lp_write_opts wo = {0};
    const lp_function *const *funcs;
    const char **names = NULL;
    lp_outfile out;
    size_t i, n = 0;
    int rc;

    output_format(a, &wo.format);
    if (a->use_md5 && wo.format != LP_PROF_EXTBINARY)
        print_warning(NULL, "-use-md5 is ignored. Specify --format=extbinary to "
                            "enable it");
    wo.use_md5 = a->use_md5 && wo.format == LP_PROF_EXTBINARY;
    wo.fs_discriminator = bin && lp_binary_fs_discriminator(bin);
    if (a->populate_symbol_list && wo.format == LP_PROF_EXTBINARY && bin) {
        n = lp_binary_functions(bin, &funcs);
        if (!(names = calloc(n ? n : 1, sizeof *names)))
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        for (i = 0; i < n; i++)
            names[i] = funcs[i]->name;
        wo.symbol_list = names;
        wo.nr_symbols = n;
    }
    rc = lp_outfile_open(&out, a->output, err);
    if (rc == 0 && (rc = lp_profile_write(out.fp, p, &wo, err)) == 0)
        rc = lp_outfile_commit(&out, err);
    else if (rc == 0 || out.fp)
        lp_outfile_abort(&out);
    free(names);
    return rc;
}

static int write_raw(const prof_args *a, lp_binary *bin, const lp_counters *c,
                     lp_error *err)
{
    uint64_t base = !a->use_offset ? 0
                    : a->first_loadable_base ? lp_binary_first_loadable(bin)
                                             : lp_binary_preferred_base(bin);
    lp_outfile out;

    if (lp_outfile_open(&out, a->output, err))
        return -1;
    if (lp_rawprof_write(out.fp, c, base, err)) {
        lp_outfile_abort(&out);
        return -1;
    }
    return lp_outfile_commit(&out, err);
}

/* ---- context-sensitive unsymbolized input ------------------------------------ */

/* llvm-profgen treats an unsymbolized profile as CS once it sees a
 * "[context]" header line. */
static int raw_is_cs(const char *path, lp_error *err)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int cs = 0;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: cannot open", path);
    while (!cs && getline(&line, &cap, f) >= 0)
        cs = line[0] == '[';
    free(line);
    fclose(f);
    return cs;
}

static void cs_opts(const prof_args *a, lp_cs_opts *o)
{
    *o = a->cs;
    o->update_total_samples = a->flat.update_total_samples;
    o->trim_cold_profile = a->flat.trim_cold_profile;
    o->hot_count = a->flat.hot_count;
    o->cold_count = a->flat.cold_count;
    o->cutoff_hot = a->flat.cutoff_hot;
    o->cutoff_cold = a->flat.cutoff_cold;
    o->density_threshold = a->flat.density_threshold;
    o->density_cutoff_hot = a->flat.density_cutoff_hot;
    o->show_density = a->flat.show_density;
    o->warn = print_warning;
    o->info = stdout;
}

static uint64_t raw_base(const prof_args *a, lp_binary *bin)
{
    return !a->use_offset ? 0
           : a->first_loadable_base ? lp_binary_first_loadable(bin)
                                    : lp_binary_preferred_base(bin);
}

/* --unsymbolized-profile with contexts: read, generate, post-process. */
static int run_cs_unsym(const prof_args *a, lp_binary *bin, lp_error *err)
{
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_profile *p = NULL;
    lp_outfile out;
    lp_cs_opts o;
    bool is_cs;
    FILE *f;
    int rc;

    cs_opts(a, &o);
    if (!cc)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    if (!(f = fopen(a->unsym, "r"))) {
        lp_ctxcount_free(cc);
        return lp_error_set(err, LP_EIO, "%s: cannot open", a->unsym);
    }
    rc = lp_cs_raw_read(f, a->unsym, 0, raw_base(a, bin), cc, &is_cs, err);
    fclose(f);
    if (rc == 0 && a->skip_symbolization) {
        if ((rc = lp_outfile_open(&out, a->output, err)) == 0) {
            if (lp_ctxcount_write_raw(out.fp, cc, 0, raw_base(a, bin), err))
                rc = -1, lp_outfile_abort(&out);
            else
                rc = lp_outfile_commit(&out, err);
        }
    } else if (rc == 0) {
        if (!(p = lp_profile_new()))
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
        if (rc == 0)
            rc = lp_cs_profile_consume(&bin, 1, cc, &o, p, err);
        if (rc == 0)
            rc = write_profile(a, bin, p, err);
    }
    lp_profile_free(p);
    lp_ctxcount_free(cc);
    return rc;
}

/* ---- the command ---------------------------------------------------------- */

static int validate(const prof_args *a)
{
    int inputs = !!a->perfdata + !!a->perfscript + !!a->unsym + !!a->llvm_prof;
    lp_prof_format f;
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
    if (!a->binary && !a->perfdata && !a->perfscript)
        return bad_usage("%s", "--binary is required");
    if (!a->binary && strcmp(in, "-") == 0)
        return bad_usage("%s", "--binary is required when the trace comes from stdin");
    if (strcmp(in, "-") != 0 && stat(in, &st) != 0)
        return bad_usage("Input perf file does not exist: %s", in);
    if (a->compress_recursion < -1)
        return bad_usage("%s", "Value of --compress-recursion should >= -1");
    return output_format(a, &f);
}

/* Address map warnings, held until we know whether the binary was found:
 * if not, the first one (a build-id mismatch) is the error message. */
typedef struct held_warnings {
    char **v;
    size_t n;
} held_warnings;

static void hold_warning(void *ctx, const char *msg)
{
    held_warnings *h = ctx;
    char **nv = realloc(h->v, (h->n + 1) * sizeof *nv);

    if (!nv || !(nv[h->n] = strdup(msg))) {
        h->v = nv ? nv : h->v;
        print_warning(NULL, msg);
        return;
    }
    h->v = nv;
    h->n++;
}

static void release_warnings(held_warnings *h, bool print)
{
    size_t i;

    for (i = 0; i < h->n; i++) {
        if (print)
            print_warning(NULL, h->v[i]);
        free(h->v[i]);
    }
    free(h->v);
    h->v = NULL;
    h->n = 0;
}

/* perf.data: the per-process address map (one base per process, unlike
 * llvm-profgen); perf script text: NULL (single base). */
static lp_addrmap *new_map(const prof_args *a, lp_binary *bin,
                           held_warnings *h, lp_error *err)
{
    lp_addrmap_opts mo = {false, a->pid, hold_warning, h};

    return a->perfdata ? lp_addrmap_new(&bin, 1, &mo, err) : NULL;
}

/* The binary matched no mmap: say why in one line. */
static int not_found(const prof_args *a, const held_warnings *h, lp_error *err)
{
    if (h->n > 0)
        return lp_error_set(err, LP_EFORMAT, "%s: %s", a->perfdata, h->v[0]);
    return lp_error_set(err, LP_EFORMAT, "%s: No relevant mmap event is found "
                        "in perf data for %s (no mmap matched its build-id, "
                        "path or basename%s).", a->perfdata, a->binary,
                        a->pid >= 0 ? " in the --pid process" : "");
}

/* What the trace turned into: flat counters, or per-context counters when
 * the samples had call stacks (and they are not ignored). */
typedef struct counts {
    lp_lbr_agg *agg;
    lp_counters *own;           /* read from an unsymbolized profile */
    const lp_counters *flat;
    lp_unwinder *uw;
    lp_ctxcount *cs;
} counts;

static void counts_free(counts *k)
{
    lp_counters_free(k->own);
    lp_lbr_agg_free(k->agg);
    lp_unwind_free(k->uw);
    lp_ctxcount_free(k->cs);
}

static lp_unwinder *new_unwinder(const prof_args *a, lp_binary *bin,
                                 const lp_addrmap *map, lp_error *err)
{
    lp_unwind_opts uo;

    lp_unwind_opts_default(&uo);
    uo.warn = print_warning;
    uo.show_detailed_warning = a->show_detailed_warning;
    uo.pid_filter = a->pid;
    uo.compress_recursion = (int)a->compress_recursion;
    uo.max_context_depth = a->max_context_depth < -1 ? -1
                           : a->max_context_depth > INT32_MAX ? INT32_MAX
                                                              : (int)a->max_context_depth;
    uo.repair_frames = !a->no_repair_frames;
    uo.map = map;
    return lp_unwind_new(&bin, 1, &uo, err);
}

/* Hybrid samples went to the unwinder: its counters, unless there were
 * none (then the trace was LBR-only after all). */
static int finish_unwinder(counts *k, lp_error *err)
{
    if (lp_lbr_agg_nr_samples(k->agg) > 0)
        fprintf(stderr, "warning: %" PRIu64 " samples without a call stack "
                "were ignored: the trace has hybrid samples\n",
                lp_lbr_agg_nr_samples(k->agg));
    return (k->cs = lp_unwind_finish(k->uw, err)) ? 0 : -1;
}

static int run_counters(const prof_args *a, lp_binary *bin, counts *k,
                        lp_error *err)
{
    lp_lbr_agg_opts ao = {print_warning, NULL, a->show_detailed_warning, a->pid,
                          a->leading_ip_only, a->have_sample_period,
                          a->sample_period, NULL, 0};
    lp_addrmap *map = NULL;
    held_warnings held = {NULL, 0};
    uint64_t base;
    FILE *f;
    int rc;

    if (a->unsym) {
        base = !a->use_offset ? 0
               : a->first_loadable_base ? lp_binary_first_loadable(bin)
                                        : lp_binary_preferred_base(bin);
        if (!(f = fopen(a->unsym, "r")))
            return lp_error_set(err, LP_EIO, "%s: cannot open", a->unsym);
        if (!(k->own = lp_counters_new()))
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
        else
            rc = lp_rawprof_read(f, a->unsym, base, k->own, err);
        fclose(f);
        k->flat = k->own;
        return rc;
    }
    if (a->perfdata && !(map = new_map(a, bin, &held, err)))
        return -1;
    ao.map = map;
    if (!(k->agg = lp_lbr_agg_new(bin, &ao, err)))
        rc = -1;
    else if (!a->ignore_stack_samples && !a->leading_ip_only &&
             !(k->uw = new_unwinder(a, bin, map, err)))
        rc = -1;
    else
        rc = read_trace(a, k->agg, k->uw, map, err);
    if (rc == 0 && map && !lp_addrmap_loaded(map, 0))
        rc = not_found(a, &held, err);
    release_warnings(&held, rc == 0);
    if (rc == 0 && k->uw && lp_unwind_stats_get(k->uw)->sample_calls > 0)
        rc = finish_unwinder(k, err);
    else if (rc == 0 && !(k->flat = lp_lbr_agg_finish(k->agg, err)))
        rc = -1;
    lp_addrmap_free(map); /* neither uses it after finish */
    return rc;
}

/* The context-sensitive unsymbolized profile (--skip-symbolization). */
static int write_raw_cs(const prof_args *a, lp_binary *bin,
                        const lp_ctxcount *cs, lp_error *err)
{
    uint64_t base = !a->use_offset ? 0
                    : a->first_loadable_base ? lp_binary_first_loadable(bin)
                                             : lp_binary_preferred_base(bin);
    lp_outfile out;

    if (lp_outfile_open(&out, a->output, err))
        return -1;
    if (lp_ctxcount_write_raw(out.fp, cs, 0, base, err)) {
        lp_outfile_abort(&out);
        return -1;
    }
    return lp_outfile_commit(&out, err);
}

/* Hybrid samples -> the CS profile (the unwinder's counters are used up),
 * or the unsymbolized one with --skip-symbolization. */
static int write_cs_profile(const prof_args *a, lp_binary *bin,
                            lp_ctxcount *cs, lp_error *err)
{
    lp_profile *p;
    lp_cs_opts o;
    int rc;

    if (a->skip_symbolization)
        return write_raw_cs(a, bin, cs, err);
    if (!(p = lp_profile_new()))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    cs_opts(a, &o);
    rc = lp_cs_profile_consume(&bin, 1, cs, &o, p, err);
    if (rc == 0)
        rc = write_profile(a, bin, p, err);
    lp_profile_free(p);
    return rc;
}

static int run(const prof_args *a, lp_error *err)
{
    lp_binary_opts bo = {a->debug_binary, a->dwp, -1};
    counts k = {0};
    lp_profile *p = NULL;
    lp_flat_opts fo = a->flat;
    lp_binary *bin;
    FILE *f;
    int rc;

    rc = a->use_dwarf_correlation ? 0 : lp_flat_has_pseudo_probes(a->binary, err);
    if (rc < 0)
        return -1;
    if (rc > 0)
        return lp_error_set(err, LP_EUNSUPP, "%s: the binary has pseudo probes; "
                            "probe-based profiles are not supported yet (use "
                            "--use-dwarf-correlation for a line-based profile)",
                            a->binary);
    if (!(bin = lp_binary_open(a->binary, &bo, err)))
        return -1;
    /* No DWARF functions: llvm-profgen writes an empty profile after a
     * warning; say what is wrong instead (the raw profile needs no DWARF) */
    if (!a->skip_symbolization && lp_binary_check_symbolizable(bin, err)) {
        lp_binary_close(bin);
        return -1;
    }
    if (a->unsym && (rc = raw_is_cs(a->unsym, err)) != 0) {
        if (rc > 0)
            rc = run_cs_unsym(a, bin, err);
        lp_binary_close(bin);
        return rc;
    }
    fo.warn = print_warning;
    fo.leading_ip_only = a->leading_ip_only;
    fo.info = stdout;
    if (a->llvm_prof) {
        if (!(f = fopen(a->llvm_prof, "r")))
            rc = lp_error_set(err, LP_EIO, "%s: cannot open", a->llvm_prof);
        else {
            rc = (p = lp_profile_read_text(f, a->llvm_prof, err)) ? 0 : -1;
            fclose(f);
        }
    } else {
        rc = run_counters(a, bin, &k, err);
        if (rc == 0 && k.cs) {
            rc = write_cs_profile(a, bin, k.cs, err);
            goto out;
        }
        if (rc == 0 && a->skip_symbolization) {
            rc = write_raw(a, bin, k.flat, err);
            goto out;
        }
        if (rc == 0 && !(p = lp_profile_new()))
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
        if (rc == 0)
            rc = lp_flat_generate(bin, k.flat, &fo, p, err);
    }
    if (rc == 0 && p->is_cs) {
        lp_cs_opts co;
        cs_opts(a, &co);
        rc = lp_cs_postprocess(&bin, 1, NULL, &co, p, err);
    } else if (rc == 0) {
        rc = lp_flat_postprocess(p, &fo, err);
    }
    if (rc == 0)
        rc = write_profile(a, bin, p, err);
out:
    lp_profile_free(p);
    counts_free(&k);
    lp_binary_close(bin);
    return rc;
}

int cmd_profile(int argc, char **argv)
{
    lp_error err = {0};
    prof_args a;
    char *found = NULL;
    int k = parse_args(&a, argc, argv);

    if (k == 0 && validate(&a))
        k = -1;
    if (k == 0 && !a.binary) {
        a.binary = found = find_binary(a.perfdata ? a.perfdata : a.perfscript,
                                       a.perfscript != NULL, &err);
        if (!found)
            k = -2;
        else
            fprintf(stderr, "lbr2prof: using binary %s\n", found);
    }
    if (k == 0 && run(&a, &err))
        k = -2;
    while (a.nr_events > 0)
        free(a.events[--a.nr_events]);
    free(found);
    return k == 0 || k == 1 ? 0 : k == -1 ? 2 : lp_cli_fail(&err);
}
