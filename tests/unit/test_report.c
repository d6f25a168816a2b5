/*
 * test_report.c - unit tests for src/report: the context-tree model
 * (totals, recursion, function table, contexts), building from LLVM text
 * profiles (flat with inlinees, CS), every writer on small hand-made
 * reports with exact expected output, escaping, and input detection.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "lbr2prof/report.h"

/* ---- helpers ----------------------------------------------------------- */

static lp_report_frame F(const char *func, uint32_t start, uint32_t line)
{
    lp_report_frame f;

    memset(&f, 0, sizeof f);
    f.func = func;
    f.file = "a.c";
    f.start_line = start;
    f.loc.line = line;
    return f;
}

static void add(lp_report *r, const lp_report_frame *fr, size_t n, uint64_t c)
{
    lp_error e;

    assert_int_equal(lp_report_add_stack(r, fr, n, c, &e), 0);
}

/* The fixture (root first; totals worked out by hand in the comments):
 *   main:2 @ work:1 @ leaf         5 at leaf+3, 2 at leaf+4   self 7
 *   main:2 @ work                  3 at work+5                self 3
 *   main:2 @ work:1 @ work:1 @ leaf 4 at leaf+3               self 4
 *   main:4 @ leaf                  1 at leaf+3                self 1
 *   main:6 @ inl (inlined)         1 at inl+0                 self 1
 *   [libc.so.6] (external)         2                          self 2
 * main total 16, grand total 18; work total 14 (recursion counted once). */
static lp_report *fixture(void)
{
    lp_report_frame s[4];
    lp_report_quality q = {1, 20, 18, 2, 0, 1, 2, 0, 3};
    const char *bins[] = {"/bin/prog"};
    lp_report_source src = {"prog.data", "perf-samples", bins, 1};
    lp_error e;
    lp_report *r = lp_report_new(LP_REPORT_SAMPLES, &e);

    assert_non_null(r);
    s[0] = F("main", 10, 2);
    s[1] = F("work", 20, 1);
    s[2] = F("leaf", 30, 3);
    add(r, s, 3, 5);
    s[2].loc.line = 4;
    add(r, s, 3, 2);
    s[1].loc.line = 5;
    add(r, s, 2, 3);
    s[1].loc.line = 1;
    s[2] = F("work", 20, 1);
    s[3] = F("leaf", 30, 3);
    add(r, s, 4, 4);
    s[0].loc.line = 4;
    s[1] = F("leaf", 30, 3);
    add(r, s, 2, 1);
    s[0].loc.line = 6;
    s[1] = F("inl", 40, 0);
    s[1].inlined = true;
    add(r, s, 2, 1);
    memset(&s[0], 0, sizeof s[0]);
    s[0].func = "[libc.so.6]";
    s[0].external = true;
    add(r, s, 1, 2);
    assert_int_equal(lp_report_set_source(r, &src, &e), 0);
    lp_report_set_quality(r, &q);
    assert_int_equal(lp_report_finish(r, &e), 0);
    return r;
}

static char *render(const lp_report *r, lp_report_format fmt, size_t top)
{
    lp_report_write_opts o;
    lp_error e;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    memset(&o, 0, sizeof o);
    o.format = fmt;
    o.top = top;
    assert_non_null(f);
    if (lp_report_write(f, r, &o, &e))
        fail_msg("write: %s", e.msg);
    fclose(f);
    return buf;
}

static lp_profile *read_profile(const char *text)
{
    FILE *f = fmemopen((void *)text, strlen(text), "r");
    lp_error e;
    lp_profile *p;

    assert_non_null(f);
    p = lp_profile_read_text(f, "test.prof", &e);
    fclose(f);
    if (!p)
        fail_msg("read: %s", e.msg);
    return p;
}

static lp_report *report_of(const char *text)
{
    lp_profile *p = read_profile(text);
    lp_error e;
    lp_report *r = lp_report_from_profile(p, NULL, NULL, NULL, &e);

    lp_profile_free(p);
    if (!r)
        fail_msg("report: %s", e.msg);
    return r;
}

