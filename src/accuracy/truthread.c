/*
 * truthread.c - reads the truth file of `record --simulate --truth`
 * (JSON, docs/record.md) into lp_truth: the samples with their LBR
 * entries and true stacks, the mappings, the stack node table and the
 * taken branches of the whole run (branch_counts: the pseudo-probe ideal's
 * tail-call graph). The per-instruction counts are skipped (accuracy does
 * not need them). Owns parsing and validation only.
 *
 * The recorder writes one array element per line, so the file is read
 * line by line and each element parsed on its own (memory: the result,
 * not a JSON tree of the whole file, which takes ~15 KB per sample).
 * Any other layout of valid JSON falls back to parsing the whole file.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/accuracy.h"

typedef struct rd {
    const char *path;
    lp_error *err;
    size_t cap_samples, cap_maps, cap_nodes, cap_edges;
    json_t *header;         /* the top-level scalars */
    int seen;               /* sections seen: 1 samples, 2 mappings, 4 nodes */
} rd;

enum { SEC_SAMPLES = 1, SEC_MAPS = 2, SEC_NODES = 4, SEC_SKIP = 8,
       SEC_EDGES = 16 };

static int bad(rd *r, const char *where, size_t i, const char *what)
{
    return lp_error_set(r->err, LP_EFORMAT, "%s: %s[%zu]: %s", r->path, where,
                        i, what);
}

static int oom(rd *r)
{
    return lp_error_set(r->err, LP_ENOMEM, "out of memory");
}

/* "0x..." -> value; -1 if not a hex address string. */
static int hex_of(const json_t *j, uint64_t *out)
{
    const char *s = json_string_value(j);
    char *e;

    if (!s || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') || !s[2])
        return -1;
    errno = 0;
    *out = strtoull(s + 2, &e, 16);
    return (*e || errno) ? -1 : 0;
}

static int u64_of(const json_t *j, uint64_t *out)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return -1;
    *out = (uint64_t)json_integer_value(j);
    return 0;
}

/* ---- elements --------------------------------------------------------------- */

/* [ID, PARENT, "0xRET"], ids ascending (a parent is listed first). */
static int node_elem(rd *r, lp_truth *t, const json_t *e, size_t i)
{
    uint64_t id, parent, ret;
    size_t cap;

    if (json_array_size(e) != 3 || u64_of(json_array_get(e, 0), &id) ||
        u64_of(json_array_get(e, 1), &parent) || hex_of(json_array_get(e, 2), &ret))
        return bad(r, "stack_nodes", i, "expected [ID, PARENT, \"0xRET\"]");
    if (id == 0 || id >= UINT32_MAX || parent >= id || parent >= t->nnodes ||
        !t->node_known[parent])
        return bad(r, "stack_nodes", i, "parent must be a listed node with a "
                   "smaller id (0 = empty stack)");
    if (id >= r->cap_nodes) {
        uint32_t *p;
        uint64_t *q;
        uint8_t *k;
        for (cap = r->cap_nodes * 2; cap <= id; cap *= 2)
            ;
        if (!(p = realloc(t->node_parent, cap * sizeof *p)))
            return oom(r);
        t->node_parent = p;
        if (!(q = realloc(t->node_ret, cap * sizeof *q)))
            return oom(r);
        t->node_ret = q;
        if (!(k = realloc(t->node_known, cap)))
            return oom(r);
        memset(k + r->cap_nodes, 0, cap - r->cap_nodes);
        t->node_known = k;
        r->cap_nodes = cap;
    }
    if (id >= t->nnodes)
        t->nnodes = (size_t)id + 1;
    t->node_parent[id] = (uint32_t)parent;
    t->node_ret[id] = ret;
    t->node_known[id] = 1;
    return 0;
}

