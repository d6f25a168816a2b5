/*
 * prefetch.c - runs the perf script text parser (perfscript.c), or the
 * perf.data reader's walk over a mapped file (reader.c: records, the
 * ordering queue, decoding), on a thread of its own, a few batches ahead
 * of the consumer. Parsing text is about half of the work of a profile
 * made from perf script input, reading perf.data a third; on a second
 * core it overlaps with the unwinder's intake, unwinding and generation.
 *
 * Owns the batches and the hand-off between the two threads. Does not own
 * parsing: the consumer sees the same events, in the same order, with the
 * same contents, and an error at the same place as without the thread.
 * Each batch holds up to PF_ITEMS items, at most PF_EVENTS of them events,
 * with deep copies (call chain, branches, MMAP file name) in one arena;
 * the other items are samples from the parser's block cache as
 * references (lp_pscript_next_ref), made into events by the consumer
 * (lp_pscript_event_of): the parser's thread, the slower one, then
 * neither writes their ~300-byte events nor reads their blocks. A batch
 * is refilled only once the consumer has moved past it, and the consumer
 * makes a reference's event in a struct of its own, so an event stays
 * valid until the next call, as lp_reader_next() promises. Memory:
 * PF_NBATCH arenas of PF_BYTES, PF_NBATCH x PF_EVENTS events and
 * PF_NBATCH x PF_ITEMS items.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reader/prefetch.h"
#include "util/cpus.h"

/* 32 batches (32 Ki items of which up to 4 Ki events; at most 1 MB of
 * arenas, 1.3 MB of events and 1 MB of items): the parser starts while
 * the binaries are opened (lp_reader_start) and should not stall before
 * they are; the consumer also does its first-touch work (disassembly,
 * DWARF) in bursts. With 3 batches, then 8, the parser stalled and the
 * consumer later starved. Cached samples travel as 32-byte items, 1,024
 * to a batch, so the parser can run far ahead of a consumer that is busy
 * early (binaries, decoding) and idle later: 64 batches measured no
 * faster on bench (a) than 32 and took 2.2 MB more; 128 events and 32 KB
 * of arena per batch measured the same as 256 and 64 KB, 0.5 MB less. */
#define PF_NBATCH 32
#define PF_ITEMS 1024
#define PF_EVENTS 128
#define PF_BYTES (32u << 10)
/* perf.data: every item is an event, copied whole (~800 bytes with 32 LBR
 * entries): 8 batches of 256 events, each arena 256 KiB (2.7 MiB in all,
 * one hand-off per 256 samples: with 128-event batches the hand-offs'
 * polling cost more than the walk). */
#define PF_DATA_NBATCH 8
#define PF_DATA_EVENTS 256
#define PF_DATA_BYTES (256u << 10)
/* ... and a batch takes the walk ~0.1 ms: polling longer than a fraction
 * of that only burns the CPU the other thread could have (measured: both
 * sides spent 8-10% of their time polling with the text's 0.4 ms). */
#define PF_DATA_SPIN_NS 20000L

/* A side that finds the ring empty (consumer) or full (producer) polls
 * for up to PF_SPIN_NS before it sleeps on the condition variable; a
 * sleeping side costs the other one a futex wake per batch (about 10% of
 * the parser's time on bench (a) without any spin). Only with two CPUs or
 * more: on one, polling would keep the other side from running. Short, as
 * the perf.data walk's: when other processes hold the cores a long poll
 * is pure loss (SQLite's 2.2 GB text with both cores busy elsewhere: 0.4
 * ms -> 5.7 s wall, 5.6 s CPU; 20 us -> 4.65 s, 4.4 s). */
#define PF_SPIN_NS 20000L

/* One item of a batch: a cached sample's reference, or (ref.blk NULL)
 * the batch's next event; samples_seen after it. */
typedef struct pf_item {
    lp_pscript_ref ref;
    uint64_t seen;
} pf_item;

/* One batch: n items (nev of them events), then how the producer stopped
 * (end_rc: 1 more batches follow, 0 end of input, -1 error in end_err). */
typedef struct pf_batch {
    pf_item *it;
    lp_event *ev;
    size_t n, nev;
    unsigned char *arena;
    size_t used, cap;
    int end_rc;
    uint64_t end_seen;
    uint64_t end_off;           /* the parser's input offset after it */
    lp_error end_err;
    const uint8_t *low;         /* the lowest body of its PF_MAPPED events
                                   (NULL: none): lp_pfetch_hold */
} pf_batch;

