/*
 * dwarf.c - DWARF side of the binary loader, with libdw: the function table
 * (llvm-profgen's BinaryFunctions and StartAddrToFuncRangeMap, loaded up
 * front from every DW_TAG_subprogram, split-DWARF units included), function
 * entries, callee names and the symbol-table fallback. Inline stacks are
 * symbolize.c's; disassembly is disasm.c's.
 */
#include <dwarf.h>

#ifndef DW_AT_GNU_discriminator
#define DW_AT_GNU_discriminator 0x2136
#endif
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binary/binary_internal.h"

/* ---- function table ------------------------------------------------------ */

lp_func_entry *lp_bin_get_func(lp_binary *b, const char *name)
{
    lp_func_entry *f;
    HASH_FIND_STR(b->funcs_by_name, name, f);
    if (f)
        return f;
    f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->fn.name = lp_bin_intern(b, name);
    size_t cl = lp_canonical_fn_len(name);
    f->canon = strndup(name, cl);
    if (!f->fn.name || !f->canon ||
        (b->nfuncs == b->funcs_cap &&
         !(b->funcs = realloc(b->funcs, (b->funcs_cap = b->funcs_cap * 2 + 64) *
                                            sizeof *b->funcs)))) {
        free(f->canon);
        free(f);
        return NULL;
    }
    b->funcs[b->nfuncs++] = &f->fn;
    HASH_ADD_KEYPTR(hh, b->funcs_by_name, f->fn.name, strlen(f->fn.name), f);
    return f;
}

int lp_bin_add_range(lp_binary *b, lp_func_entry *f, uint64_t lo, uint64_t hi)
{
    if (b->nranges == b->ranges_cap) {
        size_t nc = b->ranges_cap * 2 + 64;
        lp_func_range *r = realloc(b->ranges, nc * sizeof *r);
        if (!r)
            return -1;
        b->ranges = r;
        b->ranges_cap = nc;
    }
    if (f->fn.nranges == f->cap) {
        size_t nc = f->cap * 2 + 2;
        size_t *ri = realloc(f->ridx, nc * sizeof *ri);
        if (!ri)
            return -1;
        f->ridx = ri;
        f->cap = nc;
    }
    f->ridx[f->fn.nranges++] = b->nranges;
    b->ranges[b->nranges++] = (lp_func_range){lo, hi, &f->fn, false};
    return 0;
}

static int add_die_range(lp_binary *b, Dwarf_Die *die, Dwarf_Die *cudie,
                         Dwarf_Die *linecu, uint64_t lo, uint64_t hi)
{
    if (b->ndies == b->dies_cap) {
        size_t nc = b->dies_cap * 2 + 64;
        lp_die_range *d = realloc(b->dies, nc * sizeof *d);
        if (!d)
            return -1;
        b->dies = d;
        b->dies_cap = nc;
    }
    b->dies[b->ndies++] = (lp_die_range){lo, hi, *die, *cudie, *linecu};
    return 0;
}

/* DWARFDie::getName(LinkageName): linkage name, else DW_AT_name, following
 * DW_AT_abstract_origin / DW_AT_specification. */
const char *lp_bin_die_name(Dwarf_Die *die)
{
    static const int attrs[] = {DW_AT_MIPS_linkage_name, DW_AT_linkage_name,
                                DW_AT_name};
    for (size_t i = 0; i < 3; i++) {
        Dwarf_Attribute a;
        if (dwarf_attr_integrate(die, attrs[i], &a)) {
            const char *s = dwarf_formstring(&a);
            if (s)
                return s;
        }
    }
    return NULL;
}

/* dwarf_ranges, with the package's units' range lists read by dwp.c. */
ptrdiff_t lp_bin_ranges(lp_binary *b, Dwarf_Die *die, ptrdiff_t off,
                        Dwarf_Addr *basep, Dwarf_Addr *lo, Dwarf_Addr *hi)
{
    if (b->dwp) {
        ptrdiff_t r = lp_dwp_ranges(b->dwp, die, off, basep, lo, hi);
        if (r != LP_DWP_NOT_MINE)
            return r;
    }
    return dwarf_ranges(die, off, basep, lo, hi);
}

