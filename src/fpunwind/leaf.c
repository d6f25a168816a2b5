/*
 * leaf.c - where is the caller's return address when a sample's leaf is at
 * a function's entry or exit: classification of a leaf address by decoding
 * its function forward from the entry, and the repair of a callchain from
 * the sampled stack or the LBR.
 *
 * The analysis is a small abstract interpretation of the function: every
 * instruction of every range of the function is decoded (capstone, with
 * operand details), then the state before each instruction - rsp relative
 * to the entry rsp, whether rbp still holds the caller's value, holds this
 * function's frame, or something else, where the caller's rbp was pushed,
 * and whether the frame was torn down on the way - is propagated along
 * fall-through and direct branches to a fixpoint (paths that disagree
 * make the field unknown). Decoding backwards from the leaf is ambiguous
 * on x86; this never does it.
 *
 * Owns the detection table and the repair rules. Does not own ELF, symbols
 * or function ranges (lp_binary) nor the stack walk (walk.c).
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/fpunwind.h"
#include "lbr2prof/reader.h"
#include "insn/insn.h"

/* ---- data ------------------------------------------------------------------ */

/* What one instruction does to rsp / rbp / control flow. */
enum eff_kind {
    EF_OTHER = 0,
    EF_PUSH_RBP, EF_PUSH, EF_POP_RBP, EF_POP,
    EF_MOV_RBP_RSP,  /* mov %rsp,%rbp: frame set up */
    EF_MOV_RSP_RBP,  /* mov %rbp,%rsp */
    EF_LEA_RBP_RSP,  /* lea d(%rsp),%rbp: frame set up at rsp + d */
    EF_LEA_RSP_RBP,  /* lea d(%rbp),%rsp */
    EF_ADJ_SP,       /* add/sub $imm,%rsp, lea d(%rsp),%rsp */
    EF_LEAVE, EF_ENTER,
    EF_CALL, EF_RET, EF_JMP, EF_JMP_IND, EF_JCC, EF_STOP,
    EF_WRITES,       /* writes rsp (flag W_SP) and/or rbp (W_BP) otherwise */
};
#define W_SP 1u
#define W_BP 2u

typedef struct insn_eff {
    uint64_t addr, target; /* target: EF_JMP / EF_JCC */
    int32_t imm;           /* push/pop size, adjustment, displacement */
    uint8_t size, kind, wflags;
    bool pad;              /* nop / int3: alignment padding if not reached */
} insn_eff;

enum fp_kind { FP_CALLER = 0, FP_FRAME = 1, FP_OTHER = 2 };
#define NO_SLOT INT32_MIN

/* The state before an instruction; offsets are relative to the rsp at the
 * function's entry (where the return address is). */
typedef struct fstate {
    uint8_t reached, sp_known, fp, torn;
    int32_t sp;        /* rsp - entry rsp */
    int32_t fp_off;    /* rbp - entry rsp when fp == FP_FRAME */
    int32_t save_slot; /* where the caller's rbp was pushed, or NO_SLOT */
} fstate;

typedef struct an_key {
    const lp_binary *b;
    uint64_t entry;
} an_key;

/* The analysis of one function (all its ranges). */
typedef struct func_an {
    an_key key;
    size_t n;
    insn_eff *ins;    /* sorted by address */
    fstate *st;
    bool has_frame;   /* sets up rbp as a frame pointer on some path */
    UT_hash_handle hh;
} func_an;

struct lp_leaf_cache {
    func_an *by_key;
};

/* ---- decoding ---------------------------------------------------------------- */

static bool reg_is(x86_reg r, x86_reg want)
{
    if (want == X86_REG_RBP)
        return r == X86_REG_RBP || r == X86_REG_EBP || r == X86_REG_BP ||
               r == X86_REG_BPL;
    return r == X86_REG_RSP || r == X86_REG_ESP || r == X86_REG_SP ||
           r == X86_REG_SPL;
}

static bool op_reg(const cs_x86_op *o, x86_reg r)
{
    return o && o->type == X86_OP_REG && o->reg == r;
}

