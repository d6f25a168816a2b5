/*
 * pstail.c - the tail of a perf script text file, counted on a second
 * thread while the text backend (perfscript.c) parses the head: from a
 * sample's start at or after a split offset, the tail reads the file with
 * pread() and, for each sample, finds its bytes, digests them and counts
 * them in a table of distinct samples (length + 128-bit XXH3 digest ->
 * count and first offset), without parsing them. When the head gets to
 * where the tail began, perfscript.c parses each distinct sample once,
 * from its first occurrence, and hands it on with its count as the
 * sample's repeat, then goes on after the region the tail covered. On
 * SQLite's 2.2 GB of text, 1.6 M samples are 71 K distinct: the head's
 * parser and the consumer see a few percent of the tail's samples.
 *
 * Owns the tail's thread, its read buffer and its table, and the rules
 * of what a clean sample is (below; the line predicates themselves are
 * the parser's). Does not own parsing (every sample
 * is parsed by perfscript.c, with llvm-profgen's rules, at its first
 * occurrence: same bytes, same result) nor deciding whether to split
 * (perfscript.c: regular files, two CPUs, a consumer that weights by
 * repeat).
 *
 * A region holds only units that change no state of the parser and
 * whose effect is a function of their bytes: for a hybrid file, a blank
 * line, call-stack lines (llvm-profgen's frame lines: optional white
 * space, then hex digits, the first not a decimal repeat count; the
 * parser's own predicates decide) and a line starting with " 0x", each
 * ending in '\n' (the parser takes the
 * blank line as a sample start, skipped, and the rest as one sample);
 * for an LBR-only file, any line that is neither an MMAP line nor a
 * decimal count line. Anything else (MMAP lines, counts, comments, a
 * broken block) ends the region before it; so do more distinct units
 * than the table's cap, a unit longer than PT_MAX_UNIT and the end of
 * the file; and it ends after more distinct units than repeated ones
 * (more than PT_DISTINCT_MIN: samples that seldom repeat gain nothing). Memory: the read buffer (PT_BUF) and the table, 36 bytes a
 * distinct unit, at most `cap` of them.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "reader/perfscript.h"
#include "reader/pstail.h"
#include "reader/rd_internal.h"
#include "util/hash.h"

#define PT_BUF (256u << 10)
#define PT_MAX_UNIT (16u << 20)
#define PT_TABLE0 4096u
#define PT_DISTINCT_MIN 4096u

struct lp_pstail {
    int fd, hybrid;
    uint64_t from, size;
    size_t cap;
    pthread_t th;
    int joined;
    int stop;                   /* atomic: the head asks for the result */
    /* the read window: file bytes [base, base + end) in buf */
    char *buf;
    size_t bcap, end;
    uint64_t base;
    /* the table: entries in first-occurrence order, an open-addressing
     * index of entry + 1 (0: empty) */
    lp_pstail_blk *e;
    size_t n, ecap;
    uint32_t *ix;
    size_t ixmask;
    lp_pstail_res res;
};

/* ---- the read window --------------------------------------------------- */

/* Keep bytes from buf[keep] on, read more after them. 1: more bytes;
 * 0: end of file, a read error or no room (the region ends). */
static int refill(lp_pstail *t, size_t keep)
{
    ssize_t k;

    memmove(t->buf, t->buf + keep, t->end - keep);
    t->base += keep;
    t->end -= keep;
    if (t->end == t->bcap) {
        char *b;
        if (t->bcap >= PT_MAX_UNIT || !(b = realloc(t->buf, t->bcap * 2)))
            return 0;
        t->buf = b;
        t->bcap *= 2;
    }
    if (t->base + t->end >= t->size)
        return 0;
    k = pread(t->fd, t->buf + t->end, t->bcap - t->end,
              (off_t)(t->base + t->end));
    if (k <= 0)
        return 0;
    t->end += (size_t)k;
    return 1;
}

