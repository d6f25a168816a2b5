/*
 * trace.c - the driver's one pass over a trace: every event to the
 * per-process address map (perf.data) or the single-base maps (perf
 * script text), LBR-only samples to the flat aggregator, hybrid samples
 * (call stack + LBR) to the virtual unwinder; then the counters and the
 * sample statistics. Owns the routing and the held address-map warnings;
 * the counting itself is src/flat's and src/unwind's.
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/phases.h"
#include "lbr2prof/reader.h"
#include "lbr2prof/pt.h"
#include "profgen/pg_internal.h"
#include "util/cpus.h"
#include "util/pages.h"

/* ---- mapped pages ------------------------------------------------------------ */

/* The binaries' mapped files are read while they are opened and little
 * after (the decoded line rows, instructions and symbols are kept): their
 * resident pages are given back as reading and unwinding start and after the
 * unwinder is freed, so they do not add to the peaks of the unwinder's
 * flush and of generation (sqlite-line: 2.3 MB). */
static void release_binary_pages(const pg_run *run)
{
    size_t i;

    for (i = 0; run->r && i < run->r->nbins; i++)
        lp_binary_release_pages(run->r->bins[i]);
}

/* The unwinding decodes and symbolizes the profiled binary's functions
 * as it meets them. While the trace is read one core is busy, unless the
 * reader takes the second itself (text parsed on a thread, a perf.data's
 * tail); when it does not, the second does that work ahead, for every
 * function (lp_binary_warm_start; bench (c): ~37 ms of work, of which
 * the flush and generation asked ~13 ms themselves, for 2.9 MB more
 * kept). Not for a run that symbolizes nothing (probe contexts are
 * addresses; --skip-symbolization): decoding ahead alone gained nothing
 * (docs/cost-model.md). Stopped when the reading ends: the flush's two
 * threads take both cores then (warm_start, warm_stop). */
static bool warms(const pg_run *run)
{
    return run->uw && run->r && run->r->nbins && !pg_probe_mode(run->r) &&
           !run->o->skip_symbolization;
}

static void warm_start(pg_run *run, const lp_reader *r)
{
    run->warming = warms(run) && !lp_reader_second_core_busy(r) &&
                   lp_cpus() >= 2 && lp_binary_warm_start(run->r->bins[0]) == 0;
}

/* What the warmer did goes to --time-trace. */
static void warm_stop(pg_run *run)
{
    lp_binary_warm_stats st;

    if (!run->warming)
        return;
    lp_binary_warm_stop(run->r->bins[0], false, &st);
    run->warming = false;
    run->warm_regions += st.regions;
    run->warm_symbolized += st.symbolized;
    lp_phases_warmed(run->o->phases, run->warm_regions, run->warm_symbolized);
}

/* ---- held warnings ---------------------------------------------------------- */

static void hold_warning(void *ctx, const char *msg)
{
    pg_held *h = ctx;
    char **nv = realloc(h->v, (h->n + 1) * sizeof *nv);

    if (!nv || !(nv[h->n] = strdup(msg))) {
        h->v = nv ? nv : h->v;
        pg_warn(h->o, "%s", msg);
        return;
    }
    h->v = nv;
    h->n++;
}

static void release_warnings(pg_held *h, bool print)
{
    size_t i;

    for (i = 0; i < h->n; i++) {
        if (print)
            pg_warn(h->o, "%s", h->v[i]);
        free(h->v[i]);
    }
    free(h->v);
    h->v = NULL;
    h->n = 0;
}

/* The held warning about binaries[0] (with one binary: the first). */
static const char *main_warning(const pg_run *run)
{
    const char *path = lp_binary_path(run->r->bins[0]);
    char needle[4200];
    size_t i;

    if (run->held.n == 0 || run->r->nbins == 1)
        return run->held.n ? run->held.v[0] : NULL;
    snprintf(needle, sizeof needle, ", but %s has ", path);
    for (i = 0; i < run->held.n; i++)
        if (strstr(run->held.v[i], needle))
            return run->held.v[i];
    return NULL;
}

