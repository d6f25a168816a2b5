/*
 * ctxcount.c - range/branch counters per (binary, calling context), the
 * hand-over from the virtual unwinder to the CS profile generator, and the
 * context-sensitive unsymbolized profile writer. Owns the context keys and
 * their table; not how contexts are found (src/unwind) nor what is made of
 * them (the CS generator).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/ctxcount.h"
#include "util/hash.h"
#include "util/heaphome.h"
#include "util/zalloc.h"

typedef struct ctx_ent {     /* one allocation: this, its counters
                                (e.counters), then (at ent_tail) the
                                frames (e.frames) or call-site addresses
                                (e.addrs), the hash key if it has one
                                (hkey_of: 4-byte bin, then the printed
                                key and its NUL), the frames' names
                                unless borrowed. A frame context of a
                                borrowing table has no hash key: it is
                                keyed by its frames (names compared as
                                strings, the leaf's location ignored:
                                what the printed key keeps), with no key
                                printed until asked for (e.key then
                                malloc'ed, NULL before) - the printed
                                keys were a quarter of the unwinder's
                                peak memory. No pointer of its own to the
                                frames, the hash key or the counters'
                                block: 8 bytes each of the ~40 K entries
                                at the flush's end, and the counters' own
                                block (32 bytes) */
    lp_ctx_entry e;
    union {
        size_t hlen;            /* with a hash key: its length */
        uint64_t fh;            /* without: its frames' hash (its
                                   slot's; a merge moves it without
                                   hashing the names again) */
        struct ctx_ent *into;   /* deferred by a merge: the destination
                                   table's entry its counts go to */
    };
} ctx_ent;

/* key_home is 8-byte aligned: hkey_of's test */
_Static_assert(sizeof(ctx_ent) % 8 == 0, "ctx_ent: 8-byte multiple");

/* Open addressing on the key's hash (the full hash kept in the slot, so a
 * probe rarely touches an entry that does not match), at most 3/4 full
 * (it was 1/2: SQLite's 22 K and 18 K contexts of the two unwinding
 * threads then took 1 MB of slots each at the flush's end, the run's
 * peak, 512 KB now); the entries also in insertion order, which is the
 * iteration order. */
typedef struct ctx_slot {
    uint64_t h;
    ctx_ent *c;                 /* NULL: empty */
} ctx_slot;

/* A name's hash, cached by the name's address: a borrowing table's names
 * stay where they are, unchanged (lp_ctxcount_borrow_names), and a
 * program has a few thousand of them. A new context hashed every name of
 * its frames (a strlen and an XXH3 each: ~600 of the ~1,350
 * instructions a new context cost on bench (c)). */
typedef struct name_hash {
    const char *name;           /* NULL: empty */
    uint64_t h;
} name_hash;

#define NAME_HASH_BITS 11

struct lp_ctxcount {
    ctx_slot *slots;
    size_t mask;
    ctx_ent **v;                /* insertion order */
    size_t n, cap;
    char *kbuf;                 /* key scratch: 4-byte bin, printed key */
    size_t kcap;
    size_t *lens;               /* scratch: the frames' name lengths */
    size_t lcap;
    name_hash *nh;              /* a borrowing table's names' hashes by
                                   address (NAME_HASHES, made on first
                                   use) */
    bool borrow;                /* names kept by pointer, not copied */
};

lp_ctxcount *lp_ctxcount_new(void)
{
    return calloc(1, sizeof(lp_ctxcount));
}

/* The counters' room after the entry, 8-byte aligned. */
static size_t counters_room(void)
{
    return (lp_counters_bytes() + 7) & ~(size_t)7;
}

/* A zeroed entry with its counters and `extra` bytes after them (at
 * ent_tail): the counters in the entry's block, not one of their own - a
 * calloc and a free less per context, that free on a generation thread,
 * into an unwinding thread's heap (under its lock). malloc and memset,
 * not calloc: glibc's calloc skips the per-thread cache and takes the
 * arena's bins every time (~210 instructions a context on bench (c), 97 K
 * of them; half that now). */
static ctx_ent *ent_alloc(size_t extra)
{
    ctx_ent *c = lp_zalloc_written(sizeof *c + counters_room() + extra);

    if (c)
        c->e.counters = lp_counters_init(c + 1);
    return c;
}

static char *ent_tail(const ctx_ent *c)
{
    return (char *)(uintptr_t)(c + 1) + counters_room();
}

