/*
 * test_fpunwind.c - unit tests for src/fpunwind:
 *   - the walk rules (seed 004 acceptance tests 1-5, ported from dial9's
 *     unit tests): valid chains, frame 0, every stop reason, truncation,
 *     loops, faults on PROT_NONE pages, the post-processing (dump) variant
 *     and the kernel's plain walk;
 *   - the in-process API (tests 6-9): install from many threads, the
 *     handler check, a foreign fault passed on to the previous handler,
 *     the frame-0 contract, truncation on a real stack, symbolization,
 *     capture from a SIGPROF handler, threads;
 *   - leaf classification and repair (seed 003, tests 003-1..003-8 and the
 *     statistics test) on a fixture assembled now, with the addresses taken
 *     from its symbol table (nm), and the classification of every
 *     instruction of clang-19 and gcc builds of the workloads compared
 *     with their DWARF CFI (readelf -wF) at test time.
 *
 * Built with -fno-omit-frame-pointer (Makefile): the in-process tests walk
 * this file's own frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/fpunwind.h"
#include "lbr2prof/reader.h"

/* A real call frame: not inlined, not cloned into a renamed copy. */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif

static char scratch[64];
/* The SIGSEGV / SIGBUS actions before anything here installed the guard. */
static struct sigaction pre_segv, pre_bus;

/* ---- helpers ----------------------------------------------------------------- */

static bool have_tool(const char *t)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", t);
    return system(cmd) == 0;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Install the guard, or skip when something (a sanitizer) keeps it out. */
static void install_or_skip(void)
{
    lp_error e;

    assert_int_equal(lp_fpu_install(&e), 0);
    if (!lp_fpu_verify_handler()) {
        fprintf(stderr, "another SIGSEGV handler keeps the guard out\n");
        skip();
    }
}

/* In-process walk over a local array, with sp = the array. */
static lp_fpu_result unwind_at(uint64_t pc, const uint64_t *fp,
                               const uint64_t *sp, uint64_t *out, size_t n)
{
    return lp_fpu_unwind_local(pc, (uint64_t)(uintptr_t)fp,
                               (uint64_t)(uintptr_t)sp, out, n);
}

/* The same memory as a perf dump (post-processing variant). */
static lp_fpu_result unwind_dump(uint64_t pc, uint64_t fp, const uint64_t *mem,
                                 size_t words, uint64_t *out, size_t n)
{
    lp_fpu_stack st = {(uint64_t)(uintptr_t)mem, (const uint8_t *)mem,
                       words * 8};
    lp_fpu_regs r = {pc, (uint64_t)(uintptr_t)mem, fp};
    return lp_fpu_unwind_stack(&r, &st, 0, out, n);
}

/* ---- seed 004 tests 1-5: the walk rules ----------------------------------- */

static void chain3(uint64_t *stack)
{
    uint64_t base = (uint64_t)(uintptr_t)stack;

    memset(stack, 0, 8 * sizeof *stack);
    stack[0] = base + 16;
    stack[1] = 0x401000;
    stack[2] = base + 32;
    stack[3] = 0x402000;
    stack[4] = base + 32;
}

static void test_valid_chain(void **state)
{
    uint64_t stack[8], out[16];
    lp_fpu_result r;

    (void)state;
    install_or_skip();
    chain3(stack);
    r = unwind_at(0x400000, stack, stack, out, 16);
    assert_int_equal(r.frames_written, 3);
    assert_false(r.truncated);
    assert_int_equal(out[0], 0x400000);
    assert_int_equal(out[1], 0x401000);
    assert_int_equal(out[2], 0x402000);
    /* the third frame's return address (stack[5]) is 0 */
    assert_int_equal(r.stop, LP_FPU_STOP_DEAD_ZONE);
    /* the same over a dump */
    r = unwind_dump(0x400000, (uint64_t)(uintptr_t)stack, stack, 8, out, 16);
    assert_int_equal(r.frames_written, 3);
    assert_int_equal(out[2], 0x402000);
    /* a zero saved fp ends the chain after its (valid) frame */
    stack[4] = 0;
    stack[5] = 0x403000;
    r = unwind_at(0x400000, stack, stack, out, 16);
    assert_int_equal(r.frames_written, 4);
    assert_int_equal(out[3], 0x403000);
    assert_int_equal(r.stop, LP_FPU_STOP_NONE);
    assert_false(r.truncated);
}

static void test_frame0_always(void **state)
{
    uint64_t out[4];
    lp_fpu_result r;

    (void)state;
    r = lp_fpu_unwind_local(0xDEAD, 0, 0x1000, out, 4);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(out[0], 0xDEAD);
    assert_false(r.truncated);
    assert_int_equal(r.stop, LP_FPU_STOP_BOUNDS);
}

/* Each bad frame stops the walk at frame 1 for its own reason. */
static void test_stop_conditions(void **state)
{
    uint64_t stack[8], out[8];
    uint64_t base = (uint64_t)(uintptr_t)stack;
    lp_fpu_result r;

    (void)state;
    install_or_skip();
    chain3(stack);
    r = lp_fpu_unwind_local(0x400000, base + 1, base, out, 8);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(r.stop, LP_FPU_STOP_ALIGN);
    r = lp_fpu_unwind_local(0x400000, base - 8, base, out, 8);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(r.stop, LP_FPU_STOP_BOUNDS);
    stack[1] = 0x100; /* return address in the dead zone */
    r = unwind_at(0x400000, stack, stack, out, 8);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(r.stop, LP_FPU_STOP_DEAD_ZONE);
    stack[1] = UINT64_MAX - 0x10; /* ... and at the top */
    r = unwind_at(0x400000, stack, stack, out, 8);
    assert_int_equal(r.stop, LP_FPU_STOP_DEAD_ZONE);
    stack[0] = base + LP_FPU_MAX_FRAME_SIZE + 8; /* huge frame */
    stack[1] = 0x401000;
    r = unwind_at(0x400000, stack, stack, out, 8);
    assert_int_equal(r.frames_written, 1);
    assert_false(r.truncated);
    assert_int_equal(r.stop, LP_FPU_STOP_SIZE);
    stack[0] = base; /* does not advance: a loop */
    r = unwind_at(0x400000, stack, stack, out, 8);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(r.stop, LP_FPU_STOP_ORDER);
    stack[0] = base - 64; /* goes down */
    r = unwind_at(0x400000, stack, stack, out, 8);
    assert_int_equal(r.stop, LP_FPU_STOP_ORDER);
    /* every one of these also holds on the dump variant */
    stack[0] = base;
    r = unwind_dump(0x400000, base, stack, 8, out, 8);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(r.stop, LP_FPU_STOP_ORDER);
}

/* A two-frame loop: the plain (kernel) walk goes round until its limit,
 * the validated walk stops at the first backwards step. */
