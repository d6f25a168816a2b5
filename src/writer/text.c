/*
 * text.c - the LLVM sample profile text format, written exactly like
 * SampleProfileWriterText: top-level profiles by total descending, body
 * lines by location, call targets by count descending, then inlinee blocks
 * by location and callee, one more space of indent per level, then the
 * metadata (!CFGChecksum of probe-based profiles, !Attributes). Owns the
 * text syntax only; the ordering comes from the model's sorted views.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lbr2prof/profile.h"
#include "writer/writer.h"

/* Numbers, names and indents written directly: the text of a large CS
 * profile is ~10^6 lines and fprintf's format parsing was a fifth of a
 * run. The bytes are those of the printf formats they replace. */
static void put_u64(FILE *f, uint64_t v)
{
    char b[20];
    size_t n = 0;

    do {
        b[sizeof b - ++n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    fwrite(b + sizeof b - n, 1, n, f);
}

static void put_str(FILE *f, const char *s)
{
    fputs(s, f);
}

static void put_indent(FILE *f, int n)   /* printf("%*s", n, "") */
{
    static const char sp[] = "                                ";
    int k;

    for (; n > 0; n -= k) {
        k = n < (int)sizeof sp - 1 ? n : (int)sizeof sp - 1;
        fwrite(sp, 1, (size_t)k, f);
    }
}

static void put_loc(FILE *f, lp_loc l)
{
    put_u64(f, l.line);
    if (l.disc) {
        putc('.', f);
        put_u64(f, l.disc);
    }
}

static int write_fs(FILE *f, const lp_fsamples *fs, int indent,
                    const lp_profile *p)
{
    int is_cs = p->is_cs;
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb, nc, i, j;
    int rc = 0;

    if (indent == 0 && is_cs) {
        putc('[', f);
        put_str(f, fs->context);
        put_str(f, "]:");
    } else {
        put_str(f, fs->name);
        putc(':', f);
    }
    put_u64(f, fs->total);
    if (indent == 0) {
        putc(':', f);
        put_u64(f, fs->head);
    }
    putc('\n', f);
    nb = lp_fs_sorted_body(fs, &b);
    if (nb == (size_t)-1)
        return -1;
    for (i = 0; i < nb; i++) {
        put_indent(f, indent + 1);
        put_loc(f, b[i].loc);
        put_str(f, ": ");
        put_u64(f, b[i].count);
        for (j = 0; j < b[i].nr_targets; j++) {
            putc(' ', f);
            put_str(f, b[i].targets[j].name);
            putc(':', f);
            put_u64(f, b[i].targets[j].count);
        }
        putc('\n', f);
    }
    lp_body_views_free(b, nb);
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1)
        return -1;
    for (i = 0; i < nc && rc == 0; i++) {
        put_indent(f, indent + 1);
        put_loc(f, c[i].loc);
        put_str(f, ": ");
        rc = write_fs(f, c[i].fs, indent + 1, p);
    }
    free(c);
    if (rc == 0 && p->is_probe_based) {
        put_indent(f, indent + 1);
        put_str(f, "!CFGChecksum: ");
        put_u64(f, fs->checksum);
        putc('\n', f);
    }
    if (rc == 0 && fs->attrs) {
        put_indent(f, indent + 1);
        put_str(f, "!Attributes: ");
        put_u64(f, fs->attrs);
        putc('\n', f);
    }
    return rc;
}

int lp_write_text(FILE *f, const lp_profile *p, lp_error *err)
{
    lp_fsamples **v = NULL;
    size_t n, i;
    int rc = 0;

    n = lp_profile_sorted(p, &v);
    if (n == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "text writer: out of memory");
    for (i = 0; i < n && rc == 0; i++)
        rc = write_fs(f, v[i], 0, p);
    free(v);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "text writer: out of memory");
    return 0;
}
