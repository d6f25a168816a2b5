/*
 * tail.c - the perf.data walk over both cores: a second thread walks the
 * back part (the tail) of a mapped file-mode perf.data while the main walk
 * reads the front, and folds the tail's samples into distinct samples
 * (first file offset and count). When the main walk reaches the tail's
 * first record it delivers each distinct sample once, decoded again from
 * the mapping, with `repeat` = its count, in the order of first
 * occurrence, and walks on after the tail's region.
 *
 * The region comes in pieces: the main walk takes what the tail committed
 * when it arrives while the tail walks on, and asks for the next piece
 * when it has delivered one (the tail cuts its table at its next commit),
 * so the tail's thread keeps the second core through the replay and the
 * main walk no longer walks what was left after the tail's region. A
 * sample repeated across pieces is delivered once per piece, each with its
 * count there: to a consumer that takes repeat n as n records, the same
 * (the pieces are consecutive, no other event between them, and a sample's
 * first delivery is still in the order of first occurrence).
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
 * earlier or discards it: the main walk then simply walks on. Cut into
 * pieces, R is still one region: each piece ends at one of its f_j, the
 * pieces' samples and FINISHED_ROUNDs add up to R's, and the state set at
 * the end is the last piece's (that of R).
 *
 * Output equality rests on the consumers being indifferent to the order of
 * samples beyond the order of first occurrence (they aggregate with
 * repeats; the text path's aggregated input gives them the same), and the
 * key of a distinct sample being every byte of its record but TIME and CPU.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "reader/rd_internal.h"
#include "reader/tail.h"
#include "util/cpus.h"
#include "util/hash.h"

#define TAIL_MIN_DATA (64ull << 20)   /* smaller inputs: not worth a thread */
#define TAIL_PERMILLE 300             /* default split: the head's share (the
                                         tail's walk costs less a byte than
                                         the head's walk and consumer) */
#define TAIL_PERMILLE_LIGHT 180       /* ... with a light consumer (the flat
                                         aggregator: the tail walks on while
                                         the main walk delivers its pieces,
                                         which cost it little; on an idle
                                         machine 18% gave the shortest wall
                                         of 10-26% on sqlite line and probe:
                                         at 10% the main thread waited for
                                         the tail) */
#define TAIL_MAX_ENTS (1u << 17)      /* table cap: 2 + 2 MiB of entries */
#define TAIL_RESYNC_SPAN (1u << 20)   /* how far to look for a boundary */
#define TAIL_MAP_WINDOW_MIN (512u << 10) /* the tail's mapping: populated
                                         ahead and given back behind in
                                         steps of the region's 1/256th,
                                         within these bounds. Each give-
                                         back is a TLB shootdown, an
                                         interrupt of the other core: with
                                         512 KiB steps sqlite-line made
                                         ~1,900 of them, ~30 ms of its 0.6
                                         s on 2 cores; a small input's
                                         peak RSS is while it reads (bench
                                         (b), 100 MB: 4 MiB steps +3 MB) */
#define TAIL_MAP_WINDOW_MAX (4u << 20)
#define TAIL_MAP_STEPS 256
#define TAIL_RESYNC_CHAIN 16          /* records that must follow it */

typedef struct tail_ent {   /* what the replay needs: 16 bytes */
    uint64_t off, count;
} tail_ent;

/* A piece of the region, [begin, end): its distinct samples, its samples
 * and FINISHED_ROUNDs, and the queue's state walking up to `end` leaves
 * (c_m, c_m1 at the top of the file). */
