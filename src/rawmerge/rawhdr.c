/*
 * rawhdr.c - lbr2prof's mergeable raw profile as a file: the '#' header
 * (version and kind, base rule, counting options, binaries, statistics),
 * the sections of a whole profile, and whether two headers describe the
 * same binaries, bases and options. Owns the header's syntax; the blocks
 * of counts are llvm-profgen's format (src/context/rawread.c reads them,
 * lp_ctxcount_write_raw_attrs and lp_rawprof_write write them), and
 * summing profiles is rawmerge.c's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "lbr2prof/csprofile.h"
#include "lbr2prof/rawmerge.h"
#include "util/lines.h"

static const char *const base_names[] = {"preferred", "first-loadable", "none"};

/* The statistics' names in "#stats", in order. */
static const struct {
    const char *name;
    size_t off;
} stat_fields[] = {
    {"traces", offsetof(lp_raw_stats, traces)},
    {"samples", offsetof(lp_raw_stats, samples)},
    {"used", offsetof(lp_raw_stats, used)},
    {"hybrid", offsetof(lp_raw_stats, hybrid)},
    {"lbr-only", offsetof(lp_raw_stats, lbr_only)},
    {"lost", offsetof(lp_raw_stats, lost)},
    {"repaired", offsetof(lp_raw_stats, repaired)},
    {"truncated", offsetof(lp_raw_stats, truncated)},
    {"external", offsetof(lp_raw_stats, external)},
    {"contextless", offsetof(lp_raw_stats, contextless)},
};
#define NSTATS (sizeof stat_fields / sizeof stat_fields[0])

static uint64_t *stat_at(lp_raw_stats *s, size_t i)
{
    return (uint64_t *)((char *)s + stat_fields[i].off);
}

const char *lp_raw_base_name(lp_raw_base b)
{
    return (unsigned)b < 3 ? base_names[b] : "?";
}

const char *lp_rawhdr_kind(const lp_rawhdr *h)
{
    return !h->cs ? "flat" : h->addrs ? "probe" : "cs";
}

void lp_rawhdr_free(lp_rawhdr *h)
{
    size_t i;

    for (i = 0; i < h->nbins; i++)
        free(h->bins[i].path);
    free(h->bins);
    free(h->options);
    memset(h, 0, sizeof *h);
}

int lp_rawhdr_add_binary(lp_rawhdr *h, const char *path, const uint8_t *id,
                         size_t nid, uint64_t base, lp_error *err)
{
    lp_raw_binary *nv = realloc(h->bins, (h->nbins + 1) * sizeof *nv), *b;

    if (!nv)
        return lp_error_set(err, LP_ENOMEM, "raw header: out of memory");
    h->bins = nv;
    b = &nv[h->nbins];
    memset(b, 0, sizeof *b);
    if (!(b->path = strdup(path)))
        return lp_error_set(err, LP_ENOMEM, "raw header: out of memory");
    b->build_id_size = nid > sizeof b->build_id ? sizeof b->build_id : nid;
    if (b->build_id_size)
        memcpy(b->build_id, id, b->build_id_size);
    b->base = base;
    h->nbins++;
    return 0;
}

/* ---- writing ------------------------------------------------------------ */

static void put_id(FILE *f, const lp_raw_binary *b)
{
    size_t i;

    if (b->build_id_size == 0)
        fputc('-', f);
    for (i = 0; i < b->build_id_size; i++)
        fprintf(f, "%02x", b->build_id[i]);
}

int lp_rawhdr_write(FILE *f, const lp_rawhdr *h, lp_error *err)
{
    size_t i;

    fprintf(f, "#lbr2prof-raw %d %s\n#base %s\n#options %s\n", LP_RAW_VERSION,
            lp_rawhdr_kind(h), lp_raw_base_name(h->base),
            h->options ? h->options : "");
    for (i = 0; i < h->nbins; i++) {
        fprintf(f, "#binary %zu ", i);
        put_id(f, &h->bins[i]);
        fprintf(f, " 0x%" PRIx64 " %s\n", h->bins[i].base, h->bins[i].path);
    }
    fputs("#stats", f);
    for (i = 0; i < NSTATS; i++)
        fprintf(f, " %s=%" PRIu64, stat_fields[i].name,
                *stat_at((lp_raw_stats *)&h->stats, i));
    fputc('\n', f);
    if (ferror(f))
        return lp_error_set(err, LP_EIO, "raw profile: write error");
    return 0;
}

