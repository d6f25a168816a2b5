/*
 * parse.c - Breakpad .sym text -> lp_bp_module.
 * Owns the record syntax (MODULE, INFO, FILE, INLINE_ORIGIN, FUNC, INLINE,
 * line records, PUBLIC; STACK records are skipped) and its error messages
 * with line numbers; indexing and lookup are module.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lbr2prof/breakpad.h"

/* The state of one parse: where we are, for messages. */
typedef struct parse_ctx {
    const char *what;
    size_t lineno;
    lp_bp_module *m;
    lp_error *err;
} parse_ctx;

static int fail(parse_ctx *c, const char *rec, const char *expected)
{
    return lp_error_set(c->err, LP_EFORMAT, "%s:%zu: %s: expected %s", c->what,
                        c->lineno, rec, expected);
}

/* Field separators: space, tab, and CR (the writer turns CR into a space,
 * so reading and writing agree). */
static int is_sep(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* Next space-separated token of *s (NUL-terminated in place), or NULL. */
static char *token(char **s)
{
    char *t = *s, *e;

    while (is_sep(*t))
        t++;
    if (!*t)
        return NULL;
    e = t;
    while (*e && !is_sep(*e))
        e++;
    if (*e)
        *e++ = '\0';
    *s = e;
    return t;
}

/* The rest of the line after separating spaces (may be empty). */
static char *rest(char **s)
{
    char *t = *s;

    while (is_sep(*t))
        t++;
    *s = t + strlen(t);
    return t;
}

static int parse_u64(const char *t, int base, uint64_t *out)
{
    char *end;

    if (!t || !*t || *t == '-' || *t == '+' || *t == ' ')
        return -1;
    errno = 0;
    *out = strtoull(t, &end, base);
    return errno || *end ? -1 : 0;
}

static int parse_u32(const char *t, uint32_t *out)
{
    uint64_t v;

    if (parse_u64(t, 10, &v) < 0 || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int rec_module(parse_ctx *c, char *s)
{
    const char *exp = "'MODULE <os> <arch> <debug_id> <name>'";
    char *os = token(&s), *arch = token(&s), *id = token(&s), *name = rest(&s);

    if (!os || !arch || !id || !*name)
        return fail(c, "MODULE", exp);
    c->m = lp_bp_module_new(os, arch, id, name, c->err);
    return c->m ? 0 : -1;
}

static int rec_info(parse_ctx *c, char *s)
{
    char *kind = token(&s), *id, *file;

    if (!kind || strcmp(kind, "CODE_ID") != 0)
        return 0; /* INFO GENERATOR etc. carry nothing we use */
    if (!(id = token(&s)))
        return fail(c, "INFO CODE_ID", "'INFO CODE_ID <code_id> [<code_file>]'");
    file = rest(&s);
    return lp_bp_set_code_id(c->m, id, *file ? file : NULL, c->err);
}

static int rec_numbered(parse_ctx *c, char *s, int origin)
{
    const char *rec = origin ? "INLINE_ORIGIN" : "FILE";
    char *n = token(&s), *name;
    uint32_t num;

    if (parse_u32(n, &num) < 0)
        return fail(c, rec, origin ? "'INLINE_ORIGIN <number> <name>'"
                                   : "'FILE <number> <name>'");
    name = rest(&s);
    return origin ? lp_bp_add_origin(c->m, num, name, c->err)
                  : lp_bp_add_file(c->m, num, name, c->err);
}

/* Consume an optional "m" token; returns 1 if present. */
static int multiple_flag(char **s)
{
    char *t = *s;

    while (is_sep(*t))
        t++;
    if (t[0] == 'm' && is_sep(t[1])) {
        *s = t + 2;
        return 1;
    }
    return 0;
}

static int rec_func(parse_ctx *c, char *s)
{
    int mult = multiple_flag(&s);
    uint64_t addr, size, param;

    if (parse_u64(token(&s), 16, &addr) < 0 || parse_u64(token(&s), 16, &size) < 0 ||
        parse_u64(token(&s), 16, &param) < 0)
        return fail(c, "FUNC", "'FUNC [m] <addr> <size> <param_size> <name>' (hex numbers)");
    return lp_bp_add_func(c->m, addr, size, param, rest(&s), mult, c->err);
}

static int rec_public(parse_ctx *c, char *s)
{
    int mult = multiple_flag(&s);
    uint64_t addr, param;

    if (parse_u64(token(&s), 16, &addr) < 0 || parse_u64(token(&s), 16, &param) < 0)
        return fail(c, "PUBLIC", "'PUBLIC [m] <addr> <param_size> <name>' (hex numbers)");
    return lp_bp_add_public(c->m, addr, param, rest(&s), mult, c->err);
}

static int rec_inline(parse_ctx *c, char *s)
{
    const char *exp = "'INLINE <depth> <call_line> <call_file> <origin> <addr> <size> [<addr> <size>...]'";
    lp_bp_inline in;
    char *t;
    int nranges = 0;

    if (!c->m->nfuncs)
        return fail(c, "INLINE", "a FUNC record before it");
    if (parse_u32(token(&s), &in.depth) < 0 || parse_u32(token(&s), &in.call_line) < 0 ||
        parse_u32(token(&s), &in.call_file) < 0 || parse_u32(token(&s), &in.origin) < 0)
        return fail(c, "INLINE", exp);
    while ((t = token(&s))) {
        if (parse_u64(t, 16, &in.addr) < 0 || parse_u64(token(&s), 16, &in.size) < 0)
            return fail(c, "INLINE", exp);
        if (lp_bp_add_inline(c->m, &in, c->err) < 0)
            return -1;
        nranges++;
    }
    return nranges ? 0 : fail(c, "INLINE", exp);
}

static int rec_line(parse_ctx *c, char *s)
{
    const char *exp = "a record keyword or a line record '<addr> <size> <line> <filenum>'";
    lp_bp_line l;
    char *ln;
    long long v;

    if (parse_u64(token(&s), 16, &l.addr) < 0 || parse_u64(token(&s), 16, &l.size) < 0)
        return fail(c, "line record", exp);
    ln = token(&s);
    /* Some producers write negative line numbers; treat them as unknown. */
    if (!ln || sscanf(ln, "%lld", &v) != 1 || parse_u32(token(&s), &l.file) < 0 ||
        token(&s))
        return fail(c, "line record", exp);
    l.line = v > 0 && v <= UINT32_MAX ? (uint32_t)v : 0;
    if (!c->m->nfuncs)
        return fail(c, "line record", "a FUNC record before it");
    return lp_bp_add_line(c->m, &l, c->err);
}

/* Is the first word of s the keyword kw? Then skip it. */
static int keyword(char **s, const char *kw)
{
    size_t n = strlen(kw);

    if (strncmp(*s, kw, n) != 0 || ((*s)[n] && !is_sep((*s)[n])))
        return 0;
    *s += n;
    return 1;
}

static int parse_record(parse_ctx *c, char *s)
{
    while (is_sep(*s))
        s++;
    if (!c->m) {
        if (!keyword(&s, "MODULE"))
            return fail(c, "first line", "'MODULE <os> <arch> <debug_id> <name>'");
        return rec_module(c, s);
    }
    if (!*s)
        return 0;
    if (keyword(&s, "FUNC")) return rec_func(c, s);
    if (keyword(&s, "FILE")) return rec_numbered(c, s, 0);
    if (keyword(&s, "INLINE_ORIGIN")) return rec_numbered(c, s, 1);
    if (keyword(&s, "INLINE")) return rec_inline(c, s);
    if (keyword(&s, "PUBLIC")) return rec_public(c, s);
    if (keyword(&s, "INFO")) return rec_info(c, s);
    if (keyword(&s, "STACK")) return 0;
    if (keyword(&s, "MODULE")) return fail(c, "MODULE", "only one MODULE record, on line 1");
    return rec_line(c, s);
}

/* Feed every line of text to parse_record (a copy, NUL-terminated). */
static int parse_lines(parse_ctx *c, const char *text, size_t len)
{
    size_t pos = 0, n, cap = 0;
    const char *nl;
    char *buf = NULL, *nb;
    int r = 0;

    while (r == 0 && pos < len) {
        nl = memchr(text + pos, '\n', len - pos);
        n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        c->lineno++;
        if (n + 1 > cap) {
            if (!(nb = realloc(buf, cap = n + 64))) {
                r = lp_error_set(c->err, LP_ENOMEM, "%s: out of memory", c->what);
                break;
            }
            buf = nb;
        }
        memcpy(buf, text + pos, n);
        buf[n] = '\0';
        if (n && buf[n - 1] == '\r') /* CRLF line ends */
            buf[n - 1] = '\0';
        if (memchr(text + pos, '\0', n))
            r = fail(c, "line", "text without NUL bytes");
        else
            r = parse_record(c, buf);
        pos += n + 1;
    }
    free(buf);
    return r;
}

lp_bp_module *lp_bp_parse(const char *text, size_t len, const char *what,
                          lp_error *err)
{
    parse_ctx c = {what ? what : "<sym>", 0, NULL, err};

    if (parse_lines(&c, text, len) < 0)
        goto fail;
    if (!c.m) {
        lp_error_set(err, LP_EFORMAT, "%s: empty file (expected a MODULE line)", c.what);
        goto fail;
    }
    if (lp_bp_finish(c.m, err) < 0)
        goto fail;
    return c.m;
fail:
    lp_bp_free(c.m);
    return NULL;
}

lp_bp_module *lp_bp_parse_file(const char *path, lp_error *err)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    char *text;
    size_t got;
    lp_bp_module *m;

    if (!f) {
        lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fileno(f), &st) < 0 || !S_ISREG(st.st_mode)) {
        fclose(f);
        lp_error_set(err, LP_EIO, "%s: not a regular file", path);
        return NULL;
    }
    text = malloc((size_t)st.st_size + 1);
    if (!text) {
        fclose(f);
        lp_error_set(err, LP_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    got = fread(text, 1, (size_t)st.st_size, f);
    fclose(f);
    m = lp_bp_parse(text, got, path, err);
    free(text);
    return m;
}
