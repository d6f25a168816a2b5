/*
 * rd_decode.c - turns one raw record into an lp_event: the sample_id_all
 * trailer (parsed from the end), every PERF_SAMPLE_* field in kernel order,
 * and the fixed layouts of MMAP/MMAP2/COMM/FORK/EXIT/LOST/THROTTLE. It
 * copies the record into the reader's aligned buffer first and converts
 * arrays to host order there, so nothing handed out points into the file.
 * It also extracts timestamps for the ordering queue. It does not read
 * input (rd_input.c) nor decide the delivery order (reader.c).
 */
#include <stdarg.h>
#include <stdlib.h>

#include "reader/rd_internal.h"

typedef struct dctx {     /* decoding state of one record */
    lp_reader *r;
    const rd_raw *raw;
    const char *fname;
    uint64_t *w;          /* body words, aligned */
    size_t n, i;          /* word count, cursor */
    int swap;
} dctx;

/* "a count in the record needs more bytes than the record has". */
static int dfail(const dctx *d, lp_error *err, const char *what,
                 uint64_t count, unsigned mult)
{
    (void)mult;
    return rd_errf(err, d->fname, d->raw->off, d->raw->zst,
                   "%s: %s %llu overflows the record (%zu bytes left at "
                   "body offset %zu)",
                   d->raw->type == RD_SAMPLE ? "sample" : "record", what,
                   (unsigned long long)count, (d->n - d->i) * 8, d->i * 8);
}

static inline int need(const dctx *d, uint64_t count, unsigned mult)
{
    return count <= (d->n - d->i) / mult;
}

static inline uint64_t W(dctx *d)
{
    return d->swap ? bswap_64(d->w[d->i++]) : d->w[d->i++];
}

static void swap_words(uint64_t *p, size_t n)
{
    for (size_t k = 0; k < n; k++)
        p[k] = bswap_64(p[k]);
}

/* Branch flags of a byte-swapped file: the bitfield was allocated from the
 * most significant bit; rebuild it field by field (doc §3.8). */
static uint64_t swap_branch_flags(uint64_t v)
{
    static const unsigned width[] = { 1, 1, 1, 1, 16, 4, 2, 4, 3, 31 };
    unsigned hi = 64, lo = 0;
    uint64_t out = 0;
    for (size_t k = 0; k < sizeof width / sizeof width[0]; k++) {
        uint64_t mask = (1ull << width[k]) - 1;
        hi -= width[k];
        out |= ((v >> hi) & mask) << lo;
        lo += width[k];
    }
    return out;
}

/* ---- samples -------------------------------------------------------------- */

static int read_format_words(dctx *d, const lp_attr *a, uint64_t *words)
{
    uint64_t rf = a->read_format;
    uint64_t fixed = !!(rf & 1) + !!(rf & 2);
    uint64_t per = 1 + !!(rf & 4) + !!(rf & 16);
    if (rf & 8) {
        if (!need(d, 1, 1))
            return -1;
        uint64_t nr = d->swap ? bswap_64(d->w[d->i]) : d->w[d->i];
        if (nr > d->n / per)
            return -1;
        *words = 1 + fixed + nr * per;
    } else {
        *words = fixed + per;
    }
    return 0;
}

