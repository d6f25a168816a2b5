/*
 * addrmap.c - runtime address -> (binary index, link-time vaddr) per
 * process (see include/lbr2prof/addrmap.h): matching mmaps to the given
 * binaries (build-id, path, basename), the mappings that matched per
 * process (tables of maptable.c: perf's overlap rule; fork copy, exec
 * reset here), and llvm-profgen's single-base state per binary. Owns its
 * tables; does not open binaries, read traces or count samples.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/addrmap.h"
#include "machine/maptable.h"

#define PAGE_MASK_4K (~(uint64_t)0xfff)

/* A mapping of one binary in one process: [start, end) @ pgoff. */
typedef struct am_map {
    uint64_t start, end, pgoff;
    int32_t bin;
} am_map;
MT_CHECK(am_map);

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
    mt_proc *procs;             /* the mappings of known binaries */
    am_file *files;
    am_warned *warned;
    uint64_t changes;           /* lp_addrmap_changes */
};

/* ---- helpers ------------------------------------------------------------------ */

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
    lp_warnf(m->o.warn, m->o.warn_ctx, "build-id mismatch: %s in process %"
             PRIu32 " has build-id %s, but %s has %s; that mapping is not used "
             "(pass the binary that was run)", e->filename, e->pid, got,
             m->bins[bi].path, want);
    return 0;
}

/* The binary an mmap is of, -1 if none; `id` is its build-id (may be
 * empty). Sets *mismatch to the binary whose path matched but whose
 * build-id differs, else -1. */
