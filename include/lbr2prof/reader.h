/*
 * lbr2prof/reader.h - the trace reader: perf.data (file, pipe, directory,
 * compressed, either byte order) and `perf script` text, behind one API.
 *
 * A reader yields events one at a time. Pointers inside an event (strings,
 * callchain, branch entries, registers, stack bytes) stay valid only until
 * the next lp_reader_next() or lp_reader_close() call. All integers are in
 * host byte order whatever the file's order; nothing points into the file.
 *
 * Order: with LP_ORDER_TIME (the default) events are delivered the way
 * `perf script` delivers them: records that carry a timestamp are sorted by
 * time (stable) and flushed at each FINISHED_ROUND up to the previous
 * round's largest timestamp, the rest at end of input; records without a
 * timestamp (or with time 0) go out at once. LP_ORDER_FILE gives file order.
 *
 * Memory does not grow with the number of samples: the ordering queue is
 * bounded by one round (perf writes a FINISHED_ROUND at least per buffer
 * flush); files without rounds (perf 3.x) queue 24-byte references only.
 */
#ifndef LBR2PROF_READER_H
#define LBR2PROF_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/error.h"
#include "lbr2prof/warn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- constants from linux/perf_event.h, under our prefix ------------- */

enum lp_sample_bits {
    LP_SAMPLE_IP = 1u << 0,
    LP_SAMPLE_TID = 1u << 1,
    LP_SAMPLE_TIME = 1u << 2,
    LP_SAMPLE_ADDR = 1u << 3,
    LP_SAMPLE_READ = 1u << 4,
    LP_SAMPLE_CALLCHAIN = 1u << 5,
    LP_SAMPLE_ID = 1u << 6,
    LP_SAMPLE_CPU = 1u << 7,
    LP_SAMPLE_PERIOD = 1u << 8,
    LP_SAMPLE_STREAM_ID = 1u << 9,
    LP_SAMPLE_RAW = 1u << 10,
    LP_SAMPLE_BRANCH_STACK = 1u << 11,
    LP_SAMPLE_REGS_USER = 1u << 12,
    LP_SAMPLE_STACK_USER = 1u << 13,
    LP_SAMPLE_WEIGHT = 1u << 14,
    LP_SAMPLE_DATA_SRC = 1u << 15,
    LP_SAMPLE_IDENTIFIER = 1u << 16,
    LP_SAMPLE_TRANSACTION = 1u << 17,
    LP_SAMPLE_REGS_INTR = 1u << 18,
    LP_SAMPLE_PHYS_ADDR = 1u << 19,
    LP_SAMPLE_AUX = 1u << 20,
    LP_SAMPLE_CGROUP = 1u << 21,
    LP_SAMPLE_DATA_PAGE_SIZE = 1u << 22,
    LP_SAMPLE_CODE_PAGE_SIZE = 1u << 23,
    LP_SAMPLE_WEIGHT_STRUCT = 1u << 24,
};

enum lp_branch_sample_bits {
    LP_BRANCH_USER = 1u << 0,
    LP_BRANCH_KERNEL = 1u << 1,
    LP_BRANCH_ANY = 1u << 3,
    LP_BRANCH_CALL_STACK = 1u << 11,
    LP_BRANCH_TYPE_SAVE = 1u << 16,
    LP_BRANCH_HW_INDEX = 1u << 17,
    LP_BRANCH_PRIV_SAVE = 1u << 18,
    LP_BRANCH_COUNTERS = 1u << 19,
};

/* Callchain context markers: any value >= LP_CONTEXT_MAX is a marker. */
#define LP_CONTEXT_HV ((uint64_t)-32)
#define LP_CONTEXT_KERNEL ((uint64_t)-128)
#define LP_CONTEXT_USER ((uint64_t)-512)
#define LP_CONTEXT_USER_DEFERRED ((uint64_t)-640)
#define LP_CONTEXT_GUEST ((uint64_t)-2048)
#define LP_CONTEXT_GUEST_KERNEL ((uint64_t)-2176)
#define LP_CONTEXT_GUEST_USER ((uint64_t)-2560)
#define LP_CONTEXT_MAX ((uint64_t)-4095)

