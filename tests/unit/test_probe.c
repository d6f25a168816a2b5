/*
 * test_probe.c - unit tests for the pseudo-probe decoder (src/probe):
 * the probe inputs of the llvm-profgen test suite decoded and checked
 * probe by probe where llvm-profgen-22 --show-disassembly-only
 * --show-pseudo-probe prints them (inline-cs-pseudoprobe: main inlines foo
 * at probe 2, foo inlines bar at 8), lookups by address and range, call
 * probes, inline stacks and their cut at unknown call sites, the GUID
 * filter, and hand-made sections: sentinels, discriminators, absolute
 * addresses, every truncation of a valid section (an error naming the
 * section and an offset, never a crash), out-of-range counts, a function
 * without a description; the DWARF discriminator packing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/probe.h"

#define INPUTS "tests/data/llvm-profgen-inputs/"

static lp_probes *open_decoded(const char *path)
{
    lp_error err = {0};
    lp_probes *p = lp_probes_open(path, &err);

    if (!p)
        fail_msg("%s", err.msg);
    if (lp_probes_decode(p, NULL, 0, NULL, 0, &err))
        fail_msg("%s", err.msg);
    return p;
}

/* The lines lp_probes_print_at writes for addr. */
static char *printed(const lp_probes *p, uint64_t addr)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    assert_non_null(f);
    lp_probes_print_at(p, addr, f);
    fclose(f);
    return buf;
}

static void inline_cs_pseudoprobe(void **state)
{
    lp_probes *p = open_decoded(INPUTS "inline-cs-pseudoprobe.perfbin");
    const lp_probe_desc *d;
    const lp_probe *cp;
    lp_probe_frame fr[8];
    const uint32_t *ids;
    char *s;
    size_t n;

    (void)state;
    assert_int_equal(lp_probes_count(p), 29);
    assert_int_equal(lp_probes_descs(p, &d), 3);
    assert_string_equal(d[0].name, "foo");
    assert_true(d[0].guid == 6699318081062747564ull);
    assert_true(d[0].hash == 563088904013236ull);
    assert_string_equal(lp_probes_desc(p, 15822663052811949562ull)->name,
                        "main");
    assert_null(lp_probes_desc(p, 1));
    s = printed(p, 0x2017f0);
    assert_string_equal(s,
        " [Probe]:\tFUNC: main Index: 1  Type: Block  \n"
        " [Probe]:\tFUNC: foo Index: 1  Type: Block  Inlined: @ main:2\n"
        " [Probe]:\tFUNC: foo Index: 2  Type: Block  Inlined: @ main:2\n");
    free(s);
    s = printed(p, 0x20183f);
    assert_string_equal(s,
        " [Probe]:\tFUNC: foo Index: 4  Type: Block  Inlined: @ main:2\n"
        " [Probe]:\tFUNC: bar Index: 1  Type: Block  Inlined: @ main:2 @ foo:8\n"
        " [Probe]:\tFUNC: bar Index: 4  Type: Block  Inlined: @ main:2 @ foo:8\n");
    free(s);
    /* the call in the inlined foo: probe 9, and its inline stack */
    cp = lp_probes_call_at(p, 0x201865);
    assert_non_null(cp);
    assert_int_equal(cp->index, 9);
    assert_int_equal(cp->type, LP_PROBE_DIRECT_CALL);
    n = lp_probes_inline_stack(p, cp, true, fr, 0, 8);
    assert_int_equal(n, 2);
    assert_string_equal(fr[0].func, "main");
    assert_int_equal(fr[0].index, 2);
    assert_string_equal(fr[1].func, "foo");
    assert_int_equal(fr[1].index, 9);
    assert_int_equal(lp_probes_inline_stack(p, cp, false, fr, 0, 8), 1);
    assert_int_equal(lp_probes_inline_stack(p, cp, true, fr, 0, 1), 2);
    assert_null(lp_probes_call_at(p, 0x2017f0));    /* blocks only */
    assert_null(lp_probes_call_at(p, 0x201866));    /* no probe */
    /* a range: 0x201800 and 0x201803 hold 1 + 2 probes */
    assert_int_equal(lp_probes_in(p, 0x201800, 0x201803, &ids), 3);
    assert_int_equal(lp_probes_probe(p, ids[0])->index, 5);
    assert_int_equal(lp_probes_in(p, 0x201801, 0x201802, &ids), 0);
    assert_int_equal(lp_probes_at(p, 0x201803, &ids), 2);
    assert_int_equal(lp_probes_probe(p, ids[0])->index, 6);
    assert_int_equal(lp_probes_probe(p, ids[1])->index, 2);
    lp_probes_free(p);
}

