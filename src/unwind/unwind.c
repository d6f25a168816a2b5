/*
 * unwind.c - the unwinder object: options, life cycle, the binaries' address
 * facts (a direct-mapped cache over the binary loader, addresses encoded
 * with their binary), mmap events under llvm-profgen's single-base rule and
 * every mapping of the trace (to read code bytes: is a return address a
 * signal restorer, is it mapped at all), and batches of pending distinct
 * samples - unwound at the flush, or recorded ahead in idle time
 * (lp_unwind_warm_next) and replayed there with their final counts.
 * Does not own sample parsing (intake.c), unwinding (trie.c), contexts
 * (collect.c) or warnings (warn.c).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/phases.h"
#include "unwind/uw_internal.h"
#include "util/grow.h"
#include "util/zalloc.h"
#include "util/hash.h"

void lp_unwind_opts_default(lp_unwind_opts *o)
{
    memset(o, 0, sizeof *o);
    o->pid_filter = -1;
    o->compress_recursion = -1;
    o->max_context_depth = -1;
    o->max_unsym_depth = -1;
    o->repair_frames = true;
}

/* ---- small containers ------------------------------------------------------ */

int uw_grow_slow(void **v, size_t *cap, size_t n, size_t elem)
{
    size_t bytes = *cap * elem;

    if (lp_grow_bytes(v, &bytes, n * elem, 64 * elem))
        return -1;
    *cap = bytes / elem;
    return 0;
}

int uw_set_add(uw_set64 **set, uint64_t v)
{
    uw_set64 *e;

    HASH_FIND(hh, *set, &v, sizeof v, e);
    if (e)
        return 0;
    if (!(e = calloc(1, sizeof *e)))
        return -1;
    e->v = v;
    HASH_ADD(hh, *set, v, sizeof e->v, e);
    return 0;
}

/* ---- open-addressing maps (uw_map) ------------------------------------------ */

/* A map starts narrow (16-byte slots: k2 and the values in 32 bits) when
 * its first key and value fit, and is made wide (24-byte slots) by the
 * first that does not: the context cache's prefix, leaf and signature
 * maps and the LBR pairs of SQLite stay narrow, two thirds of their
 * bytes (~1 MB of the flush's end, the run's peak, over both threads);
 * the maps of pointers (contexts, splits) are wide from the start. */
static bool fits_narrow(const uw_map *m, uint64_t k2, uint64_t v)
{
    return !m->wide_only && k2 <= UINT32_MAX && v <= UINT32_MAX;
}

static uw_slot3 *map_slot(const uw_map *m, uint64_t k1, uint64_t k2)
{
    size_t i = (size_t)uw_mix(k1, k2) & m->mask;

    while (m->s[i].v && (m->s[i].k1 != k1 || m->s[i].k2 != k2))
        i = (i + 1) & m->mask;
    return &m->s[i];
}

static uw_slot2 *narrow_slot(const uw_map *m, uint64_t k1, uint32_t k2)
{
    size_t i = (size_t)uw_mix(k1, k2) & m->mask;

    while (m->ns[i].v && (m->ns[i].k1 != k1 || m->ns[i].k2 != k2))
        i = (i + 1) & m->mask;
    return &m->ns[i];
}

/* The i-th slot of either layout as a wide one (v == 0: empty). */
static uw_slot3 slot_at(const uw_map *m, size_t i)
{
    return m->narrow ? (uw_slot3){m->ns[i].k1, m->ns[i].k2, m->ns[i].v} : m->s[i];
}

uint64_t uw_map_get(const uw_map *m, uint64_t k1, uint64_t k2)
{
    if (!m->s)
        return 0;
    if (m->narrow)
        return k2 <= UINT32_MAX ? narrow_slot(m, k1, (uint32_t)k2)->v : 0;
    return map_slot(m, k1, k2)->v;
}

/* m's entries into new slots: n of them (0: as many), narrow or not. */
static int rehash(uw_map *m, size_t n, bool narrow)
{
    uw_map g = *m;
    size_t i;

    g.narrow = narrow;
    g.mask = (n ? n : m->mask + 1) - 1;
    if (!(g.s = lp_zalloc_written((g.mask + 1) * (narrow ? sizeof *g.ns : sizeof *g.s))))
        return -1;
    for (i = 0; m->s && m->narrow && i <= m->mask; i++) {
        uw_slot2 e = m->ns[i];
        if (e.v && narrow)
            *narrow_slot(&g, e.k1, e.k2) = e;
        else if (e.v)
            *map_slot(&g, e.k1, e.k2) = (uw_slot3){e.k1, e.k2, e.v};
    }
    for (i = 0; m->s && !m->narrow && i <= m->mask; i++)
        if (m->s[i].v)          /* a wide map is never made narrow */
            *map_slot(&g, m->s[i].k1, m->s[i].k2) = m->s[i];
    free(m->s);
    *m = g;
    return 0;
}

/* Insert a key known to be absent; v != 0. 0 or -1. The map doubles at
 * 3/4 full (it was 1/2: the maps are ~11 MB of the end of the flush, the
 * run's peak; SQLite line 82 -> 78 MB for ~0.3% more instructions, the
 * longer probes). */
int uw_map_put(uw_map *m, uint64_t k1, uint64_t k2, uint64_t v)
{
    bool fits = fits_narrow(m, k2, v);

    if (!m->s) {
        if (rehash(m, 1024, fits))
            return -1;
    } else if ((m->count + 1) * 4 > (m->mask + 1) * 3) {
        if (rehash(m, (m->mask + 1) * 2, m->narrow && fits))
            return -1;
    } else if (m->narrow && !fits && rehash(m, 0, false)) {
        return -1;
    }
    if (m->narrow)
        *narrow_slot(m, k1, (uint32_t)k2) = (uw_slot2){k1, (uint32_t)k2, (uint32_t)v};
    else
        *map_slot(m, k1, k2) = (uw_slot3){k1, k2, v};
    m->count++;
    return 0;
}

int uw_map_add(uw_map *m, uint64_t k1, uint64_t k2, uint64_t n)
{
    uw_slot2 *t;
    uw_slot3 *s;
    uint64_t v;

    if (m->s && !m->narrow && (s = map_slot(m, k1, k2))->v) {
        s->v = lp_sat_add(s->v, n);
        return 0;
    }
    if (m->s && m->narrow && k2 <= UINT32_MAX &&
        (t = narrow_slot(m, k1, (uint32_t)k2))->v) {
        if ((v = lp_sat_add(t->v, n)) <= UINT32_MAX) {
            t->v = (uint32_t)v;
            return 0;
        }
        if (rehash(m, 0, false))
            return -1;
        map_slot(m, k1, k2)->v = v;
        return 0;
    }
    return n ? uw_map_put(m, k1, k2, n) : 0;
}

int uw_map_add_all(uw_map *dst, const uw_map *src)
{
    size_t i;

    for (i = 0; src->s && i <= src->mask; i++) {
        uw_slot3 e = slot_at(src, i);
        if (e.v && uw_map_add(dst, e.k1, e.k2, e.v))
            return -1;
    }
    return 0;
}

static int slot_cmp(const void *x, const void *y)
{
    const uw_slot3 *a = x, *b = y;

    if (a->k1 != b->k1)
        return a->k1 < b->k1 ? -1 : 1;
    return a->k2 < b->k2 ? -1 : a->k2 > b->k2;
}

uw_slot3 *uw_map_list(const uw_map *m, bool sort)
{
    uw_slot3 *v = malloc((m->count ? m->count : 1) * sizeof *v);
    size_t i, k = 0;

    if (!v)
        return NULL;
    for (i = 0; m->s && i <= m->mask; i++) {
        uw_slot3 e = slot_at(m, i);
        if (e.v)
            v[k++] = e;
    }
    if (sort)
        qsort(v, k, sizeof *v, slot_cmp);
    return v;
}

int uw_note_add(uw_note **set, uint64_t a, uint64_t b, uint64_t n)
{
    uint64_t k[2] = {a, b};
    uw_note *e;

    HASH_FIND(hh, *set, k, sizeof k, e);
    if (!e) {
        if (!(e = calloc(1, sizeof *e)))
            return -1;
        memcpy(e->k, k, sizeof k);
        HASH_ADD(hh, *set, k, sizeof e->k, e);
    }
    e->count = lp_sat_add(e->count, n);
    return 0;
}

#define FREE_TABLE(head, type)                      \
    do {                                            \
        type *e_, *t_;                              \
        HASH_ITER(hh, head, e_, t_) {               \
            HASH_DEL(head, e_);                     \
            free(e_);                               \
        }                                           \
    } while (0)

/* ---- mapped files: is an address a signal restorer? ------------------------- */

static void close_files(lp_unwinder *u)
{
    uw_file *f, *t;

    HASH_ITER(hh, u->files, f, t) {
        HASH_DEL(u->files, f);
        if (f->fd >= 0)
            close(f->fd);
        free(f);
    }
}

