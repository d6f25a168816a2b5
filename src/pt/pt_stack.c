/*
 * pt_stack.c - the per-thread state the Intel PT synthesizer keeps from
 * one branch to the next, as perf 6.1's thread-stack.c keeps it for
 * intel-pt.c (read, not copied): the call stack made from calls and
 * returns (`--itrace=g`: the callchains of instruction samples) and the
 * ring of the last branches (`l`: their branch stacks). One per thread;
 * the idle task (pid = tid = 0) has one per CPU. Owns those structures
 * and perf's rules on them (what a call pushes, what a return pops, a
 * trace that begins again, a discontinuous trace flushing both, the
 * callchain's context markers); not the decoding (pt_walk.c) nor which
 * state is a sample (pt_synth.c).
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "pt/pt_internal.h"

#define KERNEL_START (1ull << 63)

typedef struct ts_key {
    int32_t tid, cpu;           /* cpu: only for the idle task, else 0 */
} ts_key;

typedef struct ts_entry {
    uint64_t ret_addr;
    bool trace_end;             /* a call made as the trace ended */
} ts_entry;

struct pt_tstack {
    ts_key key;
    int trace_nr;
    ts_entry *stack;            /* calls in progress, outermost first */
    size_t cnt, cap;
    lp_branch_entry *br;        /* ring of the last branches */
    unsigned br_pos, br_nr;
    UT_hash_handle hh;
};

struct pt_stacks {
    unsigned br_sz;             /* ring size (0: no `l`) */
    bool callstack;             /* keep call stacks (`g`) */
    pt_tstack *all;
};

pt_stacks *pt_stacks_new(unsigned br_sz, bool callstack)
{
    pt_stacks *s = calloc(1, sizeof *s);

    if (s) {
        s->br_sz = br_sz;
        s->callstack = callstack;
    }
    return s;
}

void pt_stacks_free(pt_stacks *s)
{
    pt_tstack *t, *tmp;

    if (!s)
        return;
    HASH_ITER(hh, s->all, t, tmp) {
        HASH_DEL(s->all, t);
        free(t->stack);
        free(t->br);
        free(t);
    }
    free(s);
}

/* thread__stack: the idle task's stack is its CPU's (CPU -1 is 0's). */
static ts_key key_of(int32_t pid, int32_t tid, int32_t cpu)
{
    ts_key k;

    memset(&k, 0, sizeof k);
    k.tid = tid;
    if (tid == 0 && pid == 0 && cpu > 0)
        k.cpu = cpu;
    return k;
}

pt_tstack *pt_stacks_find(pt_stacks *s, int32_t pid, int32_t tid, int32_t cpu)
{
    ts_key k = key_of(pid, tid, cpu);
    pt_tstack *t;

    HASH_FIND(hh, s->all, &k, sizeof k, t);
    return t;
}

static pt_tstack *stacks_add(pt_stacks *s, int32_t pid, int32_t tid,
                             int32_t cpu, int trace_nr)
{
    pt_tstack *t = calloc(1, sizeof *t);

    if (!t)
        return NULL;
    if (s->br_sz && !(t->br = calloc(s->br_sz, sizeof *t->br))) {
        free(t);
        return NULL;
    }
    t->key = key_of(pid, tid, cpu);
    t->trace_nr = trace_nr;
    HASH_ADD(hh, s->all, key, sizeof t->key, t);
    return t;
}

/* __thread_stack__flush without a call/return processor. */
static void flush(pt_tstack *t)
{
    t->cnt = 0;
    t->br_pos = t->br_nr = 0;
}

static void br_add(const pt_stacks *s, pt_tstack *t, uint32_t flags,
                   uint64_t from, uint64_t to)
{
    lp_branch_entry *e;

    if (!t->br_pos)
        t->br_pos = s->br_sz;
    t->br_pos--;
    e = &t->br[t->br_pos];
    e->from = from;
    e->to = to;
    e->flags = ((flags & PT_IPF_IN_TX) ? 1u << 2 : 0) |
               ((flags & PT_IPF_TX_ABORT) ? 1u << 3 : 0);
    if (t->br_nr < s->br_sz)
        t->br_nr++;
}

static int push(pt_tstack *t, uint64_t ret_addr, bool trace_end)
{
    if (t->cnt == t->cap) {
        size_t cap = t->cap + 2048; /* perf's STACK_GROWTH */
        ts_entry *n = realloc(t->stack, cap * sizeof *n);
        if (!n) {
            t->cnt = 0; /* perf: "discarding thread stack" */
            return -1;
        }
        t->stack = n;
        t->cap = cap;
    }
    t->stack[t->cnt].ret_addr = ret_addr;
    t->stack[t->cnt++].trace_end = trace_end;
    return 0;
}

/* A return to ret_addr pops through the innermost call that returns
 * there (setjmp/longjmp, a context switch in the kernel); one to no call
 * of the stack was a call not seen, and changes nothing. */
static void pop(pt_tstack *t, uint64_t ret_addr)
{
    for (size_t i = t->cnt; i;)
        if (t->stack[--i].ret_addr == ret_addr) {
            t->cnt = i;
            return;
        }
}

