/*
 * collect.c - from one sample's frame trie to counters per context, as
 * llvm-profgen 19's collectSamplesFromFrameTrie does: a depth-first walk
 * keeps the stack of frame addresses; every frame with ranges or branches
 * adds them to the context of that stack (getExpandedContext: each address
 * symbolized with its inline frames, base discriminators, the leaf's
 * location zeroed, the callers recursion-compressed and trimmed to the
 * maximum depth). An external frame restarts an empty stack for itself and
 * its subtree; a frame at address 0 is taken for the root (no push, but a
 * pop), as in llvm-profgen. Children are visited in the order of
 * llvm-profgen 19's std::unordered_map (libstdc++), which decides what that
 * extra pop removes. Address stacks are mapped to contexts once (cached).
 * While a recording is made (u->rec), the counts go to it instead.
 * Frames above a hole (the repair's unknown frames) have no known callers:
 * their records are kept in contexts truncated at the hole, as at an
 * external frame, and counted (dropped and counted with drop_unknown); a
 * signal frame cuts like an external one. Each address is symbolized with its own binary; a
 * context's counters are its leaf's binary's (the empty context: the
 * target's). Owns context formation; not the trie (trie.c) nor the
 * counters' storage (src/context/ctxcount.c).
 */
#include <stdlib.h>
#include <string.h>

#include "unwind/uw_internal.h"

/* ---- compression and trimming --------------------------------------------- */

static inline bool frame_eq(const void *x, const void *y)
{
    const lp_ctx_frame *a = x, *b = y;

    return a->loc.line == b->loc.line && a->loc.disc == b->loc.disc &&
           (a->func == b->func || strcmp(a->func, b->func) == 0);
}

static inline bool addr_eq(const void *x, const void *y)
{
    return *(const uint64_t *)x == *(const uint64_t *)y;
}

/* compressRecursionContext's in-place algorithm on elements of `size`
 * bytes: for each run length I, a window of 2*I slides over the elements;
 * a window whose halves are equal drops its right half, otherwise the
 * part of the right half that is not a common suffix is copied down. The
 * same reads and writes in the same order, so the same result on every
 * input (LLVM's template serves frames and addresses alike). Inlined into
 * each caller with its `eq` (bench (c): 97 K stacks, 1.1 M comparisons
 * and 1.4 M copies were 78 M instructions through calls), and a copy
 * onto itself - every one until a window's halves first match - is
 * skipped. */
static inline __attribute__((always_inline)) size_t
compress(void *base, size_t size, size_t n, int k,
         bool (*eq)(const void *, const void *))
{
    unsigned char *f = base;
    size_t half = n / 2, max = k < 0 ? half : ((size_t)k < half ? (size_t)k : half);
    ptrdiff_t right, left, bound, len, sz;
    size_t i, end;
    bool dup;

#define AT(x) (f + (size_t)(x) * size)
    for (i = 1; i <= max; i++) {
        len = (ptrdiff_t)i;
        sz = (ptrdiff_t)n;
        right = len - 1;
        end = i;
        bound = 0;
        while (right + len < sz) {
            if (end == (size_t)right + 1 && !eq(AT(right), AT(right + len))) {
                /* the common step, as below: no match, nothing to move */
                bound = right + 1;
                end += (size_t)len;
                right += len;
                continue;
            }
            left = right;
            while (left >= bound && eq(AT(left), AT(left + len)))
                left--;
            dup = left < bound;         /* the halves are equal */
            bound = right + 1;
            if (dup) {
                right += len;
                continue;
            }
            if (end != (size_t)right + 1)
                memmove(AT(end), AT(right + 1), (size_t)(left + len - right) * size);
            end += (size_t)(left + len - right);
            right = left + len;
        }
        if (end != (size_t)right + 1)
            memmove(AT(end), AT(right + 1), (size_t)(sz - right - 1) * size);
        end += (size_t)(sz - right - 1);
        n = end;
        if (end / 2 < max)
            max = end / 2;
    }
#undef AT
    return n;
}

/* trimContext: keep the last `depth` elements */
static size_t trim(void *base, size_t size, size_t n, int depth)
{
    unsigned char *f = base;

    if (depth < 0 || (size_t)depth >= n)
        return n;
    memmove(f, f + (n - (size_t)depth) * size, (size_t)depth * size);
    return (size_t)depth;
}

size_t lp_ctx_compress_recursion(lp_ctx_frame *f, size_t n, int k)
{
    return compress(f, sizeof *f, n, k, frame_eq);
}

size_t lp_ctx_trim(lp_ctx_frame *f, size_t n, int depth)
{
    return trim(f, sizeof *f, n, depth);
}

size_t lp_ctx_compress_addrs(uint64_t *a, size_t n, int k)
{
    return compress(a, sizeof *a, n, k, addr_eq);
}

