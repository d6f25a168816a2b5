/*
 * extread.c - the extbinary sample profile (SampleProfileReaderExtBinary):
 * the section header table, then each section in the table's order -
 * ProfileSummary (and its CS, pre-inlined, FS and partial flags),
 * NameTable (strings, MD5 or fixed-length MD5), CSNameTable, LBRProfile
 * (one or more: llvm-profdata's split layout writes two), FuncOffsetTable
 * (checked, not needed to read every profile), FuncMetadata (CFG
 * checksums of probe-based profiles, attributes), ProfileSymbolList, and
 * unknown sections skipped as LLVM skips them. A section flagged
 * compressed is inflated with zlib first. Each section must be read to
 * its last byte, as LLVM requires. Owns the section layer only; function
 * profiles and tables are binread.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile/read_internal.h"

#define MAX_NESTING 1024

typedef struct ext_state {
    prof_ctx *c;
    lp_prof_info *info;
    int probe, has_attr;        /* FuncMetadata flags */
    uint8_t **inflated;         /* sections inflated (names point into them) */
    size_t nr_inflated;
} ext_state;

const char *lp_prof_section_name(uint64_t type)
{
    switch (type) {
    case 0: return "InvalidSection";
    case SEC_PROF_SUMMARY: return "ProfileSummarySection";
    case SEC_NAME_TABLE: return "NameTableSection";
    case SEC_PROFILE_SYMBOL_LIST: return "ProfileSymbolListSection";
    case SEC_FUNC_OFFSET_TABLE: return "FuncOffsetTableSection";
    case SEC_FUNC_METADATA: return "FunctionMetadata";
    case SEC_CS_NAME_TABLE: return "CSNameTableSection";
    case SEC_LBR_PROFILE: return "LBRProfileSection";
    default: return "UnknownSection";
    }
}

static int oom(rd *r)
{
    return lp_error_set(r->err, LP_ENOMEM, "%s: out of memory", r->file);
}

/* ---- header table ------------------------------------------------------------ */

static int read_entry(rd *r, size_t len, size_t i, lp_prof_section *e)
{
    if (rd_u64le(r, &e->type, "a section type") ||
        rd_u64le(r, &e->flags, "section flags") ||
        rd_u64le(r, &e->offset, "a section offset") ||
        rd_u64le(r, &e->size, "a section size"))
        return -1;
    if (e->size && (e->offset > len || e->size > len - e->offset))
        return rd_fail(r, "section %zu (%s) at offset 0x%" PRIx64 ", %" PRIu64
                       " bytes, ends beyond the file (%zu bytes)", i,
                       lp_prof_section_name(e->type), e->offset, e->size, len);
    return 0;
}

static int read_table(rd *r, size_t len, lp_prof_section **out, size_t *n)
{
    lp_prof_section *v;
    uint64_t count = 0;
    size_t i;

    if (rd_u64le(r, &count, "the number of sections"))
        return -1;
    if (count > (uint64_t)(r->end - r->p) / 32)
        return rd_fail(r, "%" PRIu64 " sections: the header table would end "
                       "beyond the file", count);
    if (!(v = calloc(count ? count : 1, sizeof *v)))
        return oom(r);
    for (i = 0; i < count; i++)
        if (read_entry(r, len, i, &v[i])) {
            free(v);
            return -1;
        }
    *out = v;
    *n = (size_t)count;
    return 0;
}

/* ---- sections ------------------------------------------------------------------ */

/* zlib: ULEB128 inflated size, ULEB128 compressed size, the deflate data */
static int inflate_section(rd *r, ext_state *x)
{
    uint64_t usize = 0, csize = 0;
    uLongf got;
    uint8_t *buf, **nv;
    int zr;

    if (rd_uleb(r, &usize, "the inflated size") ||
        rd_uleb(r, &csize, "the compressed size"))
        return -1;
    if (csize > (uint64_t)(r->end - r->p))
        return rd_fail(r, "%" PRIu64 " compressed bytes announced, %zu left "
                       "in the section", csize, (size_t)(r->end - r->p));
    if (usize > csize * 1032 + 64) /* zlib's largest ratio is 1032:1 */
        return rd_fail(r, "%" PRIu64 " bytes cannot inflate from %" PRIu64
                       " compressed bytes", usize, csize);
    if (!(nv = realloc(x->inflated, (x->nr_inflated + 1) * sizeof *nv)))
        return oom(r);
    x->inflated = nv;
    if (!(buf = malloc(usize ? usize : 1)))
        return oom(r);
    x->inflated[x->nr_inflated++] = buf;
    got = (uLongf)usize;
    zr = uncompress(buf, &got, r->p, (uLong)csize);
    if (zr != Z_OK || got != usize)
        return rd_fail(r, "zlib data does not inflate to the %" PRIu64
                       " bytes announced (%s)", usize,
                       zr == Z_OK ? "fewer bytes" : zError(zr));
    r->base_off += (uint64_t)(r->p - r->base);
    r->base = r->p = buf;
    r->end = buf + usize;
    r->inflated = 1;
    return 0;
}

