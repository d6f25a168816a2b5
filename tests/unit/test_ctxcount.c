/*
 * test_ctxcount.c - unit tests for src/context/ctxcount.c: context keys,
 * their parsing, the per-context table and the CS unsymbolized writer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/ctxcount.h"

static void test_key_format(void **state)
{
    lp_ctx_frame f[3] = {{"main", {1, 0}}, {"foo", {3, 1}}, {"bar", {0, 0}}};
    char *k;
    (void)state;
    k = lp_ctx_key(f, 3);
    assert_string_equal(k, "main:1 @ foo:3.1 @ bar");
    free(k);
    k = lp_ctx_key(f + 2, 1);
    assert_string_equal(k, "bar");
    free(k);
    k = lp_ctx_key(NULL, 0);
    assert_string_equal(k, "");
    free(k);
}

static void test_key_parse(void **state)
{
    lp_ctx_frame *f;
    size_t n;
    char *buf;
    (void)state;
    assert_int_equal(lp_ctx_parse_key("main:1 @ foo:3.1 @ bar", &f, &n, &buf), 0);
    assert_int_equal(n, 3);
    assert_string_equal(f[0].func, "main");
    assert_int_equal(f[0].loc.line, 1);
    assert_int_equal(f[1].loc.line, 3);
    assert_int_equal(f[1].loc.disc, 1);
    assert_string_equal(f[2].func, "bar");
    assert_int_equal(f[2].loc.line, 0);
    free(f);
    free(buf);
    assert_int_equal(lp_ctx_parse_key("", &f, &n, &buf), 0);
    assert_int_equal(n, 0);
    free(f);
    free(buf);
    assert_int_equal(lp_ctx_parse_key("main @ bar", &f, &n, &buf), -1);
    assert_int_equal(lp_ctx_parse_key("main:x @ bar", &f, &n, &buf), -1);
    assert_int_equal(lp_ctx_parse_key("main:1 @ ", &f, &n, &buf), -1);
}

static void test_table_and_raw(void **state)
{
    lp_ctx_frame a[2] = {{"main", {1, 0}}, {"foo", {0, 0}}};
    lp_ctx_frame b[1] = {{"bar", {0, 0}}};
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_ctx_entry *e1, *e2, *e3;
    char *out = NULL;
    size_t len = 0;
    FILE *f;
    (void)state;
    e1 = lp_ctxcount_get(cc, 0, a, 2, true, NULL);
    e2 = lp_ctxcount_get(cc, 0, a, 2, false, NULL);
    assert_ptr_equal(e1, e2);
    assert_true(e1->was_leaf_inlined);      /* first insertion wins */
    e3 = lp_ctxcount_get(cc, 0, NULL, 0, false, NULL);
    assert_non_null(e3);
    assert_non_null(lp_ctxcount_get(cc, 1, b, 1, false, NULL));
    assert_int_equal(lp_ctxcount_size(cc), 3);
    assert_ptr_equal(lp_ctxcount_find(cc, 0, "main:1 @ foo"), e1);
    assert_null(lp_ctxcount_find(cc, 1, "main:1 @ foo"));
    lp_counters_add_range(e1->counters, 0x4005ff, 0x40062f, 3);
    lp_counters_add_branch(e1->counters, 0x40062f, 0x4005b0, 3);
    lp_counters_add_branch(e3->counters, 1, 0x400690, 13);
    f = open_memstream(&out, &len);
    assert_int_equal(lp_ctxcount_write_raw(f, cc, 0, 0x400000, NULL), 0);
    fclose(f);
    assert_string_equal(out, "[]\n  0\n  1\n  ffffffffffc00001->690:13\n"
                             "[main:1 @ foo]\n  1\n  5ff-62f:3\n  1\n  62f->5b0:3\n");
    free(out);
    lp_ctxcount_free(cc);
}

/* lp_ctxcount_clear (what lp_cs_profile_consume leaves): empty, usable */
static void test_clear(void **state)
{
    lp_ctx_frame a[2] = {{"main", {1, 0}}, {"foo", {0, 0}}};
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_ctx_entry *e;
    (void)state;
    e = lp_ctxcount_get(cc, 0, a, 2, true, NULL);
    lp_counters_add_range(e->counters, 0x4005ff, 0x40062f, 3);
    assert_non_null(lp_ctxcount_get(cc, 0, NULL, 0, false, NULL));
    lp_ctxcount_clear(cc);
    assert_int_equal(lp_ctxcount_size(cc), 0);
    assert_null(lp_ctxcount_find(cc, 0, "main:1 @ foo"));
    e = lp_ctxcount_get(cc, 0, a, 2, false, NULL);
    assert_non_null(e);
    assert_false(e->was_leaf_inlined); /* a new entry */
    assert_int_equal(lp_ctxcount_size(cc), 1);
    assert_ptr_equal(lp_ctxcount_find(cc, 0, "main:1 @ foo"), e);
    lp_ctxcount_free(cc);
}

