/*
 * test_symbolicate.c - unit tests for src/symbolicate: the seed-002
 * acceptance cases T002-1..T002-6 (exact responses and error titles),
 * found_modules true/false/null, v4, store containment (path traversal,
 * symlinks, debug-id mismatch) and the seed-000 cases T000-6/T000-7 at
 * the response level.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbr2prof/symbolicate.h"

#define TP1 "D48F191186D67E69DF025AD71FB91E1F0"
#define TP2 "0905AE80CEE75A33E3CAB61C274274DE0"
#define NT "F86EB934B42FBB79B2595AA25907695C1"

typedef struct fixture {
    char root[64];      /* temp dir; the store is root/store */
    char store[128];
    lp_sym_store *st;
} fixture;

static void put(const char *root, const char *rel, const char *text)
{
    char path[512], *p;
    FILE *f;

    mkdir(root, 0755);
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    lp_error e;
    char target[256], link[256];

    strcpy(fx->root, "/tmp/lp-sym-XXXXXX");
    assert_non_null(mkdtemp(fx->root));
    snprintf(fx->store, sizeof fx->store, "%s/store", fx->root);
    put(fx->store, "testproj/" TP1 "/testproj.sym",
        "MODULE Linux x86_64 " TP1 " testproj\n"
        "FILE 0 /home/willkg/projects/testproj/src/main.rs\n"
        "FUNC 5380 44 0 testproj::main\n5380 9 1 0\n5389 36 2 0\n53bf 5 3 0\n");
    put(fx->store, "testproj/" TP2 "/testproj.sym",
        "MODULE Linux x86_64 " TP2 " testproj\n"
        "INFO CODE_ID 80AE0509E7CE335AE3CAB61C274274DE96049B64\n"
        "FILE 0 /home/willkg/projects/testproj/src/main.rs\n"
        "FILE 1 /rustc/e092d0b6b43f2de967af0887873151bb1c0b18d3/library/core/src/fmt/mod.rs\n"
        "FILE 2 /home/willkg/projects/testproj/src/support.rs\n"
        "INLINE_ORIGIN 0 testproj::support::middle\n"
        "INLINE_ORIGIN 1 testproj::support::inner\n"
        "INLINE_ORIGIN 2 core::fmt::Arguments::new_v1\n"
        "FUNC 7a40 85 0 testproj::main\n"
        "INLINE 0 4 0 0 7a40 7d\nINLINE 1 2 2 1 7a40 49\nINLINE 2 7 2 2 7a40 3a\n"
        "INLINE 1 3 2 2 7a89 31\n"
        "7a40 7 3 0\n7a47 33 392 1\n7a7a f 7 2\n7a89 31 392 1\n7aba 3 3 2\n7abd 8 5 0\n"
        "7a82 5 5 2\n");
    put(fx->store, "ntdll.pdb/" NT "/ntdll.sym",
        "MODULE windows x86_64 " NT " ntdll.pdb\n"
        "INFO CODE_ID 0532197720E000 ntdll.dll\n"
        "FUNC 1008 106 0 LdrpGetModuleName\n"
        "PUBLIC 1120 0 LdrQueryNextListEntry\n"
        "PUBLIC 1140 0 LdrQueryModuleInfoFromLdrEntry\n"
        "FUNC 1260 4a 0 LdrpReadMemory\n");
    /* A sym file whose MODULE line carries another id, and a broken one. */
    put(fx->store, "wrongid.so/ABCD/wrongid.so.sym",
        "MODULE Linux x86_64 1234 wrongid.so\nFUNC 0 10 0 f\n");
    put(fx->store, "broken.so/ABCD/broken.so.sym", "MODULE Linux x86_64 ABCD broken.so\nFUNC x\n");
    /* Files outside the store that traversal would reach. */
    put(fx->root, "ABCD/...sym", "MODULE Linux x86_64 ABCD ..\nFUNC 0 10 0 escaped\n");
    put(fx->root, "outside.sym", "MODULE Linux x86_64 ABCD evil.so\nFUNC 0 10 0 escaped\n");
    snprintf(target, sizeof target, "%s/outside.sym", fx->root);
    snprintf(link, sizeof link, "%s/evil.so/ABCD", fx->store);
    put(fx->store, "evil.so/ABCD/placeholder", "");
    snprintf(link, sizeof link, "%s/evil.so/ABCD/evil.so.sym", fx->store);
    assert_int_equal(symlink(target, link), 0);
    /* T000-6: different lines at 0x2004 and 0x2005. */
    put(fx->store, "adj.so/AAAA/adj.so.sym",
        "MODULE Linux x86_64 AAAA adj.so\nFILE 0 a.c\n"
        "FUNC 1000 10 0 leaf\n1000 10 10 0\n"
        "FUNC 2000 10 0 mid\n2000 5 20 0\n2005 b 21 0\n"
        "FUNC 3000 10 0 top\n3000 8 30 0\n3008 8 31 0\n");
    fx->st = lp_sym_store_new(&e);
    assert_non_null(fx->st);
    assert_int_equal(lp_sym_store_add_dir(fx->st, fx->store, &e), 0);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    char cmd[128];

    lp_sym_store_free(fx->st);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx->root);
    if (system(cmd) != 0)
        return -1;
    free(fx);
    return 0;
}

/* Run a request and compare with the expected JSON (key order free). */
static void expect_json(fixture *fx, int v4, const lp_sym_opts *o, const char *req,
                        const char *expected)
{
    lp_error e;
    char *out = v4 ? lp_symbolicate_v4(fx->st, req, strlen(req), o, &e)
                   : lp_symbolicate_v5(fx->st, req, strlen(req), o, &e);
    json_t *a, *b;

    if (!out)
        fail_msg("request failed: %s\n%s", e.msg, req);
    a = json_loads(out, 0, NULL);
    b = json_loads(expected, 0, NULL);
    assert_non_null(a);
    assert_non_null(b);
    if (!json_equal(a, b))
        fail_msg("got      %s\nexpected %s", out, expected);
    json_decref(a);
    json_decref(b);
    free(out);
}

static void expect_title(fixture *fx, int v4, const char *req, const char *title)
{
    lp_error e;
    char *out = v4 ? lp_symbolicate_v4(fx->st, req, strlen(req), NULL, &e)
                   : lp_symbolicate_v5(fx->st, req, strlen(req), NULL, &e);

    if (out)
        fail_msg("expected error '%s', got %s", title, out);
    assert_int_equal(e.code, LP_EFORMAT);
    assert_string_equal(e.msg, title);
}

static void expect_ok(fixture *fx, const char *req)
{
    lp_error e;
    char *out = lp_symbolicate_v5(fx->st, req, strlen(req), NULL, &e);

    if (!out)
        fail_msg("valid request refused: %s: %s", req, e.msg);
    free(out);
}

static void t002_1_symbols_and_unreferenced(void **state)
{
    expect_json(*state, 0, NULL,
        "{\"jobs\":[{\"memoryMap\":[[\"testproj\",\"" TP1 "\"],[\"libc.so\",\"12345\"]],"
        "\"stacks\":[[[0,21376],[0,21392],[0,1000]]]}]}",
        "{\"results\":[{\"stacks\":[["
        "{\"frame\":0,\"module\":\"testproj\",\"module_offset\":\"0x5380\",\"function\":\"testproj::main\",\"function_offset\":\"0x0\",\"file\":\"/home/willkg/projects/testproj/src/main.rs\",\"line\":1},"
        "{\"frame\":1,\"module\":\"testproj\",\"module_offset\":\"0x5390\",\"function\":\"testproj::main\",\"function_offset\":\"0x10\",\"file\":\"/home/willkg/projects/testproj/src/main.rs\",\"line\":2},"
        "{\"frame\":2,\"module\":\"testproj\",\"module_offset\":\"0x3e8\"}]],"
        "\"found_modules\":{\"testproj/" TP1 "\":true,\"libc.so/12345\":null}}]}");
}

static void t002_2_missing_symbols(void **state)
{
    fixture *fx = *state;
    lp_sym_store *st = fx->st;
    lp_error e;

    /* The same store without the sym file: a store over an empty dir. */
    fx->st = lp_sym_store_new(&e);
    assert_int_equal(lp_sym_store_add_dir(fx->st, fx->root, &e), 0);
    expect_json(fx, 0, NULL,
        "{\"jobs\":[{\"memoryMap\":[[\"testproj\",\"" TP1 "\"],[\"libc.so\",\"12345\"]],"
        "\"stacks\":[[[0,1000],[0,1020]]]}]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"testproj\",\"module_offset\":\"0x3e8\"},"
        "{\"frame\":1,\"module\":\"testproj\",\"module_offset\":\"0x3fc\"}]],"
        "\"found_modules\":{\"testproj/" TP1 "\":false,\"libc.so/12345\":null}}]}");
    lp_sym_store_free(fx->st);
    fx->st = st;
}

