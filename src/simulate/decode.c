/*
 * decode.c - the simulator's view of the tracee's code: memory access,
 * decoding of control-transfer instructions with capstone (each static
 * instruction decoded once, cached in uthash tables), straight-line blocks,
 * int3 patching and the emulation of a CTI from registers and memory.
 * Does not run the tracee (tracer.c) or write records (sample.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "simulate/sim.h"

/* ---- tracee memory ----------------------------------------------------- */

/* Read up to `len` bytes; returns the number read (stops at the first
 * unreadable page), 0 if none. */
int sim_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    size_t done = 0;

    while (done < len) {
        uint64_t a = addr + done;
        size_t chunk = 4096 - (a & 4095);
        struct iovec l, r;
        ssize_t n;

        if (chunk > len - done)
            chunk = len - done;
        l.iov_base = (char *)buf + done;
        l.iov_len = chunk;
        r.iov_base = (void *)(uintptr_t)a;
        r.iov_len = chunk;
        n = process_vm_readv(pid, &l, 1, &r, 1, 0);
        if (n <= 0)
            break;
        done += (size_t)n;
        if ((size_t)n < chunk)
            break;
    }
    return (int)done;
}

int sim_write8(pid_t pid, uint64_t addr, uint64_t val)
{
    struct iovec l = {&val, 8}, r = {(void *)(uintptr_t)addr, 8};

    if (process_vm_writev(pid, &l, 1, &r, 1, 0) == 8)
        return 0;
    return -1;
}

/* Write one byte of code (read-only text: ptrace's forced write). */
static int poke_byte(pid_t pid, uint64_t addr, uint8_t b)
{
    uint64_t a = addr & ~7ull, word;
    long v;

    errno = 0;
    v = ptrace(PTRACE_PEEKTEXT, pid, (void *)(uintptr_t)a, NULL);
    if (errno)
        return -1;
    word = (uint64_t)v;
    ((uint8_t *)&word)[addr - a] = b;
    return ptrace(PTRACE_POKETEXT, pid, (void *)(uintptr_t)a,
                  (void *)(uintptr_t)word) == 0 ? 0 : -1;
}

/* ---- classification ---------------------------------------------------- */

static void set_operand(cti *c, const cs_x86_op *op)
{
    if (op->type == X86_OP_IMM) {
        c->target = (uint64_t)op->imm;
    } else if (op->type == X86_OP_REG) {
        c->op_reg = op->reg;
    } else if (op->type == X86_OP_MEM) {
        c->op_is_mem = 1;
        c->base = op->mem.base;
        c->index = op->mem.index;
        c->segment = op->mem.segment;
        c->scale = op->mem.scale;
        c->disp = op->mem.disp;
    }
}

/* Fill kind/target of a decoded instruction; CTI_NONE if it is not one. */
static void classify(cti *c, const cs_insn *in)
{
    const cs_x86 *x = &in->detail->x86;
    const cs_detail *d = in->detail;
    int jump = 0, call = 0, ret = 0, other = 0, i;

    for (i = 0; i < d->groups_count; i++) {
        jump |= d->groups[i] == CS_GRP_JUMP;
        call |= d->groups[i] == CS_GRP_CALL;
        ret |= d->groups[i] == CS_GRP_RET;
        other |= d->groups[i] == CS_GRP_IRET;
    }
    c->insn_id = in->id;
    c->kind = CTI_NONE;
    /* capstone 4 puts loop* in no group */
    jump |= in->id == X86_INS_LOOP || in->id == X86_INS_LOOPE ||
            in->id == X86_INS_LOOPNE || in->id == X86_INS_JRCXZ ||
            in->id == X86_INS_JECXZ || in->id == X86_INS_JCXZ;
    if (other || in->id == X86_INS_LJMP || in->id == X86_INS_LCALL ||
        in->id == X86_INS_RETF || in->id == X86_INS_RETFQ ||
        in->id == X86_INS_XBEGIN) {
        c->kind = CTI_STEP;
        return;
    }
    if (!jump && !call && !ret)
        return;
    if (x->op_count > 0)
        set_operand(c, &x->operands[0]);
    if (ret) {
        c->kind = CTI_RET;
        c->ret_imm = x->op_count > 0 ? (uint16_t)x->operands[0].imm : 0;
    } else if (call) {
        c->kind = x->op_count > 0 && x->operands[0].type == X86_OP_IMM
                      ? CTI_CALL : CTI_CALL_IND;
    } else if (in->id == X86_INS_JMP) {
        c->kind = x->op_count > 0 && x->operands[0].type == X86_OP_IMM
                      ? CTI_JMP : CTI_JMP_IND;
    } else {
        c->kind = CTI_JCC;
    }
    if ((c->kind == CTI_JCC || c->kind == CTI_JMP || c->kind == CTI_CALL) &&
        !(x->op_count > 0 && x->operands[0].type == X86_OP_IMM))
        c->kind = CTI_STEP;
}

