/*
 * model.c - the in-memory sample profile (LLVM FunctionSamples): creation,
 * lookup, counting, sorted views and the count fix-ups LLVM applies before
 * writing. Owns the top-level table; not file formats (src/writer/)
 * nor how counts are derived from LBR data (src/flat/).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/zalloc.h"
#include "util/sort.h"

/* ---- data structures ------------------------------------------------ */

/* Compact by design: a CS profile holds 10^5 function profiles and 10^6
 * body records. Body records and call sites are arrays sorted by
 * location (binary search; insertion moves the tail), call targets and
 * inlinees small arrays sorted by name. Inlinee profiles are allocated
 * one by one, so pointers to them stay valid. */

struct lp_target {              /* one call target of a body record */
    char *name;
    uint64_t count;
};

/* A record's call targets: t[0 .. nt) of capacity ct, each name its own
 * allocation; or, for a record's first target, ct == 0 and nt == 1: one
 * block holding t[0] and its name right after it (most call sites have
 * one target: one allocation and one free instead of two). */
struct lp_body_rec {
    lp_loc loc;
    uint64_t count;
    struct lp_target *t;        /* by name */
    uint32_t nt, ct;
};

static bool targets_inline(const lp_body_rec *b)
{
    return b->ct == 0 && b->nt == 1;
}

struct lp_callsite {
    lp_loc loc;
    lp_fsamples **v;            /* inlinee profiles, by name */
    uint32_t n, cap;
};

struct lp_top {                 /* a top-level profile, keyed by fs.context */
    lp_fsamples fs;
    uint64_t h;                 /* the key's hash (XXH3) */
    size_t len;                 /* the key's length */
    size_t at;                  /* its index in the table's v */
};

/* The top-level entries (lp_profile.funcs): an open-addressing table of
 * hashes and entries (linear probing, at most half full), and the
 * entries in insertion order, which every iteration follows (NULL: an
 * entry removed). A flat CS profile has ~10^5 entries: uthash's chains
 * and its list took a cache miss per entry passed, the post-processing
 * walks and looks up every entry several times, and those misses were
 * ~45% of its time. The hashes in the slots leave the entries alone
 * until a hash matches. */
typedef struct top_slot {
    uint64_t h;
    struct lp_top *t;           /* NULL: empty */
} top_slot;

typedef struct top_table {
    top_slot *slot;
    size_t mask;                /* slots - 1 */
    struct lp_top **v;
    size_t nv, cap, dead;       /* dead: NULLs in v */
    lp_fsamples **sorted;       /* lp_profile_keep_sorted's (NULL: none) */
    size_t nsorted;
} top_table;

/* ---- helpers ---------------------------------------------------------- */

uint64_t lp_sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

/* ---- names (LLVM FunctionId) ----------------------------------------- */

