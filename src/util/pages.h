/*
 * pages.h - giving resident pages of read-only mapped files back to the
 * kernel (pages.c). The pages come back from the page cache when touched
 * again: memory only, no result changes.
 */
#ifndef LP_UTIL_PAGES_H
#define LP_UTIL_PAGES_H

#include <stddef.h>

/* Drop the resident pages of [addr, addr + len) that lie in private,
 * read-only, file-backed mappings never written (no anonymous pages:
 * relocated data is skipped). Anything else in the range is left alone. */
void lp_pages_release(const void *addr, size_t len);
/* The same for a range the caller knows was mapped read-only from the
 * start (never writable, so no page of it can be anonymous): checked in
 * /proc/self/maps instead of smaps, whose every read walks the page
 * tables of the whole process (~1.5 ms at bench (c)'s 85 MB, three times
 * a run for the binary's image). */
void lp_pages_release_ro(const void *addr, size_t len);

/* Drop the pages of the loaded objects' relocation tables (DT_RELA),
 * which the dynamic loader reads once at start-up (libcapstone's: 1.8 MB). */
void lp_pages_release_loader(void);

#endif
