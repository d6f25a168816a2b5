/*
 * lbr2prof/perfwrite.h - a perf.data writer (file mode, one event), the
 * format perf 6.1 itself writes: 104-byte header, one 128-byte attr (VER7),
 * a record stream, and the feature sections perf reads quietly (BUILD_ID,
 * HOSTNAME, OSRELEASE, VERSION, ARCH, NRCPUS, CMDLINE, EVENT_DESC,
 * BRANCH_STACK). The file is written through lp_outfile, so it appears
 * only when lp_perfwrite_close() succeeds.
 *
 * Records reuse the reader's event structs (lbr2prof/reader.h), so a test
 * can compare what was written with what the reader gives back.
 * Non-sample records carry the sample_id_all trailer for the sample_type
 * bits TID, TIME and IDENTIFIER (the only id bits this writer supports).
 */
#ifndef LBR2PROF_PERFWRITE_H
#define LBR2PROF_PERFWRITE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lbr2prof/error.h"
#include "lbr2prof/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* perf_event_attr flag bits (offset 40) used by the writers. */
#define LP_ATTR_DISABLED (1ull << 0)
#define LP_ATTR_INHERIT (1ull << 1)
#define LP_ATTR_EXCLUDE_KERNEL (1ull << 5)
#define LP_ATTR_EXCLUDE_HV (1ull << 6)
#define LP_ATTR_MMAP (1ull << 8)
#define LP_ATTR_COMM (1ull << 9)
#define LP_ATTR_FREQ (1ull << 10)
#define LP_ATTR_ENABLE_ON_EXEC (1ull << 12)
#define LP_ATTR_TASK (1ull << 13)
#define LP_ATTR_PRECISE_IP(n) ((uint64_t)(n) << 15)
#define LP_ATTR_SAMPLE_ID_ALL (1ull << 18)
#define LP_ATTR_EXCLUDE_CALLCHAIN_KERNEL (1ull << 21)
#define LP_ATTR_MMAP2 (1ull << 23)
#define LP_ATTR_COMM_EXEC (1ull << 24)
#define LP_ATTR_BUILD_ID (1ull << 34)

/* x86_64 perf register mask of `--call-graph dwarf` (all but DS ES FS GS)
 * and the register ABI value for 64-bit tasks. */
#define LP_X86_REGS_USER_MASK 0xff0fffull
#define LP_REGS_ABI_64 2

#define LP_PERF_ATTR_SIZE 128 /* what perf 6.1 writes */

/* The event of the file: lp_perfwrite_open() copies it. `size` and `ids`
 * are ignored (128 and none). */
typedef struct lp_perfwrite_opts {
    lp_attr attr;
    uint64_t id;                /* the event's sample id (attr ids section,
                                   IDENTIFIER fields); 0: none */
    const char *event_name;     /* EVENT_DESC name, e.g. "br_inst_retired.near_taken:u" */
    int argc;                   /* CMDLINE feature */
    char *const *argv;
    const char *hostname, *osrelease, *arch; /* NULL: from uname() */
    const char *version;        /* NULL: "lbr2prof <version>" */
} lp_perfwrite_opts;

typedef struct lp_perfwrite lp_perfwrite;

/* Open `path` (not "-": the header is rewritten at close). */
lp_perfwrite *lp_perfwrite_open(const char *path, const lp_perfwrite_opts *o,
                                lp_error *err);

/* Records. `time` goes into the sample_id trailer. */
int lp_perfwrite_comm(lp_perfwrite *w, const lp_comm_event *c, uint64_t time,
                      lp_error *err);
/* MMAP2; with build_id_size > 0 the build-id form (misc bit 14), else
 * maj/min/ino. The build-id is also listed in the BUILD_ID feature. */
int lp_perfwrite_mmap2(lp_perfwrite *w, const lp_mmap_event *m,
                       uint64_t time, lp_error *err);
