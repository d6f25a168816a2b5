/*
 * tracer.c - `record --simulate`: runs the command under ptrace and drives
 * the breakpoint/emulation scheme described in sim.h for every thread:
 * stops at CTIs (emulated), syscalls (maps, exec, sigreturn), signals
 * (delivered with a single step into the handler), clone (threads are
 * followed), fork/vfork (children run untraced). Owns the process
 * lifecycle; the decoding is decode.c, the samples sample.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "simulate/sim.h"

#define PTRACE_OPTS                                                         \
    (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |     \
     PTRACE_O_TRACEVFORK | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL)

/* ---- threads ------------------------------------------------------------ */

static thread_state *thread_get(sim *s, pid_t tid)
{
    thread_state *t;

    HASH_FIND(hh, s->threads, &tid, sizeof tid, t);
    return t;
}

static thread_state *thread_new(sim *s, pid_t tid, pid_t pid, lp_error *err)
{
    thread_state *t = calloc(1, sizeof *t);

    if (!t) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    t->tid = tid;
    t->pid = pid;
    t->next_period = sim_next_period(s);
    HASH_ADD(hh, s->threads, tid, sizeof t->tid, t);
    s->st->threads++;
    return t;
}

static void thread_free(sim *s, thread_state *t)
{
    HASH_DEL(s->threads, t);
    sim_pt_thread_free(t);
    free(t->fr_node);
    free(t->fr_slot);
    free(t);
}

/* ---- resuming ------------------------------------------------------------ */

/* Resume `t` natively at `ip` (its current rip): make sure the CTI that
 * ends the straight-line run from `ip` carries a breakpoint first. */
static int run_from(sim *s, thread_state *t, uint64_t ip, int sig,
                    lp_error *err)
{
    t->cur = ip;
    if (!sim_block_get(s, ip, err))
        return -1;
    if (ptrace(PTRACE_SYSCALL, t->tid, NULL, (void *)(intptr_t)sig) != 0 &&
        errno != ESRCH)
        return lp_error_set(err, LP_EIO, "simulate: ptrace(SYSCALL, %d): %s",
                            (int)t->tid, strerror(errno));
    return 0;
}

static int get_regs(pid_t tid, struct user_regs_struct *r)
{
    return ptrace(PTRACE_GETREGS, tid, NULL, r);
}

/* ---- records ------------------------------------------------------------- */

static int emit_comm(sim *s, pid_t pid, pid_t tid, int exec, lp_error *err)
{
    lp_comm_event c;

    if (sim_read_comm(pid, s->comm))
        return 0;
    memset(&c, 0, sizeof c);
    c.pid = (uint32_t)pid;
    c.tid = (uint32_t)tid;
    c.exec = exec;
    c.comm = s->comm;
    return lp_perfwrite_comm(s->pw, &c, s->time, err);
}

static int emit_task(sim *s, int fork, pid_t pid, pid_t ppid, pid_t tid,
                     pid_t ptid, lp_error *err)
{
    lp_task_event e = {(uint32_t)pid, (uint32_t)ppid, (uint32_t)tid,
                       (uint32_t)ptid, s->time};

    return fork ? lp_perfwrite_fork(s->pw, &e, err)
                : lp_perfwrite_exit(s->pw, &e, err);
}

/* --simulate decodes x86-64 only: refuse a 32-bit (or foreign) program. */
static int check_x86_64(pid_t pid, lp_error *err)
{
    char fn[64];
    unsigned char id[20];
    int fd, n;

    snprintf(fn, sizeof fn, "/proc/%d/exe", (int)pid);
    if ((fd = open(fn, O_RDONLY | O_CLOEXEC)) < 0)
        return 0; /* cannot tell: go on */
    n = (int)read(fd, id, sizeof id);
    close(fd);
    if (n == (int)sizeof id && (id[4] != 2 /* ELFCLASS64 */ ||
                                (id[18] | id[19] << 8) != 62 /* EM_X86_64 */))
        return lp_error_set(err, LP_EUNSUPP, "--simulate supports x86-64 "
                            "programs only; %s is %s", fn,
                            id[4] == 1 ? "32-bit" : "for another machine");
    return 0;
}

