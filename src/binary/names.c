/*
 * names.c - pure rules shared with llvm-profgen 19: function name
 * canonicalization (getCanonicalFnName, "selected", with LLVM's known
 * suffixes or a given list) and DWARF discriminator
 * decoding (base discriminator, duplication factor). No binary state.
 */
#include <string.h>

#include "lbr2prof/binary.h"

/* Last occurrence of needle in [s, s+n), or NULL. */
static const char *rfind(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = n >= k ? n - k + 1 : 0; i-- > 0;)
        if (memcmp(s + i, needle, k) == 0)
            return s + i;
    return NULL;
}

static const char *rfind_dot(const char *s, size_t n)
{
    for (size_t i = n; i-- > 0;)
        if (s[i] == '.')
            return s + i;
    return NULL;
}

size_t lp_canonical_fn_len_with(const char *name, const char *const *sfx,
                                size_t nsfx)
{
    /* A suffix is cut when its first or its trailing '.' is the last '.'
     * of the current candidate ("foo.cold", "foo.llvm.123"). */
    size_t n = strlen(name);
    for (size_t i = 0; i < nsfx; i++) {
        const char *it = rfind(name, n, sfx[i]);
        if (!it)
            continue;
        const char *dot = rfind_dot(name, n);
        if (dot == it || dot == it + strlen(sfx[i]) - 1)
            n = (size_t)(it - name);
    }
    return n;
}

size_t lp_canonical_fn_len(const char *name)
{
    /* Known suffixes in LLVM's order; ".__uniq." is kept because
     * FunctionSamples::HasUniqSuffix defaults to true. */
    static const char *const suffixes[] = {".llvm.", ".part."};
    return lp_canonical_fn_len_with(name, suffixes, 2);
}

static uint32_t prefix_decode(uint32_t u)
{
    if (u & 1)
        return 0;
    u >>= 1;
    if (u & 0x20)
        return ((u >> 1) & 0xfe0) | (u & 0x1f);
    return u & 0x1f;
}

static uint32_t next_component(uint32_t d)
{
    if ((d & 1) == 0)
        return d >> ((d & 0x40) ? 14 : 7);
    return d >> 1;
}

static bool is_probe_disc(uint32_t d)
{
    return (d & 7) == 7 && (d & ~(uint32_t)7) != 0;
}

uint32_t lp_disc_base(uint32_t d, bool fs)
{
    if (fs)
        return d;
    if (is_probe_disc(d)) {
        if (d & 0x10000000)
            return (d >> 16) & 7;
        return (d >> 3) & 0xffff;
    }
    return prefix_decode(d);
}

uint32_t lp_disc_dup_factor(uint32_t d, bool fs)
{
    if (fs)
        return 1;
    uint32_t r = prefix_decode(next_component(d));
    return r ? r : 1;
}
