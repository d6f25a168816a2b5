/*
 * ideal.c - the ideal counters of a truth file: every LBR range i >= 1 of
 * every sample (LBR[i].to .. LBR[i-1].from, the ranges llvm-profgen's
 * unwinder counts) attributed to the calling context the thread really
 * had, and every branch to the context of its source, as range/branch
 * counters per context (lp_ctxcount) and without context (lp_counters).
 *
 * A context is symbolized the way llvm-profgen forms its keys: the call
 * sites of the true stack (return address -> call instruction), root
 * first, each expanded into its inline frames with line offset and base
 * discriminator, then the inline frames of the range's code, whose leaf
 * has no location. The stack is cut at its innermost frame outside the
 * binary (or without debug info): code called back from outside cannot
 * know its callers. Ranges are split where the inline context changes.
 *
 * For a pseudo-probe binary the contexts are address contexts instead:
 * the call sites of the true callers, ranges not split (the probes say
 * what is inlined where), as llvm-profgen 22's probe unwinder counts; the
 * generator completes them with tail-call frames from the run's whole
 * call graph (below).
 *
 * The ideal profiles are these counters handed to the project's
 * generators (lp_cs_profile, lp_flat_generate), which equal llvm-profgen
 * 19's (22's with probes); this file only chooses their options. Does not
 * compare profiles.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/accuracy.h"
#include "lbr2prof/csprofile.h"
#include "lbr2prof/tailcall.h"

/* The symbolized caller frames of a true stack node (cached per id). */
typedef struct node_frames {
    int done;
    size_t n;
    lp_ctx_frame *f;
    uint64_t *a;                /* with probes: the call sites instead */
} node_frames;

typedef struct ideal_ctx {
    const lp_truth *t;
    lp_binary *bin;
    lp_ideal *out;
    lp_error *err;
    const lp_truth_map **maps;  /* mappings of the binary */
    size_t nmaps;
    int32_t main_pid;           /* of the first mapping: for pids without
                                   mappings of their own (vfork children) */
    node_frames *nodes;         /* [node id] */
    lp_ctx_frame *buf;          /* scratch context */
    size_t cap;
    bool fs;                    /* flow-sensitive discriminators */
    bool addrs;                 /* address contexts (pseudo probes) */
} ideal_ctx;

/* ---- addresses --------------------------------------------------------- */

/* The mappings whose file is the binary: same path, else same file name. */
static int find_maps(ideal_ctx *c)
{
    const char *bp = lp_binary_path(c->bin);
    char *real = realpath(bp, NULL);
    size_t i, pass;

    if (!(c->maps = calloc(c->t->nmaps + 1, sizeof *c->maps))) {
        free(real);
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    }
    for (pass = 0; pass < 2 && c->nmaps == 0; pass++)
        for (i = 0; i < c->t->nmaps; i++) {
            const char *mp = c->t->maps[i].path;
            int same = pass == 0 ? (real && !strcmp(mp, real)) || !strcmp(mp, bp)
                                 : !strcmp(basename(mp), basename(bp));
            if (same)
                c->maps[c->nmaps++] = &c->t->maps[i];
        }
    free(real);
    if (c->t->nmaps)
        c->main_pid = c->t->maps[0].pid;
    return 0;
}

/* Runtime address -> link-time address in the binary, 0 if it is not in a
 * mapping of the binary in force for (pid, time). */
static uint64_t to_vaddr(ideal_ctx *c, int32_t pid, uint64_t time,
                         uint64_t addr)
{
    const lp_truth_map *best = NULL;
    size_t i;
    int pass;
    uint64_t v;

    for (pass = 0; pass < 2 && !best; pass++) {
        int32_t want = pass == 0 ? pid : c->main_pid;
        for (i = 0; i < c->nmaps; i++) {
            const lp_truth_map *m = c->maps[i];
            if (m->pid == want && m->time <= time && addr >= m->start &&
                addr < m->end)
                best = m; /* the latest one wins */
        }
    }
    if (!best || lp_binary_map_to_vaddr(c->bin, best->start, best->pgoff, addr,
                                        &v))
        return 0;
    return v;
}

