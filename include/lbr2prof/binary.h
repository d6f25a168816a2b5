/*
 * lbr2prof/binary.h - the binary loader: maps sampled addresses of one ELF
 * file to instructions, functions and inline stacks, the way llvm-profgen 19
 * (ProfiledBinary) does.
 *
 * Address conventions. Every address taken or returned here is a link-time
 * virtual address of the binary ("vaddr", what llvm-profgen calls a
 * canonical or preferred address), except where a function says otherwise.
 * Runtime addresses from perf go through lp_binary_map_to_vaddr() (an mmap
 * [start, start+len) @ pgoff of this file) or lp_binary_canon_addr() (the
 * llvm-profgen single-base rule) first.
 *
 * Laziness. lp_binary_open() reads the ELF headers, the build-id, the symbol
 * table and the DWARF function table (names and ranges of every
 * DW_TAG_subprogram, which llvm-profgen also loads up front). Disassembly is
 * done per symbol range on first use and cached; inline stacks are computed
 * per address on first use and cached. Nothing is ever disassembled or
 * symbolized that was not asked for (or is not in the same symbol range),
 * unless the caller asks for all of it ahead on a thread of its own
 * (lp_binary_warm_start).
 *
 * Lifetime. Every pointer returned (names, frames, ranges, functions) stays
 * valid until lp_binary_close(). An lp_binary is not thread-safe (the lazy
 * caches mutate on lookups); its warmer is the one thread that may work
 * on it alongside the caller's.
 */
#ifndef LBR2PROF_BINARY_H
#define LBR2PROF_BINARY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lp_binary lp_binary;

/* ---- opening ---------------------------------------------------------- */

enum { LP_SYMTAB_NONE = 0, LP_SYMTAB_IF_NO_DWARF = 1, LP_SYMTAB_LLVM22 = 2 };

typedef struct lp_binary_opts {
    /* --debug-binary: read symbols and DWARF from this file; code, program
     * headers and build-id still come from the binary. NULL: the binary. */
    const char *debug_path;
    /* --dwp: DWARF package (.dwp) for split DWARF; it must exist and be a
     * valid package (else an error naming the file and offset). NULL:
     * "<DWARF file>.dwp" if it exists (as llvm-profgen). With a package,
     * every split unit comes from it (a unit not in it is missing, as in
     * llvm); without one, .dwo files are found through DW_AT_dwo_name /
     * DW_AT_comp_dir. */
    const char *dwp_path;
    /* Flow-sensitive discriminators: -1 = auto (on iff the symbol
     * __llvm_fs_discriminator__ exists, as llvm-profgen), 0 = off, 1 = on. */
    int fs_discriminator;
    /* Functions from the ELF symbol table where DWARF has none:
     * LP_SYMTAB_NONE (0, zero-initialized): none, as llvm-profgen 19
     * (which warns "Loading of DWARF info completed, but no binary
     * functions have been retrieved." when there are none at all);
     * LP_SYMTAB_IF_NO_DWARF: one function per sized STT_FUNC symbol when
     * DWARF has no function at all; LP_SYMTAB_LLVM22: llvm-profgen 22's
     * --load-function-from-symbol (loadSymbolsFromSymtab, done for
     * pseudo-probe binaries): every sized STT_FUNC symbol of .symtab, in
     * table order, whose start is in no function range yet becomes a
     * range of the function named by its canonical name (".cold",
     * ".llvm.*", ".isra.*"... stripped; from_symtab set). */
    int symtab_functions;
    /* LP_SYMTAB_LLVM22: also the detailed warnings of that loader
     * (--show-detailed-warning: a symbol whose name differs from the
     * function already covering it). */
    bool detailed_warnings;
    /* lp_frame.file left "" (the profile generators print no file names):
     * libdw then never builds its own copy of a unit's line table, which
     * it does to list the files (12 MB for the SQLite amalgamation). */
    bool no_file_names;
} lp_binary_opts;

/* Open an ELF binary. opts may be NULL (all defaults). Errors: not a file,
 * not ELF, truncated or malformed ELF, unsupported machine (LP_EUNSUPP).
 * A stripped binary (no symbols, no DWARF) opens fine: disassembly of its
 * executable sections still works; lp_binary_check_symbolizable() says
 * why stacks are unavailable. Load-time warnings, worded and ordered as
 * llvm-profgen 19's, are collected, see lp_binary_warning(). */
lp_binary *lp_binary_open(const char *path, const lp_binary_opts *opts,
                          lp_error *err);