/* binaries[0] matched no mmap: say why in one line. */
static int not_found(pg_run *run, lp_error *err)
{
    const lp_profgen_opts *a = run->o;
    const char *w = main_warning(run);
    char where[64] = "";

    run->r->failed = LP_PROFGEN_BINARY;
    if (a->nmore_traces)
        snprintf(where, sizeof where, " (and %zu more traces)", a->nmore_traces);
    if (w)
        return lp_error_set(err, LP_EFORMAT, "%s%s: %s", a->perfdata, where, w);
    return lp_error_set(err, LP_EFORMAT, "%s%s: No relevant mmap event is found "
                        "in perf data for %s (no mmap matched its build-id, "
                        "path or basename%s).", a->perfdata, where,
                        run->r->paths[0], a->pid >= 0 ? " in the --pid process" : "");
}

/* --kernel and no kernel mmap (llvm-profgen 22's error). */
static int no_kernel(pg_run *run, lp_error *err)
{
    const lp_profgen_opts *a = run->o;

    run->r->failed = LP_PROFGEN_BINARY;
    return lp_error_set(err, LP_EFORMAT, "%s: Kernel is requested, but no kernel is found "
                        "in mmap events (no [kernel.kallsyms], [kernel.kallsyms]_text or "
                        "[kernel.kallsyms]_stext mmap%s)", pg_trace_path(a),
                        a->pid >= 0 ? " of the --pid process" : "");
}

/* ---- samples ------------------------------------------------------------------ */

/* The sample's process for the address map: perf script text and
 * perf.data without TID have none (llvm-profgen's single base applies). */
static uint32_t sample_pid(const lp_sample *s)
{
    return (s->sample_type & LP_SAMPLE_TID) ? s->pid : LP_ADDRMAP_ANY_PID;
}

static bool event_wanted(const lp_profgen_opts *a, const lp_sample *s)
{
    size_t i;

    if (a->nr_events == 0 || !s->attr || !s->attr->name)
        return true;
    for (i = 0; i < a->nr_events; i++)
        if (strcmp(a->events[i], s->attr->name) == 0)
            return true;
    return false; /* filtered out by --perf-event */
}

/* A sample whose arrays the reader deferred (only samples with a call
 * chain while there is an unwinder: lp_reader_defer_arrays in read_one):
 * made, and h pointed at them. */
static int sample_arrays(pg_run *run, const lp_sample *s, lp_hybrid_sample *h,
                         lp_error *err)
{
    if (lp_reader_arrays(run->reader, s, err))
        return -1;
    h->stack = s->callchain;
    h->br = s->branches;
    return 0;
}

/* One sample: hybrid ones (with a call stack) to the unwinder unless the
 * stacks are ignored (then run->uw is NULL); run->markers: the callchain
 * is a perf.data one, with PERF_CONTEXT_* markers, which only a kernel
 * frame-pointer walk makes (text: only when the user says so). */
static int feed_sample(pg_run *run, const lp_sample *s, lp_error *err)
{
    const lp_profgen_opts *a = run->o;
    lp_profgen_stats *st = &run->r->stats;
    uint64_t n = s->repeat ? s->repeat : 1;

    if (!event_wanted(a, s))
        return 0;
    st->samples += n;
    if (a->leading_ip_only) {
        /* a hybrid sample's LBR line has no leading IP: nothing to count */
        if (!(s->sample_type & LP_SAMPLE_IP) || s->branch_nr == 0 ||
            s->callchain_nr > 0)
            return 0;
        st->lbr_only += n;
        lp_lbr_agg_set_calls(run->agg, s->calls);
        return lp_lbr_agg_ip_sample(run->agg, s->ip, n, err);
    }
    /* perf record --call-graph dwarf: no user callchain, the user stack
     * (the repair unwinds it with CFI) */
    bool stack_only = s->callchain_nr == 0 && s->stack_user_size && s->branch_nr &&
                      !a->no_repair_frames;

    if ((s->callchain_nr > 0 || stack_only) && run->uw) {
        bool exact = lp_ptsynth_made(run->pt, s); /* the decoder's stack */
        lp_hybrid_sample h = {.stack = s->callchain, .nstack = s->callchain_nr,
                              .markers = run->markers, .exact = exact,
                              .fp_walk = !exact && (run->markers ||
                                                    a->script_fp_callchains),
                              .br = s->branches, .nbr = s->branch_nr,
                              .pid = sample_pid(s), .repeat = n,
                              .calls = s->calls,
                              .dup_id = s->dup_id,
                              .stacks_id = s->stacks_id,
                              .regs_stack = s->stack_user_size ? s : NULL};
        st->hybrid += n;
        if (s->arrays_deferred && lp_unwind_replay(run->uw, &h))
            return 0;
        if (s->arrays_deferred && sample_arrays(run, s, &h, err))
            return -1;
        return lp_unwind_sample(run->uw, &h, err);
    }
    st->lbr_only += n;
    lp_lbr_agg_set_calls(run->agg, s->calls);
    if (s->stacks_id.lo || s->stacks_id.hi)
        lp_lbr_agg_set_id(run->agg, s->stacks_id);
    else if (s->dup_id)
        lp_lbr_agg_set_id(run->agg, (lp_stacks_id){s->dup_id, 0});
    if (s->callchain_nr > 0)
        return lp_lbr_agg_stack_sample(run->agg, s->callchain, s->callchain_nr,
                                       s->branches, s->branch_nr, n, err);
    return lp_lbr_agg_sample(run->agg, s->branches, s->branch_nr, n, err);
}