int lp_perfwrite_fork(lp_perfwrite *w, const lp_task_event *t, lp_error *err);
int lp_perfwrite_exit(lp_perfwrite *w, const lp_task_event *t, lp_error *err);
/* SAMPLE with the fields of attr.sample_type among IP TID TIME PERIOD
 * CALLCHAIN BRANCH_STACK REGS_USER STACK_USER (others are refused at open).
 * `misc` is the record's misc (cpumode). */
int lp_perfwrite_sample(lp_perfwrite *w, const lp_sample *s, uint16_t misc,
                        lp_error *err);
int lp_perfwrite_lost(lp_perfwrite *w, uint64_t id, uint64_t lost,
                      uint32_t pid, uint32_t tid, uint64_t time,
                      lp_error *err);
int lp_perfwrite_finished_round(lp_perfwrite *w, lp_error *err);

/* AUX area tracing (Intel PT): ITRACE_START and AUX records (with the
 * sample_id trailer), the AUXTRACE_INFO user record (u32 type, then the
 * `n` u64 private words), and AUXTRACE records: the header below, then
 * `size` bytes of trace padded with zeros to a multiple of 8 (the size
 * written is the padded one, as perf record writes it). */
typedef struct lp_perfwrite_aux_buf {
    uint64_t offset;            /* position of the data in its AUX buffer */
    uint64_t reference;         /* a TSC value: perf's reference timestamp */
    uint32_t idx, tid, cpu;     /* mmap index, thread (-1), cpu (-1) */
} lp_perfwrite_aux_buf;
int lp_perfwrite_itrace_start(lp_perfwrite *w, uint32_t pid, uint32_t tid,
                              uint64_t time, lp_error *err);
int lp_perfwrite_aux(lp_perfwrite *w, uint64_t aux_offset, uint64_t aux_size,
                     uint64_t flags, uint32_t pid, uint32_t tid, uint64_t time,
                     lp_error *err);
int lp_perfwrite_auxtrace_info(lp_perfwrite *w, uint32_t type,
                               const uint64_t *priv, size_t n, lp_error *err);
int lp_perfwrite_auxtrace(lp_perfwrite *w, const void *data, uint64_t size,
                          const lp_perfwrite_aux_buf *a, lp_error *err);

/* One event as the reader gives it: SAMPLE, MMAP (as MMAP2), COMM, FORK
 * and EXIT are written, other kinds skipped (0). For tools that rewrite
 * recordings (merging, splitting). */
int lp_perfwrite_event(lp_perfwrite *w, const lp_event *ev, lp_error *err);
/* A complete record as the kernel wrote it (hardware mode). */
int lp_perfwrite_raw(lp_perfwrite *w, const void *rec, size_t size,
                     lp_error *err);

/* Called with a key naming a mapping ("start-end pgoff path"): 1 if it
 * was reported already, 0 if not (and now remembered), -1 out of memory. */
typedef int (*lp_perfwrite_seen_fn)(void *ctx, const char *key);

/* MMAP2 records (with build-ids) for the executable mappings listed in
 * /proc/PID/maps that `seen` (may be NULL) does not know yet. A process
 * that is gone is not an error. */
int lp_perfwrite_proc_maps(lp_perfwrite *w, pid_t pid, pid_t tid,
                           uint64_t time, lp_perfwrite_seen_fn seen, void *ctx,
                           lp_error *err);

/* Number of SAMPLE records / bytes of records written so far. */
uint64_t lp_perfwrite_nr_samples(const lp_perfwrite *w);
uint64_t lp_perfwrite_data_size(const lp_perfwrite *w);

/* Write the feature sections and the header, rename into place, free. */
int lp_perfwrite_close(lp_perfwrite *w, lp_error *err);
/* Drop the file and free (safe with NULL). */
void lp_perfwrite_abort(lp_perfwrite *w);

#ifdef __cplusplus
}
#endif
#endif
