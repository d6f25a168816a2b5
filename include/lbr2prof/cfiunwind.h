/*
 * lbr2prof/cfiunwind.h - a stack walker driven by call frame information
 * (CFI: .eh_frame, else .debug_frame), for sampled user stacks (perf's
 * PERF_SAMPLE_REGS_USER + STACK_USER): the callers of code built without
 * frame pointers, through the program and its shared libraries (libc has
 * .eh_frame: no DWARF needed), signal frames included (docs/cfiunwind.md).
 *
 * Two halves:
 *   - lp_cfi (src/cfiunwind/table.c): one ELF file's CFI through libdw
 *     (dwarf_cfi_addrframe, dwarf_frame_cfa, dwarf_frame_register), each
 *     row compiled once into a compact rule set and cached per address.
 *   - lp_cfi_unwind (src/cfiunwind/walk.c, expr.c): the walk over a copy of
 *     the stack. Fault-safe: it reads nothing but the copy and the
 *     registers; bounded (LP_CFI_MAX_FRAMES, expressions of at most
 *     LP_CFI_MAX_OPS operations); where a pc has no CFI it may take the
 *     frame-pointer rule, if the caller says that rule holds there.
 *
 * x86-64 only (the System V psABI's DWARF register numbers). Frames are
 * leaf first: frame 0 is the sampled pc; every other frame is a return
 * address, except a frame a signal frame restored (`exact`): the
 * interrupted pc itself.
 */
#ifndef LBR2PROF_CFIUNWIND_H
#define LBR2PROF_CFIUNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/error.h"
#include "lbr2prof/fpunwind.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LP_CFI_MAX_FRAMES 256  /* frames per walk, frame 0 included */
#define LP_CFI_MAX_OPS 64      /* operations of one DWARF expression */

/* DWARF register numbers of x86-64; LP_CFI_RA is the return address
 * column (the caller's rip). */
enum lp_cfi_reg {
    LP_CFI_RAX = 0, LP_CFI_RDX, LP_CFI_RCX, LP_CFI_RBX, LP_CFI_RSI,
    LP_CFI_RDI, LP_CFI_RBP, LP_CFI_RSP, LP_CFI_R8, LP_CFI_R9, LP_CFI_R10,
    LP_CFI_R11, LP_CFI_R12, LP_CFI_R13, LP_CFI_R14, LP_CFI_R15,
    LP_CFI_RA = 16,
    LP_CFI_NREGS = 17
};

/* A register set: r[i] is meaningful when bit i of `known` is set. */
typedef struct lp_cfi_regs {
    uint64_t r[LP_CFI_NREGS];
    uint32_t known;
} lp_cfi_regs;

/* From a perf sample's user registers (PERF_REG_X86_* numbering, values
 * in ascending bit order of the mask): every general register the mask
 * has. 0, or -1 if the ABI is not 64-bit or ip or sp is missing. */
int lp_cfi_regs_from_perf(uint64_t abi, uint64_t mask, const uint64_t *vals,
                          lp_cfi_regs *out);

/* ---- one file's call frame information -------------------------------- */

/* How a register (or the CFA) is recovered in the caller. */
enum lp_cfi_rule_kind {
    LP_CFI_UNDEF = 0,   /* not recoverable (for the return address: the
                           outermost frame) */
    LP_CFI_SAME,        /* unchanged */
    LP_CFI_AT_CFA,      /* saved at CFA + off */
    LP_CFI_CFA_PLUS,    /* the value CFA + off (and for the CFA itself:
                           register `reg` + off) */
    LP_CFI_IN_REG,      /* the value of register `reg` */
    LP_CFI_AT_EXPR,     /* saved at the address the expression computes
                           (the CFA pushed first) */
    LP_CFI_EXPR,        /* the value the expression computes (for the CFA:
                           nothing pushed first) */
};

/* One DWARF expression operation (a copy of libdw's Dwarf_Op). */
typedef struct lp_cfi_op {
    uint8_t atom;
    uint64_t n1, n2;
} lp_cfi_op;

typedef struct lp_cfi_rule {
    uint8_t kind;           /* enum lp_cfi_rule_kind */
    uint8_t reg;            /* LP_CFI_CFA_PLUS (CFA), LP_CFI_IN_REG */
    uint16_t nops;
    int64_t off;
    const lp_cfi_op *ops;   /* LP_CFI_AT_EXPR, LP_CFI_EXPR */
} lp_cfi_rule;

/* The rules of one CFI row: valid for link-time addresses [start, end). */
typedef struct lp_cfi_row {
    uint64_t start, end;
    lp_cfi_rule cfa;
    lp_cfi_rule regs[LP_CFI_NREGS];
    bool signal;            /* the FDE of a signal trampoline ('S'): the
                               caller's pc is exact (interrupted), not a
                               return address */
} lp_cfi_row;

typedef struct lp_cfi lp_cfi;

/* Open path's CFI: .eh_frame (with .eh_frame_hdr when present), and
 * .debug_frame for what .eh_frame does not cover. NULL with err when the
 * file cannot be read, is not a 64-bit x86-64 ELF file, or has neither. */
lp_cfi *lp_cfi_open(const char *path, lp_error *err);
void lp_cfi_close(lp_cfi *c);
const char *lp_cfi_path(const lp_cfi *c);

