/*
 * binary.c - LLVM's binary sample profile formats: extbinary (the default
 * of llvm-profgen: magic, version, section header table, then the
 * ProfileSummary, NameTable, CSNameTable, LBRProfile, ProfileSymbolList,
 * FuncOffsetTable and FuncMetadata sections, in that order) and the legacy
 * "binary" format (magic, version, summary, name table, profiles).
 * The layout follows SampleProfileWriterExtBinaryBase / ...Binary; the
 * profiles are encoded with ULEB128. The summary is computed on a second
 * thread while the name tables are built. Owns the encoding only.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lbr2prof/profile.h"
#include "profile/format.h"
#include "util/grow.h"
#include "util/hash.h"
#include "util/job.h"
#include "writer/writer.h"

/* ---- byte buffer ---------------------------------------------------------- */

void lp_buf_put(lp_buf *b, const void *p, size_t n)
{
    if (b->oom)
        return;
    if (lp_grow_bytes((void **)&b->d, &b->cap, b->n + n, 4096)) {
        b->oom = 1;
        return;
    }
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

void lp_buf_uleb(lp_buf *b, uint64_t v)
{
    uint8_t *d;

    /* room for the longest encoding made once, the bytes stored in place
     * (not one lp_buf_put a byte) */
    if (b->oom)
        return;
    if (lp_grow_bytes((void **)&b->d, &b->cap, b->n + 10, 4096)) {
        b->oom = 1;
        return;
    }
    d = b->d + b->n;
    do {
        *d = v & 0x7f;
        v >>= 7;
        if (v)
            *d |= 0x80;
        d++;
    } while (v);
    b->n = (size_t)(d - b->d);
}

void lp_buf_u64le(lp_buf *b, uint64_t v)
{
    uint8_t c[8];
    int i;

    for (i = 0; i < 8; i++)
        c[i] = (uint8_t)(v >> (8 * i));
    lp_buf_put(b, c, 8);
}

void lp_buf_free(lp_buf *b)
{
    free(b->d);
    *b = (lp_buf){0};
}

/* ---- name table ----------------------------------------------------------- */

/* A name's slot in the table's set: the name, its hash, its index in
 * the sorted table (once finished) */
typedef struct nt_slot {
    const char *s;
    uint64_t h;
    size_t idx;
} nt_slot;

typedef struct name_table {     /* sorted, unique */
    const char **v;
    size_t n, cap;
    nt_slot *set;               /* the names by content (open addressing,
                                   at most half full): each reference is
                                   added and found by one hash and one
                                   comparison instead of a sort of all of
                                   them and a binary search each */
    size_t mask;
    int oom;
    char **owned;               /* copies of context frame names */
    size_t nowned, ocap;
} name_table;

/* The slot of s[0..len) (a name: no NUL inside) in the set: its own, or
 * the empty one it would take. */
static nt_slot *nt_slot_of(const name_table *t, const char *s, size_t len,
                           uint64_t h)
{
    size_t i = (size_t)h & t->mask;

    while (t->set[i].s && (t->set[i].h != h || strncmp(t->set[i].s, s, len) != 0 ||
                           t->set[i].s[len]))
        i = (i + 1) & t->mask;
    return &t->set[i];
}

/* The set twice as large (or made), its names placed again. -1: no memory. */
static int nt_grow(name_table *t)
{
    size_t n = t->set ? 2 * (t->mask + 1) : 1024, i, k;
    nt_slot *old = t->set, *ns = calloc(n, sizeof *ns);
    size_t omask = t->mask;

    if (!ns)
        return -1;
    t->set = ns;
    t->mask = n - 1;
    for (i = 0; old && i <= omask; i++) {
        if (!old[i].s)
            continue;
        for (k = (size_t)old[i].h & t->mask; ns[k].s; k = (k + 1) & t->mask)
            ;                   /* the names are distinct: the first empty */
        ns[k] = old[i];
    }
    free(old);
    return 0;
}

/* A copy of s[0..len) the table owns, or NULL (out of memory: oom set). */
static const char *nt_own(name_table *t, const char *s, size_t len)
{
    char **no, *c;

    if (t->nowned == t->ocap) {
        t->ocap = t->ocap ? t->ocap * 2 : 64;
        if (!(no = realloc(t->owned, t->ocap * sizeof *no))) {
            t->oom = 1;
            return NULL;
        }
        t->owned = no;
    }
    if (!(c = strndup(s, len))) {
        t->oom = 1;
        return NULL;
    }
    return t->owned[t->nowned++] = c;
}

/* s[0..len) in the table unless it is there; copied (copy) when it is
 * part of a longer string (a context's frame) */
static void nt_put(name_table *t, const char *s, size_t len, bool copy)
{
    const char **nv;
    uint64_t h = lp_hash_bytes(s, len);
    nt_slot *e;

    if (t->oom)
        return;
    if (2 * (t->n + 1) > (t->set ? t->mask + 1 : 0) && nt_grow(t)) {
        t->oom = 1;
        return;
    }
    if ((e = nt_slot_of(t, s, len, h))->s || (copy && !(s = nt_own(t, s, len))))
        return;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64;
        nv = realloc(t->v, t->cap * sizeof *nv);
        if (!nv) {
            t->oom = 1;
            t->cap = t->n;
            return;
        }
        t->v = nv;
    }
    *e = (nt_slot){s, h, 0};
    t->v[t->n++] = s;
}