static void discriminators_and_calls(void **state)
{
    lp_probes *p = open_decoded(INPUTS "fs-discriminator-probe.perfbin");
    lp_probes *q = open_decoded(INPUTS "noinline-tailcall-probe.perfbin");
    size_t i, disc = 0, calls = 0;

    (void)state;
    for (i = 0; i < lp_probes_count(p); i++)
        disc += lp_probes_probe(p, (uint32_t)i)->disc != 0;
    assert_true(disc > 0);
    for (i = 0; i < lp_probes_count(q); i++)
        calls += lp_probe_is_call(lp_probes_probe(q, (uint32_t)i));
    assert_true(calls > 0);
    lp_probes_free(p);
    lp_probes_free(q);
}

/* Only main's record kept: foo's and bar's top-level records are read
 * (their addresses chain) but not kept. */
static void guid_filter(void **state)
{
    lp_error err = {0};
    lp_probes *p = lp_probes_open(INPUTS "inline-cs-pseudoprobe.perfbin",
                                  &err);
    uint64_t main_guid = lp_probe_guid("main");
    const lp_probe_node *nodes;
    const uint32_t *tops;
    char *s;

    (void)state;
    assert_non_null(p);
    assert_true(main_guid == 15822663052811949562ull);
    assert_int_equal(lp_probes_decode(p, &main_guid, 1, NULL, 0, &err), 0);
    assert_int_equal(lp_probes_tops(p, &tops), 1);
    lp_probes_nodes(p, &nodes);
    assert_true(nodes[tops[0]].guid == main_guid);
    assert_int_equal(lp_probes_node_depth(p, nodes[tops[0]].first_child), 2);
    s = printed(p, 0x2017f0);
    assert_non_null(strstr(s, "FUNC: main Index: 1"));
    free(s);
    assert_null(lp_probes_call_at(p, 0x2017e5)); /* foo's own record */
    assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), -1);
    lp_probes_free(p);
}

/* ---- hand-made sections ------------------------------------------------ */

typedef struct sec {
    unsigned char b[4096];
    size_t n;
} sec;

static void put8(sec *s, uint8_t v) { s->b[s->n++] = v; }
static void put64(sec *s, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        put8(s, (uint8_t)(v >> (8 * i)));
}
static void uleb(sec *s, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        put8(s, b | (v ? 0x80 : 0));
    } while (v);
}
static void sleb(sec *s, int64_t v)
{
    int more;
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        more = !((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40)));
        put8(s, b | (more ? 0x80 : 0));
    } while (more);
}
static void desc(sec *s, uint64_t guid, uint64_t hash, const char *name)
{
    put64(s, guid);
    put64(s, hash);
    uleb(s, strlen(name));
    memcpy(s->b + s->n, name, strlen(name));
    s->n += strlen(name);
}
/* a probe with a delta address */
static void probe(sec *s, uint32_t id, uint8_t type, uint8_t attr,
                  int64_t delta, uint32_t disc)
{
    uleb(s, id);
    put8(s, (uint8_t)(0x80 | type | attr << 4));
    sleb(s, delta);
    if (attr & LP_PROBE_ATTR_HAS_DISC)
        uleb(s, disc);
}

/* f (GUID 1, absolute first probe at 0x1000, a sentinel for its split
 * part at GUID 7 -> raw 0x7 as no symbol is known, a probe with a
 * discriminator), inlining g (GUID 2) at probe 3 with a site-0 inlinee h
 * (GUID 3) inside. */
static void build(sec *d, sec *pp)
{
    d->n = pp->n = 0;
    desc(d, 1, 11, "f");
    desc(d, 2, 22, "g");
    desc(d, 3, 33, "h");
    put64(pp, 1);                    /* f */
    uleb(pp, 4);                     /* probes */
    uleb(pp, 1);                     /* inlinees */
    uleb(pp, 1);                     /* probe 1, absolute */
    put8(pp, LP_PROBE_BLOCK);
    put64(pp, 0x1000);
    probe(pp, 3, LP_PROBE_INDIRECT_CALL, 0, 0x10, 0);     /* 0x1010 */
    uleb(pp, 0);                     /* sentinel: split part GUID 7 */
    put8(pp, LP_PROBE_ATTR_SENTINEL << 4);
    put64(pp, 7);
    probe(pp, 2, LP_PROBE_BLOCK, LP_PROBE_ATTR_HAS_DISC, 0x20, 5); /* 0x27 */
    uleb(pp, 3);                     /* g at f:3 */
    put64(pp, 2);
    uleb(pp, 1);
    uleb(pp, 1);
    probe(pp, 1, LP_PROBE_BLOCK, 0, 1, 0);                /* 0x28 */
    uleb(pp, 0);                     /* h at g:0 (unknown site) */
    put64(pp, 3);
    uleb(pp, 1);
    uleb(pp, 0);
    probe(pp, 4, LP_PROBE_BLOCK, 0, 2, 0);                /* 0x2a */
}