static int sample_branches(dctx *d, const lp_attr *a, lp_sample *s,
                           lp_error *err)
{
    if (!need(d, 1, 1))
        return dfail(d, err, "branch stack nr", 0, 1);
    s->branch_nr = W(d);
    if (a->branch_sample_type & LP_BRANCH_HW_INDEX) {
        if (!need(d, 1, 1))
            return dfail(d, err, "branch hw_idx", 0, 1);
        s->has_hw_idx = 1;
        s->hw_idx = W(d);
    }
    if (!need(d, s->branch_nr, 3))
        return dfail(d, err, "branch stack of entries", s->branch_nr, 3);
    lp_branch_entry *b = (lp_branch_entry *)(void *)&d->w[d->i];
    if (d->swap)
        for (uint64_t k = 0; k < s->branch_nr; k++) {
            b[k].from = bswap_64(b[k].from);
            b[k].to = bswap_64(b[k].to);
            b[k].flags = swap_branch_flags(bswap_64(b[k].flags));
        }
    s->branches = b;
    d->i += (size_t)s->branch_nr * 3;
    if (a->branch_sample_type & LP_BRANCH_COUNTERS) {
        if (!need(d, s->branch_nr, 1))
            return dfail(d, err, "branch counters of entries", s->branch_nr,
                         1);
        if (d->swap)
            swap_words(&d->w[d->i], (size_t)s->branch_nr);
        s->branch_counters = &d->w[d->i];
        d->i += (size_t)s->branch_nr;
    }
    return 0;
}

static int sample_regs(dctx *d, uint64_t mask, uint64_t *abi,
                       const uint64_t **regs, const char *what, lp_error *err)
{
    if (!need(d, 1, 1))
        return dfail(d, err, what, 0, 1);
    *abi = W(d);
    if (!*abi)
        return 0;
    uint64_t nr = (uint64_t)rd_popcount(mask);
    if (!need(d, nr, 1))
        return dfail(d, err, what, nr, 1);
    if (d->swap)
        swap_words(&d->w[d->i], (size_t)nr);
    if (regs)
        *regs = &d->w[d->i];
    d->i += (size_t)nr;
    return 0;
}

/* u64 size; u8 data[size] (padded to 8): STACK_USER and AUX. */
static int sample_blob(dctx *d, uint64_t *size, const uint8_t **data,
                       const char *what, lp_error *err)
{
    if (!need(d, 1, 1))
        return dfail(d, err, what, 0, 1);
    *size = W(d);
    uint64_t words = *size / 8 + !!(*size % 8);
    if (!need(d, words, 1))
        return dfail(d, err, what, *size, 1);
    if (data)
        *data = (const uint8_t *)&d->w[d->i];
    d->i += (size_t)words;
    return 0;
}

/* Fields after BRANCH_STACK. */
static int sample_tail(dctx *d, const lp_attr *a, lp_sample *s, lp_error *err)
{
    uint64_t st = a->sample_type, tmp;

    if (st & LP_SAMPLE_REGS_USER)
        if (sample_regs(d, a->sample_regs_user, &s->regs_user_abi,
                        &s->regs_user, "user registers", err) < 0)
            return -1;
    if (s->regs_user_abi)
        s->regs_user_mask = a->sample_regs_user;
    if (st & LP_SAMPLE_STACK_USER) {
        if (sample_blob(d, &s->stack_user_size, &s->stack_user,
                        "user stack size", err) < 0)
            return -1;
        if (s->stack_user_size) {
            if (!need(d, 1, 1))
                return dfail(d, err, "user stack dyn_size", 0, 1);
            s->stack_user_dyn_size = W(d);
        }
    }
    if (st & (LP_SAMPLE_WEIGHT | LP_SAMPLE_WEIGHT_STRUCT)) {
        if (!need(d, 1, 1))
            return dfail(d, err, "weight", 0, 1);
        s->weight = W(d);
        if (st & LP_SAMPLE_WEIGHT_STRUCT)
            s->weight &= 0xffffffffu;
    }
    uint64_t one = LP_SAMPLE_DATA_SRC | LP_SAMPLE_TRANSACTION;
    if (!need(d, (uint64_t)rd_popcount(st & one), 1))
        return dfail(d, err, "data_src/transaction", 0, 1);
    d->i += (size_t)rd_popcount(st & one);
    if (st & LP_SAMPLE_REGS_INTR)
        if (sample_regs(d, a->sample_regs_intr, &tmp, NULL,
                        "interrupt registers", err) < 0)
            return -1;
    one = LP_SAMPLE_PHYS_ADDR | LP_SAMPLE_CGROUP | LP_SAMPLE_DATA_PAGE_SIZE |
          LP_SAMPLE_CODE_PAGE_SIZE;
    if (!need(d, (uint64_t)rd_popcount(st & one), 1))
        return dfail(d, err, "phys_addr/cgroup/page sizes", 0, 1);
    d->i += (size_t)rd_popcount(st & one);
    if (st & LP_SAMPLE_AUX)
        if (sample_blob(d, &tmp, NULL, "aux size", err) < 0)
            return -1;
    return 0;
}

