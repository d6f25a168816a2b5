/*
 * x86flow.c - the decisions: an lp_x86_desc's control-flow class
 * (lp_x86_flow) and which encodings can branch (lp_x86_bytes_may_branch;
 * which families can is the order of lp_x86_mnem, insn.h). Decoders only describe (x86cs.c,
 * x86zydis.c); nothing else in lbr2prof decides what an x86 branch is.
 */
#include "insn/insn.h"

lp_flow lp_x86_flow(const lp_x86_desc *d)
{
    lp_flow f = {0};

    switch (d->mnem) {
    case LP_X86_CALL_FAR:
        f.flags = LP_FLOW_FAR;
        /* fall through */
    case LP_X86_CALL:
        f.kind = LP_FLOW_CALL;
        break;
    case LP_X86_JMP_FAR:
        f.flags = LP_FLOW_FAR;
        /* fall through */
    case LP_X86_JMP:
        f.kind = LP_FLOW_JUMP;
        break;
    case LP_X86_RET_FAR: case LP_X86_IRET: case LP_X86_SYSRET:
    case LP_X86_SYSEXIT:
        f.flags = LP_FLOW_FAR;
        /* fall through */
    case LP_X86_RET: /* the operand of ret imm16 is no target */
        f.kind = LP_FLOW_RET;
        return f;
    case LP_X86_XBEGIN:
        f.flags = LP_FLOW_ABORT;
        /* fall through */
    case LP_X86_JCC: case LP_X86_JCXZ: case LP_X86_LOOP:
    case LP_X86_LOOPE: case LP_X86_LOOPNE: /* LLVM: conditional branches */
        f.kind = LP_FLOW_COND;
        break;
    case LP_X86_UD: case LP_X86_HLT: case LP_X86_INT3:
        f.flags = LP_FLOW_TRAP;
        return f;
    default:
        return f;
    }
    if (d->op == LP_X86_OP_IMM)
        f.target = (uint64_t)d->imm;
    else
        f.flags |= LP_FLOW_INDIRECT;
    return f;
}

/* Legacy prefixes (26 2e 36 3e 64-67 f0 f2 f3) and REX (40-4f), one bit
 * per byte value. */
static bool is_prefix(uint8_t c)
{
    static const uint64_t set[4] = {
        1ull << 0x26 | 1ull << 0x2e | 1ull << 0x36 | 1ull << 0x3e,
        0xffffull | 0xfull << (0x64 - 0x40),
        0,
        1ull << (0xf0 - 0xc0) | 1ull << (0xf2 - 0xc0) | 1ull << (0xf3 - 0xc0),
    };
    return set[c >> 6] >> (c & 63) & 1;
}

/* The opcode after legacy/REX prefixes: jcc (7x, 0f 8x), loop/jrcxz
 * (e0-e3), call/jmp (e8, e9, eb, 9a, ea, ff /2-/5), ret/iret (c2, c3, ca,
 * cb, cf), sysret/sysexit (0f 07, 0f 35), xbegin (c7 f8). VEX (c4, c5),
 * EVEX (62) and XOP (8f) encode no branch. */
bool lp_x86_bytes_may_branch(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n && is_prefix(p[i]))
        i++;
    if (i + 1 >= n)
        return true;
    uint8_t o = p[i], m = p[i + 1], reg = (m >> 3) & 7;
    switch (o) {
    case 0x0f: return (m & 0xf0) == 0x80 || m == 0x07 || m == 0x35;
    case 0xff: return reg >= 2 && reg <= 5;
    case 0xc7: return m == 0xf8;
    case 0x9a: case 0xc2: case 0xc3: case 0xca: case 0xcb: case 0xcf:
    case 0xe8: case 0xe9: case 0xea: case 0xeb:
        return true;
    default:
        return (o & 0xf0) == 0x70 || (o >= 0xe0 && o <= 0xe3);
    }
}

bool lp_x86_bytes_vex(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n && is_prefix(p[i]))
        i++;
    return i < n && (p[i] == 0x62 || p[i] == 0xc4 || p[i] == 0xc5);
}
