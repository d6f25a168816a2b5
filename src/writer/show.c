/*
 * show.c - a profile as `llvm-profdata show --sample` prints it (LLVM 22):
 * every function (SampleProfileReader::dump, FunctionSamples::print) or
 * one (--function), the profile symbol list, the summary and detailed
 * summary (ProfileSummary::printSummary/printDetailedSummary), the hot
 * function list (--topn, --hot-func-list: showHotFunctionList with
 * formatted_raw_ostream's columns) and the extbinary section table
 * (--show-sec-info-only), and the functions as JSON (--json:
 * SampleProfileReader::dumpJson). Owns that output format only.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"
#include "profile/format.h"

static void indent(FILE *f, unsigned n)
{
    fprintf(f, "%*s", (int)n, "");
}

static void put_loc(FILE *f, lp_loc l)
{
    fprintf(f, "%" PRIu32, l.line);
    if (l.disc)
        fprintf(f, ".%" PRIu32, l.disc);
}

/* the body records: "  LOC: COUNT[, calls: NAME:N ...]" */
static int print_body(FILE *f, const lp_fsamples *fs, unsigned ind)
{
    lp_body_view *b = NULL;
    size_t n = lp_fs_sorted_body(fs, &b), i, j;

    if (n == (size_t)-1)
        return -1;
    fputs("Samples collected in the function's body {\n", f);
    for (i = 0; i < n; i++) {
        indent(f, ind + 2);
        put_loc(f, b[i].loc);
        fprintf(f, ": %" PRIu64, b[i].count);
        if (b[i].nr_targets)
            fputs(", calls:", f);
        for (j = 0; j < b[i].nr_targets; j++)
            fprintf(f, " %s:%" PRIu64, b[i].targets[j].name,
                    b[i].targets[j].count);
        fputc('\n', f);
    }
    lp_body_views_free(b, n);
    indent(f, ind);
    fputs("}\n", f);
    return 0;
}

/* FunctionSamples::print */
static int print_fs(FILE *f, const lp_fsamples *fs, unsigned ind)
{
    lp_callee_view *c = NULL;
    size_t n, i;
    int rc = 0;

    if (fs->checksum)
        fprintf(f, "CFG checksum %" PRIu64 "\n", fs->checksum);
    fprintf(f, "%" PRIu64 ", %" PRIu64 ", %zu sampled lines\n", fs->total,
            fs->head, lp_fs_nr_body(fs));
    indent(f, ind);
    if (!lp_fs_nr_body(fs))
        fputs("No samples collected in the function's body\n", f);
    else if (print_body(f, fs, ind))
        return -1;
    indent(f, ind);
    if ((n = lp_fs_sorted_callees(fs, &c)) == (size_t)-1)
        return -1;
    if (!n)
        fputs("No inlined callsites in this function\n", f);
    else
        fputs("Samples collected in inlined callsites {\n", f);
    for (i = 0; i < n && rc == 0; i++) {
        indent(f, ind + 2);
        put_loc(f, c[i].loc);
        fprintf(f, ": inlined callee: %s: ", c[i].fs->name);
        rc = print_fs(f, c[i].fs, ind + 4);
    }
    free(c);
    if (n && rc == 0) {
        indent(f, ind);
        fputs("}\n", f);
    }
    return rc;
}

static int print_function(FILE *f, const lp_fsamples *fs, const char *key)
{
    fprintf(f, "Function: %s: ", key);
    return print_fs(f, fs, 0);
}

/* ---- JSON (SampleProfileReader::dumpJson, json::OStream indent 2) ------------------ */

typedef struct jw {             /* json::OStream's state */
    FILE *f;
    int depth;
    int first[64];              /* nothing written yet at each depth */
} jw;

static void jw_newline(jw *w)
{
    fprintf(w->f, "\n%*s", 2 * w->depth, "");
}

