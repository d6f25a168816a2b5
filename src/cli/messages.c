/*
 * messages.c - what every subcommand prints the same way on stderr: a
 * library failure (and its exit status), a usage error, the library's
 * warnings and notices. Owns the wording of those prefixes only; the
 * messages themselves come from the library or the command.
 */
#include <stdarg.h>
#include <stdio.h>

#include "builtin.h"

int lp_cli_fail(const lp_error *err)
{
    fprintf(stderr, "lbr2prof: %s\n", err->msg[0] ? err->msg : "unknown error");
    return err->code == LP_ENOMEM ? 1 : 2;
}

int lp_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "lbr2prof %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 2;
}

void lp_cli_warn(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "warning: %s\n", msg);
}

void lp_cli_note(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "lbr2prof: %s\n", msg);
}
