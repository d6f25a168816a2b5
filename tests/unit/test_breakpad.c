/*
 * test_breakpad.c - unit tests for src/breakpad: .sym parsing (and its error
 * messages with line numbers), FUNC/line/INLINE/PUBLIC lookups, the writer
 * round trip and debug ids from build-ids (T002-7).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/breakpad.h"

static const char inline_sym[] =
    "MODULE Linux x86_64 0905AE80CEE75A33E3CAB61C274274DE0 testproj\n"
    "INFO CODE_ID 80AE0509E7CE335AE3CAB61C274274DE96049B64\n"
    "FILE 0 /home/willkg/projects/testproj/src/main.rs\n"
    "FILE 1 /rustc/e092d0b6b43f2de967af0887873151bb1c0b18d3/library/core/src/fmt/mod.rs\n"
    "FILE 2 /home/willkg/projects/testproj/src/support.rs\n"
    "INLINE_ORIGIN 0 testproj::support::middle\n"
    "INLINE_ORIGIN 1 testproj::support::inner\n"
    "INLINE_ORIGIN 2 core::fmt::Arguments::new_v1\n"
    "FUNC 7a40 85 0 testproj::main\n"
    "INLINE 0 4 0 0 7a40 7d\n"
    "INLINE 1 2 2 1 7a40 49\n"
    "INLINE 2 7 2 2 7a40 3a\n"
    "INLINE 1 3 2 2 7a89 31\n"
    "7a40 7 3 0\n"
    "7a47 33 392 1\n"
    "7a7a f 7 2\n"
    "7a89 31 392 1\n"
    "7aba 3 3 2\n"
    "7abd 8 5 0\n"
    "7a82 5 5 2\n";

static const char ntdll_sym[] =
    "MODULE windows x86_64 F86EB934B42FBB79B2595AA25907695C1 ntdll.pdb\r\n"
    "INFO CODE_ID 0532197720E000 ntdll.dll\r\n"
    "FUNC 1008 106 0 LdrpGetModuleName\r\n"
    "PUBLIC 1120 0 LdrQueryNextListEntry\r\n"
    "PUBLIC 1140 0 LdrQueryModuleInfoFromLdrEntry\r\n"
    "FUNC 1260 4a 0 LdrpReadMemory\r\n"
    "PUBLIC 1260 0 ShadowedByFunc\r\n"
    "PUBLIC m 2000 8 Last Public With Spaces\r\n"
    "STACK CFI INIT 1008 106 .cfa: $rsp 8 +\r\n";

static lp_bp_module *parse(const char *text)
{
    lp_error e;
    lp_bp_module *m = lp_bp_parse(text, strlen(text), "t.sym", &e);

    if (!m)
        fail_msg("parse failed: %s", e.msg);
    return m;
}

static void expect_frame(const lp_bp_frame *f, const char *fn, const char *file,
                         unsigned line)
{
    assert_string_equal(f->function, fn);
    if (file)
        assert_string_equal(f->file, file);
    else
        assert_null(f->file);
    assert_int_equal(f->line, line);
}

static void test_header_and_tables(void **state)
{
    lp_bp_module *m = parse(inline_sym);
    (void)state;
    assert_string_equal(m->os, "Linux");
    assert_string_equal(m->arch, "x86_64");
    assert_string_equal(m->debug_id, "0905AE80CEE75A33E3CAB61C274274DE0");
    assert_string_equal(m->name, "testproj");
    assert_string_equal(m->code_id, "80AE0509E7CE335AE3CAB61C274274DE96049B64");
    assert_null(m->code_file);
    assert_int_equal(m->nfiles, 3);
    assert_int_equal(m->norigins, 3);
    assert_int_equal(m->nfuncs, 1);
    assert_int_equal(m->nlines, 7);
    assert_int_equal(m->ninlines, 4);
    assert_string_equal(lp_bp_file_name(m, 2), "/home/willkg/projects/testproj/src/support.rs");
    assert_null(lp_bp_file_name(m, 9));
    lp_bp_free(m);
}

static void test_inline_lookups(void **state)
{
    lp_bp_module *m = parse(inline_sym);
    lp_bp_result r;
    const char *mainrs = "/home/willkg/projects/testproj/src/main.rs";
    const char *sup = "/home/willkg/projects/testproj/src/support.rs";
    const char *fmt = "/rustc/e092d0b6b43f2de967af0887873151bb1c0b18d3/library/core/src/fmt/mod.rs";
    (void)state;
    /* T002-3: 0x7a7a is in inner (depth 1) inside middle (depth 0). */
    assert_int_equal(lp_bp_lookup(m, 0x7a7a, &r), 3);
    assert_int_equal(r.sym_addr, 0x7a40);
    expect_frame(&r.frames[0], "testproj::support::inner", sup, 7);
    expect_frame(&r.frames[1], "testproj::support::middle", sup, 2);
    expect_frame(&r.frames[2], "testproj::main", mainrs, 4);
    /* 0x7a50: three levels deep (new_v1 in inner in middle). */
    assert_int_equal(lp_bp_lookup(m, 0x7a50, &r), 4);
    expect_frame(&r.frames[0], "core::fmt::Arguments::new_v1", fmt, 392);
    expect_frame(&r.frames[1], "testproj::support::inner", sup, 7);
    expect_frame(&r.frames[2], "testproj::support::middle", sup, 2);
    expect_frame(&r.frames[3], "testproj::main", mainrs, 4);
    /* 0x7a89: the second depth-1 inline (new_v1 called from line 3). */
    assert_int_equal(lp_bp_lookup(m, 0x7a89, &r), 3);
    expect_frame(&r.frames[0], "core::fmt::Arguments::new_v1", fmt, 392);
    expect_frame(&r.frames[1], "testproj::support::middle", sup, 3);
    /* 0x7abd: outside every inline, line 5 of main.rs. */
    assert_int_equal(lp_bp_lookup(m, 0x7abd, &r), 1);
    expect_frame(&r.frames[0], "testproj::main", mainrs, 5);
    /* Outside the FUNC: nothing (no PUBLIC). */
    assert_int_equal(lp_bp_lookup(m, 0x7a40 + 0x85, &r), 0);
    assert_int_equal(lp_bp_lookup(m, 0x7a3f, &r), 0);
    lp_bp_free(m);
}

