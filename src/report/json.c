/*
 * json.c - the report as JSON, following docs/report-schema.json
 * (format "lbr2prof-report", version 1): input, unit, totals, quality
 * counts, every function and the whole context tree. Owns the mapping to
 * JSON (jansson, insertion order kept); the schema file documents it.
 */
#include <stdint.h>
#include <stdlib.h>

#include <jansson.h>

#include "report/internal.h"

#define RP_JSON_VERSION 1

static json_t *jint(uint64_t v)
{
    return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *jstr_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *jline_or_null(uint32_t line)
{
    return line ? json_integer(line) : json_null();
}

/* {"line": abs|null, "offset": N, "discriminator": D, "count": C} */
static json_t *line_obj(const lp_report_func *f, lp_loc loc, uint64_t count)
{
    return json_pack("{s:o,s:I,s:I,s:o}", "line",
                     jline_or_null(lp_report_abs_line(f, loc)), "offset",
                     (json_int_t)loc.line, "discriminator", (json_int_t)loc.disc,
                     "count", jint(count));
}

static json_t *quality_obj(const lp_report_quality *q)
{
    if (!q->present)
        return json_null();
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "samples",
                     jint(q->samples), "used", jint(q->used), "dropped",
                     jint(q->dropped), "repaired", jint(q->repaired),
                     "inferred", jint(q->inferred),
                     "truncated", jint(q->truncated), "external",
                     jint(q->external), "contextless", jint(q->contextless),
                     "lost", jint(q->lost));
}

static json_t *func_obj(const lp_report_func *f)
{
    json_t *o = json_pack("{s:s}", "name", f->name);

    if (!o)
        return NULL;
    if (f->display != f->name)
        json_object_set_new(o, "demangled", json_string(f->display));
    json_object_set_new(o, "file", jstr_or_null(f->file));
    json_object_set_new(o, "line", jline_or_null(f->start_line));
    json_object_set_new(o, "external", json_boolean(f->external));
    json_object_set_new(o, "self", jint(f->self));
    json_object_set_new(o, "total", jint(f->total));
    json_object_set_new(o, "hot_line", f->hot_count
                                           ? line_obj(f, f->hot_loc, f->hot_count)
                                           : json_null());
    return o;
}

static json_t *node_obj(const lp_report_node *n)
{
    json_t *o, *lines, *kids, *cs = json_null();
    const lp_report_func *pf = n->parent ? n->parent->func : NULL;
    size_t i;

    if (pf)
        cs = json_pack("{s:o,s:I,s:I}", "line",
                       jline_or_null(lp_report_abs_line(pf, n->callsite)),
                       "offset", (json_int_t)n->callsite.line, "discriminator",
                       (json_int_t)n->callsite.disc);
    o = json_pack("{s:s,s:o,s:b,s:o,s:o}", "name", n->func->name, "call_site",
                  cs, "inlined", n->inlined, "self", jint(n->self), "total",
                  jint(n->total));
    lines = json_array();
    kids = json_array();
    if (!o || !lines || !kids) {
        json_decref(o);
        json_decref(lines);
        json_decref(kids);
        return NULL;
    }
    for (i = 0; i < n->nlines; i++)
        json_array_append_new(lines, line_obj(n->func, n->lines[i].loc,
                                              n->lines[i].count));
    for (i = 0; i < n->nchildren; i++)
        json_array_append_new(kids, node_obj(n->children[i]));
    json_object_set_new(o, "lines", lines);
    json_object_set_new(o, "children", kids);
    return o;
}

static json_t *input_obj(const lp_report *r)
{
    json_t *bins = json_array();
    size_t i;

    for (i = 0; bins && i < r->nbinaries; i++)
        json_array_append_new(bins, json_string(r->binaries[i]));
    return json_pack("{s:o,s:o,s:o}", "path", jstr_or_null(r->input), "kind",
                     jstr_or_null(r->kind), "binaries", bins);
}

int rp_write_json(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                  lp_error *err)
{
    json_t *doc, *funcs = json_array(), *tree = json_array();
    const lp_report_node *root = &r->root.n;
    size_t i;
    int rc;

    (void)o;
    for (i = 0; funcs && i < r->nfuncs; i++)
        json_array_append_new(funcs, func_obj(r->sorted[i]));
    for (i = 0; tree && i < root->nchildren; i++)
        json_array_append_new(tree, node_obj(root->children[i]));
    doc = json_pack("{s:s,s:i,s:o,s:s,s:b,s:o,s:o,s:o,s:o}", "format",
                    "lbr2prof-report", "version", RP_JSON_VERSION, "input",
                    input_obj(r), "unit",
                    r->unit == LP_REPORT_SAMPLES ? "samples" : "counts",
                    "context_sensitive", r->cs, "total", jint(root->total),
                    "quality", quality_obj(&r->q), "functions", funcs, "tree",
                    tree);
    if (!doc)
        return lp_error_set(err, LP_ENOMEM, "report: out of memory (JSON)");
    rc = json_dumpf(doc, f, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(doc);
    if (rc == 0)
        fputc('\n', f);
    return rc ? lp_error_set(err, LP_EIO, "report: write error") : 0;
}