/* Remember an mmap event (any file, any process). -1 on OOM. */
static int add_map(lp_unwinder *u, const lp_mmap_event *m)
{
    size_t n = strlen(m->filename) + 1;
    char *p;

    if (uw_grow((void **)&u->maps, &u->maps_cap, u->nmaps + 1, sizeof *u->maps) ||
        !(p = lp_arena_alloc(&u->cache_arena, n)))
        return -1;
    memcpy(p, m->filename, n);
    u->maps[u->nmaps++] = (uw_mmap){m->pid, m->start, m->start + m->len,
                                   m->pgoff, p};
    FREE_TABLE(u->restorers, uw_note); /* what is mapped where has changed */
    return 0;
}

/* The newest mapping of the process holding rt; of any process when it
 * has none (a forked child, or perf script text without pids). */
const uw_mmap *uw_find_map(const lp_unwinder *u, uint64_t rt)
{
    const uw_mmap *any = NULL;
    size_t i;

    for (i = u->nmaps; i-- > 0;) {
        const uw_mmap *m = &u->maps[i];
        if (rt < m->start || rt >= m->end)
            continue;
        if (m->pid == u->pid)
            return m;
        if (!any)
            any = m;
    }
    return any;
}

static int file_fd(lp_unwinder *u, const char *path)
{
    uw_file *f;

    HASH_FIND_STR(u->files, path, f);
    if (f)
        return f->fd;
    if (HASH_COUNT(u->files) >= 64)
        close_files(u);
    if (!(f = calloc(1, sizeof *f)))
        return -1;
    f->path = path;             /* lives in the cache arena */
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    HASH_ADD_KEYPTR(hh, u->files, f->path, strlen(f->path), f);
    return f->fd;
}

static bool read_restorer(lp_unwinder *u, uint64_t rt)
{
    /* mov $0xf,%rax; syscall  and  mov $0xf,%eax; syscall */
    static const unsigned char rax[9] = {0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05};
    static const unsigned char eax[7] = {0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05};
    const uw_mmap *m = uw_find_map(u, rt);
    unsigned char b[9];
    ssize_t n;
    int fd;

    if (!m || m->path[0] != '/' || (fd = file_fd(u, m->path)) < 0)
        return false;
    n = pread(fd, b, sizeof b, (off_t)(rt - m->start + m->pgoff));
    return (n >= 9 && memcmp(b, rax, 9) == 0) ||
           (n >= 7 && memcmp(b, eax, 7) == 0);
}

/* What the trace says about a runtime address outside the binaries,
 * cached per (process, address): 1 looked up, 2 a restorer, 4 mapped. */
static unsigned ext_facts(lp_unwinder *u, uint64_t rt)
{
    uint64_t k[2] = {u->pid, rt};
    unsigned f;
    uw_note *e;

    HASH_FIND(hh, u->restorers, k, sizeof k, e);
    if (e)
        return (unsigned)e->count;
    f = 1 | (read_restorer(u, rt) ? 2 : 0) | (uw_find_map(u, rt) ? 4 : 0);
    uw_note_add(&u->restorers, u->pid, rt, f);
    return f;
}

bool uw_is_mapped(lp_unwinder *u, uint64_t rt)
{
    return !u->other_maps || (ext_facts(u, rt) & 4);
}

bool uw_is_restorer(lp_unwinder *u, uint64_t rt)
{
    return ext_facts(u, rt) & 2;
}

/* ---- life cycle -------------------------------------------------------------- */

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');

    return s ? s + 1 : p;
}

lp_unwinder *lp_unwind_new(lp_binary *const *bins, size_t nbins,
                           const lp_unwind_opts *o, lp_error *err)
{
    lp_unwinder *u;
    const lp_segment *segs;

    if (nbins == 0 || nbins > ((size_t)1 << (64 - UW_BIN_SHIFT))) {
        lp_error_set(err, LP_EUSAGE, "unwinder: %zu binaries (1 to %zu)", nbins,
                     (size_t)1 << (64 - UW_BIN_SHIFT));
        return NULL;
    }
    if (!(u = calloc(1, sizeof *u)) ||
        !(u->bins = malloc(nbins * sizeof *u->bins)) ||
        !(u->ainfo = lp_zalloc_written(UW_AC_SIZE)) ||
        !(u->root_entries = calloc(nbins, sizeof *u->root_entries)) ||
        !(u->cc = lp_ctxcount_new())) {
        lp_unwind_free(u);
        lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        return NULL;
    }
    lp_ctxcount_borrow_names(u->cc);    /* frames' names are the binaries' */
    u->splits.wide_only = true; /* parallel.c reads its slots */
    memcpy(u->bins, bins, nbins * sizeof *bins);
    u->nbins = nbins;
    u->bin = bins[0];
    if (o)
        u->o = *o;
    else
        lp_unwind_opts_default(&u->o);
    if (!u->o.max_pending_bytes)
        u->o.max_pending_bytes = (size_t)1 << 30;
    u->fs_disc = lp_binary_fs_discriminator(u->bin);
    u->preferred = u->base = lp_binary_preferred_base(u->bin);
    if (lp_binary_exec_segments(u->bin, &segs) > 0)
        u->text_offset = segs[0].offset & ~(uint64_t)0xfff;
    u->name = base_name(lp_binary_path(u->bin));
    return u;
}