static void t002_3_inlines(void **state)
{
    expect_json(*state, 0, NULL,
        "{\"jobs\":[{\"memoryMap\":[[\"testproj\",\"" TP2 "\"]],\"stacks\":[[[0,31354]]]}]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"testproj\",\"module_offset\":\"0x7a7a\","
        "\"function\":\"testproj::main\",\"function_offset\":\"0x3a\","
        "\"file\":\"/home/willkg/projects/testproj/src/main.rs\",\"line\":4,"
        "\"inlines\":[{\"function\":\"testproj::support::inner\",\"file\":\"/home/willkg/projects/testproj/src/support.rs\",\"line\":7},"
        "{\"function\":\"testproj::support::middle\",\"file\":\"/home/willkg/projects/testproj/src/support.rs\",\"line\":2}]}]],"
        "\"found_modules\":{\"testproj/" TP2 "\":true}}]}");
}

static void t002_4_pe_name_no_lines(void **state)
{
    expect_json(*state, 0, NULL,
        "{\"jobs\":[{\"memoryMap\":[[\"ntdll.pdb\",\"" NT "\"]],\"stacks\":[[[0,4104]]]}]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"ntdll.dll\",\"module_offset\":\"0x1008\","
        "\"function\":\"LdrpGetModuleName\",\"function_offset\":\"0x0\"}]],"
        "\"found_modules\":{\"ntdll.pdb/" NT "\":true}}]}");
}

static void t002_5_v4(void **state)
{
    expect_json(*state, 1, NULL,
        "{\"memoryMap\":[[\"testproj\",\"" TP1 "\"],[\"libc.so\",\"12345\"]],"
        "\"stacks\":[[[0,21376],[1,4096]]],\"version\":4}",
        "{\"symbolicatedStacks\":[[\"testproj::main (in testproj)\",\"0x1000 (in libc.so)\"]],"
        "\"knownModules\":[true,false]}");
    expect_title(*state, 1, "{\"stacks\":[[[0,1]]]}", "job 0 is invalid: no memoryMap specified");
}

static void t002_6_errors(void **state)
{
    fixture *fx = *state;
    char big[2048];
    int i;

    expect_title(fx, 0, "", "Payload is not valid JSON");
    expect_title(fx, 0, "{\"jobs\":", "Payload is not valid JSON");
    expect_title(fx, 0, "{}", "job 0 is invalid: no stacks specified");
    expect_title(fx, 0, "{\"jobs\":[{\"stacks\":[[[0,1000]]],\"memoryMap\":[[\"xul.so\",\"ABCDE\"]]},{\"modules\":[]}]}",
                 "job 1 is invalid: no stacks specified");
    expect_title(fx, 0, "{\"memoryMap\":[[\"[vdso]\",\"ABC\"]],\"stacks\":[[[0,1]]]}",
                 "job 0 has invalid modules: module index 0 has an invalid debug_filename");
    expect_title(fx, 0, "{\"memoryMap\":[[\"abc.so\",\"xyz\"]],\"stacks\":[[[0,1]]]}",
                 "job 0 has invalid modules: module index 0 has an invalid debug_id");
    expect_title(fx, 0, "{\"memoryMap\":[[\"abc.so\",\"ABC\"]],\"stacks\":[[[-2,0]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has a module_index that isn't in modules");
    expect_title(fx, 0, "{\"memoryMap\":[[\"abc.so\",\"ABC\"]],\"stacks\":[[[0,-2]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset");
    expect_title(fx, 0, "{\"memoryMap\":[[\"abc.so\",\"ABC\"]],\"stacks\":[[0]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 is not a list of two items");
    expect_title(fx, 0, "{\"memoryMap\":[],\"stacks\":[]}",
                 "job 0 has invalid stacks: no stacks specified");
    /* The other messages of the service. */
    expect_title(fx, 0, "{\"memoryMap\":{},\"stacks\":[[]]}",
                 "job 0 has invalid modules: modules must be a list");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\"]],\"stacks\":[[]]}",
                 "job 0 has invalid modules: module index 0 does not have a debug_filename and debug_id");
    expect_title(fx, 0, "{\"memoryMap\":[],\"stacks\":{}}",
                 "job 0 has invalid stacks: stacks must be a list of lists");
    expect_title(fx, 0, "{\"memoryMap\":[],\"stacks\":[[],5]}",
                 "job 0 has invalid stacks: stack 1 is not a list");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[0,1],[\"0\",1]]]}",
                 "job 0 has invalid stacks: stack 0 frame 1 has an invalid module_index");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[0,1.5]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[1,1]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has a module_index that isn't in modules");
    expect_title(fx, 0, "{\"jobs\":[5]}", "job 0 is invalid");
    expect_title(fx, 0, "{\"stacks\":[[]]}", "job 0 is invalid: no memoryMap specified");
    strcpy(big, "{\"jobs\":[");
    for (i = 0; i < 11; i++)
        strcat(big, i ? ",{\"stacks\":[[]],\"memoryMap\":[]}" : "{\"stacks\":[[]],\"memoryMap\":[]}");
    strcat(big, "]}");
    expect_title(fx, 0, big, "please limit number of jobs in a single request to <= 10");
    big[strlen(big) - 2 - strlen(",{\"stacks\":[[]],\"memoryMap\":[]}")] = '\0';
    strcat(big, "]}"); /* 10 jobs are fine */
    expect_ok(fx, big);
    /* Valid inputs that must not error. */
    expect_ok(fx, "{\"memoryMap\":[],\"stacks\":[[]]}");
    expect_ok(fx, "{\"memoryMap\":[[\"\",\"\"]],\"stacks\":[[]]}");
    expect_ok(fx, "{\"memoryMap\":[[\"Font Awesome 5 Free-Solid-900.otf\",\"000000000000000000000000000000000\"]],\"stacks\":[[]]}");
    expect_ok(fx, "{\"memoryMap\":[[\"libstdc++.so.6\",\"BF1B638ACD2AAFFD554335BB9E8A04DD0\"]],\"stacks\":[[]]}");
    expect_ok(fx, "{\"memoryMap\":[[\"a.so\",\"AB\"]],\"stacks\":[[[-1,1000],[0,-1]]]}");
}

