/*
 * cmd_fleet.c - `lbr2prof fleet`: many perf.data files to one profile on a
 * Dask cluster. The driver is scripts/lbr2prof_fleet.py (Dask distributed
 * runs on Debian's /usr/bin/python3, docs/fleet.md); this command finds it
 * and runs it with the interpreter, telling it which lbr2prof the workers
 * run (this one, unless --lbr2prof says otherwise). Owns finding the
 * script and the interpreter only.
 * LP_BUILTIN(fleet, cmd_fleet, "profile many perf.data files on a Dask cluster (shard, merge, generate)")
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/builtin.h"

#define FLEET_SCRIPT "lbr2prof_fleet.py"

/* The directory of the executable `exe`, or NULL. */
static char *exe_dir(const char *exe)
{
    char *p = exe ? strdup(exe) : NULL, *s;

    if (p && (s = strrchr(p, '/')))
        *s = 0;
    return p;
}

/* $LBR2PROF_FLEET_SCRIPT, else next to the build (BUILD/../scripts) or
 * the installation (bin/../share/lbr2prof). malloc'ed, or NULL. */
static char *find_script(const char *dir)
{
    const char *env = getenv("LBR2PROF_FLEET_SCRIPT");
    static const char *const rel[] = {"../scripts", "../share/lbr2prof"};
    char *p;
    size_t i;

    if (env && *env)
        return strdup(env);
    for (i = 0; dir && i < sizeof rel / sizeof rel[0]; i++) {
        if (asprintf(&p, "%s/%s/%s", dir, rel[i], FLEET_SCRIPT) < 0)
            return NULL;
        if (access(p, R_OK) == 0)
            return p;
        free(p);
    }
    return NULL;
}

int cmd_fleet(int argc, char **argv)
{
    const char *py = getenv("LBR2PROF_PYTHON");
    char *exe = realpath("/proc/self/exe", NULL), *dir = exe_dir(exe);
    char *script = find_script(dir), *self = NULL, **av;
    int i, k = 0;

    if (!py || !*py)
        py = "/usr/bin/python3"; /* Debian's, with python3-distributed */
    if (!script) {
        free(dir);
        free(exe);
        return lp_cli_usage_error("fleet", "cannot find %s (next to this "
                                  "lbr2prof in ../scripts or ../share/lbr2prof; "
                                  "or set LBR2PROF_FLEET_SCRIPT)", FLEET_SCRIPT);
    }
    if (!(av = calloc((size_t)argc + 4, sizeof *av)) ||
        (exe && asprintf(&self, "--lbr2prof=%s", exe) < 0)) {
        fputs("lbr2prof fleet: out of memory\n", stderr);
        return 1;
    }
    av[k++] = (char *)py;
    av[k++] = script;
    if (self)
        av[k++] = self;         /* the user's --lbr2prof, later, wins */
    for (i = 1; i < argc; i++)
        av[k++] = argv[i];
    av[k] = NULL;
    execv(py, av);
    fprintf(stderr, "lbr2prof fleet: cannot run %s (Debian's python3 with "
            "python3-distributed: scripts/install-deps.sh installs it): %m\n", py);
    free(av);
    free(self);
    free(script);
    free(dir);
    free(exe);
    return 2;
}
