/*
 * rawread.c - llvm-profgen 19's UnsymbolizedProfileReader for the
 * context-sensitive unsymbolized profile: optional "[ctx]" header lines,
 * each followed by a range block and a branch block (counts in decimal,
 * addresses in hex relative to a base, any leading whitespace), read into
 * an lp_ctxcount. As strict as llvm-profgen: the first line that does not
 * fit is an error naming it. Also the body of lbr2prof's mergeable raw
 * profile: the same blocks with '#section' and '#leaf-inlined' lines (the
 * header before them is src/rawmerge's). Owns this text format's parsing
 * only; the writer is lp_ctxcount_write_raw, the flat-only reader
 * src/flat/rawprof.c.
 */
#include <stdlib.h>
#include <string.h>

#include "context/cs_internal.h"
#include "util/lines.h"

typedef struct raw_in {
    FILE *f;
    const char *name;
    unsigned long lineno;
    char *line;
    size_t cap;
    bool eof;
    lp_cs_raw_opts *o;          /* lbr2prof's '#' lines; NULL: none */
    int bin;                    /* the blocks' binary */
    uint64_t base;              /* and its base */
    bool attr_inlined, attr_mixed; /* for the next context */
    bool addrs;                 /* address contexts ("[0x7f4 @ 0x7bf]",
                                   probe binaries) */
} raw_in;

/* TraceStream::advance: the next line without its '\n' */
static void advance(raw_in *r)
{
    r->eof = !lp_next_line(r->f, &r->line, &r->cap, &r->lineno);
}

static int invalid(raw_in *r, lp_error *err)
{
    if (r->eof)
        return lp_error_set(err, LP_EFORMAT, "%s: Invalid raw profile!",
                            r->name);
    return lp_error_set(err, LP_EFORMAT, "%s: Invalid raw profile at line %lu: %s",
                        r->name, r->lineno, r->line);
}

static const char *ltrim(const char *s)
{
    while (*s && strchr(" \t\n\v\f\r", *s))
        s++;
    return s;
}

static int read_number(raw_in *r, uint64_t *n, lp_error *err)
{
    const char *s;

    if (r->eof)
        return invalid(r, err);
    s = ltrim(r->line);
    if (cs_as_u64(s, s + strlen(s), 10, n))
        return invalid(r, err);
    advance(r);
    return 0;
}

/* One "A<sep>B:COUNT" line: split at the first ':', then at sep. */
static int read_pair(raw_in *r, const char *sep, uint64_t base,
                     lp_counters *c, lp_error *err)
{
    const char *s, *colon, *mid;
    uint64_t a, b, n;
    int rc;

    if (r->eof)
        return invalid(r, err);
    s = ltrim(r->line);
    colon = strchr(s, ':');
    if (!colon || cs_as_u64(colon + 1, colon + 1 + strlen(colon + 1), 10, &n))
        return invalid(r, err);
    mid = strstr(s, sep);
    if (!mid || mid >= colon || cs_as_u64(s, mid, 16, &a) ||
        cs_as_u64(mid + strlen(sep), colon, 16, &b))
        return invalid(r, err);
    if (r->o && r->o->weight > 1 && __builtin_mul_overflow(n, r->o->weight, &n))
        return lp_error_set(err, LP_EFORMAT, "%s: line %lu: the count times "
                            "the weight overflows", r->name, r->lineno);
    rc = sep[1] ? lp_counters_add_branch(c, a + base, b + base, n)
                : lp_counters_add_range(c, a + base, b + base, n);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", r->name);
    advance(r);
    return 0;
}

static int read_counters(raw_in *r, uint64_t base, lp_counters *c,
                         lp_error *err)
{
    static const char *const seps[2] = {"-", "->"};
    uint64_t n;
    int k;

    for (k = 0; k < 2; k++) {
        if (read_number(r, &n, err))
            return -1;
        while (n--)
            if (read_pair(r, seps[k], base, c, err))
                return -1;
    }
    return 0;
}

/* createCtxVectorFromStr on the header line "[...]": the text between the
 * first and the last character, split at " @ ". */
static int parse_header(const char *line, lp_ctx_frame **frames, size_t *n,
                        char **buf)
{
    size_t len = strlen(line), cnt = 0, cap = 4;
    char *s, *sep;

    *n = 0;
    *buf = strndup(line + 1, len >= 2 ? len - 2 : 0);
    *frames = malloc(cap * sizeof **frames);
    if (!*buf || !*frames)
        return -1;
    for (s = *buf; *s; s = sep ? sep + 3 : s + strlen(s)) {
        lp_ctx_frame *nf;
        if ((sep = strstr(s, " @ ")))
            *sep = 0;
        if (cnt == cap) {
            cap *= 2;
            if (!(nf = realloc(*frames, cap * sizeof *nf)))
                return -1;
            *frames = nf;
        }
        cs_decode_frame(s, &(*frames)[cnt++]);
        if (!sep)
            break;
    }
    *n = cnt;
    return 0;
}