struct lp_pfetch {
    lp_pscript *p;
    pthread_t th;
    int started;                /* 0 not yet, 1 running, 2 could not start */
    int locks;                  /* mu and cv are initialized */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pf_batch b[PF_NBATCH];
    size_t nbatch, maxev;        /* batches in the ring, events a batch */
    size_t head, tail;          /* ring: consumer at head, producer at tail */
    size_t nfull;               /* changed under mu, atomically: also polled */
    int stop;
    long spin_ns;               /* PF_SPIN_NS, or 0 on a single CPU */
    /* producer only: an event parsed when its batch was full, owed to the
     * next batch (still valid: the parser is not called in between) */
    const lp_event *owed;
    uint64_t owed_seen;
    int owed_how;
    /* consumer only: its batch (b[head]), position in it (item i, event
     * j), and the event made from the last reference */
    pf_batch *cur;
    size_t i, j;
    lp_event made;
    lp_pscript_ref made_ref;    /* the reference made is of */
    lp_pscript_arrays arrays;   /* made's arrays */
    bool defer;                 /* made's arrays only when asked for
                                   (lp_pfetch_defer_arrays) */
    uint64_t off;               /* input offset of what was handed over */
    lp_reader_idle_fn idle;     /* lp_pfetch_set_idle */
    void *idle_ctx;
    bool idle_forced;           /* LBR2PROF_IDLE (idle_mode): idle not
                                   called while behind, only... */
    uint64_t idle_left;         /* ... before each of the next idle_left
                                   events (UINT64_MAX: all) */
    lp_reader_ahead_fn ahead;   /* lp_pfetch_set_ahead */
    void *ahead_ctx;
    /* perf.data (p NULL): the reader's walk */
    lp_pfetch_next_fn next;
    lp_pfetch_off_fn off_fn;
    void *ctx;
    uint64_t *idw;              /* producer only: stacks_id_of's scratch */
    size_t idw_cap;
};

/* ---- the hand-off --------------------------------------------------------- */

/* perf.data: the identity of a copied sample's stacks, which the
 * unwinder's intake keys its memo on, computed on this thread while the
 * arrays are in its cache, so that the consumer of a sample it has seen
 * before reads neither. Only while this thread is ahead (`ids`, decided
 * per batch: half the ring or more is waiting for the consumer): where
 * the walk itself is the slower side (page faults, memory), the intake
 * computes it, and the two threads balance the work between them (on
 * sqlite-line, always here: main thread 0.92 -> 0.60 s, the walk's
 * 0.76 -> 0.99 s, slower than before). Not for text (its cached samples
 * carry a dup_id) nor samples without a call chain (LBR-only: nothing
 * keys on it); out of memory: not computed (the intake computes it). */
static void stacks_id(lp_pfetch *f, lp_event *e, bool ids)
{
    lp_sample *s = &e->u.sample;

    if (!ids || f->p || e->kind != LP_EV_SAMPLE || !s->callchain_nr)
        return;
    if (lp_stacks_id_of(s->callchain, s->callchain_nr, s->branches, s->branch_nr,
                        &f->idw, &f->idw_cap, &s->stacks_id))
        s->stacks_id = (lp_stacks_id){0, 0};
}


static long now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static size_t nfull_get(lp_pfetch *f)
{
    return __atomic_load_n(&f->nfull, __ATOMIC_ACQUIRE);
}

/* Poll until nfull != avoid (or stop), for at most PF_SPIN_NS; the caller
 * then waits under the lock as usual. */
static void spin_while(lp_pfetch *f, size_t avoid)
{
    long until = 0;
    unsigned k;

    for (k = 0;; k++) {
        if (nfull_get(f) != avoid || __atomic_load_n(&f->stop, __ATOMIC_ACQUIRE))
            return;
        if ((k & 63) == 0) {
            long t = now_ns();
            if (!until)
                until = t + f->spin_ns;
            else if (t >= until)
                return;
        }
        lp_cpu_relax();
    }
}

/* ---- producer --------------------------------------------------------- */

static void *arena_copy(pf_batch *b, const void *src, size_t n)
{
    void *d = b->arena + b->used;

    memcpy(d, src, n);
    b->used += (n + 7) & ~(size_t)7;
    return d;
}

/* How an event's bytes are copied into a batch (batch_add's `how`). */
enum {
    PF_BODY = 1,        /* its body, which lives in the reader's scratch */
    PF_MAPPED = 2,      /* a perf.data sample decoded in place: its arrays
                           point into the file's mapping, which outlives
                           the batches (pages given back behind the walk,
                           MADV_DONTNEED of a read-only file mapping, read
                           back the same bytes), so the batch keeps the
                           pointers: ~800 bytes not copied a sample */
};

