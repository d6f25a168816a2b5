/* kernel.c - workload: a realistic kernel of a few hundred lines. A tiny
 * stack-machine interpreter (switch dispatch: jump tables, so indirect
 * jumps) runs a bytecode program that fills an array, sorts it with an
 * insertion sort written in bytecode, and sums it; the host then hashes
 * the result with an FNV-1a loop and looks it up in an open-addressing
 * table. Deterministic; the argument scales the work. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum op {
    OP_PUSH, OP_LOAD, OP_STORE, OP_ALOAD, OP_ASTORE, OP_ADD, OP_SUB,
    OP_MUL, OP_MOD, OP_LT, OP_JMP, OP_JZ, OP_DUP, OP_POP, OP_HALT,
    OP_CALLHOST,
};

typedef struct insn {
    uint8_t op;
    int32_t arg;
} insn;

typedef struct vm {
    int64_t stack[64];
    int sp;
    int64_t vars[8];
    int64_t *arr;
    int arr_len;
    uint64_t steps;
} vm;

#define N_SLOTS 256

typedef struct table {
    uint64_t key[N_SLOTS];
    uint32_t val[N_SLOTS];
    uint8_t used[N_SLOTS];
} table;

__attribute__((noinline)) static uint64_t fnv1a(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 1469598103934665603ull;
    size_t i;

    for (i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

__attribute__((noinline)) static int table_put(table *t, uint64_t k, uint32_t v)
{
    uint32_t i = (uint32_t)(k % N_SLOTS), probes = 0;

    while (t->used[i] && t->key[i] != k) {
        i = (i + 1) % N_SLOTS;
        if (++probes == N_SLOTS)
            return -1;
    }
    t->used[i] = 1;
    t->key[i] = k;
    t->val[i] = v;
    return 0;
}

__attribute__((noinline)) static int table_get(const table *t, uint64_t k,
                                               uint32_t *v)
{
    uint32_t i = (uint32_t)(k % N_SLOTS), probes = 0;

    while (t->used[i]) {
        if (t->key[i] == k) {
            *v = t->val[i];
            return 1;
        }
        i = (i + 1) % N_SLOTS;
        if (++probes == N_SLOTS)
            break;
    }
    return 0;
}

__attribute__((noinline)) static int64_t host_call(vm *m, int64_t x)
{
    m->steps += 1;
    return (x * 7 + 3) % 1000;
}

/* The interpreter loop: one switch per instruction. */
__attribute__((noinline)) static int run(vm *m, const insn *code, int len)
{
    int pc = 0;

    while (pc >= 0 && pc < len) {
        const insn *in = &code[pc++];
        int64_t a, b;

        m->steps++;
        switch (in->op) {
        case OP_PUSH: m->stack[m->sp++] = in->arg; break;
        case OP_LOAD: m->stack[m->sp++] = m->vars[in->arg]; break;
        case OP_STORE: m->vars[in->arg] = m->stack[--m->sp]; break;
        case OP_ALOAD:
            a = m->stack[--m->sp];
            if (a < 0 || a >= m->arr_len)
                return -1;
            m->stack[m->sp++] = m->arr[a];
            break;
        case OP_ASTORE:
            b = m->stack[--m->sp];
            a = m->stack[--m->sp];
            if (a < 0 || a >= m->arr_len)
                return -1;
            m->arr[a] = b;
            break;
        case OP_ADD: b = m->stack[--m->sp]; m->stack[m->sp - 1] += b; break;
        case OP_SUB: b = m->stack[--m->sp]; m->stack[m->sp - 1] -= b; break;
        case OP_MUL: b = m->stack[--m->sp]; m->stack[m->sp - 1] *= b; break;
        case OP_MOD:
            b = m->stack[--m->sp];
            if (b == 0)
                return -1;
            m->stack[m->sp - 1] %= b;
            break;
        case OP_LT:
            b = m->stack[--m->sp];
            m->stack[m->sp - 1] = m->stack[m->sp - 1] < b;
            break;
        case OP_JMP: pc = in->arg; break;
        case OP_JZ: if (m->stack[--m->sp] == 0) pc = in->arg; break;
        case OP_DUP: m->stack[m->sp] = m->stack[m->sp - 1]; m->sp++; break;
        case OP_POP: m->sp--; break;
        case OP_HALT: return 0;
        case OP_CALLHOST:
            m->stack[m->sp - 1] = host_call(m, m->stack[m->sp - 1]);
            break;
        default: return -1;
        }
        if (m->sp < 0 || m->sp > 60)
            return -1;
    }
    return 0;
}