/* ["0xFROM", "0xTO", COUNT] */
static int edge_elem(rd *r, lp_truth *t, const json_t *e, size_t i)
{
    lp_truth_edge *x;

    if (t->nedges == r->cap_edges) {
        size_t cap = r->cap_edges ? 2 * r->cap_edges : 256;
        lp_truth_edge *p = realloc(t->edges, cap * sizeof *p);
        if (!p)
            return oom(r);
        t->edges = p;
        r->cap_edges = cap;
    }
    x = &t->edges[t->nedges];
    if (json_array_size(e) != 3 || hex_of(json_array_get(e, 0), &x->from) ||
        hex_of(json_array_get(e, 1), &x->to) || u64_of(json_array_get(e, 2), &x->count))
        return bad(r, "branch_counts", i, "expected [\"0xFROM\", \"0xTO\", COUNT]");
    t->nedges++;
    return 0;
}

static int map_elem(rd *r, lp_truth *t, const json_t *m, size_t i)
{
    const char *path = json_string_value(json_object_get(m, "path"));
    lp_truth_map *tm;
    uint64_t pid;

    if (t->nmaps == r->cap_maps) {
        size_t cap = r->cap_maps ? 2 * r->cap_maps : 16;
        lp_truth_map *p = realloc(t->maps, cap * sizeof *p);
        if (!p)
            return oom(r);
        t->maps = p;
        r->cap_maps = cap;
    }
    tm = &t->maps[t->nmaps];
    memset(tm, 0, sizeof *tm);
    if (!path || u64_of(json_object_get(m, "time"), &tm->time) ||
        u64_of(json_object_get(m, "pid"), &pid) ||
        hex_of(json_object_get(m, "start"), &tm->start) ||
        hex_of(json_object_get(m, "end"), &tm->end) ||
        hex_of(json_object_get(m, "pgoff"), &tm->pgoff))
        return bad(r, "mappings", i, "expected time, pid, start, end, pgoff "
                   "and path");
    tm->pid = (int32_t)pid;
    if (!(tm->path = strdup(path)))
        return oom(r);
    t->nmaps++;
    return 0;
}

static int read_lbr(rd *r, lp_truth_sample *s, const json_t *js, size_t si)
{
    const json_t *lbr = json_object_get(js, "lbr"), *cut;
    size_t i, n = json_array_size(lbr);
    uint64_t node, k;

    if (!json_is_array(lbr))
        return bad(r, "samples", si, "no \"lbr\" array");
    if (n && !(s->lbr = calloc(n, sizeof *s->lbr)))
        return oom(r);
    s->nlbr = n;
    for (i = 0; i < n; i++) {
        const json_t *e = json_array_get(lbr, i);
        if (json_array_size(e) != 3 ||
            hex_of(json_array_get(e, 0), &s->lbr[i].from) ||
            hex_of(json_array_get(e, 1), &s->lbr[i].to) ||
            u64_of(json_array_get(e, 2), &node) || node >= UINT32_MAX)
            return bad(r, "samples", si, "lbr entry is not [\"0xFROM\", "
                       "\"0xTO\", NODE]");
        s->lbr[i].node = (uint32_t)node;
    }
    cut = json_object_get(js, "lbr_cut");
    for (i = 0; i < json_array_size(cut); i++) {
        if (u64_of(json_array_get(cut, i), &k) || k >= n)
            return bad(r, "samples", si, "lbr_cut index out of range");
        s->lbr[k].cut = true;
    }
    return 0;
}

static int sample_elem(rd *r, lp_truth *t, const json_t *js, size_t si)
{
    lp_truth_sample *s;
    uint64_t v;

    if (t->nsamples == r->cap_samples) {
        size_t cap = r->cap_samples ? 2 * r->cap_samples : 256;
        lp_truth_sample *p = realloc(t->samples, cap * sizeof *p);
        if (!p)
            return oom(r);
        t->samples = p;
        r->cap_samples = cap;
    }
    s = &t->samples[t->nsamples++];
    memset(s, 0, sizeof *s);
    if (!json_is_object(js))
        return bad(r, "samples", si, "not an object");
    if (u64_of(json_object_get(js, "time"), &s->time) ||
        u64_of(json_object_get(js, "tid"), &v))
        return bad(r, "samples", si, "no \"time\"/\"tid\"");
    s->tid = (int32_t)v;
    if (u64_of(json_object_get(js, "pid"), &v))
        return bad(r, "samples", si, "no \"pid\"");
    s->pid = (int32_t)v;
    if (u64_of(json_object_get(js, "node"), &v) || v >= UINT32_MAX)
        return bad(r, "samples", si, "no \"node\"");
    s->node = (uint32_t)v;
    return read_lbr(r, s, js, si);
}

