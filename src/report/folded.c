/*
 * folded.c - the report as stacks: FlameGraph's collapsed format
 * ("root;caller;leaf COUNT", one line per distinct stack with a non-zero
 * self count, sorted, equal stacks merged) and speedscope's file format
 * (one "sampled" profile: a sample per context with its self count as
 * weight, frames = functions with file and first line). Owns those two
 * encodings only.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report/internal.h"

/* ---- folded ------------------------------------------------------------------ */

typedef struct fold_line {
    char *stack;
    uint64_t count;
} fold_line;

typedef struct fold_state {
    const lp_report_write_opts *o;
    char *buf;              /* the current path, ';'-joined */
    size_t len, cap;
    fold_line *v;
    size_t n, vcap;
} fold_state;

/* Append a frame name, with ';' and line breaks made harmless. */
static int push_name(fold_state *s, const char *name)
{
    size_t k = strlen(name), i;
    char *nb;

    if (s->len + k + 2 > s->cap) {
        s->cap = (s->len + k + 2) * 2;
        if (!(nb = realloc(s->buf, s->cap)))
            return -1;
        s->buf = nb;
    }
    if (s->len)
        s->buf[s->len++] = ';';
    for (i = 0; i < k; i++) {
        char c = name[i];
        s->buf[s->len++] = c == ';' ? ':' : (c == '\n' || c == '\r') ? ' ' : c;
    }
    s->buf[s->len] = 0;
    return 0;
}

static int emit(fold_state *s, uint64_t count)
{
    fold_line *nv;

    if (s->n == s->vcap) {
        s->vcap = s->vcap ? s->vcap * 2 : 64;
        if (!(nv = realloc(s->v, s->vcap * sizeof *nv)))
            return -1;
        s->v = nv;
    }
    if (!(s->v[s->n].stack = strdup(s->buf)))
        return -1;
    s->v[s->n++].count = count;
    return 0;
}

static int fold(fold_state *s, const lp_report_node *n)
{
    size_t save = s->len, i;

    if (n->func && push_name(s, rp_name(n->func, s->o)))
        return -1;
    if (n->func && n->self && emit(s, n->self))
        return -1;
    for (i = 0; i < n->nchildren; i++)
        if (fold(s, n->children[i]))
            return -1;
    s->len = save;
    if (s->buf)
        s->buf[save] = 0;
    return 0;
}

static int fold_cmp(const void *a, const void *b)
{
    return strcmp(((const fold_line *)a)->stack, ((const fold_line *)b)->stack);
}

int rp_write_folded(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                    lp_error *err)
{
    fold_state s = {o, NULL, 0, 0, NULL, 0, 0};
    size_t i, j;
    int rc = fold(&s, &r->root.n);

    if (rc == 0 && s.n)
        qsort(s.v, s.n, sizeof *s.v, fold_cmp);
    for (i = 0; rc == 0 && i < s.n; i = j) {
        uint64_t c = s.v[i].count;
        for (j = i + 1; j < s.n && !strcmp(s.v[j].stack, s.v[i].stack); j++)
            c = lp_sat_add(c, s.v[j].count);
        fprintf(f, "%s %" PRIu64 "\n", s.v[i].stack, c);
    }
    for (i = 0; i < s.n; i++)
        free(s.v[i].stack);
    free(s.v);
    free(s.buf);
    return rc ? lp_error_set(err, LP_ENOMEM, "report: out of memory") : 0;
}

/* ---- speedscope ------------------------------------------------------------ */

typedef struct ss_frame {
    const lp_report_func *func;     /* key */
    size_t index;
    UT_hash_handle hh;
} ss_frame;

typedef struct ss_state {
    const lp_report_write_opts *o;
    ss_frame *map;
    json_t *frames, *samples, *weights;
    size_t *path;                   /* frame indices, root first */
    size_t depth, cap;
} ss_state;

static long frame_index(ss_state *s, const lp_report_func *f)
{
    ss_frame *e;
    json_t *fr;

    HASH_FIND_PTR(s->map, &f, e);
    if (e)
        return (long)e->index;
    if (!(e = calloc(1, sizeof *e)))
        return -1;
    e->func = f;
    e->index = json_array_size(s->frames);
    HASH_ADD_PTR(s->map, func, e);
    fr = json_pack("{s:s}", "name", rp_name(f, s->o));
    if (!fr)
        return -1;
    if (f->file)
        json_object_set_new(fr, "file", json_string(f->file));
    if (f->start_line)
        json_object_set_new(fr, "line", json_integer(f->start_line));
    if (json_array_append_new(s->frames, fr))
        return -1;
    return (long)e->index;
}

static int ss_walk(ss_state *s, const lp_report_node *n)
{
    size_t i;
    long k;
    json_t *st;

    if (n->func) {
        if ((k = frame_index(s, n->func)) < 0)
            return -1;
        if (s->depth == s->cap) {
            size_t *np;
            s->cap = s->cap ? s->cap * 2 : 64;
            if (!(np = realloc(s->path, s->cap * sizeof *np)))
                return -1;
            s->path = np;
        }
        s->path[s->depth++] = (size_t)k;
    }
    if (n->func && n->self) {
        if (!(st = json_array()))
            return -1;
        for (i = 0; i < s->depth; i++)
            json_array_append_new(st, json_integer((json_int_t)s->path[i]));
        if (json_array_append_new(s->samples, st) ||
            json_array_append_new(s->weights,
                                  json_integer(n->self > INT64_MAX
                                                   ? INT64_MAX
                                                   : (json_int_t)n->self)))
            return -1;
    }
    for (i = 0; i < n->nchildren; i++)
        if (ss_walk(s, n->children[i]))
            return -1;
    if (n->func)
        s->depth--;
    return 0;
}

int rp_write_speedscope(FILE *f, const lp_report *r,
                        const lp_report_write_opts *o, lp_error *err)
{
    ss_state s = {o, NULL, json_array(), json_array(), json_array(), NULL, 0, 0};
    const char *title = o->title ? o->title
                        : r->input ? basename(r->input) : "lbr2prof";
    uint64_t total = r->root.n.total;
    ss_frame *e, *t;
    json_t *doc = NULL;
    int rc = -1;

    if (s.frames && s.samples && s.weights && ss_walk(&s, &r->root.n) == 0) {
        doc = json_pack(
            "{s:s,s:{s:O},s:[{s:s,s:s,s:s,s:i,s:I,s:O,s:O}],s:s,s:i,s:s}",
            "$schema", "https://www.speedscope.app/file-format-schema.json",
            "shared", "frames", s.frames, "profiles", "type", "sampled", "name",
            title, "unit", "none", "startValue", 0, "endValue",
            (json_int_t)(total > INT64_MAX ? INT64_MAX : total), "samples",
            s.samples, "weights", s.weights, "name", title,
            "activeProfileIndex", 0, "exporter", "lbr2prof");
        if (doc && json_dumpf(doc, f, JSON_COMPACT | JSON_PRESERVE_ORDER) == 0)
            rc = 0;
        if (rc == 0)
            fputc('\n', f);
    }
    json_decref(doc);
    json_decref(s.frames);
    json_decref(s.samples);
    json_decref(s.weights);
    HASH_ITER(hh, s.map, e, t) {
        HASH_DEL(s.map, e);
        free(e);
    }
    free(s.path);
    return rc ? lp_error_set(err, LP_ENOMEM, "report: out of memory") : 0;
}
