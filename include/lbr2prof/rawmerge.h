/*
 * lbr2prof/rawmerge.h - lbr2prof's mergeable raw profile, and merging it.
 *
 * The raw profile is llvm-profgen's unsymbolized profile (the range and
 * branch counts --skip-symbolization writes, per context for hybrid
 * samples) with '#' lines that say what merging needs. `--skip-symbolization
 * --raw-header` writes it; without --raw-header the output stays
 * llvm-profgen's, byte for byte. docs/rawmerge.md has the format:
 *
 *   #lbr2prof-raw 1 cs                       version, cs, probe or flat
 *   #base preferred                          what addresses are relative to
 *   #options compress-recursion=-1 ...       the options counting depended on
 *   #binary 0 <build-id|-> 0x<base> <path>   one line per binary, in order
 *   #stats traces=N samples=N ...            sums over the traces
 *   #section 0                               binary 0's blocks follow
 *   #leaf-inlined 1                          attributes of the next context
 *   [main:1 @ foo]
 *     2
 *     ...
 *
 * Every line that does not start with '#' is llvm-profgen's; removing the
 * '#' lines of a one-binary profile gives llvm-profgen's file.
 *
 * Merging sums counts (ranges and branches per context) and statistics,
 * and combines context attributes; it is associative and commutative, and
 * its output does not depend on the order of its inputs: any split of the
 * traces into shards, merged in any tree, gives the raw profile of one
 * run over all the traces, and the profile generated from it is that
 * run's (docs/rawmerge.md says what is and is not exact). Inputs must
 * agree on what they are of: the same binaries in the same order (a
 * binary with another build-id under the same name is an error naming
 * both), the same base rule and the same counting options.
 */
#ifndef LBR2PROF_RAWMERGE_H
#define LBR2PROF_RAWMERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/ctxcount.h"
#include "lbr2prof/error.h"
#include "lbr2prof/flat.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LP_RAW_VERSION 1

/* What the addresses are relative to (--use-offset,
 * --use-first-loadable-segment-as-base). */
typedef enum lp_raw_base {
    LP_RAW_BASE_PREFERRED = 0,  /* the preferred load address (default) */
    LP_RAW_BASE_FIRST_LOADABLE, /* the first loadable segment's */
    LP_RAW_BASE_NONE,           /* absolute link-time addresses */
} lp_raw_base;

typedef struct lp_raw_binary {
    char *path;                 /* as the writer opened it (absolute when
                                   it could tell); after a merge the least
                                   in strcmp order */
    uint8_t build_id[20];
    size_t build_id_size;       /* 0: the binary has none */
    uint64_t base;              /* what its addresses are relative to */
} lp_raw_binary;

/* Sums over the traces (lp_profgen_stats' additive counts). What is
 * counted per distinct sample (the unwinder's warnings) is not here: it
 * does not add up across traces. */
typedef struct lp_raw_stats {
    uint64_t traces, samples, used, hybrid, lbr_only, lost, repaired,
        truncated, external, contextless;
} lp_raw_stats;

typedef struct lp_rawhdr {
    bool cs;                    /* context blocks ("[...]"), else flat */
    bool addrs;                 /* cs with address contexts ("[0x7f4 @
                                   0x7bf]": a pseudo-probe binary's),
                                   kind "probe"; else frame contexts */
    lp_raw_base base;
    char *options;              /* the counting options, as printed */
    lp_raw_binary *bins;        /* [0] the profiled program */
    size_t nbins;
    lp_raw_stats stats;
} lp_rawhdr;

void lp_rawhdr_free(lp_rawhdr *h);
/* h->bins[h->nbins++] = {path, id, base} (copied). 0 or -1 (OOM). */
int lp_rawhdr_add_binary(lp_rawhdr *h, const char *path, const uint8_t *id,
                         size_t nid, uint64_t base, lp_error *err);
const char *lp_raw_base_name(lp_raw_base b);
/* The kind word of the first line: "cs", "probe" or "flat". */
const char *lp_rawhdr_kind(const lp_rawhdr *h);

/* The header at the start of f: 1 (f is left at the first body line, *lines
 * = the header's lines), 0 when f does not start with "#lbr2prof-raw" (f
 * rewound), -1 with err naming the file and line. */
int lp_rawhdr_read(FILE *f, const char *name, lp_rawhdr *h,
                   unsigned long *lines, lp_error *err);
int lp_rawhdr_write(FILE *f, const lp_rawhdr *h, lp_error *err);

/* The header, then every binary's "#section" with its contexts (cs: cc,
 * attributes included) or binary 0's flat counters (flat; NULL: cc's
 * empty context of binary 0). Addresses are link-time; the bases are
 * subtracted. */
int lp_raw_write(FILE *f, const lp_rawhdr *h, const lp_ctxcount *cc,
                 const lp_counters *flat, lp_error *err);
/* The body after lp_rawhdr_read into cc (bases added, counts times
 * weight, 0 = 1): flat profiles go to binary 0's empty context. *mixed
 * (may be NULL) grows by the contexts already in cc that are now mixed
 * (lp_ctx_entry.leaf_inlined_mixed). */
int lp_raw_read_body(FILE *f, const char *name, const lp_rawhdr *h,
                     unsigned long lines, uint64_t weight, lp_ctxcount *cc,
                     size_t *mixed, lp_error *err);

/* a and b describe the same binaries (in order; by build-id, or by file
 * name for a binary without one), bases and options: what a merge needs.
 * -1 with err naming a_name and b_name otherwise. */
int lp_rawhdr_check(const lp_rawhdr *a, const char *a_name,
                    const lp_rawhdr *b, const char *b_name, lp_error *err);
/* The binaries alone. */
int lp_rawhdr_check_binaries(const lp_rawhdr *a, const char *a_name,
                             const lp_rawhdr *b, const char *b_name,
                             lp_error *err);

/* ---- merging ---------------------------------------------------------- */

typedef struct lp_rawmerge lp_rawmerge;

lp_rawmerge *lp_rawmerge_new(lp_error *err);
void lp_rawmerge_free(lp_rawmerge *m);
/* Add the raw profile at `path` (with its header), counts and statistics
 * times `weight` (0 = 1). 0, or -1 with err (unreadable, no header, or
 * not of what the profiles added before are of). */
int lp_rawmerge_add(lp_rawmerge *m, const char *path, uint64_t weight,
                    lp_error *err);
/* The sum, written atomically to `out` ("-" = stdout). */
int lp_rawmerge_write(const lp_rawmerge *m, const char *out, lp_error *err);
/* The sum's header (NULL before the first add). */
const lp_rawhdr *lp_rawmerge_header(const lp_rawmerge *m);
/* 0 when no context met in two inputs has leaves both inlined and not;
 * else the number of such (mixed) contexts in the sum: their
 * ContextWasInlined is set if any input set it, where one run over all
 * the traces keeps its first sample's, so it may differ. */
size_t lp_rawmerge_mixed(const lp_rawmerge *m);

/* Whether the file at path starts with lbr2prof's raw header: 1, 0, or -1
 * with err (cannot be read). */
int lp_rawmerge_sniff(const char *path, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
