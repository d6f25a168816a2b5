/*
 * decode.c - the two probe sections -> the table of probe_internal.h, as
 * LLVM 22's MCPseudoProbeDecoder reads them (buildGUID2FuncDescMap,
 * buildAddress2ProbeMap): descriptions sorted by GUID; the function
 * records of .pseudo_probe as a forest of nodes (each node's children
 * contiguous, each node's probes contiguous in section order), top-level
 * records outside the GUID filter read but not kept; address deltas
 * chained through every record, sentinel probes turned into split-function
 * start addresses; then the probes indexed by address. Every read is
 * bounds-checked and every count checked against the bytes left, and the
 * inline tree is walked with an explicit stack: a malformed section is an
 * error naming the section and the offset, never a crash. Owns no lookup
 * (lookup.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"
#include "probe/probe_internal.h"
#include "util/grow.h"

/* ---- bounded readers ------------------------------------------------------ */

typedef struct pb_cur {
    const unsigned char *d;
    size_t pos, len;
    const char *file, *sec;
    lp_error *err;
} pb_cur;

static int bad(pb_cur *c, size_t at, const char *what)
{
    return lp_error_set(c->err, LP_EFORMAT, "%s: %s at offset 0x%zx: %s",
                        c->file, c->sec, at, what);
}

static int rd_u64(pb_cur *c, uint64_t *v, const char *what)
{
    uint64_t x = 0;
    int i;

    if (c->len - c->pos < 8)
        return bad(c, c->pos, what);
    for (i = 7; i >= 0; i--)
        x = x << 8 | c->d[c->pos + (size_t)i];
    c->pos += 8;
    *v = x;
    return 0;
}

static int rd_u8(pb_cur *c, uint8_t *v, const char *what)
{
    if (c->pos >= c->len)
        return bad(c, c->pos, what);
    *v = c->d[c->pos++];
    return 0;
}

/* LEB128, at most 10 bytes, no bit past 64. */
static int rd_leb(pb_cur *c, bool sign, uint64_t *v, const char *what)
{
    size_t at = c->pos;
    uint64_t x = 0;
    unsigned shift = 0;
    uint8_t b;

    do {
        if (c->pos >= c->len || shift >= 64)
            return bad(c, at, what);
        b = c->d[c->pos++];
        if (shift == 63 && (b & 0x7f) > 1 && !(sign && (b & 0x7f) == 0x7f))
            return bad(c, at, what);
        x |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (sign && shift < 64 && (b & 0x40))
        x |= ~(uint64_t)0 << shift;
    *v = x;
    return 0;
}

static int rd_u32(pb_cur *c, uint32_t *v, const char *what)
{
    size_t at = c->pos;
    uint64_t x;

    if (rd_leb(c, false, &x, what))
        return -1;
    if (x > UINT32_MAX)
        return bad(c, at, what);
    *v = (uint32_t)x;
    return 0;
}

/* ---- .pseudo_probe_desc ----------------------------------------------------- */

static int desc_cmp(const void *a, const void *b)
{
    const lp_probe_desc *x = a, *y = b;

    if (x->guid != y->guid)
        return x->guid < y->guid ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name; /* section order */
}

/* One pass to count and check, one to copy the names NUL-terminated. */
int pb_decode_descs(lp_probes *p, lp_error *err)
{
    pb_cur c = {p->desc_sec, 0, p->desc_len, p->path, ".pseudo_probe_desc",
                err};
    uint64_t guid, hash;
    uint32_t len;
    size_t n = 0, names = 0, i;
    char *w;

    while (c.pos < c.len) {
        if (rd_u64(&c, &guid, "truncated GUID (8 bytes expected)") ||
            rd_u64(&c, &hash, "truncated CFG checksum (8 bytes expected)") ||
            rd_u32(&c, &len, "bad name length (ULEB128 below 2^32 expected)"))
            return -1;
        if (c.len - c.pos < len)
            return bad(&c, c.pos, "name runs past the end of the section");
        c.pos += len;
        names += (size_t)len + 1;
        n++;
    }
    if (!(p->descs = calloc(n ? n : 1, sizeof *p->descs)) ||
        !(p->names = malloc(names ? names : 1)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    c.pos = 0;
    w = p->names;
    for (i = 0; i < n; i++) {
        rd_u64(&c, &p->descs[i].guid, "");
        rd_u64(&c, &p->descs[i].hash, "");
        rd_u32(&c, &len, "");
        memcpy(w, c.d + c.pos, len);
        w[len] = 0;
        p->descs[i].name = w;
        w += (size_t)len + 1;
        c.pos += len;
    }
    p->ndescs = n;
    qsort(p->descs, n, sizeof *p->descs, desc_cmp);
    return 0;
}

const lp_probe_desc *lp_probes_desc(const lp_probes *p, uint64_t guid)
{
    size_t lo = pb_lower(p->descs, p->ndescs, sizeof *p->descs, guid);

    return lo < p->ndescs && p->descs[lo].guid == guid ? &p->descs[lo] : NULL;
}

/* ---- function start addresses ------------------------------------------------- */

static int start_cmp(const void *a, const void *b)
{
    const lp_probe_start *x = a, *y = b;

    if (x->guid != y->guid)
        return x->guid < y->guid ? -1 : 1;
    return 0;
}

typedef struct pb_starts {
    lp_probe_start *v;
    size_t n;
} pb_starts;

typedef struct pb_tagged {      /* a symbol's start and table order */
    lp_probe_start s;
    uint32_t order;
} pb_tagged;

/* Every symbol: GUID -> address, the last symbol of a name in table order
 * winning (llvm-profgen's SymbolStartAddrs, a map assigned in order). */
static int all_starts(const lp_probes *p, pb_starts *s, lp_error *err)
{
    size_t n = p->nsyms, i, j, last;
    pb_tagged *t = calloc(n ? n : 1, sizeof *t);

    s->n = 0;
    if (!t || !(s->v = calloc(n ? n : 1, sizeof *s->v))) {
        free(t);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        t[i].s.guid = lp_probe_guid(p->syms[i].name);
        t[i].s.addr = p->syms[i].addr;
        t[i].order = p->syms[i].order;
    }
    qsort(t, n, sizeof *t, start_cmp);
    for (i = 0; i < n; i = j) {
        for (last = j = i; j < n && t[j].s.guid == t[i].s.guid; j++)
            if (t[j].order >= t[last].order)
                last = j;
        s->v[s->n++] = t[last].s;
    }
    free(t);
    return 0;
}

static uint64_t start_of(const pb_starts *s, uint64_t guid)
{
    size_t lo = pb_lower(s->v, s->n, sizeof *s->v, guid);

    return lo < s->n && s->v[lo].guid == guid ? s->v[lo].addr : 0;
}

/* ---- .pseudo_probe --------------------------------------------------------------- */

typedef struct pb_dec {
    lp_probes *p;
    pb_cur c;
    const uint64_t *guids;      /* sorted filter, or NULL */
    size_t nguids;
    pb_starts starts;
    uint64_t last;              /* LastAddr */
    bool addr_based;            /* EncodingIsAddrBased */
} pb_dec;

typedef struct pb_frame {       /* a node whose inlinees are being read */
    uint32_t node;              /* LP_PROBE_NONE: discarded */
    uint32_t left, next;        /* inlinees left, the next one's slot */
} pb_frame;

static bool wanted(const pb_dec *x, uint64_t guid)
{
    size_t lo;

    if (!x->guids)
        return true;
    lo = pb_lower(x->guids, x->nguids, sizeof *x->guids, guid);
    return lo < x->nguids && x->guids[lo] == guid;
}

static int new_nodes(pb_dec *x, uint32_t n, uint32_t *first)
{
    lp_probes *p = x->p;
    size_t cap = p->nodes_cap * sizeof *p->nodes;

    if (p->nnodes + n > UINT32_MAX - 1)
        return bad(&x->c, x->c.pos, "too many function records");
    if (lp_grow_bytes((void **)&p->nodes, &cap,
                      (p->nnodes + n) * sizeof *p->nodes,
                      64 * sizeof *p->nodes))
        return lp_error_set(x->c.err, LP_ENOMEM, "out of memory");
    p->nodes_cap = cap / sizeof *p->nodes;
    memset(p->nodes + p->nnodes, 0, n * sizeof *p->nodes);
    *first = (uint32_t)p->nnodes;
    p->nnodes += n;
    return 0;
}

static int add_probe(pb_dec *x, const lp_probe *pr)
{
    lp_probes *p = x->p;
    size_t cap = p->probes_cap * sizeof *p->probes;

    if (p->nprobes >= UINT32_MAX - 1)
        return bad(&x->c, x->c.pos, "too many probes");
    if (lp_grow_bytes((void **)&p->probes, &cap,
                      (p->nprobes + 1) * sizeof *p->probes,
                      256 * sizeof *p->probes))
        return lp_error_set(x->c.err, LP_ENOMEM, "out of memory");
    p->probes_cap = cap / sizeof *p->probes;
    p->probes[p->nprobes++] = *pr;
    return 0;
}

/* One probe of a node (kept when node != LP_PROBE_NONE). */
static int read_probe(pb_dec *x, uint32_t node)
{
    lp_probe pr = {.node = node};
    uint8_t v = 0;
    uint64_t raw = 0;

    if (rd_u32(&x->c, &pr.index, "bad probe id (ULEB128 below 2^32 "
               "expected)") ||
        rd_u8(&x->c, &v, "truncated probe type byte"))
        return -1;
    pr.type = v & 0xf;
    pr.attr = (v & 0x70) >> 4;
    if (v & 0x80) {
        if (rd_leb(&x->c, true, &raw, "bad probe address delta (SLEB128 "
                   "expected)"))
            return -1;
        pr.addr = x->last + raw;
    } else {
        if (rd_u64(&x->c, &raw, "truncated probe address (8 bytes "
                   "expected)"))
            return -1;
        pr.addr = raw;
        if (pr.attr & LP_PROBE_ATTR_SENTINEL) {
            uint64_t a = start_of(&x->starts, raw);

            if (a)
                pr.addr = a;
        } else {
            x->addr_based = true;
        }
    }
    if ((pr.attr & LP_PROBE_ATTR_HAS_DISC) &&
        rd_u32(&x->c, &pr.disc, "bad probe discriminator (ULEB128 below "
               "2^32 expected)"))
        return -1;
    x->last = pr.addr;
    if (node == LP_PROBE_NONE || (pr.attr & LP_PROBE_ATTR_SENTINEL))
        return 0;
    return add_probe(x, &pr);
}

/* A record's header and probes; *f becomes its frame. slot: its node,
 * LP_PROBE_NONE when discarded; top: a top-level record. */
static int read_record(pb_dec *x, bool top, uint32_t slot, uint32_t parent,
                       pb_frame *f)
{
    lp_probes *p = x->p;
    uint32_t site = 0, nprobes, nkids, i, first = (uint32_t)p->nprobes;
    uint64_t guid;
    size_t at;

    if (!top && rd_u32(&x->c, &site, "bad inline site probe id (ULEB128 "
                       "below 2^32 expected)"))
        return -1;
    at = x->c.pos;
    if (rd_u64(&x->c, &guid, "truncated function GUID (8 bytes expected)"))
        return -1;
    if (top && wanted(x, guid)) {
        if (new_nodes(x, 1, &slot))
            return -1;
        if (p->ntops + 1 > p->tops_cap) {
            size_t cap = p->tops_cap * sizeof *p->tops;

            if (lp_grow_bytes((void **)&p->tops, &cap,
                              (p->ntops + 1) * sizeof *p->tops, 64))
                return lp_error_set(x->c.err, LP_ENOMEM, "out of memory");
            p->tops_cap = cap / sizeof *p->tops;
        }
        p->tops[p->ntops++] = slot;
        if (!x->addr_based && start_of(&x->starts, guid))
            x->last = start_of(&x->starts, guid);
    }
    if (slot != LP_PROBE_NONE) {
        lp_probe_node *n = &p->nodes[slot];
        const lp_probe_desc *d = lp_probes_desc(p, guid);

        if (!d)
            return bad(&x->c, at, "function record without a .pseudo_probe_desc entry "
                       "for its GUID");
        n->guid = guid;
        n->parent = parent;
        n->site = site;
        n->desc = (int32_t)(d - p->descs);
    }
    if (rd_u32(&x->c, &nprobes, "bad probe count (ULEB128 below 2^32 "
               "expected)") ||
        rd_u32(&x->c, &nkids, "bad inlinee count (ULEB128 below 2^32 "
               "expected)"))
        return -1;
    for (i = 0; i < nprobes; i++)
        if (read_probe(x, slot))
            return -1;
    /* an inlinee record takes at least 11 bytes */
    if (nkids > (x->c.len - x->c.pos) / 11)
        return bad(&x->c, x->c.pos, "more inlinee records than the section "
                   "has room for");
    f->node = slot;
    f->left = nkids;
    f->next = LP_PROBE_NONE;
    if (slot != LP_PROBE_NONE) {
        p->nodes[slot].first_probe = first;
        p->nodes[slot].nprobes = (uint32_t)p->nprobes - first;
        p->nodes[slot].nchildren = nkids;
        if (nkids && new_nodes(x, nkids, &f->next))
            return -1;
        p->nodes[slot].first_child = f->next;
    }
    return 0;
}

/* One top-level record and all its inlinees, depth first. */
static int read_tree(pb_dec *x, pb_frame **stk, size_t *cap)
{
    size_t depth = 0;
    pb_frame *t;

    if (read_record(x, true, LP_PROBE_NONE, LP_PROBE_NONE, &(*stk)[0]))
        return -1;
    depth = 1;
    while (depth) {
        t = &(*stk)[depth - 1];
        if (!t->left) {
            depth--;
            continue;
        }
        t->left--;
        if (depth + 1 > *cap) {
            size_t bytes = *cap * sizeof **stk;

            if (lp_grow_bytes((void **)stk, &bytes,
                              (depth + 1) * sizeof **stk, 64 * sizeof **stk))
                return lp_error_set(x->c.err, LP_ENOMEM, "out of memory");
            *cap = bytes / sizeof **stk;
            t = &(*stk)[depth - 1];
        }
        {
            uint32_t slot = t->next, parent = t->node;

            if (slot != LP_PROBE_NONE)
                t->next++;
            if (read_record(x, false, slot, parent, &(*stk)[depth]))
                return -1;
        }
        depth++;
    }
    return 0;
}

typedef struct pb_key {
    uint64_t addr;
    uint32_t id;
} pb_key;

#define KEY_RADIX_BITS 11

/* One stable counting pass of k[0..n) into t by the digit of addr - lo
 * at `shift`. */
static void key_pass(const pb_key *k, pb_key *t, size_t n, uint64_t lo,
                     unsigned shift)
{
    size_t cnt[1u << KEY_RADIX_BITS] = {0}, i, sum = 0, c;
    const uint64_t mask = (1u << KEY_RADIX_BITS) - 1;

    for (i = 0; i < n; i++)
        cnt[((k[i].addr - lo) >> shift) & mask]++;
    for (i = 0; i <= mask; i++) {
        c = cnt[i];
        cnt[i] = sum;
        sum += c;
    }
    for (i = 0; i < n; i++)
        t[cnt[((k[i].addr - lo) >> shift) & mask]++] = k[i];
}

static int key_cmp(const void *x, const void *y)
{
    const pb_key *a = x, *b = y;

    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* The bits of addr - lo that all keys but at most n/64 fit in: the dense
 * part, a binary's text. The others sit far above it: sqlite-probe has
 * 3 of 51 K probes at ~2^62, the probes after the sentinel of a split
 * function whose start is unknown, chained from its GUID (llvm-profgen
 * reads the same addresses); their span made the radix sort 6 passes. */
static unsigned dense_bits(const pb_key *k, size_t n, uint64_t lo)
{
    size_t cnt[65] = {0}, out = 0, i;
    unsigned b;

    for (i = 0; i < n; i++)
        cnt[k[i].addr == lo ? 0 : 64 - __builtin_clzll(k[i].addr - lo)]++;
    for (b = 64; b > 0 && out + cnt[b] <= n / 64; b--)
        out += cnt[b];
    return b;
}

/* k[0..n), in id order, into (addr, id) order: the dense keys (see
 * dense_bits) by a stable LSD radix sort of as many passes as their
 * span needs (2 on a binary's text; qsort was 34 M instructions on
 * sqlite-probe's probes, on the main thread before the context sizes'
 * thread starts), then the few others by qsort after them. *bits: the
 * dense part's bits. 0, or -1 on no memory. */
static int sort_keys(pb_key *k, size_t n, uint64_t *lo_out, unsigned *bits)
{
    uint64_t lo = UINT64_MAX;
    unsigned shift;
    pb_key *t, *a = k, *b, *x;
    size_t i, nd = 0, no = 0;

    for (i = 0; i < n; i++)
        lo = k[i].addr < lo ? k[i].addr : lo;
    *lo_out = lo;
    *bits = dense_bits(k, n, lo);
    if (n < 2)
        return 0;
    if (!(t = malloc(n * sizeof *t)))
        return -1;
    for (i = 0; i < n; i++)         /* stable split: dense, then the rest */
        if (*bits < 64 && (k[i].addr - lo) >> *bits)
            t[no++] = k[i];
        else
            k[nd++] = k[i];
    if (no)
        memcpy(k + nd, t, no * sizeof *t);
    b = t;
    for (shift = 0; shift < *bits; shift += KEY_RADIX_BITS) {
        key_pass(a, b, nd, lo, shift);
        x = a, a = b, b = x;
    }
    if (a != k)
        memcpy(k, a, nd * sizeof *k);
    free(t);
    if (no > 1)
        qsort(k + nd, no, sizeof *k, key_cmp);
    return 0;
}

#define BUCKET_MIN_PROBES 64

/* The buckets in front of the address index: bucket i holds the index of
 * the first key >= lo + (i << shift), over the dense part, about four
 * probes a bucket: a lookup is then a search of a few keys, not of all
 * (lp_probes_call_at and lp_probes_in were ~50 M instructions of
 * sqlite-probe's generation). None for a small table. */
static int index_buckets(lp_probes *p, uint64_t lo, unsigned bits)
{
    size_t n = p->nprobes, nb, i, j = 0;
    unsigned lg = 0, shift;

    if (n < BUCKET_MIN_PROBES)
        return 0;
    while (((size_t)2 << lg) <= n / 4)
        lg++;
    shift = bits > lg ? bits - lg : 0;
    nb = (size_t)1 << (bits - shift);
    if (!(p->bkt = malloc((nb + 1) * sizeof *p->bkt)))
        return -1;
    for (i = 0; i < nb; i++) {
        while (j < n && p->addr_keys[j] - lo < ((uint64_t)i << shift))
            j++;
        p->bkt[i] = (uint32_t)j;
    }
    while (j < n && (bits == 64 || !((p->addr_keys[j] - lo) >> bits)))
        j++;
    p->bkt[nb] = (uint32_t)j;   /* the first key above the dense part */
    p->bkt_lo = lo;
    p->bkt_shift = shift;
    p->nbkt = nb;
    return 0;
}

static int index_by_addr(lp_probes *p, lp_error *err)
{
    size_t n = p->nprobes, i;
    pb_key *k = malloc((n ? n : 1) * sizeof *k);
    uint64_t lo;
    unsigned bits;

    if (!k || !(p->by_addr = malloc((n ? n : 1) * sizeof *p->by_addr)) ||
        !(p->addr_keys = malloc((n ? n : 1) * sizeof *p->addr_keys))) {
        free(k);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        k[i].addr = p->probes[i].addr;
        k[i].id = (uint32_t)i;
    }
    if (sort_keys(k, n, &lo, &bits)) {
        free(k);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        p->by_addr[i] = k[i].id;
        p->addr_keys[i] = k[i].addr;
    }
    free(k);
    if (index_buckets(p, lo, bits))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

static int set_filter(pb_dec *x, const uint64_t *guids, size_t n,
                      uint64_t **own, lp_error *err)
{
    *own = NULL;
    if (!guids)
        return 0;
    if (!(*own = malloc((n ? n : 1) * sizeof **own)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    memcpy(*own, guids, n * sizeof **own);
    qsort(*own, n, sizeof **own, u64_cmp);
    x->guids = *own;
    x->nguids = n;
    return 0;
}

static int set_starts(pb_dec *x, const lp_probe_start *starts, size_t n,
                      lp_error *err)
{
    if (!starts)
        return all_starts(x->p, &x->starts, err);
    if (!(x->starts.v = malloc((n ? n : 1) * sizeof *x->starts.v)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    memcpy(x->starts.v, starts, n * sizeof *starts);
    qsort(x->starts.v, n, sizeof *starts, start_cmp);
    x->starts.n = n;
    return 0;
}

int lp_probes_decode(lp_probes *p, const uint64_t *guids, size_t nguids,
                     const lp_probe_start *starts, size_t nstarts,
                     lp_error *err)
{
    pb_dec x = {.p = p, .c = {p->probe_sec, 0, p->probe_len, p->path,
                              ".pseudo_probe", err}};
    pb_frame *stk = NULL;
    size_t cap = 64;
    uint64_t *own = NULL;
    int rc = 0;

    if (p->decoded)
        return lp_error_set(err, LP_EUSAGE, "%s: pseudo probes already "
                            "decoded", p->path);
    p->decoded = true;
    if (set_filter(&x, guids, nguids, &own, err) ||
        set_starts(&x, starts, nstarts, err))
        rc = -1;
    else if (!(stk = malloc(cap * sizeof *stk)))
        rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    while (rc == 0 && x.c.pos < x.c.len)
        rc = read_tree(&x, &stk, &cap);
    if (rc == 0)
        rc = index_by_addr(p, err);
    free(stk);
    free(own);
    free(x.starts.v);
    return rc;
}

uint64_t lp_probe_guid(const char *name)
{
    return lp_md5_hash64(name, strlen(name));
}

int lp_probes_symbols_at(const lp_probes *p, uint64_t addr,
                         lp_probe_start **v, size_t *n, size_t *cap)
{
    size_t lo = pb_lower(p->syms, p->nsyms, sizeof *p->syms, addr), bytes;

    for (; lo < p->nsyms && p->syms[lo].addr == addr; lo++) {
        bytes = *cap * sizeof **v;
        if (lp_grow_bytes((void **)v, &bytes, (*n + 1) * sizeof **v,
                          16 * sizeof **v))
            return -1;
        *cap = bytes / sizeof **v;
        (*v)[*n].guid = lp_probe_guid(p->syms[lo].name);
        (*v)[(*n)++].addr = addr;
    }
    return 0;
}
