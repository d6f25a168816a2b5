/* dispatch.c - workload: an interpreter loop calling its opcode handlers
 * through a table of function pointers (indirect calls), handlers that
 * call helpers and, for one opcode, the interpreter again (recursion
 * through the table). Argument: rounds (default 2000). */
#include <stdio.h>
#include <stdlib.h>

typedef struct vm vm;
typedef void (*op_fn)(vm *, unsigned);

struct vm {
    unsigned acc, depth;
    const unsigned char *code;
    unsigned len;
};

static volatile unsigned sink;
static void run(vm *m, const unsigned char *code, unsigned len);

__attribute__((noinline)) static unsigned mix(unsigned x)
{
    unsigned i;

    for (i = 0; i < 6 + (x & 3); i++)
        x = (x ^ (x >> 5)) * 0x9e37u + sink;
    return x;
}

__attribute__((noinline)) static void op_add(vm *m, unsigned a) { m->acc += a + sink; }
__attribute__((noinline)) static void op_mix(vm *m, unsigned a) { m->acc = mix(m->acc + a); }
__attribute__((noinline)) static void op_sq(vm *m, unsigned a)
{
    unsigned i;

    for (i = 0; i < (a & 7) + 3; i++)
        m->acc = m->acc * m->acc + i;
}

static const unsigned char sub_prog[] = {0, 3, 1, 5, 2, 2, 1, 7};

__attribute__((noinline)) static void op_call(vm *m, unsigned a)
{
    if (m->depth < 3) {
        m->depth++;
        run(m, sub_prog, sizeof sub_prog);
        m->depth--;
    }
    m->acc ^= a;
}

static const op_fn table[] = {op_add, op_mix, op_sq, op_call};

__attribute__((noinline)) static void run(vm *m, const unsigned char *code, unsigned len)
{
    unsigned pc;

    for (pc = 0; pc + 1 < len; pc += 2)
        table[code[pc] & 3](m, code[pc + 1]);
}

int main(int argc, char **argv)
{
    static const unsigned char prog[] = {0, 1, 1, 2, 2, 3, 3, 1, 1, 9, 0, 4, 2, 6, 3, 2};
    int rounds = argc > 1 ? atoi(argv[1]) : 2000, i;
    vm m = {0, 0, prog, sizeof prog};

    for (i = 0; i < rounds; i++)
        run(&m, prog, sizeof prog);
    printf("%u\n", m.acc + sink);
    return 0;
}
