/*
 * adjust.c - per-architecture call-site address adjustment (seed 000).
 * Owns the arch table (alignment, IP register) and the mode/flag rules of
 * symbolic/symbolicator; it does not know about modules or symbols.
 */
#include <elf.h>
#include <string.h>

#include "lbr2prof/adjust.h"

struct arch_info {
    lp_cpu arch;
    const char *name;
    unsigned align;      /* 0 = no alignment */
    const char *ip_reg;
};

static const struct arch_info arch_table[] = {
    {LP_CPU_UNKNOWN, "unknown", 0, NULL},
    {LP_CPU_X86, "x86", 0, "eip"},
    {LP_CPU_X86_64, "x86_64", 0, "rip"},
    {LP_CPU_ARM, "arm", 2, "pc"},
    {LP_CPU_ARM64, "arm64", 4, "pc"},
    {LP_CPU_ARM64_32, "arm64_32", 4, "pc"},
    {LP_CPU_MIPS, "mips", 4, "pc"},
    {LP_CPU_MIPS64, "mips64", 4, "pc"},
    {LP_CPU_PPC, "ppc", 4, "srr0"},
    {LP_CPU_PPC64, "ppc64", 8, "srr0"},
    {LP_CPU_WASM32, "wasm32", 4, NULL},
};

