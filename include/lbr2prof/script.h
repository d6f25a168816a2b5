/*
 * lbr2prof/script.h - the events of a perf.data (or perf script text)
 * printed the way perf 6.1 prints them with
 * `perf script -F comm,pid,tid,time,ip,brstack`, byte for byte (the
 * reader's conformance check against perf, docs/script.md), optionally
 * with the MMAP and COMM/FORK/EXIT records. Two variants:
 *   - fp_mode: the user part of each callchain replaced by a frame-pointer
 *     walk of the sample's user stack (include/lbr2prof/fpunwind.h);
 *   - v5: a Symbolication API v5 request instead of perf's text
 *     (include/lbr2prof/symbolicate.h, lp_sym_perf).
 * The library never prints to stderr: warnings go to opts.warn.
 */
#ifndef LBR2PROF_SCRIPT_H
#define LBR2PROF_SCRIPT_H

#include <stdbool.h>
#include <stdio.h>

#include "lbr2prof/error.h"
#include "lbr2prof/symbolicate.h"
#include "lbr2prof/warn.h"

#ifdef __cplusplus
extern "C" {
#endif

struct lp_itrace;

/* perf script's -F fields that lbr2prof prints. */
enum lp_script_field {
    LP_SCRIPT_COMM = 1u << 0,
    LP_SCRIPT_PID = 1u << 1,
    LP_SCRIPT_TID = 1u << 2,
    LP_SCRIPT_TIME = 1u << 3,
    LP_SCRIPT_IP = 1u << 4,
    LP_SCRIPT_BRSTACK = 1u << 5,
};
#define LP_SCRIPT_ALL_FIELDS 0x3fu

typedef struct lp_script_opts {
    unsigned fields;            /* LP_SCRIPT_* (default: all) */
    bool show_mmap;             /* --show-mmap-events */
    bool show_task;             /* --show-task-events */
    bool raw_addr;              /* callchain entries absolute, not file
                                   offsets */
    int fp_mode;                /* enum lp_fp_mode; 0: recorded callchain */
    FILE *fp_stats;             /* with fp_mode: the walk's counters are
                                   written here after the run (NULL: no) */
    const struct lp_itrace *itrace; /* --itrace: the samples perf synthesizes
                                   from Intel PT data (lbr2prof/pt.h); NULL:
                                   the recorded events only (--no-itrace) */
    uint64_t pt_errors;         /* out: instruction trace errors printed */
    bool v5;                    /* a Symbolication API v5 request */
    lp_sym_perf_opts v5o;       /* its options */
    bool strict;                /* --strict: a cut-off perf.data is an error
                                   (default: its complete records, with a
                                   warning; lbr2prof/reader.h) */
    lp_warn_fn warn;            /* v5: files that could not be read; a
                                   cut-off input */
    void *warn_ctx;
} lp_script_opts;

/* All fields, perf's output, the v5 request's defaults (every process,
 * return addresses adjusted but the first). */
void lp_script_opts_default(lp_script_opts *o);

/* "comm,pid,..." -> LP_SCRIPT_* bits; -1 for an unknown or empty list. */
int lp_script_fields_parse(const char *list, unsigned *fields);

/* Read `input` ("-": standard input) in time order and print every event
 * to out. 0, or -1 with err (reading, allocation, the fp walk). Write
 * errors on out are the caller's to check (ferror). */
int lp_script_run(const char *input, const lp_script_opts *o, FILE *out,
                  lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