/* lp_ctxcount_release (probe generation, entry by entry): the entry is
 * freed once (twice is a no-op), the others stay, clear frees the rest
 * (ASan: no double free, no leak) */
static void test_release(void **state)
{
    uint64_t a[2] = {0x401000, 0x402000};
    lp_ctxcount *cc = lp_ctxcount_new();
    lp_ctx_entry **v = NULL;
    lp_ctx_entry *e0, *e1;
    (void)state;
    e0 = lp_ctxcount_get_addrs(cc, 0, a, 2, NULL);
    e1 = lp_ctxcount_get_addrs(cc, 0, a, 1, NULL);
    assert_non_null(e0);
    assert_non_null(e1);
    assert_int_equal(lp_ctxcount_all(cc, &v), 2);
    assert_ptr_equal(v[0], e0);
    lp_ctxcount_release(cc, 0);
    lp_ctxcount_release(cc, 0);
    lp_ctxcount_release(cc, 5);         /* out of range: nothing */
    assert_int_equal(v[1]->naddrs, 1);
    assert_int_equal(v[1]->addrs[0], 0x401000);
    free(v);
    lp_ctxcount_clear(cc);
    assert_int_equal(lp_ctxcount_size(cc), 0);
    lp_ctxcount_free(cc);
}

/* lp_ctxcount_borrow_names: the frames keep the caller's name pointers
 * (copied otherwise); lookups are the same (names compared as strings,
 * the leaf's location ignored, as in the printed key), the key is printed
 * when the entries are listed; clear keeps the mode */
static void test_borrowed_names(void **state)
{
    char main_s[] = "main", foo_s[] = "foo", main2[] = "main", foo2[] = "foo";
    lp_ctx_frame a[2] = {{main_s, {1, 0}}, {foo_s, {0, 0}}};
    lp_ctx_frame same[2] = {{main2, {1, 0}}, {foo2, {7, 2}}};
    lp_ctx_frame other[2] = {{main2, {1, 1}}, {foo2, {0, 0}}};
    lp_ctxcount *cc = lp_ctxcount_new(), *copy = lp_ctxcount_new();
    lp_ctx_entry *e, *c, **v;
    (void)state;

    lp_ctxcount_borrow_names(cc);
    e = lp_ctxcount_get(cc, 0, a, 2, false, NULL);
    c = lp_ctxcount_get(copy, 0, a, 2, false, NULL);
    assert_non_null(e);
    assert_non_null(c);
    assert_ptr_equal(e->frames[0].func, main_s);
    assert_ptr_equal(e->frames[1].func, foo_s);
    assert_ptr_not_equal(c->frames[0].func, main_s);
    assert_string_equal(c->frames[1].func, "foo");
    assert_null(e->key);
    assert_int_equal(e->frames[0].loc.line, 1);
    assert_ptr_equal(lp_ctxcount_get(cc, 0, a, 2, false, NULL), e);
    assert_ptr_equal(lp_ctxcount_get(cc, 0, same, 2, false, NULL), e);
    assert_ptr_not_equal(lp_ctxcount_get(cc, 0, other, 2, false, NULL), e);
    assert_ptr_not_equal(lp_ctxcount_get(cc, 1, a, 2, false, NULL), e);
    assert_ptr_equal(lp_ctxcount_find(cc, 0, "main:1 @ foo"), e);
    /* lp_ctxcount_entries: the same entries in the same order, no key
     * printed */
    assert_int_equal(lp_ctxcount_entries(cc, &v), 3);
    assert_ptr_equal(v[0], e);
    assert_null(v[0]->key);
    assert_null(v[2]->key);
    free(v);
    assert_int_equal(lp_ctxcount_all(cc, &v), 3);
    assert_ptr_equal(v[0], e);
    free(v);
    assert_string_equal(e->key, "main:1 @ foo");
    assert_string_equal(c->key, e->key);
    lp_ctxcount_clear(cc);
    e = lp_ctxcount_get(cc, 0, a, 2, false, NULL);
    assert_ptr_equal(e->frames[0].func, main_s);
    lp_ctxcount_free(cc);
    lp_ctxcount_free(copy);
}

