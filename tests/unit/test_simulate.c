/*
 * test_simulate.c - unit tests for src/simulate: capstone classification of
 * control transfers and their emulation from registers and memory (jcc
 * conditions from EFLAGS, indirect targets, call pushing and ret popping
 * the return address), and the straight-line blocks. The "tracee" is this
 * process itself (process_vm_readv/writev on our own pid). Also the true
 * call stacks of --truth (stack.c): hash-consed nodes, returns, unwinding.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "simulate/sim.h"

typedef struct fixture {
    sim s;
    lp_record_opts opts;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    sim *s = &f->s;

    assert_non_null(f);
    lp_error err = {0};

    s->zy = lp_zydis_open(&err);
    if (!s->zy)
        fail_msg("%s", err.msg);
    s->pid = getpid();
    s->opts = &f->opts;
    *state = s; /* &f->s == f */
    return 0;
}

static int teardown(void **state)
{
    sim *s = *state;
    cti *c, *ct;

    HASH_ITER(hh, s->ctis, c, ct) {
        HASH_DEL(s->ctis, c);
        free(c);
    }
    lp_zydis_close(s->zy);
    free(s);
    return 0;
}

/* Decode `bytes` placed at a heap address (not patched: not a block). */
static const cti *decode(sim *s, const uint8_t *bytes, size_t n, uint8_t *where)
{
    lp_error err;

    memset(where, 0x90, 32);
    memcpy(where, bytes, n);
    return sim_cti_get(s, (uint64_t)(uintptr_t)where, &err);
}

static void test_classify(void **state)
{
    sim *s = *state;
    uint8_t *code = malloc(8 * 32);
    static const uint8_t jne[] = {0x75, 0x10};          /* jne +0x10 */
    static const uint8_t jmp[] = {0xeb, 0xfe};          /* jmp . */
    static const uint8_t call[] = {0xe8, 0, 0, 0, 0};  /* call next */
    static const uint8_t ret[] = {0xc3};
    static const uint8_t retn[] = {0xc2, 0x10, 0x00};   /* ret 16 */
    static const uint8_t jmpr[] = {0xff, 0xe0};         /* jmp *%rax */
    static const uint8_t callm[] = {0xff, 0x15, 0x10, 0, 0, 0}; /* call *0x10(%rip) */
    static const uint8_t add[] = {0x48, 0x01, 0xd8};    /* add %rbx,%rax */
    const cti *c;
    uint64_t base = (uint64_t)(uintptr_t)code;

    c = decode(s, jne, sizeof jne, code);
    assert_int_equal(c->kind, CTI_JCC);
    assert_int_equal(c->target, base + 0x12);
    assert_int_equal(c->len, 2);
    c = decode(s, jmp, sizeof jmp, code + 32);
    assert_int_equal(c->kind, CTI_JMP);
    assert_int_equal(c->target, base + 32);
    c = decode(s, call, sizeof call, code + 64);
    assert_int_equal(c->kind, CTI_CALL);
    assert_int_equal(c->target, base + 64 + 5);
    assert_int_equal(decode(s, ret, 1, code + 96)->kind, CTI_RET);
    c = decode(s, retn, sizeof retn, code + 128);
    assert_int_equal(c->kind, CTI_RET);
    assert_int_equal(c->d.op, LP_X86_OP_IMM);
    assert_int_equal(c->d.imm, 16);
    c = decode(s, jmpr, sizeof jmpr, code + 160);
    assert_int_equal(c->kind, CTI_JMP_IND);
    assert_int_equal(c->d.op, LP_X86_OP_REG);
    assert_int_equal(c->d.reg.id, LP_X86_GPR + 0); /* rax */
    assert_int_equal(c->d.reg.bits, 64);
    c = decode(s, callm, sizeof callm, code + 192);
    assert_int_equal(c->kind, CTI_CALL_IND);
    assert_int_equal(c->d.op, LP_X86_OP_MEM);
    assert_int_equal(c->d.base.id, LP_X86_RIP);
    assert_int_equal(decode(s, add, sizeof add, code + 224)->kind, CTI_NONE);
    free(code);
}

