/*
 * pdwriter.h - a tiny perf.data writer for the reader's unit tests: builds
 * synthetic files (file mode, pipe mode, either byte order) byte by byte so
 * every record type and sample layout can be checked against known values.
 * Test-only; lbr2prof itself never writes perf.data.
 */
#ifndef LBR2PROF_TESTS_PDWRITER_H
#define LBR2PROF_TESTS_PDWRITER_H

#include <stddef.h>
#include <stdint.h>

typedef struct pw {
    uint8_t *b;
    size_t len, cap;
    int swap;            /* write big-endian (the other byte order) */
} pw;

void pw_init(pw *w, int swap);
void pw_free(pw *w);
void pw_u8(pw *w, uint8_t v);
void pw_u16(pw *w, uint16_t v);
void pw_u32(pw *w, uint32_t v);
void pw_u64(pw *w, uint64_t v);
void pw_bytes(pw *w, const void *p, size_t n);
void pw_zeros(pw *w, size_t n);
void pw_str(pw *w, const char *s);       /* NUL-terminated, padded to 8 */
void pw_hstring(pw *w, const char *s);   /* perf_header_string, padded to 64 */
/* Branch flags given in little-endian bitfield layout. */
void pw_brflags(pw *w, uint64_t le_flags);

/* Records: begin returns the start; end patches header.size. */
size_t pw_rec_begin(pw *w, uint32_t type, uint16_t misc);
void pw_rec_end(pw *w, size_t start);

typedef struct pw_attr {
    uint32_t type;
    uint64_t config, sample_period, sample_type, read_format, flags;
    uint64_t branch_sample_type, sample_regs_user, sample_regs_intr;
    uint32_t sample_stack_user;
    const uint64_t *ids;
    size_t nr_ids;
} pw_attr;

#define PW_FLAG_SAMPLE_ID_ALL (1ull << 18)

/* perf_event_attr of `size` bytes (0 writes a 64-byte ABI0 attr with
 * size field 0). Fields past `size` are dropped. */
void pw_attr_bytes(pw *w, const pw_attr *a, uint32_t size);

void pw_pipe_header(pw *w);
/* HEADER_ATTR record (pipe mode). */
void pw_header_attr(pw *w, const pw_attr *a, uint32_t size);

typedef struct pw_feat {
    int id;
    const pw *payload;
} pw_feat;

/* A whole file-mode perf.data: header, ids, attr table (stride size+16),
 * the data section, then the feature table and sections. */
void pw_file(pw *out, int swap, const pw_attr *attrs, size_t nr_attrs,
             uint32_t attr_size, const pw *data, const pw_feat *feats,
             size_t nr_feats);

/* An MMAP record (pid = tid, length 0x1000, pgoff 0) with the
 * sample_id_all trailer of TID|TIME, plus CPU (as 0) when `cpu`. */
void pw_mmap(pw *w, uint32_t pid, uint64_t start, const char *fn, uint64_t t,
             int cpu);

#endif
