/*
 * test_profile.c - unit tests for src/profile: the FunctionSamples model
 * (counting, sorted views, LLVM's count fix-ups) and the text reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"

static lp_loc L(uint32_t line, uint32_t disc) { return (lp_loc){line, disc}; }

static void test_saturating_add(void **state)
{
    (void)state;
    assert_true(lp_sat_add(UINT64_MAX - 1, 5) == UINT64_MAX);
    assert_true(lp_sat_add(2, 3) == 5);
}

static void test_body_and_targets_sorted(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs = lp_profile_get(p, "foo", NULL);
    lp_body_rec *b;
    lp_body_view *v;
    size_t n;
    (void)state;

    lp_body_add(lp_fs_body(fs, L(3, 0)), 7);
    lp_body_add(lp_fs_body(fs, L(1, 2)), 1);
    lp_body_add(lp_fs_body(fs, L(1, 0)), 2);
    b = lp_fs_body(fs, L(3, 0));
    assert_int_equal(lp_body_add_target(b, "zed", 4), 0);
    assert_int_equal(lp_body_add_target(b, "bar", 4), 0);
    assert_int_equal(lp_body_add_target(b, "baz", 9), 0);
    assert_int_equal(lp_body_add_target(b, "bar", 1), 0);
    assert_true(lp_body_target_sum(b) == 18);
    n = lp_fs_sorted_body(fs, &v);
    assert_int_equal(n, 3);
    assert_int_equal(v[0].loc.line, 1);
    assert_int_equal(v[0].loc.disc, 0);
    assert_int_equal(v[1].loc.disc, 2);
    assert_int_equal(v[2].nr_targets, 3);
    /* count descending, then name */
    assert_string_equal(v[2].targets[0].name, "baz");
    assert_string_equal(v[2].targets[1].name, "bar");
    assert_true(v[2].targets[1].count == 5);
    assert_string_equal(v[2].targets[2].name, "zed");
    lp_body_views_free(v, n);
    lp_profile_free(p);
}

/* lp_fs_body_ensure: the missing locations of a sorted list get zero
 * records, the others keep their counts and targets, the body stays
 * sorted; the same list again adds nothing. */
static void test_body_ensure(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs = lp_profile_get(p, "foo", NULL);
    static const lp_loc want[] = {{1, 0}, {2, 0}, {3, 0}, {3, 4}, {5, 0},
                                  {6, 1}, {9, 0}};
    static const lp_loc locs[] = {{0, 0}, {2, 0}, {3, 4}, {5, 0}, {6, 1},
                                  {9, 0}};
    const lp_body_rec *b;
    size_t i;
    (void)state;

    assert_int_equal(lp_fs_body_ensure(fs, locs + 1, 0), 0);   /* none */
    assert_int_equal(lp_fs_nr_body(fs), 0);
    lp_body_add(lp_fs_body(fs, L(3, 0)), 7);
    lp_body_add(lp_fs_body(fs, L(1, 0)), 2);
    assert_int_equal(lp_body_add_target(lp_fs_body(fs, L(5, 0)), "g", 4), 0);
    assert_int_equal(lp_fs_body_ensure(fs, locs + 1, 5), 0);
    assert_int_equal(lp_fs_nr_body(fs), 7);
    for (i = 0; i < 7; i++) {
        b = lp_fs_body_at(fs, i);
        assert_int_equal(lp_body_loc(b).line, want[i].line);
        assert_int_equal(lp_body_loc(b).disc, want[i].disc);
    }
    assert_true(lp_body_count(lp_fs_body_find(fs, L(3, 0))) == 7);
    assert_true(lp_body_count(lp_fs_body_find(fs, L(1, 0))) == 2);
    assert_true(lp_body_count(lp_fs_body_find(fs, L(9, 0))) == 0);
    assert_true(lp_fs_target_count(fs, L(5, 0), "g") == 4);
    assert_int_equal(lp_fs_body_ensure(fs, locs + 1, 5), 0);
    assert_int_equal(lp_fs_nr_body(fs), 7);
    /* one before all of them */
    assert_int_equal(lp_fs_body_ensure(fs, locs, 1), 0);
    assert_int_equal(lp_fs_nr_body(fs), 8);
    assert_int_equal(lp_body_loc(lp_fs_body_at(fs, 0)).line, 0);
    assert_int_equal(lp_body_loc(lp_fs_body_at(fs, 1)).line, 1);
    lp_profile_free(p);
}

