/*
 * binread.c - decoding LLVM's binary sample profiles: the bounds-checked
 * cursor (ULEB128, little-endian words, strings), the name table (strings
 * or MD5 hashes), function profiles (SampleProfileReaderBinary::
 * readProfile: body records with call targets, inlinees recursively), the
 * profile summary and the legacy "binary" format. The extbinary sections
 * are extread.c's. Every count is checked against the bytes left, so a
 * malformed file fails with the offset and what was expected there.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/read_internal.h"

#define MAX_NESTING 1024        /* inlinee depth (a corrupt file's recursion) */

/* ---- cursor ---------------------------------------------------------------- */

int rd_fail(rd *r, const char *fmt, ...)
{
    uint64_t off = (uint64_t)(r->p - r->base);
    char what[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->inflated)
        return lp_error_set(r->err, LP_EFORMAT, "%s: %s (zlib-compressed, at "
                            "offset 0x%" PRIx64 "): offset 0x%" PRIx64 " of "
                            "the inflated section: %s", r->file, r->sec,
                            r->base_off, off, what);
    if (r->sec)
        return lp_error_set(r->err, LP_EFORMAT, "%s: offset 0x%" PRIx64
                            " (%s): %s", r->file, r->base_off + off, r->sec,
                            what);
    return lp_error_set(r->err, LP_EFORMAT, "%s: offset 0x%" PRIx64 ": %s",
                        r->file, r->base_off + off, what);
}

int rd_uleb(rd *r, uint64_t *v, const char *what)
{
    const uint8_t *q = r->p;
    uint64_t x = 0;
    unsigned shift = 0;

    for (;;) {
        if (q == r->end)
            return rd_fail(r, "truncated: expected %s (ULEB128)", what);
        if (shift == 63 && (*q & 0x7e))
            return rd_fail(r, "%s: ULEB128 value beyond 64 bits", what);
        x |= (uint64_t)(*q & 0x7f) << shift;
        if (!(*q++ & 0x80))
            break;
        if ((shift += 7) > 63)
            return rd_fail(r, "%s: ULEB128 value beyond 64 bits", what);
    }
    r->p = q;
    *v = x;
    return 0;
}

int rd_u32(rd *r, uint32_t *v, const char *what)
{
    const uint8_t *at = r->p;
    uint64_t x;

    if (rd_uleb(r, &x, what))
        return -1;
    if (x > UINT32_MAX) {
        r->p = at;
        return rd_fail(r, "%s %" PRIu64 " does not fit 32 bits", what, x);
    }
    *v = (uint32_t)x;
    return 0;
}

int rd_u64le(rd *r, uint64_t *v, const char *what)
{
    uint64_t x = 0;
    int i;

    if (r->end - r->p < 8)
        return rd_fail(r, "truncated: expected %s (8 bytes)", what);
    for (i = 7; i >= 0; i--)
        x = x << 8 | r->p[i];
    r->p += 8;
    *v = x;
    return 0;
}

int rd_cstr(rd *r, const char **s, const char *what)
{
    const uint8_t *nul = memchr(r->p, 0, (size_t)(r->end - r->p));

    if (!nul)
        return rd_fail(r, "truncated: expected %s (NUL-terminated)", what);
    *s = (const char *)r->p;
    r->p = nul + 1;
    return 0;
}

/* LLVM checks body records' offsets; call sites' and metadata's are
 * checked too, so that every profile read can be written as text */
int rd_line(rd *r, uint32_t *line)
{
    const uint8_t *at = r->p;
    uint64_t x;

    if (rd_uleb(r, &x, "a line offset"))
        return -1;
    if (x > 0xffff) {
        r->p = at;
        return rd_fail(r, "line offset %" PRIu64 " beyond 16 bits", x);
    }
    *line = (uint32_t)x;
    return 0;
}

/* ---- name table ------------------------------------------------------------- */

void name_tab_free(name_tab *t)
{
    free(t->v);
    free(t->arena);
    *t = (name_tab){0};
}

/* A table of n entries of at least `min` bytes each must fit the rest. */
static int check_count(rd *r, uint64_t n, size_t min, const char *what)
{
    if (n > (uint64_t)(r->end - r->p) / min)
        return rd_fail(r, "%s claims %" PRIu64 " entries, more than the %zu "
                       "bytes left can hold", what, n, (size_t)(r->end - r->p));
    return 0;
}

