/*
 * tail.c - the perf.data walk over both cores: a second thread walks the
 * back part (the tail) of a mapped file-mode perf.data while the main walk
 * reads the front, and folds the tail's samples into distinct samples
 * (first file offset and count). When the main walk reaches the tail's
 * first record it delivers each distinct sample once, decoded again from
 * the mapping, with `repeat` = its count, in the order of first
 * occurrence, and walks on after the tail's region.
 *
 * Owns: choosing the split point, finding a record boundary there, the
 * tail's walk and its table, the checks that make the replay equal to
 * walking the region (below), and the replay. Does not own: the ordering
 * queue, the flush and delivery (reader.c), record decoding (rd_decode.c),
 * the byte source (rd_input.c).
 *
 * Why the replay delivers what walking would (LP_ORDER_TIME, reader.c's
 * rules). The region R = [S, f_c) holds only samples with a time, in
 * non-decreasing time in file order, and FINISHED_ROUNDs f_1 .. f_(c-1);
 * it starts with a sample; f_c and f_(c+1) follow with only such samples
 * between them (the tail saw them); c >= 2. When the main walk arrives at
 * S, every record it queued has a time <= R's first (checked then). Let
 * m_j be the largest time queued before f_j (R's last sample before f_j).
 * Walking R, the flush at f_j (limit m_(j-1)) delivers every record queued
 * with a time <= m_(j-1), sorted and stable, so: the head's queued records
 * come first; R's samples come in file order; after f_j's flush,
 * last_flush = m_(j-1) and next_flush = m_j (j >= 2). Nothing else is
 * delivered between them except the FINISHED_ROUND events (no consumer
 * acts on those; the statistics count them). R's samples still queued at
 * f_c (times > m_(c-1)) go out at f_(c+1)'s flush (limit m_c >= all of
 * them), before the samples between f_c and f_(c+1) whose time ties m_c
 * (file order), and nothing between f_c and f_(c+1) is delivered at once.
 * So walking R delivers: the head's queue, R's samples in file order, and
 * leaves max_time = m_c, next_flush = m_(c-1), last_flush = m_(c-1) after
 * f_c's flush and m_c after f_(c+1)'s (R's last sample goes out there).
 * The replay flushes the queue, delivers R's distinct samples in
 * first-occurrence order, sets that state and queues an entry without a
 * record at m_c (RD_LOC_PHANTOM) that gives f_(c+1)'s flush its
 * last_flush: the statistics' out_of_order then count as walking does.
 * With LP_ORDER_FILE the same holds trivially. Any doubt ends the region
 * earlier or discards it: the main walk then simply walks on.
 *
 * Output equality rests on the consumers being indifferent to the order of
 * samples beyond the order of first occurrence (they aggregate with
 * repeats; the text path's aggregated input gives them the same), and the
 * key of a distinct sample being every byte of its record but TIME and CPU.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "reader/rd_internal.h"
#include "reader/tail.h"
#include "util/cpus.h"
#include "util/hash.h"

#define TAIL_MIN_DATA (64ull << 20)   /* smaller inputs: not worth a thread */
#define TAIL_PERMILLE 300             /* default split: the head's share (the
                                         tail's walk costs less a byte than
                                         the head's walk and consumer) */
#define TAIL_MAX_ENTS (1u << 17)      /* table cap: 2 + 2 MiB of entries */
#define TAIL_RESYNC_SPAN (1u << 20)   /* how far to look for a boundary */
#define TAIL_RESYNC_CHAIN 16          /* records that must follow it */

typedef struct tail_ent {   /* what the replay needs: 16 bytes */
    uint64_t off, count;
} tail_ent;

typedef struct tail_pend {  /* a sample not yet in the table */
    lp_digest key;
    uint64_t off;
} tail_pend;