static int subprogram(lp_binary *b, Dwarf_Die *die, Dwarf_Die *cudie,
                      Dwarf_Die *linecu)
{
    const char *name = lp_bin_die_name(die);
    if (!name)
        return 0;
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    lp_func_entry *f = NULL;
    while ((off = lp_bin_ranges(b, die, off, &base, &lo, &hi)) > 0) {
        if (!f && !(f = lp_bin_get_func(b, name)))
            return -1;
        if (hi <= lo || lo < b->preferred_base)
            continue;
        if (lp_bin_add_range(b, f, lo, hi) || add_die_range(b, die, cudie, linecu, lo, hi))
            return -1;
    }
    return 0;
}

typedef struct unit_walk {
    lp_binary *b;
    Dwarf_Die *cudie, *linecu;
} unit_walk;

static int visit(Dwarf_Die *die, void *arg)
{
    unit_walk *uw = arg;
    if (dwarf_tag(die) != DW_TAG_subprogram)
        return 0;
    return subprogram(uw->b, die, uw->cudie, uw->linecu) != 0 ? -1 : 0;
}

/* Every subprogram under `cudie`, in llvm's CU.dies() order (dies.c). */
static int walk(lp_binary *b, Dwarf_Die *cudie, Dwarf_Die *linecu)
{
    unit_walk uw = {b, cudie, linecu};
    return lp_bin_walk_dies(cudie, visit, &uw);
}

/* The data of a section of the DWARF file, or NULL. */
static const uint8_t *dbg_section(lp_binary *b, const char *name, size_t *size)
{
    size_t shstrndx;
    *size = 0;
    if (elf_getshdrstrndx(b->dbg_elf, &shstrndx) != 0)
        return NULL;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(b->dbg_elf, s));) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS ||
            !(nm = elf_strptr(b->dbg_elf, shstrndx, sh.sh_name)) ||
            strcmp(nm, name) != 0)
            continue;
        Elf_Data *d = lp_bin_scn_data(s, &sh);
        if (!d)
            return NULL;
        *size = d->d_size;
        return d->d_buf;
    }
    return NULL;
}

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

/* The split unit of a skeleton from the package: 1 found, 0 not, -1. */
static int dwp_split(lp_binary *b, Dwarf_CU *cu, Dwarf_Die *cudie,
                     Dwarf_Die *split, lp_error *err)
{
    lp_dwp_skel sk = {0};
    size_t asz = b->debug_addr_size, rsz = b->debug_ranges_size;
    const uint8_t *addr = b->debug_addr, *rng = b->debug_ranges;
    Dwarf_Addr low = 0;
    if (dwarf_cu_info(cu, NULL, NULL, NULL, NULL, &sk.dwo_id, NULL,
                      NULL) != 0)
        return 0;
    if (dwarf_lowpc(cudie, &low) == 0)
        sk.low_pc = low;
    if (addr) {
        uint64_t o = skel_base(cudie, DW_AT_addr_base, DW_AT_GNU_addr_base,
                               asz);
        sk.addr = addr + o;
        sk.addr_size = asz - o;
    }
    if (rng) {
        uint64_t o = skel_base(cudie, DW_AT_GNU_ranges_base,
                               DW_AT_GNU_ranges_base, rsz);
        sk.ranges = rng + o;
        sk.ranges_size = rsz - o;
    }
    return lp_dwp_unit(b->dwp, &sk, split, err);
}

/* Pass 0: every unit's own DIEs (skeletons included); pass 1: the split
 * unit of every skeleton, from the package if one is open (as llvm's
 * DWARFContext, which then never looks at .dwo files), else from the .dwo
 * file libdw finds. */
