/*
 * test_insn.c - the shared x86 classifier (src/insn/): one test per
 * decision (call, return, direct and indirect jump, conditional branch
 * incl. jrcxz and loop*, far, xbegin, trap, not a branch), each decided
 * the same from capstone's and from Zydis's decoding of the same bytes;
 * and, over the opcode space, that the classification of every capstone
 * decoding is the one capstone's groups give (what binary/disasm.c
 * decided before it shared the classifier: LLVM's view) and that the
 * byte screen and the id screen never miss a branch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/x86space.h"
#include "insn/insn.h"

#define AT 0x401000ull /* where the test bytes run */

typedef struct both {
    csh cs;
    cs_insn *in;
    lp_zydis *zy;
} both;

static int setup(void **state)
{
    both *b = calloc(1, sizeof *b);
    lp_error err = {0};

    assert_non_null(b);
    assert_int_equal(cs_open(CS_ARCH_X86, CS_MODE_64, &b->cs), CS_ERR_OK);
    assert_int_equal(cs_option(b->cs, CS_OPT_DETAIL, CS_OPT_ON), CS_ERR_OK);
    b->in = cs_malloc(b->cs);
    b->zy = lp_zydis_open(&err);
    if (!b->zy)
        fail_msg("%s", err.msg);
    *state = b;
    return 0;
}

static int teardown(void **state)
{
    both *b = *state;

    cs_free(b->in, 1);
    cs_close(&b->cs);
    lp_zydis_close(b->zy);
    free(b);
    return 0;
}

/* Capstone's description of `code` (its length in *len, 0 if it cannot
 * decode it). */
static void desc_cs(both *b, const uint8_t *code, size_t n, unsigned *len,
                    lp_x86_desc *d)
{
    uint64_t a = AT;

    *len = 0;
    memset(d, 0, sizeof *d);
    if (!cs_disasm_iter(b->cs, &code, &n, &a, b->in))
        return;
    *len = b->in->size;
    lp_x86_desc_cs(b->in, d);
}

static void same_desc(const lp_x86_desc *c, const lp_x86_desc *z,
                      const char *what)
{
    bool counts = c->mnem == LP_X86_JCXZ || c->mnem == LP_X86_LOOP ||
                  c->mnem == LP_X86_LOOPE || c->mnem == LP_X86_LOOPNE;

    if (c->mnem != z->mnem || c->cond != z->cond || c->op != z->op ||
        (counts && c->count_bits != z->count_bits) ||
        (c->op == LP_X86_OP_IMM && c->imm != z->imm) ||
        (c->op == LP_X86_OP_REG && memcmp(&c->reg, &z->reg, sizeof c->reg)) ||
        (c->op == LP_X86_OP_MEM &&
         (memcmp(&c->base, &z->base, sizeof c->base) ||
          memcmp(&c->index, &z->index, sizeof c->index) ||
          c->seg.id != z->seg.id || c->scale != z->scale || c->disp != z->disp)))
        fail_msg("%s: capstone and Zydis describe it differently (mnem %u/%u "
                 "op %u/%u)", what, c->mnem, z->mnem, c->op, z->op);
}

/* Both decoders' flow of `hex`-given bytes, which must agree; returned. */
#define FLOW(b, what, ...)                                                    \
    flow_of(b, what, (const uint8_t[]){__VA_ARGS__},                          \
            sizeof((const uint8_t[]){__VA_ARGS__}), NULL)

static lp_flow flow_of(both *b, const char *what, const uint8_t *code,
                       size_t n, lp_x86_desc *out)
{
    lp_x86_desc c, z;
    unsigned clen, zlen = lp_zydis_decode(b->zy, code, n, AT, &z);
    lp_flow fc, fz;

    desc_cs(b, code, n, &clen, &c);
    if (!clen || clen != zlen)
        fail_msg("%s: lengths capstone %u, Zydis %u, want %zu", what, clen,
                 zlen, n);
    same_desc(&c, &z, what);
    fc = lp_x86_flow(&c);
    fz = lp_x86_flow(&z);
    if (fc.kind != fz.kind || fc.flags != fz.flags || fc.target != fz.target)
        fail_msg("%s: classified differently", what);
    if (out)
        *out = z;
    return fz;
}

