/*
 * aggregate.c - LBR-only sample aggregation as llvm-profgen 19's
 * PerfScriptReader/LBRPerfReader does it: LBR entries are resolved to
 * link-time addresses through an address map (the caller's, per process,
 * or our own single-base one: updateBinaryAddress), mapped to
 * LP_EXTERNAL_ADDR when they are not an instruction start of the binary
 * (external->external entries dropped),
 * then computeCounterFromLBR turns each sample into branch counts and the
 * fall-through ranges between consecutive entries, and warnInvalidRange
 * reports the odd ranges. Owns none of the parsing of perf data.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/flat.h"
#include "util/arena.h"
#include "util/grow.h"

typedef struct agg_cslot {
    uint64_t rt, c;             /* c: LP_EXTERNAL_ADDR when not code */
    uint32_t pid, gen;
} agg_cslot;

#define AGG_CS_BITS 14

/* A sample waiting to be counted: identical samples (same process, kind,
 * leaf and branch stack, raw addresses) are counted once with the sum of
 * their repeats, as llvm-profgen's AggregatedSamples does. They wait only
 * while the address map cannot change under them (see lp_lbr_agg_flush).
 * A sample is known by a 128-bit digest of its stacks (pend_id): the
 * caller's (lp_lbr_agg_set_id: the reader's lp_stacks_id, a text block's
 * dup_id) or the same lp_stacks_id_of() of its stacks, so a repeated
 * sample costs one probe of the table and no read of its arrays; a false
 * match needs a 128-bit collision, as for the unwinder's memo. */
enum pend_kind { PEND_LBR = 1, PEND_STACK = 2, PEND_IP = 3 };

typedef struct pend_id {
    uint64_t lo, hi;
    uint32_t pid, kind;
} pend_id;

typedef struct pend {           /* a waiting sample's stacks */
    uint64_t leaf;              /* stack leaf or IP (raw), else 0 */
    uint64_t n;                 /* branch entries that follow */
    uint64_t br[];              /* from, to, from, to, ... */
} pend;

typedef struct pend_ent {
    pend_id id;
    uint64_t repeat;
    uint64_t calls;             /* lp_lbr_agg_*_sample calls (leaf-external
                                   warning: counted per call) */
    pend *p;                    /* in the aggregator's arena */
    uint32_t pos;               /* its slot in the index */
} pend_ent;

typedef struct pend_slot {      /* idx 0: empty */
    uint32_t idx, tag;          /* v[idx - 1]; tag: id.hi's low bits */
} pend_slot;

/* The waiting samples: in arrival order, found through an open-addressing
 * index whose slots hold a tag of the digest, so a probe reads the
 * entries only on a likely match (the stacks, ~600 bytes each, live
 * apart and are read once, when counted). */
typedef struct pend_tab {
    pend_ent *v;
    uint32_t n, cap;
    pend_slot *slot;
    uint32_t mask;              /* slots - 1, 0: none yet */
} pend_tab;

/* Flush when the waiting keys exceed this. Most of a large input's
 * repeats are folded before they get here (the reader's tail, the
 * digests), so a larger window counts little less: at 32 MB, 16 and 8
 * sqlite line and probe flat took the same CPU and wall (one core and
 * two), and peaked at 52.6 / 40.7 / 39.8 MB (line), 54.0 / 37.0 / 31.3
 * (probe). */
#define PEND_MAX_BYTES (16u << 20)

struct lp_lbr_agg {
    lp_binary *bin;
    lp_lbr_agg_opts o;
    lp_addrmap *own_map;        /* single-base map when the caller gave none */
    const lp_addrmap *map;
    int bin_index;              /* of bin in map */
    uint32_t pid;               /* of the samples being fed */
    bool missing_warned;
    const char *name;           /* basename of the binary */
    lp_counters *c;
    /* every consecutive LBR pair (range start, end) with its count: the
     * warnings', and the ranges once each is checked (lp_lbr_agg_finish) */
    lp_counters *pairs;
    uint64_t nr_samples;
    pend_tab pending;
    /* the waiting stacks, in an arena reset and refilled after each
     * flush (a malloc and a free per waiting sample - ~90 k on
     * sqlite-line, with the page faults of the memory freed between the
     * flushes - were 6% of the main thread) */
    lp_arena store;
    size_t pending_bytes;
    lp_branch_entry *brs;       /* count_pending's scratch */
    size_t brs_cap;
    struct canon_entry *kept;   /* kept_entries' scratch */
    size_t kept_cap;
    lp_stacks_id next_id;       /* lp_lbr_agg_set_id: the next sample's */
    uint64_t next_calls;        /* lp_lbr_agg_set_calls: the next sample's */
    uint64_t *idw;              /* lp_stacks_id_of's scratch */
    size_t idw_cap;
    /* hybrid samples with their stacks ignored (HybridPerfReader's
     * leaf-external warning): samples, those with an external leaf, and
     * llvm-profgen's NumTotalSample when the caller knows it */
    uint64_t stack_calls, leaf_external, total_samples;
    bool total_set;
    /* canon()'s answers during one flush (the address map cannot change
     * within one): direct-mapped by process and address; gen 0 empty */
    struct agg_cslot *cslots;
    uint32_t flush_gen;         /* nonzero inside lp_lbr_agg_flush */
    uint32_t flush_gen_next;    /* the last one used */
};

