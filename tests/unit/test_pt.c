/*
 * test_pt.c - src/pt: the --itrace parser (perf's syntax and defaults),
 * perf's instruction classification, and the packet walk on a trace
 * made here with libipt's encoder over a small piece of code.
 */
#include <errno.h>
#include <intel-pt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "pt/pt_internal.h"

static void test_itrace_defaults(void **st)
{
    lp_itrace o;
    lp_error err;

    (void)st;
    assert_int_equal(lp_itrace_parse("i100usle", &o, &err), 0);
    assert_true(o.instructions && o.last_branch && o.errors && !o.branches);
    assert_int_equal(o.period_type, LP_ITRACE_PERIOD_NANOSECS);
    assert_int_equal(o.period, 100000);
    assert_int_equal(o.last_branch_sz, 64);
    /* a bare number is nanoseconds (perf's quirk), i alone 100 us */
    assert_int_equal(lp_itrace_parse("i1000", &o, &err), 0);
    assert_int_equal(o.period_type, LP_ITRACE_PERIOD_NANOSECS);
    assert_int_equal(o.period, 1000);
    assert_int_equal(lp_itrace_parse("i", &o, &err), 0);
    assert_int_equal(o.period, 100000);
    assert_int_equal(lp_itrace_parse("i1000il32", &o, &err), 0);
    assert_int_equal(o.period_type, LP_ITRACE_PERIOD_INSTRUCTIONS);
    assert_int_equal(o.last_branch_sz, 32);
    assert_int_equal(lp_itrace_parse("i2ms", &o, &err), 0);
    assert_int_equal(o.period, 2000000);
    assert_int_equal(lp_itrace_parse("b,e-o", &o, &err), 0);
    assert_true(o.branches && o.errors && o.no_overflow_errors);
}

static void test_itrace_refused(void **st)
{
    lp_itrace o;
    lp_error err;

    (void)st;
    assert_int_equal(lp_itrace_parse("b1", &o, &err), -1);
    assert_int_equal(err.code, LP_EUSAGE);
    assert_int_equal(lp_itrace_parse("i100l", &o, &err), -1);
    assert_int_equal(lp_itrace_parse("l0", &o, &err), -1);
    assert_int_equal(lp_itrace_parse("l1025", &o, &err), -1);
    assert_int_equal(lp_itrace_parse("ig", &o, &err), -1);
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_non_null(strstr(err.msg, "'g'"));
}

static void test_classify(void **st)
{
    static const struct { uint8_t b[16]; int n, op, br, len, rel; } c[] = {
        {{0x74, 0x05}, 2, OP_JCC, BR_CONDITIONAL, 2, 5},
        {{0x0f, 0x85, 0x10, 0, 0, 0}, 6, OP_JCC, BR_CONDITIONAL, 6, 16},
        {{0xe8, 0xfb, 0xff, 0xff, 0xff}, 5, OP_CALL, BR_UNCONDITIONAL, 5, -5},
        {{0xeb, 0xfe}, 2, OP_JMP, BR_UNCONDITIONAL, 2, -2},
        {{0xc3}, 1, OP_RET, BR_INDIRECT, 1, 0},
        {{0xf3, 0xc3}, 2, OP_RET, BR_INDIRECT, 2, 0},
        {{0xff, 0xd0}, 2, OP_CALL, BR_INDIRECT, 2, 0},
        {{0x41, 0xff, 0xe3}, 3, OP_JMP, BR_INDIRECT, 3, 0},
        {{0x0f, 0x05}, 2, OP_SYSCALL, BR_INDIRECT, 2, 0},
        {{0xe2, 0xf0}, 2, OP_LOOP, BR_CONDITIONAL, 2, -16},
        {{0x48, 0x89, 0xe5}, 3, OP_OTHER, BR_NONE, 3, 0},
        /* vpcmpeqb %ymm17,%ymm19,%k1 (EVEX, map 0F3A, imm8) */
        {{0x62, 0xb3, 0x65, 0x20, 0x3f, 0xc9, 0x00}, 7, OP_OTHER, BR_NONE, 7, 0},
    };
    ptw_insn in;

    (void)st;
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        uint8_t buf[16];
        memset(buf, 0x90, sizeof buf);
        memcpy(buf, c[i].b, (size_t)c[i].n);
        assert_int_equal(pt_classify(buf, sizeof buf, &in), 0);
        assert_int_equal(in.op, c[i].op);
        assert_int_equal(in.branch, c[i].br);
        assert_int_equal(in.length, c[i].len);
        assert_int_equal(in.rel, c[i].rel);
    }
}

/* Code at 0x1000: a loop of a jcc taken twice then not, a call to a
 * function at 0x1100 that returns, then an indirect jmp *%rax. */
#define BASE 0x1000
static uint8_t code[0x200];

static void make_code(void)
{
    static const uint8_t body[] = {
        0x48, 0xff, 0xc8,             /* 1000: dec %rax */
        0x75, 0xfb,                   /* 1003: jne 1000 */
        0xe8, 0xf6, 0x00, 0x00, 0x00, /* 1005: call 1100 */
        0xff, 0xe0,                   /* 100a: jmp *%rax */
    };
    memset(code, 0x90, sizeof code);
    memcpy(code, body, sizeof body);
    code[0x100] = 0xc3;               /* 1100: ret */
    code[0x180] = 0x0f;               /* 1180: syscall */
    code[0x181] = 0x05;
}

static long read_code(void *ctx, uint64_t ip, uint8_t *buf)
{
    (void)ctx;
    if (ip < BASE || ip >= BASE + sizeof code - 16)
        return -1;
    memcpy(buf, code + (ip - BASE), 16);
    return 16;
}