/* A sample a few events ahead (lp_reader_set_ahead): the unwinder starts
 * loading its memo slots. Only what feed_sample gives the unwinder's memo
 * (a call chain, no user stack); the event filter is not applied. */
static void sample_ahead(void *ctx, lp_sample *s)
{
    pg_run *run = ctx;

    if (s->callchain_nr > 0 && !s->stack_user_size)
        lp_unwind_ahead(run->uw, sample_pid(s), s->callchain, s->callchain_nr,
                        s->branches, s->branch_nr, &s->stacks_id);
}

/* ... and the flat aggregator its waiting samples' index slot. */
static void flat_ahead(void *ctx, lp_sample *s)
{
    pg_run *run = ctx;

    if (!run->o->leading_ip_only)
        lp_lbr_agg_ahead(run->agg, sample_pid(s), s->callchain, s->callchain_nr,
                         s->branches, s->branch_nr, &s->stacks_id);
}

/* ---- events ------------------------------------------------------------------- */

/* Events after which the address map may resolve differently. */
static bool changes_map(const lp_event *ev)
{
    return ev->kind == LP_EV_MMAP || (ev->kind == LP_EV_COMM && ev->u.comm.exec) ||
           (ev->kind == LP_EV_FORK && ev->u.task.pid != ev->u.task.ppid);
}

static int mmap_event(pg_run *run, const lp_mmap_event *m, lp_error *err)
{
    const lp_profgen_opts *a = run->o;

    if (a->show_mmap_events && a->info &&
        (a->pid < 0 || (int64_t)m->pid == a->pid))
        fprintf(a->info, "Mmap: Binary %s loaded at 0x%" PRIx64 ": \n",
                m->filename, m->start);
    if (lp_lbr_agg_mmap(run->agg, m, err) ||
        (run->uw && lp_unwind_mmap(run->uw, m, err)))
        return -1;
    return 0;
}

/* One event. *nids: build-ids already given to the map (file mode: the
 * header's table; pipe mode: HEADER_BUILD_IDs as they come). */
static int trace_event(pg_run *run, const lp_file_info *info, size_t *nids,
                       const lp_event *ev, lp_error *err)
{
    if (run->map && info->nr_build_ids > *nids) {
        if (lp_addrmap_add_build_ids(run->map, info->build_ids + *nids,
                                     info->nr_build_ids - *nids, err))
            return -1;
    }
    *nids = info->nr_build_ids;
    if (run->map && changes_map(ev)) {
        if (lp_lbr_agg_flush(run->agg, err) || lp_addrmap_event(run->map, ev, err))
            return -1;
    }
    if (ev->kind == LP_EV_MMAP)
        return mmap_event(run, &ev->u.mmap, err);
    if (ev->kind == LP_EV_SAMPLE) {
        lp_lbr_agg_set_pid(run->agg, sample_pid(&ev->u.sample));
        return feed_sample(run, &ev->u.sample, err);
    }
    return 0;
}

