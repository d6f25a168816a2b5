/*
 * detect.c - what a report input is, from its first bytes: perf.data
 * (magic "PERFILE2", either byte order, or a `perf record --threads`
 * directory), an LLVM binary sample profile (ULEB128 "SPROF42" magic:
 * binary, compact or extbinary), an LLVM text sample profile (first record
 * "NAME:TOTAL:HEAD" or "[CONTEXT]:TOTAL:HEAD") or else perf script text.
 * Owns the sniffing only.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lbr2prof/report.h"

#define HEAD 4096

static int is_sprof_magic(const unsigned char *b, size_t n)
{
    const uint64_t want = ((uint64_t)'S' << 56) | ((uint64_t)'P' << 48) |
                          ((uint64_t)'R' << 40) | ((uint64_t)'O' << 32) |
                          ((uint64_t)'F' << 24) | ((uint64_t)'4' << 16) |
                          ((uint64_t)'2' << 8);
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < n && i < 10; i++) {
        v |= (uint64_t)(b[i] & 0x7f) << (7 * i);
        if (!(b[i] & 0x80))
            return (v & ~(uint64_t)0xff) == want;
    }
    return 0;
}

/* "NAME:TOTAL:HEAD" (name without leading blank) on the first record. */
static int is_llvm_text(const char *buf, size_t n)
{
    const char *p = buf, *end = buf + n, *nl, *c1, *c2, *q;

    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            nl = end;
        if (nl > p && nl[-1] == '\r')
            nl--;
        if (nl == p || *p == '#') {
            p = (nl < end && *nl == '\r') ? nl + 2 : nl + 1;
            continue;
        }
        if (isspace((unsigned char)*p))
            return 0;
        for (c2 = nl - 1; c2 > p && *c2 != ':'; c2--)
            ;
        for (c1 = c2 - 1; c1 > p && *c1 != ':'; c1--)
            ;
        if (c2 <= p || c1 <= p || c2 + 1 == nl || c1 + 1 == c2)
            return 0;
        for (q = c1 + 1; q < nl; q++)
            if (q != c2 && !isdigit((unsigned char)*q))
                return 0;
        return 1;
    }
    return 0;
}

int lp_report_detect(const char *path, lp_report_input_kind *kind,
                     lp_error *err)
{
    unsigned char buf[HEAD];
    struct stat st;
    size_t n;
    FILE *f;

    if (stat(path, &st) != 0)
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        *kind = LP_RIN_PERF_DATA;
        return 0;
    }
    if (!(f = fopen(path, "rb")))
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n >= 8 && (!memcmp(buf, "PERFILE2", 8) || !memcmp(buf, "2ELIFREP", 8)))
        *kind = LP_RIN_PERF_DATA;
    else if (is_sprof_magic(buf, n))
        *kind = LP_RIN_LLVM_BINARY;
    else if (is_llvm_text((const char *)buf, n))
        *kind = LP_RIN_LLVM_TEXT;
    else
        *kind = LP_RIN_PERF_SCRIPT;
    return 0;
}
