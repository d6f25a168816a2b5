/*
 * lbr2prof/outfile.h - atomic output files: everything lbr2prof writes goes
 * to a temporary file next to the target and is renamed over it only when
 * complete, so a failed run never leaves a half-written profile behind.
 * "-" means standard output (written directly, nothing to rename); an
 * existing device, FIFO or socket (/dev/null, a named pipe) is written in
 * place, never replaced.
 */
#ifndef LBR2PROF_OUTFILE_H
#define LBR2PROF_OUTFILE_H

#include <stdio.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lp_outfile {
    FILE *fp;          /* write here */
    char *path;        /* final name (NULL for stdout) */
    char *tmp;         /* temporary name (NULL for stdout) */
} lp_outfile;

int lp_outfile_open(lp_outfile *o, const char *path, lp_error *err);
/* Flush, fsync-free close and rename into place. Returns 0 or -1. */
int lp_outfile_commit(lp_outfile *o, lp_error *err);
/* Drop the temporary file (safe after a failed commit or twice). */
void lp_outfile_abort(lp_outfile *o);

#ifdef __cplusplus
}
#endif
#endif
