/*
 * x86zydis.c - Zydis 4's decoding of an x86-64 instruction as an
 * lp_x86_desc (mnemonic family, first operand in neutral terms). Zydis
 * knows AVX-512, AMX and the other extensions capstone 4 does not, so it
 * gives every instruction of a running program its true length. The
 * library is loaded at lp_zydis_open (util/dynlib.h): only `record
 * --simulate` needs it. Decides nothing (x86flow.c does).
 */
#include <Zydis/Zydis.h>
#include <stdlib.h>

#include "insn/insn.h"
#include "util/dynlib.h"

struct lp_zydis {
    void *lib;
    __typeof__(ZydisDecoderInit) *init;
    __typeof__(ZydisDecoderDecodeFull) *decode;
    __typeof__(ZydisCalcAbsoluteAddress) *absolute;
    __typeof__(ZydisRegisterGetClass) *reg_class;
    __typeof__(ZydisRegisterGetId) *reg_id;
    ZydisDecoder dec;
};

static const lp_dynsym zydis_syms[] = {
    LP_DYNSYM(lp_zydis, init, ZydisDecoderInit),
    LP_DYNSYM(lp_zydis, decode, ZydisDecoderDecodeFull),
    LP_DYNSYM(lp_zydis, absolute, ZydisCalcAbsoluteAddress),
    LP_DYNSYM(lp_zydis, reg_class, ZydisRegisterGetClass),
    LP_DYNSYM(lp_zydis, reg_id, ZydisRegisterGetId),
};

lp_zydis *lp_zydis_open(lp_error *err)
{
    lp_zydis *z = calloc(1, sizeof *z);

    if (!z) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    z->lib = lp_dynlib_open("libZydis.so.4.0", "libzydis4.0", zydis_syms,
                            sizeof zydis_syms / sizeof *zydis_syms, z, err);
    if (!z->lib) {
        free(z);
        return NULL;
    }
    if (!ZYAN_SUCCESS(z->init(&z->dec, ZYDIS_MACHINE_MODE_LONG_64,
                              ZYDIS_STACK_WIDTH_64))) {
        lp_error_set(err, LP_EUNSUPP, "Zydis: cannot set up an x86-64 decoder");
        lp_zydis_close(z);
        return NULL;
    }
    return z;
}

void lp_zydis_close(lp_zydis *z)
{
    if (!z)
        return;
    lp_dynlib_close(z->lib);
    free(z);
}

/* ---- mnemonics ------------------------------------------------------------ */

#define JCC(m, cc)                                                            \
    case ZYDIS_MNEMONIC_##m:                                                  \
        *cond = LP_CC_##cc;                                                   \
        return LP_X86_JCC

static uint8_t zy_mnem(const ZydisDecodedInstruction *in, uint8_t *cond,
                       uint8_t *bits)
{
    bool far = in->meta.branch_type == ZYDIS_BRANCH_TYPE_FAR;

    switch (in->mnemonic) {
    case ZYDIS_MNEMONIC_CALL: return far ? LP_X86_CALL_FAR : LP_X86_CALL;
    case ZYDIS_MNEMONIC_JMP: return far ? LP_X86_JMP_FAR : LP_X86_JMP;
    case ZYDIS_MNEMONIC_RET: return far ? LP_X86_RET_FAR : LP_X86_RET;
    case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD:
    case ZYDIS_MNEMONIC_IRETQ:
        return LP_X86_IRET;
    case ZYDIS_MNEMONIC_SYSRET: return LP_X86_SYSRET;
    case ZYDIS_MNEMONIC_SYSEXIT: return LP_X86_SYSEXIT;
    JCC(JO, O); JCC(JNO, NO); JCC(JB, B); JCC(JNB, AE); JCC(JZ, E);
    JCC(JNZ, NE); JCC(JBE, BE); JCC(JNBE, A); JCC(JS, S); JCC(JNS, NS);
    JCC(JP, P); JCC(JNP, NP); JCC(JL, L); JCC(JNL, GE); JCC(JLE, LE);
    JCC(JNLE, G);
    case ZYDIS_MNEMONIC_JCXZ: *bits = 16; return LP_X86_JCXZ;
    case ZYDIS_MNEMONIC_JECXZ: *bits = 32; return LP_X86_JCXZ;
    case ZYDIS_MNEMONIC_JRCXZ: *bits = 64; return LP_X86_JCXZ;
    case ZYDIS_MNEMONIC_LOOP: return LP_X86_LOOP;
    case ZYDIS_MNEMONIC_LOOPE: return LP_X86_LOOPE;
    case ZYDIS_MNEMONIC_LOOPNE: return LP_X86_LOOPNE;
    case ZYDIS_MNEMONIC_XBEGIN: return LP_X86_XBEGIN;
    case ZYDIS_MNEMONIC_UD0: case ZYDIS_MNEMONIC_UD1:
    case ZYDIS_MNEMONIC_UD2:
        return LP_X86_UD;
    case ZYDIS_MNEMONIC_HLT: return LP_X86_HLT;
    case ZYDIS_MNEMONIC_INT3: return LP_X86_INT3;
    default: return LP_X86_OTHER;
    }
}
#undef JCC

