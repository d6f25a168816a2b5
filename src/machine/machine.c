/*
 * machine.c - process state from the event stream (see
 * include/lbr2prof/machine.h): threads (tid -> pid, comm), the maps of
 * each process and the shared kernel maps (tables of maptable.c), the
 * header's build-ids. Owns the threads and the interned strings. Does not
 * read files, resolve symbols or know about binaries.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/machine.h"
#include "machine/maptable.h"

MT_CHECK(lp_map);

#define LP_KERNEL_PID ((uint32_t)-1)

/* Interned string (filenames and comms live as long as the machine). */
typedef struct mc_str {
    UT_hash_handle hh;
    char s[];
} mc_str;

typedef struct mc_thread {
    uint32_t tid, pid;
    const char *comm;
    UT_hash_handle hh;
} mc_thread;

/* A header build-id, keyed by (pid, filename); pid -1 for "any". */
typedef struct mc_bid {
    struct {
        uint32_t pid;
        const char *file; /* interned, so the pointer identifies it */
    } key;
    uint8_t id[20];
    uint8_t size;
    UT_hash_handle hh;
} mc_bid;

struct lp_machine {
    unsigned flags;
    mc_bid *bids;
    mc_str *strings;
    mc_thread *threads;
    mt_proc *procs;      /* includes the kernel, pid LP_KERNEL_PID */
};

/* ---- helpers ---------------------------------------------------------------- */

static const char *intern(lp_machine *m, const char *s)
{
    mc_str *e;
    size_t n = strlen(s);

    HASH_FIND(hh, m->strings, s, n, e);
    if (e)
        return e->s;
    e = malloc(sizeof *e + n + 1);
    if (!e)
        return NULL;
    memcpy(e->s, s, n + 1);
    HASH_ADD_KEYPTR(hh, m->strings, e->s, n, e);
    return e->s;
}

static mc_thread *find_thread(const lp_machine *m, uint32_t tid)
{
    mc_thread *t;
    HASH_FIND(hh, m->threads, &tid, sizeof tid, t);
    return t;
}

static mc_thread *findnew_thread(lp_machine *m, uint32_t pid, uint32_t tid)
{
    mc_thread *t = find_thread(m, tid);

    if (t)
        return t;
    t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->tid = tid;
    t->pid = pid;
    HASH_ADD(hh, m->threads, tid, sizeof t->tid, t);
    return t;
}

/* perf's is_anon_memory() || is_no_dso_memory(): identity-mapped. */
static int is_anon_name(const char *f)
{
    return strcmp(f, "//anon") == 0 || strncmp(f, "/dev/zero", 9) == 0 ||
           strncmp(f, "/anon_hugepage", 14) == 0 || strncmp(f, "[stack", 6) == 0 ||
           strncmp(f, "/SYSV", 5) == 0 || strcmp(f, "[heap]") == 0;
}

/* ---- build-ids ---------------------------------------------------------------- */

static const mc_bid *find_bid(const lp_machine *m, uint32_t pid,
                              const char *file)
{
    mc_bid *b, k;

    memset(&k, 0, sizeof k);
    k.key.pid = pid;
    k.key.file = file;
    HASH_FIND(hh, m->bids, &k.key, sizeof k.key, b);
    if (!b && pid != LP_KERNEL_PID) {
        k.key.pid = LP_KERNEL_PID;
        HASH_FIND(hh, m->bids, &k.key, sizeof k.key, b);
    }
    return b;
}

/* ---- event handlers ------------------------------------------------------------- */