/* lea d(base),dst with no index and no segment: 1 and *disp. */
static bool simple_lea(const cs_x86 *x, x86_reg dst, x86_reg base,
                       int32_t *disp)
{
    const cs_x86_op *m = &x->operands[1];

    if (x->op_count != 2 || !op_reg(&x->operands[0], dst) ||
        m->type != X86_OP_MEM || m->mem.base != base ||
        m->mem.index != X86_REG_INVALID ||
        m->mem.segment != X86_REG_INVALID || m->mem.disp < INT32_MIN ||
        m->mem.disp > INT32_MAX)
        return false;
    *disp = (int32_t)m->mem.disp;
    return true;
}

static int stack_op_size(const cs_x86 *x)
{
    return x->op_count && x->operands[0].size == 2 ? 2 : 8;
}

/* Control flow, by the shared classifier (insn/insn.h); 1 if the
 * instruction is a branch or a trap. Traps and far transfers other than
 * calls end the path here (a far call returns like a near one). */
static bool flow_effect(const cs_insn *in, insn_eff *e)
{
    lp_x86_desc d;
    lp_flow f;

    lp_x86_desc_cs(in, &d);
    f = lp_x86_flow(&d);
    if ((f.flags & LP_FLOW_TRAP) ||
        ((f.flags & LP_FLOW_FAR) && f.kind != LP_FLOW_CALL))
        e->kind = EF_STOP;
    else if (f.kind == LP_FLOW_RET)
        e->kind = EF_RET;
    else if (f.kind == LP_FLOW_CALL)
        e->kind = EF_CALL;
    else if (f.kind == LP_FLOW_JUMP || f.kind == LP_FLOW_COND)
        e->kind = (f.flags & LP_FLOW_INDIRECT) ? EF_JMP_IND
                  : f.kind == LP_FLOW_JUMP     ? EF_JMP
                                               : EF_JCC;
    else
        return false;
    e->target = f.target;
    return true;
}

/* Stack-pointer and frame-pointer instructions of the prologue/epilogue
 * kind; 1 if the instruction was one. */
static bool frame_effect(const cs_insn *in, insn_eff *e)
{
    const cs_x86 *x = &in->detail->x86;
    const cs_x86_op *o0 = x->op_count > 0 ? &x->operands[0] : NULL;
    const cs_x86_op *o1 = x->op_count > 1 ? &x->operands[1] : NULL;

    switch (in->id) {
    case X86_INS_PUSH:
    case X86_INS_PUSHF:
    case X86_INS_PUSHFQ:
        e->kind = op_reg(o0, X86_REG_RBP) ? EF_PUSH_RBP : EF_PUSH;
        e->imm = stack_op_size(x);
        return true;
    case X86_INS_POP:
    case X86_INS_POPF:
    case X86_INS_POPFQ:
        if (op_reg(o0, X86_REG_RSP))
            return false; /* pop %rsp: a generic rsp write */
        e->kind = op_reg(o0, X86_REG_RBP) ? EF_POP_RBP : EF_POP;
        e->imm = stack_op_size(x);
        return true;
    case X86_INS_MOV:
        if (op_reg(o0, X86_REG_RBP) && op_reg(o1, X86_REG_RSP))
            e->kind = EF_MOV_RBP_RSP;
        else if (op_reg(o0, X86_REG_RSP) && op_reg(o1, X86_REG_RBP))
            e->kind = EF_MOV_RSP_RBP;
        return e->kind != EF_OTHER;
    case X86_INS_LEA:
        if (simple_lea(x, X86_REG_RSP, X86_REG_RSP, &e->imm))
            e->kind = EF_ADJ_SP;
        else if (simple_lea(x, X86_REG_RSP, X86_REG_RBP, &e->imm))
            e->kind = EF_LEA_RSP_RBP;
        else if (simple_lea(x, X86_REG_RBP, X86_REG_RSP, &e->imm))
            e->kind = EF_LEA_RBP_RSP;
        return e->kind != EF_OTHER;
    case X86_INS_ADD:
    case X86_INS_SUB:
        if (!op_reg(o0, X86_REG_RSP) || !o1 || o1->type != X86_OP_IMM ||
            o1->imm < -0x40000000 || o1->imm > 0x40000000)
            return false;
        e->kind = EF_ADJ_SP;
        e->imm = (int32_t)(in->id == X86_INS_ADD ? o1->imm : -o1->imm);
        return true;
    case X86_INS_LEAVE:
        e->kind = EF_LEAVE;
        return true;
    case X86_INS_ENTER:
        if (!o0 || !o1 || o0->type != X86_OP_IMM || o1->type != X86_OP_IMM ||
            o1->imm != 0)
            return false;
        e->kind = EF_ENTER;
        e->imm = (int32_t)(o0->imm & 0xffff);
        return true;
    default:
        return false;
    }
}

