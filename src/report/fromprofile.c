/*
 * fromprofile.c - an LLVM sample profile (lp_profile, flat or CS) into the
 * report's context tree: CS keys become paths from the root, inlinee
 * profiles become inlined children, body records become line counts.
 * With a binary, functions get their source file and first line from
 * DWARF. Owns that mapping only; reading profiles is src/profile's job.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/ctxcount.h"
#include "report/internal.h"

/* File and first line of function `name` from the binary: the outermost
 * frame of its entry address. Leaves the frame alone when unknown. */
static void func_info(lp_binary *bin, lp_report_frame *fr)
{
    const lp_function *fn;
    const lp_frame *frames;
    size_t n;

    if (!bin || !(fn = lp_binary_function(bin, fr->func)) || !fn->nranges)
        return;
    if (lp_binary_symbolize(bin, fn->ranges[0]->start, &frames, &n, NULL) ||
        n == 0)
        return;
    fr->file = frames[0].file;
    fr->start_line = frames[0].start_line;
}

static lp_report_node *child(lp_report *r, lp_report_node *parent, lp_loc cs,
                             const char *name, bool inlined, lp_binary *bin,
                             lp_error *err)
{
    lp_report_frame fr;

    memset(&fr, 0, sizeof fr);
    fr.func = name;
    fr.inlined = inlined;
    func_info(bin, &fr);
    return lp_report_child(r, parent, cs, &fr, err);
}

/* One function profile under node: its lines, its inlinees, its self. */
static int add_fs(lp_report *r, lp_report_node *node, const lp_fsamples *fs,
                  lp_binary *bin, lp_error *err)
{
    lp_body_view *bv = NULL;
    lp_callee_view *cv = NULL;
    size_t nb = lp_fs_sorted_body(fs, &bv), nc, i;
    uint64_t inl = 0;
    lp_report_node *c;
    int rc = 0;

    if (nb == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    for (i = 0; rc == 0 && i < nb; i++)
        rc = lp_report_add_line(r, node, bv[i].loc, bv[i].count, err);
    lp_body_views_free(bv, nb);
    if (rc)
        return -1;
    if ((nc = lp_fs_sorted_callees(fs, &cv)) == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    for (i = 0; rc == 0 && i < nc; i++) {
        inl = lp_sat_add(inl, cv[i].fs->total);
        if (!(c = child(r, node, cv[i].loc, cv[i].fs->name, true, bin, err)))
            rc = -1;
        else
            rc = add_fs(r, c, cv[i].fs, bin, err);
    }
    free(cv);
    if (rc == 0)
        lp_report_add_self(node, fs->total > inl ? fs->total - inl : 0);
    return rc;
}

/* The node of a CS context key "main:1 @ foo:3.1 @ bar". */
static lp_report_node *context_node(lp_report *r, const char *key,
                                    lp_binary *bin, lp_error *err)
{
    lp_ctx_frame *frames;
    lp_report_node *node = NULL;
    lp_loc cs = {0, 0};
    size_t n, i;
    char *buf;

    if (lp_ctx_parse_key(key, &frames, &n, &buf)) {
        lp_error_set(err, LP_EFORMAT, "profile context [%s]: expected "
                     "\"func:LINE[.DISC] @ ... @ func\"", key);
        return NULL;
    }
    if (n == 0)
        lp_error_set(err, LP_EFORMAT, "profile: empty context []");
    for (i = 0; i < n; i++) {
        if (!(node = child(r, node, cs, frames[i].func, false, bin, err)))
            break;
        cs = frames[i].loc;
    }
    free(frames);
    free(buf);
    return node;
}

int lp_report_add_profile(lp_report *r, const lp_profile *p, lp_binary *bin,
                          lp_error *err)
{
    lp_fsamples **all = NULL;
    lp_report_node *node;
    size_t n = lp_profile_sorted(p, &all), i;
    int rc = 0;

    if (n == (size_t)-1)
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    for (i = 0; rc == 0 && i < n; i++) {
        if (p->is_cs)
            node = context_node(r, all[i]->context, bin, err);
        else
            node = child(r, NULL, (lp_loc){0, 0}, all[i]->name, false, bin,
                         err);
        rc = node ? add_fs(r, node, all[i], bin, err) : -1;
    }
    free(all);
    return rc;
}
