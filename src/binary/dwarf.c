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
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"

/* ---- function table ------------------------------------------------------ */

static lp_func_entry *get_func(lp_binary *b, const char *name)
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

static int add_range(lp_binary *b, lp_func_entry *f, uint64_t lo, uint64_t hi)
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

static int subprogram(lp_binary *b, Dwarf_Die *die, Dwarf_Die *cudie,
                      Dwarf_Die *linecu)
{
    const char *name = lp_bin_die_name(die);
    if (!name)
        return 0;
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    lp_func_entry *f = NULL;
    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (!f && !(f = get_func(b, name)))
            return -1;
        if (hi <= lo || lo < b->preferred_base)
            continue;
        if (add_range(b, f, lo, hi) || add_die_range(b, die, cudie, linecu, lo, hi))
            return -1;
    }
    return 0;
}

/* Pre-order walk of every DIE under `die` (llvm's CU.dies() order). */
static int walk(lp_binary *b, Dwarf_Die *die, Dwarf_Die *cudie,
                Dwarf_Die *linecu, int depth)
{
    Dwarf_Die child;
    if (depth > 256 || dwarf_child(die, &child) != 0)
        return 0;
    do {
        if (dwarf_tag(&child) == DW_TAG_subprogram &&
            subprogram(b, &child, cudie, linecu) != 0)
            return -1;
        if (dwarf_haschildren(&child) &&
            walk(b, &child, cudie, linecu, depth + 1))
            return -1;
    } while (dwarf_siblingof(&child, &child) == 0);
    return 0;
}

static int load_units(lp_binary *b, lp_error *err)
{
    size_t missing = 0;
    for (int pass = 0; pass < 2; pass++) {
        Dwarf_CU *cu = NULL;
        Dwarf_Die cudie, subdie;
        uint8_t ut;
        Dwarf_Half ver;
        while (dwarf_get_units(b->dw, cu, &cu, &ver, &ut, &cudie, &subdie) == 0) {
            int r = 0;
            if (ut != DW_UT_compile && ut != DW_UT_skeleton)
                continue;
            if (pass == 0) {
                r = walk(b, &cudie, &cudie, &cudie, 0);
            } else if (ut == DW_UT_skeleton) {
                if (dwarf_tag(&subdie) == DW_TAG_compile_unit)
                    r = walk(b, &subdie, &subdie, &cudie, 0);
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
static int build_map(lp_binary *b)
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
    if (b->ndup_starts)
        lp_bin_warn(b, "Found %zu start addresses with multiple symbols",
                    b->ndup_starts);
    return 0;
}

static void find_debug_line(lp_binary *b)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(b->dbg_elf, &shstrndx) != 0)
        return;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(b->dbg_elf, s));) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS ||
            !(nm = elf_strptr(b->dbg_elf, shstrndx, sh.sh_name)) ||
            strcmp(nm, ".debug_line") != 0)
            continue;
        if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(s, 0, 0) < 0)
            return;
        Elf_Data *d = elf_getdata(s, NULL);
        if (d && d->d_buf) {
            b->debug_line = d->d_buf;
            b->debug_line_size = d->d_size;
        }
        return;
    }
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
    if (b->dw && load_units(b, err) != 0)
        return -1;
    if (b->dw)
        find_debug_line(b);
    /* llvm-profgen's words, also without any DWARF; the reason is given by
     * lp_binary_check_symbolizable */
    if (b->nranges == 0)
        lp_bin_warn(b, "Loading of DWARF info completed, but no binary "
                    "functions have been retrieved.");
    if (build_map(b) != 0)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

int lp_bin_functions_from_symtab(lp_binary *b, lp_error *err)
{
    for (size_t i = 0; i < b->nfsyms; i++) {
        const lp_sym *s = &b->fsyms[i];
        if (s->addr < b->preferred_base)
            continue;
        lp_func_entry *f = get_func(b, s->name);
        if (!f || add_range(b, f, s->addr, s->addr + s->size))
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        f->fn.from_symtab = true;
    }
    free(b->map);
    b->map = NULL;
    lp_func_entry *f, *tmp;
    HASH_ITER(hh, b->funcs_by_name, f, tmp) {
        free(f->rv);
        f->rv = NULL;
    }
    b->ndup_starts = 0;
    if (build_map(b) != 0)
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
    free(b->dies);
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
        if (b->map[mid]->start <= addr)
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
        return lp_error_set(err, LP_EFORMAT, "%s: split DWARF: %zu .dwo "
                            "file(s) not found (or a .dwp/single-file split "
                            "layout, which is not read); cannot symbolize",
                            b->dbg_path, b->ndwo_missing);
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
