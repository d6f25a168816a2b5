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
 * with a size of 0 (trackInlineesOptimizedAway). With pseudo probes the
 * trie can be built on a second thread while the probe generation runs
 * (cs_sizes_start): the two share the binaries under one lock, the
 * thread's warnings are held and given at the join, so the output and
 * the messages are those of one thread. Owns the size trie's contents;
 * the trie structure is trie.c's.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"
#include "util/cpus.h"
#include "util/grow.h"
#include "util/zalloc.h"

typedef struct func_ent {       /* a profiled function (ProfiledFunctions) */
    const lp_function *f;
    int bin;
    UT_hash_handle hh;
} func_ent;

typedef struct size_job size_job;
static void job_free(size_job *j);

#define FUNCS_SEEN 256          /* direct-mapped slots of added functions */
#define FUNCS_NEAR 2048         /* ... of ranges found, by address / 64 */

typedef struct near_range {     /* a range whose function is added */
    const lp_func_range *r;
    int bin;
} near_range;

struct cs_funcs {               /* ProfiledFunctions */
    func_ent *head;
    int oom;
    const lp_func_range *last[2];   /* the last two ranges found (and
                                       added: an entry's ranges and its
                                       branches' ends mostly alternate
                                       between a caller and a callee) */
    int last_bin;
    size_job *job;              /* the size trie being built, or NULL */
    const func_ent *seen[FUNCS_SEEN];  /* added, by function pointer */
    near_range near[FUNCS_NEAR];    /* in front of the binary's search of
                                       its ranges: the same branch ends
                                       and range starts come back in
                                       context after context (1.2 M
                                       lookups on bench (c)) */
};
typedef cs_funcs func_set;

static void add_func(func_set *s, const lp_function *f, int bin)
{
    const func_ent **slot;
    func_ent *e;

    if (!f)
        return;
    slot = &s->seen[((uintptr_t)f >> 4) & (FUNCS_SEEN - 1)];
    if (*slot && (*slot)->f == f && (*slot)->bin == bin)
        return;
    HASH_FIND_PTR(s->head, &f, e);
    if (!e) {
        if (!(e = calloc(1, sizeof *e))) {
            s->oom = 1;
            return;
        }
        e->f = f;
        e->bin = bin;
        HASH_ADD_PTR(s->head, f, e);
    }
    *slot = e;
}

static bool in_range(const lp_func_range *r, uint64_t addr)
{
    return r && addr >= r->start && addr < r->end;
}

