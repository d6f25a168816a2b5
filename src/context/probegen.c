/*
 * probegen.c - llvm-profgen 22's CSProfileGenerator::generateProbeBasedProfile:
 * per address context of the unwinder (the callers' call sites), the
 * probes of the context's disjoint ranges give body counts (block probes
 * with a count: the count at the probe id and discriminator, added to the
 * total; entry probes also head samples and, for an inlined function, the
 * call site and call target in the inliner's profile), every probe of a
 * touched inline frame gets a zero record, and branches from call probes
 * count the call site and its target. The context of a probe is the
 * callers' call probes expanded into their inline stacks, then the
 * probe's own inline stack, recursion-compressed and trimmed (leaf
 * excluded); missing tail-call frames are put back first by the
 * --infer-missing-frames hook when one is given (lp_cs_opts.infer_frames).
 * No call-site inference and no count fix-ups follow (llvm-profgen does
 * none for probes). The trie goes on to the common post-processing.
 * Owns probe-based generation only; decoding is src/probe's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"
#include "lbr2prof/unwind.h"
#include "util/cpus.h"
#include "util/hash.h"
#include "util/sort.h"

typedef struct pcount {         /* a probe and its count in one context */
    uint32_t id, node;
    uint64_t count;
} pcount;

typedef struct pgen {
    cs_trie *t;
    lp_binary *const *bins;
    lp_probes *const *probes;
    size_t nbins;
    const lp_cs_opts *o;
    pthread_mutex_t *bin_lock;  /* the binaries' lock while the context
                                   sizes are built alongside, else NULL */
    uint8_t **code;             /* per binary, per probe: 0 not asked,
                                   1 at an instruction start, 2 not */
    cs_pmemo *memo;
    cs_pathmemo path;           /* the last context's trie path */
    lp_error *err;
    /* the context being generated */
    const lp_ctx_entry *e;
    lp_binary *bin;
    lp_probes *pr;
    bool have_prefix;
    const lp_function *prefix_fn; /* inferred frames: the leaf function
                                   the prefix was completed for */
    lp_probe_frame *prefix;     /* the callers' frames (inline-expanded) */
    size_t nprefix, prefix_cap;
    lp_probe_frame *fr;         /* frames scratch */
    size_t fr_cap;
    const lp_probe **calls;     /* the prefix's call probes scratch */
    size_t calls_cap;
    const lp_func_range *leaf_r;/* inferred frames: the range of the
                                   last leaf asked for */
    lp_ctx_frame *cf;
    size_t cf_cap;
    pcount *pc;                 /* probe counts scratch */
    size_t npc, pc_cap;
    lp_dj_scratch dj;           /* the context's disjoint ranges */
    pcount *pc_tmp;             /* ... and its sort's */
    size_t pc_tmp_cap;
    lp_loc *zl;                 /* zero_fill's locations scratch */
    size_t zl_cap;
    uint8_t *zmark;             /* ... and its ids' marks */
    size_t zmark_cap;
    uint32_t *memo_node;        /* per context: inline node -> trie node */
    cs_node **memo_trie;
    size_t nmemo, memo_cap;
} pgen;

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
    size_t nc = *cap ? *cap : 16;
    void *nv;

    if (n <= *cap)
        return 0;
    while (nc < n)
        nc *= 2;
    if (!(nv = realloc(*v, nc * elem)))
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

/* ---- the profiled functions, decoded ------------------------------------------ */

#define FV_SEEN_BITS 12
#define FV_SEEN (1u << FV_SEEN_BITS) /* slots of fvec.seen */

typedef struct fvec {           /* a set of functions, duplicates allowed */
    const lp_function **v;
    size_t n, cap;
    const lp_func_range *last;  /* the range of the last address added */
    const lp_function *seen[FV_SEEN]; /* functions added, by pointer hash */
} fvec;

/* The function at addr into f. A context's ranges and branches come in
 * address order: most are in the range of the one before, which is then
 * neither looked up nor added again (~1 M additions on SQLite otherwise,
 * which lp_probes_decode_for sorts to drop the duplicates). A function
 * found in its `seen` slot is not added again either: the ~290 K
 * additions left on sqlite-probe were ~3 K functions, and sorting them
 * cost 62 M instructions (~8% of generation) on the main thread before
 * the context sizes' thread can start; a slot taken by another function
 * only lets a duplicate through, which lp_probes_decode_for drops. */
