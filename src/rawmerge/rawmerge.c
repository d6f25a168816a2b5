/*
 * rawmerge.c - the sum of mergeable raw profiles (lp_rawmerge): counts per
 * context added (times a weight), statistics added, context attributes
 * combined, binaries checked to be the same (by build-id) and the sum
 * written in one canonical order, so that the result is the same for any
 * order and grouping of the inputs. Owns the sum; the file format is
 * rawhdr.c's and src/context/rawread.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/outfile.h"
#include "lbr2prof/rawmerge.h"

struct lp_rawmerge {
    lp_rawhdr h;                /* the sum's header */
    bool have;                  /* a profile was added */
    char *first;                /* the first input (for messages) */
    char *kind_from;            /* the first input that used samples: its
                                   kind (flat, cs or probe) is the sum's */
    int kind_used;              /* the kind_from input's kind */
    int kind_any;               /* the greatest kind of the inputs before
                                   it (flat < cs < probe) */
    lp_ctxcount *cc;            /* link-time addresses */
    size_t mixed;               /* joins that left a context mixed */
};

lp_rawmerge *lp_rawmerge_new(lp_error *err)
{
    lp_rawmerge *m = calloc(1, sizeof *m);

    if (!m || !(m->cc = lp_ctxcount_new())) {
        free(m);
        lp_error_set(err, LP_ENOMEM, "raw merge: out of memory");
        return NULL;
    }
    return m;
}

void lp_rawmerge_free(lp_rawmerge *m)
{
    if (!m)
        return;
    lp_rawhdr_free(&m->h);
    lp_ctxcount_free(m->cc);
    free(m->first);
    free(m->kind_from);
    free(m);
}

const lp_rawhdr *lp_rawmerge_header(const lp_rawmerge *m)
{
    return m->have ? &m->h : NULL;
}

size_t lp_rawmerge_mixed(const lp_rawmerge *m)
{
    lp_ctx_entry **v = NULL;
    long n, i;
    size_t k = 0;

    if (m->mixed == 0 || (n = lp_ctxcount_all(m->cc, &v)) < 0)
        return m->mixed;
    for (i = 0; i < n; i++)
        k += v[i]->leaf_inlined_mixed;
    free(v);
    return k;
}

/* The kinds of raw profile, in the order of kind_any. */
enum { KIND_FLAT, KIND_CS, KIND_PROBE };

static int kind_of(const lp_rawhdr *h)
{
    return !h->cs ? KIND_FLAT : h->addrs ? KIND_PROBE : KIND_CS;
}

static const char *kind_name(int k)
{
    return k == KIND_FLAT ? "flat"
           : k == KIND_CS ? "context-sensitive (line contexts)"
                          : "context-sensitive pseudo-probe (address contexts)";
}

/* Why two kinds do not mix. */
static const char *kind_why(int a, int b)
{
    if (a == KIND_FLAT || b == KIND_FLAT)
        return "hybrid samples make contexts, LBR-only ones flat counts";
    return "a pseudo-probe binary has address contexts, line contexts only "
           "with --use-dwarf-correlation";
}

/* The kind is the first input's that used samples; one that used none has
 * no counts and fits any. */
static int check_kind(lp_rawmerge *m, int kind, uint64_t used, const char *path,
                      lp_error *err)
{
    if (m->kind_from && used && kind != m->kind_used)
        return lp_error_set(err, LP_EFORMAT, "%s is a %s raw profile, %s a %s "
                            "one (%s): not merged", m->kind_from,
                            kind_name(m->kind_used), path, kind_name(kind),
                            kind_why(m->kind_used, kind));
    if (m->kind_from)
        return 0;
    if (used && !(m->kind_from = strdup(path)))
        return lp_error_set(err, LP_ENOMEM, "raw merge: out of memory");
    if (kind > m->kind_any)
        m->kind_any = kind;
    m->kind_used = kind;
    return 0;
}

/* Statistics times w, added; -1 on overflow. */
static int add_stats(lp_raw_stats *to, const lp_raw_stats *from, uint64_t w)
{
    uint64_t *t = (uint64_t *)to, v;
    const uint64_t *f = (const uint64_t *)from;
    size_t i;

    for (i = 0; i < sizeof *to / sizeof *t; i++)
        if (__builtin_mul_overflow(f[i], w, &v) ||
            __builtin_add_overflow(t[i], v, &t[i]))
            return -1;
    return 0;
}

/* The first header is the sum's; later ones must describe the same, and
 * bring their paths (the least is kept, so that the sum does not depend on
 * the order of the inputs). */
