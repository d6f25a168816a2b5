/*
 * util/cpus.h - how many CPUs this process may run on (its affinity
 * mask): the one test of whether a second thread can pay. Owns nothing.
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
