/*
 * rd_internal.h - private structures of the perf.data reader, shared by
 * reader.c (front end, ordering queue), rd_input.c (byte sources and zstd),
 * rd_header.c (file header, attrs, features, pipe user records) and
 * rd_decode.c (record and sample decoding). Not public; the perf script
 * text backend has its own header (perfscript.h).
 */
#ifndef LBR2PROF_READER_RD_INTERNAL_H
#define LBR2PROF_READER_RD_INTERNAL_H

#include <byteswap.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "lbr2prof/reader.h"
#include "reader/perfscript.h"
#include "reader/prefetch.h"

/* Record types we act on (PERF_RECORD_*). */
enum {
    RD_MMAP = 1, RD_LOST = 2, RD_COMM = 3, RD_EXIT = 4, RD_THROTTLE = 5,
    RD_UNTHROTTLE = 6, RD_FORK = 7, RD_READ = 8, RD_SAMPLE = 9, RD_MMAP2 = 10,
    RD_LOST_SAMPLES = 13,
    RD_USER_START = 64,
    RD_HEADER_ATTR = 64, RD_HEADER_EVENT_TYPE = 65, RD_TRACING_DATA = 66,
    RD_HEADER_BUILD_ID = 67, RD_FINISHED_ROUND = 68, RD_AUXTRACE = 71,
    RD_HEADER_FEATURE = 80, RD_COMPRESSED = 81, RD_FINISHED_INIT = 82,
    RD_COMPRESSED2 = 83,
};

/* Feature ids (HEADER_*). */
enum {
    RD_FEAT_BUILD_ID = 2, RD_FEAT_HOSTNAME = 3, RD_FEAT_OSRELEASE = 4,
    RD_FEAT_VERSION = 5, RD_FEAT_ARCH = 6, RD_FEAT_CPUDESC = 8,
    RD_FEAT_CPUID = 9, RD_FEAT_CMDLINE = 11, RD_FEAT_EVENT_DESC = 12,
    RD_FEAT_DIR_FORMAT = 24, RD_FEAT_COMPRESSED = 27,
};

#define RD_MAX_RECORD 65536u          /* header.size is a u16 */
#define RD_STREAM_BUF (1u << 20)      /* refill buffer for pipes */
#define RD_ZOUT_BUF (1u << 20)        /* decompression window */
#define RD_MAX_FILES 4096             /* main file + data.N of a directory */
#define RD_ZSTD_MIN_LIMIT (64ull << 20) /* per COMPRESSED record */
#define RD_MAP_WINDOW (2u << 20)      /* mmap: populate ahead / release behind */
#define RD_PREFETCH_AHEAD 4096u       /* mmap: bytes ahead of the walk to prefetch */

/* ---- byte order --------------------------------------------------------- */

static inline uint64_t rd_ld64(const void *p, int swap)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return swap ? bswap_64(v) : v;
}
static inline uint32_t rd_ld32(const void *p, int swap)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return swap ? bswap_32(v) : v;
}
static inline uint16_t rd_ld16(const void *p, int swap)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return swap ? bswap_16(v) : v;
}

/* Population count without needing -mpopcnt (libgcc's is a call). */
static inline unsigned rd_popcount(uint64_t x)
{
    x = x - ((x >> 1) & 0x5555555555555555ull);
    x = (x & 0x3333333333333333ull) + ((x >> 2) & 0x3333333333333333ull);
    x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0full;
    return (unsigned)((x * 0x0101010101010101ull) >> 56);
}

/* ---- one raw record as it came out of a source -------------------------- */

typedef struct rd_raw {
    const uint8_t *p;    /* header + body, possibly unaligned, file order */
    uint32_t type;
    uint16_t misc, size;
    uint64_t off;        /* offset in its file or decompressed stream */
    int file_idx;        /* index into rd_reader.files */
    int zst;             /* came out of a COMPRESSED record */
    int stable;          /* p points into a mapping that outlives the reader */
    const uint8_t *payload; /* AUXTRACE: the bytes after the record */
    uint64_t payload_size;
} rd_raw;

/* ---- byte sources ------------------------------------------------------- */

/* One input file (or stream). Memory sources are mmap'd files or a caller's
 * buffer; stream sources read a FILE through a refill buffer. */
typedef struct rd_file {
    char *name;
    int is_mem;
    const uint8_t *base; /* memory: whole file */
    size_t map_len;      /* memory: mmap length to unmap (0: not ours) */
    uint64_t populated;  /* mmap: page tables filled up to here */
    uint64_t released;   /* mmap: pages below this were given back */
    uint64_t prefetched; /* mmap: lines below this were prefetched */
    uint32_t window;     /* mmap: populate ahead / release behind in steps
                            of this (0: RD_MAP_WINDOW) */
    uint64_t pos, end;   /* current offset, end of the record stream */
    uint64_t size;       /* memory: bytes of the whole source */
    uint64_t data_end;   /* memory: the data section's end by the header,
                            when the file ends before it (0: not cut) */
    int cut;             /* its records ended at a cut (reader opts.strict) */
    FILE *f;             /* stream */
    int own_f;
    uint8_t *buf;        /* stream refill buffer */
    size_t b0, b1;       /* valid bytes buf[b0..b1) start at file offset pos */
    int eof;
} rd_file;

/* zstd state: one DStream per input file, a carry window for records that
 * straddle COMPRESSED records. */
