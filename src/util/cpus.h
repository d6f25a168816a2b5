/*
 * util/cpus.h - lp_cpus(): how many CPUs this process may run on (its
 * affinity: `taskset -c 0` gives 1), the one test of whether a second
 * thread can run alongside (the unwinder's parallel flush, the context
 * sizes' thread, generation's bodies ahead, the reader's spinning
 * hand-off). Owns nothing else.
 */
#ifndef LBR2PROF_UTIL_CPUS_H
#define LBR2PROF_UTIL_CPUS_H

#include <sched.h>

static inline int lp_cpus(void)
{
    cpu_set_t set;

    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

#endif
