/*
 * lbr2prof/probe.h - pseudo probes (clang -fpseudo-probe-for-profiling):
 * the .pseudo_probe_desc and .pseudo_probe sections of one ELF binary,
 * decoded once into sorted arrays, and the lookups profile generation
 * needs (probes at an address or in an address range, the call probe of a
 * call instruction, the inline stack of a probe), with llvm-profgen 22's
 * semantics (MCPseudoProbeDecoder, ProfiledBinary).
 *
 * Encodings (LLVM's MC/MCPseudoProbe.h):
 *   .pseudo_probe_desc: records { u64 GUID, u64 CFG checksum,
 *                       ULEB name length, name bytes }.
 *   .pseudo_probe:      a forest of function records, each
 *                       { [ULEB call-site probe id, inlinees only],
 *                         u64 GUID, ULEB probe count, ULEB inlinee count,
 *                         probes, inlinee records }, a probe being
 *                       { ULEB id, u8 type | attributes << 4 | flag << 7,
 *                         SLEB address delta (flag 1) or u64 address /
 *                         split-function GUID (flag 0),
 *                         [ULEB discriminator if attribute 4] }.
 *   Sentinel probes (attribute 2) give the start of a split function
 *   part: no probe of their own, only the base of the next deltas.
 *
 * Addresses are link-time virtual addresses of the binary. Everything
 * returned stays valid until lp_probes_free(). Not thread-safe to decode;
 * lookups on a decoded table are read-only.
 */
#ifndef LBR2PROF_PROBE_H
#define LBR2PROF_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum lp_probe_type {
    LP_PROBE_BLOCK = 0,
    LP_PROBE_INDIRECT_CALL = 1,
    LP_PROBE_DIRECT_CALL = 2,
};

enum lp_probe_attr {            /* PseudoProbeAttributes */
    LP_PROBE_ATTR_RESERVED = 1, /* "dangling" in LLVM 12-13's encoding */
    LP_PROBE_ATTR_SENTINEL = 2,
    LP_PROBE_ATTR_HAS_DISC = 4,
};

#define LP_PROBE_NONE UINT32_MAX  /* no node / no parent (top level) */

typedef struct lp_probe {
    uint64_t addr;
    uint32_t index;             /* probe id in its function (1 = entry) */
    uint32_t disc;              /* discriminator, 0 if none */
    uint32_t node;              /* inline tree node it belongs to */
    uint8_t type;               /* enum lp_probe_type (4 bits as decoded) */
    uint8_t attr;               /* enum lp_probe_attr bits */
} lp_probe;

/* A function record: a top-level function, or an inlinee at a call-site
 * probe of its parent. Children are contiguous (first_child ...). */
typedef struct lp_probe_node {
    uint64_t guid;
    uint32_t parent;            /* LP_PROBE_NONE for top-level records */
    uint32_t site;              /* call-site probe id in the parent (0:
                                   unknown site; top level: 0) */
    uint32_t first_probe, nprobes;  /* lp_probes_probe(first_probe + i) */
    uint32_t first_child, nchildren;
    int32_t desc;               /* its lp_probe_desc, -1 if none */
} lp_probe_node;

typedef struct lp_probe_desc {
    uint64_t guid;
    uint64_t hash;              /* CFG checksum (!CFGChecksum) */
    const char *name;           /* NUL-terminated copy */
} lp_probe_desc;

typedef struct lp_probes lp_probes;

/* Whether the ELF file has both probe sections (llvm-profgen's
 * checkPseudoProbe). 1, 0, or -1 with err when it cannot be opened. */
int lp_probes_present(const char *path, lp_error *err);

/* Read the probe sections and the symbol table of an ELF file and decode
 * .pseudo_probe_desc. NULL with err: not ELF, a section missing (LP_EUNSUPP:
 * no pseudo probes), or a malformed description record (LP_EFORMAT, naming
 * the section and the offset). */
lp_probes *lp_probes_open(const char *path, lp_error *err);
void lp_probes_free(lp_probes *p);
/* The same from section bytes (copied; no symbols): tests and fuzzing.
 * name stands for the file in messages. */
lp_probes *lp_probes_from_bytes(const void *desc, size_t desc_len,
                                const void *probe, size_t probe_len,
                                const char *name, lp_error *err);

/* Decode .pseudo_probe, once. guids: the top-level functions to keep
 * (llvm-profgen's GUID filter: the MD5 of the profiled functions' names),
 * NULL = every function. starts: the function start addresses the
 * encoding is relative to, as (GUID, address) pairs (llvm-profgen: the
 * symbols at the profiled functions' range starts), NULL = every symbol
 * of the file (as llvm-profgen with --show-disassembly-only). 0, or -1
 * with an LP_EFORMAT error naming the section and the offset (truncated
 * or out-of-range numbers, a function without a description). */
typedef struct lp_probe_start {
    uint64_t guid, addr;
} lp_probe_start;
int lp_probes_decode(lp_probes *p, const uint64_t *guids, size_t nguids,
                     const lp_probe_start *starts, size_t nstarts,
                     lp_error *err);

