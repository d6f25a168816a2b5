/*
 * prefetch.h - internal: the perf script text parser on its own thread
 * (prefetch.c), between reader.c and perfscript.c. Not public.
 */
#ifndef LBR2PROF_READER_PREFETCH_H
#define LBR2PROF_READER_PREFETCH_H

#include <stdbool.h>
#include <stdint.h>

#include "reader/perfscript.h"

typedef struct lp_pfetch lp_pfetch;

/* perf.data: the next event of the reader's own walk, as lp_reader_next;
 * *body set when the event's body lives in the reader's scratch (it is
 * then copied with the event); the input consumed so far. */
typedef int (*lp_pfetch_next_fn)(void *ctx, const lp_event **ev, bool *body,
                                 lp_error *err);
typedef uint64_t (*lp_pfetch_off_fn)(void *ctx);

/* `p` stays owned by the caller and must outlive the lp_pfetch; after
 * lp_pfetch_new only the prefetcher's thread calls into it until
 * lp_pfetch_free (or the end of input) - its statistics may be read once
 * lp_pfetch_next has returned 0 or -1. The thread starts at the first
 * lp_pfetch_next (inline parsing if it cannot be started). */
lp_pfetch *lp_pfetch_new(lp_pscript *p, lp_error *err);
/* The same for perf.data: events from next(ctx), deep-copied (call chain,
 * branches, counters, registers, user stack, file and command names, the
 * body when asked). ctx must outlive the lp_pfetch; only its thread calls
 * next and off until lp_pfetch_free or the end of input. */
lp_pfetch *lp_pfetch_new_fn(lp_pfetch_next_fn next, lp_pfetch_off_fn off,
                            void *ctx, lp_error *err);
/* Start the thread now (else at the first lp_pfetch_next). */
void lp_pfetch_start(lp_pfetch *f);
/* The consumer's idle work (lp_reader_set_idle): called on the
 * consumer's thread while no batch is ready, until it returns 0
 * (LBR2PROF_IDLE=always: before every event instead, =N before each of
 * the first N, =never not at all: tests). */
void lp_pfetch_set_idle(lp_pfetch *f, lp_reader_idle_fn fn, void *ctx);
/* perf.data: the consumer's look ahead (lp_reader_set_ahead), called
 * for each sample of a batch PF_DATA_AHEAD events before it is handed
 * over (the first ones when the batch is taken). */
void lp_pfetch_set_ahead(lp_pfetch *f, lp_reader_ahead_fn fn, void *ctx);
/* Text: the events of cached samples come without their arrays
 * (lp_reader_defer_arrays); lp_pfetch_arrays makes those of the sample
 * of the event lp_pfetch_next returned last (0, or -1: no memory). */
void lp_pfetch_defer_arrays(lp_pfetch *f);
int lp_pfetch_arrays(lp_pfetch *f, const lp_sample *s, lp_error *err);
/* As lp_pscript_next; *seen = the parser's samples_seen at that event. */
int lp_pfetch_next(lp_pfetch *f, const lp_event **ev, uint64_t *seen,
                   lp_error *err);
/* perf.data, on the walk's thread: the lowest record body in the file's
 * mapping that an event still in the ring points into (samples decoded
 * in place keep their arrays there), NULL: none. The walk gives back no
 * page at or above it. */
const uint8_t *lp_pfetch_hold(lp_pfetch *f);
/* Stops and joins the thread; frees the batches (not `p`). */
/* The input offset of the batch being handed over (progress reports). */
uint64_t lp_pfetch_offset(const lp_pfetch *f);
void lp_pfetch_free(lp_pfetch *f);

#endif