static void test_loops_plain_vs_validated(void **state)
{
    uint64_t stack[8], out[LP_FPU_MAX_FRAMES + 8];
    uint64_t base = (uint64_t)(uintptr_t)stack;
    lp_fpu_regs regs = {0x400000, base, base};
    lp_fpu_stack st = {base, (const uint8_t *)stack, sizeof stack};
    lp_fpu_result r;

    (void)state;
    memset(stack, 0, sizeof stack);
    stack[0] = base + 16;
    stack[1] = 0x401000;
    stack[2] = base; /* back to the first frame */
    stack[3] = 0x402000;
    r = lp_fpu_unwind_stack(&regs, &st, LP_FPU_PLAIN, out, sizeof out / 8);
    assert_int_equal(r.frames_written, LP_FPU_MAX_FRAMES);
    assert_true(r.truncated);
    assert_int_equal(out[3], 0x401000);
    r = lp_fpu_unwind_stack(&regs, &st, 0, out, sizeof out / 8);
    assert_int_equal(r.frames_written, 2);
    assert_int_equal(r.stop, LP_FPU_STOP_ORDER);
    /* the plain walk stops only where the dump ends */
    stack[2] = base + 8 * 8;
    r = lp_fpu_unwind_stack(&regs, &st, LP_FPU_PLAIN, out, sizeof out / 8);
    assert_int_equal(r.frames_written, 3);
    assert_int_equal(r.stop, LP_FPU_STOP_FAULT);
}

static void test_truncation(void **state)
{
    uint64_t stack[8], out[4];
    lp_fpu_result r;

    (void)state;
    install_or_skip();
    chain3(stack);
    r = unwind_at(0x400000, stack, stack, out, 2);
    assert_int_equal(r.frames_written, 2);
    assert_true(r.truncated);
    assert_int_equal(out[1], 0x401000);
    r = unwind_at(0x400000, stack, stack, out, 0);
    assert_int_equal(r.frames_written, 0);
    assert_true(r.truncated);
    r = lp_fpu_unwind_local(0x400000, 0, (uint64_t)(uintptr_t)stack, out, 1);
    assert_int_equal(r.frames_written, 1);
    assert_false(r.truncated); /* no valid frame was dropped */
    assert_int_equal(out[0], 0x400000);
    /* exactly full: the chain had 3 frames, 3 fit, nothing was lost */
    r = unwind_at(0x400000, stack, stack, out, 3);
    assert_int_equal(r.frames_written, 3);
    assert_false(r.truncated);
}

/* Two pages: RW then PROT_NONE. */
static uint8_t *guard_pages(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    assert_true(p != MAP_FAILED);
    assert_int_equal(mprotect(p + pg, (size_t)pg, PROT_NONE), 0);
    return p;
}

static void fault_cases(uint8_t *p)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t none = (uint64_t)(uintptr_t)(p + pg), out[4], v;
    uint64_t last = none - 8;
    lp_fpu_result r;

    r = lp_fpu_unwind_local(0x400000, none, none, out, 4);
    assert_int_equal(r.frames_written, 1);
    assert_false(r.truncated);
    assert_int_equal(r.stop, LP_FPU_STOP_FAULT);
    *(uint64_t *)(uintptr_t)last = last + 16; /* the return address faults */
    r = lp_fpu_unwind_local(0x400000, last, last, out, 4);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(r.stop, LP_FPU_STOP_FAULT);
    assert_int_equal(lp_fpu_read(none, &v), -1);
    assert_int_equal(lp_fpu_read(last, &v), 0);
    assert_int_equal(v, last + 16);
    assert_int_equal(lp_fpu_read(0, &v), -1);
}

static void test_faults(void **state)
{
    long pg = sysconf(_SC_PAGESIZE);
    uint8_t *p = guard_pages();
    struct sigaction cur, ign;
    uint64_t mem[2], out[4];
    lp_fpu_result r;

    (void)state;
    install_or_skip();
    fault_cases(p); /* through the guard */
    /* without the guard: the syscall reads, still no crash */
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGSEGV, &ign, &cur), 0);
    assert_false(lp_fpu_verify_handler());
    fault_cases(p);
    assert_int_equal(sigaction(SIGSEGV, &cur, NULL), 0);
    assert_true(lp_fpu_verify_handler());
    /* post-processing: fp outside the dump */
    mem[0] = 0;
    mem[1] = 0x401000;
    r = unwind_dump(0x400000, (uint64_t)(uintptr_t)mem + 16, mem, 2, out, 4);
    assert_int_equal(r.frames_written, 1);
    assert_int_equal(r.stop, LP_FPU_STOP_BOUNDS);
    r = unwind_dump(0x400000, (uint64_t)(uintptr_t)mem + 8, mem, 2, out, 4);
    assert_int_equal(r.stop, LP_FPU_STOP_BOUNDS); /* frame not inside */
    munmap(p, 2 * (size_t)pg);
}

static void test_regs_and_dump(void **state)
{
    /* mask: AX, BP, SP, IP, R15 -> values in that order */
    uint64_t mask = 1ull | 1ull << 6 | 1ull << 7 | 1ull << 8 | 1ull << 23;
    uint64_t vals[5] = {11, 66, 77, 88, 99}, v;
    uint8_t bytes[24] = {0};
    lp_fpu_stack st = {0x7000, bytes, sizeof bytes};
    lp_fpu_regs r;

    (void)state;
    assert_int_equal(lp_fpu_regs_from_perf(2, mask, vals, &r), 0);
    assert_int_equal(r.bp, 66);
    assert_int_equal(r.sp, 77);
    assert_int_equal(r.ip, 88);
    assert_int_equal(lp_fpu_regs_from_perf(1, mask, vals, &r), -1);
    assert_int_equal(lp_fpu_regs_from_perf(2, mask & ~(1ull << 6), vals, &r),
                     -1);
    bytes[16] = 0x42;
    assert_int_equal(lp_fpu_stack_read(&st, 0x7010, &v), 0);
    assert_int_equal(v, 0x42);
    assert_int_equal(lp_fpu_stack_read(&st, 0x7011, &v), -1);
    assert_int_equal(lp_fpu_stack_read(&st, 0x6ff8, &v), -1);
    assert_int_equal(lp_fpu_stack_read(&st, UINT64_MAX - 3, &v), -1);
}

/* ---- in-process: symbols of this executable -------------------------------- */

static int first_phdr(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uint64_t *)data = info->dlpi_addr;
    return 1; /* the executable comes first */
}

typedef struct self_syms {
    lp_binary *b;
    uint64_t bias;
} self_syms;

static self_syms self_open(void)
{
    self_syms s;
    lp_error e;

    s.b = lp_binary_open("/proc/self/exe", NULL, &e);
    if (!s.b)
        fail_msg("%s", e.msg);
    s.bias = 0;
    dl_iterate_phdr(first_phdr, &s.bias);
    return s;
}

/* Name of the function holding runtime address a ("" if none). */
static const char *self_name(const self_syms *s, uint64_t a)
{
    const char *n = lp_binary_symbol_name(s->b, a - s->bias, NULL);
    return n ? n : "";
}

#define KEEP_FRAME() __asm__ volatile("" ::: "memory")

/* Test 7: out[0] inside caller_fn, not in capture. */
NOINLINE static lp_fpu_result
caller_fn(uint64_t *out, size_t n)
{
    lp_fpu_result r;

    out[0] = 1; /* a body unlike inner's, so the two are never folded */
    r = lp_fpu_capture(out, n);
    KEEP_FRAME();
    return r;
}

static void test_frame0_contract(void **state)
{
    uint64_t out[64], start;
    self_syms s;
    lp_fpu_result r;
    const char *name;
    size_t i;

    (void)state;
    install_or_skip();
    r = caller_fn(out, 64);
    KEEP_FRAME();
    s = self_open();
    name = lp_binary_symbol_name(s.b, out[0] - s.bias, &start);
    assert_non_null(name);
    assert_string_equal(name, "caller_fn");
    assert_true(out[0] - s.bias > start); /* a return address, after the call */
    assert_true(r.frames_written >= 2);
    for (i = 0; i < r.frames_written; i++)
        assert_true(out[i] != 0);
    assert_string_equal(self_name(&s, out[1]), "test_frame0_contract");
    lp_binary_close(s.b);
}

