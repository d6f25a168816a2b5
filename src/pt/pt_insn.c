/*
 * pt_insn.c - the instructions the PT walk steps over: their length
 * (capstone; for the EVEX/VEX forms capstone 4 cannot decode, from the
 * prefix, opcode map, ModRM, SIB and displacement, since those are never
 * branches) and perf's classification of them (intel-pt-insn-decoder.c:
 * by opcode byte: jcc/loop/jrcxz conditional, jmp/call rel unconditional,
 * ret, iret, int, syscall/sysret, far and indirect jumps and calls
 * indirect). This is perf's decision, not LLVM's (binary/disasm.c): the
 * walk must stop where perf's stops. Does not read files (pt_synth.c).
 */
#include <capstone/capstone.h>
#include <errno.h>
#include <string.h>

#include "pt/pt_internal.h"

static int is_legacy_prefix(uint8_t b)
{
    return b == 0x66 || b == 0x67 || b == 0xf0 || b == 0xf2 || b == 0xf3 ||
           b == 0x2e || b == 0x36 || b == 0x3e || b == 0x26 || b == 0x64 ||
           b == 0x65;
}

/* ModRM + SIB + displacement bytes from `p` (64-bit addressing). */
static int modrm_len(const uint8_t *p, size_t n)
{
    uint8_t mod, rm;
    int len = 1;

    if (n < 1)
        return -1;
    mod = p[0] >> 6;
    rm = p[0] & 7;
    if (mod != 3 && rm == 4) {
        if (n < 2)
            return -1;
        len++;
        if (mod == 0 && (p[1] & 7) == 5)
            len += 4;
    }
    if (mod == 1)
        len += 1;
    else if (mod == 2 || (mod == 0 && rm == 5))
        len += 4;
    return len;
}

/* Length of an EVEX (62) or VEX (c4/c5) instruction starting at p. */
static int vex_length(const uint8_t *p, size_t n, size_t pre)
{
    size_t hdr;
    unsigned map;
    uint8_t op;
    int m, imm;

    if (p[pre] == 0x62) {
        hdr = 4;
        if (pre + hdr >= n)
            return -1;
        map = p[pre + 1] & 7;
    } else if (p[pre] == 0xc4) {
        hdr = 3;
        if (pre + hdr >= n)
            return -1;
        map = p[pre + 1] & 0x1f;
    } else {
        hdr = 2;
        map = 1;
    }
    if (pre + hdr >= n)
        return -1;
    op = p[pre + hdr];
    m = modrm_len(p + pre + hdr + 1, n - pre - hdr - 1);
    if (m < 0)
        return -1;
    imm = map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) ||
                                    op == 0xc2 || op == 0xc4 || op == 0xc5 ||
                                    op == 0xc6));
    return (int)(pre + hdr + 1) + m + imm;
}

static int insn_length(const uint8_t *code, size_t n, size_t pre)
{
    /* one capstone handle and instruction per thread, no detail: only the
     * size is read (cs_disasm_iter does not allocate) */
    static __thread csh cs;
    static __thread cs_insn *in;
    static __thread int cs_ok = -1;
    const uint8_t *c = code;
    size_t left = n;
    uint64_t addr = 0;

    if (cs_ok < 0)
        cs_ok = cs_open(CS_ARCH_X86, CS_MODE_64, &cs) == CS_ERR_OK &&
                (in = cs_malloc(cs)) != NULL;
    if (cs_ok && cs_disasm_iter(cs, &c, &left, &addr, in))
        return (int)in->size;
    if (pre < n && (code[pre] == 0x62 || code[pre] == 0xc4 || code[pre] == 0xc5))
        return vex_length(code, n, pre);
    return -1;
}

/* The branch displacement: the immediate at the end of the instruction. */
static int32_t rel_of(const uint8_t *code, int len, int size)
{
    if (size == 1)
        return (int8_t)code[len - 1];
    int32_t v;
    memcpy(&v, code + len - 4, 4);
    return v;
}