void lp_binary_close(lp_binary *b);

/* Give the resident pages of the binary's mapped files (the ELF and its
 * debug file) back to the kernel: what was decoded from them is kept, and
 * a page read again comes back from the page cache. Memory only. */
void lp_binary_release_pages(lp_binary *b);

/* Decode every code region of b and symbolize every instruction ahead,
 * in address order, on a thread of its own (the warmer), while the caller
 * goes on: its lookups then find what they need done (a region being
 * decoded is waited for; one not reached yet is decoded by the lookup, as
 * without a warmer). Answers do not change, only where and when the work
 * is done, and the memory kept (every instruction's, not only those asked
 * about). For a second core that would idle otherwise. While it runs,
 * only the calling thread may call into b. 0, or -1 (one runs already, or
 * no thread or decoder could be had: nothing started). Started again
 * after a stop, it passes over what is done. */
int lp_binary_warm_start(lp_binary *b);

typedef struct lp_binary_warm_stats {
    size_t regions;             /* code regions the warmer decoded (the
                                   caller's lookups decoded the others) */
    size_t symbolized;          /* instructions it symbolized */
    bool finished;              /* it went through every region */
} lp_binary_warm_stats;

/* The warmer stopped - after the instruction it is at, or once it has
 * gone through everything when `finish` - and waited for; what it did
 * stays, and is told in *st when not NULL (zeros without a warmer).
 * No-op without one; lp_binary_close calls it. */
void lp_binary_warm_stop(lp_binary *b, bool finish, lp_binary_warm_stats *st);

/* Non-fatal diagnostics gathered while opening, i-th (NULL past the end). */
const char *lp_binary_warning(const lp_binary *b, size_t i);

/* ---- ELF facts -------------------------------------------------------- */

enum lp_arch { LP_ARCH_X86_64 = 1, LP_ARCH_AARCH64 = 2 };

const char *lp_binary_path(const lp_binary *b);
enum lp_arch lp_binary_arch(const lp_binary *b);
bool lp_binary_is_pie(const lp_binary *b);   /* ET_DYN */
bool lp_binary_has_symbols(const lp_binary *b);  /* .symtab or .dynsym */
bool lp_binary_has_dwarf(const lp_binary *b);    /* any compile unit */

/* llvm-profgen's preferred base: the first PF_X PT_LOAD's p_vaddr & ~0xfff
 * (4 KiB page hard-coded, as in v19). */
uint64_t lp_binary_preferred_base(const lp_binary *b);
/* The first PT_LOAD's p_vaddr & ~0xfff (FirstLoadableAddress). */
uint64_t lp_binary_first_loadable(const lp_binary *b);

/* Build-id (NT_GNU_BUILD_ID). Returns the length in bytes (0: none) and
 * sets *bytes; hex is lower-case, "" when there is none. */
size_t lp_binary_build_id(const lp_binary *b, const uint8_t **bytes);
const char *lp_binary_build_id_hex(const lp_binary *b);

typedef struct lp_segment {
    uint64_t vaddr, memsz;   /* p_vaddr, p_memsz */
    uint64_t offset, filesz; /* p_offset, p_filesz */
    uint32_t flags;          /* PF_X=1, PF_W=2, PF_R=4 */
} lp_segment;

/* All PT_LOAD segments in program-header order; returns their count. */
size_t lp_binary_segments(const lp_binary *b, const lp_segment **segs);
/* The executable (PF_X) PT_LOAD segments only, in order. */
size_t lp_binary_exec_segments(const lp_binary *b, const lp_segment **segs);

/* ---- address conversion ---------------------------------------------- */

/* File offset -> vaddr through the PT_LOAD containing the offset (within
 * p_filesz; an executable segment is preferred when two hold it, as with
 * lld's R and RX segments sharing a page). Returns 0, or -1 if none. */
int lp_binary_offset_to_vaddr(const lp_binary *b, uint64_t off,
                              uint64_t *vaddr);
/* vaddr -> file offset (within p_filesz of a PT_LOAD). 0 or -1. */
int lp_binary_vaddr_to_offset(const lp_binary *b, uint64_t vaddr,
                              uint64_t *off);
/* A runtime address inside the mapping [map_start, ...) @ map_pgoff of this
 * file -> vaddr: off = addr - map_start + map_pgoff, then offset_to_vaddr
 * (correct for lld layouts with the RX segment at a non-zero offset and for
 * mmaps with non-zero pgoff). 0 or -1 (offset not in any segment). */
