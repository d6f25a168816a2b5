/*
 * test_dynlib.c - unit tests for src/util/dynlib.c (a library loaded at
 * first use, its functions resolved into a caller's table) and
 * src/util/demangle.c (__cxa_demangle through it); and that the program
 * does not load libpfm4, libmicrohttpd or libstdc++ before it needs them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/demangle.h"
#include "util/dynlib.h"

typedef struct libc_api {
    __typeof__(strlen) *strlen;
    __typeof__(strchr) *strchr;
} libc_api;

static const lp_dynsym libc_syms[] = {
    LP_DYNSYM(libc_api, strlen, strlen),
    LP_DYNSYM(libc_api, strchr, strchr),
};

/* 1 if a mapping of the process names `lib`. */
static int mapped(const char *lib)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    int found = 0;

    assert_non_null(f);
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, lib) != NULL;
    fclose(f);
    return found;
}

/* The AddressSanitizer runtime (make check's second build) itself needs
 * libstdc++, so only without it can libstdc++'s absence be checked. */
static int stdcxx_expected(void)
{
    return mapped("libasan.so");
}

static void test_not_loaded_at_start(void **state)
{
    (void)state;
    assert_false(mapped("libpfm.so"));
    assert_false(mapped("libmicrohttpd.so"));
    if (!stdcxx_expected())
        assert_false(mapped("libstdc++.so"));
}

static void test_resolves_and_calls(void **state)
{
    libc_api t = {0};
    lp_error err = {0};
    void *h;
    const char *s = "dynlib";
    (void)state;
    h = lp_dynlib_open("libc.so.6", "libc6", libc_syms, 2, &t, &err);
    assert_non_null(h);
    assert_non_null(t.strlen);
    assert_int_equal(t.strlen("lbr2prof"), 8);
    assert_ptr_equal(t.strchr(s, 'l'), s + 3);
    lp_dynlib_close(h);
}

static void test_missing_library_named(void **state)
{
    libc_api t = {0};
    lp_error err = {0};
    (void)state;
    assert_null(lp_dynlib_open("liblp-no-such.so.7", "liblp-nosuch7", libc_syms, 2,
                               &t, &err));
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_non_null(strstr(err.msg, "liblp-no-such.so.7"));
    assert_non_null(strstr(err.msg, "install the Debian package liblp-nosuch7"));
    assert_null(t.strlen);
}

static void test_missing_symbol_named(void **state)
{
    libc_api t = {0};
    lp_error err = {0};
    const lp_dynsym syms[] = {
        {"strlen", offsetof(libc_api, strlen)},
        {"lp_no_such_function", offsetof(libc_api, strchr)},
    };
    (void)state;
    assert_null(lp_dynlib_open("libc.so.6", "libc6", syms, 2, &t, &err));
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_non_null(strstr(err.msg, "libc.so.6"));
    assert_non_null(strstr(err.msg, "lp_no_such_function"));
    assert_non_null(strstr(err.msg, "libc6"));
    assert_null(strstr(err.msg, "strlen"));
}

static void test_demangle_loads_at_first_name(void **state)
{
    lp_demangler d = {0};
    char *s;
    (void)state;
    if (!stdcxx_expected())
        assert_false(mapped("libstdc++.so"));
    assert_null(lp_demangle(&d, "f"));          /* a C function, not "float" */
    assert_int_equal(d.state, 0);               /* and nothing loaded for it */
    s = lp_demangle(&d, "_ZN2ns3fooEi");
    assert_non_null(s);
    assert_string_equal(s, "ns::foo(int)");
    free(s);
    assert_true(mapped("libstdc++.so"));
    assert_null(lp_demangle(&d, "main"));       /* not a mangled name */
    assert_null(lp_demangle(&d, "i"));          /* not "int" */
    assert_null(lp_demangle(&d, "_Z"));         /* malformed */
    s = lp_demangle(&d, "_ZNSt6vectorIiSaIiEE9push_backERKi");
    assert_non_null(s);
    assert_string_equal(s, "std::vector<int, std::allocator<int> >::push_back(int const&)");
    free(s);
    lp_demangler_close(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_loaded_at_start), /* first: nothing loaded yet */
        cmocka_unit_test(test_resolves_and_calls),
        cmocka_unit_test(test_missing_library_named),
        cmocka_unit_test(test_missing_symbol_named),
        cmocka_unit_test(test_demangle_loads_at_first_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