struct rd_tail {
    lp_reader sh;           /* shadow reader: own scratch, ev, stats */
    rd_file f;              /* shadow of files[0]: own position, window */
    pthread_t th;
    atomic_int stop;
    atomic_int done;         /* the walk has ended */
    int joined;
    int wait;                /* forced (tests): the main walk waits for the
                                tail's walk to end instead of stopping it */
    uint32_t cap;            /* most distinct samples (TAIL_MAX_ENTS) */
    int time_word, cpu_word; /* sample body words left out of the key */
    uint8_t *kbuf;           /* the record with those words zeroed */
    /* the table: distinct samples in first-occurrence order */
    tail_ent *e;
    lp_digest *key;          /* e[i]'s key (freed before the replay) */
    uint32_t n, *idx, mask;
    /* samples after f_(j-2) not yet in the table: [0, a) up to f_(j-1),
     * [a, np) after it */
    tail_pend *pend;
    size_t a, np, pcap;
    /* the walk */
    uint64_t start;          /* first record (0: none found) */
    uint64_t t_first, last_time;
    uint64_t nfr, fr_prev_off, m_prev, m_prev2; /* f_(j-1), m_(j-1), m_(j-2) */
    /* the committed region [start, c_end) */
    uint64_t c_end, c_samples, c_frs, c_m, c_m1;
    uint32_t next;           /* replay cursor */
};

/* ---- the key and the table ------------------------------------------ */

/* Word index of a fixed-position field of the sample body, -1 if absent. */
static int fixed_word(uint64_t st, uint64_t bit)
{
    static const uint64_t before[] = {
        LP_SAMPLE_IDENTIFIER, LP_SAMPLE_IP, LP_SAMPLE_TID, LP_SAMPLE_TIME,
        LP_SAMPLE_ADDR, LP_SAMPLE_ID, LP_SAMPLE_STREAM_ID, LP_SAMPLE_CPU,
    };
    int w = 0;

    if (!(st & bit))
        return -1;
    for (size_t i = 0; i < sizeof before / sizeof before[0]; i++) {
        if (before[i] == bit)
            return w;
        w += (st & before[i]) != 0;
    }
    return -1;
}

static lp_digest record_key(rd_tail *t, const rd_raw *raw)
{
    memcpy(t->kbuf, raw->p, raw->size);
    if (t->time_word >= 0 && 8u + 8u * (unsigned)t->time_word + 8 <= raw->size)
        memset(t->kbuf + 8 + 8 * t->time_word, 0, 8);
    if (t->cpu_word >= 0 && 8u + 8u * (unsigned)t->cpu_word + 8 <= raw->size)
        memset(t->kbuf + 8 + 8 * t->cpu_word, 0, 8);
    return lp_digest_inline(t->kbuf, raw->size);
}

static int pend_push(rd_tail *t, lp_digest key, uint64_t off)
{
    if (t->np == t->pcap) {
        size_t cap = t->pcap ? t->pcap * 2 : 4096;
        tail_pend *n = realloc(t->pend, cap * sizeof *n);
        if (!n)
            return -1;
        t->pend = n;
        t->pcap = cap;
    }
    t->pend[t->np++] = (tail_pend){key, off};
    return 0;
}

static void table_add(rd_tail *t, const tail_pend *p)
{
    uint32_t i = (uint32_t)p->key.lo & t->mask;

    for (;; i = (i + 1) & t->mask) {
        uint32_t k = t->idx[i];
        if (k == 0) {
            t->e[t->n] = (tail_ent){p->off, 1};
            t->key[t->n] = p->key;
            t->idx[i] = ++t->n;
            return;
        }
        if (t->key[k - 1].lo == p->key.lo && t->key[k - 1].hi == p->key.hi) {
            t->e[k - 1].count++;
            return;
        }
    }
}

/* f_j seen (j = t->nfr, m = m_j): the samples before f_(j-1) join the
 * table, and the region becomes [start, f_(j-1)) once j - 1 >= 2 (see
 * the top of the file). 0, or -1 at the cap (the region stays as it was). */
static int commit(rd_tail *t, uint64_t fr_off, uint64_t m)
{
    if (t->n + t->a > t->cap)
        return -1;
    for (size_t i = 0; i < t->a; i++)
        table_add(t, &t->pend[i]);
    t->c_samples += t->a;
    memmove(t->pend, t->pend + t->a, (t->np - t->a) * sizeof *t->pend);
    t->np -= t->a;
    t->a = t->np;
    if (t->nfr >= 3) {
        t->c_end = t->fr_prev_off;
        t->c_frs = t->nfr - 2;
        t->c_m = t->m_prev;
        t->c_m1 = t->m_prev2;
    }
    t->m_prev2 = t->m_prev;
    t->m_prev = m;
    t->fr_prev_off = fr_off;
    return 0;
}