NOINLINE static lp_fpu_result depth_2(uint64_t *out)
{
    lp_fpu_result r = lp_fpu_capture(out, 1);
    KEEP_FRAME();
    return r;
}

NOINLINE static lp_fpu_result depth_1(uint64_t *out)
{
    lp_fpu_result r = depth_2(out);
    KEEP_FRAME();
    return r;
}

/* Test 8. */
static void test_truncation_real_stack(void **state)
{
    uint64_t out[1];
    lp_fpu_result r;

    (void)state;
    install_or_skip();
    r = depth_1(out);
    assert_int_equal(r.frames_written, 1);
    assert_true(r.truncated);
}

NOINLINE static lp_fpu_result inner(uint64_t *out,
                                                              size_t n)
{
    lp_fpu_result r = lp_fpu_capture(out, n);
    KEEP_FRAME();
    return r;
}

NOINLINE static lp_fpu_result outer(uint64_t *out,
                                                              size_t n)
{
    lp_fpu_result r = inner(out, n);
    KEEP_FRAME();
    return r;
}

/* Test 9: symbolized with the "all" adjustment (every frame -1). */
static void test_symbolize(void **state)
{
    uint64_t out[16];
    self_syms s;
    lp_fpu_result r;

    (void)state;
    install_or_skip();
    r = outer(out, 16);
    KEEP_FRAME();
    assert_true(r.frames_written >= 3);
    s = self_open();
    assert_string_equal(self_name(&s, out[0] - 1), "inner");
    assert_string_equal(self_name(&s, out[1] - 1), "outer");
    assert_string_equal(self_name(&s, out[2] - 1), "test_symbolize");
    lp_binary_close(s.b);
}

/* Test 6: install is idempotent and thread-safe; the check notices a
 * replaced handler; a fault that is not ours reaches the old handler. */
static void *install_thread(void *arg)
{
    pthread_barrier_t *bar = arg;
    lp_error e;
    intptr_t ok;

    pthread_barrier_wait(bar);
    ok = lp_fpu_install(&e) == 0 && lp_fpu_verify_handler();
    return (void *)ok;
}

static sigjmp_buf foreign_jmp;
static volatile sig_atomic_t foreign_hits;

static void foreign_handler(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    foreign_hits++;
    siglongjmp(foreign_jmp, 1);
}

static volatile uintptr_t bad_addr = 16;

static void test_install_and_handler(void **state)
{
    pthread_barrier_t bar;
    pthread_t th[8];
    struct sigaction cur, ign, mine;
    lp_error e;
    void *ok;
    int i;

    (void)state;
    for (i = 0; i < 3; i++)
        install_or_skip();
    assert_true(lp_fpu_verify_handler());
    pthread_barrier_init(&bar, NULL, 8);
    for (i = 0; i < 8; i++)
        assert_int_equal(pthread_create(&th[i], NULL, install_thread, &bar), 0);
    for (i = 0; i < 8; i++) {
        assert_int_equal(pthread_join(th[i], &ok), 0);
        assert_true(ok != NULL);
    }
    pthread_barrier_destroy(&bar);
    /* replaced: the check says so; restore the saved action, not SIG_DFL */
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    assert_int_equal(sigaction(SIGSEGV, &ign, &cur), 0);
    assert_false(lp_fpu_verify_handler());
    assert_int_equal(sigaction(SIGSEGV, &cur, NULL), 0);
    assert_true(lp_fpu_verify_handler());
    /* a real fault elsewhere goes to the handler that was there before */
    memset(&mine, 0, sizeof mine);
    mine.sa_sigaction = foreign_handler;
    mine.sa_flags = SA_SIGINFO | SA_NODEFER;
    assert_int_equal(sigaction(SIGSEGV, &mine, NULL), 0);
    assert_int_equal(lp_fpu_install(&e), 0); /* re-installs over `mine` */
    assert_true(lp_fpu_verify_handler());
    foreign_hits = 0;
    if (sigsetjmp(foreign_jmp, 1) == 0)
        *(volatile int *)bad_addr = 1;
    assert_int_equal(foreign_hits, 1);
    /* back to what was there before any of this */
    assert_int_equal(sigaction(SIGSEGV, &pre_segv, NULL), 0);
    assert_int_equal(sigaction(SIGBUS, &pre_bus, NULL), 0);
    assert_int_equal(lp_fpu_install(&e), 0);
}

/* ---- signal handler capture ---------------------------------------------------- */

#define PROF_MAX 64
#define PROF_DEPTH 32
static volatile sig_atomic_t prof_n;
static uint64_t prof_cap[PROF_MAX][PROF_DEPTH], prof_uc[PROF_MAX][PROF_DEPTH];
static size_t prof_cap_n[PROF_MAX], prof_uc_n[PROF_MAX];

NOINLINE static void prof_handler(int sig,
                                                            siginfo_t *si,
                                                            void *uc)
{
    int i = prof_n;

    (void)sig;
    (void)si;
    if (i >= PROF_MAX)
        return;
    prof_cap_n[i] = lp_fpu_capture(prof_cap[i], PROF_DEPTH).frames_written;
    prof_uc_n[i] = lp_fpu_unwind_ucontext(uc, prof_uc[i], PROF_DEPTH)
                       .frames_written;
    prof_n = i + 1;
}

