/*
 * infer.c - the missing-frame inferrer of a probe CS run
 * (--infer-missing-frames, --max-search-depth): one tail-call graph per
 * binary, built from every branch of the run's counters before generation
 * (llvm-profgen 22's MissingFrameInferrer::initialize(SampleCounters)),
 * and the lp_cs_opts.infer_frames hook that completes an address context
 * pair by pair (inferMissingFrames(Context, NewContext)). Owns the glue
 * between the driver and src/tailcall; not the graph or the searches.
 *
 * With --no-repair-frames the searches are llvm-profgen's (LP_TC_LLVM:
 * byte-identical profiles); in the default mode they are exact
 * (LP_TC_STRICT): frames go in only where one path of tail calls, within
 * the depth limit, explains the pair, never where llvm-profgen's search
 * picks one of several or is cut by its caches.
 */
#include <stdlib.h>
#include <string.h>

#include "profgen/pg_internal.h"

/* The counters' binaries that have probes get a graph each. */
int pg_infer_init(pg_infer *pi, const lp_profgen_opts *o,
                  const lp_profgen_result *r, const lp_ctxcount *cc,
                  lp_error *err)
{
    lp_tailcall_opts to;
    bool on;
    size_t b;

    memset(pi, 0, sizeof *pi);
    pg_tailcall_opts(o, &on, &to);
    if (!on || !pg_probe_mode(r))
        return 0;
    to.mode = o->no_repair_frames ? LP_TC_LLVM : LP_TC_STRICT;
    if (!(pi->tcs = calloc(r->nbins, sizeof *pi->tcs)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    pi->n = r->nbins;
    for (b = 0; b < r->nbins; b++) {
        if (!r->priv->probes[b])
            continue;
        if (!(pi->tcs[b] = lp_tailcall_new(r->bins[b], &to, err)) ||
            lp_tailcall_add_ctxcount(pi->tcs[b], cc, (int)b, err))
            return -1;
    }
    return 0;
}

static int push(uint64_t **v, size_t *n, size_t *cap, uint64_t a)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        uint64_t *nv = realloc(*v, nc * sizeof *nv);
        if (!nv)
            return -1;
        *v = nv;
        *cap = nc;
    }
    (*v)[(*n)++] = a;
    return 0;
}

/* The tail-call sites between two adjacent addresses of a context: none
 * unless both are in one binary that has a graph. */
static size_t pair_path(const pg_infer *pi, uint64_t from, uint64_t to,
                        const uint64_t **path)
{
    size_t b = LP_CTX_ADDR_BIN(from), k = 0;

    if (b != LP_CTX_ADDR_BIN(to) || b >= pi->n || !pi->tcs[b])
        return 0;
    if (lp_tailcall_find(pi->tcs[b], LP_CTX_ADDR_VADDR(from),
                         LP_CTX_ADDR_VADDR(to), path, &k) != LP_TC_UNIQUE)
        return 0;
    return k;
}

long pg_infer_frames(void *ctx, const uint64_t *in, size_t n, uint64_t **out)
{
    const pg_infer *pi = ctx;
    uint64_t *v = NULL;
    size_t nv = 0, cap = 0, i, j, k;
    const uint64_t *path;

    for (i = 0; i < n; i++) {
        if (push(&v, &nv, &cap, in[i]))
            goto oom;
        k = i + 1 < n ? pair_path(pi, in[i], in[i + 1], &path) : 0;
        for (j = 0; j < k; j++)
            if (push(&v, &nv, &cap,
                     LP_CTX_ADDR(LP_CTX_ADDR_BIN(in[i]), path[j])))
                goto oom;
    }
    *out = v;
    return (long)nv;
oom:
    free(v);
    *out = NULL;
    return -1;
}

void pg_infer_free(pg_infer *pi)
{
    for (size_t b = 0; b < pi->n; b++)
        lp_tailcall_free(pi->tcs[b]);
    free(pi->tcs);
    memset(pi, 0, sizeof *pi);
}
