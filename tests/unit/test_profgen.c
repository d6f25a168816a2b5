/*
 * test_profgen.c - unit tests for the profile driver (src/profgen) on
 * llvm-profgen's own inputs (tests/data/llvm-profgen-inputs): which route a
 * trace takes (hybrid -> CS, LBR-only -> flat), the sample statistics,
 * warnings through the callback, --skip-symbolization results, binary
 * discovery, extra binaries not changing a one-program profile, and the
 * failing stage of each kind of error.
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

#include "lbr2prof/profgen.h"

#define IN "tests/data/llvm-profgen-inputs/"

typedef struct msgs {
    char text[8192];
    int n;
} msgs;

static void collect(void *ctx, const char *msg)
{
    msgs *m = ctx;
    size_t len = strlen(m->text);

    snprintf(m->text + len, sizeof m->text - len, "%s\n", msg);
    m->n++;
}

static void opts(lp_profgen_opts *o, msgs *warn, msgs *note)
{
    lp_profgen_opts_default(o);
    o->warn = collect;
    o->warn_ctx = warn;
    o->note = collect;
    o->note_ctx = note;
}

/* The result written as a text profile, read back into a string. */
static char *as_text(lp_profgen_opts *o, const lp_profgen_result *r)
{
    char path[] = "/tmp/test_profgen.XXXXXX", *buf;
    lp_error err = {0};
    long n;
    FILE *f;
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    close(fd);
    o->output = path;
    o->format = LP_PROF_TEXT;
    assert_int_equal(lp_profgen_write(o, r, &err), 0);
    assert_non_null(f = fopen(path, "r"));
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    assert_non_null(buf = calloc(1, (size_t)n + 1));
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    unlink(path);
    return buf;
}

static void hybrid_trace_makes_cs_profile(void **state)
{
    const char *bins[] = {IN "noinline-cs-noprobe.perfbin"};
    lp_profgen_result r;
    lp_profgen_opts o;
    msgs w = {{0}}, n = {{0}};
    lp_error err = {0};
    char *text;

    (void)state;
    opts(&o, &w, &n);
    o.perfscript = IN "noinline-cs-noprobe.perfscript";
    o.binaries = bins;
    o.nbinaries = 1;
    o.cs.gen_nested = false;
    assert_int_equal(lp_profgen_run(&o, &r, &err), 0);
    assert_int_equal(r.kind, LP_PROFGEN_PROFILE);
    assert_true(r.context_sensitive);
    assert_false(r.discovered);
    assert_int_equal(r.failed, LP_PROFGEN_OK);
    assert_true(r.stats.from_trace);
    assert_true(r.stats.samples > 0);
    assert_int_equal(r.stats.hybrid, r.stats.samples);
    assert_int_equal(r.stats.lbr_only, 0);
    assert_int_equal(r.stats.used, r.stats.unwind.aggregated);
    assert_int_equal(r.stats.used + r.stats.dropped, r.stats.samples);
    assert_int_equal(r.stats.unwind.samples, r.stats.samples);
    text = as_text(&o, &r);
    assert_non_null(strstr(text, "[main:1 @ foo]:"));
    assert_non_null(strstr(text, "[main:1 @ foo:3 @ bar]:"));
    free(text);
    lp_profgen_result_free(&r);
}

static void lbr_trace_makes_flat_profile(void **state)
{
    const char *bins[] = {IN "noprobe.perfbin"};
    lp_profgen_result r;
    lp_profgen_opts o;
    msgs w = {{0}}, n = {{0}};
    lp_error err = {0};
    char *text;

    (void)state;
    opts(&o, &w, &n);
    o.perfscript = IN "noprobe.perfscript";
    o.binaries = bins;
    o.nbinaries = 1;
    assert_int_equal(lp_profgen_run(&o, &r, &err), 0);
    assert_false(r.context_sensitive);
    assert_int_equal(r.stats.hybrid, 0);
    assert_int_equal(r.stats.lbr_only, r.stats.samples);
    assert_true(r.stats.used > 0);
    assert_int_equal(r.stats.contextless, r.stats.used);
    assert_int_equal(r.stats.used + r.stats.dropped, r.stats.samples);
    text = as_text(&o, &r);
    assert_non_null(strstr(text, "bar:"));
    assert_null(strstr(text, "["));
    free(text);
    lp_profgen_result_free(&r);
}

