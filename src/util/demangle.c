/*
 * demangle.c - __cxa_demangle through a lazily loaded libstdc++.so.6
 * (see demangle.h for the fallback when it is missing). Owns the loading,
 * the status check and which names are symbols to demangle.
 */
#include <stdlib.h>
#include <string.h>

#include "util/demangle.h"
#include "util/dynlib.h"

static const lp_dynsym syms[] = {
    LP_DYNSYM(lp_demangler, cxa_demangle, __cxa_demangle),
};

char *lp_demangle(lp_demangler *d, const char *name)
{
    int st = -1;
    char *r;

    /* Only symbols: __cxa_demangle also decodes bare type encodings, so a
     * C function named f or i would come back as "float" or "int". */
    if (strncmp(name, "_Z", 2) != 0)
        return NULL;
    if (d->state == 0)
        d->state = (d->lib = lp_dynlib_open("libstdc++.so.6", "libstdc++6", syms,
                                            1, d, &d->err)) ? 1 : -1;
    if (d->state < 0)
        return NULL;
    r = d->cxa_demangle(name, NULL, NULL, &st);
    if (st != 0) {
        free(r);
        return NULL;
    }
    return r;
}

void lp_demangler_close(lp_demangler *d)
{
    lp_dynlib_close(d->lib);
    d->lib = NULL;
    d->state = 0;
}