static int on_mmap(lp_machine *m, const lp_event *ev)
{
    const lp_mmap_event *e = &ev->u.mmap;
    unsigned mode = ev->misc & LP_MISC_CPUMODE_MASK;
    lp_map nm;
    mt_proc *p;
    int kernel = e->pid == LP_KERNEL_PID || mode == LP_CPUMODE_KERNEL ||
                 mode == LP_CPUMODE_GUEST_KERNEL;

    memset(&nm, 0, sizeof nm);
    nm.start = e->start;
    nm.end = e->start + e->len;
    if (nm.end < nm.start)
        nm.end = UINT64_MAX;
    nm.pgoff = e->pgoff;
    nm.prot = e->prot;
    nm.flags = e->flags;
    nm.maj = e->maj;
    nm.min = e->min;
    nm.ino = e->ino;
    nm.ino_generation = e->ino_generation;
    memcpy(nm.build_id, e->build_id, sizeof nm.build_id);
    nm.build_id_size = e->build_id_size;
    nm.kernel = (uint8_t)kernel;
    nm.filename = intern(m, e->filename ? e->filename : "");
    if (!nm.filename)
        return -1;
    nm.anon = !kernel && is_anon_name(nm.filename);
    if (!nm.build_id_size) {
        /* The header names the kernel "[kernel.kallsyms]", the MMAP
         * "[kernel.kallsyms]_text" (or _stext). */
        const char *key = nm.filename;
        if (kernel && strncmp(key, "[kernel.kallsyms]", 17) == 0 &&
            !(key = intern(m, "[kernel.kallsyms]")))
            return -1;
        const mc_bid *b = find_bid(m, kernel ? LP_KERNEL_PID : e->pid, key);
        if (b) {
            memcpy(nm.build_id, b->id, sizeof nm.build_id);
            nm.build_id_size = b->size;
        }
    }
    p = mt_proc_findnew(&m->procs, kernel ? LP_KERNEL_PID : e->pid, sizeof nm);
    if (!p)
        return -1;
    return mt_place(&p->maps, &nm, true);
}

static int on_comm(lp_machine *m, const lp_event *ev)
{
    const lp_comm_event *c = &ev->u.comm;
    mc_thread *t = findnew_thread(m, c->pid, c->tid);
    mt_proc *p;

    if (!t || !(t->comm = intern(m, c->comm ? c->comm : "")))
        return -1;
    t->pid = c->pid;
    if (c->exec && !(m->flags & LP_MACHINE_KEEP_MAPS_ON_EXEC) &&
        (p = mt_proc_find(m->procs, c->pid)))
        p->maps.n = 0;
    return 0;
}

static int on_fork(lp_machine *m, const lp_event *ev)
{
    const lp_task_event *f = &ev->u.task;
    mc_thread *parent = find_thread(m, f->ptid), *t = find_thread(m, f->tid);
    const char *comm = parent ? parent->comm : NULL;
    mt_proc *pp, *cp;
    size_t i;

    if (t) { /* a reused tid: the old thread is gone */
        HASH_DEL(m->threads, t);
        free(t);
    }
    if (!(t = findnew_thread(m, f->pid, f->tid)))
        return -1;
    t->comm = comm;
    if (f->pid == f->ppid || !(pp = mt_proc_find(m->procs, f->ppid)) ||
        pp->maps.n == 0)
        return 0;
    if (!(cp = mt_proc_findnew(&m->procs, f->pid, sizeof(lp_map))))
        return -1;
    for (i = 0; i < pp->maps.n; i++) /* into the maps the child may have */
        if (mt_place(&cp->maps, mt_at(&pp->maps, i), true) < 0)
            return -1;
    return 0;
}

/* ---- public API ------------------------------------------------------------------ */

lp_machine *lp_machine_new(unsigned flags, lp_error *err)
{
    lp_machine *m = calloc(1, sizeof *m);
    mc_thread *idle;

    if (!m)
        goto oom;
    m->flags = flags;
    idle = findnew_thread(m, 0, 0);
    if (!idle || !(idle->comm = intern(m, "swapper")))
        goto oom;
    return m;
oom:
    lp_machine_free(m);
    lp_error_set(err, LP_ENOMEM, "machine: out of memory");
    return NULL;
}

