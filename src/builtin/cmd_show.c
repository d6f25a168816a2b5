/*
 * cmd_show.c - `lbr2prof show PROFILE`: what `llvm-profdata show --sample`
 * prints for a text, binary or extbinary sample profile (functions,
 * summary, hot functions, symbol list, section table), with its flags.
 * LP_BUILTIN(show, cmd_show, "print a sample profile as llvm-profdata show --sample does")
 *
 * Owns option parsing only: reading is src/profile's, the output format
 * src/writer/show.c's.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/profile.h"

typedef struct show_args {
    const char *input, *output;
    lp_show_opts so;
    int sections;
} show_args;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: lbr2prof show [options] PROFILE    (PROFILE may be '-')\n"
        "  Prints a sample profile (LLVM text, binary or extbinary) as\n"
        "  `llvm-profdata show --sample` does; its flags are accepted with\n"
        "  one or two dashes.\n"
        "  --function=NAME        that function only (an MD5 profile: the hash\n"
        "                         of NAME; a CS profile: that context)\n"
        "  --all-functions        every function (the default)\n"
        "  --topn=N               the N hottest functions, in a table\n"
        "  --hot-func-list        every hot function, in a table\n"
        "  --detailed-summary     the profile summary and its cutoffs\n"
        "  --show-prof-sym-list   the profile symbol list\n"
        "  --show-sec-info-only   the extbinary section table only\n"
        "  --json, --show-format=json|text   the functions as JSON\n"
        "  --sample               accepted (sample profiles are all show reads)\n"
        "  -o, --output=FILE      write there (default: standard output)\n");
}

static int parse_u32(const char *s, uint32_t *v)
{
    char *end;
    unsigned long x;

    if (!*s || *s == '-')
        return -1;
    x = strtoul(s, &end, 10);
    if (*end || x > UINT32_MAX)
        return -1;
    *v = (uint32_t)x;
    return 0;
}

static int parse_args(int argc, char **argv, show_args *a)
{
    static const struct option lo[] = {
        {"function", required_argument, NULL, 'f'},
        {"all-functions", no_argument, NULL, 'a'},
        {"topn", required_argument, NULL, 'n'},
        {"hot-func-list", no_argument, NULL, 'H'},
        {"detailed-summary", no_argument, NULL, 'd'},
        {"show-prof-sym-list", no_argument, NULL, 'y'},
        {"show-sec-info-only", no_argument, NULL, 'S'},
        {"sample", no_argument, NULL, 's'},
        {"json", no_argument, NULL, 'j'},
        {"show-format", required_argument, NULL, 'F'},
        {"instr", no_argument, NULL, 'I'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    memset(a, 0, sizeof *a);
    a->output = "-";
    optind = 1;
    while ((c = getopt_long_only(argc, argv, "o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'f': a->so.function = optarg; break;
        case 'a': a->so.all_functions = 1; break;
        case 'n':
            if (parse_u32(optarg, &a->so.topn))
                return lp_cli_usage_error("show", "bad --topn '%s'", optarg);
            break;
        case 'H': a->so.hot_func_list = 1; break;
        case 'd': a->so.detailed_summary = 1; break;
        case 'y': a->so.prof_sym_list = 1; break;
        case 'S': a->sections = 1; break;
        case 's': break;
        case 'j': a->so.json = 1; break;
        case 'F':
            if (strcmp(optarg, "json") && strcmp(optarg, "text"))
                return lp_cli_usage_error("show", "--show-format=%s: json or "
                                          "text (YAML is not supported for "
                                          "sample profiles)", optarg);
            a->so.json = !strcmp(optarg, "json");
            break;
        case 'I':
            return lp_cli_usage_error("show", "instrumentation profiles are not "
                                      "read (sample profiles only)");
        case 'o': a->output = optarg; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        a->input = argv[optind++];
    if (optind < argc)
        return lp_cli_usage_error("show", "unexpected argument '%s'", argv[optind]);
    if (!a->input) {
        usage(stderr);
        return 2;
    }
    if (a->so.function && a->so.all_functions)
        fprintf(stderr, "warning: --function ignored: showing all functions\n");
    return 0;
}

static int show(const show_args *a, FILE *f, lp_error *err)
{
    lp_prof_info info;
    lp_profile *p;
    int rc, missing = 0;

    if (a->sections) {
        if (lp_profile_read_sections(a->input, &info, err))
            return -1;
        lp_profile_show_sections(f, &info);
        lp_prof_info_free(&info);
        return 0;
    }
    if (!(p = lp_profile_read(a->input, &info, err)))
        return -1;
    rc = lp_profile_show(f, p, &info, &a->so, &missing, err);
    if (rc == 0 && missing)
        fprintf(stderr, "warning: %s: no profile of function '%s'\n",
                a->input, a->so.function);
    lp_prof_info_free(&info);
    lp_profile_free(p);
    return rc;
}

int cmd_show(int argc, char **argv)
{
    lp_error err = {0};
    lp_outfile out;
    show_args a;
    int st = parse_args(argc, argv, &a);

    if (st)
        return st == 1 ? 0 : st;
    if (lp_outfile_open(&out, a.output, &err))
        return lp_cli_fail(&err);
    if (show(&a, out.fp, &err) || lp_outfile_commit(&out, &err)) {
        lp_outfile_abort(&out);
        return lp_cli_fail(&err);
    }
    return 0;
}
