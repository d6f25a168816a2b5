/*
 * trie.c - the context trie (see cs_internal.h): interned names, children
 * keyed by LLVM's call-site hash and walked in key order, paths from frame
 * vectors and printed contexts, breadth-first walks, conversion from and
 * to flat CS profiles (a large one ranked and converted on two threads),
 * LLVM's context order between siblings, and the context-less summary.
 * Owns the nodes and the profiles attached to them; not what is computed
 * on them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/sort.h"

/* The interned names' table (the only uthash table here) hashes with XXH3:
 * ~750k lookups of long linkage names on a large CS profile, where
 * uthash's default byte-at-a-time hash was the cost. Iteration is in
 * insertion order either way. */
#undef HASH_FUNCTION
#define HASH_FUNCTION(keyptr, keylen, hashv) \
    ((hashv) = (unsigned)lp_hash_bytes((keyptr), (keylen)))

/* ---- small helpers ---------------------------------------------------------- */

int cs_oom(lp_error *err)
{
    return lp_error_set(err, LP_ENOMEM, "CS profile generation: out of memory");
}

void cs_warnf(const lp_cs_opts *o, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (!o->warn)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->warn(o->warn_ctx, buf);
}

uint64_t cs_percentile_count(const lp_summary *s, uint32_t pct)
{
    int k;

    for (k = 0; k < LP_NR_CUTOFFS; k++)
        if (s->entries[k].cutoff >= pct)
            return s->entries[k].min_count;
    return s->entries[LP_NR_CUTOFFS - 1].min_count;
}

int cs_as_u64(const char *s, const char *end, int radix, uint64_t *v)
{
    uint64_t x = 0, d;

    if (s == end)
        return -1;
    for (; s < end; s++) {
        if (*s >= '0' && *s <= '9')
            d = (uint64_t)(*s - '0');
        else if (radix == 16 && *s >= 'a' && *s <= 'f')
            d = (uint64_t)(*s - 'a' + 10);
        else if (radix == 16 && *s >= 'A' && *s <= 'F')
            d = (uint64_t)(*s - 'A' + 10);
        else
            return -1;
        if (x > (UINT64_MAX - d) / (uint64_t)radix)
            return -1;
        x = x * (uint64_t)radix + d;
    }
    *v = x;
    return 0;
}

/* StringRef::getAsInteger into an int: optional '-', then digits only. */
static int as_int(const char *s, int32_t *v)
{
    uint64_t x;
    int neg = *s == '-';

    if (cs_as_u64(s + neg, s + strlen(s), 10, &x) || x > (uint64_t)INT32_MAX + neg)
        return -1;
    *v = neg ? (int32_t)(0 - x) : (int32_t)x;
    return 0;
}

void cs_decode_frame(char *s, lp_ctx_frame *f)
{
    char *colon = strchr(s, ':'), *dot;
    int32_t line;
    uint64_t disc;

    f->func = s;
    f->loc.line = f->loc.disc = 0;
    if (!colon)
        return;
    *colon = 0;
    if (!colon[1])
        return;
    if ((dot = strchr(colon + 1, '.')))
        *dot = 0;
    if (as_int(colon + 1, &line) == 0)
        f->loc.line = (uint32_t)line;
    if (dot && cs_as_u64(dot + 1, dot + 1 + strlen(dot + 1), 10, &disc) == 0 &&
        disc <= UINT32_MAX)
        f->loc.disc = (uint32_t)disc;
}

/* ---- names and keys --------------------------------------------------------- */

void cs_trie_init(cs_trie *t)
{
    memset(t, 0, sizeof *t);
}

/* ---- pools ------------------------------------------------------------------- */

#define CS_POOL_CHUNK 1024      /* objects per chunk */

struct cs_chunk {
    cs_chunk *next;
    _Alignas(16) unsigned char data[];
};

/* A zeroed object of `size` bytes (a multiple of 8, the same for every
 * call on one pool); NULL on no memory. */
static void *pool_get(cs_pool *p, size_t size)
{
    cs_chunk *c;
    void *o;

    if (p->free) {
        o = p->free;
        p->free = *(void **)o;
    } else {
        if (!p->chunks || p->used == CS_POOL_CHUNK) {
            if (!(c = malloc(sizeof *c + CS_POOL_CHUNK * size)))
                return NULL;
            c->next = p->chunks;
            p->chunks = c;
            p->used = 0;
        }
        o = p->chunks->data + p->used++ * size;
    }
    return memset(o, 0, size);
}

