/*
 * response.c - symbolication of validated jobs and the v5/v4 responses.
 * Owns: the per-request module table (found true/false/null), per-frame
 * address adjustment, and the response shape of Eliot (frame, module,
 * module_offset, function, function_offset, file, line, inlines;
 * found_modules; v4 symbolicatedStacks/knownModules). Validation is
 * request.c's, finding symbol files store.c's.
 */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "symbolicate/internal.h"

/* One distinct (debug_file, debug_id) of a request. */
typedef struct req_module {
    const char *file, *id;
    int state;              /* -1 not looked up (null), 0 not found, 1 found */
    int in_job;             /* a frame of the current job refers to it */
    lp_sym_handle h;
    const char *display;    /* the "module" of frames */
    int loaded;             /* lookup statistics, kept after release */
    double load_seconds;
    long long bytes;
} req_module;

/* What one request needs while it runs. */
typedef struct run_ctx {
    lp_sym_store *store;
    const lp_sym_opts *opts;
    req_module *mods;
    size_t nmods, capmods;
    double t0;
    long *by_index;         /* this job: memoryMap index -> mods index */
    int big;                /* integers beyond 64 bits are markers (bigint.c) */
    lp_error *err;
} run_ctx;

static json_t *hex_json(uint64_t v)
{
    char buf[32];

    snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    return json_string(buf);
}

/* The request-wide entry of a memoryMap item; looks it up on first use. */
static req_module *get_module(run_ctx *c, const char *file, const char *id, int lookup)
{
    size_t i;
    req_module *r, *nm;

    for (i = 0; i < c->nmods; i++)
        if (!strcmp(c->mods[i].file, file) && !strcmp(c->mods[i].id, id))
            break;
    if (i == c->nmods) {
        if (c->nmods == c->capmods) {
            size_t ncap = c->capmods ? c->capmods * 2 : 16;
            if (!(nm = realloc(c->mods, ncap * sizeof *nm)))
                return NULL;
            c->mods = nm;
            c->capmods = ncap;
        }
        r = &c->mods[c->nmods++];
        memset(r, 0, sizeof *r);
        r->file = file;
        r->id = id;
        r->state = -1;
        r->display = *file ? file : "<unknown>";
    }
    r = &c->mods[i];
    /* Modules without a name or id are never looked up (stay null). */
    if (lookup && r->state < 0 && *file && *id) {
        r->state = lp_sym_store_get(c->store, file, id, &r->h);
        r->loaded = r->h.loaded;
        r->load_seconds = r->h.load_seconds;
        r->bytes = r->h.bytes;
        if (r->state == 1 && r->h.m->code_file)
            r->display = r->h.m->code_file;
    }
    return r;
}

/* A JSON string of symbol-file text that may not be UTF-8 (bytes of other
 * encodings become '?'). */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s);
    char *d, *p;

    if (j || !(d = strdup(s)))
        return j;
    for (p = d; *p; p++)
        if ((unsigned char)*p >= 0x80)
            *p = '?';
    j = json_string(d);
    free(d);
    return j;
}

/* file and line of a location: a line without a file means nothing. */
static int set_file_line(json_t *o, const lp_bp_frame *f)
{
    int r = 0;

    if (f->file)
        r |= json_object_set_new(o, "file", jstr(f->file));
    if (f->file && f->line)
        r |= json_object_set_new(o, "line", json_integer(f->line));
    return r;
}

static int set_loc(json_t *o, const lp_bp_frame *f)
{
    return json_object_set_new(o, "function", jstr(f->function)) | set_file_line(o, f);
}

static int add_inlines(json_t *fi, const lp_bp_result *res)
{
    json_t *arr = json_array(), *o;
    size_t i;

    if (!arr)
        return -1;
    for (i = 0; i + 1 < res->nframes; i++) {
        o = json_object();
        if (!o || set_loc(o, &res->frames[i]) || json_array_append_new(arr, o)) {
            json_decref(arr);
            return -1;
        }
    }
    return json_object_set_new(fi, "inlines", arr);
}

