/*
 * insn.h - the one classifier of x86-64 control flow, for every decoder
 * lbr2prof uses: is an instruction a call, a return, an unconditional or
 * a conditional branch, direct or indirect, far, or a trap - LLVM's view
 * (MCInstrDesc isCall / isReturn / isBranch, loop/loope/loopne and jrcxz
 * being conditional branches), which is llvm-profgen's.
 *
 * A decoder does not decide; it describes. Each adapter turns its own
 * decoding into an lp_x86_desc (the mnemonic family, a condition, the
 * first operand in decoder-neutral terms), and lp_x86_flow makes every
 * decision from that description alone:
 *   - capstone 4 (x86cs.c): the profile generator's disassembly
 *     (binary/disasm.c) and the leaf analysis (fpunwind/leaf.c);
 *   - Zydis 4 (x86zydis.c, loaded at first use): the simulator
 *     (simulate/decode.c), which must decode every instruction of the
 *     CPU it runs on (AVX-512, AMX: docs/dependencies.md).
 * All x86 branch encodings are legacy ones (no VEX/EVEX/XOP instruction
 * transfers control), so an instruction a decoder cannot decode is never
 * a branch; lp_x86_bytes_may_branch screens encodings by that rule.
 *
 * Owns the classification and the adapters. Does not own what a module
 * does with a class (an LBR entry, a range end, a dataflow edge).
 */
#ifndef LBR2PROF_INSN_H
#define LBR2PROF_INSN_H

#include <capstone/capstone.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/error.h"

/* ---- the decoder-neutral description ----------------------------------- */

/* Mnemonic families; everything else is LP_X86_OTHER. The families that
 * can branch come first, from LP_X86_CALL to LP_X86_XBEGIN (the id
 * screens' test, lp_x86_mnem_branches; test_insn holds it to
 * lp_x86_flow). */
typedef enum lp_x86_mnem {
    LP_X86_OTHER = 0,
    LP_X86_CALL, LP_X86_CALL_FAR,   /* call, lcall */
    LP_X86_JMP, LP_X86_JMP_FAR,     /* jmp, ljmp */
    LP_X86_RET, LP_X86_RET_FAR,     /* ret [imm16], retf/lret [imm16] */
    LP_X86_IRET,                    /* iret, iretd, iretq */
    LP_X86_SYSRET, LP_X86_SYSEXIT,
    LP_X86_JCC,                     /* jo .. jg: `cond` */
    LP_X86_JCXZ,                    /* jcxz, jecxz, jrcxz: `count_bits` */
    LP_X86_LOOP, LP_X86_LOOPE, LP_X86_LOOPNE, /* `count_bits` */
    LP_X86_XBEGIN,
    LP_X86_UD,                      /* ud0, ud1, ud2 */
    LP_X86_HLT, LP_X86_INT3,
    LP_X86_NMNEM
} lp_x86_mnem;

/* x86's condition codes, as in the low nibble of jcc's opcode. */
enum lp_x86_cond {
    LP_CC_O, LP_CC_NO, LP_CC_B, LP_CC_AE, LP_CC_E, LP_CC_NE, LP_CC_BE,
    LP_CC_A, LP_CC_S, LP_CC_NS, LP_CC_P, LP_CC_NP, LP_CC_L, LP_CC_GE,
    LP_CC_LE, LP_CC_G
};

enum lp_x86_optype {
    LP_X86_OP_NONE = 0, LP_X86_OP_IMM, LP_X86_OP_REG, LP_X86_OP_MEM
};

/* Registers an indirect branch can name: the 16 general-purpose ones by
 * encoding number (LP_X86_GPR + 0 is rax, + 15 r15) with their width,
 * rip, and the segments with a base in 64-bit mode. Others (es, cs, ss,
 * ds: base 0) are LP_X86_NOREG as segments; any other register is
 * LP_X86_BADREG. */
enum lp_x86_regid {
    LP_X86_NOREG = 0, LP_X86_GPR = 1, LP_X86_RIP = 17, LP_X86_FS,
    LP_X86_GS, LP_X86_BADREG
};