/* ---- stop handlers ------------------------------------------------------- */

/* A breakpoint at CTI `c` (rip rewound in `r`). */
static int on_cti(sim *s, thread_state *t, cti *c, struct user_regs_struct *r,
                  lp_error *err)
{
    block *b = sim_block_get(s, t->cur, err);
    int taken;

    if (!b)
        return -1;
    if (b->end == c->addr) {
        b->exec_count++;
        s->time += b->ninsn;
    } else if (sim_count_partial(s, t->cur, c->addr, 1, err)) {
        return -1;
    }
    if (c->kind == CTI_STEP || c->kind == CTI_UNKNOWN) {
        /* un-patch, step once, re-patch */
        uint8_t orig = c->orig;
        uint64_t a = c->addr & ~7ull, word;
        errno = 0;
        word = (uint64_t)ptrace(PTRACE_PEEKTEXT, t->tid, (void *)(uintptr_t)a, NULL);
        ((uint8_t *)&word)[c->addr - a] = orig;
        if (errno || ptrace(PTRACE_POKETEXT, t->tid, (void *)(uintptr_t)a,
                            (void *)(uintptr_t)word) ||
            ptrace(PTRACE_SETREGS, t->tid, NULL, r) ||
            ptrace(PTRACE_SINGLESTEP, t->tid, NULL, NULL))
            return lp_error_set(err, LP_EIO, "simulate: cannot step over "
                                "0x%llx: %s", (unsigned long long)c->addr,
                                strerror(errno));
        ((cti *)c)->patched = 0;
        t->stepping = 1;
        t->step_from = c->addr;
        return 0;
    }
    taken = sim_emulate(t->tid, c, r, err);
    if (taken < 0)
        return -1;
    if (ptrace(PTRACE_SETREGS, t->tid, NULL, r))
        return lp_error_set(err, LP_EIO, "simulate: ptrace(SETREGS): %s",
                            strerror(errno));
    if (taken && sim_taken(s, t, c, r, err))
        return -1;
    if (s->opts->intel_pt && sim_pt_cti(s, t, c, taken, r->rip, err))
        return -1;
    return run_from(s, t, r->rip, 0, err);
}

/* The single step over a CTI_STEP or CTI_UNKNOWN instruction finished. */
static int on_step_done(sim *s, thread_state *t, struct user_regs_struct *r,
                        lp_error *err)
{
    cti *c = sim_cti_get(s, t->step_from, err);

    t->stepping = 0;
    if (!c || sim_patch(s, c, err))
        return -1;
    if (sim_step_taken(c, r->rip) && sim_taken(s, t, c, r, err))
        return -1;
    if (s->opts->intel_pt &&
        sim_pt_cti(s, t, c, sim_step_taken(c, r->rip), r->rip, err))
        return -1;
    return run_from(s, t, r->rip, 0, err);
}

/* Does [lo, hi) overlap an executable mapping reported so far? Only then
 * can unmapping or replacing it invalidate decoded code. */
static int overlaps_code(sim *s, uint64_t lo, uint64_t hi)
{
    seen_map *m;
    unsigned long long a, b;

    for (m = s->maps; m; m = m->hh.next)
        if (sscanf(m->key, "%llx-%llx", &a, &b) == 2 && lo < b && a < hi)
            return 1;
    return 0;
}

static int on_syscall_exit(sim *s, thread_state *t, int64_t rval,
                           uint64_t rip, lp_error *err)
{
    long nr = t->syscall_nr;
    uint64_t *a = t->syscall_args, lo = 0, hi = 0;
    int ok = rval >= 0 || rval < -4095, scan = 0;

    t->in_syscall = 0;
    if (s->opts->intel_pt && sim_pt_enable(s, t, rip, err))
        return -1;
    if (ok && nr == SYS_munmap) {
        lo = a[0];
        hi = a[0] + a[1];
    } else if (ok && (nr == SYS_mmap || nr == SYS_mremap)) {
        lo = (uint64_t)rval;
        hi = lo + (nr == SYS_mmap ? a[1] : a[2]);
        scan = nr == SYS_mremap || (a[2] & PROT_EXEC);
    } else if (ok && nr == SYS_mprotect) {
        scan = (a[2] & PROT_EXEC) != 0;
    }
    if (hi > lo && overlaps_code(s, lo, hi))
        sim_forget_range(s, lo, hi);
    if (scan && sim_scan_maps(s, t->pid, t->tid, err))
        return -1;
    return run_from(s, t, rip, 0, err);
}

