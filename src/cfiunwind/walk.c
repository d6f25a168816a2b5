/*
 * walk.c - the CFI stack walk over a sampled user stack: perf's register
 * set in DWARF numbering, one step per frame (the CFI row of its pc, else
 * the frame-pointer rule where the caller allows it), the checks that end
 * a walk (a caller's stack pointer above the frame's, return addresses
 * outside the dead zones, every read inside the copy) and the bound on
 * frames. Owns the step rules; not the rows (table.c) nor the evaluation
 * of expressions (expr.c).
 */
#include <string.h>

#include "cfiunwind/cfi_internal.h"

#define STEP_OK 255             /* not a stop: the step found a caller */
#define NONE 0xff

/* PERF_REG_X86_* -> DWARF: AX BX CX DX SI DI BP SP IP, then FLAGS and
 * the segment registers (not kept), then R8..R15 */
static const uint8_t perf_to_dwarf[24] = {
    LP_CFI_RAX, LP_CFI_RBX, LP_CFI_RCX, LP_CFI_RDX, LP_CFI_RSI, LP_CFI_RDI,
    LP_CFI_RBP, LP_CFI_RSP, LP_CFI_RA, NONE, NONE, NONE, NONE, NONE, NONE,
    NONE, LP_CFI_R8, LP_CFI_R9, LP_CFI_R10, LP_CFI_R11, LP_CFI_R12,
    LP_CFI_R13, LP_CFI_R14, LP_CFI_R15};

#define BIT(r) (1u << (r))

/* lp_fpu_stack_read, inlined: every rule that reads the stack comes here */
static inline int read_stack(const lp_fpu_stack *st, uint64_t addr, uint64_t *v)
{
    if (!st->data || addr < st->base || st->size < 8 || addr - st->base > st->size - 8)
        return -1;
    memcpy(v, st->data + (addr - st->base), 8);
    return 0;
}

int lp_cfi_regs_from_perf(uint64_t abi, uint64_t mask, const uint64_t *vals,
                          lp_cfi_regs *out)
{
    size_t k = 0;
    unsigned b;

    memset(out, 0, sizeof *out);
    if (abi != LP_PERF_REGS_ABI_64 || !vals)
        return -1;
    for (mask &= (UINT64_C(1) << 24) - 1; mask; mask &= mask - 1, k++) {
        b = (unsigned)__builtin_ctzll(mask);
        if (perf_to_dwarf[b] != NONE) {
            out->r[perf_to_dwarf[b]] = vals[k];
            out->known |= BIT(perf_to_dwarf[b]);
        }
    }
    return (out->known & (BIT(LP_CFI_RA) | BIT(LP_CFI_RSP))) ==
                   (BIT(LP_CFI_RA) | BIT(LP_CFI_RSP))
               ? 0 : -1;
}

const char *lp_cfi_stop_name(int stop)
{
    static const char *const names[] = {
        "end of stack", "out of room", "pc in no mapping", "no CFI and no frame pointer",
        "read outside the stack copy", "register not known", "impossible caller",
        "malformed CFI"};

    return stop >= 0 && stop <= LP_CFI_STOP_ERROR ? names[stop] : "?";
}

/* ---- one rule ------------------------------------------------------------------ */

static int expr_stop(int rc)
{
    return rc > 0 ? STEP_OK : rc == 0 ? LP_CFI_STOP_STACK : LP_CFI_STOP_BAD;
}

/* The caller's value of one register under a rule that reads memory or
 * computes: STEP_OK with *v, or why not (UNDEF: LP_CFI_STOP_END). */
