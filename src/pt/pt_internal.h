/*
 * pt_internal.h - private structures of the Intel PT module (src/pt/):
 * the packet walk (pt_walk.c), instruction fetch and classification
 * (pt_insn.c), sample synthesis and queues (pt_synth.c), the --itrace
 * options (pt_itrace.c). The walk reproduces the decisions of perf 6.1's
 * intel-pt-decoder (states, resynchronisation after errors, timestamps,
 * instruction periods) over libipt's packet decoder, so that synthesized
 * samples equal `perf script --itrace`'s. Not public: include/lbr2prof/pt.h.
 */
#ifndef LBR2PROF_PT_INTERNAL_H
#define LBR2PROF_PT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "lbr2prof/pt.h"

/* perf's packet kinds (intel-pt-pkt-decoder.h), as the walk sees them. */
enum pt_kind {
    K_BAD, K_PAD, K_TNT, K_TIP_PGD, K_TIP_PGE, K_TSC, K_TMA, K_MODE_EXEC,
    K_MODE_TSX, K_MTC, K_TIP, K_FUP, K_CYC, K_VMCS, K_PSB, K_PSBEND, K_CBR,
    K_TRACESTOP, K_PIP, K_OVF, K_MNT, K_PTWRITE, K_PTWRITE_IP, K_EXSTOP,
    K_EXSTOP_IP, K_MWAIT, K_PWRE, K_PWRX,
};

typedef struct pt_pkt {
    enum pt_kind type;
    int count;          /* IP bytes code, TNT bit count, TMA fc, mode bits */
    uint64_t payload;   /* TNT: bits from bit 63 (oldest first) */
} pt_pkt;

/* Branch kinds and operations of perf's instruction decoder. */
enum { BR_NONE, BR_INDIRECT, BR_CONDITIONAL, BR_UNCONDITIONAL };
enum { OP_OTHER, OP_CALL, OP_RET, OP_JCC, OP_JMP, OP_LOOP, OP_IRET, OP_INT,
       OP_SYSCALL, OP_SYSRET };

typedef struct ptw_insn {
    uint8_t op, branch, length;
    int32_t rel;
} ptw_insn;

/* Error codes (perf's INTEL_PT_ERR_*), and the message of each. */
enum { PT_ERR_NOMEM = 1, PT_ERR_INTERN, PT_ERR_BADPKT, PT_ERR_NODATA,
       PT_ERR_NOINSN, PT_ERR_MISMAT, PT_ERR_OVR, PT_ERR_LOST, PT_ERR_UNK,
       PT_ERR_NELOOP, PT_ERR_MAX };
const char *pt_err_msg(int code);

/* State types (perf's intel_pt_sample_type) and flags. */
enum { ST_BRANCH = 1 << 0, ST_INSTRUCTION = 1 << 1, ST_TRANSACTION = 1 << 2,
       ST_PTW = 1 << 3, ST_MWAIT = 1 << 4, ST_PWRE = 1 << 5,
       ST_EXSTOP = 1 << 6, ST_PWRX = 1 << 7, ST_CBR_CHG = 1 << 8,
       ST_TRACE_BEGIN = 1 << 9, ST_TRACE_END = 1 << 10, ST_PSB_EVT = 1 << 11 };
enum { SF_IN_TX = 1 << 0, SF_ABORT_TX = 1 << 1, SF_ASYNC = 1 << 2 };

typedef struct pt_state {
    int type, flags, err;
    uint64_t from_ip, to_ip, timestamp, est_timestamp, tot_insn_cnt;
    uint8_t insn_op, insn_len;
    int trace_nr;
} pt_state;

/* Where the walk gets instructions: walk from *ip (straight line) up to a
 * branch, `to_ip`, or `max` instructions (0: no limit); perf's
 * intel_pt_walk_next_insn. Returns 0, or -EINVAL (no code there) /
 * -ENOENT (code known to be missing, reported before). */
typedef int (*pt_walk_fn)(void *ctx, ptw_insn *in, uint64_t *cnt, uint64_t *ip,
                          uint64_t to_ip, uint64_t max);

typedef enum { PERIOD_NONE, PERIOD_INSTRUCTIONS, PERIOD_TICKS } pt_period;

