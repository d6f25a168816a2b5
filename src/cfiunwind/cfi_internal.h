/*
 * cfi_internal.h - what the files of src/cfiunwind share: the lp_cfi
 * object (one ELF file's CFI handles, its load segments and its row
 * cache). Not public: users go through lbr2prof/cfiunwind.h.
 *
 *   table.c  lp_cfi: opening, segments, rows compiled from libdw and cached
 *   expr.c   DWARF expressions over registers and a stack copy
 *   walk.c   perf registers, one step, the walk
 */
#ifndef LBR2PROF_CFI_INTERNAL_H
#define LBR2PROF_CFI_INTERNAL_H

#include <elfutils/libdw.h>
#include <gelf.h>

#include "lbr2prof/cfiunwind.h"

typedef struct cfi_load {       /* a PT_LOAD segment */
    uint64_t offset, filesz, vaddr;
} cfi_load;

typedef struct cfi_slot {       /* direct-mapped: address -> row */
    uint64_t addr;
    const lp_cfi_row *row;      /* NULL: empty; &cfi_none: no CFI there */
} cfi_slot;

#define CFI_SLOT_BITS 12

struct lp_cfi {
    char *path;
    int fd;
    Elf *elf;
    Dwarf *dw;                  /* for .debug_frame, or NULL */
    Dwarf_CFI *eh, *dbg;        /* either may be NULL, not both */
    cfi_load *loads;
    size_t nloads;
    lp_cfi_row **rows;          /* sorted by start, not overlapping */
    size_t nrows, rows_cap;
    void **owned;               /* every allocation of a row */
    size_t nowned, owned_cap;
    cfi_slot slots[1u << CFI_SLOT_BITS];
    lp_cfi_stats st;
};

#endif