/* A sample from the file's mapping: the batch keeps the pointers. (A
 * text sample's arrays are the parser's, whether or not its block was
 * just cached: copied.) */
static int stays(const lp_event *e, int how)
{
    return e->kind == LP_EV_SAMPLE && (how & PF_MAPPED);
}

static size_t rnd8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static size_t nregs(const lp_sample *s)
{
    return s->regs_user ? (size_t)__builtin_popcountll(s->regs_user_mask) : 0;
}

/* Bytes the deep copy of `e` takes in the arena (`body`: its record body
 * too, which lives in the reader's scratch). */
static size_t copy_size(const lp_event *e, int how)
{
    const lp_sample *s = &e->u.sample;
    size_t n = (how & PF_BODY) && e->body ? rnd8(e->body_size) : 0;

    if (stays(e, how))
        return n;
    if (e->kind == LP_EV_SAMPLE)
        return n + rnd8(s->callchain_nr * sizeof(uint64_t)) +
               rnd8(s->branch_nr * sizeof(lp_branch_entry)) +
               (s->branch_counters ? rnd8(s->branch_nr * sizeof(uint64_t)) : 0) +
               rnd8(nregs(s) * sizeof(uint64_t)) +
               (s->stack_user ? rnd8(s->stack_user_size) : 0);
    if (e->kind == LP_EV_MMAP && e->u.mmap.filename)
        return n + rnd8(strlen(e->u.mmap.filename) + 1);
    if (e->kind == LP_EV_COMM && e->u.comm.comm)
        return n + rnd8(strlen(e->u.comm.comm) + 1);
    return n;
}

/* The perf.data fields text samples never have. */
static void copy_sample_extra(pf_batch *b, lp_sample *s)
{
    if (s->branch_counters)
        s->branch_counters = arena_copy(b, s->branch_counters,
                                        s->branch_nr * sizeof(uint64_t));
    if (s->regs_user)
        s->regs_user = arena_copy(b, s->regs_user, nregs(s) * sizeof(uint64_t));
    if (s->stack_user)
        s->stack_user = arena_copy(b, s->stack_user, s->stack_user_size);
}

/* Append a copy of `e`; 0 if it does not fit (the batch is then full).
 * `attr` and `source` live as long as the reader. */
static int batch_add(pf_batch *b, const lp_event *e, uint64_t seen, int how)
{
    size_t need = copy_size(e, how);
    lp_event *d;

    if (need > b->cap - b->used) {
        unsigned char *a;
        if (b->used)
            return 0;
        if (!(a = realloc(b->arena, need)))  /* nothing points into it */
            return -1;
        b->arena = a;
        b->cap = need;
    }
    d = &b->ev[b->nev];
    *d = *e;
    if (e->kind == LP_EV_SAMPLE && (how & PF_MAPPED)) {
        d->u.sample.stacks_id = (lp_stacks_id){0, 0};
        if (!b->low || e->body < b->low)
            b->low = e->body;
    } else if (e->kind == LP_EV_SAMPLE && !stays(e, how)) {
        lp_sample *s = &d->u.sample;
        s->callchain = s->callchain_nr
            ? arena_copy(b, s->callchain, s->callchain_nr * sizeof(uint64_t))
            : NULL;
        s->branches = s->branch_nr
            ? arena_copy(b, s->branches, s->branch_nr * sizeof(lp_branch_entry))
            : NULL;
        s->stacks_id = (lp_stacks_id){0, 0};
        copy_sample_extra(b, s);
    } else if (e->kind == LP_EV_MMAP && e->u.mmap.filename) {
        d->u.mmap.filename = arena_copy(b, e->u.mmap.filename,
                                        strlen(e->u.mmap.filename) + 1);
    } else if (e->kind == LP_EV_COMM && e->u.comm.comm) {
        d->u.comm.comm = arena_copy(b, e->u.comm.comm, strlen(e->u.comm.comm) + 1);
    }
    if ((how & PF_BODY) && e->body)
        d->body = arena_copy(b, e->body, e->body_size);
    b->it[b->n++] = (pf_item){{NULL, 0, 0}, seen};
    b->nev++;
    return 1;
}

