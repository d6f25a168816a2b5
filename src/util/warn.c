/*
 * warn.c - formats warnings for an lp_warn_fn callback (see
 * include/lbr2prof/warn.h), including llvm-profgen's percentage summaries.
 * Owns message formatting only; what is worth a warning, and printing it,
 * belong to the callers.
 */
#include <inttypes.h>
#include <stdio.h>

#include "lbr2prof/warn.h"

void lp_vwarnf(lp_warn_fn fn, void *ctx, const char *fmt, va_list ap)
{
    char buf[LP_WARN_MAX];

    if (!fn)
        return;
    vsnprintf(buf, sizeof buf, fmt, ap);
    fn(ctx, buf);
}

void lp_warnf(lp_warn_fn fn, void *ctx, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    lp_vwarnf(fn, ctx, fmt, ap);
    va_end(ap);
}

void lp_warn_summary(lp_warn_fn fn, void *ctx, uint64_t num, uint64_t total,
                     const char *msg)
{
    if (!num || !total)
        return;
    lp_warnf(fn, ctx, "%.2f%%(%" PRIu64 "/%" PRIu64 ") %s",
             (double)num * 100 / total, num, total, msg);
}
