/*
 * lbr2prof/breakpad.h - Breakpad symbol modules (.sym files), in memory.
 *
 * A module holds what a .sym file says about one binary: MODULE/INFO
 * header, FILE and INLINE_ORIGIN tables, FUNC records with their line and
 * INLINE records, and PUBLIC symbols. All addresses are offsets from the
 * module load address (the lowest PT_LOAD p_vaddr for ELF).
 *
 * Modules come from three places: lp_bp_parse (a .sym text), lp_bp_from_elf
 * (DWARF + symbol table of an ELF file, as Breakpad's dump_syms does) and
 * lp_bp_module_new + lp_bp_add_* (builders, used by the ELF path). After
 * lp_bp_finish the module is immutable and lp_bp_lookup may be called from
 * any number of threads at once.
 */
#ifndef LBR2PROF_BREAKPAD_H
#define LBR2PROF_BREAKPAD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One line record "<addr> <size> <line> <filenum>". */
typedef struct lp_bp_line {
    uint64_t addr, size;
    uint32_t line;
    uint32_t file;       /* FILE number */
} lp_bp_line;

/* One range of an INLINE record (a record with n ranges gives n entries). */
typedef struct lp_bp_inline {
    uint64_t addr, size;
    uint32_t depth;
    uint32_t call_line;
    uint32_t call_file;  /* FILE number */
    uint32_t origin;     /* INLINE_ORIGIN number */
} lp_bp_inline;

typedef struct lp_bp_func {
    uint64_t addr, size;
    uint64_t param_size;
    char *name;
    int multiple;        /* the "m" flag */
    size_t line0, nlines;      /* slice of module->lines, sorted by addr */
    size_t inl0, ninlines;     /* slice of module->inlines, by (depth, addr) */
} lp_bp_func;

typedef struct lp_bp_public {
    uint64_t addr;
    uint64_t param_size;
    char *name;
    int multiple;
} lp_bp_public;

/* A numbered name (FILE or INLINE_ORIGIN). */
typedef struct lp_bp_name {
    uint32_t num;
    char *name;
} lp_bp_name;

typedef struct lp_bp_module {
    char *os, *arch, *debug_id, *name;   /* the MODULE line */
    char *code_id;                       /* INFO CODE_ID, or NULL */
    char *code_file;                     /* its optional file name, or NULL */
    lp_bp_name *files;      size_t nfiles, cap_files;
    lp_bp_name *origins;    size_t norigins, cap_origins;
    lp_bp_func *funcs;      size_t nfuncs, cap_funcs;
    lp_bp_line *lines;      size_t nlines, cap_lines;
    lp_bp_inline *inlines;  size_t ninlines, cap_inlines;
    lp_bp_public *publics;  size_t npublics, cap_publics;
    int finished;
} lp_bp_module;

/* Parse a whole .sym text. `what` names the input in error messages, which
 * give the line number and what was expected ("x.sym:12: FUNC: expected
 * <addr> <size> <param_size> <name>"). Returns NULL on error. */
lp_bp_module *lp_bp_parse(const char *text, size_t len, const char *what,
                          lp_error *err);
lp_bp_module *lp_bp_parse_file(const char *path, lp_error *err);
void lp_bp_free(lp_bp_module *m);

/* Builders: the module owns copies of all strings. lp_bp_add_func's lines
 * and inlines are the records that follow it. -1 only on out of memory. */
lp_bp_module *lp_bp_module_new(const char *os, const char *arch,
                               const char *debug_id, const char *name,
                               lp_error *err);
int lp_bp_set_code_id(lp_bp_module *m, const char *code_id,
                      const char *code_file, lp_error *err);
int lp_bp_add_file(lp_bp_module *m, uint32_t num, const char *name, lp_error *err);
int lp_bp_add_origin(lp_bp_module *m, uint32_t num, const char *name, lp_error *err);
int lp_bp_add_func(lp_bp_module *m, uint64_t addr, uint64_t size,
                   uint64_t param_size, const char *name, int multiple,
                   lp_error *err);
int lp_bp_add_line(lp_bp_module *m, const lp_bp_line *l, lp_error *err);
int lp_bp_add_inline(lp_bp_module *m, const lp_bp_inline *in, lp_error *err);
int lp_bp_add_public(lp_bp_module *m, uint64_t addr, uint64_t param_size,
                     const char *name, int multiple, lp_error *err);
/* Sort and index everything (FUNC > PUBLIC at the same address). */
int lp_bp_finish(lp_bp_module *m, lp_error *err);

const char *lp_bp_file_name(const lp_bp_module *m, uint32_t num);
const char *lp_bp_origin_name(const lp_bp_module *m, uint32_t num);

/* One source location of a lookup, innermost first. */
typedef struct lp_bp_frame {
    const char *function;
    const char *file;    /* NULL if unknown */
    uint32_t line;       /* 0 if unknown */
} lp_bp_frame;

#define LP_BP_MAX_DEPTH 64

typedef struct lp_bp_result {
    uint64_t sym_addr;         /* FUNC or PUBLIC address */
    size_t nframes;            /* 0: nothing found */
    lp_bp_frame frames[LP_BP_MAX_DEPTH]; /* [0] innermost ... [n-1] outer */
} lp_bp_result;

/* Look up a module offset. Returns the number of frames (0 = none). */
size_t lp_bp_lookup(const lp_bp_module *m, uint64_t addr, lp_bp_result *r);

/* Write the module as .sym text (the same records lp_bp_parse reads). */
int lp_bp_write(const lp_bp_module *m, FILE *out, lp_error *err);

/* Breakpad debug id from an ELF build-id (or .text hash): first 16 bytes
 * (zero-padded) as a GUID with fields 1-3 byte-swapped, uppercase hex, plus
 * age "0": 33 characters. out needs 34 bytes. code_id: the build-id in
 * uppercase hex (out needs 2 * len + 1 bytes). */
void lp_bp_debug_id(const uint8_t *id, size_t len, char out[34]);
void lp_bp_code_id(const uint8_t *id, size_t len, char *out);

/* ELF -> module (the dump-syms logic): FUNC/line/INLINE from DWARF (libdw),
 * PUBLIC from the symbol table for functions without DWARF. */
lp_bp_module *lp_bp_from_elf(const char *path, lp_error *err);

/* Only the identity of an ELF file (cheap: headers and notes). Returns 0, or
 * -1 when the file is not an ELF file. arch: lp_cpu_name spelling. */
typedef struct lp_bp_elf_id {
    char debug_id[34];
    char code_id[129];   /* empty when there is no build-id */
    const char *arch;
} lp_bp_elf_id;
int lp_bp_elf_identify(const char *path, lp_bp_elf_id *id, lp_error *err);

#ifdef __cplusplus
}
#endif
#endif