/* Calls made as the trace ended are not expected to return. */
static void pop_trace_end(pt_tstack *t)
{
    while (t->cnt && t->stack[t->cnt - 1].trace_end)
        t->cnt--;
}

int pt_stack_event(pt_stacks *s, int32_t pid, int32_t tid, int32_t cpu,
                   const pt_branch *b)
{
    pt_tstack *t = pt_stacks_find(s, pid, tid, cpu);

    if (!t && !(t = stacks_add(s, pid, tid, cpu, b->trace_nr)))
        return -1;
    if (b->trace_nr != t->trace_nr) { /* a discontinuous trace */
        if (t->trace_nr)
            flush(t);
        t->trace_nr = b->trace_nr;
    }
    if (s->br_sz)
        br_add(s, t, b->flags, b->from, b->to);
    if (!s->callstack)
        return 0;
    if (b->flags & PT_IPF_CALL) {
        uint64_t ret_addr = b->from + b->insn_len;
        if (!b->to || ret_addr == b->to) /* zero-length calls excluded */
            return 0;
        return push(t, ret_addr, b->flags & PT_IPF_TRACE_END);
    }
    if (b->flags & PT_IPF_TRACE_BEGIN) {
        /* tracing may have begun after returning here */
        pop(t, b->to);
        pop_trace_end(t);
    } else if ((b->flags & PT_IPF_RETURN) && b->from) {
        pop(t, b->to);
    }
    return 0;
}

size_t pt_stack_branches(const pt_stacks *s, const pt_tstack *t,
                         lp_branch_entry *dst)
{
    unsigned sz = s->br_sz, n, first;

    if (!t || !t->br_nr)
        return 0;
    n = t->br_nr < sz ? t->br_nr : sz;
    first = sz - t->br_pos < n ? sz - t->br_pos : n;
    memcpy(dst, &t->br[t->br_pos], first * sizeof *dst);
    if (t->br_nr >= sz)
        memcpy(dst + first, &t->br[0], (n - first) * sizeof *dst);
    return n;
}

static uint64_t context_of(uint64_t ip)
{
    return ip < KERNEL_START ? LP_CONTEXT_USER : LP_CONTEXT_KERNEL;
}

size_t pt_stack_callchain(const pt_tstack *t, uint64_t ip, uint64_t *chain,
                          size_t sz)
{
    uint64_t last, ctx;
    size_t i, j;

    if (sz < 2)
        return 0;
    chain[0] = last = context_of(ip);
    chain[1] = ip;
    if (!t)
        return 2;
    for (i = 2, j = 1; i < sz && j <= t->cnt; i++, j++) {
        ip = t->stack[t->cnt - j].ret_addr;
        ctx = context_of(ip);
        if (ctx != last) { /* a context marker needs a slot of its own */
            if (i >= sz - 1)
                break;
            chain[i++] = last = ctx;
        }
        chain[i] = ip;
    }
    return i;
}

uint32_t pt_branch_flags(const pt_state *st, unsigned *insn_len)
{
    static const uint32_t by_op[] = {
        [OP_OTHER] = 0,
        [OP_CALL] = PT_IPF_BRANCH | PT_IPF_CALL,
        [OP_RET] = PT_IPF_BRANCH | PT_IPF_RETURN,
        [OP_JCC] = PT_IPF_BRANCH | PT_IPF_CONDITIONAL,
        [OP_JMP] = PT_IPF_BRANCH,
        [OP_LOOP] = PT_IPF_BRANCH | PT_IPF_CONDITIONAL,
        [OP_IRET] = PT_IPF_BRANCH | PT_IPF_RETURN | PT_IPF_INTERRUPT,
        [OP_INT] = PT_IPF_BRANCH | PT_IPF_CALL | PT_IPF_INTERRUPT,
        [OP_SYSCALL] = PT_IPF_BRANCH | PT_IPF_CALL | PT_IPF_SYSCALLRET,
        [OP_SYSRET] = PT_IPF_BRANCH | PT_IPF_RETURN | PT_IPF_SYSCALLRET,
    };
    uint32_t f;

    *insn_len = 0;
    if (st->flags & SF_ABORT_TX) {
        f = PT_IPF_BRANCH | PT_IPF_TX_ABORT;
    } else if (st->flags & SF_ASYNC) {
        f = PT_IPF_BRANCH | PT_IPF_ASYNC;
        f |= st->to_ip ? PT_IPF_CALL | PT_IPF_INTERRUPT : PT_IPF_TRACE_END;
    } else {
        f = !st->from_ip ? PT_IPF_BRANCH | PT_IPF_TRACE_BEGIN
            : st->insn_op < sizeof by_op / sizeof *by_op ? by_op[st->insn_op]
                                                          : 0;
        if (st->flags & SF_IN_TX)
            f |= PT_IPF_IN_TX;
        *insn_len = st->insn_len;
    }
    if (st->type & ST_TRACE_BEGIN)
        f |= PT_IPF_TRACE_BEGIN;
    if (st->type & ST_TRACE_END)
        f |= PT_IPF_TRACE_END;
    return f;
}