static void decode_effect(csh cs, const cs_insn *in, insn_eff *e)
{
    cs_regs rr, rw;
    uint8_t nr = 0, nw = 0, i;

    memset(e, 0, sizeof *e);
    e->addr = in->address;
    e->size = (uint8_t)in->size;
    e->pad = in->id == X86_INS_NOP || in->id == X86_INS_INT3;
    if (flow_effect(in, e) || frame_effect(in, e))
        return;
    if (cs_regs_access(cs, in, rr, &nr, rw, &nw) != CS_ERR_OK)
        nw = 0;
    for (i = 0; i < nw; i++) {
        if (reg_is((x86_reg)rw[i], X86_REG_RSP))
            e->wflags |= W_SP;
        if (reg_is((x86_reg)rw[i], X86_REG_RBP))
            e->wflags |= W_BP;
    }
    if (e->wflags)
        e->kind = EF_WRITES;
}

/* ---- reading the function ----------------------------------------------------- */

typedef struct span {
    uint64_t start, end;
} span;

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Bytes [start, end) of the binary's file (one PT_LOAD). NULL on error. */
static uint8_t *read_code(const lp_binary *b, uint64_t start, uint64_t end,
                          lp_error *err)
{
    uint64_t off, off_last;
    uint8_t *buf;
    int fd;
    ssize_t got;

    if (lp_binary_vaddr_to_offset(b, start, &off) < 0 ||
        lp_binary_vaddr_to_offset(b, end - 1, &off_last) < 0 ||
        off_last - off != end - 1 - start) {
        lp_error_set(err, LP_EFORMAT,
                     "%s: code [%#" PRIx64 ", %#" PRIx64 ") is not in the file",
                     lp_binary_path(b), start, end);
        return NULL;
    }
    buf = malloc(end - start);
    if (!buf) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    fd = open(lp_binary_path(b), O_RDONLY | O_CLOEXEC);
    got = fd < 0 ? -1 : pread(fd, buf, end - start, (off_t)off);
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)(end - start)) {
        lp_error_set(err, LP_EIO, "%s: cannot read %" PRIu64 " bytes at offset %#" PRIx64 ": %s",
                     lp_binary_path(b), end - start, off,
                     got < 0 ? strerror(errno) : "short read");
        free(buf);
        return NULL;
    }
    return buf;
}

