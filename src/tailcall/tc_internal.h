/*
 * tc_internal.h - the tail-call graph shared by the files of src/tailcall
 * (not public: users go through lbr2prof/tailcall.h).
 *
 *   graph.c   the object, edges (from LBR branches or given), sealing:
 *             sorted edge lists, strongly connected components
 *   search.c  the queries: llvm-profgen's cached depth-first search
 *             (LP_TC_LLVM) and the exact walk count (LP_TC_STRICT)
 *
 * The graph, as llvm-profgen's MissingFrameInferrer holds it:
 *   sites       call site or tail-call site -> the functions its sampled
 *               branches reached (CallEdgesF / TailCallEdgesF)
 *   functions   function -> its tail-call sites (FuncToTailCallMap), and
 *               whether some tail call reaches it (TailCallTargetFuncs)
 */
#ifndef LBR2PROF_TAILCALL_INTERNAL_H
#define LBR2PROF_TAILCALL_INTERNAL_H

#include <uthash.h>

#include "lbr2prof/tailcall.h"

/* A call or tail-call site with the functions its sampled branches went
 * to, sorted by tc_fn_cmp once sealed. */
typedef struct tc_site {
    uint64_t addr;                  /* key */
    bool tail;                      /* a tail-call site, else a call site */
    const lp_function **targets;
    size_t ntargets, cap;
    UT_hash_handle hh;
} tc_site;

/* A function of the tail-call graph: one that has tail-call sites or is
 * reached by one. */
typedef struct tc_fn {
    const lp_function *fn;          /* key */
    tc_site **sites;                /* its tail-call sites, by address */
    size_t nsites, cap;
    bool tail_target;               /* reached by some tail call */
    bool visiting;                  /* LLVM search: on the search stack */
    /* strongly connected components (sealing) */
    size_t scc;                     /* component id */
    bool cyclic;                    /* on a cycle of tail calls */
    size_t index, low;              /* Tarjan's, 0 = not visited yet */
    bool on_stack;
    UT_hash_handle hh;
} tc_fn;

/* What a branch source is, remembered per address. */
enum tc_class { TC_OTHER = 0, TC_CALL = 1, TC_TAIL = 2 };

typedef struct tc_class_memo {
    uint64_t addr;                  /* key */
    enum tc_class cls;
    UT_hash_handle hh;
} tc_class_memo;

/* A (function, callee) pair's cached answer. LLVM: the path count (1 =
 * unique, with its path; 0 or >1 as llvm-profgen's NonUniquePaths).
 * STRICT: the walk count, capped at 2. */
typedef struct tc_pair {
    const lp_function *from, *to;   /* key (both, as bytes) */
    uint64_t count;
    uint64_t *path;
    size_t n;
    UT_hash_handle hh;
} tc_pair;

/* A growing vector of addresses. */
typedef struct tc_vec {
    uint64_t *v;
    size_t n, cap;
} tc_vec;

int tc_vec_push(tc_vec *p, uint64_t a);

struct lp_tailcall {
    lp_binary *bin;                 /* may be NULL */
    lp_tailcall_opts opts;
    tc_site *sites;                 /* uthash by addr */
    tc_fn *fns;                     /* uthash by function pointer */
    tc_class_memo *classes;         /* uthash by addr */
    tc_pair *pairs;                 /* uthash by (from, to) */
    size_t budget;                  /* STRICT: edges a query may still
                                       follow */
    bool sealed;
    bool oom;                       /* a query ran out of memory */
    uint32_t depth;                 /* LLVM: CurSearchingDepth */
    tc_vec path;                    /* the answer handed out */
    tc_vec sites_out;               /* lp_tailcall_call_sites' answer */
    const lp_function **callers;    /* lp_tailcall_tail_callers' answer */
    size_t callers_cap;
    lp_tailcall_stats stats;
};

/* graph.c */
tc_fn *tc_fn_get(lp_tailcall *tc, const lp_function *fn, bool create);
tc_site *tc_site_get(lp_tailcall *tc, uint64_t addr);
/* Sort edge lists, find the components; drops every cached answer. */
int tc_seal(lp_tailcall *tc);
void tc_drop_pairs(lp_tailcall *tc);
/* Order of functions: first range start, then name. */
int tc_fn_cmp(const lp_function *a, const lp_function *b);

/* search.c */
tc_pair *tc_pair_find(lp_tailcall *tc, const lp_function *from,
                      const lp_function *to);
tc_pair *tc_pair_put(lp_tailcall *tc, const lp_function *from,
                     const lp_function *to, uint64_t count,
                     const uint64_t *path, size_t n);

#endif
