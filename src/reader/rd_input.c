/*
 * rd_input.c - byte sources of the perf.data reader: memory (an mmap'd file
 * or a caller's buffer), streams (pipes, read through a refill buffer, never
 * seeking), and the zstd layer that turns COMPRESSED/COMPRESSED2 records
 * back into a record stream, with a carry window for records that straddle
 * two compressed blocks. It yields raw records one at a time (rd_next_raw);
 * it does not interpret them beyond their header and payload sizes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "reader/rd_internal.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

int rd_errf(lp_error *err, const char *file, uint64_t off, int zst,
            const char *fmt, ...)
{
    char msg[LP_ERRMSG_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lp_error_set(err, LP_EFORMAT, "%s: %soffset 0x%llx: %s",
                        file ? file : "(input)",
                        zst ? "decompressed " : "", (unsigned long long)off,
                        msg);
}

/* ---- cut-off inputs ------------------------------------------------------ */

/* Does the record stream of f run to the physical end of its bytes (a
 * stream, a file whose header gives no data size, or one cut inside its
 * data section)? Only there can a partial record be a cut, not a lie. */
static int runs_to_the_end(const rd_file *f)
{
    return !f->is_mem || f->end >= f->size;
}

/* The input ends inside a record (`what`, at off): with opts.strict the
 * error it always was; by default a warning naming the file, the offset
 * and the records read, and the end of this file's records. 0 or -1. */
static int cut_off(lp_reader *r, rd_file *f, uint64_t off, int zst, lp_error *err,
                   const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int cut_off(lp_reader *r, rd_file *f, uint64_t off, int zst, lp_error *err,
                   const char *fmt, ...)
{
    char what[LP_ERRMSG_MAX / 2], header[96] = "";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->opts.strict || !runs_to_the_end(f))
        return rd_errf(err, f->name, off, zst, "%s", what);
    if (f->data_end)
        snprintf(header, sizeof header, ", before the end of the data section (0x%llx by "
                 "the header)", (unsigned long long)f->data_end);
    if (r->opts.warn)
        lp_warnf(r->opts.warn, r->opts.warn_ctx,
                 "%s: %soffset 0x%llx: %s%s: the file was cut off (a recording killed, or a "
                 "disk that filled up); the %llu complete records before it are used "
                 "(--strict makes this an error)", f->name, zst ? "decompressed " : "",
                 (unsigned long long)off, what, header,
                 (unsigned long long)r->stats.complete_records);
    r->stats.cut_off++;
    f->cut = 1;
    f->data_end = 0;
    f->pos = f->end;    /* this file's records end here */
    f->eof = 1;
    f->b0 = f->b1;
    return 0;
}

/* ---- files ----------------------------------------------------------------- */

int rd_file_open_mem(rd_file *f, const void *buf, size_t len, const char *name)
{
    memset(f, 0, sizeof *f);
    f->name = strdup(name ? name : "(memory)");
    if (!f->name)
        return -1;
    f->is_mem = 1;
    f->base = buf;
    f->end = f->size = len;
    return 0;
}

int rd_file_map(rd_file *f, int fd, const char *name, lp_error *err)
{
    struct stat st;
    void *m = NULL;

    if (fstat(fd, &st) < 0)
        return lp_error_set(err, LP_EIO, "%s: %s", name, strerror(errno));
    if (st.st_size > 0) {
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED)
            return lp_error_set(err, LP_EIO, "%s: mmap: %s", name,
                                strerror(errno));
        madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    }
    if (rd_file_open_mem(f, m ? m : "", (size_t)st.st_size, name) < 0) {
        if (m)
            munmap(m, (size_t)st.st_size);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    f->map_len = m ? (size_t)st.st_size : 0;
    return 0;
}