static void test_public_lookups(void **state)
{
    lp_bp_module *m = parse(ntdll_sym);
    lp_bp_result r;
    (void)state;
    assert_string_equal(m->code_file, "ntdll.dll");
    assert_int_equal(m->npublics, 3); /* the one at a FUNC address is dropped */
    assert_int_equal(lp_bp_lookup(m, 0x1008, &r), 1);
    expect_frame(&r.frames[0], "LdrpGetModuleName", NULL, 0); /* FUNC, no lines */
    assert_int_equal(lp_bp_lookup(m, 0x1130, &r), 1);
    expect_frame(&r.frames[0], "LdrQueryNextListEntry", NULL, 0);
    assert_int_equal(r.sym_addr, 0x1120);
    assert_int_equal(lp_bp_lookup(m, 0x125f, &r), 1); /* up to the next symbol */
    assert_string_equal(r.frames[0].function, "LdrQueryModuleInfoFromLdrEntry");
    assert_int_equal(lp_bp_lookup(m, 0x1260, &r), 1); /* FUNC wins */
    assert_string_equal(r.frames[0].function, "LdrpReadMemory");
    assert_int_equal(lp_bp_lookup(m, 0x12aa, &r), 0); /* after the FUNC, before 0x2000 */
    assert_int_equal(lp_bp_lookup(m, 0x2010, &r), 1);
    assert_string_equal(r.frames[0].function, "Last Public With Spaces");
    assert_int_equal(lp_bp_lookup(m, 0x1000, &r), 0);
    lp_bp_free(m);
}

static void expect_error(const char *text, const char *needle)
{
    lp_error e;
    lp_bp_module *m = lp_bp_parse(text, strlen(text), "bad.sym", &e);

    assert_null(m);
    assert_int_equal(e.code, LP_EFORMAT);
    if (!strstr(e.msg, needle))
        fail_msg("error '%s' does not contain '%s'", e.msg, needle);
}