static int append_insns(func_an *a, csh cs, const lp_binary *b, span s,
                        lp_error *err)
{
    uint8_t *buf = read_code(b, s.start, s.end, err);
    const uint8_t *code = buf;
    size_t left = s.end - s.start;
    uint64_t addr = s.start;
    cs_insn *in;

    if (!buf)
        return -1;
    in = cs_malloc(cs);
    if (!in) {
        free(buf);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    while (left) {
        if (!cs_disasm_iter(cs, &code, &left, &addr, in)) {
            code++; /* undecodable byte: skip it, as the binary loader */
            left--;
            addr++;
            continue;
        }
        insn_eff *grown = realloc(a->ins, (a->n + 1) * sizeof *grown);
        if (!grown) {
            cs_free(in, 1);
            free(buf);
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        }
        a->ins = grown;
        decode_effect(cs, in, &a->ins[a->n++]);
    }
    cs_free(in, 1);
    free(buf);
    return 0;
}

/* ---- the dataflow ---------------------------------------------------------------- */

static void clobber_fp(fstate *s)
{
    s->fp = FP_OTHER;
}

static void set_frame(fstate *s, bool known, int32_t off)
{
    if (!known) {
        clobber_fp(s);
        return;
    }
    s->fp = FP_FRAME;
    s->fp_off = off;
}

/* rsp moves by d; beyond +-1 GiB from the entry it is no longer tracked
 * (no real frame is that big; keeps the arithmetic in range). */
static void move_sp(fstate *s, int64_t d)
{
    int64_t v = (int64_t)s->sp + d;

    if (v < -(1 << 30) || v > (1 << 30))
        s->sp_known = 0;
    else
        s->sp = (int32_t)v;
}

/* pop %rbp (also the second half of leave): from the slot the caller's
 * rbp was pushed to, rbp is the caller's again, whatever it held. */
static void pop_rbp(fstate *s)
{
    if (s->sp_known && s->save_slot == s->sp) {
        s->fp = FP_CALLER;
        s->torn = 1;
        s->save_slot = NO_SLOT;
    } else {
        clobber_fp(s);
    }
    move_sp(s, 8);
}

/* rsp = rbp + d (only meaningful with a frame). */
static void sp_from_fp(fstate *s, int32_t d)
{
    s->sp_known = s->fp == FP_FRAME;
    s->sp = s->fp_off;
    move_sp(s, d);
}

static void push_rbp(fstate *s)
{
    if (s->fp == FP_CALLER && s->sp_known)
        s->save_slot = s->sp - 8;
    move_sp(s, -8);
}

static fstate step(const insn_eff *e, fstate s)
{
    switch (e->kind) {
    case EF_PUSH_RBP: push_rbp(&s); break;
    case EF_PUSH: move_sp(&s, -e->imm); break;
    case EF_POP: move_sp(&s, e->imm); break;
    case EF_POP_RBP: pop_rbp(&s); break;
    case EF_ADJ_SP: move_sp(&s, e->imm); break;
    case EF_MOV_RBP_RSP: set_frame(&s, s.sp_known, s.sp); break;
    case EF_LEA_RBP_RSP:
        set_frame(&s, s.sp_known && e->imm >= -(1 << 20) && e->imm <= (1 << 20),
                  s.sp + e->imm);
        break;
    case EF_MOV_RSP_RBP: sp_from_fp(&s, 0); break;
    case EF_LEA_RSP_RBP: sp_from_fp(&s, e->imm); break;
    case EF_LEAVE:
        sp_from_fp(&s, 0);
        pop_rbp(&s);
        break;
    case EF_ENTER:
        push_rbp(&s);
        set_frame(&s, s.sp_known, s.sp);
        move_sp(&s, -e->imm);
        break;
    case EF_WRITES:
        if (e->wflags & W_SP)
            s.sp_known = 0;
        if (e->wflags & W_BP)
            clobber_fp(&s);
        break;
    default: break;
    }
    if (!s.sp_known)
        s.sp = 0;
    if (s.fp != FP_FRAME)
        s.fp_off = 0;
    return s;
}

/* Join: fields the two paths disagree on become unknown. */
static bool merge(fstate *dst, const fstate *src)
{
    fstate old = *dst;

    if (!dst->reached) {
        *dst = *src;
        dst->reached = 1;
        return true;
    }
    if (!src->sp_known || !dst->sp_known || src->sp != dst->sp) {
        dst->sp_known = 0;
        dst->sp = 0;
    }
    if (src->fp != dst->fp ||
        (dst->fp == FP_FRAME && src->fp_off != dst->fp_off)) {
        dst->fp = FP_OTHER;
        dst->fp_off = 0;
    }
    if (src->save_slot != dst->save_slot)
        dst->save_slot = NO_SLOT;
    dst->torn |= src->torn;
    return memcmp(&old, dst, sizeof old) != 0;
}

static ssize_t find_insn(const func_an *a, uint64_t addr)
{
    size_t lo = 0, hi = a->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a->ins[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < a->n && a->ins[lo].addr == addr ? (ssize_t)lo : -1;
}

typedef struct worklist {
    size_t *items;
    size_t n;
    bool *queued;
} worklist;

static void push_work(worklist *w, const func_an *a, fstate *st, ssize_t i,
                      const fstate *s)
{
    if (i < 0 || (size_t)i >= a->n || !merge(&st[i], s) || w->queued[i])
        return;
    w->queued[i] = true;
    w->items[w->n++] = (size_t)i;
}

/* Successors of instruction i with the state after it. */
static void propagate(worklist *w, const func_an *a, size_t i,
                      fstate *indirect)
{
    const insn_eff *e = &a->ins[i];
    fstate after = step(e, a->st[i]);
    bool falls = true;

    switch (e->kind) {
    case EF_RET:
    case EF_STOP: falls = false; break;
    case EF_JMP_IND:
        falls = false;
        merge(indirect, &after);
        break;
    case EF_JMP:
        falls = false;
        push_work(w, a, a->st, find_insn(a, e->target), &after);
        break;
    case EF_JCC:
        push_work(w, a, a->st, find_insn(a, e->target), &after);
        break;
    default: break;
    }
    if (falls && i + 1 < a->n && a->ins[i + 1].addr == e->addr + e->size)
        push_work(w, a, a->st, (ssize_t)i + 1, &after);
}

static void run_worklist(worklist *w, func_an *a, fstate *indirect)
{
    while (w->n) {
        size_t i = w->items[--w->n];
        w->queued[i] = false;
        propagate(w, a, i, indirect);
    }
}

/* Fixpoint from the entry; then blocks reached only through indirect jumps
 * (jump tables) get the state at the indirect jumps, and so on. */
static int analyse(func_an *a, uint64_t entry, lp_error *err)
{
    fstate init = {1, 1, FP_CALLER, 0, 0, 0, NO_SLOT}, indirect = {0};
    worklist w;
    size_t i, round;

    a->st = calloc(a->n ? a->n : 1, sizeof *a->st);
    w.items = malloc((a->n ? a->n : 1) * sizeof *w.items);
    w.queued = calloc(a->n ? a->n : 1, sizeof *w.queued);
    w.n = 0;
    if (!a->st || !w.items || !w.queued) {
        free(w.items);
        free(w.queued);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    push_work(&w, a, a->st, find_insn(a, entry), &init);
    for (round = 0; round < 8; round++) {
        run_worklist(&w, a, &indirect);
        if (!indirect.reached)
            break;
        for (i = 0; i < a->n; i++) {
            const insn_eff *p = i ? &a->ins[i - 1] : NULL;
            bool block_start = !p || p->addr + p->size != a->ins[i].addr ||
                               p->kind == EF_RET || p->kind == EF_STOP ||
                               p->kind == EF_JMP || p->kind == EF_JMP_IND ||
                               (p->pad && !a->st[i - 1].reached);
            /* padding after a block is not a jump-table target */
            if (!a->st[i].reached && block_start && !a->ins[i].pad)
                push_work(&w, a, a->st, (ssize_t)i, &indirect);
        }
        if (!w.n)
            break;
    }
    for (i = 0; i < a->n; i++)
        if (a->st[i].reached && step(&a->ins[i], a->st[i]).fp == FP_FRAME)
            a->has_frame = true;
    free(w.items);
    free(w.queued);
    return 0;
}

/* ---- which function --------------------------------------------------------------- */

/* Code without a DWARF function (crt files, assembler, a binary whose
 * other units have DWARF): the sized ELF symbol holding vaddr. Its end is
 * the first address the symbol no longer covers (binary search; the
 * binary loader answers "which sized symbol holds addr"). */
static size_t symbol_span(const lp_binary *b, uint64_t vaddr, span *out,
                          uint64_t *entry)
{
    uint64_t start, s2, lo, hi;

    if (!lp_binary_symbol_name(b, vaddr, &start))
        return 0;
    lo = vaddr;                /* covered */
    hi = vaddr + (1u << 20);   /* assume not covered beyond 1 MiB */
    if (lp_binary_symbol_name(b, hi, &s2) && s2 == start)
        return 0;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (lp_binary_symbol_name(b, mid, &s2) && s2 == start)
            lo = mid;
        else
            hi = mid;
    }
    out[0] = (span){start, hi};
    *entry = start;
    return 1;
}

/* The ranges to analyse for vaddr and the entry to start from: the range
 * holding vaddr if it is an entry, with every non-entry (cold) range of
 * the function; for a cold range, the function's only entry. 0 if there
 * is nothing sensible (no range, several entries). */
static size_t pick_spans(const lp_binary *b, uint64_t vaddr, span *out,
                         size_t cap, uint64_t *entry)
{
    const lp_func_range *r = lp_binary_func_range(b, vaddr), *ent = NULL;
    size_t i, n = 0, nent = 0;

    if (!r)
        return symbol_span(b, vaddr, out, entry);
    if (r->is_entry) {
        ent = r;
    } else {
        for (i = 0; i < r->func->nranges; i++)
            if (r->func->ranges[i]->is_entry) {
                ent = r->func->ranges[i];
                nent++;
            }
        if (nent != 1)
            return 0;
    }
    out[n++] = (span){ent->start, ent->end};
    for (i = 0; i < r->func->nranges && n < cap; i++) {
        const lp_func_range *x = r->func->ranges[i];
        if (!x->is_entry && x->end > x->start)
            out[n++] = (span){x->start, x->end};
    }
    qsort(out, n, sizeof *out, cmp_span);
    *entry = ent->start;
    return n;
}

static void free_an(func_an *a)
{
    if (a) {
        free(a->ins);
        free(a->st);
        free(a);
    }
}

static func_an *build_an(const lp_binary *b, const span *sp, size_t nsp,
                         uint64_t entry, lp_error *err)
{
    func_an *a = calloc(1, sizeof *a);
    csh cs;
    size_t i;

    if (!a) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    a->key.b = b;
    a->key.entry = entry;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
        free(a);
        lp_error_set(err, LP_EFORMAT, "capstone: cannot open an x86-64 decoder");
        return NULL;
    }
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    for (i = 0; i < nsp; i++)
        if (sp[i].end > sp[i].start && append_insns(a, cs, b, sp[i], err) < 0)
            break;
    cs_close(&cs);
    if (i < nsp || analyse(a, entry, err) < 0) {
        free_an(a);
        return NULL;
    }
    return a;
}

/* ---- classification --------------------------------------------------------------- */

static const char *const state_names[LP_LEAF_NSTATES] = {
    "unknown", "body", "E0", "E1", "X0", "noframe", "F", "plt",
};

const char *lp_leaf_state_name(lp_leaf_state s)
{
    return (unsigned)s < LP_LEAF_NSTATES ? state_names[s] : "?";
}

static void set_missing(lp_leaf_info *out, lp_leaf_state s, const fstate *st)
{
    out->state = s;
    out->missing_caller = true;
    out->ret_known = st->sp_known && st->sp <= 0;
    out->ret_offset = out->ret_known ? (uint32_t)-st->sp : 0;
}

static void classify_state(const func_an *a, ssize_t i, lp_leaf_info *out)
{
    const fstate *s;

    if (i < 0 || !a->st[i].reached)
        return; /* LP_LEAF_UNKNOWN */
    s = &a->st[i];
    if (s->fp == FP_FRAME) {
        /* the walk is right only for push %rbp; mov %rsp,%rbp first */
        if (s->fp_off == -8 && s->save_slot == -8)
            out->state = LP_LEAF_BODY;
        return;
    }
    if (s->fp != FP_CALLER)
        return;
    if (!a->has_frame)
        set_missing(out, LP_LEAF_F, s);
    else if (s->torn)
        set_missing(out, LP_LEAF_X0, s);
    else if (s->sp_known && s->sp == 0 && s->save_slot == NO_SLOT)
        set_missing(out, LP_LEAF_E0, s);
    else if (s->sp_known && s->sp == -8 && s->save_slot == -8)
        set_missing(out, LP_LEAF_E1, s);
    else
        set_missing(out, LP_LEAF_NOFRAME, s);
}

/* No function at vaddr: a PLT stub is `jmp *disp(%rip)`, optionally after
 * endbr64 and with a bnd prefix; at it, nothing was pushed. */
static size_t bytes_in_segment(const lp_binary *b, uint64_t vaddr)
{
    const lp_segment *seg;
    size_t i, n = lp_binary_segments(b, &seg);

    for (i = 0; i < n; i++)
        if (vaddr >= seg[i].vaddr && vaddr - seg[i].vaddr < seg[i].filesz)
            return seg[i].vaddr + seg[i].filesz - vaddr;
    return 0;
}

static int classify_plt(const lp_binary *b, uint64_t vaddr, lp_leaf_info *out)
{
    size_t left = bytes_in_segment(b, vaddr) < 16 ? bytes_in_segment(b, vaddr)
                                                  : 16;
    uint8_t *buf = left ? read_code(b, vaddr, vaddr + left, NULL) : NULL;
    const uint8_t *code = buf;
    uint64_t addr = vaddr;
    cs_insn *in;
    csh cs;
    int k;

    if (!buf)
        return 0;
    if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK) {
        free(buf);
        return 0;
    }
    cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
    in = cs_malloc(cs);
    for (k = 0; in && k < 2 && cs_disasm_iter(cs, &code, &left, &addr, in);
         k++) {
        const cs_x86 *x = &in->detail->x86;
        if (in->id == X86_INS_ENDBR64 && k == 0)
            continue;
        if (in->id == X86_INS_JMP && x->op_count == 1 &&
            x->operands[0].type == X86_OP_MEM &&
            x->operands[0].mem.base == X86_REG_RIP) {
            out->state = LP_LEAF_PLT;
            out->missing_caller = out->ret_known = true;
            out->ret_offset = 0;
        }
        break;
    }
    if (in)
        cs_free(in, 1);
    cs_close(&cs);
    free(buf);
    return 0;
}

