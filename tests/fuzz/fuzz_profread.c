/*
 * fuzz_profread.c - libFuzzer target for reading sample profiles back: the
 * input is any file (text, binary, extbinary, compressed sections...).
 * What reads is shown as `lbr2prof show` shows it (every option) and
 * written in every format; then the differential check: what the writers
 * write, the readers must read, and a write -> read -> write round is a
 * fixed point (extbinary with and without MD5 names and compression,
 * legacy binary, and text when every name is a plain identifier). Any
 * crash, sanitizer report, hang, leak or abort is a bug; format errors
 * are expected. Seed it with profiles of every kind (docs/profile-read.md).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"

typedef struct blob {
    char *d;
    size_t n;
} blob;

static int write_blob(const lp_profile *p, const lp_write_opts *o, blob *b)
{
    FILE *f = open_memstream(&b->d, &b->n);
    lp_error err;
    int rc;

    if (!f)
        return -1;
    rc = lp_profile_write(f, p, o, &err);
    fclose(f);
    return rc;
}

static void check(int cond, const char *what)
{
    if (!cond) {
        fprintf(stderr, "fuzz_profread: %s\n", what);
        abort();
    }
}

/* write, read back (must work), write again: the second and third
 * writings are equal */
static void round_trip(const lp_profile *p, const lp_write_opts *o)
{
    blob b1 = {0}, b2 = {0}, b3 = {0};
    lp_profile *q = NULL, *r = NULL;
    lp_error err;

    if (write_blob(p, o, &b1) == 0 && b1.n) {
        q = lp_profile_read_mem(b1.d, b1.n, "w1", NULL, &err);
        check(q != NULL, err.msg);
        check(write_blob(q, o, &b2) == 0, "rewrite failed");
        r = lp_profile_read_mem(b2.d, b2.n, "w2", NULL, &err);
        check(r != NULL, err.msg);
        check(write_blob(r, o, &b3) == 0, "third write failed");
        check(b2.n == b3.n && !memcmp(b2.d, b3.d, b2.n), "not a fixed point");
    }
    lp_profile_free(q);
    lp_profile_free(r);
    free(b1.d);
    free(b2.d);
    free(b3.d);
}

static int plain(const char *s)
{
    if (!*s)
        return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9') || *s == '_' || *s == '.'))
            return 0;
    return 1;
}

/* every name of fs (and its inlinees) is a plain identifier */
static int plain_fs(const lp_fsamples *fs)
{
    lp_body_view *b = NULL;
    lp_callee_view *c = NULL;
    size_t nb = lp_fs_sorted_body(fs, &b), nc, i, j;
    int ok = nb != (size_t)-1 && plain(fs->name);

    for (i = 0; ok && i < nb; i++)
        for (j = 0; ok && j < b[i].nr_targets; j++)
            ok = plain(b[i].targets[j].name);
    if (nb != (size_t)-1)
        lp_body_views_free(b, nb);
    if (ok && (nc = lp_fs_sorted_callees(fs, &c)) != (size_t)-1) {
        for (i = 0; ok && i < nc; i++)
            ok = plain_fs(c[i].fs);
        free(c);
    }
    return ok;
}

static int plain_profile(const lp_profile *p)
{
    lp_fsamples **v = NULL;
    size_t n = lp_profile_all(p, &v), i;
    int ok = n != (size_t)-1 && !p->is_cs;

    for (i = 0; ok && i < n; i++)
        ok = plain_fs(v[i]);
    free(v);
    return ok;
}

static void show_all(const lp_profile *p, const lp_prof_info *info)
{
    FILE *null = fopen("/dev/null", "w");
    lp_show_opts o = {0};
    lp_error err;
    int missing;

    if (!null)
        return;
    lp_profile_show(null, p, info, &o, &missing, &err);
    o = (lp_show_opts){"main", 0, 1, 1, 3, 1, 0};
    lp_profile_show(null, p, info, &o, &missing, &err);
    o = (lp_show_opts){NULL, 0, 0, 0, 0, 0, 1};
    lp_profile_show(null, p, info, &o, &missing, &err);
    lp_profile_show_sections(null, info);
    fclose(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lp_prof_info info;
    lp_profile *p;
    lp_error err;

    if (!(p = lp_profile_read_mem(data, size, "fuzz", &info, &err)))
        return 0;
    show_all(p, &info);
    round_trip(p, &(lp_write_opts){LP_PROF_EXTBINARY, 0, 0, NULL, 0, 0, 0});
    round_trip(p, &(lp_write_opts){LP_PROF_EXTBINARY, 1, 1, NULL, 0, 1, 1});
    if (!p->is_cs && !p->is_probe_based)
        round_trip(p, &(lp_write_opts){LP_PROF_BINARY, 0, 0, NULL, 0, 0, 0});
    if (plain_profile(p))
        round_trip(p, &(lp_write_opts){LP_PROF_TEXT, 0, 0, NULL, 0, 0, 0});
    lp_prof_info_free(&info);
    lp_profile_free(p);
    return 0;
}