/* What each unwinding thread has of its own (parallel.c's workers too):
 * scratch, caches, the context table, statistics' notes. */
void uw_free_own(lp_unwinder *u)
{
    free(u->splits.s);          /* the splits live in the cache arena */
    free(u->ctxc.pfx.s);
    free(u->ctxc.leaf.s);
    free(u->ctxc.dedup.s);
    free(u->ctxc.ctx.s);
    free(u->ctxc.sigs);
    free(u->ctxc.ids);
    free(u->ctxc.stk_fr);
    free(u->ctxc.cf);
    free(u->ctxc.cf_pos);
    lp_arena_free(&u->cache_arena);
    FREE_TABLE(u->invalid_ret, uw_set64);
    free(u->pairs.s);
    FREE_TABLE(u->notes_repaired, uw_note);
    FREE_TABLE(u->notes_dropped, uw_note);
    FREE_TABLE(u->notes_contextless, uw_note);
    FREE_TABLE(u->notes_lost, uw_note);
    lp_ctxcount_free(u->cc);
    free(u->ainfo);
    free(u->canon);
    free(u->ft);
    free(u->root_entries);
    free(u->cs);
    free(u->kst);
    free(u->lbr);
    free(u->nodes);
    free(u->recs);
    free(u->kids);
    free(u->stk);
    free(u->frames);
    free(u->akey);
    free(u->pieces);
}

/* The pending samples the flush has not freed (all of them, between
 * flushes). */
static void free_pending(lp_unwinder *u)
{
    uw_agg *g = u->agg, *t;

    uw_agg_clear(u);
    for (; g; g = t) {
        t = g->next;
        free(g);
    }
    u->agg_bytes = 0;
}

void lp_unwind_free(lp_unwinder *u)
{
    if (!u)
        return;
    lp_leaf_cache_free(u->leaves);
    uw_infer_free(u);
    uw_cfi_free(u);
    free_pending(u);
    free(u->replays);
    free(u->effs);
    FREE_TABLE(u->restorers, uw_note);
    close_files(u);
    free(u->maps);
    free(u->bins);
    free(u->memo);
    free(u->dig);
    free(u->enc);
    uw_free_own(u);
    free(u);
}

void lp_unwind_next_input(lp_unwinder *u)
{
    u->memo_gen++;              /* dup_ids and pids are the new trace's */
}

void lp_unwind_set_total_samples(lp_unwinder *u, uint64_t n)
{
    u->total_samples = n;
    u->total_set = true;
}

const lp_unwind_stats *lp_unwind_stats_get(const lp_unwinder *u)
{
    return &u->st;
}

/* ---- address facts ------------------------------------------------------------ */

static size_t slot_of(uint64_t a)
{
    return lp_hash_fib(a, UW_AC_BITS);
}

lp_binary *uw_bin(const lp_unwinder *u, uint64_t a)
{
    return u->bins[uw_bin_of(a) < u->nbins ? uw_bin_of(a) : 0];
}

const lp_func_range *uw_func_range(const lp_unwinder *u, uint64_t a)
{
    return a > UW_LAST_SENTINEL ? lp_binary_func_range(uw_bin(u, a), uw_va(a)) : NULL;
}

static int fallthrough(lp_unwinder *u, uint64_t a, uint64_t b, lp_error *err)
{
    int v;

    uw_lock(u);
    v = lp_binary_valid_fallthrough(uw_bin(u, a), uw_va(a), uw_va(b), err);
    uw_unlock(u);
    return v;
}

/* The binary's answer through u's cache (an answer depends only on the
 * binary's code; errors are not kept). The probe path asks this for
 * every range of every distinct sample: ~2.3 M times on SQLite, a few
 * 10,000 distinct ranges, each a locked walk over the instructions. */