static int classify(lp_leaf_cache *c, lp_binary *b, uint64_t vaddr,
                    lp_leaf_info *out, lp_error *err)
{
    span sp[16];
    uint64_t entry = 0;
    size_t nsp;
    func_an *a = NULL;
    an_key key;
    int r;

    memset(out, 0, sizeof *out);
    if (lp_binary_arch(b) != LP_ARCH_X86_64)
        return lp_error_set(err, LP_EUNSUPP,
                            "%s: leaf classification needs x86-64 code "
                            "(arm64: the caller is in LR, see docs/fpunwind.md)",
                            lp_binary_path(b));
    nsp = pick_spans(b, vaddr, sp, sizeof sp / sizeof *sp, &entry);
    if (!nsp)
        return lp_binary_func_range(b, vaddr) ? 0
                                              : classify_plt(b, vaddr, out);
    out->func_start = entry;
    memset(&key, 0, sizeof key);
    key.b = b;
    key.entry = entry;
    if (c)
        HASH_FIND(hh, c->by_key, &key, sizeof key, a);
    if (!a) {
        a = build_an(b, sp, nsp, entry, err);
        if (!a)
            return -1;
        if (c)
            HASH_ADD(hh, c->by_key, key, sizeof key, a);
    }
    classify_state(a, find_insn(a, vaddr), out);
    r = 0;
    if (!c)
        free_an(a);
    return r;
}

