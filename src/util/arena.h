/*
 * util/arena.h - an arena: many small allocations from 1 MiB chunks,
 * given back all at once, either to be refilled (lp_arena_reset: the
 * flat aggregator's waiting samples, flushed and refilled in turn) or
 * for good (lp_arena_free: the unwinder's per-address caches). Owns its
 * chunks; not what is stored in them.
 */
#ifndef LBR2PROF_UTIL_ARENA_H
#define LBR2PROF_UTIL_ARENA_H

#include <stddef.h>

#define LP_ARENA_CHUNK (1u << 20)

typedef struct lp_arena_chunk {
    struct lp_arena_chunk *next;
    size_t used, cap;
    unsigned char data[];
} lp_arena_chunk;

typedef struct lp_arena {
    lp_arena_chunk *head;       /* filling head; the others are full */
    lp_arena_chunk *spare;      /* emptied by a reset, to be refilled */
    size_t bytes;               /* payload handed out since the reset */
} lp_arena;

/* n bytes, 8-aligned, or NULL on no memory. A request larger than a chunk
 * gets a chunk of its own. */
void *lp_arena_alloc(lp_arena *a, size_t n);
/* Everything handed out is given back; the chunks of the usual size are
 * kept for the next allocations, larger ones freed. */
void lp_arena_reset(lp_arena *a);
void lp_arena_free(lp_arena *a);

#endif
