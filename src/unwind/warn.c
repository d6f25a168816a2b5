/*
 * warn.c - the warnings of a hybrid run, in llvm-profgen 19's order and
 * wording (parsePerfTraces: leaf external frames, truncated stacks,
 * warnInvalidRange over every consecutive LBR pair of the distinct
 * samples; unwindSamples: truncated contexts and the unwinder's branch
 * counters), then lbr2prof's own summary of the frame repair. Detailed
 * lists (--show-detailed-warning) are sorted by address. Owns only the
 * messages; the counts are gathered by intake.c and trie.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/uw_internal.h"

void uw_warnf(const lp_unwinder *u, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (!u->o.warn)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    u->o.warn(u->o.warn_ctx, buf);
}

void uw_summary(const lp_unwinder *u, uint64_t num, uint64_t total,
                const char *msg)
{
    if (!num || !total)
        return;
    uw_warnf(u, "%.2f%%(%" PRIu64 "/%" PRIu64 ") %s", (double)num * 100 / total,
             num, total, msg);
}

int uw_note_pairs(lp_unwinder *u, const uw_lbr *lbr, size_t n,
                  uint64_t repeat)
{
    uint64_t end = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        if (end != 0 && uw_map_add(&u->pairs, lbr[i].dst, end, repeat))
            return -1;
        end = lbr[i].src;
    }
    return 0;
}

/* ---- sorted views of the note tables ----------------------------------------- */

static int note_cmp(const void *x, const void *y)
{
    const uw_note *a = *(uw_note *const *)x, *b = *(uw_note *const *)y;

    if (a->k[0] != b->k[0])
        return a->k[0] < b->k[0] ? -1 : 1;
    return a->k[1] < b->k[1] ? -1 : a->k[1] > b->k[1];
}

static uw_note **sorted(uw_note *set, size_t *n)
{
    uw_note **v, *e;
    size_t i = 0;

    *n = HASH_COUNT(set);
    if (!(v = malloc((*n ? *n : 1) * sizeof *v)))
        return NULL;
    for (e = set; e; e = e->hh.next)
        v[i++] = e;
    qsort(v, *n, sizeof *v, note_cmp);
    return v;
}

/* ---- warnInvalidRange ---------------------------------------------------------- */

typedef struct range_stats {
    uint64_t total, not_boundary, unmatched, cross_func, bogus, recovered;
} range_stats;

static void detail(const lp_unwinder *u, const uw_slot3 *e, const char *msg)
{
    if (u->o.show_detailed_warning)
        uw_warnf(u, "[%8" PRIx64 ",%8" PRIx64 "]: %s", e->k1, e->k2, msg);
}

/* Whether [s, en] (one binary's) is a valid fall-through: the answer the
 * unwinding had for the range - its split (no piece: invalid), or the
 * probe path's fall-through cache - before asking the binary again (a
 * walk over the instructions, on one thread at the end of the flush:
 * 7 M instructions of bench (c)'s 17 M warnings). */
static int valid_range(lp_unwinder *u, uint64_t s, uint64_t en,
                       lp_error *err)
{
    const uw_split *sp = (const uw_split *)(uintptr_t)uw_map_get(&u->splits, s, en);

    if (sp)
        return sp->npieces > 0;
    if (u->ft)
        return uw_valid_range(u, s, en, err);
    return lp_binary_valid_fallthrough(uw_bin(u, en), uw_va(s), uw_va(en), err);
}

