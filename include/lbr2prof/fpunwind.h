/*
 * lbr2prof/fpunwind.h - a frame-pointer stack walker that never faults, for
 * the calling thread (in-process, also from a signal handler) and for
 * sampled user stacks (perf's PERF_SAMPLE_REGS_USER + STACK_USER); and the
 * detector/repair for the caller frame an FP walk loses when the leaf is
 * sampled at a function's entry or exit (docs/fpunwind.md).
 *
 * Two halves:
 *   - lp_fpu_*  (src/fpunwind/walk.c, capture.c): x86-64 frame-pointer
 *     walks. Self-contained: no other lbr2prof module is linked in; the
 *     in-process calls are async-signal-safe and never allocate.
 *   - lp_leaf_* (src/fpunwind/leaf.c): classification of a leaf address by
 *     decoding its function forward from the entry (needs an lp_binary from
 *     include/lbr2prof/binary.h), and repair of a callchain from the
 *     sampled stack or the LBR.
 *
 * Frame order is leaf first everywhere. Frame 0 is an exact instruction
 * address (the sampled or interrupted PC) except for lp_fpu_capture(), where
 * it is capture's own return address; every other frame is a return address
 * (symbolize it with the call-site adjustment: "all_but_first" for perf and
 * ucontext stacks, "all" for lp_fpu_capture stacks).
 */
#ifndef LBR2PROF_FPUNWIND_H
#define LBR2PROF_FPUNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- walk rules ---------------------------------------------------------- */

#define LP_FPU_MAX_FRAMES 128          /* frames per walk, frame 0 included */
#define LP_FPU_MAX_FRAME_SIZE 0x40000u /* 256 KiB between two frame pointers */
#define LP_FPU_DEAD_ZONE 0x1000u       /* return addresses below / near the top */
#define LP_FPU_STACK_WINDOW (8u << 20) /* [sp, sp + 8 MiB) if bounds unknown */

/* Why a walk ended (the first rule a frame broke, in the order checked). */
enum lp_fpu_stop {
    LP_FPU_STOP_NONE = 0,   /* not stopped: truncated, or n == 0 */
    LP_FPU_STOP_BOUNDS,     /* frame [fp, fp+16) not inside the stack bounds */
    LP_FPU_STOP_ALIGN,      /* fp not 8-byte aligned */
    LP_FPU_STOP_FAULT,      /* a load faulted / is outside the sampled dump */
    LP_FPU_STOP_DEAD_ZONE,  /* return address < 0x1000 or > 2^64 - 0x1000 */
    LP_FPU_STOP_ORDER,      /* saved fp <= fp (not strictly increasing) */
    LP_FPU_STOP_SIZE,       /* saved fp - fp > LP_FPU_MAX_FRAME_SIZE */
};

typedef struct lp_fpu_result {
    size_t frames_written;
    /* true only if another frame that passed every check did not fit
     * (and when the buffer has no room at all, n == 0) */
    bool truncated;
    uint8_t stop;           /* enum lp_fpu_stop */
} lp_fpu_result;

/* Memory for the generic walk: read 8 bytes at addr (0, or -1 = fault).
 * The walk only reads frames inside [lo, hi). */
typedef struct lp_fpu_mem {
    int (*read)(const struct lp_fpu_mem *m, uint64_t addr, uint64_t *val);
    const void *ctx;
    uint64_t lo, hi;
} lp_fpu_mem;

/* The validated walk: out[0] = pc, then for each frame at fp:
 * bounds ([fp, fp+16) within [max(sp, lo), min(sp + 8 MiB, hi))), 8-byte
 * alignment, both loads succeed, return address outside the dead zones,
 * saved fp strictly above fp and at most LP_FPU_MAX_FRAME_SIZE above; the
 * first broken rule ends the walk (never a fault). At most
 * min(n, LP_FPU_MAX_FRAMES) frames. Async-signal-safe if mem->read is. */
lp_fpu_result lp_fpu_unwind(uint64_t pc, uint64_t fp, uint64_t sp,
                            const lp_fpu_mem *mem, uint64_t *out, size_t n);

/* ---- sampled user stacks (post-processing) ------------------------------- */

/* The registers a walk needs, from a perf sample's regs_user. */
typedef struct lp_fpu_regs {
    uint64_t ip, sp, bp;
} lp_fpu_regs;