typedef struct tail_piece {
    tail_ent *e;
    uint32_t n;
    int buf;                 /* which of the tail's two entry arrays */
    uint64_t begin, end, samples, frs, m, m1;
} tail_piece;

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
                                tail's walk to end (or for its pieces of
                                `every` rounds) instead of asking for them */
    uint32_t cap;            /* most distinct samples (TAIL_MAX_ENTS) */
    int time_word, cpu_word; /* sample body words left out of the key */
    uint8_t *kbuf;           /* the record with those words zeroed */
    /* the table: distinct samples of the piece being walked, in
     * first-occurrence order, in buf[cur] (the other one is the piece
     * the main walk delivers, or free) */
    tail_ent *buf[2], *e;
    int cur;
    lp_digest *key;          /* e[i]'s key */
    uint32_t n, *idx, mask;
    /* handing pieces over: under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int want;         /* the main walk asks for a piece */
    int other_free;          /* buf[!cur] may be filled */
    int have_ready;
    tail_piece ready;        /* cut, not yet taken */
    uint64_t every;          /* forced: cut every `every` commits (0: no) */
    /* the piece being walked: from p_begin; the region's counts at the
     * last cut */
    uint64_t p_begin, cut_samples, cut_frs, commits;
    /* the main walk's side */
    int arrived;
    tail_piece piece;        /* being delivered */
    uint64_t last_end, last_m, last_m1;
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
    uint32_t next;           /* replay cursor in piece */
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

/* The committed part of the table since the last cut as a piece (the
 * table holds exactly the samples of [p_begin, c_end) once c_end is set). */
static tail_piece piece_of(const rd_tail *t)
{
    return (tail_piece){t->e, t->n, t->cur, t->p_begin, t->c_end,
                        t->c_samples - t->cut_samples, t->c_frs - t->cut_frs,
                        t->c_m, t->c_m1};
}

/* After a commit: hand the committed piece over when the main walk asks
 * for it (or, forced, every `every` commits, once the other array is
 * free), and go on with an empty table in the other array. */
static void maybe_cut(rd_tail *t)
{
    t->commits++;
    if (t->c_end <= t->p_begin || t->n == 0)
        return;
    bool forced = t->every && t->commits % t->every == 0;
    if (!forced && !atomic_load_explicit(&t->want, memory_order_relaxed))
        return;
    pthread_mutex_lock(&t->mu);
    while (forced && (!t->other_free || t->have_ready) &&
           !atomic_load(&t->stop))
        pthread_cond_wait(&t->cv, &t->mu);
    if (t->other_free && !t->have_ready) {
        t->ready = piece_of(t);
        t->have_ready = 1;
        atomic_store_explicit(&t->want, 0, memory_order_relaxed);
        t->other_free = 0;
        t->cur = !t->cur;
        t->e = t->buf[t->cur];
        t->n = 0;
        memset(t->idx, 0, ((size_t)t->mask + 1) * sizeof *t->idx);
        t->p_begin = t->c_end;
        t->cut_samples = t->c_samples;
        t->cut_frs = t->c_frs;
        pthread_cond_broadcast(&t->cv);
    }
    pthread_mutex_unlock(&t->mu);
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
            maybe_cut(t);
        } else if (raw.type != RD_SAMPLE || !sample_ok(t, &raw) ||
                   pend_push(t, record_key(t, &raw), raw.off) < 0) {
            return;
        } else if (t->t_first == 0) {
            t->t_first = t->last_time;
        }
        rd_file_release(&t->f, raw.off);
    }
}

/* What only the walk needs: freed as soon as it ends (peak RSS). */
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