void pg_reader_opts(const lp_profgen_opts *a, lp_reader_opts *ro)
{
    memset(ro, 0, sizeof *ro);
    ro->force_text = a->perfscript != NULL;
    ro->strict = a->strict;
    ro->warn = a->warn;
    ro->warn_ctx = a->warn_ctx;
    /* the unwinder (pg_count_trace makes one for these) reads user
     * registers and stacks */
    ro->skip_payloads = a->ignore_stack_samples || a->leading_ip_only;
    ro->no_thread = a->itrace != NULL; /* the PT synthesizer reads alongside */
    /* feed_sample takes a repeat as that many records, except that
     * --sample-period divides each record's count (integer division) */
    ro->fold_repeats = !a->have_sample_period;
    ro->fold_light = a->ignore_stack_samples || a->leading_ip_only;
}

void pg_open_early(const lp_profgen_opts *o, lp_profgen_result *r)
{
    lp_reader_opts ro;
    lp_error ignored;

    if (o->unsym || o->llvm_prof || o->itrace || !pg_trace_path(o) ||
        !strcmp(pg_trace_path(o), "-"))
        return;
    pg_reader_opts(o, &ro);
    if ((r->priv->early = lp_reader_open(pg_trace_path(o), &ro, &ignored)))
        lp_reader_start(r->priv->early);
}

/* The consumer's idle time, while the perf script parser's thread is
 * behind: the distinct samples so far unwound ahead (lp_unwind_warm_next). */
static int warm_unwinder(void *uw)
{
    return lp_unwind_warm_next(uw);
}

int pg_pt_open(const lp_profgen_opts *o, const char *path, bool text,
               lp_ptsynth **pt, lp_error *err)
{
    *pt = NULL;
    if (!o->itrace || text || strcmp(path, "-") == 0)
        return 0;
    return lp_ptsynth_open(path, o->itrace, pt, err);
}

int pg_next_event(lp_reader *r, lp_ptsynth *pt, const lp_event **ev,
                  lp_error *err)
{
    return pt ? lp_ptsynth_next(pt, r, ev, err) : lp_reader_next(r, ev, err);
}

/* The next trace of the run: the processes of the one before are gone
 * (its pids mean nothing in this one), and so are the reader's sample ids
 * the unwinder remembered. */
static int next_trace(pg_run *run, lp_error *err)
{
    if (lp_lbr_agg_flush(run->agg, err))
        return -1;
    if (run->map)
        lp_addrmap_next_input(run->map);
    if (run->uw)
        lp_unwind_next_input(run->uw);
    return 0;
}

/* The reading's position, for a progress report. */
static void tick(lp_phases *ph, const lp_reader *r, uint64_t samples)
{
    uint64_t done, total;

    lp_reader_progress(r, &done, &total);
    lp_phases_read(ph, done, total, samples);
}

/* One trace: every event in reader order. perf.data: every event goes to
 * the per-process address map run->map (NULL for perf script text, where
 * the aggregator's own single-base map follows the mmaps). *starts: what
 * llvm-profgen counts as its samples (text: every line taken as the start
 * of one; perf.data: the unwinder's samples). */
static int read_one(pg_run *run, lp_reader *r, const char *path,
                    bool force_text, uint64_t *starts, bool *text_seen,
                    lp_error *err)
{
    const lp_file_info *info = lp_reader_info(r);
    const lp_reader_stats *rs;
    const lp_event *ev;
    uint64_t calls = run->uw ? lp_unwind_stats_get(run->uw)->sample_calls : 0;
    size_t nids = 0;
    bool text = force_text || info->format == LP_FMT_PERF_SCRIPT;
    lp_phases *ph = run->o->phases;
    uint64_t nev = 0;
    lp_ptsynth *pt;
    int k;

    run->markers = !text;
    if (run->uw) {
        lp_reader_set_idle(r, warm_unwinder, run->uw);
        lp_reader_set_ahead(r, sample_ahead, run);
        lp_reader_defer_arrays(r);      /* feed_sample makes them */
    } else {
        lp_reader_set_ahead(r, flat_ahead, run);
    }
    if (pg_pt_open(run->o, path, text, &pt, err) < 0)
        return -1;
    if (ph)                     /* the size, for the phase's first report */
        tick(ph, r, run->r->stats.samples);
    lp_phases_enter(ph, LP_PHASE_READ);
    lp_pages_release_loader();  /* read once by ld.so: 1.8 MB */
    release_binary_pages(run);
    warm_start(run, r);
    run->pt = pt;
    run->reader = r;
    while ((k = pg_next_event(r, pt, &ev, err)) == 1) {
        if (trace_event(run, info, &nids, ev, err))
            break;
        if ((++nev & 1023) == 0 && ph)
            tick(ph, r, run->r->stats.samples);
    }
    warm_stop(run);
    run->pt = NULL;
    run->reader = NULL;
    lp_ptsynth_close(pt);
    rs = lp_reader_stats_get(r);
    *text_seen |= text;
    *starts += text ? rs->text_sample_starts
               : run->uw ? lp_unwind_stats_get(run->uw)->sample_calls - calls : 0;
    run->r->stats.lost += rs->lost_events + rs->lost_samples;
    return k == 0 ? 0 : -1;
}