/* Where c's hash key is when it has one: after its frames or addresses
 * (8-byte aligned). */
static char *key_home(const ctx_ent *c)
{
    return ent_tail(c) + (c->e.addrs ? c->e.naddrs * sizeof *c->e.addrs
                                     : c->e.nframes * sizeof *c->e.frames);
}

/* c's hash key, or NULL: a frame context of a borrowing table. With a
 * hash key, e.key is in it (after the bin); without, e.key is NULL or a
 * block of its own, which never starts 4 bytes after an 8-byte boundary
 * as that would. */
static char *hkey_of(const ctx_ent *c)
{
    char *k = key_home(c);

    return c->e.key == k + sizeof(int) ? k : NULL;
}

/* c's blocks given to drop(block, arg): its counters' tables, its printed
 * key if it has one of its own, the entry (with its counters) last. */
static void ent_free_with(ctx_ent *c, void (*drop)(void *, void *), void *arg)
{
    lp_counters_fini_with(c->e.counters, drop, arg);
    if (!hkey_of(c) && c->e.key)
        drop((char *)c->e.key, arg);    /* printed when listed, or NULL */
    drop(c, arg);
}

static void ent_free(ctx_ent *c)
{
    ent_free_with(c, lp_free_drop, NULL);
}

void lp_ctxcount_free(lp_ctxcount *cc)
{
    if (!cc)
        return;
    lp_ctxcount_clear(cc);
    free(cc);
}

void lp_ctxcount_borrow_names(lp_ctxcount *cc)
{
    cc->borrow = true;
}

void lp_ctxcount_clear(lp_ctxcount *cc)
{
    bool borrow = cc->borrow;
    size_t i;

    for (i = 0; i < cc->n; i++)
        if (cc->v[i])           /* NULL: released */
            ent_free(cc->v[i]);
    free(cc->v);
    free(cc->slots);
    free(cc->kbuf);
    free(cc->lens);
    free(cc->nh);
    memset(cc, 0, sizeof *cc);
    cc->borrow = borrow;
}

size_t lp_ctxcount_size(const lp_ctxcount *cc)
{
    return cc->n;
}

/* ---- keys ----------------------------------------------------------------- */

static size_t put_u32(char *out, uint32_t v)
{
    char t[10];
    size_t n = 0, i;

    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (i = 0; i < n; i++)
        out[i] = t[n - 1 - i];
    return n;
}

size_t lp_ctx_site_print(char *out, lp_loc loc)
{
    size_t o = 0;

    out[o++] = ':';
    o += put_u32(out + o, loc.line);
    if (loc.disc) {
        out[o++] = '.';
        o += put_u32(out + o, loc.disc);
    }
    return o;
}

static size_t put_frame(char *out, const lp_ctx_frame *f, size_t len,
                        bool leaf)
{
    memcpy(out, f->func, len);
    return leaf ? len : len + lp_ctx_site_print(out + len, f->loc);
}

/* lens: the names' lengths (NULL: measured here) */
static size_t key_room(const lp_ctx_frame *frames, const size_t *lens, size_t n)
{
    size_t len = 1, i;

    for (i = 0; i < n; i++)
        len += (lens ? lens[i] : strlen(frames[i].func)) + 3 + 2 * 11 + 2;
    return len;
}

/* The printed key into s (key_room bytes); returns its length. */
static size_t print_key(char *s, const lp_ctx_frame *frames, const size_t *lens,
                        size_t n)
{
    size_t i, o = 0;

    for (i = 0; i < n; i++) {
        if (i) {
            memcpy(s + o, " @ ", 3);
            o += 3;
        }
        o += put_frame(s + o, &frames[i],
                       lens ? lens[i] : strlen(frames[i].func), i + 1 == n);
    }
    s[o] = 0;
    return o;
}

char *lp_ctx_key(const lp_ctx_frame *frames, size_t n)
{
    char *s = malloc(key_room(frames, NULL, n));

    if (s)
        print_key(s, frames, NULL, n);
    return s;
}

static int parse_u32(const char *s, const char *end, uint32_t *v)
{
    uint64_t x = 0;

    if (s == end)
        return -1;
    for (; s < end; s++) {
        if (*s < '0' || *s > '9' || (x = x * 10 + (uint64_t)(*s - '0')) > UINT32_MAX)
            return -1;
    }
    *v = (uint32_t)x;
    return 0;
}

