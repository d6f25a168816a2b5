/*
 * detect.c - what a report input is, from its first bytes: perf.data
 * (magic "PERFILE2", either byte order, or a `perf record --threads`
 * directory), an LLVM sample profile (binary, extbinary or text, as
 * lp_profile_sniff tells) or else perf script text. Owns that choice only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbr2prof/profile.h"
#include "lbr2prof/report.h"

#define HEAD 65536   /* a CS profile's first line can be long */

int lp_report_detect(const char *path, lp_report_input_kind *kind,
                     lp_error *err)
{
    unsigned char *buf;
    struct stat st;
    size_t n;
    FILE *f;
    int fmt;

    if (stat(path, &st) != 0)
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        *kind = LP_RIN_PERF_DATA;
        return 0;
    }
    if (!(f = fopen(path, "rb")))
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    if (!(buf = malloc(HEAD))) {
        fclose(f);
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", path);
    }
    n = fread(buf, 1, HEAD, f);
    fclose(f);
    if (n >= 8 && (!memcmp(buf, "PERFILE2", 8) || !memcmp(buf, "2ELIFREP", 8)))
        *kind = LP_RIN_PERF_DATA;
    else if ((fmt = lp_profile_sniff(buf, n)) == LP_PROF_TEXT)
        *kind = LP_RIN_LLVM_TEXT;
    else if (fmt)
        *kind = LP_RIN_LLVM_BINARY;
    else
        *kind = LP_RIN_PERF_SCRIPT;
    free(buf);
    return 0;
}
