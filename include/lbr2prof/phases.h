/*
 * lbr2prof/phases.h - where a run's time goes and how far it has come.
 * The profile driver (and the stages it calls) mark the phase they enter -
 * opening the binaries, reading the trace, unwinding, generation,
 * pre-inlining, the rest of post-processing, writing - and report the
 * reading's progress (bytes of the trace, samples) and a long phase's
 * items (distinct samples unwound) and, at the end, the samples unwound.
 * The caller gets the wall and CPU time of every phase and those counts
 * (`--time-trace`) and, if it asks, a callback as the run goes (the CLI's
 * progress line on a terminal). The library never prints.
 *
 * One lp_phases per run, owned by the caller; every function takes NULL
 * and then does nothing, so a stage that was given no lp_phases costs
 * nothing. Not thread-safe: the driver's thread marks and ticks.
 */
#ifndef LBR2PROF_PHASES_H
#define LBR2PROF_PHASES_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lp_phase {
    LP_PHASE_START = 0,         /* before the first mark: options, start-up */
    LP_PHASE_BINARIES,          /* opening the binaries (ELF, DWARF, probes) */
    LP_PHASE_READ,              /* reading the trace: decoding, aggregation */
    LP_PHASE_UNWIND,            /* unwinding the distinct samples */
    LP_PHASE_GENERATE,          /* profile generation from the counters */
    LP_PHASE_PREINLINE,         /* context sizes and the pre-inliner */
    LP_PHASE_POSTPROCESS,       /* summary, trimming, nesting, density */
    LP_PHASE_WRITE,             /* writing the profile, freeing */
    LP_PHASE_COUNT
} lp_phase;

/* What the callback sees. */
typedef struct lp_progress {
    lp_phase phase;
    uint64_t bytes, total_bytes;    /* of the trace read (total 0: unknown,
                                       e.g. a pipe) */
    uint64_t samples;               /* samples read so far */
    uint64_t done, todo;            /* items of the phase (todo 0: none) */
    double elapsed;                 /* wall seconds since lp_phases_init */
    int final;                      /* 1: the run is over (lp_phases_end) */
} lp_progress;

typedef void (*lp_progress_fn)(void *ctx, const lp_progress *p);

typedef struct lp_phases {
    double wall[LP_PHASE_COUNT], cpu[LP_PHASE_COUNT];
    double own[LP_PHASE_COUNT];     /* CPU of the marking thread alone: with
                                       cpu, how much ran on other threads */
    lp_phase cur;
    double t_wall, t_cpu, t_own;    /* when the current phase started */
    double start;                   /* wall at lp_phases_init */
    lp_progress_fn fn;              /* NULL: timings only */
    void *ctx;
    double every, next;             /* callback period, next call (wall) */
    lp_progress last;
    int ended;
    uint64_t unwound, distinct;     /* samples unwound, distinct ones
                                       (lp_phases_unwound; 0: none) */
    uint64_t ahead;                 /* distinct ones recorded ahead */
    int warmed;                     /* lp_phases_warmed was called */
    uint64_t warm_regions, warm_symbolized;
} lp_phases;

/* Start timing now (phase LP_PHASE_START). fn, if not NULL, is called at
 * every phase change and at most every `every` seconds while a phase
 * reports progress (0: 0.2 s), and once more at lp_phases_end. */
void lp_phases_init(lp_phases *ph, lp_progress_fn fn, void *ctx, double every);
/* Close the current phase and open p (time adds up when a phase is
 * entered again). */
void lp_phases_enter(lp_phases *ph, lp_phase p);
/* The reading's position; cheap (a clock read) unless the callback is due. */
void lp_phases_read(lp_phases *ph, uint64_t bytes, uint64_t total_bytes,
                    uint64_t samples);
/* The current phase's items. */
void lp_phases_items(lp_phases *ph, uint64_t done, uint64_t todo);
/* The input samples the run unwound, how many distinct samples that
 * was and how many of those were recorded ahead in the reader's idle
 * time (lp_unwind_stats.replayed), once they are known (the unwinder's
 * statistics at its end): printed under the table. */
void lp_phases_unwound(lp_phases *ph, uint64_t samples, uint64_t distinct,
                       uint64_t ahead);
/* What the profiled binary's warmer (lp_binary_warm_start) did while
 * the trace was read - code regions decoded, instructions symbolized -
 * when one ran: printed under the table. */
void lp_phases_warmed(lp_phases *ph, uint64_t regions, uint64_t symbolized);
/* Close the current phase; the callback's last call (final = 1). */
void lp_phases_end(lp_phases *ph);
const char *lp_phase_name(lp_phase p);
/* The table of phases, LLVM's timer report layout: CPU (every thread of
 * the process), the main thread's CPU and wall time per phase and in
 * total; then, if the run unwound samples, "  Samples unwound: N (M
 * distinct)" and "  Distinct samples recorded ahead: K"; and if a
 * warmer ran, "  Binary warmed while reading: R code regions decoded, S
 * instructions symbolized". */
void lp_phases_print(const lp_phases *ph, const char *title, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
