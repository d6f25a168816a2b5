/*
 * lbr2prof/machine.h - process state rebuilt from the event stream: which
 * thread has which comm, and which file is mapped where in each process.
 *
 * Feed every event of a reader (in the reader's order) to
 * lp_machine_process_event(); then ask for a thread's comm or for the map
 * that covers an address. The rules follow perf's `machine`:
 *   - threads are keyed by tid; an unknown thread has no comm (perf prints
 *     ":TID"); tid 0 starts as "swapper";
 *   - COMM sets the comm; with exec (misc bit 13) the process's maps are
 *     dropped, unless LP_MACHINE_KEEP_MAPS_ON_EXEC (perf keeps them);
 *   - FORK makes a new thread with the parent's comm; a new process
 *     (pid != ppid) gets a copy of the parent process's maps;
 *   - MMAP/MMAP2 insert a map into the process `pid`; existing maps that
 *     overlap it are cut back or split, as perf's maps__fixup_overlappings;
 *   - kernel maps (pid -1, or kernel cpumode) are shared by all processes.
 * Strings returned stay valid until lp_machine_free().
 */
#ifndef LBR2PROF_MACHINE_H
#define LBR2PROF_MACHINE_H

#include <stdint.h>

#include "lbr2prof/error.h"
#include "lbr2prof/reader.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lp_map {
    uint64_t start, end;      /* [start, end) */
    uint64_t pgoff;           /* file offset of `start` (kernel: see docs) */
    uint32_t prot, flags;     /* PROT_* / MAP_SHARED|MAP_PRIVATE (MMAP2) */
    uint32_t maj, min;
    uint64_t ino, ino_generation;
    uint8_t build_id[20];
    uint8_t build_id_size;
    uint8_t kernel;           /* a kernel or kernel-module map */
    uint8_t anon;             /* anonymous memory, heap, stack, SysV shm:
                                 perf maps addresses 1:1 (no file) */
    const char *filename;
} lp_map;

enum lp_machine_flags {
    LP_MACHINE_KEEP_MAPS_ON_EXEC = 1u << 0, /* perf's behaviour */
};

typedef struct lp_machine lp_machine;

lp_machine *lp_machine_new(unsigned flags, lp_error *err);
void lp_machine_free(lp_machine *m);

/* Update the state with one event (MMAP, COMM, FORK; others are ignored).
 * Returns 0, or -1 with `err` set (only on allocation failure). */
int lp_machine_process_event(lp_machine *m, const lp_event *ev,
                             lp_error *err);

/* Build-ids from the file header (lp_file_info.build_ids): maps inserted
 * afterwards whose MMAP carried no build-id get the one recorded for their
 * filename (for pid == -1 entries, any process; otherwise that pid first).
 * Call before feeding events. Returns 0 or -1 (allocation). */
int lp_machine_add_build_ids(lp_machine *m, const lp_build_id *ids, size_t n,
                             lp_error *err);

/* The comm of thread `tid`, or NULL if no COMM/FORK named it. */
const char *lp_machine_comm(const lp_machine *m, uint32_t pid, uint32_t tid);

/* The map covering `addr`: with LP_CPUMODE_KERNEL / GUEST_KERNEL in the
 * kernel maps, with USER / GUEST_USER in process `pid`'s maps, with
 * UNKNOWN in the process then the kernel. NULL if none. */
const lp_map *lp_machine_find_map(const lp_machine *m, uint32_t pid,
                                  uint64_t addr, unsigned cpumode);

/* The address perf prints for `addr` inside map `mp`: the file offset
 * (addr - start + pgoff) for file-backed user maps, addr itself for kernel
 * and anonymous maps. */
uint64_t lp_map_rel_addr(const lp_map *mp, uint64_t addr);

/* Number of maps of process `pid` (-1: kernel); for tests and stats. */
size_t lp_machine_nr_maps(const lp_machine *m, uint32_t pid);
/* The i-th map of process `pid` in address order (i < lp_machine_nr_maps),
 * or NULL. Valid until the next event is processed. */
const lp_map *lp_machine_map_at(const lp_machine *m, uint32_t pid, size_t i);

#ifdef __cplusplus
}
#endif
#endif
