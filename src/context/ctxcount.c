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
#include <uthash.h>

#include "lbr2prof/ctxcount.h"

typedef struct ctx_ent {     /* one allocation: this, the frames, the
                                hash key (4-byte bin, then the printed
                                key and its NUL), the frames' names */
    lp_ctx_entry e;
    char *hkey;
    size_t hlen;
    lp_ctx_frame *frames;
    UT_hash_handle hh;
} ctx_ent;

struct lp_ctxcount {
    ctx_ent *head;
};

lp_ctxcount *lp_ctxcount_new(void)
{
    return calloc(1, sizeof(lp_ctxcount));
}

static void ent_free(ctx_ent *c)
{
    lp_counters_free(c->e.counters);
    free(c);
}

void lp_ctxcount_free(lp_ctxcount *cc)
{
    ctx_ent *c, *t;

    if (!cc)
        return;
    HASH_ITER(hh, cc->head, c, t) {
        HASH_DEL(cc->head, c);
        ent_free(c);
    }
    free(cc);
}

size_t lp_ctxcount_size(const lp_ctxcount *cc)
{
    return HASH_COUNT(cc->head);
}

/* ---- keys ----------------------------------------------------------------- */

static size_t put_frame(char *out, const lp_ctx_frame *f, bool leaf)
{
    if (leaf)
        return (size_t)sprintf(out, "%s", f->func);
    if (f->loc.disc)
        return (size_t)sprintf(out, "%s:%" PRIu32 ".%" PRIu32, f->func,
                               f->loc.line, f->loc.disc);
    return (size_t)sprintf(out, "%s:%" PRIu32, f->func, f->loc.line);
}

