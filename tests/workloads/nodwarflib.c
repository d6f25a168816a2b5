/* nodwarflib.c - the part of nodwarf.c's program built without -g: its
 * functions have pseudo probes but no DWARF. */
unsigned dw_leaf(unsigned x);

static volatile unsigned sink;

__attribute__((noinline)) static unsigned nd_helper(unsigned x)
{
    unsigned i, a = x;

    for (i = 0; i < 20; i++)
        a = a * 5 + (a >> 2);
    return a;
}

__attribute__((noinline)) unsigned nd_work(unsigned x)
{
    unsigned i, a = 0;

    for (i = 0; i < 10; i++)
        a += nd_helper(x + i);
    return a + dw_leaf(x);
}

__attribute__((noinline)) unsigned nd_tail(unsigned x)
{
    sink ^= x;
    return dw_leaf(x * 3); /* tail call */
}
