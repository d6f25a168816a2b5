/*
 * binary.c - LLVM's binary sample profile formats: extbinary (the default
 * of llvm-profgen: magic, version, section header table, then the
 * ProfileSummary, NameTable, CSNameTable, LBRProfile, ProfileSymbolList,
 * FuncOffsetTable and FuncMetadata sections, in that order) and the legacy
 * "binary" format (magic, version, summary, name table, profiles).
 * The layout follows SampleProfileWriterExtBinaryBase / ...Binary; the
 * profiles are encoded with ULEB128. Owns the encoding only.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"
#include "writer/writer.h"

enum {
    SPF_EXT_BINARY = 0x4,
    SPF_BINARY = 0xff,
    SP_VERSION = 103,
    /* section types (SecType) */
    SEC_PROF_SUMMARY = 1,
    SEC_NAME_TABLE = 2,
    SEC_PROFILE_SYMBOL_LIST = 3,
    SEC_FUNC_OFFSET_TABLE = 4,
    SEC_FUNC_METADATA = 5,
    SEC_CS_NAME_TABLE = 6,
    SEC_LBR_PROFILE = 0x20, /* SecFuncProfileFirst */
    /* flags, low 32 bits are common, high 32 bits per section */
    SEC_FLAG_MD5_NAME = 1,
    SEC_FLAG_FIXED_LENGTH_MD5 = 2,
    SEC_FLAG_UNIQ_SUFFIX = 4,
    SEC_FLAG_FS_DISCRIMINATOR = 4, /* ProfileSummary section */
};

/* ---- byte buffer ---------------------------------------------------------- */

