/*
 * lbr2prof/addrmap.h - runtime address -> (binary, link-time vaddr), per
 * process, for several binaries at once.
 *
 * Feed the trace's events in reader order (lp_addrmap_event: MMAP, COMM
 * with exec, FORK, EXIT; others are ignored), then ask which binary and
 * which vaddr a sampled address of process `pid` is (lp_addrmap_resolve).
 *
 * Matching an mmap to a binary, in this order:
 *   1. build-id: the MMAP2 build-id variant, else the header's BUILD_ID
 *      table entry for the mmap's filename (lp_addrmap_add_build_ids);
 *   2. the full path (the binary's path as given, or its realpath);
 *   3. the basename.
 * A path/basename match whose build-id is known on both sides and differs
 * is NOT used, with one warning per (binary, filename) saying so.
 * lp_addrmap_finish() warns about every binary that no mmap matched.
 *
 * Per-process mode (the default): each process has its own mappings, so
 * several processes of one binary at different ASLR bases all resolve
 * (unlike llvm-profgen 19, llvm issue #164581). A mapping resolves through
 * lp_binary_map_to_vaddr (addr - start + pgoff -> the PT_LOAD holding that
 * file offset): PIE and non-PIE, any pgoff, lld's split segments. A new
 * mmap cuts back the mappings it overlaps; FORK of a new process copies the
 * parent's mappings; COMM with exec drops the process's mappings; EXIT
 * keeps them (samples of other threads may follow). Kernel mmaps (pid -1
 * or kernel cpumode) are not matched, except the kernel image's with
 * opts.kernel. `pid_filter` >= 0: only that process resolves (but the
 * kernel, in every process). Several recordings in one run:
 * lp_addrmap_next_input between them keeps their processes apart.
 *
 * Single-base mode (opts.single_base, or resolving with LP_ADDRMAP_ANY_PID
 * in either mode): llvm-profgen 19's updateBinaryAddress. Each binary has
 * ONE load base for the whole run, moved by its matching mmaps in trace
 * order (pid_filter applied to the mmaps): an mmap at the current base only
 * marks the binary loaded; one whose pgoff is the first executable
 * segment's page-aligned offset moves the base; any other must be another
 * executable segment at the distance the file gives, else (single_base
 * only) lp_addrmap_event fails with llvm-profgen's message. An address then
 * is canon = addr - base + preferred_base for every process; it belongs to
 * the first binary whose PT_LOAD segments hold canon. This is what perf
 * script text input (whose samples carry no pid) needs.
 */
#ifndef LBR2PROF_ADDRMAP_H
#define LBR2PROF_ADDRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/error.h"
#include "lbr2prof/reader.h"
#include "lbr2prof/warn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A pid that means "no pid known": resolve with the single-base rule. */
#define LP_ADDRMAP_ANY_PID ((uint32_t)-1)

typedef struct lp_addrmap lp_addrmap;

typedef struct lp_addrmap_opts {
    bool single_base;       /* llvm-profgen 19: one base per binary per run */
    int64_t pid_filter;     /* -1: none */
    lp_warn_fn warn;        /* warnings (no "warning: " prefix); may be NULL */
    void *warn_ctx;
    /* --kernel: binary 0 is the kernel image (vmlinux), mapped for every
     * process by the kernel's own mmap ([kernel.kallsyms],
     * [kernel.kallsyms]_text, [kernel.kallsyms]_stext: pid -1, pgoff =
     * start), as llvm-profgen 22 does: with llvm-profgen's single base
     * (canon = addr - start + preferred base; the preferred base until
     * such an mmap is seen, or when pid_filter drops it), in both modes.
     * No other mmap matches binary 0; kernel module mmaps match nothing. */
    bool kernel;
} lp_addrmap_opts;

/* `bins` (nbins >= 1) must outlive the map; their order gives the indexes
 * resolve returns. o may be NULL (per-process, no filter, no warnings). */
lp_addrmap *lp_addrmap_new(lp_binary *const *bins, size_t nbins,
                           const lp_addrmap_opts *o, lp_error *err);
void lp_addrmap_free(lp_addrmap *m);

/* The header's BUILD_ID table (lp_file_info.build_ids). Call before
 * feeding events. 0, or -1 (allocation). */
int lp_addrmap_add_build_ids(lp_addrmap *m, const lp_build_id *ids, size_t n,
                             lp_error *err);

/* One event. 0, or -1 with err: allocation failure, or in single-base mode
 * llvm-profgen's fatal segment errors (LP_EFORMAT). */
int lp_addrmap_event(lp_addrmap *m, const lp_event *ev, lp_error *err);

/* The events that follow come from another recording (several traces in
 * one run): its processes and its header's build-id table start afresh,
 * since a pid of one recording says nothing of another's; which binaries
 * were loaded, the warnings given and the single-base state carry on, as
 * over one recording holding both. */
void lp_addrmap_next_input(lp_addrmap *m);

/* A count of the calls that may have changed the map (build-ids added,
 * MMAP, COMM exec and FORK events): what a caller derived from earlier
 * resolutions holds while it stays the same. */
uint64_t lp_addrmap_changes(const lp_addrmap *m);

/* After the last event: warns once for each binary no mmap matched. */
void lp_addrmap_finish(lp_addrmap *m);

/* Binary index >= 0 with *vaddr set, or -1 when addr is in no binary of
 * process pid (external code). pid LP_ADDRMAP_ANY_PID, or single-base
 * mode: the single-base rule. */
int lp_addrmap_resolve(const lp_addrmap *m, uint32_t pid, uint64_t addr,
                       uint64_t *vaddr);

/* Whether some mmap matched binary i (llvm-profgen's IsLoadedByMMap; in
 * single-base mode after pid filtering). */
bool lp_addrmap_loaded(const lp_addrmap *m, size_t i);

/* Single-base mode: binary i's current load base (its preferred base when
 * nothing matched). */
uint64_t lp_addrmap_single_base(const lp_addrmap *m, size_t i);

/* llvm-profgen's isKernelImageName: the basename of filename is
 * [kernel.kallsyms], [kernel.kallsyms]_text or [kernel.kallsyms]_stext. */
bool lp_addrmap_kernel_image(const char *filename);

/* Number of binary mappings process pid has now (tests, stats). */
size_t lp_addrmap_nr_maps(const lp_addrmap *m, uint32_t pid);

#ifdef __cplusplus
}
#endif
#endif