static int node_ok(const lp_truth *t, uint32_t id)
{
    return id < t->nnodes && t->node_known[id];
}

/* Every stack a sample names is in the node table (which comes last). */
static int check_nodes(rd *r, const lp_truth *t)
{
    size_t i, k;

    for (i = 0; i < t->nsamples; i++) {
        const lp_truth_sample *s = &t->samples[i];
        if (!node_ok(t, s->node))
            return bad(r, "samples", i, "\"node\" is not in \"stack_nodes\"");
        for (k = 0; k < s->nlbr; k++)
            if (!node_ok(t, s->lbr[k].node))
                return bad(r, "samples", i, "lbr entry names a stack node "
                           "that is not in \"stack_nodes\"");
    }
    return 0;
}

/* The top-level scalars, then what must be there. */
static int check_header(rd *r, lp_truth *t, const json_t *h)
{
    const char *fmt = json_string_value(json_object_get(h, "format"));
    uint64_t v;

    if (!fmt || strcmp(fmt, "lbr2prof-truth") ||
        u64_of(json_object_get(h, "version"), &v))
        return lp_error_set(r->err, LP_EFORMAT, "%s: not an lbr2prof truth "
                            "file (\"format\": \"lbr2prof-truth\" expected)",
                            r->path);
    t->version = (int)v;
    if (v < 2)
        return lp_error_set(r->err, LP_EFORMAT, "%s: truth file version %d has "
                            "no LBR stacks; record it again with `lbr2prof "
                            "record --simulate --truth`", r->path, t->version);
    u64_of(json_object_get(h, "instructions"), &t->instructions);
    u64_of(json_object_get(h, "taken_branches"), &t->taken_branches);
    u64_of(json_object_get(h, "period"), &t->period);
    if ((r->seen & (SEC_SAMPLES | SEC_MAPS | SEC_NODES)) !=
        (SEC_SAMPLES | SEC_MAPS | SEC_NODES))
        return lp_error_set(r->err, LP_EFORMAT, "%s: \"samples\", \"mappings\" "
                            "and \"stack_nodes\" arrays expected", r->path);
    return check_nodes(r, t);
}

static int init_nodes(rd *r, lp_truth *t)
{
    t->nnodes = 1;
    r->cap_nodes = 1;
    t->node_parent = calloc(1, sizeof *t->node_parent);
    t->node_ret = calloc(1, sizeof *t->node_ret);
    t->node_known = calloc(1, 1);
    if (!t->node_parent || !t->node_ret || !t->node_known)
        return oom(r);
    t->node_known[0] = 1;
    return 0;
}

static int section_of(const char *name)
{
    return !strcmp(name, "samples") ? SEC_SAMPLES
         : !strcmp(name, "mappings") ? SEC_MAPS
         : !strcmp(name, "stack_nodes") ? SEC_NODES
         : !strcmp(name, "branch_counts") ? SEC_EDGES : SEC_SKIP;
}

static int element(rd *r, lp_truth *t, int sec, const json_t *e, size_t i)
{
    return sec == SEC_SAMPLES ? sample_elem(r, t, e, i)
         : sec == SEC_MAPS ? map_elem(r, t, e, i)
         : sec == SEC_NODES ? node_elem(r, t, e, i)
         : sec == SEC_EDGES ? edge_elem(r, t, e, i) : 0;
}

/* ---- the whole file at once (any layout) --------------------------------------- */

static int read_tree(rd *r, lp_truth *t)
{
    json_error_t je;
    json_t *root = json_load_file(r->path, 0, &je), *v;
    const char *key;
    size_t i;
    int rc = 0, pass, sec;

    if (!root) {
        if (je.line <= 0)
            return lp_error_set(r->err, LP_EIO, "%s: %s", r->path, je.text);
        return lp_error_set(r->err, LP_EFORMAT, "%s:%d: %s", r->path, je.line,
                            je.text);
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return lp_error_set(r->err, LP_EFORMAT, "%s: not a JSON object", r->path);
    }
    for (pass = 0; pass < 2 && rc == 0; pass++) /* nodes first: parents */
        json_object_foreach(root, key, v) {
            if (!json_is_array(v) || rc)
                continue;
            sec = section_of(key);
            if ((sec == SEC_NODES) != (pass == 0))
                continue;
            r->seen |= sec;
            for (i = 0; i < json_array_size(v) && rc == 0; i++)
                rc = element(r, t, sec, json_array_get(v, i), i);
        }
    if (rc == 0)
        rc = check_header(r, t, root);
    json_decref(root);
    return rc;
}

