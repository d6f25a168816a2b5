/*
 * binary_internal.h - data structures shared by the binary loader's files
 * (elf.c: ELF facts and symbols; disasm.c: lazy disassembly; dwarf.c:
 * function table and inline stacks; names.c: name/discriminator rules).
 * Not part of the public API.
 */
#ifndef LBR2PROF_BINARY_INTERNAL_H
#define LBR2PROF_BINARY_INTERNAL_H

#include <capstone/capstone.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <uthash.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/dwunits.h"

/* One ELF symbol of the (debug) symbol table. */
typedef struct lp_sym {
    uint64_t addr, size;
    size_t idx;             /* its index in its table */
    const char *name;       /* points into libelf's string table */
    size_t shndx;
    uint8_t type;           /* STT_* */
} lp_sym;

/* A decoded instruction of a region: lp_inst with its address as an
 * offset from the region's start, 16 bytes instead of 24 (~200 K of them
 * for SQLite's profiled code, alive until the binary is closed). */
typedef struct lp_rinst {
    uint64_t target;            /* direct call/branch target, 0 if none */
    uint32_t off;               /* address - region start */
    uint8_t size, kind;
    bool indirect;
} lp_rinst;

/* A stretch of code that is disassembled as one unit: from one symbol's
 * address to the next symbol's (llvm-profgen's dissassembleSymbol), with the
 * bytes of its section available up to the section end. */
typedef struct lp_code_region {
    uint64_t start, end;        /* [start, end) : where instructions start */
    uint64_t sec_addr;          /* section sh_addr */
    const uint8_t *sec_bytes;   /* section contents (libelf owned) */
    size_t sec_size;
    lp_rinst *insts;            /* sorted by addr, NULL until decoded */
    size_t ninsts;
    uint8_t state;              /* LP_RG_*, atomic: a warmer (warm.c)
                                   may decode it meanwhile */
} lp_code_region;

/* A region's state. Whoever moves it from RAW to BUSY decodes it, then
 * publishes DONE (or RAW again on an error); a lookup that finds it BUSY
 * waits for the other thread's decoding to end. */
enum { LP_RG_RAW, LP_RG_BUSY, LP_RG_DONE };

/* Per-arch disassembler settings and instruction classification.
 * classify needs the instruction decoded with CS_OPT_DETAIL. branch_id:
 * true for every capstone id classify may give a kind other than
 * LP_INST_OTHER (a superset is fine). may_branch: a cheap look at the
 * bytes, true for every encoding that can decode to a branch_id
 * instruction (a superset; a miss costs a second decode, not a result). */
typedef struct lp_arch_ops {
    enum lp_arch arch;
    cs_arch cs_arch;
    cs_mode cs_mode;
    void (*classify)(const cs_insn *insn, lp_inst *out);
    bool (*branch_id)(unsigned id);
    bool (*may_branch)(const uint8_t *code, size_t n);
} lp_arch_ops;

const lp_arch_ops *lp_arch_ops_for(enum lp_arch arch);

/* Two capstone handles: fast without CS_OPT_DETAIL (size and id only),
 * full with it (classification), each with its reusable cs_insn; on x86,
 * Zydis for what capstone cannot decode (opened at the first such
 * instruction; NULL if libZydis is not installed). */
typedef struct lp_decoder {
    const lp_arch_ops *ops;
    csh fast, full;
    cs_insn *fi, *di;
    bool fast_open, full_open;
    bool zy_tried;              /* x86: Zydis loaded at capstone's first miss */
    struct lp_zydis *zy;
} lp_decoder;

/* The standalone prefix instruction LLVM's x86 decoder makes of the
 * first byte at p (n bytes there), or NULL: a leading lock ("lock"); a
 * leading repne/rep before lock, xchg or nop ("xacquire"/"xrelease", but
 * rep nop is pause) and a leading rep before a mov to memory
 * ("xrelease"). LLVM decodes the rest as the next instruction. */