/* "func:line[.disc]" (caller) or "func" (leaf), in place. */
static int parse_frame(char *s, bool leaf, lp_ctx_frame *f)
{
    char *colon, *dot, *end = s + strlen(s);

    f->loc.line = f->loc.disc = 0;
    f->func = s;
    if (leaf)
        return *s ? 0 : -1;
    if (!(colon = strrchr(s, ':')) || colon == s)
        return -1;
    *colon = 0;
    dot = strchr(colon + 1, '.');
    if (parse_u32(colon + 1, dot ? dot : end, &f->loc.line))
        return -1;
    return dot ? parse_u32(dot + 1, end, &f->loc.disc) : 0;
}

int lp_ctx_parse_key(const char *key, lp_ctx_frame **frames, size_t *n,
                     char **buf)
{
    size_t cnt = 1, i = 0;
    char *p, *sep;
    const char *q;

    *frames = NULL;
    *n = 0;
    if (!(*buf = strdup(key)))
        return -1;
    if (!**buf)
        return 0;
    for (q = key; (q = strstr(q, " @ ")); q += 3)
        cnt++;
    if (!(*frames = calloc(cnt, sizeof **frames)))
        goto bad;
    for (p = *buf; i < cnt; i++, p = sep + 3) {
        sep = strstr(p, " @ ");
        if (sep)
            *sep = 0;
        if (parse_frame(p, i + 1 == cnt, &(*frames)[i]))
            goto bad;
        if (!sep)
            break;
    }
    *n = cnt;
    return 0;
bad:
    free(*frames);
    free(*buf);
    *frames = NULL;
    *buf = NULL;
    return -1;
}

/* ---- the table ------------------------------------------------------------ */

/* The (bin, printed key) of frames in cc->kbuf; its length, 0 on OOM. */
static size_t scratch_key(lp_ctxcount *cc, int bin, const lp_ctx_frame *frames,
                          size_t n)
{
    size_t room, i;

    if (n > cc->lcap) {
        size_t *l = realloc(cc->lens, 2 * n * sizeof *l);
        if (!l)
            return 0;
        cc->lens = l;
        cc->lcap = 2 * n;
    }
    for (i = 0; i < n; i++)
        cc->lens[i] = strlen(frames[i].func);
    room = sizeof bin + key_room(frames, cc->lens, n);

    if (room > cc->kcap) {
        char *k = realloc(cc->kbuf, room * 2);
        if (!k)
            return 0;
        cc->kbuf = k;
        cc->kcap = room * 2;
    }
    memcpy(cc->kbuf, &bin, sizeof bin);
    return sizeof bin + print_key(cc->kbuf + sizeof bin, frames, cc->lens, n);
}

static ctx_slot *slot_of(const lp_ctxcount *cc, uint64_t h, const char *k,
                         size_t len)
{
    size_t i = (size_t)h & cc->mask;
    ctx_slot *s;

    for (;; i = (i + 1) & cc->mask) {
        s = &cc->slots[i];
        if (!s->c || (s->h == h && s->c->hlen == len && hkey_of(s->c) &&
                      memcmp(hkey_of(s->c), k, len) == 0))
            return s;
    }
}

/* The hash of name's bytes, through the cache nh (NULL: none). */
static uint64_t name_hash_of(name_hash *nh, const char *name)
{
    name_hash *e;

    if (!nh)
        return XXH3_64bits(name, strlen(name));
    e = &nh[((uintptr_t)name * 0x9e3779b97f4a7c15ull) >> (64 - NAME_HASH_BITS)];
    if (e->name != name)
        *e = (name_hash){name, XXH3_64bits(name, strlen(name))};
    return e->h;
}

/* A frame context's hash: its binary, its names' bytes, its call sites
 * (not the leaf's location: the printed key has none); nh: the names'
 * hashes cached (NULL: none). The same with or without, in any table:
 * merges look an entry up in another table by it. */