int lp_binary_map_to_vaddr(const lp_binary *b, uint64_t map_start,
                           uint64_t map_pgoff, uint64_t addr, uint64_t *vaddr);
/* Inverse of lp_binary_map_to_vaddr. 0 or -1. */
int lp_binary_vaddr_to_map(const lp_binary *b, uint64_t map_start,
                           uint64_t map_pgoff, uint64_t vaddr, uint64_t *addr);
/* llvm-profgen's rule: addr - base_address + preferred_base, where
 * base_address is where the first executable segment was mapped (the start
 * of the mmap whose pgoff equals that segment's page-aligned offset). */
uint64_t lp_binary_canon_addr(const lp_binary *b, uint64_t base_address,
                              uint64_t addr);
/* --use-offset (raw/unsymbolized profiles): vaddr - preferred base. */
static inline uint64_t lp_binary_vaddr_to_rel(const lp_binary *b,
                                              uint64_t vaddr)
{
    return vaddr - lp_binary_preferred_base(b);
}

/* ---- instructions (lazy disassembly, capstone) ------------------------ */

enum lp_inst_kind {
    LP_INST_OTHER = 0,
    LP_INST_CALL = 1,       /* direct or indirect call */
    LP_INST_RET = 2,
    LP_INST_COND_BR = 3,    /* conditional jump (jcc, jrcxz, loop) */
    LP_INST_UNCOND_BR = 4,  /* unconditional jump (direct or indirect) */
};

typedef struct lp_inst {
    uint64_t addr;
    uint8_t size;       /* bytes */
    uint8_t kind;       /* enum lp_inst_kind */
    bool indirect;      /* call/jump through a register or memory */
    uint64_t target;    /* direct call/branch target, 0 if none */
} lp_inst;

/* Code is what llvm-profgen disassembles: text sections except ".plt",
 * symbol by symbol from each symbol's address to the next symbol (or the
 * section end). Undecodable bytes are skipped one at a time. With no
 * symbols at all, executable sections are disassembled section by section.
 *
 * Look up the instruction starting exactly at addr. Returns 1 (found,
 * *out filled; out may be NULL), 0 (addr is not an instruction start), -1
 * (error in err, e.g. capstone failure). */
int lp_binary_inst(lp_binary *b, uint64_t addr, lp_inst *out, lp_error *err);

/* The disassembly unit holding addr: [*start, *end) from a symbol's
 * address to the next symbol's or the section end, as llvm-profgen's
 * dissassembleSymbol walks it (its facts about a symbol's code, e.g. the
 * function a call is recorded for, come from the unit's start). 1, or 0
 * if addr is in no unit (not in disassembled code). */
int lp_binary_code_unit(lp_binary *b, uint64_t addr, uint64_t *start,
                        uint64_t *end);

/* The direct calls and jumps (conditional or not) whose target is
 * `target`, a function's entry: sites decoded and checked (the index of
 * candidate sites comes from one scan of the code bytes, made at the first
 * call; x86-64 only, elsewhere an error). Returns their number, -1 on
 * error; *refs stays valid until the next call. */
typedef struct lp_xref {
    uint64_t site;
    uint8_t kind;       /* LP_INST_CALL, LP_INST_UNCOND_BR, LP_INST_COND_BR */
} lp_xref;
long lp_binary_refs_to(lp_binary *b, uint64_t target, const lp_xref **refs,
                       lp_error *err);
/* The same without decoding: every site whose bytes encode a direct call
 * or jump to target (kind as the bytes say), those decoding has refuted
 * left out - a superset of the real ones; lp_binary_ref_check(site) says
 * whether one is real (1, 0; -1 on error), decoding its code once. */
long lp_binary_ref_candidates(lp_binary *b, uint64_t target,
                              const lp_xref **refs, lp_error *err);
int lp_binary_ref_check(lp_binary *b, uint64_t site, uint64_t target,
                        lp_error *err);
/* Whether an indirect call or jump may enter the function entry `entry`:
 * 1 when some code, data, relocation or the dynamic symbol table holds its
 * address (byte patterns: a superset of the real holders, so 0 is a proof
 * that no indirect branch of this binary's own reaches it), 0 otherwise,
 * -1 on error (x86-64 only). The set is built at the first call. */
int lp_binary_addr_taken(lp_binary *b, uint64_t entry, lp_error *err);

