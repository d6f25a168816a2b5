/*
 * insttext.c - an instruction's text as LLVM's instruction printer writes
 * it in llvm-profgen's --show-disassembly-only listing, made from
 * capstone's (AT&T syntax for x86-64, with detail): "\tmnemonic\toperands".
 * Owns only the spelling; decoding and classification are disasm.c's.
 *
 * x86-64: capstone 4's AT&T text differs from LLVM's X86ATTInstPrinter in
 * ways with fixed rules, which are undone here:
 *   - numbers in operands are decimal (capstone: hex), except branch
 *     targets, which LLVM prints as 0x addresses too;
 *   - an immediate is the encoded bytes sign-extended when LLVM's operand
 *     is signed (the imm8 of ALU, mov, push, imul and test instructions;
 *     64-bit operations; 64-bit immediates) and zero-extended otherwise
 *     (imm16/imm32 of 16/32-bit operations; the unsigned imm8 of shifts,
 *     bit tests, SSE/AVX and other 0F-map instructions, int, in/out);
 *   - a memory operand's zero displacement is left out, and its registers
 *     are separated by "," alone (capstone: ", ");
 *   - shifts and rotates by one (D0/D1) have no "$1" operand;
 *   - string instructions name the %es segment of their destination;
 *   - rep/repne prefixes are printed "rep\t\tstosq", not "rep stosq";
 *   - cvtsi2sd/cvtsi2ss from a register have no size suffix, and a movd
 *     between a 64-bit register and an xmm register is movq.
 * What is left (rare; docs/binary.md lists it with counts) is capstone's.
 * AArch64: capstone's text as it is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"

/* An output buffer that never overflows (text is cut at cap - 1). */
typedef struct tbuf {
    char *p;
    size_t n, cap;
} tbuf;

static void put(tbuf *t, const char *s, size_t n)
{
    for (size_t i = 0; i < n && t->n + 1 < t->cap; i++)
        t->p[t->n++] = s[i];
    t->p[t->n] = 0;
}

static void puts_(tbuf *t, const char *s) { put(t, s, strlen(s)); }

/* ---- x86-64 encoding facts --------------------------------------------- */

typedef struct x86_enc {
    uint8_t op;         /* the opcode byte */
    int map;            /* 0 one-byte map, 1 0F maps, 2 VEX/EVEX/XOP */
    bool rex_w;
    bool opsize;        /* 66 prefix */
    uint8_t rep;        /* the last f2/f3 prefix, 0 if none */
} x86_enc;

static bool legacy_prefix(uint8_t c)
{
    return c == 0x66 || c == 0x67 || c == 0xf0 || c == 0xf2 || c == 0xf3 ||
           c == 0x2e || c == 0x36 || c == 0x3e || c == 0x26 || c == 0x64 ||
           c == 0x65;
}

static x86_enc x86_encoding(const cs_insn *in)
{
    x86_enc e = {0};
    size_t i = 0;

    for (; i < in->size && legacy_prefix(in->bytes[i]); i++) {
        e.opsize |= in->bytes[i] == 0x66;
        if (in->bytes[i] == 0xf2 || in->bytes[i] == 0xf3)
            e.rep = in->bytes[i];
    }
    if (i < in->size && (in->bytes[i] & 0xf0) == 0x40)
        e.rex_w = (in->bytes[i++] & 8) != 0;
    if (i < in->size) {
        e.op = in->bytes[i];
        e.map = e.op == 0x0f ? 1 : (e.op == 0xc4 || e.op == 0xc5 ||
                                    e.op == 0x62 || e.op == 0x8f) ? 2 : 0;
    }
    return e;
}

/* One-byte-map opcodes whose immediate LLVM prints signed (i8imm, or
 * sign-extended imm8 of wider operations): ALU with AL, push/imul imm8,
 * the 80-83 group, test/mov with imm8. Wider immediates of these and of
 * the eAX forms are signed only in 64-bit operations. */
