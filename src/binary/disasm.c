/*
 * disasm.c - lazy disassembly with capstone: splits the text sections into
 * symbol-to-symbol regions (as llvm-profgen's dissassembleSymbol), decodes
 * a region the first time one of its addresses is asked about, classifies
 * instructions through a per-arch ops table, and answers the instruction
 * queries of binary.h. x86 instructions are classified by the shared
 * classifier (insn/insn.h), AArch64 ones here. Does not know about DWARF
 * or functions.
 *
 * Decoding: capstone's detail (operands; groups on AArch64) is what
 * classification reads, but filling it is ~20% of capstone's cost and only branches need
 * it. An instruction whose bytes may be a branch (ops->may_branch) is
 * decoded with the detail handle; any other with the plain one, and again
 * with detail if its id still can be a branch (ops->branch_id), so the
 * result is the detail path's whatever the byte screen says.
 *
 * VEX/EVEX instructions capstone 4 cannot decode on x86 - AVX-512, AMX
 * and newer, which LLVM's MC decoder (llvm-profgen's) knows - are decoded
 * by Zydis, loaded at the first such instruction (most binaries have
 * none), and classified by the same classifier; what neither decodes is
 * skipped a byte at a time, as llvm-profgen does.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"
#include "insn/insn.h"
#include "util/cpus.h"

/* ---- per-arch classification ------------------------------------------ */

/* x86: the shared classifier (insn/insn.h) in lp_inst's terms - kinds by
 * LLVM's view, an indirect call/jump without a target, a return with
 * neither. */
static void inst_of_flow(lp_flow f, lp_inst *o)
{
    static const uint8_t kind[] = {
        [LP_FLOW_NONE] = LP_INST_OTHER, [LP_FLOW_CALL] = LP_INST_CALL,
        [LP_FLOW_RET] = LP_INST_RET, [LP_FLOW_JUMP] = LP_INST_UNCOND_BR,
        [LP_FLOW_COND] = LP_INST_COND_BR,
    };
    o->kind = kind[f.kind];
    if (f.kind == LP_FLOW_NONE || f.kind == LP_FLOW_RET)
        return;
    o->indirect = (f.flags & LP_FLOW_INDIRECT) != 0;
    o->target = f.target;
}

static void classify_x86(const cs_insn *in, lp_inst *o)
{
    lp_x86_desc d;
    lp_x86_desc_cs(in, &d);
    inst_of_flow(lp_x86_flow(&d), o);
}

static void classify_arm64(const cs_insn *in, lp_inst *o)
{
    const cs_arm64 *a = &in->detail->arm64;
    switch (in->id) {
    case ARM64_INS_BL:
    case ARM64_INS_BLR:
        o->kind = LP_INST_CALL;
        break;
    case ARM64_INS_RET:
        o->kind = LP_INST_RET;
        return;
    case ARM64_INS_B:
    case ARM64_INS_BR:
        o->kind = (a->cc == ARM64_CC_INVALID || a->cc == ARM64_CC_AL)
                      ? LP_INST_UNCOND_BR : LP_INST_COND_BR;
        break;
    case ARM64_INS_CBZ:
    case ARM64_INS_CBNZ:
    case ARM64_INS_TBZ:
    case ARM64_INS_TBNZ:
        o->kind = LP_INST_COND_BR;
        break;
    default:
        return;
    }
    o->indirect = in->id == ARM64_INS_BLR || in->id == ARM64_INS_BR;
    for (uint8_t i = 0; i < a->op_count; i++)
        if (a->operands[i].type == ARM64_OP_IMM)
            o->target = (uint64_t)a->operands[i].imm;
}

/* Exactly the ids classify_arm64 handles. */
static bool branch_id_arm64(unsigned id)
{
    switch (id) {
    case ARM64_INS_BL: case ARM64_INS_BLR: case ARM64_INS_RET:
    case ARM64_INS_B: case ARM64_INS_BR: case ARM64_INS_CBZ:
    case ARM64_INS_CBNZ: case ARM64_INS_TBZ: case ARM64_INS_TBNZ:
        return true;
    default:
        return false;
    }
}

/* The encoding group "branches, exception generation and system
 * instructions": op0 (bits 28:26) == 0b101. */
static bool may_branch_arm64(const uint8_t *p, size_t n)
{
    return n < 4 || ((p[3] >> 2) & 7) == 5;
}