static int on_syscall(sim *s, thread_state *t, lp_error *err)
{
    struct __ptrace_syscall_info si;

    memset(&si, 0, sizeof si);
    if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, (void *)sizeof si, &si) <= 0)
        return lp_error_set(err, LP_EIO, "simulate: PTRACE_GET_SYSCALL_INFO: %s",
                            strerror(errno));
    if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
        t->in_syscall = 1;
        t->syscall_ip = si.instruction_pointer;
        t->syscall_nr = (long)si.entry.nr;
        memcpy(t->syscall_args, si.entry.args, sizeof t->syscall_args);
        if (sim_count_partial(s, t->cur, si.instruction_pointer - 2, 1, err))
            return -1;
        if (s->opts->intel_pt && sim_pt_disable(s, t, 0, err))
            return -1;
        if (ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL) && errno != ESRCH)
            return lp_error_set(err, LP_EIO, "simulate: ptrace: %s",
                                strerror(errno));
        return 0;
    }
    if (si.instruction_pointer != t->syscall_ip)
        t->pending_cut = 1; /* sigreturn, exec: not the next instruction */
    return on_syscall_exit(s, t, si.exit.rval, si.instruction_pointer, err);
}

/* Is `sig` caught by a handler in process `pid`? */
static int sig_caught(pid_t pid, int sig)
{
    char fn[64], line[256];
    unsigned long long mask = 0;
    FILE *f;

    snprintf(fn, sizeof fn, "/proc/%d/status", (int)pid);
    if (!(f = fopen(fn, "re")))
        return 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "SigCgt: %llx", &mask) == 1)
            break;
    fclose(f);
    return sig >= 1 && sig <= 64 && ((mask >> (sig - 1)) & 1);
}

/* Signal-delivery stop: count the cut run, then either step into the
 * handler (to learn where native execution restarts) or just pass it. */
static int on_signal(sim *s, thread_state *t, int sig,
                     const struct user_regs_struct *r, lp_error *err)
{
    if (!sig_caught(t->pid, sig)) {
        if (ptrace(PTRACE_SYSCALL, t->tid, NULL, (void *)(intptr_t)sig) &&
            errno != ESRCH)
            return lp_error_set(err, LP_EIO, "simulate: ptrace: %s",
                                strerror(errno));
        return 0;
    }
    if (sim_count_partial(s, t->cur, r->rip, 0, err))
        return -1;
    if (s->opts->intel_pt && !t->in_syscall &&
        sim_pt_disable(s, t, r->rip, err))
        return -1;
    t->into_handler = 1;
    t->pending_cut = 1;
    if (ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(intptr_t)sig) &&
        errno != ESRCH)
        return lp_error_set(err, LP_EIO, "simulate: ptrace: %s", strerror(errno));
    return 0;
}

/* At a signal handler's first instruction the kernel has pushed the
 * return address of its frame (sa_restorer, in libc): for the true stack
 * the handler is called from there, as a frame-pointer walk sees it. */