NOINLINE static uint64_t spin_inner(uint64_t x)
{
    int k;

    for (k = 0; k < 100000; k++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

NOINLINE static uint64_t spin_outer(void)
{
    uint64_t x = 1;
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        x = spin_inner(x);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (prof_n < 20 && t.tv_sec - t0.tv_sec < 5);
    KEEP_FRAME();
    return x;
}

static bool chain_has(const self_syms *s, const uint64_t *f, size_t n,
                      size_t from, const char *name)
{
    size_t i;

    for (i = from; i < n; i++)
        if (strcmp(self_name(s, f[i] - (i ? 1 : 0)), name) == 0)
            return true;
    return false;
}

static void test_signal_handler_capture(void **state)
{
    struct sigaction sa, old;
    struct itimerval it = {{0, 2000}, {0, 2000}}, off = {{0, 0}, {0, 0}};
    self_syms s;
    int i, good_cap = 0, good_uc = 0;

    (void)state;
    install_or_skip();
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = prof_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    assert_int_equal(sigaction(SIGPROF, &sa, &old), 0);
    prof_n = 0;
    setitimer(ITIMER_PROF, &it, NULL);
    spin_outer();
    KEEP_FRAME();
    setitimer(ITIMER_PROF, &off, NULL);
    sigaction(SIGPROF, &old, NULL);
    assert_true(prof_n >= 5);
    s = self_open();
    for (i = 0; i < prof_n; i++) {
        /* capture: frame 0 in the handler; through the signal frame to the
         * interrupted code's callers */
        if (strcmp(self_name(&s, prof_cap[i][0] - 1), "prof_handler") == 0 &&
            chain_has(&s, prof_cap[i], prof_cap_n[i], 1, "test_signal_handler_capture"))
            good_cap++;
        /* ucontext: frame 0 is the interrupted pc. gcc gives spin_inner
         * no frame (a leaf), so spin_outer is the frame it loses. */
        if ((chain_has(&s, prof_uc[i], 1, 0, "spin_inner") ||
             chain_has(&s, prof_uc[i], 1, 0, "spin_outer")) &&
            chain_has(&s, prof_uc[i], prof_uc_n[i], 1, "test_signal_handler_capture"))
            good_uc++;
    }
    fprintf(stderr, "SIGPROF: %d samples, %d capture and %d ucontext walks "
                    "reach the test\n", (int)prof_n, good_cap, good_uc);
    assert_true(good_cap * 10 >= prof_n * 9);
    assert_true(good_uc * 10 >= prof_n * 9);
    lp_binary_close(s.b);
}

/* ---- threads --------------------------------------------------------------------- */

typedef struct thr_arg {
    int depth;
    size_t frames, in_recurse;
    pthread_barrier_t *bar;
    bool guard;
} thr_arg;

NOINLINE static size_t recurse(int d, uint64_t *out,
                                                         size_t n)
{
    size_t r;

    if (d == 0)
        r = lp_fpu_capture(out, n).frames_written;
    else
        r = recurse(d - 1, out, n);
    KEEP_FRAME();
    return r;
}

static void *thr_main(void *p)
{
    thr_arg *a = p;
    uint64_t out[LP_FPU_MAX_FRAMES];
    self_syms s;
    lp_error e;
    size_t i;

    pthread_barrier_wait(a->bar);
    a->guard = lp_fpu_install(&e) == 0;
    a->frames = recurse(a->depth, out, LP_FPU_MAX_FRAMES);
    s = self_open();
    for (i = 0; i < a->frames; i++)
        a->in_recurse += strcmp(self_name(&s, out[i] - 1), "recurse") == 0;
    lp_binary_close(s.b);
    return NULL;
}

static void test_threads(void **state)
{
    pthread_barrier_t bar;
    pthread_t th[8];
    thr_arg a[8];
    int i;

    (void)state;
    install_or_skip();
    pthread_barrier_init(&bar, NULL, 8);
    for (i = 0; i < 8; i++) {
        memset(&a[i], 0, sizeof a[i]);
        a[i].depth = 3 + 5 * i;
        a[i].bar = &bar;
        assert_int_equal(pthread_create(&th[i], NULL, thr_main, &a[i]), 0);
    }
    for (i = 0; i < 8; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_true(a[i].guard);
        /* recurse(depth..0): depth + 1 frames inside recurse, then thr_main
         * and the thread start (libc, without frame pointers: may stop) */
        assert_int_equal(a[i].in_recurse, (size_t)a[i].depth + 1);
        assert_true(a[i].frames >= (size_t)a[i].depth + 2);
    }
    pthread_barrier_destroy(&bar);
}

/* ---- leaf classification: the fixture ------------------------------------------- */

/* Pixie's fib shape (seed 003 4.3) and the other shapes of the detection
 * table. Labels mark the addresses the tests use. Never run. */
static const char fixture_s[] =
    "    .text\n"
    "    .globl _start\n    .type _start,@function\n"
    "_start:\n    call main\n    hlt\n    .size _start, .-_start\n"
    "    .globl fib\n    .type fib,@function\n"
    "fib:\n"
    "fib_e0:    push %rbp\n"
    "fib_e1:    mov %rsp,%rbp\n"
    "    push %rbx\n    sub $8,%rsp\n    mov %rdi,%rbx\n"
    "    cmp $2,%rdi\n    jb .Lsmall\n"
    "fib_body:  lea -1(%rdi),%rdi\n"
    "fib_call1: call fib\n"
    "fib_ret1:  lea -2(%rbx),%rdi\n    mov %rax,%rbx\n    call fib\n"
    "    add %rax,%rbx\n"
    ".Lsmall:\n    mov %rbx,%rax\n    add $8,%rsp\n    pop %rbx\n"
    "fib_pop:   pop %rbp\n"
    "fib_x0:    ret\n"
    "    .size fib, .-fib\n"
    "    .globl fib27\n    .type fib27,@function\n"
    "fib27:\n    push %rbp\n    mov %rsp,%rbp\n    mov $27,%edi\n"
    "fib27_call: call fib\n"
    "fib27_ret: pop %rbp\n    ret\n    .size fib27, .-fib27\n"
    "    .globl main\n    .type main,@function\n"
    "main:\n    push %rbp\n    mov %rsp,%rbp\n"
    "main_call: call fib27\n"
    "main_ret:  xor %eax,%eax\n    pop %rbp\n    ret\n    .size main, .-main\n"
    /* 003-7: CET */
    "    .globl cet\n    .type cet,@function\n"
    "cet:       endbr64\n"
    "cet_push:  push %rbp\n"
    "cet_mov:   mov %rsp,%rbp\n"
    "cet_body:  nop\n    pop %rbp\n"
    "cet_ret:   ret\n    .size cet, .-cet\n"
    /* leave */
    "    .globl lv\n    .type lv,@function\n"
    "lv:  push %rbp\n    mov %rsp,%rbp\n    sub $32,%rsp\n"
    "lv_body:   movq $1,-8(%rbp)\n"
    "lv_leave:  leave\n"
    "lv_ret:    ret\n    .size lv, .-lv\n"
    /* tail call after the epilogue */
    "    .globl tail\n    .type tail,@function\n"
    "tail: push %rbp\n    mov %rsp,%rbp\n    add $1,%rdi\n    pop %rbp\n"
    "tail_jmp:  jmp fib\n    .size tail, .-tail\n"
    /* frameless leaf */
    "    .globl fl\n    .type fl,@function\n"
    "fl:        push %rbx\n"
    "fl_sub:    sub $16,%rsp\n"
    "fl_body:   mov %rdi,%rax\n    add $16,%rsp\n    pop %rbx\n"
    "fl_ret:    ret\n    .size fl, .-fl\n"
    /* shrink-wrapped: an early exit before the frame */
    "    .globl sw\n    .type sw,@function\n"
    "sw:        test %edi,%edi\n"
    "sw_je:     je .Lsw_out\n"
    "    push %rbp\n    mov %rsp,%rbp\n"
    "sw_body:   call fib\n    pop %rbp\n"
    ".Lsw_out:\n"
    "sw_ret:    ret\n    .size sw, .-sw\n"
    /* a jump table: the cases are reached through jmp *%rax only */
    "    .globl jt\n    .type jt,@function\n"
    "jt:  push %rbp\n    mov %rsp,%rbp\n"
    "    lea .Ltab(%rip),%rax\n    jmp *(%rax,%rdi,8)\n"
    "jt_case1:  mov $1,%eax\n    pop %rbp\n"
    "jt_ret1:   ret\n"
    "jt_case2:  mov $2,%eax\n    pop %rbp\n    ret\n    .size jt, .-jt\n"
    /* rbp used as a general register (frameless, -fomit-frame-pointer) */
    "    .globl gp\n    .type gp,@function\n"
    "gp:        push %rbp\n"
    "gp_mov:    mov %rdi,%rbp\n"
    "gp_body:   lea 1(%rbp),%rax\n    pop %rbp\n"
    "gp_ret:    ret\n    .size gp, .-gp\n"
    /* a PLT-like stub: no function symbol */
    "plt_stub:  endbr64\n    bnd jmp *gotslot(%rip)\n"
    "    .section .rodata\n    .p2align 3\n"
    ".Ltab: .quad jt_case1, jt_case2\n"
    "    .data\n    .p2align 3\ngotslot: .quad fib\n"
    "    .section .note.GNU-stack,\"\",@progbits\n";

typedef struct fixture {
    lp_binary *b;
    char names[64][24];
    uint64_t addrs[64];
    int n;
} fixture;

static uint64_t sym(const fixture *f, const char *name)
{
    int i;

    for (i = 0; i < f->n; i++)
        if (strcmp(f->names[i], name) == 0)
            return f->addrs[i];
    fail_msg("fixture symbol %s not found", name);
    return 0;
}

static fixture *fixture_open(void)
{
    static fixture f;
    char path[128], line[256];
    lp_binary_opts o = {0};
    lp_error e;
    FILE *p;

    if (f.b)
        return &f;
    if (!have_tool("cc") || !have_tool("nm"))
        return NULL;
    snprintf(path, sizeof path, "%s/fixture.s", scratch);
    p = fopen(path, "w");
    assert_non_null(p);
    fputs(fixture_s, p);
    fclose(p);
    assert_int_equal(sh("cd %s && cc -c fixture.s -o fixture.o && "
                        "cc -nostdlib -static -no-pie fixture.o -o fixture",
                        scratch), 0);
    snprintf(path, sizeof path, "cd %s && nm fixture", scratch);
    p = popen(path, "r");
    assert_non_null(p);
    while (fgets(line, sizeof line, p) && f.n < 64) {
        unsigned long long a;
        char t, name[64];
        if (sscanf(line, "%llx %c %63s", &a, &t, name) == 3 &&
            strlen(name) < sizeof f.names[0]) {
            strcpy(f.names[f.n], name);
            f.addrs[f.n++] = a;
        }
    }
    pclose(p);
    o.symtab_functions = 1;
    snprintf(path, sizeof path, "%s/fixture", scratch);
    f.b = lp_binary_open(path, &o, &e);
    if (!f.b)
        fail_msg("%s", e.msg);
    return &f;
}

static lp_leaf_info classify_ok(lp_binary *b, uint64_t a)
{
    lp_leaf_info li;
    lp_error e;

    if (lp_leaf_classify(b, a, &li, &e) < 0)
        fail_msg("%s", e.msg);
    return li;
}

static void expect(const fixture *f, const char *label, uint64_t delta,
                   lp_leaf_state st, bool known, uint32_t off)
{
    lp_leaf_info li = classify_ok(f->b, sym(f, label) + delta);

    if (li.state != st || li.ret_known != known ||
        (known && li.ret_offset != off))
        fail_msg("%s+%" PRIu64 ": got %s known=%d off=%u, expected %s known=%d "
                 "off=%u", label, delta, lp_leaf_state_name(li.state),
                 li.ret_known, li.ret_offset, lp_leaf_state_name(st), known, off);
    assert_int_equal(li.missing_caller,
                     st != LP_LEAF_BODY && st != LP_LEAF_UNKNOWN);
}

/* The detection table, every row, on the fixture. */
static void test_leaf_detection_table(void **state)
{
    fixture *f = fixture_open();

    (void)state;
    if (!f)
        skip();
    expect(f, "fib_e0", 0, LP_LEAF_E0, true, 0);
    expect(f, "fib_e1", 0, LP_LEAF_E1, true, 8);
    expect(f, "fib_body", 0, LP_LEAF_BODY, false, 0);
    expect(f, "fib_pop", 0, LP_LEAF_BODY, false, 0); /* rbp is still ours */
    expect(f, "fib_x0", 0, LP_LEAF_X0, true, 0);
    expect(f, "fib27_ret", 0, LP_LEAF_BODY, false, 0);
    /* 003-7 */
    expect(f, "cet", 0, LP_LEAF_E0, true, 0);
    expect(f, "cet_push", 0, LP_LEAF_E0, true, 0);
    expect(f, "cet_mov", 0, LP_LEAF_E1, true, 8);
    expect(f, "cet_body", 0, LP_LEAF_BODY, false, 0);
    expect(f, "cet_ret", 0, LP_LEAF_X0, true, 0);
    /* leave; ret */
    expect(f, "lv_body", 0, LP_LEAF_BODY, false, 0);
    expect(f, "lv_leave", 0, LP_LEAF_BODY, false, 0);
    expect(f, "lv_ret", 0, LP_LEAF_X0, true, 0);
    /* pop %rbp; jmp (tail call) */
    expect(f, "tail_jmp", 0, LP_LEAF_X0, true, 0);
    /* frameless: the offset follows the pushes and the sub */
    expect(f, "fl", 0, LP_LEAF_F, true, 0);
    expect(f, "fl_sub", 0, LP_LEAF_F, true, 8);
    expect(f, "fl_body", 0, LP_LEAF_F, true, 24);
    expect(f, "fl_ret", 0, LP_LEAF_F, true, 0);
    /* shrink-wrapped early exit */
    expect(f, "sw", 0, LP_LEAF_E0, true, 0);
    expect(f, "sw_je", 0, LP_LEAF_E0, true, 0);
    expect(f, "sw_body", 0, LP_LEAF_BODY, false, 0);
    expect(f, "sw_ret", 0, LP_LEAF_X0, true, 0); /* both paths: [rsp] */
    /* jump-table cases: reached through the indirect jump's state */
    expect(f, "jt_case1", 0, LP_LEAF_BODY, false, 0);
    expect(f, "jt_ret1", 0, LP_LEAF_X0, true, 0);
    /* rbp as a general register: the walk is broken, nothing to say */
    expect(f, "gp", 0, LP_LEAF_F, true, 0);
    expect(f, "gp_body", 0, LP_LEAF_UNKNOWN, false, 0);
    expect(f, "gp_ret", 0, LP_LEAF_F, true, 0);
    /* PLT stub (no function), and not an instruction start */
    expect(f, "plt_stub", 0, LP_LEAF_PLT, true, 0);
    expect(f, "fib_e1", 1, LP_LEAF_UNKNOWN, false, 0);
    {
        lp_leaf_info li = classify_ok(f->b, sym(f, "fib_e0"));
        assert_int_equal(li.func_start, sym(f, "fib"));
    }
}

/* The cache gives the same answers. */
static void test_leaf_cache(void **state)
{
    fixture *f = fixture_open();
    static const char *const labels[] = {"fib_e0", "fib_e1", "fib_body",
                                         "fib_x0", "cet_mov", "fl_body",
                                         "jt_case1", "plt_stub"};
    lp_leaf_cache *c;
    lp_error e;
    size_t i, k;

    (void)state;
    if (!f)
        skip();
    c = lp_leaf_cache_new(&e);
    assert_non_null(c);
    for (k = 0; k < 2; k++)
        for (i = 0; i < sizeof labels / sizeof *labels; i++) {
            lp_leaf_info a = classify_ok(f->b, sym(f, labels[i])), b;
            assert_int_equal(lp_leaf_classify_cached(c, f->b, sym(f, labels[i]),
                                                     &b, &e), 0);
            assert_memory_equal(&a, &b, sizeof a);
        }
    lp_leaf_cache_free(c);
}

/* A sampled stack: words at base = sp. */
typedef struct sampled {
    uint64_t words[4];
    lp_fpu_stack st;
    lp_fpu_regs regs;
} sampled;

static void sampled_init(sampled *s, uint64_t ip, uint64_t w0, uint64_t w1)
{
    memset(s, 0, sizeof *s);
    s->words[0] = w0;
    s->words[1] = w1;
    s->regs.ip = ip;
    s->regs.sp = 0x7ffc0000;
    s->regs.bp = 0x7ffc0100;
    s->st.base = s->regs.sp;
    s->st.data = (const uint8_t *)s->words;
    s->st.size = sizeof s->words;
}

#define LIBC 0x7f0000012345ull

/* 003-1 .. 003-5 and the statistics test, stack mode (perf's dedup rule). */
static void test_leaf_repair_stack(void **state)
{
    fixture *f = fixture_open();
    uint64_t fib, x0, body, r27, rmain, chain[8];
    lp_leaf_stats st;
    lp_leaf_info li;
    sampled s;
    size_t n;

    (void)state;
    if (!f)
        skip();
    memset(&st, 0, sizeof st);
    fib = sym(f, "fib");
    x0 = sym(f, "fib_x0");
    body = sym(f, "fib_body");
    r27 = sym(f, "fib27_ret");
    rmain = sym(f, "main_ret");
    /* 003-1 entry: main -> fib27 -> fib seen as main -> fib */
    sampled_init(&s, fib, r27, 0);
    chain[0] = fib, chain[1] = rmain, chain[2] = LIBC, n = 3;
    li = classify_ok(f->b, fib);
    assert_int_equal(lp_leaf_repair_stack(&li, &s.regs, &s.st, chain, &n, 8,
                                          0, &st), 1);
    assert_int_equal(n, 4);
    assert_int_equal(chain[1], r27);
    assert_int_equal(chain[2], rmain);
    assert_int_equal(chain[3], LIBC);
    /* 003-2 exit */
    sampled_init(&s, x0, r27, 0);
    chain[0] = x0, chain[1] = rmain, n = 2;
    li = classify_ok(f->b, x0);
    assert_int_equal(lp_leaf_repair_stack(&li, &s.regs, &s.st, chain, &n, 8,
                                          0, &st), 1);
    assert_int_equal(n, 3);
    assert_int_equal(chain[1], r27);
    assert_int_equal(chain[2], rmain);
    /* 003-3 after push: [rsp] is the saved rbp, the address is at rsp+8 */
    sampled_init(&s, fib + 1, 0x7ffc0100, r27);
    chain[0] = fib + 1, chain[1] = rmain, n = 2;
    li = classify_ok(f->b, fib + 1);
    assert_int_equal(lp_leaf_repair_stack(&li, &s.regs, &s.st, chain, &n, 8,
                                          0, &st), 1);
    assert_int_equal(chain[1], r27);
    /* 003-4 body: unchanged even with stack data */
    sampled_init(&s, body, r27, r27);
    chain[0] = body, chain[1] = r27, chain[2] = rmain, n = 3;
    li = classify_ok(f->b, body);
    assert_int_equal(lp_leaf_repair_stack(&li, &s.regs, &s.st, chain, &n, 8,
                                          0, &st), 0);
    assert_int_equal(n, 3);
    /* 003-5 already correct (a DWARF walk): no duplicate */
    sampled_init(&s, fib, r27, 0);
    chain[0] = fib, chain[1] = r27, chain[2] = rmain, n = 3;
    li = classify_ok(f->b, fib);
    assert_int_equal(lp_leaf_repair_stack(&li, &s.regs, &s.st, chain, &n, 8,
                                          0, &st), 0);
    assert_int_equal(n, 3);
    /* statistics */
    assert_int_equal(st.samples, 5);
    assert_int_equal(st.at_entry, 3);
    assert_int_equal(st.at_exit, 1);
    assert_int_equal(st.repaired, 3);
    assert_int_equal(st.already_correct, 1);
    assert_int_equal(st.unrepaired, 0);
    assert_int_equal(st.frameless, 0);
    assert_int_equal(st.by_state[LP_LEAF_BODY], 1);
    /* an FP walk of fib called from fib: equal, yet missing */
    sampled_init(&s, fib, sym(f, "fib_ret1"), 0);
    chain[0] = fib, chain[1] = sym(f, "fib_ret1"), n = 2;
    assert_int_equal(lp_leaf_repair_stack(&li, &s.regs, &s.st, chain, &n, 8,
                                          LP_LEAF_CHAIN_IS_FP_WALK, &st), 1);
    assert_int_equal(n, 3);
    assert_int_equal(chain[2], sym(f, "fib_ret1"));
    /* the address outside the dump: counted, not inserted */
    s.st.size = 0;
    n = 2;
    assert_int_equal(lp_leaf_repair_stack(&li, &s.regs, &s.st, chain, &n, 8,
                                          0, &st), 0);
    assert_int_equal(st.unrepaired, 1);
    /* a full chain loses its outermost frame */
    chain[0] = fib, chain[1] = rmain, n = 2;
    assert_int_equal(lp_leaf_insert_caller(chain, &n, 2, r27, 0, NULL), 1);
    assert_int_equal(n, 2);
    assert_int_equal(chain[1], r27);
}

static int fixture_kind(void *ctx, uint64_t from)
{
    lp_binary *b = ctx;

    if (lp_binary_is_call(b, from))
        return 1;
    return lp_binary_is_return(b, from) ? 2 : 0;
}

/* 003-6: the caller from the LBR. */
static void test_leaf_repair_lbr(void **state)
{
    fixture *f = fixture_open();
    lp_branch_entry br[4];
    uint64_t fib, site = 0, chain[8];
    lp_leaf_info li;
    lp_inst in;
    lp_error e;
    size_t n;

    (void)state;
    if (!f)
        skip();
    fib = sym(f, "fib");
    memset(br, 0, sizeof br);
    br[0].from = sym(f, "fib27_call");
    br[0].to = fib;
    li = classify_ok(f->b, fib);
    assert_int_equal(lp_leaf_lbr_caller(&li, fib, br, 1, fixture_kind, f->b,
                                        &site), 1);
    assert_int_equal(site, sym(f, "fib27_call"));
    assert_int_equal(lp_binary_inst(f->b, site, &in, &e), 1);
    chain[0] = fib, chain[1] = sym(f, "main_ret"), n = 2;
    assert_int_equal(lp_leaf_insert_caller(chain, &n, 8, site + in.size, 0,
                                           NULL), 1);
    /* main @ fib27 @ fib */
    assert_string_equal(lp_binary_symbol_name(f->b, chain[0], NULL), "fib");
    assert_string_equal(lp_binary_symbol_name(f->b, chain[1] - 1, NULL), "fib27");
    assert_string_equal(lp_binary_symbol_name(f->b, chain[2] - 1, NULL), "main");
    /* the same with perf's saved branch types */
    br[0].flags = (uint64_t)4 << 20; /* PERF_BR_CALL */
    site = 0;
    assert_int_equal(lp_leaf_lbr_caller(&li, fib, br, 1, NULL, NULL, &site), 1);
    assert_int_equal(site, sym(f, "fib27_call"));
    /* at the entry, the newest branch must go there */
    br[0].to = fib + 1;
    assert_int_equal(lp_leaf_lbr_caller(&li, fib, br, 1, NULL, NULL, &site), 0);
    /* exit: scan back over a nested call/return pair (newest first) */
    li = classify_ok(f->b, sym(f, "fib_x0"));
    memset(br, 0, sizeof br);
    br[0].from = sym(f, "fib_x0"); /* ret of the inner fib, back to fib */
    br[0].to = sym(f, "fib_ret1");
    br[1].from = sym(f, "fib_call1"); /* fib -> fib (nested) */
    br[1].to = fib;
    br[2].from = sym(f, "fib27_call"); /* the call of this frame */
    br[2].to = fib;
    br[3].from = sym(f, "main_call");
    br[3].to = sym(f, "fib27");
    assert_int_equal(lp_leaf_lbr_caller(&li, fib, br, 4, fixture_kind, f->b,
                                        &site), 1);
    assert_int_equal(site, sym(f, "fib27_call"));
    /* a body leaf needs no repair */
    li = classify_ok(f->b, sym(f, "fib_body"));
    assert_int_equal(lp_leaf_lbr_caller(&li, fib, br, 4, fixture_kind, f->b,
                                        &site), 0);
}

/* Garbage in the code (the fixture's functions overwritten with random
 * bytes): every address classifies without a crash or an error. */
static void test_leaf_garbage_code(void **state)
{
    fixture *f = fixture_open();
    uint64_t lo, hi, a, off;
    unsigned seed = 12345, round;
    char src[128], dst[128];
    lp_binary_opts o = {0};
    lp_leaf_cache *c;
    lp_error e;

    (void)state;
    if (!f)
        skip();
    lo = sym(f, "fib");
    hi = sym(f, "plt_stub") + 11;
    assert_int_equal(lp_binary_vaddr_to_offset(f->b, lo, &off), 0);
    snprintf(src, sizeof src, "%s/fixture", scratch);
    snprintf(dst, sizeof dst, "%s/garbage", scratch);
    o.symtab_functions = 1;
    for (round = 0; round < 20; round++) {
        FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
        long pos = 0;
        int ch;
        lp_binary *b;
        assert_true(in && out);
        while ((ch = fgetc(in)) != EOF) {
            if ((uint64_t)pos >= off && (uint64_t)pos < off + (hi - lo)) {
                seed = seed * 1103515245u + 12345u;
                /* rounds 0-9: all random; later: mostly push/pop/ret/jmp */
                ch = round < 10 ? (int)(seed >> 16) & 0xff
                                : "\x55\x5d\xc3\xc9\x48\x89\xe5\xeb\xe9\x74"[(seed >> 16) % 10];
            }
            fputc(ch, out);
            pos++;
        }
        fclose(in);
        fclose(out);
        b = lp_binary_open(dst, &o, &e);
        assert_non_null(b);
        c = lp_leaf_cache_new(&e);
        for (a = lo; a < hi; a++) {
            lp_leaf_info li;
            assert_int_equal(lp_leaf_classify_cached(c, b, a, &li, &e), 0);
            assert_true(li.state < LP_LEAF_NSTATES);
            assert_true(!li.ret_known || li.ret_offset < (1u << 31));
        }
        lp_leaf_cache_free(c);
        lp_binary_close(b);
    }
}

/* 003-8: arm64 leaves are not classified (the caller is in LR, which
 * needs --user-regs=lr): a clear LP_EUNSUPP, never a wrong answer. */
static void test_leaf_arm64_unsupported(void **state)
{
    char path[128];
    lp_binary *b;
    lp_leaf_info li;
    lp_error e;

    (void)state;
    if (!have_tool("clang-19") || !have_tool("ld.lld"))
        skip();
    if (sh("cd %s && printf 'int f(int x){return x+1;}\\nvoid _start(void){f(1);for(;;);}\\n' > a64.c && "
           "clang-19 --target=aarch64-linux-gnu -O2 -nostdlib -static "
           "-fuse-ld=lld a64.c -o a64 2>/dev/null", scratch) != 0)
        skip();
    snprintf(path, sizeof path, "%s/a64", scratch);
    lp_binary_opts o = {0};
    o.symtab_functions = 1;
    b = lp_binary_open(path, &o, &e);
    assert_non_null(b);
    assert_int_equal(lp_binary_arch(b), LP_ARCH_AARCH64);
    assert_int_equal(lp_leaf_classify(b, lp_binary_preferred_base(b), &li, &e),
                     -1);
    assert_int_equal(e.code, LP_EUNSUPP);
    lp_binary_close(b);
}

/* ---- classification vs the compiler's CFI ------------------------------------- */

/* One row of readelf -wF: from `loc` on, CFA = reg + off. */
typedef struct cfa_row {
    uint64_t loc, end;
    int reg; /* 0 rsp, 1 rbp, -1 other (or the return address undefined) */
    long off;
} cfa_row;

typedef struct cfi_cmp {
    size_t insns, body, missing, unknown, padding, mismatch;
    size_t by_state[LP_LEAF_NSTATES];
} cfi_cmp;

static void add_row(cfa_row **rows, size_t *n, size_t *cap, cfa_row r)
{
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 256;
        *rows = realloc(*rows, *cap * sizeof **rows);
        assert_non_null(*rows);
    }
    (*rows)[(*n)++] = r;
}

/* ra column of a row undefined ("u"): the outermost frame (_start). */
static bool ra_undefined(const char *line)
{
    size_t k = strlen(line);

    while (k && (line[k - 1] == ' ' || line[k - 1] == '\n'))
        k--;
    return k >= 2 && line[k - 1] == 'u' && line[k - 2] == ' ';
}

/* The rows of every FDE (rows of a CIE are not code addresses). A row
 * ends at the next row of its FDE, the last one at the FDE's end. An FDE
 * without rows keeps its CIE's initial row (CFA = rsp+8 on x86-64). */
static size_t read_cfa_rows(const char *bin, cfa_row **rows)
{
    char cmd[512], line[512];
    size_t n = 0, cap = 0, first = 0, ncie = 0;
    unsigned long cie_off[32], cur_cie = 0, fde_cie = 0;
    bool cie_ra_u[32], in_fde = false, in_cie = false;
    uint64_t fde_start = 0, fde_end = 0;
    FILE *p;

    snprintf(cmd, sizeof cmd, "readelf -wF %s", bin);
    p = popen(cmd, "r");
    assert_non_null(p);
    *rows = NULL;
    while (fgets(line, sizeof line, p)) {
        unsigned long long a, b;
        char tok[64], cfa[64];
        const char *pc = strstr(line, "pc="), *ci = strstr(line, "cie=");
        cfa_row r;
        if (strstr(line, " FDE ") || strstr(line, " CIE ") ||
            strstr(line, "ZERO terminator")) {
            if (in_fde && n == first) {
                size_t k;
                bool u = false;
                for (k = 0; k < ncie; k++)
                    if (cie_off[k] == fde_cie)
                        u = cie_ra_u[k];
                add_row(rows, &n, &cap,
                        (cfa_row){fde_start, fde_end, u ? -1 : 0, 8});
            }
            in_cie = strstr(line, " CIE ") && ncie < 32 &&
                     sscanf(line, "%lx", &cur_cie) == 1;
            if (in_cie) {
                cie_off[ncie] = cur_cie;
                cie_ra_u[ncie++] = false;
            }
            in_fde = strstr(line, " FDE ") && pc && ci &&
                     sscanf(pc, "pc=%llx..%llx", &a, &b) == 2 &&
                     sscanf(ci, "cie=%lx", &fde_cie) == 1;
            fde_start = in_fde ? a : 0;
            fde_end = in_fde ? b : 0;
            first = n;
            continue;
        }
        if (sscanf(line, "%63s %63s", tok, cfa) != 2 || strlen(tok) != 16 ||
            sscanf(tok, "%llx", &a) != 1)
            continue;
        if (in_cie) {
            cie_ra_u[ncie - 1] = ra_undefined(line);
            continue;
        }
        if (!in_fde)
            continue;
        if (n > first)
            (*rows)[n - 1].end = a;
        r.loc = a;
        r.end = fde_end;
        r.reg = strncmp(cfa, "rsp+", 4) == 0   ? 0
                : strncmp(cfa, "rbp+", 4) == 0 ? 1
                                               : -1;
        r.off = r.reg >= 0 ? strtol(cfa + 4, NULL, 10) : 0;
        if (ra_undefined(line))
            r.reg = -1;
        add_row(rows, &n, &cap, r);
    }
    pclose(p);
    return n;
}

/* Addresses of the nops (alignment padding) objdump sees in bin. */
static size_t read_nops(const char *bin, uint64_t **out)
{
    char cmd[512], line[512];
    size_t n = 0, cap = 0;
    FILE *p;

    snprintf(cmd, sizeof cmd,
             "objdump -d --no-show-raw-insn %s | "
             "grep -E '^ +[0-9a-f]+:.(nop|xchg +%%ax,%%ax|cs nop|data16)'", bin);
    p = popen(cmd, "r");
    assert_non_null(p);
    *out = NULL;
    while (fgets(line, sizeof line, p)) {
        unsigned long long a;
        if (sscanf(line, " %llx:", &a) != 1)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            *out = realloc(*out, cap * sizeof **out);
            assert_non_null(*out);
        }
        (*out)[n++] = a;
    }
    pclose(p);
    return n;
}