static void expect(lp_flow f, unsigned kind, unsigned flags, uint64_t target,
                   const char *what)
{
    if (f.kind != kind || f.flags != flags || f.target != target)
        fail_msg("%s: kind %u flags %#x target %#llx, want %u %#x %#llx", what,
                 f.kind, f.flags, (unsigned long long)f.target, kind, flags,
                 (unsigned long long)target);
}

/* ---- one decision each ------------------------------------------------------ */

static void test_calls(void **state)
{
    both *b = *state;
    lp_x86_desc d;

    expect(FLOW(b, "call rel32", 0xe8, 0x10, 0, 0, 0), LP_FLOW_CALL, 0,
           AT + 5 + 0x10, "call rel32");
    expect(FLOW(b, "call *%rax", 0xff, 0xd0), LP_FLOW_CALL, LP_FLOW_INDIRECT,
           0, "call *%rax");
    expect(flow_of(b, "call *8(%rip)",
                   (const uint8_t[]){0xff, 0x15, 8, 0, 0, 0}, 6, &d),
           LP_FLOW_CALL, LP_FLOW_INDIRECT, 0, "call *8(%rip)");
    assert_int_equal(d.base.id, LP_X86_RIP);
    assert_int_equal(d.disp, 8);
    expect(FLOW(b, "lcall *(%rax)", 0xff, 0x18), LP_FLOW_CALL,
           LP_FLOW_INDIRECT | LP_FLOW_FAR, 0, "lcall");
}

static void test_returns(void **state)
{
    both *b = *state;
    lp_x86_desc d;

    expect(FLOW(b, "ret", 0xc3), LP_FLOW_RET, 0, 0, "ret");
    expect(FLOW(b, "repz ret", 0xf3, 0xc3), LP_FLOW_RET, 0, 0, "repz ret");
    expect(flow_of(b, "ret $16", (const uint8_t[]){0xc2, 0x10, 0}, 3, &d),
           LP_FLOW_RET, 0, 0, "ret $16");
    assert_int_equal(d.op, LP_X86_OP_IMM); /* the pop count, no target */
    assert_int_equal(d.imm, 16);
    expect(FLOW(b, "lret", 0xcb), LP_FLOW_RET, LP_FLOW_FAR, 0, "lret");
    expect(FLOW(b, "iretq", 0x48, 0xcf), LP_FLOW_RET, LP_FLOW_FAR, 0, "iretq");
    expect(FLOW(b, "sysret", 0x0f, 0x07), LP_FLOW_RET, LP_FLOW_FAR, 0,
           "sysret");
}

static void test_direct_jumps(void **state)
{
    both *b = *state;

    expect(FLOW(b, "jmp rel8", 0xeb, 0xfe), LP_FLOW_JUMP, 0, AT, "jmp rel8");
    expect(FLOW(b, "jmp rel32", 0xe9, 0, 1, 0, 0), LP_FLOW_JUMP, 0,
           AT + 5 + 0x100, "jmp rel32");
    expect(FLOW(b, "bnd jmp", 0xf2, 0xe9, 0, 1, 0, 0), LP_FLOW_JUMP, 0,
           AT + 6 + 0x100, "bnd jmp");
}

static void test_indirect_jumps(void **state)
{
    both *b = *state;
    lp_x86_desc d;

    expect(FLOW(b, "jmp *%r11", 0x41, 0xff, 0xe3), LP_FLOW_JUMP,
           LP_FLOW_INDIRECT, 0, "jmp *%r11");
    expect(flow_of(b, "jmp *8(%rax,%rcx,8)",
                   (const uint8_t[]){0xff, 0x64, 0xc8, 0x08}, 4, &d),
           LP_FLOW_JUMP, LP_FLOW_INDIRECT, 0, "jmp *8(%rax,%rcx,8)");
    assert_int_equal(d.base.id, LP_X86_GPR + 0);
    assert_int_equal(d.index.id, LP_X86_GPR + 1);
    assert_int_equal(d.scale, 8);
    assert_int_equal(d.disp, 8);
    expect(flow_of(b, "jmp *%fs:0x10",
                   (const uint8_t[]){0x64, 0xff, 0x24, 0x25, 0x10, 0, 0, 0},
                   8, &d),
           LP_FLOW_JUMP, LP_FLOW_INDIRECT, 0, "jmp *%fs:0x10");
    assert_int_equal(d.seg.id, LP_X86_FS);
    expect(FLOW(b, "notrack jmp *%rax", 0x3e, 0xff, 0xe0), LP_FLOW_JUMP,
           LP_FLOW_INDIRECT, 0, "notrack jmp");
    expect(FLOW(b, "ljmp *(%rax)", 0xff, 0x28), LP_FLOW_JUMP,
           LP_FLOW_INDIRECT | LP_FLOW_FAR, 0, "ljmp");
}

