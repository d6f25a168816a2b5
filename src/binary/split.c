/*
 * split.c - the units of a DWARF file with their split units
 * (include/lbr2prof/dwunits.h): which package is used, the skeleton ->
 * split unit step of every source (the package, libdw's .dwo lookup, then
 * our own .dwo reading of dwp.c where libdw fails), and the range lists
 * of units libdw did not read. Used by the binary loader (dwarf.c) and
 * dump-syms (src/breakpad/dump.c). Owns no DIE walk: callers do that.
 */
#include <dwarf.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binary/binary_internal.h"
#include "lbr2prof/dwunits.h"

struct lp_dwunits {
    Dwarf *dw;
    Elf *elf;
    char *dir;                  /* the DWARF file's directory */
    lp_dwp *pkg;                /* the package, or NULL */
    lp_dwp *files;              /* .dwo files read by dwp.c (lazily) */
    const uint8_t *addr, *ranges; /* .debug_addr, .debug_ranges */
    size_t addr_size, ranges_size;
    size_t missing;
};

const uint8_t *lp_bin_section(Elf *e, const char *name, size_t *size)
{
    size_t shstrndx;
    *size = 0;
    if (elf_getshdrstrndx(e, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS ||
            !(nm = elf_strptr(e, shstrndx, sh.sh_name)) || strcmp(nm, name) != 0)
            continue;
        Elf_Data *d = lp_bin_scn_data(s, &sh);
        if (!d)
            return NULL;
        *size = d->d_size;
        return d->d_buf;
    }
    return NULL;
}

/* Whether the file at path is a regular file starting with the ELF magic. */
static bool is_elf_file(const char *path)
{
    unsigned char m[SELFMAG];
    struct stat st;
    int fd;
    bool ok;

    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return false;
    ok = read(fd, m, SELFMAG) == SELFMAG && memcmp(m, ELFMAG, SELFMAG) == 0;
    close(fd);
    return ok;
}

/* The package: --dwp must be one; <debug file>.dwp is used when it is an
 * ELF file (llvm falls back to .dwo files when it cannot open it as an
 * object file; a package with a bad index is an error either way). */
static int open_package(lp_dwunits *u, const char *dbg_path, const char *given,
                        lp_error *err)
{
    char *path = NULL;
    int r = 0;

    if (!given && asprintf(&path, "%s.dwp", dbg_path) < 0)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    if (given || is_elf_file(path))
        r = lp_dwp_open(given ? given : path, &u->pkg, err);
    free(path);
    return r;
}

