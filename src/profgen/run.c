/*
 * run.c - lp_profgen_run: the order of the stages for one command line.
 * Owns the defaults, choosing and opening the binaries (given, discovered,
 * --binaries-from-trace), the result's lifetime and the message helpers;
 * the trace pass is trace.c's, the generation routes generate.c's, the
 * output write.c's.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/phases.h"
#include "lbr2prof/reader.h"
#include "profgen/pg_internal.h"

/* ---- small shared helpers ------------------------------------------------- */

void pg_warn(const lp_profgen_opts *o, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    lp_vwarnf(o->warn, o->warn_ctx, fmt, ap);
    va_end(ap);
}

void pg_note(const lp_profgen_opts *o, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    lp_vwarnf(o->note, o->note_ctx, fmt, ap);
    va_end(ap);
}

const char *pg_trace_path(const lp_profgen_opts *o)
{
    return o->perfdata ? o->perfdata : o->perfscript;
}

size_t pg_ntraces(const lp_profgen_opts *o)
{
    return pg_trace_path(o) ? 1 + o->nmore_traces : 0;
}

const char *pg_trace_at(const lp_profgen_opts *o, size_t i)
{
    return i == 0 ? pg_trace_path(o) : o->more_traces[i - 1];
}

uint64_t pg_raw_base(const lp_profgen_opts *o, lp_binary *bin)
{
    return !o->use_offset ? 0
           : o->first_loadable_base ? lp_binary_first_loadable(bin)
                                    : lp_binary_preferred_base(bin);
}

void lp_profgen_opts_default(lp_profgen_opts *o)
{
    memset(o, 0, sizeof *o);
    o->use_offset = true;
    o->load_function_from_symbol = true;
    o->pid = -1;
    o->compress_recursion = o->max_context_depth = -1;
    o->infer_missing_frames = -1;
    o->max_search_depth = -1;
    o->summary_contextless = -1;
    o->max_unsym_context_depth = -1;
    o->format = LP_PROF_EXTBINARY;
    lp_flat_opts_default(&o->flat);
    lp_cs_opts_default(&o->cs);
}

int lp_profgen_format_parse(const char *s, lp_prof_format *f)
{
    if (!strcmp(s, "text"))
        *f = LP_PROF_TEXT;
    else if (!strcmp(s, "extbinary"))
        *f = LP_PROF_EXTBINARY;
    else if (!strcmp(s, "binary"))
        *f = LP_PROF_BINARY;
    else
        return -1;
    return 0;
}

int lp_profgen_trace_kind(const char *path, bool text, bool *has_stack,
                          bool *has_lbr, lp_error *err)
{
    lp_reader_opts ro = {0};
    const lp_event *ev;
    lp_reader *r;
    int k;

    *has_stack = *has_lbr = false;
    ro.force_text = text;
    ro.skip_payloads = 1;
    if (!(r = lp_reader_open(path, &ro, err)))
        return -1;
    while ((k = lp_reader_next(r, &ev, err)) == 1 && ev->kind != LP_EV_SAMPLE)
        ;
    if (k == 1) {
        *has_stack = ev->u.sample.callchain_nr > 0 ||
                     (ev->u.sample.sample_type & LP_SAMPLE_CALLCHAIN);
        *has_lbr = ev->u.sample.branch_nr > 0 ||
                   (ev->u.sample.sample_type & LP_SAMPLE_BRANCH_STACK);
    }
    lp_reader_close(r);
    return k < 0 ? -1 : 0;
}

/* ---- the result --------------------------------------------------------------- */

void lp_profgen_result_free(lp_profgen_result *r)
{
    size_t i;

    lp_profile_free(r->profile);
    lp_ctxcount_free(r->raw_cs);
    if (r->priv) {
        for (i = 0; r->priv->probes && i < r->nbins; i++)
            lp_probes_free(r->priv->probes[i]);
        free(r->priv->probes);
        lp_lbr_agg_free(r->priv->agg);
        lp_counters_free(r->priv->own);
        lp_ctxcount_free(r->priv->own_cc);
        lp_reader_close(r->priv->early);
        free(r->priv->good);
        free(r->priv);
    }
    for (i = 0; i < r->nskipped; i++) {
        free(r->skipped[i].path);
        free(r->skipped[i].why);
    }
    free(r->skipped);
    for (i = 0; i < r->nbins; i++) {
        lp_binary_close(r->bins ? r->bins[i] : NULL);
        free(r->paths[i]);
    }
    free(r->bins);
    free(r->paths);
    memset(r, 0, sizeof *r);
}

/* ---- choosing and opening the binaries ----------------------------------------- */