/* Whether lp_probes_at(addr) gives the probes at addr in (addr, id) order,
 * counted by brute force, and lp_probes_call_at the first call among them. */
static void check_at(const lp_probes *p, uint64_t addr)
{
    const uint32_t *ids;
    size_t n = lp_probes_at(p, addr, &ids), want = 0, i, k = 0;
    const lp_probe *call = NULL;

    for (i = 0; i < lp_probes_count(p); i++) {
        if (lp_probes_probe(p, (uint32_t)i)->addr != addr)
            continue;
        assert_true(k < n && ids[k++] == i);    /* id order at one address */
        if (!call && lp_probe_is_call(lp_probes_probe(p, (uint32_t)i)))
            call = lp_probes_probe(p, (uint32_t)i);
        want++;
    }
    assert_int_equal(n, want);
    assert_ptr_equal(lp_probes_call_at(p, addr), call);
}

/* The address index on a table big enough for its buckets (>= 64
 * probes): 300 probes of f from 0x4000 (steps of 0-9 bytes, some at one
 * address, every third a call), then a sentinel whose split part has no
 * symbol, so the next probes of f chain from its GUID (2^62): far above
 * the others, as sqlite-probe has them. Every lookup against brute force. */
static void address_index(void **state)
{
    sec d, pp;
    lp_error err = {0};
    lp_probes *p;
    const uint32_t *ids;
    uint64_t a, big = (uint64_t)1 << 62;
    uint32_t i;

    (void)state;
    d.n = pp.n = 0;
    desc(&d, 1, 11, "f");
    put64(&pp, 1);
    uleb(&pp, 300 + 1 + 5);
    uleb(&pp, 0);
    uleb(&pp, 1);                    /* probe 1, absolute */
    put8(&pp, LP_PROBE_BLOCK);
    put64(&pp, 0x4000);
    for (i = 2; i <= 300; i++)
        probe(&pp, i, i % 3 ? LP_PROBE_BLOCK : LP_PROBE_DIRECT_CALL, 0,
              (i * 7) % 10, 0);
    uleb(&pp, 0);                    /* sentinel: split part GUID 2^62 */
    put8(&pp, LP_PROBE_ATTR_SENTINEL << 4);
    put64(&pp, big);
    for (i = 301; i <= 305; i++)
        probe(&pp, i, LP_PROBE_DIRECT_CALL, 0, i == 303 ? 0 : 16, 0);
    p = lp_probes_from_bytes(d.b, d.n, pp.b, pp.n, "t", &err);
    assert_non_null(p);
    assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), 0);
    assert_int_equal(lp_probes_count(p), 305);
    for (a = 0x3ff0; a < 0x4000 + 300 * 9 + 16; a++)
        check_at(p, a);
    for (a = big; a < big + 100; a++)
        check_at(p, a);
    check_at(p, 0);
    check_at(p, UINT64_MAX);
    /* ranges: the whole text, none of the far ones; everything */
    assert_int_equal(lp_probes_in(p, 0x4000, big - 1, &ids), 300);
    assert_int_equal(lp_probes_in(p, 0, UINT64_MAX, &ids), 305);
    assert_int_equal(lp_probes_in(p, big + 1, UINT64_MAX, &ids), 5);
    assert_int_equal(lp_probes_probe(p, ids[0])->index, 301);
    assert_int_equal(lp_probes_in(p, big + 16, big + 32, &ids), 3);
    lp_probes_free(p);
}