/* perf's x86-64 register numbering (PERF_REG_X86_*): values are stored in
 * ascending bit order of the sample_regs_user mask. */
enum { LP_PERF_REG_X86_BP = 6, LP_PERF_REG_X86_SP = 7, LP_PERF_REG_X86_IP = 8 };
#define LP_PERF_REGS_ABI_64 2

/* Pick ip/sp/bp out of a sample's user registers. 0, or -1 if the ABI is
 * not 64-bit or the mask lacks one of them. */
int lp_fpu_regs_from_perf(uint64_t abi, uint64_t mask, const uint64_t *vals,
                          lp_fpu_regs *out);

/* A copy of user stack memory starting at address `base` (perf: the
 * sampled sp; size = min(size, dyn_size)). */
typedef struct lp_fpu_stack {
    uint64_t base;
    const uint8_t *data;
    size_t size;
} lp_fpu_stack;

/* 8 bytes of the dump at addr: 0, or -1 when [addr, addr+8) is not in it. */
int lp_fpu_stack_read(const lp_fpu_stack *st, uint64_t addr, uint64_t *val);

enum lp_fpu_walk_flags {
    /* The kernel's perf_callchain_user rules instead of the validated
     * walk: store [fp+8] and follow [fp] while both are readable (here:
     * inside the dump), nothing else checked. For comparisons only. */
    LP_FPU_PLAIN = 1u << 0,
};

/* Walk a sampled stack from regs (frame 0 = regs->ip). Reads outside the
 * dump count as faults; the bounds are the dump. */
lp_fpu_result lp_fpu_unwind_stack(const lp_fpu_regs *regs,
                                  const lp_fpu_stack *st, unsigned flags,
                                  uint64_t *out, size_t n);

/* ---- the calling process (x86-64 Linux only) ----------------------------- */

/* Install the fault guard: a SIGSEGV and SIGBUS handler that recovers only
 * faults of lbr2prof's one-instruction guarded load (the load then yields
 * "fault") and passes every other fault to the handler that was there
 * before (SIG_DFL / SIG_IGN: that action is put back and the fault
 * re-executes, so the process dies as it would have). Idempotent and
 * thread-safe; re-installs if another handler replaced it. Also records
 * the calling thread's stack bounds (lp_fpu_thread_init). Not
 * async-signal-safe. 0, or -1 (LP_EUNSUPP on other targets, LP_EIO if
 * sigaction fails). */
int lp_fpu_install(lp_error *err);

/* Whether the guard is the active SIGSEGV and SIGBUS handler right now
 * (two sigaction queries; async-signal-safe, not for hot loops). */
bool lp_fpu_verify_handler(void);

/* Record the calling thread's stack bounds (pthread_getattr_np; not
 * async-signal-safe) so that later walks of this thread are confined to
 * its stack. Without it a walk uses [sp, sp + 8 MiB). 0 or -1. */
int lp_fpu_thread_init(lp_error *err);

/* Fault-safe load of 8 bytes at addr: 0, or -1 if it would fault. With
 * the guard active: one load; otherwise process_vm_readv on ourselves
 * (a syscall, still async-signal-safe). */
int lp_fpu_read(uint64_t addr, uint64_t *val);

/* Capture the calling thread's stack into out[0..n). out[0] is capture's
 * return address (inside the caller of capture); then the frames of the
 * caller's callers. Never allocates, never faults, async-signal-safe
 * (SIGPROF handlers), needs frame pointers in the callers. Bounds: the
 * thread's stack if recorded, else [sp, sp + 8 MiB); loads through the
 * guard if installed, else through lp_fpu_read's fallback. */
lp_fpu_result lp_fpu_capture(uint64_t *out, size_t n)
    __attribute__((noinline));

/* The validated walk over this process's memory from explicit registers
 * (the guard's reads, the same bounds as capture). */
lp_fpu_result lp_fpu_unwind_local(uint64_t pc, uint64_t fp, uint64_t sp,
                                  uint64_t *out, size_t n);

/* From a signal handler's ucontext (the third SA_SIGINFO argument):
 * frame 0 is the interrupted PC. */
lp_fpu_result lp_fpu_unwind_ucontext(const void *ucontext, uint64_t *out,
                                     size_t n);

/* ---- leaf classification (needs include/lbr2prof/binary.h) --------------- */

typedef struct lp_binary lp_binary;
typedef struct lp_branch_entry lp_branch_entry;

