/*
 * dynlib.h - load a shared library at first use (dlopen) and resolve a
 * list of its functions into a table of typed function pointers that the
 * caller owns (a struct in its own context). Used for libraries only one
 * command needs (libpfm4: record, libmicrohttpd: serve, libstdc++:
 * demangling), so that every other command does not pay for loading them.
 */
#ifndef LBR2PROF_UTIL_DYNLIB_H
#define LBR2PROF_UTIL_DYNLIB_H

#include <stddef.h>

#include "lbr2prof/error.h"

/* One function to resolve: its name in the library and where its pointer
 * goes in the caller's table. */
typedef struct lp_dynsym {
    const char *name;
    size_t offset;
} lp_dynsym;

/* An entry for table type T's field `field`, which must be declared as
 * `__typeof__(symbol) *field;` (the compiler rejects any other type, so
 * calls through the table are checked against the library's header). */
#define LP_DYNSYM(T, field, symbol)                                           \
    { #symbol, offsetof(T, field) +                                           \
          0 * sizeof(char[__builtin_types_compatible_p(                       \
                  __typeof__(((T *)0)->field), __typeof__(&symbol)) ? 1 : -1]) }

/* Open `soname` (e.g. "libpfm.so.4") and store the address of each of
 * syms[0..n) into `table` at its offset. Returns the library handle, or
 * NULL with err naming the library (and the missing symbol, if one is)
 * and the Debian `package` that provides it. */
void *lp_dynlib_open(const char *soname, const char *package,
                     const lp_dynsym *syms, size_t n, void *table,
                     lp_error *err);

/* Release a handle from lp_dynlib_open (NULL is fine). */
void lp_dynlib_close(void *handle);

#endif