int lp_leaf_classify(lp_binary *b, uint64_t vaddr, lp_leaf_info *out,
                     lp_error *err)
{
    return classify(NULL, b, vaddr, out, err);
}

int lp_leaf_classify_cached(lp_leaf_cache *c, lp_binary *b, uint64_t vaddr,
                            lp_leaf_info *out, lp_error *err)
{
    return classify(c, b, vaddr, out, err);
}

lp_leaf_cache *lp_leaf_cache_new(lp_error *err)
{
    lp_leaf_cache *c = calloc(1, sizeof *c);

    if (!c)
        lp_error_set(err, LP_ENOMEM, "out of memory");
    return c;
}

void lp_leaf_cache_free(lp_leaf_cache *c)
{
    func_an *a, *tmp;

    if (!c)
        return;
    HASH_ITER(hh, c->by_key, a, tmp) {
        HASH_DEL(c->by_key, a);
        free_an(a);
    }
    free(c);
}

/* ---- repair ----------------------------------------------------------------------- */

int lp_leaf_insert_caller(uint64_t *chain, size_t *n, size_t cap,
                          uint64_t ret_addr, unsigned flags,
                          lp_leaf_stats *st)
{
    size_t len = *n;
    bool equal = len >= 2 && chain[1] == ret_addr;

    if (equal && !(flags & LP_LEAF_CHAIN_IS_FP_WALK)) {
        if (st)
            st->already_correct++;
        return 0;
    }
    if (len == 0 || cap < 2) {
        if (st)
            st->unrepaired++;
        return 0;
    }
    if (len == cap)
        len--; /* full: the outermost frame goes */
    memmove(chain + 2, chain + 1, (len - 1) * sizeof *chain);
    chain[1] = ret_addr;
    *n = len + 1;
    if (st) {
        st->repaired++;
        st->equal_inserted += equal;
    }
    return 1;
}

