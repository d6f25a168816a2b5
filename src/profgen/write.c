/*
 * write.c - lp_profgen_write: a driver result to its output file, written
 * atomically (lp_outfile: temporary file + rename): the profile in the
 * asked format (src/writer), or the unsymbolized flat or CS counters.
 * Owns the writer options llvm-profgen derives from its flags; not the
 * formats.
 */
#include <stdlib.h>

#include "lbr2prof/outfile.h"
#include "profgen/pg_internal.h"

/* --populate-profile-symbol-list: every function of the binary. */
static int symbol_list(lp_binary *bin, lp_write_opts *wo, const char ***names,
                       lp_error *err)
{
    const lp_function *const *funcs;
    size_t i, n = lp_binary_functions(bin, &funcs);

    if (!(*names = calloc(n ? n : 1, sizeof **names)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; i < n; i++)
        (*names)[i] = funcs[i]->name;
    wo->symbol_list = *names;
    wo->nr_symbols = n;
    return 0;
}

static int write_profile(const lp_profgen_opts *o, lp_binary *bin,
                         const lp_profile *p, lp_error *err)
{
    lp_write_opts wo = {0};
    const char **names = NULL;
    lp_outfile out = {0};
    int rc = 0;

    wo.format = o->format;
    if (o->use_md5 && wo.format != LP_PROF_EXTBINARY)
        pg_warn(o, "-use-md5 is ignored. Specify --format=extbinary to "
                   "enable it");
    wo.use_md5 = o->use_md5 && wo.format == LP_PROF_EXTBINARY;
    wo.fs_discriminator = bin && lp_binary_fs_discriminator(bin);
    wo.context_summary = o->summary_contextless == 0;
    if (o->populate_symbol_list && wo.format == LP_PROF_EXTBINARY && bin)
        rc = symbol_list(bin, &wo, &names, err);
    if (rc == 0)
        rc = lp_outfile_open(&out, o->output, err);
    if (rc == 0 && (rc = lp_profile_write(out.fp, p, &wo, err)) == 0)
        rc = lp_outfile_commit(&out, err);
    else if (rc != 0 && out.fp)
        lp_outfile_abort(&out);
    free(names);
    return rc;
}

/* --skip-symbolization: addresses relative to the --use-offset base;
 * with --raw-header, lbr2prof's mergeable raw profile (rawio.c). */
static int write_raw(const lp_profgen_opts *o, const lp_profgen_result *r,
                     lp_error *err)
{
    uint64_t base = pg_raw_base(o, r->bins[0]);
    lp_outfile out;
    int rc;

    if (lp_outfile_open(&out, o->output, err))
        return -1;
    if (o->raw_header)
        rc = pg_raw_write(out.fp, o, r, err);
    else if (r->kind == LP_PROFGEN_RAW_CS)
        rc = lp_ctxcount_write_raw(out.fp, r->raw_cs, 0, base, err);
    else
        rc = lp_rawprof_write(out.fp, r->raw_flat, base, err);
    if (rc) {
        lp_outfile_abort(&out);
        return -1;
    }
    return lp_outfile_commit(&out, err);
}

int lp_profgen_write(const lp_profgen_opts *o, const lp_profgen_result *r,
                     lp_error *err)
{
    if (!o->output)
        return lp_error_set(err, LP_EUSAGE, "no output file");
    if (r->kind == LP_PROFGEN_PROFILE)
        return write_profile(o, r->nbins ? r->bins[0] : NULL, r->profile, err);
    return write_raw(o, r, err);
}