static const struct arch_info *info(lp_cpu arch)
{
    size_t i;

    for (i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (arch_table[i].arch == arch)
            return &arch_table[i];
    return &arch_table[0];
}

lp_cpu lp_cpu_from_name(const char *name)
{
    size_t i;

    if (!name)
        return LP_CPU_UNKNOWN;
    if (strcmp(name, "amd64") == 0)
        return LP_CPU_X86_64;
    if (strcmp(name, "aarch64") == 0)
        return LP_CPU_ARM64;
    if (strcmp(name, "i386") == 0 || strcmp(name, "i686") == 0)
        return LP_CPU_X86;
    for (i = 0; i < sizeof arch_table / sizeof arch_table[0]; i++)
        if (strcmp(arch_table[i].name, name) == 0)
            return arch_table[i].arch;
    return LP_CPU_UNKNOWN;
}

const char *lp_cpu_name(lp_cpu arch) { return info(arch)->name; }
unsigned lp_cpu_align(lp_cpu arch) { return info(arch)->align; }
const char *lp_cpu_ip_register(lp_cpu arch) { return info(arch)->ip_reg; }

lp_cpu lp_cpu_from_elf(unsigned e_machine, unsigned elf_class)
{
    int is64 = elf_class == ELFCLASS64;

    switch (e_machine) {
    case EM_386: return LP_CPU_X86;
    case EM_X86_64: return LP_CPU_X86_64;
    case EM_ARM: return LP_CPU_ARM;
    case EM_AARCH64: return is64 ? LP_CPU_ARM64 : LP_CPU_ARM64_32;
    case EM_MIPS: return is64 ? LP_CPU_MIPS64 : LP_CPU_MIPS;
    case EM_PPC: return LP_CPU_PPC;
    case EM_PPC64: return LP_CPU_PPC64;
    default: return LP_CPU_UNKNOWN;
    }
}

uint64_t lp_addr_aligned(lp_cpu arch, uint64_t addr)
{
    unsigned a = lp_cpu_align(arch);

    return a ? addr - addr % a : addr;
}

int lp_addr_previous(lp_cpu arch, uint64_t addr, uint64_t *out)
{
    uint64_t aligned = lp_addr_aligned(arch, addr);
    uint64_t w = lp_cpu_align(arch) ? lp_cpu_align(arch) : 1;

    if (arch == LP_CPU_MIPS || arch == LP_CPU_MIPS64)
        w *= 2; /* the delay slot: the call is two instructions back */
    if (aligned < w)
        return -1;
    *out = aligned - w;
    return 0;
}

static int is_crash_signal(int sig)
{
    return sig == 4 || sig == 10 || sig == 11; /* SIGILL, SIGBUS, SIGSEGV */
}

int lp_addr_caller(lp_cpu arch, uint64_t addr, int is_crashing_frame,
                   const lp_crash_ctx *ctx, uint64_t *out)
{
    int adjust = !is_crashing_frame;

    if (is_crashing_frame && ctx && ctx->has_ip && ctx->ip != addr &&
        is_crash_signal(ctx->signal))
        adjust = 1; /* the signal-handler frame was removed (KSCrash) */
    if (adjust)
        return lp_addr_previous(arch, addr, out);
    *out = lp_addr_aligned(arch, addr);
    return 0;
}

static const char *const mode_names[] = {"auto", "all", "all_but_first", "none"};

int lp_adjust_mode_parse(const char *s, lp_adjust_mode *out)
{
    int i;

    for (i = 0; s && i < 4; i++)
        if (strcmp(s, mode_names[i]) == 0) {
            *out = (lp_adjust_mode)i;
            return 0;
        }
    return -1;
}

const char *lp_adjust_mode_name(lp_adjust_mode mode)
{
    return (unsigned)mode < 4 ? mode_names[mode] : "?";
}

static int8_t mode_flag(lp_adjust_mode mode, size_t i)
{
    switch (mode) {
    case LP_ADJUST_ALL: return i == 0 ? LP_ADJ_YES : LP_ADJ_UNSET;
    case LP_ADJUST_ALL_BUT_FIRST: return i == 0 ? LP_ADJ_NO : LP_ADJ_UNSET;
    case LP_ADJUST_NONE: return LP_ADJ_NO;
    default: return LP_ADJ_UNSET;
    }
}

void lp_adjust_flags_for_mode(lp_adjust_mode mode, size_t n, int8_t *flags)
{
    size_t i;

    for (i = 0; i < n; i++)
        flags[i] = mode_flag(mode, i);
}

/* One frame: flag is the frame's resolved flag or UNSET (= Auto). */
static void adjust_one(lp_cpu arch, uint64_t addr, size_t i, int flag,
                       const lp_crash_ctx *ctx, uint64_t *lookup, uint8_t *ok)
{
    int r;

    if (flag == LP_ADJ_YES)
        r = lp_addr_previous(arch, addr, lookup);
    else if (flag == LP_ADJ_NO)
        r = (*lookup = lp_addr_aligned(arch, addr), 0);
    else
        r = lp_addr_caller(arch, addr, i == 0, ctx, lookup);
    *ok = r == 0;
    if (r != 0)
        *lookup = addr;
}

void lp_adjust_stack(lp_cpu arch, size_t n, const uint64_t *addrs,
                     const int8_t *flags, const lp_crash_ctx *ctx,
                     uint64_t *lookup, uint8_t *ok)
{
    int any_set = 0, dflt, f;
    size_t i;

    for (i = 0; flags && i < n; i++)
        any_set |= flags[i] != LP_ADJ_UNSET;
    dflt = any_set ? LP_ADJ_YES : LP_ADJ_UNSET;
    for (i = 0; i < n; i++) {
        f = flags && flags[i] != LP_ADJ_UNSET ? flags[i] : dflt;
        adjust_one(arch, addrs[i], i, f, ctx, &lookup[i], &ok[i]);
    }
}

/* Frame i of a stack under a stack-level mode: every mode but auto sets a
 * flag on frame 0, which turns the default of the others to "adjust". */
static void stack_mode_one(lp_cpu arch, lp_adjust_mode mode, size_t i,
                                     uint64_t addr, const lp_crash_ctx *ctx,
                                     uint64_t *lookup, uint8_t *ok)
{
    int f = mode_flag(mode, i);

    if (f == LP_ADJ_UNSET && mode != LP_ADJUST_AUTO)
        f = LP_ADJ_YES;
    adjust_one(arch, addr, i, f, ctx, lookup, ok);
}

void lp_adjust_stack_mode(lp_cpu arch, lp_adjust_mode mode, size_t n,
                          const uint64_t *addrs, const lp_crash_ctx *ctx,
                          uint64_t *lookup, uint8_t *ok)
{
    size_t i;

    for (i = 0; i < n; i++)
        stack_mode_one(arch, mode, i, addrs[i], ctx, &lookup[i], &ok[i]);
}

int lp_adjust_frame(lp_cpu arch, lp_adjust_mode mode, size_t index,
                    uint64_t addr, const lp_crash_ctx *ctx, uint64_t *out)
{
    uint8_t ok;

    stack_mode_one(arch, mode, index, addr, ctx, out, &ok);
    return ok ? 0 : -1;
}

int lp_addr_lookup(lp_cpu cpu, lp_addr_kind kind, uint64_t addr, uint64_t *out)
{
    if (kind == LP_ADDR_RETURN)
        return lp_addr_previous(cpu, addr, out);
    *out = lp_addr_aligned(cpu, addr);
    return 0;
}