/* Where the leaf IP is relative to its function's frame set-up, found by
 * decoding the function forward from its entry and tracking rsp and rbp
 * along every path (docs/fpunwind.md, "Detection"). */
typedef enum lp_leaf_state {
    LP_LEAF_UNKNOWN = 0, /* no function, undecodable, rbp clobbered, paths
                            disagree: nothing can be said */
    LP_LEAF_BODY,        /* the frame is set up: an FP walk is right */
    LP_LEAF_E0,          /* entry, nothing pushed yet (at endbr64 or
                            push %rbp): return address at [rsp] */
    LP_LEAF_E1,          /* after push %rbp, before mov %rsp,%rbp: [rsp+8] */
    LP_LEAF_X0,          /* after pop %rbp / leave (at ret, or at a tail
                            jmp): [rsp] */
    LP_LEAF_NOFRAME,     /* a function with a frame, at an instruction no
                            frame covers (e.g. a shrink-wrapped path) */
    LP_LEAF_F,           /* a function that never sets up rbp (frameless) */
    LP_LEAF_PLT,         /* a PLT stub (jmp *GOT): [rsp] */
    LP_LEAF_NSTATES
} lp_leaf_state;

typedef struct lp_leaf_info {
    lp_leaf_state state;
    /* An FP walk from this leaf skips the caller (E0, E1, X0, NOFRAME, F,
     * PLT): rbp still (or again) points at the caller's frame. */
    bool missing_caller;
    /* The caller's return address is at [rsp + ret_offset]. */
    bool ret_known;
    uint32_t ret_offset;
    uint64_t func_start;  /* vaddr of the function's entry (0 if none) */
} lp_leaf_info;

const char *lp_leaf_state_name(lp_leaf_state s);

/* Per-function analysis cache (one per binary or shared; keyed by the
 * binary and the function). Not thread-safe. */
typedef struct lp_leaf_cache lp_leaf_cache;
lp_leaf_cache *lp_leaf_cache_new(lp_error *err);
void lp_leaf_cache_free(lp_leaf_cache *c);

/* Classify the leaf at `vaddr` (a link-time address of b; x86-64 only:
 * LP_EUNSUPP for other architectures). The function is the lp_binary
 * function range containing vaddr (all its ranges are analysed together);
 * without one, only a PLT stub is recognised. Returns 0 (out filled; the
 * state may be LP_LEAF_UNKNOWN), or -1 on an I/O, decoder or allocation
 * error. The _cached form keeps each function's analysis in c. */
int lp_leaf_classify(lp_binary *b, uint64_t vaddr, lp_leaf_info *out,
                     lp_error *err);
int lp_leaf_classify_cached(lp_leaf_cache *c, lp_binary *b, uint64_t vaddr,
                            lp_leaf_info *out, lp_error *err);

/* ---- repair -------------------------------------------------------------- */

/* Counters over the samples given to the repair calls. Body and unknown
 * leaves are not counted in at_entry/at_exit/frameless. */
typedef struct lp_leaf_stats {
    uint64_t samples;         /* repair calls */
    uint64_t at_entry;        /* E0 + E1 */
    uint64_t at_exit;         /* X0 */
    uint64_t frameless;       /* F, NOFRAME and PLT */
    uint64_t by_state[LP_LEAF_NSTATES];
    uint64_t repaired;        /* a frame was inserted */
    uint64_t already_correct; /* recovered address == chain[1]: not inserted */
    uint64_t equal_inserted;  /* == chain[1] but inserted anyway
                                 (LP_LEAF_CHAIN_IS_FP_WALK: recursion) */
    uint64_t unrepaired;      /* missing caller, but no address (unknown
                                 offset, outside the dump, dead zone) */
} lp_leaf_stats;

enum lp_leaf_repair_flags {
    /* The chain is known to be a frame-pointer walk from these registers,
     * so the caller IS missing: insert even if the recovered address
     * equals chain[1] (direct recursion from one call site). Without the
     * flag, perf's rule: insert only if it differs from chain[1]. */
    LP_LEAF_CHAIN_IS_FP_WALK = 1u << 0,
};

/* Insert ret_addr as frame 1 of chain[0..*n) (capacity cap; the outermost
 * frame is dropped when full) unless perf's rule says it is there already.
 * Returns 1 inserted, 0 not (already correct). Updates st (may be NULL):
 * repaired / already_correct only. */
