/*
 * rawprof.c - llvm-profgen's unsymbolized ("raw") profile, the output of
 * --skip-symbolization and the input of --unsymbolized-profile:
 *     <number of ranges>\n  START-END:COUNT\n ...
 *     <number of branches>\n SRC->DST:COUNT\n ...
 * hex without 0x, relative to a base, sorted by address pair. Flat (LBR)
 * profiles only: a "[context]" header is rejected as unsupported. Owns the
 * text format; the counters live in counters.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/flat.h"
#include "util/lines.h"

/* v in [p, ...) as lowercase hex; the end. */
static char *put_hex(char *p, uint64_t v)
{
    char t[16];
    int n = 0;

    do {
        t[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    while (n)
        *p++ = t[--n];
    return p;
}

static char *put_dec(char *p, uint64_t v)
{
    char t[20];
    int n = 0;

    do {
        t[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        *p++ = t[--n];
    return p;
}

/* "<indent>N\n" then "<indent>A<sep>B:COUNT\n" for each pair. */
static void write_pairs(FILE *f, long n, const lp_addr_pair_count *v,
                        uint64_t base, const char *sep, const char *indent)
{
    char line[128], *p;
    size_t il = strlen(indent), sl = strlen(sep);
    long i;

    fprintf(f, "%s%ld\n", indent, n);
    for (i = 0; i < n; i++) {
        memcpy(line, indent, il);
        p = put_hex(line + il, v[i].a - base);
        memcpy(p, sep, sl);
        p = put_hex(p + sl, v[i].b - base);
        *p++ = ':';
        p = put_dec(p, v[i].count);
        *p++ = '\n';
        fwrite(line, 1, (size_t)(p - line), f);
    }
}

int lp_rawprof_write_blocks(FILE *f, const lp_counters *c, uint64_t base,
                            const char *indent)
{
    const lp_addr_pair_count *r, *b;
    long nr = lp_counters_ranges_view(c, &r), nb = lp_counters_branches_view(c, &b);

    write_pairs(f, nr, r, base, "-", indent);
    write_pairs(f, nb, b, base, "->", indent);
    return ferror(f) ? -1 : 0;
}

int lp_rawprof_write(FILE *f, const lp_counters *c, uint64_t base,
                     lp_error *err)
{
    if (lp_rawprof_write_blocks(f, c, base, ""))
        return lp_error_set(err, LP_EIO, "raw profile: write error");
    return 0;
}

typedef struct raw_reader {
    FILE *f;
    const char *name;
    unsigned long lineno;
    char *line;
    size_t cap;
} raw_reader;

static int bad(raw_reader *r, lp_error *err, const char *what)
{
    return lp_error_set(err, LP_EFORMAT, "%s: Invalid raw profile at line %lu: %s",
                        r->name, r->lineno, what);
}

/* 1: a line, 0: EOF */
static int next_line(raw_reader *r)
{
    return lp_next_line(r->f, &r->line, &r->cap, &r->lineno);
}

static int parse_num(const char *s, const char *end, int base, uint64_t *v)
{
    char *e;

    if (s == end || !((base == 10 && s[0] >= '0' && s[0] <= '9') ||
                      (base == 16 && strchr("0123456789abcdefABCDEF", s[0]))))
        return -1;
    errno = 0;
    *v = strtoull(s, &e, base);
    return (e != end || errno) ? -1 : 0;
}

static int read_block(raw_reader *r, lp_counters *c, uint64_t base,
                      const char *sep, lp_error *err)
{
    uint64_t n, a, b, cnt;
    char *p, *colon, *s;
    int rc;

    if (!next_line(r))
        return bad(r, err, "unexpected end of file");
    if (parse_num(r->line, r->line + strlen(r->line), 10, &n))
        return bad(r, err, "expected a number of entries");
    while (n--) {
        if (!next_line(r))
            return bad(r, err, "unexpected end of file");
        for (p = r->line; *p == ' ' || *p == '\t'; p++)
            ;
        colon = strchr(p, ':');
        s = strstr(p, sep);
        if (!colon || !s || s > colon || parse_num(p, s, 16, &a) ||
            parse_num(s + strlen(sep), colon, 16, &b) ||
            parse_num(colon + 1, colon + 1 + strlen(colon + 1), 10, &cnt))
            return bad(r, err, strcmp(sep, "-") == 0 ? "expected START-END:COUNT"
                                                    : "expected SRC->DST:COUNT");
        rc = sep[1] ? lp_counters_add_branch(c, a + base, b + base, cnt)
                    : lp_counters_add_range(c, a + base, b + base, cnt);
        if (rc)
            return lp_error_set(err, LP_ENOMEM, "raw profile: out of memory");
    }
    return 0;
}

int lp_rawprof_read(FILE *f, const char *name, uint64_t base, lp_counters *c,
                    lp_error *err)
{
    raw_reader r = {f, name, 0, NULL, 0};
    int ch, rc = 0;

    while (rc == 0 && (ch = fgetc(f)) != EOF) {
        ungetc(ch, f);
        if (ch == '[') {
            next_line(&r);
            rc = lp_error_set(err, LP_EUNSUPP, "%s:%lu: context-sensitive "
                              "unsymbolized profiles are not supported yet",
                              name, r.lineno);
            break;
        }
        rc = read_block(&r, c, base, "-", err);
        if (rc == 0)
            rc = read_block(&r, c, base, "->", err);
    }
    free(r.line);
    return rc;
}