static void assert_output(const lp_report *r, lp_report_format fmt,
                          const char *want)
{
    char *got = render(r, fmt, 0);

    if (strcmp(got, want))
        fail_msg("got:\n%s\nwant:\n%s", got, want);
    free(got);
}

/* ---- the model ------------------------------------------------------------- */

static void test_totals_and_functions(void **state)
{
    lp_report *r = fixture();
    const lp_report_node *root = lp_report_root(r), *main_n, *work;
    const lp_report_func *const *fn;
    size_t n = lp_report_functions(r, &fn);
    (void)state;

    assert_int_equal(root->total, 18);
    assert_int_equal(root->nchildren, 2);
    main_n = root->children[0];
    assert_string_equal(main_n->func->name, "main");
    assert_int_equal(main_n->total, 16);
    assert_int_equal(main_n->self, 0);
    /* children by total desc: work (14), then inl and leaf (1 each, by name) */
    assert_int_equal(main_n->nchildren, 3);
    work = main_n->children[0];
    assert_string_equal(work->func->name, "work");
    assert_int_equal(work->total, 14);
    assert_int_equal(work->callsite.line, 2);
    assert_string_equal(main_n->children[1]->func->name, "inl");
    assert_true(main_n->children[1]->inlined);
    assert_string_equal(main_n->children[2]->func->name, "leaf");
    assert_int_equal(main_n->children[2]->callsite.line, 4);
    /* functions: leaf 12, work 3 (total 14, not 18), [libc.so.6] 2, inl 1, main 0 */
    assert_int_equal(n, 5);
    assert_string_equal(fn[0]->name, "leaf");
    assert_int_equal(fn[0]->self, 12);
    assert_int_equal(fn[0]->total, 12);
    assert_int_equal(fn[0]->hot_loc.line, 3);
    assert_int_equal(fn[0]->hot_count, 10);
    assert_int_equal(lp_report_abs_line(fn[0], fn[0]->hot_loc), 33);
    assert_string_equal(fn[1]->name, "work");
    assert_int_equal(fn[1]->self, 3);
    assert_int_equal(fn[1]->total, 14);
    assert_string_equal(fn[2]->name, "[libc.so.6]");
    assert_true(fn[2]->external);
    assert_int_equal(fn[2]->hot_count, 0); /* no lines for external code */
    assert_string_equal(fn[3]->name, "inl");
    assert_string_equal(fn[4]->name, "main");
    assert_int_equal(fn[4]->total, 16);
    assert_true(lp_report_is_cs(r));
    lp_report_free(r);
}

static void test_contexts_and_keys(void **state)
{
    static const char *const want[] = {
        "main:2 @ work:1 @ leaf", "main:2 @ work:1 @ work:1 @ leaf",
        "main:2 @ work", "[libc.so.6]", "main:4 @ leaf", "main:6 @ inl",
    };
    lp_report *r = fixture();
    const lp_report_node **v;
    size_t n = lp_report_contexts(r, &v), i;
    char *k;
    (void)state;

    assert_int_equal(n, 6);
    for (i = 0; i < n; i++) {
        k = lp_report_context_key(v[i], false);
        assert_string_equal(k, want[i]);
        free(k);
    }
    free(v);
    lp_report_free(r);
}

static void test_abs_line_negative_offsets(void **state)
{
    lp_report_func f;
    (void)state;

    memset(&f, 0, sizeof f);
    assert_int_equal(lp_report_abs_line(&f, (lp_loc){3, 0}), 0); /* unknown */
    f.start_line = 10;
    assert_int_equal(lp_report_abs_line(&f, (lp_loc){3, 1}), 13);
    assert_int_equal(lp_report_abs_line(&f, (lp_loc){0xfffe, 0}), 8);
    assert_int_equal(lp_report_abs_line(&f, (lp_loc){0xfff6, 0}), 0);
}