int lp_machine_add_build_ids(lp_machine *m, const lp_build_id *ids, size_t n,
                             lp_error *err)
{
    size_t i;

    for (i = 0; i < n; i++) {
        mc_bid *b = calloc(1, sizeof *b), *old;
        if (!b || !(b->key.file = intern(m, ids[i].filename ? ids[i].filename
                                                             : ""))) {
            free(b);
            return lp_error_set(err, LP_ENOMEM, "machine: out of memory");
        }
        b->key.pid = (uint32_t)ids[i].pid;
        memcpy(b->id, ids[i].id, sizeof b->id);
        b->size = ids[i].size > 20 ? 20 : ids[i].size;
        HASH_FIND(hh, m->bids, &b->key, sizeof b->key, old);
        if (old) { /* first one wins */
            free(b);
            continue;
        }
        HASH_ADD(hh, m->bids, key, sizeof b->key, b);
    }
    return 0;
}

void lp_machine_free(lp_machine *m)
{
    mc_bid *b, *tb;
    mc_str *s, *ts;
    mc_thread *t, *tt;

    if (!m)
        return;
    HASH_ITER(hh, m->threads, t, tt) {
        HASH_DEL(m->threads, t);
        free(t);
    }
    mt_proc_free_all(&m->procs);
    HASH_ITER(hh, m->bids, b, tb) {
        HASH_DEL(m->bids, b);
        free(b);
    }
    HASH_ITER(hh, m->strings, s, ts) {
        HASH_DEL(m->strings, s);
        free(s);
    }
    free(m);
}

int lp_machine_process_event(lp_machine *m, const lp_event *ev, lp_error *err)
{
    int r = 0;

    switch (ev->kind) {
    case LP_EV_MMAP: r = on_mmap(m, ev); break;
    case LP_EV_COMM: r = on_comm(m, ev); break;
    case LP_EV_FORK: r = on_fork(m, ev); break;
    default: break;
    }
    if (r < 0)
        return lp_error_set(err, LP_ENOMEM, "machine: out of memory");
    return 0;
}

const char *lp_machine_comm(const lp_machine *m, uint32_t pid, uint32_t tid)
{
    const mc_thread *t = find_thread(m, tid);
    (void)pid;
    return t ? t->comm : NULL;
}

static const lp_map *lookup(const lp_machine *m, uint32_t pid, uint64_t addr)
{
    const mt_proc *p = mt_proc_find(m->procs, pid);

    return p ? mt_find(&p->maps, addr) : NULL;
}

const lp_map *lp_machine_find_map(const lp_machine *m, uint32_t pid,
                                  uint64_t addr, unsigned cpumode)
{
    const lp_map *mp;

    switch (cpumode) {
    case LP_CPUMODE_KERNEL:
    case LP_CPUMODE_GUEST_KERNEL:
        return lookup(m, LP_KERNEL_PID, addr);
    case LP_CPUMODE_USER:
    case LP_CPUMODE_GUEST_USER:
        return pid == LP_KERNEL_PID ? NULL : lookup(m, pid, addr);
    case LP_CPUMODE_UNKNOWN:
        mp = pid == LP_KERNEL_PID ? NULL : lookup(m, pid, addr);
        return mp ? mp : lookup(m, LP_KERNEL_PID, addr);
    default:
        return NULL;
    }
}

uint64_t lp_map_rel_addr(const lp_map *mp, uint64_t addr)
{
    if (mp->kernel || mp->anon)
        return addr;
    return addr - mp->start + mp->pgoff;
}

size_t lp_machine_nr_maps(const lp_machine *m, uint32_t pid)
{
    const mt_proc *p = mt_proc_find(m->procs, pid);

    return p ? p->maps.n : 0;
}

const lp_map *lp_machine_map_at(const lp_machine *m, uint32_t pid, size_t i)
{
    const mt_proc *p = mt_proc_find(m->procs, pid);

    return p && i < p->maps.n ? mt_at(&p->maps, i) : NULL;
}