/* One pair (k1, k2) -> weight v. */
static int classify(lp_unwinder *u, const uw_slot3 *e, range_stats *st,
                    lp_error *err)
{
    uint64_t s = e->k1, en = e->k2;
    bool sc = s > UW_EXT && (uw_addr(u, s)->flags & UW_AI_CODE);
    bool ec = en > UW_EXT && (uw_addr(u, en)->flags & UW_AI_CODE);
    lp_binary *eb = uw_bin(u, en);
    const lp_func_range *fr;
    int v;

    st->total += e->v;
    if (!sc && !ec)
        return 0;
    if (!sc || !(lp_binary_is_branch(eb, uw_va(en)) || lp_binary_is_call(eb, uw_va(en)) ||
                 lp_binary_is_return(eb, uw_va(en)))) {
        st->not_boundary += e->v;
        detail(u, e, "Range is not on instruction boundary, likely due to "
                     "profile and binary mismatch.");
    }
    if (!(fr = uw_func_range(u, s))) {
        st->unmatched += e->v;
        detail(u, e, "Range does not belong to any functions, likely from "
                     "PLT, .init or .fini section.");
        return 0;
    }
    if (fr->func->from_symtab || fr->func->symtab_mismatch)
        st->recovered += e->v;
    if (uw_bin_of(en) != uw_bin_of(s) || uw_va(en) >= fr->end) {
        st->cross_func += e->v;
        detail(u, e, "Fall through range should not cross function "
                     "boundaries, likely due to profile and binary mismatch.");
    }
    if (sc && ec) {
        if ((v = uw_bin_of(en) == uw_bin_of(s) ? valid_range(u, s, en, err) : 0) < 0)
            return -1;
        if (!v) {
            st->bogus += e->v;
            detail(u, e, "Range start is after or too far from range end.");
        }
    }
    return 0;
}

static int warn_invalid_ranges(lp_unwinder *u, lp_error *err)
{
    range_stats st = {0};
    uw_slot3 *v;
    size_t n = u->pairs.count, i;
    int rc = 0;

    if (!n) {
        uw_warnf(u, "No samples in perf script!");
        return 0;
    }
    /* in order only for the details: the totals are sums (sorting was
     * 12 M instructions of bench (c)'s single-threaded end of the flush) */
    if (!(v = uw_map_list(&u->pairs, u->o.show_detailed_warning)))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    for (i = 0; i < n && rc == 0; i++)
        rc = classify(u, &v[i], &st, err);
    free(v);
    if (rc)
        return -1;
    uw_summary(u, st.not_boundary, st.total, "of samples are from ranges "
               "that are not on instruction boundary.");
    uw_summary(u, st.unmatched, st.total, "of samples are from ranges that "
               "do not belong to any functions.");
    uw_summary(u, st.recovered, st.total, "of samples are from ranges that "
               "belong to functions recovered from symbol table.");
    uw_summary(u, st.cross_func, st.total, "of samples are from ranges that "
               "do cross function boundaries.");
    uw_summary(u, st.bogus, st.total, "of samples are from ranges that have "
               "range start after or too far from range end acrossing the "
               "unconditinal jmp.");
    return 0;
}

/* ---- the truncated-stack warnings (warnTruncatedStack) ------------------------- */

