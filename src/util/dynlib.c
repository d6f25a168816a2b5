/*
 * dynlib.c - dlopen a library by soname and fill a caller's table of
 * function pointers by name (see dynlib.h). Owns the error messages for a
 * library or symbol that is not there; what the functions are for, and
 * when to load, belong to the callers.
 */
#include <dlfcn.h>
#include <string.h>

#include "util/dynlib.h"

/* dlsym returns data pointers; POSIX guarantees they convert to function
 * pointers, which the copy below relies on. */
_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "function pointers must be the size of void *");

void *lp_dynlib_open(const char *soname, const char *package,
                     const lp_dynsym *syms, size_t n, void *table,
                     lp_error *err)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    const char *why;
    void *fn;
    size_t i;

    if (!h) {
        why = dlerror();
        lp_error_set(err, LP_EUNSUPP, "cannot load %s (%s); install the Debian "
                     "package %s", soname, why ? why : "not found", package);
        return NULL;
    }
    for (i = 0; i < n; i++) {
        dlerror();
        if (!(fn = dlsym(h, syms[i].name))) {
            lp_error_set(err, LP_EUNSUPP, "%s has no function %s (another "
                         "version?); install the Debian package %s", soname,
                         syms[i].name, package);
            dlclose(h);
            return NULL;
        }
        memcpy((char *)table + syms[i].offset, &fn, sizeof fn);
    }
    return h;
}

void lp_dynlib_close(void *handle)
{
    if (handle)
        dlclose(handle);
}