/* Fixed u64 fields before READ, in kernel order. */
static int sample_head(dctx *d, const lp_attr *a, lp_sample *s, lp_error *err)
{
    uint64_t st = a->sample_type;
    uint64_t bits = LP_SAMPLE_IDENTIFIER | LP_SAMPLE_IP | LP_SAMPLE_TID |
                    LP_SAMPLE_TIME | LP_SAMPLE_ADDR | LP_SAMPLE_ID |
                    LP_SAMPLE_STREAM_ID | LP_SAMPLE_CPU | LP_SAMPLE_PERIOD;
    uint64_t nfix = (uint64_t)rd_popcount(st & bits);
    if (!need(d, nfix, 1))
        return dfail(d, err, "fixed fields", nfix, 1);
    if (st & LP_SAMPLE_IDENTIFIER)
        s->id = W(d);
    if (st & LP_SAMPLE_IP)
        s->ip = W(d);
    if (st & LP_SAMPLE_TID) {
        s->pid = rd_ld32(&d->w[d->i], d->swap);
        s->tid = rd_ld32((const uint8_t *)&d->w[d->i] + 4, d->swap);
        d->i++;
    }
    if (st & LP_SAMPLE_TIME)
        s->time = W(d);
    if (st & LP_SAMPLE_ADDR)
        s->addr = W(d);
    if (st & LP_SAMPLE_ID)
        s->id = W(d);
    if (st & LP_SAMPLE_STREAM_ID)
        s->stream_id = W(d);
    if (st & LP_SAMPLE_CPU) {
        s->cpu = rd_ld32(&d->w[d->i], d->swap);
        d->i++;
    }
    s->period = (st & LP_SAMPLE_PERIOD) ? W(d) : a->sample_period;
    return 0;
}

static int decode_sample(dctx *d, const lp_attr *a, lp_error *err)
{
    lp_sample *s = &d->r->ev.u.sample;
    uint64_t st = a->sample_type;

    s->attr = a;
    s->sample_type = st;
    s->repeat = 1;
    s->calls = 1;
    if (sample_head(d, a, s, err) < 0)
        return -1;
    if (st & LP_SAMPLE_READ) {
        uint64_t words;
        if (read_format_words(d, a, &words) < 0 || !need(d, words, 1))
            return dfail(d, err, "read_format values", 0, 1);
        d->i += (size_t)words;
    }
    if (st & LP_SAMPLE_CALLCHAIN) {
        if (!need(d, 1, 1))
            return dfail(d, err, "callchain nr", 0, 1);
        s->callchain_nr = W(d);
        if (!need(d, s->callchain_nr, 1))
            return dfail(d, err, "callchain of entries", s->callchain_nr, 1);
        if (d->swap)
            swap_words(&d->w[d->i], (size_t)s->callchain_nr);
        s->callchain = &d->w[d->i];
        d->i += (size_t)s->callchain_nr;
    }
    if (st & LP_SAMPLE_RAW) {
        if (!need(d, 1, 1))
            return dfail(d, err, "raw size", 0, 1);
        uint64_t rsz = rd_ld32(&d->w[d->i], d->swap);
        uint64_t words = (rsz + 4 + 7) / 8;
        if (!need(d, words, 1))
            return dfail(d, err, "raw data of bytes", rsz, 1);
        d->i += (size_t)words;
    }
    if (st & LP_SAMPLE_BRANCH_STACK)
        if (sample_branches(d, a, s, err) < 0)
            return -1;
    if (d->r->opts.skip_payloads)
        return 0;
    return sample_tail(d, a, s, err);
}