static int read_md5_names(rd *r, name_tab *t, uint64_t n, int fixed)
{
    char *o;
    uint64_t h;
    size_t i;

    if (!(t->arena = malloc(n * 21 + 1)))
        return lp_error_set(r->err, LP_ENOMEM, "%s: out of memory", r->file);
    for (i = 0, o = t->arena; i < n; i++) {
        if (fixed ? rd_u64le(r, &h, "an MD5 name") : rd_uleb(r, &h, "an MD5 name"))
            return -1;
        if (h == 0)
            return rd_fail(r, "MD5 name %zu is 0 (no name hashes to 0)", i);
        t->v[i] = o;
        o += sprintf(o, "%" PRIu64, h) + 1;
    }
    return 0;
}

int read_name_table(rd *r, name_tab *t, int md5, int fixed)
{
    uint64_t n;
    size_t i;

    name_tab_free(t);
    if (rd_uleb(r, &n, "the number of names") ||
        check_count(r, n, fixed ? 8 : 1, "the name table"))
        return -1;
    if (!(t->v = malloc((n ? n : 1) * sizeof *t->v)))
        return lp_error_set(r->err, LP_ENOMEM, "%s: out of memory", r->file);
    t->n = (size_t)n;
    if (md5 || fixed)
        return read_md5_names(r, t, n, fixed);
    for (i = 0; i < n; i++)
        if (rd_cstr(r, &t->v[i], "a function name"))
            return -1;
    return 0;
}

/* an index (ULEB128) into a table of n `what`s of `table` */
static int rd_index(rd *r, size_t n, uint64_t *i, const char *what,
                    const char *table)
{
    const uint8_t *at = r->p;

    if (rd_uleb(r, i, "an index"))
        return -1;
    if (*i >= n) {
        r->p = at;
        return rd_fail(r, "%s index %" PRIu64 " out of range (the %s has "
                       "%zu %ss)", what, *i, table, n, what);
    }
    return 0;
}

int read_name_ref(rd *r, const name_tab *t, const char **name)
{
    uint64_t i;

    if (rd_index(r, t->n, &i, "name", "name table"))
        return -1;
    *name = t->v[i];
    return 0;
}

void prof_ctx_free(prof_ctx *c)
{
    size_t i;

    name_tab_free(&c->names);
    for (i = 0; i < c->nr_contexts; i++)
        free(c->contexts[i]);
    free(c->contexts);
    free(c->leaves);
    c->contexts = NULL;
    c->leaves = NULL;
    c->nr_contexts = 0;
}

int read_context_ref(rd *r, const prof_ctx *c, const char **key,
                     const char **leaf)
{
    uint64_t i;

    *leaf = NULL;
    if (!c->p->is_cs)
        return read_name_ref(r, &c->names, key);
    if (rd_index(r, c->nr_contexts, &i, "context", "CS name table"))
        return -1;
    *key = c->contexts[i];
    *leaf = c->leaves[i];
    return 0;
}

/* ---- function profiles -------------------------------------------------------- */

static int oom(rd *r)
{
    return lp_error_set(r->err, LP_ENOMEM, "%s: out of memory", r->file);
}

/* one body record: location, count, call targets */
static int read_record(rd *r, const prof_ctx *c, lp_fsamples *fs)
{
    uint64_t disc = 0, count = 0, n = 0;
    uint32_t line = 0, calls = 0, j;
    const char *callee;
    lp_body_rec *b;

    if (rd_line(r, &line) || rd_uleb(r, &disc, "a discriminator") ||
        rd_uleb(r, &count, "a body count") ||
        rd_u32(r, &calls, "the number of call targets"))
        return -1;
    if (disc > UINT32_MAX)
        return rd_fail(r, "discriminator %" PRIu64 " beyond 32 bits", disc);
    if (!(b = lp_fs_body(fs, (lp_loc){line, (uint32_t)disc})))
        return oom(r);
    lp_body_add(b, count);
    for (j = 0; j < calls; j++) {
        if (read_name_ref(r, &c->names, &callee) ||
            rd_uleb(r, &n, "a call-target count"))
            return -1;
        if (lp_body_add_target(b, callee, n))
            return oom(r);
    }
    return 0;
}