static int load_units(lp_binary *b, lp_error *err)
{
    size_t missing = 0;
    for (int pass = 0; pass < 2; pass++) {
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie, subdie;
        uint8_t ut;
        Dwarf_Half ver;
        while (dwarf_get_units(b->dw, cu, &cu, &ver, &ut, &cudie,
                               pass && !b->dwp ? &subdie : NULL) == 0) {
            int r = 0;
            if (ut != DW_UT_compile && ut != DW_UT_skeleton)
                continue;
            if (pass == 0) {
                r = walk(b, &cudie, &cudie);
            } else if (ut == DW_UT_skeleton) {
                int got = b->dwp ? dwp_split(b, cu, &cudie, &subdie, err)
                                 : dwarf_tag(&subdie) == DW_TAG_compile_unit;
                if (got < 0)
                    return -1;
                if (got)
                    r = walk(b, &subdie, &cudie);
                else
                    missing++;
            }
            if (r != 0)
                return lp_error_set(err, LP_ENOMEM, "%s: out of memory while "
                                    "reading DWARF", b->dbg_path);
        }
    }
    b->ndwo_missing = missing;
    if (missing)
        lp_bin_warn(b, "DWO debug information was not loaded for %zu "
                    "modules. Please check the .o, .dwo or .dwp path.",
                    missing);
    return 0;
}

static int map_cmp(const void *pa, const void *pb)
{
    const lp_func_range *a = *(lp_func_range *const *)pa;
    const lp_func_range *c = *(lp_func_range *const *)pb;
    if (a->start != c->start)
        return a->start < c->start ? -1 : 1;
    return a < c ? -1 : a > c; /* load order: the first one wins */
}

static int die_cmp(const void *pa, const void *pb)
{
    const lp_die_range *a = pa, *c = pb;
    if (a->start != c->start)
        return a->start < c->start ? -1 : 1;
    return a < c ? -1 : a > c;
}

/* Freeze the function table: per-function range lists and the map. */
static int build_map(lp_binary *b, bool warn)
{
    b->map = calloc(b->nranges ? b->nranges : 1, sizeof *b->map);
    if (!b->map)
        return -1;
    for (size_t i = 0; i < b->nranges; i++)
        b->map[i] = &b->ranges[i];
    qsort(b->map, b->nranges, sizeof *b->map, map_cmp);
    size_t n = 0;
    for (size_t i = 0; i < b->nranges; i++) {
        if (n && b->map[n - 1]->start == b->map[i]->start) {
            b->ndup_starts += (i == n); /* first duplicate of this start */
            continue;
        }
        b->map[n++] = b->map[i];
    }
    b->nmap = n;
    if (!(b->map_start = malloc((n ? n : 1) * sizeof *b->map_start)))
        return -1;
    for (size_t i = 0; i < n; i++)
        b->map_start[i] = b->map[i]->start;
    lp_func_entry *f, *tmp;
    HASH_ITER(hh, b->funcs_by_name, f, tmp) {
        f->rv = calloc(f->fn.nranges ? f->fn.nranges : 1, sizeof *f->rv);
        if (!f->rv)
            return -1;
        for (size_t i = 0; i < f->fn.nranges; i++)
            f->rv[i] = &b->ranges[f->ridx[i]];
        f->fn.ranges = f->rv;
    }
    if (b->ndies)
        qsort(b->dies, b->ndies, sizeof *b->dies, die_cmp);
    if (warn && b->ndup_starts)
        lp_bin_warn(b, "Found %zu start addresses with multiple symbols",
                    b->ndup_starts);
    return 0;
}

/* Whether the file at path starts with the ELF magic. */
static bool is_elf_file(const char *path)
{
    unsigned char m[SELFMAG];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && read(fd, m, SELFMAG) == SELFMAG && memcmp(m, ELFMAG, SELFMAG) == 0;

    if (fd >= 0)
        close(fd);
    return ok;
}