/* ---- from profiles -------------------------------------------------------- */

static void test_flat_profile_inlinees(void **state)
{
    lp_report *r = report_of("foo:100:3\n"
                             " 1: 20\n"
                             " 2: 30 bar:5\n"
                             " 3: inl1:40\n"
                             "  1: 25\n"
                             "  2: inl2:10\n"
                             "   1: 10\n"
                             "bar:7:0\n"
                             " 1: 7\n"
                             "baz:5:0\n"
                             " 1: x:9\n"
                             "  1: 9\n");
    const lp_report_node *root = lp_report_root(r), *foo, *inl1;
    (void)state;

    assert_false(lp_report_is_cs(r));
    assert_int_equal(lp_report_get_unit(r), LP_REPORT_COUNTS);
    assert_int_equal(root->nchildren, 3);
    foo = root->children[0];
    assert_string_equal(foo->func->name, "foo");
    assert_int_equal(foo->self, 60);   /* 100 - inl1's 40 */
    assert_int_equal(foo->total, 100);
    assert_int_equal(foo->nlines, 2);
    assert_int_equal(foo->lines[1].count, 30);
    inl1 = foo->children[0];
    assert_true(inl1->inlined);
    assert_int_equal(inl1->callsite.line, 3);
    assert_int_equal(inl1->self, 30);
    assert_int_equal(inl1->children[0]->self, 10);
    /* baz says 5 but its inlinee says 9: self is 0, never negative */
    assert_string_equal(root->children[1]->func->name, "baz");
    assert_int_equal(root->children[1]->self, 0);
    assert_int_equal(root->children[1]->total, 9);
    assert_output(r, LP_REPORT_FOLDED, "bar 7\n"
                                       "baz;x 9\n"
                                       "foo 60\n"
                                       "foo;inl1 30\n"
                                       "foo;inl1;inl2 10\n");
    lp_report_free(r);
}

static const char cs_text[] = "[main:1 @ foo]:50:0\n"
                              " 1: 50\n"
                              "[main:1 @ foo:2.1 @ bar]:20:0\n"
                              " 1: 20\n"
                              "[main]:5:0\n"
                              " 1: 5\n"
                              "[main:3 @ foo]:7:0\n"
                              " 2: 7\n";

static void test_cs_profile(void **state)
{
    lp_report *r = report_of(cs_text);
    const lp_report_node *m = lp_report_root(r)->children[0], *bar;
    const lp_report_node **v;
    size_t n;
    char *k;
    (void)state;

    assert_true(lp_report_is_cs(r));
    assert_int_equal(m->total, 82);
    assert_int_equal(m->self, 5);
    assert_int_equal(m->nchildren, 2);
    bar = m->children[0]->children[0];
    assert_int_equal(bar->callsite.line, 2);
    assert_int_equal(bar->callsite.disc, 1);
    k = lp_report_context_key(bar, false);
    assert_string_equal(k, "main:1 @ foo:2.1 @ bar");
    free(k);
    n = lp_report_contexts(r, &v);
    assert_int_equal(n, 4);
    assert_int_equal(v[0]->self, 50);
    free(v);
    /* Two call sites of foo are two contexts, one folded stack. */
    assert_output(r, LP_REPORT_FOLDED, "main 5\n"
                                       "main;foo 57\n"
                                       "main;foo;bar 20\n");
    lp_report_free(r);
}

static void test_hook_keeps_quality(void **state)
{
    lp_profile *p = read_profile(cs_text);
    lp_report_quality q = {1, 100, 90, 10, 5, 4, 3, 2, 1};
    lp_report_source src = {"x.data", "perf-cs", NULL, 0};
    lp_error e;
    lp_report *r = lp_report_from_profile(p, NULL, &q, &src, &e);
    char *out;
    (void)state;

    assert_non_null(r);
    assert_int_equal(lp_report_get_quality(r)->repaired, 5);
    assert_string_equal(lp_report_kind(r), "perf-cs");
    out = render(r, LP_REPORT_TEXT, 0);
    assert_non_null(strstr(out, "  repaired                  5    5.00%\n"));
    free(out);
    lp_report_free(r);
    lp_profile_free(p);
}