static int join_header(lp_rawmerge *m, lp_rawhdr *h, const char *path,
                       lp_error *err)
{
    size_t i;
    char *t;

    if (!m->have) {
        m->h = *h;
        memset(&m->h.stats, 0, sizeof m->h.stats);
        memset(h, 0, sizeof *h);
        m->have = true;
        if (!(m->first = strdup(path)))
            return lp_error_set(err, LP_ENOMEM, "raw merge: out of memory");
        return 0;
    }
    if (lp_rawhdr_check(&m->h, m->first, h, path, err))
        return -1;
    for (i = 0; i < h->nbins; i++)
        if (strcmp(h->bins[i].path, m->h.bins[i].path) < 0) {
            t = m->h.bins[i].path;
            m->h.bins[i].path = h->bins[i].path;
            h->bins[i].path = t;
        }
    return 0;
}

/* The sum's header (binaries, bases) with an input's kind: how to read
 * that input's body. */
static lp_rawhdr as_kind(const lp_rawmerge *m, int kind)
{
    lp_rawhdr h = m->h;

    h.cs = kind != KIND_FLAT;
    h.addrs = kind == KIND_PROBE;
    return h;
}

/* The body of a profile that used no sample: it must have no counts, and
 * adds no context (a single run over all the traces has none of it). */
static int read_unused(lp_rawmerge *m, FILE *f, const char *path,
                       unsigned long lines, int kind, lp_error *err)
{
    lp_rawhdr h = as_kind(m, kind);
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_ctx_entry **v = NULL;
    const lp_addr_pair_count *p;
    long n = 0, i;
    int rc = cc ? lp_raw_read_body(f, path, &h, lines, 1, cc, NULL, err)
                : lp_error_set(err, LP_ENOMEM, "raw merge: out of memory");

    if (rc == 0 && (n = lp_ctxcount_all(cc, &v)) < 0)
        rc = lp_error_set(err, LP_ENOMEM, "raw merge: out of memory");
    for (i = 0; rc == 0 && i < n; i++)
        if (lp_counters_ranges_view(v[i]->counters, &p) > 0 ||
            lp_counters_branches_view(v[i]->counters, &p) > 0)
            rc = lp_error_set(err, LP_EFORMAT, "%s: has counts, but its #stats "
                              "say that no sample was used", path);
    free(v);
    lp_ctxcount_free(cc);
    return rc;
}

static int add_file(lp_rawmerge *m, FILE *f, const char *path, uint64_t w,
                    lp_error *err)
{
    lp_rawhdr h = {0};
    unsigned long lines;
    int rc = lp_rawhdr_read(f, path, &h, &lines, err);
    lp_raw_stats st = h.stats;
    int kind = kind_of(&h);
    lp_rawhdr as;

    if (rc == 0)
        return lp_error_set(err, LP_EFORMAT, "%s: not an lbr2prof raw profile "
                            "(no #lbr2prof-raw header: write it with "
                            "--skip-symbolization --raw-header, which records "
                            "the binaries and base a merge must check)", path);
    if (rc < 0)
        return -1;
    /* binaries first, then the kind: what says most of two mismatched
     * inputs (the options of two kinds differ too) */
    rc = m->have ? lp_rawhdr_check_binaries(&m->h, m->first, &h, path, err) : 0;
    if (rc == 0)
        rc = check_kind(m, kind, st.used, path, err);
    if (rc == 0)
        rc = join_header(m, &h, path, err);
    if (rc == 0 && add_stats(&m->h.stats, &st, w))
        rc = lp_error_set(err, LP_EFORMAT, "%s: statistics overflow", path);
    if (rc == 0 && st.used == 0) {
        rc = read_unused(m, f, path, lines, kind, err);
    } else if (rc == 0) {
        as = as_kind(m, kind);
        rc = lp_raw_read_body(f, path, &as, lines, w, m->cc, &m->mixed, err);
    }
    lp_rawhdr_free(&h);
    return rc;
}

int lp_rawmerge_add(lp_rawmerge *m, const char *path, uint64_t weight,
                    lp_error *err)
{
    FILE *f = fopen(path, "r");
    int rc;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: cannot open", path);
    rc = add_file(m, f, path, weight ? weight : 1, err);
    fclose(f);
    return rc;
}

int lp_rawmerge_write(const lp_rawmerge *m, const char *out, lp_error *err)
{
    lp_outfile o;
    lp_rawhdr h;
    int kind;

    if (!m->have)
        return lp_error_set(err, LP_EUSAGE, "raw merge: no input");
    kind = m->kind_from ? m->kind_used : m->kind_any;
    h = as_kind(m, kind);
    if (lp_outfile_open(&o, out, err))
        return -1;
    if (lp_raw_write(o.fp, &h, m->cc, NULL, err)) {
        lp_outfile_abort(&o);
        return -1;
    }
    return lp_outfile_commit(&o, err);
}

int lp_rawmerge_sniff(const char *path, lp_error *err)
{
    FILE *f = fopen(path, "r");
    char buf[16] = {0};
    size_t n;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: cannot open", path);
    n = fread(buf, 1, 14, f);
    fclose(f);
    return n == 14 && memcmp(buf, "#lbr2prof-raw ", 14) == 0;
}
