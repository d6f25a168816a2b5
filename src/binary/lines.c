/*
 * lines.c - DWARF line tables (.debug_line, versions 2-5), decoded here
 * rather than with libdw because libdw 0.188 keeps discriminators in a
 * 24-bit field and rejects a whole table whose discriminators do not fit
 * (flow-sensitive and copy-id discriminators are 32-bit). Lookup follows
 * LLVM's DWARFDebugLine::LineTable::lookupAddress: the sequence whose
 * [low, high) holds the address, then the last row with address <= it.
 * Owns only line rows; file names come from libdw in dwarf.c.
 */
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"

uint64_t lp_rd_n(lp_rd *r, int n)
{
    if (r->end - r->p < n) {
        r->bad = true;
        r->p = r->end;
        return 0;
    }
    uint64_t v = lp_le(r->p, n);
    r->p += n;
    return v;
}

uint64_t lp_rd_uleb(lp_rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; r->p < r->end; shift += 7) {
        uint8_t c = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return v;
    }
    r->bad = true;
    return v;
}

static int64_t rd_sleb(lp_rd *r)
{
    int64_t v = 0;
    int shift = 0;
    uint8_t c = 0x80;
    while (r->p < r->end && (c & 0x80)) {
        c = *r->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(c & 0x7f) << shift);
        shift += 7;
    }
    if (c & 0x80)
        r->bad = true;
    else if (shift < 64 && (c & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

typedef struct line_hdr {
    int version;
    uint8_t min_inst, default_stmt, line_range, opcode_base;
    int8_t line_base;
    uint8_t std_len[256];
} line_hdr;

typedef struct line_state {
    uint64_t addr;
    uint32_t file, line, col, disc;
    uint64_t seq_start_row;
} line_state;

static void state_reset(line_state *s, size_t nrows)
{
    memset(s, 0, sizeof *s);
    s->file = 1;
    s->line = 1;
    s->seq_start_row = nrows;
}

static int push_row(lp_line_table *t, const line_state *s)
{
    if (t->nrows == t->rows_cap) {
        size_t nc = t->rows_cap * 2 + 256;
        lp_line_row *r = realloc(t->rows, nc * sizeof *r);
        if (!r)
            return -1;
        t->rows = r;
        t->rows_cap = nc;
    }
    t->rows[t->nrows++] = (lp_line_row){s->addr, s->line, s->col, s->disc,
                                        s->file};
    return 0;
}

static int push_seq(lp_line_table *t, size_t first, size_t last)
{
    if (last - first < 2 || t->rows[first].addr >= t->rows[last - 1].addr)
        return 0; /* empty sequence: LLVM drops it too */
    if (t->nseqs == t->seqs_cap) {
        size_t nc = t->seqs_cap * 2 + 16;
        lp_line_seq *q = realloc(t->seqs, nc * sizeof *q);
        if (!q)
            return -1;
        t->seqs = q;
        t->seqs_cap = nc;
    }
    t->seqs[t->nseqs++] = (lp_line_seq){t->rows[first].addr,
                                        t->rows[last - 1].addr, first, last};
    return 0;
}

static int parse_header(lp_rd *r, line_hdr *h, lp_rd *prog)
{
    uint64_t len = lp_rd_n(r, 4);
    int offsz = 4;
    if (len == 0xffffffffu) {
        len = lp_rd_n(r, 8);
        offsz = 8;
    }
    if (r->bad || len > (uint64_t)(r->end - r->p))
        return -1;
    const uint8_t *unit_end = r->p + len;
    h->version = (int)lp_rd_n(r, 2);
    if (h->version < 2 || h->version > 5)
        return -1;
    if (h->version >= 5)
        lp_rd_n(r, 2); /* address_size, segment_selector_size */
    uint64_t hlen = lp_rd_n(r, offsz);
    if (r->bad || hlen > (uint64_t)(unit_end - r->p))
        return -1;
    const uint8_t *prog_start = r->p + hlen;
    h->min_inst = (uint8_t)lp_rd_n(r, 1);
    if (h->version >= 4)
        lp_rd_n(r, 1); /* maximum_operations_per_instruction (VLIW only) */
    h->default_stmt = (uint8_t)lp_rd_n(r, 1);
    h->line_base = (int8_t)lp_rd_n(r, 1);
    h->line_range = (uint8_t)lp_rd_n(r, 1);
    h->opcode_base = (uint8_t)lp_rd_n(r, 1);
    memset(h->std_len, 0, sizeof h->std_len);
    for (int i = 1; i < h->opcode_base; i++)
        h->std_len[i] = (uint8_t)lp_rd_n(r, 1);
    if (r->bad || h->line_range == 0)
        return -1;
    prog->p = prog_start;
    prog->end = unit_end;
    prog->bad = false;
    return 0;
}

static int extended_op(lp_rd *r, lp_line_table *t, line_state *s)
{
    uint64_t len = lp_rd_uleb(r);
    if (r->bad || len == 0 || len > (uint64_t)(r->end - r->p))
        return -1;
    const uint8_t *next = r->p + len;
    uint8_t op = (uint8_t)lp_rd_n(r, 1);
    if (op == 1) { /* DW_LNE_end_sequence */
        if (push_row(t, s) || push_seq(t, s->seq_start_row, t->nrows))
            return -1;
        state_reset(s, t->nrows);
    } else if (op == 2) { /* DW_LNE_set_address */
        s->addr = lp_rd_n(r, (int)(len - 1 > 8 ? 8 : len - 1));
    } else if (op == 4) { /* DW_LNE_set_discriminator */
        s->disc = (uint32_t)lp_rd_uleb(r);
    }
    r->p = next;
    return 0;
}

static int standard_op(lp_rd *r, const line_hdr *h, lp_line_table *t,
                       line_state *s, uint8_t op)
{
    switch (op) {
    case 1: /* copy */
        if (push_row(t, s))
            return -1;
        s->disc = 0;
        break;
    case 2: s->addr += lp_rd_uleb(r) * h->min_inst; break;
    case 3: s->line = (uint32_t)((int64_t)s->line + rd_sleb(r)); break;
    case 4: s->file = (uint32_t)lp_rd_uleb(r); break;
    case 5: s->col = (uint32_t)lp_rd_uleb(r); break;
    case 8:
        s->addr += (uint64_t)((255 - h->opcode_base) / h->line_range) *
                   h->min_inst;
        break;
    case 9: s->addr += lp_rd_n(r, 2); break;
    case 6: case 7: case 10: case 11: break;
    default:
        for (int i = 0; i < h->std_len[op]; i++)
            lp_rd_uleb(r);
    }
    return 0;
}

static int run_program(lp_rd *r, const line_hdr *h, lp_line_table *t)
{
    line_state s;
    state_reset(&s, t->nrows);
    while (r->p < r->end && !r->bad) {
        uint8_t op = (uint8_t)lp_rd_n(r, 1);
        if (op >= h->opcode_base) {
            unsigned adj = op - h->opcode_base;
            s.addr += (uint64_t)(adj / h->line_range) * h->min_inst;
            s.line = (uint32_t)((int64_t)s.line + h->line_base +
                                (int)(adj % h->line_range));
            if (push_row(t, &s))
                return -1;
            s.disc = 0;
        } else if (op == 0) {
            if (extended_op(r, t, &s))
                return -1;
        } else if (standard_op(r, h, t, &s, op)) {
            return -1;
        }
    }
    return r->bad ? -1 : 0;
}

static int seq_cmp(const void *pa, const void *pb)
{
    const lp_line_seq *a = pa, *b = pb;
    if (a->high != b->high)
        return a->high < b->high ? -1 : 1;
    return a->low < b->low ? -1 : a->low > b->low;
}

int lp_line_table_parse(const uint8_t *data, size_t size, uint64_t off,
                        lp_line_table *t)
{
    memset(t, 0, sizeof *t);
    if (off >= size)
        return -1;
    lp_rd r = {data + off, data + size, false}, prog;
    line_hdr h;
    if (parse_header(&r, &h, &prog) || run_program(&prog, &h, t))
        return -1;
    if (t->nseqs)
        qsort(t->seqs, t->nseqs, sizeof *t->seqs, seq_cmp);
    if (t->nrows && t->nrows < t->rows_cap) {   /* kept until the binary is
                                                   closed: no slack (SQLite's
                                                   one unit: 4.7 of 6.3 MB) */
        lp_line_row *rows = realloc(t->rows, t->nrows * sizeof *rows);
        if (rows) {
            t->rows = rows;
            t->rows_cap = t->nrows;
        }
    }
    return 0;
}

void lp_line_table_free(lp_line_table *t)
{
    free(t->rows);
    free(t->seqs);
    memset(t, 0, sizeof *t);
}

const lp_line_row *lp_line_table_lookup(const lp_line_table *t, uint64_t addr)
{
    size_t lo = 0, hi = t->nseqs; /* first sequence with high > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->seqs[mid].high <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == t->nseqs || addr < t->seqs[lo].low)
        return NULL;
    const lp_line_seq *q = &t->seqs[lo];
    size_t a = q->first + 1, b = q->last - 1; /* upper_bound in [a, b) */
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        if (t->rows[mid].addr <= addr)
            a = mid + 1;
        else
            b = mid;
    }
    return &t->rows[a - 1];
}