static void test_conditional_branches(void **state)
{
    both *b = *state;
    lp_x86_desc d;
    uint8_t code[6];

    for (unsigned cc = 0; cc < 16; cc++) {
        char what[32];
        code[0] = (uint8_t)(0x70 + cc);
        code[1] = 0x10;
        snprintf(what, sizeof what, "jcc %#x rel8", cc);
        expect(flow_of(b, what, code, 2, &d), LP_FLOW_COND, 0, AT + 0x12, what);
        assert_int_equal(d.cond, cc);
        code[0] = 0x0f;
        code[1] = (uint8_t)(0x80 + cc);
        memcpy(code + 2, "\x00\x01\x00\x00", 4);
        snprintf(what, sizeof what, "jcc %#x rel32", cc);
        expect(flow_of(b, what, code, 6, &d), LP_FLOW_COND, 0, AT + 0x106, what);
        assert_int_equal(d.cond, cc);
    }
    expect(flow_of(b, "jrcxz", (const uint8_t[]){0xe3, 0x10}, 2, &d),
           LP_FLOW_COND, 0, AT + 0x12, "jrcxz");
    assert_int_equal(d.count_bits, 64);
    expect(flow_of(b, "jecxz", (const uint8_t[]){0x67, 0xe3, 0x10}, 3, &d),
           LP_FLOW_COND, 0, AT + 0x13, "jecxz");
    assert_int_equal(d.count_bits, 32);
    /* capstone 4 puts loop* in no group; LLVM calls them conditional
     * branches, and so does llvm-profgen */
    expect(FLOW(b, "loop", 0xe2, 0x10), LP_FLOW_COND, 0, AT + 0x12, "loop");
    expect(FLOW(b, "loope", 0xe1, 0x10), LP_FLOW_COND, 0, AT + 0x12, "loope");
    expect(FLOW(b, "loopne", 0xe0, 0x10), LP_FLOW_COND, 0, AT + 0x12, "loopne");
    expect(FLOW(b, "xbegin", 0xc7, 0xf8, 0x10, 0, 0, 0), LP_FLOW_COND,
           LP_FLOW_ABORT, AT + 6 + 0x10, "xbegin");
}

static void test_traps(void **state)
{
    both *b = *state;

    expect(FLOW(b, "ud2", 0x0f, 0x0b), LP_FLOW_NONE, LP_FLOW_TRAP, 0, "ud2");
    expect(FLOW(b, "hlt", 0xf4), LP_FLOW_NONE, LP_FLOW_TRAP, 0, "hlt");
    expect(FLOW(b, "int3", 0xcc), LP_FLOW_NONE, LP_FLOW_TRAP, 0, "int3");
}

static void test_not_branches(void **state)
{
    both *b = *state;

    expect(FLOW(b, "syscall", 0x0f, 0x05), LP_FLOW_NONE, 0, 0, "syscall");
    expect(FLOW(b, "int $0x80", 0xcd, 0x80), LP_FLOW_NONE, 0, 0, "int");
    expect(FLOW(b, "nop", 0x90), LP_FLOW_NONE, 0, 0, "nop");
    expect(FLOW(b, "push %rbp", 0x55), LP_FLOW_NONE, 0, 0, "push");
    expect(FLOW(b, "endbr64", 0xf3, 0x0f, 0x1e, 0xfa), LP_FLOW_NONE, 0, 0,
           "endbr64");
    expect(FLOW(b, "vmovdqu64 (%rdi),%zmm16", 0x62, 0xe1, 0xfe, 0x48, 0x6f,
                0x07), LP_FLOW_NONE, 0, 0, "vmovdqu64");
}