/* before a value or key: the comma and the line */
static void jw_item(jw *w)
{
    if (w->depth == 0)
        return;
    if (!w->first[w->depth])
        fputc(',', w->f);
    w->first[w->depth] = 0;
    jw_newline(w);
}

static void jw_open(jw *w, char c)
{
    fputc(c, w->f);
    if (w->depth < 63)
        w->first[++w->depth] = 1;
}

static void jw_close(jw *w, char c)
{
    int empty = w->first[w->depth];

    w->depth--;
    if (!empty)
        jw_newline(w);
    fputc(c, w->f);
}

/* json quote(): '"' and '\\' escaped, \t \n \r short, other controls \u00XX */
static void jw_str(jw *w, const char *s)
{
    fputc('"', w->f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(w->f, "\\%c", c);
        else if (c >= 0x20)
            fputc(c, w->f);
        else if (c == '\t' || c == '\n' || c == '\r')
            fprintf(w->f, "\\%c", c == '\t' ? 't' : c == '\n' ? 'n' : 'r');
        else
            fprintf(w->f, "\\u%04x", c);
    }
    fputc('"', w->f);
}

static void jw_key(jw *w, const char *k)
{
    jw_item(w);
    jw_str(w, k);
    fputs(": ", w->f);
}

static void jw_num(jw *w, const char *k, uint64_t v)
{
    jw_key(w, k);
    fprintf(w->f, "%" PRIu64, v);
}

static void json_loc(jw *w, lp_loc l)
{
    jw_num(w, "line", l.line);
    if (l.disc)
        jw_num(w, "discriminator", l.disc);
}

static int json_body(jw *w, const lp_fsamples *fs)
{
    lp_body_view *b = NULL;
    size_t n = lp_fs_sorted_body(fs, &b), i, j;

    if (n == (size_t)-1)
        return -1;
    for (i = 0; i < n; i++) {
        jw_item(w);
        jw_open(w, '{');
        json_loc(w, b[i].loc);
        jw_num(w, "samples", b[i].count);
        if (b[i].nr_targets) {
            jw_key(w, "calls");
            jw_open(w, '[');
        }
        for (j = 0; j < b[i].nr_targets; j++) {
            jw_item(w);
            jw_open(w, '{');
            jw_key(w, "function");
            jw_str(w, b[i].targets[j].name);
            jw_num(w, "samples", b[i].targets[j].count);
            jw_close(w, '}');
        }
        if (b[i].nr_targets)
            jw_close(w, ']');
        jw_close(w, '}');
    }
    lp_body_views_free(b, n);
    return 0;
}

/* dumpFunctionProfileJson: name (the function, not the context), total,
 * head (top level), body, callsites */
static int json_fs(jw *w, const lp_fsamples *fs, int top)
{
    lp_callee_view *c = NULL;
    size_t n, i;
    int rc = 0;

    jw_item(w);
    jw_open(w, '{');
    jw_key(w, "name");
    jw_str(w, fs->name);
    jw_num(w, "total", fs->total);
    if (top)
        jw_num(w, "head", fs->head);
    if (lp_fs_nr_body(fs)) {
        jw_key(w, "body");
        jw_open(w, '[');
        rc = json_body(w, fs);
        jw_close(w, ']');
    }
    if (rc || (n = lp_fs_sorted_callees(fs, &c)) == (size_t)-1)
        return -1;
    if (n) {
        jw_key(w, "callsites");
        jw_open(w, '[');
    }
    for (i = 0; i < n && rc == 0; i++) {
        jw_item(w);
        jw_open(w, '{');
        json_loc(w, c[i].loc);
        jw_key(w, "samples");
        jw_open(w, '[');
        rc = json_fs(w, c[i].fs, 0);
        jw_close(w, ']');
        jw_close(w, '}');
    }
    if (n)
        jw_close(w, ']');
    free(c);
    jw_close(w, '}');
    return rc;
}

