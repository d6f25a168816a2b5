/*
 * fuzz_breakpad.c - libFuzzer target: arbitrary bytes as a .sym file. The
 * parser must fail cleanly or give a module whose lookups, writer and
 * re-parse all work (and agree).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "lbr2prof/breakpad.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lp_error e;
    lp_bp_module *m = lp_bp_parse((const char *)data, size, "fuzz.sym", &e), *m2;
    lp_bp_result r, r2;
    char *buf = NULL;
    size_t len = 0, i;
    FILE *f;

    if (!m)
        return 0;
    for (i = 0; i < m->nfuncs; i++) {
        lp_bp_lookup(m, m->funcs[i].addr, &r);
        lp_bp_lookup(m, m->funcs[i].addr + m->funcs[i].size / 2, &r);
    }
    f = open_memstream(&buf, &len);
    if (f && lp_bp_write(m, f, &e) == 0) {
        fclose(f);
        m2 = lp_bp_parse(buf, len, "rewritten.sym", &e);
        if (!m2)
            abort(); /* what we write we must read back */
        for (i = 0; i < m->nfuncs; i++)
            if (lp_bp_lookup(m, m->funcs[i].addr, &r) != lp_bp_lookup(m2, m->funcs[i].addr, &r2))
                abort();
        lp_bp_free(m2);
    } else if (f) {
        fclose(f);
    }
    free(buf);
    lp_bp_free(m);
    return 0;
}
