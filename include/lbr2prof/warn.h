/*
 * lbr2prof/warn.h - how library warnings reach the caller: a callback that
 * gets one complete message (no "warning: " prefix, no newline) and prints
 * it, or not. The library never prints; a NULL callback drops the message.
 *
 * lp_warnf formats a message for a callback; lp_warn_summary is
 * llvm-profgen 19's emitWarningSummary ("P%(num/total) msg").
 */
#ifndef LBR2PROF_WARN_H
#define LBR2PROF_WARN_H

#include <stdarg.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*lp_warn_fn)(void *ctx, const char *msg);

/* Format and pass to fn (nothing when fn is NULL). Messages are cut at
 * LP_WARN_MAX - 1 characters. */
#define LP_WARN_MAX 1280
void lp_warnf(lp_warn_fn fn, void *ctx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lp_vwarnf(lp_warn_fn fn, void *ctx, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* emitWarningSummary: "%.2f%%(num/total) msg", only when num and total are
 * both non-zero. */
void lp_warn_summary(lp_warn_fn fn, void *ctx, uint64_t num, uint64_t total,
                     const char *msg);

#ifdef __cplusplus
}
#endif
#endif
