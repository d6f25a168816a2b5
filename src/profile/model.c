/*
 * model.c - the in-memory sample profile (LLVM FunctionSamples): creation,
 * lookup, counting, sorted views and the count fix-ups LLVM applies before
 * writing. Owns the hash tables (uthash); not file formats (src/writer/)
 * nor how counts are derived from LBR data (src/flat/).
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/profile.h"

/* ---- data structures ------------------------------------------------ */

struct lp_target {              /* one call target of a body record */
    char *name;
    uint64_t count;
    UT_hash_handle hh;
};

struct lp_body_rec {
    lp_loc loc;                 /* hash key */
    uint64_t count;
    struct lp_target *targets;
    UT_hash_handle hh;
};

struct lp_callee {              /* an inlinee profile, keyed by fs.name */
    lp_fsamples fs;
    UT_hash_handle hh;
};

struct lp_callsite {
    lp_loc loc;                 /* hash key */
    struct lp_callee *callees;
    UT_hash_handle hh;
};

struct lp_top {                 /* a top-level profile, keyed by fs.context */
    lp_fsamples fs;
    UT_hash_handle hh;
};

/* ---- helpers ---------------------------------------------------------- */

uint64_t lp_sat_add(uint64_t a, uint64_t b)
{
    return a + b < a ? UINT64_MAX : a + b;
}

static int loc_cmp(lp_loc a, lp_loc b)
{
    if (a.line != b.line)
        return a.line < b.line ? -1 : 1;
    if (a.disc != b.disc)
        return a.disc < b.disc ? -1 : 1;
    return 0;
}

static void fs_clear(lp_fsamples *fs);

static void free_targets(struct lp_target **head)
{
    struct lp_target *t, *tmp;

    HASH_ITER(hh, *head, t, tmp) {
        HASH_DEL(*head, t);
        free(t->name);
        free(t);
    }
}

static void fs_clear(lp_fsamples *fs)
{
    lp_body_rec *b, *bt;
    lp_callsite *c, *ct;
    struct lp_callee *e, *et;

    HASH_ITER(hh, fs->body, b, bt) {
        HASH_DEL(fs->body, b);
        free_targets(&b->targets);
        free(b);
    }
    HASH_ITER(hh, fs->callsites, c, ct) {
        HASH_DEL(fs->callsites, c);
        HASH_ITER(hh, c->callees, e, et) {
            HASH_DEL(c->callees, e);
            fs_clear(&e->fs);
            free(e);
        }
        free(c);
    }
    if (fs->context != fs->name)
        free(fs->context);
    free(fs->name);
    fs->name = fs->context = NULL;
}

int lp_fs_init(lp_fsamples *fs, const char *name)
{
    memset(fs, 0, sizeof *fs);
    if (!(fs->name = strdup(name)))
        return -1;
    fs->context = fs->name;
    return 0;
}

void lp_fs_clear(lp_fsamples *fs)
{
    fs_clear(fs);
    memset(fs, 0, sizeof *fs);
}

/* ---- profile ------------------------------------------------------------ */

lp_profile *lp_profile_new(void)
{
    return calloc(1, sizeof(lp_profile));
}

void lp_profile_free(lp_profile *p)
{
    struct lp_top *head, *t, *tmp;

    if (!p)
        return;
    head = p->funcs;
    HASH_ITER(hh, head, t, tmp) {
        HASH_DEL(head, t);
        fs_clear(&t->fs);
        free(t);
    }
    free(p);
}

lp_fsamples *lp_profile_find(const lp_profile *p, const char *context)
{
    struct lp_top *head = p->funcs, *t;

    HASH_FIND_STR(head, context, t);
    return t ? &t->fs : NULL;
}

lp_fsamples *lp_profile_get(lp_profile *p, const char *context,
                            const char *name)
{
    struct lp_top *head = p->funcs, *t;

    HASH_FIND(hh, head, context, strlen(context), t);
    if (t)
        return &t->fs;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->fs.name = strdup(name ? name : context);
    t->fs.context = name ? strdup(context) : t->fs.name;
    if (!t->fs.name || !t->fs.context) {
        fs_clear(&t->fs);
        free(t);
        return NULL;
    }
    HASH_ADD_KEYPTR(hh, head, t->fs.context, strlen(t->fs.context), t);
    p->funcs = head;
    p->nr_funcs++;
    return &t->fs;
}

void lp_profile_remove(lp_profile *p, const char *context)
{
    struct lp_top *head = p->funcs, *t;

    HASH_FIND_STR(head, context, t);
    if (!t)
        return;
    HASH_DEL(head, t);
    p->funcs = head;
    p->nr_funcs--;
    fs_clear(&t->fs);
    free(t);
}

/* ---- body records and call sites ------------------------------------------ */