lp_lbr_agg *lp_lbr_agg_new(lp_binary *bin, const lp_lbr_agg_opts *o,
                           lp_error *err)
{
    lp_lbr_agg *a = calloc(1, sizeof *a);
    lp_addrmap_opts mo = {true, -1, NULL, NULL};

    if (!a || !(a->c = lp_counters_new()) || !(a->pairs = lp_counters_new())) {
        if (a)
            lp_counters_free(a->c);
        free(a);
        lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
        return NULL;
    }
    a->bin = bin;
    if (o)
        a->o = *o;
    else
        a->o.pid_filter = -1;
    a->pid = LP_ADDRMAP_ANY_PID;
    a->name = basename(lp_binary_path(bin));
    if (a->o.map) {
        a->map = a->o.map;
        a->bin_index = a->o.bin_index;
        return a;
    }
    mo.pid_filter = a->o.pid_filter;
    mo.kernel = a->o.kernel;
    if (!(a->own_map = lp_addrmap_new(&bin, 1, &mo, err))) {
        lp_lbr_agg_free(a);
        return NULL;
    }
    a->map = a->own_map;
    return a;
}

static void drop_pending(lp_lbr_agg *a)
{
    pend_tab *t = &a->pending;
    uint32_t i;

    /* slot by slot: a flush comes before every address-map change, and
     * the index keeps the size of the largest batch of samples */
    for (i = 0; i < t->n; i++)
        t->slot[t->v[i].pos] = (pend_slot){0, 0};
    t->n = 0;
    lp_arena_reset(&a->store);
    a->pending_bytes = 0;
}

void lp_lbr_agg_free(lp_lbr_agg *a)
{
    if (!a)
        return;
    lp_counters_free(a->pairs);
    drop_pending(a);
    lp_arena_free(&a->store);
    free(a->brs);
    free(a->kept);
    free(a->pending.v);
    free(a->pending.slot);
    free(a->idw);
    free(a->cslots);
    lp_counters_free(a->c);
    lp_addrmap_free(a->own_map);
    free(a);
}

bool lp_lbr_agg_loaded_by_mmap(const lp_lbr_agg *a)
{
    return lp_addrmap_loaded(a->map, (size_t)a->bin_index);
}

uint64_t lp_lbr_agg_nr_samples(const lp_lbr_agg *a) { return a->nr_samples; }

void lp_lbr_agg_set_pid(lp_lbr_agg *a, uint32_t pid) { a->pid = pid; }

int lp_lbr_agg_mmap(lp_lbr_agg *a, const lp_mmap_event *m, lp_error *err)
{
    lp_event ev;

    if (!a->own_map)
        return 0;
    if (lp_lbr_agg_flush(a, err))
        return -1;
    memset(&ev, 0, sizeof ev);
    ev.kind = LP_EV_MMAP;
    ev.misc = LP_CPUMODE_USER;
    ev.u.mmap = *m;
    return lp_addrmap_event(a->own_map, &ev, err);
}

static uint64_t resolve(const lp_lbr_agg *a, uint64_t addr, bool *code)
{
    uint64_t c;

    *code = lp_addrmap_resolve(a->map, a->pid, addr, &c) == a->bin_index &&
            lp_binary_is_code(a->bin, c);
    return *code ? c : LP_EXTERNAL_ADDR;
}

/* resolve(), through a cache while a flush counts the pending samples: a
 * sample's 64 addresses are mostly ones seen before, and the lookups
 * (address map, instruction table) were a quarter of the flat path. */
