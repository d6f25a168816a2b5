/*
 * profiled.c - which function records a profile run decodes: llvm-profgen
 * decodes .pseudo_probe only for the profiled functions (the GUIDs of
 * their DWARF names), with the symbols at their range starts as the
 * start addresses the encoding is relative to. Owns that choice; the
 * decoding is decode.c's.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/binary.h"
#include "probe/probe_internal.h"

static int ptr_cmp(const void *a, const void *b)
{
    const void *x = *(const void *const *)a, *y = *(const void *const *)b;

    return x < y ? -1 : x > y;
}

int lp_probes_decode_for(lp_probes *p, const lp_function *const *in,
                         size_t nin, lp_error *err)
{
    const lp_function **funcs = malloc((nin ? nin : 1) * sizeof *funcs);
    uint64_t *guids = malloc((nin ? nin : 1) * sizeof *guids);
    lp_probe_start *starts = NULL;
    size_t ns = 0, cap = 0, i, k, n = 0;
    int rc = 0;

    if (!guids || !funcs) {
        free(guids);
        free(funcs);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    if (nin)
        memcpy(funcs, in, nin * sizeof *funcs);
    qsort(funcs, nin, sizeof *funcs, ptr_cmp);
    for (i = 0; i < nin; i++)       /* a set: duplicates are dropped */
        if (funcs[i] && (n == 0 || funcs[n - 1] != funcs[i]))
            funcs[n++] = funcs[i];
    for (i = 0; i < n && rc == 0; i++) {
        guids[i] = lp_probe_guid(funcs[i]->name);
        for (k = 0; k < funcs[i]->nranges && rc == 0; k++)
            if (lp_probes_symbols_at(p, funcs[i]->ranges[k]->start, &starts,
                                     &ns, &cap))
                rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    if (rc == 0)
        rc = lp_probes_decode(p, guids, n, starts, ns, err);
    free(guids);
    free(funcs);
    free(starts);
    return rc;
}

bool lp_probes_decoded(const lp_probes *p)
{
    return p->decoded;
}