/* Binary 0's flat counters: `flat`, else cc's empty context. */
static int write_flat(FILE *f, const lp_ctxcount *cc, const lp_counters *flat,
                      uint64_t base, lp_error *err)
{
    const lp_ctx_entry *e = flat || !cc ? NULL : lp_ctxcount_find(cc, 0, "");

    if (!flat && e)
        flat = e->counters;
    if (!flat) {
        fputs("0\n0\n", f);
        return 0;
    }
    return lp_rawprof_write(f, flat, base, err);
}

int lp_raw_write(FILE *f, const lp_rawhdr *h, const lp_ctxcount *cc,
                 const lp_counters *flat, lp_error *err)
{
    size_t i;
    int rc = lp_rawhdr_write(f, h, err);

    for (i = 0; i < h->nbins && rc == 0; i++) {
        fprintf(f, "#section %zu\n", i);
        if (h->cs && cc)
            rc = lp_ctxcount_write_raw_attrs(f, cc, (int)i, h->bins[i].base, err);
        else if (!h->cs && i == 0)
            rc = write_flat(f, cc, flat, h->bins[0].base, err);
    }
    return rc;
}

/* ---- reading ------------------------------------------------------------ */

typedef struct hdr_in {
    FILE *f;
    const char *name;
    unsigned long lineno;
    char *line;
    size_t cap;
} hdr_in;

static int bad(const hdr_in *r, lp_error *err, const char *what)
{
    return lp_error_set(err, LP_EFORMAT, "%s: line %lu: %s: %s", r->name,
                        r->lineno, what, r->line ? r->line : "");
}

/* The next line without its '\n'; 0 at the end. */
static int next_line(hdr_in *r)
{
    return lp_next_line(r->f, &r->line, &r->cap, &r->lineno);
}

