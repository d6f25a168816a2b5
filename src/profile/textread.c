/*
 * textread.c - reads the LLVM sample profile text format into the model
 * (what SampleProfileReaderText accepts for flat and CS profiles; of the
 * metadata !Attributes and !CFGChecksum are kept: a checksum on a
 * top-level profile makes the profile probe-based). Used
 * to re-read our own output and llvm-profgen's in tests and for
 * --llvm-sample-profile inputs.
 * Owns parsing only; errors name the file and line.
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

/* "name:total:head" or "[ctx]:total:head" */
static int parse_head(text_state *s, char *line, lp_error *err)
{
    char *c2 = strrchr(line, ':'), *c1;
    uint64_t total, head;
    lp_fsamples *fs;

    if (!c2 || c2 == line)
        return bad(s, err, "expected NAME:TOTAL:HEAD");
    *c2 = 0;
    c1 = strrchr(line, ':');
    if (!c1 || parse_u64(c1 + 1, c2, &total) ||
        parse_u64(c2 + 1, c2 + 1 + strlen(c2 + 1), &head))
        return bad(s, err, "expected NAME:TOTAL:HEAD");
    *c1 = 0;
    if (line[0] == '[' && c1 > line + 1 && c1[-1] == ']') {
        char *leaf;
        c1[-1] = 0;
        s->p->is_cs = 1;
        leaf = strrchr(line + 1, '@');
        leaf = leaf ? leaf + 2 : line + 1;
        fs = lp_profile_get(s->p, line + 1, leaf);
    } else {
        fs = lp_profile_get(s->p, line, NULL);
    }
    if (!fs)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
    fs->total = lp_sat_add(fs->total, total);
    fs->head = lp_sat_add(fs->head, head);
    s->stack[0] = fs;
    s->stack[1] = NULL;
    return 0;
}

static int parse_loc(const char *p, const char *end, lp_loc *loc)
{
    const char *dot = memchr(p, '.', (size_t)(end - p));
    uint64_t a, b = 0;

    if (parse_u64(p, dot ? dot : end, &a) || a > 0xffffffffu)
        return -1;
    if (dot && (parse_u64(dot + 1, end, &b) || b > 0xffffffffu))
        return -1;
    loc->line = (uint32_t)a;
    loc->disc = (uint32_t)b;
    return 0;
}

/* " off[.d]: N [callee:n]*" or " off[.d]: callee:total" */
static int parse_line(text_state *s, char *line, int depth, lp_error *err)
{
    lp_fsamples *fs = s->stack[depth - 1], *callee;
    char *colon = strchr(line, ':'), *rest, *tok, *sp, *c;
    uint64_t n, v;
    lp_body_rec *b;
    lp_loc loc;

    if (!fs)
        return bad(s, err, "indented line without an enclosing profile");
    if (strncmp(line, "!Attributes:", 12) == 0) {
        const char *v = line + 12;
        while (*v == ' ')
            v++;
        if (parse_u64(v, v + strlen(v), &n) || n > 0xffffffffu)
            return bad(s, err, "expected !Attributes: NUMBER");
        fs->attrs = (uint32_t)n;
        if (n & 2)
            s->p->is_preinlined = 1; /* ContextShouldBeInlined */
        return 0;
    }
    if (strncmp(line, "!CFGChecksum:", 13) == 0) {
        const char *v = line + 13;
        while (*v == ' ')
            v++;
        if (parse_u64(v, v + strlen(v), &n))
            return bad(s, err, "expected !CFGChecksum: NUMBER");
        fs->checksum = n;
        if (n && depth == 1)
            s->p->is_probe_based = 1;
        return 0;
    }
    if (line[0] == '!')
        return 0; /* other metadata we do not keep */
    if (!colon || parse_loc(line, colon, &loc) || colon[1] != ' ')
        return bad(s, err, "expected OFFSET[.DISC]: ...");
    rest = colon + 2;
    sp = strchr(rest, ' ');
    if (parse_u64(rest, sp ? sp : rest + strlen(rest), &n) == 0) {
        if (!(b = lp_fs_body(fs, loc)))
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
        lp_body_add(b, n);
        s->stack[depth] = NULL;
        if (sp)
            *sp++ = 0;
        for (tok = sp ? strtok_r(sp, " ", &sp) : NULL; tok;
             tok = strtok_r(NULL, " ", &sp)) {
            c = strrchr(tok, ':');
            if (!c || c == tok || parse_u64(c + 1, c + 1 + strlen(c + 1), &v))
                return bad(s, err, "expected CALLEE:COUNT");
            *c = 0;
            if (lp_body_add_target(b, tok, v))
                return lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
        }
        return 0;
    }
    c = strrchr(rest, ':');
    if (!c || c == rest || parse_u64(c + 1, c + 1 + strlen(c + 1), &v))
        return bad(s, err, "expected COUNT or CALLEE:TOTAL");
    *c = 0;
    if (!(callee = lp_fs_callee(fs, loc, rest)))
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", s->name);
    callee->total = lp_sat_add(callee->total, v);
    s->stack[depth] = callee;
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
        if (len == 0 || line[0] == '#')
            continue;
        for (depth = 0; line[depth] == ' '; depth++)
            ;
        if (depth >= MAX_DEPTH - 1)
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