char *lp_ctx_key(const lp_ctx_frame *frames, size_t n)
{
    size_t len = 1, i, o = 0;
    char *s;

    for (i = 0; i < n; i++)
        len += strlen(frames[i].func) + 3 + 2 * 11 + 2;
    if (!(s = malloc(len)))
        return NULL;
    s[0] = 0;
    for (i = 0; i < n; i++) {
        if (i)
            o += (size_t)sprintf(s + o, " @ ");
        o += put_frame(s + o, &frames[i], i + 1 == n);
    }
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

static char *make_hkey(int bin, const char *key, size_t *len)
{
    size_t k = strlen(key);
    char *h = malloc(sizeof bin + k);

    if (h) {
        memcpy(h, &bin, sizeof bin);
        memcpy(h + sizeof bin, key, k);
        *len = sizeof bin + k;
    }
    return h;
}

lp_ctx_entry *lp_ctxcount_find(const lp_ctxcount *cc, int bin,
                               const char *key)
{
    size_t len;
    char *h = make_hkey(bin, key, &len);
    ctx_ent *c = NULL;

    if (h)
        HASH_FIND(hh, cc->head, h, len, c);
    free(h);
    return c ? &c->e : NULL;
}

/* The entry with its frames, key and names in one block. */
static ctx_ent *make_ent(int bin, const char *key, const lp_ctx_frame *frames,
                         size_t n)
{
    size_t klen = strlen(key), names = 0, i, o;
    ctx_ent *c;
    char *p;

    for (i = 0; i < n; i++)
        names += strlen(frames[i].func) + 1;
    c = calloc(1, sizeof *c + n * sizeof *frames + sizeof bin + klen + 1 + names);
    if (!c)
        return NULL;
    c->frames = (lp_ctx_frame *)(c + 1);
    c->hkey = (char *)(c->frames + n);
    memcpy(c->hkey, &bin, sizeof bin);
    memcpy(c->hkey + sizeof bin, key, klen + 1);
    c->hlen = sizeof bin + klen;
    p = c->hkey + c->hlen + 1;
    for (i = 0; i < n; i++) {
        o = strlen(frames[i].func) + 1;
        memcpy(p, frames[i].func, o);
        c->frames[i] = (lp_ctx_frame){p, frames[i].loc};
        p += o;
    }
    c->e.key = c->hkey + sizeof bin;
    c->e.frames = c->frames;
    c->e.nframes = n;
    c->e.bin = bin;
    return c;
}

lp_ctx_entry *lp_ctxcount_get(lp_ctxcount *cc, int bin,
                              const lp_ctx_frame *frames, size_t n,
                              bool was_leaf_inlined, lp_error *err)
{
    char *key = lp_ctx_key(frames, n), *h = NULL;
    ctx_ent *c = NULL;
    size_t len = 0;

    if (key && (h = make_hkey(bin, key, &len)))
        HASH_FIND(hh, cc->head, h, len, c);
    free(h);
    if (c || !key) {
        free(key);
        if (!c)
            lp_error_set(err, LP_ENOMEM, "context table: out of memory");
        return c ? &c->e : NULL;
    }
    c = make_ent(bin, key, frames, n);
    free(key);
    if (!c || !(c->e.counters = lp_counters_new())) {
        free(c);
        lp_error_set(err, LP_ENOMEM, "context table: out of memory");
        return NULL;
    }
    c->e.was_leaf_inlined = was_leaf_inlined;
    HASH_ADD_KEYPTR(hh, cc->head, c->hkey, c->hlen, c);
    return &c->e;
}

static int entry_cmp(const void *x, const void *y)
{
    const lp_ctx_entry *a = *(lp_ctx_entry *const *)x;
    const lp_ctx_entry *b = *(lp_ctx_entry *const *)y;

    if (a->bin != b->bin)
        return a->bin < b->bin ? -1 : 1;
    return strcmp(a->key, b->key);
}

long lp_ctxcount_all(const lp_ctxcount *cc, lp_ctx_entry ***out)
{
    size_t n = HASH_COUNT(cc->head), i = 0;
    ctx_ent *c, *t;

    *out = malloc((n ? n : 1) * sizeof **out);
    if (!*out)
        return -1;
    HASH_ITER(hh, cc->head, c, t)
        (*out)[i++] = &c->e;
    return (long)n;
}

long lp_ctxcount_sorted(const lp_ctxcount *cc, lp_ctx_entry ***out)
{
    long n = lp_ctxcount_all(cc, out);

    if (n > 1)
        qsort(*out, (size_t)n, sizeof **out, entry_cmp);
    return n;
}

/* ---- the unsymbolized writer ---------------------------------------------- */

static void write_pairs(FILE *f, long n, const lp_addr_pair_count *v,
                        uint64_t base, const char *sep)
{
    long i;

    fprintf(f, "  %ld\n", n);
    for (i = 0; i < n; i++)
        fprintf(f, "  %" PRIx64 "%s%" PRIx64 ":%" PRIu64 "\n", v[i].a - base,
                sep, v[i].b - base, v[i].count);
}

static int write_entry(FILE *f, const lp_ctx_entry *e, uint64_t base)
{
    lp_addr_pair_count *r = NULL, *b = NULL;
    long nr = lp_counters_ranges(e->counters, &r);
    long nb = lp_counters_branches(e->counters, &b);

    if (nr >= 0 && nb >= 0) {
        fprintf(f, "[%s]\n", e->key);
        write_pairs(f, nr, r, base, "-");
        write_pairs(f, nb, b, base, "->");
    }
    free(r);
    free(b);
    return nr < 0 || nb < 0 ? -1 : 0;
}

int lp_ctxcount_write_raw(FILE *f, const lp_ctxcount *cc, int bin,
                          uint64_t base, lp_error *err)
{
    lp_ctx_entry **v = NULL;
    long n = lp_ctxcount_sorted(cc, &v), i;
    int rc = n < 0 ? -1 : 0;

    for (i = 0; i < n && rc == 0; i++)
        if (v[i]->bin == bin)
            rc = write_entry(f, v[i], base);
    free(v);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "raw profile: out of memory");
    return 0;
}