int lp_leaf_insert_caller(uint64_t *chain, size_t *n, size_t cap,
                          uint64_t ret_addr, unsigned flags,
                          lp_leaf_stats *st);

/* Stack repair: for a leaf whose caller is missing, read the return
 * address at [regs->sp + info->ret_offset] from the dump and insert it
 * (lp_leaf_insert_caller). chain[0] must be the leaf IP. Counts the
 * sample in st. Returns 1 inserted, 0 not. */
int lp_leaf_repair_stack(const lp_leaf_info *info, const lp_fpu_regs *regs,
                         const lp_fpu_stack *st, uint64_t *chain, size_t *n,
                         size_t cap, unsigned flags, lp_leaf_stats *stats);

/* LBR: the call that entered the leaf's function. `entry` is the runtime
 * address of the function's entry, br[0] the newest branch. For E0/E1 it
 * must be br[0] (a call to entry); for X0 the LBR is scanned back in time,
 * balancing calls and returns of nested callees, to the call of the
 * current frame. kind(ctx, from) says whether the branch at `from` is a
 * call (1), a return (2) or neither (0); NULL: use the branch type perf
 * saved (LP_BR_TYPE). Returns 1 and *call_site (the call's address), or 0. */
typedef int (*lp_leaf_branch_kind_fn)(void *ctx, uint64_t from);
int lp_leaf_lbr_caller(const lp_leaf_info *info, uint64_t entry,
                       const lp_branch_entry *br, size_t nbr,
                       lp_leaf_branch_kind_fn kind, void *ctx,
                       uint64_t *call_site);

/* ---- perf samples with user stacks (src/fpunwind/sample.c) --------------- */

typedef struct lp_machine lp_machine;
typedef struct lp_sample lp_sample;

enum lp_fp_mode {
    LP_FP_PLAIN = 1,     /* the kernel's walk, nothing checked */
    LP_FP_VALIDATED = 2, /* lp_fpu_unwind_stack rules */
    LP_FP_REPAIRED = 3,  /* validated, then the leaf's caller repaired */
};

/* "plain", "validated", "repaired" -> *mode; -1 for anything else. */
int lp_fp_mode_parse(const char *s, enum lp_fp_mode *mode);

typedef struct lp_fp_sampler_stats {
    uint64_t walked;          /* samples with user regs + stack */
    uint64_t no_user_stack;   /* samples without (chain left as recorded) */
    uint64_t binaries_opened, binaries_failed;
    uint64_t build_id_mismatch; /* leaves whose map's build-id is not the
                                   file's: not classified */
    uint64_t classify_errors; /* unreadable code: leaf taken as unknown */
    lp_leaf_stats leaf;       /* LP_FP_REPAIRED only */
} lp_fp_sampler_stats;

/* Binaries (opened lazily by the path of the map holding the leaf, with
 * symtab_functions so that code without DWARF is still analysed; not used
 * when the map carries a build-id, from MMAP2 or from the header through
 * lp_machine_add_build_ids, that differs from the file's) and the
 * analysis cache. Not thread-safe. */
typedef struct lp_fp_sampler lp_fp_sampler;
lp_fp_sampler *lp_fp_sampler_new(lp_error *err);
void lp_fp_sampler_free(lp_fp_sampler *s);
const lp_fp_sampler_stats *lp_fp_sampler_get_stats(const lp_fp_sampler *s);

/* Classify a runtime user address of process pid (its map from m, the
 * file opened on first use). An address outside any file-backed x86-64
 * binary is LP_LEAF_UNKNOWN. 0, or -1 (lp_leaf_classify errors). */
int lp_fp_sampler_classify(lp_fp_sampler *s, const lp_machine *m,
                           uint32_t pid, uint64_t ip, lp_leaf_info *out,
                           lp_error *err);

/* The user callchain of a sample from its REGS_USER/STACK_USER (leaf
 * first, runtime addresses, no context markers) into out[0..cap). Returns
 * 1 (*n frames), 0 (no usable registers or stack: nothing written), -1
 * (allocation failure). Unreadable code only disables the repair. */
int lp_fp_sample_user_chain(lp_fp_sampler *s, const lp_machine *m,
                            const lp_sample *sm, enum lp_fp_mode mode,
                            uint64_t *out, size_t cap, size_t *n,
                            lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