/* Every trace, in order, as one recording. */
int pg_read_trace(pg_run *run, lp_error *err)
{
    const lp_profgen_opts *a = run->o;
    size_t i, n = pg_ntraces(a);
    uint64_t starts = 0;
    bool text_seen = false;
    lp_reader_opts ro;
    lp_reader *r;
    int rc = 0;

    pg_reader_opts(a, &ro);
    for (i = 0; i < n && rc == 0; i++) {
        r = i == 0 ? run->r->priv->early : NULL;
        if (i == 0)
            run->r->priv->early = NULL;
        if (i > 0 && next_trace(run, err))
            return -1;
        if (!r && !(r = lp_reader_open(pg_trace_at(a, i), &ro, err)))
            return -1;
        rc = read_one(run, r, pg_trace_at(a, i), ro.force_text, &starts,
                      &text_seen, err);
        lp_reader_close(r);
    }
    if (rc == 0 && run->uw && text_seen)
        lp_unwind_set_total_samples(run->uw, starts);
    if (rc == 0 && run->agg && text_seen)
        lp_lbr_agg_set_total_samples(run->agg, starts);
    return rc;
}

/* ---- the counters ------------------------------------------------------------ */

/* perf.data: the per-process address map (one base per process, unlike
 * llvm-profgen); perf script text: NULL (single base). */
static int new_map(pg_run *run, lp_error *err)
{
    lp_addrmap_opts mo = {false, run->o->pid, hold_warning, &run->held, run->o->kernel};

    if (!run->o->perfdata)
        return 0;
    run->map = lp_addrmap_new(run->r->bins, run->r->nbins, &mo, err);
    return run->map ? 0 : -1;
}

static int new_unwinder(pg_run *run, lp_error *err)
{
    const lp_profgen_opts *a = run->o;
    lp_unwind_opts uo;

    lp_unwind_opts_default(&uo);
    uo.warn = a->warn;
    uo.warn_ctx = a->warn_ctx;
    uo.show_detailed_warning = a->show_detailed_warning;
    uo.pid_filter = a->pid;
    uo.compress_recursion = (int)a->compress_recursion;
    uo.max_context_depth = a->max_context_depth < -1 ? -1
                           : a->max_context_depth > INT32_MAX ? INT32_MAX
                                                              : (int)a->max_context_depth;
    uo.max_unsym_depth = a->max_unsym_context_depth < -1 ? -1
                         : a->max_unsym_context_depth > INT32_MAX ? INT32_MAX
                         : (int)a->max_unsym_context_depth;
    uo.repair_frames = !a->no_repair_frames;
    uo.drop_unknown = a->drop_unknown_callers;
    uo.kernel = a->kernel;
    uo.map = run->map;
    uo.addr_contexts = pg_probe_mode(run->r);
    uo.phases = a->phases;
    run->uw = lp_unwind_new(run->r->bins, run->r->nbins, &uo, err);
    return run->uw ? 0 : -1;
}

static int new_aggregator(pg_run *run, lp_error *err)
{
    const lp_profgen_opts *a = run->o;
    lp_lbr_agg_opts ao = {a->warn, a->warn_ctx, a->show_detailed_warning,
                          a->pid, a->leading_ip_only, a->have_sample_period,
                          a->sample_period, run->map, 0, a->kernel};

    run->agg = lp_lbr_agg_new(run->r->bins[0], &ao, err);
    return run->agg ? 0 : -1;
}

