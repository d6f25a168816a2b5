/*
 * expr.c - DWARF expressions as CFI uses them (a CFA computed by
 * DW_CFA_def_cfa_expression, registers saved at or computed by
 * DW_CFA_expression / DW_CFA_val_expression: PLT stubs, glibc's signal
 * trampoline, stack realignment), evaluated over a register set and a
 * copy of the stack. Straight-line operations only (no branches, calls or
 * TLS), at most LP_CFI_MAX_OPS of them and 16 values deep: an evaluation
 * always ends, and reads nothing but the copy. Owns nothing else.
 */
#include <dwarf.h>

#include "cfiunwind/cfi_internal.h"

#define EVAL_DEPTH 16

typedef struct eval {
    uint64_t v[EVAL_DEPTH];
    size_t n;
    const lp_cfi_regs *regs;
    const lp_fpu_stack *st;
} eval;

enum { E_OK = 1, E_UNKNOWN = 0, E_BAD = -1 };

static int push(eval *e, uint64_t x)
{
    if (e->n == EVAL_DEPTH)
        return E_BAD;
    e->v[e->n++] = x;
    return E_OK;
}

static int reg_value(const eval *e, uint64_t reg, uint64_t *x)
{
    if (reg >= LP_CFI_NREGS || !(e->regs->known & (1u << reg)))
        return E_UNKNOWN;
    *x = e->regs->r[reg];
    return E_OK;
}

static int load(const eval *e, uint64_t addr, uint64_t size, uint64_t *x)
{
    uint64_t w;

    if (size == 0 || size > 8)
        return E_BAD;
    if (lp_fpu_stack_read(e->st, addr, &w) < 0)
        return E_UNKNOWN;   /* the copy reads 8 bytes: enough for any size */
    *x = size == 8 ? w : w & ((UINT64_C(1) << (size * 8)) - 1);
    return E_OK;
}

/* Two operands popped, one result pushed. */
static int binary(eval *e, uint8_t atom)
{
    uint64_t b, a, r;

    if (e->n < 2)
        return E_BAD;
    b = e->v[--e->n];
    a = e->v[e->n - 1];
    switch (atom) {
    case DW_OP_plus: r = a + b; break;
    case DW_OP_minus: r = a - b; break;
    case DW_OP_mul: r = a * b; break;
    case DW_OP_and: r = a & b; break;
    case DW_OP_or: r = a | b; break;
    case DW_OP_xor: r = a ^ b; break;
    case DW_OP_shl: r = b >= 64 ? 0 : a << b; break;
    case DW_OP_shr: r = b >= 64 ? 0 : a >> b; break;
    case DW_OP_shra: r = (uint64_t)((int64_t)a >> (b >= 64 ? 63 : b)); break;
    case DW_OP_eq: r = a == b; break;
    case DW_OP_ne: r = a != b; break;
    case DW_OP_ge: r = (int64_t)a >= (int64_t)b; break;
    case DW_OP_gt: r = (int64_t)a > (int64_t)b; break;
    case DW_OP_le: r = (int64_t)a <= (int64_t)b; break;
    case DW_OP_lt: r = (int64_t)a < (int64_t)b; break;
    default: return E_BAD;
    }
    e->v[e->n - 1] = r;
    return E_OK;
}

/* Constants, registers and the CFA: one value pushed. 2: not one of them. */
static int operand(eval *e, const lp_cfi_op *op, bool has_cfa, uint64_t cfa)
{
    uint64_t x;
    int rc;

    if (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31)
        return push(e, (uint64_t)(op->atom - DW_OP_lit0));
    if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
        if ((rc = reg_value(e, op->atom - DW_OP_breg0, &x)) != E_OK)
            return rc;
        return push(e, x + op->n1);
    }
    switch (op->atom) {
    case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u:
    case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s:
    case DW_OP_const8u: case DW_OP_const8s: case DW_OP_constu:
    case DW_OP_consts: case DW_OP_addr:
        return push(e, op->n1);
    case DW_OP_bregx:
        if ((rc = reg_value(e, op->n1, &x)) != E_OK)
            return rc;
        return push(e, x + op->n2);
    case DW_OP_call_frame_cfa:
        return has_cfa ? push(e, cfa) : E_BAD;
    }
    return 2;
}

/* Stack shuffles and unary operations on the top. 2: not one of them. */
static int unary(eval *e, const lp_cfi_op *op)
{
    uint64_t *top = e->n ? &e->v[e->n - 1] : NULL, t;
    int rc;

    switch (op->atom) {
    case DW_OP_nop:
        return E_OK;
    case DW_OP_dup:
        return top ? push(e, *top) : E_BAD;
    case DW_OP_over:
        return e->n >= 2 ? push(e, e->v[e->n - 2]) : E_BAD;
    case DW_OP_pick:
        return op->n1 < e->n ? push(e, e->v[e->n - 1 - op->n1]) : E_BAD;
    case DW_OP_drop:
        return e->n ? (e->n--, E_OK) : E_BAD;
    case DW_OP_swap:
        if (e->n < 2)
            return E_BAD;
        t = *top;
        *top = e->v[e->n - 2];
        e->v[e->n - 2] = t;
        return E_OK;
    }
    if (!top)
        return op->atom == DW_OP_deref || op->atom == DW_OP_deref_size ||
               op->atom == DW_OP_plus_uconst || op->atom == DW_OP_neg ||
               op->atom == DW_OP_not || op->atom == DW_OP_abs ? E_BAD : 2;
    switch (op->atom) {
    case DW_OP_deref:
        return load(e, *top, 8, top);
    case DW_OP_deref_size:
        rc = load(e, *top, op->n1, &t);
        *top = rc == E_OK ? t : *top;
        return rc;
    case DW_OP_plus_uconst: *top += op->n1; return E_OK;
    case DW_OP_neg: *top = -*top; return E_OK;
    case DW_OP_not: *top = ~*top; return E_OK;
    case DW_OP_abs: *top = (int64_t)*top < 0 ? -*top : *top; return E_OK;
    }
    return 2;
}

int lp_cfi_eval(const lp_cfi_op *ops, size_t nops, const lp_cfi_regs *regs,
                const lp_fpu_stack *st, bool has_cfa, uint64_t cfa,
                uint64_t *value, bool *is_value)
{
    eval e = {.n = 0, .regs = regs, .st = st};
    size_t i;
    int rc;

    *is_value = false;
    if (nops == 0 || nops > LP_CFI_MAX_OPS)
        return E_BAD;
    for (i = 0; i < nops; i++) {
        if (ops[i].atom == DW_OP_stack_value) {
            if (i + 1 != nops)
                return E_BAD;
            *is_value = true;
            break;
        }
        if ((rc = operand(&e, &ops[i], has_cfa, cfa)) == 2 &&
            (rc = unary(&e, &ops[i])) == 2)
            rc = binary(&e, ops[i].atom);
        if (rc != E_OK)
            return rc;
    }
    if (e.n == 0)
        return E_BAD;
    *value = e.v[e.n - 1];
    return E_OK;
}
