/*
 * model.c - the report's calling-context tree: interning functions,
 * creating nodes, adding counts, and lp_report_finish (totals, function
 * table, sorted children and lines, context list). Owns the data
 * structures; not where counts come from (fromprofile.c, fromperf.c) nor
 * how they are printed (the writers).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report/internal.h"

/* ---- lifetime ------------------------------------------------------------ */

lp_report *lp_report_new(lp_report_unit unit, lp_error *err)
{
    lp_report *r = calloc(1, sizeof *r);

    if (!r) {
        lp_error_set(err, LP_ENOMEM, "report: out of memory");
        return NULL;
    }
    r->unit = unit;
    return r;
}

static void free_lines(rp_line **head)
{
    rp_line *l, *t;

    HASH_ITER(hh, *head, l, t) {
        HASH_DEL(*head, l);
        free(l);
    }
}

static void free_node(rp_node *n)
{
    rp_node *c, *t;

    HASH_ITER(hh, n->kids, c, t) {
        HASH_DEL(n->kids, c);
        free_node(c);
        free(c);
    }
    free_lines(&n->lines);
    free(n->n.children);
    free(n->n.lines);
}

static void free_source(lp_report *r)
{
    size_t i;

    for (i = 0; i < r->nbinaries; i++)
        free(r->binaries[i]);
    free(r->binaries);
    free(r->input);
    free(r->kind);
    r->binaries = NULL;
    r->nbinaries = 0;
    r->input = r->kind = NULL;
}

void lp_report_free(lp_report *r)
{
    rp_func *f, *t;

    if (!r)
        return;
    free_node(&r->root);
    HASH_ITER(hh, r->funcs, f, t) {
        HASH_DEL(r->funcs, f);
        free_lines(&f->lines);
        if (f->f.display != f->f.name)
            free((char *)f->f.display);
        free((char *)f->f.name);
        free((char *)f->f.file);
        free(f);
    }
    free(r->sorted);
    free_source(r);
    lp_demangler_close(&r->dm);
    free(r);
}

int lp_report_set_source(lp_report *r, const lp_report_source *src,
                         lp_error *err)
{
    size_t i;

    free_source(r);
    if (src->input && !(r->input = strdup(src->input)))
        goto oom;
    if (src->kind && !(r->kind = strdup(src->kind)))
        goto oom;
    if (src->nbinaries &&
        !(r->binaries = calloc(src->nbinaries, sizeof *r->binaries)))
        goto oom;
    for (i = 0; i < src->nbinaries; i++, r->nbinaries++)
        if (!(r->binaries[i] = strdup(src->binaries[i])))
            goto oom;
    return 0;
oom:
    return lp_error_set(err, LP_ENOMEM, "report: out of memory");
}

void lp_report_set_quality(lp_report *r, const lp_report_quality *q)
{
    r->q = *q;
}

const lp_report_quality *lp_report_get_quality(const lp_report *r)
{
    return &r->q;
}

lp_report_unit lp_report_get_unit(const lp_report *r) { return r->unit; }
const char *lp_report_input(const lp_report *r) { return r->input; }
const char *lp_report_kind(const lp_report *r) { return r->kind; }
bool lp_report_is_cs(const lp_report *r) { return r->cs; }

/* ---- building --------------------------------------------------------------- */

static rp_func *intern(lp_report *r, const lp_report_frame *fr)
{
    rp_func *f;
    char *d;

    HASH_FIND_STR(r->funcs, fr->func, f);
    if (!f) {
        if (!(f = calloc(1, sizeof *f)) || !(f->f.name = strdup(fr->func))) {
            free(f);
            return NULL;
        }
        d = lp_demangle(&r->dm, fr->func); /* libstdc++ at the first _Z name */
        f->f.display = d ? d : f->f.name;
        f->f.external = fr->external;
        HASH_ADD_KEYPTR(hh, r->funcs, f->f.name, strlen(f->f.name), f);
    }
    if (!f->f.file && fr->file && fr->file[0] &&
        !(f->f.file = strdup(fr->file)))
        return NULL;
    if (!f->f.start_line && fr->start_line)
        f->f.start_line = fr->start_line;
    return f;
}

