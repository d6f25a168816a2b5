/*
 * walk.c - the frame-pointer walk itself: the validated walk over any
 * memory (lp_fpu_unwind), and its use on a sampled user stack (perf's
 * REGS_USER + STACK_USER), including the kernel's unchecked rules for
 * comparisons.
 *
 * Owns the walk rules (bounds, alignment, dead zone, order, frame size)
 * and the reading of perf register sets and stack dumps. Does not own how
 * memory of the running process is read (capture.c) nor what to do about
 * leaves at a function's entry/exit (leaf.c). Links against nothing but
 * libc; everything here is async-signal-safe (no allocation, no locks).
 */
#include <string.h>

#include "lbr2prof/fpunwind.h"

static uint64_t window_end(uint64_t sp)
{
    return sp > UINT64_MAX - LP_FPU_STACK_WINDOW ? UINT64_MAX
                                                 : sp + LP_FPU_STACK_WINDOW;
}

static lp_fpu_result stopped(size_t n, enum lp_fpu_stop why)
{
    lp_fpu_result r = {n, false, (uint8_t)why};
    return r;
}

/* The checks of one frame at fp, in dial9's order; LP_FPU_STOP_NONE if
 * it is valid (*saved and *ret set). A saved fp of 0 is the ABI's
 * end-of-chain mark: the frame is valid, the walk ends after it. */
static enum lp_fpu_stop check_frame(const lp_fpu_mem *mem, uint64_t lo,
                                    uint64_t hi, uint64_t fp, uint64_t *saved,
                                    uint64_t *ret)
{
    if (fp < lo || fp >= hi || hi - fp < 16)
        return LP_FPU_STOP_BOUNDS;
    if (fp & 7)
        return LP_FPU_STOP_ALIGN;
    if (mem->read(mem, fp, saved) < 0 || mem->read(mem, fp + 8, ret) < 0)
        return LP_FPU_STOP_FAULT;
    if (*ret < LP_FPU_DEAD_ZONE || *ret > UINT64_MAX - LP_FPU_DEAD_ZONE)
        return LP_FPU_STOP_DEAD_ZONE;
    if (*saved == 0)
        return LP_FPU_STOP_NONE;
    if (*saved <= fp)
        return LP_FPU_STOP_ORDER;
    if (*saved - fp > LP_FPU_MAX_FRAME_SIZE)
        return LP_FPU_STOP_SIZE;
    return LP_FPU_STOP_NONE;
}

lp_fpu_result lp_fpu_unwind(uint64_t pc, uint64_t fp, uint64_t sp,
                            const lp_fpu_mem *mem, uint64_t *out, size_t n)
{
    size_t limit = n < LP_FPU_MAX_FRAMES ? n : LP_FPU_MAX_FRAMES, k = 0;
    uint64_t lo = sp > mem->lo ? sp : mem->lo;
    uint64_t hi = window_end(sp) < mem->hi ? window_end(sp) : mem->hi;

    if (limit == 0) {
        lp_fpu_result r = {0, true, LP_FPU_STOP_NONE};
        return r;
    }
    out[k++] = pc;
    for (;;) {
        uint64_t saved = 0, ret = 0;
        enum lp_fpu_stop why = check_frame(mem, lo, hi, fp, &saved, &ret);

        if (why != LP_FPU_STOP_NONE)
            return stopped(k, why);
        if (k >= limit) {
            lp_fpu_result r = {k, true, LP_FPU_STOP_NONE};
            return r;
        }
        out[k++] = ret;
        if (saved == 0)
            return stopped(k, LP_FPU_STOP_NONE);
        fp = saved;
    }
}

/* ---- sampled stacks -------------------------------------------------------- */

int lp_fpu_regs_from_perf(uint64_t abi, uint64_t mask, const uint64_t *vals,
                          lp_fpu_regs *out)
{
    static const int want[3] = {LP_PERF_REG_X86_IP, LP_PERF_REG_X86_SP,
                                LP_PERF_REG_X86_BP};
    uint64_t got[3];
    int i;

    if (abi != LP_PERF_REGS_ABI_64 || !vals)
        return -1;
    for (i = 0; i < 3; i++) {
        uint64_t bit = 1ull << want[i];
        if (!(mask & bit))
            return -1;
        /* values are in ascending bit order: index = set bits below */
        got[i] = vals[__builtin_popcountll(mask & (bit - 1))];
    }
    out->ip = got[0];
    out->sp = got[1];
    out->bp = got[2];
    return 0;
}

int lp_fpu_stack_read(const lp_fpu_stack *st, uint64_t addr, uint64_t *val)
{
    if (!st->data || st->size < 8 || addr < st->base ||
        addr - st->base > st->size - 8)
        return -1;
    memcpy(val, st->data + (addr - st->base), 8);
    return 0;
}

static int dump_read(const lp_fpu_mem *m, uint64_t addr, uint64_t *val)
{
    return lp_fpu_stack_read((const lp_fpu_stack *)m->ctx, addr, val);
}

/* perf_callchain_user (arch/x86/events/core.c): store [fp+8], follow
 * [fp], stop only when a load fails (here: leaves the dump). */
static lp_fpu_result plain_walk(const lp_fpu_regs *regs,
                                const lp_fpu_stack *st, uint64_t *out,
                                size_t n)
{
    size_t limit = n < LP_FPU_MAX_FRAMES ? n : LP_FPU_MAX_FRAMES, k = 0;
    uint64_t fp = regs->bp;

    if (limit == 0) {
        lp_fpu_result r = {0, true, LP_FPU_STOP_NONE};
        return r;
    }
    out[k++] = regs->ip;
    while (k < limit) {
        uint64_t saved, ret;
        if (fp > UINT64_MAX - 8 || lp_fpu_stack_read(st, fp, &saved) < 0 ||
            lp_fpu_stack_read(st, fp + 8, &ret) < 0)
            return stopped(k, LP_FPU_STOP_FAULT);
        out[k++] = ret;
        fp = saved;
    }
    {
        lp_fpu_result r = {k, true, LP_FPU_STOP_NONE};
        return r;
    }
}

lp_fpu_result lp_fpu_unwind_stack(const lp_fpu_regs *regs,
                                  const lp_fpu_stack *st, unsigned flags,
                                  uint64_t *out, size_t n)
{
    lp_fpu_mem mem;

    if (flags & LP_FPU_PLAIN)
        return plain_walk(regs, st, out, n);
    mem.read = dump_read;
    mem.ctx = st;
    mem.lo = st->base;
    mem.hi = st->size > UINT64_MAX - st->base ? UINT64_MAX
                                              : st->base + st->size;
    return lp_fpu_unwind(regs->ip, regs->bp, regs->sp, &mem, out, n);
}