/* one context of the CS name table, printed as LLVM prints it */
static int read_cs_context(rd *r, prof_ctx *c, size_t i)
{
    uint32_t nf = 0, k, line = 0;
    uint64_t disc = 0;
    const char *name = NULL;
    size_t len = 0, cap = 64, leaf = 0;
    char *s = malloc(cap), *ns;

    if (!s)
        return oom(r);
    c->contexts[i] = s;
    if (rd_u32(r, &nf, "the number of frames of a context"))
        return -1;
    if (nf == 0)
        return rd_fail(r, "context %zu of the CS name table has no frames", i);
    for (k = 0; k < nf; k++) {
        if (read_name_ref(r, &c->names, &name) || rd_line(r, &line) ||
            rd_uleb(r, &disc, "a context frame's discriminator"))
            return -1;
        if (disc > UINT32_MAX)
            return rd_fail(r, "discriminator %" PRIu64 " beyond 32 bits", disc);
        if (!*name)
            return rd_fail(r, "context %zu: frame %u has an empty function "
                           "name", i, k);
        if (len + strlen(name) + 32 > cap) {
            cap = 2 * (len + strlen(name) + 32);
            if (!(ns = realloc(s, cap)))
                return oom(r);
            c->contexts[i] = s = ns;
        }
        len += (size_t)sprintf(s + len, "%s", k ? " @ " : "");
        leaf = len;
        len += (size_t)sprintf(s + len, "%s", name);
        if (k + 1 < nf)
            len += (size_t)sprintf(s + len, disc ? ":%u.%u" : ":%u", line,
                                   (unsigned)disc);
    }
    c->leaves[i] = s + leaf;
    return 0;
}

static int read_cs_table(rd *r, prof_ctx *c)
{
    uint64_t n = 0;
    size_t i;

    if (rd_uleb(r, &n, "the number of contexts"))
        return -1;
    if (n > (uint64_t)(r->end - r->p))
        return rd_fail(r, "%" PRIu64 " contexts announced, %zu bytes left",
                       n, (size_t)(r->end - r->p));
    for (i = 0; i < c->nr_contexts; i++)
        free(c->contexts[i]);
    free(c->contexts);
    free(c->leaves);
    c->nr_contexts = 0;
    c->contexts = calloc(n ? n : 1, sizeof *c->contexts);
    c->leaves = calloc(n ? n : 1, sizeof *c->leaves);
    if (!c->contexts || !c->leaves)
        return oom(r);
    c->nr_contexts = (size_t)n;
    for (i = 0; i < n; i++)
        if (read_cs_context(r, c, i))
            return -1;
    return 0;
}

/* FuncOffsetTable: checked, not used (every profile is read in order) */
static int read_offsets(rd *r, prof_ctx *c)
{
    const char *key, *leaf;
    uint64_t n = 0, off, i;

    if (rd_uleb(r, &n, "the number of function offsets"))
        return -1;
    for (i = 0; i < n; i++)
        if (read_context_ref(r, c, &key, &leaf) ||
            rd_uleb(r, &off, "a function offset"))
            return -1;
    return 0;
}

/* FuncMetadata of one profile (fs NULL: a profile not in the file; its
 * metadata is read and dropped, as LLVM does) and of its inlinees */
static int read_meta(rd *r, ext_state *x, lp_fsamples *fs, int depth)
{
    uint64_t sum = 0, disc = 0;
    uint32_t attrs = 0, n = 0, i, line = 0;
    const char *name = NULL;
    lp_fsamples *callee;

    if (r->p >= r->end)
        return 0;
    if (depth > MAX_NESTING)
        return rd_fail(r, "metadata nested deeper than %d", MAX_NESTING);
    if (x->probe && rd_uleb(r, &sum, "a CFG checksum"))
        return -1;
    if (x->probe && fs)
        fs->checksum = sum;
    if (x->has_attr && rd_u32(r, &attrs, "function attributes"))
        return -1;
    if (x->has_attr && fs)
        fs->attrs = attrs;
    if (x->c->p->is_cs)
        return 0;
    if (rd_u32(r, &n, "the number of inlinees with metadata"))
        return -1;
    for (i = 0; i < n; i++) {
        if (rd_line(r, &line) ||
            rd_uleb(r, &disc, "an inlinee's discriminator") ||
            read_name_ref(r, &x->c->names, &name))
            return -1;
        if (disc > UINT32_MAX)
            return rd_fail(r, "discriminator %" PRIu64 " beyond 32 bits", disc);
        callee = NULL;
        if (fs && !(callee = lp_fs_callee(fs, (lp_loc){line, (uint32_t)disc},
                                          name)))
            return oom(r);
        if (read_meta(r, x, callee, depth + 1))
            return -1;
    }
    return 0;
}