static void count_state(lp_leaf_stats *st, lp_leaf_state s)
{
    st->samples++;
    st->by_state[(unsigned)s < LP_LEAF_NSTATES ? s : LP_LEAF_UNKNOWN]++;
    if (s == LP_LEAF_E0 || s == LP_LEAF_E1)
        st->at_entry++;
    else if (s == LP_LEAF_X0)
        st->at_exit++;
    else if (s == LP_LEAF_F || s == LP_LEAF_NOFRAME || s == LP_LEAF_PLT)
        st->frameless++;
}

int lp_leaf_repair_stack(const lp_leaf_info *info, const lp_fpu_regs *regs,
                         const lp_fpu_stack *st, uint64_t *chain, size_t *n,
                         size_t cap, unsigned flags, lp_leaf_stats *stats)
{
    uint64_t ret;

    if (stats)
        count_state(stats, info->state);
    if (!info->missing_caller)
        return 0;
    if (!info->ret_known ||
        regs->sp > UINT64_MAX - info->ret_offset ||
        lp_fpu_stack_read(st, regs->sp + info->ret_offset, &ret) < 0 ||
        ret < LP_FPU_DEAD_ZONE || ret > UINT64_MAX - LP_FPU_DEAD_ZONE) {
        if (stats)
            stats->unrepaired++;
        return 0;
    }
    return lp_leaf_insert_caller(chain, n, cap, ret, flags, stats);
}

