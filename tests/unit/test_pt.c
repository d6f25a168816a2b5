/*
 * test_pt.c - src/pt: the --itrace parser (perf's syntax and defaults),
 * perf's instruction classification, the packet walk on a trace made here
 * with libipt's encoder over a small piece of code, and the thread stacks
 * (perf's thread-stack rules for g and l).
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
    assert_int_equal(lp_itrace_parse("iG", &o, &err), -1);
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_non_null(strstr(err.msg, "'G'"));
    assert_int_equal(lp_itrace_parse("ig0", &o, &err), -1);
    assert_int_equal(err.code, LP_EUSAGE);
    assert_int_equal(lp_itrace_parse("ig1025", &o, &err), -1);
}

static void test_itrace_callchain(void **st)
{
    lp_itrace o;
    lp_error err;

    (void)st;
    assert_int_equal(lp_itrace_parse("i100ilg", &o, &err), 0);
    assert_true(o.callchain && o.last_branch && o.instructions);
    assert_int_equal(o.callchain_sz, 16);
    assert_int_equal(o.last_branch_sz, 64);
    assert_int_equal(lp_itrace_parse("ig 4l8", &o, &err), 0); /* perf skips spaces */
    assert_int_equal(o.callchain_sz, 4);
    assert_int_equal(o.last_branch_sz, 8);
    assert_int_equal(lp_itrace_parse("ig1024", &o, &err), 0);
    assert_int_equal(o.callchain_sz, 1024);
    assert_int_equal(lp_itrace_parse("il", &o, &err), 0);
    assert_false(o.callchain);
}

/* One branch into the thread stack of tid 1. */
static void branch(pt_stacks *s, uint32_t flags, uint64_t from, uint64_t to,
                   unsigned len, int trace_nr)
{
    pt_branch b = {flags, from, to, len, trace_nr};

    assert_int_equal(pt_stack_event(s, 1, 1, 0, &b), 0);
}

/* The callchain of a sample at ip: the user marker, ip, the returns. */
static size_t chain(pt_stacks *s, uint64_t ip, uint64_t *c, size_t sz)
{
    return pt_stack_callchain(pt_stacks_find(s, 1, 1, 0), ip, c, sz);
}

enum { CALL = PT_IPF_BRANCH | PT_IPF_CALL, RET = PT_IPF_BRANCH | PT_IPF_RETURN };

static void test_stack_calls_returns(void **st)
{
    pt_stacks *s = pt_stacks_new(0, true);
    uint64_t c[8];

    (void)st;
    assert_int_equal(chain(s, 0x500, c, 8), 2); /* no stack yet: marker, ip */
    assert_true(c[0] == LP_CONTEXT_USER && c[1] == 0x500);
    branch(s, CALL, 0x100, 0x200, 5, 1);        /* main -> f */
    branch(s, CALL, 0x210, 0x300, 5, 1);        /* f -> g */
    branch(s, CALL, 0x310, 0x315, 5, 1);        /* a call to the next insn */
    assert_int_equal(chain(s, 0x320, c, 8), 4);
    assert_true(c[1] == 0x320 && c[2] == 0x215 && c[3] == 0x105);
    assert_int_equal(chain(s, 0x320, c, 3), 3); /* cut at the size */
    branch(s, RET, 0x330, 0x999, 1, 1);         /* to no call: nothing */
    assert_int_equal(chain(s, 0x320, c, 8), 4);
    branch(s, RET, 0x330, 0x105, 1, 1);         /* longjmp-like: pops both */
    assert_int_equal(chain(s, 0x106, c, 8), 2);
    branch(s, CALL, 0x100, 0x200, 5, 1);
    branch(s, CALL, 0x210, 0x300, 5, 2);        /* another trace: flushed */
    assert_int_equal(chain(s, 0x300, c, 8), 3);
    assert_true(c[2] == 0x215);
    pt_stacks_free(s);
}

static void test_stack_trace_begin_end(void **st)
{
    pt_stacks *s = pt_stacks_new(0, true);
    uint64_t c[8];

    (void)st;
    branch(s, CALL, 0x100, 0x200, 5, 1);
    /* an interrupt (asynchronous, length 0) into the kernel as the trace
     * ends: pushed, marked */
    branch(s, PT_IPF_BRANCH | PT_IPF_CALL | PT_IPF_ASYNC | PT_IPF_INTERRUPT |
              PT_IPF_TRACE_END, 0x220, 0xffffffff81000000ull, 0, 1);
    assert_int_equal(chain(s, 0xffffffff81000010ull, c, 8), 5);
    assert_true(c[0] == LP_CONTEXT_KERNEL && c[2] == LP_CONTEXT_USER &&
                c[3] == 0x220 && c[4] == 0x105);
    /* a kernel sample with room for one more: the marker does not fit */
    assert_int_equal(chain(s, 0xffffffff81000010ull, c, 3), 2);
    /* the trace begins again where it stopped: the interrupt pops */
    branch(s, PT_IPF_BRANCH | PT_IPF_TRACE_BEGIN, 0, 0x220, 0, 1);
    assert_int_equal(chain(s, 0x230, c, 8), 3);
    assert_int_equal(c[2], 0x105);
    pt_stacks_free(s);
}

static void test_stack_branches_and_flags(void **st)
{
    pt_stacks *s = pt_stacks_new(2, false);
    lp_branch_entry br[2];
    pt_state ps;
    unsigned len;

    (void)st;
    branch(s, CALL, 0x100, 0x200, 5, 1);
    branch(s, RET, 0x210, 0x105, 1, 1);
    branch(s, PT_IPF_BRANCH | PT_IPF_CONDITIONAL | PT_IPF_IN_TX, 0x107, 0x120, 2, 1);
    assert_int_equal(pt_stack_branches(s, pt_stacks_find(s, 1, 1, 0), br), 2);
    assert_true(br[0].from == 0x107 && br[0].to == 0x120 && br[0].flags == 1u << 2);
    assert_true(br[1].from == 0x210 && br[1].to == 0x105);
    /* no call stack without g */
    assert_int_equal(pt_stack_callchain(pt_stacks_find(s, 1, 1, 0), 0x130,
                                        (uint64_t[4]){0}, 4), 2);
    /* the idle task has a stack per CPU */
    assert_null(pt_stacks_find(s, 0, 0, 3));
    memset(&ps, 0, sizeof ps);
    ps.from_ip = 0x100;
    ps.to_ip = 0x200;
    ps.insn_op = OP_CALL;
    ps.insn_len = 5;
    assert_int_equal(pt_branch_flags(&ps, &len), CALL);
    assert_int_equal(len, 5);
    ps.flags = SF_ASYNC;                        /* an interrupt: length 0 */
    assert_int_equal(pt_branch_flags(&ps, &len),
                     PT_IPF_BRANCH | PT_IPF_CALL | PT_IPF_ASYNC | PT_IPF_INTERRUPT);
    assert_int_equal(len, 0);
    ps.flags = 0;
    ps.from_ip = 0;                             /* no source: trace begin */
    ps.type = ST_TRACE_BEGIN;
    assert_int_equal(pt_branch_flags(&ps, &len), PT_IPF_BRANCH | PT_IPF_TRACE_BEGIN);
    pt_stacks_free(s);
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
        cmocka_unit_test(test_itrace_callchain),
        cmocka_unit_test(test_stack_calls_returns),
        cmocka_unit_test(test_stack_trace_begin_end),
        cmocka_unit_test(test_stack_branches_and_flags),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_walk_branches),
        cmocka_unit_test(test_walk_period),
        cmocka_unit_test(test_walk_missing_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
