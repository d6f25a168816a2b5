/*
 * module.c - the in-memory Breakpad module: builders, indexing and lookup.
 * Owns the sorted FUNC/line/INLINE/PUBLIC arrays and the binary searches
 * over them; not the .sym text syntax (parse.c, write.c) nor ELF (dump.c).
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/breakpad.h"

/* Grow *arr (elements of `size` bytes) so that it holds one more. */
static int grow(void **arr, size_t *cap, size_t n, size_t size, lp_error *err)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 16;
    p = realloc(*arr, ncap * size);
    if (!p)
        return lp_error_set(err, LP_ENOMEM, "breakpad: out of memory");
    *arr = p;
    *cap = ncap;
    return 0;
}

#define GROW(m, arr, n, cap, err) \
    grow((void **)&(m)->arr, &(m)->cap, (m)->n, sizeof *(m)->arr, err)

static char *dup_or_fail(const char *s, lp_error *err)
{
    char *d = strdup(s ? s : "");

    if (!d)
        lp_error_set(err, LP_ENOMEM, "breakpad: out of memory");
    return d;
}

lp_bp_module *lp_bp_module_new(const char *os, const char *arch,
                               const char *debug_id, const char *name,
                               lp_error *err)
{
    lp_bp_module *m = calloc(1, sizeof *m);

    if (!m) {
        lp_error_set(err, LP_ENOMEM, "breakpad: out of memory");
        return NULL;
    }
    m->os = dup_or_fail(os, err);
    m->arch = dup_or_fail(arch, err);
    m->debug_id = dup_or_fail(debug_id, err);
    m->name = dup_or_fail(name, err);
    if (!m->os || !m->arch || !m->debug_id || !m->name) {
        lp_bp_free(m);
        return NULL;
    }
    return m;
}

void lp_bp_free(lp_bp_module *m)
{
    size_t i;

    if (!m)
        return;
    for (i = 0; i < m->nfiles; i++)
        free(m->files[i].name);
    for (i = 0; i < m->norigins; i++)
        free(m->origins[i].name);
    for (i = 0; i < m->nfuncs; i++)
        free(m->funcs[i].name);
    for (i = 0; i < m->npublics; i++)
        free(m->publics[i].name);
    free(m->files);
    free(m->origins);
    free(m->funcs);
    free(m->lines);
    free(m->inlines);
    free(m->publics);
    free(m->os);
    free(m->arch);
    free(m->debug_id);
    free(m->name);
    free(m->code_id);
    free(m->code_file);
    free(m);
}

int lp_bp_set_code_id(lp_bp_module *m, const char *code_id,
                      const char *code_file, lp_error *err)
{
    free(m->code_id);
    free(m->code_file);
    m->code_file = NULL;
    m->code_id = dup_or_fail(code_id, err);
    if (!m->code_id)
        return -1;
    if (code_file && !(m->code_file = dup_or_fail(code_file, err)))
        return -1;
    return 0;
}

static int add_name(lp_bp_name **arr, size_t *n, size_t *cap, uint32_t num,
                    const char *name, lp_error *err)
{
    char *d;

    if (grow((void **)arr, cap, *n, sizeof **arr, err) < 0)
        return -1;
    if (!(d = dup_or_fail(name, err)))
        return -1;
    (*arr)[*n].num = num;
    (*arr)[(*n)++].name = d;
    return 0;
}

int lp_bp_add_file(lp_bp_module *m, uint32_t num, const char *name, lp_error *err)
{
    return add_name(&m->files, &m->nfiles, &m->cap_files, num, name, err);
}

int lp_bp_add_origin(lp_bp_module *m, uint32_t num, const char *name, lp_error *err)
{
    return add_name(&m->origins, &m->norigins, &m->cap_origins, num, name, err);
}

int lp_bp_add_func(lp_bp_module *m, uint64_t addr, uint64_t size,
                   uint64_t param_size, const char *name, int multiple,
                   lp_error *err)
{
    lp_bp_func *f;

    if (GROW(m, funcs, nfuncs, cap_funcs, err) < 0)
        return -1;
    f = &m->funcs[m->nfuncs];
    memset(f, 0, sizeof *f);
    if (!(f->name = dup_or_fail(name, err)))
        return -1;
    f->addr = addr;
    f->size = size;
    f->param_size = param_size;
    f->multiple = multiple;
    f->line0 = m->nlines;
    f->inl0 = m->ninlines;
    m->nfuncs++;
    return 0;
}