static void pool_put(cs_pool *p, void *o)
{
    *(void **)o = p->free;
    p->free = o;
}

static void pool_free(cs_pool *p)
{
    cs_chunk *c, *n;

    for (c = p->chunks; c; c = n) {
        n = c->next;
        free(c);
    }
    memset(p, 0, sizeof *p);
}

static cs_name *intern_locked(cs_trie *t, const char *s, size_t len)
{
    cs_name *n;

    HASH_FIND(hh, t->names, s, len, n);
    if (n)
        return n;
    if (!(n = calloc(1, sizeof *n)) || !(n->s = strndup(s, len))) {
        free(n);
        return NULL;
    }
    n->len = len;
    n->md5 = lp_md5_hash64(s, len);
    HASH_ADD_KEYPTR(hh, t->names, n->s, n->len, n);
    return n;
}

const cs_name *cs_intern(cs_trie *t, const char *s, size_t len)
{
    cs_name *n;

    if (t->of)
        t = t->of;
    if (!t->names_lock)
        return intern_locked(t, s, len);
    pthread_mutex_lock(t->names_lock);
    n = intern_locked(t, s, len);
    pthread_mutex_unlock(t->names_lock);
    return n;
}

const cs_name *cs_intern_at(cs_trie *t, cs_pmemo *memo, const char *s)
{
    cs_pmemo *m;
    const cs_name *n;

    if (!memo)
        return cs_intern(t, s, strlen(s));
    m = &memo[((uintptr_t)s * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - CS_PMEMO_BITS)];
    if (m->p == s)
        return m->n;
    if ((n = cs_intern(t, s, strlen(s))))
        *m = (cs_pmemo){s, n};
    return n;
}

uint64_t cs_callsite_hash(uint64_t name_md5, lp_loc loc)
{
    uint64_t id = ((uint64_t)loc.disc << 32) | loc.line;

    return name_md5 + (id << 5) + id;
}

/* ---- children ----------------------------------------------------------------- */