static bool in_list(const uint64_t *v, size_t n, uint64_t a)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (v[i] == a)
            return true;
    return false;
}

/* Every instruction of every row: rbp+16 <=> body; rsp+k <=> the caller's
 * return address at [rsp + k - 8]. */
static void compare_with_cfi(const char *bin, cfi_cmp *c)
{
    lp_binary_opts o = {0};
    lp_binary *b;
    lp_leaf_cache *cache;
    cfa_row *rows;
    uint64_t *nops;
    lp_error e;
    size_t n = read_cfa_rows(bin, &rows), nnops = read_nops(bin, &nops), i;

    o.symtab_functions = 1;
    b = lp_binary_open(bin, &o, &e);
    if (!b)
        fail_msg("%s", e.msg);
    cache = lp_leaf_cache_new(&e);
    assert_true(n > 0);
    for (i = 0; i < n; i++) {
        uint64_t a = rows[i].loc;
        while (a < rows[i].end) {
            lp_inst in;
            lp_leaf_info li;
            bool ok;
            if (lp_binary_inst(b, a, &in, &e) != 1)
                break; /* .plt and other code outside functions */
            assert_int_equal(lp_leaf_classify_cached(cache, b, a, &li, &e), 0);
            c->insns++;
            c->by_state[li.state]++;
            if (rows[i].reg < 0) {
                ok = true; /* nothing to compare with */
            } else if (li.state == LP_LEAF_UNKNOWN) {
                /* unreached padding is never executed */
                if (in_list(nops, nnops, a))
                    c->padding++;
                else
                    c->unknown++;
                ok = true;
            } else if (li.state == LP_LEAF_BODY) {
                c->body++;
                ok = rows[i].reg == 1 && rows[i].off == 16;
            } else {
                c->missing++;
                ok = rows[i].reg == 0 && li.ret_known &&
                     (long)li.ret_offset == rows[i].off - 8;
            }
            if (!ok) {
                c->mismatch++;
                fprintf(stderr, "%s %#" PRIx64 " (%s): %s off=%u, CFI %s+%ld\n",
                        bin, a, lp_binary_symbol_name(b, a, NULL) ?: "?",
                        lp_leaf_state_name(li.state), li.ret_offset,
                        rows[i].reg == 0 ? "rsp" : rows[i].reg == 1 ? "rbp" : "?",
                        rows[i].off);
            }
            a += in.size;
        }
    }
    free(rows);
    free(nops);
    lp_leaf_cache_free(cache);
    lp_binary_close(b);
}

