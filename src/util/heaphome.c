/*
 * util/heaphome.c - lp_heap_home: glibc's malloc asked where a block
 * lives, and the boxes that hand blocks to the thread that frees them
 * (see heaphome.h). The only file that knows glibc's chunk layout.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/heaphome.h"

#if defined(__GLIBC__) && (defined(__x86_64__) || defined(__i386__))
#include <gnu/libc-version.h>
#define HEAPHOME_GLIBC 1
#endif

/* glibc's malloc_chunk: the word before a block holds its chunk's size,
 * whose low bits are flags; unchanged since glibc 2.3 (2002). */
#define CHUNK_IS_MMAPPED 0x2    /* its own mapping: freed without a lock */
#define CHUNK_NON_MAIN_ARENA 0x4

void lp_heapinfo_get(lp_heapinfo *h)
{
    h->glibc = false;
#ifdef HEAPHOME_GLIBC
    /* malloc as this program resolves it (a preloaded or linked-in
     * allocator, or a sanitizer's, wins) must be in the C library's own
     * object. Elsewhere (AArch64: memory tagging guards the chunk
     * headers) the answer stays "any thread". */
    void *(*volatile m)(size_t) = malloc;
    Dl_info a, b;

    h->glibc = dladdr((void *)m, &a) && dladdr((void *)gnu_get_libc_version, &b) &&
               a.dli_fbase && a.dli_fbase == b.dli_fbase;
#endif
}

int lp_heap_home(const lp_heapinfo *h, const void *p)
{
    size_t size;

    if (!h->glibc || !p)
        return LP_HOME_ANY;
    size = *(const size_t *)((uintptr_t)p - sizeof size);   /* the chunk's header */
    if (size & CHUNK_IS_MMAPPED)
        return LP_HOME_ANY;
    return size & CHUNK_NON_MAIN_ARENA ? LP_HOME_OTHER : LP_HOME_MAIN;
}

int lp_heap_home_self(const lp_heapinfo *h)
{
    /* above glibc's per-thread cache (blocks of up to 1032 bytes, which
     * may come from any arena) and below its mmap threshold: a block
     * from the thread's own arena */
    void *p = h->glibc ? malloc(4096) : NULL;
    int home = lp_heap_home(h, p);

    free(p);
    return home;
}

/* Below the mmap threshold src/cli/main.c fixes (128 KiB): from the
 * arena's heap, not a mapping of its own. */
#define RESERVE_BLOCK (120u << 10)

void lp_heap_reserve(const lp_heapinfo *h, size_t bytes)
{
    size_t n = (bytes + RESERVE_BLOCK - 1) / RESERVE_BLOCK, i, k;
    void **v;

    if (!n || lp_heap_home_self(h) != LP_HOME_OTHER || !(v = malloc(n * sizeof *v)))
        return;
    for (i = 0; i < n && (v[i] = malloc(RESERVE_BLOCK)); i++)
        ;
    /* lowest first: each joins the free block below it, and only the
     * last one reaches the heap's top, so the heap is cut back once
     * (MADV_DONTNEED); glibc keeps the protection it granted, and the
     * heap then grows back up to there without a system call */
    for (k = 0; k < i; k++)
        free(v[k]);
    free(v);
}

bool lp_freebox_put(lp_freebox *b, void *p)
{
    void *head = __atomic_load_n(&b->head, __ATOMIC_RELAXED);

    if (__atomic_load_n(&b->n, __ATOMIC_RELAXED) >= LP_FREEBOX_MAX)
        return false;
    __atomic_fetch_add(&b->n, 1, __ATOMIC_RELAXED);
    do
        *(void **)p = head;
    while (!__atomic_compare_exchange_n(&b->head, &head, p, true, __ATOMIC_RELEASE,
                                        __ATOMIC_RELAXED));
    return true;
}

void lp_freebox_drain(lp_freebox *b)
{
    void *p, *next;
    size_t n = 0;

    if (!__atomic_load_n(&b->head, __ATOMIC_RELAXED))
        return;
    for (p = __atomic_exchange_n(&b->head, NULL, __ATOMIC_ACQUIRE); p; p = next) {
        next = *(void **)p;
        free(p);
        n++;
    }
    __atomic_fetch_sub(&b->n, n, __ATOMIC_RELAXED);
}