/* Bytecode: for i in 0..n: arr[i] = host(i * 37 % 101). */
static const insn fill_prog[] = {
    {OP_PUSH, 0}, {OP_STORE, 0},                        /* 0: i = 0 */
    {OP_LOAD, 0}, {OP_LOAD, 1}, {OP_LT, 0}, {OP_JZ, 17}, /* 2: while i < n */
    {OP_LOAD, 0},                                        /* 6: index */
    {OP_LOAD, 0}, {OP_PUSH, 37}, {OP_MUL, 0}, {OP_PUSH, 101}, {OP_MOD, 0},
    {OP_CALLHOST, 0}, {OP_ASTORE, 0},                    /* 13 */
    {OP_LOAD, 0}, {OP_PUSH, 1}, {OP_ADD, 0},             /* 14: i++ (store below) */
    {OP_HALT, 0},                                        /* 17 */
};

__attribute__((noinline)) static void insertion_sort(int64_t *a, int n)
{
    int i, j;

    for (i = 1; i < n; i++) {
        int64_t x = a[i];
        for (j = i - 1; j >= 0 && a[j] > x; j--)
            a[j + 1] = a[j];
        a[j + 1] = x;
    }
}

__attribute__((noinline)) static int64_t sum(const int64_t *a, int n)
{
    int64_t s = 0;
    int i;

    for (i = 0; i < n; i++)
        s += a[i] * (i + 1);
    return s;
}

/* The fill program above lacks the store of i; patch it in at load. */
static int load_program(insn *out, int cap)
{
    int n = (int)(sizeof fill_prog / sizeof fill_prog[0]);

    if (n + 2 > cap)
        return -1;
    memcpy(out, fill_prog, (size_t)n * sizeof *out);
    out[n - 1] = (insn){OP_STORE, 0};   /* 17: i = i + 1 */
    out[n] = (insn){OP_JMP, 2};         /* 18: loop */
    out[n + 1] = (insn){OP_HALT, 0};    /* 19: exit */
    out[5].arg = n + 1;                 /* JZ -> halt */
    return n + 2;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 300, len, round;
    insn prog[32];
    vm m;
    table *t = calloc(1, sizeof *t);
    uint64_t h = 0;
    uint32_t v = 0;

    if (!t || n <= 0 || n > 100000)
        return 2;
    memset(&m, 0, sizeof m);
    m.arr = calloc((size_t)n, sizeof *m.arr);
    m.arr_len = n;
    if (!m.arr || (len = load_program(prog, 32)) < 0)
        return 2;
    for (round = 0; round < 4; round++) {
        m.sp = 0;
        m.vars[1] = n;
        if (run(&m, prog, len))
            return 3;
        insertion_sort(m.arr, n);
        h = fnv1a(m.arr, (size_t)n * sizeof *m.arr) + (uint64_t)sum(m.arr, n);
        if (table_put(t, h + (uint64_t)round, (uint32_t)round))
            return 4;
    }
    if (!table_get(t, h + 3, &v))
        return 5;
    printf("steps=%llu hash=%016llx last=%u\n", (unsigned long long)m.steps,
           (unsigned long long)h, v);
    free(m.arr);
    free(t);
    return 0;
}
