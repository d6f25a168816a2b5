/*
 * symbolize.c - inline stacks per address (ProfiledBinary::symbolize):
 * finds the subprogram DIE of an address, builds that subprogram's inline
 * tree once (every DW_TAG_inlined_subroutine range with its name, decl line
 * and call site, flattened in DIE pre-order), takes the deepest inlinee
 * holding the address, and reads the leaf line from the CU's line table
 * (lines.c). Results are cached per address. Does not build the function
 * table (dwarf.c).
 */
#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"
#include "util/zalloc.h"

#ifndef DW_AT_GNU_discriminator
#define DW_AT_GNU_discriminator 0x2136
#endif

#define MAX_CHAIN (LP_BINARY_MAX_FRAMES - 1)

/* ---- per-subprogram inline trees ---------------------------------------- */

static uint32_t udata(Dwarf_Die *die, int at)
{
    Dwarf_Attribute a;
    Dwarf_Word w = 0;
    if (dwarf_attr(die, at, &a) && dwarf_formudata(&a, &w) == 0)
        return (uint32_t)w;
    return 0;
}

static uint32_t decl_line(Dwarf_Die *die)
{
    int dl = 0;
    return dwarf_decl_line(die, &dl) == 0 && dl > 0 ? (uint32_t)dl : 0;
}

static int add_node(lp_inl_tree *t, const lp_inl_node *n)
{
    if (t->n == t->cap) {
        size_t nc = t->cap * 2 + 16;
        lp_inl_node *v = realloc(t->nodes, nc * sizeof *v);
        if (!v)
            return -1;
        t->nodes = v;
        t->cap = nc;
    }
    t->nodes[t->n++] = *n;
    return 0;
}

/* Collect the inlined subroutines under die; lexical blocks and other
 * containers are entered without a node of their own. */
static int collect(lp_binary *b, lp_inl_tree *t, Dwarf_Die *die,
                   int32_t parent, uint32_t depth)
{
    Dwarf_Die c;
    if (depth > MAX_CHAIN || dwarf_child(die, &c) != 0)
        return 0;
    do {
        int tag = dwarf_tag(&c);
        if (tag == DW_TAG_subprogram)
            continue; /* nested out-of-line functions have their own tree */
        if (tag != DW_TAG_inlined_subroutine) {
            if (dwarf_haschildren(&c) && collect(b, t, &c, parent, depth))
                return -1;
            continue;
        }
        lp_inl_node n = {0, 0, parent, 0, 0, depth + 1, lp_bin_die_name(&c),
                         decl_line(&c), udata(&c, DW_AT_call_line),
                         udata(&c, DW_AT_call_column),
                         udata(&c, DW_AT_GNU_discriminator),
                         udata(&c, DW_AT_call_file)};
        int32_t first = (int32_t)t->n;
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = lp_bin_ranges(b, &c, off, &base, &lo, &hi)) > 0) {
            n.lo = lo;
            n.hi = hi;
            if (add_node(t, &n))
                return -1;
        }
        size_t kids = t->n;
        if (first < (int32_t)t->n && dwarf_haschildren(&c) &&
            collect(b, t, &c, first, depth + 1))
            return -1;
        for (size_t i = (size_t)first; i < kids; i++) {
            t->nodes[i].kids = (uint32_t)kids;
            t->nodes[i].skip = (uint32_t)t->n;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return 0;
}

static lp_inl_tree *tree_for(lp_binary *b, const lp_die_range *dr)
{
    const void *key = dr->die.addr;
    lp_inl_tree *t;
    HASH_FIND_PTR(b->trees, &key, t);
    if (t)
        return t;
    if (!(t = calloc(1, sizeof *t)))
        return NULL;
    Dwarf_Die die = dr->die;
    t->key = key;
    t->name = lp_bin_die_name(&die);
    t->decl_line = decl_line(&die);
    if (collect(b, t, &die, -1, 0) != 0) {
        free(t->nodes);
        free(t);
        return NULL;
    }
    HASH_ADD_PTR(b->trees, key, t);
    return t;
}

/* ---- lookups -------------------------------------------------------------- */

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

/* The tree's unit facts, once: line table and file names. */
static void tree_unit(lp_binary *b, lp_inl_tree *t, Dwarf_Die *linecu)
{
    if (t->cu_done)
        return;
    t->cu_done = true;
    t->lines = cu_lines(b, linecu);
    if (b->no_file_names || dwarf_getsrcfiles(linecu, &t->files, &t->nfiles) != 0) {
        t->files = NULL;
        t->nfiles = 0;
    }
}