lp_report_node *lp_report_child(lp_report *r, lp_report_node *parent,
                                lp_loc callsite, const lp_report_frame *fr,
                                lp_error *err)
{
    rp_node *p = parent ? (rp_node *)parent : &r->root, *c;
    rp_func *f = intern(r, fr);
    rp_key k;

    if (!f)
        goto oom;
    memset(&k, 0, sizeof k);
    k.func = f;
    k.line = callsite.line;
    k.disc = callsite.disc;
    HASH_FIND(hh, p->kids, &k, sizeof k, c);
    if (c)
        return &c->n;
    if (!(c = calloc(1, sizeof *c)))
        goto oom;
    c->key = k;
    c->n.func = &f->f;
    c->n.callsite = callsite;
    c->n.inlined = fr->inlined;
    c->n.parent = &p->n;
    c->n.depth = p->n.depth + 1;
    if (c->n.depth > 1 && !fr->inlined)
        r->cs = true;
    HASH_ADD(hh, p->kids, key, sizeof k, c);
    return &c->n;
oom:
    lp_error_set(err, LP_ENOMEM, "report: out of memory");
    return NULL;
}

void lp_report_add_self(lp_report_node *n, uint64_t count)
{
    n->self = lp_sat_add(n->self, count);
}

static int add_line(rp_line **head, lp_loc loc, uint64_t count)
{
    rp_line *l;

    HASH_FIND(hh, *head, &loc, sizeof loc, l);
    if (!l) {
        if (!(l = calloc(1, sizeof *l)))
            return -1;
        l->l.loc = loc;
        HASH_ADD(hh, *head, l.loc, sizeof loc, l);
    }
    l->l.count = lp_sat_add(l->l.count, count);
    return 0;
}

int lp_report_add_line(lp_report *r, lp_report_node *n, lp_loc loc,
                       uint64_t count, lp_error *err)
{
    (void)r;
    if (add_line(&((rp_node *)n)->lines, loc, count))
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    return 0;
}

int lp_report_add_stack(lp_report *r, const lp_report_frame *frames, size_t n,
                        uint64_t count, lp_error *err)
{
    lp_report_node *node = NULL;
    lp_loc cs = {0, 0};
    size_t i;

    for (i = 0; i < n; i++) {
        if (!(node = lp_report_child(r, node, cs, &frames[i], err)))
            return -1;
        cs = frames[i].loc;
    }
    if (!node)
        return 0;
    lp_report_add_self(node, count);
    if (frames[n - 1].external ||
        (!frames[n - 1].file && !frames[n - 1].start_line &&
         !frames[n - 1].loc.line && !frames[n - 1].loc.disc))
        return 0; /* no line information (no symbols, or symtab only) */
    return lp_report_add_line(r, node, frames[n - 1].loc, count, err);
}

/* ---- finishing ----------------------------------------------------------- */

static int loc_cmp(lp_loc a, lp_loc b)
{
    if (a.line != b.line)
        return a.line < b.line ? -1 : 1;
    if (a.disc != b.disc)
        return a.disc < b.disc ? -1 : 1;
    return 0;
}

static int cmp_u64_desc(uint64_t a, uint64_t b)
{
    return a == b ? 0 : a > b ? -1 : 1;
}

static int node_cmp(const void *pa, const void *pb)
{
    const lp_report_node *a = *(const lp_report_node *const *)pa;
    const lp_report_node *b = *(const lp_report_node *const *)pb;
    int c = cmp_u64_desc(a->total, b->total);

    if (!c)
        c = strcmp(a->func->display, b->func->display);
    if (!c)
        c = strcmp(a->func->name, b->func->name);
    if (!c)
        c = loc_cmp(a->callsite, b->callsite);
    return c ? c : (int)a->inlined - (int)b->inlined;
}

static int line_cmp(const void *pa, const void *pb)
{
    return loc_cmp(((const lp_report_line *)pa)->loc,
                   ((const lp_report_line *)pb)->loc);
}

static int lines_to_array(rp_line *head, lp_report_line **out, size_t *n)
{
    rp_line *l, *t;
    size_t i = 0;

    *n = HASH_COUNT(head);
    *out = NULL;
    if (!*n)
        return 0;
    if (!(*out = malloc(*n * sizeof **out)))
        return -1;
    HASH_ITER(hh, head, l, t)
        (*out)[i++] = l->l;
    qsort(*out, *n, sizeof **out, line_cmp);
    return 0;
}

