/*
 * error.c - fills lp_error values (see include/lbr2prof/error.h).
 * Owns message formatting only; printing is the CLI's job.
 */
#include <stdio.h>
#include <string.h>

#include "lbr2prof/error.h"

int lp_error_vset(lp_error *err, int code, const char *fmt, va_list ap)
{
    if (err) {
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    }
    return -1;
}

int lp_error_set(lp_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    lp_error_vset(err, code, fmt, ap);
    va_end(ap);
    return -1;
}

int lp_error_prefix(lp_error *err, const char *fmt, ...)
{
    char old[LP_ERRMSG_MAX];
    va_list ap;
    int n;

    if (!err)
        return -1;
    memcpy(old, err->msg, sizeof old);
    va_start(ap, fmt);
    n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof err->msg) {
        /* append ": old", cut to fit (memcpy: gcc -O1 flags snprintf) */
        size_t at = (size_t)n, room = sizeof err->msg - at - 1;
        const char *parts[2] = {": ", old};
        for (int i = 0; i < 2; i++) {
            size_t l = strnlen(parts[i], room);
            memcpy(err->msg + at, parts[i], l);
            at += l;
            room -= l;
        }
        err->msg[at] = '\0';
    }
    return -1;
}

void lp_error_clear(lp_error *err)
{
    if (err) {
        err->code = LP_OK;
        err->msg[0] = '\0';
    }
}
