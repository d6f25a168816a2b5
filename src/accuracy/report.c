/*
 * report.c - prints a comparison (lp_accuracy): the per-function and
 * per-context tables, what was lost where, and the closing line. Owns
 * wording and layout only.
 */
#include <inttypes.h>
#include <math.h>

#include "lbr2prof/accuracy.h"

/* A percentage that reads 100.00 only when it is exact. */
static double pct(uint64_t num, uint64_t den)
{
    if (!den)
        return 100.0;
    return floor((double)num * 10000.0 / (double)den) / 100.0;
}

static const char *status_name(int s)
{
    return s == LP_CTX_RIGHT ? "right" : s == LP_CTX_MISSING ? "missing"
           : s == LP_CTX_TRUNCATED ? "cut" : "wrong";
}

static size_t rows(const lp_accuracy_print_opts *o, size_t n)
{
    return o->max_rows && o->max_rows < n ? o->max_rows : n;
}

static void print_functions(FILE *f, const lp_accuracy *a,
                            const lp_accuracy_print_opts *o)
{
    size_t i, n = rows(o, a->nfn);

    fprintf(f, "per function (%s):\n", a->cs
            ? "its contexts summed; right ctx = in the right context, right "
              "fn = at the right line in any context"
            : "right = at the right location");
    if (a->cs)
        fprintf(f, "  %12s %12s %9s %9s %10s  %-21s %s\n", "ideal", "profile",
                "right ctx", "right fn", "similarity", "ctx ok/miss/cut/wrong",
                "function");
    else
        fprintf(f, "  %12s %12s %9s %10s  %s\n", "ideal", "profile", "right",
                "similarity", "function");
    for (i = 0; i < n; i++) {
        const lp_acc_func *u = &a->fn[i];
        char ctx[48];
        if (a->cs) {
            snprintf(ctx, sizeof ctx, "%zu/%zu/%zu/%zu", u->right, u->missing,
                     u->truncated, u->wrong);
            fprintf(f, "  %12" PRIu64 " %12" PRIu64 " %8.2f%% %8.2f%% %10.4f  "
                    "%-21s %s\n", u->ideal, u->actual, pct(u->matched, u->ideal),
                    pct(u->matched_fn, u->ideal), u->similarity, ctx, u->name);
        } else {
            fprintf(f, "  %12" PRIu64 " %12" PRIu64 " %8.2f%% %10.4f  %s\n",
                    u->ideal, u->actual, pct(u->matched, u->ideal),
                    u->similarity, u->name);
        }
    }
    if (n < a->nfn)
        fprintf(f, "  ... %zu more functions\n", a->nfn - n);
}

static void print_contexts(FILE *f, const lp_accuracy *a,
                           const lp_accuracy_print_opts *o)
{
    size_t i, n = rows(o, a->nctx);

    fprintf(f, "per context:\n  %12s %12s %8s %10s  %-7s  %s\n", "ideal",
            "profile", "right", "similarity", "status", "context");
    for (i = 0; i < n; i++) {
        const lp_acc_ctx *c = &a->ctx[i];
        if (c->ideal)
            fprintf(f, "  %12" PRIu64 " %12" PRIu64 " %7.2f%% %10.4f  %-7s  "
                    "[%s]\n", c->ideal, c->actual, pct(c->matched, c->ideal),
                    c->similarity, status_name(c->status), c->key);
        else
            fprintf(f, "  %12" PRIu64 " %12" PRIu64 " %8s %10.4f  %-7s  [%s]\n",
                    c->ideal, c->actual, "-", c->similarity,
                    status_name(c->status), c->key);
    }
    if (n < a->nctx)
        fprintf(f, "  ... %zu more contexts\n", a->nctx - n);
}

static void print_losses(FILE *f, const lp_accuracy *a)
{
    uint64_t lost = a->ideal - a->matched;

    if (a->cs)
        fprintf(f, "lost: %" PRIu64 " of the ideal counts (%" PRIu64 " at the "
                "right line of another context, %" PRIu64 " nowhere in the "
                "profile); the profile has %" PRIu64 " counts in %zu contexts "
                "truncated at an unknown caller and %" PRIu64 " counts in %zu "
                "contexts the truth does not have\n", lost,
                a->matched_fn - a->matched, a->ideal - a->matched_fn,
                a->truncated_counts, a->truncated, a->wrong_counts, a->wrong);
    else
        fprintf(f, "lost: %" PRIu64 " of the ideal counts; the profile has %"
                PRIu64 " counts in %zu functions the truth does not have\n",
                lost, a->wrong_counts, a->wrong);
    if (a->recursive_missing && !a->recursive_in_profile)
        fprintf(f, "note: %zu missing contexts are recursive and the profile "
                "has none: was it made with --compress-recursion=0?\n",
                a->recursive_missing);
}

int lp_accuracy_print(FILE *f, const lp_accuracy *a,
                      const lp_accuracy_print_opts *o, lp_error *err)
{
    static const lp_accuracy_print_opts def;

    if (!o)
        o = &def;
    if (!o->summary_only) {
        print_functions(f, a, o);
        if (a->cs)
            print_contexts(f, a, o);
        print_losses(f, a);
    }
    if (a->cs)
        fprintf(f, "accuracy: %.2f%% of range counts in the right context "
                "(ideal %" PRIu64 ", matched %" PRIu64 "), similarity %.5f, "
                "contexts: %zu right, %zu missing, %zu truncated, %zu wrong; "
                "right function and line: %.2f%%, similarity %.5f\n",
                pct(a->matched, a->ideal), a->ideal, a->matched, a->similarity,
                a->right, a->missing, a->truncated, a->wrong,
                pct(a->matched_fn, a->ideal), a->similarity_fn);
    else
        fprintf(f, "accuracy: %.2f%% of range counts at the right location "
                "(ideal %" PRIu64 ", matched %" PRIu64 "), similarity %.5f, "
                "functions: %zu right, %zu missing, %zu wrong\n",
                pct(a->matched, a->ideal), a->ideal, a->matched, a->similarity,
                a->right, a->missing, a->wrong);
    if (ferror(f))
        return lp_error_set(err, LP_EIO, "write error");
    return 0;
}
