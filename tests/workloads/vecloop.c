/* vecloop.c - workload: loops a compiler vectorizes. Built with
 * -march=znver4 they become AVX-512 code (EVEX, mask registers, masked
 * tails, gathers, vpternlog, vpopcnt), interleaved with the loop and call
 * branches around them - code capstone 4 does not fully decode, which
 * `record --simulate` must still trace exactly. Deterministic; the
 * argument scales the work. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1000

__attribute__((noinline)) static void saxpy(float *y, const float *x,
                                            float a, int n)
{
    for (int i = 0; i < n; i++)
        y[i] = a * x[i] + y[i];
}

__attribute__((noinline)) static int64_t masked_sum(const int32_t *v,
                                                    int n, int32_t lim)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        if (v[i] < lim)
            s += v[i];
    return s;
}

__attribute__((noinline)) static uint32_t popcounts(const uint64_t *w, int n)
{
    uint32_t c = 0;
    for (int i = 0; i < n; i++)
        c += (uint32_t)__builtin_popcountll(w[i] ^ (w[i] >> 3));
    return c;
}

__attribute__((noinline)) static int64_t gather(const int32_t *v,
                                                const int32_t *idx, int n)
{
    int64_t s = 0;
    for (int i = 0; i < n; i++)
        s += v[idx[i]];
    return s;
}

__attribute__((noinline)) static void bytes(uint8_t *d, const uint8_t *a,
                                            const uint8_t *b, int n)
{
    for (int i = 0; i < n; i++)
        d[i] = (uint8_t)((a[i] & b[i]) | (~a[i] & (uint8_t)(b[i] >> 1)));
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    static float x[N], y[N];
    static int32_t v[N], idx[N];
    static uint64_t w[N];
    static uint8_t a[N], b[N], d[N];
    uint64_t h = 0;

    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 17);
        y[i] = (float)(i % 5);
        v[i] = (int32_t)((i * 2654435761u) >> 20) - 2048;
        idx[i] = (int32_t)((i * 7919u) % N);
        w[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
        a[i] = (uint8_t)(i * 13);
        b[i] = (uint8_t)(i * 29);
    }
    for (int r = 0; r < rounds; r++) {
        int n = N - (r % 37); /* tails of every length */
        saxpy(y, x, 0.5f, n);
        h += (uint64_t)masked_sum(v, n, (int32_t)(r * 7) - 100);
        h += popcounts(w, n);
        h += (uint64_t)gather(v, idx, n);
        bytes(d, a, b, n);
        h += d[r % N] + (uint64_t)y[r % N];
    }
    printf("vecloop: %d rounds, hash %llx\n", rounds, (unsigned long long)h);
    return 0;
}