/* Post-order: totals, arrays; pre-order bookkeeping for the functions
 * (a function's total counts its outermost node on each path only). */
static int finish_node(rp_node *n)
{
    rp_func *f = n->n.func ? (rp_func *)n->n.func : NULL;
    rp_node *c, *t;
    rp_line *l, *lt;
    size_t i = 0;
    int rc = 0;

    n->n.total = n->n.self;
    if (lines_to_array(n->lines, &n->n.lines, &n->n.nlines))
        return -1;
    if (f) {
        f->active++;
        f->f.self = lp_sat_add(f->f.self, n->n.self);
        HASH_ITER(hh, n->lines, l, lt)
            if (add_line(&f->lines, l->l.loc, l->l.count))
                return -1;
    }
    n->n.nchildren = HASH_COUNT(n->kids);
    if (n->n.nchildren &&
        !(n->n.children = malloc(n->n.nchildren * sizeof *n->n.children)))
        return -1;
    HASH_ITER(hh, n->kids, c, t) {
        if (rc == 0)
            rc = finish_node(c);
        n->n.children[i++] = &c->n;
        n->n.total = lp_sat_add(n->n.total, c->n.total);
    }
    if (rc)
        return -1;
    if (n->n.nchildren)
        qsort(n->n.children, n->n.nchildren, sizeof *n->n.children, node_cmp);
    if (f && --f->active == 0)
        f->f.total = lp_sat_add(f->f.total, n->n.total);
    return 0;
}

static int func_cmp(const void *pa, const void *pb)
{
    const lp_report_func *a = *(const lp_report_func *const *)pa;
    const lp_report_func *b = *(const lp_report_func *const *)pb;
    int c = cmp_u64_desc(a->self, b->self);

    if (!c)
        c = cmp_u64_desc(a->total, b->total);
    return c ? c : strcmp(a->name, b->name);
}

static void hot_line(rp_func *f)
{
    rp_line *l, *t;

    HASH_ITER(hh, f->lines, l, t)
        if (l->l.count > f->f.hot_count ||
            (l->l.count == f->f.hot_count && f->f.hot_count &&
             loc_cmp(l->l.loc, f->f.hot_loc) < 0)) {
            f->f.hot_count = l->l.count;
            f->f.hot_loc = l->l.loc;
        }
}

int lp_report_finish(lp_report *r, lp_error *err)
{
    rp_func *f, *t;
    size_t i = 0;

    if (r->finished)
        return 0;
    if (finish_node(&r->root))
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    r->nfuncs = HASH_COUNT(r->funcs);
    if (r->nfuncs && !(r->sorted = malloc(r->nfuncs * sizeof *r->sorted)))
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    HASH_ITER(hh, r->funcs, f, t) {
        hot_line(f);
        r->sorted[i++] = &f->f;
    }
    if (r->nfuncs)
        qsort(r->sorted, r->nfuncs, sizeof *r->sorted, func_cmp);
    r->finished = true;
    return 0;
}

/* ---- views ------------------------------------------------------------------ */

const lp_report_node *lp_report_root(const lp_report *r)
{
    return &r->root.n;
}

size_t lp_report_functions(const lp_report *r,
                           const lp_report_func *const **funcs)
{
    *funcs = r->sorted;
    return r->nfuncs;
}

uint32_t lp_report_abs_line(const lp_report_func *f, lp_loc loc)
{
    /* Offsets are (line - start) & 0xffff: 0xfff6 is 10 lines above. */
    if (!f->start_line)
        return 0;
    if (loc.line >= 0x8000 && loc.line <= 0xffff)
        return f->start_line > 0x10000 - loc.line
                   ? f->start_line - (0x10000 - loc.line) : 0;
    return f->start_line + loc.line;
}