static void fv_add(fvec *f, lp_binary *b, uint64_t addr, int *oom)
{
    const lp_func_range *r = f->last;
    size_t h;

    if (r && addr >= r->start && addr < r->end)
        return;
    if (!(r = lp_binary_func_range(b, addr)))
        return;
    f->last = r;
    h = lp_hash_fib((uintptr_t)r->func, FV_SEEN_BITS);
    if (f->seen[h] == r->func)
        return;
    f->seen[h] = r->func;
    if (grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v))
        *oom = 1;
    else
        f->v[f->n++] = r->func;
}

static bool all_decoded(lp_probes *const *probes, size_t nbins)
{
    size_t b;

    for (b = 0; b < nbins; b++)
        if (probes[b] && !lp_probes_decoded(probes[b]))
            return false;
    return true;
}

/* collectFunctionsFromRawProfile for address contexts, then
 * decodePseudoProbe for each binary not decoded yet. */
int cs_probes_decode(lp_binary *const *bins, size_t nbins,
                     lp_probes *const *probes, const lp_ctxcount *cc,
                     lp_error *err)
{
    fvec *fv;
    lp_ctx_entry **v = NULL;
    long n, i, k, m;
    const lp_addr_pair_count *r;
    int oom, rc = 0;
    size_t b;

    if (all_decoded(probes, nbins))
        return 0;
    fv = calloc(nbins ? nbins : 1, sizeof *fv);
    n = lp_ctxcount_all(cc, &v);
    oom = !fv || n < 0;
    for (i = 0; !oom && i < n; i++) {
        lp_binary *bin = (size_t)v[i]->bin < nbins ? bins[v[i]->bin] : NULL;
        for (k = 0; k < (long)v[i]->naddrs; k++) {
            b = LP_CTX_ADDR_BIN(v[i]->addrs[k]);
            if (b < nbins && bins[b])
                fv_add(&fv[b], bins[b], LP_CTX_ADDR_VADDR(v[i]->addrs[k]), &oom);
        }
        if (!bin)
            continue;
        m = lp_counters_ranges_view(v[i]->counters, &r);
        for (k = 0; k < m; k++)
            fv_add(&fv[v[i]->bin], bin, r[k].a, &oom);
        m = lp_counters_branches_view(v[i]->counters, &r);
        for (k = 0; k < m; k++) {
            fv_add(&fv[v[i]->bin], bin, r[k].a, &oom);
            if (!LP_CTX_IS_XBIN(r[k].b))
                fv_add(&fv[v[i]->bin], bin, r[k].b, &oom);
        }
    }
    for (b = 0; !oom && rc == 0 && b < nbins; b++)
        if (probes[b] && !lp_probes_decoded(probes[b]))
            rc = lp_probes_decode_for(probes[b], fv[b].v, fv[b].n, err);
    for (b = 0; fv && b < nbins; b++)
        free(fv[b].v);
    free(fv);
    free(v);
    return oom ? cs_oom(err) : rc;
}

/* ---- the profiled functions for the context sizes, alongside ------------------- */

typedef struct collect_job {    /* cs_funcs_collect and the inferrer's
                                   preparation on a second thread */
    lp_binary *const *bins;
    size_t nbins;
    const lp_ctxcount *cc;
    const lp_cs_opts *o;
    cs_funcs *funcs;
    int prep_rc;                /* o->infer_prepare's */
    lp_error err, prep_err;
} collect_job;

static void *collect_main(void *arg)
{
    collect_job *j = arg;

    j->funcs = cs_funcs_collect(j->bins, j->nbins, j->cc, NULL, &j->err);
    if (j->funcs && j->o->infer_prepare)
        j->prep_rc = j->o->infer_prepare(j->o->infer_ctx, &j->prep_err);
    return NULL;
}