static void nt_add(name_table *t, const char *s)
{
    nt_put(t, s, strlen(s), false);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* names in LLVM's FunctionId order (MD5 names numerically, first; two
 * names compare equal only when they are the same text) */
static int name_cmp(const void *a, const void *b)
{
    return lp_name_cmp(*(const char *const *)a, *(const char *const *)b);
}

static void nt_finish(name_table *t)
{
    size_t i;

    if (t->oom)
        return;
    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, name_cmp);
    for (i = 0; i < t->n; i++)
    {
        size_t len = strlen(t->v[i]);
        nt_slot_of(t, t->v[i], len, lp_hash_bytes(t->v[i], len))->idx = i;
    }
}

/* The index of s[0..len) */
static uint64_t nt_index_n(const name_table *t, const char *s, size_t len)
{
    const nt_slot *e;

    if (!t->set)
        return 0;
    e = nt_slot_of(t, s, len, lp_hash_bytes(s, len));
    return e->s ? (uint64_t)e->idx : 0;
}

static uint64_t nt_index(const name_table *t, const char *s)
{
    return nt_index_n(t, s, strlen(s));
}

/* llvm SampleProfileWriterBinary::addNames */
static void add_names(name_table *t, const lp_fsamples *fs)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb, nc, i, j;

    nb = lp_fs_sorted_body(fs, &b);
    if (nb == (size_t)-1) {
        t->oom = 1;
        return;
    }
    for (i = 0; i < nb; i++)
        for (j = 0; j < b[i].nr_targets; j++)
            nt_add(t, b[i].targets[j].name);
    /* the views point into the model, so the names outlive them */
    lp_body_views_free(b, nb);
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1) {
        t->oom = 1;
        return;
    }
    for (i = 0; i < nc; i++) {
        nt_add(t, c[i].fs->name);
        add_names(t, c[i].fs);
    }
    free(c);
}

/* SampleProfileWriterExtBinaryBase::addContext: every frame's name */
static void add_context_names(name_table *t, const char *ctx)
{
    lp_context_frame f[64], *fv = f;
    size_t n = lp_context_split(ctx, f, 64), i;

    if (n > 64) {
        if (!(fv = malloc(n * sizeof *fv))) {
            t->oom = 1;
            return;
        }
        lp_context_split(ctx, fv, n);
    }
    for (i = 0; i < n && !t->oom; i++)
        nt_put(t, fv[i].name, fv[i].len, true);
    if (fv != f)
        free(fv);
}

static void build_names(name_table *t, lp_fsamples **v, size_t n, int cs)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (cs)
            add_context_names(t, v[i]->context);
        else
            nt_add(t, v[i]->name);
        add_names(t, v[i]);
    }
    nt_finish(t);
}

