/*
 * fuzz_profile.c - libFuzzer target for the profile side: the first byte
 * picks the LLVM text profile reader (then every writer) or the
 * unsymbolized profile reader (then generation against inline-noprobe's
 * binary, post-processing and every writer). Any crash, sanitizer report,
 * hang or leak is a bug; format errors are expected. Run from the project
 * root (the binary is found under tests/data); seed with *.raw.prof and
 * llvm-profgen text profiles.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lbr2prof/flat.h"
#include "lbr2prof/profile.h"

#define BIN "tests/data/llvm-profgen-inputs/inline-noprobe.perfbin"

static void write_all(const lp_profile *p)
{
    static const lp_prof_format fmts[] = {LP_PROF_TEXT, LP_PROF_EXTBINARY,
                                          LP_PROF_BINARY};
    FILE *null = fopen("/dev/null", "w");
    lp_error err;
    size_t i;

    for (i = 0; null && i < 3; i++) {
        lp_write_opts o = {fmts[i], (int)i == 1, 0, NULL, 0};
        lp_profile_write(null, p, &o, &err);
    }
    if (null)
        fclose(null);
}

static void raw_path(FILE *f)
{
    static lp_binary *bin; /* opened once: the harness, not the library */
    lp_counters *c = lp_counters_new();
    lp_profile *p = lp_profile_new();
    lp_flat_opts o;
    lp_error err;

    if (!bin)
        bin = lp_binary_open(BIN, NULL, &err);
    lp_flat_opts_default(&o);
    if (bin && c && p && lp_rawprof_read(f, "fuzz", 0x400000, c, &err) == 0 &&
        lp_flat_generate(bin, c, &o, p, &err) == 0 &&
        lp_flat_postprocess(p, &o, &err) == 0)
        write_all(p);
    lp_profile_free(p);
    lp_counters_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lp_profile *p;
    lp_error err;
    FILE *f;

    if (size < 2)
        return 0;
    f = fmemopen((void *)(data + 1), size - 1, "r");
    if (!f)
        return 0;
    if (data[0] & 1) {
        raw_path(f);
    } else if ((p = lp_profile_read_text(f, "fuzz", &err))) {
        write_all(p);
        lp_profile_free(p);
    }
    fclose(f);
    return 0;
}