int rd_file_stream(rd_file *f, FILE *s, const char *name, lp_error *err)
{
    memset(f, 0, sizeof *f);
    f->name = strdup(name ? name : "(stream)");
    f->buf = malloc(RD_STREAM_BUF);
    if (!f->name || !f->buf) {
        free(f->name);
        free(f->buf);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    f->f = s;
    f->end = UINT64_MAX;
    return 0;
}

void rd_file_close(rd_file *f)
{
    if (f->map_len)
        munmap((void *)f->base, f->map_len);
    if (f->own_f && f->f)
        fclose(f->f);
    free(f->buf);
    free(f->name);
    memset(f, 0, sizeof *f);
}

/* mmap: fill the page tables of the next window in one call (far cheaper
 * than a fault per 64 KiB); errors only cost speed. */
static void populate_ahead(rd_file *f)
{
    if (!f->map_len || f->pos + RD_MAX_RECORD <= f->populated)
        return;
    uint64_t from = f->populated > f->pos ? f->populated : f->pos & ~4095ull;
    uint64_t w = f->window ? f->window : RD_MAP_WINDOW;
    uint64_t n = f->map_len - from < w ? f->map_len - from : w;
    if (n)
        madvise((void *)(f->base + from), (size_t)n, MADV_POPULATE_READ);
    f->populated = from + n;
}

/* mmap: the record headers are a chain of dependent loads through
 * memory no cache holds yet, and the flush then decodes the records' bodies
 * (and the consumer digests their arrays): start loading every line up to
 * RD_PREFETCH_AHEAD bytes ahead of the walk. */
static void prefetch_ahead(rd_file *f)
{
    uint64_t to = f->pos + RD_PREFETCH_AHEAD, at;

    if (to > f->end)
        to = f->end;
    at = f->prefetched > f->pos ? f->prefetched : f->pos;
    for (at &= ~63ull; at < to; at += 64)
        __builtin_prefetch(f->base + at);
    f->prefetched = at;
}

/* mmap: give back pages below `below` (nothing queued points there), so
 * the resident set stays about one window plus one round. */
void rd_file_release(rd_file *f, uint64_t below)
{
    below &= ~4095ull;
    if (!f->map_len || below < f->released + (f->window ? f->window : RD_MAP_WINDOW))
        return;
    madvise((void *)(f->base + f->released), (size_t)(below - f->released),
            MADV_DONTNEED);
    f->released = below;
}

/* Stream: make at least n bytes available at buf+b0; returns how many are. */
static size_t stream_fill(rd_file *f, size_t n)
{
    while (f->b1 - f->b0 < n && !f->eof) {
        if (f->b0 > 0) {
            memmove(f->buf, f->buf + f->b0, f->b1 - f->b0);
            f->b1 -= f->b0;
            f->b0 = 0;
        }
        size_t got = fread(f->buf + f->b1, 1, RD_STREAM_BUF - f->b1, f->f);
        if (got == 0)
            f->eof = 1;
        f->b1 += got;
    }
    return f->b1 - f->b0;
}

/* Sequential read of n bytes (headers at open time). */
int rd_file_read(rd_file *f, void *dst, size_t n, lp_error *err)
{
    if (f->is_mem) {
        if (f->pos > f->end || f->end - f->pos < n)
            return rd_errf(err, f->name, f->pos, 0,
                           "file ends after %llu bytes, expected %zu more",
                           (unsigned long long)(f->end - f->pos), n);
        memcpy(dst, f->base + f->pos, n);
    } else {
        if (n > RD_STREAM_BUF || stream_fill(f, n) < n)
            return rd_errf(err, f->name, f->pos, 0,
                           "input ends early, expected %zu more bytes", n);
        memcpy(dst, f->buf + f->b0, n);
        f->b0 += n;
    }
    f->pos += n;
    return 0;
}

/* Skip n payload bytes that follow a record (TRACING_DATA, AUXTRACE). */
/* 1 skipped, 0 cut off (the record is dropped), -1 error. */
static int file_skip(lp_reader *r, rd_file *f, uint64_t n, uint64_t recoff, lp_error *err)
{
    if (f->is_mem) {
        if (f->end - f->pos < n)
            return cut_off(r, f, recoff, 0, err,
                           "payload of %llu bytes runs past the end of the "
                           "data (0x%llx)", (unsigned long long)n,
                           (unsigned long long)f->end);
        f->pos += n;
        return 1;
    }
    while (n > 0) {
        size_t have = stream_fill(f, 1);
        if (have == 0)
            return cut_off(r, f, recoff, 0, err,
                           "input ends inside a %llu-byte payload",
                           (unsigned long long)n);
        size_t k = have < n ? have : (size_t)n;
        f->b0 += k;
        f->pos += k;
        n -= k;
    }
    return 1;
}

/* End of a file's records: a file cut at a record boundary before the end
 * of its data section is said so too. */
static int file_end(lp_reader *r, rd_file *f, lp_error *err)
{
    return f->data_end ? cut_off(r, f, f->pos, 0, err, "the file ends between two records")
                       : 0;
}

/* An AUXTRACE record's trace bytes: pointed to in a memory source, read
 * into the reader's payload buffer from a stream (at most 1 GiB). */
static int payload_read(lp_reader *r, rd_file *f, uint64_t n, rd_raw *raw,
                        lp_error *err)
{
    uint64_t done = 0;

    if (f->is_mem) {
        if (f->end - f->pos < n)
            return rd_errf(err, f->name, raw->off, 0, "AUXTRACE payload of "
                           "%llu bytes runs past the end of the data (0x%llx)",
                           (unsigned long long)n, (unsigned long long)f->end);
        raw->payload = f->base + f->pos;
        raw->payload_size = n;
        f->pos += n;
        return 0;
    }
    if (n > (1ull << 30))
        return rd_errf(err, f->name, raw->off, 0, "AUXTRACE payload of %llu "
                       "bytes, expected at most 1 GiB", (unsigned long long)n);
    if (n > r->paybuf_cap) {
        uint8_t *p = realloc(r->paybuf, n);
        if (!p)
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", f->name);
        r->paybuf = p;
        r->paybuf_cap = n;
    }
    while (done < n) {
        size_t have = stream_fill(f, 1), k;
        if (have == 0)
            return rd_errf(err, f->name, raw->off, 0, "input ends inside a "
                           "%llu-byte payload", (unsigned long long)n);
        k = have < n - done ? have : (size_t)(n - done);
        memcpy(r->paybuf + done, f->buf + f->b0, k);
        f->b0 += k;
        f->pos += k;
        done += k;
    }
    raw->payload = r->paybuf;
    raw->payload_size = n;
    return 0;
}

/* Next record of one file: 1 got one, 0 end, -1 error. */
static int file_next(lp_reader *r, rd_file *f, rd_raw *raw, lp_error *err)
{
    const uint8_t *p;
    uint16_t size;
    int swap = r->swap;

    if (f->is_mem) {
        if (f->pos >= f->end)
            return file_end(r, f, err);
        populate_ahead(f);
        if (f->end - f->pos < 8)
            return cut_off(r, f, f->pos, 0, err,
                           "truncated record header: %llu bytes left, "
                           "expected 8", (unsigned long long)(f->end - f->pos));
        p = f->base + f->pos;
        prefetch_ahead(f);
    } else {
        size_t have = stream_fill(f, 8);
        if (have == 0)
            return 0;
        if (have < 8)
            return cut_off(r, f, f->pos, 0, err,
                           "truncated record header: %zu bytes left, "
                           "expected 8", have);
        p = f->buf + f->b0;
    }
    size = rd_ld16(p + 6, swap);
    if (size < 8)
        return rd_errf(err, f->name, f->pos, 0,
                       "record (type %u) has size %u, expected >= 8",
                       rd_ld32(p, swap), size);
    if (f->is_mem) {
        if (f->end - f->pos < size)
            return cut_off(r, f, f->pos, 0, err,
                           "record (type %u, size %u) runs past the end of "
                           "the data at 0x%llx", rd_ld32(p, swap), size,
                           (unsigned long long)f->end);
    } else if (stream_fill(f, size) < size) {
        return cut_off(r, f, f->pos, 0, err,
                       "input ends inside a record (type %u, size %u)",
                       rd_ld32(p, swap), size);
    } else {
        p = f->buf + f->b0;
    }
    raw->p = p;
    raw->type = rd_ld32(p, swap);
    raw->misc = rd_ld16(p + 4, swap);
    raw->size = size;
    raw->off = f->pos;
    raw->zst = 0;
    raw->stable = f->is_mem;
    f->pos += size;
    if (!f->is_mem)
        f->b0 += size;
    return 1;
}

/* ---- zstd ------------------------------------------------------------------ */

/* One record of one file, no compression layer (tail.c's own walk). */
int rd_file_step(lp_reader *r, rd_file *f, rd_raw *raw, lp_error *err)
{
    return file_next(r, f, raw, err);
}

void rd_zstd_free(rd_zstd *z)
{
    if (z->ds)
        ZSTD_freeDStream(z->ds);
    free(z->in);
    free(z->out);
    memset(z, 0, sizeof *z);
}

/* Start decompressing one COMPRESSED / COMPRESSED2 record. */
static int zstd_feed(lp_reader *r, const rd_raw *raw, const char *fname,
                     lp_error *err)
{
    rd_zstd *z = &r->z;
    const uint8_t *data = raw->p + 8;
    size_t len = raw->size - 8u;

    if (raw->zst)
        return rd_errf(err, fname, raw->off, 1,
                       "COMPRESSED record inside compressed data");
    if (raw->type == RD_COMPRESSED2) {
        uint64_t dsz;
        if (len < 8)
            return rd_errf(err, fname, raw->off, 0,
                           "COMPRESSED2 record of %u bytes, expected >= 16",
                           raw->size);
        dsz = rd_ld64(data, r->swap);
        if (dsz > len - 8)
            return rd_errf(err, fname, raw->off, 0,
                           "COMPRESSED2 data_size %llu exceeds the record "
                           "(%zu bytes)", (unsigned long long)dsz, len - 8);
        data += 8;
        len = (size_t)dsz;
    }
    if (!z->ds) {
        z->ds = ZSTD_createDStream();
        z->in = malloc(RD_MAX_RECORD);
        z->out = malloc(RD_ZOUT_BUF);
        if (!z->ds || !z->in || !z->out)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        ZSTD_initDStream(z->ds);
    }
    memcpy(z->in, data, len);
    z->rec_out = 0;
    z->limit = 2 * r->comp_mmap_len > RD_ZSTD_MIN_LIMIT ? 2 * r->comp_mmap_len
                                                        : RD_ZSTD_MIN_LIMIT;
    z->in_len = len;
    z->in_pos = 0;
    z->active = 1;
    r->stats.compressed_blocks++;
    return 0;
}

/* Next record from the decompressed window: 1 got, 0 need input, -1 err. */
static int zstd_next(lp_reader *r, rd_raw *raw, const char *fname,
                     lp_error *err)
{
    rd_zstd *z = &r->z;

    for (;;) {
        size_t avail = z->o1 - z->o0;
        if (avail >= 8) {
            const uint8_t *p = z->out + z->o0;
            uint16_t size = rd_ld16(p + 6, r->swap);
            if (size < 8)
                return rd_errf(err, fname, z->off, 1,
                               "record (type %u) has size %u, expected >= 8",
                               rd_ld32(p, r->swap), size);
            if (avail >= size) {
                raw->p = p;
                raw->type = rd_ld32(p, r->swap);
                raw->misc = rd_ld16(p + 4, r->swap);
                raw->size = size;
                raw->off = z->off;
                raw->zst = 1;
                raw->stable = 0;
                z->o0 += size;
                z->off += size;
                return 1;
            }
        }
        if (!z->active)
            return 0;
        if (z->o0 > 0) {
            memmove(z->out, z->out + z->o0, avail);
            z->o1 = avail;
            z->o0 = 0;
        }
        ZSTD_inBuffer in = { z->in, z->in_len, z->in_pos };
        ZSTD_outBuffer out = { z->out, RD_ZOUT_BUF, z->o1 };
        size_t rc = ZSTD_decompressStream(z->ds, &out, &in);
        if (ZSTD_isError(rc))
            return rd_errf(err, fname, z->off + avail, 1,
                           "zstd decompression failed: %s",
                           ZSTD_getErrorName(rc));
        r->stats.decompressed_bytes += out.pos - z->o1;
        z->rec_out += out.pos - z->o1;
        if (z->rec_out > z->limit)
            return rd_errf(err, fname, z->off + avail, 1,
                           "a COMPRESSED record expands to more than %llu "
                           "bytes (decompression bomb?)",
                           (unsigned long long)z->limit);
        int progress = out.pos != z->o1 || in.pos != z->in_pos;
        z->o1 = out.pos;
        z->in_pos = in.pos;
        if (!progress || (in.pos == in.size && out.pos < out.size))
            z->active = 0;
    }
}

/* End of one input: a partial record left in the carry window is a cut
 * (cut_off decides; when the file itself was cut, that was said). */
static int zstd_end_file(lp_reader *r, rd_file *f, lp_error *err)
{
    rd_zstd *z = &r->z;
    if (z->o1 > z->o0 && !f->cut &&
        cut_off(r, f, z->off, 1, err, "compressed data ends inside a record (%zu bytes "
                "left over)", z->o1 - z->o0) < 0)
        return -1;
    if (z->ds)
        ZSTD_initDStream(z->ds);
    z->o0 = z->o1 = 0;
    z->off = 0;
    z->active = 0;
    return 0;
}

/* Payload bytes that follow a record outside header.size. */
static int payload_extra(lp_reader *r, const rd_raw *raw, const char *fname,
                         uint64_t *extra, lp_error *err)
{
    *extra = 0;
    if (raw->type == RD_TRACING_DATA) {
        if (raw->size < 12)
            return rd_errf(err, fname, raw->off, raw->zst,
                           "TRACING_DATA record of %u bytes, expected >= 12",
                           raw->size);
        *extra = ((uint64_t)rd_ld32(raw->p + 8, r->swap) + 7) & ~7ull;
    } else if (raw->type == RD_AUXTRACE) {
        if (raw->size < 16)
            return rd_errf(err, fname, raw->off, raw->zst,
                           "AUXTRACE record of %u bytes, expected >= 16",
                           raw->size);
        *extra = rd_ld64(raw->p + 8, r->swap);
    }
    if (*extra && raw->zst)
        return rd_errf(err, fname, raw->off, 1,
                       "record type %u with a trailing payload inside "
                       "compressed data", raw->type);
    return 0;
}

/*
 * The next raw record of the whole input (all files of a directory in
 * order), with compressed blocks expanded. 1 got, 0 end, -1 error.
 */
int rd_next_raw(lp_reader *r, rd_raw *raw, lp_error *err)
{
    for (;;) {
        if (r->cur_file >= r->nr_files)
            return 0;
        rd_file *f = &r->files[r->cur_file];
        int rc = zstd_next(r, raw, f->name, err);
        if (rc < 0)
            return -1;
        if (rc == 0)
            rc = file_next(r, f, raw, err);
        if (rc < 0)
            return -1;
        if (rc == 0) {
            if (zstd_end_file(r, f, err) < 0)
                return -1;
            r->cur_file++;
            continue;
        }
        raw->file_idx = (int)r->cur_file;
        r->stats.bytes_read += raw->size;
        if (raw->type == RD_COMPRESSED || raw->type == RD_COMPRESSED2) {
            if (zstd_feed(r, raw, f->name, err) < 0)
                return -1;
            continue;
        }
        uint64_t extra;
        raw->payload = NULL;
        raw->payload_size = 0;
        if (payload_extra(r, raw, f->name, &extra, err) < 0)
            return -1;
        if (extra && raw->type == RD_AUXTRACE) {
            if (!f->is_mem) {
                memcpy(r->abuf, raw->p, raw->size);
                raw->p = (const uint8_t *)r->abuf;
            }
            if (payload_read(r, f, extra, raw, err) < 0)
                return -1;
        } else if (extra) {
            /* The record bytes stay valid: skipping never moves a memory
             * source, and for streams we copy the record first. */
            if (!f->is_mem) {
                memcpy(r->abuf, raw->p, raw->size);
                raw->p = (const uint8_t *)r->abuf;
            }
            rc = file_skip(r, f, extra, raw->off, err);
            if (rc < 0)
                return -1;
            if (rc == 0)
                continue; /* cut off inside the payload: dropped */
        }
        r->stats.complete_records++;
        return 1;
    }
}
