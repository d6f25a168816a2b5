/*
 * acc_internal.h - helpers shared inside src/accuracy (not public API).
 */
#ifndef LBR2PROF_ACC_INTERNAL_H
#define LBR2PROF_ACC_INTERNAL_H

#include "lbr2prof/accuracy.h"

/* Σ over the units of two function profiles (body records at every inline
 * level, matched by location, inlinees by call site and name) of
 * min(a, b). Either may be NULL. -1 (as uint64_t max) on OOM is not
 * distinguished: the views only fail on allocation. */
uint64_t acc_min_sum(const lp_fsamples *a, const lp_fsamples *b);

#endif
