/*
 * cmd_merge.c - `lbr2prof merge`: sums profiles. Final sample profiles
 * (text, binary, extbinary; flat, nested or CS; probe-based) are merged
 * with weights as `llvm-profdata merge --sample` merges them, with its
 * flags. lbr2prof's mergeable unsymbolized profiles (--skip-symbolization
 * --raw-header) are summed instead (include/lbr2prof/rawmerge.h), as one
 * run over all their traces would have counted them. The kind of each
 * input is sniffed from its first bytes.
 * LP_BUILTIN(merge, cmd_merge, "merge sample profiles with weights, as llvm-profdata merge --sample")
 *
 * Owns option parsing and the input list; reading, merging and writing
 * are src/profile's and src/writer's.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/builtin.h"
#include "util/grow.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/profile.h"
#include "lbr2prof/rawmerge.h"

typedef struct merge_args {
    lp_merge_input *in;         /* paths owned */
    size_t nin, cap;
    const char *output, *sym_file, *list_file;
    lp_write_opts wo;
    int drop_syms, dump_list;
    enum { FAIL_ANY, FAIL_ALL, FAIL_WARN } fail;
} merge_args;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: lbr2prof merge [options] PROFILE... -o OUT\n"
        "  Merges sample profiles (LLVM text, binary or extbinary; flat,\n"
        "  nested or context-sensitive) as `llvm-profdata merge --sample`\n"
        "  does, whose flags it takes with one or two dashes. A directory\n"
        "  stands for every file under it.\n"
        "  --weighted-input=W,FILE  FILE's counts times W (W >= 1; others: 1)\n"
        "  --input-files=LIST       more inputs, one '[W,]FILE' a line\n"
        "  --extbinary | --binary | --text   output format (default extbinary)\n"
        "  --use-md5                extbinary: MD5 name table\n"
        "  --compress-all-sections  extbinary: zlib-compress every section\n"
        "  --gen-partial-profile    extbinary: flag the profile as partial\n"
        "  --prof-sym-list=FILE     extbinary: add FILE's symbols (one a line)\n"
        "  --drop-profile-symbol-list  keep no input's symbol list\n"
        "  --failure-mode=any|all|warn  an unreadable input fails the merge\n"
        "                           (any, default), fails it only if every\n"
        "                           input is (all), or is skipped (warn)\n"
        "  --dump-input-file-list   print 'W,FILE' per input and stop\n"
        "  --sample                 accepted (the input kind is read from them)\n"
        "  -o, --output=FILE        default: standard output\n");
}

/* ---- inputs ------------------------------------------------------------------- */

static int add_input(merge_args *a, const char *path, uint64_t w);

/* every regular file under dir, in name order (llvm-profdata recurses) */
static int add_dir(merge_args *a, const char *dir, uint64_t w)
{
    struct dirent **v;
    int n = scandir(dir, &v, NULL, alphasort), i, rc = 0;
    char *p;

    if (n < 0)
        return lp_cli_usage_error("merge", "%s: %s", dir, strerror(errno));
    for (i = 0; i < n; i++) {
        if (rc == 0 && strcmp(v[i]->d_name, ".") && strcmp(v[i]->d_name, "..")) {
            if (asprintf(&p, "%s/%s", dir, v[i]->d_name) < 0)
                rc = lp_cli_usage_error("merge", "out of memory");
            else {
                rc = add_input(a, p, w);
                free(p);
            }
        }
        free(v[i]);
    }
    free(v);
    return rc;
}

static int add_input(merge_args *a, const char *path, uint64_t w)
{
    struct stat st;

    if (strcmp(path, "-") && stat(path, &st))
        return lp_cli_usage_error("merge", "%s: %s", path, strerror(errno));
    if (strcmp(path, "-") && S_ISDIR(st.st_mode))
        return add_dir(a, path, w);
    if (strcmp(path, "-") && !S_ISREG(st.st_mode))
        return 0;
    if (lp_grow_array(&a->in, &a->cap, a->nin + 1, sizeof *a->in, 8))
        return lp_cli_usage_error("merge", "out of memory");
    if (!(a->in[a->nin].path = strdup(path)))
        return lp_cli_usage_error("merge", "out of memory");
    a->in[a->nin++].weight = w;
    return 0;
}