static int apply(const lp_cfi_rule *r, const lp_cfi_regs *cur,
                 const lp_fpu_stack *st, uint64_t cfa, uint64_t *v)
{
    uint64_t x;
    bool is_value;
    int rc;

    switch (r->kind) {
    case LP_CFI_AT_CFA:
        return read_stack(st, cfa + (uint64_t)r->off, v) ? LP_CFI_STOP_STACK : STEP_OK;
    case LP_CFI_CFA_PLUS:
        *v = cfa + (uint64_t)r->off;
        return STEP_OK;
    case LP_CFI_AT_EXPR:
    case LP_CFI_EXPR:
        rc = lp_cfi_eval(r->ops, r->nops, cur, st, true, cfa, &x, &is_value);
        if (rc <= 0)
            return expr_stop(rc);
        if (r->kind == LP_CFI_EXPR || is_value) {
            *v = x;
            return STEP_OK;
        }
        return read_stack(st, x, v) ? LP_CFI_STOP_STACK : STEP_OK;
    }
    return LP_CFI_STOP_END;             /* LP_CFI_UNDEF */
}

/* Register i of the caller under rule r (registers that keep or copy a
 * value of this frame take it from cur). */
static int reg_of(const lp_cfi_rule *r, unsigned i, const lp_cfi_regs *cur,
                  const lp_fpu_stack *st, uint64_t cfa, uint64_t *v)
{
    unsigned from = r->kind == LP_CFI_SAME ? i : r->reg;

    if (r->kind != LP_CFI_SAME && r->kind != LP_CFI_IN_REG)
        return apply(r, cur, st, cfa, v);
    if (from >= LP_CFI_NREGS || !(cur->known & BIT(from)))
        return LP_CFI_STOP_REG;
    *v = cur->r[from];
    return STEP_OK;
}

/* ---- one step ------------------------------------------------------------------ */

static int cfa_of(const lp_cfi_row *row, const lp_cfi_regs *cur,
                  const lp_fpu_stack *st, uint64_t *cfa)
{
    bool is_value;

    if (row->cfa.kind == LP_CFI_CFA_PLUS) {
        if (!(cur->known & BIT(row->cfa.reg)))
            return LP_CFI_STOP_REG;
        *cfa = cur->r[row->cfa.reg] + (uint64_t)row->cfa.off;
        return STEP_OK;
    }
    if (row->cfa.kind != LP_CFI_EXPR)
        return LP_CFI_STOP_BAD;
    return expr_stop(lp_cfi_eval(row->cfa.ops, row->cfa.nops, cur, st, false, 0,
                                 cfa, &is_value));
}

static int cfi_step(const lp_cfi_row *row, const lp_cfi_regs *cur,
                    const lp_fpu_stack *st, lp_cfi_regs *next)
{
    uint64_t cfa, v;
    unsigned i;
    int rc;

    if ((rc = cfa_of(row, cur, st, &cfa)) != STEP_OK)
        return rc;
    if (!row->signal && cfa <= cur->r[LP_CFI_RSP])
        return LP_CFI_STOP_BAD;         /* a caller's frame is above */
    memset(next, 0, sizeof *next);
    for (i = 0; i < LP_CFI_NREGS; i++) {
        rc = reg_of(&row->regs[i], i, cur, st, cfa, &v);
        if (rc == STEP_OK) {
            next->r[i] = v;
            next->known |= BIT(i);
        } else if (i == LP_CFI_RA) {
            return rc;                  /* UNDEF: the outermost frame */
        }
    }
    if (!(next->known & BIT(LP_CFI_RSP)) || row->regs[LP_CFI_RSP].kind == LP_CFI_SAME) {
        next->r[LP_CFI_RSP] = cfa;      /* by definition, unless a rule says */
        next->known |= BIT(LP_CFI_RSP);
    }
    return STEP_OK;
}

/* The frame-pointer rule: [rbp] the caller's rbp, [rbp + 8] the return
 * address, rbp + 16 the caller's sp; the other registers are not known. */
