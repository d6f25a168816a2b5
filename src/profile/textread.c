/*
 * textread.c - reads the LLVM sample profile text format into the model:
 * what SampleProfileReaderText accepts for flat, nested and CS profiles,
 * with the metadata lines !CFGChecksum (probe-based profiles), !Attributes
 * and !Flat. Contexts are kept in LLVM's printed form ("main:1 @ foo").
 * Owns parsing only; errors name the file and line. Binary formats are
 * binread.c's, the choice of reader read.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"

#define MAX_DEPTH 256

typedef struct text_state {
    const char *name;
    unsigned long lineno;
    lp_profile *p;
    lp_fsamples *stack[MAX_DEPTH]; /* profile open at each depth */
    int meta_depth;             /* depth of the last metadata line (0: none) */
    int nr_cs, nr_flat;         /* top-level profiles of each kind */
} text_state;

static int bad(text_state *s, lp_error *err, const char *what)
{
    return lp_error_set(err, LP_EFORMAT, "%s:%lu: %s", s->name, s->lineno,
                        what);
}

static int parse_u64(const char *p, const char *end, uint64_t *out)
{
    char buf[32], *e;
    size_t n = (size_t)(end - p);

    if (n == 0 || n >= sizeof buf || !isdigit((unsigned char)*p))
        return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    errno = 0;
    *out = strtoull(buf, &e, 10);
    return (*e || errno) ? -1 : 0;
}

/* LLVM's printed form of the context in [ctx] (SampleContext::toString:
 * "name:line[.disc]" frames joined by " @ ", the leaf without location)
 * into *out (malloc'ed), *leaf where the leaf's name starts. -1 on no
 * memory, 1 if a frame has no function name or a call-site offset
 * beyond 16 bits. */
static int canon_context(const char *ctx, char **out, size_t *leaf)
{
    size_t n = lp_context_split(ctx, NULL, 0), i, len = 0;
    lp_context_frame *f = malloc((n ? n : 1) * sizeof *f);
    char *o;

    *out = NULL;
    if (!f)
        return -1;
    lp_context_split(ctx, f, n);
    for (i = 0; i < n; i++)
        len += f[i].len + 26;
    for (i = 0; i < n && f[i].len && (i + 1 == n || f[i].loc.line <= 0xffff); i++)
        ;
    if (n == 0 || i < n) {
        free(f);
        return 1;
    }
    if ((*out = o = malloc(len + 1))) {
        for (i = 0; i < n; i++) {
            o += sprintf(o, "%s", i ? " @ " : "");
            *leaf = (size_t)(o - *out);
            o += sprintf(o, "%.*s", (int)f[i].len, f[i].name);
            if (i + 1 < n)
                o += sprintf(o, ":%u", f[i].loc.line);
            if (i + 1 < n && f[i].loc.disc)
                o += sprintf(o, ".%u", f[i].loc.disc);
        }
        *o = 0;
    }
    free(f);
    return *out ? 0 : -1;
}

/* The top-level profile of "[ctx]" (CS) or "name"; NULL on no memory or,
 * with *bad_ctx set, a bad context frame. */
static lp_fsamples *head_profile(text_state *s, char *key, int *bad_ctx)
{
    size_t len = strlen(key), leaf = 0;
    lp_fsamples *fs;
    char *ctx;
    int rc;

    if (key[0] != '[' || len < 2 || key[len - 1] != ']') {
        s->nr_flat++;
        return lp_profile_get(s->p, key, NULL);
    }
    key[len - 1] = 0;
    s->nr_cs++;
    s->p->is_cs = 1;
    if ((rc = canon_context(key + 1, &ctx, &leaf))) {
        *bad_ctx = rc > 0;
        return NULL;
    }
    fs = lp_profile_get(s->p, ctx, ctx + leaf);
    free(ctx);
    return fs;
}

/* "name:total:head" or "[ctx]:total:head" */
static int parse_head(text_state *s, char *line, lp_error *err)
{
    char *c2 = strrchr(line, ':'), *c1;
    uint64_t total, head;
    lp_fsamples *fs;
    int bad_ctx = 0;

    if (!c2 || c2 == line)
        return bad(s, err, "expected NAME:TOTAL:HEAD");
    *c2 = 0;
    c1 = strrchr(line, ':');
    if (!c1 || c1 == line || parse_u64(c1 + 1, c2, &total) ||
        parse_u64(c2 + 1, c2 + 1 + strlen(c2 + 1), &head))
        return bad(s, err, "expected NAME:TOTAL:HEAD");
    *c1 = 0;
    if (!(fs = head_profile(s, line, &bad_ctx)))
        return bad_ctx ? bad(s, err, "a context frame without a function "
                                     "name or with an offset beyond 16 bits")
                       : lp_error_set(err, LP_ENOMEM, "%s: out of memory",
                                      s->name);
    if (s->nr_cs && s->nr_flat)
        return bad(s, err, "context-sensitive ([context]) and flat profiles "
                           "mixed in one file");
    fs->total = lp_sat_add(fs->total, total);
    fs->head = lp_sat_add(fs->head, head);
    s->stack[0] = fs;
    s->stack[1] = NULL;
    s->meta_depth = 0;
    return 0;
}

/* "off[.d]": the offset must fit 16 bits, as LLVM's isOffsetLegal asks
 * (LLVM's text reader asks it only without a discriminator, its binary
 * reader always: here always, so that what is read can be written) */
static int parse_loc(const char *p, const char *end, lp_loc *loc)
{
    const char *dot = memchr(p, '.', (size_t)(end - p));
    uint64_t a, b = 0;

    if (parse_u64(p, dot ? dot : end, &a) || a > 0xffffu)
        return -1;
    if (dot && (parse_u64(dot + 1, end, &b) || b > 0xffffffffu))
        return -1;
    loc->line = (uint32_t)a;
    loc->disc = (uint32_t)b;
    return 0;
}

