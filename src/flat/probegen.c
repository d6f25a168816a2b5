/*
 * probegen.c - llvm-profgen 22's ProfileGenerator::generateProbeBasedProfile
 * for flat (LBR-only) samples of a binary with pseudo probes: the probes
 * of the profiled functions decoded (src/probe), the zero-filled disjoint
 * ranges turned into a count per probe (every probe at an instruction
 * start inside a range, zero-count ranges included, so unsampled probes
 * of a touched function get a 0 record), each probe's count added to its
 * inline stack's profiles (totals, the body record at the probe id and
 * discriminator, head samples for entry probes), call probes' branches
 * into call targets, CFG checksums from the probe descriptions, then
 * the count fix-ups. Post-processing is lp_flat_postprocess's.
 */
#include <stdlib.h>
#include <string.h>

#include "flat/flat_internal.h"
#include "lbr2prof/probe.h"

typedef struct pgen {
    lp_binary *bin;
    lp_probes *pr;
    lp_profile *p;
    lp_probe_frame *fr;         /* inline stack scratch */
    size_t fr_cap;
    lp_error *err;
} pgen;

static int oom(lp_error *err)
{
    return lp_error_set(err, LP_ENOMEM, "profile generation: out of memory");
}

/* collectFunctionsFromRawProfile: the functions of range starts and of
 * branch ends. */
static int profiled_functions(pgen *g, const lp_counters *c)
{
    const lp_addr_pair_count *r, *b;
    long nr = lp_counters_ranges_view(c, &r), nb, i;
    const lp_function **f;
    const lp_func_range *fr;
    size_t n = 0;
    int rc;

    nb = lp_counters_branches_view(c, &b);
    if (!(f = malloc((size_t)(nr + 2 * nb + 1) * sizeof *f)))
        return oom(g->err);
    for (i = 0; i < nr; i++)
        if ((fr = lp_binary_func_range(g->bin, r[i].a)))
            f[n++] = fr->func;
    for (i = 0; i < nb; i++) {
        if ((fr = lp_binary_func_range(g->bin, b[i].a)))
            f[n++] = fr->func;
        if ((fr = lp_binary_func_range(g->bin, b[i].b)))
            f[n++] = fr->func;
    }
    rc = lp_probes_decode_for(g->pr, f, n, g->err);
    free(f);
    return rc;
}

/* The probe's inline stack (leaf included) in g->fr; its length. */
static size_t stack_of(pgen *g, const lp_probe *pr)
{
    size_t n = lp_probes_inline_stack(g->pr, pr, true, g->fr, 0, g->fr_cap);
    lp_probe_frame *nf;

    if (n <= g->fr_cap)
        return n;
    if (!(nf = realloc(g->fr, n * sizeof *nf)))
        return 0;
    g->fr = nf;
    g->fr_cap = n;
    return lp_probes_inline_stack(g->pr, pr, true, g->fr, 0, g->fr_cap);
}

/* getLeafProfileAndAddTotalSamples with probe frames: call sites at the
 * caller's probe id, discriminator 0; checksums from the descriptions. */
static lp_fsamples *leaf_profile(pgen *g, size_t n, uint64_t add)
{
    lp_fsamples *fs = lp_profile_get(g->p, g->fr[0].func, NULL);
    size_t i;

    if (!fs)
        return NULL;
    fs->total = lp_sat_add(fs->total, add);
    fs->checksum = g->fr[0].hash;
    for (i = 1; i < n; i++) {
        lp_loc cs = {g->fr[i - 1].index, 0};

        if (!(fs = lp_fs_callee(fs, cs, g->fr[i].func)))
            return NULL;
        fs->total = lp_sat_add(fs->total, add);
        fs->checksum = g->fr[i].hash;
    }
    return fs;
}

/* extractProbesFromRange over the disjoint ranges: the count of every
 * probe at an instruction start of a range ("hit": zero counts too). */