/* header.misc & LP_MISC_CPUMODE_MASK */
enum lp_cpumode {
    LP_CPUMODE_UNKNOWN = 0,
    LP_CPUMODE_KERNEL = 1,
    LP_CPUMODE_USER = 2,
    LP_CPUMODE_HV = 3,
    LP_CPUMODE_GUEST_KERNEL = 4,
    LP_CPUMODE_GUEST_USER = 5,
};
#define LP_MISC_CPUMODE_MASK 7u
#define LP_MISC_MMAP_DATA (1u << 13)
#define LP_MISC_COMM_EXEC (1u << 13)
#define LP_MISC_EXACT_IP (1u << 14)
#define LP_MISC_MMAP_BUILD_ID (1u << 14)

/* ---- attributes (events) --------------------------------------------- */

/* One perf_event_attr, normalised: fields past the writer's attr.size are 0. */
typedef struct lp_attr {
    uint32_t type;
    uint32_t size;          /* as written; 0 in the file means ABI0 (64) */
    uint64_t config;
    uint64_t sample_period; /* or frequency when `freq` */
    uint64_t sample_type;   /* LP_SAMPLE_* */
    uint64_t read_format;
    uint64_t flags;         /* raw bitfield word at offset 40 */
    uint64_t config1, config2;
    uint64_t branch_sample_type; /* LP_BRANCH_* */
    uint64_t sample_regs_user;
    uint32_t sample_stack_user;
    int32_t clockid;
    uint64_t sample_regs_intr;
    int freq;               /* flags bit 10 */
    int sample_id_all;      /* flags bit 18 */
    int exclude_user, exclude_kernel;
    const char *name;       /* from EVENT_DESC, or NULL */
    uint64_t *ids;          /* sample ids of this event */
    size_t nr_ids;
} lp_attr;

/* ---- events ------------------------------------------------------------ */

typedef enum lp_event_kind {
    LP_EV_SAMPLE = 1,
    LP_EV_MMAP,          /* MMAP and MMAP2 */
    LP_EV_COMM,
    LP_EV_FORK,
    LP_EV_EXIT,
    LP_EV_LOST,
    LP_EV_LOST_SAMPLES,
    LP_EV_THROTTLE,
    LP_EV_UNTHROTTLE,
    LP_EV_FINISHED_ROUND,
    LP_EV_FINISHED_INIT,
    LP_EV_OTHER,         /* any other record; `type` tells which, `body`
                            holds it */
    LP_EV_AUXTRACE_ERROR,/* synthesized by lbr2prof/pt.h (u.aux_error) */
} lp_event_kind;

typedef struct lp_branch_entry {
    uint64_t from, to;
    uint64_t flags;      /* raw perf_branch_entry flags word, host order */
} lp_branch_entry;

/* The identity of a sample's call chain and branches ((from, to) pairs,
 * not their flags): a 128-bit digest, {0, 0} when not computed. */
typedef struct lp_stacks_id {
    uint64_t lo, hi;
} lp_stacks_id;

/* perf_branch_entry flag fields (little-endian bitfield layout). */
#define LP_BR_MISPRED(f) ((unsigned)((f) & 1))
#define LP_BR_PREDICTED(f) ((unsigned)(((f) >> 1) & 1))
#define LP_BR_IN_TX(f) ((unsigned)(((f) >> 2) & 1))
#define LP_BR_ABORT(f) ((unsigned)(((f) >> 3) & 1))
#define LP_BR_CYCLES(f) ((unsigned)(((f) >> 4) & 0xffff))
#define LP_BR_TYPE(f) ((unsigned)(((f) >> 20) & 0xf))
#define LP_BR_SPEC(f) ((unsigned)(((f) >> 24) & 0x3))
#define LP_BR_NEW_TYPE(f) ((unsigned)(((f) >> 26) & 0xf))
#define LP_BR_PRIV(f) ((unsigned)(((f) >> 30) & 0x7))