cs_funcs *cs_probes_prepare(lp_binary *const *bins, size_t nbins,
                            const lp_cs_opts *o, const lp_ctxcount *cc,
                            lp_error *err)
{
    collect_job j = {.bins = bins, .nbins = nbins, .cc = cc, .o = o};
    lp_ctx_entry **v = NULL;
    const lp_addr_pair_count *r;
    pthread_t th;
    bool alongside;
    long n, i;
    int rc;

    /* the keys printed and every counter table sorted (a view sorts its
     * table the first time) now: then both threads only read them */
    if ((n = lp_ctxcount_all(cc, &v)) < 0)
        return cs_oom(err), NULL;
    for (i = 0; i < n; i++) {
        lp_counters_ranges_view(v[i]->counters, &r);
        lp_counters_branches_view(v[i]->counters, &r);
    }
    free(v);
    alongside = lp_cpus() >= 2 && !all_decoded(o->probes, nbins) &&
                pthread_create(&th, NULL, collect_main, &j) == 0;
    rc = cs_probes_decode(bins, nbins, o->probes, cc, err);
    if (alongside)
        pthread_join(th, NULL);
    else
        collect_main(&j);
    if (rc == 0 && !j.funcs)
        *err = j.err;
    else if (rc == 0 && j.prep_rc) {
        *err = j.prep_err;
        rc = -1;
    }
    if (rc && j.funcs) {
        cs_funcs_free(j.funcs);
        j.funcs = NULL;
    }
    return j.funcs;
}

/* ---- contexts -------------------------------------------------------------------- */

/* Append a probe's inline stack (leaf included) to g->fr[0..*n). */
static int append_stack(pgen *g, lp_probes *pr, const lp_probe *p, size_t *n)
{
    size_t k = lp_probes_inline_stack(pr, p, true, g->fr, *n, g->fr_cap);

    if (k > g->fr_cap) {
        if (grow((void **)&g->fr, &g->fr_cap, k, sizeof *g->fr))
            return cs_oom(g->err);
        k = lp_probes_inline_stack(pr, p, true, g->fr, *n, g->fr_cap);
    }
    *n = k;
    return 0;
}

/* The context's addresses, completed by the missing-frame hook with the
 * leaf address (then dropped again); *own set when they are new memory. */
static long context_addrs(pgen *g, uint64_t leaf, const uint64_t **a,
                          uint64_t **own)
{
    const lp_ctx_entry *e = g->e;
    uint64_t *in;
    bool lock;
    long n;

    *own = NULL;
    *a = e->addrs;
    if (!g->o->infer_frames)
        return (long)e->naddrs;
    if (!(in = malloc((e->naddrs + 1) * sizeof *in)))
        return -1;
    memcpy(in, e->addrs, e->naddrs * sizeof *in);
    in[e->naddrs] = LP_CTX_ADDR((size_t)e->bin, leaf);
    lock = g->bin_lock && !g->o->infer_prepare; /* else it only reads them */
    if (lock)                   /* the hook may call into the binaries */
        pthread_mutex_lock(g->bin_lock);
    n = g->o->infer_frames(g->o->infer_ctx, in, e->naddrs + 1, own);
    if (lock)
        pthread_mutex_unlock(g->bin_lock);
    free(in);
    if (n < 1)
        return -1;
    *a = *own;
    return n - 1;
}

/* extractPrefixContextStack: the call probes of the addresses from the
 * innermost back to the first address without one, expanded outermost
 * first into g->prefix. */
static int make_prefix(pgen *g, uint64_t leaf)
{
    const uint64_t *a;
    uint64_t *own;
    long n = context_addrs(g, leaf, &a, &own), i, first;
    size_t k = 0;
    int rc = 0;

    if (n < 0)
        return cs_oom(g->err);
    if (grow((void **)&g->calls, &g->calls_cap, (size_t)n + 1, sizeof *g->calls)) {
        free(own);
        return cs_oom(g->err);
    }
    for (first = n; first > 0; first--) {
        size_t b = LP_CTX_ADDR_BIN(a[first - 1]);
        if (b >= g->nbins || !g->probes[b] ||
            !(g->calls[first - 1] = lp_probes_call_at(g->probes[b],
                                                      LP_CTX_ADDR_VADDR(a[first - 1]))))
            break;
    }
    for (i = first; i < n && rc == 0; i++)
        rc = append_stack(g, g->probes[LP_CTX_ADDR_BIN(a[i])], g->calls[i], &k);
    free(own);
    if (rc == 0 && grow((void **)&g->prefix, &g->prefix_cap, k + 1,
                        sizeof *g->prefix))
        rc = cs_oom(g->err);
    if (rc == 0 && k)
        memcpy(g->prefix, g->fr, k * sizeof *g->fr);
    g->nprefix = k;
    g->have_prefix = true;
    return rc;
}