int lp_bp_add_line(lp_bp_module *m, const lp_bp_line *l, lp_error *err)
{
    if (!m->nfuncs)
        return lp_error_set(err, LP_EFORMAT, "line record before any FUNC");
    if (GROW(m, lines, nlines, cap_lines, err) < 0)
        return -1;
    m->lines[m->nlines++] = *l;
    m->funcs[m->nfuncs - 1].nlines++;
    return 0;
}

int lp_bp_add_inline(lp_bp_module *m, const lp_bp_inline *in, lp_error *err)
{
    if (!m->nfuncs)
        return lp_error_set(err, LP_EFORMAT, "INLINE record before any FUNC");
    if (GROW(m, inlines, ninlines, cap_inlines, err) < 0)
        return -1;
    m->inlines[m->ninlines++] = *in;
    m->funcs[m->nfuncs - 1].ninlines++;
    return 0;
}

int lp_bp_add_public(lp_bp_module *m, uint64_t addr, uint64_t param_size,
                     const char *name, int multiple, lp_error *err)
{
    lp_bp_public *p;

    if (GROW(m, publics, npublics, cap_publics, err) < 0)
        return -1;
    p = &m->publics[m->npublics];
    if (!(p->name = dup_or_fail(name, err)))
        return -1;
    p->addr = addr;
    p->param_size = param_size;
    p->multiple = multiple;
    m->npublics++;
    return 0;
}

/* ---- indexing ---- */

static int cmp_u64(uint64_t a, uint64_t b) { return a < b ? -1 : a > b; }

static int cmp_name(const void *a, const void *b)
{
    const lp_bp_name *x = a, *y = b;
    return x->num < y->num ? -1 : x->num > y->num;
}

static int cmp_func(const void *a, const void *b)
{
    const lp_bp_func *x = a, *y = b;
    int c = cmp_u64(x->addr, y->addr);
    return c ? c : cmp_u64(x->line0, y->line0); /* keep file order on ties */
}

static int cmp_line(const void *a, const void *b)
{
    const lp_bp_line *x = a, *y = b;
    return cmp_u64(x->addr, y->addr);
}

static int cmp_inline(const void *a, const void *b)
{
    const lp_bp_inline *x = a, *y = b;
    int c = cmp_u64(x->depth, y->depth);
    return c ? c : cmp_u64(x->addr, y->addr);
}

static int cmp_public(const void *a, const void *b)
{
    const lp_bp_public *x = a, *y = b;
    return cmp_u64(x->addr, y->addr);
}

/* qsort, which must not see a NULL array even when it is empty. */
static void sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

/* Index of the last element with key <= addr in a sorted array, or -1. */
#define LAST_LE(arr, n, field, key)                                  \
    ({                                                               \
        size_t lo_ = 0, hi_ = (n);                                   \
        while (lo_ < hi_) {                                          \
            size_t mid_ = lo_ + (hi_ - lo_) / 2;                     \
            if ((arr)[mid_].field <= (key)) lo_ = mid_ + 1;          \
            else hi_ = mid_;                                         \
        }                                                            \
        (long)lo_ - 1;                                               \
    })

static const lp_bp_func *find_func(const lp_bp_module *m, uint64_t addr)
{
    long i = LAST_LE(m->funcs, m->nfuncs, addr, addr);

    if (i >= 0 && addr - m->funcs[i].addr < m->funcs[i].size)
        return &m->funcs[i];
    return NULL;
}

/* Drop PUBLIC records at an address that has a FUNC (FUNC wins). */
static void drop_shadowed_publics(lp_bp_module *m)
{
    size_t i, o = 0;
    long f;

    for (i = 0; i < m->npublics; i++) {
        f = LAST_LE(m->funcs, m->nfuncs, addr, m->publics[i].addr);
        if (f >= 0 && m->funcs[f].addr == m->publics[i].addr) {
            free(m->publics[i].name);
            continue;
        }
        m->publics[o++] = m->publics[i];
    }
    m->npublics = o;
}