static int show_json(FILE *f, const lp_profile *p)
{
    jw w = {f, 0, {0}};
    lp_fsamples **v = NULL;
    size_t n, i;
    int rc = 0;

    if ((n = lp_profile_sorted(p, &v)) == (size_t)-1)
        return -1;
    jw_open(&w, '[');
    for (i = 0; i < n && rc == 0; i++)
        rc = json_fs(&w, v[i], 1);
    jw_close(&w, ']');
    fputc('\n', f);
    free(v);
    return rc;
}

/* --function: the profile of that name (for MD5 names, of its hash; for
 * CS profiles, that context); NULL if none */
static const lp_fsamples *find_function(const lp_profile *p, const char *name)
{
    const lp_fsamples *fs = lp_profile_find(p, name);
    char md5[24];

    if (!fs && !lp_name_md5(name, &(uint64_t){0})) {
        snprintf(md5, sizeof md5, "%" PRIu64, lp_name_hash(name));
        fs = lp_profile_find(p, md5);
    }
    return fs;
}

static int show_functions(FILE *f, const lp_profile *p, const lp_show_opts *o,
                          int *missing)
{
    lp_fsamples **v = NULL, empty;
    const lp_fsamples *fs;
    size_t n, i;
    int rc = 0;

    if (o->function && !o->all_functions) {
        if ((fs = find_function(p, o->function)))
            return print_function(f, fs, p->is_cs ? fs->context : fs->name);
        *missing = 1;
        memset(&empty, 0, sizeof empty);
        return print_function(f, &empty, "");
    }
    if ((n = lp_profile_sorted(p, &v)) == (size_t)-1)
        return -1;
    for (i = 0; i < n && rc == 0; i++)
        rc = print_function(f, v[i], p->is_cs ? v[i]->context : v[i]->name);
    free(v);
    return rc;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ProfileSymbolList::dump: sorted, each name once */
static int show_symbols(FILE *f, const lp_prof_info *info)
{
    char **v = NULL;
    size_t i, n = info->nr_symbols;

    fputs("======== Dump profile symbol list ========\n", f);
    if (!n)
        return 0;
    if (!(v = malloc(n * sizeof *v)))
        return -1;
    memcpy(v, info->symbols, n * sizeof *v);
    qsort(v, n, sizeof *v, str_cmp);
    for (i = 0; i < n; i++)
        if (i == 0 || strcmp(v[i], v[i - 1]))
            fprintf(f, "%s\n", v[i]);
    free(v);
    return 0;
}

/* printSummary + printDetailedSummary (float arithmetic as LLVM's) */
static void show_summary(FILE *f, const lp_prof_info *s)
{
    size_t i;

    fprintf(f, "Total functions: %" PRIu64 "\n", s->num_functions);
    fprintf(f, "Maximum function count: %" PRIu64 "\n", s->max_function_count);
    fprintf(f, "Maximum internal block count: 0\n");
    fprintf(f, "Total number of blocks: %" PRIu64 "\n", s->num_counts);
    fprintf(f, "Total count: %" PRIu64 "\n", s->total_count);
    fprintf(f, "Detailed summary:\n");
    for (i = 0; i < s->nr_cutoffs; i++) {
        const lp_summary_entry *e = &s->cutoffs[i];
        float pct = s->num_counts ? 100.f * (float)e->num_counts /
                                        (float)s->num_counts : 0;
        fprintf(f, "%" PRIu64 " blocks (%.2f%%) with count >= %" PRIu64
                " account for %0.6g%% of the total counts.\n", e->num_counts,
                (double)pct, e->min_count,
                (double)(100.f * (float)e->cutoff / 1000000.f));
    }
}

/* ---- hot function list ---------------------------------------------------------- */

/* formatted_raw_ostream::PadToColumn: at least one space */
static void pad_to(FILE *f, size_t *col, size_t to)
{
    size_t n = to > *col ? to - *col : 1;

    fprintf(f, "%*s", (int)n, "");
    *col += n;
}

static void cell(FILE *f, size_t *col, size_t to, const char *text)
{
    pad_to(f, col, to);
    fputs(text, f);
    *col += strlen(text);
}

/* the largest body count of fs and its inlinees (getFuncSampleStats) */
static uint64_t max_sample(const lp_fsamples *fs)
{
    lp_callee_view *c = NULL;
    size_t i, n = lp_fs_nr_body(fs);
    uint64_t m = 0, x;

    for (i = 0; i < n; i++)
        if ((x = lp_body_count(lp_fs_body_at(fs, i))) > m)
            m = x;
    if ((n = lp_fs_sorted_callees(fs, &c)) == (size_t)-1)
        return m;
    for (i = 0; i < n; i++)
        if ((x = max_sample(c[i].fs)) > m)
            m = x;
    free(c);
    return m;
}

static uint64_t hot_threshold(const lp_prof_info *s)
{
    size_t i;

    for (i = 0; i < s->nr_cutoffs; i++)
        if (s->cutoffs[i].cutoff == 990000)
            return s->cutoffs[i].min_count;
    return 0;
}

static void hot_row(FILE *f, const lp_profile *p, const lp_fsamples *fs,
                    uint64_t sum, uint64_t max)
{
    static const size_t offs[4] = {0, 24, 42, 58};
    char b[64];
    size_t col = 0;

    snprintf(b, sizeof b, "%" PRIu64 " (%.2f%%)", fs->total,
             sum > 0 ? (double)fs->total * 100.0 / (double)sum : 0.0);
    cell(f, &col, offs[0], b);
    snprintf(b, sizeof b, "%" PRIu64, max);
    cell(f, &col, offs[1], b);
    snprintf(b, sizeof b, "%" PRIu64, lp_fs_head_estimate(fs, p->is_cs));
    cell(f, &col, offs[2], b);
    cell(f, &col, offs[3], p->is_cs ? fs->context : fs->name);
    fputc('\n', f);
}

static void hot_header(FILE *f, size_t hot, size_t all, uint64_t thr,
                       uint64_t hot_sum, uint64_t sum)
{
    static const char *const titles[4] = {"Total sample (%)", "Max sample",
                                          "Entry sample", "Function name"};
    static const size_t offs[4] = {0, 24, 42, 58};
    size_t col = 0, i;

    fprintf(f, "%zu out of %zu functions with profile (%.2f%%) are "
            "considered hot functions (max sample >= %" PRIu64 ").\n", hot,
            all, (double)hot / (double)all * 100, thr);
    fprintf(f, "%" PRIu64 " out of %" PRIu64 " profile counts (%.2f%%) are "
            "from hot functions.\n", hot_sum, sum,
            sum > 0 ? (double)hot_sum / (double)sum * 100 : 0.0);
    for (i = 0; i < 4; i++)
        cell(f, &col, offs[i], titles[i]);
    fputc('\n', f);
}

/* showHotFunctionList: functions whose largest count reaches the 99%
 * cutoff's count, by total (ties: llvm-profdata's hash order, here the
 * context order), at most topn of them (0: all) */
static int show_hot(FILE *f, const lp_profile *p, const lp_prof_info *s,
                    uint32_t topn)
{
    uint64_t thr = hot_threshold(s), sum = 0, hot_sum = 0, *max;
    lp_fsamples **v = NULL;
    size_t n, i, hot = 0, shown = 0;

    if ((n = lp_profile_sorted(p, &v)) == (size_t)-1)
        return -1;
    if (!(max = calloc(n ? n : 1, sizeof *max))) {
        free(v);
        return -1;
    }
    for (i = 0; i < n; i++) {
        sum += v[i]->total;
        max[i] = max_sample(v[i]);
        if (max[i] >= thr) {
            hot++;
            hot_sum += v[i]->total;
        }
    }
    hot_header(f, hot, n, thr, hot_sum, sum);
    for (i = 0; i < n && (!topn || shown < topn); i++)
        if (max[i] >= thr) {
            hot_row(f, p, v[i], sum, max[i]);
            shown++;
        }
    free(max);
    free(v);
    return 0;
}

int lp_profile_show(FILE *f, const lp_profile *p, const lp_prof_info *info,
                    const lp_show_opts *o, int *missing, lp_error *err)
{
    int rc;

    *missing = 0;
    if (o->json && o->function && !o->all_functions)
        return lp_error_set(err, LP_EUSAGE, "the JSON format is supported "
                            "only when all functions are to be printed");
    rc = o->json ? show_json(f, p) : show_functions(f, p, o, missing);
    if (rc == 0 && o->prof_sym_list)
        rc = show_symbols(f, info);
    if (rc == 0 && o->detailed_summary)
        show_summary(f, info);
    if (rc == 0 && (o->hot_func_list || o->topn))
        rc = show_hot(f, p, info, o->topn);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "show: out of memory");
    return 0;
}