/* The link-time address of file offset `off` (the PT_LOAD segment that
 * holds it, as the loader maps it): 0, or -1 if no segment holds it. */
int lp_cfi_vaddr_of_offset(const lp_cfi *c, uint64_t off, uint64_t *vaddr);

/* The row covering link-time address `vaddr`: 1 with *row set (owned by
 * c, valid until lp_cfi_close), 0 when no CFI covers it, -1 with err when
 * the CFI is malformed there or memory runs out. Cached: each row is read
 * from libdw once, each address found again in a direct-mapped table. */
int lp_cfi_row_at(lp_cfi *c, uint64_t vaddr, const lp_cfi_row **row,
                  lp_error *err);

/* Lookups answered and rows compiled (for tests and statistics). */
typedef struct lp_cfi_stats {
    uint64_t lookups, addr_hits, row_hits, rows, misses;
} lp_cfi_stats;
const lp_cfi_stats *lp_cfi_stats_get(const lp_cfi *c);

/* Evaluate a DWARF expression over registers and a stack copy (reads
 * outside the copy fail). DW_OP_call_frame_cfa pushes `cfa` (an error when
 * has_cfa is false: the CFA's own expression). 1 with *value (a location
 * unless *is_value: the expression ended in DW_OP_stack_value), 0 when it
 * needs an unknown register or a read outside the copy, -1 for an
 * operation this evaluator does not take (control flow, calls, TLS, ...)
 * or a malformed expression. */
int lp_cfi_eval(const lp_cfi_op *ops, size_t nops, const lp_cfi_regs *regs,
                const lp_fpu_stack *st, bool has_cfa, uint64_t cfa,
                uint64_t *value, bool *is_value);

/* ---- the walk ------------------------------------------------------------ */

/* Where the code at runtime address pc is: *cfi its file's CFI (NULL: no
 * CFI known for it), *bias the load bias (link-time = pc - bias).
 * 0, or -1 when pc is in no mapping at all. */
typedef int (*lp_cfi_find_fn)(void *ctx, uint64_t pc, lp_cfi **cfi,
                              uint64_t *bias);
/* Optional: whether the frame-pointer rule holds at pc (rbp is this
 * frame's record: saved rbp at [rbp], return address at [rbp + 8]).
 * `exact`: pc is an instruction (frame 0, or restored by a signal frame),
 * else a return address. Asked only where pc has no CFI. */
typedef bool (*lp_cfi_fp_fn)(void *ctx, uint64_t pc, bool exact);

typedef struct lp_cfi_walker {
    lp_cfi_find_fn find;
    lp_cfi_fp_fn fp_ok;     /* may be NULL: no frame-pointer fallback */
    void *ctx;
} lp_cfi_walker;

enum lp_cfi_how {
    LP_CFI_HOW_REGS = 0,    /* frame 0: the sampled registers */
    LP_CFI_HOW_CFI,         /* the CFI row of the frame below */
    LP_CFI_HOW_FP,          /* the frame-pointer rule (no CFI there) */
};

typedef struct lp_cfi_frame {
    uint64_t pc;            /* runtime address */
    uint64_t sp;            /* the frame's stack pointer (the CFA of the
                               frame below it) */
    uint8_t how;            /* enum lp_cfi_how */
    bool exact;             /* pc is an instruction, not a return address */
} lp_cfi_frame;

/* Why a walk ended. */
enum lp_cfi_stop {
    LP_CFI_STOP_END = 0,    /* the outermost frame: its return address is
                               undefined (or 0) - the stack is complete */
    LP_CFI_STOP_FULL,       /* out of room (n or LP_CFI_MAX_FRAMES) */
    LP_CFI_STOP_UNMAPPED,   /* a pc in no mapping */
    LP_CFI_STOP_NO_RULE,    /* no CFI for a pc, and no frame-pointer rule */
    LP_CFI_STOP_STACK,      /* a read outside the stack copy */
    LP_CFI_STOP_REG,        /* a rule needs a register not known */
    LP_CFI_STOP_BAD,        /* a caller that cannot be: CFA not above sp,
                               return address in a dead zone, an
                               expression this walker does not take */
    LP_CFI_STOP_ERROR,      /* malformed CFI (libdw's error) */
};

typedef struct lp_cfi_result {
    size_t frames;          /* written to out */
    uint8_t stop;           /* enum lp_cfi_stop */
    lp_cfi_regs last;       /* the registers of the last frame written */
} lp_cfi_result;

/* Walk from regs (ip and sp known at least) over the stack copy st (the
 * dump starting at the sampled sp). Writes at most min(n,
 * LP_CFI_MAX_FRAMES) frames. Each step takes the CFI row of the frame's pc
 * (pc - 1 for a return address, so that a call at the end of a function
 * finds its own row), else the frame-pointer rule where w->fp_ok allows
 * it. A caller's sp must be above the frame's, except across a signal
 * frame (the interrupted stack may be anywhere). */
lp_cfi_result lp_cfi_unwind(const lp_cfi_walker *w, const lp_cfi_regs *regs,
                            const lp_fpu_stack *st, lp_cfi_frame *out,
                            size_t n);

const char *lp_cfi_stop_name(int stop);

#ifdef __cplusplus
}
#endif
#endif
