/*
 * xref.c - who calls or jumps to a function entry directly: the sites of
 * the direct calls and jumps (conditional or not) whose target is an
 * entry of a function, for questions about callers the trace never showed
 * (the frame repair's inference, src/unwind/infer.c). One scan of the
 * code bytes finds every x86-64 rel8/rel32 call and jump encoding (E8,
 * E9, EB, 70-7F, 0F 80-8F) whose target is an entry: a superset, since
 * such bytes also occur inside other instructions. A hit is believed only
 * when decoding at its address (lp_binary_inst, the one classifier) gives
 * a direct call or jump to that target; that is done per target when it
 * is first asked for, so only the code around the asked-for targets is
 * disassembled. Owns the index; not decoding (disasm.c) nor functions
 * (dwarf.c).
 */
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"
#include "util/grow.h"

enum { XR_UNKNOWN = 0, XR_YES = 1, XR_NO = 2 };

typedef struct xr_hit {
    uint64_t target, site;
    uint8_t state;              /* XR_*: decoded yet, and what it was */
    uint8_t kind;               /* enum lp_inst_kind the bytes encode */
} xr_hit;

struct lp_xref_index {
    xr_hit *hits;               /* sorted by (target, site) */
    size_t n, cap;
    lp_xref *out;               /* the answer handed out */
    size_t out_cap;
};

/* The target of a direct call or jump encoded at p (n bytes left, at
 * address a), or 0. */
static uint64_t rel_target(const uint8_t *p, size_t n, uint64_t a)
{
    int32_t d;

    if (p[0] != 0xe8 && p[0] != 0xe9 && p[0] != 0x0f && p[0] != 0xeb &&
        (p[0] & 0xf0) != 0x70)
        return 0;

    if ((p[0] == 0xe8 || p[0] == 0xe9) && n >= 5) {
        memcpy(&d, p + 1, 4);
        return a + 5 + (int64_t)d;
    }
    if (p[0] == 0x0f && n >= 6 && (p[1] & 0xf0) == 0x80) {
        memcpy(&d, p + 2, 4);
        return a + 6 + (int64_t)d;
    }
    if ((p[0] == 0xeb || (p[0] & 0xf0) == 0x70) && n >= 2)
        return a + 2 + (int64_t)(int8_t)p[1];
    return 0;
}

static bool is_entry(const lp_binary *b, uint64_t t)
{
    const lp_func_range *r = lp_binary_func_range(b, t);

    return r && r->is_entry && r->start == t;
}

static int add_hit(lp_xref_index *x, uint64_t target, uint64_t site,
                   uint8_t kind)
{
    if (lp_grow_array(&x->hits, &x->cap, x->n + 1, sizeof *x->hits, 1024))
        return -1;
    x->hits[x->n++] = (xr_hit){target, site, XR_UNKNOWN, kind};
    return 0;
}

static int hit_cmp(const void *pa, const void *pb)
{
    const xr_hit *a = pa, *c = pb;

    if (a->target != c->target)
        return a->target < c->target ? -1 : 1;
    return a->site < c->site ? -1 : a->site > c->site;
}

/* The hits of one region (one symbol's code). A target inside the region
 * is a branch within the function, and a jump to its own start a loop:
 * neither says who calls it (a call to its own start is recursion). */
static int scan_region(const lp_binary *b, lp_xref_index *x,
                       const lp_code_region *r)
{
    size_t off = (size_t)(r->start - r->sec_addr), end = (size_t)(r->end - r->sec_addr);
    uint64_t t;

    if (end > r->sec_size)
        end = r->sec_size;
    for (; off < end; off++) {
        const uint8_t *p = r->sec_bytes + off;
        if (!(t = rel_target(p, r->sec_size - off, r->sec_addr + off)) ||
            (t > r->start && t < r->end) || (t == r->start && p[0] != 0xe8))
            continue;
        if (is_entry(b, t) &&
            add_hit(x, t, r->sec_addr + off,
                    p[0] == 0xe8 ? LP_INST_CALL
                    : p[0] == 0xe9 || p[0] == 0xeb ? LP_INST_UNCOND_BR
                                                   : LP_INST_COND_BR))
            return -1;
    }
    return 0;
}