/* ---- section table -------------------------------------------------------------- */

/* getSecFlagsStr */
static void sec_flags(FILE *f, const lp_prof_section *e)
{
    char b[128] = "{";

    if (e->flags & SEC_FLAG_COMPRESS)
        strcat(b, "compressed,");
    if (e->flags & SEC_FLAG_FLAT)
        strcat(b, "flat,");
    if (e->type == SEC_NAME_TABLE) {
        if (SEC_HAS(e->flags, SEC_FLAG_FIXED_LENGTH_MD5))
            strcat(b, "fixlenmd5,");
        else if (SEC_HAS(e->flags, SEC_FLAG_MD5_NAME))
            strcat(b, "md5,");
        if (SEC_HAS(e->flags, SEC_FLAG_UNIQ_SUFFIX))
            strcat(b, "uniq,");
    } else if (e->type == SEC_PROF_SUMMARY) {
        if (SEC_HAS(e->flags, SEC_FLAG_PARTIAL))
            strcat(b, "partial,");
        if (SEC_HAS(e->flags, SEC_FLAG_FULL_CONTEXT))
            strcat(b, "context,");
        if (SEC_HAS(e->flags, SEC_FLAG_PRE_INLINED))
            strcat(b, "preInlined,");
        if (SEC_HAS(e->flags, SEC_FLAG_FS_DISCRIMINATOR))
            strcat(b, "fs-discriminator,");
    } else if (e->type == SEC_FUNC_OFFSET_TABLE) {
        if (SEC_HAS(e->flags, SEC_FLAG_ORDERED))
            strcat(b, "ordered,");
    } else if (e->type == SEC_FUNC_METADATA) {
        if (SEC_HAS(e->flags, SEC_FLAG_PROBE_BASED))
            strcat(b, "probe,");
        if (SEC_HAS(e->flags, SEC_FLAG_HAS_ATTRIBUTE))
            strcat(b, "attr,");
    }
    if (b[strlen(b) - 1] == ',')
        b[strlen(b) - 1] = '}';
    else
        strcat(b, "}");
    fputs(b, f);
}

/* SampleProfileReaderExtBinaryBase::dumpSectionInfo */
void lp_profile_show_sections(FILE *f, const lp_prof_info *info)
{
    uint64_t total = 0, end = 0;
    size_t i;

    for (i = 0; i < info->nr_sections; i++) {
        const lp_prof_section *e = &info->sections[i];
        fprintf(f, "%s - Offset: %" PRIu64 ", Size: %" PRIu64 ", Flags: ",
                lp_prof_section_name(e->type), e->offset, e->size);
        sec_flags(f, e);
        fputc('\n', f);
        total += e->size;
        if (e->offset + e->size > end)
            end = e->offset + e->size;
    }
    fprintf(f, "Header Size: %" PRIu64 "\n",
            info->nr_sections ? info->sections[0].offset : 0);
    fprintf(f, "Total Sections Size: %" PRIu64 "\n", total);
    fprintf(f, "File Size: %" PRIu64 "\n", end);
}
