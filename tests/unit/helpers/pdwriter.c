/*
 * pdwriter.c - synthetic perf.data writer for tests (see pdwriter.h).
 */
#include <byteswap.h>
#include <stdlib.h>
#include <string.h>

#include "pdwriter.h"

void pw_init(pw *w, int swap)
{
    memset(w, 0, sizeof *w);
    w->swap = swap;
}

void pw_free(pw *w)
{
    free(w->b);
    memset(w, 0, sizeof *w);
}

void pw_bytes(pw *w, const void *p, size_t n)
{
    if (w->len + n > w->cap) {
        size_t c = w->cap ? w->cap : 4096;
        while (c < w->len + n)
            c *= 2;
        w->b = realloc(w->b, c);
        if (!w->b)
            abort();
        w->cap = c;
    }
    if (n)
        memcpy(w->b + w->len, p, n);
    w->len += n;
}

void pw_zeros(pw *w, size_t n)
{
    static const uint8_t z[64];
    while (n) {
        size_t k = n < sizeof z ? n : sizeof z;
        pw_bytes(w, z, k);
        n -= k;
    }
}

void pw_u8(pw *w, uint8_t v) { pw_bytes(w, &v, 1); }
void pw_u16(pw *w, uint16_t v)
{
    v = w->swap ? bswap_16(v) : v;
    pw_bytes(w, &v, 2);
}
void pw_u32(pw *w, uint32_t v)
{
    v = w->swap ? bswap_32(v) : v;
    pw_bytes(w, &v, 4);
}
void pw_u64(pw *w, uint64_t v)
{
    v = w->swap ? bswap_64(v) : v;
    pw_bytes(w, &v, 8);
}

void pw_str(pw *w, const char *s)
{
    size_t n = strlen(s) + 1;
    pw_bytes(w, s, n);
    pw_zeros(w, (8 - n % 8) % 8);
}

void pw_hstring(pw *w, const char *s)
{
    uint32_t n = (uint32_t)strlen(s) + 1, padded = (n + 63) / 64 * 64;
    pw_u32(w, padded);
    pw_bytes(w, s, n);
    pw_zeros(w, padded - n);
}

void pw_brflags(pw *w, uint64_t v)
{
    static const unsigned width[] = { 1, 1, 1, 1, 16, 4, 2, 4, 3, 31 };
    if (w->swap) {
        unsigned hi = 64, lo = 0;
        uint64_t out = 0;
        for (size_t k = 0; k < sizeof width / sizeof width[0]; k++) {
            uint64_t mask = (1ull << width[k]) - 1;
            hi -= width[k];
            out |= ((v >> lo) & mask) << hi;
            lo += width[k];
        }
        v = out;
    }
    pw_u64(w, v);
}

size_t pw_rec_begin(pw *w, uint32_t type, uint16_t misc)
{
    size_t s = w->len;
    pw_u32(w, type);
    pw_u16(w, misc);
    pw_u16(w, 0);
    return s;
}

void pw_rec_end(pw *w, size_t start)
{
    uint16_t size = (uint16_t)(w->len - start);
    if (w->swap)
        size = bswap_16(size);
    memcpy(w->b + start + 6, &size, 2);
}

static uint8_t bitrev8(uint8_t b)
{
    uint8_t r = 0;
    for (int i = 0; i < 8; i++)
        if (b & (1u << i))
            r |= (uint8_t)(0x80u >> i);
    return r;
}

