/*
 * symtabfn.c - llvm-profgen 22's loadSymbolsFromSymtab
 * (--load-function-from-symbol, on by default for pseudo-probe binaries):
 * functions DWARF does not describe (a unit built without -g, a lost
 * .debug_str) recovered from the ELF symbol table, after the DWARF ones.
 *
 * Every STT_FUNC symbol of .symtab with a size, in table order: when no
 * function range holds its start (findFuncRange: the range with the
 * greatest start <= it, if it ends after it; ranges recovered from
 * earlier symbols included), its [start, start + size) becomes a range of
 * the function named by its canonical name, created if DWARF has none of
 * that name, and that function is marked from_symtab (NameStatus
 * Missing). Otherwise a name other than the covering function's marks
 * that function (symtab_mismatch: NameStatus Mismatch) and is worth a
 * detailed warning, and a range that differs from the covering one at
 * both ends a warning. (llvm-profgen also keeps the GUID of such a name
 * as the function's alternative; nothing here uses it.) Owns this pass only: the function table is
 * dwarf.c's.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"

/* loadSymbolsFromSymtab's suffixes, in its order. */
static const char *const symtab_suffixes[] = {
    ".cleanup", ".destroy", ".resume",      /* CoroSplit */
    ".cold", ".warm",                       /* BOLT */
    ".llvm.", ".part.", ".isra.", ".constprop.", ".lto_priv.",
};

/* The ranges known so far, for the floor lookup: the map's, sorted, and
 * the ones recovered since, appended unsorted to a small buffer that is
 * merged in when full (lookups then cost a binary search and a scan of
 * at most PEND entries). */
#define PEND 64

typedef struct span {
    uint64_t start, end;
    const lp_function *func;
} span;

typedef struct spans {
    span *v;
    size_t n, cap;
    span pend[PEND];
    size_t npend;
} spans;

static int span_cmp(const void *x, const void *y)
{
    const span *a = x, *b = y;

    return a->start < b->start ? -1 : a->start > b->start;
}

/* The span with the greatest start <= addr, or NULL. */
static const span *floor_span(const spans *s, uint64_t addr)
{
    size_t lo = 0, hi = s->n, i;
    const span *best = NULL;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->v[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo)
        best = &s->v[lo - 1];
    for (i = 0; i < s->npend; i++)
        if (s->pend[i].start <= addr && (!best || s->pend[i].start > best->start))
            best = &s->pend[i];
    return best;
}

/* Merge the pending spans into the sorted ones. */
static int flush(spans *s)
{
    size_t i, j, k;

    if (s->n + s->npend > s->cap) {
        size_t nc = (s->n + s->npend) * 2;
        span *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        s->v = nv;
        s->cap = nc;
    }
    qsort(s->pend, s->npend, sizeof *s->pend, span_cmp);
    i = s->n, j = s->npend, k = s->n + s->npend;
    while (j > 0) {         /* from the back: no start is in both */
        if (i > 0 && s->v[i - 1].start > s->pend[j - 1].start)
            s->v[--k] = s->v[--i];
        else
            s->v[--k] = s->pend[--j];
    }
    s->n += s->npend;
    s->npend = 0;
    return 0;
}

static int add_span(spans *s, span x)
{
    if (s->npend == PEND && flush(s))
        return -1;
    s->pend[s->npend++] = x;
    return 0;
}

static int spans_init(spans *s, const lp_binary *b)
{
    memset(s, 0, sizeof *s);
    s->cap = b->nmap + PEND;
    if (!(s->v = malloc(s->cap * sizeof *s->v)))
        return -1;
    for (size_t i = 0; i < b->nmap; i++)
        s->v[i] = (span){b->map[i]->start, b->map[i]->end, b->map[i]->func};
    s->n = b->nmap;
    return 0;
}

/* The .symtab functions with a size, in table order. */
static int sym_idx_cmp(const void *x, const void *y)
{
    const lp_sym *a = *(lp_sym *const *)x, *b = *(lp_sym *const *)y;

    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* One symbol: recovered (1), covered (0), -1 no memory. */
static int one_symbol(lp_binary *b, spans *s, const lp_sym *sym, bool detailed)
{
    uint64_t end = sym->addr + sym->size;
    size_t cl = lp_canonical_fn_len_with(sym->name, symtab_suffixes,
                                         sizeof symtab_suffixes /
                                             sizeof *symtab_suffixes);
    const span *r = floor_span(s, sym->addr);
    char *name;
    lp_func_entry *f;

    if (r && sym->addr < r->end) {
        if (strlen(r->func->name) != cl || strncmp(r->func->name, sym->name, cl)) {
            ((lp_func_entry *)(void *)(uintptr_t)r->func)->fn.symtab_mismatch = true;
            if (detailed)
                lp_bin_warn(b, "Conflicting name for symbol %s with range "
                            "(%8" PRIx64 ", %8" PRIx64 "), but the DWARF symbol"
                            " %s indicates an overlapping range (%8" PRIx64
                            ", %8" PRIx64 ")", sym->name, sym->addr, end,
                            r->func->name, r->start, r->end);
        } else if (sym->addr != r->start && end != r->end) {
            lp_bin_warn(b, "Conflicting range for symbol %s with range (%8"
                        PRIx64 ", %8" PRIx64 "), but the DWARF symbol %s "
                        "indicates another range (%8" PRIx64 ", %8" PRIx64 ")",
                        sym->name, sym->addr, end, r->func->name, r->start,
                        r->end);
        }
        return 0;
    }
    if (!(name = strndup(sym->name, cl)))
        return -1;
    f = lp_bin_get_func(b, name);
    free(name);
    if (!f || lp_bin_add_range(b, f, sym->addr, end))
        return -1;
    f->fn.from_symtab = true;
    return add_span(s, (span){sym->addr, end, &f->fn}) ? -1 : 1;
}

int lp_bin_functions_from_symtab22(lp_binary *b, bool detailed, lp_error *err)
{
    const lp_sym **v;
    size_t n = 0, i;
    spans s;
    int rc = 0, added = 0, r;

    if (!b->code_symtab || !b->nfsyms)  /* llvm: the binary's .symtab */
        return 0;
    if (!(v = malloc(b->nfsyms * sizeof *v)) || spans_init(&s, b)) {
        free(v);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    for (i = 0; i < b->nfsyms; i++)
        if (b->fsyms[i].addr >= b->preferred_base)
            v[n++] = &b->fsyms[i];
    qsort(v, n, sizeof *v, sym_idx_cmp);
    for (i = 0; i < n && rc == 0; i++) {
        if ((r = one_symbol(b, &s, v[i], detailed)) < 0)
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
        added |= r > 0;
    }
    free(v);
    free(s.v);
    if (rc == 0 && added)
        rc = lp_bin_rebuild_map(b, false, err);
    return rc;
}