/* perf_branch_entry type (PERF_BR_*): 1 call, 2 return, 0 other. */
static int saved_kind(uint64_t flags)
{
    unsigned t = LP_BR_TYPE(flags);

    if (t == 4 || t == 5 || t == 9) /* CALL, IND_CALL, COND_CALL */
        return 1;
    if (t == 6 || t == 10) /* RET, COND_RET */
        return 2;
    return 0;
}

int lp_leaf_lbr_caller(const lp_leaf_info *info, uint64_t entry,
                       const lp_branch_entry *br, size_t nbr,
                       lp_leaf_branch_kind_fn kind, void *ctx,
                       uint64_t *call_site)
{
    size_t i;
    unsigned depth = 0;

    if (!info->missing_caller || nbr == 0)
        return 0;
    /* At the entry the newest branch is the one into it (a call, or the
     * jump of a tail call whose caller's call is further back). */
    if ((info->state == LP_LEAF_E0 || info->state == LP_LEAF_E1 ||
         info->state == LP_LEAF_PLT) &&
        br[0].to != entry)
        return 0;
    for (i = 0; i < nbr; i++) {
        int k = kind ? kind(ctx, br[i].from) : saved_kind(br[i].flags);
        if (k == 2) {
            depth++;
        } else if (k == 1) {
            if (depth == 0) {
                *call_site = br[i].from;
                return 1;
            }
            depth--;
        }
    }
    return 0;
}
