/*
 * fuzz_rawmerge.c - libFuzzer target for the mergeable raw profile: the
 * input is split at its first NUL byte into two files, A and B, which are
 * merged (lp_rawmerge: header, checks, body, attributes, weights) and the
 * sum written to /dev/null; A alone is also read by the header reader and
 * the body reader into a context table. Any crash, sanitizer report, hang
 * or leak is a bug; format errors are expected. Seed with raw profiles
 * written by --skip-symbolization --raw-header (and tests/unit/
 * test_rawmerge.c's), two joined by a NUL byte.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/rawmerge.h"

static int put(const char *path, const uint8_t *p, size_t n)
{
    FILE *f = fopen(path, "w");

    if (!f)
        return -1;
    fwrite(p, 1, n, f);
    return fclose(f);
}

/* A read by the header and body readers alone. */
static void read_one(const char *path)
{
    lp_ctxcount *cc = lp_ctxcount_new();
    FILE *f = fopen(path, "r");
    unsigned long lines;
    lp_rawhdr h;
    lp_error err;
    size_t mixed = 0;

    if (f && cc && lp_rawhdr_read(f, path, &h, &lines, &err) == 1) {
        lp_raw_read_body(f, path, &h, lines, 3, cc, &mixed, &err);
        lp_rawhdr_free(&h);
    }
    if (f)
        fclose(f);
    lp_ctxcount_free(cc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t na = nul ? (size_t)(nul - data) : size;
    char a[64], b[64];
    lp_rawmerge *m;
    lp_error err;

    snprintf(a, sizeof a, "/tmp/fuzz-rawmerge-%d-a", (int)getpid());
    snprintf(b, sizeof b, "/tmp/fuzz-rawmerge-%d-b", (int)getpid());
    if (put(a, data, na) || put(b, nul ? nul + 1 : data, nul ? size - na - 1 : 0))
        return 0;
    read_one(a);
    if ((m = lp_rawmerge_new(&err))) {
        if (lp_rawmerge_add(m, a, 1, &err) == 0 && lp_rawmerge_add(m, b, 2, &err) == 0)
            lp_rawmerge_write(m, "/dev/null", &err);
        lp_rawmerge_mixed(m);
        lp_rawmerge_free(m);
    }
    unlink(a);
    unlink(b);
    return 0;
}