char *lp_report_context_key(const lp_report_node *n, bool demangle)
{
    const lp_report_node *p, **path;
    size_t len = 1, o = 0, d, depth = n->depth;
    char *s;

    if (!(path = malloc((depth ? depth : 1) * sizeof *path)))
        return NULL;
    for (p = n, d = depth; p && p->func && d > 0; p = p->parent) {
        path[--d] = p;
        len += strlen(demangle ? p->func->display : p->func->name) + 28;
    }
    if (!(s = malloc(len))) {
        free(path);
        return NULL;
    }
    s[0] = 0;
    for (d = 0; d < depth; d++) {
        const lp_report_func *f = path[d]->func;
        lp_loc cs = d + 1 < depth ? path[d + 1]->callsite : (lp_loc){0, 0};

        o += (size_t)sprintf(s + o, "%s", demangle ? f->display : f->name);
        if (d + 1 == depth)
            break;
        o += (size_t)(cs.disc ? sprintf(s + o, ":%" PRIu32 ".%" PRIu32 " @ ",
                                        cs.line, cs.disc)
                              : sprintf(s + o, ":%" PRIu32 " @ ", cs.line));
    }
    free(path);
    return s;
}

typedef struct ctx_item {
    const lp_report_node *n;
    char *key;
} ctx_item;

static int ctx_cmp(const void *pa, const void *pb)
{
    const ctx_item *a = pa, *b = pb;
    int c = cmp_u64_desc(a->n->self, b->n->self);

    if (!c)
        c = cmp_u64_desc(a->n->total, b->n->total);
    return c ? c : strcmp(a->key, b->key);
}

static size_t collect(const lp_report_node *n, ctx_item *v, size_t k)
{
    size_t i;

    if (n->func && n->self) {
        if (v)
            v[k].n = n;
        k++;
    }
    for (i = 0; i < n->nchildren; i++)
        k = collect(n->children[i], v, k);
    return k;
}

size_t lp_report_contexts(const lp_report *r, const lp_report_node ***out)
{
    size_t n = collect(&r->root.n, NULL, 0), i, bad = 0;
    ctx_item *v = calloc(n ? n : 1, sizeof *v);

    *out = malloc((n ? n : 1) * sizeof **out);
    if (!v || !*out)
        goto oom;
    collect(&r->root.n, v, 0);
    for (i = 0; i < n; i++)
        bad |= !(v[i].key = lp_report_context_key(v[i].n, false));
    if (bad)
        goto oom;
    qsort(v, n, sizeof *v, ctx_cmp);
    for (i = 0; i < n; i++) {
        (*out)[i] = v[i].n;
        free(v[i].key);
    }
    free(v);
    return n;
oom:
    for (i = 0; v && i < n; i++)
        free(v[i].key);
    free(v);
    free(*out);
    *out = NULL;
    return (size_t)-1;
}

/* ---- the hook --------------------------------------------------------------- */

lp_report *lp_report_from_profile(const lp_profile *p, lp_binary *bin,
                                  const lp_report_quality *q,
                                  const lp_report_source *src, lp_error *err)
{
    lp_report *r = lp_report_new(LP_REPORT_COUNTS, err);

    if (!r)
        return NULL;
    if ((src && lp_report_set_source(r, src, err)) ||
        lp_report_add_profile(r, p, bin, err) || lp_report_finish(r, err)) {
        lp_report_free(r);
        return NULL;
    }
    if (q)
        lp_report_set_quality(r, q);
    return r;
}

int lp_report_format_parse(const char *s, lp_report_format *out)
{
    static const struct {
        const char *name;
        lp_report_format f;
    } names[] = {
        {"text", LP_REPORT_TEXT},     {"json", LP_REPORT_JSON},
        {"folded", LP_REPORT_FOLDED}, {"speedscope", LP_REPORT_SPEEDSCOPE},
        {"svg", LP_REPORT_SVG},
    };
    size_t i;

    for (i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].f;
            return 0;
        }
    return -1;
}

int lp_report_write(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                    lp_error *err)
{
    if (!r->finished)
        return lp_error_set(err, LP_EUSAGE, "report: not finished");
    switch (o->format) {
    case LP_REPORT_TEXT: return rp_write_text(f, r, o, err);
    case LP_REPORT_JSON: return rp_write_json(f, r, o, err);
    case LP_REPORT_FOLDED: return rp_write_folded(f, r, o, err);
    case LP_REPORT_SPEEDSCOPE: return rp_write_speedscope(f, r, o, err);
    case LP_REPORT_SVG: return rp_write_svg(f, r, o, err);
    }
    return lp_error_set(err, LP_EUSAGE, "report: unknown format");
}
