/*
 * stack.c - the true call stacks of `record --simulate --truth` as one
 * persistent, hash-consed tree shared by all threads: a node is (parent,
 * return address) and equal stacks get the same id, so a stack is saved
 * with each LBR entry as one 32-bit id. Node 0 is the empty stack; a
 * parent's id is always smaller than its children's. Owns only the node
 * store; when calls and returns happen is sample.c's business, writing the
 * table out truth.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "simulate/sim.h"

#define CHUNK 4096

int sim_stack_init(stack_store *st)
{
    memset(st, 0, sizeof *st);
    st->cap = CHUNK;
    st->parent = malloc(st->cap * sizeof *st->parent);
    st->ret = malloc(st->cap * sizeof *st->ret);
    st->marked = calloc(st->cap, 1);
    if (!st->parent || !st->ret || !st->marked)
        return -1;
    st->parent[0] = 0; /* the root: the empty stack */
    st->ret[0] = 0;
    st->marked[0] = 1;
    st->n = 1;
    return 0;
}

void sim_stack_free(stack_store *st)
{
    size_t i;

    HASH_CLEAR(hh, st->by_key);
    for (i = 0; i < st->nchunks; i++)
        free(st->chunks[i]);
    free(st->chunks);
    free(st->parent);
    free(st->ret);
    free(st->marked);
    memset(st, 0, sizeof *st);
}

static int grow(stack_store *st)
{
    uint32_t cap = st->cap * 2;
    uint32_t *p = realloc(st->parent, cap * sizeof *p);
    uint64_t *r;
    uint8_t *m;

    if (!p)
        return -1;
    st->parent = p;
    if (!(r = realloc(st->ret, cap * sizeof *r)))
        return -1;
    st->ret = r;
    if (!(m = realloc(st->marked, cap)))
        return -1;
    memset(m + st->cap, 0, cap - st->cap);
    st->marked = m;
    st->cap = cap;
    return 0;
}

/* A hash entry for a new node, from the current chunk. */
static stack_node *new_entry(stack_store *st)
{
    if (st->used == 0 || st->used == CHUNK) {
        stack_node **c = realloc(st->chunks, (st->nchunks + 1) * sizeof *c);
        if (!c)
            return NULL;
        st->chunks = c;
        if (!(c[st->nchunks] = calloc(CHUNK, sizeof **c)))
            return NULL;
        st->nchunks++;
        st->used = 0;
    }
    return &st->chunks[st->nchunks - 1][st->used++];
}

int64_t sim_stack_push(stack_store *st, uint32_t parent, uint64_t ret)
{
    stack_key k;
    stack_node *e;

    memset(&k, 0, sizeof k);
    k.ret = ret;
    k.parent = parent;
    HASH_FIND(hh, st->by_key, &k, sizeof k, e);
    if (e)
        return e->id;
    if (st->n == UINT32_MAX || (st->n == st->cap && grow(st)))
        return -1;
    if (!(e = new_entry(st)))
        return -1;
    e->key = k;
    e->id = st->n;
    st->parent[e->id] = parent;
    st->ret[e->id] = ret;
    st->n++;
    HASH_ADD(hh, st->by_key, key, sizeof e->key, e);
    return e->id;
}

/* ---- per-thread frames ------------------------------------------------ */

static void set_top(thread_state *t)
{
    t->node = t->fr_n ? t->fr_node[t->fr_n - 1] : 0;
}

int sim_frames_push(stack_store *st, thread_state *t, uint64_t ret,
                    uint64_t slot)
{
    int64_t n = sim_stack_push(st, t->node, ret);

    if (n < 0)
        return -1;
    if (t->fr_n == t->fr_cap) {
        size_t cap = t->fr_cap ? 2 * t->fr_cap : 64;
        uint32_t *a = realloc(t->fr_node, cap * sizeof *a);
        uint64_t *b;
        if (!a)
            return -1;
        t->fr_node = a;
        if (!(b = realloc(t->fr_slot, cap * sizeof *b)))
            return -1;
        t->fr_slot = b;
        t->fr_cap = cap;
    }
    t->fr_node[t->fr_n] = (uint32_t)n;
    t->fr_slot[t->fr_n++] = slot;
    t->node = (uint32_t)n;
    return 0;
}

void sim_frames_return(const stack_store *st, thread_state *t, uint64_t to)
{
    size_t i = t->fr_n;

    while (i > 0 && st->ret[t->fr_node[i - 1]] != to)
        i--;
    if (i > 0) {
        t->fr_n = i - 1;
        set_top(t);
    }
}

void sim_frames_unwind(thread_state *t, uint64_t sp)
{
    size_t n = t->fr_n;

    while (n > 0 && t->fr_slot[n - 1] < sp)
        n--;
    if (n != t->fr_n) {
        t->fr_n = n;
        set_top(t);
    }
}

void sim_frames_reset(thread_state *t)
{
    t->fr_n = 0;
    t->node = 0;
}

void sim_stack_mark(stack_store *st, uint32_t node)
{
    while (!st->marked[node]) {
        st->marked[node] = 1;
        node = st->parent[node];
    }
}