/* ---- writers -------------------------------------------------------------- */

static void test_text(void **state)
{
    lp_report *r = fixture();
    (void)state;

    assert_output(r, LP_REPORT_TEXT,
        "lbr2prof report\n"
        "  input:     prog.data (perf-samples)\n"
        "  binary:    /bin/prog\n"
        "  total:     18 samples\n"
        "  contexts:  calling contexts\n"
        "  functions: 5\n"
        "\n"
        "Sample quality (% of samples read)\n"
        "  samples                  20\n"
        "  kept                     18   90.00%\n"
        "  dropped                   2   10.00%\n"
        "  repaired                  0    0.00%\n"
        "  truncated                 1    5.00%\n"
        "  external                  2   10.00%\n"
        "  context-less              0    0.00%\n"
        "  lost events               3\n"
        "\n"
        "Top functions by self (5 of 5)\n"
        "          self    self%        total   total%  function  [hottest line]\n"
        "            12   66.67%           12   66.67%  leaf  [a.c:33]\n"
        "             3   16.67%           14   77.78%  work  [a.c:25]\n"
        "             2   11.11%            2   11.11%  [libc.so.6]\n"
        "             1    5.56%            1    5.56%  inl  [a.c:40]\n"
        "             0    0.00%           16   88.89%  main  [a.c:10]\n"
        "\n"
        "Top contexts by self (6 of 6)\n"
        "          self    self%        total   total%  context  [hottest line]\n"
        "             7   38.89%            7   38.89%  main:2 @ work:1 @ leaf  [a.c:33]\n"
        "             4   22.22%            4   22.22%  main:2 @ work:1 @ work:1 @ leaf  [a.c:33]\n"
        "             3   16.67%           14   77.78%  main:2 @ work  [a.c:25]\n"
        "             2   11.11%            2   11.11%  [libc.so.6]\n"
        "             1    5.56%            1    5.56%  main:4 @ leaf  [a.c:33]\n"
        "             1    5.56%            1    5.56%  main:6 @ inl  [a.c:40]\n"
        "\n"
        "Hot paths (heaviest child at each step; total%, total)\n"
        "  #1\n"
        "    88.89%           16  main  [a.c:10]\n"
        "    77.78%           14    work  [a.c:25]\n"
        "    38.89%            7      leaf  [a.c:33]\n"
        "  #2\n"
        "    11.11%            2  [libc.so.6]\n");
    lp_report_free(r);
}

static void test_text_top_limits_rows(void **state)
{
    lp_report *r = fixture();
    char *out = render(r, LP_REPORT_TEXT, 2);
    (void)state;

    assert_non_null(strstr(out, "Top functions by self (2 of 5)\n"));
    assert_non_null(strstr(out, "Top contexts by self (2 of 6)\n"));
    assert_null(strstr(out, "  inl  [a.c:40]"));
    free(out);
    lp_report_free(r);
}

static void test_folded(void **state)
{
    lp_report *r = fixture();
    (void)state;

    assert_output(r, LP_REPORT_FOLDED, "[libc.so.6] 2\n"
                                       "main;inl 1\n"
                                       "main;leaf 1\n"
                                       "main;work 3\n"
                                       "main;work;leaf 7\n"
                                       "main;work;work;leaf 4\n");
    lp_report_free(r);
}