static uint64_t canon(lp_lbr_agg *a, uint64_t addr, bool *code)
{
    size_t mask = ((size_t)1 << AGG_CS_BITS) - 1;
    uint64_t h = (addr ^ ((uint64_t)a->pid << 40)) * 0x9e3779b97f4a7c15ull;
    agg_cslot *s;

    if (!a->flush_gen || (!a->cslots && !(a->cslots = calloc(mask + 1, sizeof *a->cslots))))
        return resolve(a, addr, code);
    s = &a->cslots[(h >> 32) & mask];
    if (s->gen != a->flush_gen || s->rt != addr || s->pid != a->pid) {
        s->c = resolve(a, addr, code);
        s->rt = addr;
        s->pid = a->pid;
        s->gen = a->flush_gen;
    }
    *code = s->c != LP_EXTERNAL_ADDR;
    return s->c;
}

/* computeCounterFromLBR for one canonical entry (src, dst, codeness) with
 * `end` the newer entry's source. The range [dst, end] is counted once
 * per distinct pair, when the pairs are checked (lp_lbr_agg_finish). */
static int count_entry(lp_lbr_agg *a, uint64_t src, uint64_t dst, bool dst_code,
                       uint64_t end, uint64_t n, lp_error *err)
{
    if (dst_code && lp_counters_add_branch(a->c, src, dst, n))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    if (end != 0 && lp_counters_add_range(a->pairs, dst, end, n))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    return 0;
}

static void warn_missing_mmap(lp_lbr_agg *a)
{
    if (lp_lbr_agg_loaded_by_mmap(a) || a->missing_warned)
        return;
    lp_warnf(a->o.warn, a->o.warn_ctx, "No relevant mmap event is matched "
             "for %s, will use preferred address (0x%" PRIx64 ") as the base "
             "loading address!", a->name, lp_binary_preferred_base(a->bin));
    a->missing_warned = true;
}

typedef struct canon_entry {    /* an LBR entry after extractLBRStack */
    uint64_t src, dst;
    bool dst_code;
} canon_entry;

/* extractLBRStack's filtering: canonical entries, external -> external
 * dropped. Returns the number kept in *out (allocated), -1 on OOM. */
static long kept_entries(lp_lbr_agg *a, const lp_branch_entry *br, size_t n,
                         canon_entry **out)
{
    canon_entry *v;
    bool sc;
    size_t i;
    long k = 0;

    if (lp_grow_array(&a->kept, &a->kept_cap, n ? n : 1, sizeof *v, 64))
        return -1;
    v = a->kept;
    for (i = 0; i < n; i++) {
        v[k].src = canon(a, br[i].from, &sc);
        v[k].dst = canon(a, br[i].to, &v[k].dst_code);
        if (sc || v[k].dst_code)
            k++;
    }
    *out = v;
    return k;
}

/* `scale`: apply --sample-period (LBRPerfReader does, HybridPerfReader
 * does not) */
static int agg_sample(lp_lbr_agg *a, const lp_branch_entry *br, size_t n,
                      uint64_t repeat, bool scale, lp_error *err)
{
    canon_entry *v;
    uint64_t end = 0;
    long k = kept_entries(a, br, n, &v), i;
    int rc = 0;

    if (k < 0)
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    if (k > 0) {
        warn_missing_mmap(a);
        a->nr_samples += repeat;
        if (scale && a->o.has_sample_period) {
            repeat *= a->o.sample_period;
            if (k > 1)
                repeat /= (uint64_t)(k - 1);
        }
    }
    for (i = 0; i < k && rc == 0; i++) {
        rc = count_entry(a, v[i].src, v[i].dst, v[i].dst_code, end, repeat, err);
        end = v[i].src;
    }
    return rc;
}

static int count_ip(lp_lbr_agg *a, uint64_t ip, uint64_t repeat, lp_error *err)
{
    bool code;
    uint64_t c = canon(a, ip, &code);

    warn_missing_mmap(a);
    a->nr_samples += repeat;
    if (a->o.has_sample_period)
        repeat *= a->o.sample_period;
    if (code && lp_counters_add_range(a->c, c, c, repeat))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    return 0;
}

/* HybridPerfReader: drop the sample when its leaf is in a prolog/epilog */
static int count_stack(lp_lbr_agg *a, uint64_t leaf, const lp_branch_entry *br,
                       size_t n, uint64_t repeat, lp_error *err)
{
    bool code;
    uint64_t c = canon(a, leaf, &code);

    if (code && lp_binary_in_prolog_epilog(a->bin, c))
        return 0;
    return agg_sample(a, br, n, repeat, false, err);
}