size_t lp_ctx_trim_addrs(uint64_t *a, size_t n, int depth)
{
    return trim(a, sizeof *a, n, depth);
}

/* ---- address stack -> context ----------------------------------------------- */

/* ---- leaf signatures ---------------------------------------------------------- */

static bool sig_equal(const uw_sig *a, const uw_sig *b, bool fs)
{
    uint32_t i;

    if (a->k != b->k || a->bin != b->bin)
        return false;
    for (i = 0; i < a->k; i++) {
        const lp_frame *x = &a->f[i], *y = &b->f[i];
        if (x->func != y->func && strcmp(x->func, y->func))
            return false;
        if (i + 1 < a->k && (x->line_offset != y->line_offset ||
                             lp_disc_base(x->discriminator, fs) !=
                                 lp_disc_base(y->discriminator, fs)))
            return false;
    }
    return true;
}

static uint64_t sig_hash(const uw_sig *g, bool fs)
{
    uint64_t h = g->k ^ ((uint64_t)g->bin << 40);
    uint32_t i;
    const char *c;

    for (i = 0; i < g->k; i++) {
        for (c = g->f[i].func; *c; c++)
            h = h * 131 + (unsigned char)*c;
        if (i + 1 < g->k)
            h = uw_mix(h, ((uint64_t)g->f[i].line_offset << 32) |
                           lp_disc_base(g->f[i].discriminator, fs));
    }
    return h;
}

static uw_symslot *symc_slot(lp_unwinder *u, uint64_t addr)
{
    uint64_t h = addr * 0x9e3779b97f4a7c15ull;

    return &u->symc[h >> (64 - UW_SYMC_BITS)];
}

/* addr's frames into its slot, when they fit */
static void symc_put(lp_unwinder *u, uint64_t addr, const lp_frame *f,
                     size_t k)
{
    uint64_t p = (uint64_t)(uintptr_t)f;

    if (u->symc && p >> 48 == 0 && k < 0x10000)
        *symc_slot(u, addr) = (uw_symslot){addr, p | (uint64_t)k << 48};
}

static const lp_frame *symc_frames(const uw_symslot *s)
{
    return (const lp_frame *)(uintptr_t)(s->fk & (((uint64_t)1 << 48) - 1));
}

int uw_symbolize(lp_unwinder *u, uint64_t addr, const lp_frame **f,
                 size_t *k, lp_error *err)
{
    uw_symslot *s = u->symc ? symc_slot(u, addr) : NULL;
    int rc;

    if (s && s->addr == addr) {
        *f = symc_frames(s);
        *k = (size_t)(s->fk >> 48);
        return 0;
    }
    uw_lock(u);
    rc = lp_binary_symbolize(uw_bin(u, addr), uw_va(addr), f, k, err);
    uw_unlock(u);
    if (rc == 0)
        symc_put(u, addr, *f, *k);
    return rc;
}

uint64_t uw_leaf_sig(lp_unwinder *u, uint64_t addr, lp_error *err)
{
    uw_ctxcache *c = &u->ctxc;
    uint64_t id = uw_map_get(&c->leaf, addr, 0), h, j, cand;
    lp_binary *b = uw_bin(u, addr);
    bool fs = b == u->bin ? u->fs_disc : lp_binary_fs_discriminator(b);
    uw_sig g;
    size_t k;
    int rc;

    if (id)
        return id;
    if ((rc = uw_symbolize(u, addr, &g.f, &k, err)))
        return 0;
    g.k = (uint32_t)k;
    g.bin = (uint32_t)uw_bin_of(addr);
    h = sig_hash(&g, fs);
    for (j = 0; (cand = uw_map_get(&c->dedup, h, j)); j++)
        if (sig_equal(&c->sigs[cand - 1], &g, fs))
            break;
    if (!(id = cand)) {
        if (uw_grow((void **)&c->sigs, &c->sigs_cap, c->nsigs + 1,
                    sizeof *c->sigs) ||
            uw_map_put(&c->dedup, h, j, c->nsigs + 1))
            goto oom;
        c->sigs[c->nsigs++] = g;
        id = c->nsigs;
    }
    if (uw_map_put(&c->leaf, addr, 0, id))
        goto oom;
    return id;
oom:
    lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    return 0;
}

/* The prefix id of (parent, addr), made if new; 0 on error. */
static uint64_t prefix_id(lp_unwinder *u, uint64_t parent, uint64_t addr,
                          lp_error *err)
{
    uw_ctxcache *c = &u->ctxc;
    uint64_t id = uw_map_get(&c->pfx, parent, addr);

    if (id)
        return id;
    id = ++c->npfx;
    if (uw_map_put(&c->pfx, parent, addr, id)) {
        lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        return 0;
    }
    return id;
}

