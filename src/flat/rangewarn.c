/*
 * rangewarn.c - llvm-profgen 19's warnInvalidRange wording: the detail
 * line of an odd LBR fall-through range and the percentage
 * summaries. Shared by the flat aggregator (aggregate.c) and the unwinder
 * (src/unwind/warn.c). Owns the words only; deciding what is odd is the
 * callers' job.
 */
#include <inttypes.h>

#include "lbr2prof/flat.h"

void lp_range_warn_detail(lp_warn_fn fn, void *ctx, uint64_t start,
                          uint64_t end, lp_range_issue issue)
{
    static const char *const msg[] = {
        [LP_RANGE_NOT_BOUNDARY] = "Range is not on instruction boundary, "
                                  "likely due to profile and binary mismatch.",
        [LP_RANGE_NO_FUNC] = "Range does not belong to any functions, likely "
                             "from PLT, .init or .fini section.",
        [LP_RANGE_CROSS_FUNC] = "Fall through range should not cross function "
                                "boundaries, likely due to profile and binary "
                                "mismatch.",
        [LP_RANGE_BOGUS] = "Range start is after or too far from range end.",
    };

    lp_warnf(fn, ctx, "[%8" PRIx64 ",%8" PRIx64 "]: %s", start, end, msg[issue]);
}

void lp_range_warn_summary(lp_warn_fn fn, void *ctx, const lp_range_stats *st)
{
    lp_warn_summary(fn, ctx, st->not_boundary, st->total, "of samples are "
                    "from ranges that are not on instruction boundary.");
    lp_warn_summary(fn, ctx, st->unmatched, st->total, "of samples are from "
                    "ranges that do not belong to any functions.");
    lp_warn_summary(fn, ctx, st->recovered, st->total, "of samples are from "
                    "ranges that belong to functions recovered from symbol "
                    "table.");
    lp_warn_summary(fn, ctx, st->cross_func, st->total, "of samples are from "
                    "ranges that do cross function boundaries.");
    lp_warn_summary(fn, ctx, st->bogus, st->total, "of samples are from ranges "
                    "that have range start after or too far from range end "
                    "acrossing the unconditinal jmp.");
}
