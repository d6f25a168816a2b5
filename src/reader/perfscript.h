/*
 * perfscript.h - internal interface between the reader front end
 * (reader.c, which detects the input kind) and the perf script text backend
 * (perfscript.c). Not public: users go through lbr2prof/reader.h.
 *
 * The text backend parses what llvm-profgen accepts: LBR-only lines
 * (optional leading IP, then 0xFROM/0xTO/flags... entries), hybrid samples
 * (callchain lines leaf first, then one brstack line), an optional decimal
 * repeat count on its own line before a sample (aggregated input), and
 * PERF_RECORD_MMAP / PERF_RECORD_MMAP2 lines from --show-mmap-events.
 */
#ifndef LBR2PROF_READER_PERFSCRIPT_H
#define LBR2PROF_READER_PERFSCRIPT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/reader.h"

typedef struct lp_pscript lp_pscript;

/* `f` is read sequentially to EOF and not closed. `prefix` holds bytes the
 * caller already consumed from `f` while sniffing the format (may be 0). */
lp_pscript *lp_pscript_open(FILE *f, const void *prefix, size_t prefix_len,
                            const char *name, lp_error *err);
/* Same contract as lp_reader_next(); `ev` is owned by the backend. One
 * promise more: a sample with a nonzero dup_id has its call chain and
 * branches in the block cache, where they stay, unchanged, until
 * lp_pscript_close() (the prefetcher hands them over without a copy). */
int lp_pscript_next(lp_pscript *p, const lp_event **ev, lp_error *err);
void lp_pscript_close(lp_pscript *p);

/* What llvm-profgen would have warned about, and what was delivered. */
typedef struct lp_pscript_stats {
    uint64_t samples_seen;   /* lines taken as the start of a sample */
    uint64_t samples;        /* LP_EV_SAMPLE events delivered */
    uint64_t mmaps;          /* LP_EV_MMAP events delivered */
    uint64_t skipped_lines;  /* comments, blank lines, aborted samples */
    uint64_t bad_lbr_lines;  /* "Invalid address in LBR record" */
    uint64_t bad_mmap_lines; /* "Cannot parse mmap event" */
    uint64_t tail_units;     /* samples (with their blank lines) the tail
                                counted (pstail.c) */
    uint64_t tail_blocks;    /* ... handed on as this many, with repeats */
} lp_pscript_stats;

const lp_pscript_stats *lp_pscript_stats_get(const lp_pscript *p);
/* Bytes of the input consumed so far (progress reports). */
uint64_t lp_pscript_offset(const lp_pscript *p);

/* A sample from the block cache, not made into an event yet. */
typedef struct lp_pscript_ref {
    const void *blk;
    uint64_t repeat, offset;
    uint64_t calls;     /* lp_sample.calls (the tail's samples) */
} lp_pscript_ref;

/* As lp_pscript_next, except that a sample from the block cache comes
 * back as *ref, with 2 (and *ev untouched): making its event - a large
 * struct written, and the cached block read, likely from memory - is
 * left to lp_pscript_event_of, which another thread may do while this
 * one parses on (prefetch.c). */
int lp_pscript_next_ref(lp_pscript *p, const lp_event **ev,
                        lp_pscript_ref *ref, lp_error *err);
/* The caller's buffers for a cached sample's arrays (zeroed at first;
 * grown with realloc; the caller frees frames and br). */
typedef struct lp_pscript_arrays {
    uint64_t *frames;
    size_t frames_cap;
    lp_branch_entry *br;
    size_t br_cap;
} lp_pscript_arrays;

/* The event lp_pscript_next would have returned for ref, its arrays in
 * *a (valid until a is used again); a NULL: without them (callchain and
 * branches NULL, their counts set, arrays_deferred), for
 * lp_pscript_arrays_of to make if the consumer needs them. Reads only
 * what stays unchanged until lp_pscript_close (the name, the cached
 * block), so any thread may call them while another one parses. 0, or
 * -1: no memory. */
int lp_pscript_event_of(const lp_pscript *p, const lp_pscript_ref *ref,
                        lp_event *out, lp_pscript_arrays *a);
int lp_pscript_arrays_of(const lp_pscript_ref *ref, lp_event *ev,
                         lp_pscript_arrays *a);
/* The consumer weights each sample by its repeat and needs nothing else
 * of a sample's place in the text: samples of the file's tail may then
 * come as one with their count as repeat, counted on a second thread
 * (pstail.c). Before the first lp_pscript_next. */
void lp_pscript_allow_repeats(lp_pscript *p);
/* After the first lp_pscript_next(): 1 if samples carry call stacks. */
int lp_pscript_is_hybrid(const lp_pscript *p);

/* llvm-profgen's line predicates on the line [s, s+n) (no '\n'), for the
 * tail (pstail.c): a call-stack frame line, an MMAP event line, a
 * decimal repeat count line. */
int lp_pscript_frame_line(const char *s, size_t n);
int lp_pscript_mmap_line(const char *s, size_t n);
int lp_pscript_count_line(const char *s, size_t n);

/* True if the first bytes of an input look like perf script text rather
 * than anything else we know (used for error messages). */
int lp_pscript_sniff(const void *buf, size_t len);

/* For tests, which compare the fast code with the general code it stands
 * for. The hex digit run at s (before e): impl 0 as the parser runs it,
 * 1 a byte at a time, 2 a word at a time. Returns the stop position, NULL
 * on overflow. */
const char *lp_pscript_hex_run(const char *s, const char *e, int impl,
                               uint64_t *out);
/* One LBR entry token at s (not a space) in a line ending at le; general:
 * the byte-at-a-time code only. 0 and *end = the token's end, or -1. */
int lp_pscript_br_token(const char *s, const char *le, int general,
                        lp_branch_entry *b, const char **end);

#endif