/* ---- operands ------------------------------------------------------------- */

static lp_x86_reg zy_reg(const lp_zydis *z, ZydisRegister r)
{
    lp_x86_reg out = {LP_X86_BADREG, 0};
    static const uint8_t width[] = {
        [ZYDIS_REGCLASS_GPR16] = 16, [ZYDIS_REGCLASS_GPR32] = 32,
        [ZYDIS_REGCLASS_GPR64] = 64,
    };
    ZydisRegisterClass c;

    if (r == ZYDIS_REGISTER_NONE)
        return (lp_x86_reg){LP_X86_NOREG, 0};
    if (r == ZYDIS_REGISTER_RIP || r == ZYDIS_REGISTER_EIP)
        return (lp_x86_reg){LP_X86_RIP, r == ZYDIS_REGISTER_RIP ? 64 : 32};
    c = z->reg_class(r);
    if (c == ZYDIS_REGCLASS_GPR16 || c == ZYDIS_REGCLASS_GPR32 ||
        c == ZYDIS_REGCLASS_GPR64) {
        out.id = (uint8_t)(LP_X86_GPR + z->reg_id(r));
        out.bits = width[c];
    }
    return out;
}

static void zy_operand(const lp_zydis *z, const ZydisDecodedInstruction *in,
                       const ZydisDecodedOperand *o, uint64_t addr,
                       lp_x86_desc *d)
{
    ZyanU64 abs;

    switch (o->type) {
    case ZYDIS_OPERAND_TYPE_IMMEDIATE:
        d->op = LP_X86_OP_IMM;
        if (!o->imm.is_relative)
            d->imm = (int64_t)o->imm.value.u;
        else if (ZYAN_SUCCESS(z->absolute(in, o, addr, &abs)))
            d->imm = (int64_t)abs;
        break;
    case ZYDIS_OPERAND_TYPE_REGISTER:
        d->op = LP_X86_OP_REG;
        d->reg = zy_reg(z, o->reg.value);
        break;
    case ZYDIS_OPERAND_TYPE_MEMORY:
        d->op = LP_X86_OP_MEM;
        d->base = zy_reg(z, o->mem.base);
        d->index = zy_reg(z, o->mem.index);
        d->seg.id = o->mem.segment == ZYDIS_REGISTER_FS ? LP_X86_FS
                    : o->mem.segment == ZYDIS_REGISTER_GS ? LP_X86_GS
                                                          : LP_X86_NOREG;
        d->scale = d->index.id ? o->mem.scale : 0;
        d->disp = o->mem.disp.has_displacement ? o->mem.disp.value : 0;
        break;
    default: /* a far pointer (not in 64-bit mode) */
        break;
    }
}

unsigned lp_zydis_decode(const lp_zydis *z, const uint8_t *code, size_t n,
                         uint64_t addr, lp_x86_desc *d)
{
    ZydisDecodedInstruction in;
    ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

    *d = (lp_x86_desc){0};
    if (!n || !ZYAN_SUCCESS(z->decode(&z->dec, code, n, &in, ops)))
        return 0;
    d->count_bits = in.address_width;
    d->mnem = zy_mnem(&in, &d->cond, &d->count_bits);
    if (in.operand_count_visible > 0)
        zy_operand(z, &in, &ops[0], addr, d);
    return in.length;
}