/* Fill in function/file/line/inlines of a frame of a found module. */
static int resolve(run_ctx *c, json_t *fi, const req_module *rm, size_t index, uint64_t off)
{
    uint64_t addr = off;
    lp_cpu arch;
    lp_bp_result res;
    int r = 0;

    if (c->opts && c->opts->adjust) {
        arch = c->opts->arch != LP_CPU_UNKNOWN ? c->opts->arch
                                                : lp_cpu_from_name(rm->h.m->arch);
        if (lp_adjust_frame(arch, c->opts->mode, index, off, NULL, &addr) < 0)
            return json_object_set_new(fi, "lookup_offset", json_null());
        r = json_object_set_new(fi, "lookup_offset", hex_json(addr));
    }
    if (!lp_bp_lookup(rm->h.m, addr, &res))
        return r;
    /* Key order as the service: function, function_offset, file, line. */
    r |= json_object_set_new(fi, "function", jstr(res.frames[res.nframes - 1].function));
    r |= json_object_set_new(fi, "function_offset", hex_json(addr - res.sym_addr));
    r |= set_file_line(fi, &res.frames[res.nframes - 1]);
    if (res.nframes > 1)
        r |= add_inlines(fi, &res);
    return r;
}

static json_t *do_frame(run_ctx *c, const json_t *mmap, const json_t *fr, size_t index)
{
    long long idx;
    uint64_t off;
    int lookup;
    const char *file = "", *id = "";
    req_module *rm = NULL;
    json_t *fi = json_object();

    lp_sym_json_int(json_array_get(fr, 0), c->big, &idx);
    if (idx >= 0 && c->by_index[idx] >= 0) {
        rm = &c->mods[c->by_index[idx]];
    } else if (idx >= 0) {
        file = json_string_value(json_array_get(json_array_get(mmap, (size_t)idx), 0));
        id = json_string_value(json_array_get(json_array_get(mmap, (size_t)idx), 1));
        if (!(rm = get_module(c, file, id, 1))) {
            json_decref(fi);
            return NULL;
        }
        c->by_index[idx] = rm - c->mods;
    }
    if (rm)
        rm->in_job = 1;
    if (!fi || json_object_set_new(fi, "frame", json_integer((json_int_t)index)) ||
        json_object_set_new(fi, "module", jstr(rm ? rm->display : "<unknown>")) ||
        json_object_set_new(fi, "module_offset",
                            lp_sym_offset_hex(json_array_get(fr, 1), c->big, &off, &lookup)) ||
        (rm && rm->state == 1 && lookup && resolve(c, fi, rm, index, off))) {
        json_decref(fi);
        return NULL;
    }
    return fi;
}

static json_t *found_modules(run_ctx *c, const json_t *mmap)
{
    json_t *fm = json_object(), *it;
    size_t i;
    req_module *rm;
    char *key;
    const char *f, *id;

    json_array_foreach(mmap, i, it) {
        f = json_string_value(json_array_get(it, 0));
        id = json_string_value(json_array_get(it, 1));
        if (!fm || !(rm = get_module(c, f, id, 0)) ||
            asprintf(&key, "%s/%s", f, id) < 0) {
            json_decref(fm);
            return NULL;
        }
        /* null unless a frame of this job refers to it (an earlier job of
         * the request may have looked it up). */
        json_object_set_new(fm, key, rm->state < 0 || !rm->in_job ? json_null()
                                                                  : json_boolean(rm->state));
        free(key);
    }
    return fm;
}

static json_t *do_job(run_ctx *c, const json_t *job)
{
    const json_t *mmap = json_object_get(job, "memoryMap");
    const json_t *stacks = json_object_get(job, "stacks"), *st, *fr;
    json_t *res = json_object(), *out = json_array(), *so, *fi, *fm;
    size_t s, f, n = json_array_size(mmap);

    free(c->by_index);
    if (!(c->by_index = malloc((n ? n : 1) * sizeof *c->by_index)))
        goto fail;
    for (s = 0; s < n; s++)
        c->by_index[s] = -1;
    for (s = 0; s < c->nmods; s++)
        c->mods[s].in_job = 0;
    if (!res || !out || json_object_set_new(res, "stacks", out))
        goto fail;
    json_array_foreach(stacks, s, st) {
        if (!(so = json_array()) || json_array_append_new(out, so))
            goto fail;
        json_array_foreach(st, f, fr)
            if (!(fi = do_frame(c, mmap, fr, f)) || json_array_append_new(so, fi))
                goto fail;
    }
    if (!(fm = found_modules(c, mmap)) || json_object_set_new(res, "found_modules", fm))
        goto fail;
    return res;
fail:
    json_decref(res);
    return NULL;
}

