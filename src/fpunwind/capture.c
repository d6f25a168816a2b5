/*
 * capture.c - fault-safe reads of this process's memory and the in-process
 * stack capture (lp_fpu_install / verify_handler / thread_init / read /
 * capture / unwind_local / unwind_ucontext).
 *
 * How a read cannot crash the process: every stack load goes through one
 * assembler instruction, lp__fpu_load_insn. The guard (a SIGSEGV and SIGBUS
 * handler) recognises a fault by the faulting PC being exactly that
 * instruction, moves the PC to the `ret` after it and sets the second
 * return register to "faulted". No TLS, no siglongjmp, no locks: the
 * handler is async-signal-safe and re-entrant, so it works for nested
 * signals (a SIGPROF handler capturing while the interrupted code
 * captures too) and needs no per-thread set-up. Any other fault goes to
 * the handler that was installed before. When the guard is not the active
 * handler (never installed, or replaced by a sanitizer or a runtime) the
 * walk reads with process_vm_readv on our own pid, a syscall that returns
 * EFAULT instead of faulting. Known stack bounds make faults impossible in
 * the first place: [sp, stack top) of a thread is always mapped.
 *
 * Global state: the signal handler cannot be given a context, so the
 * install state, the previous handlers and each thread's stack bounds are
 * the (documented) exception to the no-global-state rule.
 *
 * Owns: the guard, the per-thread stack bounds, the choice of read method.
 * Not: the walk rules (walk.c). x86-64 Linux only; elsewhere the calls
 * report LP_EUNSUPP or return a frame-0-only result.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "lbr2prof/fpunwind.h"

/* Fill an lp_error without src/util (this half links against libc only). */
static int fail(lp_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(lp_error *err, int code, const char *fmt, ...)
{
    va_list ap;

    if (err) {
        err->code = code;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return -1;
}

#if defined(__x86_64__) && defined(__linux__)

/* ---- the guarded load -------------------------------------------------------- */

typedef struct fpu_pair {
    uint64_t val;   /* rax */
    uint64_t fault; /* rdx: 1 if the load faulted */
} fpu_pair;

fpu_pair lp__fpu_load(uint64_t addr);
extern const char lp__fpu_load_insn[], lp__fpu_load_resume[];

__asm__(".pushsection .text\n"
        ".p2align 4\n"
        ".globl lp__fpu_load\n"
        ".hidden lp__fpu_load\n"
        ".type lp__fpu_load,@function\n"
        "lp__fpu_load:\n"
        "    endbr64\n"
        "    xorl %edx, %edx\n"
        ".globl lp__fpu_load_insn\n"
        ".hidden lp__fpu_load_insn\n"
        "lp__fpu_load_insn:\n"
        "    movq (%rdi), %rax\n"
        ".globl lp__fpu_load_resume\n"
        ".hidden lp__fpu_load_resume\n"
        "lp__fpu_load_resume:\n"
        "    ret\n"
        ".size lp__fpu_load, .-lp__fpu_load\n"
        ".popsection\n");

/* ---- process state (see the header comment) ------------------------------- */

enum { ST_NONE = 0, ST_INSTALLING = 1, ST_INSTALLED = 2 };
static atomic_int g_state;
static struct sigaction g_old[2]; /* [0] SIGSEGV, [1] SIGBUS */
static __thread uint64_t t_stack_lo
    __attribute__((tls_model("initial-exec")));
static __thread uint64_t t_stack_hi
    __attribute__((tls_model("initial-exec")));

static void guard_handler(int sig, siginfo_t *si, void *ucv);

/* A fault that is not ours: what would have happened without the guard. */
static void pass_on(int sig, siginfo_t *si, void *uc)
{
    const struct sigaction *old = &g_old[sig == SIGBUS];

    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction && old->sa_sigaction != guard_handler)
            old->sa_sigaction(sig, si, uc);
        return;
    }
    if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        old->sa_handler(sig);
        return;
    }
    if (old->sa_handler == SIG_IGN && si->si_code <= 0)
        return; /* a sent signal that was ignored */
    /* Default action: put it back. A real fault re-executes and the kernel
     * applies it (also for SIG_IGN, as it would have); a sent one is
     * raised again (SA_NODEFER: not blocked here). */
    sigaction(sig, old, NULL);
    if (si->si_code <= 0)
        raise(sig);
}