static int add_path(lp_profgen_result *r, const char *p, lp_error *err)
{
    char **nv = realloc(r->paths, (r->nbins + 1) * sizeof *nv);

    if (!nv)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    r->paths = nv;
    if (!(nv[r->nbins] = strdup(p)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    r->nbins++;
    return 0;
}

/* The first trace read from standard input, or the first trace. */
static const char *stdin_trace(const lp_profgen_opts *o)
{
    size_t i;

    for (i = 0; i < pg_ntraces(o); i++)
        if (strcmp(pg_trace_at(o, i), "-") == 0)
            return pg_trace_at(o, i);
    return pg_trace_path(o);
}

/* No --binary: the most sampled file of the traces. */
static int discover_main(const lp_profgen_opts *o, lp_profgen_result *r,
                         lp_error *err)
{
    const char *trace = stdin_trace(o);
    char *found;
    int rc;

    if (!trace || strcmp(trace, "-") == 0)
        return lp_error_set(err, LP_EUSAGE, "--binary is required%s",
                            trace ? " when the trace comes from stdin" : "");
    if (!(found = pg_find_binary(o, err)))
        return -1;
    pg_note(o, "using binary %s", found);
    r->discovered = true;
    rc = add_path(r, found, err);
    free(found);
    return rc;
}

/* Binaries found (paths[0..n), malloc'ed, freed here) to the run's,
 * each announced as "<verb> binary X"; rc: how finding them went. */
static int add_found(const lp_profgen_opts *o, lp_profgen_result *r,
                     char **paths, size_t n, const char *verb, int rc,
                     lp_error *err)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (rc == 0 && (rc = add_path(r, paths[i], err)) == 0)
            pg_note(o, "%s binary %s", verb, paths[i]);
        free(paths[i]);
    }
    free(paths);
    return rc;
}

/* --binaries-from-trace: every other sampled file with DWARF. */
static int add_trace_binaries(const lp_profgen_opts *o, lp_profgen_result *r,
                              lp_error *err)
{
    const char *trace = stdin_trace(o);
    char **more = NULL;
    size_t n = 0;
    int rc;

    if (!trace || strcmp(trace, "-") == 0)
        return lp_error_set(err, LP_EUSAGE, "--binaries-from-trace needs a "
                            "trace file (not a profile, not stdin)");
    rc = pg_trace_binaries(o, r->paths, r->nbins, &more, &n, err);
    return add_found(o, r, more, n, "also using", rc, err);
}

/* No --binary for an unsymbolized profile: those its header names. */
static int raw_binaries(const lp_profgen_opts *o, lp_profgen_result *r,
                        lp_error *err)
{
    char **paths;
    size_t n;
    int rc = pg_raw_binaries(o, &paths, &n, err);

    return add_found(o, r, paths, n, "using", rc, err);
}

/* The paths: --binary as given, else the most sampled file; then, with
 * --binaries-from-trace, every other sampled file with DWARF. */
static int choose_binaries(const lp_profgen_opts *o, lp_profgen_result *r,
                           lp_error *err)
{
    size_t i;

    for (i = 0; i < o->nbinaries; i++)
        if (add_path(r, o->binaries[i], err))
            return -1;
    if (o->nbinaries == 0 && o->unsym)
        return raw_binaries(o, r, err);
    if (o->nbinaries == 0 && discover_main(o, r, err))
        return -1;
    return o->binaries_from_trace ? add_trace_binaries(o, r, err) : 0;
}

/* Pseudo probes (checkPseudoProbe): with them in binaries[0], and
 * without --use-dwarf-correlation, the profile is probe-based, and every
 * other binary must have probes too (a profile is keyed by probe ids or
 * by lines, not both). */