/* "!CFGChecksum: N", "!Attributes: N" or "!Flat" of the profile fs */
static int parse_metadata(text_state *s, lp_fsamples *fs, const char *line,
                          int depth, lp_error *err)
{
    const char *v;
    uint64_t n;

    if (!strcmp(line, "!Flat"))
        return 0; /* for readers only: LLVM keeps the profile too */
    if (!strncmp(line, "!CFGChecksum:", 13)) {
        for (v = line + 13; *v == ' '; v++)
            ;
        if (parse_u64(v, v + strlen(v), &n))
            return bad(s, err, "expected !CFGChecksum: NUMBER");
        fs->checksum = n;
        if (n && depth == 1)
            s->p->is_probe_based = 1;
        return 0;
    }
    if (!strncmp(line, "!Attributes:", 12)) {
        for (v = line + 12; *v == ' '; v++)
            ;
        if (parse_u64(v, v + strlen(v), &n) || n > 0xffffffffu)
            return bad(s, err, "expected !Attributes: NUMBER");
        fs->attrs = (uint32_t)n;
        if (n & 2)
            s->p->is_preinlined = 1; /* ContextShouldBeInlined */
        return 0;
    }
    return bad(s, err, "unknown metadata (expected !CFGChecksum, "
                       "!Attributes or !Flat)");
}

/* the call targets "callee:n ..." of a body record; a callee named
 * twice on one line keeps its last count (LLVM's TargetCountMap) */
static int parse_targets(text_state *s, lp_body_rec *b, char *sp,
                         lp_error *err)
{
    char *tok, *c, **name = NULL;
    uint64_t v, *cnt = NULL;
    size_t n = 0, cap = 0, i;
    void *nv;
    int rc = 0;

    for (tok = strtok_r(sp, " ", &sp); tok && rc == 0;
         tok = strtok_r(NULL, " ", &sp)) {
        c = strrchr(tok, ':');
        if (!c || c == tok || parse_u64(c + 1, c + 1 + strlen(c + 1), &v)) {
            rc = bad(s, err, "expected CALLEE:COUNT");
            break;
        }
        *c = 0;
        for (i = 0; i < n && strcmp(name[i], tok); i++)
            ;
        if (i == n && n == cap) {
            cap = cap ? 2 * cap : 8;
            if ((nv = realloc(name, cap * sizeof *name)))
                name = nv;
            if (nv && (nv = realloc(cnt, cap * sizeof *cnt)))
                cnt = nv;
            if (!nv)
                rc = lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
        }
        if (rc == 0) {
            name[i] = tok;
            cnt[i] = v;
            n += i == n;
        }
    }
    for (i = 0; rc == 0 && i < n; i++)
        if (lp_body_add_target(b, name[i], cnt[i]))
            rc = lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
    free(name);
    free(cnt);
    return rc;
}

/* " off[.d]: N [callee:n]*" or " off[.d]: callee:total" */
static int parse_line(text_state *s, char *line, int depth, lp_error *err)
{
    lp_fsamples *fs = s->stack[depth - 1], *callee;
    char *colon = strchr(line, ':'), *rest, *sp, *c;
    uint64_t n, v;
    lp_body_rec *b;
    lp_loc loc;

    if (!fs)
        return bad(s, err, "indented line without an enclosing profile");
    if (line[0] == '!') {
        s->meta_depth = depth;
        return parse_metadata(s, fs, line, depth, err);
    }
    if (depth == s->meta_depth)
        return bad(s, err, "a sample line after the metadata of its profile");
    if (!colon || parse_loc(line, colon, &loc) || colon[1] != ' ')
        return bad(s, err, "expected OFFSET[.DISC]: ... (offset < 65536)");
    rest = colon + 2;
    sp = strchr(rest, ' ');
    if (parse_u64(rest, sp ? sp : rest + strlen(rest), &n) == 0) {
        if (!(b = lp_fs_body(fs, loc)))
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
        lp_body_add(b, n);
        s->stack[depth] = NULL;
        if (sp)
            *sp++ = 0;
        return sp ? parse_targets(s, b, sp, err) : 0;
    }
    c = strrchr(rest, ':');
    if (!c || c == rest || parse_u64(c + 1, c + 1 + strlen(c + 1), &v))
        return bad(s, err, "expected COUNT or CALLEE:TOTAL");
    *c = 0;
    if (!(callee = lp_fs_callee(fs, loc, rest)))
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
    callee->total = lp_sat_add(callee->total, v);
    s->stack[depth] = callee;
    s->meta_depth = 0;
    return 0;
}

lp_profile *lp_profile_read_text(FILE *f, const char *name, lp_error *err)
{
    text_state s = {.name = name};
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int depth, rc = 0;

    if (!(s.p = lp_profile_new())) {
        lp_error_set(err, LP_ENOMEM, "%s: out of memory", name);
        return NULL;
    }
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        s.lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        for (depth = 0; line[depth] == ' '; depth++)
            ;
        if (!line[depth] || line[depth] == '#')
            continue;
        if ((size_t)len != strlen(line))
            rc = bad(&s, err, "NUL byte in a text profile");
        else if (depth >= MAX_DEPTH - 1)
            rc = bad(&s, err, "nesting too deep");
        else if (depth == 0)
            rc = parse_head(&s, line, err);
        else
            rc = parse_line(&s, line + depth, depth, err);
    }
    free(line);
    if (rc == 0 && ferror(f))
        rc = lp_error_set(err, LP_EIO, "%s: read error", name);
    if (rc) {
        lp_profile_free(s.p);
        return NULL;
    }
    return s.p;
}
