/*
 * text.c - the LLVM sample profile text format, written exactly like
 * SampleProfileWriterText: top-level profiles by total descending, body
 * lines by location, call targets by count descending, then inlinee blocks
 * by location and callee, one more space of indent per level, then the
 * metadata (!CFGChecksum of probe-based profiles, !Attributes). Owns the
 * text syntax only; the ordering comes from the model's sorted views.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"
#include "util/cpus.h"
#include "util/grow.h"
#include "writer/writer.h"

/* Numbers, names and indents written directly: the text of a large CS
 * profile is ~10^6 lines and fprintf's format parsing was a fifth of a
 * run. The bytes are those of the printf formats they replace. They go
 * to a buffer of the writer's own: handed to stdio 64 KiB at a time (one
 * fwrite per number or name, stdio's lock and bookkeeping, was 40% of
 * writing an 84k-context profile), or, for a batch of profiles made on
 * the side (f NULL), grown to hold the batch. */
typedef struct tout {
    FILE *f;                    /* NULL: into memory */
    char *b;
    size_t n, cap;
    lp_target_view *tv;         /* one record's sorted targets */
    size_t tv_cap;
    bool failed;                /* into memory: no room (b's end reused) */
} tout;

#define TOUT_FILE_BUF ((size_t)1 << 16)

/* "00" .. "99": numbers are written two digits at a time */
static const char digits2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

static void flush(tout *o)
{
    if (o->f)
        fwrite(o->b, 1, o->n, o->f);
    o->n = 0;
}

/* Room for n more bytes at b's end: stdio given the buffer, or the
 * buffer grown (on no memory, o failed and the batch's end rewritten:
 * its caller drops it). */
static void make_room(tout *o, size_t n)
{
    if (o->f) {
        flush(o);
    } else if (lp_grow_bytes((void **)&o->b, &o->cap, o->n + n, 1 << 16)) {
        o->failed = true;
        o->n = 0;
    }
}

/* Room for n more bytes (n <= 64 KiB) at the buffer's end. Numbers,
 * indents and punctuation are written there in place: through a memcpy
 * per piece they were ~40% of writing a flat CS profile's text. */
static inline char *room(tout *o, size_t n)
{
    if (n > o->cap - o->n)
        make_room(o, n);
    return o->b + o->n;
}

static inline void put_mem(tout *o, const char *s, size_t n)
{
    if (n > o->cap - o->n) {
        if (o->f && n > o->cap) {
            flush(o);
            fwrite(s, 1, n, o->f);
            return;
        }
        make_room(o, n);
        if (n > o->cap - o->n)  /* failed */
            return;
    }
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

static inline void put_c(tout *o, char c)
{
    *room(o, 1) = c;
    o->n++;
}

static inline void put_u64(tout *o, uint64_t v)
{
    char *p = room(o, 20);
    size_t n = 1, i;
    uint64_t x;

    for (x = v; x >= 100; x /= 100)
        n += 2;
    n += x >= 10;
    for (i = n; v >= 100; v /= 100) {
        i -= 2;
        memcpy(p + i, digits2 + 2 * (v % 100), 2);
    }
    if (v >= 10)
        memcpy(p, digits2 + 2 * v, 2);
    else
        p[0] = (char)('0' + v);
    o->n += n;
}

static inline void put_str(tout *o, const char *s)
{
    put_mem(o, s, strlen(s));
}

static inline void put_indent(tout *o, int n)   /* printf("%*s", n, "") */
{
    char *p;
    int k, i;

    if (n > 0 && n <= 16) {     /* mostly: one 16-byte store */
        memcpy(room(o, 16), "                ", 16);
        o->n += (size_t)n;
        return;
    }
    for (; n > 0; n -= k) {     /* mostly a few spaces: no memset call */
        k = n < 256 ? n : 256;
        p = room(o, (size_t)k);
        for (i = 0; i < k; i++)
            p[i] = ' ';
        o->n += (size_t)k;
    }
}

static void put_loc(tout *o, lp_loc l)
{
    put_u64(o, l.line);
    if (l.disc) {
        put_c(o, '.');
        put_u64(o, l.disc);
    }
}

/* The body records of fs in location order, walked in place (views of
 * every record and their block per profile were a fifth of writing a
 * flat CS profile); only a record's targets are sorted, into the
 * writer's buffer. */
static int write_body(tout *f, const lp_fsamples *fs, int indent)
{
    size_t nb = lp_fs_nr_body(fs), nt, i, j;
    const lp_body_rec *b;

    for (i = 0; i < nb; i++) {
        b = lp_fs_body_at(fs, i);
        put_indent(f, indent + 1);
        put_loc(f, lp_body_loc(b));
        put_str(f, ": ");
        put_u64(f, lp_body_count(b));
        if ((nt = lp_body_nr_targets(b)) &&
            lp_grow_array(&f->tv, &f->tv_cap, nt, sizeof *f->tv, 16))
            return -1;
        nt = nt ? lp_body_sorted_targets(b, f->tv) : 0;
        for (j = 0; j < nt; j++) {
            put_c(f, ' ');
            put_str(f, f->tv[j].name);
            put_c(f, ':');
            put_u64(f, f->tv[j].count);
        }
        put_c(f, '\n');
    }
    return 0;
}

static int write_fs(tout *f, const lp_fsamples *fs, int indent,
                    const lp_profile *p)
{
    int is_cs = p->is_cs;
    lp_callee_view *c = NULL;
    size_t nc, i;
    int rc = 0;

    if (indent == 0 && is_cs) {
        put_c(f, '[');
        put_str(f, fs->context);
        put_str(f, "]:");
    } else {
        put_str(f, fs->name);
        put_c(f, ':');
    }
    put_u64(f, fs->total);
    if (indent == 0) {
        put_c(f, ':');
        put_u64(f, fs->head);
    }
    put_c(f, '\n');
    if (write_body(f, fs, indent))
        return -1;
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1)
        return -1;
    for (i = 0; i < nc && rc == 0; i++) {
        put_indent(f, indent + 1);
        put_loc(f, c[i].loc);
        put_str(f, ": ");
        rc = write_fs(f, c[i].fs, indent + 1, p);
    }
    free(c);
    if (rc == 0 && p->is_probe_based) {
        put_indent(f, indent + 1);
        put_str(f, "!CFGChecksum: ");
        put_u64(f, fs->checksum);
        put_c(f, '\n');
    }
    if (rc == 0 && fs->attrs) {
        put_indent(f, indent + 1);
        put_str(f, "!Attributes: ");
        put_u64(f, fs->attrs);
        put_c(f, '\n');
    }
    return rc;
}