/* Convenience predicates (false when addr is not an instruction start or
 * on error). is_uncond_branch is llvm-profgen's UncondBranchAddrSet: calls,
 * returns and direct unconditional jumps (an indirect jmp is not in it:
 * MCInstrDesc::isUnconditionalBranch excludes indirect branches).
 * is_branch: BranchAddressSet (jumps, conditional or not, direct or
 * indirect; not calls/returns). */
bool lp_binary_is_code(lp_binary *b, uint64_t addr);
/* lp_binary_is_code (1 or 0) when addr's region is disassembled already,
 * else -1; reads only what is fixed once disassembled, so a thread may
 * ask it without the lock another one holds while it disassembles (and
 * moves the lookup memos) - then on -1 it asks lp_binary_is_code under
 * that lock. */
int lp_binary_is_code_ready(const lp_binary *b, uint64_t addr);
bool lp_binary_is_call(lp_binary *b, uint64_t addr);
bool lp_binary_is_return(lp_binary *b, uint64_t addr);
bool lp_binary_is_branch(lp_binary *b, uint64_t addr);
bool lp_binary_is_uncond_branch(lp_binary *b, uint64_t addr);

/* Next / previous instruction start in llvm-profgen's CodeAddressVec order
 * (all disassembled code, sorted). addr must be an instruction start.
 * Returns 1 and sets *out, 0 if there is none (end/start of code or addr
 * not code), -1 on error. */
int lp_binary_next_inst(lp_binary *b, uint64_t addr, uint64_t *out,
                        lp_error *err);
int lp_binary_prev_inst(lp_binary *b, uint64_t addr, uint64_t *out,
                        lp_error *err);
/* First instruction start >= addr (0 if none, -1 error). */
int lp_binary_inst_at_or_after(lp_binary *b, uint64_t addr, uint64_t *out,
                               lp_error *err);

/* Return address -> call-site address (getCallAddrFromFrameAddr): the last
 * instruction starting below ret_addr, which must be a call. As in
 * llvm-profgen, ret_addr need not be an instruction start (lower_bound in
 * the code address vector). Returns 1 and sets *callsite, 0 if there is no
 * such instruction or it is not a call, -1 on error. */
int lp_binary_call_site(lp_binary *b, uint64_t ret_addr, uint64_t *callsite,
                        lp_error *err);

/* llvm-profgen's PrologEpilogTracker, answered lazily: addr is the start
 * of a function range or the instruction after it, a return, or the
 * instruction before a return. Used to drop hybrid samples whose leaf IP
 * is in a prolog/epilog (no frame set up there). */
bool lp_binary_in_prolog_epilog(lp_binary *b, uint64_t addr);

/* Laziness counters: how many disassembly regions (symbol ranges) were
 * decoded so far; *total (if non-NULL) gets the number of regions. */
size_t lp_binary_decoded_regions(const lp_binary *b, size_t *total);

/* llvm-profgen's isValidFallThroughRange for an LBR range [start, end]:
 * start <= end, both code, and no instruction of the UncondBranchAddrSet
 * (call, ret, direct unconditional jump) in [start, end). One lookup per
 * call. Returns 1 valid, 0 invalid, -1 error. */
int lp_binary_valid_fallthrough(lp_binary *b, uint64_t start, uint64_t end,
                                lp_error *err);

/* ---- functions ---------------------------------------------------------- */

typedef struct lp_function lp_function;

typedef struct lp_func_range {
    uint64_t start, end;        /* [start, end) */
    const lp_function *func;
    bool is_entry;              /* llvm-profgen IsFuncEntry */
} lp_func_range;

struct lp_function {
    const char *name;           /* DWARF linkage name, else DW_AT_name */
    size_t nranges;
    const lp_func_range *const *ranges; /* sorted by start */
    bool from_symtab;           /* made from (or given a range by) an ELF
                                   symbol: llvm-profgen's NameStatus
                                   Missing */
    bool symtab_mismatch;       /* LP_SYMTAB_LLVM22: a .symtab symbol in
                                   its range has another name (NameStatus
                                   Mismatch) */
};

/* Functions are llvm-profgen's BinaryFunctions: one per DWARF subprogram
 * name (with code), several ranges each (hot/cold parts of a split
 * function are ranges of one function; "foo.cold" is not an entry).
 * Without DWARF functions: none, or with opts.symtab_functions one per
 * STT_FUNC symbol of non-zero size (from_symtab set). */
size_t lp_binary_functions(const lp_binary *b,
                           const lp_function *const **funcs);
const lp_function *lp_binary_function(const lp_binary *b, const char *name);

/* findFuncRange: the range whose start is the greatest start <= addr, if
 * addr < its end; NULL otherwise. */