/* ---- the walk --------------------------------------------------------- */

/* A sample the region may hold: decoded, timed, in time order. */
static int sample_ok(rd_tail *t, const rd_raw *raw)
{
    lp_error err;

    if (rd_decode(&t->sh, raw, &err) != 1 || t->sh.ev.kind != LP_EV_SAMPLE)
        return 0;
    uint64_t tm = t->sh.ev.u.sample.time;
    if (tm == 0 || tm == UINT64_MAX || tm < t->last_time)
        return 0;
    t->last_time = tm;
    return 1;
}

/* A plausible record at p: SAMPLE or FINISHED_ROUND of a sane size. */
static int plausible(const rd_tail *t, uint64_t off, uint32_t *type,
                     uint16_t *size)
{
    if (t->f.end - off < 8)
        return 0;
    const uint8_t *p = t->f.base + off;
    *type = rd_ld32(p, t->sh.swap);
    *size = rd_ld16(p + 6, t->sh.swap);
    return (*type == RD_SAMPLE || *type == RD_FINISHED_ROUND) && *size >= 8 &&
           !(*size & 7) && t->f.end - off >= *size;
}

/* A boundary at off: a sample, then a chain of plausible records whose
 * samples decode (or the end of the data). */
static int boundary_at(rd_tail *t, uint64_t off)
{
    uint32_t type;
    uint16_t size;

    for (int i = 0; i < TAIL_RESYNC_CHAIN && off < t->f.end; i++) {
        if (!plausible(t, off, &type, &size) || (i == 0 && type != RD_SAMPLE))
            return 0;
        rd_raw raw = {.p = t->f.base + off, .type = type, .size = size,
                      .off = off, .stable = 1};
        lp_error err;
        if (type == RD_SAMPLE && rd_decode(&t->sh, &raw, &err) != 1)
            return 0;
        off += size;
    }
    return 1;
}

static uint64_t resync(rd_tail *t, uint64_t from)
{
    uint64_t doff = t->sh.info.data_offset;
    uint64_t off = doff + ((from - doff + 7) & ~7ull);

    for (; off < t->f.end && off - from < TAIL_RESYNC_SPAN; off += 8)
        if (boundary_at(t, off))
            return off;
    return 0;
}

static void walk(rd_tail *t)
{
    rd_raw raw = {0}; /* file_idx 0, no payload: rd_file_step sets the rest */
    lp_error err;

    while (!atomic_load_explicit(&t->stop, memory_order_relaxed)) {
        if (rd_file_step(&t->sh, &t->f, &raw, &err) != 1)
            return;
        if (raw.type == RD_FINISHED_ROUND) {
            t->nfr++;
            if (commit(t, raw.off, t->last_time) < 0)
                return;
        } else if (raw.type != RD_SAMPLE || !sample_ok(t, &raw) ||
                   pend_push(t, record_key(t, &raw), raw.off) < 0) {
            return;
        } else if (t->t_first == 0) {
            t->t_first = t->last_time;
        }
        rd_file_release(&t->f, raw.off);
    }
}

static void *tail_main(void *arg)
{
    rd_tail *t = arg;
    uint64_t s = t->f.pos;

    t->start = resync(t, s);
    if (t->start) {
        t->f.pos = t->start;
        t->f.populated = t->f.prefetched = t->start;
        t->f.released = t->start & ~4095ull;
        walk(t);
    }
    atomic_store_explicit(&t->done, 1, memory_order_release);
    return NULL;
}

/* ---- starting ----------------------------------------------------------- */

/* LBR2PROF_DATA_SPLIT: "0" off, "N" at the data section's byte N (any
 * input, any CPU count: tests), "N%" N percent into it; ",C" after either
 * caps the table at C distinct samples. Unset: the default. */