static const char *file_name(const lp_inl_tree *t, uint32_t idx)
{
    const char *s = t->files && idx < t->nfiles
                        ? dwarf_filesrc(t->files, idx, NULL, NULL)
                        : NULL;
    return s ? s : "";
}

/* Deepest node containing addr, or -1: at each level the first sibling
 * range holding addr, then down into its subtree (pre-order layout: a
 * DIE's range nodes, then its descendants, then its next sibling). */
static int32_t deepest(const lp_inl_tree *t, uint64_t addr)
{
    int32_t best = -1;
    size_t i = 0, end = t->n;
    while (i < end) {
        const lp_inl_node *nd = &t->nodes[i];
        if (addr >= nd->lo && addr < nd->hi) {
            best = (int32_t)i;
            end = nd->skip;
            i = nd->kids;
        } else {
            i = i + 1 < nd->kids ? i + 1 : nd->skip;
        }
    }
    return best;
}

/* Frames outermost first; cut at the first frame without a name. */
static size_t make_frames(lp_binary *b, const lp_die_range *dr,
                          lp_inl_tree *t, uint64_t addr, lp_frame *out)
{
    int32_t chain[MAX_CHAIN];
    size_t n = 0;
    for (int32_t i = deepest(t, addr); i >= 0 && n < MAX_CHAIN;
         i = t->nodes[i].parent)
        chain[n++] = i;
    Dwarf_Die lcu = dr->linecu;
    size_t k = 0;
    tree_unit(b, t, &lcu);
    for (size_t d = 0; d <= n; d++) { /* d = 0: the subprogram itself */
        const lp_inl_node *self = d ? &t->nodes[chain[n - d]] : NULL;
        const lp_inl_node *inner = d < n ? &t->nodes[chain[n - d - 1]] : NULL;
        lp_frame *f = &out[k];
        f->func = self ? self->name : t->name;
        if (!f->func || !*f->func)
            break; /* llvm-profgen stops at an empty/invalid name */
        f->start_line = self ? self->decl_line : t->decl_line;
        if (inner) {
            f->line = inner->call_line;
            f->column = inner->call_col;
            f->discriminator = inner->call_disc;
            f->file = file_name(t, inner->call_file);
        } else {
            const lp_line_row *row =
                t->lines ? lp_line_table_lookup(t->lines, addr) : NULL;
            f->file = "";
            if (row) {
                f->line = row->line;
                f->column = row->col;
                f->discriminator = row->disc;
                f->file = file_name(t, row->file);
            }
        }
        f->line_offset = (f->line - f->start_line) & 0xffff;
        k++;
    }
    return k;
}

/* ---- the per-address cache -------------------------------------------- */

static const lp_frame no_frames[1];

static size_t sym_hash(uint64_t addr, size_t mask)
{
    uint64_t h = addr * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 29)) & mask;
}

static lp_sym_slot *sym_find(const lp_sym_cache *c, uint64_t addr)
{
    size_t i = sym_hash(addr, c->mask);
    while (c->slots[i].n1 && c->slots[i].addr != addr)
        i = (i + 1) & c->mask;
    return &c->slots[i];
}

/* Make room for one more entry (at most 3/4 full: a lookup that finds
 * its address is most of them, ~2 probes of 4 slots a cache line). */
static int sym_reserve(lp_sym_cache *c)
{
    size_t n = c->slots ? (c->mask + 1) * 2 : 1024, i;
    lp_sym_cache g = *c;

    if (c->slots && (c->count + 1) * 4 <= (c->mask + 1) * 3)
        return 0;
    if (!(g.slots = lp_zalloc_written(n * sizeof *g.slots)))
        return -1;
    g.mask = n - 1;
    for (i = 0; c->slots && i <= c->mask; i++)
        if (c->slots[i].n1)
            *sym_find(&g, c->slots[i].addr) = c->slots[i];
    free(c->slots);
    *c = g;
    return 0;
}

_Static_assert(LP_BINARY_MAX_FRAMES <= LP_SYM_CHUNK, "a stack fits in a chunk");