static void batch_end(lp_pfetch *f, pf_batch *b)
{
    b->end_seen = f->p ? lp_pscript_stats_get(f->p)->samples_seen : 0;
    b->end_off = f->p ? lp_pscript_offset(f->p) : f->off_fn(f->ctx);
}

/* Parse into b until it is full or the input ends. */
static void batch_fill(lp_pfetch *f, pf_batch *b)
{
    const lp_event *e;
    bool ids = !f->p && nfull_get(f) >= f->nbatch / 2;
    int rc;

    b->n = b->nev = 0;
    b->used = 0;
    b->low = NULL;
    b->end_rc = 1;
    if (f->owed) {
        if (batch_add(b, f->owed, f->owed_seen, f->owed_how) < 0)
            goto oom;
        stacks_id(f, &b->ev[b->nev - 1], ids);
    }
    f->owed = NULL;
    while (b->n < PF_ITEMS && b->nev < f->maxev) {
        lp_pscript_ref ref;
        uint64_t seen = 0;
        bool body = false;
        int how = 0;
        if (!f->p) {            /* perf.data: events only */
            if ((rc = f->next(f->ctx, &e, &body, &b->end_err)) <= 0) {
                b->end_rc = rc;
                break;
            }
            /* a sample's body is outside the scratch only in place */
            how = body ? PF_BODY : e->kind == LP_EV_SAMPLE && e->body ? PF_MAPPED : 0;
            goto event;
        }
        rc = lp_pscript_next_ref(f->p, &e, &ref, &b->end_err);
        if (rc <= 0) {
            b->end_rc = rc;
            break;
        }
        seen = lp_pscript_stats_get(f->p)->samples_seen;
        if (rc == 2) {
            b->it[b->n++] = (pf_item){ref, seen};
            continue;
        }
event:
        rc = batch_add(b, e, seen, how);
        if (rc < 0)
            goto oom;
        if (rc == 0) {
            f->owed = e;
            f->owed_seen = seen;
            f->owed_how = how;
            break;
        }
        stacks_id(f, &b->ev[b->nev - 1], ids);
    }
    batch_end(f, b);
    return;
oom:
    b->end_rc = lp_error_set(&b->end_err, LP_ENOMEM, "reader: out of memory");
    batch_end(f, b);
}

static void *producer(void *arg)
{
    lp_pfetch *f = arg;

    for (;;) {
        pf_batch *b;
        int end;

        spin_while(f, f->nbatch);
        pthread_mutex_lock(&f->mu);
        while (f->nfull == f->nbatch && !f->stop)
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->stop) {
            pthread_mutex_unlock(&f->mu);
            return NULL;
        }
        b = &f->b[f->tail];
        pthread_mutex_unlock(&f->mu);

        batch_fill(f, b);
        end = b->end_rc <= 0;

        pthread_mutex_lock(&f->mu);
        f->tail = (f->tail + 1) % f->nbatch;
        __atomic_add_fetch(&f->nfull, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        if (end)
            return NULL;
    }
}

/* ---- consumer --------------------------------------------------------- */

/* When the consumer calls its idle function. By default while no batch
 * is ready: how much it gets done depends on timing. LBR2PROF_IDLE makes
 * that independent of timing (tests: the unwinder's recordings ahead,
 * docs/unwind.md): "always" calls it before every event handed over, as
 * if the producer were always behind; a number N before each of the
 * first N events only (the samples among the first N-1 get the idle
 * work, none of the later ones); "never" not at all. Anything else, or
 * unset: the default. Read when the ring is made (the reader's open, or
 * its thread's start after a perf.data tail), as LBR2PROF_DATA_SPLIT is
 * when the reader opens. */
static void idle_mode(lp_pfetch *f)
{
    const char *s = getenv("LBR2PROF_IDLE");

    f->idle_forced = true;
    if (s && !strcmp(s, "always"))
        f->idle_left = UINT64_MAX;
    else if (s && *s >= '0' && *s <= '9')
        f->idle_left = strtoull(s, NULL, 10);
    else
        f->idle_forced = s && !strcmp(s, "never");
}

/* LBR2PROF_IDLE's idle work before the next event (the consumer is done
 * with the last one): until there is none left. */
static void idle_before(lp_pfetch *f)
{
    if (f->idle_left != UINT64_MAX)
        f->idle_left--;
    while (f->idle && f->idle(f->idle_ctx))
        ;
}

static lp_pfetch *pfetch_new(lp_pscript *p, lp_pfetch_next_fn next,
                             lp_pfetch_off_fn off, void *ctx, lp_error *err);

