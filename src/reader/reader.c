/*
 * reader.c - the public face of the trace reader (lbr2prof/reader.h):
 * opening inputs (file, stream, memory, `perf record --threads` directory),
 * sniffing perf.data against perf script text (handed to perfscript.c), and
 * delivering events in perf's order through the ordering queue below
 * (a re-implementation of the behaviour of perf's ordered_events).
 * Record bytes come from rd_input.c, their meaning from rd_header.c and
 * rd_decode.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reader/rd_internal.h"
#include "reader/tail.h"

/* perf script text is parsed by perfscript.c (see perfscript.h). */
#include "reader/perfscript.h"

static const char MAGIC2[8] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2' };
static const char MAGIC2_BE[8] = { '2', 'E', 'L', 'I', 'F', 'R', 'E', 'P' };
static const char MAGIC1[8] = { 'P', 'E', 'R', 'F', 'F', 'I', 'L', 'E' };

typedef enum sniff { SNIFF_PERF, SNIFF_V1, SNIFF_TEXT } sniff;

static sniff sniff_magic(const void *p, size_t n)
{
    if (n >= 8 && (!memcmp(p, MAGIC2, 8) || !memcmp(p, MAGIC2_BE, 8)))
        return SNIFF_PERF;
    if (n >= 8 && !memcmp(p, MAGIC1, 8))
        return SNIFF_V1;
    return SNIFF_TEXT;
}

/* ---- construction ------------------------------------------------------- */

static lp_reader *reader_new(const lp_reader_opts *opts, lp_error *err)
{
    lp_reader *r = calloc(1, sizeof *r);
    if (r)
        r->abuf = aligned_alloc(8, RD_MAX_RECORD + 64);
    if (r && r->abuf)
        r->pend_buf = aligned_alloc(8, RD_MAX_RECORD + 64);
    if (!r || !r->abuf || !r->pend_buf) {
        if (r)
            free(r->abuf);
        free(r);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    if (opts)
        r->opts = *opts;
    r->id_pos = r->is_pos = -1;
    r->tail_at = UINT64_MAX;
    return r;
}

static rd_file *add_file(lp_reader *r, lp_error *err)
{
    if (r->nr_files >= RD_MAX_FILES) {
        lp_error_set(err, LP_EUNSUPP, "more than %d input files",
                     RD_MAX_FILES);
        return NULL;
    }
    rd_file *n = realloc(r->files, (r->nr_files + 1) * sizeof *n);
    if (!n) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    r->files = n;
    memset(&n[r->nr_files], 0, sizeof *n);
    return &n[r->nr_files++];
}

static lp_reader *fail_open(lp_reader *r)
{
    lp_reader_close(r);
    return NULL;
}

static lp_reader *open_text(lp_reader *r, FILE *f, const void *prefix,
                            size_t n, const char *name, lp_error *err)
{
    struct stat st;

    r->info.format = LP_FMT_PERF_SCRIPT;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode))
        r->text_size = (uint64_t)st.st_size;
    r->text = lp_pscript_open(f, prefix, n, name, err);
    if (r->text && r->opts.fold_repeats)
        lp_pscript_allow_repeats(r->text);  /* the tail: pstail.c */
    if (r->text)
        r->pf = lp_pfetch_new(r->text, err);
    return r->pf ? r : fail_open(r);
}

static int cmp_data_n(const void *a, const void *b)
{
    unsigned long x = strtoul(*(char *const *)a + 5, NULL, 10);
    unsigned long y = strtoul(*(char *const *)b + 5, NULL, 10);
    return x < y ? -1 : x > y;
}

static int map_path(lp_reader *r, const char *path, lp_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    rd_file *f = add_file(r, err);
    int rc = f ? rd_file_map(f, fd, path, err) : -1;
    close(fd);
    if (rc < 0 && f)
        r->nr_files--;
    return rc;
}