static void add_addr(func_set *s, lp_binary *b, int bin, uint64_t addr)
{
    near_range *nr = &s->near[(addr >> 6) % FUNCS_NEAR];
    const lp_func_range *r;

    if (s->last_bin == bin && in_range(s->last[0], addr))
        return;
    if (s->last_bin == bin && in_range(s->last[1], addr)) {
        r = s->last[1];
    } else if (nr->bin == bin && in_range(nr->r, addr)) {
        r = nr->r;
        if (s->last_bin != bin)
            s->last[0] = NULL;
    } else if ((r = lp_binary_func_range(b, addr))) {
        if (s->last_bin != bin)
            s->last[0] = NULL;
        add_func(s, r->func, bin);
        *nr = (near_range){r, bin};
    } else {
        return;
    }
    s->last[1] = s->last[0];
    s->last[0] = r;
    s->last_bin = bin;
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
    m = lp_counters_ranges_any(e->counters, &r);       /* a set: any order */
    for (k = 0; k < m; k++)
        add_addr(s, b, e->bin, r[k].a);
    m = lp_counters_branches_any(e->counters, &r);
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
        /* the binary's strings: mostly the very same pointer */
        if (fr[i].func != w->fr[i].func && strcmp(fr[i].func, w->fr[i].func) != 0)
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

/* The binaries' lock while a size thread runs (NULL: one thread). */
static void bin_lock(pthread_mutex_t *m)
{
    if (m)
        pthread_mutex_lock(m);
}

static void bin_unlock(pthread_mutex_t *m)
{
    if (m)
        pthread_mutex_unlock(m);
}

/* One instruction's frames and size, and the next instruction's address:
 * the binary's part of the walk, under the lock. 1, or k < 1 as
 * lp_binary_next_inst gives (-1 on error). */
static int inst_step(lp_binary *b, pthread_mutex_t *lock, uint64_t *ip,
                     lp_frame *buf, const lp_frame **fr, size_t *n,
                     uint32_t *size, lp_error *err)
{
    lp_inst in;
    int k = -1;

    bin_lock(lock);
    if (!lp_binary_symbolize_once(b, *ip, buf, fr, n, err) &&
        lp_binary_inst(b, *ip, &in, err) >= 0) {
        *size = in.size;
        k = lp_binary_next_inst(b, *ip, ip, err);
    }
    bin_unlock(lock);
    return k;
}

/* computeInlinedContextSizeForRange over [start, end); with a lock (the
 * sizes' thread), SIZES_CHUNK instructions under each taking of it: a
 * lock and an unlock an instruction were 8% of the walk's instructions
 * (bench (a)), and the thread's walk is what the pre-inliner waits for */
#define SIZES_CHUNK 64
static int range_sizes(cs_trie *st, lp_binary *b, uint64_t start, uint64_t end,
                       bool probes, const lp_cs_opts *o, pthread_mutex_t *lock,
                       lp_error *err)
{
    const lp_frame *fr;
    uint64_t ip = UINT64_MAX;
    size_walk w = {NULL, 0, NULL, probes};
    uint32_t size;
    size_t n, i;
    int k, rc = 0;
    lp_frame buf[2][LP_BINARY_MAX_FRAMES];  /* w.fr's stack and the next one */

    bin_lock(lock);
    k = lp_binary_inst_at_or_after(b, start, &ip, err);
    bin_unlock(lock);
    if (k < 0)
        return -1;
    if (k == 0)
        ip = UINT64_MAX;
    if (ip != start)
        cs_warnf(o, "Invalid start instruction at %8" PRIx64, start);
    while (k == 1 && ip < end) {
        bin_lock(lock);
        for (i = 0; i < SIZES_CHUNK && k == 1 && ip < end && rc == 0; i++)
            if ((k = inst_step(b, NULL, &ip, buf[w.fr == buf[0]], &fr, &n, &size,
                               err)) < 0)
                rc = -1;
            else if (add_inst(st, &w, fr, n, size))
                rc = cs_oom(err);
        bin_unlock(lock);
        if (rc)
            return -1;
    }
    return 0;
}

static int sort_by_name(const func_ent *a, const func_ent *b)
{
    int c = strcmp(a->f->name, b->f->name);

    return c ? c : a->bin - b->bin;
}

cs_funcs *cs_funcs_new(void)
{
    func_set *s = lp_zalloc_written(sizeof *s);    /* its memos: probed first */

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
    job_free(s->job);
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

static int sizes_build(cs_trie *st, lp_binary *const *bins, cs_funcs *s,
                       const lp_cs_opts *o, pthread_mutex_t *lock, lp_error *err)
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
                             e->f->ranges[k]->end, pr != NULL, o, lock, err);
        if (rc == 0 && pr && lp_probes_decoded(pr) &&
            track_inlinees(st, pr, e->f->name))
            rc = cs_oom(err);
    }
    return rc;
}

/* The binaries' mapped pages the sizes read (line tables, DWARF, text,
 * probe sections) given back once the sizes are built: generation is
 * done with them or has its own decoded copies, and sqlite-probe's peak
 * was the pre-inliner right after, with ~3 MB of them resident. Every
 * binary up to the last one a profiled function is in (a binary nothing
 * read has none to give back). On the sizes' thread, without the
 * binaries' lock: the release reads where libelf mapped the file, which
 * nothing changes after opening, and madvise of a clean read-only file
 * mapping leaves its bytes as they are. */
static void release_pages(lp_binary *const *bins, const func_set *s)
{
    const func_ent *e;
    int i, last = -1;

    for (e = s->head; e; e = e->hh.next)
        if (e->bin > last)
            last = e->bin;
    for (i = 0; i <= last; i++)
        lp_binary_release_pages(bins[i]);
}

int cs_sizes_build(cs_trie *st, lp_binary *const *bins, cs_funcs *s,
                   const lp_cs_opts *o, lp_error *err)
{
    int rc = sizes_build(st, bins, s, o, NULL, err);

    release_pages(bins, s);
    return rc;
}

/* ---- the size trie on a second thread ------------------------------------ */