/* lp_fs_body_max: into an empty body (taken as is) and into one with
 * records (created with the item's count or raised to it, never
 * lowered; targets kept). */
static void test_body_max(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs = lp_profile_get(p, "foo", NULL);
    static const lp_loc_count first[] = {{{1, 0}, 5}, {{2, 3}, 0}, {{4, 0}, 9}};
    static const lp_loc_count more[] = {{{0, 0}, 1}, {{1, 0}, 3}, {{2, 3}, 6},
                                        {{3, 0}, 2}, {{4, 0}, 10}};
    static const uint64_t want[] = {1, 5, 6, 2, 10};
    size_t i;
    (void)state;

    assert_int_equal(lp_fs_body_max(fs, first, 3), 0);
    assert_int_equal(lp_fs_nr_body(fs), 3);
    assert_true(lp_body_count(lp_fs_body_find(fs, L(2, 3))) == 0);
    assert_int_equal(lp_body_add_target(lp_fs_body(fs, L(4, 0)), "g", 4), 0);
    assert_int_equal(lp_fs_body_max(fs, more, 5), 0);
    assert_int_equal(lp_fs_nr_body(fs), 5);
    for (i = 0; i < 5; i++) {
        assert_int_equal(lp_body_loc(lp_fs_body_at(fs, i)).line, more[i].loc.line);
        assert_true(lp_body_count(lp_fs_body_at(fs, i)) == want[i]);
    }
    assert_true(lp_fs_target_count(fs, L(4, 0), "g") == 4);
    lp_profile_free(p);
}

/* A record's first call target lives in one block with its name; a
 * second one moves it to a plain array; removing the only one empties
 * the record's targets, which can take new ones again (leaks and frees
 * checked under the sanitizer build). */
static void test_first_target(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs = lp_profile_get(p, "foo", NULL);
    lp_body_rec *b = lp_fs_body(fs, L(1, 0));
    char name[64];
    (void)state;

    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = 0;      /* longer than a target slot */
    assert_int_equal(lp_body_add_target(b, name, 3), 0);
    assert_int_equal(lp_body_add_target(b, name, 2), 0);
    assert_true(lp_fs_target_count(fs, L(1, 0), name) == 5);
    lp_body_add(b, 10);
    assert_true(lp_fs_remove_call(fs, L(1, 0), name) == 5);
    assert_true(lp_fs_target_count(fs, L(1, 0), name) == 0);
    b = lp_fs_body(fs, L(1, 0));
    assert_true(lp_body_count(b) == 5);
    assert_int_equal(lp_body_add_target(b, "b", 1), 0);
    assert_int_equal(lp_body_add_target(b, name, 7), 0);
    assert_int_equal(lp_body_add_target(b, "a", 2), 0);
    assert_true(lp_fs_target_count(fs, L(1, 0), name) == 7);
    assert_true(lp_fs_target_count(fs, L(1, 0), "a") == 2);
    assert_true(lp_fs_target_count(fs, L(1, 0), "b") == 1);
    assert_true(lp_body_target_sum(b) == 10);
    /* a merge copies targets into a fresh record and an existing one */
    lp_fsamples *g = lp_profile_get(p, "bar", NULL);
    assert_int_equal(lp_body_add_target(lp_fs_body(g, L(1, 0)), "a", 1), 0);
    assert_int_equal(lp_fs_merge(g, fs), 0);
    assert_true(lp_fs_target_count(g, L(1, 0), "a") == 3);
    assert_true(lp_fs_target_count(g, L(1, 0), name) == 7);
    lp_profile_free(p);
}

static void test_top_level_order(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples **v;
    size_t n;
    (void)state;

    lp_profile_get(p, "b", NULL)->total = 10;
    lp_profile_get(p, "a", NULL)->total = 10;
    lp_profile_get(p, "c", NULL)->total = 11;
    assert_ptr_equal(lp_profile_get(p, "a", NULL), lp_profile_find(p, "a"));
    n = lp_profile_sorted(p, &v);
    assert_int_equal(n, 3);
    assert_string_equal(v[0]->name, "c");
    assert_string_equal(v[1]->name, "a");
    assert_string_equal(v[2]->name, "b");
    free(v);
    lp_profile_remove(p, "a");
    assert_null(lp_profile_find(p, "a"));
    assert_int_equal(p->nr_funcs, 2);
    lp_profile_free(p);
}

/* CS top-level order: equal totals in lp_context_cmp order (the sort
 * compares precomputed keys; names that prefix each other, numeric lines
 * and discriminators, shorter contexts, bytes above 0x7f; ".0" is never
 * printed, so no two contexts compare equal). */
