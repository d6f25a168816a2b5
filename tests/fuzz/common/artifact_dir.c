/*
 * artifact_dir.c - linked into every libFuzzer target by `make fuzz`: puts
 * what a run finds (crash-*, leak-*, timeout-*, oom-*, slow-unit-*) under
 * the build folder, `build-fuzz/artifacts/<target>/` next to the target
 * binary, instead of the current directory (libFuzzer's default, which
 * left a crash file at the top of the tree once). An -artifact_prefix=
 * given on the command line wins. Owns that default only: seeds, corpora
 * and run lengths are each script's or caller's.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* asprintf */
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir -p of a path ending in '/'. */
static int make_dirs(char *path)
{
    char *p;

    for (p = path + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
            *p = '/';
            return -1;
        }
        *p = '/';
    }
    return 0;
}

/* "<dir of argv0>/artifacts/<basename of argv0>/" (malloc'd). */
static char *artifact_prefix(const char *argv0)
{
    const char *slash = strrchr(argv0, '/');
    const char *base = slash ? slash + 1 : argv0;
    int dirlen = slash ? (int)(slash - argv0) : 1;
    char *s;

    if (asprintf(&s, "-artifact_prefix=%.*s/artifacts/%s/", dirlen, slash ? argv0 : ".",
                 base) < 0)
        return NULL;
    return s;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char **nv, *flag;
    int i;

    for (i = 1; i < *argc; i++)
        if (!strncmp((*argv)[i], "-artifact_prefix=", 17))
            return 0;
    if (!(flag = artifact_prefix((*argv)[0])) ||
        make_dirs(flag + 17) < 0 || !(nv = calloc((size_t)*argc + 2, sizeof *nv))) {
        fprintf(stderr, "artifact_dir: cannot make the artifact directory for %s\n",
                (*argv)[0]);
        free(flag);
        return 0;
    }
    /* The flag goes first: libFuzzer reads flags from anywhere in argv. */
    nv[0] = (*argv)[0];
    nv[1] = flag;
    memcpy(nv + 2, *argv + 1, (size_t)(*argc - 1) * sizeof *nv);
    *argv = nv; /* the harness's argv for the life of the process */
    (*argc)++;
    return 0;
}