/* ---- line by line (the recorder's layout) -------------------------------------- */

/* 1: not the recorder's layout (the caller falls back), 0, -1 error. */
static int read_line(rd *r, lp_truth *t, char *line, int *sec, size_t *idx)
{
    size_t n = strlen(line);
    json_error_t je;
    json_t *j;
    char name[64], *buf;
    int rc;

    while (n && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ','))
        line[--n] = 0;
    if (*sec) { /* inside an array: an element per line, or its end */
        if (!strcmp(line, " ]")) {
            *sec = 0;
            return 0;
        }
        if (*sec == SEC_SKIP)
            return 0;
        if (!(j = json_loadb(line, n, 0, &je)))
            return 1;
        rc = element(r, t, *sec, j, (*idx)++);
        json_decref(j);
        return rc;
    }
    if (!strcmp(line, "{") || !strcmp(line, "}") || n == 0)
        return 0;
    if (sscanf(line, " \"%63[^\"]\": %c", name, &(char){0}) == 2 &&
        line[n - 1] == '[' && strchr(line, ':') == strrchr(line, ':')) {
        *sec = section_of(name);
        r->seen |= *sec;
        *idx = 0;
        return 0;
    }
    if (!(buf = malloc(n + 3)))
        return oom(r);
    sprintf(buf, "{%s}", line); /* "key": scalar, "key": scalar */
    j = json_loadb(buf, n + 2, 0, &je);
    free(buf);
    if (!j)
        return 1;
    json_object_update(r->header, j);
    json_decref(j);
    return 0;
}

static int read_stream(rd *r, lp_truth *t)
{
    FILE *f = fopen(r->path, "re");
    char *line = NULL;
    size_t cap = 0, idx = 0;
    int sec = 0, rc = 0;

    if (!f)
        return lp_error_set(r->err, LP_EIO, "%s: %s", r->path, strerror(errno));
    if (!(r->header = json_object())) {
        fclose(f);
        return oom(r);
    }
    while (rc == 0 && getline(&line, &cap, f) > 0)
        rc = read_line(r, t, line, &sec, &idx);
    if (rc == 0 && ferror(f))
        rc = lp_error_set(r->err, LP_EIO, "%s: read error", r->path);
    free(line);
    fclose(f);
    if (rc == 0)
        rc = sec ? 1 : check_header(r, t, r->header);
    json_decref(r->header);
    r->header = NULL;
    return rc;
}

/* ---- entry points ------------------------------------------------------------------ */

void lp_truth_free(lp_truth *t)
{
    size_t i;

    if (!t)
        return;
    for (i = 0; i < t->nsamples; i++)
        free(t->samples[i].lbr);
    for (i = 0; i < t->nmaps; i++)
        free(t->maps[i].path);
    free(t->samples);
    free(t->maps);
    free(t->node_parent);
    free(t->node_ret);
    free(t->node_known);
    free(t->edges);
    free(t);
}

static lp_truth *attempt(const char *path, lp_error *err, int whole, int *rc)
{
    rd r = {path, err, 0, 0, 0, 0, NULL, 0};
    lp_truth *t = calloc(1, sizeof *t);

    if (!t || init_nodes(&r, t)) {
        lp_truth_free(t);
        *rc = lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    *rc = whole ? read_tree(&r, t) : read_stream(&r, t);
    if (*rc) {
        lp_truth_free(t);
        return NULL;
    }
    return t;
}

lp_truth *lp_truth_read(const char *path, lp_error *err)
{
    int rc;
    lp_truth *t = attempt(path, err, 0, &rc);

    if (!t && rc == 1) /* valid JSON in another layout, or not JSON */
        t = attempt(path, err, 1, &rc);
    return t;
}