/* ---- what a clean unit is ---------------------------------------------- */

/* The parser's own predicates (perfscript.c), on [s, e). */
static int frame_line(const char *s, const char *e)
{
    return lp_pscript_frame_line(s, (size_t)(e - s));
}

static int mmap_line(const char *s, const char *e)
{
    return lp_pscript_mmap_line(s, (size_t)(e - s));
}

static int count_line(const char *s, const char *e)
{
    return lp_pscript_count_line(s, (size_t)(e - s));
}

/* The unit at s (a line start) before e. > 0: its bytes, up to and with
 * its last '\n', its key's bytes at *k (*klen) and its lines in *nl;
 * 0: it may go on after e; -1: not a clean unit. */
static long unit_at(const lp_pstail *t, const char *s, const char *e,
                    const char **k, size_t *klen, uint64_t *nl)
{
    const char *q = s, *le;

    if (!t->hybrid) {
        if (!(le = memchr(s, '\n', (size_t)(e - s))))
            return 0;
        if (mmap_line(s, le) || count_line(s, le))
            return -1;
        *k = s;
        *klen = (size_t)(le - s);
        *nl = 1;
        return le + 1 - s;
    }
    if (q == e)
        return 0;
    if (*q != '\n')
        return -1;                      /* a blank line first */
    *k = ++q;
    *nl = 1;
    for (;;) {                          /* frame lines, then " 0x" */
        if (e - q < 3)
            return 0;
        if (q[0] == ' ' && q[1] == '0' && q[2] == 'x')
            break;
        if (!(le = memchr(q, '\n', (size_t)(e - q))))
            return 0;
        if (!frame_line(q, le) || (q == *k && count_line(q, le)))
            return -1;
        ++*nl;
        q = le + 1;
    }
    if (q == *k)
        return -1;                      /* no frame line */
    if (!(le = memchr(q, '\n', (size_t)(e - q))))
        return 0;
    ++*nl;
    *klen = (size_t)(le - *k);
    return le + 1 - s;
}

/* ---- the table ---------------------------------------------------------- */

static int table_grow(lp_pstail *t)
{
    size_t ecap = t->ecap ? t->ecap * 2 : PT_TABLE0, i, j, m;
    lp_pstail_blk *e;
    uint32_t *ix;

    if (ecap > t->cap)
        ecap = t->cap;
    if (ecap <= t->ecap || !(e = realloc(t->e, ecap * sizeof *e)))
        return -1;
    t->e = e;
    m = 1;
    while (m < 2 * ecap)
        m *= 2;
    if (!(ix = calloc(m, sizeof *ix)))
        return -1;
    for (i = 0; i < t->n; i++) {
        for (j = t->e[i].lo & (m - 1); ix[j]; j = (j + 1) & (m - 1))
            ;
        ix[j] = (uint32_t)i + 1;
    }
    free(t->ix);
    t->ix = ix;
    t->ixmask = m - 1;
    t->ecap = ecap;
    return 0;
}

/* Count the unit with this key, first seen at off. -1: no room. */
static int count(lp_pstail *t, const char *k, size_t len, uint64_t off)
{
    lp_digest d = lp_digest_inline(k, len);
    size_t j;
    uint32_t x;

    if (!t->ix && table_grow(t))
        return -1;
    for (j = d.lo & t->ixmask; (x = t->ix[j]) != 0; j = (j + 1) & t->ixmask) {
        lp_pstail_blk *b = &t->e[x - 1];
        if (b->lo == d.lo && b->hi == d.hi && b->len == len) {
            if (b->count == UINT32_MAX)
                return -1;
            b->count++;
            return 0;
        }
    }
    if (t->n == t->ecap) {
        if (table_grow(t))
            return -1;
        return count(t, k, len, off);
    }
    t->e[t->n] = (lp_pstail_blk){d.lo, d.hi, off, (uint32_t)len, 1};
    t->ix[j] = (uint32_t)++t->n;
    return 0;
}