static void run_free(run_ctx *c)
{
    size_t i;

    for (i = 0; i < c->nmods; i++)
        if (c->mods[i].state == 1)
            lp_sym_store_release(c->store, &c->mods[i].h);
    free(c->mods);
    free(c->by_index);
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Store statistics of one module that was looked up (key "file/id"). */
static void debug_module(const req_module *m, const char *key, json_t *dl, json_t *ps,
                         double *ptime, long long *size)
{
    if (m->h.cache_hit)
        return;
    /* Not cached: an attempt to read the store (a "download"). */
    *size += m->bytes > 0 ? m->bytes : 0;
    *ptime += m->load_seconds;
    json_object_set_new(json_object_get(dl, m->state == 1 ? "time_per_module"
                                                          : "fail_time_per_module"),
                        key, json_real(m->load_seconds));
    if (m->bytes >= 0)
        json_object_set_new(json_object_get(dl, "size_per_module"), key,
                            json_integer(m->bytes));
    if (m->state == 1)
        json_object_set_new(json_object_get(ps, "time_per_module"), key,
                            json_real(m->load_seconds));
}

/* modules.stacks_per_module: in how many jobs each looked-up module is. */
static long long debug_modules(const json_t *results, json_t *spm)
{
    const json_t *r, *v;
    const char *key;
    long long n = 0;
    size_t i;

    json_array_foreach(results, i, r) {
        json_object_foreach((json_t *)json_object_get(r, "found_modules"), key, v) {
            if (json_is_null(v))
                continue;
            json_object_set_new(spm, key,
                                json_integer(json_integer_value(json_object_get(spm, key)) + 1));
            n++;
        }
    }
    return n;
}

/* The service's "debug" object (Debug: true): cache lookups, files read
 * ("downloads": from the local store), parse time, modules per job. */
static json_t *debug_object(const run_ctx *c, const json_t *results, double t)
{
    json_t *d = json_pack("{s:{s:i,s:i,s:f},s:{s:i,s:I,s:f,s:{},s:{},s:{}},s:{s:f,s:{}},"
                          "s:{s:f},s:{s:i,s:{}},s:f}",
                          "cache_lookups", "count", 0, "hits", 0, "time", 0.0,
                          "downloads", "count", 0, "size", (json_int_t)0, "time", 0.0,
                          "size_per_module", "time_per_module", "fail_time_per_module",
                          "parse_sym", "time", 0.0, "time_per_module",
                          "save_symcache", "time", 0.0,
                          "modules", "count", 0, "stacks_per_module", "time", t);
    json_t *cl, *dl, *ps, *mo;
    long long lookups = 0, hits = 0, size = 0;
    double ptime = 0;
    size_t i;
    char *k;

    if (!d)
        return NULL;
    cl = json_object_get(d, "cache_lookups");
    dl = json_object_get(d, "downloads");
    ps = json_object_get(d, "parse_sym");
    mo = json_object_get(d, "modules");
    for (i = 0; i < c->nmods; i++) {
        if (c->mods[i].state < 0 || asprintf(&k, "%s/%s", c->mods[i].file, c->mods[i].id) < 0)
            continue;
        lookups++;
        hits += c->mods[i].h.cache_hit;
        debug_module(&c->mods[i], k, dl, ps, &ptime, &size);
        free(k);
    }
    json_object_set_new(cl, "count", json_integer(lookups));
    json_object_set_new(cl, "hits", json_integer(hits));
    json_object_set_new(dl, "count", json_integer(lookups - hits));
    json_object_set_new(dl, "size", json_integer(size));
    json_object_set_new(dl, "time", json_real(ptime));
    json_object_set_new(ps, "time", json_real(ptime));
    json_object_set_new(mo, "count",
                        json_integer(debug_modules(results, json_object_get(mo, "stacks_per_module"))));
    return d;
}

static char *dump(json_t *resp, const lp_sym_opts *opts, lp_error *err)
{
    char *s = json_dumps(resp, opts && opts->pretty ? JSON_INDENT(2) : JSON_COMPACT);

    if (!s)
        lp_error_set(err, LP_ENOMEM, "out of memory");
    return s;
}

/* Symbolicate validated jobs into a results array (new reference). */
static json_t *run_jobs(run_ctx *c, const json_t *jobs)
{
    json_t *results = json_array(), *r;
    const json_t *job;
    size_t i;

    json_array_foreach(jobs, i, job) {
        if (!results || !(r = do_job(c, job)) || json_array_append_new(results, r)) {
            json_decref(results);
            lp_error_set(c->err, LP_ENOMEM, "out of memory");
            return NULL;
        }
    }
    return results;
}

char *lp_symbolicate_v5(lp_sym_store *s, const char *body, size_t len,
                        const lp_sym_opts *opts, lp_error *err)
{
    run_ctx c = {s, opts, NULL, 0, 0, now(), NULL, 0, err};
    json_t *root = lp_sym_parse_body(body, len, &c.big, err), *jobs = NULL, *results;
    json_t *resp = NULL;
    char *text = NULL;

    if (!root || !(jobs = lp_sym_v5_jobs(root, err)) || lp_sym_validate_jobs(jobs, c.big, err) < 0)
        goto out;
    if (!(results = run_jobs(&c, jobs)))
        goto out;
    resp = json_pack("{s:o}", "results", results);
    if (resp && opts && opts->debug)
        json_object_set_new(resp, "debug", debug_object(&c, results, now() - c.t0));
    text = resp ? dump(resp, opts, err) : (lp_error_set(err, LP_ENOMEM, "out of memory"), NULL);
out:
    run_free(&c);
    json_decref(resp);
    json_decref(jobs);
    json_decref(root);
    return text;
}

/* v4 frame text: "<function> (in <module>)" or "<0xoffset> (in <module>)". */
static json_t *v4_frame(const json_t *fi)
{
    const json_t *fn = json_object_get(fi, "function");
    char *s;
    json_t *r;

    if (asprintf(&s, "%s (in %s)", json_string_value(fn ? fn : json_object_get(fi, "module_offset")),
                 json_string_value(json_object_get(fi, "module"))) < 0)
        return NULL;
    r = json_string(s);
    free(s);
    return r;
}

static json_t *v4_response(const json_t *res, const json_t *mmap)
{
    json_t *stacks = json_array(), *known = json_array(), *so, *v;
    const json_t *st, *fi, *it, *fm = json_object_get(res, "found_modules");
    size_t s, f;
    char *key;

    json_array_foreach(json_object_get(res, "stacks"), s, st) {
        if (!stacks || !(so = json_array()) || json_array_append_new(stacks, so))
            goto fail;
        json_array_foreach(st, f, fi)
            if (json_array_append_new(so, v4_frame(fi)))
                goto fail;
    }
    json_array_foreach(mmap, s, it) {
        if (!known || asprintf(&key, "%s/%s", json_string_value(json_array_get(it, 0)),
                               json_string_value(json_array_get(it, 1))) < 0)
            goto fail;
        v = json_object_get(fm, key);
        free(key);
        if (json_array_append(known, v ? v : json_null()))
            goto fail;
    }
    return json_pack("{s:o,s:o}", "symbolicatedStacks", stacks, "knownModules", known);
fail:
    json_decref(stacks);
    json_decref(known);
    return NULL;
}

char *lp_symbolicate_v4(lp_sym_store *s, const char *body, size_t len,
                        const lp_sym_opts *opts, lp_error *err)
{
    run_ctx c = {s, opts, NULL, 0, 0, now(), NULL, 0, err};
    json_t *root = lp_sym_parse_body(body, len, &c.big, err), *jobs = NULL, *results = NULL;
    json_t *resp = NULL;
    char *text = NULL;

    if (!root)
        goto out;
    if (!(jobs = json_array()) || json_array_append(jobs, root)) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        goto out;
    }
    if (lp_sym_validate_jobs(jobs, c.big, err) < 0 || !(results = run_jobs(&c, jobs)))
        goto out;
    resp = v4_response(json_array_get(results, 0), json_object_get(root, "memoryMap"));
    text = resp ? dump(resp, opts, err) : (lp_error_set(err, LP_ENOMEM, "out of memory"), NULL);
out:
    run_free(&c);
    json_decref(resp);
    json_decref(results);
    json_decref(jobs);
    json_decref(root);
    return text;
}
