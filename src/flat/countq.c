/*
 * countq.c - a flush's counter updates on a second thread: while the
 * aggregator (aggregate.c) resolves a batch of waiting samples' addresses
 * (canon: the address map, the instruction table), the additions to its
 * branch, range and pair counters - hash-table probes that miss the cache
 * - run on a helper thread, in the order they were asked for, through a
 * single-producer single-consumer ring. The counters end exactly as if
 * added in line (same additions, same order), so nothing downstream can
 * tell. Owns the ring and the thread; not the counters (counters.c) nor
 * what is counted (aggregate.c). The caller does not touch the counters
 * between flat_countq_start and flat_countq_end.
 *
 * A side that finds the ring empty (helper) or full (caller) polls for up
 * to CQ_SPIN_NS, then sleeps on a condition variable until the other side
 * wakes it: polling longer, or yielding in a loop, costs the whole run
 * dearly when other processes hold the cores (the prefetcher's lesson,
 * docs/reader.md).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "flat/flat_internal.h"

#define CQ_RING (1u << 13)        /* ops: 256 KiB */
#define CQ_PUBLISH 256u           /* ops the caller writes before telling */
#define CQ_SPIN_NS 20000L

typedef struct cq_op {
    uint64_t x, y, n;
    uint32_t which;               /* FLAT_CQ_* */
} cq_op;

struct flat_countq {
    lp_counters *c, *pairs;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;            /* either side's sleep */
    cq_op *ring;
    uint32_t w;                   /* caller's next slot (its own) */
    _Atomic uint32_t tail;        /* published: ops [.., tail) are written */
    _Atomic uint32_t head;        /* applied up to here */
    atomic_int done, failed;
    atomic_int helper_sleeps, caller_sleeps; /* each side's own flag */
};

static long now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Wait until ready(q) (the other side moved), polling first. */
static void wait_for(flat_countq *q, int (*ready)(flat_countq *),
                     atomic_int *sleeps)
{
    long until = now_ns() + CQ_SPIN_NS;

    for (int i = 0; !ready(q); i++) {
        if ((i & 63) != 63 || now_ns() < until) {
            relax();
            continue;
        }
        pthread_mutex_lock(&q->mu);
        atomic_store(sleeps, 1);
        while (!ready(q))
            pthread_cond_wait(&q->cv, &q->mu);
        atomic_store(sleeps, 0);
        pthread_mutex_unlock(&q->mu);
        return;
    }
}

/* After moving tail or head: wake the other side if it sleeps. */
static void wake(flat_countq *q, atomic_int *sleeps)
{
    if (!atomic_load(sleeps))
        return;
    pthread_mutex_lock(&q->mu);
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

static int has_ops(flat_countq *q)
{
    return atomic_load(&q->tail) != atomic_load(&q->head) || atomic_load(&q->done);
}

static int has_room(flat_countq *q)
{
    return q->w + CQ_PUBLISH - atomic_load(&q->head) <= CQ_RING;
}

static int apply(flat_countq *q, const cq_op *o)
{
    switch (o->which) {
    case FLAT_CQ_BRANCH: return lp_counters_add_branch(q->c, o->x, o->y, o->n);
    case FLAT_CQ_RANGE:  return lp_counters_add_range(q->c, o->x, o->y, o->n);
    default:             return lp_counters_add_range(q->pairs, o->x, o->y, o->n);
    }
}

static void *consumer(void *arg)
{
    flat_countq *q = arg;

    for (;;) {
        uint32_t h = atomic_load(&q->head), t = atomic_load(&q->tail);
        if (h == t) {
            if (atomic_load(&q->done) && h == atomic_load(&q->tail))
                return NULL;
            wait_for(q, has_ops, &q->helper_sleeps);
            continue;
        }
        for (; h != t; h++)
            if (apply(q, &q->ring[h & (CQ_RING - 1)]))
                atomic_store(&q->failed, 1);
        atomic_store(&q->head, h);
        wake(q, &q->caller_sleeps);
    }
}

flat_countq *flat_countq_start(lp_counters *c, lp_counters *pairs)
{
    flat_countq *q = calloc(1, sizeof *q);

    if (!q || !(q->ring = malloc(CQ_RING * sizeof *q->ring))) {
        free(q);
        return NULL;
    }
    q->c = c;
    q->pairs = pairs;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    if (pthread_create(&q->th, NULL, consumer, q) != 0) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        free(q->ring);
        free(q);
        return NULL;
    }
    return q;
}

void flat_countq_push(flat_countq *q, uint32_t which, uint64_t x, uint64_t y,
                      uint64_t n)
{
    q->ring[q->w & (CQ_RING - 1)] = (cq_op){x, y, n, which};
    if (++q->w % CQ_PUBLISH)
        return;
    atomic_store(&q->tail, q->w);
    wake(q, &q->helper_sleeps);
    /* the next CQ_PUBLISH slots must be free */
    if (!has_room(q))
        wait_for(q, has_room, &q->caller_sleeps);
}

int flat_countq_end(flat_countq *q)
{
    int failed;

    atomic_store(&q->tail, q->w);
    atomic_store(&q->done, 1);
    pthread_mutex_lock(&q->mu);
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->th, NULL);
    failed = atomic_load(&q->failed);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
    free(q);
    return failed ? -1 : 0;
}