static void guard_handler(int sig, siginfo_t *si, void *ucv)
{
    ucontext_t *uc = ucv;
    greg_t *g = uc->uc_mcontext.gregs;

    if ((uintptr_t)g[REG_RIP] == (uintptr_t)lp__fpu_load_insn) {
        g[REG_RIP] = (greg_t)(uintptr_t)lp__fpu_load_resume;
        g[REG_RAX] = 0;
        g[REG_RDX] = 1;
        return;
    }
    pass_on(sig, si, ucv);
}

static bool is_guard(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == guard_handler;
}

bool lp_fpu_verify_handler(void)
{
    struct sigaction cur;

    if (sigaction(SIGSEGV, NULL, &cur) != 0 || !is_guard(&cur))
        return false;
    return sigaction(SIGBUS, NULL, &cur) == 0 && is_guard(&cur);
}

/* Save the current action (unless it is ours) then put the guard in. */
static int install_one(int sig, lp_error *err)
{
    struct sigaction cur, sa;

    if (sigaction(sig, NULL, &cur) != 0)
        return fail(err, LP_EIO, "fpunwind: sigaction(%s): %s",
                    sig == SIGBUS ? "SIGBUS" : "SIGSEGV", strerror(errno));
    if (is_guard(&cur))
        return 0;
    g_old[sig == SIGBUS] = cur;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = guard_handler;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) != 0)
        return fail(err, LP_EIO, "fpunwind: sigaction(%s): %s",
                    sig == SIGBUS ? "SIGBUS" : "SIGSEGV", strerror(errno));
    return 0;
}

int lp_fpu_install(lp_error *err)
{
    for (;;) {
        int st = atomic_load(&g_state);

        if (st == ST_INSTALLED && lp_fpu_verify_handler())
            break;
        if (st == ST_INSTALLING) {
            sched_yield();
            continue;
        }
        if (!atomic_compare_exchange_strong(&g_state, &st, ST_INSTALLING))
            continue;
        if (install_one(SIGSEGV, err) < 0 || install_one(SIGBUS, err) < 0) {
            atomic_store(&g_state, st);
            return -1;
        }
        atomic_store(&g_state, ST_INSTALLED);
        break;
    }
    return lp_fpu_thread_init(err);
}

int lp_fpu_thread_init(lp_error *err)
{
    pthread_attr_t a;
    void *addr;
    size_t size;
    int e = pthread_getattr_np(pthread_self(), &a);

    if (e != 0)
        return fail(err, LP_EIO, "fpunwind: pthread_getattr_np: %s",
                    strerror(e));
    e = pthread_attr_getstack(&a, &addr, &size);
    pthread_attr_destroy(&a);
    if (e != 0)
        return fail(err, LP_EIO, "fpunwind: pthread_attr_getstack: %s",
                    strerror(e));
    t_stack_lo = (uint64_t)(uintptr_t)addr;
    t_stack_hi = t_stack_lo + size;
    return 0;
}

/* ---- read methods ------------------------------------------------------------ */

static int read_guarded(const lp_fpu_mem *m, uint64_t addr, uint64_t *val)
{
    fpu_pair p = lp__fpu_load(addr);

    (void)m;
    *val = p.val;
    return p.fault ? -1 : 0;
}

static int read_syscall(const lp_fpu_mem *m, uint64_t addr, uint64_t *val)
{
    struct iovec local = {val, 8}, remote = {(void *)(uintptr_t)addr, 8};

    (void)m;
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == 8 ? 0 : -1;
}