static const lp_arch_ops arch_ops[] = {
    {LP_ARCH_X86_64, CS_ARCH_X86, CS_MODE_64, classify_x86,
     lp_x86_cs_branch_id, lp_x86_bytes_may_branch},
    {LP_ARCH_AARCH64, CS_ARCH_ARM64, CS_MODE_ARM, classify_arm64,
     branch_id_arm64, may_branch_arm64},
};

const lp_arch_ops *lp_arch_ops_for(enum lp_arch arch)
{
    for (size_t i = 0; i < sizeof arch_ops / sizeof arch_ops[0]; i++)
        if (arch_ops[i].arch == arch)
            return &arch_ops[i];
    return NULL;
}

/* X86DisassemblerDecoder's readPrefixes stops at such a byte and lets it
 * be its own instruction (LOCK_PREFIX, XACQUIRE_PREFIX, XRELEASE_PREFIX). */
const char *lp_x86_prefix_inst(const uint8_t *p, size_t n)
{
    uint8_t next;

    if (n == 0)
        return NULL;
    if (p[0] == 0xf0)
        return "lock";
    if ((p[0] != 0xf2 && p[0] != 0xf3) || n < 2)
        return NULL;
    next = p[1];
    if ((next == 0xf0 || (next & 0xfe) == 0x86 || (next & 0xf8) == 0x90) &&
        !(p[0] == 0xf3 && next == 0x90))
        return p[0] == 0xf2 ? "xacquire" : "xrelease";
    if (p[0] == 0xf3 && (next == 0x88 || next == 0x89 || next == 0xc6 ||
                         next == 0xc7))
        return "xrelease";
    return NULL;
}

/* ---- decoder --------------------------------------------------------------- */