const char *lp_x86_prefix_inst(const uint8_t *p, size_t n);

int lp_decoder_open(lp_decoder *d, const lp_arch_ops *ops);
void lp_decoder_close(lp_decoder *d);
/* Decode region ri with d (a decoder of the calling thread) unless
 * another thread has it or had it: 1 decoded here, 0 not (decoded, or
 * being decoded), -1 error (left RAW for the lookups to report). */
int lp_bin_region_try_decode(lp_binary *b, lp_decoder *d, size_t ri,
                             lp_error *err);
/* Region ri decoded with d, or waited for while another thread decodes
 * it (until *stop, when stop is not NULL): 1 decoded here, 0 decoded by
 * another, -1 an error of this thread's decoding or stopped first. */
int lp_bin_region_decode_wait(lp_binary *b, lp_decoder *d, size_t ri,
                              const int *stop, lp_error *err);
/* Decode the instruction at code (left bytes, at addr) into *o (addr,
 * size, kind, indirect, target); false if the bytes do not decode. */
bool lp_decoder_inst(lp_decoder *d, const uint8_t *code, size_t left,
                     uint64_t addr, lp_inst *o);

/* insttext.c: the instruction's text as LLVM prints it ("\tmnem\tops");
 * `branch`: a direct branch or call, whose target stays an address. */
void lp_inst_text(const cs_insn *in, enum lp_arch arch, bool branch,
                  char *out, size_t cap);

/* A range of a subprogram DIE, to find the DIE of an address quickly. */
typedef struct lp_die_range {
    uint64_t start, end;
    Dwarf_Die die;              /* the subprogram DIE (main or .dwo) */
    Dwarf_Die cudie;            /* its CU DIE (split unit DIE for .dwo) */
    Dwarf_Die linecu;           /* the CU DIE holding DW_AT_stmt_list
                                   (the skeleton for split DWARF) */
} lp_die_range;

/* A decoded DWARF line table (lines.c). */
typedef struct lp_line_row {   /* 24 bytes: SQLite's unit has 148k */
    uint64_t addr;
    uint32_t line, col, disc, file;
} lp_line_row;

typedef struct lp_line_seq {
    uint64_t low, high;         /* [low, high) */
    size_t first, last;         /* rows [first, last), end row included */
} lp_line_seq;

typedef struct lp_line_table {
    lp_line_row *rows;
    size_t nrows, rows_cap;
    lp_line_seq *seqs;          /* sorted by high */
    size_t nseqs, seqs_cap;
} lp_line_table;

/* Line tables by .debug_line offset (uthash), parsed on first use. */
typedef struct lp_line_cache {
    uint64_t off;
    lp_line_table t;
    bool ok;
    UT_hash_handle hh;
} lp_line_cache;

/* The n (<= 8) little-endian bytes at p, which the caller has checked to
 * be there (host order does not matter). */
