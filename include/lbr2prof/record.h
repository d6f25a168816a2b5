/*
 * lbr2prof/record.h - recording perf.data with branch stacks: on the PMU
 * (perf_event_open, src/record/) or by exact software simulation of LBR
 * under ptrace (src/simulate/). Both write through lbr2prof/perfwrite.h.
 */
#ifndef LBR2PROF_RECORD_H
#define LBR2PROF_RECORD_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LP_LBR_DEPTH 32             /* entries kept by --simulate */
#define LP_MAX_STACK 127            /* kernel.perf_event_max_stack default */

typedef struct lp_record_opts {
    const char *output;             /* perf.data path */
    char *const *argv;              /* command to run (NULL with pid) */
    int argc;
    pid_t pid;                      /* -p: attach (hardware mode only) */
    const char *event;              /* libpfm4 name; NULL = CPU default */
    uint64_t period;                /* -c */
    uint64_t freq;                  /* -F (hardware mode only) */
    uint32_t user_stack;            /* --user-stack=SIZE, 0 = off */
    int no_user_callchain;          /* --call-graph=dwarf: no frame-pointer
                                       walk of user code in the callchain
                                       (perf's exclude_callchain_user), the
                                       user stack instead (8192 bytes unless
                                       --user-stack says) */
    int no_branch_stack;            /* hardware: callchains only (PMUs
                                       without LBR, tests of the ring path) */
    /* --simulate only */
    uint64_t seed;                  /* jitter of the period */
    const char *truth_path;         /* --truth FILE (JSON) */
    int intel_pt;                   /* --intel-pt: the branch trace as Intel
                                       PT (AUX data) instead of LBR samples */
    FILE *debug_dump;               /* --debug-dump: one line per sample */
    char *const *record_argv;       /* lbr2prof's own argv for CMDLINE */
    int record_argc;
} lp_record_opts;

typedef struct lp_record_stats {
    uint64_t samples, lost, threads;
    uint64_t instructions, taken_branches; /* --simulate */
    double seconds;
    int exit_status;                /* of the traced command (wait status) */
} lp_record_stats;

/* Software mode: run opts->argv under ptrace, single-stepping every
 * thread, and write the LBR samples. */
int lp_simulate_record(const lp_record_opts *opts, lp_record_stats *st,
                       lp_error *err);

/* Hardware mode: perf_event_open with branch sampling. Fails with
 * LP_EUNSUPP and a one-line message when the PMU cannot sample branches. */
int lp_hw_record(const lp_record_opts *opts, lp_record_stats *st,
                 lp_error *err);

/* The encoding of a hardware event by libpfm4 (for tests and messages). */
typedef struct lp_pfm_event {
    uint32_t type;
    uint64_t config, config1, config2;
    int exclude_kernel, exclude_user;
    char pmu[64];                   /* libpfm4 PMU name, e.g. "skl" */
    char fstr[256];                 /* fully qualified libpfm4 name */
} lp_pfm_event;

/* libpfm4, loaded (libpfm.so.4) and initialised; only `record` needs it,
 * so no other command loads it. NULL with a message naming the library
 * and its Debian package when it is not installed. */
typedef struct lp_pfm lp_pfm;
lp_pfm *lp_pfm_open(lp_error *err);
void lp_pfm_close(lp_pfm *p);

/* The default taken-branch event of the first active libpfm4 PMU, or NULL
 * when none is known (no core PMU visible). A static string. */
const char *lp_pfm_default_event(lp_pfm *p, lp_error *err);
/* Encode `name` for user-space-only counting. */
int lp_pfm_encode(lp_pfm *p, const char *name, lp_pfm_event *ev, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