lp_body_rec *lp_fs_body(lp_fsamples *fs, lp_loc loc)
{
    lp_body_rec *b;

    HASH_FIND(hh, fs->body, &loc, sizeof loc, b);
    if (b)
        return b;
    b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    b->loc = loc;
    HASH_ADD(hh, fs->body, loc, sizeof loc, b);
    return b;
}

const lp_body_rec *lp_fs_body_find(const lp_fsamples *fs, lp_loc loc)
{
    lp_body_rec *b, *head = fs->body;

    HASH_FIND(hh, head, &loc, sizeof loc, b);
    return b;
}

uint64_t lp_body_count(const lp_body_rec *b) { return b->count; }
void lp_body_set_count(lp_body_rec *b, uint64_t c) { b->count = c; }
void lp_body_add(lp_body_rec *b, uint64_t n) { b->count = lp_sat_add(b->count, n); }

int lp_body_add_target(lp_body_rec *b, const char *callee, uint64_t n)
{
    struct lp_target *t;

    HASH_FIND_STR(b->targets, callee, t);
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t || !(t->name = strdup(callee))) {
            free(t);
            return -1;
        }
        HASH_ADD_KEYPTR(hh, b->targets, t->name, strlen(t->name), t);
    }
    t->count = lp_sat_add(t->count, n);
    return 0;
}

uint64_t lp_body_target_sum(const lp_body_rec *b)
{
    const struct lp_target *t;
    uint64_t s = 0;

    for (t = b->targets; t; t = t->hh.next)
        s = lp_sat_add(s, t->count);
    return s;
}

lp_fsamples *lp_fs_callee(lp_fsamples *fs, lp_loc loc, const char *callee)
{
    lp_callsite *c;
    struct lp_callee *e;

    HASH_FIND(hh, fs->callsites, &loc, sizeof loc, c);
    if (!c) {
        c = calloc(1, sizeof *c);
        if (!c)
            return NULL;
        c->loc = loc;
        HASH_ADD(hh, fs->callsites, loc, sizeof loc, c);
    }
    HASH_FIND_STR(c->callees, callee, e);
    if (e)
        return &e->fs;
    e = calloc(1, sizeof *e);
    if (!e || !(e->fs.name = strdup(callee))) {
        free(e);
        return NULL;
    }
    e->fs.context = e->fs.name;
    HASH_ADD_KEYPTR(hh, c->callees, e->fs.name, strlen(e->fs.name), e);
    return &e->fs;
}

/* ---- sorted views ------------------------------------------------------- */

