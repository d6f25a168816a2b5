/*
 * lbr2prof/symbolicate.h - the Mozilla Symbolication API (v5 and v4), offline.
 *
 * A symbol store finds modules by (debug_file, debug_id):
 *   - Breakpad directories in the `<debug_file>/<debug_id>/<sym_file>`
 *     layout (sym_file = debug_file with ".pdb" replaced by ".sym", else
 *     debug_file + ".sym"), tried in the order they were added;
 *   - ELF files (given one by one or as directories, not recursive),
 *     indexed by the Breakpad debug id of their build-id; their DWARF is
 *     read on first use;
 *   - debug directories in the .build-id layout (separate debug files).
 * Names and ids from requests never leave the store: they are validated
 * like the service does (no '/'), "", "." and ".." are refused, and the
 * resolved path must stay under the store directory.
 *
 * A request is JSON text; the response is JSON text with exactly the
 * service's shape. A request the service would refuse with HTTP 400 gives
 * -1 with err->code LP_EFORMAT and err->msg the service's exact title.
 * The store is safe to use from several threads at once.
 */
#ifndef LBR2PROF_SYMBOLICATE_H
#define LBR2PROF_SYMBOLICATE_H

#include <stddef.h>

#include "lbr2prof/adjust.h"
#include "lbr2prof/breakpad.h"
#include "lbr2prof/error.h"
#include "lbr2prof/machine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LP_SYM_MAX_JOBS 10

typedef struct lp_sym_store lp_sym_store;

lp_sym_store *lp_sym_store_new(lp_error *err);
void lp_sym_store_free(lp_sym_store *s);
/* A Breakpad symbol directory. */
int lp_sym_store_add_dir(lp_sym_store *s, const char *dir, lp_error *err);
/* An ELF file, or every ELF file directly inside a directory. */
int lp_sym_store_add_elf(lp_sym_store *s, const char *path, lp_error *err);
/* A debug directory in the GNU layout DIR/.build-id/xx/yyyy....debug (e.g.
 * /usr/lib/debug): a debug id gives the first 16 bytes of the build-id,
 * which name the file up to its last bytes; candidates are checked by
 * their own debug id. */
int lp_sym_store_add_debug_dir(lp_sym_store *s, const char *dir, lp_error *err);

/* A module in use: release it with lp_sym_store_release. */
typedef struct lp_sym_handle {
    const lp_bp_module *m;
    int owned;              /* not cached: freed on release */
    /* How the lookup went (for the Debug statistics): */
    int cache_hit;          /* served from the module cache */
    int loaded;             /* a file was read (found or not) */
    double load_seconds;    /* reading + parsing (or DWARF) time */
    long long bytes;        /* size of the file read, -1 if none */
} lp_sym_handle;

/* Find and load a module. Returns 1 (found, h filled), 0 (not found, or the
 * file did not parse or carries another debug id). */
int lp_sym_store_get(lp_sym_store *s, const char *debug_file, const char *debug_id,
                     lp_sym_handle *h);
void lp_sym_store_release(lp_sym_store *s, lp_sym_handle *h);

/* Options of a symbolication run. With adjust set, every looked-up frame is
 * adjusted per seed 000 (frame index = position in its stack, arch from the
 * module or `arch` when not LP_CPU_UNKNOWN) and v5 frames get an extra
 * "lookup_offset" (null when the adjusted offset would be negative); the
 * "module_offset" stays the raw value. */
typedef struct lp_sym_opts {
    int adjust;
    lp_adjust_mode mode;
    lp_cpu arch;
    int pretty;             /* indented JSON output */
    int debug;              /* add the service's "debug" statistics (v5) */
} lp_sym_opts;

/* POST /symbolicate/v5 and /symbolicate/v4. Return malloc'ed JSON text. */
char *lp_symbolicate_v5(lp_sym_store *s, const char *body, size_t len,
                        const lp_sym_opts *opts, lp_error *err);
char *lp_symbolicate_v4(lp_sym_store *s, const char *body, size_t len,
                        const lp_sym_opts *opts, lp_error *err);

/* The store path of a module's .sym below a directory, or -1 if the name or
 * id is not acceptable (empty, ".", "..", '/', not hex...). */
int lp_sym_path(const char *dir, const char *debug_file, const char *debug_id,
                char *out, size_t outsz);

/* ---- client side: perf samples -> v5 requests (seed 002, T002-8) ---- */