/* The frames of u->stk[at..at+n) into u->ctxc.stk_fr, those not there
 * yet symbolized under one take of the binaries' lock. */
static int stack_frames(lp_unwinder *u, size_t at, size_t n, lp_error *err)
{
    uw_sig *sf = u->ctxc.stk_fr + at;
    const lp_frame *fr;
    uw_symslot *c;
    size_t i, k;
    bool locked = false;
    int rc = 0;

    for (i = 0; i < n && rc == 0; i++) {
        uint64_t a = u->stk[at + i];
        if (sf[i].k != UINT32_MAX)
            continue;
        if (u->symc && (c = symc_slot(u, a))->addr == a) {
            sf[i] = (uw_sig){symc_frames(c), (uint32_t)(c->fk >> 48), 0};
            continue;
        }
        if (!locked) {
            uw_lock(u);
            locked = true;
        }
        if ((rc = lp_binary_symbolize(uw_bin(u, a), uw_va(a), &fr, &k, err)) == 0) {
            sf[i] = (uw_sig){fr, (uint32_t)k, 0};
            symc_put(u, a, fr, k);
        }
    }
    if (locked)
        uw_unlock(u);
    return rc;
}

/* One address's k frames as a context has them, into out. */
static void convert_frames(const lp_unwinder *u, uint64_t addr,
                           const lp_frame *fr, size_t k, lp_ctx_frame *out)
{
    lp_binary *b = uw_bin(u, addr);
    bool fs = b == u->bin ? u->fs_disc : lp_binary_fs_discriminator(b);
    size_t j;

    for (j = 0; j < k; j++) {
        out[j].func = fr[j].func;
        out[j].loc.line = fr[j].line_offset;
        out[j].loc.disc = lp_disc_base(fr[j].discriminator, fs);
    }
}

/* One address's frames onto u->frames[*nf..]; -1 on OOM. */
static int put_frames(lp_unwinder *u, uint64_t addr, const lp_frame *fr,
                      size_t k, size_t *nf, lp_error *err)
{
    if (uw_grow((void **)&u->frames, &u->frames_cap, *nf + k + 1,
                sizeof *u->frames))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    convert_frames(u, addr, fr, k, u->frames + *nf);
    *nf += k;
    return 0;
}

/* The frames of the callers u->stk[0..n-1) of a stack from the sample's
 * root (n > 0), their stk_fr known, onto u->frames[0..*nf): copied from
 * u->ctxc.cf, where each position's are converted once while it holds
 * its address (a sample's contexts share their callers: converting them
 * again for each new context - the binary, the base discriminators - was
 * ~20% of its instructions on bench (c)). 1: an address has no frames,
 * *wli then what expand's loop would have left in it; -1 on OOM. */
static int base_callers(lp_unwinder *u, size_t n, size_t *nf, bool *wli,
                        lp_error *err)
{
    uw_ctxcache *c = &u->ctxc;
    size_t i, start, fe;

    if (uw_grow((void **)&c->cf_pos, &c->cf_pos_cap, n, sizeof *c->cf_pos))
        goto oom;
    for (i = c->cf_n; i + 1 < n; i++, c->cf_n = i) {
        const uw_sig *g = &c->stk_fr[i];
        start = i ? c->cf_pos[i - 1].end : 0;
        fe = i ? c->cf_pos[i - 1].first_empty : SIZE_MAX;
        if (uw_grow((void **)&c->cf, &c->cf_cap, start + g->k, sizeof *c->cf))
            goto oom;
        convert_frames(u, u->stk[i], g->f, g->k, c->cf + start);
        c->cf_pos[i] = (uw_cfpos){start + g->k,
                                  fe == SIZE_MAX && g->k == 0 ? i : fe};
    }
    *nf = n < 2 ? 0 : c->cf_pos[n - 2].end;
    if (n >= 2 && (fe = c->cf_pos[n - 2].first_empty) != SIZE_MAX) {
        *wli = fe > 0 && c->stk_fr[fe - 1].k > 1;
        return 1;
    }
    if (uw_grow((void **)&u->frames, &u->frames_cap, *nf + 1, sizeof *u->frames))
        goto oom;
    if (*nf)
        memcpy(u->frames, c->cf, *nf * sizeof *c->cf);
    *wli = n >= 2 && c->stk_fr[n - 2].k > 1;    /* as the loop leaves it */
    return 0;
oom:
    return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
}

/* getExpandedContext of the stack a[0..n) (a within u->stk) into
 * u->frames; returns the frame count (0: the empty context, also when an
 * address has no debug info), -1 on error. The callers' frames come from
 * the stack's own cache (each position symbolized once while it holds
 * its address: a sample's contexts share their callers); the leaf's from
 * its signature `sig` (0: symbolized), whose frames equal the leaf's in
 * all that is kept of them - every function, and the locations but the
 * last, which is zeroed - so the leaf needs no symbolization and no
 * lock. */
