/*
 * pstail.h - internal: the tail of a perf script text file counted on a
 * thread of its own (pstail.c), for the text backend (perfscript.c).
 * Not public.
 */
#ifndef LBR2PROF_READER_PSTAIL_H
#define LBR2PROF_READER_PSTAIL_H

#include <stddef.h>
#include <stdint.h>

typedef struct lp_pstail lp_pstail;

/* One distinct unit of the region: a hybrid sample's block (its
 * call-stack lines and its LBR line, without the last '\n': the block
 * cache's key) or an LBR-only file's line, by length and 128-bit XXH3
 * digest; where it first came and how often. */
typedef struct lp_pstail_blk {
    uint64_t lo, hi;    /* lp_digest_inline of its bytes */
    uint64_t off;       /* file offset of its first occurrence */
    uint32_t len, count;
} lp_pstail_blk;

/* What the tail covered: [start, end) of the file, whole units (start ==
 * end: nothing; the caller then parses on as if there were no tail). */
typedef struct lp_pstail_res {
    uint64_t start, end;
    uint64_t lines;     /* '\n's in [start, end) */
    uint64_t units;     /* hybrid: blank line + block; LBR-only: lines */
    const lp_pstail_blk *blk;   /* distinct units, first occurrence first */
    size_t nblk;
    int distinct;       /* it ended as most of its units were distinct */
} lp_pstail_res;

/* Count the units of `fd` (a regular file of `size` bytes, read with
 * pread: its file offset is not touched) from the first unit start at or
 * after `from` on, on a new thread, until a line that is not part of a
 * clean unit, more than `cap` distinct units, more distinct units than
 * repeated ones (past PT_DISTINCT_MIN: each would be read back and parsed
 * anyway), the end of the file or lp_pstail_finish. hybrid: units are "\n" + frame lines + " 0x" line;
 * else single lines that are neither MMAP nor count lines. NULL: no
 * thread or no memory (no tail). */
lp_pstail *lp_pstail_start(int fd, uint64_t from, uint64_t size, int hybrid,
                           size_t cap);
/* Stop at the next unit (stop: now; else when the scan ends by itself),
 * join the thread and fill *res (valid until lp_pstail_free). */
void lp_pstail_finish(lp_pstail *t, int stop, lp_pstail_res *res);
void lp_pstail_free(lp_pstail *t);

#endif