static int fp_step(const lp_cfi_regs *cur, const lp_fpu_stack *st,
                   lp_cfi_regs *next)
{
    uint64_t fp = cur->r[LP_CFI_RBP], saved, ret;

    if (!(cur->known & BIT(LP_CFI_RBP)))
        return LP_CFI_STOP_REG;
    if (fp < cur->r[LP_CFI_RSP] || (fp & 7) || fp > UINT64_MAX - 16)
        return LP_CFI_STOP_BAD;
    if (read_stack(st, fp, &saved) || read_stack(st, fp + 8, &ret))
        return LP_CFI_STOP_STACK;
    memset(next, 0, sizeof *next);
    next->r[LP_CFI_RBP] = saved;
    next->r[LP_CFI_RSP] = fp + 16;
    next->r[LP_CFI_RA] = ret;
    next->known = BIT(LP_CFI_RBP) | BIT(LP_CFI_RSP) | BIT(LP_CFI_RA);
    return STEP_OK;
}

/* The caller of the frame cur (pc exact or a return address): STEP_OK
 * with *next, *how and *next_exact, or why the walk ends. */
static int step(const lp_cfi_walker *w, const lp_cfi_regs *cur, bool exact,
                const lp_fpu_stack *st, lp_cfi_regs *next, uint8_t *how,
                bool *next_exact)
{
    uint64_t pc = cur->r[LP_CFI_RA], look = exact ? pc : pc - 1, bias = 0;
    const lp_cfi_row *row = NULL;
    lp_cfi *cfi = NULL;
    int rc = 0;

    if (w->find(w->ctx, look, &cfi, &bias) < 0)
        return LP_CFI_STOP_UNMAPPED;
    if (cfi && (rc = lp_cfi_row_at(cfi, look - bias, &row, NULL)) < 0)
        return LP_CFI_STOP_ERROR;
    *next_exact = false;
    if (rc == 1) {
        *how = LP_CFI_HOW_CFI;
        *next_exact = row->signal;
        rc = cfi_step(row, cur, st, next);
    } else if (w->fp_ok && w->fp_ok(w->ctx, pc, exact)) {
        *how = LP_CFI_HOW_FP;
        rc = fp_step(cur, st, next);
    } else {
        return LP_CFI_STOP_NO_RULE;
    }
    if (rc != STEP_OK)
        return rc;
    if (next->r[LP_CFI_RA] == 0)
        return LP_CFI_STOP_END;         /* what _start's callers look like */
    if (next->r[LP_CFI_RA] < LP_FPU_DEAD_ZONE ||
        next->r[LP_CFI_RA] > UINT64_MAX - LP_FPU_DEAD_ZONE)
        return LP_CFI_STOP_BAD;
    return STEP_OK;
}

/* ---- the walk ------------------------------------------------------------------- */

lp_cfi_result lp_cfi_unwind(const lp_cfi_walker *w, const lp_cfi_regs *regs,
                            const lp_fpu_stack *st, lp_cfi_frame *out,
                            size_t n)
{
    size_t limit = n < LP_CFI_MAX_FRAMES ? n : LP_CFI_MAX_FRAMES;
    lp_cfi_result res = {0, LP_CFI_STOP_FULL, *regs};
    lp_cfi_regs cur = *regs, next;
    uint8_t how = LP_CFI_HOW_REGS;
    bool exact = true, next_exact;
    int rc;

    if ((regs->known & (BIT(LP_CFI_RA) | BIT(LP_CFI_RSP))) !=
        (BIT(LP_CFI_RA) | BIT(LP_CFI_RSP))) {
        res.stop = LP_CFI_STOP_REG;
        return res;
    }
    while (res.frames < limit) {
        out[res.frames++] = (lp_cfi_frame){cur.r[LP_CFI_RA], cur.r[LP_CFI_RSP], how, exact};
        res.last = cur;
        if ((rc = step(w, &cur, exact, st, &next, &how, &next_exact)) != STEP_OK) {
            res.stop = (uint8_t)rc;
            return res;
        }
        cur = next;
        exact = next_exact;
    }
    return res;                         /* another frame did not fit */
}