/* What capstone 4 cannot decode (glibc's EVEX string functions, VEX
 * mask moves, ud1's ModRM): Zydis decodes it, and it is no branch. */
static void test_zydis_only(void **state)
{
    both *b = *state;
    static const struct { uint8_t b[8], n; unsigned flags; } only[] = {
        {{0x62, 0xb2, 0x7e, 0x20, 0x26, 0xc9}, 6, 0}, /* vptestnmb */
        {{0xc5, 0xfb, 0x93, 0xc1}, 4, 0},             /* kmovd %k1,%eax */
        {{0xc4, 0xe1, 0xf9, 0x98, 0xc1}, 5, 0},       /* kortestd %k1,%k0 */
        {{0x0f, 0xb9, 0xc0}, 3, LP_FLOW_TRAP},        /* ud1 %eax,%eax */
    };
    lp_x86_desc d;

    for (size_t i = 0; i < sizeof only / sizeof *only; i++) {
        assert_int_equal(lp_zydis_decode(b->zy, only[i].b, only[i].n, AT, &d),
                         only[i].n);
        expect(lp_x86_flow(&d), LP_FLOW_NONE, only[i].flags, 0, "zydis only");
        assert_false(lp_x86_bytes_may_branch(only[i].b, only[i].n));
        /* VEX/EVEX but ud1 (legacy) */
        assert_int_equal(lp_x86_bytes_vex(only[i].b, only[i].n),
                         only[i].b[0] != 0x0f);
    }
    assert_int_equal(lp_zydis_decode(b->zy, (const uint8_t[]){0x0f, 0x04}, 2,
                                     AT, &d), 0);
}

/* The id screens' test of a family is the classifier's answer. */
static void test_families_that_branch(void **state)
{
    (void)state;
    for (unsigned m = 0; m < LP_X86_NMNEM; m++) {
        lp_x86_desc imm = {.mnem = (uint8_t)m, .op = LP_X86_OP_IMM};
        lp_x86_desc reg = {.mnem = (uint8_t)m, .op = LP_X86_OP_REG};
        bool b = lp_x86_flow(&imm).kind != LP_FLOW_NONE ||
                 lp_x86_flow(&reg).kind != LP_FLOW_NONE;
        if (lp_x86_mnem_branches(m) != b)
            fail_msg("family %u: lp_x86_mnem_branches says %d", m, !b);
    }
}

/* ---- the opcode space ---------------------------------------------------------- */

/* The classification capstone's groups give (binary/disasm.c's rule
 * before the classifier was shared): call group: call; ret and iret
 * groups: return; jump group: jmp/ljmp unconditional, the rest
 * conditional; loop* conditional; nothing else a branch. */
static unsigned groups_kind(const cs_insn *in)
{
    const cs_detail *d = in->detail;
    bool call = false, ret = false, jump = false;

    for (uint8_t i = 0; i < d->groups_count; i++) {
        call |= d->groups[i] == CS_GRP_CALL;
        ret |= d->groups[i] == CS_GRP_RET || d->groups[i] == CS_GRP_IRET;
        jump |= d->groups[i] == CS_GRP_JUMP;
    }
    if (call)
        return LP_FLOW_CALL;
    if (ret)
        return LP_FLOW_RET;
    if (jump)
        return in->id == X86_INS_JMP || in->id == X86_INS_LJMP ? LP_FLOW_JUMP
                                                                : LP_FLOW_COND;
    if (in->id == X86_INS_LOOP || in->id == X86_INS_LOOPE ||
        in->id == X86_INS_LOOPNE)
        return LP_FLOW_COND;
    return LP_FLOW_NONE;
}

typedef struct space {
    both *b;
    size_t kinds[5], compared;
} space;

/* One encoding capstone decodes: classified as its groups say, with the
 * indirect flag of its operand, and no branch missed by the screens. */
