/*
 * rawio.c - the driver's side of lbr2prof's mergeable raw profile
 * (include/lbr2prof/rawmerge.h): what a run writes into its header (the
 * binaries with their build-ids and bases, the base rule, the options the
 * counts depend on, the statistics), and reading one back for
 * --unsymbolized-profile: its binaries found from the header when none is
 * given, checked by build-id when they are. Owns what the header says
 * about a run; the format is src/rawmerge's.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "profgen/pg_internal.h"

/* ---- writing ------------------------------------------------------------ */

static lp_raw_base base_rule(const lp_profgen_opts *o)
{
    return !o->use_offset ? LP_RAW_BASE_NONE
           : o->first_loadable_base ? LP_RAW_BASE_FIRST_LOADABLE
                                    : LP_RAW_BASE_PREFERRED;
}

/* The options the counts depend on, as one canonical string: raw
 * profiles merge only when theirs are equal. Address contexts (probe)
 * also depend on --csprof-max-unsymbolized-context-depth. */
static char *count_options(const lp_profgen_opts *o, bool probe)
{
    char *s = NULL, *ev = NULL, period[24] = "-", pid[24] = "-", unsym[64] = "";
    size_t len = 0, i;
    FILE *m = open_memstream(&ev, &len);

    if (!m)
        return NULL;
    for (i = 0; i < o->nr_events; i++)
        fprintf(m, "%s%s", i ? "," : "", o->events[i]);
    if (o->nr_events == 0)
        fputc('-', m);
    fclose(m);
    if (o->have_sample_period)
        snprintf(period, sizeof period, "%" PRIu64, o->sample_period);
    if (o->pid >= 0)
        snprintf(pid, sizeof pid, "%" PRId64, o->pid);
    if (probe)
        snprintf(unsym, sizeof unsym, " csprof-max-unsymbolized-context-depth=%" PRId64,
                 o->max_unsym_context_depth < -1 ? -1 : o->max_unsym_context_depth);
    if (ev && asprintf(&s, "trace=%s compress-recursion=%" PRId64
                       " csprof-max-context-depth=%" PRId64 "%s repair-frames=%d"
                       " script-fp-callchains=%d ignore-stack-samples=%d"
                       " leading-ip-only=%d sample-period=%s pid=%s perf-events=%s",
                       o->perfscript ? "perf-script" : "perf.data",
                       o->compress_recursion, o->max_context_depth, unsym,
                       !o->no_repair_frames, o->script_fp_callchains,
                       o->ignore_stack_samples, o->leading_ip_only, period, pid,
                       ev) < 0)
        s = NULL;
    free(ev);
    return s;
}

static void fill_stats(lp_raw_stats *s, const lp_profgen_opts *o,
                       const lp_profgen_result *r)
{
    const lp_profgen_stats *st = &r->stats;

    s->traces = pg_ntraces(o) - r->nskipped;   /* those read */
    s->samples = st->samples;
    s->used = st->used;
    s->hybrid = st->hybrid;
    s->lbr_only = st->lbr_only;
    s->lost = st->lost;
    s->repaired = st->repaired;
    s->truncated = st->truncated;
    s->external = st->external;
    s->contextless = st->contextless;
}

