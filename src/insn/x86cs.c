/*
 * x86cs.c - capstone 4's decoding of an x86-64 instruction as an
 * lp_x86_desc: its id's mnemonic family, and its first operand with the
 * registers in lbr2prof's neutral terms. Decides nothing (x86flow.c does).
 */
#include "insn/insn.h"

/* ---- ids ----------------------------------------------------------------- */

/* Family of each capstone id (with the condition of a jcc, the count
 * width of jcxz & co.); a table: the profile generator's decoder asks it
 * for most instructions it decodes (lp_x86_cs_branch_id). */
typedef struct cs_fam {
    uint8_t mnem, arg;
} cs_fam;

#define F(id, m) [X86_INS_##id] = {LP_X86_##m, 0}
#define JCC(id, cc) [X86_INS_##id] = {LP_X86_JCC, LP_CC_##cc}
static const cs_fam cs_fams[X86_INS_ENDING] = {
    F(CALL, CALL), F(LCALL, CALL_FAR), F(JMP, JMP), F(LJMP, JMP_FAR),
    F(RET, RET), F(RETF, RET_FAR), F(RETFQ, RET_FAR), F(IRET, IRET),
    F(IRETD, IRET), F(IRETQ, IRET), F(SYSRET, SYSRET), F(SYSEXIT, SYSEXIT),
    JCC(JO, O), JCC(JNO, NO), JCC(JB, B), JCC(JAE, AE), JCC(JE, E),
    JCC(JNE, NE), JCC(JBE, BE), JCC(JA, A), JCC(JS, S), JCC(JNS, NS),
    JCC(JP, P), JCC(JNP, NP), JCC(JL, L), JCC(JGE, GE), JCC(JLE, LE),
    JCC(JG, G),
    [X86_INS_JCXZ] = {LP_X86_JCXZ, 16}, [X86_INS_JECXZ] = {LP_X86_JCXZ, 32},
    [X86_INS_JRCXZ] = {LP_X86_JCXZ, 64},
    F(LOOP, LOOP), F(LOOPE, LOOPE), F(LOOPNE, LOOPNE), F(XBEGIN, XBEGIN),
    F(UD0, UD), F(UD2, UD), F(UD2B, UD), F(HLT, HLT), F(INT3, INT3),
};
#undef F
#undef JCC

static cs_fam cs_family(unsigned id)
{
    cs_fam none = {LP_X86_OTHER, 0};
    return id < X86_INS_ENDING ? cs_fams[id] : none;
}

bool lp_x86_cs_branch_id(unsigned id)
{
    return lp_x86_mnem_branches(cs_family(id).mnem);
}

/* ---- registers ------------------------------------------------------------ */

#define G(r, n, w) [X86_REG_##r] = {LP_X86_GPR + n, w}
static const lp_x86_reg gpr_of_cs[X86_REG_ENDING] = {
    G(RAX, 0, 64), G(RCX, 1, 64), G(RDX, 2, 64), G(RBX, 3, 64),
    G(RSP, 4, 64), G(RBP, 5, 64), G(RSI, 6, 64), G(RDI, 7, 64),
    G(R8, 8, 64), G(R9, 9, 64), G(R10, 10, 64), G(R11, 11, 64),
    G(R12, 12, 64), G(R13, 13, 64), G(R14, 14, 64), G(R15, 15, 64),
    G(EAX, 0, 32), G(ECX, 1, 32), G(EDX, 2, 32), G(EBX, 3, 32),
    G(ESP, 4, 32), G(EBP, 5, 32), G(ESI, 6, 32), G(EDI, 7, 32),
    G(R8D, 8, 32), G(R9D, 9, 32), G(R10D, 10, 32), G(R11D, 11, 32),
    G(R12D, 12, 32), G(R13D, 13, 32), G(R14D, 14, 32), G(R15D, 15, 32),
    G(AX, 0, 16), G(CX, 1, 16), G(DX, 2, 16), G(BX, 3, 16),
    G(SP, 4, 16), G(BP, 5, 16), G(SI, 6, 16), G(DI, 7, 16),
    G(R8W, 8, 16), G(R9W, 9, 16), G(R10W, 10, 16), G(R11W, 11, 16),
    G(R12W, 12, 16), G(R13W, 13, 16), G(R14W, 14, 16), G(R15W, 15, 16),
    [X86_REG_RIP] = {LP_X86_RIP, 64}, [X86_REG_EIP] = {LP_X86_RIP, 32},
};
#undef G

static lp_x86_reg cs_reg(unsigned r)
{
    lp_x86_reg none = {LP_X86_NOREG, 0}, bad = {LP_X86_BADREG, 0};

    if (r == X86_REG_INVALID)
        return none;
    return r < X86_REG_ENDING && gpr_of_cs[r].id ? gpr_of_cs[r] : bad;
}

static lp_x86_reg cs_seg(unsigned r)
{
    lp_x86_reg s = {LP_X86_NOREG, 0};

    if (r == X86_REG_FS || r == X86_REG_GS)
        s.id = r == X86_REG_FS ? LP_X86_FS : LP_X86_GS;
    return s;
}

/* ---- the description ------------------------------------------------------ */

void lp_x86_desc_cs(const cs_insn *in, lp_x86_desc *d)
{
    const cs_x86 *x = &in->detail->x86;
    const cs_x86_op *o = &x->operands[0];

    cs_fam f = cs_family(in->id);

    *d = (lp_x86_desc){0};
    d->mnem = f.mnem;
    if (f.mnem == LP_X86_JCC)
        d->cond = f.arg;
    else if (f.mnem == LP_X86_JCXZ)
        d->count_bits = f.arg;
    else
        d->count_bits = (uint8_t)(x->addr_size * 8);
    if (x->op_count == 0)
        return;
    switch (o->type) {
    case X86_OP_IMM:
        d->op = LP_X86_OP_IMM;
        d->imm = o->imm;
        break;
    case X86_OP_REG:
        d->op = LP_X86_OP_REG;
        d->reg = cs_reg(o->reg);
        break;
    case X86_OP_MEM:
        d->op = LP_X86_OP_MEM;
        d->base = cs_reg(o->mem.base);
        d->index = cs_reg(o->mem.index);
        d->seg = cs_seg(o->mem.segment);
        d->scale = d->index.id ? (uint8_t)o->mem.scale : 0;
        d->disp = o->mem.disp;
        break;
    default:
        break;
    }
}
