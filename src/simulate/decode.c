/*
 * decode.c - the simulator's view of the tracee's code: memory access,
 * decoding with Zydis (every instruction of the CPU it runs on, AVX-512
 * and AMX included; each static instruction decoded once, cached in uthash
 * tables) and classification by the shared classifier (insn/insn.h),
 * straight-line blocks, int3 patching and the emulation of a CTI from
 * registers and memory. Does not run the tracee (tracer.c) or write
 * records (sample.c).
 */
#include <errno.h>
#include <stddef.h>
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

/* The CTI kind of a described instruction, from the shared classifier.
 * Far transfers and xbegin are stepped (the hardware decides where they
 * go); traps (ud2, int3, hlt) are no CTIs: the kernel's signal is. */
static uint8_t cti_kind_of(const lp_x86_desc *d, uint64_t *target)
{
    lp_flow f = lp_x86_flow(d);
    bool ind = (f.flags & LP_FLOW_INDIRECT) != 0;

    *target = f.target;
    if (f.flags & (LP_FLOW_FAR | LP_FLOW_ABORT))
        return CTI_STEP;
    switch (f.kind) {
    case LP_FLOW_CALL: return ind ? CTI_CALL_IND : CTI_CALL;
    case LP_FLOW_RET: return CTI_RET;
    case LP_FLOW_JUMP: return ind ? CTI_JMP_IND : CTI_JMP;
    case LP_FLOW_COND: return ind ? CTI_STEP : CTI_JCC;
    default: return CTI_NONE;
    }
}

/* Decode the instruction at `addr` from `code` (n bytes) into a new cti;
 * one the decoder does not know becomes CTI_UNKNOWN of length 1. */
static cti *decode_one(sim *s, uint64_t addr, const uint8_t *code, size_t n)
{
    cti *c = calloc(1, sizeof *c);
    unsigned len;

    if (!c)
        return NULL;
    c->addr = addr;
    c->orig = n ? code[0] : 0;
    len = lp_zydis_decode(s->zy, code, n, addr, &c->d);
    if (len) {
        c->len = (uint8_t)len;
        c->kind = cti_kind_of(&c->d, &c->target);
    } else {
        c->len = 1;
        c->kind = CTI_UNKNOWN;
    }
    return c;
}

int sim_step_taken(const cti *c, uint64_t rip)
{
    return c->kind == CTI_STEP && rip != c->addr + c->len;
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

/* A neutral register's value (rip: the next instruction's address),
 * truncated to its width; 0 for none. */
static uint64_t reg_value(const struct user_regs_struct *r, lp_x86_reg reg,
                          uint64_t next_ip)
{
    static const size_t gpr[16] = {
        offsetof(struct user_regs_struct, rax),
        offsetof(struct user_regs_struct, rcx),
        offsetof(struct user_regs_struct, rdx),
        offsetof(struct user_regs_struct, rbx),
        offsetof(struct user_regs_struct, rsp),
        offsetof(struct user_regs_struct, rbp),
        offsetof(struct user_regs_struct, rsi),
        offsetof(struct user_regs_struct, rdi),
        offsetof(struct user_regs_struct, r8),
        offsetof(struct user_regs_struct, r9),
        offsetof(struct user_regs_struct, r10),
        offsetof(struct user_regs_struct, r11),
        offsetof(struct user_regs_struct, r12),
        offsetof(struct user_regs_struct, r13),
        offsetof(struct user_regs_struct, r14),
        offsetof(struct user_regs_struct, r15),
    };
    uint64_t v;

    if (reg.id >= LP_X86_GPR && reg.id < LP_X86_GPR + 16)
        memcpy(&v, (const char *)r + gpr[reg.id - LP_X86_GPR], sizeof v);
    else if (reg.id == LP_X86_RIP)
        v = next_ip;
    else
        return 0;
    return reg.bits >= 64 ? v : v & ((1ull << reg.bits) - 1);
}

/* The count register of jrcxz/loop at `bits` (16, 32, 64). */
static uint64_t count_reg(const struct user_regs_struct *r, unsigned bits)
{
    return bits >= 64 ? r->rcx : r->rcx & ((1ull << bits) - 1);
}

/* loop*: decrement the count register at its width (a 32-bit write
 * clears the upper half, as every 32-bit register write does). */
static uint64_t count_dec(struct user_regs_struct *r, unsigned bits)
{
    uint64_t m = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t v = (r->rcx - 1) & m;

    r->rcx = bits == 16 ? (r->rcx & ~m) | v : v;
    return v;
}

/* x86's condition `cc` on `flags`: the pair's base test, negated by the
 * low bit. */
static int cond_holds(unsigned cc, uint64_t f)
{
    int cf = f & 1, pf = (f >> 2) & 1, zf = (f >> 6) & 1, sf = (f >> 7) & 1,
        of = (f >> 11) & 1, t;

    switch (cc >> 1) {
    case 0: t = of; break;
    case 1: t = cf; break;
    case 2: t = zf; break;
    case 3: t = cf || zf; break;
    case 4: t = sf; break;
    case 5: t = pf; break;
    case 6: t = sf != of; break;
    default: t = zf || sf != of; break;
    }
    return (cc & 1) ? !t : t;
}

static int jcc_taken(const cti *c, struct user_regs_struct *r)
{
    int zf = (r->eflags >> 6) & 1;
    unsigned bits = c->d.count_bits;

    switch (c->d.mnem) {
    case LP_X86_JCC: return cond_holds(c->d.cond, r->eflags);
    case LP_X86_JCXZ: return count_reg(r, bits) == 0;
    case LP_X86_LOOP: return count_dec(r, bits) != 0;
    case LP_X86_LOOPE: return count_dec(r, bits) != 0 && zf;
    case LP_X86_LOOPNE: return count_dec(r, bits) != 0 && !zf;
    default: return -1;
    }
}

/* Target of an indirect jmp/call. */
static int indirect_target(pid_t tid, const cti *c,
                           const struct user_regs_struct *r, uint64_t *out,
                           lp_error *err)
{
    uint64_t next = c->addr + c->len, ea;

    const lp_x86_desc *d = &c->d;

    if (d->op == LP_X86_OP_REG && d->reg.id < LP_X86_BADREG) {
        *out = reg_value(r, d->reg, next);
        return 0;
    }
    if (d->op != LP_X86_OP_MEM || d->base.id == LP_X86_BADREG ||
        d->index.id == LP_X86_BADREG)
        return lp_error_set(err, LP_EUNSUPP, "simulate: cannot emulate the "
                            "operand of the indirect branch at 0x%llx",
                            (unsigned long long)c->addr);
    ea = reg_value(r, d->base, next) +
         reg_value(r, d->index, next) * (uint64_t)(d->scale ? d->scale : 1) +
         (uint64_t)d->disp;
    if (d->seg.id == LP_X86_FS)
        ea += r->fs_base;
    else if (d->seg.id == LP_X86_GS)
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
                                "branch at 0x%llx", (unsigned long long)c->addr);
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
        r->rsp += 8 + (c->d.op == LP_X86_OP_IMM ? (uint16_t)c->d.imm : 0);
        r->rip = t;
        return 1;
    default:
        return lp_error_set(err, LP_EUNSUPP, "simulate: cannot emulate the "
                            "instruction at 0x%llx", (unsigned long long)c->addr);
    }
}
