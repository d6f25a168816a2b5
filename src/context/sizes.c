/*
 * sizes.c - llvm-profgen 19's BinarySizeContextTracker, the pre-inliner's
 * cost model: every instruction of every profiled function is symbolized
 * and its byte size added to a reversed context trie (leaf function at
 * location 0.0 under the root, then its callers at their call sites, raw
 * DWARF discriminators), and a profile context's size is the deepest size
 * found walking that trie from the context's leaf up its callers, or else
 * the first size found going down first children. With pseudo probes the
 * call sites are probe ids read from the DWARF discriminators, and every
 * inline frame that kept probes in the probe inline tree is made known
 * with a size of 0 (trackInlineesOptimizedAway). Owns the size trie's
 * contents; the trie structure is trie.c's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"

typedef struct func_ent {       /* a profiled function (ProfiledFunctions) */
    const lp_function *f;
    int bin;
    UT_hash_handle hh;
} func_ent;

struct cs_funcs {               /* ProfiledFunctions */
    func_ent *head;
    int oom;
    const lp_func_range *last;  /* the last range found (and added) */
    int last_bin;
};
typedef cs_funcs func_set;

static void add_func(func_set *s, const lp_function *f, int bin)
{
    func_ent *e;

    if (!f)
        return;
    HASH_FIND_PTR(s->head, &f, e);
    if (e)
        return;
    if (!(e = calloc(1, sizeof *e))) {
        s->oom = 1;
        return;
    }
    e->f = f;
    e->bin = bin;
    HASH_ADD_PTR(s->head, f, e);
}

static void add_addr(func_set *s, lp_binary *b, int bin, uint64_t addr)
{
    const lp_func_range *r = s->last;

    if (!r || addr < r->start || addr >= r->end || s->last_bin != bin)
        r = lp_binary_func_range(b, addr);
    if (r) {
        if (r != s->last)
            add_func(s, r->func, bin);
        s->last = r;
        s->last_bin = bin;
    }
}

/* collectFunctionsFromRawProfile for one entry */
void cs_funcs_add_entry(cs_funcs *s, lp_binary *const *bins, size_t nbins,
                        const lp_ctx_entry *e)
{
    lp_binary *b = e->bin >= 0 && (size_t)e->bin < nbins ? bins[e->bin] : NULL;
    const lp_addr_pair_count *r;
    long k, m;

    for (k = 0; k < (long)e->naddrs; k++) {  /* address contexts */
        size_t ab = LP_CTX_ADDR_BIN(e->addrs[k]);
        if (ab < nbins && bins[ab])
            add_addr(s, bins[ab], (int)ab, LP_CTX_ADDR_VADDR(e->addrs[k]));
    }
    if (!b)
        return;
    m = lp_counters_ranges_view(e->counters, &r);
    for (k = 0; k < m; k++)
        add_addr(s, b, e->bin, r[k].a);
    m = lp_counters_branches_view(e->counters, &r);
    for (k = 0; k < m; k++) {
        add_addr(s, b, e->bin, r[k].a);
        add_addr(s, b, e->bin, r[k].b);
    }
}

static void funcs_from_counters(func_set *s, lp_binary *const *bins, size_t nbins,
                                const lp_ctxcount *cc)
{
    lp_ctx_entry **v = NULL;
    long n = lp_ctxcount_all(cc, &v), i;

    if (n < 0)
        s->oom = 1;
    for (i = 0; i < n; i++)
        cs_funcs_add_entry(s, bins, nbins, v[i]);
    free(v);
}

/* collectFunctionsFromLLVMProfile: the functions named by trie nodes */
static void funcs_from_trie(func_set *s, lp_binary *const *bins, size_t nbins,
                            cs_trie *pt)
{
    cs_node **q;
    size_t n, i, k;

    if (!(q = cs_bfs(pt, &n))) {
        s->oom = 1;
        return;
    }
    for (i = 0; i < n; i++)
        if (q[i]->func && q[i]->func->len)
            for (k = 0; k < nbins; k++)
                if (bins[k])
                    add_func(s, lp_binary_function(bins[k], q[i]->func->s), (int)k);
    free(q);
}

typedef struct size_walk {      /* the previous instruction's size node */
    const lp_frame *fr;
    size_t n;
    cs_node *node;
    bool probes;                /* call sites are probe ids */
} size_walk;

/* A caller frame's call site in the size trie: line offset and raw
 * discriminator, or with probes the probe id packed in the discriminator
 * (symbolize with UseProbeDiscriminator). */
static lp_loc site_of(const size_walk *w, const lp_frame *f)
{
    lp_probe_disc d;

    if (!w->probes)
        return (lp_loc){f->line_offset, f->discriminator};
    lp_probe_disc_decode(f->discriminator, &d);
    return (lp_loc){d.index, 0};
}

