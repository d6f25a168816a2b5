/*
 * text.c - the human summary: header, sample-quality counts, top
 * functions, top contexts and hot paths, with counts, percentages of the
 * total and source locations. Owns the layout only.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

#define DEFAULT_TOP 20
#define HOT_PATHS 3
#define HOT_PATH_MAX 64

/* "file:line", "file", "line N" or "" for loc in f (hot line when
 * use_loc, else the first line). */
static void location(const lp_report_func *f, bool use_loc, lp_loc loc,
                     char *buf, size_t sz)
{
    uint32_t line = use_loc ? lp_report_abs_line(f, loc) : f->start_line;

    if (f->external) {
        buf[0] = 0;
        return;
    }
    if (f->file && line)
        snprintf(buf, sz, "%s:%" PRIu32, f->file, line);
    else if (f->file)
        snprintf(buf, sz, "%s", f->file);
    else if (use_loc && loc.disc)
        snprintf(buf, sz, "line +%" PRIu32 ".%" PRIu32, loc.line, loc.disc);
    else if (use_loc)
        snprintf(buf, sz, "line +%" PRIu32, loc.line);
    else
        buf[0] = 0;
}

static void func_location(const lp_report_func *f, char *buf, size_t sz)
{
    location(f, f->hot_count > 0, f->hot_loc, buf, sz);
}

/* The hottest line of one node. */
static void node_location(const lp_report_node *n, char *buf, size_t sz)
{
    size_t i, best = 0;

    for (i = 1; i < n->nlines; i++)
        if (n->lines[i].count > n->lines[best].count)
            best = i;
    if (n->nlines && n->lines[best].count)
        location(n->func, true, n->lines[best].loc, buf, sz);
    else
        location(n->func, false, (lp_loc){0, 0}, buf, sz);
}

static const char *unit_name(const lp_report *r)
{
    return r->unit == LP_REPORT_SAMPLES ? "samples" : "profile counts";
}

static void header(FILE *f, const lp_report *r, uint64_t total)
{
    size_t i;

    fprintf(f, "lbr2prof report\n");
    if (r->input)
        fprintf(f, "  input:     %s (%s)\n", r->input,
                r->kind ? r->kind : "unknown");
    for (i = 0; i < r->nbinaries; i++)
        fprintf(f, "  binary:    %s\n", r->binaries[i]);
    fprintf(f, "  total:     %" PRIu64 " %s\n", total, unit_name(r));
    fprintf(f, "  contexts:  %s\n", r->cs ? "calling contexts"
                                         : "functions and inlinees only");
    fprintf(f, "  functions: %zu\n", r->nfuncs);
}

static void quality_row(FILE *f, const char *name, uint64_t v, uint64_t all)
{
    fprintf(f, "  %-14s %12" PRIu64 "  %6.2f%%\n", name, v, rp_pct(v, all));
}

static void quality(FILE *f, const lp_report *r)
{
    const lp_report_quality *q = &r->q;

    if (!q->present)
        return;
    fprintf(f, "\nSample quality (%% of samples read)\n");
    fprintf(f, "  %-14s %12" PRIu64 "\n", "samples", q->samples);
    quality_row(f, "kept", q->used, q->samples);
    quality_row(f, "dropped", q->dropped, q->samples);
    quality_row(f, "repaired", q->repaired, q->samples);
    quality_row(f, "truncated", q->truncated, q->samples);
    quality_row(f, "external", q->external, q->samples);
    quality_row(f, "context-less", q->contextless, q->samples);
    fprintf(f, "  %-14s %12" PRIu64 "\n", "lost events", q->lost);
}

static void counts(FILE *f, uint64_t self, uint64_t total, uint64_t all)
{
    fprintf(f, "  %12" PRIu64 " %7.2f%% %12" PRIu64 " %7.2f%%", self,
            rp_pct(self, all), total, rp_pct(total, all));
}

static void top_functions(FILE *f, const lp_report *r,
                          const lp_report_write_opts *o, size_t top,
                          uint64_t all)
{
    char loc[512];
    size_t i;

    fprintf(f, "\nTop functions by self (%zu of %zu)\n", top < r->nfuncs ? top : r->nfuncs,
            r->nfuncs);
    fprintf(f, "  %12s %8s %12s %8s  %s\n", "self", "self%", "total", "total%",
            "function  [hottest line]");
    for (i = 0; i < r->nfuncs && i < top; i++) {
        const lp_report_func *fn = r->sorted[i];
        counts(f, fn->self, fn->total, all);
        func_location(fn, loc, sizeof loc);
        fprintf(f, "  %s%s%s%s\n", rp_name(fn, o), loc[0] ? "  [" : "", loc,
                loc[0] ? "]" : "");
    }
}

static int top_contexts(FILE *f, const lp_report *r,
                        const lp_report_write_opts *o, size_t top,
                        uint64_t all, lp_error *err)
{
    const lp_report_node **v;
    size_t n = lp_report_contexts(r, &v), i;
    char loc[512], *key;

    if (n == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    fprintf(f, "\nTop contexts by self (%zu of %zu)\n", top < n ? top : n, n);
    fprintf(f, "  %12s %8s %12s %8s  %s\n", "self", "self%", "total", "total%",
            "context  [hottest line]");
    for (i = 0; i < n && i < top; i++) {
        if (!(key = lp_report_context_key(v[i], !o->no_demangle))) {
            free(v);
            return lp_error_set(err, LP_ENOMEM, "report: out of memory");
        }
        counts(f, v[i]->self, v[i]->total, all);
        node_location(v[i], loc, sizeof loc);
        fprintf(f, "  %s%s%s%s\n", key, loc[0] ? "  [" : "", loc,
                loc[0] ? "]" : "");
        free(key);
    }
    free(v);
    return 0;
}

/* From each of the heaviest roots, follow the heaviest child. */
static void hot_paths(FILE *f, const lp_report *r,
                      const lp_report_write_opts *o, uint64_t all)
{
    const lp_report_node *root = &r->root.n, *n;
    char loc[512];
    size_t i, d;

    fprintf(f, "\nHot paths (heaviest child at each step; total%%, total)\n");
    for (i = 0; i < root->nchildren && i < HOT_PATHS; i++) {
        fprintf(f, "  #%zu\n", i + 1);
        for (n = root->children[i], d = 0; n && d < HOT_PATH_MAX; d++) {
            node_location(n, loc, sizeof loc);
            fprintf(f, "  %7.2f%% %12" PRIu64 "  %*s%s%s%s%s%s\n",
                    rp_pct(n->total, all), n->total, (int)(2 * (d < 20 ? d : 20)),
                    "", rp_name(n->func, o), n->inlined ? " (inlined)" : "",
                    loc[0] ? "  [" : "", loc, loc[0] ? "]" : "");
            n = n->nchildren ? n->children[0] : NULL;
        }
        if (n)
            fprintf(f, "  ... (deeper frames not shown)\n");
    }
}

int rp_write_text(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                  lp_error *err)
{
    uint64_t all = r->root.n.total;
    size_t top = o->top ? o->top : DEFAULT_TOP;

    header(f, r, all);
    quality(f, r);
    top_functions(f, r, o, top, all);
    if (top_contexts(f, r, o, top, all, err))
        return -1;
    hot_paths(f, r, o, all);
    return 0;
}