static void groups_visit(const uint8_t *code, size_t n, void *ctx)
{
    space *s = ctx;
    both *b = s->b;
    const uint8_t *c = code;
    uint64_t a = AT;
    size_t left = n;
    lp_x86_desc d;
    lp_flow f;
    unsigned want;

    if (!cs_disasm_iter(b->cs, &c, &left, &a, b->in))
        return;
    lp_x86_desc_cs(b->in, &d);
    f = lp_x86_flow(&d);
    want = groups_kind(b->in);
    if (f.kind != want)
        fail_msg("%s %s: kind %u, capstone's groups say %u", b->in->mnemonic,
                 b->in->op_str, f.kind, want);
    if (want != LP_FLOW_NONE && want != LP_FLOW_RET &&
        ((f.flags & LP_FLOW_INDIRECT) != 0) !=
            (b->in->detail->x86.operands[0].type != X86_OP_IMM))
        fail_msg("%s %s: indirect flag wrong", b->in->mnemonic, b->in->op_str);
    if (want != LP_FLOW_NONE &&
        (!lp_x86_bytes_may_branch(code, n) || !lp_x86_cs_branch_id(b->in->id)))
        fail_msg("%s %s: a branch the screens miss", b->in->mnemonic,
                 b->in->op_str);
    s->kinds[f.kind]++;
}

static void test_opcode_space_matches_groups(void **state)
{
    static const char *const pre[] = {"", "\x66", "\xf2", "\xf3", "\x48",
                                      "\x67", "\x3e", "\x41"};
    static const char *const one[] = {""}, *const two[] = {"\x0f", "\x0f\x01"};
    space s = {.b = *state};

    x86space_each(pre, sizeof pre / sizeof *pre, one, 1, 1, groups_visit, &s);
    x86space_each(pre, sizeof pre / sizeof *pre, two, 2, 7, groups_visit, &s);
    assert_true(s.kinds[LP_FLOW_CALL] > 100 && s.kinds[LP_FLOW_RET] > 100 &&
                s.kinds[LP_FLOW_JUMP] > 100 && s.kinds[LP_FLOW_COND] > 1000);
}

/* Where capstone and Zydis both decode a branch-family instruction they
 * describe it alike - unless a 66 prefix is among its prefixes: near
 * branches with it are where decoders differ (capstone and LLVM take
 * AMD's rel16, Zydis Intel's rel32); no compiler emits them. */
static void agree_visit(const uint8_t *code, size_t n, void *ctx)
{
    space *s = ctx;
    lp_x86_desc c, z;
    unsigned clen, zlen;

    for (size_t i = 0; i < n && code[i] != 0x0f; i++) {
        if (code[i] == 0x66)
            return;
        if (!((code[i] & 0xf0) == 0x40 || code[i] == 0x67 ||
              code[i] == 0xf0 || code[i] == 0xf2 || code[i] == 0xf3 ||
              (code[i] & 0xe7) == 0x26 || code[i] == 0x64 || code[i] == 0x65))
            break;
    }
    if (!lp_x86_bytes_may_branch(code, n))
        return;
    desc_cs(s->b, code, n, &clen, &c);
    zlen = lp_zydis_decode(s->b->zy, code, n, AT, &z);
    if (!clen || !zlen || !lp_x86_mnem_branches(c.mnem))
        return;
    if (clen != zlen)
        fail_msg("%02x %02x %02x: lengths %u/%u", code[0], code[1], code[2],
                 clen, zlen);
    same_desc(&c, &z, "opcode space");
    s->compared++;
}

/* The one-byte and 0f maps, prefixed with nothing, REX.W, f2, f3, 3e. */
static void test_opcode_space_decoders_agree(void **state)
{
    static const char *const pre[] = {"", "\x48", "\xf2", "\xf3", "\x3e"};
    static const char *const esc[] = {"", "\x0f"};
    space s = {.b = *state};

    x86space_each(pre, sizeof pre / sizeof *pre, esc, 2, 1, agree_visit, &s);
    assert_true(s.compared > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_returns),
        cmocka_unit_test(test_direct_jumps),
        cmocka_unit_test(test_indirect_jumps),
        cmocka_unit_test(test_conditional_branches),
        cmocka_unit_test(test_traps),
        cmocka_unit_test(test_not_branches),
        cmocka_unit_test(test_zydis_only),
        cmocka_unit_test(test_families_that_branch),
        cmocka_unit_test(test_opcode_space_matches_groups),
        cmocka_unit_test(test_opcode_space_decoders_agree),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
