/*
 * discover.c - which binaries a trace is of, when the command line does not
 * say: one pass over the trace counting the samples (with a branch stack)
 * whose IP falls in each user-space file, then each file looked for on disk
 * (recorded path, perf's build-id cache, next to the trace, the current
 * directory). Owns the hit table and the file search; does not open the
 * binaries for the run (run.c) nor read the trace for counting (trace.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/machine.h"
#include "lbr2prof/pt.h"
#include "lbr2prof/reader.h"
#include "profgen/pg_internal.h"

typedef struct file_hits {      /* samples whose IP fell in a mapped file
                                   with this path and build-id */
    char *path;
    uint64_t hits;
    uint8_t build_id[20];       /* as recorded (MMAP2 or BUILD_ID table) */
    uint8_t build_id_size;
    const char *trace;          /* the first trace it was sampled in */
} file_hits;

typedef struct text_map {       /* an mmap line of a perf script */
    uint64_t start, end;
    char *path;
} text_map;

typedef struct hit_table {
    file_hits *v;
    size_t n, cap;
    const char *trace;          /* the trace being scanned */
    text_map *maps;             /* for samples without a pid (perf script) */
    size_t nmaps, mcap;
} hit_table;

static void hit_table_free(hit_table *t)
{
    size_t i;

    for (i = 0; i < t->n; i++)
        free(t->v[i].path);
    for (i = 0; i < t->nmaps; i++)
        free(t->maps[i].path);
    free(t->v);
    free(t->maps);
}

static int add_text_map(hit_table *t, const lp_mmap_event *m)
{
    text_map *nv;

    if (!m->filename || m->filename[0] != '/')
        return 0;
    if (t->nmaps == t->mcap) {
        t->mcap = t->mcap ? t->mcap * 2 : 16;
        if (!(nv = realloc(t->maps, t->mcap * sizeof *nv)))
            return -1;
        t->maps = nv;
    }
    if (!(t->maps[t->nmaps].path = strdup(m->filename)))
        return -1;
    t->maps[t->nmaps].start = m->start;
    t->maps[t->nmaps++].end = m->start + m->len;
    return 0;
}

/* the latest text mmap covering addr */
static const char *text_map_find(const hit_table *t, uint64_t addr)
{
    size_t i;

    for (i = t->nmaps; i-- > 0;)
        if (addr >= t->maps[i].start && addr < t->maps[i].end)
            return t->maps[i].path;
    return NULL;
}

static bool same_file(const file_hits *h, const char *path, const lp_map *mp)
{
    size_t n = mp ? mp->build_id_size : 0;

    return strcmp(h->path, path) == 0 && h->build_id_size == n &&
           (n == 0 || memcmp(h->build_id, mp->build_id, n) == 0);
}

static int add_hit(hit_table *t, const char *path, const lp_map *mp)
{
    file_hits *nv;
    size_t i;

    for (i = 0; i < t->n; i++)
        if (same_file(&t->v[i], path, mp)) {
            t->v[i].hits++;
            return 0;
        }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        if (!(nv = realloc(t->v, t->cap * sizeof *nv)))
            return -1;
        t->v = nv;
    }
    if (!(t->v[t->n].path = strdup(path)))
        return -1;
    t->v[t->n].build_id_size = mp ? mp->build_id_size : 0;
    if (mp)
        memcpy(t->v[t->n].build_id, mp->build_id, sizeof mp->build_id);
    t->v[t->n].trace = t->trace;
    t->v[t->n++].hits = 1;
    return 0;
}

static int count_sample(hit_table *t, const lp_machine *m, const lp_event *ev)
{
    const lp_sample *s = &ev->u.sample;
    const lp_map *mp;
    const char *f;

    if (!(s->sample_type & LP_SAMPLE_IP) || s->branch_nr == 0)
        return 0;
    if (!(s->sample_type & LP_SAMPLE_TID))
        return (f = text_map_find(t, s->ip)) ? add_hit(t, f, NULL) : 0;
    mp = lp_machine_find_map(m, s->pid, s->ip, ev->misc & LP_MISC_CPUMODE_MASK);
    if (!mp || mp->kernel || mp->anon || !mp->filename || mp->filename[0] != '/')
        return 0;
    return add_hit(t, mp->filename, mp);
}