/* "W,FILE" (llvm-profdata's parseWeightedFile) */
static int add_weighted(merge_args *a, const char *s)
{
    const char *comma = strchr(s, ',');
    char *end;
    unsigned long long w;

    if (!comma || comma == s || *s == '-')
        return lp_cli_usage_error("merge", "--weighted-input=%s: expected "
                                  "WEIGHT,FILE", s);
    errno = 0;
    w = strtoull(s, &end, 10);
    if (end != comma || errno || w < 1)
        return lp_cli_usage_error("merge", "--weighted-input=%s: input weight "
                                  "must be a positive integer", s);
    return add_input(a, comma + 1, w);
}

/* --input-files: '[W,]FILE' a line, '#' comments */
static int add_list(merge_args *a, const char *list)
{
    FILE *f = fopen(list, "r");
    char *line = NULL, *s, *e;
    size_t cap = 0;
    int rc = 0;

    if (!f)
        return lp_cli_usage_error("merge", "%s: %s", list, strerror(errno));
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        for (s = line; *s == ' ' || *s == '\t'; s++)
            ;
        for (e = s + strlen(s); e > s && strchr(" \t\r\n\v\f", e[-1]); e--)
            ;
        *e = 0;
        if (!*s || *s == '#')
            continue;
        rc = strchr(s, ',') ? add_weighted(a, s) : add_input(a, s, 1);
    }
    free(line);
    fclose(f);
    return rc;
}

/* ---- options ------------------------------------------------------------------ */

static int set_failure_mode(merge_args *a, const char *s)
{
    if (!strcmp(s, "any"))
        a->fail = FAIL_ANY;
    else if (!strcmp(s, "all"))
        a->fail = FAIL_ALL;
    else if (!strcmp(s, "warn"))
        a->fail = FAIL_WARN;
    else
        return lp_cli_usage_error("merge", "--failure-mode=%s: expected any, "
                                  "all or warn", s);
    return 0;
}

static int parse_opt(merge_args *a, int c)
{
    switch (c) {
    case 'l': a->list_file = optarg; return 0;
    case 'E': a->wo.format = LP_PROF_EXTBINARY; return 0;
    case 'B': a->wo.format = LP_PROF_BINARY; return 0;
    case 'T': a->wo.format = LP_PROF_TEXT; return 0;
    case 'm': a->wo.use_md5 = 1; return 0;
    case 'z': a->wo.compress = 1; return 0;
    case 'P': a->wo.partial = 1; return 0;
    case 'y': a->sym_file = optarg; return 0;
    case 'D': a->drop_syms = 1; return 0;
    case 'F': return set_failure_mode(a, optarg);
    case 'L': a->dump_list = 1; return 0;
    case 's': return 0;
    case 'I':
        return lp_cli_usage_error("merge", "instrumentation profiles are not "
                                  "merged (sample profiles only)");
    case 'o': a->output = optarg; return 0;
    case 'h': usage(stdout); return 1;
    default: usage(stderr); return 2;
    }
}

/* The inputs in llvm-profdata's order: positional ones, weighted ones,
 * then those of --input-files. */
static int collect_inputs(merge_args *a, char **pos, int npos, char **wtd,
                          int nw)
{
    int i, st = 0;

    for (i = 0; i < npos && st == 0; i++)
        st = add_input(a, pos[i], 1);
    for (i = 0; i < nw && st == 0; i++)
        st = add_weighted(a, wtd[i]);
    if (st == 0 && a->list_file)
        st = add_list(a, a->list_file);
    if (st == 0 && a->nin == 0)
        st = lp_cli_usage_error("merge", "no input files (lbr2prof merge --help)");
    return st;
}

