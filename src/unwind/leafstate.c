/*
 * leafstate.c - where a sampled leaf IP sits relative to its function's
 * frame-pointer set-up (x86-64), which decides whether the kernel's
 * frame-pointer walk (perf_callchain_user: IP, then [rbp+8] along the rbp
 * chain) saw the direct caller:
 *
 *   S:  [endbr64]            ENTRY  rbp is still the caller's: the walk
 *       push %rbp            ENTRY  reads the caller's return address and
 *       mov  %rsp,%rbp       ENTRY  skips the caller itself
 *       ... body ...         BODY   rbp = this frame: the walk is right
 *       pop %rbp / leave     BODY   (still this frame at that instruction)
 *       ret / jmp tail       EXIT   rbp is the caller's again
 *
 * A shrink-wrapped function (an early test or exit before the push, found
 * among its first 16 instructions) is ENTRY up to the mov. llvm-profgen's
 * heuristic (first two instructions, a ret and the one before it) misses
 * `mov %rsp,%rbp` after endbr64 + push and shrink-wrapped starts, and
 * needlessly drops `pop %rbp`. Functions without this prologue (frameless
 * leaves) are UNKNOWN; a frameless early-exit path placed after the
 * prologue is taken for BODY (its ret is still EXIT). Owns only the
 * classification; what is done with it is intake.c's.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "unwind/uw_internal.h"

/* Up to 4 bytes of the instruction at vaddr (its size from the decoder).
 * Returns the size, 0 if not code or unreadable. */
static size_t inst_bytes(lp_binary *bin, int fd, uint64_t vaddr,
                         unsigned char b[4])
{
    lp_inst in;
    uint64_t off;
    size_t n;

    if (fd < 0 || lp_binary_inst(bin, vaddr, &in, NULL) != 1 ||
        lp_binary_vaddr_to_offset(bin, vaddr, &off) != 0)
        return 0;
    n = in.size < 4 ? in.size : 4;
    if (pread(fd, b, n, (off_t)off) != (ssize_t)n)
        return 0;
    return in.size;
}

static bool is_bytes(lp_binary *bin, int fd, uint64_t a, const char *pat,
                     size_t len)
{
    unsigned char b[4];

    return inst_bytes(bin, fd, a, b) == len &&
           memcmp(b, pat, len < 4 ? len : 4) == 0;
}

#define ENDBR64 "\xf3\x0f\x1e\xfa"
#define PUSH_RBP "\x55"
#define POP_RBP "\x5d"
#define LEAVE "\xc9"

static bool is_mov_rsp_rbp(lp_binary *bin, int fd, uint64_t a)
{
    return is_bytes(bin, fd, a, "\x48\x89\xe5", 3) ||
           is_bytes(bin, fd, a, "\x48\x8b\xec", 3);
}

/* The function's entry range: the one marked as an entry, else the first. */
static const lp_func_range *entry_range(const lp_func_range *fr)
{
    const lp_function *f = fr->func;
    size_t i;

    if (fr->is_entry)
        return fr;
    for (i = 0; i < f->nranges; i++)
        if (f->ranges[i]->is_entry)
            return f->ranges[i];
    return f->nranges ? f->ranges[0] : fr;
}

/* The address of `mov %rsp,%rbp` ending the frame set-up of the function
 * starting at s: `push %rbp; mov %rsp,%rbp` among its first instructions
 * (right after endbr64, or later when the prologue is shrink-wrapped past
 * an early test or exit). 0 if there is none. */
static uint64_t prologue_end(lp_binary *bin, int fd, uint64_t s)
{
    uint64_t p = s, q;
    int i;

    for (i = 0; i < 16; i++, p = q) {
        if (lp_binary_next_inst(bin, p, &q, NULL) != 1)
            return 0;
        if (is_bytes(bin, fd, p, PUSH_RBP, 1))
            return is_mov_rsp_rbp(bin, fd, q) ? q : 0;
    }
    return 0;
}

enum lp_leaf_state uw_classify_leaf(lp_binary *bin, int fd, uint64_t a)
{
    const lp_func_range *fr = lp_binary_func_range(bin, a), *er;
    uint64_t q, prev;
    lp_inst in;

    if (lp_binary_arch(bin) != LP_ARCH_X86_64 || !fr ||
        lp_binary_inst(bin, a, &in, NULL) != 1)
        return LP_LEAF_UNKNOWN;
    er = entry_range(fr);
    if (!(q = prologue_end(bin, fd, er->start)))
        return LP_LEAF_UNKNOWN;
    /* everything up to the mov runs on the caller's rbp: the set-up
     * itself, and a shrink-wrapped function's frameless start */
    if (fr == er && a >= er->start && a <= q)
        return in.kind == LP_INST_RET ? LP_LEAF_EXIT : LP_LEAF_ENTRY;
    if (in.kind == LP_INST_RET)
        return LP_LEAF_EXIT;
    /* right after the frame is torn down: a tail-call jump */
    if (a > fr->start && lp_binary_prev_inst(bin, a, &prev, NULL) == 1 &&
        prev >= fr->start &&
        (is_bytes(bin, fd, prev, POP_RBP, 1) || is_bytes(bin, fd, prev, LEAVE, 1)))
        return LP_LEAF_EXIT;
    return LP_LEAF_BODY;
}

enum lp_leaf_state lp_unwind_leaf_state(lp_binary *bin, uint64_t vaddr)
{
    int fd = open(lp_binary_path(bin), O_RDONLY | O_CLOEXEC);
    enum lp_leaf_state s = uw_classify_leaf(bin, fd, vaddr);

    if (fd >= 0)
        close(fd);
    return s;
}