static int walk(void *ctx, ptw_insn *in, uint64_t *cnt, uint64_t *ip,
                uint64_t to_ip, uint64_t max)
{
    int rc;

    *cnt = 0;
    if (to_ip && *ip == to_ip)
        return 0;
    rc = pt_walk_straight(read_code, ctx, in, cnt, ip, to_ip, max, UINT64_MAX);
    return rc == 1 ? -EINVAL : rc;
}

static size_t encode(uint8_t *buf, size_t cap)
{
    struct pt_config cfg;
    struct pt_encoder *e;
    struct pt_packet p[] = {
        {.type = ppt_psb},
        {.type = ppt_tsc, .payload.tsc.tsc = 1000},
        {.type = ppt_psbend},
        {.type = ppt_tip_pge, .payload.ip = {pt_ipc_sext_48, BASE}},
        {.type = ppt_tnt_8, .payload.tnt = {3, 0x6}}, /* T T N */
        {.type = ppt_tip, .payload.ip = {pt_ipc_update_16, 0x100a}}, /* ret */
        {.type = ppt_tip, .payload.ip = {pt_ipc_sext_48, 0x1180}}, /* jmp: a full IP, where a resync can start */
        {.type = ppt_tip_pgd, .payload.ip = {pt_ipc_suppressed, 0}},
    };
    uint64_t off = 0;

    pt_config_init(&cfg);
    cfg.begin = buf;
    cfg.end = buf + cap;
    e = pt_alloc_encoder(&cfg);
    assert_non_null(e);
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
        assert_true(pt_enc_next(e, &p[i]) > 0);
    pt_enc_get_offset(e, &off);
    pt_free_encoder(e);
    return (size_t)off;
}

static void test_walk_branches(void **st)
{
    static const uint64_t want[][2] = {
        {0, 0x1000}, {0x1003, 0x1000}, {0x1003, 0x1000}, {0x1005, 0x1100},
        {0x1100, 0x100a}, {0x100a, 0x1180}, {0x1180, 0},
    };
    uint8_t buf[256];
    pt_params p;
    pt_decoder *d;
    size_t nb = 0;

    (void)st;
    make_code();
    memset(&p, 0, sizeof p);
    p.buf = buf;
    p.len = encode(buf, sizeof buf);
    p.ref_timestamp = 990;          /* the buffer's: the TSC needs one */
    p.branch_enable = 1;
    p.walk = walk;
    assert_non_null(d = pt_decoder_new(&p));
    for (int i = 0; i < 100; i++) {
        const pt_state *s = pt_decode(d);
        if (s->err == PT_ERR_NODATA)
            break;
        assert_int_equal(s->err, 0);
        if (!(s->type & ST_BRANCH))
            continue;
        assert_true(nb < sizeof want / sizeof want[0]);
        assert_int_equal(s->from_ip, want[nb][0]);
        assert_int_equal(s->to_ip, want[nb][1]);
        assert_int_equal(s->timestamp, 1000);
        nb++;
    }
    assert_int_equal(nb, sizeof want / sizeof want[0]);
    pt_decoder_free(d);
}

/* An instruction period of 4: samples at the 4th and 8th instruction. */
static void test_walk_period(void **st)
{
    uint8_t buf[256];
    pt_params p;
    pt_decoder *d;
    uint64_t at[4];
    int n = 0;

    (void)st;
    make_code();
    memset(&p, 0, sizeof p);
    p.buf = buf;
    p.len = encode(buf, sizeof buf);
    p.ref_timestamp = 990;          /* the buffer's: the TSC needs one */
    p.branch_enable = 1;
    p.period_type = PERIOD_INSTRUCTIONS;
    p.period = 4;
    p.walk = walk;
    assert_non_null(d = pt_decoder_new(&p));
    for (int i = 0; i < 100; i++) {
        const pt_state *s = pt_decode(d);
        if (s->err == PT_ERR_NODATA)
            break;
        if ((s->type & ST_INSTRUCTION) && n < 4)
            at[n++] = s->from_ip;
    }
    /* dec jne dec jne | dec jne(not taken) call ret | jmp syscall */
    assert_int_equal(n, 2);
    assert_int_equal(at[0], 0x1003);
    assert_int_equal(at[1], 0x1100);
    pt_decoder_free(d);
}

/* Code the walk cannot read: "Failed to get instruction" at the IP, then
 * the walk resynchronises at the next TIP. */
static void test_walk_missing_code(void **st)
{
    uint8_t buf[256];
    pt_params p;
    pt_decoder *d;
    int errors = 0, after = 0;

    (void)st;
    memset(code, 0xff, sizeof code); /* not decodable as anything useful */
    code[0] = 0x0f; code[1] = 0x0b;  /* ud2 then garbage */
    memset(&p, 0, sizeof p);
    p.buf = buf;
    p.len = encode(buf, sizeof buf);
    p.ref_timestamp = 990;          /* the buffer's: the TSC needs one */
    p.branch_enable = 1;
    p.walk = walk;
    assert_non_null(d = pt_decoder_new(&p));
    for (int i = 0; i < 100; i++) {
        const pt_state *s = pt_decode(d);
        if (s->err == PT_ERR_NODATA)
            break;
        if (s->err) {
            errors++;
            assert_true(s->err == PT_ERR_NOINSN || s->err == PT_ERR_MISMAT);
        } else if (errors && (s->type & ST_BRANCH)) {
            after++;
        }
    }
    assert_true(errors >= 1);
    assert_true(after >= 1);
    assert_string_equal(pt_err_msg(PT_ERR_NOINSN), "Failed to get instruction");
    pt_decoder_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_itrace_defaults),
        cmocka_unit_test(test_itrace_refused),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_walk_branches),
        cmocka_unit_test(test_walk_period),
        cmocka_unit_test(test_walk_missing_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
