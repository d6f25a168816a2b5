/*
 * truthread.c - reads the truth file of `record --simulate --truth`
 * (JSON, docs/record.md) into lp_truth: the samples with their LBR
 * entries and true stacks, the mappings and the stack node table. The
 * per-instruction and per-branch counts are not kept (accuracy does not
 * need them). Owns parsing and validation only.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/accuracy.h"

typedef struct rd {
    const char *path;
    lp_error *err;
} rd;

static int bad(rd *r, const char *where, size_t i, const char *what)
{
    return lp_error_set(r->err, LP_EFORMAT, "%s: %s[%zu]: %s", r->path, where,
                        i, what);
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

/* ---- stack nodes ---------------------------------------------------------- */

static int read_nodes(rd *r, lp_truth *t, const json_t *arr)
{
    size_t i, n = json_array_size(arr);
    uint64_t maxid = 0, id, parent, ret;

    for (i = 0; i < n; i++) { /* ids are ascending; find the largest */
        if (u64_of(json_array_get(json_array_get(arr, i), 0), &id))
            return bad(r, "stack_nodes", i, "expected [ID, PARENT, \"0xRET\"]");
        if (id > maxid)
            maxid = id;
    }
    if (maxid >= UINT32_MAX)
        return bad(r, "stack_nodes", n - 1, "node id out of range");
    t->nnodes = (size_t)maxid + 1;
    t->node_parent = calloc(t->nnodes, sizeof *t->node_parent);
    t->node_ret = calloc(t->nnodes, sizeof *t->node_ret);
    t->node_known = calloc(t->nnodes, 1);
    if (!t->node_parent || !t->node_ret || !t->node_known)
        return lp_error_set(r->err, LP_ENOMEM, "out of memory");
    t->node_known[0] = 1;
    for (i = 0; i < n; i++) {
        const json_t *e = json_array_get(arr, i);
        if (json_array_size(e) != 3 || u64_of(json_array_get(e, 0), &id) ||
            u64_of(json_array_get(e, 1), &parent) ||
            hex_of(json_array_get(e, 2), &ret))
            return bad(r, "stack_nodes", i, "expected [ID, PARENT, \"0xRET\"]");
        if (id == 0 || parent >= id || !t->node_known[parent])
            return bad(r, "stack_nodes", i, "parent must be a listed node "
                       "with a smaller id (0 = empty stack)");
        t->node_parent[id] = (uint32_t)parent;
        t->node_ret[id] = ret;
        t->node_known[id] = 1;
    }
    return 0;
}

static int node_ok(const lp_truth *t, uint64_t id)
{
    return id < t->nnodes && t->node_known[id];
}

/* ---- samples -------------------------------------------------------------- */

