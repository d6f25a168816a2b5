/*
 * util/lines.h - reading a text file line by line, counted: the one
 * getline step the project's line-based readers share (llvm-profgen's
 * unsymbolized profiles, flat and CS, and the mergeable raw profile's
 * header). Owns no reader state of its own.
 */
#ifndef LBR2PROF_UTIL_LINES_H
#define LBR2PROF_UTIL_LINES_H

#include <stdio.h>
#include <sys/types.h>

/* The next line of f into *line (capacity *cap, grown by getline) without
 * its '\n', and ++*lineno: 1; 0 at the end of the file (nothing counted). */
static inline int lp_next_line(FILE *f, char **line, size_t *cap,
                               unsigned long *lineno)
{
    ssize_t n = getline(line, cap, f);

    if (n < 0)
        return 0;
    (*lineno)++;
    if (n > 0 && (*line)[n - 1] == '\n')
        (*line)[n - 1] = 0;
    return 1;
}

#endif