/* ---- sample_id trailer ---------------------------------------------------- */

static size_t trailer_words(uint64_t st)
{
    return (size_t)rd_popcount(
        st & (LP_SAMPLE_TID | LP_SAMPLE_TIME | LP_SAMPLE_ID |
              LP_SAMPLE_STREAM_ID | LP_SAMPLE_CPU | LP_SAMPLE_IDENTIFIER));
}

/* Parse the trailer at the end of d's body; shrink d->n to exclude it. */
static int parse_trailer(dctx *d, const lp_attr *a, lp_sample_id *sid,
                         lp_error *err)
{
    uint64_t st = a->sample_type;
    size_t k = trailer_words(st);
    memset(sid, 0, sizeof *sid);
    if (!a->sample_id_all)
        return 0;
    if (k > d->n)
        return rd_errf(err, d->fname, d->raw->off, d->raw->zst,
                       "record (type %u, %u bytes) is too short for its "
                       "%zu-byte sample_id trailer", d->raw->type,
                       d->raw->size, k * 8);
    size_t j = d->n;
    const uint64_t *w = d->w;
#define TW() (d->swap ? bswap_64(w[--j]) : w[--j])
    if (st & LP_SAMPLE_IDENTIFIER)
        sid->id = TW();
    if (st & LP_SAMPLE_CPU) {
        --j;
        sid->cpu = rd_ld32(&w[j], d->swap);
    }
    if (st & LP_SAMPLE_STREAM_ID)
        sid->stream_id = TW();
    if (st & LP_SAMPLE_ID)
        sid->id = TW();
    if (st & LP_SAMPLE_TIME)
        sid->time = TW();
    if (st & LP_SAMPLE_TID) {
        --j;
        sid->pid = rd_ld32(&w[j], d->swap);
        sid->tid = rd_ld32((const uint8_t *)&w[j] + 4, d->swap);
    }
#undef TW
    sid->present = 1;
    d->n = j;
    return 0;
}

/* ---- other kernel records ------------------------------------------------- */

/* NUL-terminated string in body bytes [from, n*8), inside our copy. */
static const char *body_string(dctx *d, size_t from)
{
    size_t end = d->n * 8;
    char *b = (char *)d->w;
    if (from >= end)
        return "";
    if (!memchr(b + from, 0, end - from))
        b[end - 1] = 0;
    return b + from;
}

static int too_short(const dctx *d, const char *what, size_t need_bytes,
                     lp_error *err)
{
    return rd_errf(err, d->fname, d->raw->off, d->raw->zst,
                   "%s record of %u bytes (%zu without its sample_id), "
                   "expected >= %zu", what, d->raw->size, d->n * 8 + 8,
                   need_bytes + 8);
}

static int decode_mmap(dctx *d, int v2, lp_error *err)
{
    lp_mmap_event *m = &d->r->ev.u.mmap;
    const uint8_t *b = (const uint8_t *)d->w;
    size_t fixed = v2 ? 64 : 32;
    int s = d->swap;
    if (d->n * 8 < fixed)
        return too_short(d, v2 ? "MMAP2" : "MMAP", fixed, err);
    m->pid = rd_ld32(b, s);
    m->tid = rd_ld32(b + 4, s);
    m->start = rd_ld64(b + 8, s);
    m->len = rd_ld64(b + 16, s);
    m->pgoff = rd_ld64(b + 24, s);
    m->is_mmap2 = v2;
    if (v2) {
        if (d->raw->misc & LP_MISC_MMAP_BUILD_ID) {
            m->build_id_size = b[32] <= 20 ? b[32] : 20;
            memcpy(m->build_id, b + 36, 20);
        } else {
            m->maj = rd_ld32(b + 32, s);
            m->min = rd_ld32(b + 36, s);
            m->ino = rd_ld64(b + 40, s);
            m->ino_generation = rd_ld64(b + 48, s);
        }
        m->prot = rd_ld32(b + 56, s);
        m->flags = rd_ld32(b + 60, s);
    }
    m->filename = body_string(d, fixed);
    d->r->stats.mmaps++;
    return 0;
}

