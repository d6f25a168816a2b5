/*
 * perfscript.c - the `perf script` text backend of the trace reader: turns
 * the text llvm-profgen 19 reads (`perf script -F ip,brstack`, with or
 * without callchains, aggregated or not, with --show-mmap-events lines)
 * into lp_event values. It mirrors llvm-profgen's PerfReader line rules:
 *
 *   - the kind of file (LBR-only or hybrid) is decided by the first line
 *     that looks like an LBR sample (checkPerfScriptType): hybrid if
 *     call-stack lines come right before it; no such line at all is an
 *     error ("Invalid perf script input!");
 *   - each line is then an MMAP event (>= 50 chars, not starting with a
 *     digit, containing PERF_RECORD_MMAP) or a sample, optionally preceded
 *     by a decimal repeat count on its own line;
 *   - lines llvm-profgen only warns about (comments, blank lines, broken
 *     LBR tokens, unparsable MMAP lines) are skipped and counted.
 *
 * Owns line buffering and text parsing, and the hand-off of what a
 * second thread counted in the file's tail (pstail.c counts; "the tail"
 * below parses and hands on). Does not own perf.data parsing, format
 * detection (reader.c) or any interpretation of the addresses.
 * Memory is bounded by the longest line (plus, before the first sample
 * line, the text that precedes it, up to LP_PSCRIPT_MAX_PREAMBLE bytes,
 * and a tail's table of distinct samples, pstail.c).
 * (Mapping the file instead of read() measured no faster: populating and
 * dropping page-table entries costs what the copy does.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "reader/perfscript.h"
#include "reader/pstail.h"
#include "util/cpus.h"
#include "util/hash.h"
#include "util/varint.h"
#include "util/zalloc.h"

#define LP_PSCRIPT_MAX_PREAMBLE (64u << 20)
#define LP_PSCRIPT_MAX_LINE (256u << 20)
#define LP_PSCRIPT_CHUNK (1u << 20)

enum ps_mode { PS_UNKNOWN = 0, PS_LBR, PS_HYBRID };

/* A line of the input: points into lp_pscript.buf, valid until the next
 * advance. */
typedef struct ps_line {
    const char *s;
    size_t len;
} ps_line;

/* Hybrid samples repeat (loops; replicated traces): a cache of sample
 * blocks - the call-stack lines and the LBR line - that parsed cleanly,
 * with what they parsed to. A block is known by its length and its
 * 128-bit XXH3 digest, not by a copy of its text (which is most of a
 * block's size: the digest lets three times as many blocks fit). A block
 * with the same length and digest as a cached one is not parsed again;
 * two different blocks would need a 128-bit collision to be taken for one
 * another (about 2^-128 per pair: below 10^-26 for a billion distinct
 * blocks). Two-way set-associative (a new block takes a free way, else
 * the older block of its set leaves), at most PS_CACHE_BYTES of results:
 * memory does not grow with the input. A block that leaves keeps its
 * bytes in the store, unused (events may point there); once the store is
 * used up, other new blocks are not cached. (Direct-mapped, bench (a)'s
 * 7,169 distinct blocks were parsed 8,841 times: two blocks sharing a
 * slot kept taking it from each other.) */
#define PS_CACHE_SLOTS 65536u
#define PS_CACHE_BYTES (8u << 20)
#define PS_CACHE_MAX_BLOCK 16384u

/* A cached block's sample, its arrays packed (util/varint.h): the frames,
 * then each branch's from and to, as zig-zag differences from the address
 * before, and its flags. A sample of 32 branches takes ~270 bytes instead
 * of ~880, so the store holds three times as many blocks: sqlite-line's
 * text has 71 k distinct samples, ~9.5 k of them fitted unpacked and every
 * other one was parsed again each time it came. Whoever makes the event
 * unpacks the arrays (lp_pscript_event_of). */
typedef struct ps_block {
    uint64_t id;                /* lp_sample.dup_id of this text */
    const lp_attr *attr;
    uint64_t sample_type, ip;
    size_t nframes, nbr;
    unsigned char data[];       /* frames, then branches, packed */
} ps_block;

/* A cache slot holds what a lookup checks - the digest and the length -
 * beside the block, so a hit reads one cache line: the block itself (a
 * second, dependent miss) is then read only by whoever makes the event
 * (lp_pscript_event_of, on the consumer's thread when prefetching). */
typedef struct ps_slot {
    const ps_block *b;
    uint64_t hi;
    uint64_t lo_len;            /* digest.lo ^ len: both checked at once */
} ps_slot;

/* The tail of the file counted on a second thread (pstail.c; see "the
 * tail" below). */
enum ps_tail_state {
    PT_NONE = 0,        /* no tail (any more) */
    PT_RUNNING,         /* counting; the head parses up to `from` */
    PT_COUNTED,         /* counted: the head parses up to res.start */
    PT_HANDING,         /* the head hands its distinct samples on */
};

typedef struct ps_tail {
    int allowed;        /* lp_pscript_allow_repeats; 2: decided */
    int forced;         /* LBR2PROF_TEXT_SPLIT=OFFSET[+] */
    int wait;           /* ... without '+': for the tail's own end */
    int off;            /* LBR2PROF_TEXT_SPLIT=off (any non-number) */
    uint64_t at;        /* forced: OFFSET */
    uint64_t again;     /* a new tail if this many bytes are left */
    enum ps_tail_state state;
    lp_pstail *t;
    uint64_t from;      /* the head checks from this offset on */
    uint64_t size;      /* the file's */
    size_t most;        /* distinct samples a tail may count */
    lp_pstail *nt;      /* PT_HANDING: the next tail, counting from nfrom */
    uint64_t nfrom;
    lp_pstail_res res;
    size_t next;        /* PT_HANDING: res.blk[next] is the next */
    uint64_t lineno;    /* PT_HANDING: the number of the line at res.start */
    char *buf;          /* a distinct unit's bytes, read back */
    size_t cap;
} ps_tail;

/* One distinct `event:` name seen in front of LBR lines. */
typedef struct ps_named_attr {
    lp_attr attr;
    char *name;
    struct ps_named_attr *next;
} ps_named_attr;

struct lp_pscript {
    FILE *f;
    char *name;
    /* Input buffer: [0, end) holds text; lines before `pos` are consumed.
     * While the mode is unknown nothing is discarded, so the preamble can
     * be parsed again once the mode is known. */
    char *buf;
    size_t cap, pos, end;
    uint64_t base;      /* file offset of buf[0] */
    uint64_t start_off; /* file offset of the current event's first line */
    int eof;            /* no more bytes from f */
    int io_error;
    uint64_t lineno;    /* number of the current line (1-based) */
    ps_line cur;
    int have_cur;       /* cur is valid; 0 at end of input */
    enum ps_mode mode;
    int failed;
    /* Per-sample scratch, reused. */
    uint64_t *frames;
    size_t nframes, frames_cap;
    lp_branch_entry *br;
    size_t nbr, br_cap;
    char *fname;        /* mmap filename copy */
    size_t fname_cap;
    lp_attr attr_lbr;   /* samples without an event name */
    ps_named_attr *named;
    lp_pscript_stats stats;
    lp_event ev;
    ps_slot *cache;             /* PS_CACHE_SLOTS, lazily */
    unsigned char *store;       /* PS_CACHE_BYTES the blocks live in */
    size_t store_used;
    uint64_t last_id;           /* ids are never reused */
    int refs;                   /* lp_pscript_next_ref: cached samples as refs */
    lp_pscript_ref ref;         /* the last one */
    ps_tail tl;                 /* the tail's thread (pstail.c) */
};

/* ---- small parsers ------------------------------------------------------ */

/* The per-token code of LBR lines: inlined, so the hot loop has no calls
 * and the general-code switch of the test entry points folds away. */
#define PS_INLINE static inline __attribute__((always_inline))

/* Hex digit value + 1; 0 for anything else. */
static const unsigned char hex1[256] = {
    ['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6,
    ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
    ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Hex digits from s up to the first other character or e, into *out
 * (64 bits; leading zeros are fine). Returns the stop position, NULL on
 * overflow: a nonzero digit before the last 16. The general code, a byte
 * at a time: hex_run's fallback and the reference its tests compare with.
 * The loop does not check for overflow: a longer run is checked after it. */
static const char *hex_run_bytes(const char *s, const char *e, uint64_t *out)
{
    const char *b = s;
    uint64_t v = 0;
    unsigned d;

    for (; s < e && (d = hex1[(unsigned char)*s]) != 0; s++)
        v = (v << 4) | (d - 1);
    if (s - b > 16) {               /* the digits shifted out: zeros? */
        while (b < s - 16 && *b == '0')
            b++;
        if (b < s - 16)
            return NULL;
    }
    *out = v;
    return s;
}

/* hex_run eight bytes at a time (SWAR): portable C, no byte after e read. */
#define BYTES(x) (0x0101010101010101ull * (x))

/* Up to 8 bytes of [s, e) as a little-endian word, zero past e. */
static uint64_t load8(const char *s, const char *e)
{
    uint64_t w = 0;
    unsigned i;

    if (e - s >= 8) {
        memcpy(&w, s, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        w = __builtin_bswap64(w);
#endif
        return w;
    }
    for (i = 0; s + i < e; i++)
        w |= (uint64_t)(unsigned char)s[i] << 8 * i;
    return w;
}

/* Bit 7 of each byte of w that is not a hex digit. Each byte is tested on
 * its low 7 bits (sums stay below 0x100: no carry into the next byte),
 * then bytes with bit 7 set are excluded. */
static uint64_t non_hex(uint64_t w)
{
    uint64_t t = w & BYTES(0x7f), l = t | BYTES(0x20);  /* l: 'A' -> 'a' */
    uint64_t digit = (t + BYTES(0x80 - '0')) & ~(t + BYTES(0x7f - '9'));
    uint64_t alpha = (l + BYTES(0x80 - 'a')) & ~(l + BYTES(0x7f - 'f'));

    return ~((digit | alpha) & ~w) & BYTES(0x80);
}

/* The value of 8 hex digits, the first in w's low byte. */
static uint64_t hex8_value(uint64_t w)
{
    uint64_t n = (w & BYTES(0x0f)) + ((w >> 6) & BYTES(1)) * 9; /* nibbles */

    n = ((n << 4) | (n >> 8)) & 0x00ff00ff00ff00ffull;      /* byte pairs */
    n = ((n << 8) | (n >> 16)) & 0x0000ffff0000ffffull;
    return ((n << 16) | (n >> 32)) & 0xffffffffull;
}

/* The value of the first k (1..8) hex digits of w. */
static uint64_t hex_prefix_value(uint64_t w, unsigned k)
{
    return hex8_value(w << (64 - 8 * k));   /* later bytes shifted out */
}

/* hex_run_bytes' result for runs of up to 15 digits, without a loop;
 * longer runs (rare) are left to it. */
static const char *hex_run_swar(const char *s, const char *e, uint64_t *out)
{
    uint64_t w0 = load8(s, e), m0 = non_hex(w0), w1, m1;
    unsigned k;

    if (m0) {                       /* 0..7 digits */
        k = (unsigned)__builtin_ctzll(m0) / 8;
        *out = k ? hex_prefix_value(w0, k) : 0;
        return s + k;
    }
    w1 = load8(s + 8, e);           /* e - s >= 8: a short load had a 0 */
    m1 = non_hex(w1);
    if (!m1)
        return hex_run_bytes(s, e, out);
    k = (unsigned)__builtin_ctzll(m1) / 8;
    *out = k ? hex8_value(w0) << 4 * k | hex_prefix_value(w1, k)
             : hex8_value(w0);
    return s + 8 + k;
}

#ifdef __SSE2__
/* hex_run_swar's result from 16 bytes at s (all readable), with SSE2:
 * a mask of the hex digits gives the run's length, the 16 bytes' nibbles
 * packed two to a byte its value (the bytes after the run shifted out). */
PS_INLINE const char *hex_run_sse2(const char *s, const char *e, uint64_t *out)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)s);
    __m128i l = _mm_or_si128(x, _mm_set1_epi8(0x20));   /* 'A' -> 'a' */
    /* unsigned c - lo < n, as signed (c - lo - 128) < n - 128 */
    __m128i dig = _mm_cmplt_epi8(_mm_sub_epi8(x, _mm_set1_epi8((char)('0' + 128))),
                                 _mm_set1_epi8(-128 + 10));
    __m128i alp = _mm_cmplt_epi8(_mm_sub_epi8(l, _mm_set1_epi8((char)('a' + 128))),
                                 _mm_set1_epi8(-128 + 6));
    __m128i hex = _mm_or_si128(dig, alp), b6, n;
    unsigned k = (unsigned)__builtin_ctz(~(unsigned)_mm_movemask_epi8(hex));
    uint64_t v;

    if (k >= 16)
        return hex_run_bytes(s, e, out);
    /* each digit's value, 0 for other bytes (they must not spill into
     * their neighbours' nibbles); then two to a byte, first digit high */
    b6 = _mm_srli_epi16(_mm_and_si128(x, _mm_set1_epi8(0x40)), 6);
    n = _mm_add_epi8(_mm_and_si128(x, _mm_set1_epi8(0x0f)),
                     _mm_add_epi8(_mm_slli_epi16(b6, 3), b6));  /* + 9 */
    n = _mm_and_si128(n, hex);
    n = _mm_and_si128(_mm_or_si128(_mm_slli_epi16(n, 4), _mm_srli_epi16(n, 8)),
                      _mm_set1_epi16(0x00ff));
    v = __builtin_bswap64((uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(n, n)));
    *out = (v >> 1) >> (63 - 4 * k);    /* the first k digits; 0 if none */
    return s + k;
}
#endif

/* hex_run_bytes' result, a word at a time. */
PS_INLINE const char *hex_run(const char *s, const char *e, uint64_t *out)
{
#ifdef __SSE2__
    if (e - s >= 16)
        return hex_run_sse2(s, e, out);
#endif
    return hex_run_swar(s, e, out);
}

/* StringRef::getAsInteger(16): the whole of [s, s+n) is hex digits, no
 * prefix, no sign, fits in 64 bits. */
static int parse_hex(const char *s, size_t n, uint64_t *out)
{
    const char *e = s + n;

    return n && hex_run(s, e, out) == e ? 0 : -1;
}

/* StringRef::getAsInteger(10) into a uint64_t. */
static int parse_dec(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (n == 0)
        return -1;
    for (i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

/* StringRef's trim set: " \t\n\v\f\r". */
static int is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' ||
           c == '\r';
}

static ps_line ltrim(ps_line l)
{
    while (l.len && is_ws(*l.s)) {
        l.s++;
        l.len--;
    }
    return l;
}

static ps_line rtrim(ps_line l)
{
    while (l.len && is_ws(l.s[l.len - 1]))
        l.len--;
    return l;
}

static int starts_with(ps_line l, const char *p)
{
    size_t n = strlen(p);
    return l.len >= n && memcmp(l.s, p, n) == 0;
}

/* Next space-separated token of l starting at *i (empty tokens skipped, as
 * StringRef::split(..., " ", -1, false) does). */
static int next_token(ps_line l, size_t *i, ps_line *tok)
{
    size_t a = *i, b;

    while (a < l.len && l.s[a] == ' ')
        a++;
    if (a >= l.len)
        return 0;
    b = a;
    while (b < l.len && l.s[b] != ' ')
        b++;
    tok->s = l.s + a;
    tok->len = b - a;
    *i = b;
    return 1;
}

static int has_char(ps_line l, char c)
{
    return l.len && memchr(l.s, c, l.len) != NULL;
}

/* ---- input buffering ------------------------------------------------------ */

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    size_t n = *cap ? *cap : 16;
    void *q;

    if (need <= *cap)
        return 0;
    while (n < need)
        n *= 2;
    q = realloc(*p, n * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

static int fill(lp_pscript *p, lp_error *err)
{
    size_t n;

    if (p->eof)
        return 0;
    if (p->mode != PS_UNKNOWN && p->pos > 0) {
        memmove(p->buf, p->buf + p->pos, p->end - p->pos);
        p->base += p->pos;
        p->end -= p->pos;
        p->pos = 0;
    }
    if (p->cap - p->end < LP_PSCRIPT_CHUNK / 2) {
        size_t limit = p->mode == PS_UNKNOWN ? LP_PSCRIPT_MAX_PREAMBLE
                                             : LP_PSCRIPT_MAX_LINE;
        if (p->end >= limit)
            return lp_error_set(err, LP_EFORMAT,
                                "%s: offset 0x%llx: line %llu: %s longer than "
                                "%zu MB", p->name,
                                (unsigned long long)(p->base + p->pos),
                                (unsigned long long)p->lineno + 1,
                                p->mode == PS_UNKNOWN
                                    ? "text before the first LBR sample line"
                                    : "line",
                                limit >> 20);
        if (grow((void **)&p->buf, &p->cap, p->end + LP_PSCRIPT_CHUNK, 1))
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", p->name);
    }
    if (!p->f) {
        p->eof = 1;
        return 0;
    }
    n = fread(p->buf + p->end, 1, p->cap - p->end, p->f);
    p->end += n;
    if (n == 0) {
        p->eof = 1;
        if (ferror(p->f))
            return lp_error_set(err, LP_EIO, "%s: read error: %s", p->name,
                                strerror(errno ? errno : EIO));
    }
    return 1;
}

/* Make `cur` the next line (std::getline semantics: a final line without
 * '\n' counts, an empty tail does not). Returns 1, 0 at end, -1 on error. */
static int advance(lp_pscript *p, lp_error *err)
{
    size_t scan = p->pos;

    if (p->have_cur) {
        p->pos = (size_t)(p->cur.s - p->buf) + p->cur.len;
        if (p->pos < p->end && p->buf[p->pos] == '\n')
            p->pos++;
        scan = p->pos;
        p->have_cur = 0;
    }
    for (;;) {
        char *nl = memchr(p->buf + scan, '\n', p->end - scan);
        if (nl || (p->eof && p->end > p->pos)) {
            size_t e = nl ? (size_t)(nl - p->buf) : p->end;
            p->cur.s = p->buf + p->pos;
            p->cur.len = e - p->pos;
            p->have_cur = 1;
            p->lineno++;
            return 1;
        }
        if (p->eof)
            return 0;
        scan = p->end;
        {
            size_t base = p->pos;
            int r = fill(p, err);
            if (r < 0)
                return -1;
            scan -= base - p->pos; /* fill may have moved the text */
        }
    }
}

/* ---- line classification (llvm-profgen's predicates) --------------------- */

/* isMMapEvent: length >= 50, first char not a digit, has PERF_RECORD_MMAP. */
static int is_mmap_line(ps_line l)
{
    if (l.len < 50 || (l.s[0] >= '0' && l.s[0] <= '9'))
        return 0;
    return memmem(l.s, l.len, "PERF_RECORD_MMAP", 16) != NULL;
}

static int is_count_line(ps_line l, uint64_t *count)
{
    return parse_dec(l.s, l.len, count) == 0;
}

static int is_frame_line(ps_line l, uint64_t *addr)
{
    l = ltrim(l);
    return parse_hex(l.s, l.len, addr) == 0;
}

/* isLBRSample: the second token (after an optional `event:` token) starts
 * with 0x and contains '/'. A one-entry line without leading IP fails. */
static int is_lbr_line(ps_line l)
{
    ps_line t0, t1;
    size_t i = 0;

    l = rtrim(ltrim(l));
    if (!next_token(l, &i, &t0))
        return 0;
    if (t0.s[t0.len - 1] == ':' && !next_token(l, &i, &t0))
        return 0;
    if (!next_token(l, &i, &t1))
        return 0;
    return starts_with(t1, "0x") && has_char(t1, '/');
}

int lp_pscript_frame_line(const char *s, size_t n)
{
    uint64_t a;

    return is_frame_line((ps_line){s, n}, &a);
}

int lp_pscript_mmap_line(const char *s, size_t n)
{
    return is_mmap_line((ps_line){s, n});
}

int lp_pscript_count_line(const char *s, size_t n)
{
    uint64_t c;

    return is_count_line((ps_line){s, n}, &c);
}

/* ---- mode detection (checkPerfScriptType) ---------------------------------- */

/* The first bytes must be text: a binary file that is not perf.data gets
 * an error at its first non-text byte instead of a confusing parse. */
static int check_text(lp_pscript *p, lp_error *err)
{
    size_t i, n;

    if (p->end < 4096 && fill(p, err) < 0)
        return -1;
    n = p->end < 4096 ? p->end : 4096;
    if (lp_pscript_sniff(p->buf, n) || n == 0)
        return 0;
    for (i = 0; i < n && lp_pscript_sniff(p->buf + i, 1); i++)
        ;
    return lp_error_set(err, LP_EFORMAT,
                        "%s: offset 0x%zx: byte 0x%02x: not a perf.data file "
                        "(bad magic) and not perf script text",
                        p->name, i, (unsigned char)p->buf[i]);
}

/* Scan from the start without consuming; then rewind to line 1. */
static int detect_mode(lp_pscript *p, lp_error *err)
{
    uint64_t v, frames = 0;
    int may_count = 1, r;

    if (check_text(p, err) < 0)
        return -1;

    while ((r = advance(p, err)) == 1) {
        if (may_count && is_count_line(p->cur, &v)) {
            may_count = 0;
            continue;
        }
        if (is_frame_line(p->cur, &v)) {
            frames++;
            may_count = 0;
            continue;
        }
        if (is_lbr_line(p->cur)) {
            p->mode = frames ? PS_HYBRID : PS_LBR;
            break;
        }
        frames = 0;
        may_count = 1;
    }
    if (r < 0)
        return -1;
    if (p->mode == PS_UNKNOWN)
        return lp_error_set(
            err, LP_EFORMAT,
            "%s: offset 0x%llx: line %llu: no LBR sample line found (expected "
            "perf script -F ip,brstack text: a line with at least two "
            "0xFROM/0xTO/... entries, or an IP and one entry)",
            p->name, (unsigned long long)(p->base + p->end),
            (unsigned long long)p->lineno);
    p->have_cur = 0;
    p->pos = 0;
    p->lineno = 0;
    p->attr_lbr.sample_type = LP_SAMPLE_BRANCH_STACK |
                              (p->mode == PS_HYBRID ? LP_SAMPLE_CALLCHAIN : 0);
    return advance(p, err) < 0 ? -1 : 0;
}

/* ---- MMAP lines --------------------------------------------------------------- */

/* Cursor over a line for the MMAP grammar. */
typedef struct ps_cur {
    const char *s, *e;
} ps_cur;

static int cur_lit(ps_cur *c, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(c->e - c->s) < n || memcmp(c->s, lit, n) != 0)
        return -1;
    c->s += n;
    return 0;
}

/* [0-9]+ (with an optional leading '-' when `neg` is allowed). */
static int cur_dec(ps_cur *c, int neg, uint64_t *v)
{
    const char *a = c->s;
    int minus = 0;

    if (neg && c->s < c->e && *c->s == '-') {
        minus = 1;
        c->s++;
        a++;
    }
    while (c->s < c->e && *c->s >= '0' && *c->s <= '9')
        c->s++;
    if (parse_dec(a, (size_t)(c->s - a), v))
        return -1;
    if (minus)
        *v = (uint64_t)0 - *v;
    return 0;
}

/* 0x[a-f0-9]+ (lowercase, as the v19 regex); `zero_ok` also accepts "0". */
static int cur_hex(ps_cur *c, int zero_ok, uint64_t *v)
{
    const char *a;

    if (cur_lit(c, "0x") < 0) {
        if (zero_ok && c->s < c->e && *c->s == '0') {
            c->s++;
            *v = 0;
            return 0;
        }
        return -1;
    }
    a = c->s;
    while (c->s < c->e && ((*c->s >= '0' && *c->s <= '9') ||
                           (*c->s >= 'a' && *c->s <= 'f')))
        c->s++;
    return parse_hex(a, (size_t)(c->s - a), v);
}

/* "]: PROT PATH" where PROT is [-a-z]+; the v19 regex's `.*\]:` is greedy,
 * so the last "]: " that is followed by a valid PROT wins. */
static int find_prot(const char *s, const char *e, const char **prot,
                     const char **path)
{
    const char *q;

    for (q = e - 3; q >= s; q--) {
        const char *r;
        if (q[0] != ']' || q[1] != ':' || q[2] != ' ')
            continue;
        r = q + 3;
        while (r < e && ((*r >= 'a' && *r <= 'z') || *r == '-'))
            r++;
        if (r > q + 3 && r < e && *r == ' ') {
            *prot = q + 3;
            *path = r + 1;
            return 0;
        }
    }
    return -1;
}

static void parse_prot(lp_mmap_event *m, const char *s, const char *e)
{
    m->prot = m->flags = 0;
    for (; s < e && *s != ' '; s++) {
        switch (*s) {
        case 'r': m->prot |= 1; break;  /* PROT_READ */
        case 'w': m->prot |= 2; break;  /* PROT_WRITE */
        case 'x': m->prot |= 4; break;  /* PROT_EXEC */
        case 's': m->flags |= 1; break; /* MAP_SHARED */
        case 'p': m->flags |= 2; break; /* MAP_PRIVATE */
        default: break;
        }
    }
}

/* Parse one "PERF_RECORD_MMAP[2] ..." occurrence starting at `s`. */
static int parse_mmap_at(lp_pscript *p, const char *s, const char *e)
{
    lp_mmap_event *m = &p->ev.u.mmap;
    ps_cur c = {s, e};
    uint64_t pid, tid;
    const char *prot, *path;
    size_t plen;

    memset(m, 0, sizeof *m);
    if (cur_lit(&c, "PERF_RECORD_MMAP2 ") == 0)
        m->is_mmap2 = 1;
    else if (cur_lit(&c, "PERF_RECORD_MMAP ") < 0)
        return -1;
    if (cur_dec(&c, 1, &pid) || cur_lit(&c, "/") || cur_dec(&c, 0, &tid) ||
        cur_lit(&c, ": [") || cur_hex(&c, 0, &m->start) || cur_lit(&c, "(") ||
        cur_hex(&c, 0, &m->len) || cur_lit(&c, ") @ ") ||
        cur_hex(&c, 1, &m->pgoff))
        return -1;
    if (m->is_mmap2) {
        unsigned maj = 0, mn = 0;
        unsigned long long ino = 0, gen = 0;
        if (cur_lit(&c, " ") || find_prot(c.s, e, &prot, &path))
            return -1;
        char f[96];     /* sscanf needs a terminated string: the line
                         * in the buffer is not */
        size_t n = (size_t)(e - c.s) < sizeof f - 1 ? (size_t)(e - c.s)
                                                    : sizeof f - 1;
        memcpy(f, c.s, n);
        f[n] = '\0';
        if (sscanf(f, "%x:%x %llu %llu", &maj, &mn, &ino, &gen) == 4) {
            m->maj = maj;
            m->min = mn;
            m->ino = ino;
            m->ino_generation = gen;
        }
    } else if (find_prot(c.s, e, &prot, &path) || prot != c.s + 3) {
        return -1;
    }
    m->pid = (uint32_t)pid;
    m->tid = (uint32_t)tid;
    parse_prot(m, prot, e);
    plen = (size_t)(e - path);
    if (grow((void **)&p->fname, &p->fname_cap, plen + 1, 1))
        return -2;
    memcpy(p->fname, path, plen);
    p->fname[plen] = '\0';
    m->filename = p->fname;
    return 0;
}

/* 1: event ready; 0: line skipped (llvm-profgen warns); -1 error. */
static int parse_mmap_line(lp_pscript *p, lp_error *err)
{
    const char *s = p->cur.s, *e = p->cur.s + p->cur.len;
    const char *q = s;

    while ((q = memmem(q, (size_t)(e - q), "PERF_RECORD_MMAP", 16))) {
        int r = parse_mmap_at(p, q, e);
        if (r == -2)
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", p->name);
        if (r == 0) {
            p->ev.kind = LP_EV_MMAP;
            p->ev.type = p->ev.u.mmap.is_mmap2 ? 10 : 1;
            p->stats.mmaps++;
            return 1;
        }
        q += 16;
    }
    p->stats.bad_mmap_lines++;
    return 0;
}

/* ---- LBR lines ------------------------------------------------------------------ */

static const char *const br_type_names[] = {
    "", "COND", "UNCOND", "IND", "CALL", "IND_CALL", "RET", "SYSCALL",
    "SYSRET", "COND_CALL", "COND_RET", "ERET", "IRQ", "SERROR", "NO_TX",
};

/* Flags after from/to, as perf prints them: M|P|-, X|-, A|-, cycles, type.
 * llvm-profgen ignores them; anything unexpected is left at 0. */
static uint64_t one_char_flag(ps_line f, size_t field)
{
    if (f.len != 1)
        return 0;
    if (field == 0)
        return f.s[0] == 'M' ? 1u : f.s[0] == 'P' ? 2u : 0u;
    if (field == 1)
        return f.s[0] == 'X' ? 4u : 0u;
    return f.s[0] == 'A' ? 8u : 0u;
}

static uint64_t br_type_flag(ps_line f)
{
    static const unsigned char len[] = {0, 4, 6, 3, 4, 8, 3, 7, 6, 9, 8, 4, 3, 6, 5};
    unsigned t;

    _Static_assert(sizeof len == sizeof br_type_names / sizeof *br_type_names,
                   "one length per branch type name");

    for (t = 1; t < sizeof br_type_names / sizeof *br_type_names; t++)
        if (len[t] == f.len && memcmp(br_type_names[t], f.s, f.len) == 0)
            return (uint64_t)t << 20;
    return 0;
}

static uint64_t parse_br_flags(ps_line rest)
{
    uint64_t fl = 0, v;
    size_t i = 0, field = 0;

    while (i <= rest.len && field < 5) {
        size_t j = i;
        while (j < rest.len && rest.s[j] != '/')
            j++;
        ps_line f = {rest.s + i, j - i};
        if (field < 3)
            fl |= one_char_flag(f, field);
        else if (field == 3 && parse_dec(f.s, f.len, &v) == 0)
            fl |= (v > 0xffff ? 0xffff : v) << 4;
        else if (field == 4 && f.len)
            fl |= br_type_flag(f);
        field++;
        i = j + 1;
    }
    return fl;
}

/* For br_flags_fast: the flag bit each character stands for (M and P in
 * the first field, X in the second, A in the third), and 16 for the two
 * characters a one-character field cannot be. */
static const unsigned char flag_bits[256] = {
    ['M'] = 1, ['P'] = 2, ['X'] = 4, ['A'] = 8, ['/'] = 16, [' '] = 16,
};

/* parse_br_flags' result for the usual shape of the flags, three fields
 * of one character (neither '/' nor ' '), then cycles (up to 9 digits or
 * none) at the token's end or before a '/'. s: after the '/' that follows
 * to; le: the line's end. Returns the token's end, NULL for any other
 * shape (parse_br_flags decides those). */
PS_INLINE const char *br_flags_fast(const char *s, const char *le, uint64_t *fl)
{
    const char *q = s + 6, *t;
    unsigned f0, f1, f2;
    uint64_t v = 0;

    if (le - s < 6 || s[1] != '/' || s[3] != '/' || s[5] != '/')
        return NULL;
    f0 = flag_bits[(unsigned char)s[0]];
    f1 = flag_bits[(unsigned char)s[2]];
    f2 = flag_bits[(unsigned char)s[4]];
    if ((f0 | f1 | f2) & 16)
        return NULL;
    for (; q < le && q < s + 15 && *q >= '0' && *q <= '9'; q++)
        v = v * 10 + (uint64_t)(*q - '0');
    if (q < le && *q != '/' && *q != ' ')
        return NULL;                        /* not a number, or 10 digits */
    *fl = (f0 & 3) | (f1 & 4) | (f2 & 8);
    if (q > s + 6)
        *fl |= (v > 0xffff ? 0xffff : v) << 4;
    if (q < le && *q == '/') {              /* the type, then the rest */
        for (t = ++q; q < le && *q != '/' && *q != ' '; q++)
            ;
        if (q > t)
            *fl |= br_type_flag((ps_line){t, (size_t)(q - t)});
        while (q < le && *q != ' ')
            q++;
    }
    return q;
}

/* The flags of the token from s (after to's '/') into *fl; returns the
 * token's end. general: parse_br_flags only (tests compare the two). */
PS_INLINE const char *br_flags(const char *s, const char *le, int general,
                            uint64_t *fl)
{
    const char *te = general ? NULL : br_flags_fast(s, le, fl);

    if (!te) {
        for (te = s; te < le && *te != ' '; te++)
            ;
        *fl = parse_br_flags((ps_line){s, (size_t)(te - s)});
    }
    return te;
}

/* hex_run, or with general set the byte-at-a-time code it stands for. */
PS_INLINE const char *hex_run_in(int general, const char *s, const char *e,
                              uint64_t *out)
{
    return general ? hex_run_bytes(s, e, out) : hex_run(s, e, out);
}

/* One `0xFROM/0xTO[/flags]` token starting at s (not a space), in a line
 * ending at le; tokens end at a space. The first two characters of from
 * and to are dropped unchecked, as llvm-profgen's substr(2) does: from is
 * the text before the token's first '/' (at least 3 characters), to the
 * text up to its second '/' or its end (the same), each past those two
 * all hex digits. 0 and *end = the token's end, or -1. general: only the
 * general (byte-at-a-time) code, for tests. */
PS_INLINE int parse_br_token(const char *s, const char *le, int general,
                          lp_branch_entry *b, const char **end)
{
    const char *q, *r, *te;

    if (le - s < 3 || s[0] == '/' || s[1] == '/' || s[1] == ' ')
        return -1;
    q = hex_run_in(general, s + 2, le, &b->from);
    if (!q || q == s + 2 || q == le || *q != '/')
        return -1;
    if (le - q < 4 || q[1] == '/' || q[1] == ' ' || q[2] == '/' || q[2] == ' ')
        return -1;
    r = hex_run_in(general, q + 3, le, &b->to);
    if (!r || r == q + 3 || (r < le && *r != '/' && *r != ' '))
        return -1;
    b->flags = 0;
    te = r;
    if (r < le && *r == '/')
        te = br_flags(r + 1, le, general, &b->flags);
    *end = te;
    return 0;
}

const char *lp_pscript_hex_run(const char *s, const char *e, int impl,
                               uint64_t *out)
{
    return impl == 1 ? hex_run_bytes(s, e, out)
         : impl == 2 ? hex_run_swar(s, e, out) : hex_run(s, e, out);
}

int lp_pscript_br_token(const char *s, const char *le, int general,
                        lp_branch_entry *b, const char **end)
{
    return parse_br_token(s, le, general, b, end);
}

static const lp_attr *attr_for_event(lp_pscript *p, ps_line name)
{
    ps_named_attr *a;

    for (a = p->named; a; a = a->next)
        if (strlen(a->name) == name.len && memcmp(a->name, name.s, name.len) == 0)
            return &a->attr;
    a = calloc(1, sizeof *a);
    if (!a || !(a->name = strndup(name.s, name.len))) {
        free(a);
        return NULL;
    }
    a->attr = p->attr_lbr;
    a->attr.name = a->name;
    a->next = p->named;
    p->named = a;
    return &a->attr;
}

/* extractLBRStack: fills p->br. Returns 1 if entries were found, 0 if the
 * line is not a usable sample, -1 on allocation failure. */
static int parse_lbr_line(lp_pscript *p, lp_sample *s)
{
    ps_line l = rtrim(p->cur), t;
    size_t i = 0;
    int have = next_token(l, &i, &t);

    p->nbr = 0;
    s->attr = &p->attr_lbr;
    if (have && t.s[t.len - 1] == ':') {
        ps_line nm = {t.s, t.len - 1};
        if (!(s->attr = attr_for_event(p, nm)))
            return -1;
        have = next_token(l, &i, &t);
    }
    if (have && !has_char(t, '/')) {
        if (parse_hex(t.s, t.len, &s->ip)) {
            p->stats.bad_lbr_lines++;
            return 0;
        }
        s->sample_type |= LP_SAMPLE_IP;
        have = next_token(l, &i, &t);
    }
    if (have) {                 /* the branches, from the token at t */
        const char *q = t.s, *le = l.s + l.len;
        while (q < le) {
            if (p->nbr == p->br_cap &&
                grow((void **)&p->br, &p->br_cap, p->nbr + 1, sizeof *p->br))
                return -1;
            if (parse_br_token(q, le, 0, &p->br[p->nbr], &q)) {
                p->stats.bad_lbr_lines++;
                break;
            }
            p->nbr++;
            while (q < le && *q == ' ')
                q++;
        }
    }
    s->branches = p->br;
    s->branch_nr = p->nbr;
    return p->nbr > 0;
}

/* ---- samples ----------------------------------------------------------------- */

/* A sample event with nothing in it yet but its count. Reads only p's
 * name, so lp_pscript_event_of may call it on another thread. */
static void sample_event(const lp_pscript *p, lp_event *ev, uint64_t count)
{
    memset(ev, 0, sizeof *ev);
    ev->kind = LP_EV_SAMPLE;
    ev->type = 9;
    ev->source = p->name;
    ev->u.sample.repeat = count;
}

static void sample_init(lp_pscript *p, uint64_t count)
{
    lp_sample *s = &p->ev.u.sample;

    sample_event(p, &p->ev, count);
    s->attr = &p->attr_lbr;
    s->sample_type = LP_SAMPLE_BRANCH_STACK;
}

/* extractCallstack: frame lines up to the " 0x" line. 1: frames read and
 * cur is the line after them; 0: a non-frame line aborted the sample (it
 * was consumed); -1 error. */
static int read_frames(lp_pscript *p, lp_error *err)
{
    uint64_t a;

    p->nframes = 0;
    while (p->have_cur && !starts_with(p->cur, " 0x")) {
        if (!is_frame_line(p->cur, &a)) {
            p->stats.skipped_lines++;
            return advance(p, err) < 0 ? -1 : 0;
        }
        if (grow((void **)&p->frames, &p->frames_cap, p->nframes + 1,
                 sizeof *p->frames))
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", p->name);
        p->frames[p->nframes++] = a;
        if (advance(p, err) < 0)
            return -1;
    }
    return p->nframes > 0;
}

/* ---- the sample-block cache -------------------------------------------- */

/* The block starting at cur: up to the end of the first line that starts
 * with " 0x", if it is all in the buffer. 0 if not; else *nlines = its
 * call-stack lines. */
static size_t block_at(const lp_pscript *p, const char **lbr, uint64_t *nlines)
{
    const char *s = p->cur.s, *e = p->buf + p->end, *q, *nl;
    uint64_t a;

    if ((size_t)(e - s) > PS_CACHE_MAX_BLOCK + 1)
        e = s + PS_CACHE_MAX_BLOCK + 1;     /* a longer block is not cached */
    /* only a block that starts with a frame line can parse (and be
     * cached); perf script's blank line between samples is not one, and
     * digesting the block behind it would be wasted */
    if (!is_frame_line(p->cur, &a))
        return 0;
    *nlines = 0;
    for (q = s; (q = memchr(q, '\n', (size_t)(e - q))) && e - q >= 4; q++) {
        ++*nlines;
        if (q[1] == ' ' && q[2] == '0' && q[3] == 'x')
            break;                      /* the LBR line follows */
    }
    if (!q || e - q < 4)
        return 0;
    if (!(nl = memchr(q + 1, '\n', (size_t)(e - q - 1))) ||
        (size_t)(nl - s) > PS_CACHE_MAX_BLOCK)
        return 0;
    *lbr = q + 1;
    return (size_t)(nl - s);
}

/* The two ways of d's set; way 0 holds the newer block. */
static ps_slot *cache_set(lp_pscript *p, const lp_digest *d)
{
    return &p->cache[(d->lo & (PS_CACHE_SLOTS / 2 - 1)) * 2];
}

/* The cache's memory, made on first use: the slots (lp_zalloc_written:
 * probed before written) and one store of PS_CACHE_BYTES that blocks are
 * carved from. One allocation, not one per block: this runs on the
 * prefetch thread, whose malloc arena grows a page (and a system call) at
 * a time. */
static int cache_init(lp_pscript *p)
{
    if (p->cache)
        return 0;
    if (!(p->cache = lp_zalloc_written(PS_CACHE_SLOTS * sizeof *p->cache)) ||
        !(p->store = malloc(PS_CACHE_BYTES))) {
        free(p->cache);
        p->cache = NULL;
        return -1;
    }
    return 0;
}

/* New space for a block of `bytes` from the store; NULL once the store is
 * used up (the cache then keeps what it has). Never the space of a block
 * it replaces: events still point there (lp_pscript_next's promise). */
/* Pack the sample's arrays into b->data; the bytes used. */
static size_t block_pack(ps_block *b, const lp_sample *s)
{
    unsigned char *q = b->data;
    uint64_t prev = 0;
    size_t i;

    for (i = 0; i < s->callchain_nr; i++)
        q += lp_put_sv(q, s->callchain[i], &prev);
    for (i = 0; i < s->branch_nr; i++) {
        q += lp_put_sv(q, s->branches[i].from, &prev);
        q += lp_put_sv(q, s->branches[i].to, &prev);
        q += lp_put_uv(q, s->branches[i].flags);
    }
    return (size_t)(q - b->data);
}

/* Remember a block that parsed cleanly into p->ev (no room: skip); the
 * event gets the block's id (its arrays stay the parser's). */
static void cache_put(lp_pscript *p, size_t len, const lp_digest *d)
{
    const lp_sample *s = &p->ev.u.sample;
    size_t most = sizeof(ps_block) +
                  LP_VARINT_MAX * (s->callchain_nr + 3 * s->branch_nr);
    ps_slot *set;
    ps_block *b;

    if (cache_init(p) || PS_CACHE_BYTES - p->store_used < most)
        return;
    set = cache_set(p, d);
    b = (ps_block *)(p->store + p->store_used);
    *b = (ps_block){++p->last_id, s->attr, s->sample_type, s->ip,
                    s->callchain_nr, s->branch_nr};
    p->store_used += (sizeof *b + block_pack(b, s) + 7) & ~(size_t)7;
    p->ev.u.sample.dup_id = b->id;
    set[1] = set[0];            /* the older block, if any, leaves */
    set[0] = (ps_slot){b, d->hi, d->lo ^ len};
}

static const ps_block *cache_get(lp_pscript *p, size_t len,
                                 const lp_digest *d)
{
    const ps_slot *set = p->cache ? cache_set(p, d) : NULL;
    uint64_t lo_len = d->lo ^ len;
    int w;

    for (w = 0; set && w < 2; w++)
        if (set[w].b && set[w].hi == d->hi && set[w].lo_len == lo_len)
            return set[w].b;
    return NULL;
}

/* Block b's arrays unpacked into *a, and s pointed at them. 0, or -1: no
 * memory. */
static int block_arrays(const ps_block *b, lp_sample *s, lp_pscript_arrays *a)
{
    const unsigned char *q = b->data;
    uint64_t prev = 0;
    size_t i;

    if (grow((void **)&a->frames, &a->frames_cap, b->nframes, sizeof *a->frames) ||
        grow((void **)&a->br, &a->br_cap, b->nbr, sizeof *a->br))
        return -1;
    for (i = 0; i < b->nframes; i++)
        a->frames[i] = lp_get_sv(&q, &prev);
    for (i = 0; i < b->nbr; i++) {
        a->br[i].from = lp_get_sv(&q, &prev);
        a->br[i].to = lp_get_sv(&q, &prev);
        a->br[i].flags = lp_get_uv(&q);
    }
    s->callchain = a->frames;
    s->branches = a->br;
    s->arrays_deferred = 0;
    return 0;
}

/* A cached block's sample as an event: what hybrid_sample would make,
 * its arrays unpacked into *a, or with a NULL, left for block_arrays
 * (callchain and branches NULL, arrays_deferred set). 0, or -1: no
 * memory. */
static int block_event(const lp_pscript *p, const ps_block *b, uint64_t count,
                       uint64_t calls, uint64_t offset, lp_event *ev,
                       lp_pscript_arrays *a)
{
    lp_sample *s = &ev->u.sample;

    sample_event(p, ev, count);
    ev->offset = offset;
    s->attr = b->attr;
    s->sample_type = b->sample_type;
    s->ip = b->ip;
    s->callchain_nr = b->nframes;
    s->branch_nr = b->nbr;
    s->dup_id = b->id;
    s->calls = calls;
    if (!a) {
        s->arrays_deferred = 1;
        return 0;
    }
    return block_arrays(b, s, a);
}

/* The sample of cached block b, with this repeat and calls (0: one): a
 * reference (refs) or the event. 0, or -1: no memory. */
static int cached_sample(lp_pscript *p, const ps_block *b, uint64_t count,
                         uint64_t calls, lp_error *err)
{
    lp_pscript_arrays own = {p->frames, p->frames_cap, p->br, p->br_cap};
    int r;

    if (p->refs) {
        p->ref = (lp_pscript_ref){b, count, 0, calls};
        return 0;
    }
    r = block_event(p, b, count, calls, 0, &p->ev, &own);
    p->frames = own.frames, p->frames_cap = own.frames_cap;
    p->br = own.br, p->br_cap = own.br_cap;
    return r < 0 ? lp_error_set(err, LP_ENOMEM, "%s: out of memory", p->name) : 0;
}

/* HybridPerfReader::parseSample. 1: sample ready; 0: nothing; -1 error.
 * A block seen before (cache) gives the same event, statistics and line
 * numbers without being parsed. */
static int hybrid_sample(lp_pscript *p, uint64_t count, lp_error *err)
{
    lp_sample *s = &p->ev.u.sample;
    const char *start = p->cur.s, *lbr = NULL;
    uint64_t bad0 = p->stats.bad_lbr_lines, nlines = 0;
    size_t blen = block_at(p, &lbr, &nlines);
    lp_digest d = {0, 0};
    const ps_block *b = NULL;
    int r;

    if (blen) {
        d = lp_digest_inline(start, blen);
        b = cache_get(p, blen, &d);
    }
    if (b) {
        if (cached_sample(p, b, count, 0, err) < 0)
            return -1;
        p->lineno += nlines;
        p->cur.s = lbr;
        p->cur.len = (size_t)(start + blen - lbr);
        return advance(p, err) < 0 ? -1 : 1;
    }
    r = read_frames(p, err);
    if (r < 0)
        return -1;
    if (r == 0) {
        if (p->have_cur && starts_with(p->cur, " 0x")) {
            p->stats.skipped_lines++;
            return advance(p, err) < 0 ? -1 : 0;
        }
        return 0;
    }
    if (!p->have_cur)
        return lp_error_set(err, LP_EFORMAT,
                            "%s: offset 0x%llx: line %llu: hybrid sample is "
                            "corrupted: %zu call-stack lines but no LBR line "
                            "after them (expected a line starting with \" 0x\")",
                            p->name, (unsigned long long)(p->base + p->end),
                            (unsigned long long)p->lineno + 1, p->nframes);
    sample_init(p, count);
    r = parse_lbr_line(p, s);
    if (r < 0)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", p->name);
    if (r == 1) {
        s->sample_type |= LP_SAMPLE_CALLCHAIN;
        s->callchain = p->frames;
        s->callchain_nr = p->nframes;
        if (!(s->sample_type & LP_SAMPLE_IP))
            s->ip = p->frames[0];
        s->sample_type |= LP_SAMPLE_IP;
        /* the block was parsed in place (no fill() before the LBR line
         * ends) and cleanly: remember it */
        if (blen && p->cur.s == lbr && p->cur.s + p->cur.len == start + blen &&
            p->stats.bad_lbr_lines == bad0)
            cache_put(p, blen, &d);
    }
    if (advance(p, err) < 0)
        return -1;
    return r;
}

/* LBRPerfReader::parseSample. */
static int lbr_sample(lp_pscript *p, uint64_t count, lp_error *err)
{
    int r;

    sample_init(p, count);
    r = parse_lbr_line(p, &p->ev.u.sample);
    if (r < 0)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", p->name);
    if (r == 0)
        p->stats.skipped_lines++;
    if (advance(p, err) < 0)
        return -1;
    return r;
}

/* parseEventOrSample for the current line. 1 event, 0 nothing, -1 error. */
static int step(lp_pscript *p, lp_error *err)
{
    uint64_t count = 1;

    p->start_off = p->base + (uint64_t)(p->cur.s - p->buf);
    if (p->cur.len == 0 && p->mode == PS_HYBRID) {
        /* perf script's blank line between samples, as hybrid_sample
         * takes it: the start of a sample whose call stack ends at once
         * (the line skipped), and an LBR line right after it goes too */
        p->stats.samples_seen++;
        p->stats.skipped_lines++;
        if (advance(p, err) < 0)
            return -1;
        if (p->have_cur && starts_with(p->cur, " 0x")) {
            p->stats.skipped_lines++;
            return advance(p, err) < 0 ? -1 : 0;
        }
        return 0;
    }
    if (is_mmap_line(p->cur)) {
        int r;
        memset(&p->ev, 0, sizeof p->ev);
        r = parse_mmap_line(p, err);
        if (r < 0)
            return -1;
        p->ev.source = p->name;
        p->ev.sid.pid = p->ev.u.mmap.pid;
        p->ev.sid.tid = p->ev.u.mmap.tid;
        if (advance(p, err) < 0)
            return -1;
        return r;
    }
    p->stats.samples_seen++;
    if (is_count_line(p->cur, &count)) {
        if (advance(p, err) < 0)
            return -1;
        if (!p->have_cur)
            return 0;
    }
    if (p->mode == PS_HYBRID)
        return hybrid_sample(p, count, err);
    return lbr_sample(p, count, err);
}

/* ---- the tail ------------------------------------------------------------------ */

/* With a consumer that weights samples by their repeat (lp_pscript_allow_
 * repeats), a regular file and two CPUs, a second thread counts the
 * samples of the file's tail (pstail.c) while this one parses the head.
 * Where the head gets to the first sample the tail counted, each distinct
 * sample of the tail's region is parsed once, from its first occurrence
 * (read back with pread), and handed on with its count as its repeat, in
 * first-occurrence order; then the head goes on where the region ended
 * (fseeko): the line numbers, the statistics and every event outside the
 * region as without the tail. Inside it, a distinct sample's effect is a
 * function of its bytes (pstail.c admits nothing else), so its parse,
 * counted `count` times, is what the sequential parse would have added.
 * A head that does not start a step exactly where the region starts (a
 * count line or a broken block before it that takes its first line) drops
 * the tail and parses on: never different, only slower.
 *
 * The split: PS_SPLIT_NUM/PS_SPLIT_DEN of the file is the tail's (it only
 * digests and counts, the head also parses and its consumer takes every
 * sample): the head stops the tail when it gets there, wherever the tail
 * is, and goes on after it; when it starts to hand the tail's samples on,
 * a new tail takes the same share of what the first one left (if at
 * least PS_SPLIT_AGAIN bytes, and unless the first one found samples that
 * seldom repeat), and so on: whichever side is faster, the two end
 * together within a round. (sqlite-probe.txt CS, 2.2 GB: two rounds; the
 * head parses 0.7 GB. A share of 3/5: 1.0 GB, 0.1-0.2 s more CPU.) LBR2PROF_TEXT_SPLIT=off: no tail;
 * =OFFSET: one tail, from OFFSET, on any file of any size, on one CPU
 * too, and the head waits for it to end by itself (tests); =OFFSET+: the
 * same, but the head stops it and new tails follow as by default;
 * LBR2PROF_TEXT_SPLIT_CAP=N: at most N distinct samples (default
 * PS_SPLIT_CAP, 32 bytes and an index slot or two each). */
#define PS_SPLIT_MIN (64u << 20)
#define PS_SPLIT_AGAIN (16u << 20)
#define PS_SPLIT_NUM 4
#define PS_SPLIT_DEN 5
#define PS_SPLIT_CAP (1u << 17)

static uint64_t cur_off(const lp_pscript *p)
{
    return p->base + (uint64_t)(p->cur.s - p->buf);
}

/* Where the tail of [start, end) begins. */
static uint64_t split_at(uint64_t start, uint64_t end)
{
    return start + (end - start) / PS_SPLIT_DEN * (PS_SPLIT_DEN - PS_SPLIT_NUM);
}

/* A tail from `from` (NULL: none). */
static lp_pstail *tail_launch(lp_pscript *p, uint64_t from)
{
    if (from >= p->tl.size)
        return NULL;
    return lp_pstail_start(fileno(p->f), from, p->tl.size, p->mode == PS_HYBRID,
                           p->tl.most);
}

/* The test switches, read when the reader opens (as tail.c's
 * LBR2PROF_DATA_SPLIT). */
static void tail_options(ps_tail *t)
{
    const char *env = getenv("LBR2PROF_TEXT_SPLIT");
    const char *cap = getenv("LBR2PROF_TEXT_SPLIT_CAP");

    t->forced = env && *env >= '0' && *env <= '9';
    t->off = env && !t->forced;
    t->wait = t->forced && !strchr(env, '+');
    t->again = t->wait ? UINT64_MAX : t->forced ? 1 : PS_SPLIT_AGAIN;
    t->at = t->forced ? strtoull(env, NULL, 10) : 0;
    t->most = cap ? strtoull(cap, NULL, 10) : PS_SPLIT_CAP;
}

/* After the mode is known: start the tail, if it is to be. */
static void tail_begin(lp_pscript *p)
{
    ps_tail *t = &p->tl;
    struct stat st;
    uint64_t from;

    t->allowed = 2;
    /* a regular file, read from its start (offsets are the file's) */
    if (t->off || !p->f || fstat(fileno(p->f), &st) ||
        !S_ISREG(st.st_mode) || ftello(p->f) != (off_t)(p->base + p->end))
        return;
    t->size = (uint64_t)st.st_size;
    if (t->forced)
        from = t->at;
    else if (lp_cpus() >= 2 && t->size >= PS_SPLIT_MIN)
        from = split_at(0, t->size);
    else
        return;
    if ((t->t = tail_launch(p, from)) != NULL) {
        t->from = from;
        t->state = PT_RUNNING;
    }
}

static void tail_drop(lp_pscript *p)
{
    lp_pstail_free(p->tl.t);
    p->tl.t = NULL;
    p->tl.state = PT_NONE;
}

/* Done with the tail's samples: the next tail, if any, counts on. */
static void tail_next(lp_pscript *p)
{
    ps_tail *t = &p->tl;

    lp_pstail_free(t->t);
    t->t = t->nt;
    t->nt = NULL;
    t->from = t->nfrom;
    t->state = t->t ? PT_RUNNING : PT_NONE;
}

/* The tail's result is of no use: a new tail further on, as after a hand-
 * off (not when the tail is waited for, nor after samples that seldom
 * repeat). */
static void tail_again(lp_pscript *p, uint64_t off)
{
    ps_tail *t = &p->tl;
    int distinct = t->res.distinct;

    tail_drop(p);
    if (distinct || t->size - off < t->again)
        return;
    t->from = split_at(off, t->size);
    if ((t->t = tail_launch(p, t->from)) != NULL)
        t->state = PT_RUNNING;
}

/* The head's step is at or past tl.from: the tail's result; its samples
 * from here on if this step starts where the tail's region does. */
static void tail_reached(lp_pscript *p)
{
    ps_tail *t = &p->tl;
    uint64_t off = cur_off(p);

    if (t->state == PT_RUNNING) {
        lp_pstail_finish(t->t, !t->wait, &t->res);
        t->state = PT_COUNTED;
        t->from = t->res.start;
        if (!t->res.nblk) {
            tail_again(p, off);     /* nothing (yet: a busy machine) */
            return;
        }
    }
    if (t->state != PT_COUNTED || off < t->res.start)
        return;
    if (off > t->res.start) {
        tail_again(p, off);         /* a step went over its start */
        return;
    }
    t->state = PT_HANDING;
    t->next = 0;
    t->lineno = p->lineno;
    if (!t->res.distinct && t->size - t->res.end >= t->again) {
        t->nfrom = split_at(t->res.end, t->size);
        t->nt = tail_launch(p, t->nfrom);
    }
    p->stats.samples_seen += t->res.units * (p->mode == PS_HYBRID ? 2 : 1);
    if (p->mode == PS_HYBRID)
        p->stats.skipped_lines += t->res.units;     /* the blank lines */
    p->stats.tail_units += t->res.units;
    p->stats.tail_blocks += t->res.nblk;
}

/* The input is the bytes [0, n) at file offset off: swap (and swap back)
 * the fields the line reader (advance, fill) works on. */
typedef struct ps_input {
    char *buf;
    size_t cap, pos, end;
    uint64_t base, lineno;
    int eof, have_cur;
    FILE *f;
    ps_line cur;
} ps_input;

static void input_swap(lp_pscript *p, ps_input *in)
{
    ps_input o = {p->buf, p->cap, p->pos, p->end, p->base, p->lineno,
                  p->eof, p->have_cur, p->f, p->cur};

    p->buf = in->buf, p->cap = in->cap, p->pos = in->pos, p->end = in->end;
    p->base = in->base, p->lineno = in->lineno;
    p->eof = in->eof, p->have_cur = in->have_cur, p->f = in->f, p->cur = in->cur;
    *in = o;
}

/* One distinct sample of the tail, `count` times: from the block cache,
 * else its bytes read back and parsed. As step(): 1, 0 or -1. */
static int tail_one(lp_pscript *p, const lp_pstail_blk *b, lp_error *err)
{
    uint64_t bad0 = p->stats.bad_lbr_lines, skip0 = p->stats.skipped_lines;
    const ps_block *cb = NULL;
    ps_input in;
    int r;

    p->start_off = b->off;
    if (p->mode == PS_HYBRID)
        cb = cache_get(p, b->len, &(lp_digest){b->lo, b->hi});
    if (cb) {
        if (cached_sample(p, cb, b->count, b->count, err) < 0)
            return -1;
        p->stats.samples += b->count - 1;
        return 1;
    }
    if (grow((void **)&p->tl.buf, &p->tl.cap, (size_t)b->len + 1, 1))
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", p->name);
    if (pread(fileno(p->f), p->tl.buf, b->len, (off_t)b->off) != (ssize_t)b->len)
        return lp_error_set(err, LP_EIO, "%s: offset 0x%llx: read error",
                            p->name, (unsigned long long)b->off);
    p->tl.buf[b->len] = '\n';
    in = (ps_input){p->tl.buf, (size_t)b->len + 1, 0, (size_t)b->len + 1,
                    b->off, 0, 1, 0, NULL, {NULL, 0}};
    input_swap(p, &in);
    r = advance(p, err);
    if (r == 1)
        r = p->mode == PS_HYBRID ? hybrid_sample(p, b->count, err)
                                 : lbr_sample(p, b->count, err);
    input_swap(p, &in);
    if (r < 0)
        return -1;
    p->stats.bad_lbr_lines += (b->count - 1) * (p->stats.bad_lbr_lines - bad0);
    p->stats.skipped_lines += (b->count - 1) * (p->stats.skipped_lines - skip0);
    if (r > 0 && p->ref.blk)
        p->ref.calls = b->count;
    else if (r > 0)
        p->ev.u.sample.calls = b->count;
    if (r > 0)
        p->stats.samples += b->count - 1;
    return r;
}

/* The next of the tail's samples; after the last, the head goes on at the
 * region's end. As step(). */
static int tail_step(lp_pscript *p, lp_error *err)
{
    ps_tail *t = &p->tl;
    uint64_t end = t->res.end, lines = t->res.lines;

    while (t->next < t->res.nblk) {
        int r = tail_one(p, &t->res.blk[t->next++], err);
        if (r != 0)
            return r;
    }
    p->lineno = t->lineno + lines - 1;
    tail_next(p);
    if (fseeko(p->f, (off_t)end, SEEK_SET))
        return lp_error_set(err, LP_EIO, "%s: offset 0x%llx: seek error: %s",
                            p->name, (unsigned long long)end, strerror(errno));
    p->pos = p->end = 0;
    p->base = end;
    p->eof = 0;
    p->have_cur = 0;
    return advance(p, err) < 0 ? -1 : 0;
}

/* step(), or a sample of the tail's. */
static int next_step(lp_pscript *p, lp_error *err)
{
    if (p->tl.state != PT_NONE && p->tl.state != PT_HANDING &&
        cur_off(p) >= p->tl.from)
        tail_reached(p);
    return p->tl.state == PT_HANDING ? tail_step(p, err) : step(p, err);
}

void lp_pscript_allow_repeats(lp_pscript *p)
{
    if (!p->tl.allowed)
        p->tl.allowed = 1;
}

/* ---- public entry points ------------------------------------------------------ */

lp_pscript *lp_pscript_open(FILE *f, const void *prefix, size_t prefix_len,
                            const char *name, lp_error *err)
{
    lp_pscript *p = calloc(1, sizeof *p);

    if (!p || !(p->name = strdup(name ? name : "-")))
        goto oom;
    p->f = f;
    tail_options(&p->tl);
    p->attr_lbr.branch_sample_type = LP_BRANCH_ANY;
    if (grow((void **)&p->buf, &p->cap, prefix_len + LP_PSCRIPT_CHUNK, 1))
        goto oom;
    if (prefix_len)
        memcpy(p->buf, prefix, prefix_len);
    p->end = prefix_len;
    return p;
oom:
    lp_pscript_close(p);
    lp_error_set(err, LP_ENOMEM, "%s: out of memory", name ? name : "-");
    return NULL;
}

/* lp_pscript_next, and with refs lp_pscript_next_ref. */
static int next_event(lp_pscript *p, int refs, const lp_event **ev,
                      lp_pscript_ref *ref, lp_error *err)
{
    if (p->failed)
        return lp_error_set(err, LP_EFORMAT, "%s: reader already failed",
                            p->name);
    if (p->mode == PS_UNKNOWN && detect_mode(p, err) < 0)
        goto fail;
    if (p->tl.allowed == 1)
        tail_begin(p);
    p->refs = refs;
    while (p->have_cur) {
        int r;
        p->ref.blk = NULL;
        if ((r = next_step(p, err)) < 0)
            goto fail;
        if (r > 0 && p->ref.blk) {
            p->stats.samples++;
            *ref = p->ref;
            ref->offset = p->start_off;
            return 2;
        }
        if (r > 0) {
            p->ev.offset = p->start_off;
            if (p->ev.kind == LP_EV_SAMPLE)
                p->stats.samples++;
            *ev = &p->ev;
            return 1;
        }
    }
    return 0;
fail:
    p->failed = 1;
    return -1;
}

int lp_pscript_next(lp_pscript *p, const lp_event **ev, lp_error *err)
{
    return next_event(p, 0, ev, NULL, err);
}

int lp_pscript_next_ref(lp_pscript *p, const lp_event **ev,
                        lp_pscript_ref *ref, lp_error *err)
{
    return next_event(p, 1, ev, ref, err);
}

int lp_pscript_event_of(const lp_pscript *p, const lp_pscript_ref *ref,
                        lp_event *out, lp_pscript_arrays *a)
{
    return block_event(p, ref->blk, ref->repeat, ref->calls, ref->offset, out, a);
}

int lp_pscript_arrays_of(const lp_pscript_ref *ref, lp_event *ev,
                         lp_pscript_arrays *a)
{
    return block_arrays(ref->blk, &ev->u.sample, a);
}

const lp_pscript_stats *lp_pscript_stats_get(const lp_pscript *p)
{
    return &p->stats;
}

uint64_t lp_pscript_offset(const lp_pscript *p)
{
    return p->base + p->pos;
}

int lp_pscript_is_hybrid(const lp_pscript *p)
{
    return p->mode == PS_HYBRID;
}

void lp_pscript_close(lp_pscript *p)
{
    ps_named_attr *a, *n;

    if (!p)
        return;
    for (a = p->named; a; a = n) {
        n = a->next;
        free(a->name);
        free(a);
    }
    free(p->name);
    free(p->buf);
    free(p->frames);
    free(p->br);
    free(p->fname);
    free(p->cache);
    free(p->store);
    lp_pstail_free(p->tl.t);
    lp_pstail_free(p->tl.nt);
    free(p->tl.buf);
    free(p);
}

int lp_pscript_sniff(const void *buf, size_t len)
{
    const unsigned char *b = buf;
    size_t i;

    if (len == 0)
        return 0;
    for (i = 0; i < len; i++) {
        unsigned char c = b[i];
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f' &&
            c != '\v')
            return 0;
        if (c == 0x7f)
            return 0;
    }
    return 1;
}