static void test_cs_top_level_order(void **state)
{
    static const char *names[] = {"f", "fo", "foo", "foo.bar", "f\xc3\xa9", "g"};
    lp_profile *p = lp_profile_new();
    lp_fsamples **v;
    char ctx[256];
    unsigned seed = 7;
    size_t n, i, made = 0;
    int d, k, len;
    (void)state;

    p->is_cs = 1;
    for (i = 0; i < 600; i++) {
        len = 0;
        d = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 3;
        for (k = 0; k < d; k++) {
            seed = seed * 1103515245u + 12345u;
            len += snprintf(ctx + len, sizeof ctx - (size_t)len, "%s%s",
                            k ? " @ " : "", names[(seed >> 16) % 6]);
            if (k + 1 < d) {
                seed = seed * 1103515245u + 12345u;
                len += snprintf(ctx + len, sizeof ctx - (size_t)len, ":%u",
                                (seed >> 16) % 12);
                if ((seed >> 8) & 1)
                    len += snprintf(ctx + len, sizeof ctx - (size_t)len, ".%u",
                                    1 + (seed >> 20) % 11);
            }
        }
        if (!lp_profile_find(p, ctx))
            made++;
        /* totals differing in their low, middle and high bytes (the
         * sort goes by the bytes that differ), many of them tied */
        lp_profile_get(p, ctx, NULL)->total =
            i % 97 == 0 ? ((uint64_t)1 << 40) + i % 3
            : i % 101 == 0 ? UINT64_MAX
            : i % 50 == 0 ? 100 + i : 1 + (i % 3 == 0);
    }
    n = lp_profile_sorted(p, &v);
    assert_int_equal(n, made);
    assert_true(n > 200);
    for (i = 1; i < n; i++) {
        assert_true(v[i - 1]->total >= v[i]->total);
        if (v[i - 1]->total == v[i]->total)
            assert_true(lp_context_cmp(v[i - 1]->context, v[i]->context) < 0);
    }
    free(v);
    lp_profile_free(p);
}

/* lp_context_sort: the order of lp_context_cmp on contexts of the same
 * kinds (names prefixing each other, numeric lines and discriminators,
 * depths 1-4, bytes above 0x7f, an MD5 name), each with a copy of itself
 * (equal contexts stay together), every one in its place. */
static void test_context_sort(void **state)
{
    static const char *names[] = {"f", "fo", "foo", "foo.bar", "f\xc3\xa9", "g",
                                  "0x00000000deadbeef"};
    char buf[900][64];
    const char *v[900];
    unsigned seed = 11;
    size_t n = 0, i;
    int d, k, len;
    (void)state;

    while (n < 900) {
        len = 0;
        d = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 4;
        for (k = 0; k < d; k++) {
            seed = seed * 1103515245u + 12345u;
            len += snprintf(buf[n] + len, sizeof buf[n] - (size_t)len, "%s%s",
                            k ? " @ " : "", names[(seed >> 16) % 7]);
            if (k + 1 < d) {
                seed = seed * 1103515245u + 12345u;
                len += snprintf(buf[n] + len, sizeof buf[n] - (size_t)len, ":%u",
                                (seed >> 16) % 12);
                if ((seed >> 8) & 1)
                    len += snprintf(buf[n] + len, sizeof buf[n] - (size_t)len,
                                    ".%u", 1 + (seed >> 20) % 11);
            }
        }
        v[n] = buf[n];
        n++;
        if (n % 5 == 0 && n < 900) {          /* a copy, elsewhere */
            memcpy(buf[n], buf[n - 1], sizeof buf[n]);
            v[n] = buf[n];
            n++;
        }
    }
    assert_int_equal(lp_context_sort(v, n), 0);
    for (i = 1; i < n; i++)
        if (lp_context_cmp(v[i - 1], v[i]) > 0)
            fail_msg("%zu: '%s' before '%s'", i, v[i - 1], v[i]);
    assert_int_equal(lp_context_sort(v, 1), 0);
    assert_int_equal(lp_context_sort(NULL, 0), 0);
}

/* The top-level table: 3000 keys (the slots grow several times), a third
 * removed (linear probing's backward shift must keep every other key
 * findable), removed keys added again at the end; iteration follows
 * insertion order, without the removed ones. */