/* The CFG checksum of a profile. A function of one name in two binaries
 * (two programs' main, given both as --binary) has two: the lowest
 * binary's (the first --binary) is kept, whatever order the contexts come
 * in (llvm-profgen, one binary, has one writer; here the last one won,
 * so the traces' order changed the profile); the profile is marked mixed
 * for the warning (mixed_warning). */
static void set_checksum(const pgen *g, cs_prof *prof, uint64_t hash)
{
    uint16_t from = (uint16_t)(g->e->bin + 1);

    if (prof->csum_from && prof->csum_from != from && prof->fs.checksum != hash)
        prof->csum_mixed = true;
    if (!prof->csum_from || from <= prof->csum_from) {  /* one binary: the last, as llvm-profgen */
        prof->fs.checksum = hash;
        prof->csum_from = from;
    }
}

#define REPEAT_BITS 7

/* Whether two of f[0..n) are equal frames as recursion compression
 * compares them (collect.c's frame_eq: the same call site, the same name).
 * Without such a pair it has nothing to fold, and its quadratic search
 * (46 M instructions on sqlite-probe's 25 K leaves) is not run. The call
 * sites go in a small table; only frames of one call site are compared. */
static bool frames_repeat(const lp_ctx_frame *f, size_t n)
{
    uint8_t slot[1u << REPEAT_BITS] = {0};      /* 1 + frame index */
    const size_t mask = (1u << REPEAT_BITS) - 1;
    size_t i, h;
    const lp_ctx_frame *o;

    if (n >= (1u << REPEAT_BITS) / 2)
        return true;            /* long: let the compression look */
    for (i = 0; i < n; i++) {
        h = lp_hash_fib((uint64_t)f[i].loc.line << 32 | f[i].loc.disc,
                        REPEAT_BITS);
        for (; slot[h]; h = (h + 1) & mask) {
            o = &f[slot[h] - 1];
            if (o->loc.line == f[i].loc.line && o->loc.disc == f[i].loc.disc &&
                (o->func == f[i].func || strcmp(o->func, f[i].func) == 0))
                return true;
        }
        slot[h] = (uint8_t)(i + 1);
    }
    return false;
}

/* getContextNodeForLeafProbe, remembered per inline node of the context. */
static cs_node *leaf_node(pgen *g, const lp_probe *p)
{
    size_t n, i, m;
    lp_ctx_frame leaf;
    cs_node *node;
    cs_prof *prof;
    const lp_probe_node *nodes;

    for (i = g->nmemo; i > 0; i--)  /* the latest first: body() asks
                                       node by node */
        if (g->memo_node[i - 1] == p->node)
            return g->memo_trie[i - 1];
    if (g->o->infer_frames) {   /* the inferred frames depend on the leaf's
                                   function only */
        const lp_func_range *r = g->leaf_r;
        if (!r || p->addr < r->start || p->addr >= r->end)
            r = g->leaf_r = lp_binary_func_range(g->bin, p->addr);
        if (g->have_prefix && g->prefix_fn != (r ? r->func : NULL))
            g->have_prefix = false;
        g->prefix_fn = r ? r->func : NULL;
    }
    if (!g->have_prefix && make_prefix(g, p->addr))
        return NULL;
    if (grow((void **)&g->fr, &g->fr_cap, g->nprefix + 1, sizeof *g->fr))
        return cs_oom(g->err), NULL;
    if (g->nprefix)
        memcpy(g->fr, g->prefix, g->nprefix * sizeof *g->fr);
    n = g->nprefix;
    if (append_stack(g, g->pr, p, &n) ||
        grow((void **)&g->cf, &g->cf_cap, n, sizeof *g->cf))
        return cs_oom(g->err), NULL;
    for (i = 0; i < n; i++)
        g->cf[i] = (lp_ctx_frame){g->fr[i].func, {g->fr[i].index, 0}};
    leaf = (lp_ctx_frame){g->cf[n - 1].func, {0, 0}};
    m = frames_repeat(g->cf, n - 1)
            ? lp_ctx_compress_recursion(g->cf, n - 1, g->o->compress_recursion)
            : n - 1;
    m = lp_ctx_trim(g->cf, m, g->o->max_context_depth);
    g->cf[m++] = leaf;
    if (!(node = cs_path(g->t, g->cf, m, g->memo, &g->path)) ||
        !(prof = cs_prof_get(g->t, node)))
        return cs_oom(g->err), NULL;
    lp_probes_nodes(g->pr, &nodes);
    if (nodes[p->node].parent != LP_PROBE_NONE)
        prof->fs.attrs |= CS_WAS_INLINED;
    set_checksum(g, prof, g->fr[n - 1].hash);
    if (grow((void **)&g->memo_node, &g->memo_cap, g->nmemo + 1,
             sizeof *g->memo_node) ||
        !(g->memo_trie = realloc(g->memo_trie, g->memo_cap * sizeof *g->memo_trie)))
        return cs_oom(g->err), NULL;
    g->memo_node[g->nmemo] = p->node;
    g->memo_trie[g->nmemo++] = node;
    return node;
}