const lp_func_range *lp_binary_func_range(const lp_binary *b, uint64_t addr);

/* getCalleeNameForAddress: if addr is exactly the start of an entry range,
 * the canonical name of its function (lp_canonical_fn_len applied; a
 * pointer owned by the binary); else NULL. */
const char *lp_binary_callee_name(const lp_binary *b, uint64_t addr);

/* The sized STT_FUNC symbol containing addr (for fallback names), with
 * its start in *sym_start (may be NULL); NULL if none. */
const char *lp_binary_symbol_name(const lp_binary *b, uint64_t addr,
                                  uint64_t *sym_start);

/* As perf names an address (for reports): lp_binary_symbol_name, else an
 * STT_FUNC symbol of size 0 (assembly such as crt's _init) taken to reach
 * the next symbol or the end of its section, as perf extends such
 * symbols; NULL if none. */
const char *lp_binary_symbol_name_perf(const lp_binary *b, uint64_t addr,
                                       uint64_t *sym_start);

/* ---- symbolization (DWARF, lazy, cached per address) ------------------ */

typedef struct lp_frame {
    const char *func;        /* linkage name, else DW_AT_name; NOT canonical */
    uint32_t line;           /* source line in this function */
    uint32_t start_line;     /* DW_AT_decl_line of the (abstract) subprogram */
    uint32_t line_offset;    /* (line - start_line) & 0xffff */
    uint32_t discriminator;  /* raw DWARF discriminator */
    uint32_t column;
    const char *file;        /* for human output; may be "" */
} lp_frame;

/* The inline stack at addr, OUTERMOST CALLER FIRST (frames[0] is the
 * real, out-of-line function; frames[n-1] the leaf). Same as
 * ProfiledBinary::symbolize: for a non-leaf frame, line/column/
 * discriminator are the call site (DW_AT_call_line/column/
 * DW_AT_GNU_discriminator of the next-inner inlined subroutine). The stack
 * is cut at the first frame (from the outermost) with an empty name.
 * Returns 0 and sets *frames and *n (n == 0: no debug info for addr), -1 on
 * error (e.g. a malformed DWARF unit). Cached: the second call for the
 * same address is a hash lookup. */
int lp_binary_symbolize(lp_binary *b, uint64_t addr, const lp_frame **frames,
                        size_t *n, lp_error *err);

/* The most frames a stack has (deeper inline chains are cut). */
#define LP_BINARY_MAX_FRAMES 257

/* lp_binary_symbolize for a walk that visits each address once (the
 * pre-inliner's size of every instruction of the profiled functions): an
 * address in the cache is the cache's, any other is symbolized into buf
 * (room for LP_BINARY_MAX_FRAMES) and not cached - caching every
 * instruction of SQLite took 29 MB. *frames is valid until buf is
 * reused or the next lp_binary_symbolize. */
int lp_binary_symbolize_once(lp_binary *b, uint64_t addr, lp_frame *buf,
                             const lp_frame **frames, size_t *n, lp_error *err);

/* For callers that need stacks (profile generation): 0 if the binary has
 * DWARF functions, else -1 with an LP_EFORMAT message naming the file and
 * why (fully stripped / no DWARF / split DWARF not found) and what to do
 * (build with -g, pass --debug-binary, put the .dwo files back). */
int lp_binary_check_symbolizable(const lp_binary *b, lp_error *err);

/* Whether flow-sensitive discriminators are in use (see opts). */
bool lp_binary_fs_discriminator(const lp_binary *b);

/* Discriminator decoding (getBaseDiscriminator / getDuplicationFactor of
 * LLVM 19). With fs, base = d and the factor is 1. The factor is >= 1. */
uint32_t lp_disc_base(uint32_t d, bool fs);
uint32_t lp_disc_dup_factor(uint32_t d, bool fs);

/* getCanonicalFnName(name, "selected"): the length of the canonical prefix
 * of name. Strips a last ".llvm.*" or ".part.*" component (".__uniq." is
 * kept): "foo.llvm.123" -> 3, "foo.part.0" -> 3, "foo.cold" -> 8. */
size_t lp_canonical_fn_len(const char *name);
/* The same with the suffixes given, tried in order (llvm-profgen 22's
 * symbol-table loader strips ".cold", ".isra." ... this way). */
size_t lp_canonical_fn_len_with(const char *name, const char *const *sfx,
                                size_t nsfx);

#ifdef __cplusplus
}
#endif
#endif
