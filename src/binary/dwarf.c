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

/* dwarf_ranges, with the range lists of split units read by dwp.c. */
ptrdiff_t lp_bin_ranges(lp_binary *b, Dwarf_Die *die, ptrdiff_t off,
                        Dwarf_Addr *basep, Dwarf_Addr *lo, Dwarf_Addr *hi)
{
    if (b->units)
        return lp_dwunits_ranges(b->units, die, off, basep, lo, hi);
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

/* A unit of the walk (split.c): its subprograms, lines from `skel`. */
static int unit_fn(void *ctx, Dwarf_Die *die, Dwarf_Die *skel)
{
    return walk(ctx, die, skel) != 0; /* out of memory: positive */
}

/* Every unit, split units included, in llvm's order (split.c). */
static int load_units(lp_binary *b, lp_error *err)
{
    int r = lp_dwunits_walk(b->units, unit_fn, b, err);

    if (r > 0) /* walk: out of memory */
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory while "
                            "reading DWARF", b->dbg_path);
    if (r < 0)
        return -1;
    b->ndwo_missing = lp_dwunits_missing(b->units);
    if (b->ndwo_missing)
        lp_bin_warn(b, "DWO debug information was not loaded for %zu "
                    "modules. Please check the .o, .dwo or .dwp path.",
                    b->ndwo_missing);
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
    if (b->dw && !(b->units = lp_dwunits_open(b->dw, b->dbg_elf, b->dbg_path,
                                              b->dwp_given ? b->dwp_path : NULL, err)))
        return -1;
    if (b->dw && load_units(b, err) != 0)
        return -1;
    if (b->dw)
        b->debug_line = lp_bin_section(b->dbg_elf, ".debug_line", &b->debug_line_size);
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
    lp_dwunits_close(b->units);
    b->units = NULL;
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
                            "found neither in %s nor in the .dwo or .o files "
                            "their DW_AT_dwo_name names; cannot symbolize",
                            b->dbg_path, b->ndwo_missing,
                            lp_dwunits_package(b->units)
                                ? lp_dwunits_package(b->units)
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
