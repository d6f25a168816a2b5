/* wasinlined.c - workload: one function, leaf(), both inlined into its
 * caller and called out of line from it, at the same source line (clang
 * statement attributes; build with -std=c2x): samples in either copy
 * have the one context [main:N @ mid:3 @ leaf], whose leaf is inlined for
 * some and not for others. llvm-profgen gives the context the
 * ContextWasInlined of the sample its unwinding reaches first (its hash
 * table's order), not of the first one recorded: the out-of-line calls
 * come first (the first 1/40 of the iterations), the inlined copy takes
 * the rest, so nearly all distinct samples - and most likely the first
 * one in that order - are inlined ones. Deterministic; the argument
 * scales the work. */
#include <stdio.h>
#include <stdlib.h>

static int leaf(int x)
{
    int s = 0;

    for (int i = 0; i < x; i++)
        s += (i ^ x) * 3;
    return s;
}

__attribute__((noinline)) static int mid(int x, int c)
{
    int s;
    if (c) { [[clang::always_inline]] s = leaf(x); } else { [[clang::noinline]] s = leaf(x); }
    return s ^ c;   /* no tail call: the out-of-line leaf has mid as caller */
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000, s = 0;

    for (int i = 0; i < n; i++)
        s += mid(i % 50 + 20, i >= n / 40);
    printf("%d\n", s);
    return 0;
}