/* ---- waiting samples ------------------------------------------------------ */

static int count_pending(lp_lbr_agg *a, const pend_ent *pe, lp_error *err)
{
    const pend *e = pe->p;
    lp_branch_entry *v;
    uint64_t i;
    bool code;
    int rc;

    if (lp_grow_array(&a->brs, &a->brs_cap, e->n ? e->n : 1, sizeof *v, 64))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    v = a->brs;
    for (i = 0; i < e->n; i++)
        v[i] = (lp_branch_entry){e->br[2 * i], e->br[2 * i + 1], 0};
    a->pid = pe->id.pid;
    if (pe->id.kind == PEND_IP) {
        rc = count_ip(a, e->leaf, pe->repeat, err);
    } else if (pe->id.kind == PEND_STACK) {
        (void)canon(a, e->leaf, &code);
        a->leaf_external += code ? 0 : pe->calls;
        rc = count_stack(a, e->leaf, v, e->n, pe->repeat, err);
    } else {
        rc = agg_sample(a, v, e->n, pe->repeat, true, err);
    }
    return rc;
}

int lp_lbr_agg_flush(lp_lbr_agg *a, lp_error *err)
{
    uint32_t pid = a->pid, gen = a->flush_gen_next + 1, i;
    int rc = 0;

    if (gen == 0 && a->cslots) {     /* wrapped: no slot may look valid */
        memset(a->cslots, 0, sizeof *a->cslots << AGG_CS_BITS);
        gen = 1;
    }
    a->flush_gen = a->flush_gen_next = gen ? gen : 1;
    for (i = 0; i < a->pending.n && rc == 0; i++)
        rc = count_pending(a, &a->pending.v[i], err);
    a->flush_gen = 0;
    a->pid = pid;
    drop_pending(a);
    return rc;
}

static uint32_t pend_hash(const pend_id *k)
{
    uint64_t h = (k->lo ^ ((uint64_t)k->pid << 32 | k->kind)) * 0x9e3779b97f4a7c15ull;

    return (uint32_t)(h >> 32);
}

/* the slot of id, or the empty slot where it goes */
static pend_slot *find_pend(const pend_tab *t, const pend_id *id)
{
    uint32_t i = pend_hash(id) & t->mask, tag = (uint32_t)id->hi;
    pend_slot *s;

    for (;; i = (i + 1) & t->mask) {
        s = &t->slot[i];
        if (!s->idx || (s->tag == tag &&
                        !memcmp(&t->v[s->idx - 1].id, id, sizeof *id)))
            return s;
    }
}

/* Entry i into the index. */
static void pend_place(pend_tab *t, uint32_t i)
{
    pend_slot *s = find_pend(t, &t->v[i].id);

    *s = (pend_slot){i + 1, (uint32_t)t->v[i].id.hi};
    t->v[i].pos = (uint32_t)(s - t->slot);
}

/* Room for one more entry: the index at most half full. */
static int pend_reserve(pend_tab *t)
{
    size_t ns = t->mask ? ((size_t)t->mask + 1) * 2 : 1024;
    pend_slot *slot;
    pend_ent *v;
    uint32_t i;

    if (t->n == t->cap) {
        size_t c = t->cap ? (size_t)t->cap * 2 : 512;
        if (c > UINT32_MAX / 2 || !(v = realloc(t->v, c * sizeof *v)))
            return -1;
        t->v = v;
        t->cap = (uint32_t)c;
    }
    if ((t->n + 1) * 2 <= t->mask + 1)
        return 0;
    if (ns - 1 > UINT32_MAX || !(slot = calloc(ns, sizeof *slot)))
        return -1;
    free(t->slot);
    t->slot = slot;
    t->mask = (uint32_t)(ns - 1);
    for (i = 0; i < t->n; i++)
        pend_place(t, i);
    return 0;
}

/* The sample's identity: the caller's (lp_lbr_agg_set_id), else the
 * same digest of its call stack and branches. 0 or -1 (no memory). */