/* `perf record --threads`: dir/data has the header, dir/data.N the rest. */
static int open_dir_streams(lp_reader *r, const char *dir, lp_error *err)
{
    DIR *d = opendir(dir);
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    int rc = 0;

    if (!d)
        return lp_error_set(err, LP_EIO, "%s: %s", dir, strerror(errno));
    while ((de = readdir(d)) != NULL && n < RD_MAX_FILES) {
        const char *s = de->d_name;
        if (strncmp(s, "data.", 5) || !s[5] || strspn(s + 5, "0123456789") !=
                                                   strlen(s + 5))
            continue;
        char **nn = realloc(names, (n + 1) * sizeof *nn);
        if (!nn || !(nn[n] = strdup(s))) {
            names = nn ? nn : names;
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
            break;
        }
        names = nn;
        n++;
    }
    closedir(d);
    if (rc == 0)
        qsort(names, n, sizeof *names, cmp_data_n);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            rc = map_path(r, path, err);
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static int thread_next(void *ctx, const lp_event **ev, bool *body, lp_error *err);
static uint64_t thread_off(void *ctx);

/* The walk of a file-mode perf.data (or directory) held in memory runs on
 * a thread of its own: attributes and build-ids are all in the header, so
 * nothing the consumer reads changes while it runs. Pipe mode (records
 * that add attributes) and streams are read in the caller's thread. */
static bool threaded(const lp_reader *r)
{
    size_t i;

    if (r->opts.no_thread || (r->info.format != LP_FMT_PERF_FILE &&
                              r->info.format != LP_FMT_PERF_DIR))
        return false;
    for (i = 0; i < r->nr_files; i++)
        if (!r->files[i].is_mem)
            return false;
    return true;
}

/* files[0] is open and holds a perf.data header. */
static lp_reader *open_perf(lp_reader *r, const char *dir, lp_error *err)
{
    if (rd_read_file_header(r, &r->files[0], err) < 0)
        return fail_open(r);
    if (dir && r->info.format == LP_FMT_PERF_DIR &&
        open_dir_streams(r, dir, err) < 0)
        return fail_open(r);
    r->may_thread = threaded(r);
    if (r->may_thread)
        rd_tail_start(r);
    if (r->may_thread && !r->tail && !(r->pf = lp_pfetch_new_fn(thread_next, thread_off, r, err)))
        return fail_open(r);
    return r;
}

static lp_reader *open_v1(lp_reader *r, const char *name, lp_error *err)
{
    lp_error_set(err, LP_EUNSUPP,
                 "%s: perf.data v1 (\"PERFFILE\", perf <= 2.6.3x) is not "
                 "supported; re-record with a newer perf", name);
    return fail_open(r);
}

lp_reader *lp_reader_open_mem(const void *buf, size_t len, const char *name,
                              const lp_reader_opts *opts, lp_error *err)
{
    lp_reader *r = reader_new(opts, err);
    if (!r)
        return NULL;
    name = name ? name : "(memory)";
    switch (sniff_magic(buf, len)) {
    case SNIFF_PERF: {
        rd_file *f = add_file(r, err);
        if (!f || rd_file_open_mem(f, buf, len, name) < 0) {
            lp_error_set(err, LP_ENOMEM, "out of memory");
            return fail_open(r);
        }
        return open_perf(r, NULL, err);
    }
    case SNIFF_V1:
        return open_v1(r, name, err);
    default: {
        FILE *f = len ? fmemopen((void *)buf, len, "r") : NULL;
        if (!f) {
            lp_error_set(err, LP_EFORMAT, "%s: empty input", name);
            return fail_open(r);
        }
        r->own_text_f = f;
        return open_text(r, f, NULL, 0, name, err);
    }
    }
}

/* A FILE on a regular file, still at its start: can be mapped. */
static int stream_is_file_start(FILE *s)
{
    struct stat st;
    int fd = fileno(s);
    return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
           st.st_size > 0 && ftello(s) == 0 && lseek(fd, 0, SEEK_CUR) == 0;
}

lp_reader *lp_reader_open_stream(FILE *s, const char *name,
                                 const lp_reader_opts *opts, lp_error *err)
{
    char pre[8];
    lp_reader *r = reader_new(opts, err);
    if (!r)
        return NULL;
    name = name ? name : "(stream)";
    if (stream_is_file_start(s)) { /* `< perf.data`: map it, any mode */
        rd_file *f = add_file(r, err);
        if (!f || rd_file_map(f, fileno(s), name, err) < 0)
            return fail_open(r);
        int kind = sniff_magic(f->base, f->end);
        if (kind == SNIFF_PERF)
            return open_perf(r, NULL, err);
        rd_file_close(f);
        r->nr_files = 0;
        if (kind != SNIFF_V1) /* text: read from its start */
            return open_text(r, s, NULL, 0, name, err);
    }
    size_t n = fread(pre, 1, sizeof pre, s);
    if (n == 0) {
        lp_error_set(err, LP_EFORMAT, "%s: empty input", name);
        return fail_open(r);
    }
    switch (sniff_magic(pre, n)) {
    case SNIFF_PERF: {
        rd_file *f = add_file(r, err);
        if (!f || rd_file_stream(f, s, name, err) < 0)
            return fail_open(r);
        memcpy(f->buf, pre, n);
        f->b1 = n;
        return open_perf(r, NULL, err);
    }
    case SNIFF_V1:
        return open_v1(r, name, err);
    default:
        return open_text(r, s, pre, n, name, err);
    }
}

static lp_reader *open_directory(lp_reader *r, const char *path,
                                 lp_error *err)
{
    char main_path[4096];
    snprintf(main_path, sizeof main_path, "%s/data", path);
    if (map_path(r, main_path, err) < 0)
        return fail_open(r);
    if (sniff_magic(r->files[0].base, r->files[0].end) != SNIFF_PERF) {
        lp_error_set(err, LP_EFORMAT, "%s: not a perf.data file", main_path);
        return fail_open(r);
    }
    return open_perf(r, path, err);
}

/* A fifo or character device: read it as a stream we own. */
static lp_reader *open_special(const char *path, const lp_reader_opts *opts,
                               lp_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    lp_reader *r = lp_reader_open_stream(f, path, opts, err);
    if (r && r->nr_files)
        r->files[0].own_f = 1;
    else if (r && r->text)
        r->own_text_f = f;
    else
        fclose(f);
    return r;
}

static lp_reader *open_regular(lp_reader *r, const char *path, lp_error *err)
{
    if (map_path(r, path, err) < 0)
        return fail_open(r);
    rd_file *f = &r->files[0];
    size_t n = f->end < 8 ? (size_t)f->end : 8;
    switch (sniff_magic(f->base, n)) {
    case SNIFF_PERF:
        return open_perf(r, NULL, err);
    case SNIFF_V1:
        return open_v1(r, path, err);
    default:
        break;
    }
    if (n == 0) {
        lp_error_set(err, LP_EFORMAT, "%s: empty file", path);
        return fail_open(r);
    }
    rd_file_close(f);
    r->nr_files = 0;
    FILE *tf = fopen(path, "rb");
    if (!tf) {
        lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
        return fail_open(r);
    }
    r->own_text_f = tf;
    return open_text(r, tf, NULL, 0, path, err);
}

void lp_reader_start(lp_reader *r)
{
    if (r && r->pf)
        lp_pfetch_start(r->pf);
}

int lp_reader_second_core_busy(const lp_reader *r)
{
    return r && ((r->text && r->pf) || r->tail);
}

void lp_reader_set_idle(lp_reader *r, lp_reader_idle_fn fn, void *ctx)
{
    if (r) {
        r->idle_fn = fn;
        r->idle_ctx = ctx;
    }
    if (r && r->pf)
        lp_pfetch_set_idle(r->pf, fn, ctx);
}

void lp_reader_set_ahead(lp_reader *r, lp_reader_ahead_fn fn, void *ctx)
{
    if (r) {
        r->ahead_fn = fn;
        r->ahead_ctx = ctx;
    }
    if (r && r->pf && !r->text)
        lp_pfetch_set_ahead(r->pf, fn, ctx);
}

void lp_reader_defer_arrays(lp_reader *r)
{
    if (r && r->text)
        lp_pfetch_defer_arrays(r->pf);
}

int lp_reader_arrays(lp_reader *r, const lp_sample *s, lp_error *err)
{
    return r->text ? lp_pfetch_arrays(r->pf, s, err) : 0;
}

lp_reader *lp_reader_open(const char *path, const lp_reader_opts *opts,
                          lp_error *err)
{
    struct stat st;

    if (!strcmp(path, "-"))
        return lp_reader_open_stream(stdin, "(stdin)", opts, err);
    if (stat(path, &st) < 0) {
        lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
        return open_special(path, opts, err);
    lp_reader *r = reader_new(opts, err);
    if (!r)
        return NULL;
    return S_ISDIR(st.st_mode) ? open_directory(r, path, err)
                               : open_regular(r, path, err);
}

/* ---- the ordering queue ------------------------------------------------ */

static int cmp_qent(const void *a, const void *b)
{
    const rd_qent *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int arena_reserve(uint8_t **a, size_t *cap, size_t need)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 1u << 20;
    while (c < need)
        c *= 2;
    uint8_t *n = realloc(*a, c);
    if (!n)
        return -1;
    *a = n;
    *cap = c;
    return 0;
}

/* Append a copy of a record to arena `a`; returns its offset or -1. */
static int64_t arena_put(uint8_t **a, size_t *len, size_t *cap,
                         const rd_arena_hdr *h, const uint8_t *p, size_t size)
{
    size_t off = *len, tot = (sizeof *h + size + 7) & ~(size_t)7;
    if (arena_reserve(a, cap, off + tot) < 0)
        return -1;
    memcpy(*a + off, h, sizeof *h);
    memcpy(*a + off + sizeof *h, p, size);
    *len = off + tot;
    return (int64_t)off;
}

/* Room for one more entry. */
static int queue_room(rd_queue *q, lp_error *err)
{
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 4096;
        rd_qent *n = realloc(q->e, cap * sizeof *n);
        if (!n)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        q->e = n;
        q->cap = cap;
    }
    return 0;
}

static int enqueue(lp_reader *r, const rd_raw *raw, uint64_t t, lp_error *err)
{
    rd_queue *q = &r->q;
    rd_qent e = { t, q->seq++, 0 };

    if (queue_room(q, err) < 0)
        return -1;
    if (raw->stable && raw->off < (1ull << RD_LOC_FILE_SHIFT)) {
        e.loc = (uint64_t)raw->file_idx << RD_LOC_FILE_SHIFT | raw->off;
    } else {
        rd_arena_hdr h = { raw->off, (uint32_t)raw->file_idx,
                           (uint32_t)raw->zst };
        int64_t off = arena_put(&q->arena, &q->arena_len, &q->arena_cap, &h,
                                raw->p, raw->size);
        if (off < 0)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        e.loc = RD_LOC_ARENA | (uint64_t)off;
    }
    if (t < q->last_flush)
        r->stats.out_of_order++;
    if (q->n > q->head && t < q->e[q->n - 1].time)
        q->sorted = 0;
    if (t > q->max_time)
        q->max_time = t;
    q->e[q->n++] = e;
    return 0;
}

/* The tail's last sample, still queued where walking its region would
 * have left it (tail.c): a flush passes it like a record, delivers
 * nothing. */
int rd_queue_phantom(lp_reader *r, uint64_t t, lp_error *err)
{
    rd_queue *q = &r->q;

    if (queue_room(q, err) < 0)
        return -1;
    if (q->n > q->head && t < q->e[q->n - 1].time)
        q->sorted = 0;
    q->e[q->n++] = (rd_qent){t, q->seq++, RD_LOC_PHANTOM};
    return 0;
}

static void queue_raw(const lp_reader *r, const rd_qent *e, rd_raw *raw)
{
    memset(raw, 0, sizeof *raw);
    if (e->loc & RD_LOC_ARENA) {
        const uint8_t *a = r->q.arena + (e->loc & ~RD_LOC_ARENA);
        rd_arena_hdr h;
        memcpy(&h, a, sizeof h);
        raw->p = a + sizeof h;
        raw->off = h.off;
        raw->file_idx = (int)h.file_idx;
        raw->zst = (int)h.zst;
    } else {
        raw->file_idx = (int)(e->loc >> RD_LOC_FILE_SHIFT);
        raw->off = e->loc & ((1ull << RD_LOC_FILE_SHIFT) - 1);
        raw->p = r->files[raw->file_idx].base + raw->off;
        raw->stable = 1;
    }
    raw->type = rd_ld32(raw->p, r->swap);
    raw->misc = rd_ld16(raw->p + 4, r->swap);
    raw->size = rd_ld16(raw->p + 6, r->swap);
}

/* A flush visits the round's records in time order, out of file order,
 * and most have left the caches since the walk saw them: start loading
 * the header and first lines of the one RD_QUEUE_AHEAD entries on. */
#define RD_QUEUE_AHEAD 8
static void queue_prefetch(const lp_reader *r, size_t i)
{
    const uint8_t *p;
    uint64_t loc;

    if (i >= r->q.n || r->q.e[i].loc == RD_LOC_PHANTOM)
        return;
    loc = r->q.e[i].loc;
    p = loc & RD_LOC_ARENA ? r->q.arena + (loc & ~RD_LOC_ARENA)
                           : r->files[loc >> RD_LOC_FILE_SHIFT].base +
                             (loc & ((1ull << RD_LOC_FILE_SHIFT) - 1));
    __builtin_prefetch(p);
    __builtin_prefetch(p + 64);
    __builtin_prefetch(p + 128);
}

static void start_flush(lp_reader *r, uint64_t limit)
{
    rd_queue *q = &r->q;
    if (!q->sorted && q->n > q->head) {
        qsort(q->e + q->head, q->n - q->head, sizeof *q->e, cmp_qent);
        q->sorted = 1;
    }
    r->flush_limit = limit;
    r->state = RD_FLUSH;
}

/* Give back mapped pages of the current file below everything queued. */
static void release_behind(lp_reader *r)
{
    if (r->cur_file >= r->nr_files || !r->files[r->cur_file].map_len)
        return;
    const rd_file *f = &r->files[r->cur_file];
    const uint8_t *hold = r->pf ? lp_pfetch_hold(r->pf) : NULL;
    uint64_t low = f->pos;
    /* events in the prefetcher's ring point into the mapping there; one
     * into an earlier file of a directory: this file's lowest is not
     * known, keep everything until the next flush */
    if (hold && (hold < f->base + 8 || hold >= f->base + f->end))
        return;
    if (hold)
        low = (uint64_t)(hold - 8 - f->base);
    for (size_t i = 0; i < r->q.n; i++) {
        uint64_t loc = r->q.e[i].loc;
        if (!(loc & RD_LOC_ARENA) && (loc >> RD_LOC_FILE_SHIFT) == r->cur_file) {
            uint64_t off = loc & ((1ull << RD_LOC_FILE_SHIFT) - 1);
            low = off < low ? off : low;
        }
    }
    rd_file_release(&r->files[r->cur_file], low);
}

/* Drop delivered entries; move arena records still queued to a fresh arena. */
static int end_flush(lp_reader *r, lp_error *err)
{
    rd_queue *q = &r->q;
    size_t left = q->n - q->head;
    if (left && q->head)
        memmove(q->e, q->e + q->head, left * sizeof *q->e);
    q->n = left;
    q->head = 0;
    release_behind(r);
    if (q->arena_len == 0)
        return 0;
    size_t len2 = 0;
    for (size_t i = 0; i < q->n; i++) {
        if (!(q->e[i].loc & RD_LOC_ARENA))
            continue;
        const uint8_t *a = q->arena + (q->e[i].loc & ~RD_LOC_ARENA);
        rd_arena_hdr h;
        memcpy(&h, a, sizeof h);
        uint16_t size = rd_ld16(a + sizeof h + 6, r->swap);
        int64_t off = arena_put(&q->arena2, &len2, &q->arena2_cap, &h,
                                a + sizeof h, size);
        if (off < 0)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        q->e[i].loc = RD_LOC_ARENA | (uint64_t)off;
    }
    uint8_t *t = q->arena;
    size_t tc = q->arena_cap;
    q->arena = q->arena2;
    q->arena_cap = q->arena2_cap;
    q->arena2 = t;
    q->arena2_cap = tc;
    q->arena_len = len2;
    return 0;
}

/* ---- delivery ------------------------------------------------------------ */

static int failed(lp_reader *r, lp_error *err)
{
    if (err)
        r->saved_err = *err;
    r->state = RD_FAILED;
    return -1;
}

/* One step of a flush: 1 delivered, 0 flush over, -1 error. */
static int flush_step(lp_reader *r, lp_error *err)
{
    rd_queue *q = &r->q;
    while (q->head < q->n && q->e[q->head].time <= r->flush_limit) {
        rd_raw raw;
        rd_qent e = q->e[q->head++];
        queue_prefetch(r, q->head + RD_QUEUE_AHEAD);
        q->last_flush = e.time;
        if (e.loc == RD_LOC_PHANTOM)
            continue;
        queue_raw(r, &e, &raw);
        int rc = rd_decode(r, &raw, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* After a flush: the round's FINISHED_ROUND (or end of input). */
static int after_flush(lp_reader *r, lp_error *err)
{
    if (end_flush(r, err) < 0)
        return -1;
    if (r->at_eof) {
        r->state = RD_DONE;
        return 0;
    }
    if (r->replay) { /* the head's queue is out: the tail's samples next */
        r->replay = 0;
        r->state = RD_REPLAY;
        return 0;
    }
    r->q.next_flush = r->q.max_time;
    r->state = RD_RUN;
    rd_raw raw = r->pending;
    raw.p = (const uint8_t *)r->pend_buf;
    return rd_decode(r, &raw, err);
}

/* Handle one raw record in RUN state: 1 delivered, 0 not (yet), -1 error. */
static int run_step(lp_reader *r, const rd_raw *raw, lp_error *err)
{
    uint64_t t = 0;
    int timed = r->opts.order == LP_ORDER_TIME;

    if (raw->type >= RD_USER_START) {
        if (r->tail && raw->type != RD_FINISHED_ROUND)
            rd_tail_discard(r); /* may add attributes the tail reads */
        if (rd_user_record(r, raw, err) < 0)
            return -1;
        if (raw->type == RD_FINISHED_ROUND && timed) {
            r->pending = *raw;
            memcpy(r->pend_buf, raw->p, raw->size);
            start_flush(r, r->q.next_flush);
            return 0;
        }
        return rd_decode(r, raw, err);
    }
    if (timed && rd_timestamp(r, raw, &t, err) < 0)
        return -1;
    if (!timed || t == 0 || t == UINT64_MAX)
        return rd_decode(r, raw, err);
    return enqueue(r, raw, t, err) < 0 ? -1 : 0;
}

/* The perf.data walk itself (on the prefetcher's thread when there is one). */
static int next_direct(lp_reader *r, const lp_event **ev, lp_error *err)
{
    for (;;) {
        int rc;
        switch (r->state) {
        case RD_FAILED:
            if (err)
                *err = r->saved_err;
            return -1;
        case RD_DONE:
            return 0;
        case RD_FLUSH:
            rc = flush_step(r, err);
            if (rc == 0)
                rc = after_flush(r, err);
            break;
        case RD_REPLAY:
            rc = rd_tail_replay(r, err);
            break;
        case RD_RUN:
        default: {
            rd_raw raw;
            if (r->files[0].pos >= r->tail_at && rd_tail_arrive(r)) {
                r->replay = 1;
                start_flush(r, UINT64_MAX);
                continue;
            }
            rc = rd_next_raw(r, &raw, err);
            if (rc == 0) {
                r->at_eof = 1;
                start_flush(r, UINT64_MAX);
                continue;
            }
            if (rc > 0)
                rc = run_step(r, &raw, err);
            break;
        }
        }
        if (rc < 0)
            return failed(r, err);
        if (rc > 0) {
            *ev = &r->ev;
            return 1;
        }
    }
}

/* Whether p points into one of the mapped input files (else into the
 * reader's scratch). */
static bool in_mapping(const lp_reader *r, const void *p)
{
    const uint8_t *q = p;
    size_t i;

    for (i = 0; i < r->nr_files; i++)
        if (r->files[i].is_mem && q >= r->files[i].base &&
            q < r->files[i].base + r->files[i].end)
            return true;
    return false;
}

static int thread_next(void *ctx, const lp_event **ev, bool *body, lp_error *err)
{
    lp_reader *r = ctx;
    int rc = next_direct(r, ev, err);

    *body = rc == 1 && (*ev)->body && !in_mapping(r, (*ev)->body);
    return rc;
}

/* Bytes of the record streams consumed and their total (0: unknown). */
static void data_position(const lp_reader *r, uint64_t *done, uint64_t *total)
{
    uint64_t d = 0, t = 0;
    size_t i;

    for (i = 0; i < r->nr_files; i++) {
        const rd_file *f = &r->files[i];
        if (!f->is_mem)
            t = UINT64_MAX;     /* a stream: its size is not known */
        else if (t != UINT64_MAX)
            t += f->end;
        if (i < r->cur_file)
            d += f->is_mem ? f->end : f->pos;
        else if (i == r->cur_file)
            d += f->pos;
    }
    *done = d;
    *total = t == UINT64_MAX ? 0 : t;
}

static uint64_t thread_off(void *ctx)
{
    uint64_t d, t;

    data_position(ctx, &d, &t);
    return d;
}

/* While the tail's thread (tail.c) holds the second core, the walk runs
 * in the caller's thread; once the tail's walk has ended, on the
 * prefetcher's again (a third thread only cost CPU: sqlite-line flat,
 * reading 0.67 -> 0.59 s CPU). Without memory for it: on as before. */
static void thread_after_tail(lp_reader *r)
{
    lp_error ignored;

    r->may_thread = 0;
    if (!(r->pf = lp_pfetch_new_fn(thread_next, thread_off, r, &ignored)))
        return;
    if (r->idle_fn)
        lp_pfetch_set_idle(r->pf, r->idle_fn, r->idle_ctx);
    if (r->ahead_fn)
        lp_pfetch_set_ahead(r->pf, r->ahead_fn, r->ahead_ctx);
    lp_pfetch_start(r->pf);
}

int lp_reader_next(lp_reader *r, const lp_event **ev, lp_error *err)
{
    uint64_t seen;

    if (r->text)
        return lp_pfetch_next(r->pf, ev, &r->stats.text_sample_starts, err);
    if (r->may_thread && !r->pf && !rd_tail_walking(r))
        thread_after_tail(r);
    if (r->pf)
        return lp_pfetch_next(r->pf, ev, &seen, err);
    return next_direct(r, ev, err);
}

const lp_file_info *lp_reader_info(const lp_reader *r)
{
    return &r->info;
}

const lp_reader_stats *lp_reader_stats_get(const lp_reader *r)
{
    return &r->stats;
}

void lp_reader_progress(const lp_reader *r, uint64_t *done, uint64_t *total)
{
    uint64_t d;
    size_t i;

    if (r->text) {
        *done = lp_pfetch_offset(r->pf);
        *total = r->text_size;
        return;
    }
    if (!r->pf) {
        data_position(r, done, total);
        return;
    }
    /* the walk is on the prefetcher's thread: its position at the batch
     * handed over, and the sizes, which the walk does not change */
    *done = lp_pfetch_offset(r->pf);
    for (i = 0, d = 0; i < r->nr_files; i++)
        d += r->files[i].end;
    *total = d;
}

void lp_reader_close(lp_reader *r)
{
    if (!r)
        return;
    lp_pfetch_free(r->pf);      /* first: its thread uses r->text */
    rd_tail_discard(r);
    if (r->text)
        lp_pscript_close(r->text);
    if (r->own_text_f)
        fclose(r->own_text_f);
    for (size_t i = 0; i < r->nr_files; i++)
        rd_file_close(&r->files[i]);
    free(r->files);
    rd_zstd_free(&r->z);
    rd_header_free(r);
    free(r->q.e);
    free(r->q.arena);
    free(r->q.arena2);
    free(r->abuf);
    free(r->paybuf);
    free(r->pend_buf);
    free(r);
}

const char *lp_event_kind_name(lp_event_kind k)
{
    static const char *const names[] = {
        [LP_EV_SAMPLE] = "SAMPLE", [LP_EV_MMAP] = "MMAP",
        [LP_EV_COMM] = "COMM", [LP_EV_FORK] = "FORK", [LP_EV_EXIT] = "EXIT",
        [LP_EV_LOST] = "LOST", [LP_EV_LOST_SAMPLES] = "LOST_SAMPLES",
        [LP_EV_THROTTLE] = "THROTTLE", [LP_EV_UNTHROTTLE] = "UNTHROTTLE",
        [LP_EV_FINISHED_ROUND] = "FINISHED_ROUND",
        [LP_EV_FINISHED_INIT] = "FINISHED_INIT", [LP_EV_OTHER] = "OTHER",
        [LP_EV_AUXTRACE_ERROR] = "AUXTRACE_ERROR",
    };
    if ((unsigned)k < sizeof names / sizeof names[0] && names[k])
        return names[k];
    return "UNKNOWN";
}
