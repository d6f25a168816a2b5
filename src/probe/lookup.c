/*
 * lookup.c - questions asked of a decoded probe table: the probes at an
 * address or in an address range (binary search over the address index),
 * the call probe of a call instruction, a probe's inline stack (the chain
 * of function records up to its top-level function, with llvm-profgen's
 * cut at an unknown call site), llvm-profgen's --show-pseudo-probe
 * printing, and the probe data packed in DWARF discriminators. Owns no
 * decoding (decode.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "probe/probe_internal.h"

size_t lp_probes_descs(const lp_probes *p, const lp_probe_desc **out)
{
    *out = p->descs;
    return p->ndescs;
}

const char *lp_probes_node_name(const lp_probes *p, uint32_t node)
{
    int32_t d = p->nodes[node].desc;

    return d >= 0 ? p->descs[d].name : "";
}

static uint64_t node_hash(const lp_probes *p, uint32_t node)
{
    int32_t d = p->nodes[node].desc;

    return d >= 0 ? p->descs[d].hash : 0;
}

size_t lp_probes_count(const lp_probes *p)
{
    return p->nprobes;
}

const lp_probe *lp_probes_probe(const lp_probes *p, uint32_t id)
{
    return &p->probes[id];
}

size_t lp_probes_nodes(const lp_probes *p, const lp_probe_node **out)
{
    *out = p->nodes;
    return p->nnodes;
}

size_t lp_probes_tops(const lp_probes *p, const uint32_t **out)
{
    *out = p->tops;
    return p->ntops;
}

/* The first index of the address index with an address >= addr: in its
 * bucket when there are buckets (probe_internal.h). */
static size_t lower(const lp_probes *p, uint64_t addr)
{
    size_t i, a, b;

    if (!p->bkt)
        return pb_lower(p->addr_keys, p->nprobes, sizeof *p->addr_keys, addr);
    if (addr < p->bkt_lo)
        return 0;
    i = (addr - p->bkt_lo) >> p->bkt_shift;
    a = p->bkt[i < p->nbkt ? i : p->nbkt];
    b = i < p->nbkt ? p->bkt[i + 1] : p->nprobes;
    return a + pb_lower(p->addr_keys + a, b - a, sizeof *p->addr_keys, addr);
}

size_t lp_probes_in(const lp_probes *p, uint64_t lo, uint64_t hi,
                    const uint32_t **ids)
{
    size_t a, b;

    if (!p->addr_keys || lo > hi) {
        *ids = NULL;
        return 0;
    }
    a = lower(p, lo);
    b = hi == UINT64_MAX ? p->nprobes : lower(p, hi + 1);
    *ids = p->by_addr + a;
    return b - a;
}

size_t lp_probes_at(const lp_probes *p, uint64_t addr, const uint32_t **ids)
{
    return lp_probes_in(p, addr, addr, ids);
}

const lp_probe *lp_probes_call_at(const lp_probes *p, uint64_t addr)
{
    size_t i = p->addr_keys ? lower(p, addr) : p->nprobes;

    for (; i < p->nprobes && p->addr_keys[i] == addr; i++)
        if (lp_probe_is_call(&p->probes[p->by_addr[i]]))
            return &p->probes[p->by_addr[i]];
    return NULL;
}

size_t lp_probes_node_depth(const lp_probes *p, uint32_t node)
{
    size_t d = 1;

    while (p->nodes[node].parent != LP_PROBE_NONE) {
        node = p->nodes[node].parent;
        d++;
    }
    return d;
}

/* MCDecodedPseudoProbe::getInlineContext (+ the leaf), then
 * ProfiledBinary::getInlineContextForProbe's cut: a frame other than the
 * last with call site 0 clears what came before it and is dropped. */
size_t lp_probes_inline_stack(const lp_probes *p, const lp_probe *pr,
                              bool include_leaf, lp_probe_frame *out,
                              size_t start, size_t cap)
{
    size_t depth = lp_probes_node_depth(p, pr->node);
    size_t add = depth - 1 + include_leaf, end = start + add, i, n = 0;
    uint32_t node = pr->node;

    if (end > cap)
        return end;
    /* callers, innermost first, written from the end */
    for (i = end - include_leaf; i > start; i--) {
        const lp_probe_node *nd = &p->nodes[node];

        out[i - 1].func = lp_probes_node_name(p, nd->parent);
        out[i - 1].index = nd->site;
        out[i - 1].hash = node_hash(p, nd->parent);
        node = nd->parent;
    }
    if (include_leaf) {
        out[end - 1].func = lp_probes_node_name(p, pr->node);
        out[end - 1].index = pr->index;
        out[end - 1].hash = node_hash(p, pr->node);
    }
    for (i = 0; i < start; i++)
        n++;
    for (i = start; i < end; i++) {
        if (out[i].index == 0 && i != end - 1) {
            n = 0;
            continue;
        }
        out[n++] = out[i];
    }
    return n;
}

/* ---- printing ------------------------------------------------------------------ */

void lp_probes_print_descs(const lp_probes *p, FILE *f)
{
    size_t i;

    fputs("Pseudo Probe Desc:\n", f);
    for (i = 0; i < p->ndescs; i++)
        fprintf(f, "GUID: %" PRIu64 " Name: %s\nHash: %" PRIu64 "\n",
                p->descs[i].guid, p->descs[i].name, p->descs[i].hash);
}

/* MCDecodedPseudoProbe::print with names: the inline context is every
 * caller, outermost first, "name:site" joined by " @ " (no cut at site 0). */
static void print_probe(const lp_probes *p, const lp_probe *pr, FILE *f)
{
    static const char *types[] = {"Block", "IndirectCall", "DirectCall"};
    uint32_t node, local[64], *chain = local;
    size_t depth = lp_probes_node_depth(p, pr->node) - 1, i;

    fprintf(f, " [Probe]:\tFUNC: %s Index: %" PRIu32 "  ",
            lp_probes_node_name(p, pr->node), pr->index);
    if (pr->disc)
        fprintf(f, "Discriminator: %" PRIu32 "  ", pr->disc);
    if (pr->type < 3)
        fprintf(f, "Type: %s  ", types[pr->type]);
    else
        fprintf(f, "Type: %u  ", pr->type);
    if (depth > 64 && !(chain = malloc(depth * sizeof *chain)))
        depth = 0;              /* no memory: the context is left out */
    for (node = pr->node, i = depth; i > 0; i--) {
        chain[i - 1] = node;
        node = p->nodes[node].parent;
    }
    if (depth)
        fputs("Inlined: @ ", f);
    for (i = 0; i < depth; i++)
        fprintf(f, "%s%s:%" PRIu32, i ? " @ " : "",
                lp_probes_node_name(p, p->nodes[chain[i]].parent),
                p->nodes[chain[i]].site);
    if (chain != local)
        free(chain);
    fputc('\n', f);
}

void lp_probes_print_at(const lp_probes *p, uint64_t addr, FILE *f)
{
    const uint32_t *ids;
    size_t n = lp_probes_at(p, addr, &ids), i;

    for (i = 0; i < n; i++)
        print_probe(p, &p->probes[ids[i]], f);
}

void lp_probe_disc_decode(uint32_t d, lp_probe_disc *out)
{
    out->has_base = (d & 0x10000000u) != 0;
    out->index = out->has_base ? (d >> 3) & 0x1fff : (d >> 3) & 0xffff;
    out->base = out->has_base ? (d >> 16) & 7 : 0;
    out->factor = (d >> 19) & 0x7f;
    out->type = (d >> 26) & 3;
    out->attr = (d >> 29) & 7;
}
