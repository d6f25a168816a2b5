/* threaded.c - workload: threaded-code dispatch. Each opcode handler ends
 * in a tail call through the handler table (`return table[op](vm)`, which
 * -O2 compiles to `jmp *table(,%rax,8)`), so a run of the interpreter is
 * one chain of tail calls much longer than the LBR: a sample at a
 * handler's entry or exit has a frame-pointer walk without its caller and
 * an LBR of jumps between handlers only. The interpreter is entered from
 * one call site per program, many short programs in turn. Deterministic;
 * the argument scales the work. */
#include <stdio.h>
#include <stdlib.h>

typedef struct vm {
    const unsigned char *pc;
    long acc, n;
} vm;

typedef long (*handler)(vm *v);

enum { OP_INC, OP_DBL, OP_MIX, OP_DEC, OP_LOOP, OP_HALT, NOPS };

static const handler table[NOPS];

#define NEXT(v) return table[*(v)->pc++](v)

__attribute__((noinline)) static long op_inc(vm *v) { v->acc += 3; NEXT(v); }
__attribute__((noinline)) static long op_dbl(vm *v) { v->acc = v->acc * 2 + 1; NEXT(v); }
__attribute__((noinline)) static long op_mix(vm *v)
{
    v->acc ^= v->acc >> 7;
    v->acc *= 0x9e3779b1;
    NEXT(v);
}
__attribute__((noinline)) static long op_dec(vm *v) { v->n--; NEXT(v); }
__attribute__((noinline)) static long op_loop(vm *v)
{
    if (v->n > 0)
        v->pc -= 5;         /* back to the start of the loop body */
    NEXT(v);
}
__attribute__((noinline)) static long op_halt(vm *v) { return v->acc; }

static const handler table[NOPS] = {op_inc, op_dbl, op_mix, op_dec, op_loop,
                                    op_halt};

/* The one call into the chain of tail calls. */
__attribute__((noinline)) static long run(const unsigned char *code, long n)
{
    vm v = {code + 1, (long)code[0], n};

    return table[code[0] % NOPS](&v);
}

int main(int argc, char **argv)
{
    static const unsigned char prog[] = {OP_INC, OP_DBL, OP_MIX, OP_INC,
                                         OP_DEC, OP_LOOP, OP_HALT};
    long rounds = argc > 1 ? atol(argv[1]) : 100, sum = 0, i;

    for (i = 0; i < rounds; i++)
        sum += run(prog, 20 + i % 13);
    printf("threaded: %ld\n", sum);
    return 0;
}