/* One PT_LOAD segment of an ELF file. */
typedef struct lp_sym_load {
    uint64_t vaddr, offset, filesz;
} lp_sym_load;

/* One mapping of a process as perf's MMAP2 records it, with the PT_LOAD
 * segments of its file (for module offsets) and its Breakpad debug id
 * (NULL or "" when unknown). */
typedef struct lp_sym_mapping {
    uint64_t start, len, pgoff;
    const char *filename;
    const char *debug_id;
    const lp_sym_load *loads;
    size_t nloads;
} lp_sym_mapping;

/* [vdso], [vsyscall], [heap], [stack], [anon:*], //anon, memfd:, "(deleted)"
 * files, [kernel.kallsyms]...: never a memoryMap entry. */
int lp_sym_is_pseudo_mapping(const char *filename);
/* The PT_LOAD segments of an ELF file (malloc'ed array). */
int lp_sym_elf_loads(const char *path, lp_sym_load **loads, size_t *n, lp_error *err);
/* ip -> offset from the module load address (lowest PT_LOAD p_vaddr): the
 * file offset ip - start + pgoff, placed in the PT_LOAD that maps it.
 * Returns -1 when ip is outside the mapping or no segment maps it. */
int lp_sym_module_offset(const lp_sym_mapping *m, uint64_t ip, uint64_t *off);

typedef struct lp_sym_req lp_sym_req;

/* A request builder. With adjust set, every stack is treated as
 * callee-first return addresses and adjusted (seed 000) before offsets are
 * computed, as the service itself never adjusts. */
lp_sym_req *lp_sym_req_new(lp_cpu arch, int adjust, lp_adjust_mode mode, lp_error *err);
void lp_sym_req_free(lp_sym_req *r);
/* Start a job (e.g. one process) with its mappings; the array must stay
 * valid until the next begin_job or until the requests have been taken. */
int lp_sym_req_begin_job(lp_sym_req *r, const lp_sym_mapping *maps, size_t n,
                         lp_error *err);
/* Add a stack of absolute addresses (callee first) to the current job. */
int lp_sym_req_add_stack(lp_sym_req *r, const uint64_t *addrs, size_t n, lp_error *err);
/* Requests of at most LP_SYM_MAX_JOBS jobs each. */
size_t lp_sym_req_count(const lp_sym_req *r);
char *lp_sym_req_json(const lp_sym_req *r, size_t i, lp_error *err);

/* ---- client side: a whole perf.data -> v5 requests ---------------------- */

/* `lbr2prof script --format=symbolicate-v5`: feed every sample (after the
 * machine has seen the event) and write the requests: one job per process
 * in first-seen order, one stack per sample (callchain without context
 * markers, else the IP), leaf first. A mapped file's memoryMap entry is its
 * base name with the debug id of the build-id recorded for the mapping
 * (MMAP2 or the build-id table), else of the ELF file; the ELF (a binary
 * given here with that build-id or base name, else the file at its mapped
 * path) gives the PT_LOAD segments for module offsets. Addresses in files
 * that cannot be read become [-1, address]. */
typedef struct lp_sym_perf_opts {
    lp_cpu arch;                 /* LP_CPU_UNKNOWN: x86_64 */
    int adjust;                  /* adjust return addresses before offsets */
    lp_adjust_mode mode;         /* with adjust: usually all_but_first */
    const char *const *binaries; /* ELF files standing in for mapped files */
    size_t nbinaries;
    int64_t pid;                 /* -1: every process */
} lp_sym_perf_opts;

typedef struct lp_sym_perf lp_sym_perf;

lp_sym_perf *lp_sym_perf_new(const lp_sym_perf_opts *o, lp_error *err);
void lp_sym_perf_free(lp_sym_perf *p);
/* A sample event (others are ignored); m must reflect the events so far. */
int lp_sym_perf_sample(lp_sym_perf *p, const lp_machine *m, const lp_event *ev,
                       lp_error *err);
/* The requests, one JSON document per line (more than one only with more
 * than LP_SYM_MAX_JOBS processes); `{"jobs":[]}` when there was no sample. */
int lp_sym_perf_write(lp_sym_perf *p, FILE *out, lp_error *err);
/* Mapped files that could not be read (their frames are [-1, address]):
 * malloc'ed array of names owned by p; returns the count. */
size_t lp_sym_perf_unreadable(const lp_sym_perf *p, const char ***names);

#ifdef __cplusplus
}
#endif
#endif
