/*
 * util/cpus.h - lp_cpus(): how many CPUs this process may run on (its
 * affinity: `taskset -c 0` gives 1), the one test of whether a second
 * thread can run alongside (the unwinder's parallel flush, the context
 * sizes' thread, generation's bodies ahead, the reader's spinning
 * hand-off), and lp_cpu_relax(), the pause of a thread that spins on
 * another (the reader's hand-off, the unwinder's lock). Owns nothing else.
 */
#ifndef LBR2PROF_UTIL_CPUS_H
#define LBR2PROF_UTIL_CPUS_H

#include <sched.h>

static inline int lp_cpus(void)
{
    cpu_set_t set;

    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

/* One turn of a spin-wait: tells the core another thread is awaited. */
static inline void lp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif
