/*
 * outfile.c - atomic output (temp file + rename) for every writer.
 * Owns the temporary-file lifecycle; not what is written into it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbr2prof/outfile.h"

/* A device, FIFO or socket (/dev/null, a named pipe) is written in place:
 * renaming a temporary file over it would replace it (as root, /dev/null
 * would become a regular file for the whole machine). */
static int open_special(lp_outfile *o, const char *path, lp_error *err)
{
    if (!(o->path = strdup(path)))
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", path);
    if (!(o->fp = fopen(path, "w"))) {
        lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
        lp_outfile_abort(o);
        return -1;
    }
    return 0;
}

int lp_outfile_open(lp_outfile *o, const char *path, lp_error *err)
{
    struct stat st;
    int fd;
    size_t n;

    memset(o, 0, sizeof *o);
    if (!path || strcmp(path, "-") == 0) {
        o->fp = stdout;
        return 0;
    }
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
        return open_special(o, path, err);
    n = strlen(path);
    o->path = strdup(path);
    o->tmp = malloc(n + sizeof ".tmp.XXXXXX");
    if (!o->path || !o->tmp) {
        lp_outfile_abort(o);
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", path);
    }
    memcpy(o->tmp, path, n);
    memcpy(o->tmp + n, ".tmp.XXXXXX", sizeof ".tmp.XXXXXX");
    fd = mkstemp(o->tmp);
    if (fd < 0) {
        lp_error_set(err, LP_EIO, "%s: cannot create temporary file: %s",
                     path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        lp_outfile_abort(o);
        return -1;
    }
    /* mkstemp makes 0600; give the file the mode a plain creat() would. */
    {
        mode_t um = umask(0);
        umask(um);
        (void)fchmod(fd, 0666 & ~um);
    }
    o->fp = fdopen(fd, "w");
    if (!o->fp) {
        close(fd);
        lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
        lp_outfile_abort(o);
        return -1;
    }
    return 0;
}

int lp_outfile_commit(lp_outfile *o, lp_error *err)
{
    int bad;

    if (!o->fp)
        return lp_error_set(err, LP_EIO, "output already closed");
    if (o->fp == stdout) {
        bad = fflush(stdout) != 0 || ferror(stdout);
        o->fp = NULL;
        return bad ? lp_error_set(err, LP_EIO, "<stdout>: write failed: %s",
                                  strerror(errno))
                   : 0;
    }
    bad = ferror(o->fp);
    bad |= fclose(o->fp) != 0;
    o->fp = NULL;
    if (bad) {
        lp_error_set(err, LP_EIO, "%s: write failed: %s", o->path,
                     strerror(errno));
        lp_outfile_abort(o);
        return -1;
    }
    if (!o->tmp) { /* written in place (open_special) */
        free(o->path);
        o->path = NULL;
        return 0;
    }
    if (rename(o->tmp, o->path) != 0) {
        lp_error_set(err, LP_EIO, "%s: cannot rename %s into place: %s",
                     o->path, o->tmp, strerror(errno));
        lp_outfile_abort(o);
        return -1;
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return 0;
}

void lp_outfile_abort(lp_outfile *o)
{
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    o->fp = NULL;
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
}
