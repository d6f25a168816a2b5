/*
 * warm.c - the binary's caches filled ahead on a thread of its own
 * (lp_binary_warm_start), for a second core that would idle while the
 * caller reads a trace: every code region decoded and every instruction
 * symbolized, so that the unwinding after the reading finds its
 * functions decoded and its inline stacks made (bench (c): decoding and
 * symbolizing cg's 97 K instructions is ~37 ms on one core, of which the
 * flush and generation asked ~13 ms themselves, under the unwinder's
 * lock on two threads).
 *
 * Sharing. Decoding: the thread takes each region from RAW to BUSY
 * before it decodes it (disasm.c's lp_bin_region_try_decode), as a
 * lookup of the caller's does, so a region is decoded once and read only
 * when DONE; the thread has its own capstone handles (they are not
 * shared between threads). Symbolization (the per-address cache, the
 * inline trees, the line tables, libdw's DIEs): one address at a time
 * under the warmer's mutex, which lp_binary_symbolize takes too while a
 * warmer runs (lp_bin_sym_lock). Nothing else of the binary is touched.
 * Only the thread that started the warmer may call into the binary
 * while it runs, and only it stops it.
 *
 * Owns the thread, its decoder, its mutex, its start and stop. Not the
 * decoding (disasm.c), the symbolization (symbolize.c), nor the choice of
 * when a second core is free (the caller).
 */
#include <pthread.h>
#include <stdlib.h>

#include "binary/binary_internal.h"

/* Instructions symbolized between two looks at the stop flag. */
#define WARM_STOP_EVERY 64

struct lp_warmer {
    pthread_t th;
    pthread_mutex_t sym_mu;     /* the symbolization's state */
    lp_decoder dec;
    lp_binary *b;
    int stop;                   /* atomic: set by the stopping thread */
    lp_binary_warm_stats st;    /* the thread's, read once it is joined */
};

void lp_bin_sym_lock(lp_binary *b)
{
    if (b->warm)
        pthread_mutex_lock(&b->warm->sym_mu);
}

void lp_bin_sym_unlock(lp_binary *b)
{
    if (b->warm)
        pthread_mutex_unlock(&b->warm->sym_mu);
}

static bool stopping(struct lp_warmer *w)
{
    return __atomic_load_n(&w->stop, __ATOMIC_RELAXED);
}

/* Region i decoded, by this thread or by a lookup of the caller's that
 * has it (then waited for): false if it could not be, or on a stop (a
 * failed one: the lookup meets it and says why). */
static bool decoded(struct lp_warmer *w, size_t i)
{
    lp_error ignored;
    int k = lp_bin_region_decode_wait(w->b, &w->dec, i, &w->stop, &ignored);

    w->st.regions += k == 1;
    return k >= 0;
}

/* Every instruction of region i symbolized; false if stopped first. */
static bool symbolize_region(struct lp_warmer *w, size_t i)
{
    const lp_code_region *r = &w->b->regions[i];
    const lp_frame *f;
    size_t j, n;

    for (j = 0; j < r->ninsts; j++) {
        if (j % WARM_STOP_EVERY == 0 && stopping(w))
            return false;
        pthread_mutex_lock(&w->sym_mu);
        if (lp_bin_symbolize_unlocked(w->b, r->start + r->insts[j].off,
                                      &f, &n, NULL) == 0)
            w->st.symbolized++;
        pthread_mutex_unlock(&w->sym_mu);
    }
    return true;
}

static void *warm_main(void *arg)
{
    struct lp_warmer *w = arg;
    size_t i;

    for (i = 0; i < w->b->nregions && !stopping(w); i++)
        if (decoded(w, i) && !symbolize_region(w, i))
            break;
    w->st.finished = i == w->b->nregions;
    return NULL;
}

int lp_binary_warm_start(lp_binary *b)
{
    struct lp_warmer *w;

    if (!b || b->warm || !b->nregions || !(w = calloc(1, sizeof *w)))
        return -1;
    w->b = b;
    if (lp_decoder_open(&w->dec, b->dec.ops) != 0 ||
        pthread_mutex_init(&w->sym_mu, NULL) != 0) {
        lp_decoder_close(&w->dec);
        free(w);
        return -1;
    }
    b->warm = w;                /* before the thread reads the binary */
    if (pthread_create(&w->th, NULL, warm_main, w) != 0) {
        b->warm = NULL;
        pthread_mutex_destroy(&w->sym_mu);
        lp_decoder_close(&w->dec);
        free(w);
        return -1;
    }
    return 0;
}

void lp_binary_warm_stop(lp_binary *b, bool finish, lp_binary_warm_stats *st)
{
    struct lp_warmer *w = b ? b->warm : NULL;

    if (st)
        *st = (lp_binary_warm_stats){0};
    if (!w)
        return;
    if (!finish)
        __atomic_store_n(&w->stop, 1, __ATOMIC_RELAXED);
    pthread_join(w->th, NULL);
    b->warm = NULL;
    if (st)
        *st = w->st;
    pthread_mutex_destroy(&w->sym_mu);
    lp_decoder_close(&w->dec);
    free(w);
}