static int enter_handler(sim *s, thread_state *t,
                         const struct user_regs_struct *r, lp_error *err)
{
    uint64_t ret;

    if (sim_read(t->tid, r->rsp, &ret, sizeof ret) != (int)sizeof ret)
        return 0; /* unreadable: the stack stays as it was */
    if (sim_frames_push(&s->stacks, t, ret, r->rsp))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

static int on_trap(sim *s, thread_state *t, lp_error *err)
{
    struct user_regs_struct r;
    cti *c;
    uint64_t a;

    if (get_regs(t->tid, &r))
        return errno == ESRCH ? 0 : lp_error_set(err, LP_EIO,
                                   "simulate: GETREGS: %s", strerror(errno));
    if (t->stepping)
        return on_step_done(s, t, &r, err);
    if (t->into_handler) {
        t->into_handler = 0;
        if (s->truth && enter_handler(s, t, &r, err))
            return -1;
        if (s->opts->intel_pt && sim_pt_enable(s, t, r.rip, err))
            return -1;
        return run_from(s, t, r.rip, 0, err);
    }
    a = r.rip - 1;
    HASH_FIND(hh, s->ctis, &a, sizeof a, c);
    if (c && c->patched) {
        r.rip = a;
        return on_cti(s, t, c, &r, err);
    }
    return on_signal(s, t, SIGTRAP, &r, err); /* the program's own int3 */
}

/* A fork child runs untraced: it got its own copy of our breakpoints,
 * which are put back to the original bytes before it is detached. */
static void release_child(sim *s, pid_t child)
{
    thread_state *held = thread_get(s, child);
    int status;
    cti *c, *ct;

    if (held) { /* its first stop came before this event */
        thread_free(s, held);
        s->st->threads--;
    }
    else if (waitpid(child, &status, __WALL) < 0 || !WIFSTOPPED(status))
        return;
    HASH_ITER(hh, s->ctis, c, ct) {
        uint64_t a = c->addr & ~7ull, w;
        if (!c->patched)
            continue;
        errno = 0;
        w = (uint64_t)ptrace(PTRACE_PEEKTEXT, child, (void *)(uintptr_t)a, NULL);
        if (errno)
            continue;
        ((uint8_t *)&w)[c->addr - a] = c->orig;
        ptrace(PTRACE_POKETEXT, child, (void *)(uintptr_t)a, (void *)(uintptr_t)w);
    }
    ptrace(PTRACE_DETACH, child, NULL, NULL);
}

/* Start a held new task now that its parent's event has been seen. */
static int release_held(sim *s, thread_state *n, lp_error *err)
{
    struct user_regs_struct r;

    n->held = 0;
    if (get_regs(n->tid, &r))
        return 0;
    s->stopped_tid = n->tid;
    if (s->opts->intel_pt && sim_pt_enable(s, n, r.rip, err))
        return -1;
    return run_from(s, n, r.rip, 0, err);
}

static int on_clone(sim *s, thread_state *t, pid_t ntid, lp_error *err)
{
    thread_state *n = thread_get(s, ntid);

    if (!n && !(n = thread_new(s, ntid, t->pid, err)))
        return -1;
    if (emit_task(s, 1, t->pid, t->pid, ntid, t->tid, err))
        return -1;
    return n->held ? release_held(s, n, err) : 0;
}

/* A vfork child shares our memory and its breakpoints: it is traced like
 * a thread of its own process until it execs (then detached) or exits. */
static int on_vfork(sim *s, thread_state *t, pid_t child, lp_error *err)
{
    thread_state *n = thread_get(s, child);

    if (!n && !(n = thread_new(s, child, child, err)))
        return -1;
    n->pid = child;
    if (emit_task(s, 1, child, t->pid, child, t->tid, err))
        return -1;
    return n->held ? release_held(s, n, err) : 0;
}

static int on_exec(sim *s, thread_state *t, lp_error *err)
{
    struct user_regs_struct r;
    seen_map *m, *mt;

    if (t->pid != s->pid) { /* a vfork child left our address space */
        if (emit_task(s, 0, t->pid, s->pid, t->tid, t->tid, err))
            return -1;
        ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
        thread_free(s, t);
        return 1;
    }
    sim_forget_all(s);
    sim_frames_reset(t); /* a new program: no frames of the old one */
    t->pending_cut = 1;
    HASH_ITER(hh, s->maps, m, mt) {
        HASH_DEL(s->maps, m);
        free(m);
    }
    if (get_regs(t->tid, &r) == 0)
        t->cur = r.rip;
    if (check_x86_64(t->pid, err) || emit_comm(s, t->pid, t->tid, 1, err) ||
        sim_scan_maps(s, t->pid, t->tid, err))
        return -1;
    return 0;
}

static int on_event(sim *s, thread_state *t, int ev, lp_error *err)
{
    unsigned long msg = 0;
    int rc = 0;

    ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg);
    if (ev == PTRACE_EVENT_CLONE)
        rc = on_clone(s, t, (pid_t)msg, err);
    else if (ev == PTRACE_EVENT_FORK)
        release_child(s, (pid_t)msg);
    else if (ev == PTRACE_EVENT_VFORK)
        rc = on_vfork(s, t, (pid_t)msg, err);
    else if (ev == PTRACE_EVENT_EXEC)
        rc = on_exec(s, t, err);
    if (rc)
        return rc < 0 ? -1 : 0; /* 1: the thread is no longer traced */
    if (ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL) && errno != ESRCH)
        return lp_error_set(err, LP_EIO, "simulate: ptrace: %s", strerror(errno));
    return 0;
}

