/* recursion.c - workload: direct recursion (fib) and mutual recursion
 * (is_even/is_odd), all noinline so every level is a real frame. */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static long fib(long n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static int is_odd(unsigned n);

__attribute__((noinline)) static int is_even(unsigned n)
{
    return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) static int is_odd(unsigned n)
{
    return n == 0 ? 0 : is_even(n - 1);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 16;
    long f = fib(n);
    int e = is_even((unsigned)(n * 7));

    printf("fib(%ld)=%ld even=%d\n", n, f, e);
    return 0;
}
