/*
 * perf-replicate.c - benchmark input maker (compiled and run by
 * scripts/bench-reader.sh; not part of lbr2prof). Reads a file-mode,
 * host-endian perf.data and writes a bigger one: the original data section
 * once, then COPIES-1 more copies of its SAMPLE records whose times are
 * shifted by k * span (span = last - first sample time + 1), with a
 * FINISHED_ROUND after every 1000 samples; the feature sections are moved
 * after the new data section.
 *
 *   perf-replicate IN COPIES OUT
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t ld64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static void st64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

static void die(const char *m)
{
    fprintf(stderr, "perf-replicate: %s\n", m);
    exit(1);
}

static void put(FILE *o, const void *p, size_t n)
{
    if (fwrite(p, 1, n, o) != n)
        die("write failed");
}

int main(int argc, char **argv)
{
    if (argc != 4)
        die("usage: perf-replicate IN COPIES OUT");
    FILE *f = fopen(argv[1], "rb");
    if (!f)
        die("cannot open input");
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len);
    if (!b || fread(b, 1, len, f) != len)
        die("cannot read input");
    fclose(f);
    int copies = atoi(argv[2]);
    if (len < 104 || memcmp(b, "PERFILE2", 8) || ld64(b + 8) != 104 || copies < 1)
        die("need a host-endian file-mode perf.data and COPIES >= 1");

    uint64_t aoff = ld64(b + 24), doff = ld64(b + 40), dsize = ld64(b + 48);
    uint64_t st = ld64(b + aoff + 24);
    if (!(st & 4) || (st & (1u << 16)))
        die("samples need TIME and no IDENTIFIER");
    size_t tpos = 8 + 8 * (size_t)(!!(st & 1) + !!(st & 2));
    uint64_t tmin = UINT64_MAX, tmax = 0;
    for (uint64_t p = doff; p + 8 <= doff + dsize;) {
        uint16_t sz;
        memcpy(&sz, b + p + 6, 2);
        if (sz < 8)
            die("bad record");
        if (ld64(b + p) % (1ull << 32) == 9) {
            uint64_t t = ld64(b + p + tpos);
            tmin = t < tmin ? t : tmin;
            tmax = t > tmax ? t : tmax;
        }
        p += sz;
    }
    uint64_t span = tmax - tmin + 1;

    FILE *o = fopen(argv[3], "wb");
    if (!o)
        die("cannot create output");
    put(o, b, doff);                       /* header, ids, attrs */
    put(o, b + doff, dsize);               /* copy 0, all records */
    uint64_t out_size = dsize, nsamples = 0;
    static const uint8_t round[8] = { 68, 0, 0, 0, 0, 0, 8, 0 };
    uint8_t rec[65536];
    for (int k = 1; k < copies; k++)
        for (uint64_t p = doff; p + 8 <= doff + dsize;) {
            uint16_t sz;
            memcpy(&sz, b + p + 6, 2);
            if (ld64(b + p) % (1ull << 32) == 9) {
                memcpy(rec, b + p, sz);
                st64(rec + tpos, ld64(rec + tpos) + (uint64_t)k * span);
                put(o, rec, sz);
                out_size += sz;
                if (++nsamples % 1000 == 0) {
                    put(o, round, 8);
                    out_size += 8;
                }
            }
            p += sz;
        }

    /* Feature table and sections, moved after the new data. */
    int nfeat = 0;
    for (int i = 0; i < 256; i++)
        nfeat += (int)((ld64(b + 72 + 8 * (i / 64)) >> (i % 64)) & 1);
    uint64_t table = doff + dsize, new_table = doff + out_size;
    if (table + 16ull * (uint64_t)nfeat > len)
        die("feature table outside the file");
    uint8_t *t = malloc(16 * (size_t)nfeat + 1);
    memcpy(t, b + table, 16 * (size_t)nfeat);
    uint64_t at = new_table + 16ull * (uint64_t)nfeat;
    for (int i = 0; i < nfeat; i++) {
        st64(t + 16 * i, at);
        at += ld64(t + 16 * i + 8);
    }
    put(o, t, 16 * (size_t)nfeat);
    for (int i = 0; i < nfeat; i++) {
        uint64_t so = ld64(b + table + 16 * (size_t)i), ss = ld64(t + 16 * i + 8);
        if (so + ss > len)
            die("feature section outside the file");
        put(o, b + so, ss);
    }
    /* Patch the data size in the header. */
    uint8_t v[8];
    st64(v, out_size);
    fseek(o, 48, SEEK_SET);
    put(o, v, 8);
    if (fclose(o) != 0)
        die("write failed");
    fprintf(stderr, "perf-replicate: %d copies, %llu bytes of data\n", copies,
            (unsigned long long)out_size);
    free(t);
    free(b);
    return 0;
}