int lp_decoder_open(lp_decoder *d, const lp_arch_ops *ops)
{
    memset(d, 0, sizeof *d);
    d->ops = ops;
    d->fast_open = cs_open(ops->cs_arch, ops->cs_mode, &d->fast) == CS_ERR_OK;
    d->full_open = cs_open(ops->cs_arch, ops->cs_mode, &d->full) == CS_ERR_OK;
    if (!d->fast_open || !d->full_open ||
        cs_option(d->full, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK)
        return -1;
    d->fi = cs_malloc(d->fast);
    d->di = cs_malloc(d->full);
    return d->fi && d->di ? 0 : -1;
}

void lp_decoder_close(lp_decoder *d)
{
    lp_zydis_close(d->zy);
    if (d->fi)
        cs_free(d->fi, 1);
    if (d->di)
        cs_free(d->di, 1);
    if (d->fast_open)
        cs_close(&d->fast);
    if (d->full_open)
        cs_close(&d->full);
    memset(d, 0, sizeof *d);
}

/* A VEX/EVEX instruction capstone 4 cannot decode (AVX-512, AMX,
 * AVX-VNNI..., which LLVM's decoder knows): Zydis, loaded at the first
 * one, gives the length and the description; false if it cannot either
 * (or is not installed). Other encodings are left to capstone: Zydis
 * accepts more of the legacy space than LLVM does. */
static bool decode_unknown(lp_decoder *d, const uint8_t *code, size_t left,
                           uint64_t addr, lp_inst *o)
{
    lp_x86_desc desc;
    unsigned len;

    if (d->ops->arch != LP_ARCH_X86_64 || !lp_x86_bytes_vex(code, left))
        return false;
    if (!d->zy_tried) {
        d->zy_tried = true;
        d->zy = lp_zydis_open(NULL);
    }
    if (!d->zy || !(len = lp_zydis_decode(d->zy, code, left, addr, &desc)))
        return false;
    o->size = (uint8_t)len;
    inst_of_flow(lp_x86_flow(&desc), o);
    return true;
}

bool lp_decoder_inst(lp_decoder *d, const uint8_t *code, size_t left,
                     uint64_t addr, lp_inst *o)
{
    const uint8_t *c = code;
    size_t n = left;
    uint64_t a = addr;
    memset(o, 0, sizeof *o);
    o->addr = addr;
    if (d->ops->arch == LP_ARCH_X86_64 && lp_x86_prefix_inst(code, left)) {
        o->size = 1;    /* LLVM's LOCK_PREFIX / XACQUIRE / XRELEASE */
        return true;
    }
    if (!d->ops->may_branch(code, left)) {
        if (!cs_disasm_iter(d->fast, &c, &n, &a, d->fi))
            return decode_unknown(d, code, left, addr, o);
        o->size = (uint8_t)d->fi->size;
        if (!d->ops->branch_id(d->fi->id))
            return true;
        c = code, n = left, a = addr;
    }
    if (!cs_disasm_iter(d->full, &c, &n, &a, d->di))
        return decode_unknown(d, code, left, addr, o);
    o->size = (uint8_t)d->di->size;
    d->ops->classify(d->di, o);
    return true;
}

int lp_bin_open_disasm(lp_binary *b, lp_error *err)
{
    if (lp_decoder_open(&b->dec, b->ops) != 0)
        return lp_error_set(err, LP_EUNSUPP, "%s: capstone cannot open the "
                            "disassembler", b->path);
    return 0;
}

/* ---- regions ------------------------------------------------------------- */

static int add_region(lp_binary *b, size_t *cap, uint64_t start,
                      uint64_t end, const GElf_Shdr *sh, Elf_Data *d)
{
    if (end <= start)
        return 0;
    if (b->nregions == *cap) {
        size_t nc = *cap ? 2 * *cap : 64;
        lp_code_region *r = realloc(b->regions, nc * sizeof *r);
        if (!r)
            return -1;
        b->regions = r;
        *cap = nc;
    }
    lp_code_region *r = &b->regions[b->nregions++];
    memset(r, 0, sizeof *r);
    r->start = start;
    r->end = end;
    r->sec_addr = sh->sh_addr;
    r->sec_bytes = d->d_buf;
    r->sec_size = d->d_size;
    return 0;
}

/* First index i with b->syms[i].addr >= addr. */
static size_t sym_lower_bound(const lp_binary *b, uint64_t addr)
{
    size_t lo = 0, hi = b->nsyms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->syms[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int section_regions(lp_binary *b, size_t *cap, const GElf_Shdr *sh,
                           Elf_Data *d)
{
    uint64_t lo = sh->sh_addr, hi = sh->sh_addr + d->d_size;
    if (b->nsyms == 0) /* fully stripped: whole section (documented) */
        return add_region(b, cap, lo, hi, sh, d);
    size_t i = sym_lower_bound(b, lo);
    while (i < b->nsyms && b->syms[i].addr < hi) {
        uint64_t s = b->syms[i].addr;
        while (i < b->nsyms && b->syms[i].addr == s)
            i++;
        uint64_t e = (i < b->nsyms && b->syms[i].addr < hi) ? b->syms[i].addr
                                                             : hi;
        if (add_region(b, cap, s, e, sh, d) != 0)
            return -1;
    }
    return 0;
}

static int region_cmp(const void *pa, const void *pb)
{
    const lp_code_region *a = pa, *c = pb;
    return a->start < c->start ? -1 : a->start > c->start;
}

int lp_bin_build_regions(lp_binary *b, lp_error *err)
{
    size_t shstrndx, cap = 0;
    if (elf_getshdrstrndx(b->elf, &shstrndx) != 0)
        shstrndx = 0;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(b->elf, s));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
            sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
            continue;
        const char *nm = elf_strptr(b->elf, shstrndx, sh.sh_name);
        if (nm && strcmp(nm, ".plt") == 0)
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        if (!d || !d->d_buf)
            return lp_error_set(err, LP_EFORMAT, "%s: offset 0x%llx: cannot"
                                " read section %s", b->path,
                                (unsigned long long)sh.sh_offset,
                                nm ? nm : "?");
        if (section_regions(b, &cap, &sh, d) != 0)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    if (b->nregions)
        qsort(b->regions, b->nregions, sizeof *b->regions, region_cmp);
    return 0;
}

void lp_bin_free_regions(lp_binary *b)
{
    for (size_t i = 0; i < b->nregions; i++)
        free(b->regions[i].insts);
    free(b->regions);
    b->regions = NULL;
    b->nregions = 0;
}

/* Decode one region with d: from its start while the address is below
 * its end, bytes available up to the section end; undecodable bytes skip
 * 1. The caller holds the region (BUSY) and publishes it. */
static int decode_region(lp_decoder *d, lp_code_region *r, lp_error *err)
{
    size_t cap = 0;
    uint64_t addr = r->start;
    lp_inst o;
    if (r->end - r->start > UINT32_MAX)
        return lp_error_set(err, LP_EFORMAT, "code at 0x%" PRIx64 ": a symbol "
                            "of more than 4 GiB", r->start);
    while (addr < r->end) {
        uint64_t off = addr - r->sec_addr;
        if (r->ninsts == cap) {
            cap = cap ? 2 * cap : 64;
            lp_rinst *ni = realloc(r->insts, cap * sizeof *ni);
            if (!ni)
                return lp_error_set(err, LP_ENOMEM, "out of memory");
            r->insts = ni;
        }
        if (!lp_decoder_inst(d, r->sec_bytes + off, r->sec_size - off,
                             addr, &o)) {
            addr++;
            continue;
        }
        r->insts[r->ninsts++] = (lp_rinst){o.target, (uint32_t)(addr - r->start),
                                           o.size, o.kind, o.indirect};
        addr += o.size;
    }
    if (r->ninsts && r->ninsts < cap) { /* kept until the binary is closed:
                                           no slack */
        lp_rinst *ni = realloc(r->insts, r->ninsts * sizeof *ni);
        if (ni)
            r->insts = ni;
    }
    return 0;
}

static uint8_t region_state(const lp_code_region *r)
{
    return __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
}

int lp_bin_region_try_decode(lp_binary *b, lp_decoder *d, size_t ri,
                             lp_error *err)
{
    lp_code_region *r = &b->regions[ri];
    uint8_t raw = LP_RG_RAW;
    int rc;

    if (!__atomic_compare_exchange_n(&r->state, &raw, LP_RG_BUSY, false,
                                     __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
        return 0;
    if ((rc = decode_region(d, r, err)) != 0) {
        free(r->insts);
        r->insts = NULL;
        r->ninsts = 0;
    }
    /* release: what is read once DONE is seen (insts, ninsts) */
    __atomic_store_n(&r->state, rc ? LP_RG_RAW : LP_RG_DONE, __ATOMIC_RELEASE);
    return rc ? -1 : 1;
}

int lp_bin_region_decode_wait(lp_binary *b, lp_decoder *d, size_t ri,
                              const int *stop, lp_error *err)
{
    unsigned spins = 0;
    int k;

    /* a region takes microseconds; a thread that lost its core may take
     * longer: then this one gives its core up. Found RAW again (the other
     * thread's decoding failed), it is this thread's to try. */
    while ((k = lp_bin_region_try_decode(b, d, ri, err)) == 0 &&
           region_state(&b->regions[ri]) != LP_RG_DONE &&
           !(stop && __atomic_load_n(stop, __ATOMIC_RELAXED))) {
        if (++spins < 4096)
            lp_cpu_relax();
        else
            sched_yield();
    }
    if (k != 0)
        return k;
    return region_state(&b->regions[ri]) == LP_RG_DONE ? 0 : -1;
}

/* Region ri decoded by this thread, or by the warmer if it is at it. Not
 * inlined, so that ensure's test stays inlined in every lookup. */
__attribute__((noinline))
static int decode_or_wait(lp_binary *b, size_t ri, lp_error *err)
{
    return lp_bin_region_decode_wait(b, &b->dec, ri, NULL, err) < 0 ? -1 : 0;
}

/* Index of the region with start <= addr < end, or -1. The region found
 * last is tried first (~500k lookups on a large CS profile, ~1,000
 * regions, one per symbol: the binary search was half their cost). */
/* The region holding addr, or -1 (no memo: changes nothing). */
static ptrdiff_t region_at(const lp_binary *b, uint64_t addr)
{
    size_t lo = 0, hi = b->nregions;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->regions[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= b->regions[lo - 1].end)
        return -1;
    return (ptrdiff_t)lo - 1;
}

static ptrdiff_t find_region(lp_binary *b, uint64_t addr)
{
    size_t k = b->last_region;
    ptrdiff_t r;
    if (k < b->nregions && b->regions[k].start <= addr &&
        addr < b->regions[k].end)
        return (ptrdiff_t)k;
    if ((r = region_at(b, addr)) >= 0)
        b->last_region = (size_t)r;
    return r;
}

static int ensure(lp_binary *b, size_t ri, lp_error *err)
{
    return region_state(&b->regions[ri]) == LP_RG_DONE ? 0
                                                       : decode_or_wait(b, ri, err);
}

/* Index of the instruction at addr in region r, or -1. Walks over the
 * instructions (next_inst, prev_inst: the generator's tables, the
 * unwinder's range splits) ask for a neighbour of the last one found: `k`
 * is that one, tried with its neighbours before the binary search. */
static ptrdiff_t find_inst(const lp_code_region *r, uint64_t addr, size_t k)
{
    size_t lo = 0, hi = r->ninsts;
    uint32_t off = (uint32_t)(addr - r->start); /* start <= addr < end */
    if (k < hi) {
        if (r->insts[k].off == off)
            return (ptrdiff_t)k;
        if (k + 1 < hi && r->insts[k + 1].off == off)
            return (ptrdiff_t)k + 1;
        if (k > 0 && r->insts[k - 1].off == off)
            return (ptrdiff_t)k - 1;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->insts[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < r->ninsts && r->insts[lo].off == off) ? (ptrdiff_t)lo : -1;
}

static uint64_t inst_addr(const lp_code_region *r, size_t i)
{
    return r->start + r->insts[i].off;
}

static void inst_out(const lp_code_region *r, size_t i, lp_inst *o)
{
    const lp_rinst *x = &r->insts[i];

    *o = (lp_inst){inst_addr(r, i), x->size, x->kind, x->indirect, x->target};
}

/* Locate addr: *ri region, *ii instruction. 1 found, 0 not code, -1 err. */
static int locate(lp_binary *b, uint64_t addr, size_t *ri, size_t *ii,
                  lp_error *err)
{
    size_t prev = b->last_region; /* find_region moves it */
    ptrdiff_t r = find_region(b, addr);
    if (r < 0)
        return 0;
    if (ensure(b, (size_t)r, err) != 0)
        return -1;
    ptrdiff_t i = find_inst(&b->regions[r], addr,
                            (size_t)r == prev ? b->last_inst : SIZE_MAX);
    if (i < 0)
        return 0;
    b->last_inst = (size_t)i;
    *ri = (size_t)r;
    *ii = (size_t)i;
    return 1;
}

int lp_binary_inst(lp_binary *b, uint64_t addr, lp_inst *out, lp_error *err)
{
    size_t ri, ii;
    int r = locate(b, addr, &ri, &ii, err);
    if (r == 1 && out)
        inst_out(&b->regions[ri], ii, out);
    return r;
}

int lp_binary_code_unit(lp_binary *b, uint64_t addr, uint64_t *start,
                        uint64_t *end)
{
    ptrdiff_t r = find_region(b, addr);
    if (r < 0)
        return 0;
    *start = b->regions[r].start;
    *end = b->regions[r].end;
    return 1;
}

static bool kind_is(lp_binary *b, uint64_t addr, int what)
{
    lp_inst in;
    if (lp_binary_inst(b, addr, &in, NULL) != 1)
        return false;
    switch (what) {
    case 0: return true;
    case 1: return in.kind == LP_INST_CALL;
    case 2: return in.kind == LP_INST_RET;
    case 3: return in.kind == LP_INST_COND_BR || in.kind == LP_INST_UNCOND_BR;
    default: /* UncondBranchAddrSet: MCInstrDesc::isUnconditionalBranch is
                false for indirect jumps */
        return in.kind == LP_INST_CALL || in.kind == LP_INST_RET ||
               (in.kind == LP_INST_UNCOND_BR && !in.indirect);
    }
}

bool lp_binary_is_code(lp_binary *b, uint64_t a) { return kind_is(b, a, 0); }

int lp_binary_is_code_ready(const lp_binary *b, uint64_t addr)
{
    ptrdiff_t r = region_at(b, addr);
    if (r < 0)
        return 0;
    if (region_state(&b->regions[r]) != LP_RG_DONE)
        return -1;
    return find_inst(&b->regions[r], addr, SIZE_MAX) >= 0;
}
bool lp_binary_is_call(lp_binary *b, uint64_t a) { return kind_is(b, a, 1); }
bool lp_binary_is_return(lp_binary *b, uint64_t a) { return kind_is(b, a, 2); }
bool lp_binary_is_branch(lp_binary *b, uint64_t a) { return kind_is(b, a, 3); }
bool lp_binary_is_uncond_branch(lp_binary *b, uint64_t a)
{
    return kind_is(b, a, 4);
}

int lp_binary_next_inst(lp_binary *b, uint64_t addr, uint64_t *out,
                        lp_error *err)
{
    size_t ri, ii;
    int r = locate(b, addr, &ri, &ii, err);
    if (r != 1)
        return r;
    if (ii + 1 < b->regions[ri].ninsts) {
        *out = inst_addr(&b->regions[ri], ii + 1);
        return 1;
    }
    for (size_t j = ri + 1; j < b->nregions; j++) {
        if (ensure(b, j, err) != 0)
            return -1;
        if (b->regions[j].ninsts) {
            *out = inst_addr(&b->regions[j], 0);
            return 1;
        }
    }
    return 0;
}

int lp_binary_prev_inst(lp_binary *b, uint64_t addr, uint64_t *out,
                        lp_error *err)
{
    size_t ri, ii;
    int r = locate(b, addr, &ri, &ii, err);
    if (r != 1)
        return r;
    if (ii > 0) {
        *out = inst_addr(&b->regions[ri], ii - 1);
        return 1;
    }
    for (size_t j = ri; j-- > 0;) {
        if (ensure(b, j, err) != 0)
            return -1;
        if (b->regions[j].ninsts) {
            *out = inst_addr(&b->regions[j], b->regions[j].ninsts - 1);
            return 1;
        }
    }
    return 0;
}

/* Index of region r's first instruction at or after addr (ninsts: none). */
static size_t first_at_or_after(const lp_code_region *r, uint64_t addr)
{
    size_t lo = 0, hi = r->ninsts;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (inst_addr(r, mid) < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int lp_binary_inst_at_or_after(lp_binary *b, uint64_t addr, uint64_t *out,
                               lp_error *err)
{
    size_t lo = 0, hi = b->nregions; /* first region with end > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->regions[mid].end <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t j = lo; j < b->nregions; j++) {
        if (ensure(b, j, err) != 0)
            return -1;
        const lp_code_region *r = &b->regions[j];
        /* bisected: flat generation asks once per disjoint range, ~10^5
         * of them, many in large functions (a scan was 11% of its CPU on
         * sqlite-line) */
        size_t l = first_at_or_after(r, addr);
        if (l < r->ninsts) {
            *out = inst_addr(r, l);
            return 1;
        }
    }
    return 0;
}

/* The last instruction starting below addr, in *out. 1, 0 none, -1 err. */
static int last_inst_below(lp_binary *b, uint64_t addr, lp_inst *out,
                           lp_error *err)
{
    size_t lo = 0, hi = b->nregions; /* regions with start < addr: [0, lo) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->regions[mid].start < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t j = lo; j-- > 0;) {
        if (ensure(b, j, err) != 0)
            return -1;
        const lp_code_region *r = &b->regions[j];
        size_t a = first_at_or_after(r, addr);
        if (a > 0) {
            inst_out(r, a - 1, out);
            return 1;
        }
    }
    return 0;
}

int lp_binary_call_site(lp_binary *b, uint64_t ret_addr, uint64_t *callsite,
                        lp_error *err)
{
    lp_inst in;
    int r = last_inst_below(b, ret_addr, &in, err);
    if (r != 1)
        return r;
    if (in.kind != LP_INST_CALL)
        return 0;
    *callsite = in.addr;
    return 1;
}

static bool in_uncond_set(const lp_rinst *in)
{
    return in->kind == LP_INST_CALL || in->kind == LP_INST_RET ||
           (in->kind == LP_INST_UNCOND_BR && !in->indirect);
}

int lp_binary_valid_fallthrough(lp_binary *b, uint64_t start, uint64_t end,
                                lp_error *err)
{
    size_t ri, ii, re, ie;
    if (start > end)
        return 0;
    int r = locate(b, end, &re, &ie, err);
    if (r == 1)
        r = locate(b, start, &ri, &ii, err);
    if (r != 1)
        return r;
    /* walk the decoded arrays directly: one lookup per range, not per
     * instruction (this runs for every LBR entry) */
    for (; ri < b->nregions; ri++, ii = 0) {
        if (ensure(b, ri, err) != 0)
            return -1;
        const lp_code_region *reg = &b->regions[ri];
        for (; ii < reg->ninsts; ii++) {
            if (ri == re && ii == ie)
                return 1;
            if (in_uncond_set(&reg->insts[ii]))
                return 0;
        }
    }
    return 1;
}

bool lp_binary_in_prolog_epilog(lp_binary *b, uint64_t addr)
{
    uint64_t p, n;
    const lp_func_range *r = lp_binary_func_range(b, addr);
    if (r && r->start == addr)
        return true;
    if (lp_binary_prev_inst(b, addr, &p, NULL) == 1) {
        r = lp_binary_func_range(b, p);
        if (r && r->start == p)
            return true;
    }
    if (lp_binary_is_return(b, addr))
        return true;
    return lp_binary_next_inst(b, addr, &n, NULL) == 1 &&
           lp_binary_is_return(b, n);
}

size_t lp_binary_decoded_regions(const lp_binary *b, size_t *total)
{
    size_t n = 0;
    for (size_t i = 0; i < b->nregions; i++)
        n += region_state(&b->regions[i]) == LP_RG_DONE;
    if (total)
        *total = b->nregions;
    return n;
}