struct size_job {
    pthread_t th;
    pthread_mutex_t lock;       /* the binaries' */
    cs_trie st;
    lp_binary *const *bins;
    cs_funcs *s;
    lp_cs_opts o;               /* the caller's, with the warnings held */
    const lp_cs_opts *user;     /* where the held warnings go */
    char **held;
    size_t nheld, held_cap;
    bool held_oom;              /* a warning could not be held */
    bool built;                 /* the trie is done (under done_lock; the
                                   thread then gives the binaries' pages
                                   back, not waited for) */
    bool told;                  /* the held warnings given */
    bool joined;
    pthread_mutex_t done_lock;
    pthread_cond_t done_cond;
    int rc;
    lp_error err;
};

static void hold_warning(void *ctx, const char *msg)
{
    size_job *j = ctx;
    char *c = strdup(msg);

    if (!c || lp_grow_array(&j->held, &j->held_cap, j->nheld + 1,
                            sizeof *j->held, 8)) {
        free(c);
        j->held_oom = true;
        return;
    }
    j->held[j->nheld++] = c;
}

static void *size_main(void *arg)
{
    size_job *j = arg;

    j->rc = sizes_build(&j->st, j->bins, j->s, &j->o, &j->lock, &j->err);
    pthread_mutex_lock(&j->done_lock);
    j->built = true;
    pthread_cond_signal(&j->done_cond);
    pthread_mutex_unlock(&j->done_lock);
    release_pages(j->bins, j->s);
    return NULL;
}

pthread_mutex_t *cs_sizes_start(cs_funcs *s, lp_binary *const *bins,
                                const lp_cs_opts *o)
{
    size_job *j;

    if (s->job || lp_cpus() < 2 || !(j = calloc(1, sizeof *j)))
        return NULL;
    cs_trie_init(&j->st);
    j->bins = bins;
    j->s = s;
    j->o = *o;
    j->o.warn = o->warn ? hold_warning : NULL;
    j->o.warn_ctx = j;
    j->user = o;
    if (pthread_mutex_init(&j->lock, NULL)) {
        free(j);
        return NULL;
    }
    pthread_mutex_init(&j->done_lock, NULL);
    pthread_cond_init(&j->done_cond, NULL);
    if (pthread_create(&j->th, NULL, size_main, j)) {
        pthread_mutex_destroy(&j->lock);
        pthread_mutex_destroy(&j->done_lock);
        pthread_cond_destroy(&j->done_cond);
        free(j);
        return NULL;
    }
    s->job = j;
    return &j->lock;
}

/* Wait until the trie is built (the pages' release may go on); the
 * thread's warnings to the caller's hook, in order, once. */
static void job_built(size_job *j)
{
    size_t i;

    if (j->told)
        return;
    pthread_mutex_lock(&j->done_lock);
    while (!j->built)
        pthread_cond_wait(&j->done_cond, &j->done_lock);
    pthread_mutex_unlock(&j->done_lock);
    j->told = true;
    for (i = 0; i < j->nheld; i++)
        j->user->warn(j->user->warn_ctx, j->held[i]);
    if (j->held_oom && j->user->warn)
        j->user->warn(j->user->warn_ctx, "context sizes: some warnings were "
                      "lost (out of memory)");
}

/* Wait for the thread to end. */
static void job_join(size_job *j)
{
    job_built(j);
    if (!j->joined)
        pthread_join(j->th, NULL);
    j->joined = true;
}

static void job_free(size_job *j)
{
    size_t i;

    if (!j)
        return;
    job_join(j);
    for (i = 0; i < j->nheld; i++)
        free(j->held[i]);
    free(j->held);
    cs_trie_free(&j->st);
    pthread_mutex_destroy(&j->lock);
    pthread_mutex_destroy(&j->done_lock);
    pthread_cond_destroy(&j->done_cond);
    free(j);
}

cs_trie *cs_sizes_get(cs_trie *own, lp_binary *const *bins, cs_funcs *s,
                      const lp_cs_opts *o, lp_error *err)
{
    size_job *j = s->job;

    if (!j)
        return cs_sizes_build(own, bins, s, o, err) ? NULL : own;
    job_built(j);
    if (j->rc) {
        *err = j->err;
        return NULL;
    }
    return &j->st;
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