/* ---- body samples ---------------------------------------------------------------- */

static bool pc_less(const pcount *a, const pcount *b)
{
    return a->node != b->node ? a->node < b->node : a->id < b->id;
}

#define PC_RUN 16

/* g->pc in (node, id) order: insertion sorts of PC_RUN entries, then
 * bottom-up merges through g->pc_tmp, the comparison inline (glibc's
 * qsort, a comparison call each, was 16 M instructions of sqlite-probe's
 * generation for its 1 K contexts of more than 24 probes). Equal keys are
 * one probe, summed after: their order does not matter. -1 on no memory. */
static int pc_sort(pgen *g)
{
    size_t n = g->npc, i, j, w, lo, mid, hi;
    pcount *a = g->pc, *b, *x, t;

    for (lo = 0; lo < n; lo += PC_RUN)
        for (i = lo + 1; i < n && i < lo + PC_RUN; i++) {
            t = a[i];
            for (j = i; j > lo && pc_less(&t, &a[j - 1]); j--)
                a[j] = a[j - 1];
            a[j] = t;
        }
    if (n <= PC_RUN)
        return 0;
    if (grow((void **)&g->pc_tmp, &g->pc_tmp_cap, n, sizeof *g->pc_tmp))
        return -1;
    b = g->pc_tmp;
    for (w = PC_RUN; w < n; w *= 2) {
        for (lo = 0; lo < n; lo += 2 * w) {
            mid = lo + w < n ? lo + w : n;
            hi = lo + 2 * w < n ? lo + 2 * w : n;
            for (i = lo, j = mid, x = b + lo; i < mid || j < hi;)
                *x++ = j == hi || (i < mid && !pc_less(&a[j], &a[i]))
                           ? a[i++] : a[j++];
        }
        x = a, a = b, b = x;
    }
    if (a != g->pc)
        memcpy(g->pc, a, n * sizeof *a);
    return 0;
}

/* Whether probe `id` of the context's binary is at an instruction start,
 * asked of the binary once per probe (under the lock while the sizes
 * are built alongside). -1 on no memory. */
static int probe_is_code(pgen *g, uint32_t id, uint64_t addr)
{
    uint8_t **c = &g->code[g->e->bin];

    if (!*c && !(*c = calloc(lp_probes_count(g->pr), 1)))
        return -1;
    if (!(*c)[id]) {            /* the lock only for a region the sizes'
                                   thread has not disassembled yet */
        int k = g->bin_lock ? lp_binary_is_code_ready(g->bin, addr) : -1;
        if (k < 0 && g->bin_lock) {
            pthread_mutex_lock(g->bin_lock);
            k = lp_binary_is_code(g->bin, addr);
            pthread_mutex_unlock(g->bin_lock);
        } else if (k < 0) {
            k = lp_binary_is_code(g->bin, addr);
        }
        (*c)[id] = k ? 1 : 2;
    }
    return (*c)[id] == 1;
}

/* extractProbesFromRange: every probe at an instruction start of the
 * context's disjoint ranges, with the counts summed per probe. */