static long expand(lp_unwinder *u, const uint64_t *a, size_t n, uint64_t sig,
                   bool *wli, lp_error *err)
{
    size_t at = (size_t)(a - u->stk), nf = 0, i, k;
    const uw_sig *sf = u->ctxc.stk_fr + at;
    const lp_frame *fr;
    lp_ctx_frame leaf;

    *wli = false;
    if (stack_frames(u, at, sig ? n - 1 : n, err))
        return -1;
    i = 0;
    if (at == 0) {              /* from the root: the callers converted */
        int rc = base_callers(u, n, &nf, wli, err);
        if (rc)
            return rc < 0 ? -1 : 0;
        i = n - 1;
    }
    for (; i < n; i++) {
        const uw_sig *g = i + 1 == n && sig ? &u->ctxc.sigs[sig - 1] : &sf[i];
        fr = g->f;
        k = g->k;
        if (k == 0)
            return 0;
        *wli = k > 1;
        if (put_frames(u, a[i], fr, k, &nf, err))
            return -1;
    }
    if (nf == 0)
        return 0;
    leaf = u->frames[--nf];
    leaf.loc.line = leaf.loc.disc = 0;
    nf = lp_ctx_compress_recursion(u->frames, nf, u->o.compress_recursion);
    nf = lp_ctx_trim(u->frames, nf, u->o.max_context_depth);
    u->frames[nf++] = leaf;
    return (long)nf;
}

/* The context of a[0..n) (n > 0, a within u->stk), under its leaf's
 * binary; `sig`: the leaf's signature, 0 not known. *wli: whether the
 * leaf was inlined (given to the entry by collect_frame). */
static lp_ctx_entry *make_context(lp_unwinder *u, const uint64_t *a,
                                  size_t n, uint64_t sig, bool *wli,
                                  lp_error *err)
{
    long nf = 0;

    if ((nf = expand(u, a, n, sig, wli, err)) < 0)
        return NULL;
    return lp_ctxcount_get(u->cc, (int)uw_bin_of(a[n - 1]),
                           nf ? u->frames : NULL, (size_t)nf, *wli, err);
}

/* The leaf signature of trie node `node`'s address: kept on the node,
 * else on the address's facts (uw_ainfo, when they are cached), else
 * looked up (and kept on both). 0 on error. */
static uint64_t node_sig(lp_unwinder *u, int32_t node, lp_error *err)
{
    uw_node *x = &u->nodes[node];
    uw_ainfo *ai;
    uint64_t id;

    if (x->sig)
        return x->sig;
    ai = uw_addr_peek(u, x->addr);
    if (ai && ai->sig)
        return x->sig = ai->sig;
    if (!(id = uw_leaf_sig(u, x->addr, err)) || id > UINT32_MAX)
        return id;
    if (ai)
        ai->sig = (uint32_t)id;
    return x->sig = (uint32_t)id;
}

/* The context of the stack a[0..n); `callers` is the prefix id of
 * a[0..n-1) (0 for none, UINT64_MAX when unknown: no caching); `node`
 * the trie node at a[n-1] (-1: not known). The empty stack's is binary
 * `bin`'s. *wli: whether the leaf was inlined (kept with the entry in
 * the caches: the map's values have it in their low bit). */
static lp_ctx_entry *context_of(lp_unwinder *u, const uint64_t *a, size_t n,
                                uint64_t callers, int32_t node, size_t bin,
                                bool *wli, lp_error *err)
{
    uw_ctxcache *c = &u->ctxc;
    uint64_t sig, v;
    lp_ctx_entry *e;
    uw_ctxmemo *m;

    *wli = false;
    if (n == 0) {
        if (!u->root_entries[bin])
            u->root_entries[bin] = lp_ctxcount_get(u->cc, (int)bin, NULL, 0,
                                                   false, err);
        return u->root_entries[bin];
    }
    if (callers == UINT64_MAX)
        return make_context(u, a, n, 0, wli, err);
    if (!(sig = node >= 0 ? node_sig(u, node, err) : uw_leaf_sig(u, a[n - 1], err)))
        return NULL;
    m = &c->memo[uw_mix(callers, sig) & ((1u << UW_CTXMEMO_BITS) - 1)];
    if (m->e && m->callers == callers && m->sig == sig) {
        *wli = m->wli;
        return m->e;
    }
    if ((v = uw_map_get(&c->ctx, callers, sig))) {
        e = (lp_ctx_entry *)(uintptr_t)(v & ~(uint64_t)1);
        *wli = v & 1;
    } else {
        if (!(e = make_context(u, a, n, sig, wli, err)))
            return NULL;
        if (uw_map_put(&c->ctx, callers, sig, (uint64_t)(uintptr_t)e | *wli)) {
            lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
            return NULL;
        }
    }
    *m = (uw_ctxmemo){callers, sig, e, *wli};
    return e;
}

