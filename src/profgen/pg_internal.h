/*
 * pg_internal.h - what the driver's files (src/profgen/) share: the state
 * of one run and the helpers between the stages. Not installed.
 */
#ifndef LBR2PROF_PG_INTERNAL_H
#define LBR2PROF_PG_INTERNAL_H

#include "lbr2prof/addrmap.h"
#include "lbr2prof/profgen.h"
#include "lbr2prof/tailcall.h"
#include "lbr2prof/pt.h"
#include "lbr2prof/rawmerge.h"

/* Address map warnings, held until we know whether binaries[0] was found:
 * if not, its build-id mismatch is the error message. */
typedef struct pg_held {
    char **v;
    size_t n;
    const lp_profgen_opts *o;   /* where they go when released */
} pg_held;

/* What a result owns besides the profile and the binaries. */
struct lp_profgen_priv {
    lp_lbr_agg *agg;            /* owns raw_flat when it came from a trace */
    lp_counters *own;           /* raw_flat read from an unsymbolized file */
    lp_reader *early;           /* perf script text, opened and parsing
                                   while the binaries open (pg_read_trace
                                   takes it) */
    lp_probes **probes;         /* per binary: its pseudo probes, all NULL
                                   unless binaries[0] has some (then a
                                   probe-based profile is made) */
    lp_ctxcount *own_cc;        /* owns raw_flat read from a mergeable raw
                                   profile (binary 0's empty context) */
    lp_profgen_opts eff;        /* --skip-bad-inputs: the options of the
                                   run, over the readable traces */
    const char **good;          /* their paths (eff's traces) */
};

/* Whether the run makes a probe-based profile. */
static inline bool pg_probe_mode(const lp_profgen_result *r)
{
    return r->priv && r->priv->probes && r->priv->probes[0];
}

/* One run over a trace. */
typedef struct pg_run {
    const lp_profgen_opts *o;
    lp_profgen_result *r;
    lp_lbr_agg *agg;            /* LBR-only samples */
    lp_unwinder *uw;            /* hybrid samples (NULL: stacks ignored) */
    lp_addrmap *map;            /* perf.data: per process; text: NULL */
    pg_held held;
    bool markers;               /* callchains carry PERF_CONTEXT_* markers */
    const lp_ptsynth *pt;       /* --itrace: the Intel PT synthesizer */
    lp_reader *reader;          /* the trace being read: a sample's
                                   deferred arrays (lp_reader_arrays) */
    bool warming;               /* the binary's warmer runs (trace.c) */
    uint64_t warm_regions, warm_symbolized;   /* what warmers did */
} pg_run;

