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
    pi->cc = cc;
    for (b = 0; b < r->nbins; b++)
        if (r->priv->probes[b] &&
            !(pi->tcs[b] = lp_tailcall_new(r->bins[b], &to, err)))
            return -1;
    return 0;
}

int pg_infer_prepare(void *ctx, lp_error *err)
{
    pg_infer *pi = ctx;
    size_t b;

    if (pi->built)
        return 0;
    pi->built = true;
    for (b = 0; b < pi->n; b++)
        if (pi->tcs[b] &&
            lp_tailcall_add_ctxcount(pi->tcs[b], pi->cc, (int)b, err))
            return -1;
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

/* The addresses in[0..n) and the answer v[0..nv) kept for the next
 * context, pos[i] the place of in[i] in v. -1 on no memory. */
static int keep_last(pg_infer *pi, const uint64_t *in, size_t n,
                     const uint64_t *v, size_t nv, const size_t *pos)
{
    size_t c = pi->last_cap, co = pi->last_out_cap;

    if (n > c || nv > co) {
        c = n > c ? n : c;
        co = nv > co ? nv : co;
        free(pi->last_in);
        free(pi->last_pos);
        free(pi->last_out);
        pi->last_in = malloc(c * sizeof *pi->last_in);
        pi->last_pos = malloc(c * sizeof *pi->last_pos);
        pi->last_out = malloc(co * sizeof *pi->last_out);
        pi->nlast = pi->last_cap = pi->last_out_cap = 0;
        if (!pi->last_in || !pi->last_pos || !pi->last_out)
            return -1;
        pi->last_cap = c;
        pi->last_out_cap = co;
    }
    memcpy(pi->last_in, in, n * sizeof *in);
    memcpy(pi->last_pos, pos, n * sizeof *pos);
    memcpy(pi->last_out, v, nv * sizeof *v);
    pi->nlast = n;
    pi->nlast_out = nv;
    return 0;
}

/* Each pair of adjacent addresses completed by its tail-call path. The
 * pairs the last context shared with this one (a common prefix: the
 * contexts come sorted) are not asked again: the same query gives the
 * same answer (LP_TC_LLVM's cache holds what the first one found, and
 * LP_TC_STRICT depends on no earlier query); on sqlite-probe most of the
 * 91 K pairs asked were repeats (lp_tailcall_find 42 M instructions). */
long pg_infer_frames(void *ctx, const uint64_t *in, size_t n, uint64_t **out)
{
    pg_infer *pi = ctx;
    uint64_t *v = NULL;
    size_t nv = 0, cap = 0, i = 0, j, k, keep = 0;
    size_t *pos = malloc((n ? n : 1) * sizeof *pos);
    const uint64_t *path;

    if (!pos)
        goto oom;
    while (keep < n && keep < pi->nlast && in[keep] == pi->last_in[keep])
        keep++;
    if (keep > 1) {     /* the answer up to in[keep - 1]: the last one's */
        for (j = 0; j <= pi->last_pos[keep - 1]; j++)
            if (push(&v, &nv, &cap, pi->last_out[j]))
                goto oom;
        memcpy(pos, pi->last_pos, keep * sizeof *pos);
        i = keep - 1;
    } else {
        keep = 0;
    }
    for (; i < n; i++) {
        if (i >= keep) {
            pos[i] = nv;
            if (push(&v, &nv, &cap, in[i]))
                goto oom;
        }
        k = i + 1 < n ? pair_path(pi, in[i], in[i + 1], &path) : 0;
        for (j = 0; j < k; j++)
            if (push(&v, &nv, &cap,
                     LP_CTX_ADDR(LP_CTX_ADDR_BIN(in[i]), path[j])))
                goto oom;
    }
    if (keep_last(pi, in, n, v, nv, pos))
        pi->nlast = 0;      /* no memory: only the reuse is lost */
    free(pos);
    *out = v;
    return (long)nv;
oom:
    free(v);
    free(pos);
    *out = NULL;
    return -1;
}

void pg_infer_free(pg_infer *pi)
{
    for (size_t b = 0; b < pi->n; b++)
        lp_tailcall_free(pi->tcs[b]);
    free(pi->tcs);
    free(pi->last_in);
    free(pi->last_out);
    free(pi->last_pos);
    memset(pi, 0, sizeof *pi);
}
