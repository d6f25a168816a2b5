/*
 * cmd_merge.c - `lbr2prof merge`: sums lbr2prof's mergeable raw profiles
 * (--skip-symbolization --raw-header outputs, or earlier merges) into one,
 * as one run over all their traces would have counted them; generate the
 * profile from it once with --unsymbolized-profile. Owns the command line
 * and the dispatch on the kind of input; the merge is the library's
 * (include/lbr2prof/rawmerge.h). Final sample profiles (text, binary,
 * extbinary) are another input kind of this command, not handled here.
 * LP_BUILTIN(merge, cmd_merge, "sum mergeable raw profiles (--skip-symbolization --raw-header)")
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/rawmerge.h"

static const char usage_text[] =
    "usage: lbr2prof merge -o OUT [--weighted-input=W,FILE]... FILE...\n"
    "  sums raw profiles written with --skip-symbolization --raw-header (or by\n"
    "  merge): counts per context and statistics; W multiplies a file's counts.\n"
    "  The inputs must be of the same binaries (build-ids), base and counting\n"
    "  options. Then: lbr2prof --unsymbolized-profile=OUT -o ctx.prof\n";

typedef struct merge_in {
    const char *path;
    uint64_t weight;
} merge_in;

typedef struct merge_args {
    const char *out;
    merge_in *in;
    size_t n;
} merge_args;

static int add_input(merge_args *a, const char *path, uint64_t w)
{
    merge_in *nv = realloc(a->in, (a->n + 1) * sizeof *nv);

    if (!nv)
        return -1;
    a->in = nv;
    nv[a->n++] = (merge_in){path, w};
    return 0;
}

/* "W,FILE" with W a positive integer. */
static int weighted(merge_args *a, const char *v)
{
    char *end;
    uint64_t w = strtoull(v, &end, 10);

    if (end == v || *end != ',' || !end[1] || w == 0 || v[0] == '-')
        return lp_cli_usage_error("merge", "--weighted-input=%s: expected "
                                  "WEIGHT,FILE with a positive integer weight", v);
    return add_input(a, end + 1, w) ? lp_cli_usage_error("merge", "out of memory") : 0;
}

/* 0, 1 (--help printed) or 2 (usage error printed). */
static int parse(merge_args *a, int argc, char **argv)
{
    int i;

    for (i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (!strcmp(s, "--help") || !strcmp(s, "-h"))
            return fputs(usage_text, stdout), 1;
        if (!strcmp(s, "-o") || !strcmp(s, "--output")) {
            if (++i == argc)
                return lp_cli_usage_error("merge", "%s needs a file", s);
            a->out = argv[i];
        } else if (!strncmp(s, "--output=", 9)) {
            a->out = s + 9;
        } else if (!strncmp(s, "--weighted-input=", 17)) {
            if (weighted(a, s + 17))
                return 2;
        } else if (s[0] == '-' && s[1]) {
            return lp_cli_usage_error("merge", "unknown option '%s'", s);
        } else if (add_input(a, s, 1)) {
            return lp_cli_usage_error("merge", "out of memory");
        }
    }
    if (!a->out)
        return lp_cli_usage_error("merge", "--output (-o) is required");
    if (a->n == 0)
        return lp_cli_usage_error("merge", "no input");
    return 0;
}

/* Every input must be a mergeable raw profile. */
static int all_raw(const merge_args *a, lp_error *err)
{
    size_t i;
    int k;

    for (i = 0; i < a->n; i++) {
        if ((k = lp_rawmerge_sniff(a->in[i].path, err)) < 0)
            return -1;
        if (k == 0)
            return lp_error_set(err, LP_EUNSUPP, "%s: not an lbr2prof raw profile "
                                "(#lbr2prof-raw); this build merges those only "
                                "(write them with --skip-symbolization "
                                "--raw-header)", a->in[i].path);
    }
    return 0;
}

static int merge_raw(const merge_args *a, lp_error *err)
{
    lp_rawmerge *m = lp_rawmerge_new(err);
    size_t i, mixed;
    int rc = m ? 0 : -1;

    for (i = 0; i < a->n && rc == 0; i++)
        rc = lp_rawmerge_add(m, a->in[i].path, a->in[i].weight, err);
    if (rc == 0)
        rc = lp_rawmerge_write(m, a->out, err);
    if (rc == 0 && (mixed = lp_rawmerge_mixed(m)) > 0)
        fprintf(stderr, "warning: %zu contexts had leaves both inlined and not "
                "in the merged inputs: their ContextWasInlined is set if any "
                "input set it, where one run keeps its first sample's\n", mixed);
    lp_rawmerge_free(m);
    return rc;
}

int cmd_merge(int argc, char **argv)
{
    merge_args a = {0};
    lp_error err = {0};
    int k = parse(&a, argc, argv);

    if (k == 0 && (all_raw(&a, &err) || merge_raw(&a, &err)))
        k = lp_cli_fail(&err);
    free(a.in);
    return k == 1 ? 0 : k;
}
