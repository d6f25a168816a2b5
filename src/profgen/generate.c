/*
 * generate.c - the driver's routes from an input to a result, once the
 * binaries are open: a trace (flat or context-sensitive counters, from
 * trace.c), an unsymbolized profile (flat or CS), or an LLVM text profile;
 * then generation and post-processing (src/flat, src/context). Owns which
 * route runs and the options each stage gets; not the stages themselves.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/phases.h"
#include "profgen/pg_internal.h"

/* The flat generator's options: the command line's, with our messages. */
static void flat_opts(const lp_profgen_opts *o, lp_flat_opts *fo)
{
    *fo = o->flat;
    fo->warn = o->warn;
    fo->warn_ctx = o->warn_ctx;
    fo->leading_ip_only = o->leading_ip_only;
    fo->info = o->info;
}

/* The CS generator's: its own, plus the flags llvm-profgen shares between
 * the flat and the CS post-processing. */
void pg_cs_opts(const lp_profgen_opts *o, lp_cs_opts *co)
{
    *co = o->cs;
    co->update_total_samples = o->flat.update_total_samples;
    co->trim_cold_profile = o->flat.trim_cold_profile;
    co->hot_count = o->flat.hot_count;
    co->cold_count = o->flat.cold_count;
    co->cutoff_hot = o->flat.cutoff_hot;
    co->cutoff_cold = o->flat.cutoff_cold;
    co->density_threshold = o->flat.density_threshold;
    co->density_cutoff_hot = o->flat.density_cutoff_hot;
    co->show_density = o->flat.show_density;
    co->warn = o->warn;
    co->warn_ctx = o->warn_ctx;
    co->info = o->info;
    co->phases = o->phases;
}

/* The CS options of a run: with probe tables when it is probe-based. */
static void run_cs_opts(const lp_profgen_opts *o, const lp_profgen_result *r,
                        lp_cs_opts *co)
{
    pg_cs_opts(o, co);
    co->compress_recursion = (int)o->compress_recursion;
    co->max_context_depth = o->max_context_depth < -1 ? -1
                            : o->max_context_depth > INT32_MAX ? INT32_MAX
                                                               : (int)o->max_context_depth;
    if (pg_probe_mode(r))
        co->probes = r->priv->probes;
}

