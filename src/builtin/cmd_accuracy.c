/*
 * cmd_accuracy.c - `lbr2prof accuracy --truth FILE --binary BIN PROFILE`:
 * builds the ideal profile from the truth of a `record --simulate` run and
 * compares PROFILE (an LLVM sample profile, any format; CS or flat) with
 * it (docs/accuracy.md). For a binary with pseudo probes the ideal is
 * probe-based, as the profile tools make them, unless
 * --use-dwarf-correlation asks for line-based profiles.
 * Hidden debug options write the ideal profile itself.
 * LP_BUILTIN(accuracy, cmd_accuracy, "compare a profile with the truth of a simulated recording")
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/accuracy.h"
#include "lbr2prof/outfile.h"

typedef struct acc_opts {
    const char *truth, *binary, *debug_binary, *profile;
    const char *emit_cs, *emit_flat, *emit_raw; /* hidden, for tests */
    bool dwarf;                 /* --use-dwarf-correlation */
    lp_accuracy_print_opts print;
} acc_opts;

static void usage(FILE *o)
{
    fprintf(o,
            "usage: lbr2prof accuracy --truth FILE --binary BIN PROFILE\n"
            "  --truth FILE      truth of `lbr2prof record --simulate --truth FILE`\n"
            "  --binary BIN      the profiled binary (with debug info)\n"
            "  --debug-binary F  read symbols and DWARF from F instead\n"
            "  --use-dwarf-correlation  a line-based ideal for a binary with\n"
            "                    pseudo probes (as the profile was made)\n"
            "  PROFILE           LLVM sample profile to judge (text, binary or\n"
            "                    extbinary): CS, made with\n"
            "                    --csspgo-preinliner=0 --gen-cs-nested-profile=0\n"
            "                    --csprof-merge-cold-context=0 --compress-recursion=0,\n"
            "                    or flat (compared per function)\n"
            "  --rows N          rows per table (default 25, 0 = all)\n"
            "  -q, --quiet       print the closing line only\n");
}

