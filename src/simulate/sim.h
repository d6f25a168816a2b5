/*
 * sim.h - internal data of the software LBR simulator (`record --simulate`).
 *
 * Method (exact, faster than single-stepping): every control-transfer
 * instruction (CTI) that execution can reach gets an int3; straight-line
 * code between CTIs runs natively. At each int3 the tracer *emulates* the
 * CTI (condition from EFLAGS, target from registers/memory, push/pop of the
 * return address) and resumes the thread at the outcome, so nothing is
 * ever stepped over and other threads never see a missing breakpoint.
 * Syscalls stop the thread too (PTRACE_SYSCALL), which bounds straight-line
 * runs at syscalls and catches sigreturn, mmap and exec.
 */
#ifndef LBR2PROF_SIM_H
#define LBR2PROF_SIM_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/user.h>
#include <uthash.h>

#include "lbr2prof/outfile.h"
#include "lbr2prof/perfwrite.h"
#include "lbr2prof/record.h"
#include "insn/insn.h"

/* What a CTI does, decided once per static instruction (from the shared
 * classifier's lp_flow, insn/insn.h). */
typedef enum cti_kind {
    CTI_NONE = 0,  /* not a CTI (never patched) */
    CTI_JCC,       /* conditional direct jump (incl. jrcxz, loop*) */
    CTI_JMP,       /* direct jump */
    CTI_JMP_IND,   /* jmp reg/mem */
    CTI_CALL,      /* direct call */
    CTI_CALL_IND,  /* call reg/mem */
    CTI_RET,       /* ret / ret imm16 */
    CTI_STEP,      /* far transfer, iret, xbegin: single-step it; where it
                      lands, if not next, is a taken branch */
    CTI_UNKNOWN,   /* not decodable (length unknown): single-step it; never
                      a branch, since every branch encoding is a legacy one
                      the decoder knows */
} cti_kind;

/* --intel-pt (ptenc.c): the PMU type, config and its bits written in the
 * attr and AUXTRACE_INFO: pt, tsc, noretcomp, branch enable. */
#define SIM_PT_PMU_TYPE 8u
#define SIM_PT_TSC_BIT (1ull << 10)
#define SIM_PT_NORETCOMP_BIT (1ull << 11)
#define SIM_PT_CONFIG (1ull | SIM_PT_TSC_BIT | SIM_PT_NORETCOMP_BIT | (1ull << 13))
typedef struct sim_pt_thread sim_pt_thread;
/* The clock starts here with --intel-pt: perf takes a zero TSC for none. */
#define SIM_PT_TIME_BASE 1000000ull

/* One decoded static CTI; the key is its address. */
typedef struct cti {
    uint64_t addr;
    uint64_t target;     /* direct target */
    lp_x86_desc d;       /* the decoder's description: condition, count
                            width, operand of an indirect CTI, ret imm16 */
    uint8_t len;
    uint8_t kind;        /* cti_kind */
    uint8_t orig;        /* original first byte (patched to 0xcc) */
    uint8_t patched;
    UT_hash_handle hh;
} cti;

/* A straight-line run: from `start` through `ninsn` instructions to the
 * CTI at `end` (included). Keyed by `start`. */
typedef struct block {
    uint64_t start, end;
    uint32_t ninsn;
    uint64_t *insn_addr;    /* ninsn addresses (for truth counts) */
    uint64_t exec_count;    /* times run to its end */
    UT_hash_handle hh;
} block;

/* Counted (from, to) pair (truth). */
typedef struct edge {
    struct { uint64_t from, to; } key;
    uint64_t count;
    UT_hash_handle hh;
} edge;

/* Executions of one instruction (truth), filled from blocks at the end
 * and from partial runs (syscalls, signals) as they happen. */
typedef struct icount {
    uint64_t addr, count;
    UT_hash_handle hh;
} icount;

/* The true call stacks (--truth): a persistent tree of (parent, return
 * address) nodes, hash-consed, shared by all threads (stack.c). Node 0 is
 * the empty stack; parent ids are smaller than their children's. */
typedef struct stack_key {
    uint64_t ret;
    uint32_t parent, zero;  /* zero: no padding bytes in the hash key */
} stack_key;

typedef struct stack_node {
    stack_key key;
    uint32_t id;
    UT_hash_handle hh;
} stack_node;

typedef struct stack_store {
    stack_node *by_key;     /* uthash: (parent, ret) -> id */
    stack_node **chunks;    /* the hash entries, never moved */
    size_t nchunks, used;   /* entries used in the last chunk */
    uint32_t *parent;       /* [id] */
    uint64_t *ret;          /* [id] return address */
    uint8_t *marked;        /* [id] referenced by a sample: written out */
    uint32_t n, cap;
} stack_store;

/* A mapping already reported as MMAP2. */
typedef struct seen_map {
    char key[512];          /* "start-end pgoff path" */
    UT_hash_handle hh;
} seen_map;

typedef struct thread_state {
    pid_t tid, pid;
    uint64_t cur;           /* where native execution resumed last */
    int in_syscall;
    long syscall_nr;
    uint64_t syscall_args[3];
    int stepping;           /* a CTI_STEP single-step is in flight */
    uint64_t step_from;
    int into_handler;       /* single-stepping into a signal handler */
    int started;            /* first stop seen */
    int held;               /* stopped new task waiting for its parent's
                               clone/fork/vfork event */
    lp_branch_entry ring[LP_LBR_DEPTH];
    unsigned ring_head, ring_n;
    uint64_t since_sample, next_period;
    /* --truth: the true call stack now (a stack_store node), the stack in
     * force at each ring entry's source, and whether the straight-line run
     * that ended at the entry's source was entered by something other than
     * the previous entry (signal delivery, sigreturn, exec) */
    uint32_t node;
    uint32_t *fr_node;      /* the frames of `node`, outermost first: */
    uint64_t *fr_slot;      /* their node, where their return address is */
    size_t fr_n, fr_cap;
    uint32_t ring_node[LP_LBR_DEPTH];
    uint8_t ring_cut[LP_LBR_DEPTH];
    int pending_cut;
    uint64_t syscall_ip;    /* after the `syscall` of the syscall in flight */
    sim_pt_thread *pt;      /* --intel-pt: the thread's trace encoder */
    UT_hash_handle hh;
} thread_state;