static int fill_header(lp_rawhdr *h, const lp_profgen_opts *o,
                       const lp_profgen_result *r, lp_error *err)
{
    const uint8_t *id;
    char *real;
    size_t i, n;
    int rc = 0;

    h->cs = r->kind == LP_PROFGEN_RAW_CS;
    h->addrs = h->cs && pg_probe_mode(r);
    h->base = base_rule(o);
    if (!(h->options = count_options(o, h->addrs)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    fill_stats(&h->stats, o, r);
    for (i = 0; i < r->nbins && rc == 0; i++) {
        n = lp_binary_build_id(r->bins[i], &id);
        real = realpath(r->paths[i], NULL);
        rc = lp_rawhdr_add_binary(h, real ? real : r->paths[i], id, n,
                                  pg_raw_base(o, r->bins[i]), err);
        free(real);
    }
    return rc;
}

int pg_raw_write(FILE *f, const lp_profgen_opts *o, const lp_profgen_result *r,
                 lp_error *err)
{
    lp_rawhdr h = {0};
    int rc = fill_header(&h, o, r, err);

    if (rc == 0)
        rc = lp_raw_write(f, &h, r->raw_cs, r->raw_cs ? NULL : r->raw_flat, err);
    lp_rawhdr_free(&h);
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

int pg_raw_header(const char *path, lp_rawhdr *h, lp_error *err)
{
    FILE *f = fopen(path, "r");
    unsigned long lines;
    int rc;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: cannot open", path);
    rc = lp_rawhdr_read(f, path, h, &lines, err);
    fclose(f);
    return rc;
}

int pg_raw_binaries(const lp_profgen_opts *o, char ***paths, size_t *n,
                    lp_error *err)
{
    lp_rawhdr h = {0};
    const lp_raw_binary *b;
    size_t i;
    int rc = pg_raw_header(o->unsym, &h, err);

    *paths = NULL;
    *n = 0;
    if (rc == 0)
        return lp_error_set(err, LP_EUSAGE, "--binary is required (%s has no "
                            "lbr2prof header naming its binaries)", o->unsym);
    if (rc < 0 || !(*paths = calloc(h.nbins, sizeof **paths)))
        rc = rc < 0 ? -1 : lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; rc > 0 && i < h.nbins; i++, (*n)++) {
        b = &h.bins[i];
        if (!((*paths)[i] = pg_locate(b->path, b->build_id, b->build_id_size,
                                      o->unsym)))
            rc = lp_error_set(err, LP_EIO, "%s: binary %zu, %s (build-id %s), "
                              "is neither at that path nor in the build-id "
                              "cache nor next to the profile nor in the current "
                              "directory; pass --binary", o->unsym, i, b->path,
                              b->build_id_size ? "as recorded" : "none");
    }
    lp_rawhdr_free(&h);
    return rc < 0 ? -1 : 0;
}

/* r->bins are the header's binaries, in its order. */
static int check_binaries(const lp_profgen_opts *o, const lp_profgen_result *r,
                          const lp_rawhdr *h, lp_error *err)
{
    lp_rawhdr given = {0};
    const uint8_t *id;
    size_t i, n;
    int rc = 0;

    for (i = 0; i < r->nbins && rc == 0; i++) {
        n = lp_binary_build_id(r->bins[i], &id);
        rc = lp_rawhdr_add_binary(&given, r->paths[i], id, n, 0, err);
    }
    if (rc == 0)
        rc = lp_rawhdr_check_binaries(h, o->unsym, &given, "--binary",
                                      err);
    lp_rawhdr_free(&given);
    return rc;
}

/* Address contexts are generated as a probe-based profile, frame contexts
 * as a line-based one: the run must be of the header's kind (flat counts
 * are the same for both). */
static int check_kind(const lp_profgen_opts *o, const lp_profgen_result *r,
                      const lp_rawhdr *h, lp_error *err)
{
    if (!h->cs || h->addrs == pg_probe_mode(r))
        return 0;
    if (h->addrs)
        return lp_error_set(err, LP_EUSAGE, "%s has the address contexts of a "
                            "pseudo-probe binary (#lbr2prof-raw 1 probe): they "
                            "make a probe-based profile, not a line-based one "
                            "(leave out --use-dwarf-correlation)", o->unsym);
    return lp_error_set(err, LP_EUSAGE, "%s has line contexts (#lbr2prof-raw 1 "
                        "cs), but %s has pseudo probes: it was counted with "
                        "--use-dwarf-correlation, pass it again", o->unsym,
                        r->paths[0]);
}

/* The flat counters of binary 0 (its empty context), owned by r->priv. */
static int take_flat(lp_profgen_result *r, lp_ctxcount *cc, lp_error *err)
{
    lp_ctx_entry *e;

    r->priv->own_cc = cc;
    if (!(e = lp_ctxcount_find(cc, 0, "")) &&
        !(e = lp_ctxcount_get(cc, 0, NULL, 0, false, err)))
        return -1;
    r->raw_flat = e->counters;
    return 0;
}

int pg_raw_read(const lp_profgen_opts *o, lp_profgen_result *r, lp_error *err)
{
    lp_rawhdr h = {0};
    unsigned long lines;
    lp_ctxcount *cc = NULL;
    FILE *f = fopen(o->unsym, "r");
    int rc;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: cannot open", o->unsym);
    if ((rc = lp_rawhdr_read(f, o->unsym, &h, &lines, err)) == 0)
        rc = lp_error_set(err, LP_EFORMAT, "%s: no lbr2prof header", o->unsym);
    else if (rc == 1)
        rc = 0;
    if (rc == 0)
        rc = check_binaries(o, r, &h, err);
    if (rc == 0)
        rc = check_kind(o, r, &h, err);
    if (rc == 0 && !(cc = lp_ctxcount_new()))
        rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    if (rc == 0)
        rc = lp_raw_read_body(f, o->unsym, &h, lines, 1, cc, NULL, err);
    fclose(f);
    if (rc == 0 && h.cs)
        r->raw_cs = cc;
    else if (rc == 0)
        rc = take_flat(r, cc, err);
    else
        lp_ctxcount_free(cc);
    lp_rawhdr_free(&h);
    return rc;
}
