/*
 * test_adjust.c - unit tests for src/adjust: the seed-000 acceptance cases
 * T000-1..T000-5 and T000-7 of docs/seed-techniques.md, value for value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lbr2prof/adjust.h"

static void check_stack(lp_cpu arch, lp_adjust_mode mode, const uint64_t in[3],
                        const lp_crash_ctx *ctx, uint64_t e0, uint64_t e1,
                        uint64_t e2)
{
    uint64_t out[3];
    uint8_t ok[3];
    int8_t flags[3];

    lp_adjust_stack_mode(arch, mode, 3, in, ctx, out, ok);
    assert_true(ok[0] && ok[1] && ok[2]);
    assert_int_equal(out[0], e0);
    assert_int_equal(out[1], e1);
    assert_int_equal(out[2], e2);
    /* The two-step path (processor flags, then symbolicator) agrees. */
    lp_adjust_flags_for_mode(mode, 3, flags);
    memset(out, 0, sizeof out);
    lp_adjust_stack(arch, 3, in, flags, ctx, out, ok);
    assert_int_equal(out[0], e0);
    assert_int_equal(out[1], e1);
    assert_int_equal(out[2], e2);
}

static void t000_1_primitives(void **state)
{
    uint64_t v = 0;
    lp_crash_ctx segv = {11, 1, 0x4242};
    (void)state;
    assert_int_equal(lp_addr_aligned(LP_CPU_X86, 0x1337), 0x1337);
    assert_int_equal(lp_addr_previous(LP_CPU_X86, 0x1337, &v), 0);
    assert_int_equal(v, 0x1336);
    assert_int_equal(lp_addr_aligned(LP_CPU_X86_64, 0x1337), 0x1337);
    assert_int_equal(lp_addr_previous(LP_CPU_X86_64, 0x1337, &v), 0);
    assert_int_equal(v, 0x1336);
    assert_int_equal(lp_addr_aligned(LP_CPU_ARM64, 0x1337), 0x1334);
    assert_int_equal(lp_addr_previous(LP_CPU_ARM64, 0x1337, &v), 0);
    assert_int_equal(v, 0x1330);
    assert_int_equal(lp_addr_aligned(LP_CPU_ARM, 0x1337), 0x1336);
    assert_int_equal(lp_addr_previous(LP_CPU_ARM, 0x1337, &v), 0);
    assert_int_equal(v, 0x1334);
    assert_int_equal(lp_addr_aligned(LP_CPU_ARM, 0x1001), 0x1000);
    assert_int_equal(lp_addr_previous(LP_CPU_ARM, 0x1001, &v), 0);
    assert_int_equal(v, 0xffe);
    assert_int_equal(lp_addr_caller(LP_CPU_ARM64, 0x1337, 0, &segv, &v), 0);
    assert_int_equal(v, 0x1330);
    assert_int_equal(lp_addr_caller(LP_CPU_ARM64, 0x1337, 1, NULL, &v), 0);
    assert_int_equal(v, 0x1334);
}