/* Decode the instruction at `addr` from `code` (n bytes) into a new cti;
 * an undecodable instruction becomes CTI_STEP of length 1. */
static cti *decode_one(sim *s, uint64_t addr, const uint8_t *code, size_t n)
{
    cs_insn *in = NULL;
    cti *c = calloc(1, sizeof *c);
    size_t cnt;

    if (!c)
        return NULL;
    c->addr = addr;
    c->orig = n ? code[0] : 0;
    cnt = n ? cs_disasm(s->cs, code, n, addr, 1, &in) : 0;
    if (cnt == 1) {
        c->len = (uint8_t)in->size;
        classify(c, in);
    } else {
        c->len = 1;
        c->kind = CTI_STEP;
        c->undecodable = 1;
    }
    if (in)
        cs_free(in, cnt);
    return c;
}

cti *sim_cti_get(sim *s, uint64_t addr, lp_error *err)
{
    cti *c;
    uint8_t code[16];
    int n;

    HASH_FIND(hh, s->ctis, &addr, sizeof addr, c);
    if (c)
        return c;
    n = sim_read(s->pid, addr, code, sizeof code);
    c = decode_one(s, addr, code, (size_t)(n > 0 ? n : 0));
    if (!c) {
        lp_error_set(err, LP_ENOMEM, "simulate: out of memory");
        return NULL;
    }
    HASH_ADD(hh, s->ctis, addr, sizeof c->addr, c);
    return c;
}

/* ---- blocks ------------------------------------------------------------ */

static int block_push(block *b, uint64_t addr, size_t *cap)
{
    uint64_t *p;

    if (b->ninsn == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        p = realloc(b->insn_addr, *cap * sizeof *p);
        if (!p)
            return -1;
        b->insn_addr = p;
    }
    b->insn_addr[b->ninsn++] = addr;
    return 0;
}

/* Decode forward from `start` to the first CTI; instructions that are
 * not CTIs are not cached (only their addresses, in the block). */
static block *build_block(sim *s, uint64_t start, lp_error *err)
{
    block *b = calloc(1, sizeof *b);
    uint64_t pc = start;
    size_t cap = 0;
    uint8_t code[16];

    if (!b)
        goto oom;
    b->start = start;
    for (;;) {
        cti *c;
        int n;

        HASH_FIND(hh, s->ctis, &pc, sizeof pc, c);
        if (!c) {
            n = sim_read(s->pid, pc, code, sizeof code);
            c = decode_one(s, pc, code, (size_t)(n > 0 ? n : 0));
            if (!c)
                goto oom;
            if (c->kind == CTI_NONE) {
                uint8_t len = c->len;
                free(c);
                if (block_push(b, pc, &cap))
                    goto oom;
                pc += len;
                continue;
            }
            HASH_ADD(hh, s->ctis, addr, sizeof c->addr, c);
        }
        if (block_push(b, pc, &cap))
            goto oom;
        if (c->kind != CTI_NONE) {
            if (sim_patch(s, c, err))
                goto fail;
            b->end = pc;
            return b;
        }
        pc += c->len;
    }
oom:
    lp_error_set(err, LP_ENOMEM, "simulate: out of memory");
fail:
    if (b)
        free(b->insn_addr);
    free(b);
    return NULL;
}

block *sim_block_get(sim *s, uint64_t start, lp_error *err)
{
    block *b;

    HASH_FIND(hh, s->blocks, &start, sizeof start, b);
    if (b)
        return b;
    b = build_block(s, start, err);
    if (b)
        HASH_ADD(hh, s->blocks, start, sizeof b->start, b);
    return b;
}

