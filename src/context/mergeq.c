/*
 * mergeq.c - the pre-inliner's profile merges (mergeContextNode's
 * FunctionSamples::merge and its ShouldBeInlined attribute), deferred:
 * queued in the order the promotions make them and run in that order -
 * on a second thread while the promotions go on when the process may use
 * two CPUs, else where they are waited for - a few merges ahead
 * prefetched (each merge reads two profiles and their bodies scattered
 * over the heap: memory bound). The pre-inliner reads no count, body nor
 * attribute of a trie profile while it promotes, only once the queue is
 * drained (cs_mergeq_drain), so the result is that of merging at once.
 * Owns the queue and its thread; the merge itself is model.c's.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "context/cs_internal.h"
#include "util/cpus.h"

#define MQ_CAP 4096u            /* queued merges (a power of two) */
#define MQ_AHEAD 8              /* profiles prefetched this many merges ahead */
#define MQ_BODY_AHEAD 4         /* ... their bodies this many */
#define MQ_BATCH 64             /* merges the worker runs per turn, at most */
#define MQ_PUBLISH 32           /* merges pushed between publications */
#define MQ_YIELD_SPINS 4096     /* polls of a drain for the worker's turn
                                   before it yields the core */
/* An empty queue polled this long by the worker, then slept on: 50 us
 * gained ~1 ms more on an idle machine, but with other processes on both
 * cores the worker's polling took the pusher's time (bench (c) at load
 * 5: pre-inlining 0.171 s with 50 us, 0.142-0.150 s with 10-20 us, 0.129
 * -0.143 s on one thread) */
#define MQ_SPIN_NS 20000L

enum { RUN_NONE, RUN_WORKER, RUN_PUSHER };

typedef struct merge_op {
    cs_prof *to, *from;
} merge_op;

/* The merges are run in push order by one thread at a time (the run
 * token): the worker a batch per turn while the pusher promotes, the
 * pusher itself all that are left when it drains - it waits for the
 * worker only to end a batch it is in, never for a sleeping worker to
 * wake (small functions' merges are not even published before the
 * drain). */