int uw_valid_range(lp_unwinder *u, uint64_t a, uint64_t b, lp_error *err)
{
    uw_ftslot *f;
    int v;

    if (!u->ft && !(u->ft = lp_zalloc_written(UW_FT_SIZE * sizeof *u->ft)))
        return fallthrough(u, a, b, err);
    f = &u->ft[(size_t)(uw_mix(a, b) & (UW_FT_SIZE - 1))];
    if (f->known && f->a == a && f->b == b)
        return f->ok;
    if ((v = fallthrough(u, a, b, err)) < 0)
        return v;
    *f = (uw_ftslot){a, b, true, v == 1};
    return v;
}

bool uw_fallthrough(lp_unwinder *u, uint64_t a, uint64_t b)
{
    if (a == UW_EXT || b == UW_EXT)
        return a == b;
    if (a <= UW_LAST_SENTINEL || b <= UW_LAST_SENTINEL || uw_bin_of(a) != uw_bin_of(b))
        return false;
    return uw_valid_range(u, a, b, NULL) == 1;
}

static bool inst(lp_unwinder *u, uint64_t vaddr, lp_inst *in)
{
    int k;

    uw_lock(u);
    k = lp_binary_inst(uw_bin(u, vaddr), uw_va(vaddr), in, NULL);
    uw_unlock(u);
    return k == 1;
}

uw_ainfo *uw_addr_peek(lp_unwinder *u, uint64_t vaddr)
{
    uw_ainfo *e = &u->ainfo[slot_of(vaddr)];

    return (e->flags & UW_AI_VALID) && e->addr == vaddr ? e : NULL;
}

uw_ainfo *uw_addr(lp_unwinder *u, uint64_t vaddr)
{
    uw_ainfo *e = &u->ainfo[slot_of(vaddr)];
    lp_inst in;

    if ((e->flags & UW_AI_VALID) && e->addr == vaddr)
        return e;
    memset(e, 0, sizeof *e);
    e->addr = vaddr;
    e->flags = UW_AI_VALID;
    if (vaddr > UW_EXT && uw_bin_of(vaddr) < u->nbins && inst(u, vaddr, &in)) {
        e->flags |= UW_AI_CODE;
        if (in.kind == LP_INST_CALL)
            e->flags |= UW_AI_CALL;
        else if (in.kind == LP_INST_RET)
            e->flags |= UW_AI_RET;
    }
    return e;
}

/* getCallAddrFromFrameAddr: ExternalAddr stays external; otherwise the
 * instruction before addr if it is a call, else 0. */
uint64_t uw_callsite(lp_unwinder *u, uint64_t vaddr)
{
    uw_ainfo *e;
    uint64_t cs = 0;
    int k;

    if (vaddr == UW_EXT)
        return UW_EXT;
    e = uw_addr(u, vaddr);
    if (!(e->flags & UW_AI_CS)) {
        uw_lock(u);
        k = lp_binary_call_site(uw_bin(u, vaddr), uw_va(vaddr), &cs, NULL);
        uw_unlock(u);
        if (k != 1)
            cs = 0;
        else
            cs = uw_enc(uw_bin_of(vaddr), cs);
        e = uw_addr(u, vaddr);  /* the slot may have been reused meanwhile */
        e->callsite = cs;
        e->flags |= UW_AI_CS;
    }
    return e->callsite;
}

bool uw_in_prolog_epilog(lp_unwinder *u, uint64_t vaddr)
{
    uw_ainfo *e = uw_addr(u, vaddr);
    bool in;

    if (!(e->flags & UW_AI_PE)) {
        uw_lock(u);
        in = lp_binary_in_prolog_epilog(uw_bin(u, vaddr), uw_va(vaddr));
        uw_unlock(u);
        e = uw_addr(u, vaddr);
        e->flags |= UW_AI_PE | (in ? UW_AI_IN_PE : 0);
    }
    return e->flags & UW_AI_IN_PE;
}

enum lp_uw_leaf uw_leaf_state(lp_unwinder *u, uint64_t vaddr)
{
    uw_ainfo *e = uw_addr(u, vaddr);
    enum lp_uw_leaf s;

    if (!e->leaf) {
        uw_lock(u);
        if (!u->leaves && !(u->leaves = lp_leaf_cache_new(NULL))) {
            uw_unlock(u);
            return LP_UW_LEAF_UNKNOWN;
        }
        s = uw_classify_leaf(uw_bin(u, vaddr), u->leaves, uw_va(vaddr));
        uw_unlock(u);
        e = uw_addr(u, vaddr);
        e->leaf = (uint8_t)(s + 1);
    }
    return (enum lp_uw_leaf)(e->leaf - 1);
}