static void classify_op(const uint8_t *op, size_t left, ptw_insn *o, int *relsz)
{
    *relsz = 0;
    switch (op[0]) {
    case 0x0f:
        if (left < 2)
            return;
        if (op[1] == 0x05 || op[1] == 0x34) {
            o->op = OP_SYSCALL, o->branch = BR_INDIRECT;
        } else if (op[1] == 0x07 || op[1] == 0x35) {
            o->op = OP_SYSRET, o->branch = BR_INDIRECT;
        } else if (op[1] >= 0x80 && op[1] <= 0x8f) {
            o->op = OP_JCC, o->branch = BR_CONDITIONAL, *relsz = 4;
        }
        return;
    case 0x70 ... 0x7f:
        o->op = OP_JCC, o->branch = BR_CONDITIONAL, *relsz = 1;
        return;
    case 0xc2: case 0xc3: case 0xca: case 0xcb:
        o->op = OP_RET, o->branch = BR_INDIRECT;
        return;
    case 0xcf:
        o->op = OP_IRET, o->branch = BR_INDIRECT;
        return;
    case 0xcc ... 0xce:
        o->op = OP_INT, o->branch = BR_INDIRECT;
        return;
    case 0xe8:
        o->op = OP_CALL, o->branch = BR_UNCONDITIONAL, *relsz = 4;
        return;
    case 0x9a:
        o->op = OP_CALL, o->branch = BR_INDIRECT;
        return;
    case 0xe0 ... 0xe2:
        o->op = OP_LOOP, o->branch = BR_CONDITIONAL, *relsz = 1;
        return;
    case 0xe3:
        o->op = OP_JCC, o->branch = BR_CONDITIONAL, *relsz = 1;
        return;
    case 0xe9:
        o->op = OP_JMP, o->branch = BR_UNCONDITIONAL, *relsz = 4;
        return;
    case 0xeb:
        o->op = OP_JMP, o->branch = BR_UNCONDITIONAL, *relsz = 1;
        return;
    case 0xea:
        o->op = OP_JMP, o->branch = BR_INDIRECT;
        return;
    case 0xff:
        if (left < 2)
            return;
        switch ((op[1] >> 3) & 7) {
        case 2: case 3: o->op = OP_CALL, o->branch = BR_INDIRECT; return;
        case 4: case 5: o->op = OP_JMP, o->branch = BR_INDIRECT; return;
        default: return;
        }
    default:
        return;
    }
}

int pt_classify(const uint8_t *code, size_t n, ptw_insn *o)
{
    size_t pre = 0;
    int len, relsz;

    memset(o, 0, sizeof *o);
    while (pre < n && pre < 14 && is_legacy_prefix(code[pre]))
        pre++;
    if (pre < n && (code[pre] & 0xf0) == 0x40)
        pre++; /* REX */
    if (pre >= n || (len = insn_length(code, n, pre)) <= 0 || (size_t)len > n)
        return -1;
    o->length = (uint8_t)len;
    if (code[pre] == 0x62 || code[pre] == 0xc4 || code[pre] == 0xc5)
        return 0; /* VEX/EVEX: never a branch */
    classify_op(code + pre, n - pre, o, &relsz);
    if (relsz && len >= relsz + 1)
        o->rel = rel_of(code, len, relsz);
    return 0;
}

int pt_walk_straight(pt_read_fn rd, void *ctx, ptw_insn *in, uint64_t *n,
                     uint64_t *ip, uint64_t to_ip, uint64_t max, uint64_t end)
{
    uint8_t buf[16];
    long k;

    for (;;) {
        if ((k = rd(ctx, *ip, buf)) <= 0 || pt_classify(buf, (size_t)k, in))
            return -EINVAL;
        (*n)++;
        if (in->branch != BR_NONE || (max && *n >= max))
            return 0;
        *ip += in->length;
        if (to_ip && *ip == to_ip) {
            in->length = 0;
            return 0;
        }
        if (*ip >= end)
            return 1;
    }
}
