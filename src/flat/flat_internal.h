/*
 * flat_internal.h - what the flat generator's files share: the range
 * preprocessing and the count fix-ups of ProfileGenerator, used by the
 * line-based (generate.c) and the probe-based (probegen.c) generation.
 * Not public: users go through lbr2prof/flat.h.
 */
#ifndef LBR2PROF_FLAT_INTERNAL_H
#define LBR2PROF_FLAT_INTERNAL_H

#include "lbr2prof/flat.h"

/* preprocessRangeCounter: the counters' ranges plus zero ranges for the
 * functions they touch (every function with all_funcs), cut into
 * disjoint ranges (*v malloc'ed). 0 or -1 (no memory). */
int flat_preprocess(lp_binary *bin, const lp_counters *c, bool all_funcs,
                    lp_addr_pair_count **v, size_t *n);
/* updateFunctionSamples: body counts raised to their call targets, then
 * (update_total) totals recomputed. 0 or -1. */
int flat_finish_functions(lp_profile *p, bool update_total, lp_error *err);

#endif
