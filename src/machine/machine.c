/*
 * machine.c - process state from the event stream (see
 * include/lbr2prof/machine.h): threads (tid -> pid, comm), per-process
 * sorted map arrays with perf's overlap fixup, shared kernel maps.
 * Owns the tables and the interned strings. Does not read files, resolve
 * symbols or know about binaries.
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/machine.h"

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

/* Maps of one process, sorted by start, not overlapping. */
typedef struct mc_proc {
    uint32_t pid;
    lp_map *maps;
    size_t n, cap;
    UT_hash_handle hh;
} mc_proc;

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
    mc_proc *procs;      /* includes the kernel, pid LP_KERNEL_PID */
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

static mc_proc *find_proc(const lp_machine *m, uint32_t pid)
{
    mc_proc *p;
    HASH_FIND(hh, m->procs, &pid, sizeof pid, p);
    return p;
}

static mc_proc *findnew_proc(lp_machine *m, uint32_t pid)
{
    mc_proc *p = find_proc(m, pid);

    if (p)
        return p;
    p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->pid = pid;
    HASH_ADD(hh, m->procs, pid, sizeof p->pid, p);
    return p;
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

/* ---- map arrays ----------------------------------------------------------------- */

/* Index of the first map whose end is > addr. */
static size_t first_ending_after(const mc_proc *p, uint64_t addr)
{
    size_t lo = 0, hi = p->n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p->maps[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int reserve(mc_proc *p, size_t extra)
{
    size_t need = p->n + extra, cap = p->cap ? p->cap : 8;
    lp_map *q;

    if (need <= p->cap)
        return 0;
    while (cap < need)
        cap *= 2;
    q = realloc(p->maps, cap * sizeof *q);
    if (!q)
        return -1;
    p->maps = q;
    p->cap = cap;
    return 0;
}

/* Insert `nm`, cutting back or splitting the maps it overlaps. */
static int insert_map(mc_proc *p, const lp_map *nm)
{
    size_t i, j, keep_left = 0, keep_right = 0;
    lp_map left, right;

    if (nm->end <= nm->start)
        return 0;
    if (reserve(p, 3) < 0)
        return -1;
    i = first_ending_after(p, nm->start);
    j = i;
    while (j < p->n && p->maps[j].start < nm->end)
        j++;
    /* maps[i, j) overlap nm. */
    if (i < j && p->maps[i].start < nm->start) {
        left = p->maps[i];
        left.end = nm->start;
        keep_left = 1;
    }
    if (i < j && p->maps[j - 1].end > nm->end) {
        right = p->maps[j - 1];
        right.pgoff += nm->end - right.start;
        right.start = nm->end;
        keep_right = 1;
    }
    {
        size_t add = keep_left + 1 + keep_right, del = j - i;
        memmove(p->maps + i + add, p->maps + j, (p->n - j) * sizeof *p->maps);
        p->n = p->n - del + add;
    }
    if (keep_left)
        p->maps[i++] = left;
    p->maps[i++] = *nm;
    if (keep_right)
        p->maps[i] = right;
    return 0;
}

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
    mc_proc *p;
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
    p = findnew_proc(m, kernel ? LP_KERNEL_PID : e->pid);
    if (!p)
        return -1;
    return insert_map(p, &nm);
}

static int on_comm(lp_machine *m, const lp_event *ev)
{
    const lp_comm_event *c = &ev->u.comm;
    mc_thread *t = findnew_thread(m, c->pid, c->tid);
    mc_proc *p;

    if (!t || !(t->comm = intern(m, c->comm ? c->comm : "")))
        return -1;
    t->pid = c->pid;
    if (c->exec && !(m->flags & LP_MACHINE_KEEP_MAPS_ON_EXEC) &&
        (p = find_proc(m, c->pid)))
        p->n = 0;
    return 0;
}

static int on_fork(lp_machine *m, const lp_event *ev)
{
    const lp_task_event *f = &ev->u.task;
    mc_thread *parent = find_thread(m, f->ptid), *t = find_thread(m, f->tid);
    const char *comm = parent ? parent->comm : NULL;
    mc_proc *pp, *cp;
    size_t i;

    if (t) { /* a reused tid: the old thread is gone */
        HASH_DEL(m->threads, t);
        free(t);
    }
    if (!(t = findnew_thread(m, f->pid, f->tid)))
        return -1;
    t->comm = comm;
    if (f->pid == f->ppid || !(pp = find_proc(m, f->ppid)) || pp->n == 0)
        return 0;
    if (!(cp = findnew_proc(m, f->pid)))
        return -1;
    for (i = 0; i < pp->n; i++)
        if (insert_map(cp, &pp->maps[i]) < 0)
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
    mc_proc *p, *tp;

    if (!m)
        return;
    HASH_ITER(hh, m->threads, t, tt) {
        HASH_DEL(m->threads, t);
        free(t);
    }
    HASH_ITER(hh, m->procs, p, tp) {
        HASH_DEL(m->procs, p);
        free(p->maps);
        free(p);
    }
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
    const mc_proc *p = find_proc(m, pid);
    size_t i;

    if (!p)
        return NULL;
    i = first_ending_after(p, addr);
    if (i < p->n && p->maps[i].start <= addr)
        return &p->maps[i];
    return NULL;
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
    const mc_proc *p = find_proc(m, pid);
    return p ? p->n : 0;
}