typedef struct pt_params {
    const uint8_t *buf;         /* the queue's trace (all buffers joined) */
    size_t len;
    uint64_t ref_timestamp;     /* the first buffer's reference TSC */
    int return_compression, branch_enable;
    pt_period period_type;
    uint64_t period;
    unsigned mtc_shift, tsc_ctc_n, tsc_ctc_d, max_non_turbo_ratio;
    pt_walk_fn walk;
    void *ctx;
} pt_params;

typedef struct pt_decoder pt_decoder;
pt_decoder *pt_decoder_new(const pt_params *p);
void pt_decoder_free(pt_decoder *d);
void *pt_decoder_ctx(const pt_decoder *d);
const pt_state *pt_decode(pt_decoder *d);

/* pt_insn.c: perf's classification of the instruction at `code`. 0, or
 * -1 when it cannot be decoded. */
int pt_classify(const uint8_t *code, size_t n, ptw_insn *out);

/* The code bytes at `ip` (up to 16 into buf): how many, <= 0 if none. */
typedef long (*pt_read_fn)(void *ctx, uint64_t ip, uint8_t *buf);
/* Straight-line code from *ip, as perf's walk inside one map: stop at a
 * branch (*ip on it), after `max` instructions (0: no limit; *ip on the
 * last), or when *ip reaches `to_ip` (in->length 0); *n counts the
 * instructions. 0 there, 1 when *ip reached `end` first (the next map's
 * turn), -EINVAL when the code cannot be read or decoded. */
int pt_walk_straight(pt_read_fn rd, void *ctx, ptw_insn *in, uint64_t *n,
                     uint64_t *ip, uint64_t to_ip, uint64_t max, uint64_t end);

/* ---- pt_stack.c: perf's thread stacks (call stack for `g`, last
 * branches for `l`) ---------------------------------------------------- */

/* perf's PERF_IP_FLAG_* (the subset PT samples use). */
enum { PT_IPF_BRANCH = 1 << 0, PT_IPF_CALL = 1 << 1, PT_IPF_RETURN = 1 << 2,
       PT_IPF_CONDITIONAL = 1 << 3, PT_IPF_SYSCALLRET = 1 << 4,
       PT_IPF_ASYNC = 1 << 5, PT_IPF_INTERRUPT = 1 << 6,
       PT_IPF_TX_ABORT = 1 << 7, PT_IPF_TRACE_BEGIN = 1 << 8,
       PT_IPF_TRACE_END = 1 << 9, PT_IPF_IN_TX = 1 << 10 };

/* A branch as thread_stack__event takes it. */
typedef struct pt_branch {
    uint32_t flags;             /* PT_IPF_* */
    uint64_t from, to;
    unsigned insn_len;          /* of the instruction at `from` (0: async) */
    int trace_nr;
} pt_branch;

typedef struct pt_stacks pt_stacks;
typedef struct pt_tstack pt_tstack;

/* br_sz: ring size (0: no branch stacks); callstack: keep call stacks. */
pt_stacks *pt_stacks_new(unsigned br_sz, bool callstack);
void pt_stacks_free(pt_stacks *s);
/* The stack of a thread (the idle task's: of the CPU), or NULL. */
pt_tstack *pt_stacks_find(pt_stacks *s, int32_t pid, int32_t tid, int32_t cpu);
/* thread_stack__event: a branch of the thread. 0, or -1 (out of memory). */
int pt_stack_event(pt_stacks *s, int32_t pid, int32_t tid, int32_t cpu,
                   const pt_branch *b);
/* thread_stack__br_sample: the last branches, most recent first, into
 * dst (room for br_sz); how many. t may be NULL. */
size_t pt_stack_branches(const pt_stacks *s, const pt_tstack *t,
                         lp_branch_entry *dst);
/* thread_stack__sample: a callchain of at most sz entries for a sample at
 * ip: context marker, ip, the return addresses innermost first (markers
 * where user and kernel alternate). t may be NULL. The number written. */
size_t pt_stack_callchain(const pt_tstack *t, uint64_t ip, uint64_t *chain,
                          size_t sz);
/* intel_pt_sample_flags: the PT_IPF_* flags of a decoder state, and the
 * instruction length that goes with them. */
uint32_t pt_branch_flags(const pt_state *st, unsigned *insn_len);

#endif
