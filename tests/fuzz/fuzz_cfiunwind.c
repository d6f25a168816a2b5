/*
 * fuzz_cfiunwind.c - libFuzzer target for the CFI stack walker: the input
 * is a register set and a stack copy, walked over the .eh_frame of libc
 * (the one file every machine has, taken at link-time addresses: bias 0),
 * with the frame-pointer fallback on for half the inputs; the same bytes
 * also run as a DWARF expression. Any crash, sanitizer report (a read
 * outside the copy), hang or leak is a bug; every walk must end within
 * LP_CFI_MAX_FRAMES with each caller above its callee but across signal
 * frames.
 *
 * Input: 1 option byte, 8 bytes of pc offset into libc's text, 17 u64
 * registers (DWARF order), then the stack (its base is rsp).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/cfiunwind.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static lp_cfi *libc;

static int find(void *ctx, uint64_t pc, lp_cfi **cfi, uint64_t *bias)
{
    (void)ctx;
    *bias = 0;
    *cfi = pc < 0x400000 ? libc : NULL;     /* libc's text is below 4 MiB */
    return pc < 0x800000 ? 0 : -1;
}

static bool fp_ok(void *ctx, uint64_t pc, bool exact)
{
    (void)ctx;
    return (pc ^ exact) & 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static lp_cfi_frame f[LP_CFI_MAX_FRAMES];
    lp_cfi_walker w = {find, NULL, NULL};
    lp_cfi_op ops[LP_CFI_MAX_OPS];
    lp_cfi_result r;
    lp_cfi_regs regs;
    lp_fpu_stack st;
    uint64_t off, v;
    size_t i, n;
    bool isv;

    if (!libc && !(libc = lp_cfi_open(LIBC, NULL)))
        abort();
    if (size < 1 + 8 + 17 * 8)
        return 0;
    if (data[0] & 1)
        w.fp_ok = fp_ok;
    memcpy(&off, data + 1, 8);
    memset(&regs, 0, sizeof regs);
    memcpy(regs.r, data + 9, 17 * 8);
    regs.known = (uint32_t)(data[0] >> 1) * 0x2492u | 1u << LP_CFI_RA | 1u << LP_CFI_RSP;
    regs.r[LP_CFI_RA] = 0x26000 + off % 0x160000;
    st.base = regs.r[LP_CFI_RSP];
    st.data = data + 9 + 17 * 8;
    st.size = size - 9 - 17 * 8;
    r = lp_cfi_unwind(&w, &regs, &st, f, LP_CFI_MAX_FRAMES);
    if (r.frames < 1 || r.frames > LP_CFI_MAX_FRAMES)
        abort();
    for (i = 1; i < r.frames; i++)
        if (!f[i].exact && f[i].sp <= f[i - 1].sp && f[i].how == LP_CFI_HOW_CFI)
            abort();
    /* the stack bytes as an expression: 17-byte operations */
    n = st.size / 17 < LP_CFI_MAX_OPS ? st.size / 17 : LP_CFI_MAX_OPS;
    for (i = 0; i < n; i++) {
        ops[i].atom = st.data[17 * i];
        memcpy(&ops[i].n1, st.data + 17 * i + 1, 8);
        memcpy(&ops[i].n2, st.data + 17 * i + 9, 8);
    }
    (void)lp_cfi_eval(ops, n, &regs, &st, data[0] & 2, regs.r[LP_CFI_RSP], &v, &isv);
    return 0;
}