void pw_attr_bytes(pw *w, const pw_attr *a, uint32_t size)
{
    pw t;
    uint32_t eff = size ? size : 64;
    pw_init(&t, w->swap);
    pw_u32(&t, a->type);
    pw_u32(&t, size);
    pw_u64(&t, a->config);
    pw_u64(&t, a->sample_period);
    pw_u64(&t, a->sample_type);
    pw_u64(&t, a->read_format);
    for (int i = 0; i < 8; i++) { /* bitfield: bit order follows the writer */
        uint8_t b = (uint8_t)(a->flags >> (8 * i));
        pw_u8(&t, w->swap ? bitrev8(b) : b);
    }
    pw_u32(&t, 0);              /* wakeup_events */
    pw_u32(&t, 0);              /* bp_type */
    pw_u64(&t, 0);              /* config1 */
    pw_u64(&t, 0);              /* config2 (VER1) */
    pw_u64(&t, a->branch_sample_type);
    pw_u64(&t, a->sample_regs_user);
    pw_u32(&t, a->sample_stack_user);
    pw_u32(&t, 0);              /* clockid */
    pw_u64(&t, a->sample_regs_intr);
    while (t.len < eff)
        pw_u8(&t, t.len >= 144 ? 0xee : 0); /* unknown tail: junk */
    pw_bytes(w, t.b, eff);
    pw_free(&t);
}

void pw_pipe_header(pw *w)
{
    pw_bytes(w, w->swap ? "2ELIFREP" : "PERFILE2", 8);
    pw_u64(w, 16);
}

void pw_header_attr(pw *w, const pw_attr *a, uint32_t size)
{
    size_t s = pw_rec_begin(w, 64, 0);
    pw_attr_bytes(w, a, size);
    for (size_t i = 0; i < a->nr_ids; i++)
        pw_u64(w, a->ids[i]);
    pw_rec_end(w, s);
}

static void patch64(pw *w, size_t at, uint64_t v)
{
    if (w->swap)
        v = bswap_64(v);
    memcpy(w->b + at, &v, 8);
}

void pw_file(pw *out, int swap, const pw_attr *attrs, size_t nr_attrs,
             uint32_t attr_size, const pw *data, const pw_feat *feats,
             size_t nr_feats)
{
    uint32_t eff = attr_size ? attr_size : 64;
    uint64_t idoff[64];
    pw_init(out, swap);
    pw_bytes(out, swap ? "2ELIFREP" : "PERFILE2", 8);
    pw_u64(out, 104);
    pw_u64(out, eff + 16);
    pw_zeros(out, 104 - 24);
    for (size_t i = 0; i < nr_attrs && i < 64; i++) {
        idoff[i] = out->len;
        for (size_t k = 0; k < attrs[i].nr_ids; k++)
            pw_u64(out, attrs[i].ids[k]);
    }
    size_t aoff = out->len;
    for (size_t i = 0; i < nr_attrs && i < 64; i++) {
        pw_attr_bytes(out, &attrs[i], attr_size);
        pw_u64(out, idoff[i]);
        pw_u64(out, attrs[i].nr_ids * 8);
    }
    size_t doff = out->len;
    pw_bytes(out, data->b, data->len);
    size_t table = out->len;
    pw_zeros(out, 16 * nr_feats);
    uint64_t bits[4] = { 0 };
    for (size_t i = 0; i < nr_feats; i++) { /* feats sorted by id */
        bits[feats[i].id / 64] |= 1ull << (feats[i].id % 64);
        patch64(out, table + 16 * i, out->len);
        patch64(out, table + 16 * i + 8, feats[i].payload->len);
        pw_bytes(out, feats[i].payload->b, feats[i].payload->len);
    }
    patch64(out, 24, aoff);
    patch64(out, 32, (uint64_t)nr_attrs * (eff + 16));
    patch64(out, 40, doff);
    patch64(out, 48, data->len);
    for (int i = 0; i < 4; i++)
        patch64(out, 72 + 8 * (size_t)i, bits[i]);
}

void pw_mmap(pw *w, uint32_t pid, uint64_t start, const char *fn, uint64_t t,
             int cpu)
{
    size_t s = pw_rec_begin(w, 1, 2);
    pw_u32(w, pid);
    pw_u32(w, pid);
    pw_u64(w, start);
    pw_u64(w, 0x1000);
    pw_u64(w, 0);
    pw_str(w, fn);
    pw_u32(w, pid);
    pw_u32(w, pid);
    pw_u64(w, t);
    if (cpu) {
        pw_u32(w, 0);
        pw_u32(w, 0);
    }
    pw_rec_end(w, s);
}