static bool signed_imm8_op(uint8_t op)
{
    if (op < 0x40 && (op & 7) == 4)        /* add/or/adc/sbb/and/sub/xor/cmp al */
        return true;
    return op == 0x6a || op == 0x6b || (op >= 0x80 && op <= 0x83) ||
           op == 0xa8 || (op >= 0xb0 && op <= 0xb7) || op == 0xc6 ||
           op == 0xf6;
}

static bool wide_imm_op(uint8_t op)
{
    return (op < 0x40 && (op & 7) == 5) || op == 0x68 || op == 0x69 ||
           op == 0x81 || op == 0xa9 || (op >= 0xb8 && op <= 0xbf) ||
           op == 0xc7 || op == 0xf7;
}

/* The immediate as LLVM prints it, from the encoded bytes. */
static void x86_imm_text(const cs_insn *in, const x86_enc *e, char *out,
                         size_t cap)
{
    const cs_x86_encoding *enc = &in->detail->x86.encoding;
    unsigned n = enc->imm_size, bits = 8 * n;
    uint64_t raw = 0;
    bool sign;

    for (unsigned i = 0; i < n && enc->imm_offset + i < in->size; i++)
        raw |= (uint64_t)in->bytes[enc->imm_offset + i] << (8 * i);
    if (e->map == 0 && n == 1)
        sign = signed_imm8_op(e->op);
    else if (e->map == 0 && wide_imm_op(e->op))
        sign = n == 8 || e->rex_w;
    else
        sign = false;
    if (sign && bits < 64 && (raw >> (bits - 1)) & 1)
        raw |= ~UINT64_C(0) << bits;
    if (sign)
        snprintf(out, cap, "%lld", (long long)raw);
    else
        snprintf(out, cap, "%llu", (unsigned long long)raw);
}

/* ---- operand rewriting ---------------------------------------------------- */

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* A capstone number at s ("0x1f", "12", "-0x8"): its value and length. */
static size_t number_at(const char *s, long long *v)
{
    size_t i = s[0] == '-';
    unsigned long long x = 0;

    if (s[i] == '0' && s[i + 1] == 'x') {
        i += 2;
        while (is_hex(s[i]))
            x = x * 16 + (uint64_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10), i++;
    } else {
        while (s[i] >= '0' && s[i] <= '9')
            x = x * 10 + (uint64_t)(s[i++] - '0');
    }
    *v = s[0] == '-' ? -(long long)x : (long long)x;
    return i;
}

/* Operands: the immediate and every displacement in decimal, zero
 * displacements left out, ", " inside parentheses made ",". */
static void x86_operands(const cs_insn *in, const x86_enc *e, bool branch,
                         tbuf *t)
{
    const char *s = in->op_str;
    int depth = 0;
    bool imm_done = false;

    if (e->map == 0 && (e->op == 0xd0 || e->op == 0xd1) &&
        strncmp(s, "$1, ", 4) == 0)
        s += 4;                             /* shift/rotate by one */
    while (*s) {
        char prev = t->n ? t->p[t->n - 1] : '\t';
        long long v;
        size_t k;
        if (*s == '$' && !imm_done && in->detail->x86.encoding.imm_size) {
            char num[32];
            x86_imm_text(in, e, num, sizeof num);
            puts_(t, "$");
            puts_(t, num);
            s++;
            s += number_at(s, &v);
            imm_done = true;
        } else if (!branch && (prev == '\t' || prev == ' ' || prev == ':' ||
                               prev == '*' || prev == '$') &&
                   (*s == '-' || (*s >= '0' && *s <= '9')) &&
                   (k = number_at(s, &v)) > 0) {
            char num[32];
            s += k;
            if (v == 0 && *s == '(')
                continue;                   /* LLVM omits a zero disp */
            snprintf(num, sizeof num, "%lld", v);
            puts_(t, num);
        } else {
            depth += *s == '(';
            depth -= *s == ')';
            put(t, s, 1);
            if (depth > 0 && s[0] == ',' && s[1] == ' ')
                s++;
            s++;
        }
    }
}

