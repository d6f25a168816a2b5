/*
 * progress.c - the one-line progress indicator of long runs on stderr:
 * the phase, the bytes of the trace read of its size, the samples read,
 * a phase's items (distinct samples unwound), the time so far. Shown only
 * when stderr is a terminal, not with --quiet, and only once the run has
 * taken LBR2PROF_PROGRESS_AFTER seconds (default 2: short runs print
 * nothing); redrawn in place ("\r", erase to the end of the line) and
 * erased at the end and before any warning, so the messages a run prints
 * read as without it. Owns the line's wording; the numbers are the
 * library's (lbr2prof/phases.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "builtin.h"

void lp_cli_progress_init(lp_cli_progress *p, bool quiet)
{
    const char *after = getenv("LBR2PROF_PROGRESS_AFTER");
    char *end;

    p->enabled = !quiet && isatty(STDERR_FILENO);
    p->shown = false;
    p->after = 2.0;
    if (after && *after) {
        double v = strtod(after, &end);
        if (!*end && v >= 0)
            p->after = v;
    }
}

void lp_cli_progress_clear(lp_cli_progress *p)
{
    if (p && p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->shown = false;
    }
}

static double mb(uint64_t bytes)
{
    return (double)bytes / 1048576.0;
}

void lp_cli_progress_fn(void *ctx, const lp_progress *pr)
{
    lp_cli_progress *p = ctx;
    char line[200];
    int n;

    if (!p->enabled || pr->elapsed < p->after || pr->final) {
        lp_cli_progress_clear(p);
        return;
    }
    n = snprintf(line, sizeof line, "lbr2prof: %s", lp_phase_name(pr->phase));
    if (pr->phase == LP_PHASE_READ && pr->total_bytes)
        n += snprintf(line + n, sizeof line - (size_t)n, ": %.1f of %.1f MB (%.0f%%)",
                      mb(pr->bytes), mb(pr->total_bytes),
                      100.0 * (double)pr->bytes / (double)pr->total_bytes);
    else if (pr->phase == LP_PHASE_READ)
        n += snprintf(line + n, sizeof line - (size_t)n, ": %.1f MB", mb(pr->bytes));
    if (pr->phase == LP_PHASE_READ)
        n += snprintf(line + n, sizeof line - (size_t)n, ", %llu samples",
                      (unsigned long long)pr->samples);
    if (pr->todo && (size_t)n < sizeof line)
        n += snprintf(line + n, sizeof line - (size_t)n,
                      ": %llu of %llu distinct samples (%.0f%%)",
                      (unsigned long long)pr->done, (unsigned long long)pr->todo,
                      100.0 * (double)pr->done / (double)pr->todo);
    if ((size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, ", %.1f s", pr->elapsed);
    fprintf(stderr, "\r%s\033[K", line);
    fflush(stderr);
    p->shown = true;
}

void lp_cli_progress_warn(void *ctx, const char *msg)
{
    lp_cli_progress_clear(ctx);
    lp_cli_warn(NULL, msg);
}

void lp_cli_progress_note(void *ctx, const char *msg)
{
    lp_cli_progress_clear(ctx);
    lp_cli_note(NULL, msg);
}