static void test_leaf_vs_cfi(void **state)
{
    static const char *const cc[] = {
        "clang-19 -O2 -g -fno-omit-frame-pointer",
        "gcc -O2 -g -fno-omit-frame-pointer",
        "clang-19 -O2 -g -fno-omit-frame-pointer -fcf-protection=full",
    };
    static const char *const src[] = {"recursion", "qsort_cb", "kernel",
                                      "inlining", "tailcall"};
    size_t i, j;
    int built = 0;

    (void)state;
    if (!have_tool("readelf"))
        skip();
    for (i = 0; i < sizeof cc / sizeof *cc; i++) {
        cfi_cmp c;
        char bin[160];
        memset(&c, 0, sizeof c);
        if (!have_tool(i == 1 ? "gcc" : "clang-19"))
            continue;
        for (j = 0; j < sizeof src / sizeof *src; j++) {
            snprintf(bin, sizeof bin, "%s/cfi_%zu_%s", scratch, i, src[j]);
            assert_int_equal(sh("%s tests/workloads/%s.c -o %s", cc[i], src[j],
                                bin), 0);
            compare_with_cfi(bin, &c);
            built++;
        }
        fprintf(stderr, "%s: %zu instructions: %zu body, %zu caller missing "
                        "(E0 %zu, E1 %zu, X0 %zu, noframe %zu, F %zu), %zu "
                        "unknown, %zu unreached padding, %zu disagree with "
                        "the CFI\n",
                cc[i], c.insns, c.body, c.missing, c.by_state[LP_LEAF_E0],
                c.by_state[LP_LEAF_E1], c.by_state[LP_LEAF_X0],
                c.by_state[LP_LEAF_NOFRAME], c.by_state[LP_LEAF_F], c.unknown,
                c.padding, c.mismatch);
        assert_int_equal(c.mismatch, 0);
        assert_true(c.unknown * 100 <= c.insns); /* at most 1% */
        assert_true(c.by_state[LP_LEAF_E0] && c.by_state[LP_LEAF_E1] &&
                    c.by_state[LP_LEAF_X0]);
    }
    if (!built)
        skip();
}

/* ---- main ------------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/lp-fpu-XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return sh("rm -rf %s", scratch) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_chain),
        cmocka_unit_test(test_frame0_always),
        cmocka_unit_test(test_stop_conditions),
        cmocka_unit_test(test_loops_plain_vs_validated),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_regs_and_dump),
        cmocka_unit_test(test_frame0_contract),
        cmocka_unit_test(test_truncation_real_stack),
        cmocka_unit_test(test_symbolize),
        cmocka_unit_test(test_install_and_handler),
        cmocka_unit_test(test_signal_handler_capture),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_leaf_detection_table),
        cmocka_unit_test(test_leaf_cache),
        cmocka_unit_test(test_leaf_repair_stack),
        cmocka_unit_test(test_leaf_repair_lbr),
        cmocka_unit_test(test_leaf_garbage_code),
        cmocka_unit_test(test_leaf_arm64_unsupported),
        cmocka_unit_test(test_leaf_vs_cfi),
    };

    sigaction(SIGSEGV, NULL, &pre_segv);
    sigaction(SIGBUS, NULL, &pre_bus);
    return cmocka_run_group_tests(tests, setup, teardown);
}