int sim_patch(sim *s, cti *c, lp_error *err)
{
    if (c->patched)
        return 0;
    if (poke_byte(s->stopped_tid, c->addr, 0xcc))
        return lp_error_set(err, LP_EIO, "simulate: cannot write a breakpoint "
                            "at 0x%llx: %s", (unsigned long long)c->addr,
                            strerror(errno));
    c->patched = 1;
    return 0;
}

/* Drop what we know about [lo, hi): the memory was unmapped or replaced.
 * Their breakpoints went with the memory. */
void sim_forget_range(sim *s, uint64_t lo, uint64_t hi)
{
    cti *c, *ct;
    block *b, *bt;

    HASH_ITER(hh, s->ctis, c, ct) {
        if (c->addr >= lo && c->addr < hi) {
            HASH_DEL(s->ctis, c);
            free(c);
        }
    }
    HASH_ITER(hh, s->blocks, b, bt) {
        if (b->end >= lo && b->start < hi) {
            sim_count_block(s, b);
            HASH_DEL(s->blocks, b);
            free(b->insn_addr);
            free(b);
        }
    }
}

void sim_forget_all(sim *s)
{
    sim_forget_range(s, 0, UINT64_MAX);
}

/* Count the instructions run from `from` to `upto` (the instruction at
 * `upto` counted only if `inclusive`), for runs cut short by a syscall or
 * a signal. */
int sim_count_partial(sim *s, uint64_t from, uint64_t upto, int inclusive,
                      lp_error *err)
{
    block *b = sim_block_get(s, from, err);
    uint32_t i;

    if (!b)
        return -1;
    for (i = 0; i < b->ninsn; i++) {
        uint64_t a = b->insn_addr[i];
        icount *ic;

        if (a == upto && !inclusive)
            break;
        s->time++;
        if (s->opts->truth_path) {
            HASH_FIND(hh, s->icounts, &a, sizeof a, ic);
            if (!ic) {
                if (!(ic = calloc(1, sizeof *ic)))
                    return lp_error_set(err, LP_ENOMEM, "out of memory");
                ic->addr = a;
                HASH_ADD(hh, s->icounts, addr, sizeof ic->addr, ic);
            }
            ic->count++;
        }
        if (a == upto)
            break;
    }
    return 0;
}

/* ---- emulation --------------------------------------------------------- */

static uint64_t reg_value(const struct user_regs_struct *r, x86_reg reg,
                          uint64_t next_ip)
{
    switch (reg) {
    case X86_REG_RAX: return r->rax;
    case X86_REG_RBX: return r->rbx;
    case X86_REG_RCX: return r->rcx;
    case X86_REG_RDX: return r->rdx;
    case X86_REG_RSI: return r->rsi;
    case X86_REG_RDI: return r->rdi;
    case X86_REG_RBP: return r->rbp;
    case X86_REG_RSP: return r->rsp;
    case X86_REG_R8: return r->r8;
    case X86_REG_R9: return r->r9;
    case X86_REG_R10: return r->r10;
    case X86_REG_R11: return r->r11;
    case X86_REG_R12: return r->r12;
    case X86_REG_R13: return r->r13;
    case X86_REG_R14: return r->r14;
    case X86_REG_R15: return r->r15;
    case X86_REG_RIP: return next_ip;
    case X86_REG_EAX: return (uint32_t)r->rax;
    case X86_REG_EBX: return (uint32_t)r->rbx;
    case X86_REG_ECX: return (uint32_t)r->rcx;
    case X86_REG_EDX: return (uint32_t)r->rdx;
    case X86_REG_ESI: return (uint32_t)r->rsi;
    case X86_REG_EDI: return (uint32_t)r->rdi;
    case X86_REG_EBP: return (uint32_t)r->rbp;
    case X86_REG_ESP: return (uint32_t)r->rsp;
    case X86_REG_R8D: return (uint32_t)r->r8;
    case X86_REG_R9D: return (uint32_t)r->r9;
    case X86_REG_R10D: return (uint32_t)r->r10;
    case X86_REG_R11D: return (uint32_t)r->r11;
    case X86_REG_R12D: return (uint32_t)r->r12;
    case X86_REG_R13D: return (uint32_t)r->r13;
    case X86_REG_R14D: return (uint32_t)r->r14;
    case X86_REG_R15D: return (uint32_t)r->r15;
    case X86_REG_EIP: return (uint32_t)next_ip;
    default: return 0;
    }
}

static int jcc_taken(const cti *c, struct user_regs_struct *r)
{
    uint64_t f = r->eflags;
    int cf = f & 1, pf = (f >> 2) & 1, zf = (f >> 6) & 1, sf = (f >> 7) & 1,
        of = (f >> 11) & 1;

    switch (c->insn_id) {
    case X86_INS_JAE: return !cf;
    case X86_INS_JA: return !cf && !zf;
    case X86_INS_JBE: return cf || zf;
    case X86_INS_JB: return cf;
    case X86_INS_JE: return zf;
    case X86_INS_JNE: return !zf;
    case X86_INS_JG: return !zf && sf == of;
    case X86_INS_JGE: return sf == of;
    case X86_INS_JL: return sf != of;
    case X86_INS_JLE: return zf || sf != of;
    case X86_INS_JNO: return !of;
    case X86_INS_JNP: return !pf;
    case X86_INS_JNS: return !sf;
    case X86_INS_JO: return of;
    case X86_INS_JP: return pf;
    case X86_INS_JS: return sf;
    case X86_INS_JCXZ: return (uint16_t)r->rcx == 0;
    case X86_INS_JECXZ: return (uint32_t)r->rcx == 0;
    case X86_INS_JRCXZ: return r->rcx == 0;
    case X86_INS_LOOP: return --r->rcx != 0;
    case X86_INS_LOOPE: return --r->rcx != 0 && zf;
    case X86_INS_LOOPNE: return --r->rcx != 0 && !zf;
    default: return -1;
    }
}

/* Target of an indirect jmp/call. */
static int indirect_target(pid_t tid, const cti *c,
                           const struct user_regs_struct *r, uint64_t *out,
                           lp_error *err)
{
    uint64_t next = c->addr + c->len, ea;

    if (!c->op_is_mem) {
        *out = reg_value(r, c->op_reg, next);
        return 0;
    }
    ea = reg_value(r, c->base, next) +
         reg_value(r, c->index, next) * (uint64_t)(c->scale ? c->scale : 1) +
         (uint64_t)c->disp;
    if (c->segment == X86_REG_FS)
        ea += r->fs_base;
    else if (c->segment == X86_REG_GS)
        ea += r->gs_base;
    if (sim_read(tid, ea, out, 8) != 8)
        return lp_error_set(err, LP_EIO, "simulate: cannot read the target of "
                            "the indirect branch at 0x%llx from 0x%llx",
                            (unsigned long long)c->addr, (unsigned long long)ea);
    return 0;
}

int sim_emulate(pid_t tid, const cti *c, struct user_regs_struct *r,
                lp_error *err)
{
    uint64_t next = c->addr + c->len, t;
    int taken;

    switch (c->kind) {
    case CTI_JCC:
        taken = jcc_taken(c, r);
        if (taken < 0)
            return lp_error_set(err, LP_EUNSUPP, "simulate: unknown conditional "
                                "branch (capstone id %u) at 0x%llx", c->insn_id,
                                (unsigned long long)c->addr);
        r->rip = taken ? c->target : next;
        return taken;
    case CTI_JMP:
        r->rip = c->target;
        return 1;
    case CTI_JMP_IND:
        if (indirect_target(tid, c, r, &t, err))
            return -1;
        r->rip = t;
        return 1;
    case CTI_CALL:
    case CTI_CALL_IND:
        t = c->target;
        if (c->kind == CTI_CALL_IND && indirect_target(tid, c, r, &t, err))
            return -1;
        if (sim_write8(tid, r->rsp - 8, next))
            return lp_error_set(err, LP_EIO, "simulate: cannot push the return "
                                "address at 0x%llx (call at 0x%llx)",
                                (unsigned long long)(r->rsp - 8),
                                (unsigned long long)c->addr);
        r->rsp -= 8;
        r->rip = t;
        return 1;
    case CTI_RET:
        if (sim_read(tid, r->rsp, &t, 8) != 8)
            return lp_error_set(err, LP_EIO, "simulate: cannot read the return "
                                "address at 0x%llx (ret at 0x%llx)",
                                (unsigned long long)r->rsp,
                                (unsigned long long)c->addr);
        r->rsp += 8 + c->ret_imm;
        r->rip = t;
        return 1;
    default:
        return lp_error_set(err, LP_EUNSUPP, "simulate: cannot emulate the "
                            "instruction at 0x%llx", (unsigned long long)c->addr);
    }
}