static int sample_id(lp_lbr_agg *a, uint32_t kind, uint64_t leaf,
                     const uint64_t *chain, size_t nchain,
                     const lp_branch_entry *br, size_t n, pend_id *id)
{
    lp_stacks_id s = a->next_id;

    a->next_id = (lp_stacks_id){0, 0};
    id->pid = a->pid;
    id->kind = kind;
    if (kind == PEND_IP)
        s = (lp_stacks_id){leaf, 0};
    else if (!s.lo && !s.hi &&
             lp_stacks_id_of(chain, nchain, br, n, &a->idw, &a->idw_cap, &s))
        return -1;
    id->lo = s.lo;
    id->hi = s.hi;
    return 0;
}

/* A new waiting sample. */
static int pend_add(lp_lbr_agg *a, const pend_id *id, uint64_t leaf,
                    const lp_branch_entry *br, size_t n, uint64_t repeat,
                    uint64_t calls, lp_error *err)
{
    size_t len = sizeof(pend) + 16 * n, i;
    pend_tab *t = &a->pending;
    pend *e;

    if (a->pending_bytes + len > PEND_MAX_BYTES && lp_lbr_agg_flush(a, err))
        return -1;
    if (pend_reserve(t) || !(e = lp_arena_alloc(&a->store, len)))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    e->leaf = leaf;
    e->n = n;
    for (i = 0; i < n; i++) {
        e->br[2 * i] = br[i].from;
        e->br[2 * i + 1] = br[i].to;
    }
    t->v[t->n] = (pend_ent){*id, repeat, calls, e, 0};
    pend_place(t, t->n++);
    a->pending_bytes += len + sizeof(pend_ent);
    return 0;
}

/* The samples of the input the sample being counted stands for
 * (lp_lbr_agg_set_calls: once). */
static uint64_t take_calls(lp_lbr_agg *a)
{
    uint64_t c = a->next_calls ? a->next_calls : 1;

    a->next_calls = 0;
    return c;
}

/* Queue a sample (or add its repeat to an identical waiting one); chain:
 * a stack sample's whole call stack, for its digest. */
static int enqueue(lp_lbr_agg *a, uint32_t kind, uint64_t leaf,
                   const uint64_t *chain, size_t nchain,
                   const lp_branch_entry *br, size_t n, uint64_t repeat,
                   lp_error *err)
{
    uint64_t calls = take_calls(a);
    pend_slot *s;
    pend_id id;

    if (sample_id(a, kind, leaf, chain, nchain, br, n, &id))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    if (a->pending.mask && (s = find_pend(&a->pending, &id))->idx) {
        pend_ent *e = &a->pending.v[s->idx - 1];
        e->repeat += repeat;
        e->calls += calls;
        return 0;
    }
    return pend_add(a, &id, leaf, br, n, repeat, calls, err);
}

int lp_lbr_agg_sample(lp_lbr_agg *a, const lp_branch_entry *br, size_t n,
                      uint64_t repeat, lp_error *err)
{
    /* --sample-period divides each sample's count by its own number of
     * kept entries (integer division): count it now */
    if (a->o.has_sample_period) {
        a->next_id = (lp_stacks_id){0, 0};
        a->next_calls = 0;
        return agg_sample(a, br, n, repeat, true, err);
    }
    return enqueue(a, PEND_LBR, 0, NULL, 0, br, n, repeat, err);
}

int lp_lbr_agg_ip_sample(lp_lbr_agg *a, uint64_t ip, uint64_t repeat,
                         lp_error *err)
{
    return enqueue(a, PEND_IP, ip, NULL, 0, NULL, 0, repeat, err);
}

void lp_lbr_agg_set_id(lp_lbr_agg *a, lp_stacks_id id)
{
    a->next_id = id;
}

void lp_lbr_agg_set_calls(lp_lbr_agg *a, uint64_t calls)
{
    a->next_calls = calls;
}

void lp_lbr_agg_ahead(lp_lbr_agg *a, uint32_t pid, const uint64_t *stack, size_t ns,
                      const lp_branch_entry *br, size_t n, lp_stacks_id *id)
{
    pend_id k;

    if (a->o.has_sample_period)
        return;                 /* counted at once, never waiting */
    if (!id->lo && !id->hi &&
        lp_stacks_id_of(stack, ns, br, n, &a->idw, &a->idw_cap, id))
        *id = (lp_stacks_id){0, 0};
    if ((!id->lo && !id->hi) || !a->pending.mask)
        return;
    k = (pend_id){id->lo, id->hi, pid, ns ? PEND_STACK : PEND_LBR};
    __builtin_prefetch(&a->pending.slot[pend_hash(&k) & a->pending.mask]);
}

