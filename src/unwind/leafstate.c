/*
 * leafstate.c - the frame repair's view of a sampled leaf IP: whether the
 * kernel's frame-pointer walk (perf_callchain_user: IP, then [rbp+8] along
 * the rbp chain) saw the direct caller. The disassembly analysis itself is
 * lp_leaf_classify's (src/fpunwind/leaf.c, shared with `script
 * --fp-callchain`); this file only maps its states onto what intake.c
 * does with them:
 *
 *   E0, E1, NOFRAME   ENTRY      rbp is still the caller's
 *   X0                EXIT       rbp is the caller's again
 *   F                 FRAMELESS  rbp is never this function's
 *   BODY              BODY       the walk is right
 *   UNKNOWN, PLT      UNKNOWN    nothing can be said
 *
 * and, for code a signal interrupted somewhere on a straight-line path,
 * whether the walk of the handler's stack has its caller (uw_interrupted).
 */
#include "lbr2prof/fpunwind.h"
#include "unwind/uw_internal.h"

static enum lp_uw_leaf map_state(lp_leaf_state s)
{
    switch (s) {
    case LP_LEAF_E0: case LP_LEAF_E1: case LP_LEAF_NOFRAME:
        return LP_UW_LEAF_ENTRY;
    case LP_LEAF_X0: return LP_UW_LEAF_EXIT;
    case LP_LEAF_F: return LP_UW_LEAF_FRAMELESS;
    case LP_LEAF_BODY: return LP_UW_LEAF_BODY;
    default: return LP_UW_LEAF_UNKNOWN;
    }
}

enum lp_uw_leaf uw_classify_leaf(lp_binary *bin, lp_leaf_cache *c,
                                 uint64_t vaddr)
{
    lp_leaf_info li;

    if (lp_binary_arch(bin) != LP_ARCH_X86_64 ||
        lp_leaf_classify_cached(c, bin, vaddr, &li, NULL) < 0)
        return LP_UW_LEAF_UNKNOWN;
    return map_state(li.state);
}

enum lp_uw_leaf lp_unwind_leaf_state(lp_binary *bin, uint64_t vaddr)
{
    lp_leaf_cache *c = lp_leaf_cache_new(NULL);
    enum lp_uw_leaf s = c ? uw_classify_leaf(bin, c, vaddr) : LP_UW_LEAF_UNKNOWN;

    lp_leaf_cache_free(c);
    return s;
}

/* ---- where an interrupted frame was --------------------------------------- */

#define UW_PATH_MAX 256

static size_t interrupted(lp_unwinder *u, uint64_t addr, uint64_t out[2])
{
    const lp_func_range *fr;
    bool body = true, missing = true, some_body = false, known = true;
    enum lp_uw_leaf s;
    uint64_t a = addr;
    lp_inst in;
    int i;

    out[0] = addr;
    if (addr == UW_EXT)
        return 1;
    fr = uw_func_range(u, addr);
    if (!fr)
        known = false;
    for (i = 0; known && i < UW_PATH_MAX; i++) {
        if (uw_va(a) >= fr->end || lp_binary_inst(uw_bin(u, a), uw_va(a), &in, NULL) != 1)
            break;
        s = uw_leaf_state(u, a);
        if (s == LP_UW_LEAF_BODY)
            some_body = true;
        else if (s == LP_UW_LEAF_ENTRY || s == LP_UW_LEAF_EXIT ||
                 s == LP_UW_LEAF_FRAMELESS)
            body = false;
        else
            known = false;
        if (in.kind == LP_INST_CALL || in.kind == LP_INST_RET ||
            in.kind == LP_INST_UNCOND_BR)
            break;
        a += in.size;
    }
    if (i == UW_PATH_MAX)
        known = false;
    missing = !some_body;
    if (known && body)
        return 1;
    out[1] = !known ? UW_LOST : missing ? UW_HOLE : UW_OPT;
    return 2;
}

size_t uw_interrupted(lp_unwinder *u, uint64_t addr, uint64_t out[2])
{
    size_t n;

    uw_lock(u);
    n = interrupted(u, addr, out);
    uw_unlock(u);
    return n;
}
