/*
 * demangle.h - the C++ runtime's Itanium demangler (__cxa_demangle),
 * loaded from libstdc++.so.6 at the first name to demangle. The state
 * lives in the caller's context (the report, one breakpad dump).
 *
 * When libstdc++.so.6 cannot be loaded, names stay mangled, silently: the
 * linkage name is still a correct, unique name (c++filt decodes it), the
 * library is only a display aid here, and the report and dump_syms have no
 * warning channel; on Debian libstdc++6 is a dependency of apt itself, so
 * a system without it is a stripped container. lp_demangler.err keeps the
 * reason for a caller that wants to say it.
 */
#ifndef LBR2PROF_UTIL_DEMANGLE_H
#define LBR2PROF_UTIL_DEMANGLE_H

#include <stddef.h>

#include "lbr2prof/error.h"

/* The C++ ABI's demangler (C linkage), as libstdc++ exports it. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len,
                            int *status);

typedef struct lp_demangler {
    int state;                          /* 0 not tried, 1 loaded, -1 failed */
    void *lib;
    __typeof__(__cxa_demangle) *cxa_demangle;
    lp_error err;                       /* why loading failed (state -1) */
} lp_demangler;

/* `name` demangled (malloc'ed), or NULL when it is not a mangled symbol
 * name (_Z...) the demangler accepts, or libstdc++ is missing. Names
 * that are not symbols never load libstdc++. Zero-initialise d first. */
char *lp_demangle(lp_demangler *d, const char *name);
void lp_demangler_close(lp_demangler *d);

#endif