static int open_probes(const lp_profgen_opts *o, lp_profgen_result *r,
                       lp_error *err)
{
    int has;
    size_t i;

    if (o->use_dwarf_correlation)
        return 0;
    if ((has = lp_probes_present(r->paths[0], err)) <= 0)
        return has;
    if (!(r->priv->probes = calloc(r->nbins, sizeof *r->priv->probes)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; i < r->nbins; i++) {
        if (i && (has = lp_probes_present(r->paths[i], err)) <= 0)
            return has < 0 ? -1
                   : lp_error_set(err, LP_EUNSUPP, "%s has no pseudo probes "
                                  "while %s has: a profile is probe-based or "
                                  "line-based, not both (leave it out, or use "
                                  "--use-dwarf-correlation for a line-based "
                                  "profile)", r->paths[i], r->paths[0]);
        if (!(r->priv->probes[i] = lp_probes_open(r->paths[i], err)))
            return -1;
    }
    return 0;
}

static int open_binaries(const lp_profgen_opts *o, lp_profgen_result *r,
                         lp_error *err)
{
    lp_binary_opts bo = {o->debug_binary, o->dwp, -1};
    lp_binary_opts other = {NULL, NULL, -1};
    size_t i;

    bo.no_file_names = other.no_file_names = !o->file_names;

    if (open_probes(o, r, err))
        return -1;
    /* llvm-profgen 22 recovers functions DWARF misses from .symtab for
     * pseudo-probe binaries (--load-function-from-symbol) */
    if (pg_probe_mode(r) && o->load_function_from_symbol) {
        bo.symtab_functions = other.symtab_functions = LP_SYMTAB_LLVM22;
        bo.detailed_warnings = other.detailed_warnings =
            o->show_detailed_warning;
    }
    if (!(r->bins = calloc(r->nbins, sizeof *r->bins)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; i < r->nbins; i++)
        if (!(r->bins[i] = lp_binary_open(r->paths[i], i ? &other : &bo, err)))
            return -1;
    /* No DWARF functions: llvm-profgen writes an empty profile after a
     * warning; say what is wrong instead (the raw profile needs no DWARF) */
    if (!o->skip_symbolization && lp_binary_check_symbolizable(r->bins[0], err)) {
        const lp_function *const *f;
        /* a probe profile needs function ranges and probes, no DWARF:
         * with functions from .symtab it can be made (llvm-profgen 22) */
        if (!pg_probe_mode(r) || !lp_binary_functions(r->bins[0], &f))
            return -1;
        lp_error_clear(err);
    }
    for (i = 0; i < r->nbins; i++) {   /* what llvm-profgen says loading them */
        const char *w;
        for (size_t k = 0; (w = lp_binary_warning(r->bins[i], k)); k++)
            pg_warn(o, "%s", w);
    }
    return 0;
}

void pg_tailcall_opts(const lp_profgen_opts *o, bool *infer,
                      lp_tailcall_opts *to)
{
    *infer = o->infer_missing_frames != 0;
    lp_tailcall_opts_default(to);
    if (o->max_search_depth >= 0)
        to->max_depth = (uint32_t)o->max_search_depth;
}

/* --infer-missing-frames / --max-search-depth asked for, and the profile
 * made cannot have them: say so, and why (never silently ignored). */
static void tailcall_flags_unused(const lp_profgen_opts *o,
                                  const lp_profgen_result *r)
{
    bool inf = o->infer_missing_frames == 1, depth = o->max_search_depth >= 0;
    const char *what;

    if ((!inf && !depth) || r->missing_frames_inferred)
        return;
    what = o->infer_missing_frames == 0 ? "--infer-missing-frames=false turns"
                                          " the inference off"
           : r->kind != LP_PROFGEN_PROFILE ? "this run wrote an unsymbolized"
                                             " profile"
           : o->llvm_prof ? "this profile was read (--llvm-sample-profile),"
                            " not generated"
           : r->context_sensitive ? "this is a line-number-based profile"
                                  : "this profile is not context-sensitive";
    pg_warn(o, "%s%s%s had no effect: missing tail-call frames are inferred "
            "in context-sensitive pseudo-probe profiles only (as llvm-profgen "
            "22 does), and %s", inf ? "--infer-missing-frames" : "",
            inf && depth ? " and " : "", depth ? "--max-search-depth" : "",
            what);
}

int lp_profgen_run(const lp_profgen_opts *o, lp_profgen_result *r,
                   lp_error *err)
{
    memset(r, 0, sizeof *r);
    r->failed = LP_PROFGEN_BINARY;
    if (o->max_search_depth > (int64_t)UINT32_MAX)
        return lp_error_set(err, LP_EUSAGE, "--max-search-depth=%lld: at most"
                            " %u", (long long)o->max_search_depth, UINT32_MAX);
    if (!(r->priv = calloc(1, sizeof *r->priv)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    if (o->skip_bad_inputs && pg_ntraces(o)) {
        lp_phases_enter(o->phases, LP_PHASE_READ); /* each trace read once to check it */
        r->failed = LP_PROFGEN_INPUT;
        if (pg_check_inputs(o, r, err))
            return -1;
        o = &r->priv->eff;      /* the run is over the readable traces */
        r->failed = LP_PROFGEN_BINARY;
    }
    lp_phases_enter(o->phases, LP_PHASE_BINARIES);
    if (choose_binaries(o, r, err))
        return -1;
    pg_open_early(o, r);
    if (open_binaries(o, r, err))
        return -1;
    if (pg_generate(o, r, err))
        return -1;
    tailcall_flags_unused(o, r);
    r->failed = LP_PROFGEN_OK;
    return 0;
}