static void test_speedscope(void **state)
{
    lp_report *r = fixture();
    (void)state;

    assert_output(r, LP_REPORT_SPEEDSCOPE,
        "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\","
        "\"shared\":{\"frames\":["
        "{\"name\":\"main\",\"file\":\"a.c\",\"line\":10},"
        "{\"name\":\"work\",\"file\":\"a.c\",\"line\":20},"
        "{\"name\":\"leaf\",\"file\":\"a.c\",\"line\":30},"
        "{\"name\":\"inl\",\"file\":\"a.c\",\"line\":40},"
        "{\"name\":\"[libc.so.6]\"}]},"
        "\"profiles\":[{\"type\":\"sampled\",\"name\":\"prog.data\","
        "\"unit\":\"none\",\"startValue\":0,\"endValue\":18,"
        "\"samples\":[[0,1],[0,1,2],[0,1,1,2],[0,3],[0,2],[4]],"
        "\"weights\":[3,7,4,1,1,2]}],"
        "\"name\":\"prog.data\",\"activeProfileIndex\":0,\"exporter\":\"lbr2prof\"}\n");
    lp_report_free(r);
}

static void test_json(void **state)
{
    lp_report *r = fixture();
    char *out = render(r, LP_REPORT_JSON, 0);
    json_error_t je;
    json_t *j = json_loads(out, 0, &je), *t, *leaf, *fn;
    (void)state;

    if (!j)
        fail_msg("JSON: %s", je.text);
    assert_string_equal(json_string_value(json_object_get(j, "format")), "lbr2prof-report");
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
    assert_string_equal(json_string_value(json_object_get(j, "unit")), "samples");
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 18);
    assert_true(json_is_true(json_object_get(j, "context_sensitive")));
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "quality"), "lost")), 3);
    fn = json_array_get(json_object_get(j, "functions"), 0);
    assert_string_equal(json_string_value(json_object_get(fn, "name")), "leaf");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(fn, "hot_line"), "line")), 33);
    assert_null(json_object_get(fn, "demangled"));
    t = json_array_get(json_object_get(j, "tree"), 0);
    assert_string_equal(json_string_value(json_object_get(t, "name")), "main");
    assert_true(json_is_null(json_object_get(t, "call_site")));
    assert_int_equal(json_integer_value(json_object_get(t, "total")), 16);
    leaf = json_array_get(json_object_get(json_array_get(json_object_get(t, "children"), 0),
                                          "children"), 0);
    assert_string_equal(json_string_value(json_object_get(leaf, "name")), "leaf");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(leaf, "call_site"), "line")), 21);
    assert_int_equal(json_array_size(json_object_get(leaf, "lines")), 2);
    assert_int_equal(json_integer_value(json_object_get(
                         json_array_get(json_object_get(leaf, "lines"), 1), "line")), 34);
    json_decref(j);
    /* deterministic */
    {
        char *again = render(r, LP_REPORT_JSON, 0);
        assert_string_equal(out, again);
        free(again);
    }
    free(out);
    lp_report_free(r);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (; (hay = strstr(hay, needle)); hay++)
        n++;
    return n;
}

static void test_svg(void **state)
{
    lp_report *r = fixture();
    char *out = render(r, LP_REPORT_SVG, 0), *again;
    (void)state;

    /* "all" + 8 nodes, every one wide enough at 1200 px */
    assert_int_equal(count(out, "<g class=\"f\""), 9);
    assert_non_null(strstr(out, "id=\"f0\" data-d=\"0\" data-x=\"10.00\" data-w=\"1180.00\" data-c=\"0\""));
    assert_non_null(strstr(out, "<title>main [a.c:10] - total 16 samples (88.89%), "
                                "self 0 (0.00%)</title>"));
    assert_non_null(strstr(out, "<title>leaf [a.c:33] - total 7 samples (38.89%), "
                                "self 7 (38.89%), called at a.c:21</title>"));
    assert_non_null(strstr(out, "<title>inl [a.c:40] - total 1 samples (5.56%), "
                                "self 1 (5.56%), inlined at a.c:16</title>"));
    assert_non_null(strstr(out, "data-total=\"18\" data-unit=\"samples\""));
    assert_non_null(strstr(out, "<script type=\"text/ecmascript\"><![CDATA["));
    assert_null(strstr(strstr(out, "<![CDATA[") + 9, "]]>]]>"));
    /* the deepest frame (depth 4) is in the top row, the root at the bottom */
    assert_non_null(strstr(out, "data-d=\"4\""));
    assert_null(strstr(out, "data-d=\"5\""));
    again = render(r, LP_REPORT_SVG, 0);
    assert_string_equal(out, again);
    free(again);
    free(out);
    lp_report_free(r);
}

