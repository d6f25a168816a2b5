/*
 * addrmap.c - runtime address -> (binary index, link-time vaddr) per
 * process (see include/lbr2prof/addrmap.h): matching mmaps to the given
 * binaries (build-id, path, basename), per-process sorted arrays of the
 * mappings that matched (perf's overlap rule, fork copy, exec reset), and
 * llvm-profgen's single-base state per binary. Owns its tables; does not
 * open binaries, read traces or count samples.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/addrmap.h"

#define PAGE_MASK_4K (~(uint64_t)0xfff)

/* A mapping of one binary in one process: [start, end) @ pgoff. */
typedef struct am_map {
    uint64_t start, end, pgoff;
    int32_t bin;
} am_map;

/* The binary mappings of one process, sorted by start, not overlapping. */
typedef struct am_proc {
    uint32_t pid;
    am_map *maps;
    size_t n, cap;
    UT_hash_handle hh;
} am_proc;

/* What we know of one binary. */
typedef struct am_bin {
    lp_binary *b;
    const char *path, *base;    /* as given, and its basename */
    char *real;                 /* realpath, or NULL */
    const uint8_t *bid;
    size_t nbid;
    uint64_t preferred, text_offset;
    uint64_t sb_base;           /* single-base state */
    bool sb_loaded, loaded;
} am_bin;

/* A header BUILD_ID entry, keyed by filename; per-pid ones chained. */
typedef struct am_hdr_bid {
    int32_t pid;
    uint8_t id[20];
    uint8_t size;
    struct am_hdr_bid *next;
} am_hdr_bid;

typedef struct am_file {
    UT_hash_handle hh;
    am_hdr_bid *ids;            /* in table order */
    char name[];
} am_file;

/* A warning already given (key: "bin-index:filename"). */
typedef struct am_warned {
    UT_hash_handle hh;
    char key[];
} am_warned;

struct lp_addrmap {
    lp_addrmap_opts o;
    am_bin *bins;
    size_t nbins;
    am_proc *procs;
    am_file *files;
    am_warned *warned;
};

/* ---- helpers ------------------------------------------------------------------ */