static void *tail_main(void *arg)
{
    rd_tail *t = arg;
    uint64_t s = t->f.pos;

    uint64_t start = resync(t, s);

    pthread_mutex_lock(&t->mu);
    t->start = t->p_begin = start;
    pthread_mutex_unlock(&t->mu);
    if (t->start) {
        t->f.pos = t->start;
        t->f.populated = t->f.prefetched = t->start;
        t->f.released = t->start & ~4095ull;
        walk(t);
    }
    free_walk(t);    /* what the pieces do not need, before the replay ends */
    pthread_mutex_lock(&t->mu);
    atomic_store_explicit(&t->done, 1, memory_order_release);
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- starting ----------------------------------------------------------- */

/* The samples go to the flat aggregator: the consumer says so, or they
 * have no call chain (the unwinder needs one). Not with the unwinder: its
 * intake of a replayed sample costs far more, and an earlier split left
 * more of it to the replay (sqlite-line CS: peak RSS +0.4 MB, sqlite-probe
 * with the flat CS options +0.9 MB). */
static int light_consumer(const lp_reader *r)
{
    return r->opts.fold_light || !(r->attrs[0].sample_type & LP_SAMPLE_CALLCHAIN);
}

/* LBR2PROF_DATA_SPLIT: "0" off, "N" at the data section's byte N (any
 * input, any CPU count: tests), "N%" N percent into it; ",C" after either
 * caps the table at C distinct samples (per piece); "/K" after those cuts
 * the region into pieces of K rounds. Unset: the default. */
static int split_point(const lp_reader *r, uint64_t *at, uint32_t *cap,
                       int *forced, uint64_t *every)
{
    const char *s = getenv("LBR2PROF_DATA_SPLIT");
    uint64_t doff = r->files[0].pos, dsize = r->files[0].end - doff;
    char *end;

    *cap = TAIL_MAX_ENTS;
    *every = 0;
    *forced = s && *s;
    if (s && *s) {
        unsigned long long v = strtoull(s, &end, 10);
        if (v == 0)
            return 0;
        *at = doff + (*end == '%' ? dsize * v / 100 : v);
        end += *end == '%';
        if (*end == ',') {
            unsigned long c = strtoul(end + 1, &end, 10);
            if (c > 0 && c < TAIL_MAX_ENTS)
                *cap = (uint32_t)c;
        }
        if (*end == '/')
            *every = strtoull(end + 1, NULL, 10);
        return *at < r->files[0].end;
    }
    if (dsize < TAIL_MIN_DATA || lp_cpus() < 2)
        return 0;
    *at = doff + dsize / 1000 * (light_consumer(r) ? TAIL_PERMILLE_LIGHT
                                                   : TAIL_PERMILLE);
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

static void tail_free(rd_tail *t)
{
    if (!t)
        return;
    if (!t->joined) {
        pthread_mutex_lock(&t->mu);
        atomic_store(&t->stop, 1);
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->th, NULL);
    }
    free_walk(t);
    free(t->buf[0]);
    free(t->buf[1]);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t);
}

/* The tail's mapping steps for a region starting at `at`. With a light
 * consumer the smallest: its peak RSS is during the replay, with the
 * tail's pages resident (sqlite-probe flat: 4 MiB steps, +7 MB). */
static uint64_t window_for(const lp_reader *r, uint64_t at)
{
    uint64_t w = (r->files[0].end - at) / TAIL_MAP_STEPS;

    if (light_consumer(r) || w < TAIL_MAP_WINDOW_MIN)
        return TAIL_MAP_WINDOW_MIN;
    return w > TAIL_MAP_WINDOW_MAX ? TAIL_MAP_WINDOW_MAX : w & ~(uint64_t)4095;
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
    t->buf[0] = malloc(TAIL_MAX_ENTS * sizeof *t->e);
    t->buf[1] = malloc(TAIL_MAX_ENTS * sizeof *t->e);
    t->e = t->buf[0];
    t->other_free = 1;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->key = malloc(TAIL_MAX_ENTS * sizeof *t->key);
    /* made here, on the opening thread: a first malloc on the tail's
     * thread would give it a malloc arena of its own, whose pages stay */
    t->pcap = 8192;
    t->pend = malloc(t->pcap * sizeof *t->pend);
    t->idx = calloc(slots, sizeof *t->idx);
    if (!t->sh.abuf || !t->kbuf || !t->buf[0] || !t->buf[1] || !t->key ||
        !t->idx || !t->pend) {
        t->joined = 1;          /* no thread yet */
        tail_free(t);
        return NULL;
    }
    t->mask = slots - 1;
    t->cap = cap;
    t->f = r->files[0];
    t->f.pos = at;
    t->f.window = window_for(r, at);
    uint64_t st = r->attrs[0].sample_type;
    t->time_word = fixed_word(st, LP_SAMPLE_TIME);
    t->cpu_word = fixed_word(st, LP_SAMPLE_CPU);
    return t;
}