static void free_names(name_table *t)
{
    size_t i;

    for (i = 0; i < t->nowned; i++)
        free(t->owned[i]);
    free(t->owned);
    free(t->v);
    free(t->set);
}

/* ---- CS context table (CSNameTableSection) ---------------------------------- */

typedef struct cs_slot {        /* a context's string, by its address */
    const char *ctx;
    uint64_t idx;
} cs_slot;

typedef struct cs_table {       /* contexts in SampleContext order */
    const char **v;
    size_t n;
    cs_slot *at;                /* v's strings by address (the profiles'
                                   own context strings are looked up) */
    size_t mask;
} cs_table;

static int ctx_cmp(const void *a, const void *b)
{
    return lp_context_cmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t cs_slot_of(const cs_table *c, const char *ctx)
{
    uint64_t h = (uint64_t)(uintptr_t)ctx * 0x9e3779b97f4a7c15ull;
    size_t i = (size_t)(h ^ (h >> 29)) & c->mask;

    while (c->at[i].ctx && c->at[i].ctx != ctx)
        i = (i + 1) & c->mask;
    return i;
}

/* Sorted once (lp_context_sort: each context parsed once; qsort with
 * lp_context_cmp parsed two a comparison, and every index was a bsearch:
 * 0.6 s of a flat CS extbinary with 84 k contexts), then indexed by the
 * strings' addresses. */
static int cs_table_build(cs_table *c, lp_fsamples **v, size_t n)
{
    size_t i, cap = 2;

    c->n = 0;
    while (cap < 2 * n)
        cap *= 2;
    if (!(c->v = malloc((n ? n : 1) * sizeof *c->v)) ||
        !(c->at = calloc(cap, sizeof *c->at)))
        return -1;
    c->mask = cap - 1;
    for (i = 0; i < n; i++)
        c->v[c->n++] = v[i]->context;
    if (lp_context_sort(c->v, c->n))
        return -1;
    for (i = 0; i < c->n; i++)
        c->at[cs_slot_of(c, c->v[i])] = (cs_slot){c->v[i], i};
    return 0;
}

/* ctx's place in the table: by its address, or (another string of the
 * same context) by comparison */
static uint64_t cs_index(const cs_table *c, const char *ctx)
{
    const cs_slot *s = &c->at[cs_slot_of(c, ctx)];
    const char **p;

    if (s->ctx)
        return s->idx;
    p = bsearch(&ctx, c->v, c->n, sizeof *c->v, ctx_cmp);
    return p ? (uint64_t)(p - c->v) : 0;
}

/* writeContextIdx: a CS table index for contexts, else a name index */
static uint64_t context_index(const name_table *t, const cs_table *c,
                              const lp_fsamples *fs)
{
    return c ? cs_index(c, fs->context) : nt_index(t, fs->name);
}

static void write_cs_frames(lp_buf *b, const name_table *t, const char *ctx)
{
    lp_context_frame f[64], *fv = f;
    size_t n = lp_context_split(ctx, f, 64), k;

    if (n > 64) {
        if (!(fv = malloc(n * sizeof *fv))) {
            b->oom = 1;
            return;
        }
        lp_context_split(ctx, fv, n);
    }
    lp_buf_uleb(b, n);
    for (k = 0; k < n; k++) {
        lp_buf_uleb(b, nt_index_n(t, fv[k].name, fv[k].len));
        lp_buf_uleb(b, fv[k].loc.line);
        lp_buf_uleb(b, fv[k].loc.disc);
    }
    if (fv != f)
        free(fv);
}

static void write_cs_table(lp_buf *b, const name_table *t, const cs_table *c)
{
    size_t i;

    lp_buf_uleb(b, c->n);
    for (i = 0; i < c->n; i++)
        write_cs_frames(b, t, c->v[i]);
}

static void write_names(lp_buf *b, const name_table *t, int md5)
{
    size_t i;

    lp_buf_uleb(b, t->n);
    for (i = 0; i < t->n; i++) {
        if (md5) {
            lp_buf_u64le(b, lp_name_hash(t->v[i]));
        } else {
            lp_buf_put(b, t->v[i], strlen(t->v[i]));
            lp_buf_uleb(b, 0);
        }
    }
}

/* ---- summary and profiles ------------------------------------------------ */

static void write_summary(lp_buf *b, const lp_summary *s)
{
    int k;

    lp_buf_uleb(b, s->total_count);
    lp_buf_uleb(b, s->max_count);
    lp_buf_uleb(b, s->max_function_count);
    lp_buf_uleb(b, s->num_counts);
    lp_buf_uleb(b, s->num_functions);
    lp_buf_uleb(b, LP_NR_CUTOFFS);
    for (k = 0; k < LP_NR_CUTOFFS; k++) {
        lp_buf_uleb(b, s->entries[k].cutoff);
        lp_buf_uleb(b, s->entries[k].min_count);
        lp_buf_uleb(b, s->entries[k].num_counts);
    }
}

/* llvm SampleProfileWriterBinary::writeBody; cst: the CS table for a
 * top-level CS profile (its context index), else NULL (a name index) */
static int write_body(lp_buf *o, const name_table *t, const cs_table *cst,
                      const lp_fsamples *fs)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb, nc, i, j;
    int rc = 0;

    lp_buf_uleb(o, context_index(t, cst, fs));
    lp_buf_uleb(o, fs->total);
    nb = lp_fs_sorted_body(fs, &b);
    if (nb == (size_t)-1)
        return -1;
    lp_buf_uleb(o, nb);
    for (i = 0; i < nb; i++) {
        lp_buf_uleb(o, b[i].loc.line);
        lp_buf_uleb(o, b[i].loc.disc);
        lp_buf_uleb(o, b[i].count);
        lp_buf_uleb(o, b[i].nr_targets);
        for (j = 0; j < b[i].nr_targets; j++) {
            lp_buf_uleb(o, nt_index(t, b[i].targets[j].name));
            lp_buf_uleb(o, b[i].targets[j].count);
        }
    }
    lp_body_views_free(b, nb);
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1)
        return -1;
    lp_buf_uleb(o, nc);
    for (i = 0; i < nc && rc == 0; i++) {
        lp_buf_uleb(o, c[i].loc.line);
        lp_buf_uleb(o, c[i].loc.disc);
        rc = write_body(o, t, NULL, c[i].fs);
    }
    free(c);
    return rc;
}