/* An address of the binary's disassembled code (llvm-profgen's
 * addressIsCode); 0 if external. */
static uint64_t code_addr(ideal_ctx *c, const lp_truth_sample *s, uint64_t a)
{
    uint64_t v = to_vaddr(c, s->pid, s->time, a);

    return v && lp_binary_is_code(c->bin, v) ? v : 0;
}

/* ---- contexts ------------------------------------------------------------ */

static int reserve(ideal_ctx *c, size_t n)
{
    lp_ctx_frame *p;
    size_t cap = c->cap ? c->cap : 64;

    if (n <= c->cap)
        return 0;
    while (cap < n)
        cap *= 2;
    if (!(p = realloc(c->buf, cap * sizeof *p)))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    c->buf = p;
    c->cap = cap;
    return 0;
}

/* dst := the frames of `nf`, then fr[0..n) with their call-site locations
 * (base discriminators); dst has room for nf->n + n. */
static void expand(const ideal_ctx *c, const node_frames *nf,
                   const lp_frame *fr, size_t n, lp_ctx_frame *dst)
{
    size_t i;

    if (nf->n)
        memcpy(dst, nf->f, nf->n * sizeof *dst);
    for (i = 0; i < n; i++) {
        dst[nf->n + i].func = fr[i].func;
        dst[nf->n + i].loc.line = fr[i].line_offset;
        dst[nf->n + i].loc.disc = lp_disc_base(fr[i].discriminator, c->fs);
    }
}

/* Frames of node `id` from its parent's: the call site of its return
 * address expanded into inline frames, or nothing at all when the return
 * address is outside the binary or has no debug info (the cut). */
static int node_compute(ideal_ctx *c, uint32_t id, const lp_truth_sample *s)
{
    node_frames *nf = &c->nodes[id], *pf = &c->nodes[c->t->node_parent[id]];
    const lp_frame *fr;
    uint64_t v, site;
    size_t n = 0;
    int r;

    nf->done = 1;
    v = to_vaddr(c, s->pid, s->time, c->t->node_ret[id]);
    if (!v)
        return 0;
    if ((r = lp_binary_call_site(c->bin, v, &site, c->err)) != 1)
        return r; /* 0: not after a call: cut here too */
    if (c->addrs) {
        if (!(nf->a = malloc((pf->n + 1) * sizeof *nf->a)))
            return lp_error_set(c->err, LP_ENOMEM, "out of memory");
        if (pf->n)
            memcpy(nf->a, pf->a, pf->n * sizeof *nf->a);
        nf->a[pf->n] = LP_CTX_ADDR(0, site);
        nf->n = pf->n + 1;
        return 0;
    }
    if (lp_binary_symbolize(c->bin, site, &fr, &n, c->err))
        return -1;
    if (n == 0)
        return 0;
    if (!(nf->f = malloc((pf->n + n) * sizeof *nf->f)))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    expand(c, pf, fr, n, nf->f);
    nf->n = pf->n + n;
    return 0;
}

/* The caller frames of node `id`, computing uncached ancestors first
 * (iteratively: stacks can be deep). */
static const node_frames *node_get(ideal_ctx *c, uint32_t id,
                                   const lp_truth_sample *s)
{
    uint32_t *chain = NULL, k;
    size_t n = 0, cap = 0;

    while (id != 0 && !c->nodes[id].done) {
        if (n == cap) {
            uint32_t *p = realloc(chain, (cap = cap ? 2 * cap : 32) * sizeof *p);
            if (!p) {
                free(chain);
                lp_error_set(c->err, LP_ENOMEM, "out of memory");
                return NULL;
            }
            chain = p;
        }
        chain[n++] = id;
        id = c->t->node_parent[id];
    }
    while (n > 0) {
        k = chain[--n];
        if (node_compute(c, k, s)) {
            free(chain);
            return NULL;
        }
        id = k;
    }
    free(chain);
    return &c->nodes[id];
}

/* The context entry of code at `a` under stack `nf`; NULL with no error
 * when `a` has no debug info. */