/* Room for n frames that never moves; *at its place in the chunks. */
static lp_frame *sym_frames(lp_sym_cache *c, size_t n, uint32_t *at)
{
    lp_frame *k;

    if (!c->nchunks || LP_SYM_CHUNK - c->used < n) {
        if (c->nchunks == c->chunks_cap) {
            size_t cap = c->chunks_cap ? c->chunks_cap * 2 : 16;
            lp_frame **v = cap <= UINT32_MAX / LP_SYM_CHUNK
                               ? realloc(c->chunks, cap * sizeof *v) : NULL;
            if (!v)
                return NULL;
            c->chunks = v;
            c->chunks_cap = cap;
        }
        if (!(k = malloc(LP_SYM_CHUNK * sizeof *k)))
            return NULL;
        c->chunks[c->nchunks++] = k;
        c->used = 0;
    }
    *at = (uint32_t)((c->nchunks - 1) * LP_SYM_CHUNK + c->used);
    c->used += n;
    return c->chunks[c->nchunks - 1] + c->used - n;
}

static const lp_frame *slot_frames(const lp_sym_cache *c, const lp_sym_slot *s)
{
    return s->n1 > 1 ? c->chunks[s->at / LP_SYM_CHUNK] + s->at % LP_SYM_CHUNK
                     : no_frames;
}

/* The frames of addr into out (LP_BINARY_MAX_FRAMES): their number, or
 * -1 on OOM. */
static long compute(lp_binary *b, uint64_t addr, lp_frame *out, lp_error *err)
{
    const lp_die_range *dr = die_for(b, addr);
    lp_inl_tree *t = dr ? tree_for(b, dr) : NULL;

    if (dr && !t)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return t ? (long)make_frames(b, dr, t, addr, out) : 0;
}

int lp_bin_symbolize_unlocked(lp_binary *b, uint64_t addr,
                              const lp_frame **frames, size_t *n,
                              lp_error *err)
{
    lp_sym_slot *s = b->cache.slots ? sym_find(&b->cache, addr) : NULL;
    if (!s || !s->n1) {
        lp_frame tmp[LP_BINARY_MAX_FRAMES], *f;
        uint32_t at = 0;
        long k = compute(b, addr, tmp, err);
        if (k < 0)
            return -1;
        if (sym_reserve(&b->cache) ||
            (k && !(f = sym_frames(&b->cache, (size_t)k, &at))))
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        if (k)
            memcpy(f, tmp, (size_t)k * sizeof *f);
        s = sym_find(&b->cache, addr);
        *s = (lp_sym_slot){addr, at, (uint32_t)k + 1};
        b->cache.count++;
    }
    *frames = slot_frames(&b->cache, s);
    *n = s->n1 - 1;
    return 0;
}

int lp_binary_symbolize(lp_binary *b, uint64_t addr, const lp_frame **frames,
                        size_t *n, lp_error *err)
{
    int rc;

    lp_bin_sym_lock(b);
    rc = lp_bin_symbolize_unlocked(b, addr, frames, n, err);
    lp_bin_sym_unlock(b);
    return rc;
}

static int symbolize_once(lp_binary *b, uint64_t addr, lp_frame *buf,
                          const lp_frame **frames, size_t *n, lp_error *err)
{
    lp_sym_slot *s = b->cache.slots ? sym_find(&b->cache, addr) : NULL;
    long k;

    if (s && s->n1) {
        *frames = slot_frames(&b->cache, s);
        *n = s->n1 - 1;
        return 0;
    }
    if ((k = compute(b, addr, buf, err)) < 0)
        return -1;
    *frames = buf;
    *n = (size_t)k;
    return 0;
}

int lp_binary_symbolize_once(lp_binary *b, uint64_t addr, lp_frame *buf,
                             const lp_frame **frames, size_t *n, lp_error *err)
{
    int rc;

    lp_bin_sym_lock(b);
    rc = symbolize_once(b, addr, buf, frames, n, err);
    lp_bin_sym_unlock(b);
    return rc;
}

void lp_bin_free_symbolizer(lp_binary *b)
{
    for (size_t i = 0; i < b->cache.nchunks; i++)
        free(b->cache.chunks[i]);
    free(b->cache.chunks);
    free(b->cache.slots);
    memset(&b->cache, 0, sizeof b->cache);
    lp_line_cache *lc, *ltmp;
    HASH_ITER(hh, b->lines, lc, ltmp) {
        HASH_DEL(b->lines, lc);
        lp_line_table_free(&lc->t);
        free(lc);
    }
    lp_inl_tree *t, *ttmp;
    HASH_ITER(hh, b->trees, t, ttmp) {
        HASH_DEL(b->trees, t);
        free(t->nodes);
        free(t);
    }
}
