/*
 * lbr2prof/pt.h - Intel PT: the samples `perf script --itrace=...`
 * synthesizes from a recording's AUX area data, made the same way
 * (docs/pt.md): instruction samples every N instructions or N ns/us/ms of
 * TSC time (`i`), one sample per branch (`b`), the last branches as a
 * branch stack of the instruction samples (`l`), decoding errors (`e`),
 * and skipping the first N samples (`s`).
 *
 * Use: parse the options, open the synthesizer on the perf.data path (it
 * reads the AUX data in a first pass, as perf does), then take events
 * through lp_ptsynth_next() instead of lp_reader_next(): the reader's
 * events come out unchanged, with the synthesized samples and errors
 * before the first event whose time is past theirs, as perf orders them.
 */
#ifndef LBR2PROF_PT_H
#define LBR2PROF_PT_H

#include <stdbool.h>
#include <stdint.h>

#include "lbr2prof/error.h"
#include "lbr2prof/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lp_itrace_period {
    LP_ITRACE_PERIOD_INSTRUCTIONS = 1,
    LP_ITRACE_PERIOD_TICKS,
    LP_ITRACE_PERIOD_NANOSECS,
} lp_itrace_period;

/* --itrace options (perf's itrace_synth_opts subset). */
typedef struct lp_itrace {
    bool set;                   /* --itrace was given */
    bool instructions, branches, errors, last_branch;
    bool callchain;             /* `g`: callchains of instruction samples */
    unsigned callchain_sz;      /* default 16, at most 1024 */
    lp_itrace_period period_type;
    uint64_t period;            /* default 100000 ns */
    unsigned last_branch_sz;    /* default 64, at most 1024 */
    uint64_t initial_skip;      /* `s`: samples to skip */
    bool no_overflow_errors;    /* `e-o` */
    bool no_lost_errors;        /* `e-l` */
} lp_itrace;

/* Parse an --itrace value ("i100usle", "b", "e", ...). Options perf knows
 * but lbr2prof does not synthesize (c, r, x, w, p, o, d, G, q, ...) are
 * refused by name. */
int lp_itrace_parse(const char *s, lp_itrace *o, lp_error *err);

/* An instruction trace error, as perf's PERF_RECORD_AUXTRACE_ERROR. */
typedef struct lp_auxtrace_error {
    uint32_t type, code;        /* type 1: instruction trace */
    int32_t cpu, pid, tid;
    uint64_t ip, time;
    const char *msg;
} lp_auxtrace_error;

/* perf's line for an error (perf_event__fprintf_auxtrace_error). */
void lp_auxtrace_error_print(const lp_auxtrace_error *e, FILE *out);

typedef struct lp_ptsynth lp_ptsynth;

/* Read the AUX area tracing of `path`. *out is NULL (and 0 is returned)
 * when the file has no Intel PT data to decode. -1 with err on error. */
int lp_ptsynth_open(const char *path, const lp_itrace *o, lp_ptsynth **out,
                    lp_error *err);
/* The next event of reader `r` (opened on the same path), or a
 * synthesized one before it. Synthesized samples point to attrs of the
 * synthesizer ("instructions", "branches"); errors are events of kind
 * LP_EV_AUXTRACE_ERROR. 1, 0 at the end, -1 with err. */
int lp_ptsynth_next(lp_ptsynth *p, lp_reader *r, const lp_event **ev,
                    lp_error *err);
/* Counters for the end of a run (perf prints the error count). */
uint64_t lp_ptsynth_nr_errors(const lp_ptsynth *p);
uint64_t lp_ptsynth_nr_samples(const lp_ptsynth *p);
/* The attrs of the samples it makes, in the order perf adds them
 * (branches, then instructions; those --itrace asks for): how many. */
size_t lp_ptsynth_attrs(const lp_ptsynth *p, const lp_attr *out[2]);
/* Whether sample s is one it made (its callchain, with `g`, is the
 * decoder's call stack, not a frame-pointer walk). */
bool lp_ptsynth_made(const lp_ptsynth *p, const lp_sample *s);
void lp_ptsynth_close(lp_ptsynth *p);

#ifdef __cplusplus
}
#endif
#endif