static int read_metadata(rd *r, ext_state *x, uint64_t flags)
{
    const char *key, *leaf;

    x->probe = SEC_HAS(flags, SEC_FLAG_PROBE_BASED) != 0;
    x->has_attr = SEC_HAS(flags, SEC_FLAG_HAS_ATTRIBUTE) != 0;
    x->c->p->is_probe_based = x->probe;
    while (r->p < r->end)
        if (read_context_ref(r, x->c, &key, &leaf) ||
            read_meta(r, x, lp_profile_find(x->c->p, key), 0))
            return -1;
    return 0;
}

static int read_symbols(rd *r, lp_prof_info *info)
{
    const char *s;
    char **nv, *d;

    while (r->p < r->end) {
        if (rd_cstr(r, &s, "a symbol name"))
            return -1;
        if (!info)
            continue;
        if (!(nv = realloc(info->symbols, (info->nr_symbols + 1) * sizeof *nv)))
            return oom(r);
        info->symbols = nv;
        if (!(d = strdup(s)))
            return oom(r);
        info->symbols[info->nr_symbols++] = d;
    }
    return 0;
}

static int read_summary_section(rd *r, ext_state *x, uint64_t flags)
{
    lp_profile *p = x->c->p;

    if (read_summary(r, x->info))
        return -1;
    x->c->summary_seen = 1;
    if (SEC_HAS(flags, SEC_FLAG_FULL_CONTEXT))
        p->is_cs = 1;
    if (SEC_HAS(flags, SEC_FLAG_PRE_INLINED))
        p->is_preinlined = 1;
    if (SEC_HAS(flags, SEC_FLAG_FS_DISCRIMINATOR))
        p->is_fs = 1;
    if (x->info && SEC_HAS(flags, SEC_FLAG_PARTIAL))
        x->info->partial = 1;
    return 0;
}

static int read_section(rd *r, ext_state *x, const lp_prof_section *e)
{
    int md5 = SEC_HAS(e->flags, SEC_FLAG_MD5_NAME) != 0;
    int fixed = SEC_HAS(e->flags, SEC_FLAG_FIXED_LENGTH_MD5) != 0;

    switch (e->type) {
    case SEC_PROF_SUMMARY: return read_summary_section(r, x, e->flags);
    case SEC_NAME_TABLE:
        if (x->info && (md5 || fixed))
            x->info->md5 = 1;
        return read_name_table(r, &x->c->names, md5, fixed);
    case SEC_CS_NAME_TABLE: return read_cs_table(r, x->c);
    case SEC_LBR_PROFILE:
        while (r->p < r->end)
            if (read_func_profile(r, x->c))
                return -1;
        return 0;
    case SEC_FUNC_OFFSET_TABLE: return read_offsets(r, x->c);
    case SEC_FUNC_METADATA: return read_metadata(r, x, e->flags);
    case SEC_PROFILE_SYMBOL_LIST: return read_symbols(r, x->info);
    default:
        r->p = r->end; /* a section this version does not know */
        return 0;
    }
}

static int read_sections(rd *top, ext_state *x, const uint8_t *file,
                         const lp_prof_section *secs, size_t n)
{
    size_t i;
    rd r;

    for (i = 0; i < n; i++) {
        if (!secs[i].size)
            continue;
        r = (rd){file + secs[i].offset, file + secs[i].offset + secs[i].size,
                 file + secs[i].offset, secs[i].offset, 0, top->file,
                 lp_prof_section_name(secs[i].type), top->err};
        if ((secs[i].flags & SEC_FLAG_COMPRESS) && inflate_section(&r, x))
            return -1;
        if (read_section(&r, x, &secs[i]))
            return -1;
        if (r.p != r.end)
            return rd_fail(&r, "%zu bytes left unread at the end of the "
                           "section", (size_t)(r.end - r.p));
    }
    return 0;
}

int read_extbinary(rd *r, const uint8_t *file, size_t len, prof_ctx *c,
                   lp_prof_info *info, int header_only)
{
    ext_state x = {c, info, 0, 0, NULL, 0};
    lp_prof_section *secs = NULL;
    size_t n = 0, i;
    int rc;

    if (read_table(r, len, &secs, &n))
        return -1;
    if (info) {
        free(info->sections);
        info->sections = secs;
        info->nr_sections = n;
    }
    rc = header_only ? 0 : read_sections(r, &x, file, secs, n);
    for (i = 0; i < x.nr_inflated; i++)
        free(x.inflated[i]);
    free(x.inflated);
    if (!info)
        free(secs);
    return rc;
}