/* writeFuncMetadata for one profile: its context, CFG checksum (probe-
 * based profiles), attributes (CS or pre-inlined ones) and, for nested
 * profiles, the same for every inlinee */
static int write_metadata(lp_buf *o, const name_table *t, const cs_table *cst,
                          const lp_fsamples *fs, const lp_profile *p)
{
    int x_probe = p->is_probe_based, x_attrs = p->is_cs || p->is_preinlined;
    lp_callee_view *c = NULL;
    size_t nc, i;
    int rc = 0;

    lp_buf_uleb(o, context_index(t, cst, fs));
    if (x_probe)
        lp_buf_uleb(o, fs->checksum);
    if (x_attrs)
        lp_buf_uleb(o, fs->attrs);
    if (cst)
        return 0;
    if ((nc = lp_fs_sorted_callees(fs, &c)) == (size_t)-1)
        return -1;
    lp_buf_uleb(o, nc);
    for (i = 0; i < nc && rc == 0; i++) {
        lp_buf_uleb(o, c[i].loc.line);
        lp_buf_uleb(o, c[i].loc.disc);
        rc = write_metadata(o, t, NULL, c[i].fs, p);
    }
    free(c);
    return rc;
}

/* ---- extbinary ------------------------------------------------------------- */

#define NR_SECTIONS 7

/* The header table lists the sections in the order readers want them
 * (FuncOffsetTable before LBRProfile); the data is written in h[] order. */
static const int hdr_order[NR_SECTIONS] = {0, 1, 2, 5, 3, 4, 6};

typedef struct sec_hdr {
    uint64_t type, flags, offset, size;
} sec_hdr;

static int uniq_names(const name_table *t)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        if (strstr(t->v[i], ".__uniq."))
            return 1;
    return 0;
}

static int sym_cmp(const void *a, const void *b) { return str_cmp(a, b); }