static lp_ctx_entry *entry_at(ideal_ctx *c, const node_frames *nf, uint64_t a,
                              int *failed)
{
    const lp_frame *fr;
    size_t n = 0;
    lp_ctx_entry *e;

    *failed = 0;
    if (lp_binary_symbolize(c->bin, a, &fr, &n, c->err) ||
        reserve(c, nf->n + n)) {
        *failed = 1;
        return NULL;
    }
    if (n == 0)
        return NULL;
    expand(c, nf, fr, n, c->buf);
    c->buf[nf->n + n - 1].loc = (lp_loc){0, 0};
    e = lp_ctxcount_get(c->out->cc, 0, c->buf, nf->n + n, n > 1, c->err);
    if (!e)
        *failed = 1;
    return e;
}

/* Same inline context: the same functions, the same call sites except the
 * leaf's location. Unlike llvm-profgen's inlineContextEqual this compares
 * the leaf function too, so adjacent code of two inlinees at one call
 * line is not merged. */
static int same_inline(const lp_frame *a, size_t na, const lp_frame *b,
                       size_t nb)
{
    size_t i;

    if (na != nb || na == 0)
        return 0;
    for (i = 0; i < na; i++) {
        if (strcmp(a[i].func, b[i].func))
            return 0;
        if (i + 1 < na && (a[i].line_offset != b[i].line_offset ||
                           a[i].discriminator != b[i].discriminator))
            return 0;
    }
    return 1;
}

/* ---- ranges and branches ------------------------------------------------- */

static int add_piece(ideal_ctx *c, const node_frames *nf, uint64_t lo,
                     uint64_t hi)
{
    int failed;
    lp_ctx_entry *e = entry_at(c, nf, lo, &failed);

    if (failed)
        return -1;
    if (e && lp_counters_add_range(e->counters, lo, hi, 1))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    return 0;
}

/* [lo, hi] (link-time, a valid fall-through) under stack `nf`, cut into
 * pieces of one inline context each. */
static int add_range(ideal_ctx *c, const node_frames *nf, uint64_t lo,
                     uint64_t hi)
{
    const lp_frame *pf = NULL, *fr;
    size_t pn = 0, n;
    uint64_t a, start, prev = 0;
    int r;

    if ((r = lp_binary_inst_at_or_after(c->bin, lo, &a, c->err)) <= 0)
        return r;
    start = a;
    while (a <= hi) {
        if (lp_binary_symbolize(c->bin, a, &fr, &n, c->err))
            return -1;
        if (a != start && !same_inline(pf, pn, fr, n)) {
            if (add_piece(c, nf, start, prev))
                return -1;
            start = a;
        }
        pf = fr;
        pn = n;
        prev = a;
        if ((r = lp_binary_next_inst(c->bin, a, &a, c->err)) < 0)
            return -1;
        if (r == 0)
            break;
    }
    return add_piece(c, nf, start, prev);
}

static int add_branch(ideal_ctx *c, const lp_truth_sample *s, size_t i,
                      uint64_t from, uint64_t to)
{
    static const lp_ctx_frame none[1];
    const node_frames *nf;
    lp_ctx_entry *e = NULL;
    int failed = 0;

    if (lp_counters_add_branch(c->out->flat, from ? from : LP_EXTERNAL_ADDR,
                               to, 1))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    if (from) {
        if (!(nf = node_get(c, s->lbr[i].node, s)))
            return -1;
        e = c->addrs ? lp_ctxcount_get_addrs(c->out->cc, 0, nf->a, nf->n, c->err)
                     : entry_at(c, nf, from, &failed);
        if (failed || (c->addrs && !e))
            return -1;
    }
    if (!e && !(e = c->addrs ? lp_ctxcount_get_addrs(c->out->cc, 0, NULL, 0, c->err)
                             : lp_ctxcount_get(c->out->cc, 0, none, 0, false, c->err)))
        return -1; /* external or unsymbolized source: the empty context */
    if (lp_counters_add_branch(e->counters, from ? from : LP_EXTERNAL_ADDR,
                               to, 1))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    return 0;
}