static int match(const lp_addrmap *m, const char *file, const uint8_t *id,
                 size_t nid, int *mismatch)
{
    const char *bn = basename(file);
    int by_path = -1, by_base = -1, c;
    size_t i;

    *mismatch = -1;
    for (i = m->o.kernel; i < m->nbins && nid; i++)
        if (m->bins[i].nbid && bid_equal(id, nid, m->bins[i].bid, m->bins[i].nbid))
            return (int)i;
    for (i = m->o.kernel; i < m->nbins; i++) {
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

/* Whether addr is in binary b under the single-base rule. */
static bool sb_in(const am_bin *b, uint64_t addr, uint64_t *vaddr)
{
    const lp_segment *segs;
    uint64_t c = addr - b->sb_base + b->preferred;
    size_t j, n = lp_binary_segments(b->b, &segs);

    for (j = 0; j < n; j++)
        if (c >= segs[j].vaddr && c - segs[j].vaddr < segs[j].memsz) {
            *vaddr = c;
            return true;
        }
    return false;
}

static int sb_resolve(const lp_addrmap *m, uint64_t addr, uint64_t *vaddr)
{
    size_t i;

    for (i = 0; i < m->nbins; i++)
        if (sb_in(&m->bins[i], addr, vaddr))
            return (int)i;
    return -1;
}

/* ---- the kernel image (opts.kernel) ------------------------------------------------ */

bool lp_addrmap_kernel_image(const char *file)
{
    const char *bn = basename(file);

    return !strcmp(bn, "[kernel.kallsyms]") || !strcmp(bn, "[kernel.kallsyms]_stext") ||
           !strcmp(bn, "[kernel.kallsyms]_text");
}

/* The kernel's mmap (updateBinaryAddress, IsKernel): moves binary 0's one
 * base, unless pid_filter drops it or the recorded kernel build-id is not
 * binary 0's (then a warning, and the mapping is not used). */
static int on_kernel_mmap(lp_addrmap *m, const lp_mmap_event *e)
{
    const am_hdr_bid *h = header_bid(m, "[kernel.kallsyms]", e->pid);
    am_bin *b = &m->bins[0];

    if (m->o.pid_filter >= 0 && (int64_t)e->pid != m->o.pid_filter)
        return 0;
    if (h && b->nbid && !bid_equal(h->id, h->size, b->bid, b->nbid))
        return warn_mismatch(m, 0, e, h->id, h->size);
    b->sb_base = e->start;
    b->sb_loaded = b->loaded = true;
    return 0;
}

/* ---- events ---------------------------------------------------------------------- */

static int on_mmap(lp_addrmap *m, const lp_event *ev, lp_error *err)
{
    const lp_mmap_event *e = &ev->u.mmap;
    unsigned mode = ev->misc & LP_MISC_CPUMODE_MASK;
    am_map nm;
    mt_proc *p;
    int bin;

    if (m->o.kernel && e->filename && lp_addrmap_kernel_image(e->filename))
        return on_kernel_mmap(m, e) ? lp_error_set(err, LP_ENOMEM, "address map: out of memory")
                                    : 0;
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
    p = bin >= 0 ? mt_proc_findnew(&m->procs, e->pid, sizeof nm)
                 : mt_proc_find(m->procs, e->pid);
    if ((bin >= 0 && !p) || (p && mt_place(&p->maps, &nm, bin >= 0)))
        return lp_error_set(err, LP_ENOMEM, "address map: out of memory");
    return 0;
}

static void on_exec(lp_addrmap *m, const lp_comm_event *c)
{
    mt_proc *p;

    if (c->exec && (p = mt_proc_find(m->procs, c->pid)))
        p->maps.n = 0;
}

static int on_fork(lp_addrmap *m, const lp_task_event *f, lp_error *err)
{
    mt_proc *pp, *cp;
    size_t i;

    if (f->pid == f->ppid)
        return 0; /* a new thread shares its process's maps */
    pp = mt_proc_find(m->procs, f->ppid);
    cp = mt_proc_find(m->procs, f->pid);
    if (cp)
        cp->maps.n = 0; /* a reused pid: the old process is gone */
    if (!pp || pp->maps.n == 0)
        return 0;
    if (!(cp = mt_proc_findnew(&m->procs, f->pid, sizeof(am_map))) ||
        mt_copy(&cp->maps, &pp->maps) < 0)
        return lp_error_set(err, LP_ENOMEM, "address map: out of memory");
    for (i = 0; m->o.pid_filter == (int64_t)f->pid && i < cp->maps.n; i++)
        m->bins[((const am_map *)mt_at(&cp->maps, i))->bin].loaded = true;
    return 0;
}

/* ---- public API -------------------------------------------------------------------- */

static void init_bin(am_bin *ab, lp_binary *b)
{
    const lp_segment *segs;

    ab->b = b;
    ab->path = lp_binary_path(b);
    ab->base = basename(ab->path);
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

static void free_files(lp_addrmap *m)
{
    am_file *f, *tf;
    am_hdr_bid *e, *ne;

    HASH_ITER(hh, m->files, f, tf) {
        HASH_DEL(m->files, f);
        for (e = f->ids; e; e = ne) {
            ne = e->next;
            free(e);
        }
        free(f);
    }
}

void lp_addrmap_free(lp_addrmap *m)
{
    am_warned *w, *tw;
    size_t i;

    if (!m)
        return;
    mt_proc_free_all(&m->procs);
    free_files(m);
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

    m->changes += n > 0;
    for (i = 0; i < n; i++)
        if (ids[i].size > 0 && add_one_build_id(m, &ids[i]))
            return lp_error_set(err, LP_ENOMEM, "address map: out of memory");
    return 0;
}

int lp_addrmap_event(lp_addrmap *m, const lp_event *ev, lp_error *err)
{
    switch (ev->kind) {
    case LP_EV_MMAP: m->changes++; return on_mmap(m, ev, err);
    case LP_EV_COMM: m->changes++; on_exec(m, &ev->u.comm); return 0;
    case LP_EV_FORK: m->changes++; return on_fork(m, &ev->u.task, err);
    default: return 0; /* EXIT keeps the maps: see the header */
    }
}

void lp_addrmap_next_input(lp_addrmap *m)
{
    mt_proc_free_all(&m->procs);
    free_files(m);
    m->changes++;
}

uint64_t lp_addrmap_changes(const lp_addrmap *m)
{
    return m->changes;
}

void lp_addrmap_finish(lp_addrmap *m)
{
    const am_bin *b;

    for (b = m->bins + m->o.kernel; b < m->bins + m->nbins; b++)
        if (!b->loaded)
            lp_warnf(m->o.warn, m->o.warn_ctx, "no mmap in the trace matched %s "
                     "(by build-id %s, path or basename %s): none of its "
                     "samples can be used", b->path,
                     b->nbid ? lp_binary_build_id_hex(b->b) : "(none)", b->base);
}

int lp_addrmap_resolve(const lp_addrmap *m, uint32_t pid, uint64_t addr,
                       uint64_t *vaddr)
{
    const mt_proc *p;
    const am_map *mp;

    if (m->o.single_base || pid == LP_ADDRMAP_ANY_PID)
        return sb_resolve(m, addr, vaddr);
    if (m->o.kernel && sb_in(&m->bins[0], addr, vaddr))
        return 0; /* the kernel: in every process, llvm-profgen's base */
    if ((m->o.pid_filter >= 0 && (int64_t)pid != m->o.pid_filter) ||
        !(p = mt_proc_find(m->procs, pid)) || !(mp = mt_find(&p->maps, addr)))
        return -1;
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
    const mt_proc *p = mt_proc_find(m->procs, pid);

    return p ? p->maps.n : 0;
}