void rd_tail_start(lp_reader *r)
{
    uint64_t at;
    uint64_t every;
    uint32_t cap;
    int forced;

    r->tail_at = UINT64_MAX;
    if (!eligible(r) || !split_point(r, &at, &cap, &forced, &every))
        return;
    rd_tail *t = tail_new(r, at, cap);
    if (!t)
        return;
    t->wait = forced;
    t->every = every;
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

    if (!t || !atomic_load_explicit(&t->done, memory_order_acquire))
        return t != NULL;
    if (t->arrived)
        return 0;               /* the replay goes on on the walk's thread */
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

/* The next piece of the region into t->piece: 1, or 0 when there is none
 * left (the tail's walk has ended and everything it committed was taken;
 * its thread is joined then and the walk's memory freed). Asks the tail
 * for it, unless forced (tests), where the pieces come on their own. */
static int take_piece(rd_tail *t)
{
    int got = 0;

    pthread_mutex_lock(&t->mu);
    for (;;) {
        if (t->have_ready) {
            t->piece = t->ready;
            t->have_ready = 0;
            got = 1;
            break;
        }
        if (atomic_load_explicit(&t->done, memory_order_acquire))
            break;
        if (!t->wait)
            atomic_store_explicit(&t->want, 1, memory_order_relaxed);
        pthread_cond_wait(&t->cv, &t->mu);
    }
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    if (got)
        return 1;
    if (!t->joined) {
        pthread_join(t->th, NULL);
        t->joined = 1;
    }
    if (!t->start || t->c_end <= t->p_begin || t->n == 0) {
        free_walk(t);
        return 0;
    }
    t->piece = piece_of(t);     /* the rest: no thread touches it now */
    t->p_begin = t->c_end;
    t->n = 0;
    free_walk(t);
    return 1;
}

/* Done with t->piece: its array may be filled again. */
static void piece_done(lp_reader *r, rd_tail *t)
{
    const tail_piece *p = &t->piece;

    r->stats.records += p->samples - p->n + p->frs;
    r->stats.samples += p->samples - p->n;
    r->stats.complete_records += p->samples + p->frs;
    r->stats.bytes_read += p->end - p->begin;
    t->last_end = p->end;
    t->last_m = p->m;
    t->last_m1 = p->m1;
    pthread_mutex_lock(&t->mu);
    if (p->buf != t->cur || t->joined)
        t->other_free = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    t->piece.n = 0;
    t->next = 0;
}

int rd_tail_arrive(lp_reader *r)
{
    rd_tail *t = r->tail;
    const rd_file *f = &r->files[0];

    if (r->cur_file != 0 || r->z.active) {
        rd_tail_discard(r);
        return 0;
    }
    if (!t->arrived) {
        t->arrived = 1;
        if (!take_piece(t)) {
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

    f->pos = t->last_end;
    if (f->prefetched < f->pos)
        f->prefetched = f->pos;
    if (r->opts.order == LP_ORDER_TIME) {
        r->q.max_time = t->last_m;
        r->q.next_flush = t->last_m1;
        r->q.last_flush = t->last_m1;
        if (rd_queue_phantom(r, t->last_m, err) < 0)
            return -1;
    }
    rd_tail_discard(r);
    r->state = RD_RUN;
    return 0;
}

/* The current piece's next distinct sample into r->ev: 1, 0 at its end,
 * -1 error. */
static int replay_piece(lp_reader *r, rd_tail *t, lp_error *err)
{
    while (t->next < t->piece.n) {
        const tail_ent *e = &t->piece.e[t->next++];
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
    return 0;
}

int rd_tail_replay(lp_reader *r, lp_error *err)
{
    rd_tail *t = r->tail;

    for (;;) {
        int rc = replay_piece(r, t, err);
        if (rc != 0)
            return rc;
        piece_done(r, t);
        if (!take_piece(t))
            return replay_end(r, err);
    }
}