/* ---- mmap events (updateBinaryAddress) ----------------------------------------- */

/* The other executable segments must follow the first one at the same
 * distance as in the file. */
static int check_other_segment(lp_unwinder *u, const lp_mmap_event *m,
                               lp_error *err)
{
    const lp_segment *segs;
    size_t n = lp_binary_exec_segments(u->bin, &segs), i;
    uint64_t off, prev = 0;
    bool have_prev = false;

    for (i = 0; i < n; i++) {
        off = segs[i].offset & ~(uint64_t)0xfff;
        if (off == m->pgoff) {
            if ((segs[i].vaddr & ~(uint64_t)0xfff) - u->preferred !=
                m->start - u->base)
                return lp_error_set(err, LP_EFORMAT, "%s: Executable segments "
                                    "not loaded consecutively", m->filename);
            return 0;
        }
        if (off < m->pgoff) {
            prev = off;
            have_prev = true;
        }
    }
    if (!have_prev)
        return lp_error_set(err, LP_EFORMAT, "%s: File offset not found "
                            "(mmap pgoff 0x%" PRIx64 ")", m->filename, m->pgoff);
    if (m->pgoff - prev != m->start - u->base)
        return lp_error_set(err, LP_EFORMAT, "%s: Segment not loaded by "
                            "consecutive mmaps", m->filename);
    return 0;
}

int lp_unwind_mmap(lp_unwinder *u, const lp_mmap_event *m, lp_error *err)
{
    bool mine;

    u->memo_gen++;              /* addresses may canonicalize differently */
    if (!m->filename)
        return 0;
    if (u->o.repair_frames && add_map(u, m))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    mine = u->o.kernel ? lp_addrmap_kernel_image(m->filename)
                       : strcmp(base_name(m->filename), u->name) == 0;
    if (!mine)
        u->other_maps = true;
    if (u->o.map || !mine)
        return 0;
    if (u->o.pid_filter >= 0 && (int64_t)m->pid != u->o.pid_filter)
        return 0;
    if (m->start == u->base) {
        u->loaded_by_mmap = true;
        return 0;
    }
    if (u->o.kernel || m->pgoff == u->text_offset) {
        u->base = m->start;
        u->loaded_by_mmap = true;
        return 0;
    }
    return check_other_segment(u, m, err);
}

/* ---- batches --------------------------------------------------------------------- */

/* The pending samples in llvm-profgen's unwinding order: its
 * AggregatedSamples is a std::unordered_map keyed by PerfSample's hash,
 * filled in order of first occurrence (ours: the uthash's order). The
 * order decides which sample creates a context first, whose leaf gives
 * the context its WasLeafInlined (ContextWasInlined) when two leaves, one
 * inlined and one not, have the same context: each sample's place in it
 * is set (pos), for samples unwound out of that order (recorded ahead
 * and replayed first, or on two threads). NULL on OOM; *n the count;
 * *ins the samples in insertion order (the inference learns them in that
 * order), or NULL on OOM. */
static uw_agg **flush_order(lp_unwinder *u, size_t *n, uw_agg ***ins)
{
    size_t m = u->nagg, i = 0;
    uw_agg **v = malloc((m ? m : 1) * sizeof *v), **w = NULL, *g;
    uint64_t *keys = malloc((m ? m : 1) * sizeof *keys);
    int32_t *order = malloc((m ? m : 1) * sizeof *order);
    int rc = -1;

    if (v && keys && order && (w = malloc((m ? m : 1) * sizeof *w))) {
        for (g = u->agg; g; g = g->next) {
            keys[i] = g->djb;
            v[i++] = g;
        }
        rc = uw_umap_order(keys, m, order);
        for (i = 0; rc == 0 && i < m; i++)
            w[i] = v[order[i]];
    }
    if (rc == 1) {              /* beyond the emulated sizes: as inserted */
        memcpy(w, v, m * sizeof *v);
        rc = 0;
    }
    for (i = 0; rc == 0 && i < m; i++)
        w[i]->pos = (uint32_t)i;
    free(keys);
    free(order);
    if (rc) {
        free(v);
        free(w);
        return NULL;
    }
    *n = m;
    *ins = v;
    return w;
}

/* ---- recording ahead, replaying at the flush (uw_replay) ------------------- */