static void test_malformed(void **state)
{
    (void)state;
    expect_error("", "bad.sym: empty file");
    expect_error("FUNC 1 2 3 f\n", "bad.sym:1: first line: expected 'MODULE");
    expect_error("MODULE Linux x86_64 ABC\n", "bad.sym:1: MODULE: expected");
    expect_error("MODULE Linux x86_64 ABC m\nFUNC zz 1 0 f\n", "bad.sym:2: FUNC: expected");
    expect_error("MODULE Linux x86_64 ABC m\nFUNC 10 1\n", "bad.sym:2: FUNC");
    expect_error("MODULE Linux x86_64 ABC m\nFILE 0 a\n10 2 3 0\n",
                 "bad.sym:3: line record: expected a FUNC record before it");
    expect_error("MODULE Linux x86_64 ABC m\nFUNC 10 4 0 f\n10 2 x 0\n", "bad.sym:3: line record");
    expect_error("MODULE Linux x86_64 ABC m\nFUNC 10 4 0 f\n10 2 3 0 9\n", "bad.sym:3: line record");
    expect_error("MODULE Linux x86_64 ABC m\nFUNC 10 4 0 f\nINLINE 0 1 0 0 10\n", "bad.sym:3: INLINE");
    expect_error("MODULE Linux x86_64 ABC m\nFUNC 10 4 0 f\nINLINE 0 1 0 0\n", "bad.sym:3: INLINE");
    expect_error("MODULE Linux x86_64 ABC m\nINLINE 0 1 0 0 10 2\n",
                 "bad.sym:2: INLINE: expected a FUNC record before it");
    expect_error("MODULE Linux x86_64 ABC m\nPUBLIC -5 0 p\n", "bad.sym:2: PUBLIC");
    expect_error("MODULE Linux x86_64 ABC m\nFILE x name\n", "bad.sym:2: FILE");
    expect_error("MODULE Linux x86_64 ABC m\nGARBAGE here\n", "bad.sym:2: line record");
    expect_error("MODULE Linux x86_64 ABC m\nMODULE Linux x86_64 ABC m\n", "bad.sym:2: MODULE");
    expect_error("MODULE Linux x86_64 ABC m\nFUNC 10 ffffffffffffffffff 0 f\n", "bad.sym:2: FUNC");
    /* A NUL byte inside a line. */
    {
        static const char nul[] = "MODULE Linux x86_64 ABC m\nFUNC 10 4 0 f\0x\n";
        lp_error e;
        assert_null(lp_bp_parse(nul, sizeof nul - 1, "bad.sym", &e));
        assert_non_null(strstr(e.msg, "bad.sym:2:"));
    }
}

/* Write a module and read it back: every lookup must agree. */
static void test_write_round_trip(void **state)
{
    lp_bp_module *a = parse(inline_sym), *b;
    char *buf = NULL;
    size_t len = 0, i, k;
    FILE *f = open_memstream(&buf, &len);
    lp_bp_result ra, rb;
    lp_error e;
    (void)state;
    assert_non_null(f);
    assert_int_equal(lp_bp_write(a, f, &e), 0);
    fclose(f);
    b = lp_bp_parse(buf, len, "written.sym", &e);
    assert_non_null(b);
    assert_string_equal(b->debug_id, a->debug_id);
    assert_string_equal(b->code_id, a->code_id);
    for (i = 0x7a00; i < 0x7b00; i++) {
        assert_int_equal(lp_bp_lookup(a, i, &ra), lp_bp_lookup(b, i, &rb));
        assert_int_equal(ra.nframes, rb.nframes);
        for (k = 0; k < ra.nframes; k++) {
            assert_string_equal(ra.frames[k].function, rb.frames[k].function);
            assert_int_equal(ra.frames[k].line, rb.frames[k].line);
        }
    }
    free(buf);
    lp_bp_free(a);
    lp_bp_free(b);
}

static void hex_bytes(const char *hex, uint8_t *out, size_t *n)
{
    for (*n = 0; hex[2 * *n]; (*n)++) {
        unsigned v;
        sscanf(hex + 2 * *n, "%2x", &v);
        out[*n] = (uint8_t)v;
    }
}

static void test_debug_id_t002_7(void **state)
{
    uint8_t b[64];
    size_t n;
    char id[34], code[129];
    (void)state;
    hex_bytes("80ae0509e7ce335ae3cab61c274274de96049b64", b, &n);
    lp_bp_debug_id(b, n, id);
    lp_bp_code_id(b, n, code);
    assert_string_equal(id, "0905AE80CEE75A33E3CAB61C274274DE0");
    assert_string_equal(code, "80AE0509E7CE335AE3CAB61C274274DE96049B64");
    hex_bytes("6a9eb26580535d4b86b2d3497464c71c4eeacf30", b, &n);
    lp_bp_debug_id(b, n, id);
    assert_string_equal(id, "65B29E6A53804B5D86B2D3497464C71C0");
    hex_bytes("0102030405060708", b, &n);
    lp_bp_debug_id(b, n, id);
    assert_string_equal(id, "040302010605080700000000000000000");
}

static void test_not_elf(void **state)
{
    lp_error e;
    lp_bp_elf_id id;
    (void)state;
    assert_null(lp_bp_from_elf("/nonexistent/x", &e));
    assert_int_equal(e.code, LP_EIO);
    assert_int_equal(lp_bp_elf_identify("tests/data/README.md", &id, &e), -1);
    assert_non_null(strstr(e.msg, "not an ELF file"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_and_tables),
        cmocka_unit_test(test_inline_lookups),
        cmocka_unit_test(test_public_lookups),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_write_round_trip),
        cmocka_unit_test(test_debug_id_t002_7),
        cmocka_unit_test(test_not_elf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
