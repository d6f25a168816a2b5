/*
 * lbr2prof/tailcall.h - frames that tail calls removed from a calling
 * context, inferred from the call and tail-call graph the LBR shows
 * (llvm-profgen's MissingFrameInferrer, --infer-missing-frames and
 * --max-search-depth).
 *
 * A tail call (`jmp` to another function instead of `call` + `ret`) leaves
 * no return address: when main calls go and go tail-calls foo, a sample
 * in foo has the stack main -> foo, and foo's counts land in
 * [main:5 @ foo] instead of [main:5 @ go:2 @ foo]. Given a caller's call
 * site and an address in the callee the stack shows next, this module says
 * whether functions are missing between them and which: the tail-call
 * sites of the one path of tail calls that leads from a function the site
 * calls to the callee, when there is exactly one.
 *
 * The graph: a branch the LBR recorded (from, to) is a call edge when
 * `from` is a call instruction, a tail-call edge when `from` is a direct
 * unconditional jump to another function or an indirect jump (in both
 * cases only if `to` is in another function range than `from`), taken as
 * llvm-profgen 22 does (static sites refined by the edges seen in the
 * LBR: only sites and targets the LBR shows count). Functions are the
 * binary's (lp_function: one per DWARF subprogram name). Callers that
 * classify branches themselves add edges with lp_tailcall_add_call /
 * lp_tailcall_add_tail (the unit tests build graphs by hand that way).
 *
 * Two ways to search (opts.mode):
 *   LP_TC_LLVM    llvm-profgen 22's computeUniqueTailCallPath: a depth-
 *                 first search for a path of tail calls, cycles cut where
 *                 a function is already on the search stack, at most
 *                 max_depth functions deep, results cached per (function,
 *                 callee) pair across queries. On a tail-call graph with
 *                 cycles, or with a depth limit that cuts a search, the
 *                 cached answers depend on earlier queries and on the
 *                 order edges are tried, in llvm-profgen too (it iterates
 *                 hash sets of pointers); here edges are tried in address
 *                 order. What a probe profile must use to equal
 *                 llvm-profgen's output.
 *   LP_TC_STRICT  the number of tail-call walks from the site's targets
 *                 to the callee, counted exactly on the graph (a cycle on
 *                 a way to the callee makes their number unbounded:
 *                 ambiguous; a direct call besides a tail path is
 *                 ambiguous too). The answer depends only on the graph,
 *                 never on earlier queries: for repairs that must never
 *                 guess.
 *
 * Not thread-safe; one object per binary. Addresses are link-time
 * addresses of that binary.
 */
#ifndef LBR2PROF_TAILCALL_H
#define LBR2PROF_TAILCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/ctxcount.h"
#include "lbr2prof/error.h"
#include "lbr2prof/flat.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lp_tailcall_mode {
    LP_TC_LLVM = 0,             /* llvm-profgen 22's search (default) */
    LP_TC_STRICT = 1,           /* exact walk count, order-independent */
} lp_tailcall_mode;

/* llvm-profgen's --max-search-depth default (UINT32_MAX - 1). */
#define LP_TC_DEFAULT_MAX_DEPTH (UINT32_MAX - 1)

typedef struct lp_tailcall_opts {
    lp_tailcall_mode mode;
    /* --max-search-depth: at most this many tail-call frames are inserted
     * between two frames (0: only direct calls are recognized) */
    uint32_t max_depth;
} lp_tailcall_opts;

/* LP_TC_LLVM, LP_TC_DEFAULT_MAX_DEPTH. */
void lp_tailcall_opts_default(lp_tailcall_opts *o);

typedef enum lp_tailcall_answer {
    LP_TC_UNKNOWN = 0,  /* nothing to go on: the LBR shows no call from the
                           site to a known function, or the callee address
                           is in no function */
    LP_TC_DIRECT,       /* the site calls the callee's function: nothing
                           is missing */
    LP_TC_UNIQUE,       /* exactly one tail-call path: the tail-call sites
                           in *path, the one nearest the caller first */
    LP_TC_NONE,         /* no path of tail calls reaches the callee (LLVM
                           mode: none within max_depth) */
    LP_TC_AMBIGUOUS,    /* several paths (STRICT: or unboundedly many) */
    LP_TC_TOO_DEEP,     /* STRICT: one path, longer than max_depth */
} lp_tailcall_answer;

#define LP_TC_NANSWERS 6

/* "unknown", "direct", "unique", "none", "ambiguous", "too-deep". */
const char *lp_tailcall_answer_name(lp_tailcall_answer a);

typedef struct lp_tailcall lp_tailcall;

