/*
 * bigint.c - JSON integers of any size, as the service's Python reads them.
 * jansson keeps integers in 64 signed bits and refuses the whole text when
 * one is larger ("too big integer"), so a module offset of 2^63 or more (a
 * kernel address, any u64) made a valid request "not valid JSON". Owns the
 * rewrite that turns each such integer literal into a marker string (a NUL
 * byte and the literal's digits) before parsing, the reading of markers
 * back as integers, and Python's hex() of them. Not the validation rules
 * (request.c) nor the response (response.c).
 *
 * A marker cannot be confused with a string of the request: the rewrite
 * puts an 'x' before the first character of a string that starts with an
 * escaped NUL (`\u0000`, the only way JSON puts a NUL in a string), and
 * the caller reads markers only in a body that was rewritten. Like Python
 * 3.11 and later, an integer of more than 4300 digits is not valid JSON.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolicate/internal.h"

#define MAX_DIGITS 4300 /* Python's sys.int_info.default_max_str_digits */

/* The length of a JSON integer literal at p (not a real, not a bad
 * number): 0 when there is none. */
static size_t int_literal(const char *p, const char *end)
{
    const char *q = p + (p < end && *p == '-');

    if (q >= end || *q < '0' || *q > '9')
        return 0;
    if (*q == '0') {
        q++;
    } else {
        while (q < end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < end && (*q == '.' || *q == 'e' || *q == 'E' || (*q >= '0' && *q <= '9')))
        return 0;
    return (size_t)(q - p);
}

/* Does a literal of n characters (with its sign) fit in 64 signed bits? */
static int fits_int64(const char *p, size_t n)
{
    int neg = *p == '-';

    if (n - neg != 19)
        return n - neg < 19;
    return memcmp(p + neg, neg ? "9223372036854775808" : "9223372036854775807", 19) <= 0;
}

/* The end of the string whose opening quote is at p. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end && *p != '"'; p++)
        if (*p == '\\')
            p++;
    return p < end ? p + 1 : end;
}

static int put(char **out, size_t *len, size_t *cap, const char *s, size_t n)
{
    char *nb;

    if (*len + n + 1 > *cap) {
        size_t nc = (*len + n + 1) * 2;
        if (!(nb = realloc(*out, nc)))
            return -1;
        *out = nb;
        *cap = nc;
    }
    memcpy(*out + *len, s, n);
    *len += n;
    return 0;
}

/* Copies body[*from, to) and then s (n bytes). */
static int emit(char **out, size_t *len, size_t *cap, const char *body, size_t *from,
                size_t to, const char *s, size_t n)
{
    if (put(out, len, cap, body + *from, to - *from) || put(out, len, cap, s, n))
        return -1;
    *from = to;
    return 0;
}

char *lp_sym_rewrite_big_ints(const char *body, size_t len, size_t *outlen)
{
    const char *p = body, *end = body + len;
    char *out = NULL;
    size_t olen = 0, cap = 0, n, from = 0;
    int any = 0, r = 0;

    while (p < end && !r) {
        if (*p == '"') {
            /* A string that starts with NUL would read as a marker: it
             * gets an 'x' first (it still holds a NUL, which is all that
             * the validation of a name looks at; elsewhere a string is
             * not an integer whatever it holds). */
            if (end - p >= 7 && !memcmp(p + 1, "\\u0000", 6))
                r = emit(&out, &olen, &cap, body, &from, (size_t)(p + 1 - body), "x", 1);
            p = skip_string(p, end);
            continue;
        }
        n = int_literal(p, end);
        if (n && !fits_int64(p, n)) {
            r = n - (*p == '-') > MAX_DIGITS ||
                emit(&out, &olen, &cap, body, &from, (size_t)(p - body), "\"\\u0000", 7) ||
                emit(&out, &olen, &cap, body, &from, (size_t)(p + n - body), "\"", 1);
            any = 1;
        }
        p += n ? n : 1;
    }
    if (r || !any || emit(&out, &olen, &cap, body, &from, len, "", 0)) {
        free(out);
        return NULL;
    }
    *outlen = olen;
    return out;
}

/* The digits of a marker (after its NUL and sign), or NULL. */
static const char *marker(const json_t *v, int big, int *neg)
{
    const char *s;

    if (!big || !json_is_string(v) || json_string_length(v) < 2 ||
        *(s = json_string_value(v)) != '\0')
        return NULL;
    *neg = s[1] == '-';
    return s + 1 + *neg;
}

int lp_sym_json_int(const json_t *v, int big, long long *out)
{
    int neg;

    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return 1;
    }
    if (json_is_boolean(v)) {
        *out = json_is_true(v);
        return 1;
    }
    if (marker(v, big, &neg)) { /* beyond 64 bits: saturated */
        *out = neg ? LLONG_MIN : LLONG_MAX;
        return 1;
    }
    return 0;
}

/* Decimal digits into little-endian 32-bit limbs (*n of them), 9 digits
 * at a time: l = l * 10^k + chunk. */
static uint32_t *to_limbs(const char *d, size_t *n)
{
    size_t len = strlen(d), i, j, k;
    uint32_t *l = calloc(len / 9 + 2, sizeof *l);
    uint64_t carry, mul, t;

    if (!l)
        return NULL;
    *n = 1;
    for (i = 0; i < len; i += k) {
        k = len - i < 9 ? len - i : 9;
        for (carry = 0, mul = 1, j = 0; j < k; j++, mul *= 10)
            carry = carry * 10 + (uint64_t)(d[i + j] - '0');
        for (j = 0; j < *n; j++) {
            t = (uint64_t)l[j] * mul + carry;
            l[j] = (uint32_t)t;
            carry = t >> 32;
        }
        if (carry)
            l[(*n)++] = (uint32_t)carry;
    }
    return l;
}

json_t *lp_sym_offset_hex(const json_t *v, int big, uint64_t *val, int *lookup)
{
    char buf[32], *s, *p;
    const char *d;
    size_t n, i;
    int neg;
    uint32_t *l;
    json_t *r;

    *lookup = 0;
    if (!(d = marker(v, big, &neg))) {
        long long off = 0;
        lp_sym_json_int(v, 0, &off);
        if (off < 0)
            snprintf(buf, sizeof buf, "-0x%llx", -(unsigned long long)off);
        else
            snprintf(buf, sizeof buf, "0x%llx", off);
        *val = (uint64_t)off;
        *lookup = off >= 0;
        return json_string(buf);
    }
    if (neg || !(l = to_limbs(d, &n)))
        return NULL; /* validation refused negative ones */
    if (n <= 2) {
        *val = (uint64_t)l[0] | (n == 2 ? (uint64_t)l[1] << 32 : 0);
        *lookup = 1;
    }
    if (!(s = p = malloc(n * 8 + 3))) {
        free(l);
        return NULL;
    }
    p += sprintf(p, "0x%" PRIx32, l[n - 1]);
    for (i = n - 1; i-- > 0;)
        p += sprintf(p, "%08" PRIx32, l[i]);
    free(l);
    r = json_string(s);
    free(s);
    return r;
}