int uw_eff_add(lp_unwinder *u, uint32_t kind, lp_ctx_entry *e, uint64_t a,
               uint64_t b)
{
    if ((u->neffs + 1) * sizeof *u->effs > UW_REPLAY_BYTES) {
        u->replay_full = true;
        return -1;
    }
    if (uw_grow((void **)&u->effs, &u->effs_cap, u->neffs + 1, sizeof *u->effs))
        return -1;
    u->effs[u->neffs++] = (uw_eff){e, a, b, kind};
    return 0;
}

/* Unwind g (decoded in u->cs, u->lbr) now, recording what its count
 * multiplies. The rest - statistics counted once per unwinding, contexts,
 * caches - is done for good, so a recording that fails is undone. */
static int record(lp_unwinder *u, uw_agg *g, size_t ncs, size_t nlbr)
{
    lp_unwind_stats before = u->st;
    bool untracked = u->untracked_ext;
    uw_replay r = {u->neffs, 0, 0, 0, 0, 0, 0, 0};
    lp_error err;
    int rc;

    if (uw_grow((void **)&u->replays, &u->replays_cap, u->nreplays + 1,
                sizeof *u->replays))
        return -1;
    u->rec = &r;
    rc = uw_unwind_one(u, u->cs, ncs, u->lbr, nlbr, 1, &err);
    u->rec = NULL;
    if (rc) {
        u->st = before;
        u->untracked_ext = untracked;
        u->neffs = r.first;
        return -1;
    }
    r.n = u->neffs - r.first;
    g->replay = (int32_t)u->nreplays;
    u->replays[u->nreplays++] = r;
    return 0;
}

/* The recordings and their effects (up to UW_REPLAY_BYTES), once every
 * one is replayed. */
void uw_replays_free(lp_unwinder *u)
{
    free(u->replays);
    free(u->effs);
    u->replays = NULL;
    u->effs = NULL;
    u->nreplays = u->replays_cap = u->neffs = u->effs_cap = 0;
}

/* What uw_unwind_one would add with count n, from its recording. */
static int replay(lp_unwinder *u, const uw_replay *r, uint64_t n,
                  lp_error *err)
{
    /* a recording without effects may have none allocated (NULL) */
    const uw_eff *x = r->n ? u->effs + r->first : NULL, *end = r->n ? x + r->n : NULL;
    int rc = 0;

    u->st.contextless += r->contextless * n;
    u->st.signal_frames += r->signal_frames * n;
    u->st.nonlocal += r->nonlocal * n;
    u->st.interrupted += r->interrupted * n;
    if (r->lost) {
        u->st.lost += r->lost * n;
        u->st.lost_records = lp_sat_add(u->st.lost_records, r->lost_records * n);
    }
    for (; x < end && rc == 0; x++)
        switch (x->kind) {
        case UW_EFF_RANGE:
            rc = lp_counters_add_range(x->e->counters, x->a, x->b, n);
            break;
        case UW_EFF_BRANCH:
            rc = lp_counters_add_branch(x->e->counters, x->a, x->b, n);
            break;
        case UW_EFF_NOTE_LOST:
            rc = uw_note_add(&u->notes_lost, x->a, x->b, n);
            break;
        case UW_EFF_LEAF:
            lp_ctx_entry_leaf(x->e, x->a != 0, u->rank);
            break;
        default:
            rc = uw_note_add(&u->notes_contextless, x->a, x->b, n);
        }
    return rc ? lp_error_set(err, LP_ENOMEM, "unwinder: out of memory") : 0;
}

int uw_flush_one(lp_unwinder *u, const uw_agg *g, lp_error *err)
{
    size_t ncs, nlbr;

    uw_decode(u, g, &ncs, &nlbr);
    u->st.distinct++;
    /* recorded ahead or not, on either thread: the contexts' first leaf
     * is the one of the lowest rank */
    u->rank = uw_owner(u)->flushes << 32 | g->pos;
    if (uw_note_pairs(u, u->lbr, nlbr, g->repeat))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    u->st.replayed += g->replay >= 0;
    return g->replay >= 0 ? replay(u, &u->replays[g->replay], g->repeat, err)
                          : uw_unwind_one(u, u->cs, ncs, u->lbr, nlbr, g->repeat, err);
}

/* v[i] is unwound: freed now, unless the inference may still read every
 * sample of the flush (infer.c's add_pending, at most once per flush, and
 * only with the repair: it fills holes); then at the end of the flush.
 * Their memory goes to the contexts and counters the rest of the flush
 * makes: the samples were the largest part of the end of the flush, the
 * run's peak. */