struct cs_mergeq {
    merge_op ring[MQ_CAP];
    size_t pushed;              /* merges queued (the pusher's) */
    size_t head;                /* ... published to the worker (atomic) */
    size_t tail;                /* merges done (atomic; its runner's) */
    int run;                    /* who runs merges: RUN_ (atomic) */
    int rc;                     /* a merge ran out of memory (atomic) */
    bool draining;              /* the pusher waits for the run token (atomic) */
    bool threaded, stop, sleeping;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

static long now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* mergeContextNode's part on the profiles: from's counts added to to's,
 * ShouldBeInlined carried over */
static int merge_one(const merge_op *m)
{
    if (m->from != m->to && lp_fs_merge(&m->to->fs, &m->from->fs))
        return -1;
    if (m->from->fs.attrs & CS_SHOULD_INLINE)
        m->to->fs.attrs |= CS_SHOULD_INLINE;
    return 0;
}

static void prefetch_op(const merge_op *m, bool bodies)
{
    if (!bodies) {
        __builtin_prefetch(m->from);
        __builtin_prefetch(m->to);
        return;
    }
    lp_fs_prefetch_body(&m->from->fs);
    lp_fs_prefetch_body(&m->to->fs);
}

/* The queued merges [t, e) run by their runner, those up to h ahead
 * prefetched (profiles, then their bodies); the tail published. The
 * worker's turn ends early when the pusher drains (it then runs the
 * rest itself rather than wait). */
static void run_ops(cs_mergeq *q, size_t t, size_t e, size_t h, bool worker)
{
    size_t k;

    for (k = t; k < t + MQ_AHEAD && k < h; k++)
        prefetch_op(&q->ring[k & (MQ_CAP - 1)], false);
    for (; t < e; t++) {
        if (worker && __atomic_load_n(&q->draining, __ATOMIC_RELAXED))
            break;
        if (t + MQ_AHEAD < h)
            prefetch_op(&q->ring[(t + MQ_AHEAD) & (MQ_CAP - 1)], false);
        if (t + MQ_BODY_AHEAD < h)
            prefetch_op(&q->ring[(t + MQ_BODY_AHEAD) & (MQ_CAP - 1)], true);
        if (merge_one(&q->ring[t & (MQ_CAP - 1)]))
            __atomic_store_n(&q->rc, -1, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&q->tail, t, __ATOMIC_RELEASE);
}

/* Runs the merges published and not done (at most max), or returns
 * false when the other thread runs them. */
static bool run_turn(cs_mergeq *q, int who, size_t max)
{
    int none = RUN_NONE;
    size_t t, h;

    if (!__atomic_compare_exchange_n(&q->run, &none, who, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return false;
    t = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
    h = __atomic_load_n(&q->head, __ATOMIC_ACQUIRE);
    run_ops(q, t, h - t > max ? t + max : h, h, who == RUN_WORKER);
    __atomic_store_n(&q->run, RUN_NONE, __ATOMIC_RELEASE);
    return true;
}

/* Published and not done: the worker's to run */
static bool pending(cs_mergeq *q)
{
    return __atomic_load_n(&q->head, __ATOMIC_SEQ_CST) !=
           __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE);
}

/* The worker's wait for merges: polls, then sleeps until the pusher
 * wakes it. False once stopped with none left. */
static bool await_ops(cs_mergeq *q)
{
    long until = 0;
    unsigned k;
    bool more;

    for (k = 0;; k++) {
        if (pending(q))
            return true;
        if (__atomic_load_n(&q->stop, __ATOMIC_ACQUIRE))
            return false;
        if ((k & 63) == 0) {
            long n = now_ns();
            if (!until)
                until = n + MQ_SPIN_NS;
            else if (n >= until)
                break;
        }
        lp_cpu_relax();
    }
    pthread_mutex_lock(&q->mu);
    __atomic_store_n(&q->sleeping, true, __ATOMIC_SEQ_CST);
    while (!(more = pending(q)) && !__atomic_load_n(&q->stop, __ATOMIC_SEQ_CST))
        pthread_cond_wait(&q->cv, &q->mu);
    __atomic_store_n(&q->sleeping, false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&q->mu);
    return more;
}

static void *worker(void *arg)
{
    cs_mergeq *q = arg;

    while (await_ops(q))
        if (__atomic_load_n(&q->draining, __ATOMIC_RELAXED) ||
            !run_turn(q, RUN_WORKER, MQ_BATCH))
            lp_cpu_relax();
    return NULL;
}

/* The pushed merges published; the worker woken if it sleeps. */
static void publish(cs_mergeq *q, bool wake)
{
    __atomic_store_n(&q->head, q->pushed, __ATOMIC_SEQ_CST);
    if (!wake || !__atomic_load_n(&q->sleeping, __ATOMIC_SEQ_CST))
        return;
    pthread_mutex_lock(&q->mu);
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

cs_mergeq *cs_mergeq_new(bool thread)
{
    cs_mergeq *q = calloc(1, sizeof *q);

    if (!q || !thread)
        return q;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    q->threaded = pthread_create(&q->th, NULL, worker, q) == 0;
    if (!q->threaded) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
    }
    return q;
}

void cs_mergeq_push(cs_mergeq *q, cs_prof *to, cs_prof *from)
{
    if (q->pushed - __atomic_load_n(&q->tail, __ATOMIC_ACQUIRE) == MQ_CAP)
        cs_mergeq_drain(q);
    q->ring[q->pushed++ & (MQ_CAP - 1)] = (merge_op){to, from};
    if (q->threaded && q->pushed % MQ_PUBLISH == 0)
        publish(q, true);
}

int cs_mergeq_drain(cs_mergeq *q)
{
    unsigned k = 0;

    publish(q, false);
    while (__atomic_load_n(&q->tail, __ATOMIC_ACQUIRE) != q->pushed) {
        if (run_turn(q, RUN_PUSHER, MQ_CAP))
            continue;
        /* the worker is in a merge: a us or so, unless it lost its core
         * to another process */
        __atomic_store_n(&q->draining, true, __ATOMIC_RELAXED);
        if (++k < MQ_YIELD_SPINS)
            lp_cpu_relax();
        else
            sched_yield();
    }
    __atomic_store_n(&q->draining, false, __ATOMIC_RELAXED);
    return __atomic_load_n(&q->rc, __ATOMIC_RELAXED);
}

int cs_mergeq_free(cs_mergeq *q)
{
    int rc;

    if (!q)
        return 0;
    rc = cs_mergeq_drain(q);
    if (q->threaded) {
        pthread_mutex_lock(&q->mu);
        __atomic_store_n(&q->stop, true, __ATOMIC_SEQ_CST);
        pthread_cond_signal(&q->cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->th, NULL);
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
    }
    free(q);
    return rc;
}