static int count_probes(pgen *g)
{
    const lp_addr_pair_count *r, *d;
    long nr = lp_counters_ranges_view(g->e->counters, &r), nd, i;
    const uint32_t *ids;
    size_t k, n, j;

    g->npc = 0;
    if ((nd = lp_flat_disjoint_ranges_in(r, (size_t)nr, &g->dj, &d)) < 0)
        return cs_oom(g->err);
    for (i = 0; i < nd; i++) {
        n = lp_probes_in(g->pr, d[i].a, d[i].b, &ids);
        for (k = 0; k < n; k++) {
            const lp_probe *p = lp_probes_probe(g->pr, ids[k]);
            int code = probe_is_code(g, ids[k], p->addr);
            if (code == 0)
                continue;
            if (code < 0 ||
                grow((void **)&g->pc, &g->pc_cap, g->npc + 1, sizeof *g->pc))
                return cs_oom(g->err);
            g->pc[g->npc++] = (pcount){ids[k], p->node, d[i].count};
        }
    }
    if (g->npc > 1 && pc_sort(g))   /* g->pc is NULL while nothing was counted */
        return cs_oom(g->err);
    for (i = 0, j = 0; (size_t)i < g->npc; i++) {   /* one count per probe */
        if (j && g->pc[j - 1].id == g->pc[i].id)
            g->pc[j - 1].count = lp_sat_add(g->pc[j - 1].count, g->pc[i].count);
        else
            g->pc[j++] = g->pc[i];
    }
    g->npc = j;
    return 0;
}

static int add_body(lp_fsamples *fs, lp_loc loc, uint64_t n)
{
    lp_body_rec *b = lp_fs_body(fs, loc);

    if (!b)
        return -1;
    lp_body_add(b, n);
    return 0;
}

/* An entry probe of an inlined function: its call site in the inliner's
 * profile (the context's parent node). */
static int inliner_site(pgen *g, const lp_probe *p, cs_node *node, uint64_t n)
{
    const lp_probe_node *nodes;
    const lp_probe_desc *d;
    lp_body_rec *b;
    cs_prof *caller;

    lp_probes_nodes(g->pr, &nodes);
    if (nodes[p->node].parent == LP_PROBE_NONE || !node->parent ||
        node->parent == &g->t->root)
        return 0;
    d = lp_probes_desc(g->pr, nodes[nodes[p->node].parent].guid);
    if (!(caller = cs_prof_get(g->t, node->parent)))
        return cs_oom(g->err);
    set_checksum(g, caller, d ? d->hash : 0);
    if (!(b = lp_fs_body(&caller->fs, node->callsite)))
        return cs_oom(g->err);
    lp_body_add(b, n);
    caller->fs.total = lp_sat_add(caller->fs.total, n);
    if (lp_body_add_target(b, node->func->s, n))
        return cs_oom(g->err);
    return 0;
}

static int loc_cmp(const void *x, const void *y)
{
    const lp_loc *a = x, *b = y;

    if (a->line != b->line)
        return a->line < b->line ? -1 : 1;
    return a->disc < b->disc ? -1 : a->disc > b->disc;
}

/* g->zl[0..n) sorted and made distinct by marking their ids when none has
 * a discriminator and the ids are dense (a function's probe ids are
 * 1..N): the new count, 0 when not done that way, -1 on no memory.
 * glibc's merge sort was 53 M instructions on sqlite-probe's nodes. */
static size_t zl_sorted_ids(pgen *g, uint32_t n)
{
    uint32_t lo = UINT32_MAX, hi = 0, i, k = 0;

    for (i = 0; i < n; i++) {
        if (g->zl[i].disc)
            return 0;
        lo = g->zl[i].line < lo ? g->zl[i].line : lo;
        hi = g->zl[i].line > hi ? g->zl[i].line : hi;
    }
    if (hi - lo > 4 * n + 64)
        return 0;
    if (grow((void **)&g->zmark, &g->zmark_cap, hi - lo + 1, 1))
        return (size_t)-1;
    memset(g->zmark, 0, hi - lo + 1);
    for (i = 0; i < n; i++)
        g->zmark[g->zl[i].line - lo] = 1;
    for (i = 0; i <= hi - lo; i++)
        if (g->zmark[i])
            g->zl[k++] = (lp_loc){lo + i, 0};
    return k;
}

