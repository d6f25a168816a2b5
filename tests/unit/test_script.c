/*
 * test_script.c - src/script: the symbol tree perf keeps a file's symbols
 * in (symtree.c): red-black invariants through random insertions and
 * erasures, order, and perf's search where symbols overlap - the first
 * symbol on the search path that holds the address, so the tree's shape
 * decides (a symbol grown over .plt, then the PLT entries inserted).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "script/symtree.h"

static int32_t add(st_tree *t, uint64_t start, uint64_t end)
{
    st_sym *s = &t->v[t->n];

    memset(s, 0, sizeof *s);
    s->start = start;
    s->end = end;
    st_insert(t, (int32_t)t->n);
    return (int32_t)t->n++;
}

/* Red-black invariants below i: no red node with a red child, the same
 * number of black nodes on every path, parents that point back; returns
 * the black height. */
static int check(const st_tree *t, int32_t i, int32_t parent)
{
    int l, r;

    if (i == ST_NIL)
        return 1;
    assert_int_equal(t->v[i].parent, parent);
    if (t->v[i].red) {
        assert_false(t->v[i].left != ST_NIL && t->v[t->v[i].left].red);
        assert_false(t->v[i].right != ST_NIL && t->v[t->v[i].right].red);
    }
    l = check(t, t->v[i].left, i);
    r = check(t, t->v[i].right, i);
    assert_int_equal(l, r);
    return l + !t->v[i].red;
}

static void test_rb_invariants(void **st)
{
    st_tree t = {calloc(2000, sizeof(st_sym)), 0, 2000, ST_NIL};
    uint64_t prev;
    int32_t i;
    size_t n = 0;

    (void)st;
    srand(7);
    for (int k = 0; k < 2000; k++)
        add(&t, (uint64_t)(rand() % 500), 0); /* duplicates too */
    assert_false(t.v[t.root].red);
    check(&t, t.root, ST_NIL);
    for (int k = 0; k < 2000; k++) /* erase a third, in a scattered order */
        if ((k * 7) % 2000 % 3 == 0)
            st_erase(&t, (k * 7) % 2000);
    check(&t, t.root, ST_NIL);
    for (i = st_first(&t), prev = 0; i != ST_NIL; i = st_next(&t, i), n++) {
        assert_true(t.v[i].start >= prev);
        prev = t.v[i].start;
    }
    assert_true(n > 1000 && n < 2000);
    free(t.v);
}

static void test_find_overlap(void **st)
{
    st_tree t = {calloc(8, sizeof(st_sym)), 0, 8, ST_NIL};
    int32_t init, p1, p2, p3;

    (void)st;
    init = add(&t, 0x1000, 0x10c0);     /* _init, size 0 grown to _start */
    p1 = add(&t, 0x1030, 0x1040);       /* PLT entries inserted after */
    assert_int_equal(st_find(&t, 0x1035), init); /* _init is the root */
    p2 = add(&t, 0x1040, 0x1050);       /* rotation: p1 becomes the root */
    assert_int_equal(t.root, p1);
    assert_int_equal(st_find(&t, 0x1035), p1);
    assert_int_equal(st_find(&t, 0x1045), p2);
    assert_int_equal(st_find(&t, 0x1010), init);
    /* right of p2 is empty: _init, which holds it, is not on the path */
    assert_int_equal(st_find(&t, 0x1060), ST_NIL);
    p3 = add(&t, 0x1050, 0x1060);
    assert_int_equal(st_find(&t, 0x1055), p3);
    assert_int_equal(st_find(&t, 0x1060), ST_NIL); /* an end is outside */
    add(&t, 0x2000, 0x2000);            /* size 0: holds its own address */
    assert_int_not_equal(st_find(&t, 0x2000), ST_NIL);
    assert_int_equal(st_find(&t, 0x2001), ST_NIL);
    free(t.v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rb_invariants),
        cmocka_unit_test(test_find_overlap),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
