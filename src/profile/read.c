/*
 * read.c - reading a sample profile of any format: the format from the
 * first bytes (lp_profile_sniff, also report's input detection), the file
 * loaded whole, then the text reader (textread.c) or the binary ones
 * (binread.c, extread.c), and the summary llvm-profdata show prints: the
 * file's, or for text (and a binary file without one) computed as LLVM's
 * reader computes it. Owns the dispatch and lp_prof_info.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/read_internal.h"

/* ---- sniffing ------------------------------------------------------------------- */

/* the ULEB128 number at the start of b, 0 if none */
static uint64_t leading_uleb(const unsigned char *b, size_t n)
{
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < n && i < 10; i++) {
        v |= (uint64_t)(b[i] & 0x7f) << (7 * i);
        if (!(b[i] & 0x80))
            return v;
    }
    return 0;
}

static int is_digits(const char *p, const char *end)
{
    if (p == end)
        return 0;
    for (; p < end; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

/* LLVM's SampleProfileReaderText::hasFormat: the first line that is not
 * blank nor a '#' comment is "NAME:TOTAL:HEAD" without a leading blank */
static int is_text(const char *buf, size_t n)
{
    const char *p = buf, *end = buf + n, *nl, *c1, *c2;

    while (p < end) {
        if (!(nl = memchr(p, '\n', (size_t)(end - p))))
            nl = end;
        if (nl > p && nl[-1] == '\r')
            nl--;
        if (nl == p || *p == '#') {
            p = (nl < end && *nl == '\r') ? nl + 2 : nl + 1;
            continue;
        }
        if (*p == ' ' || *p == '\t')
            return 0;
        for (c2 = nl - 1; c2 > p && *c2 != ':'; c2--)
            ;
        for (c1 = c2 - 1; c1 > p && *c1 != ':'; c1--)
            ;
        return c2 > p && c1 > p && is_digits(c1 + 1, c2) &&
               is_digits(c2 + 1, nl);
    }
    return 0;
}

int lp_profile_sniff(const void *head, size_t n)
{
    uint64_t m = leading_uleb(head, n);

    if (m == SP_MAGIC(SPF_EXT_BINARY))
        return LP_PROF_EXTBINARY;
    if (m == SP_MAGIC(SPF_BINARY))
        return LP_PROF_BINARY;
    if (m == SP_MAGIC(SPF_COMPACT_BINARY) || m == SP_MAGIC(SPF_GCC))
        return 0;
    return is_text(head, n) ? LP_PROF_TEXT : 0;
}

/* ---- info ------------------------------------------------------------------------- */

void lp_prof_info_free(lp_prof_info *info)
{
    size_t i;

    if (!info)
        return;
    free(info->cutoffs);
    for (i = 0; i < info->nr_symbols; i++)
        free(info->symbols[i]);
    free(info->symbols);
    free(info->sections);
    memset(info, 0, sizeof *info);
}

/* SampleProfileReader::computeSummary (the default cutoffs) */
static int computed_summary(const lp_profile *p, lp_prof_info *info,
                            lp_error *err)
{
    lp_summary s;

    if (lp_profile_summary(p, &s, err))
        return -1;
    if (!(info->cutoffs = malloc(sizeof s.entries)))
        return lp_error_set(err, LP_ENOMEM, "profile summary: out of memory");
    memcpy(info->cutoffs, s.entries, sizeof s.entries);
    info->nr_cutoffs = LP_NR_CUTOFFS;
    info->total_count = s.total_count;
    info->max_count = s.max_count;
    info->max_function_count = s.max_function_count;
    info->num_counts = s.num_counts;
    info->num_functions = s.num_functions;
    return 0;
}

/* ---- reading ------------------------------------------------------------------------ */

/* 1 if d[0..len) is the start of the ULEB128 encoding of `magic` */
static int magic_prefix(const unsigned char *d, size_t len, uint64_t magic)
{
    size_t i;

    for (i = 0; i < len; i++, magic >>= 7)
        if (d[i] != ((magic & 0x7f) | (magic >> 7 ? 0x80 : 0)))
            return 0;
    return len > 0;
}

/* Why a file that is not a profile is not one. */
static int not_a_profile(const unsigned char *d, size_t len, const char *name,
                         lp_error *err)
{
    uint64_t m = leading_uleb(d, len);

    if (len < 10 && (magic_prefix(d, len, SP_MAGIC(SPF_EXT_BINARY)) ||
                     magic_prefix(d, len, SP_MAGIC(SPF_BINARY))))
        return lp_error_set(err, LP_EFORMAT, "%s: offset 0x%zx: truncated: "
                            "expected the rest of the sample profile magic "
                            "(ULEB128)", name, len);

    if (m == SP_MAGIC(SPF_COMPACT_BINARY))
        return lp_error_set(err, LP_EUNSUPP, "%s: a compact binary sample "
                            "profile, a format LLVM 17 removed (convert it "
                            "with an older llvm-profdata)", name);
    if (m == SP_MAGIC(SPF_GCC) ||
        (len >= 4 && (!memcmp(d, "adcg", 4) || !memcmp(d, "gcda", 4))))
        return lp_error_set(err, LP_EUNSUPP, "%s: a GCC (gcov) AutoFDO "
                            "profile; lbr2prof reads LLVM's text, binary and "
                            "extbinary sample profiles", name);
    return lp_error_set(err, LP_EFORMAT, "%s: %s", name, len == 0
                        ? "empty file, expected a sample profile"
                        : "no sample profile: expected the LLVM text format "
                          "(first record NAME:TOTAL:HEAD), binary or "
                          "extbinary");
}

static int read_binary(const uint8_t *d, size_t len, const char *name,
                       prof_ctx *c, lp_prof_info *info, int header_only,
                       lp_error *err)
{
    rd r = {d, d + len, d, 0, 0, name, NULL, err};
    uint64_t magic = 0, version = 0;

    if (rd_uleb(&r, &magic, "the magic number") ||
        rd_uleb(&r, &version, "the version"))
        return -1;
    if (version != SP_VERSION)
        return lp_error_set(err, LP_EUNSUPP, "%s: sample profile version %"
                            PRIu64 ", expected %d", name, version, SP_VERSION);
    if (magic == SP_MAGIC(SPF_BINARY)) {
        if (header_only)
            return lp_error_set(err, LP_EUSAGE, "%s: section information "
                                "is only in extbinary profiles", name);
        return read_legacy(&r, c, info);
    }
    return read_extbinary(&r, d, len, c, info, header_only);
}

static lp_profile *read_text_mem(const void *data, size_t len,
                                 const char *name, lp_error *err)
{
    FILE *f = fmemopen((void *)data, len, "r");
    lp_profile *p;

    if (!f) {
        lp_error_set(err, LP_EIO, "%s: %s", name, strerror(errno));
        return NULL;
    }
    p = lp_profile_read_text(f, name, err);
    fclose(f);
    return p;
}

static lp_profile *read_any(const void *data, size_t len, const char *name,
                            lp_prof_info *info, int header_only,
                            lp_error *err)
{
    int fmt = lp_profile_sniff(data, len);
    prof_ctx c = {0};
    int rc;

    if (info)
        memset(info, 0, sizeof *info);
    if (!fmt) {
        not_a_profile(data, len, name, err);
        return NULL;
    }
    if (info)
        info->format = (lp_prof_format)fmt;
    if (fmt == LP_PROF_TEXT) {
        if (header_only) {
            lp_error_set(err, LP_EUSAGE, "%s: section information is only in "
                         "extbinary profiles", name);
            return NULL;
        }
        c.p = read_text_mem(data, len, name, err);
    } else if ((c.p = lp_profile_new())) {
        rc = read_binary(data, len, name, &c, info, header_only, err);
        if (rc) {
            lp_profile_free(c.p);
            c.p = NULL;
        }
    } else {
        lp_error_set(err, LP_ENOMEM, "%s: out of memory", name);
    }
    prof_ctx_free(&c);
    if (c.p && info && !header_only && !c.summary_seen &&
        computed_summary(c.p, info, err)) {
        lp_profile_free(c.p);
        return NULL;
    }
    return c.p;
}

lp_profile *lp_profile_read_mem(const void *data, size_t len,
                                const char *name, lp_prof_info *info,
                                lp_error *err)
{
    lp_profile *p = read_any(data, len, name, info, 0, err);

    if (!p && info)
        lp_prof_info_free(info);
    return p;
}

/* The whole file (or standard input) in memory. */
static int slurp(const char *path, uint8_t **out, size_t *len, lp_error *err)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    size_t cap = 1 << 16, n = 0, got;
    uint8_t *b = NULL, *nb;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    do {
        if (!(nb = realloc(b, cap))) {
            free(b);
            if (f != stdin)
                fclose(f);
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", path);
        }
        b = nb;
        n += got = fread(b + n, 1, cap - n, f);
        cap *= n == cap ? 2 : 1;
    } while (got);
    if (ferror(f)) {
        int e = errno;
        free(b);
        if (f != stdin)
            fclose(f);
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(e));
    }
    if (f != stdin)
        fclose(f);
    *out = b;
    *len = n;
    return 0;
}

lp_profile *lp_profile_read(const char *path, lp_prof_info *info,
                            lp_error *err)
{
    uint8_t *d;
    size_t n;
    lp_profile *p;

    if (slurp(path, &d, &n, err))
        return NULL;
    p = lp_profile_read_mem(d, n, strcmp(path, "-") ? path : "<stdin>",
                            info, err);
    free(d);
    return p;
}

int lp_profile_read_sections(const char *path, lp_prof_info *info,
                             lp_error *err)
{
    uint8_t *d;
    size_t n;
    lp_profile *p;

    if (slurp(path, &d, &n, err))
        return -1;
    p = read_any(d, n, path, info, 1, err);
    free(d);
    if (!p) {
        lp_prof_info_free(info);
        return -1;
    }
    lp_profile_free(p);
    return 0;
}