static int parse_args(int argc, char **argv, merge_args *a)
{
    static const struct option lo[] = {
        {"weighted-input", required_argument, NULL, 'w'},
        {"input-files", required_argument, NULL, 'l'},
        {"extbinary", no_argument, NULL, 'E'},
        {"binary", no_argument, NULL, 'B'},
        {"text", no_argument, NULL, 'T'},
        {"use-md5", no_argument, NULL, 'm'},
        {"compress-all-sections", no_argument, NULL, 'z'},
        {"gen-partial-profile", no_argument, NULL, 'P'},
        {"prof-sym-list", required_argument, NULL, 'y'},
        {"drop-profile-symbol-list", no_argument, NULL, 'D'},
        {"failure-mode", required_argument, NULL, 'F'},
        {"dump-input-file-list", no_argument, NULL, 'L'},
        {"sample", no_argument, NULL, 's'},
        {"instr", no_argument, NULL, 'I'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    char **wtd = calloc((size_t)argc + 1, sizeof *wtd);
    int c, st = 0, npos = 0, nw = 0;

    memset(a, 0, sizeof *a);
    a->output = "-";
    a->wo.format = LP_PROF_EXTBINARY;
    optind = 1;
    if (!pos || !wtd)
        st = lp_cli_usage_error("merge", "out of memory");
    while (st == 0 && (c = getopt_long_only(argc, argv, "-o:h", lo, NULL)) != -1) {
        if (c == 1)
            pos[npos++] = optarg;
        else if (c == 'w')
            wtd[nw++] = optarg;
        else
            st = parse_opt(a, c);
    }
    if (st == 0)
        st = collect_inputs(a, pos, npos, wtd, nw);
    free(pos);
    free(wtd);
    return st;
}

static void free_args(merge_args *a)
{
    size_t i;

    for (i = 0; i < a->nin; i++)
        free((char *)a->in[i].path);
    free(a->in);
}

/* ---- input kinds ------------------------------------------------------------- */

typedef enum { IN_SAMPLE, IN_RAW, IN_ERROR } input_kind;

/* llvm-profgen's unsymbolized profile (--skip-symbolization): its first
 * line is the number of ranges, or a "[context]" alone (CS). */
/* llvm-profgen's unsymbolized profile: a "[context]" line or a count. */
static int looks_raw(const char *b, size_t n)
{
    const char *nl = memchr(b, '\n', n), *p;

    if (!nl)
        nl = b + n;
    if (nl > b && nl[-1] == '\r')
        nl--;
    if (nl > b && b[0] == '[' && nl[-1] == ']')
        return 1;
    for (p = b; p < nl && *p >= '0' && *p <= '9'; p++)
        ;
    return p > b && p == nl;
}

/* Unsymbolized (raw) profiles: lbr2prof's mergeable ones (the
 * #lbr2prof-raw header of --skip-symbolization --raw-header, or an
 * earlier merge) are summed by src/rawmerge; a header-less one (what
 * llvm-profgen writes) carries no binary identity to check, and is
 * refused by name. */
static input_kind kind_of(const char *path, lp_error *err)
{
    char b[4096];
    size_t n = 0;
    int k;
    FILE *f;

    if (!strcmp(path, "-") || !(f = fopen(path, "rb")))
        return IN_SAMPLE; /* the reader says what is wrong */
    n = fread(b, 1, sizeof b, f);
    fclose(f);
    if (lp_profile_sniff(b, n))
        return IN_SAMPLE;
    if ((k = lp_rawmerge_sniff(path, err)) != 0)
        return k > 0 ? IN_RAW : IN_ERROR;
    if (looks_raw(b, n)) {
        lp_error_set(err, LP_EUNSUPP, "%s: an unsymbolized profile without "
                     "lbr2prof's header (llvm-profgen's): it names no binary "
                     "to check, so it is not merged; write the shards with "
                     "--skip-symbolization --raw-header", path);
        return IN_ERROR;
    }
    return IN_SAMPLE;
}

static int merge_raw(const merge_args *a, lp_error *err)
{
    lp_rawmerge *m = lp_rawmerge_new(err);
    size_t i, mixed;
    int rc = m ? 0 : -1;

    if (!a->output || !strcmp(a->output, "-"))
        rc = lp_error_set(err, LP_EUSAGE, "merging raw profiles needs "
                          "--output=FILE");
    for (i = 0; i < a->nin && rc == 0; i++)
        rc = lp_rawmerge_add(m, a->in[i].path, a->in[i].weight, err);
    if (rc == 0)
        rc = lp_rawmerge_write(m, a->output, err);
    if (rc == 0 && (mixed = lp_rawmerge_mixed(m)) > 0)
        fprintf(stderr, "warning: %zu contexts had leaves both inlined and not "
                "in the merged inputs: their ContextWasInlined is set if any "
                "input set it, where one run keeps its first sample's\n", mixed);
    lp_rawmerge_free(m);
    return rc;
}

static int sym_file(lp_merge_result *r, const char *path, lp_error *err)
{
    FILE *f = fopen(path, "r");
    char *line = NULL, *b, *e, **nv;
    size_t cap = 0;
    int rc = 0;

    if (!f)
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        for (b = line; *b && strchr(" \t\r\n\v\f", *b); b++)
            ;
        for (e = b + strlen(b); e > b && strchr(" \t\r\n\v\f", e[-1]); e--)
            ;
        *e = 0;
        if (!*b)
            continue;
        if (!(nv = realloc(r->symbols, (r->nr_symbols + 1) * sizeof *nv)) ||
            !(nv[r->nr_symbols] = strdup(b)))
            rc = lp_error_set(err, LP_ENOMEM, "merge: out of memory");
        if (nv)
            r->symbols = nv;
        r->nr_symbols += rc == 0;
    }
    free(line);
    fclose(f);
    return rc;
}

/* llvm-profdata's warnings for extbinary-only flags */
static void format_warnings(const merge_args *a, size_t nr_symbols)
{
    if (a->wo.format == LP_PROF_EXTBINARY)
        return;
    if (nr_symbols)
        fprintf(stderr, "warning: Profile Symbol list is not empty but the "
                "output format is not ExtBinary format. The list will be lost "
                "in the output.\n");
    if (a->wo.compress)
        fprintf(stderr, "warning: -compress-all-section is ignored. Specify "
                "-extbinary to enable it\n");
    if (a->wo.use_md5)
        fprintf(stderr, "warning: -use-md5 is ignored. Specify -extbinary to "
                "enable it\n");
    if (a->wo.partial)
        fprintf(stderr, "warning: -gen-partial-profile is ignored. Specify "
                "-extbinary to enable it\n");
}

static int write_out(merge_args *a, const lp_merge_result *r, lp_error *err)
{
    lp_outfile out;

    format_warnings(a, r->nr_symbols);
    if (a->wo.format == LP_PROF_EXTBINARY) {
        a->wo.symbol_list = (const char *const *)r->symbols;
        a->wo.nr_symbols = r->nr_symbols;
    } else {
        a->wo.compress = a->wo.use_md5 = a->wo.partial = 0;
    }
    if (lp_outfile_open(&out, a->output, err))
        return -1;
    if (lp_profile_write(out.fp, r->profile, &a->wo, err) ||
        lp_outfile_commit(&out, err)) {
        lp_outfile_abort(&out);
        return -1;
    }
    return 0;
}

static int merge_samples(merge_args *a, lp_error *err)
{
    static const int modes[] = {LP_MERGE_FAIL_ANY, LP_MERGE_FAIL_ALL,
                                LP_MERGE_FAIL_WARN};
    lp_merge_opts o = {modes[a->fail], !a->drop_syms, lp_cli_warn, NULL};
    lp_merge_result r;
    int rc;

    if (lp_profile_merge_files(a->in, a->nin, &o, &r, err))
        return -1;
    rc = a->sym_file ? sym_file(&r, a->sym_file, err) : 0;
    if (rc == 0)
        rc = write_out(a, &r, err);
    lp_merge_result_free(&r);
    return rc;
}

static int merge(merge_args *a, lp_error *err)
{
    size_t i, raw = 0;
    input_kind k;

    for (i = 0; i < a->nin; i++) {
        if ((k = kind_of(a->in[i].path, err)) == IN_ERROR)
            return -1;
        raw += k == IN_RAW;
    }
    if (raw == 0)
        return merge_samples(a, err);
    if (raw == a->nin)
        return merge_raw(a, err);
    for (i = 0; kind_of(a->in[i].path, err) == IN_RAW; i++)
        ;
    return lp_error_set(err, LP_EUSAGE, "cannot merge unsymbolized (raw) "
                        "profiles with sample profiles (%s is a sample "
                        "profile)", a->in[i].path);
}

int cmd_merge(int argc, char **argv)
{
    lp_error err = {0};
    merge_args a;
    size_t i;
    int st = parse_args(argc, argv, &a);

    if (st == 0 && a.dump_list)
        for (i = 0; i < a.nin; i++)
            printf("%llu,%s\n", (unsigned long long)a.in[i].weight, a.in[i].path);
    else if (st == 0 && merge(&a, &err))
        st = lp_cli_fail(&err);
    free_args(&a);
    return st == 1 ? 0 : st;
}
