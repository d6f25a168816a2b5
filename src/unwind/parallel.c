/*
 * parallel.c - the flush on two threads. The pending distinct samples, in
 * llvm-profgen's order, are cut in two consecutive parts: this thread
 * unwinds the first, a worker the second. A worker is a copy of the
 * unwinder with caches, scratch, context table, statistics and notes of
 * its own; it shares the binaries, the leaf cache and the inference state
 * (infer.c) under one lock, which every call into them takes (uw_lock).
 * The worker's context table is then merged into the unwinder's in its
 * insertion order (lp_ctxcount_merge_defer; the counts of contexts both
 * parts made are added on two threads): a context of both parts keeps the
 * first part's entry and was_leaf_inlined, the others are appended - the
 * table one thread would have made going through the samples in order,
 * entry for entry and count for count. Statistics add, notes add, the
 * LBR-pair weights add. Samples recorded ahead (uw_replay) are replayed
 * by this thread: their contexts are its own. Owns the split, the worker
 * and the merge; not the unwinding (trie.c, collect.c).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lbr2prof/phases.h"
#include "unwind/uw_internal.h"
#include "util/cpus.h"
#include "util/heaphome.h"

/* Below this many distinct samples one thread does it all: a worker costs
 * a thread, the warm-up of its caches and the merge. */
#define UW_PAR_MIN 1024

/* The worker's heap made ready for its part's blocks (lp_heap_reserve):
 * bench (c)'s worker grew its heap by ~24 MB for 6,153 samples, a page
 * at a time; up to this much. */
#define UW_HEAP_PER_SAMPLE (4u << 10)
#define UW_HEAP_RESERVE_MAX ((size_t)48 << 20)

typedef struct job {
    lp_unwinder *w;
    uw_agg **v;
    const unsigned char *rec;   /* v[i] recorded ahead: this thread's */
    size_t from, to;
    size_t done;                /* samples done, read by the other thread */
    int rc;
    lp_error err;
} job;

/* ---- the worker ----------------------------------------------------------- */

static void worker_free(lp_unwinder *w)
{
    if (!w)
        return;
    free(w->symc);
    uw_free_own(w);
    free(w);
}

/* A worker for u: what u only reads during a flush is shared; the rest
 * starts empty. */
static lp_unwinder *worker_new(lp_unwinder *u)
{
    lp_unwinder *w = calloc(1, sizeof *w);

    if (!w)
        return NULL;
    w->o = u->o;
    w->lock = u->lock;
    w->owner = u;
    w->bins = u->bins;
    w->nbins = u->nbins;
    w->bin = u->bin;
    w->leaves = u->leaves;      /* shared, under the lock */
    w->fs_disc = u->fs_disc;
    w->base = u->base;
    w->preferred = u->preferred;
    w->text_offset = u->text_offset;
    w->loaded_by_mmap = u->loaded_by_mmap;
    w->missing_warned = true;
    w->pid = u->pid;
    w->name = u->name;
    w->maps = u->maps;          /* read only */
    w->nmaps = u->nmaps;
    w->other_maps = u->other_maps;
    w->agg = u->agg;            /* the pending samples, read only */
    w->peer_splits = &u->splits;
    w->memo_gen = u->memo_gen;
    /* uw_decode's scratch holds the largest sample: the intake grew u's */
    w->cs_cap = u->cs_cap;
    w->lbr_cap = u->lbr_cap;
    if (!(w->cs = malloc((w->cs_cap ? w->cs_cap : 1) * sizeof *w->cs)) ||
        !(w->lbr = malloc((w->lbr_cap ? w->lbr_cap : 1) * sizeof *w->lbr)) ||
        !(w->ainfo = malloc(UW_AC_SIZE)) ||
        (u->ft && !(w->ft = malloc(UW_FT_SIZE * sizeof *w->ft))) ||
        !(w->root_entries = calloc(u->nbins, sizeof *w->root_entries)) ||
        !(w->cc = lp_ctxcount_new())) {
        worker_free(w);
        return NULL;
    }
    /* the address facts and fall-through answers depend on the binaries
     * only: the worker starts with what the intake and the unwinding
     * ahead found (a miss is a locked walk over the instructions) */
    memcpy(w->ainfo, u->ainfo, UW_AC_SIZE);
    for (size_t i = 0; i < UW_AC_SIZE / sizeof *w->ainfo; i++)
        w->ainfo[i].sig = 0;    /* signature ids are u's context cache's */
    if (u->ft)
        memcpy(w->ft, u->ft, UW_FT_SIZE * sizeof *w->ft);
    lp_ctxcount_borrow_names(w->cc);
    return w;
}

/* u's splits, which the worker will read: a worker of an earlier flush
 * may have left its signature ids on them (role 1), not this one's. */
