/*
 * sample.c - what the simulated PMU does at each taken branch: the LBR
 * ring (last LP_LBR_DEPTH user branches), the true return-address stack,
 * the period counter with deterministic jitter, and the SAMPLE record:
 * IP, TID, TIME, PERIOD, the frame-pointer CALLCHAIN walked exactly like
 * the x86 kernel's perf_callchain_user(), the BRANCH_STACK and optionally
 * user registers + stack. Does not run the tracee (tracer.c).
 */
#include <stdlib.h>
#include <string.h>

#include "simulate/sim.h"

/* x86 TASK_SIZE_MAX with 4-level paging: the kernel's __access_ok bound. */
#define USER_TOP 0x7ffffffff000ull

/* ---- period ------------------------------------------------------------ */

uint64_t sim_next_period(sim *s)
{
    uint64_t p = s->opts->period ? s->opts->period : 1, j = p / 8, x;

    if (!s->opts->seed || !j)
        return p;
    x = s->rng; /* xorshift64 */
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s->rng = x;
    return p - j + x % (2 * j + 1);
}

/* ---- true call stack ---------------------------------------------------- */

/* The stack effect of a taken CTI on the thread's true stack (--truth):
 * a call pushes its return address, a return pops through the matching
 * frame; a jmp (tail call included) leaves it as it is, as on the
 * machine; then frames whose return address slot is now below the stack
 * pointer are gone (longjmp, `pop; jmp *reg` returns, unwinding). */
static int true_stack_step(sim *s, thread_state *t, const cti *c,
                           const struct user_regs_struct *r)
{
    if (c->kind == CTI_CALL || c->kind == CTI_CALL_IND) {
        if (sim_frames_push(&s->stacks, t, c->addr + c->len, r->rsp))
            return -1;
    } else if (c->kind == CTI_RET) {
        sim_frames_return(&s->stacks, t, r->rip);
    }
    sim_frames_unwind(t, r->rsp);
    return 0;
}

/* ---- callchain --------------------------------------------------------- */

/* perf_callchain_user() of arch/x86/events/core.c: the sampled IP, then
 * return addresses along the rbp chain until a frame is out of the user
 * range or unreadable, at most LP_MAX_STACK entries counting the
 * PERF_CONTEXT_USER marker. */
static size_t fp_walk(pid_t tid, const struct user_regs_struct *r,
                      uint64_t *chain)
{
    size_t n = 0;
    uint64_t fp = r->rbp, frame[2];

    chain[n++] = LP_CONTEXT_USER;
    chain[n++] = r->rip;
    while (n < LP_MAX_STACK) {
        if (fp > USER_TOP - sizeof frame)
            break;
        if (sim_read(tid, fp, frame, sizeof frame) != (int)sizeof frame)
            break;
        chain[n++] = frame[1];
        fp = frame[0];
    }
    return n;
}

/* ---- sample -------------------------------------------------------------- */

static void fill_regs(const struct user_regs_struct *r, uint64_t *v)
{
    uint64_t all[] = {r->rax, r->rbx, r->rcx, r->rdx, r->rsi, r->rdi,
                      r->rbp, r->rsp, r->rip, r->eflags, r->cs, r->ss,
                      r->r8, r->r9, r->r10, r->r11, r->r12, r->r13, r->r14,
                      r->r15};
    memcpy(v, all, sizeof all);
}

static void dump_sample(FILE *f, const lp_sample *smp)
{
    uint64_t i;
    int first = 1;

    fprintf(f, "tid=%u chain=", smp->tid);
    for (i = 0; i < smp->callchain_nr; i++) {
        if (smp->callchain[i] >= LP_CONTEXT_MAX)
            continue;
        fprintf(f, "%s%llx", first ? "" : ",",
                (unsigned long long)smp->callchain[i]);
        first = 0;
    }
    fprintf(f, " br=");
    for (i = 0; i < smp->branch_nr; i++)
        fprintf(f, "%s%llx/%llx", i ? "," : "",
                (unsigned long long)smp->branches[i].from,
                (unsigned long long)smp->branches[i].to);
    fputc('\n', f);
}

static int emit_sample(sim *s, thread_state *t,
                       const struct user_regs_struct *r, lp_error *err)
{
    uint64_t chain[LP_MAX_STACK + 1], regs[20];
    lp_branch_entry br[LP_LBR_DEPTH];
    uint8_t *stack = NULL;
    lp_sample smp;
    unsigned i;
    int rc, n;

    memset(&smp, 0, sizeof smp);
    smp.ip = r->rip;
    smp.pid = (uint32_t)t->pid;
    smp.tid = (uint32_t)t->tid;
    smp.time = s->time;
    smp.period = t->since_sample;
    smp.callchain_nr = s->opts->no_user_callchain ? 0 : fp_walk(t->tid, r, chain);
    smp.callchain = chain;
    for (i = 0; i < t->ring_n; i++) /* most recent first */
        br[i] = t->ring[(t->ring_head + LP_LBR_DEPTH - 1 - i) % LP_LBR_DEPTH];
    smp.branch_nr = t->ring_n;
    smp.branches = br;
    if (s->opts->user_stack) {
        fill_regs(r, regs);
        smp.regs_user_abi = LP_REGS_ABI_64;
        smp.regs_user_mask = LP_X86_REGS_USER_MASK;
        smp.regs_user = regs;
        smp.stack_user_size = s->opts->user_stack;
        if (!(stack = calloc(1, s->opts->user_stack)))
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        n = sim_read(t->tid, r->rsp, stack, s->opts->user_stack);
        smp.stack_user_dyn_size = (uint64_t)(n > 0 ? n : 0);
        smp.stack_user = stack;
    }
    rc = lp_perfwrite_sample(s->pw, &smp, LP_CPUMODE_USER, err);
    if (rc == 0 && s->opts->debug_dump)
        dump_sample(s->opts->debug_dump, &smp);
    if (rc == 0 && s->truth && sim_truth_sample(s, t, r->rip, &smp))
        rc = lp_error_set(err, LP_EIO, "%s: write failed", s->opts->truth_path);
    free(stack);
    s->st->samples++;
    return rc;
}

int sim_taken(sim *s, thread_state *t, const cti *c,
              const struct user_regs_struct *r, lp_error *err)
{
    lp_branch_entry *e = &t->ring[t->ring_head];

    e->from = c->addr;
    e->to = r->rip;
    e->flags = 0;
    t->ring_node[t->ring_head] = t->node;
    t->ring_cut[t->ring_head] = (uint8_t)t->pending_cut;
    t->pending_cut = 0;
    t->ring_head = (t->ring_head + 1) % LP_LBR_DEPTH;
    if (t->ring_n < LP_LBR_DEPTH)
        t->ring_n++;
    s->st->taken_branches++;
    if (s->truth) {
        edge *ed;
        if (true_stack_step(s, t, c, r))
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        struct { uint64_t from, to; } key = {c->addr, r->rip};
        HASH_FIND(hh, s->edges, &key, sizeof key, ed);
        if (!ed) {
            if (!(ed = calloc(1, sizeof *ed)))
                return lp_error_set(err, LP_ENOMEM, "out of memory");
            ed->key.from = key.from;
            ed->key.to = key.to;
            HASH_ADD(hh, s->edges, key, sizeof ed->key, ed);
        }
        ed->count++;
    }
    if (s->opts->intel_pt) /* the branch goes into the trace, not samples */
        return 0;
    if (++t->since_sample < t->next_period)
        return 0;
    if (emit_sample(s, t, r, err))
        return -1;
    t->since_sample = 0;
    t->next_period = sim_next_period(s);
    return 0;
}