/* An MD5 name's value from the `len` bytes at s (see lp_name_md5). */
static int md5_span(const char *s, size_t len, uint64_t *v)
{
    uint64_t x = 0, d;
    size_t i;

    if (len == 0 || len > 20 || s[0] < '1' || s[0] > '9')
        return 0;
    for (i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        d = (uint64_t)(s[i] - '0');
        if (x > (UINT64_MAX - d) / 10)
            return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}

int lp_name_md5(const char *name, uint64_t *v)
{
    return md5_span(name, strlen(name), v);
}

uint64_t lp_name_hash(const char *name)
{
    uint64_t v;

    return lp_name_md5(name, &v) ? v : lp_md5_hash64(name, strlen(name));
}

/* FunctionId::compare on two names given as spans */
static int name_span_cmp(const char *a, size_t la, const char *b, size_t lb)
{
    uint64_t x = 0, y = 0;
    int ha = md5_span(a, la, &x), hb = md5_span(b, lb, &y), c;

    if (ha && hb)
        return x < y ? -1 : x > y;
    if (ha != hb)
        return ha ? -1 : 1;
    if ((c = memcmp(a, b, la < lb ? la : lb)) != 0)
        return c < 0 ? -1 : 1;
    return la < lb ? -1 : la > lb;
}

int lp_name_cmp(const char *a, const char *b)
{
    /* real names never start with a digit: strcmp unless one does */
    if ((unsigned char)(a[0] - '1') > 8 && (unsigned char)(b[0] - '1') > 8)
        return strcmp(a, b);
    return name_span_cmp(a, strlen(a), b, strlen(b));
}

static int loc_cmp(lp_loc a, lp_loc b)
{
    if (a.line != b.line)
        return a.line < b.line ? -1 : 1;
    if (a.disc != b.disc)
        return a.disc < b.disc ? -1 : 1;
    return 0;
}

/* Grow an array of `size`-byte elements to hold n + 1 (`first` slots at
 * the first allocation). */
static int reserve_from(void **v, uint32_t *cap, uint32_t n, size_t size,
                        uint32_t first)
{
    uint32_t nc;
    void *nv;

    if (n < *cap)
        return 0;
    nc = *cap ? *cap * 2 : first;
    if (!(nv = realloc(*v, nc * size)))
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

static int reserve(void **v, uint32_t *cap, uint32_t n, size_t size)
{
    return reserve_from(v, cap, n, size, 2);
}

static void fs_clear(lp_fsamples *fs);

static void free_record(lp_body_rec *b)
{
    uint32_t i;

    for (i = 0; i < b->nt && !targets_inline(b); i++)
        free(b->t[i].name);
    free(b->t);
}

static void fs_clear(lp_fsamples *fs)
{
    uint32_t i, j;

    for (i = 0; i < fs->nr_body; i++)
        free_record(&fs->body[i]);
    free(fs->body);
    for (i = 0; i < fs->nr_callsites; i++) {
        for (j = 0; j < fs->callsites[i].n; j++) {
            fs_clear(fs->callsites[i].v[j]);
            free(fs->callsites[i].v[j]);
        }
        free(fs->callsites[i].v);
    }
    free(fs->callsites);
    if (fs->context != fs->name)
        free(fs->context);
    free(fs->name);
    fs->name = fs->context = NULL;
    fs->body = NULL;
    fs->callsites = NULL;
    fs->nr_body = fs->body_cap = fs->nr_callsites = fs->callsite_cap = 0;
}

int lp_fs_init(lp_fsamples *fs, const char *name)
{
    memset(fs, 0, sizeof *fs);
    if (!(fs->name = strdup(name)))
        return -1;
    fs->context = fs->name;
    return 0;
}

void lp_fs_clear(lp_fsamples *fs)
{
    fs_clear(fs);
    memset(fs, 0, sizeof *fs);
}

/* ---- profile ------------------------------------------------------------ */

/* A top-level entry and its key (and its name when not the key) in one
 * block: a flat CS profile makes ~10^5 of them, and the two strdup's
 * beside the entry's calloc were two thirds of lp_profile_get's cost.
 * Only lp_profile_free and lp_profile_remove free an entry (nobody
 * renames one or lp_fs_clear's it). */
static struct lp_top *top_new(const char *context, size_t len,
                              const char *name)
{
    size_t nl = name && strcmp(name, context) ? strlen(name) + 1 : 0;
    struct lp_top *t = malloc(sizeof *t + len + 1 + nl);

    if (!t)
        return NULL;
    memset(t, 0, sizeof *t);
    t->fs.context = memcpy(t + 1, context, len + 1);
    t->fs.name = nl ? memcpy(t->fs.context + len + 1, name, nl)
                    : t->fs.context;
    return t;
}

static void top_free(struct lp_top *t)
{
    t->fs.name = t->fs.context = NULL;  /* in t's block */
    fs_clear(&t->fs);
    free(t);
}

lp_profile *lp_profile_new(void)
{
    return calloc(1, sizeof(lp_profile));
}

void lp_profile_free(lp_profile *p)
{
    top_table *tt;
    size_t i;

    if (!p)
        return;
    if ((tt = p->funcs)) {
        for (i = 0; i < tt->nv; i++)
            if (tt->v[i])
                top_free(tt->v[i]);
        free(tt->slot);
        free(tt->v);
        free(tt->sorted);
        free(tt);
    }
    if (p->pending)
        p->pending(p->pending_arg);
    free(p);
}

/* The slot of key (hash h, length len): its entry's, or the empty one
 * where it would go. */
static top_slot *top_slot_of(const top_table *tt, const char *key, size_t len,
                             uint64_t h)
{
    size_t i = (size_t)h & tt->mask;
    top_slot *s;

    for (;; i = (i + 1) & tt->mask) {
        s = &tt->slot[i];
        if (!s->t || (s->h == h && s->t->len == len &&
                      memcmp(s->t->fs.context, key, len) == 0))
            return s;
    }
}

static const struct lp_top *top_find(const lp_profile *p, const char *key,
                                     size_t len, uint64_t h)
{
    const top_table *tt = p->funcs;

    return tt ? top_slot_of(tt, key, len, h)->t : NULL;
}

/* Room for k more entries: slots at most half full, places in v. */
static int top_reserve_n(lp_profile *p, size_t k)
{
    top_table *tt = p->funcs;
    top_slot *ns, *os;
    size_t n, i, j, omask;

    if (!tt && !(tt = p->funcs = calloc(1, sizeof *tt)))
        return -1;
    if (lp_grow_array(&tt->v, &tt->cap, tt->nv + k, sizeof *tt->v, 64))
        return -1;
    if (tt->slot && 2 * (p->nr_funcs + k) <= tt->mask + 1)
        return 0;
    for (n = tt->slot ? 2 * (tt->mask + 1) : 64; n < 2 * (p->nr_funcs + k); n *= 2)
        ;
    /* probed before written: zeroed by writing (util/zalloc.h), no
     * shoot-down per page while a second thread converts a trie */
    if (!(ns = lp_zalloc_written(n * sizeof *ns)))
        return -1;
    os = tt->slot;
    omask = tt->mask;
    tt->slot = ns;
    tt->mask = n - 1;
    for (i = 0; os && i <= omask; i++) {
        if (!os[i].t)
            continue;
        for (j = (size_t)os[i].h & tt->mask; ns[j].t; j = (j + 1) & tt->mask)
            ;
        ns[j] = os[i];
    }
    free(os);
    return 0;
}

int lp_profile_reserve(lp_profile *p, size_t n)
{
    return top_reserve_n(p, n);
}

/* t (key hashed, not in any table) into p's table as its newest entry.
 * -1 on no memory. */
static int top_insert(lp_profile *p, struct lp_top *t)
{
    top_table *tt;
    top_slot *s;

    if (top_reserve_n(p, 1))
        return -1;
    tt = p->funcs;
    if (tt->sorted) {           /* a new entry: no longer the sorted view */
        free(tt->sorted);
        tt->sorted = NULL;
    }
    t->at = tt->nv;
    tt->v[tt->nv++] = t;
    s = top_slot_of(tt, t->fs.context, t->len, t->h);
    s->h = t->h;
    s->t = t;
    p->ordered = 0;
    p->nr_funcs++;
    return 0;
}

lp_fsamples *lp_profile_find(const lp_profile *p, const char *context)
{
    size_t len = strlen(context);
    const struct lp_top *t = top_find(p, context, len,
                                      lp_hash_bytes(context, len));

    return t ? (lp_fsamples *)&t->fs : NULL;
}

lp_fsamples *lp_profile_get(lp_profile *p, const char *context,
                            const char *name)
{
    size_t len = strlen(context);
    uint64_t h = lp_hash_bytes(context, len);
    const struct lp_top *f = top_find(p, context, len, h);
    struct lp_top *t;

    if (f)
        return (lp_fsamples *)&f->fs;
    if (!(t = top_new(context, len, name)))
        return NULL;
    t->h = h;
    t->len = len;
    if (top_insert(p, t)) {
        free(t);
        return NULL;
    }
    return &t->fs;
}

/* src's entry t into dst: 1 if moved there, 0 if merged into dst's
 * entry of its key (t is left to free), -1 on no memory. */
static int absorb_one(lp_profile *dst, struct lp_top *t)
{
    struct lp_top *f = (struct lp_top *)top_find(dst, t->fs.context, t->len,
                                                 t->h);

    if (!f)
        return top_insert(dst, t) ? -1 : 1;
    return lp_fs_merge_ranked(&f->fs, &t->fs) ? -1 : 0;
}

int lp_profile_absorb(lp_profile *dst, lp_profile *src)
{
    top_table *st = src->funcs;
    size_t i;
    int rc = lp_profile_reserve(dst, src->nr_funcs), r;

    for (i = 0; st && i < st->nv; i++) {
        if (!st->v[i])
            continue;
        if ((r = rc ? -1 : absorb_one(dst, st->v[i])) < 0)
            rc = -1;
        if (r != 1)
            top_free(st->v[i]);
    }
    if (st) {
        memset(st->slot, 0, (st->slot ? st->mask + 1 : 0) * sizeof *st->slot);
        st->nv = st->dead = 0;
    }
    src->nr_funcs = 0;
    return rc;
}

/* Drop v's NULLs (entries keep their order). */
static void top_compact(top_table *tt)
{
    size_t i, k = 0;

    for (i = 0; i < tt->nv; i++)
        if (tt->v[i]) {
            tt->v[i]->at = k;
            tt->v[k++] = tt->v[i];
        }
    tt->nv = k;
    tt->dead = 0;
}

/* Empty slot s, moving back the entries after it that probed past it. */
static void slot_delete(top_table *tt, top_slot *s)
{
    size_t i = (size_t)(s - tt->slot), j = i, home;

    for (;;) {
        tt->slot[i].t = NULL;
        for (;;) {
            j = (j + 1) & tt->mask;
            if (!tt->slot[j].t)
                return;
            home = (size_t)tt->slot[j].h & tt->mask;
            /* j's entry stays unless its home is cyclically outside (i, j] */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        tt->slot[i] = tt->slot[j];
        i = j;
    }
}

void lp_profile_remove(lp_profile *p, const char *context)
{
    top_table *tt = p->funcs;
    size_t len = strlen(context);
    top_slot *s;
    struct lp_top *t;

    if (!tt || !(t = (s = top_slot_of(tt, context, len,
                                      lp_hash_bytes(context, len)))->t))
        return;
    slot_delete(tt, s);
    tt->v[t->at] = NULL;
    if (++tt->dead > tt->nv / 2)
        top_compact(tt);
    p->nr_funcs--;
    top_free(t);
}

/* ---- body records and call sites ------------------------------------------ */

/* index of the first record with loc >= l */
static uint32_t body_lower(const lp_fsamples *fs, lp_loc l)
{
    uint32_t lo = 0, hi = fs->nr_body, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (loc_cmp(fs->body[mid].loc, l) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

lp_body_rec *lp_fs_body(lp_fsamples *fs, lp_loc loc)
{
    /* records mostly come in location order: try the end first */
    uint32_t i = fs->nr_body && loc_cmp(fs->body[fs->nr_body - 1].loc, loc) < 0
                     ? fs->nr_body : body_lower(fs, loc);
    void *v = fs->body;

    if (i < fs->nr_body && loc_cmp(fs->body[i].loc, loc) == 0)
        return &fs->body[i];
    /* bodies grow to ~10 records: fewer reallocations (lp_fs_shrink
     * gives the slack back) */
    if (reserve_from(&v, &fs->body_cap, fs->nr_body, sizeof *fs->body, 8))
        return NULL;
    fs->body = v;
    memmove(&fs->body[i + 1], &fs->body[i], (fs->nr_body - i) * sizeof *fs->body);
    fs->nr_body++;
    fs->body[i] = (lp_body_rec){loc, 0, NULL, 0, 0};
    return &fs->body[i];
}

/* Records for the locations of the sorted, distinct items' locs (each
 * item: an lp_loc first, `stride` bytes apart) that fs lacks, in one
 * merge from the back (count 0): a record added one by one costs a
 * binary search and a memmove of the tail (sqlite-probe: 320 K memmoves,
 * 60 M instructions of generation). -1 on no memory. */
static int body_insert_missing(lp_fsamples *fs, const void *items, size_t stride,
                               size_t n)
{
    const unsigned char *it = items;
    uint32_t i = 0, miss = 0, w;
    size_t j;
    void *v = fs->body;
    int c;

#define ITEM_LOC(k) (*(const lp_loc *)(it + (k) * stride))
    for (j = 0; j < n; j++) {
        while (i < fs->nr_body && loc_cmp(fs->body[i].loc, ITEM_LOC(j)) < 0)
            i++;
        miss += i == fs->nr_body || loc_cmp(fs->body[i].loc, ITEM_LOC(j)) != 0;
    }
    if (!miss)
        return 0;
    if (fs->nr_body + miss > fs->body_cap) {
        if (!(v = realloc(fs->body, (fs->nr_body + miss) * sizeof *fs->body)))
            return -1;
        fs->body = v;
        fs->body_cap = fs->nr_body + miss;
    }
    i = fs->nr_body;
    w = fs->nr_body + miss;
    fs->nr_body = w;
    while (j > 0 && w > i) {
        c = i ? loc_cmp(fs->body[i - 1].loc, ITEM_LOC(j - 1)) : -1;
        if (c >= 0)
            fs->body[--w] = fs->body[--i];
        else
            fs->body[--w] = (lp_body_rec){ITEM_LOC(j - 1), 0, NULL, 0, 0};
        j -= c <= 0;
    }
#undef ITEM_LOC
    return 0;
}

int lp_fs_body_ensure(lp_fsamples *fs, const lp_loc *locs, size_t n)
{
    return body_insert_missing(fs, locs, sizeof *locs, n);
}

int lp_fs_body_max(lp_fsamples *fs, const lp_loc_count *v, size_t n)
{
    uint32_t i = 0;
    size_t j;
    lp_body_rec *nv;

    if (!fs->nr_body && n) {    /* a new profile: its body at once */
        if (n > fs->body_cap) {
            if (n > UINT32_MAX || !(nv = realloc(fs->body, n * sizeof *nv)))
                return -1;
            fs->body = nv;
            fs->body_cap = (uint32_t)n;
        }
        for (j = 0; j < n; j++)
            fs->body[j] = (lp_body_rec){v[j].loc, v[j].count, NULL, 0, 0};
        fs->nr_body = (uint32_t)n;
        return 0;
    }
    if (body_insert_missing(fs, v, sizeof *v, n))
        return -1;
    for (j = 0; j < n; j++) {   /* every location is in fs now */
        while (loc_cmp(fs->body[i].loc, v[j].loc) < 0)
            i++;
        if (fs->body[i].count < v[j].count)
            fs->body[i].count = v[j].count;
    }
    return 0;
}

const lp_body_rec *lp_fs_body_find(const lp_fsamples *fs, lp_loc loc)
{
    uint32_t i = body_lower(fs, loc);

    return i < fs->nr_body && loc_cmp(fs->body[i].loc, loc) == 0 ? &fs->body[i] : NULL;
}

uint64_t lp_body_count(const lp_body_rec *b) { return b->count; }
lp_loc lp_body_loc(const lp_body_rec *b) { return b->loc; }
const lp_body_rec *lp_fs_body_at(const lp_fsamples *fs, size_t i) { return &fs->body[i]; }
void lp_body_set_count(lp_body_rec *b, uint64_t c) { b->count = c; }

void lp_fs_prefetch_body(const lp_fsamples *fs)
{
    const char *b = (const char *)fs->body, *end = b + fs->nr_body * sizeof *fs->body;

    if (end > b + 4 * 64)       /* the merges' bodies: ~10 records */
        end = b + 4 * 64;
    for (; b < end; b += 64)
        __builtin_prefetch(b);
}
void lp_body_add(lp_body_rec *b, uint64_t n) { b->count = lp_sat_add(b->count, n); }

/* index of the first target with name >= s */
static uint32_t target_lower(const lp_body_rec *b, const char *s, int *found)
{
    uint32_t i;
    int c = 1;

    for (i = 0; i < b->nt && (c = lp_name_cmp(b->t[i].name, s)) < 0; i++)
        ;
    *found = i < b->nt && c == 0;
    return i;
}

/* A record's first target, in one block with its name (see lp_body_rec) */
static struct lp_target *target_first(lp_body_rec *b, const char *callee)
{
    size_t len = strlen(callee) + 1;
    struct lp_target *t = malloc(sizeof *t + len);

    if (!t)
        return NULL;
    memcpy(t + 1, callee, len);
    *t = (struct lp_target){(char *)(t + 1), 0};
    b->t = t;
    b->nt = 1;
    b->ct = 0;
    return t;
}

/* The call target `callee` of b, added with count 0 if absent; NULL on
 * no memory. */
static struct lp_target *target_slot(lp_body_rec *b, const char *callee)
{
    int found;
    uint32_t i = target_lower(b, callee, &found);
    void *v;
    char *name;

    if (!found && !b->t)
        return target_first(b, callee);
    if (!found) {
        /* a second target: the first one's name gets its own block */
        if (targets_inline(b)) {
            if (!(name = strdup(b->t[0].name)))
                return NULL;
            b->t[0].name = name;
            b->ct = 1;          /* a plain array of one from now */
        }
        v = b->t;
        if (reserve(&v, &b->ct, b->nt, sizeof *b->t) || !(name = strdup(callee)))
            return NULL;
        b->t = v;
        memmove(&b->t[i + 1], &b->t[i], (b->nt - i) * sizeof *b->t);
        b->nt++;
        b->t[i] = (struct lp_target){name, 0};
    }
    return &b->t[i];
}

int lp_body_add_target(lp_body_rec *b, const char *callee, uint64_t n)
{
    struct lp_target *t = target_slot(b, callee);

    if (!t)
        return -1;
    t->count = lp_sat_add(t->count, n);
    return 0;
}

uint64_t lp_body_target_sum(const lp_body_rec *b)
{
    uint64_t s = 0;
    uint32_t i;

    for (i = 0; i < b->nt; i++)
        s = lp_sat_add(s, b->t[i].count);
    return s;
}

static uint32_t cs_lower(const lp_fsamples *fs, lp_loc l)
{
    uint32_t lo = 0, hi = fs->nr_callsites, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (loc_cmp(fs->callsites[mid].loc, l) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static lp_callsite *callsite_find(const lp_fsamples *fs, lp_loc loc)
{
    uint32_t i = cs_lower(fs, loc);

    return i < fs->nr_callsites && loc_cmp(fs->callsites[i].loc, loc) == 0
               ? &fs->callsites[i] : NULL;
}

/* index of the first inlinee with name >= s */
static uint32_t callee_lower(const lp_callsite *c, const char *s, int *found)
{
    uint32_t i;
    int k = 1;

    for (i = 0; i < c->n && (k = lp_name_cmp(c->v[i]->name, s)) < 0; i++)
        ;
    *found = i < c->n && k == 0;
    return i;
}

lp_fsamples *lp_fs_find_callee(const lp_fsamples *fs, lp_loc loc,
                               const char *callee)
{
    lp_callsite *c = callsite_find(fs, loc);
    int found = 0;
    uint32_t i = c ? callee_lower(c, callee, &found) : 0;

    return found ? c->v[i] : NULL;
}

lp_fsamples *lp_fs_callee(lp_fsamples *fs, lp_loc loc, const char *callee)
{
    uint32_t i = cs_lower(fs, loc), k;
    lp_callsite *c;
    lp_fsamples *e;
    void *v = fs->callsites;
    int found;

    if (i >= fs->nr_callsites || loc_cmp(fs->callsites[i].loc, loc) != 0) {
        if (reserve(&v, &fs->callsite_cap, fs->nr_callsites, sizeof *fs->callsites))
            return NULL;
        fs->callsites = v;
        memmove(&fs->callsites[i + 1], &fs->callsites[i],
                (fs->nr_callsites - i) * sizeof *fs->callsites);
        fs->nr_callsites++;
        fs->callsites[i] = (lp_callsite){loc, NULL, 0, 0};
    }
    c = &fs->callsites[i];
    k = callee_lower(c, callee, &found);
    if (found)
        return c->v[k];
    v = c->v;
    if (reserve(&v, &c->cap, c->n, sizeof *c->v) || !(e = calloc(1, sizeof *e)))
        return NULL;
    c->v = v;
    if (!(e->name = strdup(callee))) {
        free(e);
        return NULL;
    }
    e->context = e->name;
    memmove(&c->v[k + 1], &c->v[k], (c->n - k) * sizeof *c->v);
    c->n++;
    c->v[k] = e;
    return e;
}

/* ---- sorted views ------------------------------------------------------- */

static int target_cmp(const void *a, const void *b)
{
    const lp_target_view *x = a, *y = b;

    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return lp_name_cmp(x->name, y->name);
}

/* The views of all records share one block of targets, owned by v[0]. */
/* The records' views and their targets' in one block (the writers ask
 * for the views of every profile: ~10^5 on a large CS profile); none
 * for an empty body. */
size_t lp_fs_sorted_body(const lp_fsamples *fs, lp_body_view **out)
{
    size_t n = fs->nr_body, nt = 0, i, j, o = 0;
    lp_body_view *v;
    lp_target_view *t;

    *out = NULL;
    if (n == 0)
        return 0;
    for (i = 0; i < n; i++)
        nt += fs->body[i].nt;
    if (!(v = malloc(n * sizeof *v + nt * sizeof *t)))
        return (size_t)-1;
    t = (lp_target_view *)(void *)(v + n);
    for (i = 0; i < n; i++) {
        const lp_body_rec *b = &fs->body[i];
        v[i].loc = b->loc;
        v[i].count = b->count;
        v[i].nr_targets = b->nt;
        v[i].targets = t + o;
        for (j = 0; j < b->nt; j++)
            t[o + j] = (lp_target_view){b->t[j].name, b->t[j].count};
        if (b->nt > 1)
            qsort(t + o, b->nt, sizeof *t, target_cmp);
        o += b->nt;
    }
    *out = v;
    return n;
}

size_t lp_body_nr_targets(const lp_body_rec *b)
{
    return b->nt;
}

size_t lp_body_sorted_targets(const lp_body_rec *b, lp_target_view *out)
{
    uint32_t j;

    for (j = 0; j < b->nt; j++)
        out[j] = (lp_target_view){b->t[j].name, b->t[j].count};
    if (b->nt > 1)      /* stable like qsort: the views' order */
        lp_sort(out, b->nt, sizeof *out, target_cmp);
    return b->nt;
}

void lp_body_views_free(lp_body_view *v, size_t n)
{
    (void)n;
    free(v);    /* the targets' views are in the same block */
}

size_t lp_fs_sorted_callees(const lp_fsamples *fs, lp_callee_view **out)
{
    size_t n = 0, k = 0, i, j;
    lp_callee_view *v;

    *out = NULL;
    for (i = 0; i < fs->nr_callsites; i++)
        n += fs->callsites[i].n;
    if (n == 0)
        return 0;
    if (!(v = malloc(n * sizeof *v)))
        return (size_t)-1;
    for (i = 0; i < fs->nr_callsites; i++)
        for (j = 0; j < fs->callsites[i].n; j++)
            v[k++] = (lp_callee_view){fs->callsites[i].loc, fs->callsites[i].v[j]};
    *out = v;
    return n;
}

static int top_cmp(const void *a, const void *b)
{
    const lp_fsamples *x = *(lp_fsamples *const *)a;
    const lp_fsamples *y = *(lp_fsamples *const *)b;

    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return lp_name_cmp(x->context, y->context);
}

size_t lp_profile_all(const lp_profile *p, lp_fsamples ***out)
{
    const top_table *tt = p->funcs;
    size_t i = 0, k;
    lp_fsamples **v = malloc((p->nr_funcs ? p->nr_funcs : 1) * sizeof *v);

    if (!v)
        return (size_t)-1;
    for (k = 0; tt && k < tt->nv; k++)
        if (tt->v[k])
            v[i++] = &tt->v[k]->fs;
    *out = v;
    return i;
}

/* Top-level CS profiles of one total, ordered by context: each context
 * as a byte key whose memcmp order is lp_context_cmp's (see
 * ctx_key_append). */
typedef struct cs_sort_item {
    const unsigned char *key;   /* set once every key is in the buffer */
    size_t off, len;            /* the key in the keys' buffer */
    const void *p;              /* what is sorted: a profile, a context */
    const char *ctx;            /* ... its context */
} cs_sort_item;

static int cs_item_cmp(const void *a, const void *b)
{
    const cs_sort_item *x = a, *y = b;
    size_t m = x->len < y->len ? x->len : y->len;
    int c;

    if ((c = memcmp(x->key, y->key, m)) != 0)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

typedef struct key_buf {
    unsigned char *b;
    size_t n, cap;
} key_buf;

static int ctx_key_append(key_buf *k, const char *ctx);

/* it[0..n) (p and ctx set) sorted by context: the keys share one
 * buffer; their offsets become pointers once it stops moving. */
static int sort_keyed(cs_sort_item *it, size_t n, key_buf *k)
{
    size_t i, o;

    k->n = 0;
    for (i = 0; i < n; i++) {
        o = k->n;
        if (ctx_key_append(k, it[i].ctx))
            return -1;
        it[i].off = o;
        it[i].len = k->n - o;
    }
    for (i = 0; i < n; i++)
        it[i].key = k->b + it[i].off;
    qsort(it, n, sizeof *it, cs_item_cmp);
    return 0;
}

/* Sort v[0..n) (one total) by context; it has room for n items. */
static int sort_tied(lp_fsamples **v, size_t n, cs_sort_item *it, key_buf *k)
{
    size_t i;

    for (i = 0; i < n; i++) {
        it[i].p = v[i];
        it[i].ctx = v[i]->context;
    }
    if (sort_keyed(it, n, k))
        return -1;
    for (i = 0; i < n; i++)
        v[i] = (lp_fsamples *)(uintptr_t)it[i].p;
    return 0;
}

int lp_context_sort(const char **v, size_t n)
{
    cs_sort_item *it;
    key_buf k = {0};
    size_t i;
    int rc;

    if (n < 2)
        return 0;
    if (!(it = malloc(n * sizeof *it)))
        return -1;
    for (i = 0; i < n; i++)
        it[i].p = it[i].ctx = v[i];
    if ((rc = sort_keyed(it, n, &k)) == 0)
        for (i = 0; i < n; i++)
            v[i] = it[i].p;
    free(k.b);
    free(it);
    return rc;
}

/* v by total descending, stably (qsort's comparisons were a fifth of
 * sorting an 84k-context profile). -1 on no memory. */
static int sort_by_total(lp_fsamples **v, size_t n)
{
    lp_radix_item *a = malloc((n ? 2 * n : 1) * sizeof *a), *r;
    size_t i;

    if (!a)
        return -1;
    for (i = 0; i < n; i++)
        a[i] = (lp_radix_item){~v[i]->total, (uintptr_t)v[i]};
    r = lp_radix_sort(a, a + n, n);
    for (i = 0; i < n; i++)
        v[i] = (lp_fsamples *)(uintptr_t)r[i].val;
    free(a);
    return 0;
}

/* By total (descending), then each run of one total by context: the
 * contexts are parsed once into keys instead of once per comparison
 * (84k contexts: lp_context_cmp was 8% of a flat CS text run), and only
 * one run's keys exist at a time (the largest run of the 84k-context
 * bench is 7% of the profiles). Both sorts are stable, as one sort with
 * lp_context_cmp after the total was. */
static int sort_cs(lp_fsamples **v, size_t n)
{
    cs_sort_item *it = NULL, *nit;
    size_t i, j, cap = 0;
    key_buf k = {0};
    int rc = 0;

    if (sort_by_total(v, n))
        return -1;
    for (i = 0; i < n && rc == 0; i = j) {
        for (j = i + 1; j < n && v[j]->total == v[i]->total; j++)
            ;
        if (j - i < 2)
            continue;
        if (j - i > cap) {
            if (!(nit = realloc(it, (j - i) * sizeof *it))) {
                rc = -1;
                break;
            }
            it = nit;
            cap = j - i;
        }
        rc = sort_tied(v + i, j - i, it, &k);
    }
    free(k.b);
    free(it);
    return rc;
}

/* v by the entries' fs.order, then stably by total (descending): the
 * order of sort_cs without a context compared. Each entry is read once,
 * for both keys (two passes over ~10^5 entries were two cache misses per
 * entry). 1 if done, 0 if an order is missing or repeated (sort_cs then),
 * -1 on no memory. */
static int sort_ordered(lp_fsamples **v, size_t n)
{
    lp_radix_item *a = malloc((n ? 2 * n : 1) * sizeof *a), *r;
    uint64_t *tot = malloc((n ? n : 1) * sizeof *tot);
    size_t i;
    int ok = a && tot, rc = ok ? 0 : -1;

    for (i = 0; ok && i < n; i++) {
        if (i + 16 < n)     /* a cache miss per entry, one at a time */
            __builtin_prefetch(v[i + 16]);
        a[i] = (lp_radix_item){v[i]->order, i};
        tot[i] = v[i]->total;
    }
    r = ok ? lp_radix_sort(a, a + n, n) : NULL;
    for (i = 0; ok && i < n; i++)
        ok = r[i].key && (i == 0 || r[i].key > r[i - 1].key);
    for (i = 0; ok && i < n; i++)   /* by total now, stably */
        r[i] = (lp_radix_item){~tot[r[i].val], (uintptr_t)v[r[i].val]};
    if (ok) {
        r = lp_radix_sort(r, r == a ? a + n : a, n);
        for (i = 0; i < n; i++)
            v[i] = (lp_fsamples *)(uintptr_t)r[i].val;
    }
    free(tot);
    free(a);
    return rc ? rc : ok;
}

void lp_profile_keep_sorted(lp_profile *p, lp_fsamples **v, size_t n)
{
    top_table *tt = p->funcs;

    if (!tt || n != p->nr_funcs) {
        free(v);
        return;
    }
    free(tt->sorted);
    tt->sorted = v;
    tt->nsorted = n;
}

/* The kept view, if it still holds every entry (none added: top_insert
 * drops it; none removed: as many) and the ranks hold (ordered), copied
 * into *out: 1, 0, or -1. */
static int kept_sorted(const lp_profile *p, lp_fsamples ***out, size_t *n)
{
    const top_table *tt = p->funcs;

    if (!tt || !tt->sorted || tt->nsorted != p->nr_funcs || !p->ordered)
        return 0;
    if (!(*out = malloc((tt->nsorted ? tt->nsorted : 1) * sizeof **out)))
        return -1;
    memcpy(*out, tt->sorted, tt->nsorted * sizeof **out);
    *n = tt->nsorted;
    return 1;
}

size_t lp_profile_sorted(const lp_profile *p, lp_fsamples ***out)
{
    size_t n;
    int rc = kept_sorted(p, out, &n);

    if (rc)
        return rc < 0 ? (size_t)-1 : n;
    if ((n = lp_profile_all(p, out)) == (size_t)-1)
        return n;
    if (p->is_cs && p->ordered)
        rc = sort_ordered(*out, n);
    if (!p->is_cs)
        qsort(*out, n, sizeof **out, top_cmp);
    else if (rc < 0 || (rc == 0 && sort_cs(*out, n))) {
        free(*out);
        *out = NULL;
        return (size_t)-1;
    }
    return n;
}

/* ---- fix-ups ------------------------------------------------------------ */

void lp_fs_shrink(lp_fsamples *fs)
{
    lp_body_rec *nv;

    if (fs->nr_body && fs->nr_body < fs->body_cap &&
        (nv = realloc(fs->body, fs->nr_body * sizeof *nv))) {
        fs->body = nv;
        fs->body_cap = fs->nr_body;
    }
}

void lp_fs_update_callsite_samples(lp_fsamples *fs)
{
    uint64_t s;
    uint32_t i;

    for (i = 0; i < fs->nr_body; i++) {
        s = lp_body_target_sum(&fs->body[i]);
        if (s > fs->body[i].count)
            fs->body[i].count = s;
    }
}

void lp_fs_update_total_samples(lp_fsamples *fs)
{
    uint64_t s = 0;
    uint32_t i, j;

    for (i = 0; i < fs->nr_body; i++)
        s = lp_sat_add(s, fs->body[i].count);
    for (i = 0; i < fs->nr_callsites; i++)
        for (j = 0; j < fs->callsites[i].n; j++) {
            lp_fs_update_total_samples(fs->callsites[i].v[j]);
            s = lp_sat_add(s, fs->callsites[i].v[j]->total);
        }
    fs->total = s;
}

void lp_fs_drop_callees(lp_fsamples *fs, lp_name_pred pred)
{
    uint32_t i, j, k;

    for (i = 0; i < fs->nr_callsites; i++) {
        lp_callsite *c = &fs->callsites[i];
        for (j = 0, k = 0; j < c->n; j++) {
            if (pred(c->v[j]->name)) {
                fs_clear(c->v[j]);
                free(c->v[j]);
            } else {
                lp_fs_drop_callees(c->v[j], pred);
                c->v[k++] = c->v[j];
            }
        }
        c->n = k;
    }
}

/* ---- merging and moving (CS generation) ----------------------------------- */

/* LLVM SaturatingMultiplyAdd: acc + x * w, saturating (flagged) */
static uint64_t mul_add(uint64_t acc, uint64_t x, uint64_t w, unsigned *st)
{
    unsigned __int128 r;

    if (w == 1) {   /* lp_fs_merge's, the pre-inliner's ~10^6 records */
        if (acc + x >= acc)
            return acc + x;
        *st |= LP_MERGE_OVERFLOW;
        return UINT64_MAX;
    }
    r = (unsigned __int128)x * w + acc;

    if (r > UINT64_MAX) {
        *st |= LP_MERGE_OVERFLOW;
        return UINT64_MAX;
    }
    return (uint64_t)r;
}

static int merge_record(lp_body_rec *dst, const lp_body_rec *src, uint64_t w,
                        unsigned *st)
{
    struct lp_target *t;
    uint32_t i;

    dst->count = mul_add(dst->count, src->count, w, st);
    for (i = 0; i < src->nt; i++) {
        if (!(t = target_slot(dst, src->t[i].name)))
            return -1;
        t->count = mul_add(t->count, src->t[i].count, w, st);
    }
    return 0;
}

/* Make room in dst's body for the locations of src's it lacks (both in
 * location order): counted in one pass, inserted empty in one pass from
 * the back. -1 on no memory. */
static int body_union(lp_fsamples *dst, const lp_fsamples *src)
{
    uint32_t n = dst->nr_body, i = 0, j = 0, extra = 0;
    int64_t a, b, k;
    lp_body_rec *nv;
    int c;

    while (j < src->nr_body) {
        c = i < n ? loc_cmp(dst->body[i].loc, src->body[j].loc) : 1;
        extra += c > 0;
        i += c <= 0;
        j += c >= 0;
    }
    if (!extra)
        return 0;
    if (n + extra > dst->body_cap) {
        if (!(nv = realloc(dst->body, (size_t)(n + extra) * sizeof *nv)))
            return -1;
        dst->body = nv;
        dst->body_cap = n + extra;
    }
    for (a = (int64_t)n - 1, b = (int64_t)src->nr_body - 1, k = a + extra; b >= 0; k--) {
        c = a >= 0 ? loc_cmp(dst->body[a].loc, src->body[b].loc) : -1;
        if (c >= 0)
            dst->body[k] = dst->body[a--];
        else
            dst->body[k] = (lp_body_rec){src->body[b].loc, 0, NULL, 0, 0};
        b -= c <= 0;
    }
    dst->nr_body = n + extra;
    return 0;
}

/* loc_cmp's order as one integer */
static inline uint64_t loc_key(const lp_loc *l)
{
    return (uint64_t)l->line << 32 | l->disc;
}

static inline bool loc_eq(const lp_loc *a, const lp_loc *b)
{
    return a->line == b->line && a->disc == b->disc;
}

/* src's records merged into dst's, in one pass in src's order while dst
 * has every location src has (most of the pre-inliner's ~80k merges add
 * none; and the next record of dst is mostly the one: tried first); at
 * the first one it lacks, body_union makes room for the rest and the
 * pass goes on. -1 on no memory. */
static int body_merge(lp_fsamples *dst, const lp_fsamples *src, uint64_t w,
                      unsigned *st)
{
    const lp_body_rec *sb = src->body;
    lp_body_rec *db = dst->body;
    uint32_t i, j = 0, n = dst->nr_body, ns = src->nr_body;
    uint64_t k;

    for (i = 0; i < ns; i++, j++) {
        if (j >= n || !loc_eq(&db[j].loc, &sb[i].loc)) {
            k = loc_key(&sb[i].loc);
            while (j < n && loc_key(&db[j].loc) < k)
                j++;
            if (j == n || loc_key(&db[j].loc) != k) {
                if (body_union(dst, src))
                    return -1;
                db = dst->body;
                n = dst->nr_body;
                j = body_lower(dst, sb[i].loc);
            }
        }
        if (merge_record(&db[j], &sb[i], w, st))
            return -1;
    }
    return 0;
}

int lp_fs_merge_weighted(lp_fsamples *dst, const lp_fsamples *src,
                         uint64_t w, unsigned *st)
{
    lp_fsamples *callee;
    uint32_t i, j;

    if (!dst->checksum) {
        dst->checksum = src->checksum;
    } else if (dst->checksum != src->checksum) {
        *st |= LP_MERGE_HASH_MISMATCH;
        return 0;
    }
    dst->total = mul_add(dst->total, src->total, w, st);
    dst->head = mul_add(dst->head, src->head, w, st);
    if (body_merge(dst, src, w, st))
        return -1;
    for (i = 0; i < src->nr_callsites; i++)
        for (j = 0; j < src->callsites[i].n; j++) {
            const lp_fsamples *e = src->callsites[i].v[j];
            bool fresh = !lp_fs_find_callee(dst, src->callsites[i].loc, e->name);
            if (!(callee = lp_fs_callee(dst, src->callsites[i].loc, e->name)))
                return -1;
            if (fresh)
                callee->attrs = e->attrs; /* a fresh profile copies the context */
            if (lp_fs_merge_weighted(callee, e, w, st))
                return -1;
        }
    return 0;
}

int lp_fs_merge(lp_fsamples *dst, const lp_fsamples *src)
{
    unsigned st = 0;

    return lp_fs_merge_weighted(dst, src, 1, &st);
}

int lp_fs_merge_ranked(lp_fsamples *dst, const lp_fsamples *src)
{
    if (lp_fs_merge(dst, src))
        return -1;
    if (src->order && (!dst->order || src->order < dst->order))
        dst->order = src->order;
    return 0;
}

void lp_fs_move(lp_fsamples *dst, lp_fsamples *src)
{
    dst->total = src->total;
    dst->head = src->head;
    dst->attrs = src->attrs;
    dst->order = src->order;
    dst->checksum = src->checksum;
    dst->body = src->body;
    dst->nr_body = src->nr_body;
    dst->body_cap = src->body_cap;
    dst->callsites = src->callsites;
    dst->nr_callsites = src->nr_callsites;
    dst->callsite_cap = src->callsite_cap;
    src->total = src->head = 0;
    src->attrs = src->order = 0;
    src->checksum = 0;
    src->body = NULL;
    src->callsites = NULL;
    src->nr_body = src->body_cap = src->nr_callsites = src->callsite_cap = 0;
}

uint64_t lp_fs_remove_call(lp_fsamples *fs, lp_loc loc, const char *callee)
{
    uint32_t i = body_lower(fs, loc), k;
    lp_body_rec *b;
    uint64_t n = 0;
    int found;

    if (i >= fs->nr_body || loc_cmp(fs->body[i].loc, loc) != 0)
        return 0;
    b = &fs->body[i];
    k = target_lower(b, callee, &found);
    if (found) {
        n = b->t[k].count;
        if (targets_inline(b)) {
            free(b->t);
            b->t = NULL;
            b->nt = 0;
        } else {
            free(b->t[k].name);
            memmove(&b->t[k], &b->t[k + 1], (b->nt - k - 1) * sizeof *b->t);
            b->nt--;
        }
    }
    if (n > b->count)
        n = b->count;
    b->count -= n;
    if (b->count == 0) {
        free_record(b);
        memmove(&fs->body[i], &fs->body[i + 1], (fs->nr_body - i - 1) * sizeof *fs->body);
        fs->nr_body--;
    }
    return n;
}

uint64_t lp_fs_target_count(const lp_fsamples *fs, lp_loc loc,
                            const char *callee)
{
    const lp_body_rec *b = lp_fs_body_find(fs, loc);
    uint32_t k;
    int found = 0;

    if (!b)
        return 0;
    k = target_lower(b, callee, &found);
    return found ? b->t[k].count : 0;
}

size_t lp_fs_nr_body(const lp_fsamples *fs)
{
    return fs->nr_body;
}

size_t lp_fs_nr_callsites(const lp_fsamples *fs)
{
    return fs->nr_callsites;
}

void lp_fs_body_totals(const lp_fsamples *fs, uint64_t *samples,
                       uint64_t *records)
{
    uint32_t i, j;

    *records += fs->nr_body;
    for (i = 0; i < fs->nr_body; i++)
        *samples += fs->body[i].count;
    for (i = 0; i < fs->nr_callsites; i++)
        for (j = 0; j < fs->callsites[i].n; j++)
            lp_fs_body_totals(fs->callsites[i].v[j], samples, records);
}

uint64_t lp_fs_head_estimate(const lp_fsamples *fs, int cs)
{
    uint64_t n = 0;
    uint32_t j;

    if (cs && fs->head)
        return fs->head;
    if (fs->nr_body && (!fs->nr_callsites ||
                        loc_cmp(fs->body[0].loc, fs->callsites[0].loc) < 0))
        n = fs->body[0].count;
    else if (fs->nr_callsites)
        for (j = 0; j < fs->callsites[0].n; j++)
            n = lp_sat_add(n, lp_fs_head_estimate(fs->callsites[0].v[j], cs));
    return n ? n : fs->total > 0;
}

/* ---- context ordering ------------------------------------------------------ */

typedef struct ctx_frame_view {  /* one frame of a printed context */
    const char *name;
    size_t len;
    uint32_t line, disc;
} ctx_frame_view;

static uint32_t parse_dec(const char *s, const char *end)
{
    uint32_t v = 0;

    for (; s < end && *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint32_t)(*s - '0');
    return v;
}

/* Next frame of *p (advanced past it and its " @ "); 0 at the end. */
/* The first " @ " of s (NULL if none); *end: it, or the end of s. One
 * scan for '@' (strstr and strlen were two). */
static const char *frame_sep(const char *s, const char **end)
{
    const char *q = s;

    while (*(q = strchrnul(q, '@'))) {
        if (q > s && q[-1] == ' ' && q[1] == ' ')
            return *end = q - 1;
        q++;
    }
    *end = q;
    return NULL;
}

static int next_frame(const char **p, ctx_frame_view *f)
{
    const char *s = *p, *sep, *end, *colon, *dot;

    if (!*s)
        return 0;
    sep = frame_sep(s, &end);
    colon = memchr(s, ':', (size_t)(end - s));
    f->name = s;
    f->len = (size_t)((colon ? colon : end) - s);
    f->line = f->disc = 0;
    if (colon) {
        dot = memchr(colon + 1, '.', (size_t)(end - colon - 1));
        f->line = parse_dec(colon + 1, dot ? dot : end);
        if (dot)
            f->disc = parse_dec(dot + 1, end);
    }
    *p = sep ? sep + 3 : end;
    return 1;
}

size_t lp_context_split(const char *ctx, lp_context_frame *out, size_t max)
{
    ctx_frame_view f;
    size_t n = 0;

    while (next_frame(&ctx, &f)) {
        if (n < max)
            out[n] = (lp_context_frame){f.name, f.len, {f.line, f.disc}};
        n++;
    }
    return n;
}

static unsigned char *put_be32(unsigned char *o, uint32_t v)
{
    o[0] = (unsigned char)(v >> 24);
    o[1] = (unsigned char)(v >> 16);
    o[2] = (unsigned char)(v >> 8);
    o[3] = (unsigned char)v;
    return o + 4;
}

/* Byte key of a context whose memcmp order (then the shorter first) is
 * lp_context_cmp's: per frame its name and a NUL (names hold none: a name
 * that is a prefix of the other comes first), then line and discriminator
 * as 4 big-endian bytes each. An MD5 name is a NUL then its value in 8
 * big-endian bytes (before every string name, numerically among MD5
 * names). A context whose key is a prefix of the other's has fewer
 * frames, the same ones. */
static int ctx_key_append(key_buf *k, const char *ctx)
{
    ctx_frame_view f;
    unsigned char *o;
    uint64_t h;
    size_t n;

    while (next_frame(&ctx, &f)) {
        if (lp_grow_bytes((void **)&k->b, &k->cap, k->n + f.len + 17, 4096))
            return -1;
        o = k->b + k->n;
        if (md5_span(f.name, f.len, &h)) {
            o[0] = 0;
            put_be32(put_be32(o + 1, (uint32_t)(h >> 32)), (uint32_t)h);
            n = 9;
        } else {
            memcpy(o, f.name, f.len);
            o[f.len] = 0;
            n = f.len + 1;
        }
        put_be32(put_be32(o + n, f.line), f.disc);
        k->n += n + 8;
    }
    return 0;
}

int lp_context_cmp(const char *a, const char *b)
{
    ctx_frame_view x, y;
    size_t k = 0, pos = 0;
    const char *sep;
    int c, ha, hb;

    /* The frames inside the strings' common prefix compare equal: start
     * both after the last separator the frame parse itself finds there
     * (the same chain of first " @ " occurrences as next_frame's). */
    while (a[k] && a[k] == b[k])
        k++;
    if (!a[k] && !b[k])
        return 0;
    while ((sep = strstr(a + pos, " @ ")) && (size_t)(sep - a) + 3 <= k)
        pos = (size_t)(sep - a) + 3;
    a += pos;
    b += pos;
    for (;;) {
        ha = next_frame(&a, &x);
        hb = next_frame(&b, &y);
        if (!ha || !hb)
            return ha - hb;
        if ((c = name_span_cmp(x.name, x.len, y.name, y.len)) != 0)
            return c;
        if (x.line != y.line)
            return x.line < y.line ? -1 : 1;
        if (x.disc != y.disc)
            return x.disc < y.disc ? -1 : 1;
    }
}