static void unknown_and_negative_frames(void **state)
{
    expect_json(*state, 0, NULL,
        "{\"memoryMap\":[[\"testproj\",\"" TP1 "\"],[\"\",\"\"]],\"stacks\":[[[-1,1000],[0,-1],[1,5]]]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"<unknown>\",\"module_offset\":\"0x3e8\"},"
        "{\"frame\":1,\"module\":\"testproj\",\"module_offset\":\"-0x1\"},"
        "{\"frame\":2,\"module\":\"<unknown>\",\"module_offset\":\"0x5\"}]],"
        "\"found_modules\":{\"testproj/" TP1 "\":true,\"/\":null}}]}");
}

static void found_modules_false_cases(void **state)
{
    /* MODULE id mismatch and a malformed file: false; lower-case id finds
     * the upper-case directory. */
    expect_json(*state, 0, NULL,
        "{\"memoryMap\":[[\"wrongid.so\",\"ABCD\"],[\"broken.so\",\"ABCD\"],[\"testproj\",\"d48f191186d67e69df025ad71fb91e1f0\"]],"
        "\"stacks\":[[[0,1],[1,1],[2,21376]]]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"wrongid.so\",\"module_offset\":\"0x1\"},"
        "{\"frame\":1,\"module\":\"broken.so\",\"module_offset\":\"0x1\"},"
        "{\"frame\":2,\"module\":\"testproj\",\"module_offset\":\"0x5380\",\"function\":\"testproj::main\",\"function_offset\":\"0x0\",\"file\":\"/home/willkg/projects/testproj/src/main.rs\",\"line\":1}]],"
        "\"found_modules\":{\"wrongid.so/ABCD\":false,\"broken.so/ABCD\":false,\"testproj/d48f191186d67e69df025ad71fb91e1f0\":true}}]}");
}

/* found_modules is per job: a module that an earlier job of the request
 * looked up, and that no frame of this job refers to, is null here. */
static void found_modules_per_job(void **state)
{
    expect_json(*state, 0, NULL,
        "{\"jobs\":[{\"memoryMap\":[[\"testproj\",\"" TP1 "\"],[\"nope.so\",\"AB\"]],\"stacks\":[[[0,21376],[1,1]]]},"
        "{\"memoryMap\":[[\"nope.so\",\"AB\"],[\"testproj\",\"" TP1 "\"]],\"stacks\":[[[-1,5]]]},"
        "{\"memoryMap\":[[\"testproj\",\"" TP1 "\"],[\"testproj\",\"" TP1 "\"]],\"stacks\":[[[1,21376]]]}]}",
        "{\"results\":["
        "{\"stacks\":[[{\"frame\":0,\"module\":\"testproj\",\"module_offset\":\"0x5380\",\"function\":\"testproj::main\",\"function_offset\":\"0x0\",\"file\":\"/home/willkg/projects/testproj/src/main.rs\",\"line\":1},"
        "{\"frame\":1,\"module\":\"nope.so\",\"module_offset\":\"0x1\"}]],"
        "\"found_modules\":{\"testproj/" TP1 "\":true,\"nope.so/AB\":false}},"
        "{\"stacks\":[[{\"frame\":0,\"module\":\"<unknown>\",\"module_offset\":\"0x5\"}]],"
        "\"found_modules\":{\"nope.so/AB\":null,\"testproj/" TP1 "\":null}},"
        "{\"stacks\":[[{\"frame\":0,\"module\":\"testproj\",\"module_offset\":\"0x5380\",\"function\":\"testproj::main\",\"function_offset\":\"0x0\",\"file\":\"/home/willkg/projects/testproj/src/main.rs\",\"line\":1}]],"
        "\"found_modules\":{\"testproj/" TP1 "\":true}}]}");
    /* v4 knownModules the same way. */
    expect_json(*state, 1, NULL,
        "{\"memoryMap\":[[\"testproj\",\"" TP1 "\"],[\"libc.so\",\"12345\"]],\"stacks\":[[[0,21376]]]}",
        "{\"symbolicatedStacks\":[[\"testproj::main (in testproj)\"]],\"knownModules\":[true,null]}");
}