static void t000_2_modes(void **state)
{
    static const uint64_t x[3] = {0x1000, 0x2005, 0x3009};
    static const uint64_t a64[3] = {0x1000, 0x2004, 0x3006};
    static const uint64_t thumb[3] = {0x1001, 0x2005, 0x3008};
    static const uint64_t mips[3] = {0x1000, 0x2008, 0x3008};
    static const uint64_t ppc[3] = {0x1000, 0x2008, 0x300c};
    lp_cpu xs[2] = {LP_CPU_X86_64, LP_CPU_X86};
    int i;
    (void)state;
    for (i = 0; i < 2; i++) {
        check_stack(xs[i], LP_ADJUST_NONE, x, NULL, 0x1000, 0x2005, 0x3009);
        check_stack(xs[i], LP_ADJUST_ALL, x, NULL, 0xfff, 0x2004, 0x3008);
        check_stack(xs[i], LP_ADJUST_ALL_BUT_FIRST, x, NULL, 0x1000, 0x2004, 0x3008);
        check_stack(xs[i], LP_ADJUST_AUTO, x, NULL, 0x1000, 0x2004, 0x3008);
    }
    check_stack(LP_CPU_ARM64, LP_ADJUST_NONE, a64, NULL, 0x1000, 0x2004, 0x3004);
    check_stack(LP_CPU_ARM64, LP_ADJUST_ALL, a64, NULL, 0xffc, 0x2000, 0x3000);
    check_stack(LP_CPU_ARM64, LP_ADJUST_ALL_BUT_FIRST, a64, NULL, 0x1000, 0x2000, 0x3000);
    check_stack(LP_CPU_ARM64, LP_ADJUST_AUTO, a64, NULL, 0x1000, 0x2000, 0x3000);
    check_stack(LP_CPU_ARM, LP_ADJUST_NONE, thumb, NULL, 0x1000, 0x2004, 0x3008);
    check_stack(LP_CPU_ARM, LP_ADJUST_ALL, thumb, NULL, 0xffe, 0x2002, 0x3006);
    check_stack(LP_CPU_ARM, LP_ADJUST_ALL_BUT_FIRST, thumb, NULL, 0x1000, 0x2002, 0x3006);
    check_stack(LP_CPU_ARM, LP_ADJUST_AUTO, thumb, NULL, 0x1000, 0x2002, 0x3006);
    check_stack(LP_CPU_MIPS, LP_ADJUST_NONE, mips, NULL, 0x1000, 0x2008, 0x3008);
    check_stack(LP_CPU_MIPS, LP_ADJUST_ALL, mips, NULL, 0xff8, 0x2000, 0x3000);
    check_stack(LP_CPU_MIPS, LP_ADJUST_ALL_BUT_FIRST, mips, NULL, 0x1000, 0x2000, 0x3000);
    check_stack(LP_CPU_MIPS, LP_ADJUST_AUTO, mips, NULL, 0x1000, 0x2000, 0x3000);
    check_stack(LP_CPU_PPC64, LP_ADJUST_NONE, ppc, NULL, 0x1000, 0x2008, 0x3008);
    check_stack(LP_CPU_PPC64, LP_ADJUST_ALL, ppc, NULL, 0xff8, 0x2000, 0x3000);
    check_stack(LP_CPU_PPC64, LP_ADJUST_ALL_BUT_FIRST, ppc, NULL, 0x1000, 0x2000, 0x3000);
    check_stack(LP_CPU_PPC64, LP_ADJUST_AUTO, ppc, NULL, 0x1000, 0x2000, 0x3000);
}

static void t000_3_auto_heuristic(void **state)
{
    static const uint64_t x[3] = {0x1000, 0x2005, 0x3009};
    static const uint64_t a64[3] = {0x1000, 0x2004, 0x3006};
    lp_crash_ctx same = {11, 1, 0x1000}, diff = {11, 1, 0x5555};
    lp_crash_ctx abrt = {6, 1, 0x5555}, noreg = {11, 0, 0};
    (void)state;
    check_stack(LP_CPU_X86_64, LP_ADJUST_AUTO, x, &same, 0x1000, 0x2004, 0x3008);
    check_stack(LP_CPU_X86_64, LP_ADJUST_AUTO, x, &diff, 0xfff, 0x2004, 0x3008);
    check_stack(LP_CPU_X86_64, LP_ADJUST_AUTO, x, &abrt, 0x1000, 0x2004, 0x3008);
    check_stack(LP_CPU_X86_64, LP_ADJUST_AUTO, x, &noreg, 0x1000, 0x2004, 0x3008);
    check_stack(LP_CPU_ARM64, LP_ADJUST_AUTO, a64, &diff, 0xffc, 0x2000, 0x3000);
    assert_string_equal(lp_cpu_ip_register(LP_CPU_X86_64), "rip");
    assert_string_equal(lp_cpu_ip_register(LP_CPU_X86), "eip");
    assert_string_equal(lp_cpu_ip_register(LP_CPU_ARM64), "pc");
    assert_string_equal(lp_cpu_ip_register(LP_CPU_PPC), "srr0");
}

static void flags_case(const int8_t f[3], uint64_t e0, uint64_t e1, uint64_t e2)
{
    static const uint64_t x[3] = {0x1000, 0x2005, 0x3009};
    uint64_t out[3];
    uint8_t ok[3];

    lp_adjust_stack(LP_CPU_X86_64, 3, x, f, NULL, out, ok);
    assert_int_equal(out[0], e0);
    assert_int_equal(out[1], e1);
    assert_int_equal(out[2], e2);
}