static void test_escaping_and_demangling(void **state)
{
    lp_report_frame s[2];
    lp_report_write_opts o;
    lp_error e;
    lp_report *r = lp_report_new(LP_REPORT_SAMPLES, &e);
    char *buf = NULL, *k;
    size_t len = 0;
    FILE *f;
    (void)state;

    s[0] = F("_ZN2ns3fooEi", 1, 0);
    s[1] = F("a<b>&\"c';d\xff", 5, 0);
    add(r, s, 2, 3);
    assert_int_equal(lp_report_finish(r, &e), 0);
    k = lp_report_context_key(lp_report_root(r)->children[0], true);
    assert_string_equal(k, "ns::foo(int)");
    free(k);
    assert_output(r, LP_REPORT_FOLDED, "ns::foo(int);a<b>&\"c':d\xff 3\n");
    memset(&o, 0, sizeof o);
    o.format = LP_REPORT_FOLDED;
    o.no_demangle = true;
    f = open_memstream(&buf, &len);
    assert_int_equal(lp_report_write(f, r, &o, &e), 0);
    fclose(f);
    assert_string_equal(buf, "_ZN2ns3fooEi;a<b>&\"c':d\xff 3\n");
    free(buf);
    buf = render(r, LP_REPORT_SVG, 0);
    assert_non_null(strstr(buf, "data-n=\"a&lt;b&gt;&amp;&quot;c&apos;;d?\""));
    assert_non_null(strstr(buf, "data-n=\"ns::foo(int)\""));
    assert_null(strstr(buf, "\xff"));
    free(buf);
    buf = render(r, LP_REPORT_JSON, 0);
    assert_non_null(strstr(buf, "\"name\": \"_ZN2ns3fooEi\",\n   \"demangled\": \"ns::foo(int)\""));
    free(buf);
    lp_report_free(r);
}

static void test_svg_labels_fit(void **state)
{
    char name[200];
    lp_report_frame s[2];
    lp_error e;
    lp_report *r = lp_report_new(LP_REPORT_SAMPLES, &e);
    char *out, *p;
    (void)state;

    memset(name, 'x', sizeof name - 1);
    name[sizeof name - 1] = 0;
    s[0] = F(name, 1, 0);
    add(r, s, 1, 1);
    s[0] = F("tiny", 1, 0);
    add(r, s, 1, 1000);
    assert_int_equal(lp_report_finish(r, &e), 0);
    out = render(r, LP_REPORT_SVG, 0);
    /* 1180 px * 1/1001 = 1.18 px: too narrow for any text */
    p = strstr(out, "data-n=\"xxx");
    assert_non_null(p);
    p = strstr(p, "<text");
    assert_non_null(p);
    assert_non_null(strstr(p, "\"></text>"));
    assert_true(strstr(p, "\"></text>") < strstr(p, "</g>"));
    /* the wide frame has its full name */
    assert_non_null(strstr(out, ">tiny</text>"));
    free(out);
    lp_report_free(r);
}

static void test_empty_report(void **state)
{
    lp_error e;
    lp_report *r = lp_report_new(LP_REPORT_COUNTS, &e);
    char *out;
    (void)state;

    assert_int_equal(lp_report_finish(r, &e), 0);
    assert_output(r, LP_REPORT_FOLDED, "");
    out = render(r, LP_REPORT_SVG, 0);
    assert_int_equal(count(out, "<g class=\"f\""), 0);
    free(out);
    out = render(r, LP_REPORT_TEXT, 0);
    assert_non_null(strstr(out, "  total:     0 profile counts\n"));
    free(out);
    lp_report_free(r);
}