/* Merging b into a: a's entries first, then b's new ones in b's order;
 * a shared entry keeps a's was_leaf_inlined and gets both counts; b is
 * left empty and usable. */
/* A counter table past the linear-scan size (its index), with the same
 * pair added again after a sorted view was taken, and a merge. */
static void test_counters_grow(void **state)
{
    lp_counters *c = lp_counters_new(), *d = lp_counters_new();
    const lp_addr_pair_count *v;
    uint64_t i;
    long n;
    (void)state;

    for (i = 40; i-- > 0;)
        assert_int_equal(lp_counters_add_range(c, 0x100 + i, 0x200, i + 1), 0);
    assert_int_equal(lp_counters_ranges_view(c, &v), 40);
    for (i = 0; i < 40; i++) {
        assert_int_equal(v[i].a, 0x100 + i);
        assert_int_equal(v[i].count, i + 1);
    }
    assert_int_equal(lp_counters_add_range(c, 0x105, 0x200, 10), 0);
    assert_int_equal(lp_counters_add_range(c, 0x99, 0x200, 1), 0);
    assert_int_equal(lp_counters_add_branch(d, 0x1, 0x2, 2), 0);
    assert_int_equal(lp_counters_add_range(d, 0x105, 0x200, 1), 0);
    assert_int_equal(lp_counters_merge(d, c), 0);
    n = lp_counters_ranges_view(d, &v);
    assert_int_equal(n, 41);
    assert_int_equal(v[0].a, 0x99);
    assert_int_equal(v[6].a, 0x105);
    assert_int_equal(v[6].count, 6 + 10 + 1);
    assert_int_equal(lp_counters_branches_view(d, &v), 1);
    assert_int_equal(v[0].count, 2);
    lp_counters_free(c);
    lp_counters_free(d);
}

static void test_merge(void **state)
{
    lp_ctxcount *a = lp_ctxcount_new(), *b = lp_ctxcount_new();
    lp_ctx_frame f1[] = {{"main", {1, 0}}, {"foo", {0, 0}}};
    lp_ctx_frame f2[] = {{"bar", {0, 0}}};
    lp_ctx_frame f3[] = {{"main", {2, 0}}, {"baz", {0, 0}}};
    lp_addr_pair_count *r;
    lp_ctx_entry *e, **v;
    lp_error err;
    long n;
    (void)state;

    assert_non_null(e = lp_ctxcount_get(a, 0, f1, 2, true, &err));
    assert_int_equal(lp_counters_add_range(e->counters, 0x10, 0x20, 3), 0);
    assert_non_null(e = lp_ctxcount_get(a, 0, f2, 1, false, &err));
    assert_non_null(e = lp_ctxcount_get(b, 0, f3, 2, false, &err));
    assert_int_equal(lp_counters_add_branch(e->counters, 0x1, 0x2, 5), 0);
    assert_non_null(e = lp_ctxcount_get(b, 0, f1, 2, false, &err));
    assert_int_equal(lp_counters_add_range(e->counters, 0x10, 0x20, 4), 0);
    assert_int_equal(lp_counters_add_range(e->counters, 0x30, 0x40, 1), 0);
    assert_int_equal(lp_ctxcount_merge(a, b, &err), 0);
    assert_int_equal(lp_ctxcount_size(b), 0);
    assert_int_equal(lp_ctxcount_size(a), 3);
    n = lp_ctxcount_all(a, &v);
    assert_int_equal(n, 3);
    assert_string_equal(v[0]->key, "main:1 @ foo");
    assert_true(v[0]->was_leaf_inlined);
    assert_string_equal(v[1]->key, "bar");
    assert_string_equal(v[2]->key, "main:2 @ baz");
    assert_int_equal(lp_counters_ranges(v[0]->counters, &r), 2);
    assert_int_equal(r[0].count, 7);
    assert_int_equal(r[1].count, 1);
    free(r);
    free(v);
    assert_non_null(lp_ctxcount_find(a, 0, "main:2 @ baz"));
    assert_non_null(lp_ctxcount_get(b, 0, f2, 1, false, &err)); /* usable */
    lp_ctxcount_free(a);
    lp_ctxcount_free(b);
}