static void warnf(const lp_addrmap *m, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warnf(const lp_addrmap *m, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;

    if (!m->o.warn)
        return;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    m->o.warn(m->o.warn_ctx, buf);
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');

    return s ? s + 1 : p;
}

static void hex(const uint8_t *id, size_t n, char *out)
{
    size_t i;

    for (i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", id[i]);
    out[2 * n] = 0;
}

/* Equal ids, allowing a zero-padded tail on the longer one (perf pads
 * short ids to 20 bytes). */
static bool bid_equal(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    size_t n = na < nb ? na : nb, i;
    const uint8_t *l = na > nb ? a : b;

    if (memcmp(a, b, n) != 0)
        return false;
    for (i = n; i < (na > nb ? na : nb); i++)
        if (l[i])
            return false;
    return true;
}

static am_proc *find_proc(const lp_addrmap *m, uint32_t pid)
{
    am_proc *p;

    HASH_FIND(hh, m->procs, &pid, sizeof pid, p);
    return p;
}

static am_proc *findnew_proc(lp_addrmap *m, uint32_t pid)
{
    am_proc *p = find_proc(m, pid);

    if (p)
        return p;
    if (!(p = calloc(1, sizeof *p)))
        return NULL;
    p->pid = pid;
    HASH_ADD(hh, m->procs, pid, sizeof p->pid, p);
    return p;
}

/* ---- per-process mapping arrays ------------------------------------------------ */

/* Index of the first map whose end is > addr. */
static size_t first_ending_after(const am_proc *p, uint64_t addr)
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

static int reserve(am_proc *p, size_t need)
{
    size_t cap = p->cap ? p->cap : 4;
    am_map *q;

    if (need <= p->cap)
        return 0;
    while (cap < need)
        cap *= 2;
    if (!(q = realloc(p->maps, cap * sizeof *q)))
        return -1;
    p->maps = q;
    p->cap = cap;
    return 0;
}

/* Put [start, end) into p: the maps it overlaps are cut back or split
 * (perf's maps__fixup_overlappings); it is stored only if nm->bin >= 0. */
static int place(am_proc *p, const am_map *nm)
{
    size_t i, j, keep_left = 0, keep_right = 0, add, del;
    am_map left, right;

    if (nm->end <= nm->start || reserve(p, p->n + 3) < 0)
        return nm->end <= nm->start ? 0 : -1;
    i = first_ending_after(p, nm->start);
    for (j = i; j < p->n && p->maps[j].start < nm->end; j++)
        ;
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
    add = keep_left + (nm->bin >= 0) + keep_right;
    del = j - i;
    memmove(p->maps + i + add, p->maps + j, (p->n - j) * sizeof *p->maps);
    p->n = p->n - del + add;
    if (keep_left)
        p->maps[i++] = left;
    if (nm->bin >= 0)
        p->maps[i++] = *nm;
    if (keep_right)
        p->maps[i] = right;
    return 0;
}

/* ---- matching an mmap to a binary ------------------------------------------------ */

/* The header's build-id for `file` in `pid`: that pid's, else pid -1's,
 * else the first listed. */
static const am_hdr_bid *header_bid(const lp_addrmap *m, const char *file,
                                    uint32_t pid)
{
    am_file *f;
    const am_hdr_bid *e, *any = NULL;

    HASH_FIND_STR(m->files, file, f);
    if (!f)
        return NULL;
    for (e = f->ids; e; e = e->next)
        if (e->pid == (int32_t)pid)
            return e;
    for (e = f->ids; e; e = e->next)
        if (e->pid == -1)
            return e;
    for (e = f->ids; e && !any; e = e->next)
        any = e;
    return any;
}

/* Warn once per (binary, filename) that a mapping is not used. */
static int warn_mismatch(lp_addrmap *m, int bi, const lp_mmap_event *e,
                         const uint8_t *id, size_t nid)
{
    char key[PATH_MAX + 32], got[41], want[41];
    am_warned *w;
    int n = snprintf(key, sizeof key, "%d:%s", bi, e->filename);
    size_t len = n < 0 ? 0 : (size_t)n >= sizeof key ? sizeof key - 1 : (size_t)n;

    HASH_FIND(hh, m->warned, key, len, w);
    if (w)
        return 0;
    if (!(w = malloc(sizeof *w + len + 1)))
        return -1;
    memcpy(w->key, key, len + 1);
    w->key[len] = 0;
    HASH_ADD_KEYPTR(hh, m->warned, w->key, len, w);
    hex(id, nid, got);
    hex(m->bins[bi].bid, m->bins[bi].nbid, want);
    warnf(m, "build-id mismatch: %s in process %" PRIu32 " has build-id %s, "
             "but %s has %s; that mapping is not used (pass the binary that "
             "was run)", e->filename, e->pid, got, m->bins[bi].path, want);
    return 0;
}

/* The binary an mmap is of, -1 if none; `id` is its build-id (may be
 * empty). Sets *mismatch to the binary whose path matched but whose
 * build-id differs, else -1. */
static int match(const lp_addrmap *m, const char *file, const uint8_t *id,
                 size_t nid, int *mismatch)
{
    const char *bn = base_name(file);
    int by_path = -1, by_base = -1, c;
    size_t i;

    *mismatch = -1;
    for (i = 0; i < m->nbins && nid; i++)
        if (m->bins[i].nbid && bid_equal(id, nid, m->bins[i].bid, m->bins[i].nbid))
            return (int)i;
    for (i = 0; i < m->nbins; i++) {
        const am_bin *b = &m->bins[i];
        if (by_path < 0 && (!strcmp(b->path, file) || (b->real && !strcmp(b->real, file))))
            by_path = (int)i;
        if (by_base < 0 && !strcmp(b->base, bn))
            by_base = (int)i;
    }
    c = by_path >= 0 ? by_path : by_base;
    if (c >= 0 && nid && m->bins[c].nbid) {
        *mismatch = c;
        return -1;
    }
    return c;
}

/* Match an mmap event, warning about a build-id mismatch. -1 on OOM. */
static int match_mmap(lp_addrmap *m, const lp_mmap_event *e, int *bin)
{
    const uint8_t *id = e->build_id;
    size_t nid = e->build_id_size;
    const am_hdr_bid *h;
    int mismatch;

    if (!nid && (h = header_bid(m, e->filename, e->pid))) {
        id = h->id;
        nid = h->size;
    }
    *bin = match(m, e->filename, id, nid, &mismatch);
    if (mismatch >= 0 && warn_mismatch(m, mismatch, e, id, nid))
        return -1;
    return 0;
}

/* ---- single-base state (updateBinaryAddress) ------------------------------------- */

static int sb_other_segment(lp_addrmap *m, am_bin *b, const lp_mmap_event *e,
                            lp_error *err)
{
    const lp_segment *segs;
    size_t n = lp_binary_exec_segments(b->b, &segs), i;
    uint64_t off, prev = 0;
    bool have_prev = false;
    const char *why = NULL;

    for (i = 0; i < n; i++) {
        off = segs[i].offset & PAGE_MASK_4K;
        if (off == e->pgoff) {
            if ((segs[i].vaddr & PAGE_MASK_4K) - b->preferred != e->start - b->sb_base)
                why = "Executable segments not loaded consecutively";
            break;
        }
        if (off < e->pgoff) {
            prev = off;
            have_prev = true;
        }
    }
    if (i == n && !have_prev)
        why = "File offset not found";
    else if (i == n && e->pgoff - prev != e->start - b->sb_base)
        why = "Segment not loaded by consecutive mmaps";
    if (!why || !m->o.single_base)
        return 0;
    return lp_error_set(err, LP_EFORMAT, "%s: %s (mmap at 0x%" PRIx64 " with "
                        "pgoff 0x%" PRIx64 ")", e->filename, why, e->start, e->pgoff);
}

static int sb_update(lp_addrmap *m, am_bin *b, const lp_mmap_event *e,
                     lp_error *err)
{
    if (m->o.pid_filter >= 0 && (int64_t)e->pid != m->o.pid_filter)
        return 0;
    if (e->start == b->sb_base) {
        b->sb_loaded = true;
        return 0;
    }
    if (e->pgoff == b->text_offset) {
        b->sb_base = e->start;
        b->sb_loaded = true;
        return 0;
    }
    return sb_other_segment(m, b, e, err);
}

static int sb_resolve(const lp_addrmap *m, uint64_t addr, uint64_t *vaddr)
{
    const lp_segment *segs;
    size_t i, j, n;

    for (i = 0; i < m->nbins; i++) {
        const am_bin *b = &m->bins[i];
        uint64_t c = addr - b->sb_base + b->preferred;
        n = lp_binary_segments(b->b, &segs);
        for (j = 0; j < n; j++)
            if (c >= segs[j].vaddr && c - segs[j].vaddr < segs[j].memsz) {
                *vaddr = c;
                return (int)i;
            }
    }
    return -1;
}

/* ---- events ---------------------------------------------------------------------- */

static int on_mmap(lp_addrmap *m, const lp_event *ev, lp_error *err)
{
    const lp_mmap_event *e = &ev->u.mmap;
    unsigned mode = ev->misc & LP_MISC_CPUMODE_MASK;
    am_map nm;
    am_proc *p;
    int bin;

    if (e->pid == (uint32_t)-1 || mode == LP_CPUMODE_KERNEL ||
        mode == LP_CPUMODE_GUEST_KERNEL || !e->filename)
        return 0;
    if (match_mmap(m, e, &bin))
        return lp_error_set(err, LP_ENOMEM, "address map: out of memory");
    if (bin >= 0) {
        if (m->o.pid_filter < 0 || (int64_t)e->pid == m->o.pid_filter)
            m->bins[bin].loaded = true;
        if (sb_update(m, &m->bins[bin], e, err))
            return -1;
    }
    nm.start = e->start;
    nm.end = e->start + e->len < e->start ? UINT64_MAX : e->start + e->len;
    nm.pgoff = e->pgoff;
    nm.bin = bin;
    p = bin >= 0 ? findnew_proc(m, e->pid) : find_proc(m, e->pid);
    if ((bin >= 0 && !p) || (p && place(p, &nm)))
        return lp_error_set(err, LP_ENOMEM, "address map: out of memory");
    return 0;
}

static void on_exec(lp_addrmap *m, const lp_comm_event *c)
{
    am_proc *p;

    if (c->exec && (p = find_proc(m, c->pid)))
        p->n = 0;
}

static int on_fork(lp_addrmap *m, const lp_task_event *f, lp_error *err)
{
    am_proc *pp, *cp;
    size_t i;

    if (f->pid == f->ppid)
        return 0; /* a new thread shares its process's maps */
    pp = find_proc(m, f->ppid);
    cp = find_proc(m, f->pid);
    if (cp)
        cp->n = 0; /* a reused pid: the old process is gone */
    if (!pp || pp->n == 0)
        return 0;
    if (!(cp = findnew_proc(m, f->pid)) || reserve(cp, pp->n) < 0)
        return lp_error_set(err, LP_ENOMEM, "address map: out of memory");
    memcpy(cp->maps, pp->maps, pp->n * sizeof *pp->maps);
    cp->n = pp->n;
    for (i = 0; m->o.pid_filter == (int64_t)f->pid && i < cp->n; i++)
        m->bins[cp->maps[i].bin].loaded = true;
    return 0;
}

/* ---- public API -------------------------------------------------------------------- */

static void init_bin(am_bin *ab, lp_binary *b)
{
    const lp_segment *segs;

    ab->b = b;
    ab->path = lp_binary_path(b);
    ab->base = base_name(ab->path);
    ab->real = realpath(ab->path, NULL);
    ab->nbid = lp_binary_build_id(b, &ab->bid);
    ab->preferred = ab->sb_base = lp_binary_preferred_base(b);
    if (lp_binary_exec_segments(b, &segs) > 0)
        ab->text_offset = segs[0].offset & PAGE_MASK_4K;

}

lp_addrmap *lp_addrmap_new(lp_binary *const *bins, size_t nbins,
                           const lp_addrmap_opts *o, lp_error *err)
{
    lp_addrmap *m;
    size_t i;

    if (nbins == 0 || nbins > INT32_MAX) {
        lp_error_set(err, LP_EUSAGE, "address map: no binary given");
        return NULL;
    }
    if (!(m = calloc(1, sizeof *m)) || !(m->bins = calloc(nbins, sizeof *m->bins))) {
        free(m);
        lp_error_set(err, LP_ENOMEM, "address map: out of memory");
        return NULL;
    }
    m->o.pid_filter = -1;
    if (o)
        m->o = *o;
    m->nbins = nbins;
    for (i = 0; i < nbins; i++)
        init_bin(&m->bins[i], bins[i]);
    return m;
}

void lp_addrmap_free(lp_addrmap *m)
{
    am_proc *p, *tp;
    am_file *f, *tf;
    am_warned *w, *tw;
    am_hdr_bid *e, *ne;
    size_t i;

    if (!m)
        return;
    HASH_ITER(hh, m->procs, p, tp) {
        HASH_DEL(m->procs, p);
        free(p->maps);
        free(p);
    }
    HASH_ITER(hh, m->files, f, tf) {
        HASH_DEL(m->files, f);
        for (e = f->ids; e; e = ne) {
            ne = e->next;
            free(e);
        }
        free(f);
    }
    HASH_ITER(hh, m->warned, w, tw) {
        HASH_DEL(m->warned, w);
        free(w);
    }
    for (i = 0; i < m->nbins; i++)
        free(m->bins[i].real);
    free(m->bins);
    free(m);
}

static int add_one_build_id(lp_addrmap *m, const lp_build_id *id)
{
    const char *name = id->filename ? id->filename : "";
    size_t len = strlen(name);
    am_hdr_bid *e = calloc(1, sizeof *e), **tail;
    am_file *f;

    if (!e)
        return -1;
    e->pid = id->pid;
    e->size = id->size > 20 ? 20 : id->size;
    memcpy(e->id, id->id, e->size);
    HASH_FIND(hh, m->files, name, len, f);
    if (!f) {
        if (!(f = calloc(1, sizeof *f + len + 1))) {
            free(e);
            return -1;
        }
        memcpy(f->name, name, len + 1);
        HASH_ADD_KEYPTR(hh, m->files, f->name, len, f);
    }
    for (tail = &f->ids; *tail; tail = &(*tail)->next)
        ;
    *tail = e;
    return 0;
}

int lp_addrmap_add_build_ids(lp_addrmap *m, const lp_build_id *ids, size_t n,
                             lp_error *err)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (ids[i].size > 0 && add_one_build_id(m, &ids[i]))
            return lp_error_set(err, LP_ENOMEM, "address map: out of memory");
    return 0;
}

int lp_addrmap_event(lp_addrmap *m, const lp_event *ev, lp_error *err)
{
    switch (ev->kind) {
    case LP_EV_MMAP: return on_mmap(m, ev, err);
    case LP_EV_COMM: on_exec(m, &ev->u.comm); return 0;
    case LP_EV_FORK: return on_fork(m, &ev->u.task, err);
    default: return 0; /* EXIT keeps the maps: see the header */
    }
}

void lp_addrmap_finish(lp_addrmap *m)
{
    size_t i;

    for (i = 0; i < m->nbins; i++)
        if (!m->bins[i].loaded)
            warnf(m, "no mmap in the trace matched %s (by build-id %s, path or "
                     "basename %s): none of its samples can be used",
                  m->bins[i].path, m->bins[i].nbid ? lp_binary_build_id_hex(m->bins[i].b)
                                                    : "(none)",
                  m->bins[i].base);
}

int lp_addrmap_resolve(const lp_addrmap *m, uint32_t pid, uint64_t addr,
                       uint64_t *vaddr)
{
    const am_proc *p;
    const am_map *mp;
    size_t i;

    if (m->o.single_base || pid == LP_ADDRMAP_ANY_PID)
        return sb_resolve(m, addr, vaddr);
    if ((m->o.pid_filter >= 0 && (int64_t)pid != m->o.pid_filter) ||
        !(p = find_proc(m, pid)))
        return -1;
    i = first_ending_after(p, addr);
    if (i == p->n || p->maps[i].start > addr)
        return -1;
    mp = &p->maps[i];
    if (lp_binary_map_to_vaddr(m->bins[mp->bin].b, mp->start, mp->pgoff, addr,
                               vaddr) < 0)
        return -1;
    return mp->bin;
}

bool lp_addrmap_loaded(const lp_addrmap *m, size_t i)
{
    if (i >= m->nbins)
        return false;
    return m->o.single_base ? m->bins[i].sb_loaded : m->bins[i].loaded;
}

uint64_t lp_addrmap_single_base(const lp_addrmap *m, size_t i)
{
    return i < m->nbins ? m->bins[i].sb_base : 0;
}

size_t lp_addrmap_nr_maps(const lp_addrmap *m, uint32_t pid)
{
    const am_proc *p = find_proc(m, pid);

    return p ? p->n : 0;
}
