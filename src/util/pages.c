/*
 * pages.c - resident pages of read-only mapped files handed back to the
 * kernel with MADV_DONTNEED (pages.h). Owns the check that a range is a
 * clean private file mapping (/proc/self/smaps: read-only, file-backed, no
 * anonymous pages; or, for a mapping that was never writable,
 * /proc/self/maps, which walks no page table), so that dropping it loses
 * nothing; which ranges and when belong to the callers.
 */
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/pages.h"

typedef struct {
    uintptr_t lo, hi;           /* the range asked for */
} pg_want;

/* The part of [lo, hi) inside the mapping [mlo, mhi), pages inward. */
static void drop_overlap(const pg_want *w, uintptr_t mlo, uintptr_t mhi)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = w->lo > mlo ? w->lo : mlo;
    uintptr_t hi = w->hi < mhi ? w->hi : mhi;

    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    if (lo < hi)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* The mappings that are read-only, private and file-backed and overlap
 * w, their overlap dropped: with `anon_checked`, only those smaps shows
 * without anonymous pages; else any such one in maps (the caller knows
 * it was never writable). */
static void release_in(const pg_want *w, bool anon_checked)
{
    FILE *f = fopen(anon_checked ? "/proc/self/smaps" : "/proc/self/maps", "r");
    bool smaps = anon_checked, cand = false;
    char line[512], perm[8];
    unsigned long lo = 0, hi = 0, off, ino = 0, kb;

    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx %7s %lx %*s %lu", &lo, &hi, perm, &off,
                   &ino) == 5) {
            cand = ino != 0 && strcmp(perm, "r--p") == 0 &&
                   hi > w->lo && lo < w->hi;
            if (cand && !smaps)
                drop_overlap(w, lo, hi);
        } else if (smaps && cand && sscanf(line, "Anonymous: %lu", &kb) == 1 &&
                   kb == 0) {
            drop_overlap(w, lo, hi);
        }
    }
    fclose(f);
}

void lp_pages_release(const void *addr, size_t len)
{
    pg_want w = { (uintptr_t)addr, (uintptr_t)addr + len };

    release_in(&w, true);
}

void lp_pages_release_ro(const void *addr, size_t len)
{
    pg_want w = { (uintptr_t)addr, (uintptr_t)addr + len };

    release_in(&w, false);
}

/* DT_RELA and DT_RELASZ of one loaded object: ld.so has made the address
 * absolute in place on x86-64; a relative one is moved by the load bias. */
static int release_rela(struct dl_phdr_info *info, size_t size, void *arg)
{
    const ElfW(Dyn) *d = NULL;
    uintptr_t rela = 0, sz = 0;
    int i;

    (void)size;
    (void)arg;
    for (i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            d = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    for (; d && d->d_tag != DT_NULL; d++) {
        if (d->d_tag == DT_RELA)
            rela = d->d_un.d_ptr;
        else if (d->d_tag == DT_RELASZ)
            sz = d->d_un.d_val;
    }
    if (rela && rela < info->dlpi_addr)
        rela += info->dlpi_addr;
    if (rela && sz >= 64 * 1024)        /* worth a read of smaps */
        lp_pages_release((const void *)rela, sz);
    return 0;
}

void lp_pages_release_loader(void)
{
    dl_iterate_phdr(release_rela, NULL);
}