static lp_xref_index *build(lp_binary *b, lp_error *err)
{
    lp_xref_index *x = calloc(1, sizeof *x);
    size_t i;

    if (!x)
        goto oom;
    for (i = 0; i < b->nregions; i++)
        if (scan_region(b, x, &b->regions[i]))
            goto oom;
    if (x->n)
        qsort(x->hits, x->n, sizeof *x->hits, hit_cmp);
    return x;
oom:
    lp_xref_free(x);
    lp_error_set(err, LP_ENOMEM, "%s: out of memory indexing calls", b->path);
    return NULL;
}

/* Decode a hit once: is it a direct call or jump to its target? */
static int check(lp_binary *b, xr_hit *h, lp_error *err)
{
    lp_inst in;
    int k;

    if (h->state != XR_UNKNOWN)
        return 0;
    if ((k = lp_binary_inst(b, h->site, &in, err)) < 0)
        return -1;
    h->state = k == 1 && !in.indirect && in.target == h->target &&
                       in.kind == h->kind ? XR_YES : XR_NO;
    return 0;
}

/* The hits of target: [*lo, *hi) of x->hits. 0, or -1 (err). */
static int hits_of(lp_binary *b, uint64_t target, size_t *lo, size_t *hi,
                   lp_error *err)
{
    lp_xref_index *x;
    size_t l = 0, h;

    if (b->arch != LP_ARCH_X86_64)
        return lp_error_set(err, LP_EUSAGE, "%s: direct references are only "
                            "indexed for x86-64", b->path);
    if (!b->xrefs && !(b->xrefs = build(b, err)))
        return -1;
    x = b->xrefs;
    h = x->n;
    while (l < h) {             /* the first hit of target */
        size_t mid = l + (h - l) / 2;
        if (x->hits[mid].target < target)
            l = mid + 1;
        else
            h = mid;
    }
    for (h = l; h < x->n && x->hits[h].target == target; h++)
        ;
    *lo = l;
    *hi = h;
    return 0;
}

static int out_room(lp_xref_index *x, size_t n, lp_error *err)
{
    lp_xref *o;

    if (n <= x->out_cap)
        return 0;
    if (!(o = realloc(x->out, n * sizeof *o)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    x->out = o;
    x->out_cap = n;
    return 0;
}

long lp_binary_ref_candidates(lp_binary *b, uint64_t target,
                              const lp_xref **refs, lp_error *err)
{
    size_t lo, hi, n = 0;
    lp_xref_index *x;

    if (hits_of(b, target, &lo, &hi, err))
        return -1;
    x = b->xrefs;
    if (out_room(x, hi - lo, err))
        return -1;
    for (; lo < hi; lo++)
        if (x->hits[lo].state != XR_NO)
            x->out[n++] = (lp_xref){x->hits[lo].site,
                                    x->hits[lo].kind};
    *refs = x->out;
    return (long)n;
}

int lp_binary_ref_check(lp_binary *b, uint64_t site, uint64_t target,
                        lp_error *err)
{
    size_t lo, hi;
    lp_xref_index *x;

    if (hits_of(b, target, &lo, &hi, err))
        return -1;
    x = b->xrefs;
    for (; lo < hi; lo++)
        if (x->hits[lo].site == site) {
            if (check(b, &x->hits[lo], err))
                return -1;
            return x->hits[lo].state == XR_YES;
        }
    return 0;
}

long lp_binary_refs_to(lp_binary *b, uint64_t target, const lp_xref **refs,
                       lp_error *err)
{
    size_t lo, hi, n = 0;
    lp_xref_index *x;

    if (hits_of(b, target, &lo, &hi, err))
        return -1;
    x = b->xrefs;
    for (size_t i = lo; i < hi; i++)
        if (check(b, &x->hits[i], err))
            return -1;
    if (out_room(x, hi - lo, err))
        return -1;
    for (; lo < hi; lo++)
        if (x->hits[lo].state == XR_YES)
            x->out[n++] = (lp_xref){x->hits[lo].site, x->hits[lo].kind};
    *refs = x->out;
    return (long)n;
}

void lp_xref_free(lp_xref_index *x)
{
    if (!x)
        return;
    free(x->hits);
    free(x->out);
    free(x);
}