/* A writer to f, or into memory (f NULL); NULL on no memory. */
static tout *tout_new(FILE *f)
{
    tout *o = calloc(1, sizeof *o);

    if (o && !(o->b = malloc(TOUT_FILE_BUF))) {
        free(o);
        return NULL;
    }
    if (o) {
        o->f = f;
        o->cap = TOUT_FILE_BUF;
    }
    return o;
}

static void tout_free(tout *o)
{
    if (o) {
        free(o->tv);
        free(o->b);
    }
    free(o);
}

/* v[a .. b) through o, the profiles ahead brought into the caches: the
 * entries 16 ahead, the contexts and body records of the one 8 ahead
 * (formatting waited for a cache miss on each, in output order). 0 or -1
 * (no memory). */
static int write_range(tout *o, lp_fsamples *const *v, size_t a, size_t b,
                       const lp_profile *p)
{
    int rc = 0;

    for (; a < b && rc == 0; a++) {
        if (a + 16 < b)
            __builtin_prefetch(v[a + 16]);
        if (a + 8 < b) {
            __builtin_prefetch(v[a + 8]->context);
            __builtin_prefetch(v[a + 8]->body);
        }
        rc = write_fs(o, v[a], 0, p);
    }
    return rc || o->failed ? -1 : 0;
}

/* ---- two threads (large profiles) ------------------------------------------- */

/* A large profile's text is made on two threads: the profiles in
 * batches, each taken by whichever thread is free and formatted into
 * memory, batch b into slot b % TEXT_SLOTS (kept from batch to batch: no
 * buffer grows once the first ones have); the caller writes the slots to
 * the file in batch order as they get ready, between its own batches.
 * TEXT_SLOTS batches at most wait in memory (~0.1 MB each), so the output
 * is never held whole. Formatting is memory-bound (each profile's first
 * touch, in output order): 75k flat CS profiles took ~60 ms on one core.
 * Batches were given alternately to the caller and the helper before:
 * the caller, which also wrote every batch to the file, was the last
 * (~37 of ~65 ms of CPU). */
#define TEXT_SPLIT_MIN 8192         /* profiles: fewer are written alone */
#define TEXT_BATCH 512
#define TEXT_SLOTS 8

enum { SLOT_FREE, SLOT_BUSY, SLOT_READY, SLOT_FAILED };

typedef struct tsplit {
    lp_fsamples *const *v;
    size_t n, nb;                   /* profiles, batches */
    const lp_profile *p;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t next;                    /* the next batch to format */
    tout *slot[TEXT_SLOTS];         /* into memory */
    int state[TEXT_SLOTS];
    bool stop;                      /* the caller failed: no more batches */
} tsplit;