/* lp_ctxcount_merge_defer + _merge_deferred in two parts (as the
 * unwinder's two threads run them) give lp_ctxcount_merge's table:
 * the same entries in the same order, counts, was_leaf_inlined. */
static void fill_pair(lp_ctxcount *a, lp_ctxcount *b, lp_error *err)
{
    static const char *fn[] = {"f0", "f1", "f2", "f3", "f4", "f5", "f6"};
    lp_ctx_frame f[2];
    lp_ctx_entry *e;
    unsigned i;

    for (i = 0; i < 40; i++) {          /* a: 0..19, b: 10..39 */
        lp_ctxcount *t = i < 20 ? a : b;
        unsigned k = i < 20 ? i : i - 10;
        f[0] = (lp_ctx_frame){fn[k % 7], {k, 0}};
        f[1] = (lp_ctx_frame){fn[(k + 1) % 7], {0, 0}};
        assert_non_null(e = lp_ctxcount_get(t, 0, f, 2, t == b, err));
        assert_int_equal(lp_counters_add_range(e->counters, k, k + 8, i + 1), 0);
        assert_int_equal(lp_counters_add_branch(e->counters, k, 0x99, 1), 0);
    }
}

static void check_same(lp_ctxcount *x, lp_ctxcount *y)
{
    lp_ctx_entry **v, **w;
    lp_addr_pair_count *r, *q;
    long n, i, m;

    assert_int_equal(n = lp_ctxcount_all(x, &v), 30);
    assert_int_equal(lp_ctxcount_all(y, &w), 30);
    for (i = 0; i < n; i++) {
        assert_string_equal(v[i]->key, w[i]->key);
        assert_int_equal(v[i]->was_leaf_inlined, w[i]->was_leaf_inlined);
        assert_int_equal(m = lp_counters_ranges(v[i]->counters, &r),
                         lp_counters_ranges(w[i]->counters, &q));
        assert_memory_equal(r, q, (size_t)m * sizeof *r);
        free(r);
        free(q);
    }
    free(v);
    free(w);
}

/* lp_ctx_entry_leaf: the creator's value is provisional, the lowest rank's
 * stays whatever order the ranks come in, two values mark the entry mixed;
 * a merge gives dst the lower rank's leaf and src's mixed mark, and an
 * unranked src entry leaves dst's value. */
static void test_leaf_rank(void **state)
{
    lp_ctxcount *a = lp_ctxcount_new(), *b = lp_ctxcount_new();
    lp_ctx_frame f1[] = {{"main", {1, 0}}, {"foo", {0, 0}}};
    lp_ctx_frame f2[] = {{"bar", {0, 0}}};
    lp_ctx_entry *e, *d;
    lp_error err;
    (void)state;

    assert_non_null(e = lp_ctxcount_get(a, 0, f1, 2, true, &err));
    assert_true(e->leaf_rank == UINT64_MAX);
    lp_ctx_entry_leaf(e, false, 7);     /* the creator's value was provisional */
    assert_false(e->was_leaf_inlined);
    assert_false(e->leaf_inlined_mixed);
    lp_ctx_entry_leaf(e, true, 9);      /* later: the value stays, mixed */
    assert_false(e->was_leaf_inlined);
    assert_true(e->leaf_inlined_mixed);
    lp_ctx_entry_leaf(e, true, 3);      /* earlier: its value */
    assert_true(e->was_leaf_inlined);
    assert_true(e->leaf_rank == 3);
    /* merge: b's lower rank wins, an unranked entry keeps dst's value */
    assert_non_null(d = lp_ctxcount_get(a, 0, f2, 1, true, &err));
    lp_ctx_entry_leaf(d, true, 5);
    assert_non_null(e = lp_ctxcount_get(b, 0, f2, 1, false, &err));
    lp_ctx_entry_leaf(e, false, 4);
    assert_non_null(e = lp_ctxcount_get(b, 0, f1, 2, false, &err));
    assert_int_equal(lp_ctxcount_merge(a, b, &err), 0);
    assert_non_null(d = lp_ctxcount_find(a, 0, "bar"));
    assert_false(d->was_leaf_inlined);
    assert_true(d->leaf_rank == 4);
    assert_true(d->leaf_inlined_mixed);
    assert_non_null(d = lp_ctxcount_find(a, 0, "main:1 @ foo"));
    assert_true(d->was_leaf_inlined);
    assert_true(d->leaf_rank == 3);
    lp_ctxcount_free(a);
    lp_ctxcount_free(b);
}