/* ---- detection ---------------------------------------------------------------- */

static int detect_bytes(const void *data, size_t n)
{
    char path[] = "/tmp/test_report.XXXXXX";
    int fd = mkstemp(path);
    lp_report_input_kind k = 0;
    lp_error e;

    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, n), (ssize_t)n);
    close(fd);
    assert_int_equal(lp_report_detect(path, &k, &e), 0);
    unlink(path);
    return (int)k;
}

static void test_detect(void **state)
{
    /* ULEB128 of SPMagic(SPF_Ext_Binary = 4) as llvm-profdata writes it */
    uint64_t magic = ((uint64_t)'S' << 56) | ((uint64_t)'P' << 48) |
                     ((uint64_t)'R' << 40) | ((uint64_t)'O' << 32) |
                     ((uint64_t)'F' << 24) | ((uint64_t)'4' << 16) |
                     ((uint64_t)'2' << 8) | 4;
    unsigned char uleb[10];
    size_t n = 0;
    lp_report_input_kind k;
    lp_error e;
    (void)state;

    do {
        uleb[n] = magic & 0x7f;
        magic >>= 7;
        uleb[n++] |= magic ? 0x80 : 0;
    } while (magic);
    assert_int_equal(detect_bytes(uleb, n), LP_RIN_LLVM_BINARY);
    assert_int_equal(detect_bytes("PERFILE2\x68\0\0\0", 12), LP_RIN_PERF_DATA);
    assert_int_equal(detect_bytes("# c\n\nmain:379:0\n 1: 5\n", 22), LP_RIN_LLVM_TEXT);
    assert_int_equal(detect_bytes("[main:1 @ foo]:309:0\n", 21), LP_RIN_LLVM_TEXT);
    assert_int_equal(detect_bytes("\t  40067e\n 0x4006c8/0x40067e/P/-/-/0\n", 37),
                     LP_RIN_PERF_SCRIPT);
    assert_int_equal(detect_bytes("PERF_RECORD_MMAP2 1/1: [0x4(0x1) @ 0 0:0 0 0]: r-xp /x\n",
                                  55), LP_RIN_PERF_SCRIPT);
    assert_int_equal(detect_bytes("main:12:x\n", 10), LP_RIN_PERF_SCRIPT);
    assert_int_equal(lp_report_detect("/tmp", &k, &e), 0);
    assert_int_equal(k, LP_RIN_PERF_DATA);
    assert_int_equal(lp_report_detect("/nonexistent/x", &k, &e), -1);
    assert_non_null(strstr(e.msg, "/nonexistent/x"));
}

static void test_format_names(void **state)
{
    lp_report_format f;
    (void)state;

    assert_int_equal(lp_report_format_parse("svg", &f), 0);
    assert_int_equal(f, LP_REPORT_SVG);
    assert_int_equal(lp_report_format_parse("speedscope", &f), 0);
    assert_int_equal(f, LP_REPORT_SPEEDSCOPE);
    assert_int_equal(lp_report_format_parse("html", &f), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_totals_and_functions),
        cmocka_unit_test(test_contexts_and_keys),
        cmocka_unit_test(test_abs_line_negative_offsets),
        cmocka_unit_test(test_flat_profile_inlinees),
        cmocka_unit_test(test_cs_profile),
        cmocka_unit_test(test_hook_keeps_quality),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_text_top_limits_rows),
        cmocka_unit_test(test_folded),
        cmocka_unit_test(test_speedscope),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_svg),
        cmocka_unit_test(test_escaping_and_demangling),
        cmocka_unit_test(test_svg_labels_fit),
        cmocka_unit_test(test_empty_report),
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