static int split_point(const lp_reader *r, uint64_t *at, uint32_t *cap,
                       int *forced)
{
    const char *s = getenv("LBR2PROF_DATA_SPLIT");
    uint64_t doff = r->files[0].pos, dsize = r->files[0].end - doff;
    char *end;

    *cap = TAIL_MAX_ENTS;
    *forced = s && *s;
    if (s && *s) {
        unsigned long long v = strtoull(s, &end, 10);
        if (v == 0)
            return 0;
        *at = doff + (*end == '%' ? dsize * v / 100 : v);
        end += *end == '%';
        if (*end == ',' && strtoul(end + 1, NULL, 10) > 0 &&
            strtoul(end + 1, NULL, 10) < TAIL_MAX_ENTS)
            *cap = (uint32_t)strtoul(end + 1, NULL, 10);
        return *at < r->files[0].end;
    }
    if (dsize < TAIL_MIN_DATA || lp_cpus() < 2)
        return 0;
    *at = doff + dsize / 1000 * TAIL_PERMILLE;
    return 1;
}

/* Inputs the tail can stand beside (the caller checked that the walk
 * could have a thread: a mapped file-mode perf.data): one file, not
 * compressed, one sample layout with a time and without user stacks. */
static int eligible(const lp_reader *r)
{
    if (!r->opts.fold_repeats || r->info.format != LP_FMT_PERF_FILE ||
        r->nr_files != 1 ||
        !r->files[0].map_len || r->comp_mmap_len || r->info.nr_attrs == 0)
        return 0;
    uint64_t st = r->attrs[0].sample_type;
    for (size_t i = 1; i < r->info.nr_attrs; i++)
        if (r->attrs[i].sample_type != st)
            return 0;
    return (st & LP_SAMPLE_TIME) && !(st & LP_SAMPLE_STACK_USER);
}

/* What only the walk needs: gone before the replay (peak RSS). */
static void free_walk(rd_tail *t)
{
    free(t->sh.abuf);
    free(t->kbuf);
    free(t->idx);
    free(t->key);
    free(t->pend);
    t->sh.abuf = NULL;
    t->kbuf = NULL;
    t->idx = NULL;
    t->key = NULL;
    t->pend = NULL;
}

static void tail_free(rd_tail *t)
{
    if (!t)
        return;
    if (!t->joined) {
        atomic_store(&t->stop, 1);
        pthread_join(t->th, NULL);
    }
    free_walk(t);
    free(t->e);
    free(t);
}

static rd_tail *tail_new(lp_reader *r, uint64_t at, uint32_t cap)
{
    rd_tail *t = calloc(1, sizeof *t);
    uint32_t slots = TAIL_MAX_ENTS * 2;

    if (!t)
        return NULL;
    t->sh = *r;
    memset(&t->sh.stats, 0, sizeof t->sh.stats);
    t->sh.opts.warn = NULL;
    t->sh.pf = NULL;
    t->sh.abuf = aligned_alloc(8, RD_MAX_RECORD + 64);
    t->kbuf = malloc(RD_MAX_RECORD);
    t->e = malloc(TAIL_MAX_ENTS * sizeof *t->e);
    t->key = malloc(TAIL_MAX_ENTS * sizeof *t->key);
    /* made here, on the opening thread: a first malloc on the tail's
     * thread would give it a malloc arena of its own, whose pages stay */
    t->pcap = 8192;
    t->pend = malloc(t->pcap * sizeof *t->pend);
    t->idx = calloc(slots, sizeof *t->idx);
    if (!t->sh.abuf || !t->kbuf || !t->e || !t->key || !t->idx || !t->pend) {
        t->joined = 1;          /* no thread yet */
        tail_free(t);
        return NULL;
    }
    t->mask = slots - 1;
    t->cap = cap;
    t->f = r->files[0];
    t->f.pos = at;
    uint64_t st = r->attrs[0].sample_type;
    t->time_word = fixed_word(st, LP_SAMPLE_TIME);
    t->cpu_word = fixed_word(st, LP_SAMPLE_CPU);
    return t;
}

void rd_tail_start(lp_reader *r)
{
    uint64_t at;
    uint32_t cap;
    int forced;

    r->tail_at = UINT64_MAX;
    if (!eligible(r) || !split_point(r, &at, &cap, &forced))
        return;
    rd_tail *t = tail_new(r, at, cap);
    if (!t)
        return;
    t->wait = forced;
    if (pthread_create(&t->th, NULL, tail_main, t) != 0) {
        t->joined = 1;
        tail_free(t);
        return;
    }
    r->tail = t;
    r->tail_at = at;
}