static uint64_t frames_hash(name_hash *nh, int bin, const lp_ctx_frame *f,
                            size_t n)
{
    uint64_t h = (uint64_t)(uint32_t)bin * 0x9e3779b97f4a7c15ull + n;
    size_t i;

    for (i = 0; i < n; i++) {
        if (i + 1 < n)
            h ^= ((uint64_t)f[i].loc.line << 32 | f[i].loc.disc) * 0xc2b2ae3d27d4eb4full;
        h = (h ^ name_hash_of(nh, f[i].func)) * 0xd6e8feb86659fd93ull;
        h ^= h >> 32;
    }
    h *= 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static bool same_frames(const ctx_ent *c, int bin, const lp_ctx_frame *f,
                        size_t n)
{
    const lp_ctx_frame *g = c->e.frames;
    size_t i;

    if (c->e.bin != bin || c->e.nframes != n || hkey_of(c))
        return false;
    for (i = 0; i < n; i++) {
        if (g[i].func != f[i].func && strcmp(g[i].func, f[i].func) != 0)
            return false;
        if (i + 1 < n && (g[i].loc.line != f[i].loc.line || g[i].loc.disc != f[i].loc.disc))
            return false;
    }
    return true;
}

static ctx_slot *frame_slot(const lp_ctxcount *cc, uint64_t h, int bin,
                            const lp_ctx_frame *f, size_t n)
{
    size_t i = (size_t)h & cc->mask;
    ctx_slot *s;

    for (;; i = (i + 1) & cc->mask) {
        s = &cc->slots[i];
        if (!s->c || (s->h == h && same_frames(s->c, bin, f, n)))
            return s;
    }
}

/* The free slot for a key known to be absent. */
static ctx_slot *free_slot(const lp_ctxcount *cc, uint64_t h)
{
    size_t i = (size_t)h & cc->mask;

    while (cc->slots[i].c)
        i = (i + 1) & cc->mask;
    return &cc->slots[i];
}

/* Frame contexts of a borrowing table are keyed by their frames. */
static bool by_frames(const lp_ctxcount *cc, size_t n)
{
    return cc->borrow && n > 0;
}

static ctx_ent *lookup(const lp_ctxcount *cc, const char *k, size_t len,
                       uint64_t h)
{
    return cc->slots ? slot_of(cc, h, k, len)->c : NULL;
}

/* Room for one more entry. 0 or -1. */
static int reserve(lp_ctxcount *cc)
{
    size_t nb = cc->slots ? (cc->mask + 1) * 2 : 1024, i;
    ctx_slot *old = cc->slots, *ns;
    size_t omask = cc->mask;

    if (cc->n == cc->cap) {
        size_t cap = cc->cap ? cc->cap * 2 : 256;
        ctx_ent **v = realloc(cc->v, cap * sizeof *v);
        if (!v)
            return -1;
        cc->v = v;
        cc->cap = cap;
    }
    if (cc->slots && (cc->n + 1) * 4 <= (cc->mask + 1) * 3)
        return 0;
    /* zeroed by writing: the probes read the slots before any is written
     * (calloc's fresh pages: a copy-on-write fault and a TLB shoot-down
     * on the other core per page, 3.5% of bench (c)'s CPU) */
    if (!(ns = lp_zalloc_written(nb * sizeof *ns)))
        return -1;
    cc->slots = ns;
    cc->mask = nb - 1;
    for (i = 0; old && i <= omask; i++)
        if (old[i].c)
            *free_slot(cc, old[i].h) = old[i];
    free(old);
    return 0;
}

lp_ctx_entry *lp_ctxcount_find(const lp_ctxcount *cc, int bin,
                               const char *key)
{
    size_t len = sizeof bin + strlen(key);
    char *h = malloc(len);
    ctx_ent *c = NULL;

    if (h) {
        memcpy(h, &bin, sizeof bin);
        memcpy(h + sizeof bin, key, len - sizeof bin);
        c = lookup(cc, h, len, lp_hash_bytes(h, len));
    }
    free(h);
    if (!c && cc->borrow && *key && cc->slots) {
        lp_ctx_frame *f;
        size_t n;
        char *buf;
        if (lp_ctx_parse_key(key, &f, &n, &buf) == 0) {
            c = frame_slot(cc, frames_hash(NULL, bin, f, n), bin, f, n)->c;
            free(f);
            free(buf);
        }
    }
    return c ? &c->e : NULL;
}

/* The entry with its frames, key and names (unless borrowed) in one
 * block. */
static ctx_ent *make_ent(const char *hkey, size_t hlen,
                         const lp_ctx_frame *frames, const size_t *lens,
                         size_t n, bool borrow)
{
    size_t names = 0, i, o;
    lp_ctx_frame *f;
    ctx_ent *c;
    char *p, *k;
    int bin;

    for (i = 0; i < n && !borrow; i++)
        names += lens[i] + 1;
    c = ent_alloc(n * sizeof *frames + hlen + 1 + names);
    if (!c)
        return NULL;
    memcpy(&bin, hkey, sizeof bin);
    f = (lp_ctx_frame *)ent_tail(c);
    k = (char *)(f + n);
    memcpy(k, hkey, hlen);
    k[hlen] = 0;
    c->hlen = hlen;
    p = k + hlen + 1;
    for (i = 0; i < n; i++) {
        if (borrow) {
            f[i] = frames[i];
            continue;
        }
        o = lens[i] + 1;
        memcpy(p, frames[i].func, o);
        f[i] = (lp_ctx_frame){p, frames[i].loc};
        p += o;
    }
    c->e.key = k + sizeof bin;
    c->e.frames = f;
    c->e.nframes = n;
    c->e.bin = bin;
    return c;
}

/* A frame context of a borrowing table: the entry and its frames. */
static ctx_ent *make_framed(int bin, const lp_ctx_frame *frames, size_t n)
{
    ctx_ent *c = ent_alloc(n * sizeof *frames);

    if (!c)
        return NULL;
    if (n)
        memcpy(ent_tail(c), frames, n * sizeof *frames);
    c->e.frames = (const lp_ctx_frame *)ent_tail(c);
    c->e.nframes = n;
    c->e.bin = bin;
    return c;
}

/* c, new in cc under hash h (NULL: it could not be made): its slot, its
 * place in the order. */
static lp_ctx_entry *insert(lp_ctxcount *cc, uint64_t h, ctx_ent *c,
                            bool was_leaf_inlined, lp_error *err)
{
    if (!c) {
        lp_error_set(err, LP_ENOMEM, "context table: out of memory");
        return NULL;
    }
    c->e.was_leaf_inlined = was_leaf_inlined;
    c->e.leaf_rank = UINT64_MAX;
    if (!hkey_of(c))
        c->fh = h;
    *free_slot(cc, h) = (ctx_slot){h, c};
    cc->v[cc->n++] = c;
    return &c->e;
}

static lp_ctx_entry *get_by_frames(lp_ctxcount *cc, int bin,
                                   const lp_ctx_frame *frames, size_t n,
                                   bool was_leaf_inlined, lp_error *err)
{
    uint64_t h;
    ctx_ent *c;

    if (!cc->nh)                /* without it, hashed as they come */
        cc->nh = lp_zalloc_written(((size_t)1 << NAME_HASH_BITS) * sizeof *cc->nh);
    h = frames_hash(cc->nh, bin, frames, n);
    c = cc->slots ? frame_slot(cc, h, bin, frames, n)->c : NULL;
    if (c)
        return &c->e;
    return insert(cc, h, reserve(cc) ? NULL : make_framed(bin, frames, n),
                  was_leaf_inlined, err);
}

lp_ctx_entry *lp_ctxcount_get(lp_ctxcount *cc, int bin,
                              const lp_ctx_frame *frames, size_t n,
                              bool was_leaf_inlined, lp_error *err)
{
    if (by_frames(cc, n))
        return get_by_frames(cc, bin, frames, n, was_leaf_inlined, err);
    size_t len = scratch_key(cc, bin, frames, n);
    uint64_t h = len ? lp_hash_bytes(cc->kbuf, len) : 0;
    ctx_ent *c = len ? lookup(cc, cc->kbuf, len, h) : NULL;

    if (c)
        return &c->e;
    return insert(cc, h, !len || reserve(cc) ? NULL
                         : make_ent(cc->kbuf, len, frames, cc->lens, n, cc->borrow),
                  was_leaf_inlined, err);
}

void lp_ctx_entry_leaf(lp_ctx_entry *e, bool inlined, uint64_t rank)
{
    if (e->leaf_rank == UINT64_MAX) {   /* the creator's value: provisional */
        e->was_leaf_inlined = inlined;
        e->leaf_rank = rank;
        return;
    }
    if (e->was_leaf_inlined != inlined)
        e->leaf_inlined_mixed = true;
    if (rank < e->leaf_rank) {
        e->was_leaf_inlined = inlined;
        e->leaf_rank = rank;
    }
}

/* src's entry c met dst's d: d's leaf as one table would have it */
static void merge_leaf(lp_ctx_entry *d, const lp_ctx_entry *c)
{
    if (c->leaf_rank != UINT64_MAX)
        lp_ctx_entry_leaf(d, c->was_leaf_inlined, c->leaf_rank);
    d->leaf_inlined_mixed |= c->leaf_inlined_mixed;
}

/* Every entry of src, in its insertion order, into dst: an entry dst has
 * already gets src's counts (its leaf through merge_leaf: unranked,
 * dst's was_leaf_inlined stays, dst's entry came first), any other one
 * moves over, appended to dst's order. Merging
 * the tables of two runs over consecutive parts of a sequence of samples
 * gives the table of one run over the whole sequence. src is left empty. */
/* How far ahead the merge asks for what it will read: dst's table is far
 * larger than the caches and the entries' hashes are known, so the slot
 * of the entry MERGE_AHEAD on, and that entry MERGE_AHEAD before (a
 * slot asked for before the table grows is only wasted). dst is not
 * sized for all of src up front: src's duplicates would make its table
 * twice as large as needed (+1 MB at sqlite-line's peak). */
#define MERGE_AHEAD 8

static void merge_prefetch(const lp_ctxcount *dst, const lp_ctxcount *src,
                           size_t i)
{
    const ctx_ent *c;

    if (i + 2 * MERGE_AHEAD < src->n)
        __builtin_prefetch(src->v[i + 2 * MERGE_AHEAD]);
    if (i + MERGE_AHEAD < src->n && !hkey_of(c = src->v[i + MERGE_AHEAD]))
        __builtin_prefetch(&dst->slots[c->fh & dst->mask]);
}

/* lp_ctxcount_merge; with `defer`, an entry dst has stays in src
 * instead, its first ones in order, remembering dst's entry (into), and
 * counted in *ready (NULL: not). */
static int merge_into(lp_ctxcount *dst, lp_ctxcount *src, bool defer,
                      size_t *ready, lp_error *err)
{
    size_t i, k = 0;
    ctx_ent *c, *d;
    ctx_slot *s;
    uint64_t h;
    char *hk;

    for (i = 0; i < src->n; i++) {
        merge_prefetch(dst, src, i);
        c = src->v[i];
        hk = hkey_of(c);
        h = hk ? lp_hash_bytes(hk, c->hlen) : c->fh;
        d = !dst->slots ? NULL
            : hk        ? lookup(dst, hk, c->hlen, h)
                        : frame_slot(dst, h, c->e.bin, c->e.frames, c->e.nframes)->c;
        if (d)
            merge_leaf(&d->e, &c->e);
        if (d && defer) {
            c->into = d;
            src->v[i] = NULL;
            src->v[k++] = c;    /* k <= i */
            if (ready)          /* c is the other thread's from here */
                __atomic_store_n(ready, k, __ATOMIC_RELEASE);
            continue;
        }
        if (d) {
            if (lp_counters_merge(d->e.counters, c->e.counters))
                goto oom;
            ent_free(c);
        } else {
            if (reserve(dst))
                goto oom;
            s = free_slot(dst, h);
            *s = (ctx_slot){h, c};
            dst->v[dst->n++] = c;
        }
        src->v[i] = NULL;
    }
    if (defer) {                /* no lookups in src from here on */
        src->n = k;
        free(src->slots);
        src->slots = NULL;
        src->mask = 0;
        return 0;
    }
    src->n = 0;
    lp_ctxcount_clear(src);
    return 0;
oom:
    /* what was not moved stays in src (freed with it); moved entries and
     * entries already merged are dst's or gone (deferred ones unmerged) */
    for (; i < src->n; i++)
        src->v[k++] = src->v[i];
    src->n = k;
    return lp_error_set(err, LP_ENOMEM, "context table: out of memory");
}

int lp_ctxcount_merge(lp_ctxcount *dst, lp_ctxcount *src, lp_error *err)
{
    return merge_into(dst, src, false, NULL, err);
}

int lp_ctxcount_merge_defer(lp_ctxcount *dst, lp_ctxcount *src,
                            lp_error *err)
{
    return merge_into(dst, src, true, NULL, err);
}

int lp_ctxcount_merge_defer_ready(lp_ctxcount *dst, lp_ctxcount *src,
                                  size_t *ready, lp_error *err)
{
    return merge_into(dst, src, true, ready, err);
}

int lp_ctxcount_merge_deferred(lp_ctxcount *src, size_t from, size_t to)
{
    int rc = 0;

    for (; from < to; from++) {
        ctx_ent *c = src->v[from];
        if (lp_counters_merge(c->into->e.counters, c->e.counters))
            rc = -1;
        ent_free(c);
        src->v[from] = NULL;
    }
    return rc;
}

/* ---- address contexts --------------------------------------------------------- */

/* v as printf's "0x%" PRIx64 writes it, at s; its length. */
static size_t put_hex(char *s, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char t[16];
    size_t n = 0, i;

    do {
        t[n++] = digits[v & 15];
        v >>= 4;
    } while (v);
    s[0] = '0';
    s[1] = 'x';
    for (i = 0; i < n; i++)
        s[2 + i] = t[n - 1 - i];
    return n + 2;
}

/* "0x7f4 @ 0x7bf": each address minus base when it is binary bin's, else
 * LP_CTX_XBIN(its binary, its address) (bin < 0: every LP_CTX_ADDR value
 * as it is, the table's keys). s has room for 22 bytes an address. The
 * digits by hand: sprintf was 144 M instructions of sqlite-probe's
 * unwinding (149 K keys printed to be looked up). */
static size_t print_addrs(char *s, const uint64_t *a, size_t n, int bin,
                          uint64_t base)
{
    size_t o = 0, i;

    for (i = 0; i < n; i++) {
        size_t ab = LP_CTX_ADDR_BIN(a[i]);
        uint64_t v = bin < 0                ? a[i]
                     : ab == (size_t)bin ? LP_CTX_ADDR_VADDR(a[i]) - base
                                         : LP_CTX_XBIN(ab, LP_CTX_ADDR_VADDR(a[i]));
        if (i) {
            memcpy(s + o, " @ ", 3);
            o += 3;
        }
        o += put_hex(s + o, v);
    }
    s[o] = 0;
    return o;
}

lp_ctx_entry *lp_ctxcount_get_addrs(lp_ctxcount *cc, int bin,
                                    const uint64_t *addrs, size_t n,
                                    lp_error *err)
{
    size_t room = sizeof bin + 22 * n + 1, len;
    uint64_t h;
    ctx_ent *c;
    char *k;

    if (room > cc->kcap) {
        char *k = realloc(cc->kbuf, room * 2);
        if (!k)
            goto oom;
        cc->kbuf = k;
        cc->kcap = room * 2;
    }
    memcpy(cc->kbuf, &bin, sizeof bin);
    len = sizeof bin + print_addrs(cc->kbuf + sizeof bin, addrs, n, -1, 0);
    h = lp_hash_bytes(cc->kbuf, len);
    if ((c = lookup(cc, cc->kbuf, len, h)))
        return &c->e;
    if (reserve(cc) || !(c = ent_alloc(n * sizeof *addrs + len + 1)))
        goto oom;
    c->e.addrs = (const uint64_t *)ent_tail(c);
    if (n)
        memcpy(ent_tail(c), addrs, n * sizeof *addrs);
    c->e.naddrs = n;
    k = key_home(c);
    memcpy(k, cc->kbuf, len);
    c->hlen = len;
    c->e.key = k + sizeof bin;
    c->e.bin = bin;
    c->e.leaf_rank = UINT64_MAX;
    *slot_of(cc, h, k, len) = (ctx_slot){h, c};
    cc->v[cc->n++] = c;
    return &c->e;
oom:
    lp_error_set(err, LP_ENOMEM, "context table: out of memory");
    return NULL;
}

static int entry_cmp(const void *x, const void *y)
{
    const lp_ctx_entry *a = *(lp_ctx_entry *const *)x;
    const lp_ctx_entry *b = *(lp_ctx_entry *const *)y;

    if (a->bin != b->bin)
        return a->bin < b->bin ? -1 : 1;
    return strcmp(a->key, b->key);
}

/* The keys not printed yet (frame contexts of a borrowing table). */
static int print_keys(const lp_ctxcount *cc)
{
    size_t i;
    ctx_ent *c;

    char *k, *t;

    for (i = 0; i < cc->n; i++) {
        c = cc->v[i];
        if (c->e.key)
            continue;
        if (!(k = lp_ctx_key(c->e.frames, c->e.nframes)))
            return -1;
        /* lp_ctx_key allocates for the longest numbers: twice the key */
        t = realloc(k, strlen(k) + 1);
        c->e.key = t ? t : k;   /* freed with c (no hash key) */
    }
    return 0;
}

long lp_ctxcount_entries(const lp_ctxcount *cc, lp_ctx_entry ***out)
{
    size_t n = cc->n, i;

    if (!(*out = malloc((n ? n : 1) * sizeof **out)))
        return -1;
    for (i = 0; i < n; i++)
        (*out)[i] = &cc->v[i]->e;
    return (long)n;
}

void lp_ctxcount_release_with(lp_ctxcount *cc, size_t i,
                              void (*drop)(void *, void *), void *arg)
{
    if (i < cc->n && cc->v[i]) {
        ent_free_with(cc->v[i], drop, arg);
        cc->v[i] = NULL;
    }
}

void lp_ctxcount_release(lp_ctxcount *cc, size_t i)
{
    lp_ctxcount_release_with(cc, i, lp_free_drop, NULL);
}

long lp_ctxcount_all(const lp_ctxcount *cc, lp_ctx_entry ***out)
{
    *out = NULL;
    return print_keys(cc) ? -1 : lp_ctxcount_entries(cc, out);
}

long lp_ctxcount_sorted(const lp_ctxcount *cc, lp_ctx_entry ***out)
{
    long n = lp_ctxcount_all(cc, out);

    if (n > 1)
        qsort(*out, (size_t)n, sizeof **out, entry_cmp);
    return n;
}

/* ---- the unsymbolized writer ---------------------------------------------- */

static int write_entry(FILE *f, const lp_ctx_entry *e, const char *key,
                       uint64_t base, bool attrs)
{
    if (attrs && (e->was_leaf_inlined || e->leaf_inlined_mixed))
        fprintf(f, "#leaf-inlined %d%s\n", e->was_leaf_inlined,
                e->leaf_inlined_mixed ? " mixed" : "");
    fprintf(f, "[%s]\n", key);
    return lp_rawprof_write_blocks(f, e->counters, base, "  ");
}

typedef struct printed {        /* an address context and its text */
    const lp_ctx_entry *e;
    char *key;
} printed;

static int printed_cmp(const void *x, const void *y)
{
    return strcmp(((const printed *)x)->key, ((const printed *)y)->key);
}

/* Address contexts: keys printed relative to base, in their text order
 * (llvm-profgen's std::map<std::string>). */
static int write_addr_entries(FILE *f, lp_ctx_entry **v, long n, int bin,
                              uint64_t base, bool attrs)
{
    printed *pv = calloc(n ? (size_t)n : 1, sizeof *pv);
    long i, m = 0;
    int rc = pv ? 0 : -1;

    for (i = 0; i < n && rc == 0; i++) {
        if (v[i]->bin != bin)
            continue;
        if (!(pv[m].key = malloc(22 * v[i]->naddrs + 1))) {
            rc = -1;
            break;
        }
        print_addrs(pv[m].key, v[i]->addrs, v[i]->naddrs, bin, base);
        pv[m++].e = v[i];
    }
    if (rc == 0)
        qsort(pv, (size_t)m, sizeof *pv, printed_cmp);
    for (i = 0; i < m && rc == 0; i++)
        rc = write_entry(f, pv[i].e, pv[i].key, base, attrs);
    for (i = 0; pv && i < m; i++)
        free(pv[i].key);
    free(pv);
    return rc;
}

static int write_raw(FILE *f, const lp_ctxcount *cc, int bin, uint64_t base,
                     bool attrs, lp_error *err)
{
    lp_ctx_entry **v = NULL;
    long n = lp_ctxcount_sorted(cc, &v), i;
    int rc = n < 0 ? -1 : 0;
    bool addr = false;

    for (i = 0; i < n; i++)
        addr |= v[i]->addrs != NULL;
    if (rc == 0 && addr)
        rc = write_addr_entries(f, v, n, bin, base, attrs);
    for (i = 0; i < n && rc == 0 && !addr; i++)
        if (v[i]->bin == bin)
            rc = write_entry(f, v[i], v[i]->key, base, attrs);
    free(v);
    if (rc)
        return lp_error_set(err, n < 0 ? LP_ENOMEM : LP_EIO, "raw profile: %s",
                            n < 0 ? "out of memory" : "write error");
    return 0;
}

int lp_ctxcount_write_raw(FILE *f, const lp_ctxcount *cc, int bin,
                          uint64_t base, lp_error *err)
{
    return write_raw(f, cc, bin, base, false, err);
}

int lp_ctxcount_write_raw_attrs(FILE *f, const lp_ctxcount *cc, int bin,
                                uint64_t base, lp_error *err)
{
    return write_raw(f, cc, bin, base, true, err);
}