/* Hybrid samples went to the unwinder: its counters, unless there were
 * none (then the trace was LBR-only after all). */
static int finish_unwinder(pg_run *run, lp_error *err)
{
    uint64_t ignored = lp_lbr_agg_nr_samples(run->agg);
    const lp_unwind_stats *st;

    if (ignored > 0)
        pg_warn(run->o, "%" PRIu64 " samples without a call stack were "
                "ignored: the trace has hybrid samples", ignored);
    lp_phases_enter(run->o->phases, LP_PHASE_UNWIND);
    release_binary_pages(run);
    run->r->raw_cs = lp_unwind_finish(run->uw, err);
    run->r->context_sensitive = true;
    st = lp_unwind_stats_get(run->uw);
    lp_phases_unwound(run->o->phases, st->sample_calls, st->distinct,
                      st->replayed);
    return run->r->raw_cs ? 0 : -1;
}

/* The quality counts of the run, once the counters are final. */
static void fill_stats(pg_run *run)
{
    lp_profgen_stats *st = &run->r->stats;

    st->from_trace = true;
    if (run->r->raw_cs) {
        st->unwind = *lp_unwind_stats_get(run->uw);
        st->used = st->unwind.aggregated;
        st->repaired = st->unwind.repaired + st->unwind.repaired_stack;
        st->inferred = st->unwind.inferred;
        /* a sample can be in both: the share is bounded by what was used */
        st->truncated = st->unwind.truncated + st->unwind.lost;
        if (st->truncated > st->unwind.aggregated)
            st->truncated = st->unwind.aggregated;
        st->external = st->unwind.leaf_external;
        st->contextless = st->unwind.contextless;
    } else {
        st->used = st->contextless = lp_lbr_agg_nr_samples(run->agg);
    }
    st->dropped = st->samples > st->used ? st->samples - st->used : 0;
}

int pg_count_trace(pg_run *run, lp_error *err)
{
    const lp_profgen_opts *a = run->o;
    int rc;

    run->held.o = a;
    run->r->failed = LP_PROFGEN_INPUT;
    rc = new_map(run, err);
    if (rc == 0)
        rc = new_aggregator(run, err);
    if (rc == 0 && !a->ignore_stack_samples && !a->leading_ip_only)
        rc = new_unwinder(run, err);
    if (rc == 0)
        rc = pg_read_trace(run, err);
    /* --kernel: the kernel's build-id was not the binary's (not_found
     * says so), or there was no kernel mmap at all */
    if (rc == 0 && run->map && !lp_addrmap_loaded(run->map, 0) &&
        (!a->kernel || main_warning(run)))
        rc = not_found(run, err);
    else if (rc == 0 && a->kernel && !lp_lbr_agg_loaded_by_mmap(run->agg))
        rc = no_kernel(run, err);
    release_warnings(&run->held, rc == 0);
    if (rc != 0 && a->raw_header && run->r->failed == LP_PROFGEN_BINARY) {
        pg_warn(a, "%s (--raw-header: written without its counts, for a merge)",
                err->msg);
        rc = 0;                 /* a shard of a larger run: its share is none */
    }
    if (rc == 0 && run->uw && lp_unwind_stats_get(run->uw)->sample_calls > 0)
        rc = finish_unwinder(run, err);
    else if (rc == 0 && !(run->r->raw_flat = lp_lbr_agg_finish(run->agg, err)))
        rc = -1;
    if (rc == 0)
        fill_stats(run);
    lp_addrmap_free(run->map); /* neither uses it after finish */
    run->map = NULL;
    return rc;
}

void pg_run_free(pg_run *run)
{
    release_warnings(&run->held, false);
    release_binary_pages(run);
    lp_addrmap_free(run->map);
    lp_unwind_free(run->uw);
    lp_lbr_agg_free(run->agg);
    memset(run, 0, sizeof *run);
    /* the unwinder's caches and distinct samples (40 MB on SQLite) are
     * free now, but glibc keeps the pages, mostly between live blocks and
     * in the worker thread's arena: give them back, or generation and the
     * pre-inliner grow the peak from there */
    malloc_trim(0);
}