static void write_symbol_list(lp_buf *b, const lp_write_opts *o)
{
    const char **v;
    size_t i;

    if (!o->nr_symbols)
        return;
    v = malloc(o->nr_symbols * sizeof *v);
    if (!v) {
        b->oom = 1;
        return;
    }
    memcpy(v, o->symbol_list, o->nr_symbols * sizeof *v);
    qsort(v, o->nr_symbols, sizeof *v, sym_cmp);
    for (i = 0; i < o->nr_symbols; i++)
        if (i == 0 || strcmp(v[i], v[i - 1]) != 0)
            lp_buf_put(b, v[i], strlen(v[i]) + 1);
    free(v);
}

typedef struct ext_ctx {        /* what the extbinary sections share */
    lp_fsamples **v;            /* profiles in writing order */
    size_t n;
    const name_table *t;
    const cs_table *cst;        /* CS profiles only */
    uint64_t *offsets;          /* FuncOffsetTable, by v index */
    const lp_profile *p;
} ext_ctx;

static int write_lbr_section(lp_buf *b, ext_ctx *x)
{
    size_t start = b->n, i;

    for (i = 0; i < x->n; i++) {
        x->offsets[i] = b->n - start;
        lp_buf_uleb(b, x->v[i]->head);
        if (write_body(b, x->t, x->cst, x->v[i]))
            return -1;
    }
    return 0;
}

typedef struct ordered_off {
    uint64_t idx, off;          /* the context's table index, its offset */
} ordered_off;

