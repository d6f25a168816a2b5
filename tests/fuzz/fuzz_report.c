/*
 * fuzz_report.c - libFuzzer target for src/report: the input is read as an
 * LLVM text sample profile (flat or CS), turned into a report (with
 * inline-cs-noprobe's binary for file/line lookups on odd bytes) and
 * written in every format. Any crash, sanitizer report, hang or leak is a
 * bug; format errors are expected. Run from the project root; seed with
 * llvm-profgen text profiles.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/report.h"

#define BIN "tests/data/llvm-profgen-inputs/inline-cs-noprobe.perfbin"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lp_binary *bin; /* opened once: the harness, not the library */
    FILE *f, *null;
    lp_profile *p;
    lp_report *r;
    lp_error err;
    int i;

    if (size == 0)
        return 0;
    if (!bin)
        bin = lp_binary_open(BIN, NULL, &err);
    if (!(f = fmemopen((void *)(data + 1), size - 1, "r")))
        return 0;
    p = lp_profile_read_text(f, "fuzz", &err);
    fclose(f);
    if (!p)
        return 0;
    r = lp_report_from_profile(p, (data[0] & 1) ? bin : NULL, NULL, NULL, &err);
    null = fopen("/dev/null", "w");
    for (i = LP_REPORT_TEXT; r && null && i <= LP_REPORT_SVG; i++) {
        lp_report_write_opts o = {(lp_report_format)i, 3, (data[0] & 2) != 0, 0, NULL};
        lp_report_write(null, r, &o, &err);
    }
    if (null)
        fclose(null);
    lp_report_free(r);
    lp_profile_free(p);
    return 0;
}