static void test_top_table(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples **v, *fs;
    char key[32];
    size_t n, i, k;
    (void)state;

    for (i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "f%zu", i);
        assert_non_null(fs = lp_profile_get(p, key, i % 2 ? "g" : NULL));
        fs->total = i;
        assert_ptr_equal(lp_profile_get(p, key, NULL), fs);
    }
    for (i = 0; i < 3000; i += 3) {
        snprintf(key, sizeof key, "f%zu", i);
        lp_profile_remove(p, key);
    }
    assert_int_equal(p->nr_funcs, 2000);
    for (i = 0; i < 3000; i++) {
        snprintf(key, sizeof key, "f%zu", i);
        fs = lp_profile_find(p, key);
        if (i % 3 == 0) {
            assert_null(fs);
            continue;
        }
        assert_non_null(fs);
        assert_int_equal(fs->total, i);
        assert_string_equal(fs->name, i % 2 ? "g" : key);
    }
    for (i = 0; i < 30; i += 3) {       /* back, at the end */
        snprintf(key, sizeof key, "f%zu", i);
        assert_non_null(fs = lp_profile_get(p, key, NULL));
        fs->total = 5000 + i;
    }
    n = lp_profile_all(p, &v);
    assert_int_equal(n, 2010);
    for (i = 0, k = 0; i < 3000; i++)
        if (i % 3)
            assert_int_equal(v[k++]->total, i);
    for (i = 0; i < 30; i += 3)
        assert_int_equal(v[k++]->total, 5000 + i);
    free(v);
    lp_profile_free(p);
}

/* Absorbing a profile: the entries dst lacks move over (found by key
 * afterwards, names kept), the ones it has are merged into its own, whose
 * order becomes the lower nonzero one; src is left empty. */
static void test_absorb(void **state)
{
    lp_profile *d = lp_profile_new(), *s = lp_profile_new();
    lp_fsamples *fs;
    char key[32];
    size_t i;
    (void)state;

    for (i = 0; i < 200; i++) {         /* d: even keys, s: every third */
        snprintf(key, sizeof key, "main:%zu @ f", i);
        if (i % 2 == 0) {
            assert_non_null(fs = lp_profile_get(d, key, "f"));
            fs->total = i;
            fs->order = (uint32_t)(i % 4 ? 3 * i + 1 : 0);
            lp_body_add(lp_fs_body(fs, (lp_loc){1, 0}), i);
        }
        if (i % 3 == 0) {
            assert_non_null(fs = lp_profile_get(s, key, "f"));
            fs->total = 1000;
            fs->order = (uint32_t)(2 * i + 1);
            lp_body_add(lp_fs_body(fs, (lp_loc){1, 0}), 7);
        }
    }
    assert_int_equal(lp_profile_reserve(d, 5000), 0);   /* rehashed at once */
    assert_non_null(lp_profile_find(d, "main:198 @ f"));
    assert_int_equal(lp_profile_absorb(d, s), 0);
    assert_int_equal(s->nr_funcs, 0);
    assert_null(lp_profile_find(s, "main:0 @ f"));
    assert_int_equal(d->nr_funcs, 100 + 67 - 34);
    for (i = 0; i < 200; i++) {
        snprintf(key, sizeof key, "main:%zu @ f", i);
        fs = lp_profile_find(d, key);
        if (i % 2 && i % 3) {
            assert_null(fs);
            continue;
        }
        assert_non_null(fs);
        assert_string_equal(fs->name, "f");
        assert_int_equal(fs->total, (i % 2 ? 0 : i) + (i % 3 ? 0 : 1000));
        assert_int_equal(lp_body_count(lp_fs_body(fs, (lp_loc){1, 0})),
                         (i % 2 ? 0 : i) + (i % 3 ? 0 : 7));
        if (i % 3)
            assert_int_equal(fs->order, i % 4 ? 3 * i + 1 : 0);
        else if (i % 2 == 0 && i % 4)
            assert_int_equal(fs->order, 2 * i + 1 < 3 * i + 1 ? 2 * i + 1 : 3 * i + 1);
        else
            assert_int_equal(fs->order, 2 * i + 1);
    }
    assert_non_null(lp_profile_get(s, "again", NULL));  /* s still works */
    assert_int_equal(s->nr_funcs, 1);
    lp_profile_free(s);
    lp_profile_free(d);
}

/* A kept sorted view is what lp_profile_sorted returns (whatever the
 * totals say) until an entry is added or removed, or p is no longer
 * ordered; then the entries are sorted again. */