/* Same inline context: the same functions and call sites, whatever the
 * leaf line (the size trie keys the leaf at 0.0). */
static bool same_context(const size_walk *w, const lp_frame *fr, size_t n)
{
    size_t i;
    lp_loc a, b;

    if (!w->node || n != w->n)
        return false;
    for (i = 0; i < n; i++) {
        if (strcmp(fr[i].func, w->fr[i].func) != 0)
            return false;
        if (i + 1 == n)
            continue;
        a = site_of(w, &fr[i]);
        b = site_of(w, &w->fr[i]);
        if (a.line != b.line || a.disc != b.disc)
            return false;
    }
    return true;
}

/* addInstructionForContext: leaf first, callers at their call sites */
static int add_inst(cs_trie *st, size_walk *w, const lp_frame *fr, size_t n,
                    uint32_t size)
{
    cs_node *cur = &st->root;
    const cs_name *nm;
    size_t i;

    if (!same_context(w, fr, n)) {
        for (i = n; i-- > 0;) {
            lp_loc loc = i + 1 == n ? (lp_loc){0, 0} : site_of(w, &fr[i]);
            if (!(nm = cs_intern(st, fr[i].func, strlen(fr[i].func))) ||
                !(cur = cs_child_get(st, cur, loc, nm)))
                return -1;
        }
        *w = (size_walk){fr, n, cur, w->probes};
    }
    w->node->size += size;
    w->node->has_size = true;
    return 0;
}

/* computeInlinedContextSizeForRange over [start, end) */
static int range_sizes(cs_trie *st, lp_binary *b, uint64_t start, uint64_t end,
                       bool probes, const lp_cs_opts *o, lp_error *err)
{
    const lp_frame *fr;
    uint64_t ip = UINT64_MAX;
    size_walk w = {NULL, 0, NULL, probes};
    lp_inst in;
    size_t n;
    int k = lp_binary_inst_at_or_after(b, start, &ip, err);
    lp_frame buf[2][LP_BINARY_MAX_FRAMES];  /* w.fr's stack and the next one */

    if (k < 0)
        return -1;
    if (k == 0)
        ip = UINT64_MAX;
    if (ip != start)
        cs_warnf(o, "Invalid start instruction at %8" PRIx64, start);
    while (k == 1 && ip < end) {
        if (lp_binary_symbolize_once(b, ip, buf[w.fr == buf[0]], &fr, &n, err) ||
            lp_binary_inst(b, ip, &in, err) < 0)
            return -1;
        if (add_inst(st, &w, fr, n, in.size))
            return cs_oom(err);
        k = lp_binary_next_inst(b, ip, &ip, err);
    }
    return k < 0 ? -1 : 0;
}

static int sort_by_name(const func_ent *a, const func_ent *b)
{
    int c = strcmp(a->f->name, b->f->name);

    return c ? c : a->bin - b->bin;
}

cs_funcs *cs_funcs_new(void)
{
    func_set *s = calloc(1, sizeof *s);

    if (s)
        s->last_bin = -1;
    return s;
}

cs_funcs *cs_funcs_collect(lp_binary *const *bins, size_t nbins,
                           const lp_ctxcount *cc, cs_trie *pt, lp_error *err)
{
    func_set *s = cs_funcs_new();

    if (!s)
        return cs_oom(err), NULL;
    if (cc)
        funcs_from_counters(s, bins, nbins, cc);
    else
        funcs_from_trie(s, bins, nbins, pt);
    if (s->oom) {
        cs_funcs_free(s);
        return cs_oom(err), NULL;
    }
    return s;
}

int cs_funcs_merge(cs_funcs *dst, cs_funcs *src)
{
    func_ent *e, *tmp;

    if (src) {
        HASH_ITER(hh, src->head, e, tmp)
            add_func(dst, e->f, e->bin);
        if (src->oom)
            dst->oom = 1;
        cs_funcs_free(src);
    }
    return dst->oom ? -1 : 0;
}

void cs_funcs_free(cs_funcs *s)
{
    func_ent *e, *tmp;

    if (!s)
        return;
    HASH_ITER(hh, s->head, e, tmp) {
        HASH_DEL(s->head, e);
        free(e);
    }
    free(s);
}

/* ---- inlinees optimized away (probe binaries) ---------------------------- */

typedef struct probe_frame {    /* ProbeFrameStack's (name, call site) */
    const char *name;
    uint32_t site;
    uint32_t node, next_kid;    /* the DFS position */
} probe_frame;

/* The size node of the frames f[0..n) (callers first): made known with
 * a size of 0. */