static int parse_u64(const char *s, int radix, uint64_t *v)
{
    char *end;

    if (!*s || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    *v = strtoull(s, &end, radix);
    return *end ? -1 : 0;
}

static int parse_id(const char *s, size_t len, uint8_t *id, size_t *n)
{
    size_t i;
    unsigned x;

    *n = 0;
    if (len == 1 && s[0] == '-')
        return 0;
    if (len == 0 || len % 2 || len > 40)
        return -1;
    for (i = 0; i < len; i += 2) {
        if (sscanf(s + i, "%2x", &x) != 1 || !strchr("0123456789abcdef", s[i]) ||
            !strchr("0123456789abcdef", s[i + 1]))
            return -1;
        id[(*n)++] = (uint8_t)x;
    }
    return 0;
}

/* "#binary N ID 0xBASE PATH" */
static int binary_line(hdr_in *r, lp_rawhdr *h, lp_error *err)
{
    char *p = r->line + 8, *id, *base, *path;
    uint8_t bid[20];
    uint64_t idx, b;
    size_t nid;

    if (!(id = strchr(p, ' ')) || !(base = strchr(id + 1, ' ')) ||
        !(path = strchr(base + 1, ' ')) || !path[1])
        return bad(r, err, "expected #binary N BUILD-ID 0xBASE PATH");
    *id++ = *base++ = *path++ = 0;
    if (parse_u64(p, 10, &idx) || idx != h->nbins)
        return bad(r, err, "binaries must be numbered 0, 1, ... in order");
    if (parse_id(id, strlen(id), bid, &nid))
        return bad(r, err, "expected a build-id in hex, or -");
    if (strncmp(base, "0x", 2) || parse_u64(base + 2, 16, &b))
        return bad(r, err, "expected the base as 0xHEX");
    return lp_rawhdr_add_binary(h, path, bid, nid, b, err);
}

static int stat_pair(lp_rawhdr *h, const char *k, size_t klen, const char *v)
{
    size_t i;

    for (i = 0; i < NSTATS; i++)
        if (strlen(stat_fields[i].name) == klen &&
            !strncmp(stat_fields[i].name, k, klen))
            return parse_u64(v, 10, stat_at(&h->stats, i));
    return -1;
}

/* "#stats k=v k=v ..." */
static int stats_line(hdr_in *r, lp_rawhdr *h, lp_error *err)
{
    char *p = r->line + 6, *eq, *sp;

    while (*p == ' ') {
        p++;
        sp = strchr(p, ' ');
        if (sp)
            *sp = 0;
        if (!(eq = strchr(p, '=')) || stat_pair(h, p, (size_t)(eq - p), eq + 1))
            return bad(r, err, "expected #stats NAME=COUNT ... (known names)");
        if (!sp)
            break;
        *sp = ' ';
        p = sp;
    }
    return 0;
}

static int base_line(hdr_in *r, lp_rawhdr *h, lp_error *err)
{
    int i;

    for (i = 0; i < 3; i++)
        if (!strcmp(r->line + 6, base_names[i])) {
            h->base = (lp_raw_base)i;
            return 0;
        }
    return bad(r, err, "expected #base preferred, first-loadable or none");
}

/* One header line; 1 at the first line of the body. */
static int header_line(hdr_in *r, lp_rawhdr *h, unsigned *seen, lp_error *err)
{
    const char *s = r->line;

    if (!strncmp(s, "#base ", 6))
        return (*seen |= 1), base_line(r, h, err);
    if (!strncmp(s, "#options ", 9) || !strcmp(s, "#options")) {
        *seen |= 2;
        free(h->options);
        h->options = strdup(s[8] ? s + 9 : "");
        return h->options ? 0 : lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    if (!strncmp(s, "#binary ", 8))
        return binary_line(r, h, err);
    if (!strncmp(s, "#stats", 6) && (!s[6] || s[6] == ' '))
        return stats_line(r, h, err);
    if (s[0] == '#' && strncmp(s, "#section ", 9) && strncmp(s, "#leaf-inlined ", 14))
        return bad(r, err, "unknown header line");
    return 1;
}

/* "#lbr2prof-raw 1 cs|probe|flat": 1, 0 (not our header), -1 */
static int first_line(hdr_in *r, lp_rawhdr *h, lp_error *err)
{
    const char *s = r->line;
    char kind[8];
    int v;

    if (strncmp(s, "#lbr2prof-raw ", 14))
        return 0;
    if (sscanf(s + 14, "%d %7s", &v, kind) != 2)
        return bad(r, err, "expected #lbr2prof-raw VERSION cs|probe|flat");
    if (v != LP_RAW_VERSION)
        return lp_error_set(err, LP_EUNSUPP, "%s: raw profile version %d; this "
                            "lbr2prof reads version %d", r->name, v, LP_RAW_VERSION);
    h->cs = !strcmp(kind, "cs") || !strcmp(kind, "probe");
    h->addrs = !strcmp(kind, "probe");
    if (!h->cs && strcmp(kind, "flat"))
        return bad(r, err, "expected #lbr2prof-raw VERSION cs|probe|flat");
    if (strcmp(s + 14 + strspn(s + 14, "0123456789") + 1, kind))
        return bad(r, err, "expected #lbr2prof-raw VERSION cs|probe|flat");
    return 1;
}

static int read_header(hdr_in *r, lp_rawhdr *h, lp_error *err)
{
    unsigned seen = 0;
    off_t at;
    int rc = 0;

    if (next_line(r))
        rc = first_line(r, h, err);
    if (rc <= 0) {
        if (rc == 0 && fseeko(r->f, 0, SEEK_SET))
            return lp_error_set(err, LP_EIO, "%s: cannot seek", r->name);
        return rc;
    }
    do {
        at = ftello(r->f);
        rc = next_line(r) ? header_line(r, h, &seen, err) : 2;
    } while (rc == 0);
    if (rc < 0)
        return -1;
    if (rc == 1) {              /* the body's first line is read again */
        if (at < 0 || fseeko(r->f, at, SEEK_SET))
            return lp_error_set(err, LP_EIO, "%s: cannot seek", r->name);
        r->lineno--;
    }
    if (seen != 3 || h->nbins == 0)
        return lp_error_set(err, LP_EFORMAT, "%s: the raw profile header lacks "
                            "#base, #options or #binary", r->name);
    return 1;
}

int lp_rawhdr_read(FILE *f, const char *name, lp_rawhdr *h,
                   unsigned long *lines, lp_error *err)
{
    hdr_in r = {f, name, 0, NULL, 0};
    int rc;

    memset(h, 0, sizeof *h);
    rc = read_header(&r, h, err);
    free(r.line);
    *lines = rc == 1 ? r.lineno : 0;
    if (rc < 0)
        lp_rawhdr_free(h);
    return rc;
}

int lp_raw_read_body(FILE *f, const char *name, const lp_rawhdr *h,
                     unsigned long lines, uint64_t weight, lp_ctxcount *cc,
                     size_t *mixed, lp_error *err)
{
    uint64_t *bases = malloc(h->nbins * sizeof *bases);
    lp_cs_raw_opts o = {bases, h->nbins, weight, lines, 0, h->addrs};
    bool is_cs = false;
    size_t i;
    int rc;

    if (!bases)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", name);
    for (i = 0; i < h->nbins; i++)
        bases[i] = h->bins[i].base;
    rc = lp_cs_raw_read_body(f, name, &o, cc, &is_cs, err);
    free(bases);
    if (mixed)
        *mixed += o.mixed_joined;
    if (rc == 0 && is_cs && !h->cs)
        return lp_error_set(err, LP_EFORMAT, "%s: a flat raw profile "
                            "(#lbr2prof-raw ... flat) with context blocks", name);
    return rc;
}

/* ---- same binaries, bases, options ------------------------------------- */

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');

    return s ? s + 1 : path;
}

/* Same binary: the same build-id, or without one the same file name. */
static bool same_binary(const lp_raw_binary *a, const lp_raw_binary *b)
{
    if (a->build_id_size && b->build_id_size)
        return a->build_id_size == b->build_id_size &&
               !memcmp(a->build_id, b->build_id, a->build_id_size);
    return !strcmp(base_of(a->path), base_of(b->path));
}

static void id_hex(const lp_raw_binary *b, char *out)
{
    size_t i;

    strcpy(out, "none");
    for (i = 0; i < b->build_id_size; i++)
        sprintf(out + 2 * i, "%02x", b->build_id[i]);
}

static int binary_mismatch(const lp_rawhdr *a, const char *an,
                           const lp_rawhdr *b, const char *bn, size_t i,
                           lp_error *err)
{
    char ia[41], ib[41];

    id_hex(&a->bins[i], ia);
    id_hex(&b->bins[i], ib);
    if (!strcmp(base_of(a->bins[i].path), base_of(b->bins[i].path)))
        return lp_error_set(err, LP_EFORMAT, "mismatched binaries: %s has %s "
                            "with build-id %s, but %s has %s with build-id %s "
                            "(another build of the same program; not mixed)",
                            an, a->bins[i].path, ia, bn, b->bins[i].path, ib);
    return lp_error_set(err, LP_EFORMAT, "mismatched binaries: binary %zu is %s "
                        "(build-id %s) in %s but %s (build-id %s) in %s", i,
                        a->bins[i].path, ia, an, b->bins[i].path, ib, bn);
}

int lp_rawhdr_check_binaries(const lp_rawhdr *a, const char *an,
                             const lp_rawhdr *b, const char *bn, lp_error *err)
{
    size_t i;

    if (a->nbins != b->nbins)
        return lp_error_set(err, LP_EFORMAT, "%s has %zu binaries (%s%s), %s %zu "
                            "(%s%s): not the same --binary list", an, a->nbins,
                            a->bins[0].path, a->nbins > 1 ? ", ..." : "", bn,
                            b->nbins, b->bins[0].path, b->nbins > 1 ? ", ..." : "");
    for (i = 0; i < a->nbins; i++)
        if (!same_binary(&a->bins[i], &b->bins[i]))
            return binary_mismatch(a, an, b, bn, i, err);
    return 0;
}

int lp_rawhdr_check(const lp_rawhdr *a, const char *an, const lp_rawhdr *b,
                    const char *bn, lp_error *err)
{
    size_t i;

    if (lp_rawhdr_check_binaries(a, an, b, bn, err))
        return -1;
    if (a->base != b->base)
        return lp_error_set(err, LP_EFORMAT, "%s has addresses relative to the "
                            "%s base, %s to the %s base (--use-offset, "
                            "--use-first-loadable-segment-as-base)", an,
                            lp_raw_base_name(a->base), bn, lp_raw_base_name(b->base));
    for (i = 0; i < a->nbins; i++)
        if (a->bins[i].base != b->bins[i].base)
            return lp_error_set(err, LP_EFORMAT, "%s and %s have binary %s at "
                                "different bases (0x%" PRIx64 ", 0x%" PRIx64 ")",
                                an, bn, a->bins[i].path, a->bins[i].base,
                                b->bins[i].base);
    if (strcmp(a->options ? a->options : "", b->options ? b->options : ""))
        return lp_error_set(err, LP_EFORMAT, "%s was counted with options '%s', "
                            "%s with '%s': their counts do not add up to one run's",
                            an, a->options ? a->options : "", bn,
                            b->options ? b->options : "");
    return 0;
}