lp_dwunits *lp_dwunits_open(Dwarf *dw, Elf *dbg_elf, const char *dbg_path,
                            const char *dwp_path, lp_error *err)
{
    lp_dwunits *u = calloc(1, sizeof *u);
    const char *slash = strrchr(dbg_path, '/');

    if (!u || !(u->dir = slash ? strndup(dbg_path, (size_t)(slash - dbg_path))
                               : strdup("."))) {
        free(u);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    u->dw = dw;
    u->elf = dbg_elf;
    if (open_package(u, dbg_path, dwp_path, err) != 0) {
        lp_dwunits_close(u);
        return NULL;
    }
    u->addr = lp_bin_section(dbg_elf, ".debug_addr", &u->addr_size);
    u->ranges = lp_bin_section(dbg_elf, ".debug_ranges", &u->ranges_size);
    return u;
}

void lp_dwunits_close(lp_dwunits *u)
{
    if (!u)
        return;
    lp_dwp_close(u->pkg);
    lp_dwp_close(u->files);
    free(u->dir);
    free(u);
}

size_t lp_dwunits_missing(const lp_dwunits *u) { return u->missing; }
const char *lp_dwunits_package(const lp_dwunits *u) { return u->pkg ? lp_dwp_path(u->pkg) : NULL; }

/* The skeleton's base attribute (0 if absent), within a section of sz. */
static uint64_t skel_base(Dwarf_Die *cudie, int at, int gnu_at, size_t sz)
{
    Dwarf_Attribute a;
    Dwarf_Word w = 0;
    if ((dwarf_attr(cudie, at, &a) || dwarf_attr(cudie, gnu_at, &a)) &&
        dwarf_formudata(&a, &w) == 0 && w <= sz)
        return w;
    return 0;
}

/* What the split unit needs from its skeleton (0, or -1: no DWO id). */
static int skeleton(const lp_dwunits *u, Dwarf_CU *cu, Dwarf_Die *cudie, lp_dwp_skel *sk)
{
    Dwarf_Addr low = 0;
    uint64_t o;

    memset(sk, 0, sizeof *sk);
    if (dwarf_cu_info(cu, NULL, NULL, NULL, NULL, &sk->dwo_id, NULL, NULL) != 0)
        return -1;
    if (dwarf_lowpc(cudie, &low) == 0)
        sk->low_pc = low;
    if (u->addr) {
        o = skel_base(cudie, DW_AT_addr_base, DW_AT_GNU_addr_base, u->addr_size);
        sk->addr = u->addr + o;
        sk->addr_size = u->addr_size - o;
    }
    if (u->ranges) {
        o = skel_base(cudie, DW_AT_GNU_ranges_base, DW_AT_GNU_ranges_base, u->ranges_size);
        sk->ranges = u->ranges + o;
        sk->ranges_size = u->ranges_size - o;
    }
    return 0;
}

static const char *str_attr(Dwarf_Die *die, int at, int gnu_at)
{
    Dwarf_Attribute a;
    return dwarf_attr(die, at, &a) || (gnu_at && dwarf_attr(die, gnu_at, &a))
               ? dwarf_formstring(&a) : NULL;
}

/* The split unit from the skeleton's .dwo file, read by dwp.c: the file
 * DW_AT_dwo_name names, relative to DW_AT_comp_dir (llvm), else to the
 * DWARF file's directory (libdw). 1 found, 0 not, -1 no memory. */
static int own_dwo(lp_dwunits *u, Dwarf_Die *cudie, const lp_dwp_skel *sk, Dwarf_Die *split,
                   lp_error *err)
{
    const char *name = str_attr(cudie, DW_AT_dwo_name, DW_AT_GNU_dwo_name);
    const char *comp = str_attr(cudie, DW_AT_comp_dir, 0);
    char path[PATH_MAX];
    int r = 0;

    if (!name || (!u->files && lp_dwp_new_files(&u->files, err) != 0))
        return name ? -1 : 0;
    for (int i = 0; i < 2 && r == 0; i++) {
        const char *dir = i == 0 ? comp : u->dir;
        if (name[0] == '/' && i > 0)
            break;
        if (name[0] == '/' || !dir)
            snprintf(path, sizeof path, "%s", name);
        else
            snprintf(path, sizeof path, "%s/%s", dir, name);
        r = lp_dwp_file_unit(u->files, path, sk, split, err);
    }
    return r;
}

/* The split unit of a skeleton: 1 and *split, 0 missing, -1 error. */
static int split_of(lp_dwunits *u, Dwarf_CU *cu, Dwarf_Die *cudie, Dwarf_Die *libdw_split,
                    Dwarf_Die *split, lp_error *err)
{
    lp_dwp_skel sk;

    if (skeleton(u, cu, cudie, &sk) != 0)
        return 0;
    if (u->pkg)
        return lp_dwp_unit(u->pkg, &sk, split, err);
    if (dwarf_tag(libdw_split) == DW_TAG_compile_unit) {
        *split = *libdw_split;
        return 1;
    }
    return own_dwo(u, cudie, &sk, split, err);
}

int lp_dwunits_walk(lp_dwunits *u, lp_dwunit_fn fn, void *ctx, lp_error *err)
{
    u->missing = 0;
    for (int pass = 0; pass < 2; pass++) {
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie, subdie, split;
        uint8_t ut;
        Dwarf_Half ver;
        while (dwarf_get_units(u->dw, cu, &cu, &ver, &ut, &cudie,
                               pass && !u->pkg ? &subdie : NULL) == 0) {
            int r = 0, got;
            if (ut != DW_UT_compile && ut != DW_UT_skeleton)
                continue;
            if (pass == 0) {
                r = fn(ctx, &cudie, &cudie);
            } else if (ut == DW_UT_skeleton) {
                if ((got = split_of(u, cu, &cudie, &subdie, &split, err)) < 0)
                    return -1;
                if (got)
                    r = fn(ctx, &split, &cudie);
                else
                    u->missing++;
            }
            if (r != 0)
                return r;
        }
    }
    return 0;
}

ptrdiff_t lp_dwunits_ranges(lp_dwunits *u, Dwarf_Die *die, ptrdiff_t off,
                            Dwarf_Addr *basep, Dwarf_Addr *lo, Dwarf_Addr *hi)
{
    ptrdiff_t r;

    if (u->pkg && (r = lp_dwp_ranges(u->pkg, die, off, basep, lo, hi)) != LP_DWP_NOT_MINE)
        return r;
    if (u->files && (r = lp_dwp_ranges(u->files, die, off, basep, lo, hi)) != LP_DWP_NOT_MINE)
        return r;
    return dwarf_ranges(die, off, basep, lo, hi);
}