typedef struct sim {
    const lp_record_opts *opts;
    lp_record_stats *st;
    lp_perfwrite *pw;
    lp_zydis *zy;           /* the decoder (AVX-512, AMX: every CPU) */
    pid_t pid;              /* the traced process */
    pid_t stopped_tid;      /* a thread in ptrace-stop (for POKETEXT) */
    cti *ctis;
    block *blocks;
    edge *edges;
    icount *icounts;
    seen_map *maps;
    thread_state *threads;
    stack_store stacks;     /* --truth only */
    uint64_t rng;
    uint64_t time;          /* instructions retired so far (all threads) */
    uint64_t nr_threads_alive;
    FILE *truth;            /* samples section streamed here (tmp file) */
    FILE *truth_maps;       /* mappings section (tmp file) */
    lp_outfile truth_out;   /* the --truth file, opened at the start */
    pid_t scan_pid;         /* process whose maps are being scanned */
    int truth_first;
    uint32_t pt_next_idx;   /* --intel-pt: next AUX mmap index */
    char comm[16];
} sim;

/* decode.c */
int sim_read(pid_t pid, uint64_t addr, void *buf, size_t len);
int sim_write8(pid_t pid, uint64_t addr, uint64_t val);
cti *sim_cti_get(sim *s, uint64_t addr, lp_error *err);
block *sim_block_get(sim *s, uint64_t start, lp_error *err);
int sim_patch(sim *s, cti *c, lp_error *err);
void sim_forget_range(sim *s, uint64_t lo, uint64_t hi);
void sim_forget_all(sim *s);
/* Emulate `c` with registers `r` (rip already rewound): sets r->rip etc.
 * Returns 1 if taken, 0 if not, -1 on error. */
int sim_emulate(pid_t tid, const cti *c, struct user_regs_struct *r,
                lp_error *err);
/* After single-stepping `c` (CTI_STEP, CTI_UNKNOWN) the thread is at
 * `rip`: was that a taken branch? */
int sim_step_taken(const cti *c, uint64_t rip);
int sim_count_partial(sim *s, uint64_t from, uint64_t upto, int inclusive,
                      lp_error *err);

/* maps.c */
int sim_scan_maps(sim *s, pid_t pid, pid_t tid, lp_error *err);
int sim_read_comm(pid_t pid, char out[16]);

/* sample.c */
/* A taken branch of thread `t` by CTI `c` (from c->addr) to `r->rip`;
 * `r` holds the registers after it. May emit a sample. */
int sim_taken(sim *s, thread_state *t, const cti *c,
              const struct user_regs_struct *r, lp_error *err);
uint64_t sim_next_period(sim *s);

/* ptenc.c (--intel-pt): the attr of the recording, the AUXTRACE_INFO
 * record, and the trace of a thread: enabled at `ip` (its first use
 * starts the thread's AUX buffer), a CTI's outcome, disabled (with a FUP
 * at `fup_ip` for an asynchronous exit, 0 for a syscall), and its end
 * (the buffer written out, the encoder freed). */
void sim_pt_attr(lp_attr *a);
int sim_pt_begin(sim *s, lp_error *err);
int sim_pt_enable(sim *s, thread_state *t, uint64_t ip, lp_error *err);
int sim_pt_cti(sim *s, thread_state *t, const cti *c, int taken, uint64_t to,
               lp_error *err);
int sim_pt_disable(sim *s, thread_state *t, uint64_t fup_ip, lp_error *err);
int sim_pt_thread_end(sim *s, thread_state *t, lp_error *err);
void sim_pt_thread_free(thread_state *t);

/* stack.c */
int sim_stack_init(stack_store *st);
void sim_stack_free(stack_store *st);
/* The node for `ret` pushed on `parent` (existing or new); -1 on OOM. */
int64_t sim_stack_push(stack_store *st, uint32_t parent, uint64_t ret);
/* A thread's true stack: a call (or signal delivery) pushes return
 * address `ret`, stored at `slot`; a return to `to` pops through the
 * innermost frame with that return address (none: nothing); unwinding to
 * stack pointer `sp` drops the innermost frames whose return address slot
 * is below it (longjmp, exceptions: their stack was freed). -1 on OOM. */
int sim_frames_push(stack_store *st, thread_state *t, uint64_t ret,
                    uint64_t slot);
void sim_frames_return(const stack_store *st, thread_state *t, uint64_t to);
void sim_frames_unwind(thread_state *t, uint64_t sp);
void sim_frames_reset(thread_state *t);
/* Mark `node` and its ancestors for the truth file's node table. */
void sim_stack_mark(stack_store *st, uint32_t node);

/* truth.c */
int sim_truth_begin(sim *s, lp_error *err);
int sim_truth_sample(sim *s, const thread_state *t, uint64_t ip,
                     const lp_sample *smp);
int sim_truth_finish(sim *s, lp_error *err);
void sim_truth_abort(sim *s);
void sim_truth_map(sim *s, const char *key);
void sim_count_block(sim *s, block *b);

#endif