static void t000_4_frame_flags(void **state)
{
    const int8_t U = LP_ADJ_UNSET, Y = LP_ADJ_YES, N = LP_ADJ_NO;
    const int8_t f0[3] = {U, U, U}, f1[3] = {Y, U, U}, f2[3] = {N, U, U};
    const int8_t f3[3] = {N, N, N}, f4[3] = {U, N, U};
    (void)state;
    flags_case(f0, 0x1000, 0x2004, 0x3008);
    flags_case(f1, 0xfff, 0x2004, 0x3008);
    flags_case(f2, 0x1000, 0x2004, 0x3008);
    flags_case(f3, 0x1000, 0x2005, 0x3009);
    flags_case(f4, 0xfff, 0x2005, 0x3008); /* one flag flips the default */
}

static void t000_5_processor_mapping(void **state)
{
    int8_t f[2];
    lp_adjust_mode m;
    (void)state;
    lp_adjust_flags_for_mode(LP_ADJUST_AUTO, 2, f);
    assert_int_equal(f[0], LP_ADJ_UNSET);
    assert_int_equal(f[1], LP_ADJ_UNSET);
    lp_adjust_flags_for_mode(LP_ADJUST_ALL, 2, f);
    assert_int_equal(f[0], LP_ADJ_YES);
    assert_int_equal(f[1], LP_ADJ_UNSET);
    lp_adjust_flags_for_mode(LP_ADJUST_ALL_BUT_FIRST, 2, f);
    assert_int_equal(f[0], LP_ADJ_NO);
    assert_int_equal(f[1], LP_ADJ_UNSET);
    lp_adjust_flags_for_mode(LP_ADJUST_NONE, 2, f);
    assert_int_equal(f[0], LP_ADJ_NO);
    assert_int_equal(f[1], LP_ADJ_NO);
    assert_int_equal(lp_adjust_mode_parse("all_but_first", &m), 0);
    assert_int_equal(m, LP_ADJUST_ALL_BUT_FIRST);
    assert_int_equal(lp_adjust_mode_parse("sometimes", &m), -1);
    assert_int_equal(lp_cpu_from_name("aarch64"), LP_CPU_ARM64);
    assert_int_equal(lp_cpu_from_elf(62, 2), LP_CPU_X86_64); /* EM_X86_64 */
}

static void t000_7_underflow(void **state)
{
    const uint64_t in[1] = {0};
    uint64_t out[1] = {1234}, v = 77;
    uint8_t ok[1] = {1};
    (void)state;
    /* Relative to image_addr 0x10000 the frame is at 0: "all" underflows. */
    lp_adjust_stack_mode(LP_CPU_X86_64, LP_ADJUST_ALL, 1, in, NULL, out, ok);
    assert_int_equal(ok[0], 0);
    assert_int_equal(out[0], 0); /* raw kept, no wrap to 2^64-1 */
    assert_int_equal(lp_addr_previous(LP_CPU_ARM64, 3, &v), -1);
    assert_int_equal(v, 77);
    /* Absolute: 0x10000 -> 0xffff, below the image; the caller compares. */
    assert_int_equal(lp_addr_previous(LP_CPU_X86_64, 0x10000, &v), 0);
    assert_int_equal(v, 0xffff);
}

static void t000_6_kinds(void **state)
{
    uint64_t a = 0, b = 0;
    (void)state;
    /* Sample A: 0x2005 is the leaf (an IP); sample B: a return address.
     * The same raw address gives two lookup addresses. */
    assert_int_equal(lp_addr_lookup(LP_CPU_X86_64, LP_ADDR_IP, 0x2005, &a), 0);
    assert_int_equal(lp_addr_lookup(LP_CPU_X86_64, LP_ADDR_RETURN, 0x2005, &b), 0);
    assert_int_equal(a, 0x2005);
    assert_int_equal(b, 0x2004);
    assert_int_equal(lp_addr_lookup(LP_CPU_X86_64, LP_ADDR_CALL_SITE, 0x2004, &a), 0);
    assert_int_equal(a, 0x2004);
    assert_int_equal(lp_addr_lookup(LP_CPU_ARM64, LP_ADDR_IP, 0x2006, &a), 0);
    assert_int_equal(a, 0x2004); /* aligned even when not adjusted */
    assert_int_equal(lp_addr_lookup(LP_CPU_ARM64, LP_ADDR_RETURN, 0x2, &a), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(t000_1_primitives),
        cmocka_unit_test(t000_2_modes),
        cmocka_unit_test(t000_3_auto_heuristic),
        cmocka_unit_test(t000_4_frame_flags),
        cmocka_unit_test(t000_5_processor_mapping),
        cmocka_unit_test(t000_6_kinds),
        cmocka_unit_test(t000_7_underflow),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
