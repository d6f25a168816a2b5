/* strings.c - workload: glibc's string functions, hot. Builds an array of
 * strings of many lengths and alignments, then, in rounds, measures them
 * (strlen), copies them (memcpy, strcpy), searches them (memchr, strchr,
 * strrchr), compares them (strcmp, memcmp, strncmp) and clears buffers
 * (memset). On an AVX-512 CPU glibc picks its EVEX variants of these
 * (vpcmpeqb into mask registers, kmovd, vptestnmb...), which is what
 * `record --simulate` must decode right. Deterministic; the argument
 * scales the work. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSTR 64

static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void fill(char **strs, uint32_t *seed)
{
    for (int i = 0; i < NSTR; i++) {
        size_t len = 1 + next_rand(seed) % (i < 8 ? 16 : 300);
        char *p = malloc(len + 64);
        size_t off = next_rand(seed) % 48; /* every alignment */
        for (size_t k = 0; k < len; k++)
            p[off + k] = (char)('a' + next_rand(seed) % 26);
        p[off + len] = 0;
        strs[i] = p + off;
    }
}

static uint64_t round_of(char **strs, char *buf, size_t cap)
{
    uint64_t h = 0;
    for (int i = 0; i < NSTR; i++) {
        const char *s = strs[i], *t = strs[(i * 7 + 3) % NSTR];
        size_t n = strlen(s);
        memset(buf, 0, cap);
        memcpy(buf + (i & 31), s, n + 1);
        h += n + (size_t)(strchr(s, 'q') ? 1 : 0);
        h += (uintptr_t)memchr(s, 'z', n) ? 3 : 0;
        h += (uintptr_t)strrchr(s, 'e') ? 5 : 0;
        h += (unsigned)(strcmp(buf + (i & 31), s) == 0);
        h += (unsigned)(strcmp(s, t) < 0) * 7;
        h += (unsigned)(strncmp(s, t, 4) > 0) * 11;
        h += (unsigned)(memcmp(s, t, n < 8 ? n : 8) == 0) * 13;
        strcpy(buf, t);
        h = h * 31 + strlen(buf);
    }
    return h;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 20;
    uint32_t seed = 2463534242u;
    char *strs[NSTR], buf[512];
    uint64_t h = 0;

    fill(strs, &seed);
    for (int r = 0; r < rounds; r++)
        h = h * 1000003 + round_of(strs, buf, sizeof buf) + (uint64_t)r;
    printf("strings: %d rounds, hash %llx\n", rounds, (unsigned long long)h);
    return 0;
}
