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

/* uthash's default (Jenkins) hash costs more than the rest of the work for
 * the long keys of whole LBR stacks: mix 8-byte words instead. */
static inline unsigned agg_hash(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ len, w;

    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
    }
    for (; len > 0; p++, len--)
        h = (h ^ *p) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 32;
    return (unsigned)h;
}
#define HASH_FUNCTION(keyptr, keylen, hashv) \
    ((hashv) = agg_hash((keyptr), (size_t)(keylen)))
#include <uthash.h>

typedef struct range_key {
    uint64_t start, end;
} range_key;

typedef struct range_ent {      /* every consecutive LBR pair, for warnings */
    range_key k;
    uint64_t count;
    UT_hash_handle hh;
} range_ent;

/* A sample waiting to be counted: identical samples (same process, kind,
 * leaf and branch stack, raw addresses) are counted once with the sum of
 * their repeats, as llvm-profgen's AggregatedSamples does. They wait only
 * while the address map cannot change under them (see lp_lbr_agg_flush). */
enum pend_kind { PEND_LBR = 1, PEND_STACK = 2, PEND_IP = 3 };

typedef struct pend_key {
    uint32_t pid, kind;
    uint64_t leaf;              /* stack leaf or IP (raw), else 0 */
    uint64_t n;                 /* branch entries that follow */
    uint64_t br[];              /* from, to, from, to, ... */
} pend_key;

typedef struct pend {
    UT_hash_handle hh;
    uint64_t repeat;
    size_t keylen;
    pend_key k;                 /* last: flexible */
} pend;

#define PEND_MAX_BYTES (32u << 20)  /* flush when the waiting keys exceed this */

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
    range_ent *pairs;
    uint64_t nr_samples;
    pend *pending;
    size_t pending_bytes;
    pend_key *kbuf;             /* key being built */
    size_t kcap;
    /* hybrid samples with their stacks ignored (HybridPerfReader's
     * leaf-external warning): samples, those with an external leaf, and
     * llvm-profgen's NumTotalSample when the caller knows it */
    uint64_t stack_calls, leaf_external, total_samples;
    bool total_set;
};