static void test_keep_sorted(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples **v, **w, *fs;
    char key[16];
    size_t n, i;
    (void)state;

    p->is_cs = 1;
    for (i = 0; i < 10; i++) {
        snprintf(key, sizeof key, "main:%zu @ f", i);
        assert_non_null(fs = lp_profile_get(p, key, "f"));
        fs->total = i;
        fs->order = (uint32_t)(i + 1);
    }
    p->ordered = 1;
    n = lp_profile_all(p, &v);              /* totals ascending: not sorted */
    lp_profile_keep_sorted(p, v, n);
    assert_int_equal(lp_profile_sorted(p, &w), 10);
    for (i = 0; i < 10; i++)
        assert_int_equal(w[i]->total, i);   /* the view, as kept */
    free(w);
    p->ordered = 0;
    assert_int_equal(lp_profile_sorted(p, &w), 10);
    assert_int_equal(w[0]->total, 9);       /* sorted again */
    free(w);
    p->ordered = 1;
    lp_profile_remove(p, "main:3 @ f");
    assert_int_equal(lp_profile_sorted(p, &w), 9);
    assert_int_equal(w[0]->total, 9);
    free(w);
    n = lp_profile_all(p, &v);
    lp_profile_keep_sorted(p, v, n);
    lp_profile_get(p, "main:3 @ f", "f")->total = 3;    /* drops the view */
    assert_int_equal(lp_profile_sorted(p, &w), 10);
    assert_int_equal(w[0]->total, 9);
    free(w);
    lp_profile_free(p);
}

static void test_fixups(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs = lp_profile_get(p, "main", NULL), *in;
    (void)state;

    lp_body_add_target(lp_fs_body(fs, L(2, 0)), "f", 30);
    lp_body_add(lp_fs_body(fs, L(2, 0)), 10);
    lp_body_add(lp_fs_body(fs, L(4, 0)), 5);
    in = lp_fs_callee(fs, L(1, 0), "inl");
    assert_ptr_equal(in, lp_fs_callee(fs, L(1, 0), "inl"));
    lp_body_add_target(lp_fs_body(in, L(1, 0)), "g", 8);
    lp_body_add(lp_fs_body(in, L(1, 0)), 3);
    lp_fs_update_callsite_samples(fs);
    assert_true(lp_body_count(lp_fs_body_find(fs, L(2, 0))) == 30);
    /* LLVM 19 leaves inlinee bodies alone */
    assert_true(lp_body_count(lp_fs_body_find(in, L(1, 0))) == 3);
    lp_fs_update_total_samples(fs);
    assert_true(in->total == 3);
    assert_true(fs->total == 30 + 5 + 3);
    lp_profile_free(p);
}

static int starts_with_x(const char *n) { return n[0] == 'x'; }

static void test_drop_callees(void **state)
{
    lp_profile *p = lp_profile_new();
    lp_fsamples *fs = lp_profile_get(p, "main", NULL), *a;
    lp_callee_view *v;
    size_t n;
    (void)state;

    a = lp_fs_callee(fs, L(1, 0), "a");
    lp_fs_callee(a, L(2, 0), "xdeep");
    lp_fs_callee(fs, L(1, 0), "xtop");
    lp_fs_drop_callees(fs, starts_with_x);
    n = lp_fs_sorted_callees(fs, &v);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].fs->name, "a");
    free(v);
    n = lp_fs_sorted_callees(a, &v);
    assert_int_equal(n, 0);
    free(v);
    lp_profile_free(p);
}

static const char sample_text[] =
    "main:2609:3\n"
    " 0: 0\n"
    " 2: 5 foo:3 bar:2\n"
    " 1: foo:2609\n"
    "  2.1: 42\n"
    "  3.1: bar:546\n"
    "   65533: 42\n";

static void test_read_text(void **state)
{
    FILE *f = fmemopen((void *)sample_text, sizeof sample_text - 1, "r");
    lp_error e = {0};
    lp_profile *p = lp_profile_read_text(f, "mem", &e);
    lp_fsamples *m, *foo, *bar;
    (void)state;

    fclose(f);
    assert_non_null(p);
    m = lp_profile_find(p, "main");
    assert_non_null(m);
    assert_true(m->total == 2609 && m->head == 3);
    assert_true(lp_body_target_sum(lp_fs_body_find(m, L(2, 0))) == 5);
    foo = lp_fs_callee(m, L(1, 0), "foo");
    assert_true(foo->total == 2609);
    assert_true(lp_body_count(lp_fs_body_find(foo, L(2, 1))) == 42);
    bar = lp_fs_callee(foo, L(3, 1), "bar");
    assert_true(bar->total == 546);
    assert_true(lp_body_count(lp_fs_body_find(bar, L(65533, 0))) == 42);
    lp_profile_free(p);
}