static void detail(const lp_lbr_agg *a, const lp_addr_pair_count *k,
                   lp_range_issue i)
{
    if (a->o.show_detailed_warning)
        lp_range_warn_detail(a->o.warn, a->o.warn_ctx, k->a, k->b, i);
}

/* warnInvalidRange for one pair; a valid fall-through of code to code is
 * counted as a range (computeCounterFromLBR's). */
static int classify(lp_lbr_agg *a, const lp_addr_pair_count *e, lp_range_stats *st,
                    lp_error *err)
{
    uint64_t s = e->a, en = e->b;
    bool sc = lp_binary_is_code(a->bin, s), ec = lp_binary_is_code(a->bin, en);
    const lp_func_range *fr;
    int v = 1;               /* valid fall-through (code to code only) */

    st->total += e->count;
    if (!sc && !ec)
        return 0;
    if (sc && ec) {
        if ((v = lp_binary_valid_fallthrough(a->bin, s, en, err)) < 0)
            return -1;
        if (v && lp_counters_add_range(a->c, s, en, e->count))
            return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    }
    if (!sc || !(lp_binary_is_branch(a->bin, en) || lp_binary_is_call(a->bin, en) ||
                 lp_binary_is_return(a->bin, en))) {
        st->not_boundary += e->count;
        detail(a, e, LP_RANGE_NOT_BOUNDARY);
    }
    fr = lp_binary_func_range(a->bin, s);
    if (!fr) {
        st->unmatched += e->count;
        detail(a, e, LP_RANGE_NO_FUNC);
        return 0;
    }
    if (fr->func->from_symtab || fr->func->symtab_mismatch)
        st->recovered += e->count;
    if (en >= fr->end) {
        st->cross_func += e->count;
        detail(a, e, LP_RANGE_CROSS_FUNC);
    }
    if (sc && ec && !v) {
        st->bogus += e->count;
        detail(a, e, LP_RANGE_BOGUS);
    }
    return 0;
}

/* warnInvalidRange, in (start, end) order, and the ranges */
static int warn_invalid_ranges(lp_lbr_agg *a, lp_error *err)
{
    const lp_addr_pair_count *v;
    long n = lp_counters_ranges_view(a->pairs, &v), i;
    lp_range_stats st = {0};
    int rc = 0;

    if (n == 0) {
        lp_warnf(a->o.warn, a->o.warn_ctx, "No samples in perf script!");
        return 0;
    }
    for (i = 0; i < n && rc == 0; i++)
        rc = classify(a, &v[i], &st, err);
    if (rc)
        return -1;
    lp_range_warn_summary(a->o.warn, a->o.warn_ctx, &st);
    return 0;
}

/* parsePerfTraces' leaf-external summary, for hybrid samples */
static void warn_leaf_external(const lp_lbr_agg *a)
{
    uint64_t total = a->total_set ? a->total_samples : a->stack_calls;

    if (a->leaf_external && total)
        lp_warnf(a->o.warn, a->o.warn_ctx, "%.2f%%(%" PRIu64 "/%" PRIu64
                 ") of samples have leaf external frame in call stack.",
                 (double)a->leaf_external * 100 / total, a->leaf_external,
                 total);
}

lp_counters *lp_lbr_agg_finish(lp_lbr_agg *a, lp_error *err)
{
    if (lp_lbr_agg_flush(a, err))
        return NULL;
    lp_arena_free(&a->store);  /* generation's memory may take its place */
    warn_leaf_external(a);
    if (warn_invalid_ranges(a, err))
        return NULL;
    return a->c;
}

int lp_lbr_agg_stack_sample(lp_lbr_agg *a, const uint64_t *stack, size_t ns,
                            const lp_branch_entry *br, size_t n,
                            uint64_t repeat, lp_error *err)
{
    size_t i;

    for (i = 0; i < ns && stack[i] >= LP_CONTEXT_MAX; i++)
        ;
    a->stack_calls += a->next_calls ? a->next_calls : 1;
    if (i == ns) {
        a->next_id = (lp_stacks_id){0, 0};
        a->next_calls = 0;
        return 0; /* no frame: HybridPerfReader rejects the sample */
    }
    /* the leaf-external count: when the sample is counted (the same map) */
    return enqueue(a, PEND_STACK, stack[i], stack, ns, br, n, repeat, err);
}

void lp_lbr_agg_set_total_samples(lp_lbr_agg *a, uint64_t n)
{
    a->total_samples = n;
    a->total_set = true;
}