static int count_probes(pgen *g, const lp_addr_pair_count *d, size_t nd,
                        uint64_t *cnt, uint8_t *hit)
{
    const uint32_t *ids;
    size_t i, k, n;

    for (i = 0; i < nd; i++) {
        n = lp_probes_in(g->pr, d[i].a, d[i].b, &ids);
        for (k = 0; k < n; k++) {
            if (!lp_binary_is_code(g->bin, lp_probes_probe(g->pr, ids[k])->addr))
                continue;
            cnt[ids[k]] = lp_sat_add(cnt[ids[k]], d[i].count);
            hit[ids[k]] = 1;
        }
    }
    return 0;
}

/* populateBodySamplesWithProbesForAllFunctions */
static int body_samples(pgen *g, const lp_counters *c, bool all_funcs)
{
    size_t np = lp_probes_count(g->pr), nd = 0, i, n;
    lp_addr_pair_count *d = NULL;
    uint64_t *cnt = calloc(np ? np : 1, sizeof *cnt);
    uint8_t *hit = calloc(np ? np : 1, 1);
    const lp_probe *pr;
    lp_fsamples *fs;
    lp_body_rec *b;
    int rc = 0;

    if (!cnt || !hit || flat_preprocess(g->bin, c, all_funcs, &d, &nd))
        rc = oom(g->err);
    if (rc == 0)
        rc = count_probes(g, d, nd, cnt, hit);
    for (i = 0; rc == 0 && i < np; i++) {
        if (!hit[i])
            continue;
        pr = lp_probes_probe(g->pr, (uint32_t)i);
        if (!(n = stack_of(g, pr)) || !(fs = leaf_profile(g, n, cnt[i])) ||
            !(b = lp_fs_body(fs, (lp_loc){pr->index, pr->disc}))) {
            rc = oom(g->err);
            break;
        }
        lp_body_add(b, cnt[i]);
        if (lp_probe_is_entry(pr))
            fs->head = lp_sat_add(fs->head, cnt[i]);
    }
    free(d);
    free(cnt);
    free(hit);
    return rc;
}

/* populateBoundarySamplesWithProbesForAllFunctions: a branch to a
 * function entry from a call probe is a call target of the probe's frame
 * (no head samples in the probe-based flat profile). */
static int boundary_samples(pgen *g, const lp_counters *c)
{
    const lp_addr_pair_count *b;
    long nb = lp_counters_branches_view(c, &b), i;
    const lp_probe *call;
    const char *callee;
    lp_fsamples *fs;
    lp_body_rec *rec;
    size_t n;

    for (i = 0; i < nb; i++) {
        if (!(callee = lp_binary_callee_name(g->bin, b[i].b)) ||
            !(call = lp_probes_call_at(g->pr, b[i].a)))
            continue;
        if (!(n = stack_of(g, call)) || !(fs = leaf_profile(g, n, 0)) ||
            !(rec = lp_fs_body(fs, (lp_loc){g->fr[n - 1].index, 0})) ||
            lp_body_add_target(rec, callee, b[i].count))
            return oom(g->err);
    }
    return 0;
}

int lp_flat_generate_probes(lp_binary *bin, lp_probes *pr,
                            const lp_counters *c, const lp_flat_opts *o,
                            lp_profile *out, lp_error *err)
{
    pgen g = {bin, pr, out, NULL, 0, err};
    int rc;

    out->is_probe_based = 1;
    if (!(g.fr = malloc(16 * sizeof *g.fr)))
        return oom(err);
    g.fr_cap = 16;
    rc = (!lp_probes_decoded(pr) && profiled_functions(&g, c)) ||
         body_samples(&g, c, o->fill_zero_for_all_funcs) ||
         boundary_samples(&g, c);
    free(g.fr);
    if (rc)
        return -1;
    return flat_finish_functions(out, o->update_total_samples, err);
}