lp_pfetch *lp_pfetch_new(lp_pscript *p, lp_error *err)
{
    return pfetch_new(p, NULL, NULL, NULL, err);
}

lp_pfetch *lp_pfetch_new_fn(lp_pfetch_next_fn next, lp_pfetch_off_fn off,
                            void *ctx, lp_error *err)
{
    return pfetch_new(NULL, next, off, ctx, err);
}

static lp_pfetch *pfetch_new(lp_pscript *p, lp_pfetch_next_fn next,
                             lp_pfetch_off_fn off, void *ctx, lp_error *err)
{
    lp_pfetch *f = calloc(1, sizeof *f);
    size_t k;

    if (!f)
        goto oom;
    f->p = p;
    f->next = next;
    f->off_fn = off;
    f->ctx = ctx;
    f->spin_ns = lp_cpus() < 2 ? 0 : p ? PF_SPIN_NS : PF_DATA_SPIN_NS;
    f->nbatch = p ? PF_NBATCH : PF_DATA_NBATCH;
    idle_mode(f);
    f->maxev = p ? PF_EVENTS : PF_DATA_EVENTS;
    for (k = 0; k < f->nbatch; k++) {
        pf_batch *b = &f->b[k];
        b->it = malloc(PF_ITEMS * sizeof *b->it);
        b->ev = malloc(f->maxev * sizeof *b->ev);
        b->cap = p ? PF_BYTES : PF_DATA_BYTES;
        b->arena = malloc(b->cap);
        if (!b->it || !b->ev || !b->arena)
            goto oom;
    }
    if (pthread_mutex_init(&f->mu, NULL) == 0) {
        if (pthread_cond_init(&f->cv, NULL) == 0) {
            f->locks = 1;
            return f;
        }
        pthread_mutex_destroy(&f->mu);
    }
oom:
    lp_pfetch_free(f);
    lp_error_set(err, LP_ENOMEM, "reader: out of memory");
    return NULL;
}

/* The event of a cached sample's reference, in f->made (its arrays
 * deferred when the consumer asked for that). 1, or -1: no memory. */
static int made_event(lp_pfetch *f, const lp_pscript_ref *ref,
                      const lp_event **ev, lp_error *err)
{
    f->made_ref = *ref;
    if (lp_pscript_event_of(f->p, ref, &f->made, f->defer ? NULL : &f->arrays))
        return lp_error_set(err, LP_ENOMEM, "reader: out of memory");
    *ev = &f->made;
    return 1;
}

/* Without a thread (it could not be started): parse in the caller. */
static int next_inline(lp_pfetch *f, const lp_event **ev, uint64_t *seen,
                       lp_error *err)
{
    lp_pscript_ref ref;
    bool body;
    int rc;

    if (!f->p) {
        *seen = 0;
        return f->next(f->ctx, ev, &body, err);
    }
    rc = lp_pscript_next_ref(f->p, ev, &ref, err);
    *seen = lp_pscript_stats_get(f->p)->samples_seen;
    return rc == 2 ? made_event(f, &ref, ev, err) : rc;
}

void lp_pfetch_defer_arrays(lp_pfetch *f)
{
    f->defer = true;
}

int lp_pfetch_arrays(lp_pfetch *f, const lp_sample *s, lp_error *err)
{
    if (s != &f->made.u.sample || !s->arrays_deferred)
        return 0;
    if (lp_pscript_arrays_of(&f->made_ref, &f->made, &f->arrays))
        return lp_error_set(err, LP_ENOMEM, "reader: out of memory");
    return 0;
}

void lp_pfetch_set_idle(lp_pfetch *f, lp_reader_idle_fn fn, void *ctx)
{
    f->idle = fn;
    f->idle_ctx = ctx;
}

void lp_pfetch_set_ahead(lp_pfetch *f, lp_reader_ahead_fn fn, void *ctx)
{
    f->ahead = fn;
    f->ahead_ctx = ctx;
}

/* The look ahead at event j of the consumer's batch (perf.data). The
 * distance: the consumer takes ~0.3 us a sample, a miss ~0.1-0.2 us. */
#define PF_DATA_AHEAD 4
static void prefetch_lines(const void *p, size_t n)
{
    const char *c = p, *end = c + n;

    for (c = (const char *)((uintptr_t)c & ~(uintptr_t)63); c < end; c += 64)
        __builtin_prefetch(c);
}