/* Integers are Python's: any size is valid JSON. Offsets of 2^63 and more
 * (kernel addresses, u64) are valid module offsets, printed with hex();
 * an index that large is not in modules; below -1 both are invalid. */
static void big_integers(void **state)
{
    fixture *fx = *state;

    expect_json(fx, 0, NULL,
        "{\"memoryMap\":[[\"testproj\",\"" TP1 "\"]],\"stacks\":[[[0,9223372036854775808],"
        "[0,18446744073709551615],[-1,36893488147419103232],[0,21376],[0,9223372036854775807]]]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"testproj\",\"module_offset\":\"0x8000000000000000\"},"
        "{\"frame\":1,\"module\":\"testproj\",\"module_offset\":\"0xffffffffffffffff\"},"
        "{\"frame\":2,\"module\":\"<unknown>\",\"module_offset\":\"0x20000000000000000\"},"
        "{\"frame\":3,\"module\":\"testproj\",\"module_offset\":\"0x5380\",\"function\":\"testproj::main\",\"function_offset\":\"0x0\",\"file\":\"/home/willkg/projects/testproj/src/main.rs\",\"line\":1},"
        "{\"frame\":4,\"module\":\"testproj\",\"module_offset\":\"0x7fffffffffffffff\"}]],"
        "\"found_modules\":{\"testproj/" TP1 "\":true}}]}");
    /* Big integers elsewhere in the body are ignored, as by the service. */
    expect_ok(fx, "{\"jobs\":[{\"memoryMap\":[],\"stacks\":[[]],\"x\":[-123456789012345678901234567890]}],"
                  "\"y\":99999999999999999999}");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[0,-9223372036854775809]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[9223372036854775808,1]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has a module_index that isn't in modules");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[-9223372036854775809,1]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has a module_index that isn't in modules");
    /* A string holding NUL stays a string, with or without big integers. */
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[0,\"\\u00001\"]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[0,\"\\u00001\"],[0,18446744073709551616]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[0,18446744073709551616],[0,\"\\u00001\"]]]}",
                 "job 0 has invalid stacks: stack 0 frame 1 has an invalid module_offset");
    expect_title(fx, 0, "{\"memoryMap\":[[\"\\u0000a\",\"1\"]],\"stacks\":[[[0,18446744073709551616]]]}",
                 "job 0 has invalid modules: module index 0 has an invalid debug_filename");
    /* Not integers, and broken numbers, are still what they were. */
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\",\"1\"]],\"stacks\":[[[0,18446744073709551616.0]]]}",
                 "job 0 has invalid stacks: stack 0 frame 0 has an invalid module_offset");
    expect_title(fx, 0, "{\"memoryMap\":[],\"stacks\":[[]],\"x\":-}", "Payload is not valid JSON");
    expect_title(fx, 0, "{\"memoryMap\":[],\"stacks\":[[]],\"x\":0123}", "Payload is not valid JSON");
    expect_title(fx, 0, "{\"memoryMap\":[],\"stacks\":[[]],\"x\":99999999999999999999", "Payload is not valid JSON");
}