static void hand_made(void **state)
{
    sec d, pp;
    lp_error err = {0};
    lp_probes *p;
    lp_probe_frame fr[4];
    const uint32_t *ids;
    const lp_probe *h;
    char *s;

    (void)state;
    build(&d, &pp);
    p = lp_probes_from_bytes(d.b, d.n, pp.b, pp.n, "t", &err);
    assert_non_null(p);
    assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), 0);
    assert_int_equal(lp_probes_count(p), 5);      /* the sentinel is none */
    assert_int_equal(lp_probes_at(p, 0x1000, &ids), 1);
    assert_int_equal(lp_probes_at(p, 0x1010, &ids), 1);
    assert_int_equal(lp_probes_call_at(p, 0x1010)->type,
                     LP_PROBE_INDIRECT_CALL);
    s = printed(p, 0x1010);
    assert_string_equal(s, " [Probe]:\tFUNC: f Index: 3  Type: IndirectCall"
                           "  \n");
    free(s);
    assert_int_equal(lp_probes_at(p, 0x27, &ids), 1);
    assert_int_equal(lp_probes_probe(p, ids[0])->disc, 5);
    s = printed(p, 0x27);
    assert_string_equal(s, " [Probe]:\tFUNC: f Index: 2  Discriminator: 5  "
                           "Type: Block  \n");
    free(s);
    s = printed(p, 0x2a);
    assert_string_equal(s, " [Probe]:\tFUNC: h Index: 4  Type: Block  "
                           "Inlined: @ f:3 @ g:0\n");
    free(s);
    /* the unknown site drops the frames before it */
    assert_int_equal(lp_probes_at(p, 0x2a, &ids), 1);
    h = lp_probes_probe(p, ids[0]);
    assert_int_equal(lp_probes_inline_stack(p, h, true, fr, 0, 4), 1);
    assert_string_equal(fr[0].func, "h");
    assert_int_equal(fr[0].index, 4);
    /* without the leaf the site-0 frame is the last one and stays */
    assert_int_equal(lp_probes_inline_stack(p, h, false, fr, 0, 4), 2);
    assert_string_equal(fr[1].func, "g");
    assert_int_equal(fr[1].index, 0);
    /* appended to frames already there: the cut drops those too */
    fr[0] = (lp_probe_frame){"x", 9, 0};
    assert_int_equal(lp_probes_inline_stack(p, h, true, fr, 1, 4), 1);
    assert_string_equal(fr[0].func, "h");
    fr[0] = (lp_probe_frame){"x", 9, 0};
    assert_int_equal(lp_probes_at(p, 0x28, &ids), 1);
    assert_int_equal(lp_probes_inline_stack(p, lp_probes_probe(p, ids[0]),
                                            true, fr, 1, 4), 3);
    assert_string_equal(fr[0].func, "x");
    assert_string_equal(fr[1].func, "f");
    assert_int_equal(fr[1].index, 3);
    assert_true(fr[1].hash == 11);
    assert_string_equal(fr[2].func, "g");
    assert_int_equal(fr[2].index, 1);
    assert_true(fr[2].hash == 22);
    /* too little room: the count needed, nothing written */
    assert_int_equal(lp_probes_inline_stack(p, lp_probes_probe(p, ids[0]),
                                            true, fr, 3, 4), 5);
    lp_probes_free(p);

    /* a known split-function start replaces the sentinel's GUID */
    {
        lp_probe_start st[] = {{7, 0x5000}, {1, 0x1000}};

        p = lp_probes_from_bytes(d.b, d.n, pp.b, pp.n, "t", &err);
        assert_non_null(p);
        assert_int_equal(lp_probes_decode(p, NULL, 0, st, 2, &err), 0);
        assert_int_equal(lp_probes_at(p, 0x5020, &ids), 1);
        lp_probes_free(p);
    }
}

/* Every strict prefix of the section is an error naming it, never a
 * crash; so is a function without a description. */
static void truncations(void **state)
{
    sec d, pp;
    lp_error err = {0};
    lp_probes *p;
    size_t cut;

    (void)state;
    build(&d, &pp);
    for (cut = 1; cut < pp.n; cut++) {
        p = lp_probes_from_bytes(d.b, d.n, pp.b, cut, "t", &err);
        assert_non_null(p);
        if (lp_probes_decode(p, NULL, 0, NULL, 0, &err) != -1)
            fail_msg("prefix of %zu bytes decoded", cut);
        assert_non_null(strstr(err.msg, "t: .pseudo_probe at offset 0x"));
        lp_probes_free(p);
    }
    for (cut = 1; cut < d.n; cut++) {
        if (cut == 18 || cut == 36)     /* whole records of f, g */
            continue;
        p = lp_probes_from_bytes(d.b, cut, pp.b, pp.n, "t", &err);
        if (p)
            fail_msg("description prefix of %zu bytes accepted", cut);
        assert_non_null(strstr(err.msg, "t: .pseudo_probe_desc at offset"));
    }
    /* descriptions without g: its record is refused */
    d.n = 0;
    desc(&d, 1, 11, "f");
    desc(&d, 3, 33, "h");
    p = lp_probes_from_bytes(d.b, d.n, pp.b, pp.n, "t", &err);
    assert_non_null(p);
    assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "without a .pseudo_probe_desc entry"));
    lp_probes_free(p);
}