/* First stop of a new thread (SIGSTOP from clone). */
static int on_thread_start(sim *s, thread_state *t, lp_error *err)
{
    struct user_regs_struct r;

    t->started = 1;
    if (get_regs(t->tid, &r))
        return 0;
    if (s->opts->intel_pt && sim_pt_enable(s, t, r.rip, err))
        return -1;
    return run_from(s, t, r.rip, 0, err);
}

static int on_exit_status(sim *s, thread_state *t, int status, lp_error *err)
{
    if (t->tid == s->pid)
        s->st->exit_status = status;
    if (s->opts->intel_pt && sim_pt_thread_end(s, t, err))
        return -1;
    if (emit_task(s, 0, t->pid, t->pid == s->pid ? t->pid : s->pid, t->tid,
                  t->tid, err))
        return -1;
    thread_free(s, t);
    return 0;
}

/* A stop with another signal: a group-stop (job control; PTRACE_GETSIGINFO
 * fails for those) just resumes, a real signal goes to on_signal(). */
static int on_other_signal(sim *s, thread_state *t, int sig, lp_error *err)
{
    siginfo_t si;
    struct user_regs_struct r;

    if (ptrace(PTRACE_GETSIGINFO, t->tid, NULL, &si) != 0 && errno == EINVAL) {
        if (ptrace(PTRACE_SYSCALL, t->tid, NULL, NULL) && errno != ESRCH)
            return lp_error_set(err, LP_EIO, "simulate: ptrace: %s",
                                strerror(errno));
        return 0;
    }
    if (get_regs(t->tid, &r))
        return 0;
    return on_signal(s, t, sig, &r, err);
}

static int handle_stop(sim *s, pid_t tid, int status, lp_error *err)
{
    thread_state *t = thread_get(s, tid);
    int sig;

    s->stopped_tid = tid;
    if (!t) {
        /* a new task reporting before its parent's event: hold it stopped
         * until the event says whether it is a thread or a process */
        if (!WIFSTOPPED(status))
            return 0;
        if (!(t = thread_new(s, tid, s->pid, err)))
            return -1;
        t->started = 1;
        t->held = 1;
        return 0;
    }
    if (WIFEXITED(status) || WIFSIGNALED(status))
        return on_exit_status(s, t, status, err);
    if (!WIFSTOPPED(status))
        return 0;
    sig = WSTOPSIG(status);
    if (!t->started && sig == SIGSTOP)
        return on_thread_start(s, t, err);
    t->started = 1;
    if (status >> 16)
        return on_event(s, t, status >> 16, err);
    if (sig == (SIGTRAP | 0x80))
        return on_syscall(s, t, err);
    if (sig == SIGTRAP)
        return on_trap(s, t, err);
    return on_other_signal(s, t, sig, err);
}

/* ---- start and main loop ---------------------------------------------- */