typedef struct lp_sample {
    const lp_attr *attr;     /* the event this sample belongs to */
    uint64_t sample_type;    /* attr->sample_type, for convenience */
    uint64_t id, ip;
    uint32_t pid, tid;
    uint64_t time, addr, stream_id;
    uint32_t cpu;
    uint64_t period;         /* attr->sample_period when not sampled */
    uint64_t weight;
    uint64_t callchain_nr;
    const uint64_t *callchain;     /* leaf first, with LP_CONTEXT_* markers */
    uint64_t branch_nr;
    int has_hw_idx;
    uint64_t hw_idx;
    const lp_branch_entry *branches; /* [0] is the most recent branch */
    const uint64_t *branch_counters; /* NULL unless LP_BRANCH_COUNTERS */
    uint64_t regs_user_abi;          /* 0: no user registers */
    uint64_t regs_user_mask;
    const uint64_t *regs_user;       /* popcount(mask) values */
    uint64_t stack_user_size;        /* bytes at stack_user */
    const uint8_t *stack_user;
    uint64_t stack_user_dyn_size;
    uint64_t repeat;         /* 1, or the count of an aggregated text
                                sample, or the sum of the repeats of the
                                samples the reader folded into this one
                                (lp_reader_opts.fold_repeats) */
    uint64_t calls;          /* the samples of the input this one stands
                                for (0: one): more than one only when the
                                reader folded them (fold_repeats); what
                                llvm-profgen counts per sample, unweighted
                                (the leaf-external warning), adds this */
    uint64_t dup_id;         /* perf script text: nonzero when every sample
                                with this id is the same text (call stack
                                and LBR lines byte for byte; the repeat
                                count may differ), so a consumer may reuse
                                what it derived from the first; 0: unknown */
    int arrays_deferred;     /* perf script text, after
                                lp_reader_defer_arrays: callchain and
                                branches are NULL (callchain_nr and
                                branch_nr are not) until
                                lp_reader_arrays makes them */
    lp_stacks_id stacks_id;  /* perf.data through the reader's thread, when
                                the sample has a call chain: its
                                lp_stacks_id_of(), computed ahead; {0, 0}:
                                not computed */
} lp_sample;

typedef struct lp_mmap_event {
    uint32_t pid, tid;
    uint64_t start, len, pgoff;
    int is_mmap2;
    uint32_t maj, min;
    uint64_t ino, ino_generation;
    uint8_t build_id[20];
    uint8_t build_id_size;   /* >0 only for MMAP2 with LP_MISC_MMAP_BUILD_ID */
    uint32_t prot, flags;
    const char *filename;
} lp_mmap_event;

typedef struct lp_comm_event {
    uint32_t pid, tid;
    int exec;                /* misc & LP_MISC_COMM_EXEC */
    const char *comm;
} lp_comm_event;

typedef struct lp_task_event { /* FORK and EXIT */
    uint32_t pid, ppid, tid, ptid;
    uint64_t time;
} lp_task_event;

typedef struct lp_lost_event { /* LOST (id, lost) and LOST_SAMPLES (lost) */
    uint64_t id, lost;
} lp_lost_event;

typedef struct lp_throttle_event {
    uint64_t time, id, stream_id;
} lp_throttle_event;

/* sample_id_all trailer of a non-sample record (zeros if absent). */
typedef struct lp_sample_id {
    int present;
    uint32_t pid, tid;
    uint64_t time, id, stream_id;
    uint32_t cpu;
} lp_sample_id;

struct lp_auxtrace_error;

typedef struct lp_event {
    lp_event_kind kind;
    uint32_t type;           /* raw record type (PERF_RECORD_*) */
    uint16_t misc;
    uint64_t time;           /* sample time or trailer time; 0 if none */
    uint64_t offset;         /* byte offset of the record in its file (or in
                                the decompressed stream; see `compressed`) */
    int compressed;          /* came out of a COMPRESSED record */
    const char *source;      /* file name the record came from */
    lp_sample_id sid;        /* non-sample records */
    const uint8_t *body;     /* the record after its 8-byte header, in the
                                file's byte order (info.byte_swapped) */
    uint32_t body_size;
    const uint8_t *payload;  /* AUXTRACE (71): the trace bytes that follow
                                the record (valid until the next event) */
    uint64_t payload_size;
    union {
        lp_sample sample;
        lp_mmap_event mmap;
        lp_comm_event comm;
        lp_task_event task;
        lp_lost_event lost;
        lp_throttle_event throttle;
        struct lp_auxtrace_error *aux_error;
    } u;
} lp_event;

/* ---- whole-file information --------------------------------------------- */

typedef struct lp_build_id {
    uint8_t id[20];
    uint8_t size;            /* significant bytes (trailing zeros stripped when
                                the writer gave no size) */
    uint16_t misc;
    int32_t pid;
    const char *filename;
} lp_build_id;