static void test_merge_deferred(void **state)
{
    lp_error err;
    int borrow;
    (void)state;

    for (borrow = 0; borrow < 2; borrow++) {
        lp_ctxcount *a = lp_ctxcount_new(), *b = lp_ctxcount_new();
        lp_ctxcount *c = lp_ctxcount_new(), *d = lp_ctxcount_new();
        size_t n;

        if (borrow) {
            lp_ctxcount_borrow_names(a);
            lp_ctxcount_borrow_names(b);
            lp_ctxcount_borrow_names(c);
            lp_ctxcount_borrow_names(d);
        }
        fill_pair(a, b, &err);
        fill_pair(c, d, &err);
        assert_int_equal(lp_ctxcount_merge(a, b, &err), 0);
        if (borrow) {           /* counting them as it goes */
            size_t ready = 99;
            assert_int_equal(lp_ctxcount_merge_defer_ready(c, d, &ready, &err), 0);
            assert_int_equal(ready, lp_ctxcount_size(d));
        } else {
            assert_int_equal(lp_ctxcount_merge_defer(c, d, &err), 0);
        }
        assert_int_equal(n = lp_ctxcount_size(d), 10);  /* 10..19 in both */
        assert_int_equal(lp_ctxcount_merge_deferred(d, n / 2, n), 0);
        assert_int_equal(lp_ctxcount_merge_deferred(d, 0, n / 2), 0);
        lp_ctxcount_clear(d);
        check_same(a, c);
        lp_ctxcount_free(a);
        lp_ctxcount_free(b);
        lp_ctxcount_free(c);
        lp_ctxcount_free(d);
    }
}

/* A borrowing table's three kinds of entries - the empty context (a
 * hash key in its block), a frame context before and after its key is
 * printed (a block of its own) - found, listed, merged and freed: the
 * counters live in the entries' blocks, freed with them. */
static void test_entry_kinds(void **state)
{
    static const lp_ctx_frame f[] = {{"main", {3, 0}}, {"leaf", {0, 0}}};
    lp_ctxcount *a = lp_ctxcount_new(), *b = lp_ctxcount_new();
    lp_ctx_entry *e0, *e1, **v;
    lp_error err;
    size_t i;
    (void)state;

    for (i = 0; i < 2; i++) {
        lp_ctxcount *t = i ? b : a;
        lp_ctxcount_borrow_names(t);
        assert_non_null(e0 = lp_ctxcount_get(t, 0, NULL, 0, false, &err));
        assert_non_null(e1 = lp_ctxcount_get(t, 0, f, 2, false, &err));
        assert_string_equal(e0->key, "");
        assert_null(e1->key);
        assert_int_equal(lp_counters_add_range(e0->counters, 1, 2, 1 + i), 0);
        assert_int_equal(lp_counters_add_range(e1->counters, 5, 6, 10 + i), 0);
        assert_ptr_equal(lp_ctxcount_find(t, 0, ""), e0);
        assert_ptr_equal(lp_ctxcount_find(t, 0, "main:3 @ leaf"), e1);
    }
    assert_int_equal(lp_ctxcount_all(b, &v), 2);   /* b's keys printed */
    assert_string_equal(v[1]->key, "main:3 @ leaf");
    free(v);
    assert_int_equal(lp_ctxcount_merge_defer(a, b, &err), 0);
    assert_int_equal(lp_ctxcount_size(b), 2);
    assert_int_equal(lp_ctxcount_merge_deferred(b, 0, 2), 0);
    lp_ctxcount_clear(b);
    assert_int_equal(lp_ctxcount_all(a, &v), 2);
    for (i = 0; i < 2; i++) {
        const lp_addr_pair_count *r;
        assert_int_equal(lp_counters_ranges_view(v[i]->counters, &r), 1);
        assert_int_equal(r[0].count, i ? 21 : 3);
    }
    free(v);
    lp_ctxcount_release(a, 1);     /* a printed key, freed with its entry */
    lp_ctxcount_release(a, 0);
    lp_ctxcount_free(a);
    lp_ctxcount_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_format),
        cmocka_unit_test(test_entry_kinds),
        cmocka_unit_test(test_key_parse),
        cmocka_unit_test(test_table_and_raw),
        cmocka_unit_test(test_clear),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_borrowed_names),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_merge_deferred),
        cmocka_unit_test(test_leaf_rank),
        cmocka_unit_test(test_counters_grow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