/* Warnings go to the callback, in llvm-profgen's words; -use-md5 with a
 * text profile is one of them (at write time). */
static void warnings_reach_the_callback(void **state)
{
    const char *bins[] = {IN "noinline-cs-noprobe.perfbin"};
    lp_profgen_result r;
    lp_profgen_opts o;
    msgs w = {{0}}, n = {{0}};
    lp_error err = {0};

    (void)state;
    opts(&o, &w, &n);
    o.perfscript = IN "cs-invalid-ret-addr.perfscript";
    o.binaries = bins;
    o.nbinaries = 1;
    o.use_md5 = true;
    assert_int_equal(lp_profgen_run(&o, &r, &err), 0);
    free(as_text(&o, &r));
    assert_non_null(strstr(w.text, "-use-md5 is ignored"));
    assert_true(w.n >= 2);
    assert_int_equal(n.n, 0);
    lp_profgen_result_free(&r);
}

static void skip_symbolization_keeps_counters(void **state)
{
    const char *cs[] = {IN "noinline-cs-noprobe.perfbin"};
    const char *flat[] = {IN "noprobe.perfbin"};
    lp_profgen_result r;
    lp_profgen_opts o;
    msgs w = {{0}}, n = {{0}};
    lp_error err = {0};

    (void)state;
    opts(&o, &w, &n);
    o.skip_symbolization = true;
    o.perfscript = IN "noinline-cs-noprobe.perfscript";
    o.binaries = cs;
    o.nbinaries = 1;
    assert_int_equal(lp_profgen_run(&o, &r, &err), 0);
    assert_int_equal(r.kind, LP_PROFGEN_RAW_CS);
    assert_non_null(r.raw_cs);
    assert_true(lp_ctxcount_size(r.raw_cs) > 1);
    assert_null(r.profile);
    lp_profgen_result_free(&r);

    o.perfscript = IN "noprobe.perfscript";
    o.binaries = flat;
    assert_int_equal(lp_profgen_run(&o, &r, &err), 0);
    assert_int_equal(r.kind, LP_PROFGEN_RAW_FLAT);
    assert_non_null(r.raw_flat);
    lp_profgen_result_free(&r);
}

/* No --binary: the mmap's file, found next to the trace by its basename. */
static void binary_is_discovered(void **state)
{
    lp_profgen_result r;
    lp_profgen_opts o;
    msgs w = {{0}}, n = {{0}};
    lp_error err = {0};
    size_t len;

    (void)state;
    opts(&o, &w, &n);
    o.perfscript = IN "noprobe.mmap.perfscript";
    assert_int_equal(lp_profgen_run(&o, &r, &err), 0);
    assert_true(r.discovered);
    assert_int_equal(r.nbins, 1);
    len = strlen(r.paths[0]);
    assert_true(len >= 15);
    assert_string_equal(r.paths[0] + len - 15, "noprobe.perfbin");
    assert_non_null(strstr(n.text, "using binary "));
    lp_profgen_result_free(&r);
}

/* A second binary (not in the trace) is carried along and changes
 * nothing: the unwinder and generators count binaries[0]. */