static int make_known(cs_trie *st, const probe_frame *f, size_t n)
{
    cs_node *cur = &st->root;
    const cs_name *nm;
    size_t i;

    for (i = n; i-- > 0;) {
        lp_loc loc = {f[i].site, 0};
        if (!(nm = cs_intern(st, f[i].name, strlen(f[i].name))) ||
            !(cur = cs_child_get(st, cur, loc, nm)))
            return -1;
    }
    cur->has_size = true;
    return 0;
}

/* trackInlineesOptimizedAway from the function's top-level probe record
 * (the last one of that name: TopLevelProbeFrameMap), depth first. */
static int track_inlinees(cs_trie *st, lp_probes *pr, const char *fname)
{
    const lp_probe_node *nodes;
    const uint32_t *tops;
    size_t nt = lp_probes_tops(pr, &tops), i, depth = 0, cap = 16;
    uint32_t top = LP_PROBE_NONE;
    probe_frame *f;
    int rc = 0;

    lp_probes_nodes(pr, &nodes);
    for (i = 0; i < nt; i++)
        if (strcmp(lp_probes_node_name(pr, tops[i]), fname) == 0)
            top = tops[i];
    if (top == LP_PROBE_NONE)
        return 0;
    if (!(f = malloc(cap * sizeof *f)))
        return -1;
    f[depth++] = (probe_frame){lp_probes_node_name(pr, top), 0, top, 0};
    if (nodes[top].nprobes)
        rc = make_known(st, f, depth);
    while (depth && rc == 0) {
        probe_frame *t = &f[depth - 1];
        const lp_probe_node *nd = &nodes[t->node];
        uint32_t c;

        if (t->next_kid == nd->nchildren) {
            depth--;
            continue;
        }
        c = nd->first_child + t->next_kid++;
        t->site = nodes[c].site;
        if (depth == cap) {
            probe_frame *nf = realloc(f, (cap *= 2) * sizeof *f);
            if (!nf) {
                rc = -1;
                break;
            }
            f = nf;
        }
        f[depth++] = (probe_frame){lp_probes_node_name(pr, c), 0, c, 0};
        if (nodes[c].nprobes)
            rc = make_known(st, f, depth);
    }
    free(f);
    return rc;
}

/* decodePseudoProbe for the profiled functions of the probe tables not
 * decoded yet (--llvm-sample-profile: no counters decoded them). */
static int decode_probes(lp_probes *const *probes, cs_funcs *s, lp_error *err)
{
    const lp_function **v;
    size_t n = HASH_COUNT(s->head), k;
    func_ent *e;
    int rc = 0, b;

    if (!(v = malloc((n ? n : 1) * sizeof *v)))
        return cs_oom(err);
    for (e = s->head; e && rc == 0; e = e->hh.next) {
        b = e->bin;
        if (!probes[b] || lp_probes_decoded(probes[b]))
            continue;
        k = 0;
        for (func_ent *x = s->head; x; x = x->hh.next)
            if (x->bin == b)
                v[k++] = x->f;
        rc = lp_probes_decode_for(probes[b], v, k, err);
    }
    free(v);
    return rc;
}

int cs_sizes_build(cs_trie *st, lp_binary *const *bins, cs_funcs *s,
                   const lp_cs_opts *o, lp_error *err)
{
    func_ent *e;
    size_t k;
    int rc = 0;

    if (o->probes && decode_probes(o->probes, s, err))
        return -1;
    HASH_SRT(hh, s->head, sort_by_name); /* only the warnings' order */
    for (e = s->head; e && rc == 0; e = e->hh.next) {
        lp_probes *pr = o->probes ? o->probes[e->bin] : NULL;

        for (k = 0; k < e->f->nranges && rc == 0; k++)
            rc = range_sizes(st, bins[e->bin], e->f->ranges[k]->start,
                             e->f->ranges[k]->end, pr != NULL, o, err);
        if (rc == 0 && pr && lp_probes_decoded(pr) &&
            track_inlinees(st, pr, e->f->name))
            rc = cs_oom(err);
    }
    return rc;
}

/* getFuncSizeForContext */
uint32_t cs_size_for(cs_trie *st, const cs_node *n)
{
    cs_node *cur = &st->root, *prev = NULL;
    lp_loc loc = {0, 0};
    bool found = false;
    uint32_t size = 0;

    while (cur && n->parent) {
        prev = cur;
        cur = cs_child(cur, loc, n->func);
        if (cur && cur->has_size) {
            size = cur->size;
            found = true;
        }
        loc = n->callsite;
        n = n->parent;
    }
    if (!found) {
        if (!cur)
            cur = prev;
        while (!found && cur && cur->nkids) {
            cur = cur->kids[0].n;
            if (cur->has_size) {
                size = cur->size;
                found = true;
            }
        }
    }
    return size; /* llvm-profgen asserts a size is found; 0 here */
}
