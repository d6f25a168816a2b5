/* mixedlib.c - workload library for mixed.c: a shared library built
 * without frame pointers (-O2 -fomit-frame-pointer). ml_reduce calls back
 * into the program with twelve accumulators live across the call, more
 * than the callee-saved registers other than rbp can hold, so the
 * compiler gives rbp to one of them: a frame-pointer walk from the
 * callback goes astray in its frame. ml_scale is a frameless leaf. */
typedef unsigned (*ml_cb)(unsigned);

__attribute__((noinline)) unsigned ml_scale(unsigned x)
{
    unsigned i, y = x;

    for (i = 0; i < 24 + (x & 7); i++)
        y = y * 2654435761u + (i ^ (y >> 13));
    return y;
}

unsigned ml_reduce(ml_cb cb, const unsigned *v, unsigned n)
{
    unsigned a0 = 1, a1 = 2, a2 = 3, a3 = 4, a4 = 5, a5 = 6, a6 = 7, a7 = 8;
    unsigned a8 = 9, a9 = 10, a10 = 11, a11 = 12, i;

    for (i = 0; i < n; i++) {
        unsigned x = cb(v[i]);
        a0 += x; a1 ^= a0 << 1; a2 += a1 >> 3; a3 ^= a2 * 5;
        a4 += a3 >> 2; a5 ^= a4 + 7; a6 += a5 << 2; a7 ^= a6 >> 1;
        a8 += a7 * 3; a9 ^= a8 >> 4; a10 += a9 << 3; a11 ^= a10 + x;
        if ((x & 15) == 0)
            a0 += ml_scale(a11);
    }
    return a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7 ^ a8 ^ a9 ^ a10 ^ a11;
}