static void extra_binary_changes_nothing(void **state)
{
    const char *one[] = {IN "noinline-cs-noprobe.perfbin"};
    const char *two[] = {IN "noinline-cs-noprobe.perfbin", IN "noprobe.perfbin"};
    lp_profgen_result r1, r2;
    lp_profgen_opts o;
    msgs w = {{0}}, n = {{0}};
    lp_error err = {0};
    char *t1, *t2;

    (void)state;
    opts(&o, &w, &n);
    o.perfscript = IN "noinline-cs-noprobe.perfscript";
    o.binaries = one;
    o.nbinaries = 1;
    assert_int_equal(lp_profgen_run(&o, &r1, &err), 0);
    t1 = as_text(&o, &r1);
    o.binaries = two;
    o.nbinaries = 2;
    assert_int_equal(lp_profgen_run(&o, &r2, &err), 0);
    assert_int_equal(r2.nbins, 2);
    assert_non_null(r2.bins[1]);
    t2 = as_text(&o, &r2);
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    lp_profgen_result_free(&r1);
    lp_profgen_result_free(&r2);
}

static void errors_name_their_stage(void **state)
{
    const char *missing[] = {"/nonexistent/binary"};
    const char *bin[] = {IN "noprobe.perfbin"};
    char raw[] = "/tmp/test_profgen_raw.XXXXXX";
    lp_profgen_result r;
    lp_profgen_opts o;
    msgs w = {{0}}, n = {{0}};
    lp_error err = {0};
    FILE *f;
    int fd;

    (void)state;
    opts(&o, &w, &n);
    o.perfscript = IN "noprobe.perfscript";
    o.binaries = missing;
    o.nbinaries = 1;
    assert_int_equal(lp_profgen_run(&o, &r, &err), -1);
    assert_int_equal(r.failed, LP_PROFGEN_BINARY);
    assert_non_null(strstr(err.msg, "/nonexistent/binary"));
    lp_profgen_result_free(&r);

    /* a truncated unsymbolized profile: the input's fault */
    assert_true((fd = mkstemp(raw)) >= 0);
    assert_non_null(f = fdopen(fd, "w"));
    fputs("2\n5b0-5c8:7\n", f);
    fclose(f);
    opts(&o, &w, &n);
    o.unsym = raw;
    o.binaries = bin;
    o.nbinaries = 1;
    assert_int_equal(lp_profgen_run(&o, &r, &err), -1);
    assert_int_equal(r.failed, LP_PROFGEN_INPUT);
    lp_profgen_result_free(&r);
    unlink(raw);

    /* discovery cannot read stdin twice */
    opts(&o, &w, &n);
    o.perfdata = "-";
    assert_int_equal(lp_profgen_run(&o, &r, &err), -1);
    assert_int_equal(err.code, LP_EUSAGE);
    assert_int_equal(r.failed, LP_PROFGEN_BINARY);
    lp_profgen_result_free(&r);
}

static void trace_kind_and_formats(void **state)
{
    lp_prof_format f;
    lp_error err = {0};
    bool stack, lbr;

    (void)state;
    assert_int_equal(lp_profgen_trace_kind(IN "noinline-cs-noprobe.perfscript",
                                           true, &stack, &lbr, &err), 0);
    assert_true(stack && lbr);
    assert_int_equal(lp_profgen_trace_kind(IN "noprobe.perfscript", true,
                                           &stack, &lbr, &err), 0);
    assert_true(!stack && lbr);
    assert_int_equal(lp_profgen_trace_kind("/nonexistent", true, &stack, &lbr,
                                           &err), -1);
    assert_int_equal(lp_profgen_format_parse("text", &f), 0);
    assert_int_equal(f, LP_PROF_TEXT);
    assert_int_equal(lp_profgen_format_parse("extbinary", &f), 0);
    assert_int_equal(f, LP_PROF_EXTBINARY);
    assert_int_equal(lp_profgen_format_parse("gcc", &f), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hybrid_trace_makes_cs_profile),
        cmocka_unit_test(lbr_trace_makes_flat_profile),
        cmocka_unit_test(warnings_reach_the_callback),
        cmocka_unit_test(skip_symbolization_keeps_counters),
        cmocka_unit_test(binary_is_discovered),
        cmocka_unit_test(extra_binary_changes_nothing),
        cmocka_unit_test(errors_name_their_stage),
        cmocka_unit_test(trace_kind_and_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
