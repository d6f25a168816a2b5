/*
 * lbr2prof/listing.h - llvm-profgen's --show-disassembly-only listing of a
 * binary: every executable section, symbol by symbol, each instruction at
 * its address, with its source location (--show-source-locations, the
 * inline context leaf first) and canonical symbol names
 * (--show-canonical-fname), for all symbols or the named ones
 * (--disassemble-functions). Printed as llvm-profgen 22 prints it; the
 * instruction text is capstone's made to read like LLVM's (see
 * docs/binary.md, "The listing", for what still differs).
 */
#ifndef LBR2PROF_LISTING_H
#define LBR2PROF_LISTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called before an instruction's line (--show-pseudo-probe prints the
 * probes of the address there). */
typedef void (*lp_listing_inst_fn)(void *ctx, uint64_t addr, FILE *out);

typedef struct lp_listing_opts {
    const char *name;               /* "Disassembly of NAME:" (llvm-profgen
                                       prints the path as given); NULL:
                                       the binary's path */
    const char *const *functions;   /* --disassemble-functions: only the
                                       symbols with these names (canonical
                                       names with canonical_names); none:
                                       every symbol */
    size_t nfunctions;
    bool source_locations;          /* --show-source-locations */
    bool canonical_names;           /* --show-canonical-fname: symbol and
                                       frame names */
    bool probe_line_offsets;        /* --show-pseudo-probe: a frame's line
                                       offset is the pseudo-probe index of
                                       its discriminator, discriminator 0 */
    lp_listing_inst_fn before_inst; /* may be NULL */
    void *ctx;
} lp_listing_opts;

/* Print the listing of b to out. 0, or -1 with err (capstone, DWARF,
 * memory, or out failed). */
int lp_binary_print_listing(lp_binary *b, const lp_listing_opts *o,
                            FILE *out, lp_error *err);

/* The inline context of addr as llvm-profgen prints it after an
 * instruction ("bar:1 @ foo:3.2 @ main:1", leaf first; "" without debug
 * information) into out (cap bytes, cut if longer). 0 or -1 (err). */
int lp_binary_print_location(lp_binary *b, uint64_t addr,
                             const lp_listing_opts *o, char *out, size_t cap,
                             lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
