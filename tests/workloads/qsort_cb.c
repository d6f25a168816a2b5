/* qsort_cb.c - workload: libc's qsort calling back into the program
 * (external code between two frames of the program). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

__attribute__((noinline)) static void fill(int *v, int n)
{
    unsigned s = 12345;
    int i;

    for (i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        v[i] = (int)(s >> 8);
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    int *v = malloc((size_t)n * sizeof *v);

    if (!v)
        return 1;
    fill(v, n);
    qsort(v, (size_t)n, sizeof *v, cmp);
    printf("%d %d\n", v[0], v[n - 1]);
    free(v);
    return 0;
}