#define CF 0x1
#define PF 0x4
#define ZF 0x40
#define SF 0x80
#define OF 0x800

static int jcc(sim *s, uint8_t opcode, uint64_t flags, uint64_t rcx)
{
    uint8_t *code = malloc(32);
    uint8_t bytes[2] = {opcode, 0x10};
    struct user_regs_struct r;
    lp_error err;
    const cti *c = decode(s, bytes, 2, code);
    int t;

    memset(&r, 0, sizeof r);
    r.eflags = flags;
    r.rcx = rcx;
    t = sim_emulate(s->pid, c, &r, &err);
    if (t < 0)
        fail_msg("opcode 0x%02x: %s", opcode, err.msg);
    assert_int_equal(r.rip, t ? (uint64_t)(uintptr_t)code + 0x12
                              : (uint64_t)(uintptr_t)code + 2);
    free(code);
    HASH_DEL(s->ctis, (cti *)c); /* the same heap address may come back */
    free((cti *)c);
    return t;
}

static void test_jcc_conditions(void **state)
{
    sim *s = *state;

    assert_int_equal(jcc(s, 0x74, ZF, 0), 1);        /* je */
    assert_int_equal(jcc(s, 0x74, 0, 0), 0);
    assert_int_equal(jcc(s, 0x75, 0, 0), 1);         /* jne */
    assert_int_equal(jcc(s, 0x72, CF, 0), 1);        /* jb */
    assert_int_equal(jcc(s, 0x73, CF, 0), 0);        /* jae */
    assert_int_equal(jcc(s, 0x76, ZF, 0), 1);        /* jbe */
    assert_int_equal(jcc(s, 0x77, 0, 0), 1);         /* ja */
    assert_int_equal(jcc(s, 0x77, CF, 0), 0);
    assert_int_equal(jcc(s, 0x7c, SF, 0), 1);        /* jl: SF != OF */
    assert_int_equal(jcc(s, 0x7c, SF | OF, 0), 0);
    assert_int_equal(jcc(s, 0x7d, SF | OF, 0), 1);   /* jge */
    assert_int_equal(jcc(s, 0x7e, ZF | SF | OF, 0), 1); /* jle via ZF */
    assert_int_equal(jcc(s, 0x7f, OF, 0), 0);        /* jg: SF != OF */
    assert_int_equal(jcc(s, 0x7f, SF | OF, 0), 1);
    assert_int_equal(jcc(s, 0x78, SF, 0), 1);        /* js */
    assert_int_equal(jcc(s, 0x79, SF, 0), 0);        /* jns */
    assert_int_equal(jcc(s, 0x70, OF, 0), 1);        /* jo */
    assert_int_equal(jcc(s, 0x71, OF, 0), 0);        /* jno */
    assert_int_equal(jcc(s, 0x7a, PF, 0), 1);        /* jp */
    assert_int_equal(jcc(s, 0x7b, PF, 0), 0);        /* jnp */
    assert_int_equal(jcc(s, 0xe3, 0, 0), 1);         /* jrcxz */
    assert_int_equal(jcc(s, 0xe3, 0, 5), 0);
    assert_int_equal(jcc(s, 0xe2, 0, 2), 1);         /* loop: rcx 2 -> 1 */
    assert_int_equal(jcc(s, 0xe2, 0, 1), 0);         /* loop: rcx 1 -> 0 */
    assert_int_equal(jcc(s, 0xe1, ZF, 2), 1);        /* loope */
    assert_int_equal(jcc(s, 0xe1, 0, 2), 0);
    assert_int_equal(jcc(s, 0xe0, 0, 2), 1);         /* loopne */
    assert_int_equal(jcc(s, 0xe0, ZF, 2), 0);
}