static void forget_worker_sigs(lp_unwinder *u)
{
    size_t i, k;
    uw_split *s;

    for (i = 0; u->splits.s && i <= u->splits.mask; i++) {
        if (!(s = (uw_split *)(uintptr_t)u->splits.s[i].v))
            continue;
        for (k = 0; k < s->npieces; k++)
            s->pieces[k].sig[1] = 0;
    }
}

/* ---- the merge ------------------------------------------------------------ */

static int merge_notes(uw_note **into, uw_note *from)
{
    uw_note *n, *t;

    HASH_ITER(hh, from, n, t)
        if (uw_note_add(into, n->k[0], n->k[1], n->count))
            return -1;
    return 0;
}

/* Below this many contexts of the worker (about a quarter of them are
 * both parts'), one thread adds the counts: a thread costs tens of us. */
#define UW_PAR_MERGE_MIN 8192

/* The deferred entries are claimed this many at a time. */
#define UW_MERGE_CHUNK 64

typedef struct dmerge {         /* deferred counts, added on two threads */
    lp_ctxcount *src;
    size_t ready;               /* entries deferred so far (atomic) */
    bool done;                  /* no more will be (atomic) */
    size_t next;                /* the first one not claimed (atomic) */
    int rc;                     /* the helper's */
} dmerge;

/* Claims deferred entries, a chunk at a time, and adds their counts
 * until none is left; while the merge still defers, waits for a whole
 * chunk. 0 or -1 (OOM). */