/* The first index of n->kids whose key is >= key. */
static uint32_t kid_lower(const cs_node *n, uint64_t key)
{
    uint32_t lo = 0, hi = n->nkids, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (n->kids[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

cs_node *cs_child(cs_node *n, lp_loc loc, const cs_name *f)
{
    uint64_t key = cs_callsite_hash(f->md5, loc);
    uint32_t i = kid_lower(n, key);

    return i < n->nkids && n->kids[i].key == key ? n->kids[i].n : NULL;
}

/* Insert n (key set) into parent's children at its place. */
static int kid_insert(cs_node *parent, cs_node *n)
{
    uint32_t i = kid_lower(parent, n->key);
    cs_kid *nv;

    if (parent->nkids == parent->kids_cap) {
        uint32_t cap = parent->kids_cap ? parent->kids_cap * 2 : 2;
        if (!(nv = realloc(parent->kids, cap * sizeof *nv)))
            return -1;
        parent->kids = nv;
        parent->kids_cap = cap;
    }
    memmove(parent->kids + i + 1, parent->kids + i,
            (parent->nkids - i) * sizeof *parent->kids);
    parent->kids[i] = (cs_kid){n->key, n};
    parent->nkids++;
    return 0;
}

int cs_attach(cs_node *parent, cs_node *n, lp_loc loc)
{
    n->callsite = loc;
    n->key = cs_callsite_hash(n->func->md5, loc);
    n->parent = parent;
    if (kid_insert(parent, n)) {
        n->parent = NULL;
        return -1;
    }
    return 0;
}

cs_node *cs_child_get(cs_trie *t, cs_node *n, lp_loc loc, const cs_name *f)
{
    cs_node *c = cs_child(n, loc, f);

    if (c)
        return c;
    if (!(c = pool_get(&t->node_pool, sizeof *c)))
        return NULL;
    c->func = f;
    if (cs_attach(n, c, loc)) {
        pool_put(&t->node_pool, c);
        return NULL;
    }
    return c;
}

void cs_detach(cs_node *n)
{
    cs_node *p = n->parent;
    uint32_t i;

    if (!p)
        return;
    i = kid_lower(p, n->key);
    while (i < p->nkids && p->kids[i].n != n)
        i++;
    if (i < p->nkids) {
        memmove(p->kids + i, p->kids + i + 1, (p->nkids - i - 1) * sizeof *p->kids);
        p->nkids--;
    }
    n->parent = NULL;
}

cs_node **cs_kids_copy(cs_node *n, size_t *cnt)
{
    cs_node **v;
    uint32_t i;

    *cnt = 0;
    if (n->nkids == 0 || !(v = malloc(n->nkids * sizeof *v)))
        return NULL;
    for (i = 0; i < n->nkids; i++)
        v[i] = n->kids[i].n;
    *cnt = n->nkids;
    return v;
}

/* Free every child subtree of n (n keeps no children). */
static void free_kids(cs_trie *t, cs_node *n)
{
    uint32_t i;

    for (i = 0; i < n->nkids; i++)
        cs_node_free(t, n->kids[i].n);
    free(n->kids);
    n->kids = NULL;
    n->nkids = n->kids_cap = 0;
}

void cs_node_free(cs_trie *t, cs_node *n)
{
    free_kids(t, n);
    if (n->prof && n->prof->node == n)
        n->prof->node = NULL; /* profiles may be shared by node copies */
    pool_put(&t->node_pool, n);
}

void cs_node_free_kids(cs_trie *t, cs_node *n)
{
    free_kids(t, n);
}

/* The kids arrays of n's subtree (the nodes go with the pool). */
static void free_kid_arrays(cs_node *n)
{
    uint32_t i;

    for (i = 0; i < n->nkids; i++)
        free_kid_arrays(n->kids[i].n);
    free(n->kids);
}

cs_node *cs_node_copy(cs_trie *t, const cs_node *n)
{
    cs_node *c = pool_get(&t->node_pool, sizeof *c), *kc;
    uint32_t i;

    if (!c)
        return NULL;
    c->func = n->func;
    c->callsite = n->callsite;
    c->key = n->key;
    c->prof = n->prof;
    c->has_size = n->has_size;
    c->pre_owns = false;
    c->size = n->size;
    if (n->nkids && !(c->kids = malloc(n->nkids * sizeof *c->kids))) {
        pool_put(&t->node_pool, c);
        return NULL;
    }
    c->kids_cap = n->nkids;
    for (i = 0; i < n->nkids; i++) {
        if (!(kc = cs_node_copy(t, n->kids[i].n))) {
            cs_node_free(t, c);
            return NULL;
        }
        kc->parent = c;
        c->kids[c->nkids++] = (cs_kid){kc->key, kc}; /* already in key order */
    }
    return c;
}

cs_node *cs_kid_after(cs_node *n, uint64_t key, bool first, uint32_t *at)
{
    uint32_t i = *at;

    if (first) {
        i = 0;
    } else if (i < n->nkids && n->kids[i].key == key &&
               (i == 0 || n->kids[i - 1].key < key)) {
        i++;    /* the last one is still where it was: no search */
    } else {
        i = kid_lower(n, key);
        if (i < n->nkids && n->kids[i].key == key)
            i++;
    }
    *at = i;
    return i < n->nkids ? n->kids[i].n : NULL;
}


/* A trie profile's contents freed; its name is in its block
 * (cs_prof_new) and goes with it. */
static void prof_clear(cs_prof *p)
{
    p->fs.name = p->fs.context = NULL;
    lp_fs_clear(&p->fs);
}

void cs_trie_free(cs_trie *t)
{
    cs_name *nm, *nt;
    cs_prof *p, *pn;

    free_kid_arrays(&t->root);
    for (p = t->profs; p; p = pn) {
        pn = p->next;
        prof_clear(p);
        free(p);
    }
    pool_free(&t->node_pool);
    HASH_ITER(hh, t->names, nm, nt) {
        HASH_DEL(t->names, nm);
        free(nm->s);
        free(nm);
    }
    memset(t, 0, sizeof *t);
}

/* A second thread freeing a trie. */
typedef struct trie_reaper {
    lp_job job;
    cs_trie t;
} trie_reaper;

static void *reaper_run(void *arg)
{
    cs_trie_free(&((trie_reaper *)arg)->t);
    return NULL;
}

static void reaper_wait(void *arg)
{
    trie_reaper *r = arg;

    lp_job_wait(&r->job);
    free(r);
}

/* Freeing the trie is ~1.2 M frees (the profiles the pre-inliner merged
 * away keep their bodies and call targets), memory bound: on the second
 * core it overlaps the end of post-processing and the writing of p. */
void cs_trie_free_later(cs_trie *t, lp_profile *p)
{
    trie_reaper *r;

    if (p->pending || !(r = calloc(1, sizeof *r))) {
        cs_trie_free(t);
        return;
    }
    r->t = *t;  /* the root's children keep &t->root as parent: unread */
    memset(t, 0, sizeof *t);
    p->pending = reaper_wait;
    p->pending_arg = r;
    lp_job_start(&r->job, reaper_run, r);
}

void cs_trie_adopt(cs_trie *t, cs_trie *w)
{
    cs_chunk **c = &t->node_pool.chunks;

    if (!*c)
        t->node_pool.used = w->node_pool.used;  /* w's newest is t's now */
    while (*c)      /* t's chunks: a few hundred at most */
        c = &(*c)->next;
    *c = w->node_pool.chunks;
    if (w->profs) { /* w's profiles before t's (no walk: ~10^5 of them) */
        w->profs_last->next = t->profs;
        if (!t->profs)
            t->profs_last = w->profs_last;
        t->profs = w->profs;
    }
    memset(w, 0, sizeof *w);
}

/* ---- profiles and paths ------------------------------------------------------- */

/* A profile and its name in one block (the name is read, never freed
 * nor replaced, while the trie owns the profile; the profiles moved out
 * of it take their contents, not their names): one allocation and one
 * free less per profile (84k on a large profile). */
cs_prof *cs_prof_new(cs_trie *t, const char *name)
{
    size_t len = strlen(name) + 1;
    cs_prof *p = calloc(1, sizeof *p + len);

    if (!p)
        return NULL;
    p->fs.name = p->fs.context = memcpy(p + 1, name, len);
    p->next = t->profs;
    if (!t->profs)
        t->profs_last = p;
    t->profs = p;
    return p;
}

cs_prof *cs_prof_get(cs_trie *t, cs_node *n)
{
    if (n->prof)
        return n->prof;
    if (!(n->prof = cs_prof_new(t, n->func ? n->func->s : "")))
        return NULL;
    n->prof->node = n;
    return n->prof;
}

void cs_pathmemo_free(cs_pathmemo *pm)
{
    free(pm->v);
    memset(pm, 0, sizeof *pm);
}

/* How many leading frames of `frames` reach the same nodes as the memo's
 * path: the same names, and the same call sites above each of them. */
static size_t path_common(const cs_pathmemo *pm, const lp_ctx_frame *frames,
                          size_t n)
{
    size_t k = 0;

    while (k < n && k < pm->n && pm->v[k].func == frames[k].func &&
           (k == 0 || (pm->v[k - 1].loc.line == frames[k - 1].loc.line &&
                       pm->v[k - 1].loc.disc == frames[k - 1].loc.disc)))
        k++;
    return k;
}

cs_node *cs_path(cs_trie *t, const lp_ctx_frame *frames, size_t n,
                 cs_pmemo *memo, cs_pathmemo *pm)
{
    cs_node *node = cs_root(t);
    lp_loc loc = {0, 0};
    const cs_name *f;
    size_t i = 0;

    if (pm && lp_grow_array(&pm->v, &pm->cap, n, sizeof *pm->v, 16))
        pm = NULL;
    if (pm && (i = path_common(pm, frames, n))) {
        node = pm->v[i - 1].node;
        loc = pm->v[i - 1].loc = frames[i - 1].loc;
    }
    for (; i < n && node; i++) {
        if (!(f = cs_intern_at(t, memo, frames[i].func)))
            return NULL;
        node = cs_child_get(t, node, loc, f);
        loc = frames[i].loc;
        if (pm)
            pm->v[i] = (cs_pathstep){frames[i].func, loc, node};
    }
    if (pm)
        pm->n = node ? n : 0;
    return node;
}

cs_node *cs_path_key(cs_trie *t, const char *key)
{
    char *buf = strdup(key), *s, *sep;
    cs_node *node = &t->root;
    lp_loc loc = {0, 0};
    lp_ctx_frame fr;
    const cs_name *f;

    if (!buf)
        return NULL;
    for (s = buf; *s && node; s = sep + 3) {
        if ((sep = strstr(s, " @ ")))
            *sep = 0;
        cs_decode_frame(s, &fr);
        if (!(f = cs_intern(t, fr.func, strlen(fr.func))))
            node = NULL;
        else
            node = cs_child_get(t, node, loc, f);
        loc = fr.loc;
        if (!sep)
            break;
    }
    free(buf);
    return node;
}

cs_node **cs_bfs(cs_trie *t, size_t *n)
{
    size_t cap = 256, head = 0, tail = 0;
    cs_node **q = malloc(cap * sizeof *q), **nq;
    uint32_t k;

    if (!q)
        return NULL;
    q[tail++] = &t->root;
    while (head < tail) {
        cs_node *x = q[head++];
        for (k = 0; k < x->nkids; k++) {
            if (tail == cap) {
                cap *= 2;
                if (!(nq = realloc(q, cap * sizeof *nq))) {
                    free(q);
                    return NULL;
                }
                q = nq;
            }
            q[tail++] = x->kids[k].n;
        }
    }
    *n = tail;
    return q;
}

/* ---- LLVM's context order ----------------------------------------------------- */

int cs_rank_cmp(const cs_node *c, lp_loc loc, const char *name)
{
    if (c->callsite.line != loc.line)
        return c->callsite.line < loc.line ? -1 : 1;
    if (c->callsite.disc != loc.disc)
        return c->callsite.disc < loc.disc ? -1 : 1;
    return lp_name_cmp(c->func->s, name);
}

/* two children (cs_kid) in that order */
static int kid_rank_cmp(const void *a, const void *b)
{
    const cs_node *y = ((const cs_kid *)b)->n;

    return cs_rank_cmp(((const cs_kid *)a)->n, y->callsite, y->func->s);
}

/* n's children put in rank order (their keys' order is lost). */
static void kids_rank(cs_node *n)
{
    uint32_t i;

    for (i = 0; i < n->nkids; i++)
        __builtin_prefetch(n->kids[i].n);   /* the sort reads them */
    lp_sort(n->kids, n->nkids, sizeof *n->kids, kid_rank_cmp);
}

/* ---- conversion to and from flat CS profiles ------------------------------------ */

/* The printed context of the node being emitted (lp_ctx_key's format),
 * built frame by frame as the walk goes down instead of printed whole per
 * profile: the callers' frames with their call sites, " @ " after each. */
typedef struct key_stack {
    char *b;
    size_t len, cap;
} key_stack;

/* Append s[0..n) and keep the text NUL-terminated. 0 or -1. */
static int ks_put(key_stack *k, const char *s, size_t n)
{
    if (lp_grow_bytes((void **)&k->b, &k->cap, k->len + n + 1, 256))
        return -1;
    memcpy(k->b + k->len, s, n);
    k->len += n;
    k->b[k->len] = 0;
    return 0;
}

/* ":line[.disc] @ " of a call site */
static int ks_put_site(key_stack *k, lp_loc loc)
{
    char t[LP_CTX_SITE_ROOM + 3];
    size_t n = lp_ctx_site_print(t, loc);

    memcpy(t + n, " @ ", 3);
    return ks_put(k, t, n + 3);
}

/* n's profile (its printed context in ks; is_base: of one frame) into
 * p, or to cold; the node keeps none. 0 or -1. */
static int emit_prof(cs_node *n, const key_stack *ks, bool is_base,
                     lp_profile *p, cs_cold *cold)
{
    size_t nr = p->nr_funcs;    /* lp_profile_get counts what it makes */
    int rc = cold ? cs_cold_take(cold, ks->b, is_base, &n->prof->fs) : 0;
    lp_fsamples *e;

    if (rc > 0)
        prof_clear(n->prof);
    else if (rc < 0 || !(e = lp_profile_get(p, ks->b, n->func->s)))
        return -1;
    else if (p->nr_funcs == nr && lp_fs_merge_ranked(e, &n->prof->fs))
        return -1;
    else if (p->nr_funcs != nr)
        lp_fs_move(e, &n->prof->fs);
    n->prof->node = NULL;
    n->prof = NULL;
    return 0;
}

/* n's subtree; ks holds the printed context of n's callers. With next,
 * the nodes are numbered as they come (n->serial = ++*next, a profile's
 * fs.order twice that), the children taken in their array's order. */
static int emit(cs_node *n, key_stack *ks, lp_profile *p, cs_cold *cold,
                uint64_t *next)
{
    size_t base = ks->len, named;
    uint32_t i;
    int rc = 0;

    if (next) {
        n->serial = ++*next;
        if (n->prof)
            n->prof->fs.order = (uint32_t)(2 * n->serial);
    }
    if (ks_put(ks, n->func->s, n->func->len))
        return -1;
    named = ks->len;
    if (n->prof)
        rc = emit_prof(n, ks, base == 0, p, cold);
    for (i = 0; i < n->nkids && rc == 0; i++) {
        ks->len = named;
        rc = ks_put_site(ks, n->kids[i].n->callsite)
                 ? -1 : emit(n->kids[i].n, ks, p, cold, next);
    }
    ks->len = base;
    return rc;
}

int cs_trie_to_profile_hot(cs_trie *t, lp_profile *p, cs_cold *cold)
{
    key_stack ks = {0};
    uint32_t i;
    int rc = 0;

    for (i = 0; i < t->root.nkids && rc == 0; i++)
        rc = emit(t->root.kids[i].n, &ks, p, cold, NULL);
    free(ks.b);
    p->is_cs = 1;
    return rc;
}

/* ---- the conversion on two threads ---------------------------------------------- */

/* Converting a large trie is bound by memory latency (per context a node,
 * its profile and a new entry, each a first touch: ~30 ms for the 84k
 * contexts of bench (c) on one core), and so is ranking it (~6 ms: the
 * children arrays and nodes). Below the top levels of the trie, the
 * subtrees are taken one at a time by two threads, twice: first each
 * subtree's children are put in rank order and its nodes counted; then,
 * the top levels numbered and each subtree given its first serial from
 * the counts, the subtrees are converted and numbered as they are
 * walked, each thread into maps of its own, joined after: the entries
 * of cs_trie_to_profile_hot, ranked in SampleContext order (the one
 * ranking of a flat CS profile's contexts: small tries take this path
 * too), not in the same order in p. */
#define SPLIT_SUBTREES 64       /* at least, if the top levels have them */
#define SPLIT_LEVELS 4          /* top levels at most */
#define SPLIT_TOP UINT64_MAX    /* serial of a top node until numbered */

typedef struct emit_part {
    lp_profile *p;
    cs_cold cold, *cp;          /* the caller's thresholds, a map of its own */
    key_stack ks;
    size_t nprof;               /* first pass: the profiles counted */
    int rc;
} emit_part;

typedef struct emit_split {
    cs_node **sub, **top;       /* the subtrees; the nodes above them */
    size_t nsub, ntop, sub_cap, top_cap;
    uint64_t *base;             /* per subtree: its size, then the serial
                                   before its root's */
    size_t next;                /* the next subtree to take (atomic) */
    size_t room;                /* the helper's map's first size */
    emit_part part[2];          /* the caller's, the helper's */
} emit_split;

/* The printed context of n's callers into ks (empty): each caller's
 * frame and call site, then " @ ". 0 or -1. */
static int ks_callers(key_stack *ks, const cs_node *n)
{
    const cs_node *c = n->parent;

    if (!c || !c->func)
        return 0;
    return ks_callers(ks, c) || ks_put(ks, c->func->s, c->func->len) ||
                   ks_put_site(ks, n->callsite)
               ? -1 : 0;
}

/* The subtrees one level down: each one with children becomes a top
 * node and its children subtrees. 1 if any had children, 0, -1. */
static int split_down(emit_split *s)
{
    cs_node **v = s->sub, *x;
    size_t n = s->nsub, cap = 0, k = 0, i, j;
    int rc = 0;

    s->sub = NULL;
    for (i = 0; i < n; i++) {
        x = v[i];
        if (lp_grow_array(&s->sub, &cap, k + 1 + x->nkids, sizeof *s->sub, 64) ||
            (x->nkids && lp_grow_array(&s->top, &s->top_cap, s->ntop + 1,
                                       sizeof *s->top, 16))) {
            rc = -1;
            break;
        }
        if (x->nkids == 0)
            s->sub[k++] = x;
        else
            s->top[s->ntop++] = x;
        for (j = 0; j < x->nkids; j++)
            s->sub[k++] = x->kids[j].n;
        rc |= x->nkids > 0;
    }
    free(v);
    s->nsub = k;
    s->sub_cap = cap;
    return rc;
}

/* s's subtrees and top nodes, marked for numbering (a top node's serial
 * SPLIT_TOP, a subtree root's its index). 0 or -1. */
static int split_trie(cs_trie *t, emit_split *s)
{
    int lv, rc = 1;
    size_t i;

    if (t->root.nkids && !(s->sub = malloc(t->root.nkids * sizeof *s->sub)))
        return -1;
    for (s->nsub = 0; s->nsub < t->root.nkids; s->nsub++)
        s->sub[s->nsub] = t->root.kids[s->nsub].n;
    for (lv = 0; rc > 0 && lv < SPLIT_LEVELS && s->nsub < SPLIT_SUBTREES; lv++)
        rc = split_down(s);
    if (rc < 0 || !(s->base = malloc((s->nsub ? s->nsub : 1) * sizeof *s->base)))
        return -1;
    for (i = 0; i < s->ntop; i++)
        s->top[i]->serial = SPLIT_TOP;
    for (i = 0; i < s->nsub; i++)
        s->sub[i]->serial = i;
    return 0;
}

/* First pass on n's subtree: children in rank order; its nodes. */
static uint64_t rank_count(cs_node *n, emit_part *w)
{
    uint64_t k = 1;
    uint32_t i;

    kids_rank(n);
    for (i = 0; i < n->nkids; i++)      /* what the walk reads next */
        __builtin_prefetch(n->kids[i].n->kids);
    w->nprof += n->prof != NULL;
    for (i = 0; i < n->nkids; i++)
        k += rank_count(n->kids[i].n, w);
    return k;
}

/* The subtrees a part takes (first pass, or conversion), until none is
 * left or it fails. */
static void take_subtrees(emit_split *s, emit_part *w, bool convert)
{
    uint64_t next;
    size_t i;

    while (w->rc == 0 &&
           (i = __atomic_fetch_add(&s->next, 1, __ATOMIC_RELAXED)) < s->nsub) {
        if (!convert) {
            s->base[i] = rank_count(s->sub[i], w);
            continue;
        }
        w->ks.len = 0;
        next = s->base[i];
        w->rc = ks_callers(&w->ks, s->sub[i]) ||
                        emit(s->sub[i], &w->ks, w->p, w->cp, &next)
                    ? -1 : 0;
    }
}

static void *count_helper(void *arg)
{
    emit_split *s = arg;

    take_subtrees(s, &s->part[1], false);
    return NULL;
}

/* The helper's conversion: room in its map first (each thread zeroes
 * its own table's pages), unless no subtree is left (run where waited
 * for), then subtrees. */
static void *emit_helper(void *arg)
{
    emit_split *s = arg;
    emit_part *w = &s->part[1];

    if (__atomic_load_n(&s->next, __ATOMIC_RELAXED) < s->nsub &&
        lp_profile_reserve(w->p, s->room))
        w->rc = -1;
    take_subtrees(s, w, true);
    return NULL;
}

/* The top levels below n numbered in preorder (children in rank order):
 * a top node its serial (and its profile its order), a subtree the
 * serials of its size. *next: the serials given. */
static void number_top(emit_split *s, cs_node *n, uint64_t *next)
{
    uint64_t size;
    uint32_t i;
    cs_node *c;

    kids_rank(n);
    for (i = 0; i < n->nkids; i++) {
        c = n->kids[i].n;
        if (c->serial == SPLIT_TOP) {
            c->serial = ++*next;
            if (c->prof)
                c->prof->fs.order = (uint32_t)(2 * c->serial);
            number_top(s, c, next);
        } else {
            size = s->base[c->serial];
            s->base[c->serial] = *next;
            *next += size;
        }
    }
}

/* The top nodes' own profiles (their subtrees are s's). */
static int emit_tops(emit_split *s, emit_part *w)
{
    cs_node *n;
    size_t i;

    for (i = 0; i < s->ntop; i++) {
        n = s->top[i];
        w->ks.len = 0;
        if (ks_callers(&w->ks, n) || ks_put(&w->ks, n->func->s, n->func->len) ||
            (n->prof && emit_prof(n, &w->ks, w->ks.len == n->func->len,
                                  w->p, w->cp)))
            return -1;
    }
    return 0;
}

/* The helper's part; -1 on no memory. */
static int part_init(emit_part *w, const cs_cold *cold)
{
    memset(w, 0, sizeof *w);
    if (!(w->p = lp_profile_new()))
        return -1;
    if (!cold)
        return 0;
    w->cold = *cold;
    w->cp = &w->cold;
    return cold->merge && !(w->cold.merged = lp_profile_new()) ? -1 : 0;
}

/* The helper's maps into the caller's (whose cold map is cold's). */
static int part_join(emit_part *w, lp_profile *p, cs_cold *cold)
{
    int rc = w->rc;

    if (rc == 0 && w->p)
        rc = lp_profile_absorb(p, w->p);
    if (rc == 0 && w->cp && w->cold.merged)
        rc = lp_profile_absorb(cold->merged, w->cold.merged);
    lp_profile_free(w->p);
    if (w->cp)
        lp_profile_free(w->cold.merged);
    free(w->ks.b);
    return rc;
}

/* Both passes over s's subtrees, the top levels numbered between them.
 * The number of nodes, or -1. */
static int64_t split_passes(cs_trie *t, emit_split *s, lp_profile *p)
{
    emit_part *w = &s->part[0];
    uint64_t nodes = 0;
    size_t nprof;
    lp_job job;

    lp_job_start(&job, count_helper, s);
    take_subtrees(s, w, false);
    lp_job_wait(&job);
    number_top(s, &t->root, &nodes);
    __atomic_store_n(&s->next, 0, __ATOMIC_RELAXED);    /* both joined */
    nprof = w->nprof + s->part[1].nprof + s->ntop;
    s->room = nprof / 2;        /* the helper takes about half; all end in p */
    lp_job_start(&job, emit_helper, s);
    w->rc = lp_profile_reserve(p, nprof) || emit_tops(s, w) ? -1 : 0;
    take_subtrees(s, w, true);
    lp_job_wait(&job);
    return w->rc ? -1 : (int64_t)nodes;
}

int64_t cs_trie_to_profile_ranked(cs_trie *t, lp_profile *p, cs_cold *cold)
{
    emit_split s = {0};
    emit_part *w = &s.part[0];
    int64_t rc = -1;

    w->p = p;
    w->cp = cold;
    if (split_trie(t, &s) == 0 && part_init(&s.part[1], cold) == 0)
        rc = split_passes(t, &s, p);
    if (part_join(&s.part[1], p, cold))
        rc = -1;
    free(w->ks.b);
    free(s.sub);
    free(s.top);
    free(s.base);
    p->is_cs = 1;
    return rc;
}

int cs_trie_to_profile(cs_trie *t, lp_profile *p)
{
    return cs_trie_to_profile_hot(t, p, NULL);
}

int cs_trie_from_profile(cs_trie *t, lp_profile *p)
{
    lp_fsamples **v;
    size_t n = lp_profile_all(p, &v), i;
    cs_node *node;
    int rc = 0;

    if (n == (size_t)-1)
        return -1;
    for (i = 0; i < n && rc == 0; i++) {
        bool fresh;
        if (!(node = cs_path_key(t, v[i]->context))) {
            rc = -1;
            break;
        }
        fresh = !node->prof;
        if (!cs_prof_get(t, node))
            rc = -1;
        else if (fresh)
            lp_fs_move(&node->prof->fs, v[i]);
        else
            rc = lp_fs_merge(&node->prof->fs, v[i]);
        if (rc == 0)
            lp_profile_remove(p, v[i]->context);
    }
    free(v);
    return rc;
}

/* ---- summary ----------------------------------------------------------------------- */

/* The context-less summary: the profiles grouped by their interned name
 * (one cs_name per distinct name in a trie), no name hashed. */
int cs_trie_summary(cs_trie *t, lp_summary *s, lp_error *err)
{
    lp_fsamples **v;
    uint32_t *group, ids = 0;
    cs_name *f;
    cs_node **q;
    size_t n, i, k = 0;
    int rc;

    if (!(q = cs_bfs(t, &n)))
        return cs_oom(err);
    v = malloc((n ? n : 1) * sizeof *v);
    group = malloc((n ? n : 1) * sizeof *group);
    if (!v || !group) {
        free(v);
        free(group);
        free(q);
        return cs_oom(err);
    }
    for (i = 0; i < n; i++)
        if (q[i]->prof)
            ((cs_name *)q[i]->func)->summary_id = UINT32_MAX;
    for (i = 0; i < n; i++) {
        if (!q[i]->prof)
            continue;
        f = (cs_name *)q[i]->func;
        if (f->summary_id == UINT32_MAX)
            f->summary_id = ids++;
        group[k] = f->summary_id;
        v[k++] = &q[i]->prof->fs;
    }
    rc = lp_summary_by_group(v, k, group, ids, s, err);
    free(group);
    free(v);
    free(q);
    return rc;
}

static void *summary_run(void *arg)
{
    cs_summary_job *j = arg;

    j->rc = cs_trie_summary(j->t, &j->s, &j->err);
    return NULL;
}

void cs_summary_start(cs_summary_job *j, cs_trie *t)
{
    memset(j, 0, sizeof *j);
    j->t = t;
    if (t->has_summary) {       /* accumulated by generation */
        j->s = t->summary;
        t->has_summary = false;
        j->job.done = true;
        return;
    }
    lp_job_start(&j->job, summary_run, j);
}

const lp_summary *cs_summary_wait(cs_summary_job *j, lp_error *err)
{
    lp_job_wait(&j->job);
    if (j->rc) {
        if (err)
            *err = j->err;
        return NULL;
    }
    return &j->s;
}