lp_lbr_agg *lp_lbr_agg_new(lp_binary *bin, const lp_lbr_agg_opts *o,
                           lp_error *err)
{
    lp_lbr_agg *a = calloc(1, sizeof *a);
    lp_addrmap_opts mo = {true, -1, NULL, NULL};

    if (!a || !(a->c = lp_counters_new())) {
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
    pend *e, *t;

    HASH_ITER(hh, a->pending, e, t) {
        HASH_DEL(a->pending, e);
        free(e);
    }
    a->pending_bytes = 0;
}

void lp_lbr_agg_free(lp_lbr_agg *a)
{
    range_ent *e, *t;

    if (!a)
        return;
    HASH_ITER(hh, a->pairs, e, t) {
        HASH_DEL(a->pairs, e);
        free(e);
    }
    drop_pending(a);
    free(a->kbuf);
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

static uint64_t canon(const lp_lbr_agg *a, uint64_t addr, bool *code)
{
    uint64_t c;

    *code = lp_addrmap_resolve(a->map, a->pid, addr, &c) == a->bin_index &&
            lp_binary_is_code(a->bin, c);
    return *code ? c : LP_EXTERNAL_ADDR;
}

static int add_pair(lp_lbr_agg *a, uint64_t start, uint64_t end, uint64_t n)
{
    range_key k = {start, end};
    range_ent *e;

    HASH_FIND(hh, a->pairs, &k, sizeof k, e);
    if (!e) {
        if (!(e = calloc(1, sizeof *e)))
            return -1;
        e->k = k;
        HASH_ADD(hh, a->pairs, k, sizeof k, e);
    }
    e->count = lp_sat_add(e->count, n);
    return 0;
}

/* computeCounterFromLBR for one canonical entry (src, dst, codeness) with
 * `end` the newer entry's source. */
static int count_entry(lp_lbr_agg *a, uint64_t src, uint64_t dst, bool dst_code,
                       uint64_t end, uint64_t n, lp_error *err)
{
    int v;

    if (dst_code && lp_counters_add_branch(a->c, src, dst, n))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    if (end != 0 && add_pair(a, dst, end, n))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    if (!dst_code || end == 0 || end == LP_EXTERNAL_ADDR)
        return 0;
    v = lp_binary_valid_fallthrough(a->bin, dst, end, err);
    if (v < 0)
        return -1;
    if (v && lp_counters_add_range(a->c, dst, end, n))
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
    canon_entry *v = malloc((n ? n : 1) * sizeof *v);
    bool sc;
    size_t i;
    long k = 0;

    if (!v)
        return -1;
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
    free(v);
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

static int count_pending(lp_lbr_agg *a, const pend *e, lp_error *err)
{
    const pend_key *k = &e->k;
    lp_branch_entry *v = NULL;
    uint64_t i;
    int rc;

    if (k->n && !(v = malloc(k->n * sizeof *v)))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    for (i = 0; i < k->n; i++)
        v[i] = (lp_branch_entry){k->br[2 * i], k->br[2 * i + 1], 0};
    a->pid = k->pid;
    if (k->kind == PEND_IP)
        rc = count_ip(a, k->leaf, e->repeat, err);
    else if (k->kind == PEND_STACK)
        rc = count_stack(a, k->leaf, v, k->n, e->repeat, err);
    else
        rc = agg_sample(a, v, k->n, e->repeat, true, err);
    free(v);
    return rc;
}

int lp_lbr_agg_flush(lp_lbr_agg *a, lp_error *err)
{
    uint32_t pid = a->pid;
    const pend *e;
    int rc = 0;

    for (e = a->pending; e && rc == 0; e = e->hh.next)
        rc = count_pending(a, e, err);
    a->pid = pid;
    drop_pending(a);
    return rc;
}

/* Queue a sample (or add its repeat to an identical waiting one). */
static int enqueue(lp_lbr_agg *a, uint32_t kind, uint64_t leaf,
                   const lp_branch_entry *br, size_t n, uint64_t repeat,
                   lp_error *err)
{
    size_t len = sizeof(pend_key) + 16 * n, i;
    pend *e;

    if (len > a->kcap) {
        free(a->kbuf);
        a->kcap = len * 2;
        if (!(a->kbuf = malloc(a->kcap))) {
            a->kcap = 0;
            return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
        }
    }
    a->kbuf->pid = a->pid;
    a->kbuf->kind = kind;
    a->kbuf->leaf = leaf;
    a->kbuf->n = n;
    for (i = 0; i < n; i++) {
        a->kbuf->br[2 * i] = br[i].from;
        a->kbuf->br[2 * i + 1] = br[i].to;
    }
    HASH_FIND(hh, a->pending, a->kbuf, len, e);
    if (e) {
        e->repeat += repeat;
        return 0;
    }
    if (a->pending_bytes + len > PEND_MAX_BYTES && lp_lbr_agg_flush(a, err))
        return -1;
    if (!(e = malloc(offsetof(pend, k) + len)))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    memcpy(&e->k, a->kbuf, len);
    e->repeat = repeat;
    e->keylen = len;
    HASH_ADD(hh, a->pending, k, len, e);
    a->pending_bytes += len + sizeof *e;
    return 0;
}

int lp_lbr_agg_sample(lp_lbr_agg *a, const lp_branch_entry *br, size_t n,
                      uint64_t repeat, lp_error *err)
{
    /* --sample-period divides each sample's count by its own number of
     * kept entries (integer division): count it now */
    if (a->o.has_sample_period)
        return agg_sample(a, br, n, repeat, true, err);
    return enqueue(a, PEND_LBR, 0, br, n, repeat, err);
}

int lp_lbr_agg_ip_sample(lp_lbr_agg *a, uint64_t ip, uint64_t repeat,
                         lp_error *err)
{
    return enqueue(a, PEND_IP, ip, NULL, 0, repeat, err);
}

static void detail(const lp_lbr_agg *a, const range_key *k, lp_range_issue i)
{
    if (a->o.show_detailed_warning)
        lp_range_warn_detail(a->o.warn, a->o.warn_ctx, k->start, k->end, i);
}

static int pair_key_cmp(const void *x, const void *y)
{
    const range_ent *p = *(range_ent *const *)x, *q = *(range_ent *const *)y;

    if (p->k.start != q->k.start)
        return p->k.start < q->k.start ? -1 : 1;
    return p->k.end < q->k.end ? -1 : p->k.end > q->k.end;
}

static int classify(lp_lbr_agg *a, const range_ent *e, lp_range_stats *st,
                    lp_error *err)
{
    uint64_t s = e->k.start, en = e->k.end;
    bool sc = lp_binary_is_code(a->bin, s), ec = lp_binary_is_code(a->bin, en);
    const lp_func_range *fr;
    int v;

    st->total += e->count;
    if (!sc && !ec)
        return 0;
    if (!sc || !(lp_binary_is_branch(a->bin, en) || lp_binary_is_call(a->bin, en) ||
                 lp_binary_is_return(a->bin, en))) {
        st->not_boundary += e->count;
        detail(a, &e->k, LP_RANGE_NOT_BOUNDARY);
    }
    fr = lp_binary_func_range(a->bin, s);
    if (!fr) {
        st->unmatched += e->count;
        detail(a, &e->k, LP_RANGE_NO_FUNC);
        return 0;
    }
    if (fr->func->from_symtab || fr->func->symtab_mismatch)
        st->recovered += e->count;
    if (en >= fr->end) {
        st->cross_func += e->count;
        detail(a, &e->k, LP_RANGE_CROSS_FUNC);
    }
    if (sc && ec) {
        if ((v = lp_binary_valid_fallthrough(a->bin, s, en, err)) < 0)
            return -1;
        if (!v) {
            st->bogus += e->count;
            detail(a, &e->k, LP_RANGE_BOGUS);
        }
    }
    return 0;
}

/* warnInvalidRange */
static int warn_invalid_ranges(lp_lbr_agg *a, lp_error *err)
{
    size_t n = HASH_COUNT(a->pairs), i = 0;
    range_ent **v, *e;
    lp_range_stats st = {0};
    int rc = 0;

    if (n == 0) {
        lp_warnf(a->o.warn, a->o.warn_ctx, "No samples in perf script!");
        return 0;
    }
    if (!(v = malloc(n * sizeof *v)))
        return lp_error_set(err, LP_ENOMEM, "LBR aggregation: out of memory");
    for (e = a->pairs; e; e = e->hh.next)
        v[i++] = e;
    qsort(v, n, sizeof *v, pair_key_cmp);
    for (i = 0; i < n && rc == 0; i++)
        rc = classify(a, v[i], &st, err);
    free(v);
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
    bool code;

    for (i = 0; i < ns && stack[i] >= LP_CONTEXT_MAX; i++)
        ;
    a->stack_calls++;
    if (i == ns)
        return 0; /* no frame: HybridPerfReader rejects the sample */
    (void)canon(a, stack[i], &code);
    a->leaf_external += !code;
    return enqueue(a, PEND_STACK, stack[i], br, n, repeat, err);
}

void lp_lbr_agg_set_total_samples(lp_lbr_agg *a, uint64_t n)
{
    a->total_samples = n;
    a->total_set = true;
}

