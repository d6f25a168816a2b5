/*
 * cmd_version.c - `lbr2prof version`: prints the version and the versions
 * of the libraries it was built with.
 * LP_BUILTIN(version, cmd_version, "print version information")
 */
#include <capstone/capstone.h>
#include <elfutils/version.h>
#include <stdio.h>
#include <zstd.h>

#include "lbr2prof/lbr2prof.h"

int cmd_version(int argc, char **argv)
{
    int cs_major = 0, cs_minor = 0;

    (void)argc;
    (void)argv;
    cs_version(&cs_major, &cs_minor);
    printf("lbr2prof %s\n", LP_VERSION);
    printf("  elfutils %d.%d, capstone %d.%d, zstd %s\n",
           _ELFUTILS_VERSION / 1000, _ELFUTILS_VERSION % 1000, cs_major,
           cs_minor, ZSTD_versionString());
    return 0;
}
