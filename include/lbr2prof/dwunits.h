/*
 * lbr2prof/dwunits.h - the compile units of a DWARF file with their split
 * units (split DWARF), for code that walks DIEs with libdw itself: the
 * binary loader (src/binary) and dump-syms (src/breakpad).
 *
 * A skeleton unit's split unit comes, as llvm's DWARFContext finds it:
 *   - from the DWARF package when there is one (`dwp_path`, which must
 *     then be a valid package; without it `<dbg_path>.dwp` when that is an
 *     ELF file), every unit of it, a unit not in it being missing;
 *   - else from the .dwo file DW_AT_dwo_name names (relative to
 *     DW_AT_comp_dir, else to the DWARF file's directory): read by libdw,
 *     or by src/binary/dwp.c where libdw cannot (the .o of
 *     -gsplit-dwarf=single; g++'s DWARF 5 .dwo files with type units).
 * Range lists of units read by dwp.c are not libdw's to decode: use
 * lp_dwunits_ranges for every DIE, in place of dwarf_ranges.
 */
#ifndef LBR2PROF_DWUNITS_H
#define LBR2PROF_DWUNITS_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lp_dwunits lp_dwunits;

/* dw: libdw's handle of dbg_elf (the file at dbg_path), which must outlive
 * the set. dwp_path: a package (an error if it is not a valid one), or
 * NULL for the default. NULL with err on a bad package or no memory. */
lp_dwunits *lp_dwunits_open(Dwarf *dw, Elf *dbg_elf, const char *dbg_path,
                            const char *dwp_path, lp_error *err);
void lp_dwunits_close(lp_dwunits *u);

/* Called with each unit's DIE to walk and the unit its line table (and
 * DW_AT_comp_dir) belongs to: first every unit of the file, skeletons
 * included (die == skel), then the split unit of every skeleton (skel =
 * the skeleton). A non-zero return stops the walk and is returned. */
typedef int (*lp_dwunit_fn)(void *ctx, Dwarf_Die *die, Dwarf_Die *skel);

/* 0 (or fn's first non-zero), or -1 with err on allocation failure. */
int lp_dwunits_walk(lp_dwunits *u, lp_dwunit_fn fn, void *ctx, lp_error *err);

/* After a walk: skeletons whose split unit was found nowhere. */
size_t lp_dwunits_missing(const lp_dwunits *u);
/* The package in use, or NULL. */
const char *lp_dwunits_package(const lp_dwunits *u);

/* dwarf_ranges for any DIE of the walk (same protocol). */
ptrdiff_t lp_dwunits_ranges(lp_dwunits *u, Dwarf_Die *die, ptrdiff_t off,
                            Dwarf_Addr *basep, Dwarf_Addr *lo, Dwarf_Addr *hi);

#ifdef __cplusplus
}
#endif
#endif
