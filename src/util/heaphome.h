/*
 * util/heaphome.h - which thread should free a block: the one place that
 * knows how the C library's malloc keeps its heaps. glibc gives each
 * thread an arena (the main thread the main one) and locks a block's
 * arena to free it, so a thread freeing blocks another thread made
 * contends with that thread's own mallocs (futex waits, both ways).
 * lp_heap_home tells whether a block is in glibc's main arena or another;
 * with any other allocator (mimalloc or jemalloc preloaded or linked in:
 * their cross-thread frees are lock-free) or when unsure it answers "any
 * thread", and the caller just frees. lp_freebox hands blocks to the
 * thread that should free them; lp_heap_reserve readies a thread's heap
 * for the blocks it will make. Owns no blocks; not who made them.
 */
#ifndef LBR2PROF_UTIL_HEAPHOME_H
#define LBR2PROF_UTIL_HEAPHOME_H

#include <stdbool.h>
#include <stdlib.h>

enum {
    LP_HOME_ANY = -1,           /* any thread frees it alike */
    LP_HOME_MAIN = 0,           /* glibc's main arena */
    LP_HOME_OTHER = 1           /* another glibc arena (a thread's) */
};

/* What can be told of this process's malloc (asked once, kept by the
 * caller: no global state). */
typedef struct lp_heapinfo {
    bool glibc;                 /* malloc is glibc's own: homes are known */
} lp_heapinfo;
void lp_heapinfo_get(lp_heapinfo *h);

/* The home of a live block from malloc (NULL: LP_HOME_ANY). */
int lp_heap_home(const lp_heapinfo *h, const void *p);
/* The home of the blocks the calling thread mallocs from now on. */
int lp_heap_home_self(const lp_heapinfo *h);

/* The calling thread's glibc arena (not the main one) made ready to
 * hold about `bytes` more without a system call: glibc grows such a
 * heap by what each malloc lacks, one mprotect a few pages at a time
 * (bench (c)'s flush worker made ~6,000, ~8 ms of its part), and keeps
 * what it granted once. Blocks are made and freed; nothing stays
 * resident. No-op for the main arena or another allocator. */
void lp_heap_reserve(const lp_heapinfo *h, size_t bytes);

/* Blocks waiting for the thread that drains the box to free them: a
 * lock-free stack through the blocks' first word (any thread puts, one
 * thread drains; the drain takes the whole stack at once, so no ABA).
 * At most LP_FREEBOX_MAX wait: a box that full means its thread does not
 * drain it (descheduled, or busy a long time): freeing at once is then
 * cheap (that thread does not malloc meanwhile) and keeps the memory
 * from waiting. Zeroed to start. */
#define LP_FREEBOX_MAX 1024
typedef struct lp_freebox {
    void *head;
    size_t n;                   /* about how many wait (atomic) */
} lp_freebox;

/* free(p) as a drop callback (lp_counters_fini_with's). */
static inline void lp_free_drop(void *p, void *arg)
{
    (void)arg;
    free(p);
}

/* p put in the box (true), or not: the box is full (false). */
bool lp_freebox_put(lp_freebox *b, void *p);
/* Free what is in the box; cheap when it is empty. */
void lp_freebox_drain(lp_freebox *b);

#endif