static inline uint64_t lp_le(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A bounds-checked little-endian reader (lines.c): past the end, reads
 * give 0 and set bad. */
typedef struct lp_rd {
    const uint8_t *p, *end;
    bool bad;
} lp_rd;

uint64_t lp_rd_n(lp_rd *r, int n);
uint64_t lp_rd_uleb(lp_rd *r);

int lp_line_table_parse(const uint8_t *data, size_t size, uint64_t off,
                        lp_line_table *t);
void lp_line_table_free(lp_line_table *t);
const lp_line_row *lp_line_table_lookup(const lp_line_table *t, uint64_t addr);

/* One range of a DW_TAG_inlined_subroutine of a subprogram, with what a
 * frame needs, flattened in DIE pre-order (symbolize.c). */
typedef struct lp_inl_node {
    uint64_t lo, hi;
    int32_t parent;             /* node of the enclosing inlinee, -1: none */
    uint32_t kids;              /* first node of this DIE's descendants */
    uint32_t skip;              /* first node after this DIE's subtree */
    uint32_t depth;
    const char *name;           /* linkage name, else name; NULL: none */
    uint32_t decl_line;
    uint32_t call_line, call_col, call_disc, call_file;
} lp_inl_node;

/* The inline tree of one subprogram DIE (uthash keyed by DIE address). */
typedef struct lp_inl_tree {
    const void *key;
    const char *name;
    uint32_t decl_line;
    lp_inl_node *nodes;
    size_t n, cap;
    /* its unit's line table and file names, looked up at the first
     * address symbolized in it (not once per address) */
    bool cu_done;
    const lp_line_table *lines;
    Dwarf_Files *files;
    size_t nfiles;
    UT_hash_handle hh;
} lp_inl_tree;

/* Symbolization cache: open addressing on the address (linear probing,
 * at most 3/4 full); the frames live in chunks of LP_SYM_CHUNK frames
 * that never move, so the pointers handed out stay valid until
 * lp_binary_close(). A slot is 16 bytes - the address, its frames'
 * place in the chunks and their number - and a stack takes exactly its
 * frames (was a uthash entry of ~90 bytes plus room for the whole inline
 * tree's depth per address, then a 24-byte slot with a pointer: 12.6 MB
 * of slots for sqlite's generation). */
#define LP_SYM_CHUNK 4096
typedef struct lp_sym_slot {
    uint64_t addr;
    uint32_t at;                /* the first frame: chunks[at / LP_SYM_CHUNK]
                                   [at % LP_SYM_CHUNK] */
    uint32_t n1;                /* frames + 1; 0: empty slot */
} lp_sym_slot;

typedef struct lp_sym_cache {
    lp_sym_slot *slots;
    size_t mask, count;         /* mask + 1 slots, count used */
    lp_frame **chunks;          /* LP_SYM_CHUNK frames each */
    size_t nchunks, chunks_cap;
    size_t used;                /* frames taken from the last chunk */
} lp_sym_cache;

/* Function name -> lp_function (uthash keyed by name). */
typedef struct lp_func_entry {
    lp_function fn;
    size_t *ridx;               /* indexes into b->ranges while loading */
    size_t cap;
    const lp_func_range **rv;   /* backing store of fn.ranges */
    char *canon;                /* canonical name (getCanonicalFnName) */
    UT_hash_handle hh;
} lp_func_entry;

/* A DWARF package (.dwp) opened for split units (dwp.c). */
typedef struct lp_dwp lp_dwp;

/* What a split unit needs from its skeleton: the DWO id and the
 * skeleton's part of the binary's .debug_addr (from DW_AT_addr_base) and,
 * for DWARF 4, of .debug_ranges (from DW_AT_GNU_ranges_base). */
typedef struct lp_dwp_skel {
    uint64_t dwo_id;
    uint64_t low_pc;            /* the skeleton's DW_AT_low_pc (CU base) */
    const uint8_t *addr, *ranges;
    size_t addr_size, ranges_size;
} lp_dwp_skel;

/* Interned strings (file names, function names from DWARF). */
typedef struct lp_str {
    char *s;
    UT_hash_handle hh;
} lp_str;

typedef struct lp_xref_index lp_xref_index; /* xref.c */
void lp_xref_free(lp_xref_index *x);
typedef struct lp_taken_index lp_taken_index; /* addrtaken.c */
void lp_taken_free(lp_taken_index *t);

struct lp_binary {
    char *path;
    char *dbg_path;             /* == path unless --debug-binary */
    int fd, dbg_fd;
    Elf *elf;                   /* code, program headers, build-id */
    Elf *dbg_elf;               /* symbols, DWARF (== elf unless debug) */
    Dwarf *dw;                  /* NULL: no DWARF */
    enum lp_arch arch;
    const lp_arch_ops *ops;
    lp_decoder dec;
    struct lp_warmer *warm;     /* warm.c's thread while it runs, or NULL */
    bool is_pie;
    bool fs_disc;
    bool no_file_names;         /* lp_binary_opts.no_file_names */

    lp_segment *segs, *xsegs;
    size_t nsegs, nxsegs;
    uint64_t preferred_base, first_loadable;

    uint8_t *build_id;
    size_t build_id_len;
    char *build_id_hex;

    lp_sym *syms;               /* from dbg_elf .symtab (else .dynsym) */
    bool code_symtab;           /* syms are the code file's .symtab (what
                                   llvm-profgen's listing shows) */
    size_t nsyms;
    lp_sym *fsyms;              /* sized STT_FUNC symbols, sorted by addr */
    size_t nfsyms;

    lp_code_region *regions;    /* sorted, disjoint */
    size_t nregions;
    lp_xref_index *xrefs;       /* direct references, built on first use */
    lp_taken_index *taken;      /* entries whose address is held, likewise */
    size_t last_region;         /* the region found last (lookups repeat) */
    size_t last_inst;           /* the instruction found last in it (walks
                                   go to the one after or before) */

    lp_func_entry *funcs_by_name;       /* uthash */
    const lp_function **funcs;          /* insertion (DWARF) order */
    size_t nfuncs, funcs_cap;
    lp_func_range *ranges;              /* every DWARF range, load order */
    size_t nranges, ranges_cap;
    lp_func_range **map;                /* StartAddrToFuncRangeMap: first
                                           range of each start, sorted */
    uint64_t *map_start;                /* map[i]->start, for the binary
                                           search (no pointer chasing) */
    size_t nmap;
    lp_die_range *dies;                 /* sorted by start */
    size_t ndies, dies_cap;
    size_t ndup_starts;
    size_t ndwo_missing;
    char *dwp_path;                     /* --dwp, else <debug file>.dwp */
    bool dwp_given;                     /* --dwp (errors are fatal) */
    lp_dwunits *units;                  /* units and split units (split.c) */

    lp_sym_cache cache;                 /* address -> inline stack */
    lp_line_cache *lines;               /* uthash */
    lp_inl_tree *trees;                 /* uthash */
    const uint8_t *debug_line;          /* .debug_line of dbg_elf */
    size_t debug_line_size;
    lp_str *strs;                       /* uthash */

    char **warnings;
    size_t nwarnings;
};

/* elf.c. lp_bin_open_elf: read-only, every extent checked to be inside
 * the file (truncation is an error naming the offset). */
Elf *lp_bin_open_elf(const char *path, int *fdp, lp_error *err);
/* The data of section s (header sh), decompressed in place first if it is
 * SHF_COMPRESSED; NULL for SHT_NOBITS, a failed decompression or no data. */
Elf_Data *lp_bin_scn_data(Elf_Scn *s, const GElf_Shdr *sh);
/* split.c: the data of the (first) section called name, or NULL. */
const uint8_t *lp_bin_section(Elf *e, const char *name, size_t *size);
int lp_bin_load_elf(lp_binary *b, lp_error *err);
int lp_bin_load_symbols(lp_binary *b, lp_error *err);
void lp_bin_warn(lp_binary *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *lp_bin_intern(lp_binary *b, const char *s);

/* disasm.c */
int lp_bin_build_regions(lp_binary *b, lp_error *err);
int lp_bin_open_disasm(lp_binary *b, lp_error *err);
void lp_bin_free_regions(lp_binary *b);

/* dwarf.c */
int lp_bin_load_dwarf(lp_binary *b, lp_error *err);
int lp_bin_functions_from_symtab(lp_binary *b, lp_error *err);
/* The function of that name, made (empty) if there is none; NULL: no
 * memory. A range added to it (0, or -1: no memory) is in the map after
 * lp_bin_rebuild_map (warn: about duplicate starts, as the first build). */
lp_func_entry *lp_bin_get_func(lp_binary *b, const char *name);
int lp_bin_add_range(lp_binary *b, lp_func_entry *f, uint64_t lo, uint64_t hi);
int lp_bin_rebuild_map(lp_binary *b, bool warn, lp_error *err);
/* symtabfn.c: llvm-profgen 22's loadSymbolsFromSymtab (LP_SYMTAB_LLVM22) */
int lp_bin_functions_from_symtab22(lp_binary *b, bool detailed,
                                   lp_error *err);
void lp_bin_mark_entries(lp_binary *b);
void lp_bin_free_dwarf(lp_binary *b);
const char *lp_bin_die_name(Dwarf_Die *die);
ptrdiff_t lp_bin_ranges(lp_binary *b, Dwarf_Die *die, ptrdiff_t off,
                        Dwarf_Addr *basep, Dwarf_Addr *lo, Dwarf_Addr *hi);

/* dies.c. A unit's layout: where it ends (exclusive) and the sizes its
 * forms need. lp_bin_die_unit: 0, or -1 if libdw cannot tell. */
typedef struct lp_die_unit {
    const unsigned char *end;
    Dwarf *dbg;
    Dwarf_Half version;
    uint8_t addr_size, offset_size;
} lp_die_unit;
int lp_bin_die_unit(Dwarf_Die *unit, lp_die_unit *u);
/* Just past the DIE's attributes (its first child or the next entry), or
 * NULL if not known. */
const unsigned char *lp_bin_die_attrs_end(const lp_die_unit *u,
                                          Dwarf_Die *die);
/* Call visit on every DIE under unit (not unit itself), pre-order, as far
 * as 256 levels down; stops at, and returns, visit's first non-zero. */
typedef int (*lp_die_visit)(Dwarf_Die *die, void *arg);
int lp_bin_walk_dies(Dwarf_Die *unit, lp_die_visit visit, void *arg);

/* dwp.c. lp_dwp_unit: 1 and *split = the unit's split CU DIE (valid
 * until lp_dwp_close), 0 if the package has no such unit, -1 error. */
int lp_dwp_open(const char *path, lp_dwp **out, lp_error *err);
int lp_dwp_unit(lp_dwp *d, const lp_dwp_skel *sk, Dwarf_Die *split,
                lp_error *err);
size_t lp_dwp_units_read(const lp_dwp *d);
/* A set of .dwo files (no package) for lp_dwp_file_unit: the unit of
 * skeleton sk in the .dwo file at path, read by us (libdw could not): 1
 * and *split, 0 if the file is missing, unreadable or lacks the unit, -1
 * on allocation failure. The files stay open until lp_dwp_close. */
int lp_dwp_new_files(lp_dwp **out, lp_error *err);
int lp_dwp_file_unit(lp_dwp *d, const char *path, const lp_dwp_skel *sk, Dwarf_Die *split,
                     lp_error *err);
/* dwarf_ranges for a DIE of a unit read from the package that has
 * DW_AT_ranges (same protocol: *basep kept by the caller between calls);
 * LP_DWP_NOT_MINE for any other DIE. */
#define LP_DWP_NOT_MINE ((ptrdiff_t)-2)
ptrdiff_t lp_dwp_ranges(lp_dwp *d, Dwarf_Die *die, ptrdiff_t off,
                        Dwarf_Addr *basep, Dwarf_Addr *lo, Dwarf_Addr *hi);
const char *lp_dwp_path(const lp_dwp *d);
void lp_dwp_close(lp_dwp *d);

/* symbolize.c */
void lp_bin_free_symbolizer(lp_binary *b);
/* lp_binary_symbolize without lp_bin_sym_lock: for the warmer, which
 * holds its mutex. */
int lp_bin_symbolize_unlocked(lp_binary *b, uint64_t addr,
                              const lp_frame **frames, size_t *n,
                              lp_error *err);

/* warm.c: the symbolization's state taken while a warmer runs (no-ops
 * without one; only the thread that started it calls them). */
void lp_bin_sym_lock(lp_binary *b);
void lp_bin_sym_unlock(lp_binary *b);

#endif
