/*
 * dwarf.c - DWARF side of the binary loader, with libdw: the function table
 * (llvm-profgen's BinaryFunctions and StartAddrToFuncRangeMap, loaded up
 * front from every DW_TAG_subprogram, split-DWARF units included), function
 * entries, the symbol-table fallback, and lazy cached inline-stack
 * symbolization. Does not disassemble.
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
static const char *die_name(Dwarf_Die *die)
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
    const char *name = die_name(die);
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
    if (!b->dw)
        lp_bin_warn(b, "%s: no DWARF debug information: addresses cannot "
                    "be symbolized", b->dbg_path);
    else if (load_units(b, err) != 0)
        return -1;
    if (b->dw)
        find_debug_line(b);
    if (b->dw && b->nranges == 0)
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
    lp_sym_cache *c, *ctmp;
    HASH_ITER(hh, b->cache, c, ctmp) {
        HASH_DEL(b->cache, c);
        free(c->frames);
        free(c);
    }
    lp_line_cache *lc, *ltmp;
    HASH_ITER(hh, b->lines, lc, ltmp) {
        HASH_DEL(b->lines, lc);
        lp_line_table_free(&lc->t);
        free(lc);
    }
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
    size_t noentry = 0;
    for (size_t i = 0; i < b->nfuncs; i++) {
        bool any = false;
        for (size_t j = 0; j < b->funcs[i]->nranges; j++)
            any |= b->funcs[i]->ranges[j]->is_entry;
        noentry += !any;
    }
    if (noentry && b->nfuncs)
        lp_bin_warn(b, "%.2f%% of functions failed to determine function "
                    "entry due to inconsistent name from symbol table and "
                    "dwarf info.", 100.0 * (double)noentry / (double)b->nfuncs);
}

/* ---- symbolization ------------------------------------------------------- */

static const lp_die_range *die_for(const lp_binary *b, uint64_t addr)
{
    size_t lo = 0, hi = b->ndies;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->dies[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    /* Ranges of distinct subprograms do not nest in practice; look back a
     * little for a range that still covers addr. */
    for (size_t k = lo, tries = 0; k-- > 0 && tries < 8; tries++)
        if (addr < b->dies[k].end)
            return &b->dies[k];
    return NULL;
}

#define MAX_CHAIN 128

/* Deepest inlined_subroutine chain under `die` containing addr, appended to
 * chain[*n] (outermost first). Lexical blocks are entered, not recorded. */
static void descend(Dwarf_Die *die, uint64_t addr, Dwarf_Die *chain, size_t *n,
                    int depth)
{
    Dwarf_Die c;
    if (depth > 256 || *n >= MAX_CHAIN || dwarf_child(die, &c) != 0)
        return;
    do {
        int tag = dwarf_tag(&c);
        if (tag == DW_TAG_inlined_subroutine) {
            if (dwarf_haspc(&c, addr) == 1) {
                chain[(*n)++] = c;
                descend(&chain[*n - 1], addr, chain, n, depth + 1);
                return;
            }
        } else if (tag != DW_TAG_subprogram && dwarf_haschildren(&c)) {
            Dwarf_Addr lo;
            int has = dwarf_haspc(&c, addr);
            bool ranged = dwarf_lowpc(&c, &lo) == 0 ||
                          dwarf_hasattr(&c, DW_AT_ranges);
            if (has == 1 || !ranged) {
                size_t before = *n;
                descend(&c, addr, chain, n, depth + 1);
                if (*n > before || has == 1)
                    return;
            }
        }
    } while (dwarf_siblingof(&c, &c) == 0);
}

static uint32_t udata(Dwarf_Die *die, int at)
{
    Dwarf_Attribute a;
    Dwarf_Word w = 0;
    if (dwarf_attr(die, at, &a) && dwarf_formudata(&a, &w) == 0)
        return (uint32_t)w;
    return 0;
}

static const char *file_name(Dwarf_Die *cudie, uint32_t idx)
{
    Dwarf_Files *files;
    size_t nf;
    if (dwarf_getsrcfiles(cudie, &files, &nf) != 0 || idx >= nf)
        return "";
    const char *s = dwarf_filesrc(files, idx, NULL, NULL);
    return s ? s : "";
}

/* The line table of a CU (parsed once); NULL if it has none. */
static const lp_line_table *cu_lines(lp_binary *b, Dwarf_Die *linecu)
{
    Dwarf_Attribute a;
    Dwarf_Word off;
    if (!b->debug_line || !dwarf_attr(linecu, DW_AT_stmt_list, &a) ||
        dwarf_formudata(&a, &off) != 0)
        return NULL;
    lp_line_cache *c;
    HASH_FIND(hh, b->lines, &off, sizeof off, c);
    if (!c) {
        if (!(c = calloc(1, sizeof *c)))
            return NULL;
        c->off = off;
        c->ok = lp_line_table_parse(b->debug_line, b->debug_line_size, off,
                                    &c->t) == 0;
        if (!c->ok)
            lp_line_table_free(&c->t);
        HASH_ADD(hh, b->lines, off, sizeof c->off, c);
    }
    return c->ok ? &c->t : NULL;
}

static size_t make_frames(lp_binary *b, const lp_die_range *dr, uint64_t addr,
                          Dwarf_Die *chain, size_t n, lp_frame *out)
{
    Dwarf_Die cudie = dr->linecu;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        lp_frame *f = &out[k];
        f->func = die_name(&chain[i]);
        if (!f->func || !*f->func)
            break; /* llvm-profgen stops at an empty/invalid name */
        int dl = 0;
        f->start_line = dwarf_decl_line(&chain[i], &dl) == 0 ? (uint32_t)dl : 0;
        if (i + 1 < n) {
            f->line = udata(&chain[i + 1], DW_AT_call_line);
            f->column = udata(&chain[i + 1], DW_AT_call_column);
            f->discriminator = udata(&chain[i + 1], DW_AT_GNU_discriminator);
            f->file = file_name(&cudie, udata(&chain[i + 1], DW_AT_call_file));
        } else {
            Dwarf_Die lcu = dr->linecu;
            const lp_line_table *t = cu_lines(b, &lcu);
            const lp_line_row *row = t ? lp_line_table_lookup(t, addr) : NULL;
            if (row) {
                f->line = row->line;
                f->column = row->col;
                f->discriminator = row->disc;
                f->file = file_name(&cudie, row->file);
            }
        }
        if (!f->file)
            f->file = "";
        f->line_offset = (f->line - f->start_line) & 0xffff;
        k++;
    }
    return k;
}

int lp_binary_symbolize(lp_binary *b, uint64_t addr, const lp_frame **frames,
                        size_t *n, lp_error *err)
{
    lp_sym_cache *c;
    HASH_FIND(hh, b->cache, &addr, sizeof addr, c);
    if (!c) {
        const lp_die_range *dr = die_for(b, addr);
        Dwarf_Die chain[MAX_CHAIN];
        size_t nc = 0;
        if (dr) {
            chain[nc++] = dr->die;
            descend(&chain[0], addr, chain, &nc, 0);
        }
        c = calloc(1, sizeof *c);
        if (!c || !(c->frames = calloc(nc ? nc : 1, sizeof *c->frames))) {
            free(c);
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        }
        c->addr = addr;
        c->n = dr ? make_frames(b, dr, addr, chain, nc, c->frames) : 0;
        HASH_ADD(hh, b->cache, addr, sizeof c->addr, c);
    }
    *frames = c->frames;
    *n = c->n;
    return 0;
}