static int do_range(ideal_ctx *c, const lp_truth_sample *s, size_t i,
                    const uint64_t *fv, const uint64_t *tv)
{
    lp_ideal_stats *st = &c->out->st;
    const node_frames *nf;
    int v;

    st->ranges++;
    if (s->lbr[i - 1].cut) {
        st->ranges_cut++;
        return 0;
    }
    if (!tv[i] || !fv[i - 1]) {
        st->ranges_external++;
        return 0;
    }
    if ((v = lp_binary_valid_fallthrough(c->bin, tv[i], fv[i - 1], c->err)) < 0)
        return -1;
    if (!v) {
        st->ranges_invalid++;
        return 0;
    }
    st->ranges_counted++;
    if (lp_counters_add_range(c->out->flat, tv[i], fv[i - 1], 1))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    if (!(nf = node_get(c, s->lbr[i - 1].node, s)))
        return -1;
    if (c->addrs) {             /* the probe unwinder's: not split */
        lp_ctx_entry *e = lp_ctxcount_get_addrs(c->out->cc, 0, nf->a, nf->n,
                                                c->err);
        if (!e || lp_counters_add_range(e->counters, tv[i], fv[i - 1], 1))
            return lp_error_set(c->err, LP_ENOMEM, "out of memory");
        return 0;
    }
    return add_range(c, nf, tv[i], fv[i - 1]);
}

static int do_sample(ideal_ctx *c, const lp_truth_sample *s)
{
    uint64_t *fv, *tv;
    size_t i, n = s->nlbr;
    int rc = 0;

    if (!(fv = calloc(2 * n + 1, sizeof *fv)))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    tv = fv + n;
    for (i = 0; i < n; i++) {
        fv[i] = code_addr(c, s, s->lbr[i].from);
        tv[i] = code_addr(c, s, s->lbr[i].to);
    }
    for (i = 0; i < n && rc == 0; i++) {
        c->out->st.branches++;
        if (i > 0)
            rc = do_range(c, s, i, fv, tv);
        if (rc == 0 && tv[i]) {
            c->out->st.branches_counted++;
            rc = add_branch(c, s, i, fv[i], tv[i]);
        }
    }
    free(fv);
    return rc;
}

/* Every branch of the run from the binary's code (the latest mappings of
 * the first process), for the tail-call graph. */
static int add_edges(ideal_ctx *c)
{
    size_t i;
    uint64_t f, t;

    if (!(c->out->edges = lp_counters_new()))
        return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    for (i = 0; i < c->t->nedges; i++) {
        const lp_truth_edge *e = &c->t->edges[i];
        f = to_vaddr(c, c->main_pid, UINT64_MAX, e->from);
        t = to_vaddr(c, c->main_pid, UINT64_MAX, e->to);
        if (f && t && lp_binary_is_code(c->bin, f) &&
            lp_counters_add_branch(c->out->edges, f, t, e->count))
            return lp_error_set(c->err, LP_ENOMEM, "out of memory");
    }
    return 0;
}

static int build(const lp_truth *t, lp_binary *bin, lp_probes *probes,
                 lp_ideal *out, lp_error *err)
{
    ideal_ctx c;
    size_t i;
    int rc;

    memset(out, 0, sizeof *out);
    memset(&c, 0, sizeof c);
    c.t = t;
    c.bin = bin;
    c.out = out;
    c.err = err;
    c.fs = lp_binary_fs_discriminator(bin);
    c.addrs = probes != NULL;
    out->probes = probes;
    if (!probes && lp_binary_check_symbolizable(bin, err))
        return -1;
    out->cc = lp_ctxcount_new();
    out->flat = lp_counters_new();
    c.nodes = calloc(t->nnodes ? t->nnodes : 1, sizeof *c.nodes);
    if (!out->cc || !out->flat || !c.nodes) {
        rc = lp_error_set(err, LP_ENOMEM, "out of memory");
        goto done;
    }
    c.nodes[0].done = 1;
    if ((rc = find_maps(&c)))
        goto done;
    if (c.nmaps == 0) {
        rc = lp_error_set(err, LP_EUSAGE, "%s: the truth file has no mapping "
                          "of this binary (by path or file name)",
                          lp_binary_path(bin));
        goto done;
    }
    out->st.samples = t->nsamples;
    for (i = 0; i < t->nsamples && rc == 0; i++)
        rc = do_sample(&c, &t->samples[i]);
    if (rc == 0 && probes)
        rc = add_edges(&c);
done:
    for (i = 0; c.nodes && i < t->nnodes; i++) {
        free(c.nodes[i].f);
        free(c.nodes[i].a);
    }
    free(c.nodes);
    free(c.maps);
    free(c.buf);
    if (rc)
        lp_ideal_free(out);
    return rc;
}