typedef enum lp_input_format {
    LP_FMT_PERF_FILE = 1,    /* perf.data, file mode */
    LP_FMT_PERF_PIPE,        /* perf.data, pipe mode */
    LP_FMT_PERF_DIR,         /* perf record --threads directory */
    LP_FMT_PERF_SCRIPT,      /* perf script text (llvm-profgen's input) */
} lp_input_format;

typedef struct lp_file_info {
    lp_input_format format;
    int byte_swapped;
    const lp_attr *attrs;    /* grows in pipe mode as HEADER_ATTRs arrive */
    size_t nr_attrs;
    const lp_build_id *build_ids;
    size_t nr_build_ids;
    const char *const *cmdline; /* argv from CMDLINE, or NULL */
    size_t cmdline_argc;
    const char *hostname, *os_release, *perf_version, *arch, *cpu_desc, *cpuid;
    int compressed;          /* COMPRESSED feature present */
    uint64_t data_offset, data_size;
    uint64_t features[4];    /* feature bitmap (file mode) */
} lp_file_info;

/* Counters the reader keeps while it runs. */
typedef struct lp_reader_stats {
    uint64_t records, samples, mmaps, comms, forks, exits;
    uint64_t lost_records, lost_events, lost_samples;
    uint64_t unknown_id;       /* samples/records whose id matched no attr */
    uint64_t out_of_order;     /* queued below the last flush time */
    uint64_t compressed_blocks, decompressed_bytes;
    uint64_t bytes_read;
    uint64_t text_sample_starts; /* perf script text: lines taken as the start
                                    of a sample, comments and blank lines
                                    included (llvm-profgen's NumTotalSample) */
    uint64_t cut_off;          /* input files read up to a cut (not strict) */
    uint64_t complete_records; /* records read whole from the input so far
                                  (inside compressed blocks included) */
} lp_reader_stats;

/* ---- opening and reading ------------------------------------------------ */

typedef enum lp_order { LP_ORDER_TIME = 0, LP_ORDER_FILE = 1 } lp_order;

typedef struct lp_reader_opts {
    lp_order order;
    int force_text;          /* treat input as perf script text */
    int skip_payloads;       /* leave stack_user/regs/raw unparsed (faster) */
    int no_thread;           /* read perf.data in the caller's thread (a
                                mapped file-mode perf.data is otherwise read
                                on a thread of its own, ahead; same events) */
    /* A perf.data cut off (a recording killed, a disk that filled up: the
     * file ends inside a record, or before the end of the data section its
     * header gives) is read up to its last complete record, and `warn` is
     * told the file, the offset and the number of records read; the input
     * then ends there (for a directory, that file). strict: an error
     * instead, as any other truncation. */
    int strict;
    lp_warn_fn warn;         /* may be NULL (stats.cut_off still counts) */
    void *warn_ctx;
    /* The consumer weighs each sample by `repeat`, counts it `calls` times
     * where it counts samples unweighted, and minds the order of samples
     * only as far as which comes first: the reader may then count the back
     * part of a large regular input on a second thread (perf.data:
     * src/reader/tail.c; perf script text: src/reader/pstail.c) and
     * deliver each distinct sample found there once, with its repeat and
     * calls, in the order of first occurrence (docs/reader.md). Other
     * events, their order and the statistics are as without it. */
    int fold_repeats;
    /* With fold_repeats: the consumer takes a sample for little beside
     * the walk (the flat profile's aggregation, not the unwinder), so the
     * perf.data tail starts earlier (src/reader/tail.c). Speed only. */
    int fold_light;
} lp_reader_opts;

typedef struct lp_reader lp_reader;

/*
 * Open `path` ("-" = stdin). perf.data in any mode is recognised by its
 * magic; a directory is read as `perf record --threads` output; anything
 * else is parsed as perf script text. Returns NULL and fills `err` on error.
 */
lp_reader *lp_reader_open(const char *path, const lp_reader_opts *opts,
                          lp_error *err);
/* Start reading ahead now rather than at the first lp_reader_next():
 * perf script text is parsed on a thread of its own, which can then work
 * while the caller does something else (e.g. opens the binaries). A no-op
 * for perf.data. */
