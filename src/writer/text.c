/*
 * text.c - the LLVM sample profile text format, written exactly like
 * SampleProfileWriterText: top-level profiles by total descending, body
 * lines by location, call targets by count descending, then inlinee blocks
 * by location and callee, one more space of indent per level. Owns the
 * text syntax only; the ordering comes from the model's sorted views.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "lbr2prof/profile.h"
#include "writer/writer.h"

static void put_loc(FILE *f, lp_loc l)
{
    fprintf(f, "%" PRIu32, l.line);
    if (l.disc)
        fprintf(f, ".%" PRIu32, l.disc);
}

static int write_fs(FILE *f, const lp_fsamples *fs, int indent, int is_cs)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb, nc, i, j;
    int rc = 0;

    if (indent == 0 && is_cs)
        fprintf(f, "[%s]:%" PRIu64, fs->context, fs->total);
    else
        fprintf(f, "%s:%" PRIu64, fs->name, fs->total);
    if (indent == 0)
        fprintf(f, ":%" PRIu64, fs->head);
    fputc('\n', f);
    nb = lp_fs_sorted_body(fs, &b);
    if (nb == (size_t)-1)
        return -1;
    for (i = 0; i < nb; i++) {
        fprintf(f, "%*s", indent + 1, "");
        put_loc(f, b[i].loc);
        fprintf(f, ": %" PRIu64, b[i].count);
        for (j = 0; j < b[i].nr_targets; j++)
            fprintf(f, " %s:%" PRIu64, b[i].targets[j].name,
                    b[i].targets[j].count);
        fputc('\n', f);
    }
    lp_body_views_free(b, nb);
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1)
        return -1;
    for (i = 0; i < nc && rc == 0; i++) {
        fprintf(f, "%*s", indent + 1, "");
        put_loc(f, c[i].loc);
        fputs(": ", f);
        rc = write_fs(f, c[i].fs, indent + 1, is_cs);
    }
    free(c);
    if (rc == 0 && fs->attrs)
        fprintf(f, "%*s!Attributes: %" PRIu32 "\n", indent + 1, "", fs->attrs);
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
        rc = write_fs(f, v[i], 0, p->is_cs);
    free(v);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "text writer: out of memory");
    return 0;
}
