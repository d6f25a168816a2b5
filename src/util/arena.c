/*
 * arena.c - the arena of util/arena.h: bump allocation in chunks, reset
 * and free. Owns the chunks' lifecycle; not what the callers keep there.
 */
#include <stdlib.h>

#include "util/arena.h"

static lp_arena_chunk *chunk_new(lp_arena *a, size_t n)
{
    lp_arena_chunk *c = a->spare;

    if (c && n <= c->cap)
        a->spare = c->next;
    else if ((c = malloc(sizeof *c + (n > LP_ARENA_CHUNK ? n : LP_ARENA_CHUNK))))
        c->cap = n > LP_ARENA_CHUNK ? n : LP_ARENA_CHUNK;
    else
        return NULL;
    c->used = 0;
    c->next = a->head;
    a->head = c;
    return c;
}

void *lp_arena_alloc(lp_arena *a, size_t n)
{
    lp_arena_chunk *c = a->head;
    void *p;

    n = (n + 7) & ~(size_t)7;
    if ((!c || c->cap - c->used < n) && !(c = chunk_new(a, n)))
        return NULL;
    p = c->data + c->used;
    c->used += n;
    a->bytes += n;
    return p;
}

static void chunks_free(lp_arena_chunk *c)
{
    lp_arena_chunk *n;

    for (; c; c = n) {
        n = c->next;
        free(c);
    }
}

void lp_arena_reset(lp_arena *a)
{
    lp_arena_chunk *c = a->head, *n;

    for (; c; c = n) {
        n = c->next;
        if (c->cap > LP_ARENA_CHUNK) {
            free(c);
            continue;
        }
        c->next = a->spare;
        a->spare = c;
    }
    a->head = NULL;
    a->bytes = 0;
}

void lp_arena_free(lp_arena *a)
{
    chunks_free(a->head);
    chunks_free(a->spare);
    a->head = a->spare = NULL;
    a->bytes = 0;
}