static int parse_args(int argc, char **argv, acc_opts *o)
{
    static const struct option longopts[] = {
        {"truth", required_argument, NULL, 't'},
        {"binary", required_argument, NULL, 'b'},
        {"debug-binary", required_argument, NULL, 'D'},
        {"use-dwarf-correlation", no_argument, NULL, 'W'},
        {"rows", required_argument, NULL, 'n'},
        {"quiet", no_argument, NULL, 'q'},
        {"emit-ideal", required_argument, NULL, 'I'},
        {"emit-ideal-flat", required_argument, NULL, 'F'},
        {"emit-ideal-raw", required_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char *end;
    int c;

    memset(o, 0, sizeof *o);
    o->print.max_rows = 25;
    optind = 1;
    while ((c = getopt_long(argc, argv, "qh", longopts, NULL)) != -1) {
        switch (c) {
        case 't': o->truth = optarg; break;
        case 'b': o->binary = optarg; break;
        case 'D': o->debug_binary = optarg; break;
        case 'W': o->dwarf = true; break;
        case 'n':
            o->print.max_rows = strtoul(optarg, &end, 10);
            if (*end || !*optarg)
                return lp_cli_usage_error("accuracy", "--rows needs a number");
            break;
        case 'q': o->print.summary_only = true; break;
        case 'I': o->emit_cs = optarg; break;
        case 'F': o->emit_flat = optarg; break;
        case 'R': o->emit_raw = optarg; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc)
        o->profile = argv[optind++];
    if (optind < argc)
        return lp_cli_usage_error("accuracy", "unexpected argument '%s'",
                                  argv[optind]);
    if (!o->truth || !o->binary)
        return lp_cli_usage_error("accuracy", "--truth and --binary are required");
    if (!o->profile && !o->emit_cs && !o->emit_flat && !o->emit_raw)
        return lp_cli_usage_error("accuracy", "no PROFILE to compare");
    return 0;
}

/* ---- the ideal profiles ------------------------------------------------------ */

/* The ideal profile (CS or flat) as LLVM text into `path`. */
static int write_ideal(const char *path, lp_binary *bin, const lp_ideal *id,
                       bool cs, lp_error *err)
{
    lp_write_opts wo = {.format = LP_PROF_TEXT};
    lp_profile *p = lp_ideal_profile(bin, id, cs, err);
    lp_outfile of;
    int rc = -1;

    if (p && lp_outfile_open(&of, path, err) == 0) {
        if (lp_profile_write(of.fp, p, &wo, err) == 0)
            rc = lp_outfile_commit(&of, err);
        else
            lp_outfile_abort(&of);
    }
    lp_profile_free(p);
    return rc;
}

static int write_raw(const char *path, lp_binary *bin, const lp_ideal *id,
                     lp_error *err)
{
    lp_outfile of;

    if (lp_outfile_open(&of, path, err))
        return -1;
    if (lp_ctxcount_write_raw(of.fp, id->cc, 0, lp_binary_preferred_base(bin),
                              err)) {
        lp_outfile_abort(&of);
        return -1;
    }
    return lp_outfile_commit(&of, err);
}

static int emit(const acc_opts *o, lp_binary *bin, const lp_ideal *id,
                lp_error *err)
{
    if (o->emit_raw && write_raw(o->emit_raw, bin, id, err))
        return -1;
    if (o->emit_cs && write_ideal(o->emit_cs, bin, id, true, err))
        return -1;
    if (o->emit_flat && write_ideal(o->emit_flat, bin, id, false, err))
        return -1;
    return 0;
}

/* ---- comparing ---------------------------------------------------------------- */

static void warn_flags(const char *path, int flags)
{
    if (flags & LP_ACC_NOT_CS)
        fprintf(stderr, "lbr2prof accuracy: warning: %s has no contexts: it is "
                "compared per function with the flat (LBR-only) ideal profile; "
                "a CS profile must be made with --gen-cs-nested-profile=0\n",
                path);
    if (flags & LP_ACC_NESTED)
        fprintf(stderr, "lbr2prof accuracy: warning: %s has inlinee blocks in "
                "its contexts (nested or pre-inlined): make it with "
                "--gen-cs-nested-profile=0 --csspgo-preinliner=0\n", path);
    if (flags & LP_ACC_PREINLINED)
        fprintf(stderr, "lbr2prof accuracy: warning: %s was pre-inlined "
                "(!Attributes 2): contexts were merged into base profiles; "
                "make it with --csspgo-preinliner=0\n", path);
}


static void print_header(const acc_opts *o, const lp_ideal *id)
{
    const lp_ideal_stats *s = &id->st;

    printf("truth %s: %llu samples, %llu LBR ranges: %llu in %s, %llu outside "
           "it, %llu cut by a signal or exec, %llu not a fall-through\n",
           o->truth, (unsigned long long)s->samples,
           (unsigned long long)s->ranges, (unsigned long long)s->ranges_counted,
           o->binary, (unsigned long long)s->ranges_external,
           (unsigned long long)s->ranges_cut,
           (unsigned long long)s->ranges_invalid);
}

static int compare(const acc_opts *o, lp_binary *bin, const lp_ideal *id,
                   lp_error *err)
{
    lp_profile *prof = lp_profile_read(o->profile, NULL, err), *ideal = NULL;
    lp_profile *alt = NULL;
    lp_accuracy a;
    int flags, rc = -1;

    if (!prof)
        return -1;
    if (prof->is_probe_based != (id->probes != NULL)) {
        lp_error_set(err, LP_EUSAGE, "%s is a %s profile, and the ideal one "
                     "for %s is %s: %s", o->profile,
                     prof->is_probe_based ? "pseudo-probe" : "line-based",
                     o->binary, id->probes ? "probe-based" : "line-based",
                     id->probes ? "pass --use-dwarf-correlation, as the "
                                  "profile was made"
                                : "the binary has no pseudo probes");
        goto done;
    }
    if ((flags = lp_accuracy_profile_flags(o->profile, prof, err)) < 0)
        goto done;
    warn_flags(o->profile, flags);
    ideal = lp_ideal_profile(bin, id, prof->is_cs, err);
    if (ideal && prof->is_cs && id->probes &&
        !(alt = lp_ideal_profile_machine(bin, id, err)))
        goto done;
    if (!ideal || lp_accuracy_compare_alt(ideal, alt, prof, &a, err))
        goto done;
    if (!o->print.summary_only)
        print_header(o, id);
    rc = lp_accuracy_print(stdout, &a, &o->print, err);
    lp_accuracy_free(&a);
done:
    lp_profile_free(prof);
    lp_profile_free(ideal);
    lp_profile_free(alt);
    return rc;
}

int cmd_accuracy(int argc, char **argv)
{
    acc_opts o;
    lp_error err;
    lp_truth *t = NULL;
    lp_binary *bin = NULL;
    lp_ideal id;
    lp_binary_opts bo = {0};
    lp_probes *probes = NULL;
    int st = parse_args(argc, argv, &o), rc = -1, has = 0;

    if (st)
        return st == 1 ? 0 : st;
    lp_error_clear(&err);
    memset(&id, 0, sizeof id);
    bo.debug_path = o.debug_binary;
    bo.fs_discriminator = -1;
    if (!o.dwarf && (has = lp_probes_present(o.binary, &err)) < 0)
        goto done;
    if (has) {  /* as the profile command opens a probe binary */
        bo.symtab_functions = LP_SYMTAB_LLVM22;
        if (!(probes = lp_probes_open(o.binary, &err)))
            goto done;
    }
    if (!(t = lp_truth_read(o.truth, &err)) ||
        !(bin = lp_binary_open(o.binary, &bo, &err)) ||
        (probes ? lp_ideal_build_probes(t, bin, probes, &id, &err)
                : lp_ideal_build(t, bin, &id, &err)))
        goto done;
    if (emit(&o, bin, &id, &err))
        goto done;
    rc = o.profile ? compare(&o, bin, &id, &err) : 0;
done:
    lp_ideal_free(&id);
    lp_probes_free(probes);
    lp_binary_close(bin);
    lp_truth_free(t);
    if (rc == 0 && fflush(stdout)) {
        lp_error_set(&err, LP_EIO, "write error on standard output");
        rc = -1;
    }
    return rc ? lp_cli_fail(&err) : 0;
}