/* llvm-profgen's decodePseudoProbe for profile generation: decode the
 * records of the functions funcs[0..n) of the binary p was read from
 * (lp_binary's; repeats and NULLs ignored), i.e. the GUIDs of their names,
 * relative to the symbols at their range starts. 0 or -1. */
struct lp_function;
int lp_probes_decode_for(lp_probes *p, const struct lp_function *const *funcs,
                         size_t n, lp_error *err);
/* Whether lp_probes_decode(_for) ran. */
bool lp_probes_decoded(const lp_probes *p);

/* The GUID of a function name (MD5Hash, Function::getGUID). */
uint64_t lp_probe_guid(const char *name);
/* The (GUID, address) pairs of the symbols of the file starting at addr
 * (llvm-profgen's StartAddrToSymMap), appended to *v (*n, *cap). 0 or -1. */
int lp_probes_symbols_at(const lp_probes *p, uint64_t addr,
                         lp_probe_start **v, size_t *n, size_t *cap);

/* ---- descriptions -------------------------------------------------------- */

/* All descriptions sorted by GUID; their count. */
size_t lp_probes_descs(const lp_probes *p, const lp_probe_desc **out);
/* The description of a GUID, NULL if none. */
const lp_probe_desc *lp_probes_desc(const lp_probes *p, uint64_t guid);
/* The name of a function record (its description's), never NULL after a
 * successful decode. */
const char *lp_probes_node_name(const lp_probes *p, uint32_t node);

/* ---- decoded probes ------------------------------------------------------ */

size_t lp_probes_count(const lp_probes *p);
const lp_probe *lp_probes_probe(const lp_probes *p, uint32_t id);
size_t lp_probes_nodes(const lp_probes *p, const lp_probe_node **out);
/* The top-level records, in section order: node ids. */
size_t lp_probes_tops(const lp_probes *p, const uint32_t **out);

/* Probe ids sorted by address (ties in decode order): those at addr, or
 * with lo <= addr <= hi. Returns the count, *ids points into the table. */
size_t lp_probes_at(const lp_probes *p, uint64_t addr, const uint32_t **ids);
size_t lp_probes_in(const lp_probes *p, uint64_t lo, uint64_t hi,
                    const uint32_t **ids);
/* getCallProbeForAddr: the first call probe at addr, NULL if none. */
const lp_probe *lp_probes_call_at(const lp_probes *p, uint64_t addr);

static inline bool lp_probe_is_call(const lp_probe *pr)
{
    return pr->type == LP_PROBE_INDIRECT_CALL ||
           pr->type == LP_PROBE_DIRECT_CALL;
}
static inline bool lp_probe_is_block(const lp_probe *pr)
{
    return pr->type == LP_PROBE_BLOCK;
}
static inline bool lp_probe_is_entry(const lp_probe *pr)
{
    return pr->index == 1;
}

/* ---- inline stacks ------------------------------------------------------- */

typedef struct lp_probe_frame {
    const char *func;           /* the function's probe name */
    uint32_t index;             /* call-site probe id; the probe's own id
                                   for the leaf */
    uint64_t hash;              /* the function's CFG checksum */
} lp_probe_frame;

/* ProfiledBinary::getInlineContextForProbe: the probe's inline stack,
 * outermost caller first, each caller with the call-site probe id, then
 * (include_leaf) the probe's function with the probe's id, appended to
 * the `start` frames already in out (cap frames of room). A frame other
 * than the last appended whose site is 0 (unknown) is dropped with every
 * frame before it, the ones already in out included, as llvm-profgen
 * does. Returns the new count; more than cap: nothing was written, call
 * again with that much room. */
size_t lp_probes_inline_stack(const lp_probes *p, const lp_probe *pr,
                              bool include_leaf, lp_probe_frame *out,
                              size_t start, size_t cap);
/* The number of frames of a node's inline chain (1 for a top-level
 * record). */
size_t lp_probes_node_depth(const lp_probes *p, uint32_t node);

/* ---- printing (llvm-profgen --show-pseudo-probe) ------------------------- */

/* "Pseudo Probe Desc:" and every description, by GUID. */
void lp_probes_print_descs(const lp_probes *p, FILE *f);
/* " [Probe]:\tFUNC: name Index: 1  Type: Block  Inlined: @ main:2" lines
 * for the probes at addr, in decode order. */
void lp_probes_print_at(const lp_probes *p, uint64_t addr, FILE *f);

/* ---- probe data in DWARF discriminators (PseudoProbeDwarfDiscriminator) -- */

typedef struct lp_probe_disc {
    uint32_t index;             /* probe id */
    uint32_t factor;            /* distribution factor, 0..100 (percent) */
    uint32_t type;              /* enum lp_probe_type */
    uint32_t attr;
    bool has_base;              /* a DWARF base discriminator is packed */
    uint32_t base;              /* ... and its value (0..7) */
} lp_probe_disc;

/* Whether a DWARF discriminator carries probe data (low 3 bits all set). */
static inline bool lp_probe_disc_is_probe(uint32_t d)
{
    return (d & 7) == 7;
}
void lp_probe_disc_decode(uint32_t d, lp_probe_disc *out);

#ifdef __cplusplus
}
#endif
#endif