int rd_tail_walking(lp_reader *r)
{
    rd_tail *t = r->tail;

    if (!t || t->joined || !atomic_load_explicit(&t->done, memory_order_acquire))
        return t != NULL;
    if (t->c_end == 0)
        rd_tail_discard(r);     /* nothing found */
    return 0;
}

void rd_tail_discard(lp_reader *r)
{
    tail_free(r->tail);
    r->tail = NULL;
    r->tail_at = UINT64_MAX;
}

/* ---- arriving and replaying --------------------------------------------- */

int rd_tail_arrive(lp_reader *r)
{
    rd_tail *t = r->tail;
    const rd_file *f = &r->files[0];


    if (r->cur_file != 0 || r->z.active) {
        rd_tail_discard(r);
        return 0;
    }
    if (!t->joined) {
        if (!t->wait)
            atomic_store(&t->stop, 1);
        pthread_join(t->th, NULL);
        t->joined = 1;
        free_walk(t);
        if (!t->start || !t->c_end) {
            rd_tail_discard(r);
            return 0;
        }
        r->tail_at = t->start;
    }
    if (f->pos < t->start)
        return 0;
    /* landed off the boundary, or the head queued something later than
     * the region's first sample */
    if (f->pos != t->start ||
        (r->opts.order == LP_ORDER_TIME && r->q.max_time > t->t_first)) {
        rd_tail_discard(r);
        return 0;
    }
    r->tail_at = UINT64_MAX;
    return 1;
}

/* Give back the pages the replay faulted in again, below the record it
 * is at and below whatever the prefetcher's ring still points into. */
static void replay_release(lp_reader *r, uint64_t off)
{
    rd_file *f = &r->files[0];
    const uint8_t *hold = r->pf ? lp_pfetch_hold(r->pf) : NULL;

    if (hold && (hold < f->base + 8 || hold >= f->base + f->end))
        return;
    if (hold && (uint64_t)(hold - 8 - f->base) < off)
        off = (uint64_t)(hold - 8 - f->base);
    rd_file_release(f, off);
}

/* The region's records as walking it would have counted them, its state
 * of the queue (the region's samples after f_(c-1) are still queued there
 * when the walk is at f_c: one entry of the last one's time stands for
 * them, so that last_flush is m_c after f_(c+1)'s flush), and the walk
 * goes on at f_c. */
static int replay_end(lp_reader *r, lp_error *err)
{
    rd_tail *t = r->tail;
    rd_file *f = &r->files[0];

    r->stats.records += t->c_samples - t->n + t->c_frs;
    r->stats.samples += t->c_samples - t->n;
    r->stats.complete_records += t->c_samples + t->c_frs;
    r->stats.bytes_read += t->c_end - t->start;
    f->pos = t->c_end;
    if (f->prefetched < f->pos)
        f->prefetched = f->pos;
    if (r->opts.order == LP_ORDER_TIME) {
        r->q.max_time = t->c_m;
        r->q.next_flush = t->c_m1;
        r->q.last_flush = t->c_m1;
        if (rd_queue_phantom(r, t->c_m, err) < 0)
            return -1;
    }
    rd_tail_discard(r);
    r->state = RD_RUN;
    return 0;
}

int rd_tail_replay(lp_reader *r, lp_error *err)
{
    rd_tail *t = r->tail;

    while (t->next < t->n) {
        const tail_ent *e = &t->e[t->next++];
        const uint8_t *p = r->files[0].base + e->off;
        /* not stable: decoded in the reader's scratch, so the prefetcher
         * copies the sample and its page can go at once (pointed at, the
         * pages of the ring's 2048 events stayed: +10 MB of peak RSS) */
        rd_raw raw = {.p = p, .type = RD_SAMPLE, .misc = rd_ld16(p + 4, r->swap),
                      .size = rd_ld16(p + 6, r->swap), .off = e->off};
        if ((t->next & 63) == 0)
            replay_release(r, e->off);
        int rc = rd_decode(r, &raw, err);
        if (rc < 0)
            return -1;
        if (rc > 0) {
            r->ev.u.sample.repeat = e->count;
            r->ev.u.sample.calls = e->count;
            return 1;
        }
    }
    return replay_end(r, err);
}
