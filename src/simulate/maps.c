/*
 * maps.c - reports the tracee's executable mappings as MMAP2 records, each
 * once (the /proc parsing and build-ids are lp_perfwrite_proc_maps), and
 * reads its comm. Does not decide when to scan (tracer.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simulate/sim.h"

static int seen_map_fn(void *ctx, const char *key)
{
    sim *s = ctx;
    seen_map *sm;

    HASH_FIND_STR(s->maps, key, sm);
    if (sm)
        return 1;
    if (!(sm = calloc(1, sizeof *sm)))
        return -1;
    snprintf(sm->key, sizeof sm->key, "%s", key);
    HASH_ADD_STR(s->maps, key, sm);
    sim_truth_map(s, key);
    return 0;
}

int sim_scan_maps(sim *s, pid_t pid, pid_t tid, lp_error *err)
{
    s->scan_pid = pid;
    return lp_perfwrite_proc_maps(s->pw, pid, tid, s->time, seen_map_fn, s, err);
}

int sim_read_comm(pid_t pid, char out[16])
{
    char fn[64];
    FILE *f;
    size_t n;

    snprintf(fn, sizeof fn, "/proc/%d/comm", (int)pid);
    f = fopen(fn, "re");
    if (!f)
        return -1;
    n = fread(out, 1, 15, f);
    fclose(f);
    out[n] = 0;
    out[strcspn(out, "\n")] = 0;
    return 0;
}