/* Fork + PTRACE_TRACEME + exec; returns the pid stopped after exec. */
static pid_t start_child(const lp_record_opts *o, lp_error *err)
{
    int pfd[2], status, child_errno = 0;
    pid_t pid;

    if (pipe2(pfd, O_CLOEXEC))
        return lp_error_set(err, LP_EIO, "pipe: %s", strerror(errno));
    pid = fork();
    if (pid < 0)
        return lp_error_set(err, LP_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL); /* the tracer blocks SIGINT */
        close(pfd[0]);
        ptrace(PTRACE_TRACEME, 0, NULL, NULL);
        execvp(o->argv[0], o->argv);
        child_errno = errno;
        if (write(pfd[1], &child_errno, sizeof child_errno) < 0)
            _exit(127);
        _exit(127);
    }
    close(pfd[1]);
    if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
        if (read(pfd[0], &child_errno, sizeof child_errno) != sizeof child_errno)
            child_errno = 0;
        close(pfd[0]);
        return lp_error_set(err, LP_EUSAGE, "cannot run '%s': %s", o->argv[0],
                            child_errno ? strerror(child_errno)
                                        : "it exited before exec");
    }
    close(pfd[0]);
    if (ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)(uintptr_t)PTRACE_OPTS)) {
        lp_error_set(err, LP_EIO, "ptrace(SETOPTIONS): %s", strerror(errno));
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
    }
    return pid;
}

static void fill_attr(const lp_record_opts *o, lp_perfwrite_opts *po)
{
    lp_attr *a = &po->attr;

    memset(po, 0, sizeof *po);
    po->argc = o->record_argc;
    po->argv = o->record_argv;
    if (o->intel_pt) {
        sim_pt_attr(a);
        po->id = 1;
        po->event_name = "intel_pt//u";
        return;
    }
    a->type = 4; /* PERF_TYPE_RAW */
    a->config = 0x20c4; /* BR_INST_RETIRED.NEAR_TAKEN (Intel) */
    a->sample_period = o->period;
    a->sample_type = LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_TIME |
                     LP_SAMPLE_PERIOD | LP_SAMPLE_CALLCHAIN |
                     LP_SAMPLE_BRANCH_STACK;
    if (o->user_stack) {
        a->sample_type |= LP_SAMPLE_REGS_USER | LP_SAMPLE_STACK_USER;
        a->sample_regs_user = LP_X86_REGS_USER_MASK;
        a->sample_stack_user = o->user_stack;
    }
    a->branch_sample_type = LP_BRANCH_USER | LP_BRANCH_ANY;
    a->flags = LP_ATTR_DISABLED | LP_ATTR_INHERIT | LP_ATTR_EXCLUDE_KERNEL |
               LP_ATTR_EXCLUDE_HV | LP_ATTR_MMAP | LP_ATTR_COMM |
               LP_ATTR_ENABLE_ON_EXEC | LP_ATTR_TASK | LP_ATTR_PRECISE_IP(2) |
               LP_ATTR_SAMPLE_ID_ALL | LP_ATTR_EXCLUDE_CALLCHAIN_KERNEL |
               LP_ATTR_MMAP2 | LP_ATTR_COMM_EXEC | LP_ATTR_BUILD_ID;
    po->event_name = "br_inst_retired.near_taken:u";
}

static int trace_loop(sim *s, lp_error *err)
{
    int status;
    pid_t tid;
    uint64_t last_round = 0;

    while (s->threads) {
        tid = waitpid(-1, &status, __WALL);
        if (tid < 0) {
            if (errno == EINTR)
                continue;
            break; /* ECHILD: everything is gone */
        }
        if (handle_stop(s, tid, status, err))
            return -1;
        if (s->st->samples >= last_round + 1000) {
            last_round = s->st->samples;
            if (lp_perfwrite_finished_round(s->pw, err))
                return -1;
        }
    }
    return lp_perfwrite_finished_round(s->pw, err);
}

static void sim_free(sim *s)
{
    cti *c, *ct;
    block *b, *bt;
    edge *e, *et;
    icount *i, *it;
    seen_map *m, *mt;
    thread_state *t, *tt;

    HASH_ITER(hh, s->ctis, c, ct) { HASH_DEL(s->ctis, c); free(c); }
    HASH_ITER(hh, s->blocks, b, bt) {
        HASH_DEL(s->blocks, b); free(b->insn_addr); free(b);
    }
    HASH_ITER(hh, s->edges, e, et) { HASH_DEL(s->edges, e); free(e); }
    HASH_ITER(hh, s->icounts, i, it) { HASH_DEL(s->icounts, i); free(i); }
    HASH_ITER(hh, s->maps, m, mt) { HASH_DEL(s->maps, m); free(m); }
    HASH_ITER(hh, s->threads, t, tt) thread_free(s, t);
    if (s->truth)
        fclose(s->truth);
    if (s->truth_maps)
        fclose(s->truth_maps);
    sim_stack_free(&s->stacks);
    lp_zydis_close(s->zy);
}