/* ---- the scan ------------------------------------------------------------ */

/* The first unit start at or after t->from in the window (the file from
 * from - 1 on): a blank line's (hybrid), a line's (LBR-only). 1: found,
 * at buf[*at]; 0: none. */
static int first_unit(lp_pstail *t, size_t *at)
{
    size_t i = 0;
    const char *q;

    if (t->from == 0 && (!t->hybrid || (t->end && t->buf[0] == '\n'))) {
        *at = 0;
        return 1;
    }
    for (;;) {
        const char *s = t->buf + i, *e = t->buf + t->end;
        if ((q = memchr(s, '\n', (size_t)(e - s))) != NULL &&
            (!t->hybrid || q + 1 < e)) {
            if (!t->hybrid || q[1] == '\n') {
                *at = (size_t)(q + 1 - t->buf);
                return 1;
            }
            i = (size_t)(q + 1 - t->buf);
            continue;
        }
        i = q ? (size_t)(q - t->buf) : t->end;
        if (!refill(t, i))
            return 0;
        i = 0;
    }
}

static void scan(lp_pstail *t)
{
    size_t pos;
    uint64_t lines = 0, units = 0;

    t->base = t->from ? t->from - 1 : 0;
    t->end = 0;
    if (!refill(t, 0) || !first_unit(t, &pos))
        return;
    t->res.start = t->res.end = t->base + pos;
    while (!__atomic_load_n(&t->stop, __ATOMIC_RELAXED)) {
        const char *k;
        size_t klen;
        uint64_t nl;
        long n = unit_at(t, t->buf + pos, t->buf + t->end, &k, &klen, &nl);
        if (n == 0) {
            int more = refill(t, pos);
            pos = 0;                    /* refill kept the bytes from pos */
            if (!more)
                break;
            continue;
        }
        if (n < 0 || count(t, k, klen, t->base + (uint64_t)(k - t->buf)))
            break;
        pos += (size_t)n;
        lines += nl;
        units++;
        if (t->n > PT_DISTINCT_MIN && t->n > units / 2) {
            t->res.distinct = 1;
            break;
        }
    }
    t->res.end = t->base + pos;
    t->res.lines = lines;
    t->res.units = units;
}

static void *tail_main(void *arg)
{
    scan(arg);
    return NULL;
}

/* ---- entry points -------------------------------------------------------- */

lp_pstail *lp_pstail_start(int fd, uint64_t from, uint64_t size, int hybrid,
                           size_t cap)
{
    lp_pstail *t = calloc(1, sizeof *t);

    if (!t || !(t->buf = malloc(PT_BUF)))
        goto fail;
    t->fd = fd;
    t->from = from;
    t->size = size;
    t->hybrid = hybrid;
    t->cap = cap && cap < UINT32_MAX ? cap : 1;
    t->bcap = PT_BUF;
    if (pthread_create(&t->th, NULL, tail_main, t) == 0)
        return t;
fail:
    if (t)
        free(t->buf);
    free(t);
    return NULL;
}

void lp_pstail_finish(lp_pstail *t, int stop, lp_pstail_res *res)
{
    if (stop)
        __atomic_store_n(&t->stop, 1, __ATOMIC_RELAXED);
    if (!t->joined)
        pthread_join(t->th, NULL);
    t->joined = 1;
    free(t->buf);               /* the scan's: done with */
    t->buf = NULL;
    free(t->ix);
    t->ix = NULL;
    t->res.blk = t->e;
    t->res.nblk = t->n;
    if (t->res.end == t->res.start)
        t->res.nblk = 0;
    *res = t->res;
}

void lp_pstail_free(lp_pstail *t)
{
    lp_pstail_res ignored;

    if (!t)
        return;
    lp_pstail_finish(t, 1, &ignored);
    free(t->buf);
    free(t->ix);
    free(t->e);
    free(t);
}