static int u64_cmp(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

static int warn_truncated(lp_unwinder *u, lp_error *err)
{
    size_t n = HASH_COUNT(u->invalid_ret), i = 0;
    uint64_t *v;
    uw_set64 *e;

    if (u->o.show_detailed_warning && n) {
        if (!(v = malloc(n * sizeof *v)))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        for (e = u->invalid_ret; e; e = e->hh.next)
            v[i++] = e->v;
        qsort(v, n, sizeof *v, u64_cmp);
        for (i = 0; i < n; i++)
            uw_warnf(u, "Truncated stack sample due to invalid return address "
                        "at 0x%" PRIx64 ", likely caused by frame pointer "
                        "omission", v[i]);
        free(v);
    }
    uw_summary(u, n, u->st.distinct, "of truncated stack samples due to "
               "invalid return address, likely caused by frame pointer "
               "omission.");
    return 0;
}

/* ---- the unwinder's summaries (unwindSamples) ----------------------------------- */

static void warn_unwinder(lp_unwinder *u)
{
    const lp_unwind_stats *s = &u->st;

    if (u->o.show_detailed_warning && u->untracked_ext)
        uw_warnf(u, "Profile context truncated due to missing probe for call "
                    "instruction at 0x%" PRIx64, UW_EXT);
    uw_summary(u, u->untracked_ext, lp_ctxcount_size(u->cc), "of profiled "
               "contexts are truncated due to missing probe for call "
               "instruction.");
    uw_summary(u, s->mismatched_ext_call, s->total_branches, "of branches'source "
               "is a call instruction but doesn't match call frame stack, "
               "likely due to unwinding error of external frame.");
    uw_summary(u, s->paired_ext * 2, s->total_branches, "of branches containing "
               "paired external address.");
    uw_summary(u, s->unpaired_ext, s->total_branches, "of branches containing "
               "external address but doesn't have another external address "
               "to pair, likely due to interrupt jmp or broken perf script.");
    uw_summary(u, s->mismatched_proepi, s->total_branches, "of branches'source "
               "is a call instruction but doesn't match call frame stack, "
               "likely due to frame in prolog/epilog.");
}

/* ---- lbr2prof's own: the frame repair (only when it is on) ------------------------ */

enum note_kind { NOTE_REPAIRED, NOTE_DROPPED, NOTE_CONTEXTLESS, NOTE_LOST };

static void note_line(const lp_unwinder *u, enum note_kind k, const uw_note *e)
{
    static const char *why[] = {"prolog/epilog", "entry", "exit", "frameless function"};

    if (k == NOTE_REPAIRED)
        uw_warnf(u, "Caller frame missing at 0x%" PRIx64 " inserted from the "
                    "LBR or the user stack: call at 0x%" PRIx64 " (%" PRIu64
                    " samples)",
                 e->k[0], e->k[1], e->count);
    else if (k == NOTE_DROPPED)
        uw_warnf(u, "Sample at 0x%" PRIx64 " (function %s) dropped: its "
                    "caller is not in the LBR (%" PRIu64 " samples)",
                 e->k[0], why[e->k[1] < 4 ? e->k[1] : 0], e->count);
    else if (k == NOTE_CONTEXTLESS)
        uw_warnf(u, "Unwinding stopped at the range [0x%" PRIx64 ", 0x%" PRIx64
                    "]; older branches counted without context (%" PRIu64
                    " samples)", e->k[0], e->k[1], e->count);
    else if (e->k[0] == UW_LOST_NONLOCAL)
        uw_warnf(u, "Call at 0x%" PRIx64 " left frames without returning "
                    "(longjmp?): older branches have no known context (%"
                    PRIu64 " samples)", e->k[1], e->count);
    else if (e->k[0] == UW_LOST_ASYNC)
        uw_warnf(u, "Code at 0x%" PRIx64 " was interrupted with no signal "
                    "frame to show where: older branches have no known "
                    "context (%" PRIu64 " samples)", e->k[1], e->count);
    else if (e->k[0] == UW_LOST_NORET)
        uw_warnf(u, "Return at 0x%" PRIx64 " lands after no call: older "
                    "branches have no known context (%" PRIu64 " samples)",
                 e->k[1], e->count);
    else
        uw_warnf(u, "External code jumped to 0x%" PRIx64 ", neither a "
                    "function entry nor after a call (exception?): older "
                    "branches have no known context (%" PRIu64 " samples)",
                 e->k[1], e->count);
}

static int list_notes(lp_unwinder *u, uw_note *set, enum note_kind k,
                      lp_error *err)
{
    uw_note **v;
    size_t n, i;

    if (!u->o.show_detailed_warning || !set)
        return 0;
    if (!(v = sorted(set, &n)))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    for (i = 0; i < n; i++)
        note_line(u, k, v[i]);
    free(v);
    return 0;
}

/* "had WHAT: A agree, D disagree (USED)." when either happened */
static void agreement(const lp_unwinder *u, uint64_t agree, uint64_t disagree,
                      const char *what, const char *used)
{
    const lp_unwind_stats *s = &u->st;

    if (agree || disagree)
        uw_warnf(u, "%.2f%%(%" PRIu64 "/%" PRIu64 ") of samples had %s: %" PRIu64
                    " agree, %" PRIu64 " disagree (%s).",
                 (double)(agree + disagree) * 100 / s->samples, agree + disagree,
                 s->samples, what, agree, disagree, used);
}

/* The CFI stacks (cfistack.c). */
static void warn_cfi(const lp_unwinder *u, const lp_unwind_stats *s)
{
    if (s->cfi_stacks)
        uw_warnf(u, "%.2f%%(%" PRIu64 "/%" PRIu64 ") of samples had a call "
                    "stack no recorded frame-pointer walk proves; it was "
                    "unwound from the user stack with CFI: %" PRIu64 " frames "
                    "by CFI, %" PRIu64 " by frame pointers (code without CFI, "
                    "or past the end of the stack copy); the recorded walk has "
                    "a wrong frame in %" PRIu64 " of them.",
                 (double)s->cfi_stacks * 100 / s->samples, s->cfi_stacks,
                 s->samples, s->cfi_frames, s->cfi_fp_frames, s->cfi_changed);
    agreement(u, s->cfi_lbr_agree, s->cfi_lbr_disagree, "a caller "
              "frame-pointer walks miss (function entry or exit, frameless "
              "function) in both the CFI stack and the LBR", "the CFI's is used");
    uw_summary(u, s->exact_stacks, s->samples, "of samples had a call stack "
               "kept as recorded (Intel PT: the decoder's calls and returns, "
               "no frame-pointer walk to repair).");
    agreement(u, s->exact_lbr_agree, s->exact_lbr_disagree, "a caller "
              "frame-pointer walks miss (function entry or exit, frameless "
              "function) in both the decoder's stack and the LBR",
              "the stack's is used");
    uw_summary(u, s->cfi_partial, s->samples, "of samples had a CFI walk that "
               "ended in the binaries' code before the outermost frame (a "
               "short stack copy, code without CFI): the callers below are "
               "not known.");
    uw_summary(u, s->cfi_failed, s->samples, "of samples could not be "
               "unwound with CFI (no caller found); the frame-pointer walk "
               "was used.");
}

static int warn_repair(lp_unwinder *u, lp_error *err)
{
    const lp_unwind_stats *s = &u->st;

    if (!u->o.repair_frames)
        return 0;
    if (list_notes(u, u->notes_repaired, NOTE_REPAIRED, err) ||
        list_notes(u, u->notes_dropped, NOTE_DROPPED, err) ||
        list_notes(u, u->notes_contextless, NOTE_CONTEXTLESS, err) ||
        list_notes(u, u->notes_lost, NOTE_LOST, err))
        return -1;
    uw_summary(u, s->repaired, s->samples, "of samples had the caller frame "
               "missing (function entry or exit, frameless function); it was "
               "recovered from "
               "the LBR.");
    uw_summary(u, s->repaired_stack, s->samples, "of samples had the caller "
               "frame missing and not shown by the LBR; it was recovered from "
               "the user stack.");
    agreement(u, s->stack_agree, s->stack_disagree, "the missing caller "
              "frame in both the LBR and the user stack", "the LBR is used");
    warn_cfi(u, s);
    uw_summary(u, s->caller_hole, s->samples, "of samples had the caller "
               "frame missing and not shown by the newest LBR entries; it was "
               "left unknown until the unwinding finds its call.");
    uw_summary(u, s->inferred, s->samples, "of samples had a caller frame "
               "that neither the sample's LBR nor its stack showed; it was "
               "inferred: one call site alone leads there, among the "
               "program's direct calls and the calls the LBR shows.");
    uw_summary(u, s->dropped_prolog, s->samples, "of samples at a function "
               "entry or exit or in a frameless function were dropped: the "
               "LBR does not show their caller (--drop-unknown-callers).");
    uw_summary(u, s->truncated, s->samples, "of samples had their call "
               "stack truncated at an invalid return address.");
    uw_summary(u, s->signal_frames, s->samples, "of samples went through a "
               "signal delivery; the code before it was unwound on the "
               "interrupted stack.");
    uw_summary(u, s->nonlocal, s->samples, "of samples left frames without "
               "returning from them (longjmp, exception, context switch).");
    uw_summary(u, s->interrupted, s->samples, "of samples had an LBR range "
               "that is no fall-through (interrupt or broken LBR) with no "
               "signal frame to explain it.");
    if (s->lost)
        uw_warnf(u, "%.2f%%(%" PRIu64 "/%" PRIu64 ") of samples had code in "
                    "frames whose callers are not known (after the above, or "
                    "a broken frame-pointer chain): %" PRIu64 " of their "
                    "ranges and branches were %s.",
                 (double)s->lost * 100 / (s->samples ? s->samples : 1),
                 s->lost, s->samples, s->lost_records,
                 u->o.drop_unknown ? "dropped"
                                   : "kept in contexts truncated at the "
                                     "unknown frame");
    return 0;
}

int uw_emit_warnings(lp_unwinder *u, lp_error *err)
{
    uw_summary(u, u->st.leaf_external,
               u->total_set ? u->total_samples : u->st.sample_calls,
               "of samples have leaf external frame in call stack.");
    if (warn_truncated(u, err) || warn_invalid_ranges(u, err))
        return -1;
    warn_unwinder(u);
    return warn_repair(u, err);
}