void uw_agg_done(lp_unwinder *u, uw_agg **v, size_t i)
{
    const lp_unwinder *o = uw_owner(u);
    bool pending = o->o.repair_frames && /* cleared once, a release store */
                   __atomic_load_n(&o->infer_pending, __ATOMIC_ACQUIRE);

    if (!pending) {
        free(v[i]);
        v[i] = NULL;
    }
}

/* The samples recorded ahead, replayed before any other is unwound: v is
 * reordered, the others first in their order (*left of them), then the
 * recorded ones, which are replayed here. Their recordings (up to
 * UW_REPLAY_BYTES of effects) are then freed once no more are made,
 * before the unwinding's contexts and counters grow: they were alive to
 * the end of the flush, the run's peak (sqlite-line: 4 MB). A replay
 * only adds counts, statistics and notes, none of which depends on the
 * order it is added in; unwinding order is kept. */
static int replay_first(lp_unwinder *u, uw_agg **v, size_t m, size_t *left,
                        lp_error *err)
{
    size_t nr = 0, k = 0, i;
    uw_agg **rec;
    int rc = 0;

    *left = m;
    for (i = 0; i < m; i++)
        nr += v[i]->replay >= 0;
    if (!nr || !(rec = malloc(nr * sizeof *rec)))
        return 0;               /* replayed in place (uw_flush_parallel) */
    for (i = 0, nr = 0; i < m; i++) {
        if (v[i]->replay >= 0)
            rec[nr++] = v[i];
        else
            v[k++] = v[i];
    }
    memcpy(v + k, rec, nr * sizeof *rec);
    free(rec);
    *left = k;
    for (i = k; i < m && rc == 0; i++)
        if ((rc = uw_flush_one(u, v[i], err)) == 0)
            uw_agg_done(u, v, i);
    if (rc == 0 && u->finished)
        uw_replays_free(u);
    return rc;
}

int uw_flush(lp_unwinder *u, lp_error *err)
{
    size_t m = 0, n = 0, i;
    uw_agg **ins = NULL, **v = flush_order(u, &m, &ins);
    int rc = 0;

    if (!v)
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    uw_agg_clear(u);            /* v holds them now (the table's slots
                                   are freed, not the samples) */
    if (!u->o.repair_frames) {  /* no hole: no inference */
        free(ins);
        ins = NULL;
    }
    u->flush_ins = ins;
    u->flush_n = m;
    /* the graphs learn these samples' calls when a hole needs them */
    u->infer_pending = u->o.repair_frames;
    if ((rc = replay_first(u, v, m, &n, err)) == 0 &&
        (rc = uw_flush_parallel(u, v, n, err)) == 1) {
        for (i = 0, rc = 0; i < n && rc == 0; i++) {
            if ((i & 4095) == 0)
                lp_phases_items(u->o.phases, i, n);
            if ((rc = uw_flush_one(u, v[i], err)) == 0)
                uw_agg_done(u, v, i);
        }
    }
    for (i = 0; i < m; i++)
        free(v[i]);             /* the ones the inference still needed */
    free(v);
    free(ins);
    u->flush_ins = NULL;
    u->flush_n = u->agg_bytes = 0;
    u->infer_pending = false;
    u->warmed = NULL;
    u->nreplays = u->neffs = 0;
    u->flushes++;
    u->memo_gen++;              /* the memo's aggregated samples are gone */
    return rc ? -1 : 0;
}

int lp_unwind_warm_next(lp_unwinder *u)
{
    uw_agg *g = u->warmed ? u->warmed->next : u->agg;
    size_t ncs, nlbr;

    if (u->finished || !g)
        return 0;
    uw_decode(u, g, &ncs, &nlbr);   /* the intake's scratch: free between samples */
    if (u->replay_full || record(u, g, ncs, nlbr))
        uw_warm(u, u->cs, ncs, u->lbr, nlbr);
    u->warmed = g;
    return 1;
}

lp_ctxcount *lp_unwind_finish(lp_unwinder *u, lp_error *err)
{
    lp_ctxcount *cc;

    if (u->finished) {
        lp_error_set(err, LP_EUSAGE, "unwinder: finished twice");
        return NULL;
    }
    u->finished = true;
    /* no sample comes in any more: the intake's memo (64 Ki slots, 4.7
     * MB) would stay alive through the flush, the peak of the run */
    free(u->memo);
    u->memo = NULL;
    if (uw_flush(u, err) || uw_emit_warnings(u, err))
        return NULL;
    cc = u->cc;
    u->cc = NULL;
    return cc;
}