/* Counts the bytes cannot hold, numbers out of range. */
static void out_of_range(void **state)
{
    sec d = {.n = 0}, pp = {.n = 0};
    lp_error err = {0};
    lp_probes *p;

    (void)state;
    desc(&d, 1, 11, "f");
    put64(&pp, 1);
    uleb(&pp, 0);
    uleb(&pp, 0xffffffffu);          /* 4G inlinees */
    p = lp_probes_from_bytes(d.b, d.n, pp.b, pp.n, "t", &err);
    assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "more inlinee records"));
    lp_probes_free(p);
    pp.n = 0;
    put64(&pp, 1);
    uleb(&pp, UINT64_C(1) << 33);    /* a probe count above 2^32 */
    p = lp_probes_from_bytes(d.b, d.n, pp.b, pp.n, "t", &err);
    assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), -1);
    assert_non_null(strstr(err.msg, "offset 0x8: bad probe count"));
    lp_probes_free(p);
    pp.n = 0;                        /* an 11-byte LEB */
    put64(&pp, 1);
    for (int i = 0; i < 10; i++)
        put8(&pp, 0x80);
    put8(&pp, 0);
    p = lp_probes_from_bytes(d.b, d.n, pp.b, pp.n, "t", &err);
    assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), -1);
    lp_probes_free(p);
    /* deep nesting is read without recursion */
    {
        static unsigned char big[1 << 20];
        size_t n = 0, i, depth = 60000;

        for (i = 0; i < depth; i++) {
            if (i)
                big[n++] = 1;       /* site */
            for (int k = 0; k < 8; k++)
                big[n++] = k == 0 ? 1 : 0;  /* GUID 1 */
            big[n++] = 0;           /* no probes */
            big[n++] = i + 1 < depth; /* one inlinee */
        }
        p = lp_probes_from_bytes(d.b, d.n, big, n, "t", &err);
        assert_int_equal(lp_probes_decode(p, NULL, 0, NULL, 0, &err), 0);
        lp_probes_free(p);
    }
}

static void dwarf_discriminators(void **state)
{
    lp_probe_disc x;
    /* index 5, factor 100, direct call, no base */
    uint32_t d = 7 | 5 << 3 | 100 << 19 | 2 << 26;

    (void)state;
    assert_true(lp_probe_disc_is_probe(d));
    lp_probe_disc_decode(d, &x);
    assert_int_equal(x.index, 5);
    assert_int_equal(x.factor, 100);
    assert_int_equal(x.type, LP_PROBE_DIRECT_CALL);
    assert_false(x.has_base);
    /* index 0x1234 with a base discriminator of 3 packed in bits 16-18 */
    d = 7 | 0x1234 << 3 | 3 << 16 | 1u << 28;
    lp_probe_disc_decode(d, &x);
    assert_int_equal(x.index, 0x1234);
    assert_true(x.has_base);
    assert_int_equal(x.base, 3);
    assert_false(lp_probe_disc_is_probe(4));
}

static void not_probe_binary(void **state)
{
    lp_error err = {0};

    (void)state;
    assert_int_equal(lp_probes_present(INPUTS "noinline-cs-noprobe.perfbin",
                                       &err), 0);
    assert_int_equal(lp_probes_present(INPUTS "noinline-cs-pseudoprobe.perfbin",
                                       &err), 1);
    assert_null(lp_probes_open(INPUTS "noinline-cs-noprobe.perfbin", &err));
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_null(lp_probes_open("/nonexistent", &err));
    assert_int_equal(err.code, LP_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(inline_cs_pseudoprobe),
        cmocka_unit_test(discriminators_and_calls),
        cmocka_unit_test(guid_filter),
        cmocka_unit_test(hand_made),
        cmocka_unit_test(address_index),
        cmocka_unit_test(truncations),
        cmocka_unit_test(out_of_range),
        cmocka_unit_test(dwarf_discriminators),
        cmocka_unit_test(not_probe_binary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