/* The next batch to format, its slot taken (mu held): 1, or 0 if its
 * slot is not written yet, -1 if none is left. */
static int take_batch(tsplit *ts, size_t *b)
{
    size_t k = ts->next % TEXT_SLOTS;

    if (ts->stop || ts->next >= ts->nb)
        return -1;
    if (ts->state[k] != SLOT_FREE)
        return 0;
    ts->state[k] = SLOT_BUSY;
    *b = ts->next++;
    return 1;
}

/* Batch b into its slot (mu not held; retaken on return). */
static void format_batch(tsplit *ts, size_t b)
{
    size_t a = b * TEXT_BATCH, e = a + TEXT_BATCH < ts->n ? a + TEXT_BATCH : ts->n;
    tout *o = ts->slot[b % TEXT_SLOTS];
    int rc;

    pthread_mutex_unlock(&ts->mu);
    o->n = 0;
    rc = write_range(o, ts->v, a, e, ts->p);
    pthread_mutex_lock(&ts->mu);
    ts->state[b % TEXT_SLOTS] = rc ? SLOT_FAILED : SLOT_READY;
    pthread_cond_broadcast(&ts->cv);
}

static void *helper(void *arg)
{
    tsplit *ts = arg;
    size_t b;
    int t;

    pthread_mutex_lock(&ts->mu);
    while ((t = take_batch(ts, &b)) >= 0) {
        if (t)
            format_batch(ts, b);
        else
            pthread_cond_wait(&ts->cv, &ts->mu);
    }
    pthread_mutex_unlock(&ts->mu);
    return NULL;
}

/* The caller's part: the ready slots written in order, batches formatted
 * when one is free, else a wait. 0 or -1 (no memory). */
static int write_split(tout *o, tsplit *ts)
{
    size_t w = 0, b;
    tout *s;
    int rc = 0;

    pthread_mutex_lock(&ts->mu);
    while (rc == 0 && w < ts->nb) {
        if (ts->state[w % TEXT_SLOTS] >= SLOT_READY) {
            s = ts->slot[w % TEXT_SLOTS];
            rc = ts->state[w % TEXT_SLOTS] == SLOT_FAILED ? -1 : 0;
            pthread_mutex_unlock(&ts->mu);
            if (rc == 0)
                put_mem(o, s->b, s->n);
            pthread_mutex_lock(&ts->mu);
            ts->state[w++ % TEXT_SLOTS] = SLOT_FREE;
            pthread_cond_broadcast(&ts->cv);
        } else if (take_batch(ts, &b) > 0) {
            format_batch(ts, b);
        } else {
            pthread_cond_wait(&ts->cv, &ts->mu);
        }
    }
    ts->stop = true;
    pthread_cond_broadcast(&ts->cv);
    pthread_mutex_unlock(&ts->mu);
    return rc;
}

/* v[0 .. n) with the helper; 1 if no second thread could start (nothing
 * written), else 0 or -1. */
static int write_two(tout *o, lp_fsamples *const *v, size_t n,
                     const lp_profile *p)
{
    tsplit ts = {.v = v, .n = n, .p = p};
    pthread_t th;
    int rc = 1, i;

    ts.nb = (n + TEXT_BATCH - 1) / TEXT_BATCH;
    if (lp_cpus() < 2)
        return 1;
    for (i = 0; i < TEXT_SLOTS; i++)
        if (!(ts.slot[i] = tout_new(NULL)))
            rc = -1;
    pthread_mutex_init(&ts.mu, NULL);
    pthread_cond_init(&ts.cv, NULL);
    if (rc == 1 && pthread_create(&th, NULL, helper, &ts) == 0) {
        rc = write_split(o, &ts);
        pthread_join(th, NULL);
    }
    pthread_cond_destroy(&ts.cv);
    pthread_mutex_destroy(&ts.mu);
    for (i = 0; i < TEXT_SLOTS; i++)
        tout_free(ts.slot[i]);
    return rc;
}

int lp_write_text(FILE *f, const lp_profile *p, lp_error *err)
{
    lp_fsamples **v = NULL;
    size_t n;
    int rc = 1;
    tout *o = tout_new(f);

    if (!o || (n = lp_profile_sorted(p, &v)) == (size_t)-1) {
        tout_free(o);
        return lp_error_set(err, LP_ENOMEM, "text writer: out of memory");
    }
    if (n >= TEXT_SPLIT_MIN)
        rc = write_two(o, v, n, p);
    if (rc == 1)
        rc = write_range(o, v, 0, n, p);
    flush(o);
    tout_free(o);
    free(v);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "text writer: out of memory");
    return 0;
}