static void look_ahead(lp_pfetch *f, size_t j)
{
    lp_event *e;

    if (j + PF_DATA_AHEAD < f->cur->nev) {
        /* the arrays the look-ahead will read for the one after */
        const lp_sample *s = &f->cur->ev[j + PF_DATA_AHEAD].u.sample;
        if (f->cur->ev[j + PF_DATA_AHEAD].kind == LP_EV_SAMPLE &&
            !s->stacks_id.lo && !s->stacks_id.hi) {
            prefetch_lines(s->callchain, s->callchain_nr * sizeof *s->callchain);
            prefetch_lines(s->branches, s->branch_nr * sizeof *s->branches);
        }
    }
    if (j >= f->cur->nev)
        return;
    e = &f->cur->ev[j];
    if (e->kind == LP_EV_SAMPLE)
        f->ahead(f->ahead_ctx, &e->u.sample);
}

void lp_pfetch_start(lp_pfetch *f)
{
    /* Running before the thread exists: the producer reads it
     * (lp_pfetch_hold) and must never see the 0 of a thread not started. */
    if (f->started == 0) {
        f->started = 1;
        if (pthread_create(&f->th, NULL, producer, f) != 0)
            f->started = 2;
    }
}

int lp_pfetch_next(lp_pfetch *f, const lp_event **ev, uint64_t *seen,
                   lp_error *err)
{
    lp_pfetch_start(f);
    if (f->started == 2)
        return next_inline(f, ev, seen, err);
    if (f->idle_left)
        idle_before(f);
    for (;;) {
        if (!f->cur) {
            while (!f->idle_forced && f->idle && nfull_get(f) == 0 &&
                   f->idle(f->idle_ctx))
                ;
            spin_while(f, 0);
            pthread_mutex_lock(&f->mu);
            while (f->nfull == 0)
                pthread_cond_wait(&f->cv, &f->mu);
            f->cur = &f->b[f->head];
            pthread_mutex_unlock(&f->mu);
            f->i = f->j = 0;
            f->off = f->cur->end_off;
            if (f->ahead && !f->p) {
                size_t k;
                for (k = 0; k < PF_DATA_AHEAD; k++)
                    look_ahead(f, k);
            }
        }
        if (f->i < f->cur->n) {
            const pf_item *it = &f->cur->it[f->i++];
            if (it->ref.blk) {
                if (made_event(f, &it->ref, ev, err) < 0)
                    return -1;
            } else {
                if (f->ahead && !f->p)
                    look_ahead(f, f->j + PF_DATA_AHEAD);
                *ev = &f->cur->ev[f->j++];
            }
            *seen = it->seen;
            return 1;
        }
        *seen = f->cur->end_seen;
        if (f->cur->end_rc <= 0) {
            if (f->cur->end_rc < 0 && err)
                *err = f->cur->end_err;
            return f->cur->end_rc;
        }
        pthread_mutex_lock(&f->mu);
        f->head = (f->head + 1) % f->nbatch;
        __atomic_sub_fetch(&f->nfull, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        f->cur = NULL;
    }
}

static const uint8_t *lower(const uint8_t *a, const uint8_t *b)
{
    return !a || (b && b < a) ? b : a;
}

const uint8_t *lp_pfetch_hold(lp_pfetch *f)
{
    const uint8_t *low = f->owed && (f->owed_how & PF_MAPPED) ? f->owed->body : NULL;
    size_t k, n;

    if (f->started != 1)
        return NULL;            /* inline: the consumer is done with them */
    low = lower(low, f->b[f->tail].low);        /* the batch being filled */
    pthread_mutex_lock(&f->mu);
    n = f->nfull;
    for (k = 0; k < n; k++)
        low = lower(low, f->b[(f->head + k) % f->nbatch].low);
    pthread_mutex_unlock(&f->mu);
    return low;
}

uint64_t lp_pfetch_offset(const lp_pfetch *f)
{
    if (f->started == 2)
        return f->p ? lp_pscript_offset(f->p) : f->off_fn(f->ctx);
    return f->off;
}

void lp_pfetch_free(lp_pfetch *f)
{
    size_t k;

    if (!f)
        return;
    if (f->started == 1) {
        pthread_mutex_lock(&f->mu);
        __atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
        pthread_join(f->th, NULL);
    }
    if (f->locks) {
        pthread_cond_destroy(&f->cv);
        pthread_mutex_destroy(&f->mu);
    }
    for (k = 0; k < PF_NBATCH; k++) {
        free(f->b[k].it);
        free(f->b[k].ev);
        free(f->b[k].arena);
    }
    free(f->idw);
    free(f->arrays.frames);
    free(f->arrays.br);
    free(f);
}