static int decode_other(dctx *d, lp_error *err)
{
    lp_event *ev = &d->r->ev;
    const uint8_t *b = (const uint8_t *)d->w;
    int s = d->swap;

    switch (d->raw->type) {
    case RD_MMAP:
    case RD_MMAP2:
        ev->kind = LP_EV_MMAP;
        return decode_mmap(d, d->raw->type == RD_MMAP2, err);
    case RD_COMM:
        if (d->n * 8 < 8)
            return too_short(d, "COMM", 8, err);
        ev->kind = LP_EV_COMM;
        ev->u.comm.pid = rd_ld32(b, s);
        ev->u.comm.tid = rd_ld32(b + 4, s);
        ev->u.comm.exec = !!(d->raw->misc & LP_MISC_COMM_EXEC);
        ev->u.comm.comm = body_string(d, 8);
        d->r->stats.comms++;
        return 0;
    case RD_FORK:
    case RD_EXIT:
        if (d->n * 8 < 24)
            return too_short(d, d->raw->type == RD_FORK ? "FORK" : "EXIT",
                             24, err);
        ev->kind = d->raw->type == RD_FORK ? LP_EV_FORK : LP_EV_EXIT;
        ev->u.task.pid = rd_ld32(b, s);
        ev->u.task.ppid = rd_ld32(b + 4, s);
        ev->u.task.tid = rd_ld32(b + 8, s);
        ev->u.task.ptid = rd_ld32(b + 12, s);
        ev->u.task.time = rd_ld64(b + 16, s);
        if (d->raw->type == RD_FORK)
            d->r->stats.forks++;
        else
            d->r->stats.exits++;
        return 0;
    case RD_LOST:
        if (d->n * 8 < 16)
            return too_short(d, "LOST", 16, err);
        ev->kind = LP_EV_LOST;
        ev->u.lost.id = rd_ld64(b, s);
        ev->u.lost.lost = rd_ld64(b + 8, s);
        d->r->stats.lost_records++;
        d->r->stats.lost_events += ev->u.lost.lost;
        return 0;
    case RD_LOST_SAMPLES:
        if (d->n * 8 < 8)
            return too_short(d, "LOST_SAMPLES", 8, err);
        ev->kind = LP_EV_LOST_SAMPLES;
        ev->u.lost.lost = rd_ld64(b, s);
        d->r->stats.lost_samples += ev->u.lost.lost;
        return 0;
    case RD_THROTTLE:
    case RD_UNTHROTTLE:
        if (d->n * 8 < 24)
            return too_short(d, "THROTTLE", 24, err);
        ev->kind = d->raw->type == RD_THROTTLE ? LP_EV_THROTTLE
                                               : LP_EV_UNTHROTTLE;
        ev->u.throttle.time = rd_ld64(b, s);
        ev->u.throttle.id = rd_ld64(b + 8, s);
        ev->u.throttle.stream_id = rd_ld64(b + 16, s);
        return 0;
    default:
        ev->kind = LP_EV_OTHER;
        return 0;
    }
}

/* ---- entry points ------------------------------------------------------ */

static void dctx_init(dctx *d, lp_reader *r, const rd_raw *raw, uint64_t *w)
{
    d->r = r;
    d->raw = raw;
    d->fname = r->files[raw->file_idx].name;
    d->w = w;
    d->n = (raw->size - 8u) / 8;
    d->i = 0;
    d->swap = r->swap;
}