/* One event into the machine and the table; -1 with err. */
static int scan_event(hit_table *t, lp_machine *m, const lp_event *ev,
                      lp_error *err)
{
    if (lp_machine_process_event(m, ev, err))
        return -1;
    if ((ev->kind == LP_EV_MMAP && add_text_map(t, &ev->u.mmap)) ||
        (ev->kind == LP_EV_SAMPLE && count_sample(t, m, ev)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

/* One whole trace into t (with --itrace, the samples PT synthesizes). 0
 * or -1. */
static int scan_one(const lp_profgen_opts *o, const char *path, bool text,
                    hit_table *t, lp_error *err)
{
    lp_reader_opts ro = {0};
    lp_machine *m = lp_machine_new(LP_MACHINE_KEEP_MAPS_ON_EXEC, err);
    lp_reader *r = NULL;
    lp_ptsynth *pt = NULL;
    const lp_event *ev;
    int k = -1;

    ro.force_text = text;
    ro.skip_payloads = 1;
    if (m && (r = lp_reader_open(path, &ro, err)) &&
        pg_pt_open(o, path, text, &pt, err) == 0) {
        while ((k = pg_next_event(r, pt, &ev, err)) == 1)
            if (scan_event(t, m, ev, err)) {
                k = -1;
                break;
            }
    }
    lp_ptsynth_close(pt);
    if (r)
        lp_reader_close(r);
    lp_machine_free(m);
    return k == 0 ? 0 : -1;
}

static int scan(const lp_profgen_opts *o, hit_table *t, lp_error *err)
{
    size_t i;

    for (i = 0; i < pg_ntraces(o); i++) {
        t->trace = pg_trace_at(o, i);
        if (scan_one(o, t->trace, o->perfscript != NULL, t, err))
            return -1;
    }
    return 0;
}

/* Whether the ELF file at `path` has build-id `id` (or no id is known). */
static bool id_matches(const char *path, const file_hits *h)
{
    lp_binary *b;
    const uint8_t *id;
    size_t n;
    bool ok;

    if (!h->build_id_size)
        return true;
    if (!(b = lp_binary_open(path, NULL, NULL)))
        return false;
    n = lp_binary_build_id(b, &id);
    ok = n >= h->build_id_size && memcmp(id, h->build_id, h->build_id_size) == 0;
    lp_binary_close(b);
    return ok;
}

/* perf's build-id cache: DIR/.build-id/xx/yyyy.../elf, DIR as perf finds
 * it: $PERF_BUILDID_DIR, else ~/.debug */
static char *cache_path(const file_hits *h)
{
    const char *dir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
    char hex[41], *p;
    size_t i;
    int r;

    if (!h->build_id_size || (!(dir && *dir) && !home))
        return NULL;
    for (i = 0; i < h->build_id_size; i++)
        sprintf(hex + 2 * i, "%02x", h->build_id[i]);
    if (dir && *dir)
        r = asprintf(&p, "%s/.build-id/%.2s/%s/elf", dir, hex, hex + 2);
    else
        r = asprintf(&p, "%s/.debug/.build-id/%.2s/%s/elf", home, hex, hex + 2);
    return r < 0 ? NULL : p;
}

/* Where the recorded file is now: its recorded path, perf's build-id
 * cache, its basename next to the trace, its basename in the current
 * directory; the first readable one whose build-id is the recorded one,
 * else (unless `strict`) the first readable one (the address map then
 * reports the mismatch). NULL if none (malloc'ed result). */
static char *locate(const file_hits *h, bool strict)
{
    const char *trace = h->trace, *slash = strrchr(trace, '/'), *bn = basename(h->path);
    char *cand[4] = {strdup(h->path), cache_path(h), NULL, strdup(bn)}, *best = NULL;
    size_t i;

    if (slash && asprintf(&cand[2], "%.*s/%s", (int)(slash - trace), trace, bn) < 0)
        cand[2] = NULL;
    for (i = 0; i < 4 && !best; i++)
        if (cand[i] && access(cand[i], R_OK) == 0 && id_matches(cand[i], h))
            best = cand[i];
    for (i = 0; i < 4 && !best && !strict; i++)
        if (cand[i] && access(cand[i], R_OK) == 0)
            best = cand[i];
    for (i = 0; i < 4; i++)
        if (cand[i] != best)
            free(cand[i]);
    return best;
}

char *pg_locate(const char *path, const uint8_t *id, size_t nid,
                const char *near)
{
    file_hits h = {(char *)path, 0, {0}, 0, near};

    h.build_id_size = (uint8_t)(nid > sizeof h.build_id ? sizeof h.build_id : nid);
    memcpy(h.build_id, id, h.build_id_size);
    return locate(&h, true);
}

/* The user-space file that holds the most sampled IPs (with branch
 * stacks), found at its recorded path or by basename (see locate). */
char *pg_find_binary(const lp_profgen_opts *o, lp_error *err)
{
    const char *path = pg_trace_path(o);
    hit_table t = {0};
    char *best = NULL;
    size_t i, b = 0;
    int k = scan(o, &t, err);

    for (i = 0; i < t.n; i++)
        if (t.v[i].hits > t.v[b].hits)
            b = i;
    if (k == 0 && t.n == 0)
        lp_error_set(err, LP_EFORMAT, "%s%s: no sample with a branch stack falls "
                     "in a mapped file; pass --binary", path,
                     o->nmore_traces ? " (and the other traces)" : "");
    else if (k == 0 && !(best = locate(&t.v[b], false)))
        lp_error_set(err, LP_EIO, "%s: the most sampled binary is %s, which is "
                     "neither there nor next to the trace nor in the current "
                     "directory; pass --binary", t.v[b].trace, t.v[b].path);
    hit_table_free(&t);
    return best;
}

/* ---- --binaries-from-trace ------------------------------------------------ */

static int by_hits(const void *pa, const void *pb)
{
    const file_hits *a = pa, *b = pb;

    if (a->hits != b->hits)
        return a->hits > b->hits ? -1 : 1;
    return strcmp(a->path, b->path);
}

/* Whether `path` is the same file as one of skip[]. */
static bool already(const char *path, char *const *skip, size_t nskip)
{
    char *rp = realpath(path, NULL), *rs;
    bool same = false;
    size_t i;

    for (i = 0; i < nskip && !same; i++) {
        rs = realpath(skip[i], NULL);
        same = rp && rs ? strcmp(rp, rs) == 0 : strcmp(path, skip[i]) == 0;
        free(rs);
    }
    free(rp);
    return same;
}

/* A located file worth adding: opens, and has DWARF functions. */
static bool symbolizable(const char *path)
{
    lp_binary *b = lp_binary_open(path, NULL, NULL);
    bool ok = b && lp_binary_check_symbolizable(b, NULL) == 0;

    lp_binary_close(b);
    return ok;
}

static int push_path(char ***out, size_t *n, char *p)
{
    char **nv = realloc(*out, (*n + 1) * sizeof *nv);

    if (!nv) {
        free(p);
        return -1;
    }
    *out = nv;
    nv[(*n)++] = p;
    return 0;
}

int pg_trace_binaries(const lp_profgen_opts *o, char *const *skip,
                      size_t nskip, char ***out, size_t *n, lp_error *err)
{
    hit_table t = {0};
    char *p;
    size_t i;
    int rc = scan(o, &t, err);

    *out = NULL;
    *n = 0;
    if (rc == 0 && t.n > 1)
        qsort(t.v, t.n, sizeof *t.v, by_hits);
    for (i = 0; rc == 0 && i < t.n; i++) {
        if (!(p = locate(&t.v[i], true)))
            continue;
        if (already(p, skip, nskip) || already(p, *out, *n) || !symbolizable(p))
            free(p);
        else if (push_path(out, n, p))
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    hit_table_free(&t);
    return rc;
}