static void path_traversal(void **state)
{
    fixture *fx = *state;
    char path[512];
    lp_sym_handle h;

    expect_title(fx, 0, "{\"memoryMap\":[[\"../../etc/passwd\",\"ABCD\"]],\"stacks\":[[[0,1]]]}",
                 "job 0 has invalid modules: module index 0 has an invalid debug_filename");
    expect_title(fx, 0, "{\"memoryMap\":[[\"libc.so\",\"../../etc/passwd\"]],\"stacks\":[[[0,1]]]}",
                 "job 0 has invalid modules: module index 0 has an invalid debug_id");
    expect_title(fx, 0, "{\"memoryMap\":[[\"/etc/passwd\",\"ABCD\"]],\"stacks\":[[[0,1]]]}",
                 "job 0 has invalid modules: module index 0 has an invalid debug_filename");
    expect_title(fx, 0, "{\"memoryMap\":[[\"a\\u0000/../x\",\"ABCD\"]],\"stacks\":[[[0,1]]]}",
                 "job 0 has invalid modules: module index 0 has an invalid debug_filename");
    /* ".." passes the service's pattern: the lookup must still stay inside
     * (ROOT/ABCD/...sym exists but is outside the store). */
    expect_json(fx, 0, NULL, "{\"memoryMap\":[[\"..\",\"ABCD\"]],\"stacks\":[[[0,1]]]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"..\",\"module_offset\":\"0x1\"}]],"
        "\"found_modules\":{\"../ABCD\":false}}]}");
    /* A symlink inside the store that points outside is not followed. */
    expect_json(fx, 0, NULL, "{\"memoryMap\":[[\"evil.so\",\"ABCD\"]],\"stacks\":[[[0,1]]]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"evil.so\",\"module_offset\":\"0x1\"}]],"
        "\"found_modules\":{\"evil.so/ABCD\":false}}]}");
    assert_int_equal(lp_sym_path("/s", "..", "ABCD", path, sizeof path), -1);
    assert_int_equal(lp_sym_path("/s", ".", "ABCD", path, sizeof path), -1);
    assert_int_equal(lp_sym_path("/s", "a/b", "ABCD", path, sizeof path), -1);
    assert_int_equal(lp_sym_path("/s", "a", "AB/CD", path, sizeof path), -1);
    assert_int_equal(lp_sym_path("/s", "xul.pdb", "ABCD", path, sizeof path), 0);
    assert_string_equal(path, "/s/xul.pdb/ABCD/xul.sym");
    assert_int_equal(lp_sym_path("/s", "libc.so", "ABCD", path, sizeof path), 0);
    assert_string_equal(path, "/s/libc.so/ABCD/libc.so.sym");
    assert_int_equal(lp_sym_store_get(fx->st, "..", "ABCD", &h), 0);
}

static void t000_6_dedup_by_lookup_address(void **state)
{
    lp_sym_opts o = {1, LP_ADJUST_ALL_BUT_FIRST, LP_CPU_UNKNOWN, 0, 0};

    /* Raw 0x2005 is a leaf in stack A (looked up as is, line 21) and a
     * return address in stack B (looked up as 0x2004, line 20). */
    expect_json(*state, 0, &o,
        "{\"memoryMap\":[[\"adj.so\",\"AAAA\"]],\"stacks\":[[[0,8197],[0,12297]],[[0,4096],[0,8197],[0,12297]]]}",
        "{\"results\":[{\"stacks\":["
        "[{\"frame\":0,\"module\":\"adj.so\",\"module_offset\":\"0x2005\",\"lookup_offset\":\"0x2005\",\"function\":\"mid\",\"function_offset\":\"0x5\",\"file\":\"a.c\",\"line\":21},"
        " {\"frame\":1,\"module\":\"adj.so\",\"module_offset\":\"0x3009\",\"lookup_offset\":\"0x3008\",\"function\":\"top\",\"function_offset\":\"0x8\",\"file\":\"a.c\",\"line\":31}],"
        "[{\"frame\":0,\"module\":\"adj.so\",\"module_offset\":\"0x1000\",\"lookup_offset\":\"0x1000\",\"function\":\"leaf\",\"function_offset\":\"0x0\",\"file\":\"a.c\",\"line\":10},"
        " {\"frame\":1,\"module\":\"adj.so\",\"module_offset\":\"0x2005\",\"lookup_offset\":\"0x2004\",\"function\":\"mid\",\"function_offset\":\"0x4\",\"file\":\"a.c\",\"line\":20},"
        " {\"frame\":2,\"module\":\"adj.so\",\"module_offset\":\"0x3009\",\"lookup_offset\":\"0x3008\",\"function\":\"top\",\"function_offset\":\"0x8\",\"file\":\"a.c\",\"line\":31}]],"
        "\"found_modules\":{\"adj.so/AAAA\":true}}]}");
}