/* Timestamp used for ordering (0: deliver at once). Reads the raw bytes. */
int rd_timestamp(lp_reader *r, const rd_raw *raw, uint64_t *time, lp_error *err)
{
    const uint8_t *body = raw->p + 8;
    size_t n = (raw->size - 8u) / 8;
    (void)err;
    *time = 0;
    if (raw->type >= RD_USER_START)
        return 0;
    int ai = rd_attr_for(r, raw, body, n);
    if (ai < 0)
        return 0;
    const lp_attr *a = &r->attrs[ai];
    uint64_t st = a->sample_type;
    if (!(st & LP_SAMPLE_TIME))
        return 0;
    if (raw->type == RD_SAMPLE) {
        size_t k = !!(st & LP_SAMPLE_IDENTIFIER) + !!(st & LP_SAMPLE_IP) +
                   !!(st & LP_SAMPLE_TID);
        if (k < n)
            *time = rd_ld64(body + 8 * k, r->swap);
        return 0;
    }
    if (!a->sample_id_all)
        return 0;
    size_t after = !!(st & LP_SAMPLE_ID) + !!(st & LP_SAMPLE_STREAM_ID) +
                   !!(st & LP_SAMPLE_CPU) + !!(st & LP_SAMPLE_IDENTIFIER);
    if (after + 1 <= n)
        *time = rd_ld64(body + 8 * (n - after - 1), r->swap);
    return 0;
}

/* Decode into r->ev. 1: deliver; 0: drop (unknown id); -1: error. */
int rd_decode(lp_reader *r, const rd_raw *raw, lp_error *err)
{
    lp_event *ev = &r->ev;
    dctx d;

    uint64_t *w = r->abuf + 1;
    /* Samples of a host-order mapping that are 8-byte aligned are decoded
     * in place (read only; the mapping lives until close). Everything else
     * is copied to the aligned buffer first. */
    if (raw->type == RD_SAMPLE && raw->stable && !r->swap &&
        ((uintptr_t)raw->p & 7) == 0) {
        w = (uint64_t *)(void *)(uintptr_t)(raw->p + 8);
    } else {
        if (raw->p != (const uint8_t *)r->abuf)
            memcpy(r->abuf, raw->p, raw->size);
        ((uint8_t *)r->abuf)[raw->size] = 0;
    }
    memset(ev, 0, sizeof *ev);
    ev->type = raw->type;
    ev->misc = raw->misc;
    ev->offset = raw->off;
    ev->compressed = raw->zst;
    ev->source = r->files[raw->file_idx].name;
    ev->body = (const uint8_t *)w;
    ev->body_size = raw->size - 8u;
    if (raw->type == RD_AUXTRACE) {
        ev->payload = raw->payload;
        ev->payload_size = raw->payload_size;
    }
    r->stats.records++;
    dctx_init(&d, r, raw, w);
    if (raw->type >= RD_USER_START) {
        ev->kind = raw->type == RD_FINISHED_ROUND ? LP_EV_FINISHED_ROUND
                   : raw->type == RD_FINISHED_INIT ? LP_EV_FINISHED_INIT
                                                   : LP_EV_OTHER;
        return 1;
    }
    if (r->info.nr_attrs == 0)
        return rd_errf(err, d.fname, raw->off, raw->zst,
                       "record (type %u) before any event attribute "
                       "(HEADER_ATTR)", raw->type);
    int ai = rd_attr_for(r, raw, (const uint8_t *)d.w, d.n);
    if (ai < 0) {
        r->stats.unknown_id++;
        return 0;
    }
    const lp_attr *a = &r->attrs[ai];
    if (raw->type == RD_SAMPLE) {
        ev->kind = LP_EV_SAMPLE;
        if (decode_sample(&d, a, err) < 0)
            return -1;
        ev->time = ev->u.sample.time;
        r->stats.samples++;
        return 1;
    }
    if (parse_trailer(&d, a, &ev->sid, err) < 0)
        return -1;
    ev->time = ev->sid.time;
    return decode_other(&d, err) < 0 ? -1 : 1;
}