static int read_lbr(rd *r, lp_truth *t, lp_truth_sample *s, const json_t *js,
                    size_t si)
{
    const json_t *lbr = json_object_get(js, "lbr"), *cut;
    size_t i, n = json_array_size(lbr);
    uint64_t node, k;

    if (!json_is_array(lbr))
        return bad(r, "samples", si, "no \"lbr\" array");
    s->nlbr = n;
    if (n && !(s->lbr = calloc(n, sizeof *s->lbr)))
        return lp_error_set(r->err, LP_ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        const json_t *e = json_array_get(lbr, i);
        if (json_array_size(e) != 3 || hex_of(json_array_get(e, 0), &s->lbr[i].from) ||
            hex_of(json_array_get(e, 1), &s->lbr[i].to) ||
            u64_of(json_array_get(e, 2), &node))
            return bad(r, "samples", si, "lbr entry is not [\"0xFROM\", \"0xTO\", NODE]");
        if (!node_ok(t, node))
            return bad(r, "samples", si, "lbr entry names a stack node that "
                       "is not in \"stack_nodes\"");
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

static int read_sample(rd *r, lp_truth *t, const json_t *js, size_t si)
{
    lp_truth_sample *s = &t->samples[si];
    uint64_t v;

    if (!json_is_object(js))
        return bad(r, "samples", si, "not an object");
    if (u64_of(json_object_get(js, "time"), &s->time) ||
        u64_of(json_object_get(js, "tid"), &v))
        return bad(r, "samples", si, "no \"time\"/\"tid\"");
    s->tid = (int32_t)v;
    if (u64_of(json_object_get(js, "pid"), &v))
        return bad(r, "samples", si, "no \"pid\"");
    s->pid = (int32_t)v;
    if (u64_of(json_object_get(js, "node"), &v) || !node_ok(t, v))
        return bad(r, "samples", si, "\"node\" is not a listed stack node");
    s->node = (uint32_t)v;
    return read_lbr(r, t, s, js, si);
}

/* ---- mappings ------------------------------------------------------------- */

static int read_maps(rd *r, lp_truth *t, const json_t *arr)
{
    size_t i, n = json_array_size(arr);
    uint64_t pid;

    t->nmaps = n;
    if (n && !(t->maps = calloc(n, sizeof *t->maps)))
        return lp_error_set(r->err, LP_ENOMEM, "out of memory");
    for (i = 0; i < n; i++) {
        const json_t *m = json_array_get(arr, i);
        lp_truth_map *tm = &t->maps[i];
        const char *path = json_string_value(json_object_get(m, "path"));
        if (!path || u64_of(json_object_get(m, "time"), &tm->time) ||
            u64_of(json_object_get(m, "pid"), &pid) ||
            hex_of(json_object_get(m, "start"), &tm->start) ||
            hex_of(json_object_get(m, "end"), &tm->end) ||
            hex_of(json_object_get(m, "pgoff"), &tm->pgoff))
            return bad(r, "mappings", i, "expected time, pid, start, end, "
                       "pgoff and path");
        tm->pid = (int32_t)pid;
        if (!(tm->path = strdup(path)))
            return lp_error_set(r->err, LP_ENOMEM, "out of memory");
    }
    return 0;
}

/* ---- top level ------------------------------------------------------------ */

static int read_root(rd *r, lp_truth *t, const json_t *root)
{
    const json_t *samples = json_object_get(root, "samples");
    const char *fmt = json_string_value(json_object_get(root, "format"));
    uint64_t v;
    size_t i;

    if (!fmt || strcmp(fmt, "lbr2prof-truth") ||
        u64_of(json_object_get(root, "version"), &v))
        return lp_error_set(r->err, LP_EFORMAT, "%s: not an lbr2prof truth "
                            "file (\"format\": \"lbr2prof-truth\" expected)",
                            r->path);
    t->version = (int)v;
    if (v < 2)
        return lp_error_set(r->err, LP_EFORMAT, "%s: truth file version %d has "
                            "no LBR stacks; record it again with `lbr2prof "
                            "record --simulate --truth`", r->path, t->version);
    u64_of(json_object_get(root, "instructions"), &t->instructions);
    u64_of(json_object_get(root, "taken_branches"), &t->taken_branches);
    u64_of(json_object_get(root, "period"), &t->period);
    if (!json_is_array(samples) ||
        !json_is_array(json_object_get(root, "stack_nodes")) ||
        !json_is_array(json_object_get(root, "mappings")))
        return lp_error_set(r->err, LP_EFORMAT, "%s: \"samples\", \"mappings\" "
                            "and \"stack_nodes\" arrays expected", r->path);
    if (read_nodes(r, t, json_object_get(root, "stack_nodes")) ||
        read_maps(r, t, json_object_get(root, "mappings")))
        return -1;
    t->nsamples = json_array_size(samples);
    if (t->nsamples && !(t->samples = calloc(t->nsamples, sizeof *t->samples)))
        return lp_error_set(r->err, LP_ENOMEM, "out of memory");
    for (i = 0; i < t->nsamples; i++)
        if (read_sample(r, t, json_array_get(samples, i), i))
            return -1;
    return 0;
}

lp_truth *lp_truth_read(const char *path, lp_error *err)
{
    json_error_t je;
    json_t *root;
    lp_truth *t;
    rd r = {path, err};

    root = json_load_file(path, 0, &je);
    if (!root) {
        if (je.line <= 0)
            lp_error_set(err, LP_EIO, "%s: %s", path, je.text);
        else
            lp_error_set(err, LP_EFORMAT, "%s:%d: %s", path, je.line, je.text);
        return NULL;
    }
    if (!(t = calloc(1, sizeof *t))) {
        json_decref(root);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    if (!json_is_object(root) || read_root(&r, t, root)) {
        if (!json_is_object(root))
            lp_error_set(err, LP_EFORMAT, "%s: not a JSON object", path);
        lp_truth_free(t);
        t = NULL;
    }
    json_decref(root);
    return t;
}

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
    free(t);
}