/* Instructions of the kinds capstone 4 cannot decode, in glibc's EVEX
 * string functions and in -march=znver4 code, were recorded as taken
 * branches to the next instruction: decoded now, they are no CTIs and
 * have their true length. */
static void test_evex_not_branches(void **state)
{
    sim *s = *state;
    uint8_t *code = malloc(8 * 32);
    static const struct { uint8_t b[8], n; } evex[] = {
        {{0x62, 0xb2, 0x7e, 0x20, 0x26, 0xc9}, 6},       /* vptestnmb %ymm17,%ymm16,%k1 */
        {{0xc5, 0xfb, 0x93, 0xc1}, 4},                   /* kmovd %k1,%eax */
        {{0xc4, 0xe1, 0xfb, 0x93, 0xc1}, 5},             /* kmovq %k1,%rax */
        {{0x62, 0xb3, 0x7d, 0x20, 0x3f, 0xc9, 0x00}, 7}, /* vpcmpeqb %ymm17,%ymm16,%k1 */
        {{0x62, 0xe2, 0x7d, 0x48, 0x7b, 0xc1}, 6},       /* vpbroadcastw %ecx,%zmm16 */
        {{0x62, 0xf1, 0x7d, 0x48, 0x72, 0xd0, 0x03}, 7}, /* vpsrld $3,%zmm0,%zmm0 */
    };

    for (size_t i = 0; i < sizeof evex / sizeof *evex; i++) {
        const cti *c = decode(s, evex[i].b, evex[i].n, code + 32 * i);
        assert_int_equal(c->kind, CTI_NONE);
        assert_int_equal(c->len, evex[i].n);
    }
    free(code);
}

/* What the decoder does not know is single-stepped and never a taken
 * branch, wherever the step lands; far transfers are branches when they
 * do not land next. */
static void test_step_kinds(void **state)
{
    sim *s = *state;
    uint8_t *code = malloc(3 * 32);
    static const uint8_t bad[] = {0x0f, 0x04};        /* no such opcode */
    static const uint8_t retf[] = {0xcb};
    static const uint8_t ud2[] = {0x0f, 0x0b};
    uint64_t base = (uint64_t)(uintptr_t)code;
    const cti *c;

    c = decode(s, bad, sizeof bad, code);
    assert_int_equal(c->kind, CTI_UNKNOWN);
    assert_false(sim_step_taken(c, base + 2));
    assert_false(sim_step_taken(c, 0x1234));
    c = decode(s, retf, sizeof retf, code + 32);
    assert_int_equal(c->kind, CTI_STEP);
    assert_false(sim_step_taken(c, base + 33));
    assert_true(sim_step_taken(c, 0x1234));
    assert_int_equal(decode(s, ud2, sizeof ud2, code + 64)->kind, CTI_NONE);
    free(code);
}

static void test_call_ret_memory(void **state)
{
    sim *s = *state;
    uint8_t *code = malloc(64);
    uint64_t stack[8] = {0}, base = (uint64_t)(uintptr_t)code;
    static const uint8_t call[] = {0xe8, 0x10, 0, 0, 0};
    static const uint8_t retn[] = {0xc2, 0x08, 0x00};
    struct user_regs_struct r;
    lp_error err;
    const cti *c;

    memset(&r, 0, sizeof r);
    r.rsp = (uint64_t)(uintptr_t)&stack[4];
    c = decode(s, call, sizeof call, code);
    assert_int_equal(sim_emulate(s->pid, c, &r, &err), 1);
    assert_int_equal(r.rip, base + 5 + 0x10);
    assert_int_equal(r.rsp, (uint64_t)(uintptr_t)&stack[3]);
    assert_int_equal(stack[3], base + 5);          /* return address pushed */
    c = decode(s, retn, sizeof retn, code + 32);
    assert_int_equal(sim_emulate(s->pid, c, &r, &err), 1);
    assert_int_equal(r.rip, base + 5);
    assert_int_equal(r.rsp, (uint64_t)(uintptr_t)&stack[5]); /* 8 + imm 8 */
    free(code);
}