int lp_fpu_read(uint64_t addr, uint64_t *val)
{
    if (atomic_load(&g_state) == ST_INSTALLED && lp_fpu_verify_handler())
        return read_guarded(NULL, addr, val);
    return read_syscall(NULL, addr, val);
}

/* Bounds and read method for a walk whose lowest frame is at sp. Inside
 * this thread's recorded stack nothing can fault; elsewhere the guard (if
 * it is really active) or the syscall. */
static void choose_mem(uint64_t sp, lp_fpu_mem *m)
{
    m->ctx = NULL;
    if (t_stack_hi && sp >= t_stack_lo && sp < t_stack_hi) {
        m->lo = sp;
        m->hi = t_stack_hi;
        m->read = read_guarded;
        return;
    }
    m->lo = 0;
    m->hi = UINT64_MAX;
    m->read = atomic_load(&g_state) == ST_INSTALLED && lp_fpu_verify_handler()
                  ? read_guarded
                  : read_syscall;
}

lp_fpu_result lp_fpu_unwind_local(uint64_t pc, uint64_t fp, uint64_t sp,
                                  uint64_t *out, size_t n)
{
    lp_fpu_mem m;

    choose_mem(sp, &m);
    return lp_fpu_unwind(pc, fp, sp, &m, out, n);
}

/* Frame 0 is our return address; the walk starts at our caller's frame
 * (the fp saved in ours). __builtin_frame_address(0) gives this function
 * a frame pointer whatever the compiler flags. */
__attribute__((noinline)) lp_fpu_result lp_fpu_capture(uint64_t *out,
                                                       size_t n)
{
    const uint64_t *frame = __builtin_frame_address(0);
    uint64_t pc = (uint64_t)(uintptr_t)__builtin_return_address(0);
    uint64_t here = (uint64_t)(uintptr_t)frame;
    lp_fpu_mem m;
    lp_fpu_result r;

    choose_mem(here, &m);
    /* our own frame is live stack: frame[0] is the caller's fp */
    r = lp_fpu_unwind(pc, frame[0], here + 16, &m, out, n);
    __asm__ volatile("" ::: "memory"); /* keep this a real call frame */
    return r;
}

lp_fpu_result lp_fpu_unwind_ucontext(const void *ucontext, uint64_t *out,
                                     size_t n)
{
    const ucontext_t *uc = ucontext;
    const greg_t *g = uc->uc_mcontext.gregs;

    return lp_fpu_unwind_local((uint64_t)g[REG_RIP], (uint64_t)g[REG_RBP],
                               (uint64_t)g[REG_RSP], out, n);
}

#else /* not x86-64 Linux */

int lp_fpu_install(lp_error *err)
{
    return fail(err, LP_EUNSUPP,
                "fpunwind: in-process unwinding needs x86-64 Linux");
}

bool lp_fpu_verify_handler(void) { return false; }

int lp_fpu_thread_init(lp_error *err) { return lp_fpu_install(err); }

int lp_fpu_read(uint64_t addr, uint64_t *val)
{
    (void)addr;
    (void)val;
    return -1;
}

static lp_fpu_result frame0_only(uint64_t pc, uint64_t *out, size_t n)
{
    lp_fpu_result r = {0, n == 0, LP_FPU_STOP_FAULT};

    if (n) {
        out[0] = pc;
        r.frames_written = 1;
    }
    return r;
}

lp_fpu_result lp_fpu_unwind_local(uint64_t pc, uint64_t fp, uint64_t sp,
                                  uint64_t *out, size_t n)
{
    (void)fp;
    (void)sp;
    return frame0_only(pc, out, n);
}

__attribute__((noinline)) lp_fpu_result lp_fpu_capture(uint64_t *out,
                                                       size_t n)
{
    return frame0_only((uint64_t)(uintptr_t)__builtin_return_address(0), out,
                       n);
}

lp_fpu_result lp_fpu_unwind_ucontext(const void *ucontext, uint64_t *out,
                                     size_t n)
{
    (void)ucontext;
    return frame0_only(0, out, n);
}

#endif
