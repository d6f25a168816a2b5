/*
 * fuzz_probe.c - libFuzzer target for the pseudo-probe decoder
 * (src/probe): arbitrary bytes as the two probe sections. Layout: byte 0
 * selects the GUID filter (bit 0: keep only the first description's
 * function) and the start table (bit 1: start addresses for every
 * description's GUID), bytes 1-2 the length of .pseudo_probe_desc (little
 * endian, cut to what is there), then its bytes, then .pseudo_probe. The
 * decoder must fail cleanly or give a table whose every lookup works and
 * agrees with itself: each probe is found at its own address and in the
 * ranges around it, its node chain ends at a top-level record, its inline
 * stack fits the node depth, and printing never fails.
 * Seeds: the two sections of a probe binary, e.g. objcopy -O binary
 * --only-section=.pseudo_probe_desc (then .pseudo_probe) joined as above.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/probe.h"

static FILE *sink(void)
{
    static FILE *f;

    if (!f)
        f = fopen("/dev/null", "w");
    return f;
}

static void check_probe(const lp_probes *p, uint32_t id)
{
    const lp_probe *pr = lp_probes_probe(p, id);
    const lp_probe_node *nodes;
    const uint32_t *ids;
    lp_probe_frame fr[16];
    size_t n, i, depth, nn = lp_probes_nodes(p, &nodes);
    int seen = 0;

    if (pr->node >= nn)
        abort();
    n = lp_probes_at(p, pr->addr, &ids);
    for (i = 0; i < n; i++) {
        if (lp_probes_probe(p, ids[i])->addr != pr->addr)
            abort();
        seen |= ids[i] == id;
    }
    if (!seen)
        abort();
    if (lp_probes_in(p, pr->addr ? pr->addr - 1 : 0, pr->addr, &ids) < n)
        abort();
    depth = lp_probes_node_depth(p, pr->node);
    n = lp_probes_inline_stack(p, pr, true, fr, 0, 16);
    if (n > depth)
        abort();
    if (depth <= 16 && n && fr[n - 1].index != pr->index)
        abort();
    if (lp_probe_is_call(pr) && !lp_probes_call_at(p, pr->addr))
        abort();
    lp_probes_print_at(p, pr->addr, sink());
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lp_error e;
    lp_probes *p;
    const lp_probe_desc *d;
    lp_probe_start *st = NULL;
    uint64_t keep;
    size_t dlen, nd, i;
    uint8_t mode;

    if (size < 3)
        return 0;
    mode = data[0];
    dlen = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3;
    size -= 3;
    if (dlen > size)
        dlen = size;
    if (!(p = lp_probes_from_bytes(data, dlen, data + dlen, size - dlen,
                                   "fuzz", &e)))
        return 0;
    nd = lp_probes_descs(p, &d);
    for (i = 1; i < nd; i++)
        if (d[i - 1].guid > d[i].guid || !lp_probes_desc(p, d[i].guid))
            abort();
    if ((mode & 2) && nd && (st = calloc(nd, sizeof *st)))
        for (i = 0; i < nd; i++) {
            st[i].guid = d[i].guid;
            st[i].addr = 0x1000 * (i + 1);
        }
    keep = nd ? d[0].guid : 0;
    if (lp_probes_decode(p, (mode & 1) ? &keep : NULL, (mode & 1) ? 1 : 0,
                         st, st ? nd : 0, &e) == 0) {
        lp_probes_print_descs(p, sink());
        for (i = 0; i < lp_probes_count(p); i++)
            check_probe(p, (uint32_t)i);
    }
    free(st);
    lp_probes_free(p);
    return 0;
}