typedef struct lp_x86_reg {
    uint8_t id;     /* enum lp_x86_regid */
    uint8_t bits;   /* 64, 32, 16 (8 for a byte register) */
} lp_x86_reg;

/* What a decoder says about one instruction. The operand is the first
 * one, where a branch has its target. */
typedef struct lp_x86_desc {
    uint8_t mnem;        /* lp_x86_mnem */
    uint8_t cond;        /* LP_X86_JCC: enum lp_x86_cond */
    uint8_t count_bits;  /* LP_X86_JCXZ, LP_X86_LOOP*: the count register's width */
    uint8_t op;          /* enum lp_x86_optype */
    int64_t imm;         /* OP_IMM: a branch's absolute target, ret's pop count */
    lp_x86_reg reg;      /* OP_REG */
    lp_x86_reg base, index, seg; /* OP_MEM: seg + base + index * scale + disp */
    uint8_t scale;       /* 1, 2, 4, 8 with an index, else 0 */
    int64_t disp;
} lp_x86_desc;

/* ---- the classification ------------------------------------------------ */

enum lp_flow_kind {
    LP_FLOW_NONE = 0,   /* not a branch */
    LP_FLOW_CALL,       /* call (near or far) */
    LP_FLOW_RET,        /* return: ret, retf, iret, sysret, sysexit */
    LP_FLOW_JUMP,       /* unconditional jump */
    LP_FLOW_COND,       /* conditional branch: jcc, jrcxz, loop*, xbegin */
};

#define LP_FLOW_INDIRECT 1u /* CALL/JUMP: the target is in a register or memory */
#define LP_FLOW_FAR      2u /* far or privileged: lcall, ljmp, retf, iret,
                               sysret, sysexit (the hardware picks where) */
#define LP_FLOW_ABORT    4u /* xbegin: the target is taken when a
                               transaction aborts, later, not by xbegin */
#define LP_FLOW_TRAP     8u /* NONE: does not fall through either (ud0/1/2,
                               hlt, int3) */

typedef struct lp_flow {
    uint8_t kind;       /* enum lp_flow_kind */
    uint8_t flags;      /* LP_FLOW_* */
    uint64_t target;    /* direct CALL/JUMP/COND: the target; else 0 */
} lp_flow;

lp_flow lp_x86_flow(const lp_x86_desc *d);

/* Can an instruction of this family be a branch (kind other than NONE)?
 * Inline: the profile generator's decoder asks it of most instructions. */
static inline bool lp_x86_mnem_branches(unsigned mnem)
{
    return mnem >= LP_X86_CALL && mnem <= LP_X86_XBEGIN;
}

/* A cheap look at the bytes (after legacy and REX prefixes): false only
 * for encodings that never decode to a branch (a superset screen). */
bool lp_x86_bytes_may_branch(const uint8_t *code, size_t n);

/* Is it VEX- or EVEX-encoded (c4, c5, 62 after the legacy prefixes: in
 * 64-bit mode always so)? AVX, AVX-512, AMX: what capstone 4 knows least. */
bool lp_x86_bytes_vex(const uint8_t *code, size_t n);

/* ---- capstone 4 (x86cs.c) ---------------------------------------------- */

/* `in` decoded in 64-bit mode with CS_OPT_DETAIL on. */
void lp_x86_desc_cs(const cs_insn *in, lp_x86_desc *d);
/* lp_x86_mnem_branches for a capstone id (no detail needed). */
bool lp_x86_cs_branch_id(unsigned id);

/* ---- Zydis 4 (x86zydis.c) ---------------------------------------------- */

typedef struct lp_zydis lp_zydis;

/* Load libZydis (libzydis4.0) and set up a 64-bit decoder; NULL with err
 * naming the library and its Debian package. */
lp_zydis *lp_zydis_open(lp_error *err);
void lp_zydis_close(lp_zydis *z);
/* Decode the instruction at code[0..n), which runs at `addr`: its length
 * and *d, or 0 when Zydis cannot decode it. */
unsigned lp_zydis_decode(const lp_zydis *z, const uint8_t *code, size_t n,
                         uint64_t addr, lp_x86_desc *d);

#endif