void lp_buf_put(lp_buf *b, const void *p, size_t n)
{
    uint8_t *nd;
    size_t cap;

    if (b->oom)
        return;
    if (b->n + n > b->cap) {
        cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        nd = realloc(b->d, cap);
        if (!nd) {
            b->oom = 1;
            return;
        }
        b->d = nd;
        b->cap = cap;
    }
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

void lp_buf_uleb(lp_buf *b, uint64_t v)
{
    uint8_t c;

    do {
        c = v & 0x7f;
        v >>= 7;
        if (v)
            c |= 0x80;
        lp_buf_put(b, &c, 1);
    } while (v);
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

typedef struct name_table {     /* sorted, unique */
    const char **v;
    size_t n, cap;
    int oom;
} name_table;

static void nt_add(name_table *t, const char *s)
{
    const char **nv;

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
    t->v[t->n++] = s;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void nt_finish(name_table *t)
{
    size_t i, j = 0;

    if (t->n)
        qsort(t->v, t->n, sizeof *t->v, str_cmp);
    for (i = 0; i < t->n; i++)
        if (j == 0 || strcmp(t->v[j - 1], t->v[i]) != 0)
            t->v[j++] = t->v[i];
    t->n = j;
}

static uint64_t nt_index(const name_table *t, const char *s)
{
    const char **p = bsearch(&s, t->v, t->n, sizeof *t->v, str_cmp);

    return p ? (uint64_t)(p - t->v) : 0;
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

static void build_names(name_table *t, lp_fsamples **v, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        nt_add(t, v[i]->name);
        add_names(t, v[i]);
    }
    nt_finish(t);
}

static void write_names(lp_buf *b, const name_table *t, int md5)
{
    size_t i;

    lp_buf_uleb(b, t->n);
    for (i = 0; i < t->n; i++) {
        if (md5) {
            lp_buf_u64le(b, lp_md5_hash64(t->v[i], strlen(t->v[i])));
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

/* llvm SampleProfileWriterBinary::writeBody */
static int write_body(lp_buf *o, const name_table *t, const lp_fsamples *fs)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb, nc, i, j;
    int rc = 0;

    lp_buf_uleb(o, nt_index(t, fs->name));
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
        rc = write_body(o, t, c[i].fs);
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

static int write_lbr_section(lp_buf *b, const name_table *t, lp_fsamples **v,
                             size_t n, uint64_t *offsets)
{
    size_t start = b->n, i;

    for (i = 0; i < n; i++) {
        offsets[i] = b->n - start;
        lp_buf_uleb(b, v[i]->head);
        if (write_body(b, t, v[i]))
            return -1;
    }
    return 0;
}

static int write_ext(lp_buf *b, lp_fsamples **v, size_t n, const name_table *t,
                     const lp_summary *s, const lp_write_opts *o)
{
    sec_hdr h[NR_SECTIONS] = {
        {SEC_PROF_SUMMARY, 0, 0, 0}, {SEC_NAME_TABLE, 0, 0, 0},
        {SEC_CS_NAME_TABLE, 0, 0, 0}, {SEC_LBR_PROFILE, 0, 0, 0},
        {SEC_PROFILE_SYMBOL_LIST, 0, 0, 0}, {SEC_FUNC_OFFSET_TABLE, 0, 0, 0},
        {SEC_FUNC_METADATA, 0, 0, 0}};
    uint64_t *offsets = calloc(n ? n : 1, sizeof *offsets);
    size_t table, i;
    int k;

    if (!offsets)
        return -1;
    lp_buf_uleb(b, ((uint64_t)'S' << 56) | ((uint64_t)'P' << 48) |
                       ((uint64_t)'R' << 40) | ((uint64_t)'O' << 32) |
                       ((uint64_t)'F' << 24) | ((uint64_t)'4' << 16) |
                       ((uint64_t)'2' << 8) | SPF_EXT_BINARY);
    lp_buf_uleb(b, SP_VERSION);
    lp_buf_u64le(b, NR_SECTIONS);
    table = b->n;
    for (k = 0; k < 4 * NR_SECTIONS; k++)
        lp_buf_u64le(b, 0);
    if (o->fs_discriminator)
        h[0].flags |= (uint64_t)SEC_FLAG_FS_DISCRIMINATOR << 32;
    if (o->use_md5)
        h[1].flags |= (uint64_t)(SEC_FLAG_MD5_NAME | SEC_FLAG_FIXED_LENGTH_MD5) << 32;
    else if (uniq_names(t))
        h[1].flags |= (uint64_t)SEC_FLAG_UNIQ_SUFFIX << 32;
    for (k = 0; k < NR_SECTIONS; k++) {
        h[k].offset = b->n;
        switch (h[k].type) {
        case SEC_PROF_SUMMARY: write_summary(b, s); break;
        case SEC_NAME_TABLE: write_names(b, t, o->use_md5); break;
        case SEC_CS_NAME_TABLE: lp_buf_uleb(b, 0); break;
        case SEC_LBR_PROFILE:
            if (write_lbr_section(b, t, v, n, offsets)) {
                free(offsets);
                return -1;
            }
            break;
        case SEC_PROFILE_SYMBOL_LIST: write_symbol_list(b, o); break;
        case SEC_FUNC_OFFSET_TABLE:
            lp_buf_uleb(b, n);
            for (i = 0; i < n; i++) {
                lp_buf_uleb(b, nt_index(t, v[i]->name));
                lp_buf_uleb(b, offsets[i]);
            }
            break;
        default: break; /* FuncMetadata: empty for flat, probe-less */
        }
        h[k].size = b->n - h[k].offset;
    }
    free(offsets);
    if (b->oom)
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

    lp_buf_uleb(b, ((uint64_t)'S' << 56) | ((uint64_t)'P' << 48) |
                       ((uint64_t)'R' << 40) | ((uint64_t)'O' << 32) |
                       ((uint64_t)'F' << 24) | ((uint64_t)'4' << 16) |
                       ((uint64_t)'2' << 8) | SPF_BINARY);
    lp_buf_uleb(b, SP_VERSION);
    write_summary(b, s);
    write_names(b, t, 0);
    for (i = 0; i < n; i++) {
        lp_buf_uleb(b, v[i]->head);
        if (write_body(b, t, v[i]))
            return -1;
    }
    return 0;
}

int lp_write_binary(FILE *f, const lp_profile *p, const lp_write_opts *o,
                    lp_error *err)
{
    lp_fsamples **v = NULL;
    name_table t = {0};
    lp_summary s;
    lp_buf b = {0};
    size_t n;
    int rc;

    if (p->is_cs)
        return lp_error_set(err, LP_EUNSUPP,
                            "binary writer: context-sensitive profiles are "
                            "not supported yet (use --format=text)");
    if (lp_profile_summary(p, &s, err))
        return -1;
    n = lp_profile_sorted(p, &v);
    if (n == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "binary writer: out of memory");
    build_names(&t, v, n);
    rc = t.oom ? -1
         : o->format == LP_PROF_BINARY ? write_legacy(&b, v, n, &t, &s)
                                       : write_ext(&b, v, n, &t, &s, o);
    if (rc == 0 && !b.oom && fwrite(b.d, 1, b.n, f) != b.n)
        rc = lp_error_set(err, LP_EIO, "binary writer: write failed");
    else if (rc || b.oom)
        rc = lp_error_set(err, LP_ENOMEM, "binary writer: out of memory");
    free(t.v);
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
