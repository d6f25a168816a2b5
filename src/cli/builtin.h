/*
 * builtin.h - the contract between the thin CLI (src/cli/main.c) and the
 * subcommands in src/builtin/, one file each (git's builtin/ layout).
 *
 * A subcommand file declares itself with a comment line of the form
 *     LP_BUILTIN(name, function, "one-line help")
 * which the Makefile collects into build/gen/builtins.inc, so adding a
 * command never touches a shared table. A developer tool says
 * LP_BUILTIN_DEV instead: it runs the same way, and `lbr2prof help` lists
 * it apart, under "developer commands", not among the user commands. A command returns the process exit
 * status: 0 success, 1 internal failure, 2 bad input or usage.
 * Owns that contract and the messages every command prints the same way
 * (messages.c); not any command's options or work.
 */
#ifndef LBR2PROF_CLI_BUILTIN_H
#define LBR2PROF_CLI_BUILTIN_H

#include "lbr2prof/error.h"

typedef int (*lp_builtin_fn)(int argc, char **argv);

/* Print "lbr2prof: <msg>" to stderr and return the exit status for it. */
int lp_cli_fail(const lp_error *err);
/* Print "lbr2prof <cmd>: <printf message>" to stderr; returns 2. */
int lp_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* lp_warn_fn callbacks: "warning: <msg>" and "lbr2prof: <msg>" on stderr
 * (ctx unused). */
void lp_cli_warn(void *ctx, const char *msg);
void lp_cli_note(void *ctx, const char *msg);

#endif