void lp_reader_start(lp_reader *r);
/* Whether reading keeps a second core busy: perf script text parsed on a
 * thread of its own, or a large perf.data's back part walked on one
 * (src/reader/tail.c). A perf.data's prefetching thread only hands
 * records over: it leaves the core mostly idle. 1 or 0. */
int lp_reader_second_core_busy(const lp_reader *r);

/* Work for the caller's idle time. When the next event of perf script
 * text is not parsed yet, lp_reader_next calls fn(ctx) before it waits,
 * and again while fn returns nonzero and the event is still not ready.
 * fn must not call the reader; it should return within tens of
 * microseconds. NULL: none. For perf.data read on the caller's own
 * thread (pipes, lp_reader_opts.no_thread), fn is never called. Tests
 * make the calls independent of timing with the environment variable
 * LBR2PROF_IDLE (read when the reading thread is set up): "always" calls
 * fn before every event until it returns 0, as though the parser were
 * always behind; a number N does so before each of the first N events
 * only; "never" never calls it. */
typedef int (*lp_reader_idle_fn)(void *ctx);
void lp_reader_set_idle(lp_reader *r, lp_reader_idle_fn fn, void *ctx);

/* A look ahead: when the events after the one lp_reader_next returns are
 * already read (perf.data read on a thread of its own), fn(ctx, s) is
 * called on the caller's thread for each sample a few events before
 * lp_reader_next returns it, once, so that the caller can start loading
 * what that sample will need. fn may set s->stacks_id to what
 * lp_stacks_id_of() gives for it, and change nothing else. NULL: none;
 * without a thread, never called. */
typedef void (*lp_reader_ahead_fn)(void *ctx, lp_sample *s);
void lp_reader_set_ahead(lp_reader *r, lp_reader_ahead_fn fn, void *ctx);

/* Perf script text: a sample the parser knew (nonzero dup_id) comes with
 * its call chain and branches not made (lp_sample.arrays_deferred), for a
 * consumer that may need only its dup_id (the unwinder's memo: making
 * them was a tenth of bench (a)'s instructions); lp_reader_arrays makes
 * those of the sample of the event lp_reader_next returned last (then
 * valid as the event is), and does nothing for a sample that has them.
 * 0, or -1 (no memory). For perf.data, neither does anything. */
void lp_reader_defer_arrays(lp_reader *r);
int lp_reader_arrays(lp_reader *r, const lp_sample *s, lp_error *err);

/* Read from an open FILE (pipe mode or text; no seeking). `name` is used in
 * messages. The stream is not closed by lp_reader_close(). */
lp_reader *lp_reader_open_stream(FILE *f, const char *name,
                                 const lp_reader_opts *opts, lp_error *err);

/* Read from memory (tests, fuzzing). The buffer must outlive the reader. */
lp_reader *lp_reader_open_mem(const void *buf, size_t len, const char *name,
                              const lp_reader_opts *opts, lp_error *err);

/* 1: *ev is the next event; 0: end of input; -1: error (in err). After an
 * error the reader only returns -1. */
int lp_reader_next(lp_reader *r, const lp_event **ev, lp_error *err);

const lp_file_info *lp_reader_info(const lp_reader *r);
const lp_reader_stats *lp_reader_stats_get(const lp_reader *r);
/* How far the reading is: bytes of the input consumed (perf.data: the
 * record stream's position, summed over a directory's files; text: the
 * parser's offset of the events handed over so far) and the input's size
 * (0: not known, a pipe or stream). For progress reports. */
void lp_reader_progress(const lp_reader *r, uint64_t *done, uint64_t *total);

void lp_reader_close(lp_reader *r);

/* Helpers. */
const char *lp_event_kind_name(lp_event_kind k);

/* The stacks' identity (lp_stacks_id) into *id, the digest's input built
 * in *scratch (*cap words, grown with realloc). 0, or -1: out of memory. */
int lp_stacks_id_of(const uint64_t *chain, size_t nchain, const lp_branch_entry *br,
                    size_t nbr, uint64_t **scratch, size_t *cap, lp_stacks_id *id);
/* Find the attr a sample id belongs to; NULL if none. */
const lp_attr *lp_reader_attr_by_id(const lp_reader *r, uint64_t id);

#ifdef __cplusplus
}
#endif
#endif