/* Message helpers: nothing happens when the callback is NULL. */
void pg_warn(const lp_profgen_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void pg_note(const lp_profgen_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The path of the (first) trace, or NULL for profile inputs. */
const char *pg_trace_path(const lp_profgen_opts *o);
/* --itrace: the PT synthesizer over `path` (NULL when not asked for, for
 * text, or when the file has no PT data), and the next event through it. */
int pg_pt_open(const lp_profgen_opts *o, const char *path, bool text,
               lp_ptsynth **pt, lp_error *err);
int pg_next_event(lp_reader *r, lp_ptsynth *pt, const lp_event **ev,
                  lp_error *err);
/* The traces of the run: pg_trace_path, then o->more_traces. */
size_t pg_ntraces(const lp_profgen_opts *o);
const char *pg_trace_at(const lp_profgen_opts *o, size_t i);
/* trace.c: how the run's pass reads a trace. */
void pg_reader_opts(const lp_profgen_opts *o, lp_reader_opts *ro);
/* inputs.c: --skip-bad-inputs: every trace read to its end; the
 * unreadable ones into r->skipped (a warning each) and r->priv->eff the
 * options over the others. 0, or -1 when none can be read (or OOM). */
int pg_check_inputs(const lp_profgen_opts *o, lp_profgen_result *r,
                    lp_error *err);
/* The base unsymbolized addresses are relative to (--use-offset...). */
uint64_t pg_raw_base(const lp_profgen_opts *o, lp_binary *bin);

/* discover.c: the most sampled user-space file (path and build-id) of
 * the traces, located on disk (malloc'ed path), or NULL with err. */
char *pg_find_binary(const lp_profgen_opts *o, lp_error *err);
/* discover.c: where a binary recorded as `path` with build-id `id` is
 * now: that path, perf's build-id cache, its basename next to the file
 * `near`, or in the current directory, with that build-id (when nid > 0).
 * malloc'ed, or NULL. */
char *pg_locate(const char *path, const uint8_t *id, size_t nid,
                const char *near);
/* discover.c: every other sampled file found on disk with its recorded
 * build-id and DWARF functions, most sampled first, not `skip` (the paths
 * already chosen). *out malloc'ed array of malloc'ed paths. */
int pg_trace_binaries(const lp_profgen_opts *o, char *const *skip,
                      size_t nskip, char ***out, size_t *n, lp_error *err);

/* trace.c, perf script text or a perf.data file: open the trace and start
 * reading it now, on the reader's thread, so that it overlaps opening the
 * binaries. Any
 * failure is left for pg_read_trace to meet again and report in its
 * place. */
void pg_open_early(const lp_profgen_opts *o, lp_profgen_result *r);
/* trace.c: the trace -> r->agg / r->uw counters; 0 or -1. */
int pg_read_trace(pg_run *run, lp_error *err);
/* trace.c: counters of the run: flat (raw_flat) or per context (raw_cs). */
int pg_count_trace(pg_run *run, lp_error *err);
void pg_run_free(pg_run *run);

/* rawio.c: --unsymbolized-profile: 1 and h read when the file is
 * lbr2prof's mergeable raw profile, 0 when llvm-profgen's, -1. */
int pg_raw_header(const char *path, lp_rawhdr *h, lp_error *err);
/* rawio.c: no --binary for a mergeable raw profile: its binaries, found
 * where they were recorded (pg_locate). */
int pg_raw_binaries(const lp_profgen_opts *o, char ***paths, size_t *n,
                    lp_error *err);
/* rawio.c: a mergeable raw profile into r->raw_cs or r->raw_flat, after
 * checking that r->bins are its binaries. */
int pg_raw_read(const lp_profgen_opts *o, lp_profgen_result *r, lp_error *err);
/* rawio.c: --skip-symbolization --raw-header. */
int pg_raw_write(FILE *f, const lp_profgen_opts *o, const lp_profgen_result *r,
                 lp_error *err);

/* generate.c: the routes after the binaries are open. */
int pg_generate(const lp_profgen_opts *o, lp_profgen_result *r,
                lp_error *err);
void pg_cs_opts(const lp_profgen_opts *o, lp_cs_opts *co);
/* run.c: whether to infer missing tail-call frames, and how (a CS route
 * that uses them sets r->missing_frames_inferred). */
void pg_tailcall_opts(const lp_profgen_opts *o, bool *infer,
                      lp_tailcall_opts *to);

/* infer.c: the missing-frame inferrer of a probe CS run, one tail-call
 * graph per binary with probes (tcs[b] NULL otherwise; n 0: inference
 * off or not a probe run). */
typedef struct pg_infer {
    lp_tailcall **tcs;
    size_t n;
    const lp_ctxcount *cc;      /* the counters the graphs are built from */
    bool built;                 /* pg_infer_prepare has run */
    /* the last context completed: its addresses, the answer, and where
     * each address is in the answer (infer.c's reuse of a common prefix) */
    uint64_t *last_in, *last_out;
    size_t *last_pos;
    size_t nlast, nlast_out, last_cap, last_out_cap;
} pg_infer;
/* The graphs, empty, when the run infers frames (pi->n > 0). */
int pg_infer_init(pg_infer *pi, const lp_profgen_opts *o,
                  const lp_profgen_result *r, const lp_ctxcount *cc,
                  lp_error *err);
/* lp_cs_opts.infer_prepare: the graphs from every branch of cc (once;
 * generation runs it beside the probe decoding). */
int pg_infer_prepare(void *ctx, lp_error *err);
/* lp_cs_opts.infer_frames, ctx a pg_infer. */
long pg_infer_frames(void *ctx, const uint64_t *in, size_t n, uint64_t **out);
void pg_infer_free(pg_infer *pi);

#endif