static void test_indirect_memory_target(void **state)
{
    sim *s = *state;
    uint8_t *code = malloc(32);
    uint64_t table[4] = {0x1111, 0x2222, 0x3333, 0x4444};
    /* jmp *0x8(%rax,%rcx,8) */
    static const uint8_t jmpm[] = {0xff, 0x64, 0xc8, 0x08};
    struct user_regs_struct r;
    lp_error err;
    const cti *c = decode(s, jmpm, sizeof jmpm, code);

    assert_int_equal(c->kind, CTI_JMP_IND);
    memset(&r, 0, sizeof r);
    r.rax = (uint64_t)(uintptr_t)table;
    r.rcx = 2;
    assert_int_equal(sim_emulate(s->pid, c, &r, &err), 1);
    assert_int_equal(r.rip, 0x4444);
    r.rax = 8; /* unreadable address: a clear error */
    assert_int_equal(sim_emulate(s->pid, c, &r, &err), -1);
    assert_non_null(strstr(err.msg, "indirect branch"));
    free(code);
}

/* Equal stacks share a node; parents come first; returns pop through the
 * matching frame; frames whose slot is below the stack pointer go. */
static void test_true_stacks(void **state)
{
    stack_store st;
    thread_state a, b;
    uint32_t n2;
    (void)state;

    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    assert_int_equal(sim_stack_init(&st), 0);
    assert_int_equal(sim_frames_push(&st, &a, 0x100, 0x7000), 0); /* main */
    assert_int_equal(sim_frames_push(&st, &a, 0x200, 0x6f00), 0); /* f */
    n2 = a.node;
    assert_int_equal(sim_frames_push(&st, &b, 0x100, 0x9000), 0); /* other */
    assert_int_equal(sim_frames_push(&st, &b, 0x200, 0x8f00), 0); /* thread */
    assert_int_equal(b.node, n2);           /* hash-consed across threads */
    assert_int_equal(st.n, 3);              /* root + 2 */
    assert_true(st.parent[n2] < n2);
    assert_int_equal(st.ret[n2], 0x200);
    assert_int_equal(sim_frames_push(&st, &a, 0x300, 0x6e00), 0); /* g */
    assert_int_equal(sim_frames_push(&st, &a, 0x300, 0x6d00), 0); /* g again */
    assert_int_equal(a.fr_n, 4);
    sim_frames_return(&st, &a, 0x300);      /* innermost 0x300 */
    assert_int_equal(a.fr_n, 3);
    sim_frames_return(&st, &a, 0x999);      /* unknown: stays */
    assert_int_equal(a.fr_n, 3);
    sim_frames_return(&st, &a, 0x200);      /* pops through g */
    assert_int_equal(a.fr_n, 1);
    assert_int_equal(a.node, st.parent[n2]);
    assert_int_equal(sim_frames_push(&st, &a, 0x200, 0x6f00), 0);
    assert_int_equal(sim_frames_push(&st, &a, 0x300, 0x6e00), 0);
    sim_frames_unwind(&a, 0x6e00);          /* the slot is at sp: live */
    assert_int_equal(a.fr_n, 3);
    sim_frames_unwind(&a, 0x6f08);          /* longjmp up to main's frame */
    assert_int_equal(a.fr_n, 1);
    sim_stack_mark(&st, n2);
    assert_true(st.marked[n2] && st.marked[st.parent[n2]]);
    sim_frames_reset(&a);
    assert_int_equal(a.node, 0);
    free(a.fr_node);
    free(a.fr_slot);
    free(b.fr_node);
    free(b.fr_slot);
    sim_stack_free(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_classify, setup, teardown),
        cmocka_unit_test_setup_teardown(test_jcc_conditions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_evex_not_branches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_step_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_call_ret_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indirect_memory_target, setup, teardown),
        cmocka_unit_test(test_true_stacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
