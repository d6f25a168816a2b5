/*
 * fuzz_symbolicate.c - libFuzzer target: arbitrary bytes as a v5 and a v4
 * request against a small Breakpad store (created once under /tmp). Either
 * a response or a 400 title, never a crash; adjustment on for odd inputs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbr2prof/symbolicate.h"

static lp_sym_store *store(void)
{
    static lp_sym_store *st; /* libFuzzer harness state, not library state */
    lp_error e;
    FILE *f;

    if (st)
        return st;
    mkdir("/tmp/lp-fuzz-store", 0755);
    mkdir("/tmp/lp-fuzz-store/a.so", 0755);
    mkdir("/tmp/lp-fuzz-store/a.so/ABCD", 0755);
    f = fopen("/tmp/lp-fuzz-store/a.so/ABCD/a.so.sym", "w");
    if (f) {
        fputs("MODULE Linux arm64 ABCD a.so\nFILE 0 a.c\nINLINE_ORIGIN 0 in\n"
              "FUNC 10 20 0 f\nINLINE 0 3 0 0 14 8\n10 20 2 0\nPUBLIC 40 0 p\n", f);
        fclose(f);
    }
    st = lp_sym_store_new(&e);
    if (st)
        lp_sym_store_add_dir(st, "/tmp/lp-fuzz-store", &e);
    return st;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lp_sym_opts o = {size & 1, (lp_adjust_mode)(size % 4), LP_CPU_UNKNOWN, 0, (size >> 1) & 1};
    lp_error e;
    char *r;

    r = lp_symbolicate_v5(store(), (const char *)data, size, &o, &e);
    free(r);
    r = lp_symbolicate_v4(store(), (const char *)data, size, &o, &e);
    free(r);
    return 0;
}