/* bin (may be NULL) classifies branches (lp_tailcall_add_branch) and maps
 * callee addresses to functions (lp_tailcall_find); it must outlive the
 * object. opts NULL: defaults. NULL on allocation failure (err set). */
lp_tailcall *lp_tailcall_new(lp_binary *bin, const lp_tailcall_opts *opts,
                             lp_error *err);
void lp_tailcall_free(lp_tailcall *tc);

/* ---- building the graph ------------------------------------------------ */

/* An LBR branch from -> to of the binary (any branch: what is neither a
 * call nor a tail call from a function is ignored; so is a branch whose
 * target is in no function of the binary, e.g. LP_EXTERNAL_ADDR or
 * another binary's). Needs bin. 0, or -1 (err: decoding, memory). */
int lp_tailcall_add_branch(lp_tailcall *tc, uint64_t from, uint64_t to,
                           lp_error *err);
/* Every branch of c (an LBR-only aggregate or one context's counters). */
int lp_tailcall_add_counters(lp_tailcall *tc, const lp_counters *c,
                             lp_error *err);
/* Every branch of every context of binary `bin_index` in cc (branches to
 * other binaries, LP_CTX_XBIN targets, are ignored). */
int lp_tailcall_add_ctxcount(lp_tailcall *tc, const lp_ctxcount *cc,
                             int bin_index, lp_error *err);

/* Edges classified by the caller: the call at `site` reached `callee`;
 * the tail call at `site` in function `from` reached `callee` (from !=
 * callee's range is the caller's check). Functions are compared by
 * pointer. 0 or -1 (memory). */
int lp_tailcall_add_call(lp_tailcall *tc, uint64_t site,
                         const lp_function *callee, lp_error *err);
int lp_tailcall_add_tail(lp_tailcall *tc, uint64_t site,
                         const lp_function *from, const lp_function *callee,
                         lp_error *err);

/* ---- queries ------------------------------------------------------------- */

/* Frames missing between a caller frame at call site `call_site` and the
 * next frame, an address in `callee` (the callee's own call site, or the
 * leaf address). *path / *n (may be NULL) get the tail-call sites to
 * insert for LP_TC_UNIQUE (else n = 0); the array stays valid until the
 * next query, add or free. Adding edges after a query starts the caches
 * afresh. Never fails: memory exhaustion answers LP_TC_UNKNOWN. */
lp_tailcall_answer lp_tailcall_find(lp_tailcall *tc, uint64_t call_site,
                                    uint64_t callee, const uint64_t **path,
                                    size_t *n);
/* The same with the callee's function given (no binary needed). */
lp_tailcall_answer lp_tailcall_find_fn(lp_tailcall *tc, uint64_t call_site,
                                       const lp_function *callee,
                                       const uint64_t **path, size_t *n);

/* The call sites (sampled or added; not tail calls) that reach f: their
 * number, *out (valid until the next call, add or free). -1 on memory
 * exhaustion. */
long lp_tailcall_call_sites(lp_tailcall *tc, const lp_function *f,
                            const uint64_t **out);

/* The functions with a tail-call site (sampled or added) that reaches f:
 * their number, *out (valid until the next call, add or free). -1 on
 * memory exhaustion. */
long lp_tailcall_tail_callers(lp_tailcall *tc, const lp_function *f,
                              const lp_function *const **out);

/* The functions f's tail-call sites (sampled or added) reach: their
 * number, *out as above. */
long lp_tailcall_tail_callees(lp_tailcall *tc, const lp_function *f,
                              const lp_function *const **out);

/* Whether `from` is `to` or reaches it by tail calls: 1, 0, or -1 when
 * the graph is too large to tell. */
int lp_tailcall_reaches(lp_tailcall *tc, const lp_function *from,
                        const lp_function *to);

/* llvm-profgen's inferMissingFrames(Context, NewContext) for a whole
 * address context ctx[0..n) (outermost call site first, the leaf address
 * last): each adjacent pair's unique path inserted after its caller.
 * *out (capacity *cap, grown with realloc; may start NULL/0) gets the new
 * context. Returns its length (>= n), -1 on memory exhaustion. */
long lp_tailcall_infer_context(lp_tailcall *tc, const uint64_t *ctx,
                               size_t n, uint64_t **out, size_t *cap);

typedef struct lp_tailcall_stats {
    size_t call_sites;          /* sites with a sampled call to a function */
    size_t tail_sites;          /* sites with a sampled tail call */
    size_t tail_funcs;          /* functions with at least one of those */
    size_t queries[LP_TC_NANSWERS]; /* answers given, per kind */
    size_t longest_path;        /* longest path answered */
} lp_tailcall_stats;

void lp_tailcall_stats_get(const lp_tailcall *tc, lp_tailcall_stats *s);

#ifdef __cplusplus
}
#endif
#endif