/* Every probe of an inline node gets a record in the profile: the node's
 * locations sorted and merged into the body at once (section order is
 * not location order: one by one, most were a memmove). */
static int zero_fill(pgen *g, uint32_t inode, lp_fsamples *fs)
{
    const lp_probe_node *nodes;
    const lp_probe *p;
    uint32_t i, n;
    size_t k;

    lp_probes_nodes(g->pr, &nodes);
    n = nodes[inode].nprobes;
    if (!n)
        return 0;
    if (grow((void **)&g->zl, &g->zl_cap, n, sizeof *g->zl))
        return cs_oom(g->err);
    for (i = 0; i < n; i++) {
        p = lp_probes_probe(g->pr, nodes[inode].first_probe + i);
        g->zl[i] = (lp_loc){p->index, p->disc};
    }
    if ((k = zl_sorted_ids(g, n)) == (size_t)-1)
        return cs_oom(g->err);
    if (!k) {
        lp_sort(g->zl, n, sizeof *g->zl, loc_cmp);
        for (i = 1, k = 1; i < n; i++)     /* distinct */
            if (loc_cmp(&g->zl[k - 1], &g->zl[i]))
                g->zl[k++] = g->zl[i];
    }
    if (lp_fs_body_ensure(fs, g->zl, k))
        return cs_oom(g->err);
    return 0;
}

/* populateBodySamplesWithProbes */
static int body(pgen *g)
{
    size_t i;
    uint32_t filled = LP_PROBE_NONE;

    if (count_probes(g))
        return -1;
    for (i = 0; i < g->npc; i++) {
        const lp_probe *p = lp_probes_probe(g->pr, g->pc[i].id);
        uint64_t n = g->pc[i].count;
        cs_node *node;
        lp_fsamples *fs;

        if (!lp_probe_is_block(p) || n == 0)
            continue;
        if (!(node = leaf_node(g, p)))
            return -1;
        fs = &node->prof->fs;
        if (filled != p->node && zero_fill(g, p->node, fs))
            return -1;
        filled = p->node;
        if (add_body(fs, (lp_loc){p->index, p->disc}, n))
            return cs_oom(g->err);
        fs->total = lp_sat_add(fs->total, n);
        if (lp_probe_is_entry(p)) {
            fs->head = lp_sat_add(fs->head, n);
            if (inliner_site(g, p, node, n))
                return -1;
        }
    }
    return 0;
}

/* ---- boundary samples -------------------------------------------------------------- */

static const char *callee_of(pgen *g, uint64_t target)
{
    size_t b;

    if (!LP_CTX_IS_XBIN(target))
        return lp_binary_callee_name(g->bin, target);
    b = LP_CTX_XBIN_BIN(target);
    return b < g->nbins && g->bins[b]
               ? lp_binary_callee_name(g->bins[b], LP_CTX_XBIN_VADDR(target))
               : NULL;
}

/* populateBoundarySamplesWithProbes */
static int boundary(pgen *g)
{
    const lp_addr_pair_count *br;
    long n = lp_counters_branches_view(g->e->counters, &br), i;
    const lp_probe *call;
    const char *callee;
    lp_fsamples *fs;
    lp_body_rec *b;
    cs_node *node;

    for (i = 0; i < n; i++) {
        if (br[i].a == LP_EXTERNAL_ADDR ||
            !(call = lp_probes_call_at(g->pr, br[i].a)))
            continue;
        if (!(node = leaf_node(g, call)))
            return -1;
        fs = &node->prof->fs;
        if (add_body(fs, (lp_loc){call->index, 0}, br[i].count))
            return cs_oom(g->err);
        fs->total = lp_sat_add(fs->total, br[i].count);
        if (!(callee = callee_of(g, br[i].b)))
            continue;
        if (!(b = lp_fs_body(fs, (lp_loc){call->index, call->disc})) ||
            lp_body_add_target(b, callee, br[i].count))
            return cs_oom(g->err);
    }
    return 0;
}

/* ---- the contexts -------------------------------------------------------------------- */