static int add_deferred(dmerge *d)
{
    size_t from, to, ready, waits = 0;
    bool done;
    int rc = 0;

    for (;;) {
        done = __atomic_load_n(&d->done, __ATOMIC_ACQUIRE);
        ready = __atomic_load_n(&d->ready, __ATOMIC_ACQUIRE);
        from = __atomic_load_n(&d->next, __ATOMIC_RELAXED);
        if (from >= ready && done)
            return rc;
        if (!done && from + UW_MERGE_CHUNK > ready) {
            /* the merge defers faster than they are added, unless the
             * parts have few contexts in common: then sleep */
            if (waits++ < 64)
                sched_yield();
            else
                nanosleep(&(struct timespec){0, 50000}, NULL);
            continue;
        }
        to = from + UW_MERGE_CHUNK < ready ? from + UW_MERGE_CHUNK : ready;
        if (__atomic_compare_exchange_n(&d->next, &from, to, false,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            rc |= lp_ctxcount_merge_deferred(d->src, from, to);
    }
}

static void *dmerge_main(void *arg)
{
    dmerge *d = arg;

    d->rc = add_deferred(d);
    return NULL;
}

/* The worker's contexts into u's (lp_ctxcount_merge), the counts of the
 * contexts both parts made added on two threads: the merge runs after
 * both parts, and those additions (each a counters table grown and
 * merged, the worker's entry freed) were ~60% of it (bench (c): 12 K
 * contexts of 48 K). The helper starts on them as soon as the merge
 * defers them, while this thread moves the others (it was idle for
 * that part, ~half of the merge's time); then both share the rest. */
static int merge_contexts(lp_unwinder *u, lp_unwinder *w, lp_error *err)
{
    dmerge d = {w->cc, 0, false, 0, 0};
    pthread_t th;
    bool two;
    int rc;

    two = lp_ctxcount_size(w->cc) >= UW_PAR_MERGE_MIN &&
          pthread_create(&th, NULL, dmerge_main, &d) == 0;
    rc = lp_ctxcount_merge_defer_ready(u->cc, w->cc, &d.ready, err);
    __atomic_store_n(&d.done, true, __ATOMIC_RELEASE);
    rc |= add_deferred(&d);
    if (two) {
        pthread_join(th, NULL);
        rc |= d.rc;
    }
    lp_ctxcount_clear(w->cc);
    return rc ? lp_error_set(err, LP_ENOMEM, "context table: out of memory") : 0;
}

static int merge(lp_unwinder *u, lp_unwinder *w, lp_error *err)
{
    uint64_t *a = (uint64_t *)&u->st;
    const uint64_t *b = (const uint64_t *)&w->st;
    uw_set64 *e, *t;
    size_t i;

    if (merge_contexts(u, w, err))
        return -1;
    for (i = 0; i < sizeof u->st / sizeof *a; i++)
        a[i] += b[i];
    if (uw_map_add_all(&u->pairs, &w->pairs))
        goto oom;
    if (merge_notes(&u->notes_repaired, w->notes_repaired) ||
        merge_notes(&u->notes_dropped, w->notes_dropped) ||
        merge_notes(&u->notes_contextless, w->notes_contextless) ||
        merge_notes(&u->notes_lost, w->notes_lost))
        goto oom;
    HASH_ITER(hh, w->invalid_ret, e, t)
        if (uw_set_add(&u->invalid_ret, e->v))
            goto oom;
    u->untracked_ext |= w->untracked_ext;
    return 0;
oom:
    return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
}

/* ---- the threads ------------------------------------------------------------ */

static void *worker_main(void *arg)
{
    job *j = arg;
    lp_heapinfo hi;
    size_t i, want = (j->to - j->from) * UW_HEAP_PER_SAMPLE;

    lp_heapinfo_get(&hi);
    lp_heap_reserve(&hi, want < UW_HEAP_RESERVE_MAX ? want : UW_HEAP_RESERVE_MAX);
    j->rc = 0;
    for (i = j->from; i < j->to && j->rc == 0; i++) {
        if (!j->rec[i]) {       /* recordings are the owner's */
            j->rc = uw_flush_one(j->w, j->v[i], &j->err);
            j->w->st.parallel++;
        }
        /* released: the owner frees what the worker is done with */
        __atomic_store_n(&j->done, i + 1 - j->from, __ATOMIC_RELEASE);
    }
    free(j->w->symc);           /* gone before the merge, the run's peak */
    j->w->symc = NULL;
    return NULL;
}

/* This thread frees the samples the worker is done with (the worker
 * itself freeing them into this thread's heap cost a lock and a cache
 * line each: +8% CPU in the flush); *reaped: how many are. */
static void reap(lp_unwinder *u, job *j, size_t *reaped)
{
    size_t done = __atomic_load_n(&j->done, __ATOMIC_ACQUIRE), k;

    for (k = j->from + *reaped; k < j->from + done; k++)
        if (!j->rec[k] && j->v[k])
            uw_agg_done(u, j->v, k);
    *reaped = done;
}

/* Where the second part starts: half the work, counted in key bytes (a
 * sample's LBR and call stack). rec[i]: whether v[i] was recorded ahead
 * (this thread replays it; the worker frees the others of its part as it
 * goes, so this thread must not read them). */
static size_t split_at(uw_agg **v, size_t m, unsigned char *rec)
{
    uint64_t total = 0, half;
    size_t i;

    for (i = 0; i < m; i++) {
        total += v[i]->len;
        rec[i] = v[i]->replay >= 0;
    }
    half = total / 2;
    for (i = 0, total = 0; i < m && total < half; i++)
        total += v[i]->len;
    return i;
}

int uw_flush_parallel(lp_unwinder *u, uw_agg **v, size_t m, lp_error *err)
{
    pthread_mutexattr_t at;
    pthread_mutex_t mu;
    pthread_t th;
    job j = {0};
    size_t s, i, reaped = 0;
    unsigned char *rec;
    int rc = 0;

    if (m < (u->o.parallel_min ? u->o.parallel_min : UW_PAR_MIN) || m < 2 ||
        lp_cpus() < 2)
        return 1;
    if (u->o.repair_frames && !u->leaves && !(u->leaves = lp_leaf_cache_new(NULL)))
        return 1;
    if (pthread_mutexattr_init(&at))
        return 1;
    if (pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE) ||
        pthread_mutex_init(&mu, &at)) {
        pthread_mutexattr_destroy(&at);
        return 1;
    }
    pthread_mutexattr_destroy(&at);
    forget_worker_sigs(u);
    u->lock = &mu;
    rec = malloc(m);
    s = rec ? split_at(v, m, rec) : 0;
    j = (job){rec ? worker_new(u) : NULL, v, rec, s, m, 0, 0, {0}};
    if (j.w) {
        u->peer_splits = &j.w->splits;
        /* without them each thread symbolizes as before, under the lock */
        u->symc = calloc((size_t)1 << UW_SYMC_BITS, sizeof *u->symc);
        j.w->symc = calloc((size_t)1 << UW_SYMC_BITS, sizeof *j.w->symc);
    }
    if (!j.w || pthread_create(&th, NULL, worker_main, &j)) {
        worker_free(j.w);
        free(rec);
        free(u->symc);
        u->symc = NULL;
        u->lock = NULL;
        u->peer_splits = NULL;
        pthread_mutex_destroy(&mu);
        return 1;
    }
    for (i = 0; i < s && rc == 0; i++) {
        if ((i & 4095) == 0)
            lp_phases_items(u->o.phases, i + __atomic_load_n(&j.done, __ATOMIC_RELAXED), m);
        if ((i & 255) == 0)
            reap(u, &j, &reaped);
        if ((rc = uw_flush_one(u, v[i], err)) == 0)
            uw_agg_done(u, v, i);
    }
    for (i = s; i < m && rc == 0; i++)
        if (rec[i] && (rc = uw_flush_one(u, v[i], err)) == 0)
            uw_agg_done(u, v, i);
    free(u->symc);
    u->symc = NULL;
    if (rc == 0 && u->finished)
        uw_replays_free(u);     /* all replayed, no more recording: gone
                                   before the worker's end and the merge */
    pthread_join(th, NULL);
    reap(u, &j, &reaped);
    free(rec);
    u->lock = NULL;
    u->peer_splits = NULL;
    pthread_mutex_destroy(&mu);
    if (rc == 0 && j.rc) {
        *err = j.err;
        rc = -1;
    }
    if (rc == 0)
        rc = merge(u, j.w, err);
    worker_free(j.w);
    return rc;
}
