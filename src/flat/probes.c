/*
 * probes.c - does a binary carry pseudo probes (.pseudo_probe_desc and
 * .pseudo_probe sections)? llvm-profgen then makes probe-based profiles,
 * which lbr2prof does not implement yet, so the caller refuses such
 * binaries unless --use-dwarf-correlation is given. Reads only the
 * section headers (libelf); the binary loader owns everything else.
 */
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/flat.h"

int lp_flat_has_pseudo_probes(const char *path, lp_error *err)
{
    int fd = open(path, O_RDONLY), desc = 0, probe = 0;
    Elf *e;
    Elf_Scn *scn = NULL;
    GElf_Shdr sh;
    size_t shstrndx;
    const char *name;

    if (fd < 0)
        return lp_error_set(err, LP_EIO, "%s: cannot open", path);
    elf_version(EV_CURRENT);
    e = elf_begin(fd, ELF_C_READ, NULL);
    if (e && elf_kind(e) == ELF_K_ELF && elf_getshdrstrndx(e, &shstrndx) == 0) {
        while ((scn = elf_nextscn(e, scn))) {
            if (!gelf_getshdr(scn, &sh))
                continue;
            name = elf_strptr(e, shstrndx, sh.sh_name);
            if (!name)
                continue;
            desc |= strcmp(name, ".pseudo_probe_desc") == 0;
            probe |= strcmp(name, ".pseudo_probe") == 0;
        }
    }
    if (e)
        elf_end(e);
    close(fd);
    return desc && probe;
}