int lp_bp_finish(lp_bp_module *m, lp_error *err)
{
    size_t i;
    lp_bp_func *f;

    (void)err;
    if (m->finished)
        return 0;
    sort(m->files, m->nfiles, sizeof *m->files, cmp_name);
    sort(m->origins, m->norigins, sizeof *m->origins, cmp_name);
    sort(m->funcs, m->nfuncs, sizeof *m->funcs, cmp_func);
    for (i = 0; i < m->nfuncs; i++) {
        f = &m->funcs[i];
        if (f->nlines > 1)
            sort(m->lines + f->line0, f->nlines, sizeof *m->lines, cmp_line);
        if (f->ninlines > 1)
            sort(m->inlines + f->inl0, f->ninlines, sizeof *m->inlines, cmp_inline);
    }
    sort(m->publics, m->npublics, sizeof *m->publics, cmp_public);
    drop_shadowed_publics(m);
    m->finished = 1;
    return 0;
}

static const char *find_name(const lp_bp_name *arr, size_t n, uint32_t num)
{
    long i = LAST_LE(arr, n, num, num);

    return i >= 0 && arr[i].num == num ? arr[i].name : NULL;
}

const char *lp_bp_file_name(const lp_bp_module *m, uint32_t num)
{
    return find_name(m->files, m->nfiles, num);
}

const char *lp_bp_origin_name(const lp_bp_module *m, uint32_t num)
{
    const char *s = find_name(m->origins, m->norigins, num);

    return s ? s : "<unknown>";
}

/* ---- lookup ---- */

/* The inline range of depth `depth` in f that contains addr, or NULL. */
static const lp_bp_inline *find_inline(const lp_bp_module *m,
                                       const lp_bp_func *f, uint32_t depth,
                                       uint64_t addr)
{
    const lp_bp_inline *in;
    size_t lo = 0, hi = f->ninlines, mid;
    long i;

    if (!f->ninlines)
        return NULL;
    in = m->inlines + f->inl0;
    while (lo < hi) { /* first entry with depth >= `depth` */
        mid = lo + (hi - lo) / 2;
        if (in[mid].depth < depth)
            lo = mid + 1;
        else
            hi = mid;
    }
    in += lo;
    for (hi = 0; lo + hi < f->ninlines && in[hi].depth == depth; hi++)
        ;
    i = LAST_LE(in, hi, addr, addr);
    if (i >= 0 && addr - in[i].addr < in[i].size)
        return &in[i];
    return NULL;
}

static size_t lookup_func(const lp_bp_module *m, const lp_bp_func *f,
                          uint64_t addr, lp_bp_result *r)
{
    const lp_bp_inline *chain[LP_BP_MAX_DEPTH - 1];
    const lp_bp_line *ln = f->nlines ? m->lines + f->line0 : NULL;
    size_t k = 0, i;
    long li = LAST_LE(ln, f->nlines, addr, addr);
    const char *file = NULL;
    uint32_t line = 0;

    if (li >= 0 && addr - ln[li].addr < ln[li].size) {
        file = lp_bp_file_name(m, ln[li].file);
        line = ln[li].line;
    }
    while (k < LP_BP_MAX_DEPTH - 1 && (chain[k] = find_inline(m, f, k, addr)))
        k++;
    r->sym_addr = f->addr;
    /* frames[0] is the innermost: the deepest inline, at the line record. */
    for (i = 0; i <= k; i++) {
        lp_bp_frame *fr = &r->frames[i];
        fr->function = i < k ? lp_bp_origin_name(m, chain[k - 1 - i]->origin)
                             : f->name;
        fr->file = file;
        fr->line = line;
        if (i < k) { /* the caller's location is this inline's call site */
            file = lp_bp_file_name(m, chain[k - 1 - i]->call_file);
            line = chain[k - 1 - i]->call_line;
        }
    }
    r->nframes = k + 1;
    return r->nframes;
}

size_t lp_bp_lookup(const lp_bp_module *m, uint64_t addr, lp_bp_result *r)
{
    const lp_bp_func *f = find_func(m, addr);
    long p, nf;

    r->nframes = 0;
    if (f)
        return lookup_func(m, f, addr, r);
    p = LAST_LE(m->publics, m->npublics, addr, addr);
    if (p < 0)
        return 0;
    /* A PUBLIC extends to the next symbol: a FUNC in between ends it. */
    nf = LAST_LE(m->funcs, m->nfuncs, addr, addr);
    if (nf >= 0 && m->funcs[nf].addr > m->publics[p].addr)
        return 0;
    r->sym_addr = m->publics[p].addr;
    r->frames[0].function = m->publics[p].name;
    r->frames[0].file = NULL;
    r->frames[0].line = 0;
    r->nframes = 1;
    return 1;
}