static void test_read_text_errors(void **state)
{
    static const char *bad[] = {
        "main:1\n",                 /* no head count */
        "main:1:0\n x: 3\n",        /* bad location */
        "main:1:0\n 1: 3 foo\n",    /* target without count */
        "  1: 3\n",                 /* body without a function */
        "main:1:0\n 1: 2\n   1: 3\n", /* too deep */
    };
    size_t i;
    (void)state;

    for (i = 0; i < sizeof bad / sizeof *bad; i++) {
        FILE *f = fmemopen((void *)bad[i], strlen(bad[i]), "r");
        lp_error e = {0};
        assert_null(lp_profile_read_text(f, "t.prof", &e));
        assert_int_equal(e.code, LP_EFORMAT);
        assert_non_null(strstr(e.msg, "t.prof:"));
        fclose(f);
    }
}

/* lp_fs_merge on interleaved, shared and disjoint locations: every
 * record in location order, counts and targets added */
static void test_merge_bodies(void **state)
{
    static const uint32_t dl[] = {2, 5, 9, 12}, sl[] = {1, 5, 7, 12, 20};
    lp_fsamples d, s;
    const lp_body_rec *b;
    size_t i;
    (void)state;

    assert_int_equal(lp_fs_init(&d, "d"), 0);
    assert_int_equal(lp_fs_init(&s, "s"), 0);
    for (i = 0; i < 4; i++)
        lp_body_add(lp_fs_body(&d, L(dl[i], 0)), 10 + dl[i]);
    for (i = 0; i < 5; i++) {
        lp_body_add(lp_fs_body(&s, L(sl[i], 0)), 100 + sl[i]);
        assert_int_equal(lp_body_add_target(lp_fs_body(&s, L(sl[i], 0)), "t", 1), 0);
    }
    lp_body_add(lp_fs_body(&s, L(5, 1)), 3);
    assert_int_equal(lp_fs_merge(&d, &s), 0);
    assert_int_equal(lp_fs_nr_body(&d), 8);
    {
        static const uint32_t line[] = {1, 2, 5, 5, 7, 9, 12, 20};
        static const uint64_t cnt[] = {101, 12, 120, 3, 107, 19, 134, 120};
        for (i = 0; i < 8; i++) {
            b = lp_fs_body_at(&d, i);
            assert_int_equal(lp_body_loc(b).line, line[i]);
            assert_int_equal(lp_body_count(b), cnt[i]);
        }
    }
    assert_int_equal(lp_fs_target_count(&d, L(12, 0), "t"), 1);
    assert_int_equal(lp_fs_target_count(&d, L(9, 0), "t"), 0);
    /* merging again: no new locations, counts doubled from src */
    assert_int_equal(lp_fs_merge(&d, &s), 0);
    assert_int_equal(lp_fs_nr_body(&d), 8);
    assert_int_equal(lp_body_count(lp_fs_body_at(&d, 0)), 202);
    assert_int_equal(lp_fs_target_count(&d, L(20, 0), "t"), 2);
    /* into an empty profile */
    lp_fs_clear(&d);
    assert_int_equal(lp_fs_init(&d, "d"), 0);
    assert_int_equal(lp_fs_merge(&d, &s), 0);
    assert_int_equal(lp_fs_nr_body(&d), 6);
    assert_int_equal(lp_body_loc(lp_fs_body_at(&d, 5)).line, 20);
    lp_fs_clear(&d);
    lp_fs_clear(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_saturating_add),
        cmocka_unit_test(test_body_and_targets_sorted),
        cmocka_unit_test(test_body_ensure),
        cmocka_unit_test(test_body_max),
        cmocka_unit_test(test_first_target),
        cmocka_unit_test(test_top_level_order),
        cmocka_unit_test(test_cs_top_level_order),
        cmocka_unit_test(test_context_sort),
        cmocka_unit_test(test_top_table),
        cmocka_unit_test(test_absorb),
        cmocka_unit_test(test_keep_sorted),
        cmocka_unit_test(test_fixups),
        cmocka_unit_test(test_drop_callees),
        cmocka_unit_test(test_merge_bodies),
        cmocka_unit_test(test_read_text),
        cmocka_unit_test(test_read_text_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