/* The package, if any: --dwp must be one; <debug file>.dwp is used when
 * it is one (llvm falls back to .dwo files when it cannot open it as an
 * object file; a package with a bad index is an error either way). */
static int open_dwp(lp_binary *b, lp_error *err)
{
    struct stat st;
    if (!b->dwp_path || (!b->dwp_given && (stat(b->dwp_path, &st) != 0 ||
                                           !S_ISREG(st.st_mode) ||
                                           !is_elf_file(b->dwp_path))))
        return 0; /* an implicit <debug file>.dwp that is no ELF: silently, as llvm */
    lp_error e = {0};
    if (lp_dwp_open(b->dwp_path, &b->dwp, &e) == 0)
        return 0;
    if (err)
        *err = e;
    return -1;
}

int lp_bin_load_dwarf(lp_binary *b, lp_error *err)
{
    b->dw = dwarf_begin_elf(b->dbg_elf, DWARF_C_READ, NULL);
    if (b->dw) {
        Dwarf_CU *cu = NULL;
        if (dwarf_get_units(b->dw, NULL, &cu, NULL, NULL, NULL, NULL) != 0) {
            dwarf_end(b->dw);
            b->dw = NULL;
        }
    }
    if (b->dw && open_dwp(b, err) != 0)
        return -1;
    if (b->dwp) {
        b->debug_addr = dbg_section(b, ".debug_addr", &b->debug_addr_size);
        b->debug_ranges = dbg_section(b, ".debug_ranges",
                                      &b->debug_ranges_size);
    }
    if (b->dw && load_units(b, err) != 0)
        return -1;
    if (b->dw)
        b->debug_line = dbg_section(b, ".debug_line", &b->debug_line_size);
    /* llvm-profgen's words, also without any DWARF; the reason is given by
     * lp_binary_check_symbolizable */
    if (b->nranges == 0)
        lp_bin_warn(b, "Loading of DWARF info completed, but no binary "
                    "functions have been retrieved.");
    if (build_map(b, true) != 0)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

int lp_bin_functions_from_symtab(lp_binary *b, lp_error *err)
{
    for (size_t i = 0; i < b->nfsyms; i++) {
        const lp_sym *s = &b->fsyms[i];
        if (s->addr < b->preferred_base)
            continue;
        lp_func_entry *f = lp_bin_get_func(b, s->name);
        if (!f || lp_bin_add_range(b, f, s->addr, s->addr + s->size))
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        f->fn.from_symtab = true;
    }
    return lp_bin_rebuild_map(b, b->nmap == 0, err);
}

int lp_bin_rebuild_map(lp_binary *b, bool warn, lp_error *err)
{
    free(b->map);
    b->map = NULL;
    free(b->map_start);
    b->map_start = NULL;
    lp_func_entry *f, *tmp;
    HASH_ITER(hh, b->funcs_by_name, f, tmp) {
        free(f->rv);
        f->rv = NULL;
    }
    b->ndup_starts = 0;
    if (build_map(b, warn) != 0)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

void lp_bin_free_dwarf(lp_binary *b)
{
    lp_func_entry *f, *tmp;
    HASH_ITER(hh, b->funcs_by_name, f, tmp) {
        HASH_DEL(b->funcs_by_name, f);
        free(f->ridx);
        free(f->rv);
        free(f->canon);
        free(f);
    }
    lp_bin_free_symbolizer(b);
    free(b->funcs);
    free(b->ranges);
    free(b->map);
    free(b->map_start);
    free(b->dies);
    lp_dwp_close(b->dwp);
    b->dwp = NULL;
    if (b->dw)
        dwarf_end(b->dw);
    b->dw = NULL;
}

/* ---- lookups ------------------------------------------------------------- */

/* Index of the last map entry with start <= addr, or -1. */
static ptrdiff_t map_floor(const lp_binary *b, uint64_t addr)
{
    size_t lo = 0, hi = b->nmap;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->map_start[mid] <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (ptrdiff_t)lo - 1;
}

const lp_func_range *lp_binary_func_range(const lp_binary *b, uint64_t addr)
{
    ptrdiff_t i = map_floor(b, addr);
    if (i < 0 || addr >= b->map[i]->end)
        return NULL;
    return b->map[i];
}

const char *lp_binary_callee_name(const lp_binary *b, uint64_t addr)
{
    const lp_func_range *r = lp_binary_func_range(b, addr);
    if (!r || r->start != addr || !r->is_entry)
        return NULL;
    return ((const lp_func_entry *)(const void *)r->func)->canon;
}

size_t lp_binary_functions(const lp_binary *b,
                           const lp_function *const **funcs)
{
    if (funcs)
        *funcs = b->funcs;
    return b->nfuncs;
}

const lp_function *lp_binary_function(const lp_binary *b, const char *name)
{
    lp_func_entry *f;
    HASH_FIND_STR(b->funcs_by_name, name, f);
    return f ? &f->fn : NULL;
}

/* setIsFuncEntry for every symbol of the disassembled text sections. */
void lp_bin_mark_entries(lp_binary *b)
{
    size_t ri = 0;
    for (size_t i = 0; i < b->nsyms; i++) {
        const lp_sym *s = &b->syms[i];
        while (ri < b->nregions && b->regions[ri].start < s->addr)
            ri++;
        if (ri == b->nregions || b->regions[ri].start != s->addr)
            continue; /* not in a disassembled text section */
        ptrdiff_t k = map_floor(b, s->addr);
        if (k < 0 || s->addr >= b->map[k]->end)
            continue;
        lp_func_range *r = b->map[k];
        size_t cl = lp_canonical_fn_len(s->name);
        if (r->func->nranges == 1 ||
            (!r->is_entry && strlen(r->func->name) == cl &&
             strncmp(r->func->name, s->name, cl) == 0))
            r->is_entry = true;
    }
    /* warnNoFuncEntry: functions with ranges, none of them an entry */
    size_t noentry = 0;
    for (size_t i = 0; i < b->nfuncs; i++) {
        const lp_function *f = b->funcs[i];
        bool any = false;
        for (size_t j = 0; j < f->nranges; j++) {
            const lp_func_range *r = lp_binary_func_range(b,
                                                          f->ranges[j]->start);
            any |= r && r->start == f->ranges[j]->start && r->is_entry;
        }
        noentry += f->nranges && !any;
    }
    if (noentry)
        lp_bin_warn(b, "%.2f%%(%zu/%zu) of functions failed to determine "
                    "function entry due to inconsistent name from symbol "
                    "table and dwarf info.",
                    100.0 * (double)noentry / (double)b->nfuncs, noentry,
                    b->nfuncs);
}

int lp_binary_check_symbolizable(const lp_binary *b, lp_error *err)
{
    if (b->ndies > 0)
        return 0;
    if (b->ndwo_missing)
        return lp_error_set(err, LP_EFORMAT, "%s: split DWARF: %zu unit(s) "
                            "found neither in %s nor as .dwo files (a "
                            "-gsplit-dwarf=single layout is not read); "
                            "cannot symbolize", b->dbg_path, b->ndwo_missing,
                            b->dwp ? lp_dwp_path(b->dwp)
                                   : "a .dwp (--dwp, default <binary>.dwp)");
    if (b->dw)
        return lp_error_set(err, LP_EFORMAT, "%s: DWARF has no functions "
                            "with code; cannot symbolize", b->dbg_path);
    if (b->nsyms == 0)
        return lp_error_set(err, LP_EFORMAT, "%s: stripped binary (no symbol"
                            " table, no DWARF); rebuild with -g or pass the "
                            "unstripped file with --debug-binary",
                            b->dbg_path);
    return lp_error_set(err, LP_EFORMAT, "%s: no DWARF debug information; "
                        "rebuild with -g or pass the debug file with "
                        "--debug-binary", b->dbg_path);
}