static int target_cmp(const void *a, const void *b)
{
    const lp_target_view *x = a, *y = b;

    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int body_view_cmp(const void *a, const void *b)
{
    return loc_cmp(((const lp_body_view *)a)->loc,
                   ((const lp_body_view *)b)->loc);
}

size_t lp_fs_sorted_body(const lp_fsamples *fs, lp_body_view **out)
{
    size_t n = HASH_COUNT(fs->body), i = 0, j;
    const lp_body_rec *b;
    const struct lp_target *t;
    lp_body_view *v = calloc(n ? n : 1, sizeof *v);

    if (!v)
        return (size_t)-1;
    for (b = fs->body; b; b = b->hh.next, i++) {
        v[i].loc = b->loc;
        v[i].count = b->count;
        v[i].nr_targets = HASH_COUNT(b->targets);
        v[i].targets = calloc(v[i].nr_targets + 1, sizeof *v[i].targets);
        if (!v[i].targets) {
            lp_body_views_free(v, i);
            return (size_t)-1;
        }
        for (t = b->targets, j = 0; t; t = t->hh.next, j++)
            v[i].targets[j] = (lp_target_view){t->name, t->count};
        qsort(v[i].targets, v[i].nr_targets, sizeof *v[i].targets, target_cmp);
    }
    qsort(v, n, sizeof *v, body_view_cmp);
    *out = v;
    return n;
}

void lp_body_views_free(lp_body_view *v, size_t n)
{
    size_t i;

    if (!v)
        return;
    for (i = 0; i < n; i++)
        free(v[i].targets);
    free(v);
}

static int callee_view_cmp(const void *a, const void *b)
{
    const lp_callee_view *x = a, *y = b;
    int c = loc_cmp(x->loc, y->loc);

    return c ? c : strcmp(x->fs->name, y->fs->name);
}

size_t lp_fs_sorted_callees(const lp_fsamples *fs, lp_callee_view **out)
{
    const lp_callsite *c;
    const struct lp_callee *e;
    size_t n = 0, i = 0;
    lp_callee_view *v;

    for (c = fs->callsites; c; c = c->hh.next)
        n += HASH_COUNT(c->callees);
    v = calloc(n ? n : 1, sizeof *v);
    if (!v)
        return (size_t)-1;
    for (c = fs->callsites; c; c = c->hh.next)
        for (e = c->callees; e; e = e->hh.next)
            v[i++] = (lp_callee_view){c->loc, &e->fs};
    qsort(v, n, sizeof *v, callee_view_cmp);
    *out = v;
    return n;
}

static int top_cmp(const void *a, const void *b)
{
    const lp_fsamples *x = *(lp_fsamples *const *)a;
    const lp_fsamples *y = *(lp_fsamples *const *)b;

    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return strcmp(x->context, y->context);
}

static int top_cs_cmp(const void *a, const void *b)
{
    const lp_fsamples *x = *(lp_fsamples *const *)a;
    const lp_fsamples *y = *(lp_fsamples *const *)b;

    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return lp_context_cmp(x->context, y->context);
}

size_t lp_profile_all(const lp_profile *p, lp_fsamples ***out)
{
    const struct lp_top *t;
    size_t i = 0;
    lp_fsamples **v = calloc(p->nr_funcs ? p->nr_funcs : 1, sizeof *v);

    if (!v)
        return (size_t)-1;
    for (t = p->funcs; t; t = t->hh.next)
        v[i++] = (lp_fsamples *)&t->fs;
    *out = v;
    return i;
}

size_t lp_profile_sorted(const lp_profile *p, lp_fsamples ***out)
{
    size_t n = lp_profile_all(p, out);

    if (n != (size_t)-1)
        qsort(*out, n, sizeof **out, p->is_cs ? top_cs_cmp : top_cmp);
    return n;
}

/* ---- fix-ups ------------------------------------------------------------ */

void lp_fs_update_callsite_samples(lp_fsamples *fs)
{
    lp_body_rec *b;
    uint64_t s;

    for (b = fs->body; b; b = b->hh.next) {
        s = lp_body_target_sum(b);
        if (s > b->count)
            b->count = s;
    }
}

void lp_fs_update_total_samples(lp_fsamples *fs)
{
    lp_body_rec *b;
    lp_callsite *c;
    struct lp_callee *e;
    uint64_t s = 0;

    for (b = fs->body; b; b = b->hh.next)
        s = lp_sat_add(s, b->count);
    for (c = fs->callsites; c; c = c->hh.next)
        for (e = c->callees; e; e = e->hh.next) {
            lp_fs_update_total_samples(&e->fs);
            s = lp_sat_add(s, e->fs.total);
        }
    fs->total = s;
}

void lp_fs_drop_callees(lp_fsamples *fs, lp_name_pred pred)
{
    lp_callsite *c;
    struct lp_callee *e, *et;

    for (c = fs->callsites; c; c = c->hh.next)
        HASH_ITER(hh, c->callees, e, et) {
            if (pred(e->fs.name)) {
                HASH_DEL(c->callees, e);
                fs_clear(&e->fs);
                free(e);
            } else {
                lp_fs_drop_callees(&e->fs, pred);
            }
        }
}

/* ---- merging and moving (CS generation) ----------------------------------- */

static int merge_record(lp_body_rec *dst, const lp_body_rec *src)
{
    const struct lp_target *t;

    dst->count = lp_sat_add(dst->count, src->count);
    for (t = src->targets; t; t = t->hh.next)
        if (lp_body_add_target(dst, t->name, t->count))
            return -1;
    return 0;
}

int lp_fs_merge(lp_fsamples *dst, const lp_fsamples *src)
{
    const lp_body_rec *b;
    const lp_callsite *c;
    const struct lp_callee *e;
    lp_body_rec *d;
    lp_fsamples *callee;
    lp_callsite *dc;
    struct lp_callee *de;

    dst->total = lp_sat_add(dst->total, src->total);
    dst->head = lp_sat_add(dst->head, src->head);
    for (b = src->body; b; b = b->hh.next)
        if (!(d = lp_fs_body(dst, b->loc)) || merge_record(d, b))
            return -1;
    for (c = src->callsites; c; c = c->hh.next)
        for (e = c->callees; e; e = e->hh.next) {
            de = NULL;
            HASH_FIND(hh, dst->callsites, &c->loc, sizeof c->loc, dc);
            if (dc)
                HASH_FIND_STR(dc->callees, e->fs.name, de);
            if (!(callee = lp_fs_callee(dst, c->loc, e->fs.name)))
                return -1;
            if (!de)
                callee->attrs = e->fs.attrs; /* a fresh profile copies the context */
            if (lp_fs_merge(callee, &e->fs))
                return -1;
        }
    return 0;
}

void lp_fs_move(lp_fsamples *dst, lp_fsamples *src)
{
    dst->total = src->total;
    dst->head = src->head;
    dst->attrs = src->attrs;
    dst->body = src->body;
    dst->callsites = src->callsites;
    src->total = src->head = 0;
    src->attrs = 0;
    src->body = NULL;
    src->callsites = NULL;
}

uint64_t lp_fs_remove_call(lp_fsamples *fs, lp_loc loc, const char *callee)
{
    lp_body_rec *b;
    struct lp_target *t;
    uint64_t n = 0;

    HASH_FIND(hh, fs->body, &loc, sizeof loc, b);
    if (!b)
        return 0;
    HASH_FIND_STR(b->targets, callee, t);
    if (t) {
        n = t->count;
        HASH_DEL(b->targets, t);
        free(t->name);
        free(t);
    }
    if (n > b->count)
        n = b->count;
    b->count -= n;
    if (b->count == 0) {
        HASH_DEL(fs->body, b);
        free_targets(&b->targets);
        free(b);
    }
    return n;
}

lp_fsamples *lp_fs_find_callee(const lp_fsamples *fs, lp_loc loc,
                               const char *callee)
{
    lp_callsite *c, *head = fs->callsites;
    struct lp_callee *e = NULL;

    HASH_FIND(hh, head, &loc, sizeof loc, c);
    if (c)
        HASH_FIND_STR(c->callees, callee, e);
    return e ? &e->fs : NULL;
}

uint64_t lp_fs_target_count(const lp_fsamples *fs, lp_loc loc,
                            const char *callee)
{
    lp_body_rec *b, *head = fs->body;
    struct lp_target *t = NULL;

    HASH_FIND(hh, head, &loc, sizeof loc, b);
    if (b)
        HASH_FIND_STR(b->targets, callee, t);
    return t ? t->count : 0;
}

size_t lp_fs_nr_body(const lp_fsamples *fs)
{
    return HASH_COUNT(fs->body);
}

uint64_t lp_fs_head_estimate(const lp_fsamples *fs, int cs)
{
    const lp_body_rec *b, *first = NULL;
    const lp_callsite *c, *firstc = NULL;
    const struct lp_callee *e;
    uint64_t n = 0;

    if (cs && fs->head)
        return fs->head;
    for (b = fs->body; b; b = b->hh.next)
        if (!first || loc_cmp(b->loc, first->loc) < 0)
            first = b;
    for (c = fs->callsites; c; c = c->hh.next)
        if (!firstc || loc_cmp(c->loc, firstc->loc) < 0)
            firstc = c;
    if (first && (!firstc || loc_cmp(first->loc, firstc->loc) < 0))
        n = first->count;
    else if (firstc)
        for (e = firstc->callees; e; e = e->hh.next)
            n = lp_sat_add(n, lp_fs_head_estimate(&e->fs, cs));
    return n ? n : fs->total > 0;
}

/* ---- context ordering ------------------------------------------------------ */

typedef struct ctx_frame_view {  /* one frame of a printed context */
    const char *name;
    size_t len;
    uint32_t line, disc;
} ctx_frame_view;

static uint32_t parse_dec(const char *s, const char *end)
{
    uint32_t v = 0;

    for (; s < end && *s >= '0' && *s <= '9'; s++)
        v = v * 10 + (uint32_t)(*s - '0');
    return v;
}

/* Next frame of *p (advanced past it and its " @ "); 0 at the end. */
static int next_frame(const char **p, ctx_frame_view *f)
{
    const char *s = *p, *sep, *end, *colon, *dot;

    if (!*s)
        return 0;
    sep = strstr(s, " @ ");
    end = sep ? sep : s + strlen(s);
    colon = memchr(s, ':', (size_t)(end - s));
    f->name = s;
    f->len = (size_t)((colon ? colon : end) - s);
    f->line = f->disc = 0;
    if (colon) {
        dot = memchr(colon + 1, '.', (size_t)(end - colon - 1));
        f->line = parse_dec(colon + 1, dot ? dot : end);
        if (dot)
            f->disc = parse_dec(dot + 1, end);
    }
    *p = sep ? sep + 3 : end;
    return 1;
}

size_t lp_context_split(const char *ctx, lp_context_frame *out, size_t max)
{
    ctx_frame_view f;
    size_t n = 0;

    while (next_frame(&ctx, &f)) {
        if (n < max)
            out[n] = (lp_context_frame){f.name, f.len, {f.line, f.disc}};
        n++;
    }
    return n;
}

int lp_context_cmp(const char *a, const char *b)
{
    ctx_frame_view x, y;
    size_t m;
    int c, ha, hb;

    for (;;) {
        ha = next_frame(&a, &x);
        hb = next_frame(&b, &y);
        if (!ha || !hb)
            return ha - hb;
        m = x.len < y.len ? x.len : y.len;
        if ((c = memcmp(x.name, y.name, m)) != 0)
            return c < 0 ? -1 : 1;
        if (x.len != y.len)
            return x.len < y.len ? -1 : 1;
        if (x.line != y.line)
            return x.line < y.line ? -1 : 1;
        if (x.disc != y.disc)
            return x.disc < y.disc ? -1 : 1;
    }
}