/* A sample's leaf reached e, inlined or not: e keeps the one of the
 * sample first in llvm-profgen's order (lp_ctx_entry_leaf), whose rank
 * a recording ahead does not know yet (replayed at the flush). */
static int leaf_to(lp_unwinder *u, lp_ctx_entry *e, bool wli)
{
    if (u->rec)
        return uw_eff_add(u, UW_EFF_LEAF, e, wli, 0);
    lp_ctx_entry_leaf(e, wli, u->rank);
    return 0;
}

/* ---- address contexts (pseudo-probe binaries) ------------------------------------- */

/* AddressStack::getContextKey: the stack recursion-compressed and trimmed
 * as addresses (to the smaller of the two depth limits), the entry under
 * binary `bin` (the counted code's). */
static lp_ctx_entry *make_addr_context(lp_unwinder *u, const uint64_t *a,
                                       size_t n, size_t bin, lp_error *err)
{
    int depth = u->o.max_context_depth;
    size_t i;

    if (uw_grow((void **)&u->akey, &u->akey_cap, n + 1, sizeof *u->akey)) {
        lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        return NULL;
    }
    for (i = 0; i < n; i++)
        u->akey[i] = LP_CTX_ADDR(uw_bin_of(a[i]), uw_va(a[i]));
    n = lp_ctx_compress_addrs(u->akey, n, u->o.compress_recursion);
    if (u->o.max_unsym_depth >= 0 && (depth < 0 || u->o.max_unsym_depth < depth))
        depth = u->o.max_unsym_depth;
    n = lp_ctx_trim_addrs(u->akey, n, depth);
    return lp_ctxcount_get_addrs(u->cc, (int)bin, u->akey, n, err);
}

/* The address context of the stack a[0..n) for code of binary bin; `id`
 * is the stack's prefix id (0 for the empty stack, UINT64_MAX: unknown,
 * no caching). */
static lp_ctx_entry *addr_context_of(lp_unwinder *u, const uint64_t *a,
                                     size_t n, uint64_t id, size_t bin,
                                     lp_error *err)
{
    uint64_t v;
    lp_ctx_entry *e;

    if (id == UINT64_MAX)
        return make_addr_context(u, a, n, bin, err);
    if ((v = uw_map_get(&u->ctxc.ctx, id, bin + 1)))
        return (lp_ctx_entry *)(uintptr_t)v;
    if (!(e = make_addr_context(u, a, n, bin, err)))
        return NULL;
    if (uw_map_put(&u->ctxc.ctx, id, bin + 1, (uint64_t)(uintptr_t)e)) {
        lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
        return NULL;
    }
    return e;
}

/* ---- children in std::unordered_map order ------------------------------------- */

/* libstdc++'s bucket counts as an unordered_map grows from empty (prime
 * rehash policy, load factor 1): 13 at the first insertion, then the next
 * listed prime >= twice the count. Checked against g++ at test time. */
static const size_t um_buckets[] = {
    13, 29, 59, 127, 257, 541, 1109, 2357, 5087, 10273, 20753, 42043, 85229,
    172933, 351061, 712697, 1447153, 2938679, 5967347, 12117689, 24607243,
    49969847,
};

#define UM_STACK 257           /* a bucket count: up to here, no malloc */

typedef struct um_state {
    int32_t *next;              /* per child position: next in the list */
    int32_t *bkt;               /* per bucket: position before its first
                                   node, -1 empty, -2 the list head */
    int32_t head;               /* first position, -1 none */
    size_t nb;
} um_state;

static size_t um_bucket(const uint64_t *keys, int32_t pos, size_t nb)
{
    return (size_t)(keys[pos] % nb);
}

static int32_t *um_link(um_state *s, int32_t before)
{
    return before == -2 ? &s->head : &s->next[before];
}

/* _M_insert_bucket_begin */
static void um_insert(um_state *s, const uint64_t *keys, int32_t pos)
{
    size_t b = um_bucket(keys, pos, s->nb);
    int32_t *l;

    if (s->bkt[b] != -1) {
        l = um_link(s, s->bkt[b]);
        s->next[pos] = *l;
        *l = pos;
        return;
    }
    s->next[pos] = s->head;
    s->head = pos;
    if (s->next[pos] >= 0)
        s->bkt[um_bucket(keys, s->next[pos], s->nb)] = pos;
    s->bkt[b] = -2;
}

/* _M_rehash_aux for unique keys */
static void um_rehash(um_state *s, const uint64_t *keys, size_t nb)
{
    int32_t p = s->head, nx;
    size_t b, bbegin = 0, i;

    s->nb = nb;
    for (i = 0; i < nb; i++)
        s->bkt[i] = -1;
    s->head = -1;
    for (; p >= 0; p = nx) {
        nx = s->next[p];
        b = um_bucket(keys, p, nb);
        if (s->bkt[b] == -1) {
            s->next[p] = s->head;
            s->head = p;
            s->bkt[b] = -2;
            if (s->next[p] >= 0)
                s->bkt[bbegin] = p;
            bbegin = b;
        } else {
            int32_t *l = um_link(s, s->bkt[b]);
            s->next[p] = *l;
            *l = p;
        }
    }
}

#define UM_FIRST 13            /* um_buckets[0] */

/* uw_umap_order of at most UM_FIRST keys: one table of UM_FIRST buckets,
 * never rehashed. A key goes to the front of its bucket's run of nodes
 * when the bucket has one (_M_insert_bucket_begin), else its bucket's run
 * starts at the list's head: the runs come in the reverse order of their
 * buckets' first keys, each run's keys in reverse order. Most trie nodes
 * have a few children: the emulation (rehash, then insert, the key's
 * bucket computed three times) was ~300 instructions a node with two or
 * more children, 37 M on bench (c). */
static void umap_order_small(const uint64_t *keys, size_t m, int32_t *order)
{
    int8_t last[UM_FIRST], prev[UM_FIRST], j;   /* -1: none */
    uint8_t b[UM_FIRST];
    size_t i, k = 0;

    memset(last, -1, sizeof last);
    for (i = 0; i < m; i++) {   /* each bucket's keys, newest first */
        b[i] = (uint8_t)(keys[i] % UM_FIRST);
        prev[i] = last[b[i]];
        last[b[i]] = (int8_t)i;
    }
    for (i = m; i-- > 0;)
        for (j = prev[i] < 0 ? last[b[i]] : -1; j >= 0; j = prev[j])
            order[k++] = j;     /* i starts its bucket: that bucket's run */
}

/* The iteration order of m distinct keys inserted in the given order into
 * an empty std::unordered_map<uint64_t, ...>: order[] gets positions.
 * Returns -1 on OOM; 1 if m is beyond the emulated sizes (order left as
 * inserted). */
int uw_umap_order(const uint64_t *keys, size_t m, int32_t *order)
{
    int32_t nbuf[UM_STACK], bbuf[UM_STACK];   /* most nodes have few children */
    um_state s = {0};
    size_t i, g = 0, nb = 0, last = sizeof um_buckets / sizeof *um_buckets;
    int32_t p;

    _Static_assert(UM_FIRST == 13, "um_buckets[0]");
    if (m <= UM_FIRST) {
        umap_order_small(keys, m, order);
        return 0;
    }
    for (i = 0; i < last && !nb; i++)     /* the table's size at the end */
        if (um_buckets[i] >= m)
            nb = um_buckets[i];
    if (!nb)
        return 1;
    s.next = m <= UM_STACK ? nbuf : malloc(m * sizeof *s.next);
    s.bkt = nb <= UM_STACK ? bbuf : malloc(nb * sizeof *s.bkt);
    if (!s.next || !s.bkt) {
        if (s.next != nbuf)
            free(s.next);
        if (s.bkt != bbuf)
            free(s.bkt);
        return -1;
    }
    s.head = -1;
    for (i = 0; i < m; i++) {
        if (i == 0 || i + 1 > um_buckets[g]) {
            if (i > 0)
                g++;
            um_rehash(&s, keys, um_buckets[g]);
        }
        um_insert(&s, keys, (int32_t)i);
    }
    for (i = 0, p = s.head; p >= 0; p = s.next[p])
        order[i++] = p;
    if (s.next != nbuf)
        free(s.next);
    if (s.bkt != bbuf)
        free(s.bkt);
    return 0;
}

/* Re-thread node p's child list into unordered_map iteration order. */
static int order_children(lp_unwinder *u, int32_t p)
{
    uint64_t kbuf[16], *keys = kbuf;
    int32_t cbuf[16], obuf[16], *kids = cbuf, *order = obuf, c;
    size_t m = 0, i;
    int rc = 0;

    for (c = u->nodes[p].child; c >= 0; c = u->nodes[c].sib)
        m++;
    if (m < 2)
        return 0;
    if (m > 16) {
        keys = malloc(m * sizeof *keys);
        kids = malloc(m * sizeof *kids);
        order = malloc(m * sizeof *order);
        if (!keys || !kids || !order) {
            rc = -1;
            goto out;
        }
    }
    for (i = 0, c = u->nodes[p].child; c >= 0; c = u->nodes[c].sib, i++) {
        kids[i] = c;
        keys[i] = u->nodes[c].addr;
    }
    if ((rc = uw_umap_order(keys, m, order)) != 0)
        goto out;
    u->nodes[p].child = kids[order[0]];
    for (i = 0; i + 1 < m; i++)
        u->nodes[kids[order[i]]].sib = kids[order[i + 1]];
    u->nodes[kids[order[m - 1]]].sib = -1;
    u->nodes[p].last_child = kids[order[m - 1]];
out:
    if (keys != kbuf) {
        free(keys);
        free(kids);
        free(order);
    }
    return rc < 0 ? -1 : 0;
}

/* ---- the walk -------------------------------------------------------------------- */

typedef struct fstack {         /* a FrameStack: u->stk[base .. base+n) */
    size_t base, n;
} fstack;

typedef struct walk {
    lp_unwinder *u;
    uint64_t repeat;
    lp_error *err;
    uint64_t lost;              /* records dropped (drop_unknown), or kept
                                   truncated at a hole: unknown context */
    unsigned truncating;        /* holes below the frame being walked */
    uint64_t inferred;          /* holes whose call site was inferred */
} walk;

/* collectSamplesFromFrame; `lost`: the frame is above a hole, its context
 * is not known and its records are dropped */
static inline __attribute__((always_inline)) int
collect_frame(walk *w, int32_t node, const fstack *s, bool lost, bool pushed)
{
    lp_unwinder *u = w->u;
    uint64_t callers = s->n < 2 ? 0 : u->ctxc.ids[s->base + s->n - 2];
    /* address contexts: the frames below the node's (its callers) */
    size_t na = pushed && s->n ? s->n - 1 : s->n;
    lp_ctx_entry *e = NULL, *prev;
    bool wli;
    int32_t r;
    int rc = 0;

    if (u->nodes[node].rec < 0)
        return 0;
    if (w->truncating)
        for (r = u->nodes[node].rec; r >= 0; r = u->recs[r].next)
            w->lost++;
    if (lost) {
        for (r = u->nodes[node].rec; r >= 0; r = u->recs[r].next)
            w->lost++;
        return 0;
    }
    for (r = u->nodes[node].rec; r >= 0 && rc == 0; r = u->recs[r].next) {
        const uw_rec *x = &u->recs[r];
        /* the empty context's records belong to their target's binary;
         * address contexts' to their source's (the callee's code) */
        if (u->o.addr_contexts) {
            size_t bin = uw_bin_of(x->a == UW_EXT ? x->b : x->a);
            if ((!e || (size_t)e->bin != bin) &&
                !(e = addr_context_of(u, u->stk + s->base, na,
                                      na ? u->ctxc.ids[s->base + na - 1] : 0,
                                      bin, w->err)))
                return -1;
        } else if (!e || s->n == 0) {
            prev = e;
            if (!(e = context_of(u, u->stk + s->base, s->n, callers,
                                 pushed ? node : -1, uw_bin_of(x->b), &wli,
                                 w->err)))
                return -1;
            if (e != prev && leaf_to(u, e, wli))
                return lp_error_set(w->err, LP_ENOMEM, "unwinder: out of memory");
        }
        uint64_t b = !x->branch || uw_bin_of(x->b) == (size_t)e->bin
                         ? uw_va(x->b)
                         : LP_CTX_XBIN(uw_bin_of(x->b), uw_va(x->b));
        if (u->rec)             /* recording: replayed with the count */
            rc = uw_eff_add(u, x->branch ? UW_EFF_BRANCH : UW_EFF_RANGE, e,
                            uw_va(x->a), b);
        else if (x->branch)
            rc = lp_counters_add_branch(e->counters, uw_va(x->a), b, w->repeat);
        else
            rc = lp_counters_add_range(e->counters, uw_va(x->a), b, w->repeat);
    }
    if (rc)
        return lp_error_set(w->err, LP_ENOMEM, "unwinder: out of memory");
    return 0;
}

/* A frame at addr onto s; with `callers`, the prefix id its children's
 * contexts need. Inlined: once per trie node (834 K on bench (c)), its
 * call was a fifth of its cost. */
static inline __attribute__((always_inline)) int
push_frame(walk *w, fstack *s, uint64_t addr, bool callers)
{
    lp_unwinder *u = w->u;
    size_t at = s->base + s->n++;
    uint64_t parent = s->n < 2 ? 0 : u->ctxc.ids[at - 1];

    u->stk[at] = addr;
    u->ctxc.stk_fr[at].k = UINT32_MAX;
    if (u->ctxc.cf_n > at)      /* its converted frames, and those above */
        u->ctxc.cf_n = at;
    u->ctxc.ids[at] = UINT64_MAX;
    if (callers && parent != UINT64_MAX &&
        !(u->ctxc.ids[at] = prefix_id(u, parent, addr, w->err)))
        return -1;
    return 0;
}

static int walk_node(walk *w, int32_t node, fstack *s, bool lost);

/* A truncated context: the frame and its subtree on a new, empty stack
 * above the frames below. */
static int walk_truncated(walk *w, int32_t node, const fstack *s)
{
    lp_unwinder *u = w->u;
    fstack empty = {s->base + s->n, 0};
    int32_t c;

    if (collect_frame(w, node, &empty, false, false))
        return -1;
    for (c = u->nodes[node].child; c >= 0; c = u->nodes[c].sib)
        if (walk_node(w, c, &empty, false))
            return -1;
    return 0;
}

/* A frame above a hole (an unknown frame). Its caller inferred from the
 * calls the LBR shows (infer.c) goes where the hole was; otherwise what
 * ran above it is kept in contexts truncated at the hole, as at an
 * external frame, and counted. A hole has no records of its own (the call
 * that leaves a frame reveals it first). While recording ahead the calls
 * are not all known yet: the recording is given up, and the sample is
 * unwound at the flush. */
static int walk_hole_child(walk *w, int32_t hole, int32_t c, fstack *s)
{
    lp_unwinder *u = w->u;
    uint64_t above = u->nodes[c].addr, site = 0;
    uint64_t below = s->n ? u->stk[s->base + s->n - 1] : 0;
    fstack empty = {s->base + s->n, 0};
    int rc;

    if (!(u->nodes[c].flags & UW_NF_HOLE) && above > UW_LAST_SENTINEL &&
        above != UW_EXT) {
        if (u->rec)
            return lp_error_set(w->err, LP_EUSAGE, "unwinder: a caller to "
                                "infer while recording ahead");
        uw_lock(u);
        site = uw_infer_caller(u, below, above,
                               u->nodes[hole].flags & UW_NF_OPT, w->err);
        uw_unlock(u);
        if (site == UINT64_MAX)
            return -1;
    }
    if (site) {
        w->inferred++;
        if (push_frame(w, s, site, true))
            return -1;
        rc = walk_node(w, c, s, false);
        s->n--;
        return rc;
    }
    w->truncating++;
    rc = walk_node(w, c, &empty, false);
    w->truncating--;
    return rc;
}

static int walk_node(walk *w, int32_t node, fstack *s, bool lost)
{
    lp_unwinder *u = w->u;
    uint64_t addr = u->nodes[node].addr;
    int32_t c;

    if ((u->nodes[node].flags & UW_NF_HOLE) && u->o.drop_unknown) {
        /* an unknown frame: nothing above it has a known context until an
         * external or signal frame starts a new one */
        for (c = u->nodes[node].child; c >= 0; c = u->nodes[c].sib)
            if (walk_node(w, c, s, true))
                return -1;
        return 0;
    }
    if (u->nodes[node].flags & UW_NF_HOLE) {
        for (c = u->nodes[node].child; c >= 0; c = u->nodes[c].sib)
            if (walk_hole_child(w, node, c, s))
                return -1;
        return 0;
    }
    if (addr == UW_EXT || addr == UW_SIG) {
        /* a truncated context: a new traversal without the frames below */
        if (walk_truncated(w, node, s))
            return -1;
        if (u->nodes[node].child >= 0)
            u->untracked_ext = true;
        return 0;
    }
    if (addr != 0 &&
        push_frame(w, s, addr, !lost && u->nodes[node].child >= 0))
        return -1;
    if (collect_frame(w, node, s, lost, addr != 0))
        return -1;
    for (c = u->nodes[node].child; c >= 0; c = u->nodes[c].sib)
        if (walk_node(w, c, s, lost))
            return -1;
    if (s->n > 0)
        s->n--;
    return 0;
}

int uw_collect(lp_unwinder *u, uint64_t repeat, lp_error *err)
{
    walk w = {u, repeat, err, 0, 0, 0};
    fstack s = {0, 0};
    size_t i;

    for (i = 0; i < u->nnodes; i++)
        if (order_children(u, (int32_t)i))
            return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    u->ctxc.cf_n = 0;           /* a new stack */
    if (uw_grow((void **)&u->stk, &u->stk_cap, u->nnodes + 1, sizeof *u->stk) ||
        uw_grow((void **)&u->ctxc.ids, &u->ctxc.ids_cap, u->nnodes + 1,
                sizeof *u->ctxc.ids) ||
        uw_grow((void **)&u->ctxc.stk_fr, &u->ctxc.stk_fr_cap, u->nnodes + 1,
                sizeof *u->ctxc.stk_fr))
        return lp_error_set(err, LP_ENOMEM, "unwinder: out of memory");
    if (walk_node(&w, 0, &s, false))
        return -1;
    if (w.inferred)
        u->st.inferred += repeat;
    if (w.lost && u->rec) {
        u->rec->lost++;
        u->rec->lost_records += w.lost;
    } else if (w.lost) {
        u->st.lost += repeat;
        u->st.lost_records = lp_sat_add(u->st.lost_records, w.lost * repeat);
    }
    return 0;
}