typedef struct rd_zstd {
    ZSTD_DStream *ds;
    uint8_t *in;         /* copy of the current COMPRESSED payload */
    size_t in_len, in_pos;
    uint8_t *out;        /* decompressed window */
    size_t o0, o1;       /* unread bytes out[o0..o1) */
    uint64_t off;        /* decompressed-stream offset of out[o0] */
    int active;          /* input left or output pending */
    uint64_t rec_out;    /* bytes the current COMPRESSED record produced */
    uint64_t limit;      /* ... and the most it may produce (bomb guard) */
} rd_zstd;

/* ---- ordering queue ----------------------------------------------------- */

#define RD_LOC_ARENA (1ull << 63)
#define RD_LOC_FILE_SHIFT 48
/* No record: stands for the tail's last sample (tail.c), sets last_flush
 * when flushed and delivers nothing */
#define RD_LOC_PHANTOM (0x7fffull << RD_LOC_FILE_SHIFT)

typedef struct rd_qent {  /* 24 bytes */
    uint64_t time, seq;
    uint64_t loc;        /* RD_LOC_ARENA|arena offset, or file_idx<<48|off */
} rd_qent;

/* Arena-held records carry their origin in a small prefix. */
typedef struct rd_arena_hdr {
    uint64_t off;
    uint32_t file_idx, zst;
} rd_arena_hdr;

typedef struct rd_queue {
    rd_qent *e;
    size_t n, head, cap;
    int sorted;
    uint64_t seq, max_time, next_flush, last_flush;
    uint8_t *arena, *arena2;
    size_t arena_len, arena_cap, arena2_cap;
} rd_queue;

/* ---- the reader ----------------------------------------------------------- */

typedef struct rd_idmap rd_idmap;  /* uthash id -> attr index (rd_header.c) */

enum rd_state { RD_RUN, RD_FLUSH, RD_REPLAY, RD_DONE, RD_FAILED };

struct rd_tail;

struct lp_reader {
    lp_reader_opts opts;
    int swap;
    lp_file_info info;
    lp_reader_stats stats;

    lp_attr *attrs;
    size_t attr_cap;
    rd_idmap *idmap;
    int id_pos, is_pos;  /* from the first attr, -1 when absent */

    lp_build_id *build_ids;
    size_t bid_cap;
    char **cmdline;

    rd_file *files;
    size_t nr_files, cur_file;
    rd_zstd z;

    rd_queue q;
    enum rd_state state;
    uint64_t flush_limit;
    int at_eof;          /* input exhausted; the final flush is running */
    rd_raw pending;      /* FINISHED_ROUND delivered once its flush ends */
    uint64_t *pend_buf;  /* ... and its bytes */
    lp_error saved_err;
    uint64_t bad_features; /* malformed feature sections ignored */
    uint64_t comp_mmap_len; /* COMPRESSED feature: perf's buffer size */  /* after a failure every call returns this */

    uint64_t *abuf;      /* aligned copy of the record being decoded */
    uint8_t *paybuf;     /* streams: the AUXTRACE payload being delivered */
    size_t paybuf_cap;
    lp_event ev;

    lp_pscript *text;    /* perf script text backend, when the input is text */
    lp_pfetch *pf;       /* ... parsing on its own thread (prefetch.c) */
    FILE *own_text_f;    /* stream we opened for the text backend */
    uint64_t text_size;  /* the text's size when it is a regular file */
    struct rd_tail *tail; /* the tail's walk on a second thread (tail.c) */
    uint64_t tail_at;    /* ... whose region starts here (else UINT64_MAX) */
    int replay;          /* the flush before the tail's replay */
    int may_thread;      /* the walk may go to the prefetcher's thread
                            once no tail walks (reader.c thread_after_tail) */
    lp_reader_idle_fn idle_fn;   /* lp_reader_set_idle's, for that thread */
    void *idle_ctx;
    lp_reader_ahead_fn ahead_fn; /* lp_reader_set_ahead's, ditto */
    void *ahead_ctx;
};

/* rd_input.c */
int rd_file_open_mem(rd_file *f, const void *buf, size_t len, const char *name);
int rd_file_map(rd_file *f, int fd, const char *name, lp_error *err);
int rd_file_stream(rd_file *f, FILE *s, const char *name, lp_error *err);
void rd_file_close(rd_file *f);
int rd_file_read(rd_file *f, void *dst, size_t n, lp_error *err);
void rd_file_release(rd_file *f, uint64_t below);
int rd_next_raw(lp_reader *r, rd_raw *raw, lp_error *err);
int rd_file_step(lp_reader *r, rd_file *f, rd_raw *raw, lp_error *err);

/* reader.c */
int rd_queue_phantom(lp_reader *r, uint64_t t, lp_error *err);
void rd_zstd_free(rd_zstd *z);

/* rd_header.c */
int rd_read_file_header(lp_reader *r, rd_file *f, lp_error *err);
int rd_user_record(lp_reader *r, const rd_raw *raw, lp_error *err);
int rd_add_attr(lp_reader *r, const uint8_t *p, size_t avail, const uint8_t *ids,
                size_t nr_ids, int ids_swap, uint64_t off, const char *fname,
                lp_error *err);
int rd_parse_feature(lp_reader *r, int feat, const uint8_t *p, size_t len,
                     uint64_t off, const char *fname, lp_error *err);
int rd_attr_for(const lp_reader *r, const rd_raw *raw, const uint8_t *body,
                size_t nwords);
void rd_header_free(lp_reader *r);

/* rd_decode.c */
int rd_timestamp(lp_reader *r, const rd_raw *raw, uint64_t *time, lp_error *err);
int rd_decode(lp_reader *r, const rd_raw *raw, lp_error *err);

/* Error helper: "FILE: offset 0xNNN: <msg>". */
int rd_errf(lp_error *err, const char *file, uint64_t off, int zst,
            const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif
