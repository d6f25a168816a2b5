/*
 * md5.c - MD5 (RFC 1321), for LLVM's MD5Hash() of function names in
 * `--use-md5` extbinary name tables. Written from the RFC; owns nothing
 * else. (A 100-line digest is cheaper than a new library dependency.)
 */
#include <string.h>

#include "lbr2prof/profile.h"

typedef struct md5_state {
    uint32_t a, b, c, d;
} md5_state;

static uint32_t rol(uint32_t x, unsigned n) { return (x << n) | (x >> (32 - n)); }

/* Per-round shift amounts and the sine-derived constants of the RFC. */
static const unsigned md5_shift[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};

static const uint32_t md5_k[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a,
    0xa8304613, 0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be,
    0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
    0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8,
    0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
    0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
    0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1,
    0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

static void md5_block(md5_state *s, const uint8_t *p)
{
    uint32_t m[16], a = s->a, b = s->b, c = s->c, d = s->d, f, t;
    unsigned i, g;

    for (i = 0; i < 16; i++)
        m[i] = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
               (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
    for (i = 0; i < 64; i++) {
        if (i < 16) {
            f = (b & c) | (~b & d);
            g = i;
        } else if (i < 32) {
            f = (d & b) | (~d & c);
            g = (5 * i + 1) & 15;
        } else if (i < 48) {
            f = b ^ c ^ d;
            g = (3 * i + 5) & 15;
        } else {
            f = c ^ (b | ~d);
            g = (7 * i) & 15;
        }
        t = d;
        d = c;
        c = b;
        b = b + rol(a + f + md5_k[i] + m[g], md5_shift[i]);
        a = t;
    }
    s->a += a;
    s->b += b;
    s->c += c;
    s->d += d;
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

void lp_md5(const void *data, size_t len, uint8_t digest[16])
{
    md5_state s = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
    const uint8_t *p = data;
    uint8_t tail[128];
    size_t rest = len % 64, n = 64, i;
    uint64_t bits = (uint64_t)len * 8;

    for (i = 0; i + 64 <= len; i += 64)
        md5_block(&s, p + i);
    memset(tail, 0, sizeof tail);
    if (rest)
        memcpy(tail, p + len - rest, rest);
    tail[rest] = 0x80;
    if (rest >= 56)
        n = 128;
    for (i = 0; i < 8; i++)
        tail[n - 8 + i] = (uint8_t)(bits >> (8 * i));
    md5_block(&s, tail);
    if (n == 128)
        md5_block(&s, tail + 64);
    put32(digest, s.a);
    put32(digest + 4, s.b);
    put32(digest + 8, s.c);
    put32(digest + 12, s.d);
}

uint64_t lp_md5_hash64(const void *data, size_t len)
{
    uint8_t d[16];
    uint64_t v = 0;
    int i;

    lp_md5(data, len, d);
    for (i = 7; i >= 0; i--)
        v = v << 8 | d[i];
    return v;
}