/* An address context header "[0x7f4 @ 0x7bf]" (empty: "[]"). */
static int parse_addrs(raw_in *r, int bin, uint64_t base, uint64_t **a,
                       size_t *n, lp_error *err)
{
    const char *s = r->line + 1, *end = r->line + strlen(r->line), *sep;
    size_t cap = 0;
    uint64_t v;

    *n = 0;
    if (end <= s || end[-1] != ']')
        return invalid(r, err);
    end--;
    while (s < end) {
        sep = strstr(s, " @ ");
        if (!sep || sep > end)
            sep = end;
        if (sep - s < 3 || s[0] != '0' || s[1] != 'x' ||
            cs_as_u64(s + 2, sep, 16, &v))
            return invalid(r, err);
        if (*n == cap) {
            uint64_t *na = realloc(*a, (cap = cap ? 2 * cap : 8) * sizeof *na);
            if (!na)
                return lp_error_set(err, LP_ENOMEM, "%s: out of memory", r->name);
            *a = na;
        }
        if (LP_CTX_IS_XBIN(v))              /* another binary's address */
            v = LP_CTX_ADDR(LP_CTX_XBIN_BIN(v), LP_CTX_XBIN_VADDR(v));
        else if (LP_CTX_ADDR_BIN(v) == 0)   /* this binary's, minus base */
            v = LP_CTX_ADDR(bin, v + base);
        if (r->o && LP_CTX_ADDR_BIN(v) >= r->o->nbins)
            return invalid(r, err);
        (*a)[(*n)++] = v;
        s = sep == end ? end : sep + 3;
    }
    return 0;
}

/* An lbr2prof '#' line: "#section N" or "#leaf-inlined V[ mixed]". */
static int hash_line(raw_in *r, lp_error *err)
{
    const char *s = r->line;
    char *end;
    unsigned long v;

    if (strncmp(s, "#section ", 9) == 0) {
        v = strtoul(s + 9, &end, 10);
        if (end == s + 9 || *end || v >= r->o->nbins)
            return invalid(r, err);
        r->bin = (int)v;
        r->base = r->o->bases[v];
    } else if (!strcmp(s, "#leaf-inlined 0 mixed") ||
               !strcmp(s, "#leaf-inlined 1 mixed") || !strcmp(s, "#leaf-inlined 1")) {
        r->attr_inlined = s[14] == '1';
        r->attr_mixed = s[15] != 0;
    } else {
        return invalid(r, err);
    }
    advance(r);
    return 0;
}

/* The attributes read for a context into its entry (new: as read; else
 * inlined if either, mixed if either or they differ). */
static void set_attrs(raw_in *r, lp_ctx_entry *e, bool is_new)
{
    if (is_new) {
        e->was_leaf_inlined = r->attr_inlined;
        e->leaf_inlined_mixed = r->attr_mixed;
    } else {
        e->leaf_inlined_mixed |= r->attr_mixed || e->was_leaf_inlined != r->attr_inlined;
        e->was_leaf_inlined |= r->attr_inlined;
        r->o->mixed_joined += e->leaf_inlined_mixed;
    }
    r->attr_inlined = r->attr_mixed = false;
}

static int read_block(raw_in *r, lp_ctxcount *cc, bool *is_cs, lp_error *err)
{
    lp_ctx_frame *frames = NULL;
    uint64_t *addrs = NULL;
    lp_ctx_entry *e = NULL;
    char *buf = NULL;
    size_t n = 0, had = lp_ctxcount_size(cc);
    int rc = 0;

    while (r->o && !r->eof && r->line[0] == '#')
        if (hash_line(r, err))
            return -1;
    if (r->eof)
        return r->attr_inlined || r->attr_mixed ? invalid(r, err) : 0;
    if (r->line[0] == '[' && r->addrs) {
        *is_cs = true;
        if ((rc = parse_addrs(r, r->bin, r->base, &addrs, &n, err)) == 0)
            advance(r);
    } else if (r->line[0] == '[') {
        *is_cs = true;
        if (parse_header(r->line, &frames, &n, &buf))
            rc = lp_error_set(err, LP_ENOMEM, "%s: out of memory", r->name);
        advance(r);
    }
    if (rc == 0 && r->addrs &&
        !(e = lp_ctxcount_get_addrs(cc, r->bin, addrs, n, err)))
        rc = -1;
    else if (rc == 0 && !r->addrs &&
             !(e = lp_ctxcount_get(cc, r->bin, frames, n, false, err)))
        rc = -1;
    if (rc == 0 && r->o)
        set_attrs(r, e, lp_ctxcount_size(cc) > had);
    if (rc == 0)
        rc = read_counters(r, r->base, e->counters, err);
    free(frames);
    free(addrs);
    free(buf);
    return rc;
}

static int read_all(raw_in *r, lp_ctxcount *cc, bool *is_cs, lp_error *err)
{
    int rc = 0;

    *is_cs = false;
    advance(r);
    while (rc == 0 && !r->eof)
        rc = read_block(r, cc, is_cs, err);
    if (rc == 0 && ferror(r->f))
        rc = lp_error_set(err, LP_EIO, "%s: read error", r->name);
    free(r->line);
    return rc;
}

int lp_cs_raw_read(FILE *f, const char *name, int bin, uint64_t base,
                   lp_ctxcount *cc, bool *is_cs, lp_error *err)
{
    raw_in r = {.f = f, .name = name, .bin = bin, .base = base};

    return read_all(&r, cc, is_cs, err);
}

int lp_cs_raw_read_addrs(FILE *f, const char *name, int bin, uint64_t base,
                         lp_ctxcount *cc, bool *is_cs, lp_error *err)
{
    raw_in r = {.f = f, .name = name, .bin = bin, .base = base, .addrs = true};

    return read_all(&r, cc, is_cs, err);
}

int lp_cs_raw_read_body(FILE *f, const char *name, lp_cs_raw_opts *o,
                        lp_ctxcount *cc, bool *is_cs, lp_error *err)
{
    raw_in r = {.f = f, .name = name, .lineno = o->lineno, .o = o,
                .addrs = o->addrs};

    if (o->nbins == 0)
        return lp_error_set(err, LP_EUSAGE, "%s: no binary", name);
    r.base = o->bases[0];
    return read_all(&r, cc, is_cs, err);
}