static void t000_7_underflow_keeps_raw(void **state)
{
    lp_sym_opts o = {1, LP_ADJUST_ALL, LP_CPU_UNKNOWN, 0, 0};
    lp_sym_opts arm = {1, LP_ADJUST_NONE, LP_CPU_ARM64, 0, 0};

    expect_json(*state, 0, &o,
        "{\"memoryMap\":[[\"adj.so\",\"AAAA\"]],\"stacks\":[[[0,0],[0,4097]]]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"adj.so\",\"module_offset\":\"0x0\",\"lookup_offset\":null},"
        "{\"frame\":1,\"module\":\"adj.so\",\"module_offset\":\"0x1001\",\"lookup_offset\":\"0x1000\",\"function\":\"leaf\",\"function_offset\":\"0x0\",\"file\":\"a.c\",\"line\":10}]],"
        "\"found_modules\":{\"adj.so/AAAA\":true}}]}");
    /* arm64 aligns even in "none". */
    expect_json(*state, 0, &arm,
        "{\"memoryMap\":[[\"adj.so\",\"AAAA\"]],\"stacks\":[[[0,8199]]]}",
        "{\"results\":[{\"stacks\":[[{\"frame\":0,\"module\":\"adj.so\",\"module_offset\":\"0x2007\",\"lookup_offset\":\"0x2004\",\"function\":\"mid\",\"function_offset\":\"0x4\",\"file\":\"a.c\",\"line\":20}]],"
        "\"found_modules\":{\"adj.so/AAAA\":true}}]}");
}

static void t002_8_module_offset(void **state)
{
    /* lld-style PIE: first PT_LOAD at vaddr 0, text at offset 0x1000 ->
     * vaddr 0x2000, mapped at 0x555555556000 (len 0x1000) @ pgoff 0x1000. */
    static const lp_sym_load loads[2] = {{0, 0, 0x800}, {0x2000, 0x1000, 0x1000}};
    lp_sym_mapping m = {0x555555556000, 0x1000, 0x1000, "/usr/bin/prog", "AB", loads, 2};
    uint64_t off = 0;
    (void)state;
    assert_int_equal(lp_sym_module_offset(&m, 0x555555556010, &off), 0);
    assert_int_equal(off, 0x2010); /* not ip - start + pgoff = 0x1010 */
    assert_int_equal(lp_sym_module_offset(&m, 0x555555557000, &off), -1);
    assert_int_equal(lp_sym_module_offset(&m, 0x555555555fff, &off), -1);
    assert_true(lp_sym_is_pseudo_mapping("[vdso]"));
    assert_true(lp_sym_is_pseudo_mapping("[anon:libc_malloc]"));
    assert_true(lp_sym_is_pseudo_mapping("//anon"));
    assert_true(lp_sym_is_pseudo_mapping("memfd:jit (deleted)"));
    assert_true(lp_sym_is_pseudo_mapping("/tmp/x.so (deleted)"));
    assert_true(lp_sym_is_pseudo_mapping("[kernel.kallsyms]_text"));
    assert_false(lp_sym_is_pseudo_mapping("/usr/lib/libc.so.6"));
}