/* String instructions (movs, cmps, stos, scas, ins): LLVM names the
 * destination's segment. */
static void es_destination(tbuf *t, const x86_enc *e, size_t from)
{
    static const uint8_t ops[] = {0xa4, 0xa5, 0xa6, 0xa7, 0xaa, 0xab, 0xae,
                                  0xaf, 0x6c, 0x6d};
    char *d;

    if (e->map != 0 || !memchr(ops, e->op, sizeof ops))
        return;
    if (!(d = strstr(t->p + from, "(%rdi)")) && !(d = strstr(t->p + from, "(%edi)")))
        return;
    if (d > t->p && d[-1] == ':')
        return;
    char rest[64];
    snprintf(rest, sizeof rest, "%s", d);
    t->n = (size_t)(d - t->p);
    t->p[t->n] = 0;
    puts_(t, "%es:");
    puts_(t, rest);
}

/* A 64-bit general register operand (%rax ... %r15, not a memory
 * operand's base or index). */
static bool has_gpr64(const char *s)
{
    static const char *const r64[] = {"rax", "rbx", "rcx", "rdx", "rsi", "rdi",
                                       "rsp", "rbp"};
    int depth = 0;

    for (; *s; s++) {
        depth += (*s == '(') - (*s == ')');
        if (depth || *s != '%' || s[1] != 'r')
            continue;
        size_t n = strcspn(s + 1, ", )");
        for (size_t k = 0; k < 8; k++)
            if (n == 3 && !strncmp(s + 1, r64[k], 3))
                return true;
        if ((n == 2 || n == 3) && s[2] >= '0' && s[2] <= '9' &&
            (n == 2 || (s[3] >= '0' && s[3] <= '9')))
            return true;
    }
    return false;
}

/* The mnemonic, LLVM's way: a one-byte-map instruction's f3/f2 prefix is
 * "rep"/"repne" before it (capstone: rep/repe/repz/repne/bnd, or
 * nothing, as for rep ret), capstone's notrack is not shown, lock is kept;
 * cvtsi2s[sd] of a register without suffix; movd of a 64-bit register is
 * movq. */
static void x86_mnemonic(const cs_insn *in, const x86_enc *e, tbuf *t)
{
    const char *m = in->mnemonic, *sp;
    size_t len;

    while ((sp = strchr(m, ' '))) {         /* capstone's prefix words */
        if (!strncmp(m, "lock ", 5)) {
            puts_(t, "lock\t\t");
        }
        m = sp + 1;
    }
    if (e->map == 0 && e->rep && e->op != 0x90)
        puts_(t, e->rep == 0xf3 ? "rep\t\t" : "repne\t\t");
    len = strlen(m);
    if (!strncmp(m, "cvtsi2s", 7) && len == 9 && in->op_str[0] == '%')
        len = 8;
    if (!strcmp(m, "movd") && has_gpr64(in->op_str)) {
        puts_(t, "movq");
        return;
    }
    put(t, m, len);
}

static void x86_text(const cs_insn *in, bool branch, tbuf *t)
{
    x86_enc e = x86_encoding(in);
    size_t ops;

    puts_(t, "\t");
    x86_mnemonic(in, &e, t);
    if (!in->op_str[0])
        return;
    puts_(t, "\t");
    ops = t->n;
    x86_operands(in, &e, branch, t);
    es_destination(t, &e, ops);
}

void lp_inst_text(const cs_insn *in, enum lp_arch arch, bool branch,
                  char *out, size_t cap)
{
    tbuf t = {out, 0, cap};

    if (!cap)
        return;
    out[0] = 0;
    if (arch == LP_ARCH_X86_64) {
        x86_text(in, branch, &t);
        return;
    }
    puts_(&t, "\t");
    puts_(&t, in->mnemonic);
    if (in->op_str[0]) {
        puts_(&t, "\t");
        puts_(&t, in->op_str);
    }
}