static int read_callsite(rd *r, const prof_ctx *c, lp_fsamples *fs, int depth);

/* readProfile: total, body records, then the inlinees */
static int read_body(rd *r, const prof_ctx *c, lp_fsamples *fs, int depth)
{
    uint64_t total = 0;
    uint32_t nrec = 0, ncs = 0, i;

    if (depth > MAX_NESTING)
        return rd_fail(r, "inlinees nested deeper than %d", MAX_NESTING);
    if (rd_uleb(r, &total, "the total sample count") ||
        rd_u32(r, &nrec, "the number of body records"))
        return -1;
    fs->total = lp_sat_add(fs->total, total);
    for (i = 0; i < nrec; i++)
        if (read_record(r, c, fs))
            return -1;
    if (rd_u32(r, &ncs, "the number of inlined call sites"))
        return -1;
    for (i = 0; i < ncs; i++)
        if (read_callsite(r, c, fs, depth))
            return -1;
    return 0;
}

static int read_callsite(rd *r, const prof_ctx *c, lp_fsamples *fs, int depth)
{
    uint32_t line = 0;
    uint64_t disc = 0;
    const char *name = NULL;
    lp_fsamples *callee;

    if (rd_line(r, &line) || rd_uleb(r, &disc, "a call-site discriminator"))
        return -1;
    if (disc > UINT32_MAX)
        return rd_fail(r, "discriminator %" PRIu64 " beyond 32 bits", disc);
    if (read_name_ref(r, &c->names, &name))
        return -1;
    callee = lp_fs_callee(fs, (lp_loc){line, (uint32_t)disc}, name);
    if (!callee)
        return oom(r);
    return read_body(r, c, callee, depth + 1);
}

int read_func_profile(rd *r, prof_ctx *c)
{
    const char *key = NULL, *leaf = NULL;
    lp_fsamples *fs;
    uint64_t head = 0;

    if (rd_uleb(r, &head, "a function's head count") ||
        read_context_ref(r, c, &key, &leaf))
        return -1;
    if (!(fs = lp_profile_get(c->p, key, leaf)))
        return oom(r);
    fs->head = lp_sat_add(fs->head, head);
    return read_body(r, c, fs, 0);
}

/* ---- summary and the legacy format ---------------------------------------------- */

static int read_cutoffs(rd *r, lp_prof_info *info, uint64_t n)
{
    lp_summary_entry *e = NULL;
    uint64_t cut = 0, min = 0, num = 0;
    size_t i;

    if (check_count(r, n, 3, "the summary"))
        return -1;
    if (n && !(e = calloc((size_t)n, sizeof *e)))
        return oom(r);
    for (i = 0; i < n; i++) {
        if (rd_uleb(r, &cut, "a summary cutoff") ||
            rd_uleb(r, &min, "a cutoff's minimum count") ||
            rd_uleb(r, &num, "a cutoff's number of counts")) {
            free(e);
            return -1;
        }
        if (cut > UINT32_MAX) {
            free(e);
            return rd_fail(r, "summary cutoff %" PRIu64 " beyond 32 bits", cut);
        }
        e[i] = (lp_summary_entry){(uint32_t)cut, min, num};
    }
    if (info) {
        free(info->cutoffs);
        info->cutoffs = e;
        info->nr_cutoffs = (size_t)n;
    } else {
        free(e);
    }
    return 0;
}

int read_summary(rd *r, lp_prof_info *info)
{
    uint64_t v[6];
    static const char *const what[6] = {
        "the summary's total count", "the maximum count",
        "the maximum function count", "the number of counts",
        "the number of functions", "the number of summary cutoffs"};
    int i;

    for (i = 0; i < 6; i++)
        if (rd_uleb(r, &v[i], what[i]))
            return -1;
    if (info) {
        info->total_count = v[0];
        info->max_count = v[1];
        info->max_function_count = v[2];
        info->num_counts = v[3];
        info->num_functions = v[4];
    }
    return read_cutoffs(r, info, v[5]);
}

int read_legacy(rd *r, prof_ctx *c, lp_prof_info *info)
{
    r->sec = NULL;
    if (read_summary(r, info) || read_name_table(r, &c->names, 0, 0))
        return -1;
    c->summary_seen = 1;
    while (r->p < r->end)
        if (read_func_profile(r, c))
            return -1;
    return 0;
}