static void request_builder(void **state)
{
    fixture *fx = *state;
    static const lp_sym_load loads[1] = {{0, 0, 0x10000}};
    const lp_sym_mapping maps[3] = {
        {0x10000, 0x10000, 0, "/opt/adj.so", "AAAA", loads, 1},
        {0x7fff0000, 0x2000, 0, "[vdso]", "", NULL, 0},
        {0x30000, 0x1000, 0, "/lib/nosym.so", NULL, loads, 1},
    };
    const uint64_t st1[4] = {0x12005, 0x13009, 0x7fff0010, 0x30010};
    const uint64_t st2[1] = {0x99999};
    const uint64_t st3[2] = {0xffffffff81000010ull, 0x12005}; /* kernel, user */
    lp_error e;
    lp_sym_req *r = lp_sym_req_new(LP_CPU_X86_64, 1, LP_ADJUST_ALL_BUT_FIRST, &e);
    char *req, *resp;
    json_t *j, *exp;
    int i;

    assert_non_null(r);
    assert_int_equal(lp_sym_req_begin_job(r, maps, 3, &e), 0);
    assert_int_equal(lp_sym_req_add_stack(r, st1, 4, &e), 0);
    assert_int_equal(lp_sym_req_add_stack(r, st2, 1, &e), 0);
    assert_int_equal(lp_sym_req_add_stack(r, st3, 2, &e), 0);
    assert_int_equal(lp_sym_req_count(r), 1);
    req = lp_sym_req_json(r, 0, &e);
    assert_non_null(req);
    /* Adjusted before the offsets (0x3009 -> 0x3008); vdso and unmapped
     * addresses get index -1; modules without an id get "". A kernel
     * address (>= 2^63, no signed 64-bit JSON integer) is [-1, -1], which
     * the service accepts. */
    j = json_loads(req, 0, NULL);
    exp = json_loads("{\"jobs\":[{\"memoryMap\":[[\"adj.so\",\"AAAA\"],[\"nosym.so\",\"\"]],"
                     "\"stacks\":[[[0,8197],[0,12296],[-1,2147418127],[1,15]],[[-1,629145]],"
                     "[[-1,-1],[0,8196]]]}]}",
                     0, NULL);
    if (!json_equal(j, exp))
        fail_msg("built %s", req);
    json_decref(j);
    json_decref(exp);
    /* The service accepts it and answers from the store. */
    resp = lp_symbolicate_v5(fx->st, req, strlen(req), NULL, &e);
    assert_non_null(resp);
    assert_non_null(strstr(resp, "\"function\":\"top\""));
    assert_non_null(strstr(resp, "\"adj.so/AAAA\":true"));
    free(resp);
    free(req);
    /* 11 jobs: two requests of 10 and 1. */
    for (i = 0; i < 10; i++) {
        assert_int_equal(lp_sym_req_begin_job(r, maps, 3, &e), 0);
        assert_int_equal(lp_sym_req_add_stack(r, st2, 1, &e), 0);
    }
    assert_int_equal(lp_sym_req_count(r), 2);
    req = lp_sym_req_json(r, 1, &e);
    j = json_loads(req, 0, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "jobs")), 1);
    json_decref(j);
    free(req);
    req = lp_sym_req_json(r, 0, &e);
    resp = lp_symbolicate_v5(fx->st, req, strlen(req), NULL, &e);
    assert_non_null(resp);
    free(resp);
    free(req);
    lp_sym_req_free(r);
}

static void debug_statistics(void **state)
{
    fixture *fx = *state;
    lp_sym_opts o = {0, LP_ADJUST_AUTO, LP_CPU_UNKNOWN, 0, 1};
    const char *req =
        "{\"jobs\":[{\"memoryMap\":[[\"ntdll.pdb\",\"" NT "\"],[\"nope.so\",\"AB\"],[\"u.so\",\"CD\"]],"
        "\"stacks\":[[[0,4104],[1,1]]]},{\"memoryMap\":[[\"ntdll.pdb\",\"" NT "\"]],\"stacks\":[[[0,1]]]}]}";
    lp_error e;
    char *out;
    json_t *j, *d;
    int pass;
    lp_sym_store *shared = fx->st;

    fx->st = lp_sym_store_new(&e); /* a cold cache */
    assert_int_equal(lp_sym_store_add_dir(fx->st, fx->store, &e), 0);
    for (pass = 0; pass < 2; pass++) { /* the second time ntdll is cached */
        out = lp_symbolicate_v5(fx->st, req, strlen(req), &o, &e);
        assert_non_null(out);
        j = json_loads(out, 0, NULL);
        d = json_object_get(j, "debug");
        assert_non_null(d);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "cache_lookups"), "count")), 2);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "cache_lookups"), "hits")), pass);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "downloads"), "count")), 2 - pass);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(d, "modules"), "count")), 3);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(json_object_get(d, "modules"),
                         "stacks_per_module"), "ntdll.pdb/" NT)), 2);
        assert_true(json_is_real(json_object_get(d, "time")));
        json_decref(j);
        free(out);
    }
    o.debug = 0;
    out = lp_symbolicate_v5(fx->st, req, strlen(req), &o, &e);
    assert_null(strstr(out, "\"debug\""));
    free(out);
    lp_sym_store_free(fx->st);
    fx->st = shared;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t002_1_symbols_and_unreferenced),
        cmocka_unit_test(t002_2_missing_symbols),
        cmocka_unit_test(t002_3_inlines),
        cmocka_unit_test(t002_4_pe_name_no_lines),
        cmocka_unit_test(t002_5_v4),
        cmocka_unit_test(t002_6_errors),
        cmocka_unit_test(unknown_and_negative_frames),
        cmocka_unit_test(found_modules_false_cases),
        cmocka_unit_test(found_modules_per_job),
        cmocka_unit_test(big_integers),
        cmocka_unit_test(path_traversal),
        cmocka_unit_test(t000_6_dedup_by_lookup_address),
        cmocka_unit_test(t000_7_underflow_keeps_raw),
        cmocka_unit_test(t002_8_module_offset),
        cmocka_unit_test(request_builder),
        cmocka_unit_test(debug_statistics),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