static int setup(sim *s, const lp_record_opts *o, lp_error *err)
{
    lp_perfwrite_opts po;
    struct user_regs_struct r;
    thread_state *t;

    if (!(s->zy = lp_zydis_open(err)))
        return -1;
    fill_attr(o, &po);
    if (!(s->pw = lp_perfwrite_open(o->output, &po, err)))
        return -1;
    if (o->intel_pt) {
        s->time = SIM_PT_TIME_BASE;
        if (sim_pt_begin(s, err))
            return -1;
    }
    if (sim_truth_begin(s, err))
        return -1;
    if ((s->pid = start_child(o, err)) < 0) {
        s->pid = 0;
        return -1;
    }
    if (check_x86_64(s->pid, err) || !(t = thread_new(s, s->pid, s->pid, err)))
        return -1;
    t->started = 1;
    s->stopped_tid = s->pid;
    if (get_regs(s->pid, &r))
        return lp_error_set(err, LP_EIO, "ptrace(GETREGS): %s", strerror(errno));
    if (emit_comm(s, s->pid, s->pid, 1, err) ||
        sim_scan_maps(s, s->pid, s->pid, err))
        return -1;
    if (o->intel_pt && sim_pt_enable(s, t, r.rip, err))
        return -1;
    return run_from(s, t, r.rip, 0, err);
}

/* Tracer and tracee on one CPU: a ptrace stop then costs a context switch
 * instead of a cross-CPU wake-up (about 3x faster in VMs). */
static void pin_to_one_cpu(cpu_set_t *saved)
{
    cpu_set_t one;
    int cpu = sched_getcpu();

    CPU_ZERO(saved);
    if (cpu < 0 || sched_getaffinity(0, sizeof *saved, saved))
        return;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
}

int lp_simulate_record(const lp_record_opts *o, lp_record_stats *st,
                       lp_error *err)
{
    sim s;
    struct timespec t0, t1;
    cpu_set_t saved;
    sigset_t intset, oldmask;
    int rc;

    memset(&s, 0, sizeof s);
    memset(st, 0, sizeof *st);
    s.opts = o;
    s.st = st;
    s.rng = o->seed * 0x9e3779b97f4a7c15ull + 1;
    if (!o->argv || !o->argv[0])
        return lp_error_set(err, LP_EUSAGE, "--simulate needs a command to run");
    if (o->period == 0)
        return lp_error_set(err, LP_EUSAGE, "--simulate needs a period > 0");
    pin_to_one_cpu(&saved);
    /* Ctrl-C reaches the traced command (same process group); the tracer
     * keeps going and completes the file */
    sigemptyset(&intset);
    sigaddset(&intset, SIGINT);
    sigprocmask(SIG_BLOCK, &intset, &oldmask);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rc = setup(&s, o, err);
    if (rc == 0)
        rc = trace_loop(&s, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    while (sigtimedwait(&intset, NULL, &(struct timespec){0, 0}) > 0)
        ; /* drop the Ctrl-C meant for the command */
    sigprocmask(SIG_SETMASK, &oldmask, NULL);
    sched_setaffinity(0, sizeof saved, &saved);
    st->seconds = (double)(t1.tv_sec - t0.tv_sec) +
                  (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    st->instructions = s.time - (o->intel_pt ? SIM_PT_TIME_BASE : 0);
    if (rc == 0)
        rc = sim_truth_finish(&s, err);
    if (rc == 0) {
        rc = lp_perfwrite_close(s.pw, err);
    } else {
        if (s.pid > 0) {
            int status;
            kill(s.pid, SIGKILL);
            while (waitpid(-1, &status, __WALL) > 0)
                ;
        }
        lp_perfwrite_abort(s.pw);
        sim_truth_abort(&s);
    }
    sim_free(&s);
    return rc;
}