int lp_ideal_build(const lp_truth *t, lp_binary *bin, lp_ideal *out,
                   lp_error *err)
{
    return build(t, bin, NULL, out, err);
}

int lp_ideal_build_probes(const lp_truth *t, lp_binary *bin,
                          lp_probes *probes, lp_ideal *out, lp_error *err)
{
    return build(t, bin, probes, out, err);
}

void lp_ideal_free(lp_ideal *id)
{
    lp_ctxcount_free(id->cc);
    lp_counters_free(id->flat);
    lp_counters_free(id->edges);
    id->cc = NULL;
    id->flat = NULL;
    id->edges = NULL;
}

/* ---- the ideal profiles ------------------------------------------------------ */

/* lp_cs_opts.infer_frames on the run's call graph (one binary: index 0,
 * so the encoded addresses are the link-time ones). */
static long infer_frames(void *tc, const uint64_t *in, size_t n, uint64_t **out)
{
    size_t cap = 0;

    *out = NULL;
    return lp_tailcall_infer_context(tc, in, n, out, &cap);
}

static int cs_ideal(lp_binary *bin, const lp_ideal *id, bool tails,
                    lp_profile *p, lp_error *err)
{
    lp_tailcall_opts to;
    lp_tailcall *tc = NULL;
    lp_cs_opts o;
    int rc;

    lp_cs_opts_default(&o);
    o.preinliner = false;       /* --csspgo-preinliner=0 */
    o.gen_nested = false;       /* --gen-cs-nested-profile=0 */
    o.merge_cold_context = 0;   /* --csprof-merge-cold-context=0 */
    if (id->probes) {
        o.probes = &id->probes;
        o.compress_recursion = 0;   /* the true contexts */
    }
    if (id->probes && tails) {
        lp_tailcall_opts_default(&to);
        to.mode = LP_TC_STRICT;
        if (!(tc = lp_tailcall_new(bin, &to, err)) ||
            lp_tailcall_add_counters(tc, id->edges, err)) {
            lp_tailcall_free(tc);
            return -1;
        }
        o.infer_frames = infer_frames;
        o.infer_ctx = tc;
    }
    rc = lp_cs_profile(&bin, 1, id->cc, &o, p, err);
    lp_tailcall_free(tc);
    return rc;
}

lp_profile *lp_ideal_profile(lp_binary *bin, const lp_ideal *id, bool cs,
                             lp_error *err)
{
    lp_profile *p = lp_profile_new();
    lp_flat_opts fo;
    int rc;

    if (!p) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    if (cs) {
        rc = cs_ideal(bin, id, true, p, err);
    } else if (id->probes) {
        lp_flat_opts_default(&fo);
        rc = lp_flat_generate_probes(bin, id->probes, id->flat, &fo, p, err) ||
             lp_flat_postprocess(p, &fo, err);
    } else {
        lp_flat_opts_default(&fo);
        rc = lp_flat_generate(bin, id->flat, &fo, p, err) ||
             lp_flat_postprocess(p, &fo, err);
    }
    if (rc) {
        lp_profile_free(p);
        return NULL;
    }
    return p;
}

lp_profile *lp_ideal_profile_machine(lp_binary *bin, const lp_ideal *id,
                                     lp_error *err)
{
    lp_profile *p = lp_profile_new();

    if (!p) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    if (cs_ideal(bin, id, false, p, err)) {
        lp_profile_free(p);
        return NULL;
    }
    return p;
}
