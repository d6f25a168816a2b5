/*
 * lbr2prof/error.h - how every lbr2prof library call reports failure.
 *
 * Calls that can fail take an `lp_error *` (may be NULL) and return a
 * negative value or NULL; the error then holds a code and a complete,
 * printable message ("FILE: offset 0x1a8: record size 0 (expected >= 8)").
 * The library never prints and never exits; the CLI prints `msg` and maps
 * the code to an exit status.
 */
#ifndef LBR2PROF_ERROR_H
#define LBR2PROF_ERROR_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

enum lp_errcode {
    LP_OK = 0,
    LP_EIO = 1,      /* open/read/write failed (errno text in msg) */
    LP_EFORMAT = 2,  /* input is malformed: msg names file, offset, expectation */
    LP_ENOMEM = 3,   /* allocation failed */
    LP_EUSAGE = 4,   /* bad argument or option */
    LP_EUNSUPP = 5,  /* well-formed but not supported */
};

#define LP_ERRMSG_MAX 1024

typedef struct lp_error {
    int code;
    char msg[LP_ERRMSG_MAX];
} lp_error;

/* Fill `err` (if non-NULL) with `code` and a formatted message. Returns -1. */
int lp_error_set(lp_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int lp_error_vset(lp_error *err, int code, const char *fmt, va_list ap);

/* Prefix an existing message: "prefix: old message". Returns -1. */
int lp_error_prefix(lp_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void lp_error_clear(lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