static int off_cmp(const void *a, const void *b)
{
    const ordered_off *x = a, *y = b;

    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* writeFuncOffsetTable: in writing order, or by context for CS (the
 * table's order: by index) */
static int write_offsets(lp_buf *b, ext_ctx *x)
{
    ordered_off *ov;
    size_t i;

    lp_buf_uleb(b, x->n);
    if (!x->cst) {
        for (i = 0; i < x->n; i++) {
            lp_buf_uleb(b, nt_index(x->t, x->v[i]->name));
            lp_buf_uleb(b, x->offsets[i]);
        }
        return 0;
    }
    if (!(ov = malloc((x->n ? x->n : 1) * sizeof *ov)))
        return -1;
    for (i = 0; i < x->n; i++)
        ov[i] = (ordered_off){cs_index(x->cst, x->v[i]->context), x->offsets[i]};
    qsort(ov, x->n, sizeof *ov, off_cmp);
    for (i = 0; i < x->n; i++) {
        lp_buf_uleb(b, ov[i].idx);
        lp_buf_uleb(b, ov[i].off);
    }
    free(ov);
    return 0;
}

/* writeFuncMetadata: checksums of probe-based profiles, attributes of CS
 * or pre-inlined ones (LLVM writes them in hash-table order; here in
 * writing order) */
static int write_metadata_section(lp_buf *b, ext_ctx *x)
{
    size_t i;

    if (!x->p->is_cs && !x->p->is_preinlined && !x->p->is_probe_based)
        return 0;
    for (i = 0; i < x->n; i++)
        if (write_metadata(b, x->t, x->cst, x->v[i], x->p))
            return -1;
    return 0;
}

static int write_section(lp_buf *b, uint64_t type, ext_ctx *x,
                         const lp_summary *s, const lp_write_opts *o)
{
    switch (type) {
    case SEC_PROF_SUMMARY: write_summary(b, s); return 0;
    case SEC_NAME_TABLE: write_names(b, x->t, o->use_md5); return 0;
    case SEC_CS_NAME_TABLE:
        if (x->cst)
            write_cs_table(b, x->t, x->cst);
        else
            lp_buf_uleb(b, 0);
        return 0;
    case SEC_LBR_PROFILE: return write_lbr_section(b, x);
    case SEC_PROFILE_SYMBOL_LIST: write_symbol_list(b, o); return 0;
    case SEC_FUNC_OFFSET_TABLE: return write_offsets(b, x);
    default: return write_metadata_section(b, x);
    }
}

/* the flags writeOneSection sets */
static void section_flags(sec_hdr *h, const ext_ctx *x, const lp_write_opts *o)
{
    int k;

    if (o->partial)
        h[0].flags |= (uint64_t)SEC_FLAG_PARTIAL << 32;
    if (o->fs_discriminator || x->p->is_fs)
        h[0].flags |= (uint64_t)SEC_FLAG_FS_DISCRIMINATOR << 32;
    if (x->p->is_cs)
        h[0].flags |= (uint64_t)SEC_FLAG_FULL_CONTEXT << 32;
    if (x->p->is_preinlined)
        h[0].flags |= (uint64_t)SEC_FLAG_PRE_INLINED << 32;
    if (o->use_md5)
        h[1].flags |= (uint64_t)(SEC_FLAG_MD5_NAME | SEC_FLAG_FIXED_LENGTH_MD5) << 32;
    else if (uniq_names(x->t))
        h[1].flags |= (uint64_t)SEC_FLAG_UNIQ_SUFFIX << 32;
    if (x->p->is_cs)
        h[5].flags |= (uint64_t)SEC_FLAG_ORDERED << 32;
    if (x->p->is_probe_based)
        h[6].flags |= (uint64_t)SEC_FLAG_PROBE_BASED << 32;
    if (x->p->is_cs || x->p->is_preinlined)
        h[6].flags |= (uint64_t)SEC_FLAG_HAS_ATTRIBUTE << 32;
    for (k = 0; o->compress && k < NR_SECTIONS; k++)
        h[k].flags |= SEC_FLAG_COMPRESS;
}

/* compressAndOutput: the section written from `start` on, replaced by
 * its inflated size, compressed size and zlib data (level 9, LLVM's
 * BestSizeCompression); an empty section stays empty */
static int compress_section(lp_buf *b, size_t start)
{
    size_t n = b->n - start;
    uLongf zn = compressBound((uLong)n);
    uint8_t *z;
    int rc;

    if (n == 0 || b->oom)
        return b->oom ? -1 : 0;
    if (!(z = malloc(zn)))
        return -1;
    rc = compress2(z, &zn, b->d + start, (uLong)n, 9);
    if (rc == Z_OK) {
        b->n = start;
        lp_buf_uleb(b, n);
        lp_buf_uleb(b, zn);
        lp_buf_put(b, z, zn);
    }
    free(z);
    return rc == Z_OK ? 0 : -1;
}

static int write_ext(lp_buf *b, ext_ctx *x, const lp_summary *s,
                     const lp_write_opts *o)
{
    sec_hdr h[NR_SECTIONS] = {
        {SEC_PROF_SUMMARY, 0, 0, 0}, {SEC_NAME_TABLE, 0, 0, 0},
        {SEC_CS_NAME_TABLE, 0, 0, 0}, {SEC_LBR_PROFILE, 0, 0, 0},
        {SEC_PROFILE_SYMBOL_LIST, 0, 0, 0}, {SEC_FUNC_OFFSET_TABLE, 0, 0, 0},
        {SEC_FUNC_METADATA, 0, 0, 0}};
    size_t table, i;
    int k, rc = 0;

    if (!(x->offsets = calloc(x->n ? x->n : 1, sizeof *x->offsets)))
        return -1;
    lp_buf_uleb(b, SP_MAGIC(SPF_EXT_BINARY));
    lp_buf_uleb(b, SP_VERSION);
    lp_buf_u64le(b, NR_SECTIONS);
    table = b->n;
    for (k = 0; k < 4 * NR_SECTIONS; k++)
        lp_buf_u64le(b, 0);
    section_flags(h, x, o);
    for (k = 0; k < NR_SECTIONS && rc == 0; k++) {
        h[k].offset = b->n;
        rc = write_section(b, h[k].type, x, s, o);
        if (rc == 0 && o->compress)
            rc = compress_section(b, h[k].offset);
        h[k].size = b->n - h[k].offset;
    }
    free(x->offsets);
    if (rc || b->oom)
        return -1;
    for (k = 0; k < NR_SECTIONS; k++) {
        const sec_hdr *e = &h[hdr_order[k]];
        uint64_t f[4] = {e->type, e->flags, e->offset, e->size};
        for (i = 0; i < 4; i++) {
            lp_buf tmp = {0};
            lp_buf_u64le(&tmp, f[i]);
            if (tmp.oom)
                return -1;
            memcpy(b->d + table + (4 * (size_t)k + i) * 8, tmp.d, 8);
            lp_buf_free(&tmp);
        }
    }
    return 0;
}

/* legacy SPF_Binary: magic, version, summary, name table, profiles */
static int write_legacy(lp_buf *b, lp_fsamples **v, size_t n,
                        const name_table *t, const lp_summary *s)
{
    size_t i;

    lp_buf_uleb(b, SP_MAGIC(SPF_BINARY));
    lp_buf_uleb(b, SP_VERSION);
    write_summary(b, s);
    write_names(b, t, 0);
    for (i = 0; i < n; i++) {
        lp_buf_uleb(b, v[i]->head);
        if (write_body(b, t, NULL, v[i]))
            return -1;
    }
    return 0;
}

/* ---- the summary alongside ------------------------------------------------ */

typedef struct summary_job {    /* the profile summary on its own thread */
    const lp_profile *p;
    bool unmerged;              /* --context-summary: not merged by name */
    lp_summary s;
    lp_error err;
    int rc;
    lp_job job;
} summary_job;

static void *summary_run(void *arg)
{
    summary_job *j = arg;

    j->rc = j->unmerged ? lp_profile_summary_unmerged(j->p, &j->s, &j->err)
                        : lp_profile_summary(j->p, &j->s, &j->err);
    return NULL;
}

/* Started on a second thread when there is a second CPU (it only reads
 * the profile, as the name tables do meanwhile). */
static void summary_start(summary_job *j, const lp_profile *p, bool unmerged)
{
    *j = (summary_job){p, unmerged};
    lp_job_start(&j->job, summary_run, j);
}

/* The summary (computed now if no thread did); -1 with err set. */
static int summary_wait(summary_job *j, lp_error *err)
{
    lp_job_wait(&j->job);
    if (j->rc && err)
        *err = j->err;
    return j->rc ? -1 : 0;
}

int lp_write_binary(FILE *f, const lp_profile *p, const lp_write_opts *o,
                    lp_error *err)
{
    lp_fsamples **v = NULL;
    name_table t = {0};
    cs_table cst = {0};
    ext_ctx x = {0};
    summary_job sj;
    lp_buf b = {0};
    size_t n;
    int rc;

    if ((p->is_cs || p->is_probe_based) && o->format == LP_PROF_BINARY)
        return lp_error_set(err, LP_EUNSUPP, "Profile encoding format "
                            "unsupported for writing operations (a %s "
                            "profile needs the text or extbinary format)",
                            p->is_cs ? "context-sensitive" : "probe-based");
    summary_start(&sj, p, o->context_summary);
    n = lp_profile_sorted(p, &v);
    if (n != (size_t)-1)
        build_names(&t, v, n, p->is_cs);
    if (summary_wait(&sj, err)) {   /* its error first, as before */
        free_names(&t);
        free(v);
        return -1;
    }
    if (n == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "binary writer: out of memory");
    rc = t.oom || (p->is_cs && cs_table_build(&cst, v, n)) ? -1 : 0;
    x = (ext_ctx){v, n, &t, p->is_cs ? &cst : NULL, NULL, p};
    if (rc == 0)
        rc = o->format == LP_PROF_BINARY ? write_legacy(&b, v, n, &t, &sj.s)
                                         : write_ext(&b, &x, &sj.s, o);
    if (rc == 0 && !b.oom && fwrite(b.d, 1, b.n, f) != b.n)
        rc = lp_error_set(err, LP_EIO, "binary writer: write failed");
    else if (rc || b.oom)
        rc = lp_error_set(err, LP_ENOMEM, "binary writer: out of memory");
    free_names(&t);
    free(cst.v);
    free(cst.at);
    free(v);
    lp_buf_free(&b);
    return rc;
}

int lp_profile_write(FILE *f, const lp_profile *p, const lp_write_opts *o,
                     lp_error *err)
{
    if (o->format == LP_PROF_TEXT)
        return lp_write_text(f, p, err);
    return lp_write_binary(f, p, o, err);
}