static int new_profile(lp_profgen_result *r, lp_error *err)
{
    r->kind = LP_PROFGEN_PROFILE;
    if (!(r->profile = lp_profile_new()))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

/* decodePseudoProbe's --show-pseudo-probe output: the descriptions,
 * when a profile is generated from a probe binary. */
static void show_probes(const lp_profgen_opts *o, const lp_profgen_result *r)
{
    if (o->show_pseudo_probe && o->info && pg_probe_mode(r) &&
        !o->skip_symbolization)
        lp_probes_print_descs(r->priv->probes[0], o->info);
}

/* Per-context counters -> the CS profile (the counters are used up), or
 * kept as they are with --skip-symbolization. */
static int from_contexts(const lp_profgen_opts *o, lp_profgen_result *r,
                         lp_error *err)
{
    lp_cs_opts co;
    pg_infer pi;
    int rc;

    r->context_sensitive = true;
    r->failed = LP_PROFGEN_GENERATE;
    if (o->skip_symbolization) {
        r->kind = LP_PROFGEN_RAW_CS;
        return 0;
    }
    show_probes(o, r);
    if (new_profile(r, err))
        return -1;
    lp_phases_enter(o->phases, LP_PHASE_GENERATE);
    run_cs_opts(o, r, &co);
    /* llvm-profgen 22 builds the inferrer's graph from the counters before
     * generating a probe CS profile (the counters are used up after):
     * here generation builds it (pg_infer_prepare) before its first
     * context, beside the probe decoding on a second core */
    rc = pg_infer_init(&pi, o, r, r->raw_cs, err);
    if (rc == 0 && pi.n) {
        co.infer_frames = pg_infer_frames;
        co.infer_prepare = pg_infer_prepare;
        co.infer_ctx = &pi;
        r->missing_frames_inferred = true;
    }
    if (rc == 0)
        rc = lp_cs_profile_consume(r->bins, r->nbins, r->raw_cs, &co,
                                   r->profile, err);
    pg_infer_free(&pi);
    lp_ctxcount_free(r->raw_cs);
    r->raw_cs = NULL;
    return rc;
}

/* Flat counters -> the flat profile, or kept with --skip-symbolization. */
static int from_counters(const lp_profgen_opts *o, lp_profgen_result *r,
                         lp_error *err)
{
    lp_flat_opts fo;

    r->failed = LP_PROFGEN_GENERATE;
    if (o->skip_symbolization) {
        r->kind = LP_PROFGEN_RAW_FLAT;
        return 0;
    }
    show_probes(o, r);
    flat_opts(o, &fo);
    if (new_profile(r, err))
        return -1;
    lp_phases_enter(o->phases, LP_PHASE_GENERATE);
    if (pg_probe_mode(r) ? lp_flat_generate_probes(r->bins[0], r->priv->probes[0],
                                                   r->raw_flat, &fo, r->profile,
                                                   err)
                         : lp_flat_generate(r->bins[0], r->raw_flat, &fo,
                                            r->profile, err))
        return -1;
    lp_phases_enter(o->phases, LP_PHASE_POSTPROCESS);
    return lp_flat_postprocess(r->profile, &fo, err);
}

/* llvm-profgen treats an unsymbolized profile as CS once it sees a
 * "[context]" header line. 1, 0, or -1 with err. */
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

/* --unsymbolized-profile, with contexts or flat: lbr2prof's mergeable raw
 * profile (rawio.c) or llvm-profgen's. */
static int from_unsym(const lp_profgen_opts *o, lp_profgen_result *r,
                      lp_error *err)
{
    uint64_t base = pg_raw_base(o, r->bins[0]);
    lp_rawhdr hdr = {0};
    bool is_cs;
    FILE *f;
    int cs, rc;

    r->failed = LP_PROFGEN_INPUT;
    lp_phases_enter(o->phases, LP_PHASE_READ);
    if ((cs = pg_raw_header(o->unsym, &hdr, err)) != 0) {
        lp_rawhdr_free(&hdr);
        if (cs < 0 || pg_raw_read(o, r, err))
            return -1;
        return r->raw_cs ? from_contexts(o, r, err) : from_counters(o, r, err);
    }
    if ((cs = raw_is_cs(o->unsym, err)) < 0)
        return -1;
    if (!(f = fopen(o->unsym, "r")))
        return lp_error_set(err, LP_EIO, "%s: cannot open", o->unsym);
    if (cs && !(r->raw_cs = lp_ctxcount_new()))
        rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    else if (cs)
        rc = (pg_probe_mode(r) ? lp_cs_raw_read_addrs : lp_cs_raw_read)(
            f, o->unsym, 0, base, r->raw_cs, &is_cs, err);
    else if (!(r->priv->own = lp_counters_new()))
        rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    else
        rc = lp_rawprof_read(f, o->unsym, base, r->priv->own, err);
    fclose(f);
    if (rc)
        return -1;
    if (cs)
        return from_contexts(o, r, err);
    r->raw_flat = r->priv->own;
    return from_counters(o, r, err);
}

/* --llvm-sample-profile: read (text, binary or extbinary, as
 * llvm-profgen's SampleProfileReader), then post-process as a flat or CS
 * profile. */
static int from_llvm_profile(const lp_profgen_opts *o, lp_profgen_result *r,
                             lp_error *err)
{
    lp_flat_opts fo;
    lp_cs_opts co;

    r->failed = LP_PROFGEN_INPUT;
    r->kind = LP_PROFGEN_PROFILE;
    lp_phases_enter(o->phases, LP_PHASE_READ);
    r->profile = lp_profile_read(o->llvm_prof, NULL, err);
    if (!r->profile)
        return -1;
    show_probes(o, r);
    r->failed = LP_PROFGEN_GENERATE;
    lp_phases_enter(o->phases, LP_PHASE_POSTPROCESS);
    if (r->profile->is_cs) {
        r->context_sensitive = true;
        run_cs_opts(o, r, &co);
        return lp_cs_postprocess(r->bins, r->nbins, NULL, &co, r->profile, err);
    }
    flat_opts(o, &fo);
    return lp_flat_postprocess(r->profile, &fo, err);
}

/* A trace: the counters (trace.c), then flat or CS generation. */
static int from_trace(const lp_profgen_opts *o, lp_profgen_result *r,
                      lp_error *err)
{
    pg_run run = {.o = o, .r = r};
    int rc = pg_count_trace(&run, err);

    if (rc == 0 && r->raw_flat) { /* the aggregator owns the counters */
        r->priv->agg = run.agg;
        run.agg = NULL;
    }
    pg_run_free(&run);
    if (rc)
        return -1;
    return r->raw_cs ? from_contexts(o, r, err) : from_counters(o, r, err);
}

int pg_generate(const lp_profgen_opts *o, lp_profgen_result *r, lp_error *err)
{
    if (o->unsym)
        return from_unsym(o, r, err);
    if (o->llvm_prof)
        return from_llvm_profile(o, r, err);
    return from_trace(o, r, err);
}