/* The profiles the context wrote to (its leaves' and their inliners')
 * give back their bodies' slack: bodies start at 8 records and double,
 * and most are done after one context (sqlite-probe: 15.6 -> ~9 MB at
 * generation's peak; a later context regrows them). */
static void shrink_touched(pgen *g)
{
    cs_node *n, *up;
    size_t i;

    for (i = 0; i < g->nmemo; i++) {
        n = g->memo_trie[i];
        lp_fs_shrink(&n->prof->fs);
        up = n->parent;
        if (up && up != &g->t->root && up->prof)
            lp_fs_shrink(&up->prof->fs);
    }
}

static int add_context(pgen *g, const lp_ctx_entry *e)
{
    if (e->bin < 0 || (size_t)e->bin >= g->nbins || !g->bins[e->bin] ||
        !g->probes[e->bin])
        return lp_error_set(g->err, LP_EUSAGE, "CS profile generation: context "
                            "\"%s\" names binary %d, which has no pseudo "
                            "probes", e->key, e->bin);
    if (!e->addrs)
        return lp_error_set(g->err, LP_EUSAGE, "CS profile generation: context "
                            "\"%s\" is not an address context (a pseudo-probe "
                            "binary's)", e->key);
    g->e = e;
    if (g->bin != g->bins[e->bin])
        g->leaf_r = NULL;       /* a range of another binary */
    g->bin = g->bins[e->bin];
    g->pr = g->probes[e->bin];
    g->have_prefix = false;
    g->nmemo = 0;
    if (body(g) || boundary(g))
        return -1;
    shrink_touched(g);
    return 0;
}

/* One warning for the profiles whose function had different checksums in
 * different binaries (counted over the trie: independent of order). */
static void mixed_warning(const pgen *g)
{
    const cs_prof *p;
    uint64_t n = 0;

    for (p = g->t->profs; p; p = p->next)
        n += p->csum_mixed;
    if (n)
        lp_warnf(g->o->warn, g->o->warn_ctx, "%" PRIu64 " %s of "
                 "functions whose name is in several binaries with different "
                 "CFG checksums (two programs' main?): each has the checksum "
                 "of the first --binary among them, and counts of both", n,
                 n == 1 ? "profile is" : "profiles are");
}

static void pgen_free(pgen *g)
{
    size_t b;

    for (b = 0; g->code && b < g->nbins; b++)
        free(g->code[b]);
    free(g->code);
    free(g->prefix);
    free(g->fr);
    free(g->calls);
    free(g->cf);
    free(g->pc);
    lp_dj_scratch_free(&g->dj);
    free(g->pc_tmp);
    free(g->zl);
    free(g->zmark);
    free(g->memo_node);
    free(g->memo_trie);
    free(g->memo);
    cs_pathmemo_free(&g->path);
}

int cs_generate_probe_trie(cs_trie *t, lp_binary *const *bins, size_t nbins,
                           lp_ctxcount *cc, bool consume, const lp_cs_opts *o,
                           pthread_mutex_t *bin_lock, lp_error *err)
{
    pgen g = {.t = t, .bins = bins, .probes = o->probes, .nbins = nbins,
              .o = o, .bin_lock = bin_lock, .err = err};
    lp_ctx_entry **v = NULL;
    long n, i;
    int rc;

    if (!(g.memo = calloc((size_t)1 << CS_PMEMO_BITS, sizeof *g.memo)) ||
        !(g.code = calloc(nbins ? nbins : 1, sizeof *g.code))) {
        pgen_free(&g);
        return cs_oom(err);
    }
    rc = cs_probes_decode(bins, nbins, o->probes, cc, err);
    if (rc == 0 && o->infer_prepare)    /* unless cs_probes_prepare did */
        rc = o->infer_prepare(o->infer_ctx, err);
    n = rc ? 0 : lp_ctxcount_all(cc, &v);
    if (n < 0)
        rc = cs_oom(err);
    for (i = 0; i < n && rc == 0; i++) {
        rc = add_context(&g, v[i]);
        if (consume)            /* its counters, frames and key: generation
                                   reuses the memory */
            lp_ctxcount_release(cc, (size_t)i);
    }
    free(v);
    if (consume)
        lp_ctxcount_clear(cc);
    if (rc == 0)
        mixed_warning(&g);
    pgen_free(&g);
    return rc;
}
