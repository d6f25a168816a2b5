/*
 * inputs.c - --skip-bad-inputs: which traces of a run can be read. Before
 * the run, every trace is read to its end as the run's pass reads it
 * (the same reader options; through the PT synthesizer with --itrace);
 * one that cannot be (missing, not a trace, cut inside its header - or
 * anywhere with --strict -, corrupt) is left
 * out with a warning naming it and the reader's message, and the run is
 * over the others - the profile of the readable traces, as
 * `lbr2prof fleet --skip-bad-inputs` makes it. A trace is never half
 * counted: the run starts only once every trace was checked. Owns the
 * check and the run's options over the readable traces; reading is
 * src/reader's and src/pt's.
 */
#include <stdlib.h>
#include <string.h>

#include "profgen/pg_internal.h"

/* 0: `path` reads to its end; 1: it does not (*why: the message,
 * malloc'ed); -1: out of memory (err). */
static int check_one(const lp_profgen_opts *o, const char *path, char **why,
                     lp_error *err)
{
    lp_error e = {0};
    lp_reader_opts ro;
    lp_ptsynth *pt = NULL;
    const lp_event *ev;
    lp_reader *r;
    bool text;
    int k = -1;

    pg_reader_opts(o, &ro);
    ro.warn = NULL;     /* a cut-off file's warning is the run's, once */
    if ((r = lp_reader_open(path, &ro, &e))) {
        text = ro.force_text || lp_reader_info(r)->format == LP_FMT_PERF_SCRIPT;
        if (pg_pt_open(o, path, text, &pt, &e) == 0)
            while ((k = pg_next_event(r, pt, &ev, &e)) == 1)
                ;
    }
    lp_ptsynth_close(pt);
    lp_reader_close(r);
    if (k == 0)
        return 0;
    if (e.code == LP_ENOMEM) {
        *err = e;
        return -1;
    }
    if (!(*why = strdup(e.msg[0] ? e.msg : "unreadable")))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 1;
}

static int add_skipped(lp_profgen_result *r, const char *path, char *why,
                       lp_error *err)
{
    lp_profgen_skipped *nv = realloc(r->skipped, (r->nskipped + 1) * sizeof *nv);

    if (!nv || !(nv[r->nskipped].path = strdup(path))) {
        free(why);
        if (nv)
            r->skipped = nv;
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    r->skipped = nv;
    nv[r->nskipped++].why = why;
    return 0;
}

/* Whether the reader's message `why` starts with the file's name. */
static bool named(const char *path, const char *why)
{
    size_t n = strlen(path);

    return strncmp(why, path, n) == 0 && why[n] == ':';
}

/* The run's options over the traces in good[0..n). */
static void over(const lp_profgen_opts *o, lp_profgen_priv *p, size_t n)
{
    p->eff = *o;
    if (o->perfdata)
        p->eff.perfdata = p->good[0];
    else
        p->eff.perfscript = p->good[0];
    p->eff.more_traces = p->good + 1;
    p->eff.nmore_traces = n - 1;
}

int pg_check_inputs(const lp_profgen_opts *o, lp_profgen_result *r,
                    lp_error *err)
{
    size_t n = pg_ntraces(o), ngood = 0, i;
    const char *path;
    char *why = NULL;
    int k = 0;

    if (!(r->priv->good = calloc(n ? n : 1, sizeof *r->priv->good)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; i < n && k >= 0; i++) {
        path = pg_trace_at(o, i);
        if ((k = check_one(o, path, &why, err)) == 0)
            r->priv->good[ngood++] = path;
        else if (k == 1 && (k = add_skipped(r, path, why, err)) == 0)
            pg_warn(o, "left out an unreadable input (--skip-bad-inputs): %s%s%s",
                    named(path, why) ? "" : path, named(path, why) ? "" : ": ", why);
    }
    if (k < 0)
        return -1;
    if (ngood == 0)
        return lp_error_set(err, LP_EFORMAT, "none of the %zu input%s could be "
                            "read (--skip-bad-inputs left out every one)", n,
                            n == 1 ? "" : "s");
    over(o, r->priv, ngood);
    return 0;
}
