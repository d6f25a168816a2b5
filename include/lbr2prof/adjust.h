/*
 * lbr2prof/adjust.h - return-address -> call-site adjustment (seed 000).
 *
 * Mirrors symbolic's InstructionInfo and symbolicator's per-frame rule:
 * every architecture has an instruction alignment (none on x86); the
 * "aligned" address clears the low bits, the "previous" address steps one
 * instruction back (two on MIPS: delay slot). A stack-level mode
 * (auto/all/all_but_first/none) maps onto per-frame flags exactly as the
 * Sentry processor does, and the flags resolve as symbolicator does: once
 * any frame carries a flag, unflagged frames default to "adjust".
 * Raw addresses are never modified; callers keep both.
 */
#ifndef LBR2PROF_ADJUST_H
#define LBR2PROF_ADJUST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lp_cpu {
    LP_CPU_UNKNOWN = 0,
    LP_CPU_X86,
    LP_CPU_X86_64,
    LP_CPU_ARM,
    LP_CPU_ARM64,
    LP_CPU_ARM64_32,
    LP_CPU_MIPS,
    LP_CPU_MIPS64,
    LP_CPU_PPC,
    LP_CPU_PPC64,
    LP_CPU_WASM32,
} lp_cpu;

/* Breakpad/symbolic spellings: "x86", "x86_64" (also "amd64"), "arm",
 * "arm64" (also "aarch64"), "arm64_32", "mips", "mips64", "ppc", "ppc64",
 * "wasm32". Unknown names give LP_CPU_UNKNOWN. */
lp_cpu lp_cpu_from_name(const char *name);
const char *lp_cpu_name(lp_cpu arch);
/* From an ELF header's e_machine and EI_CLASS (1 = 32-bit, 2 = 64-bit). */
lp_cpu lp_cpu_from_elf(unsigned e_machine, unsigned elf_class);
/* Instruction alignment in bytes, 0 when there is none (x86, unknown). */
unsigned lp_cpu_align(lp_cpu arch);
/* Name of the instruction-pointer register: rip, eip, pc, srr0 (or NULL). */
const char *lp_cpu_ip_register(lp_cpu arch);

/* addr - addr % align. */
uint64_t lp_addr_aligned(lp_cpu arch, uint64_t addr);
/* aligned - width (2 * width on MIPS), width = align or 1. Returns -1 and
 * leaves *out alone when that would go below zero (never wraps). */
int lp_addr_previous(lp_cpu arch, uint64_t addr, uint64_t *out);

/* What is known about the capture: a crash signal (0 = none) and the
 * instruction-pointer register value (has_ip = 0 if unknown). */
typedef struct lp_crash_ctx {
    int signal;
    int has_ip;
    uint64_t ip;
} lp_crash_ctx;

/* symbolic's caller_address (the "Auto" heuristic). -1 on underflow. */
int lp_addr_caller(lp_cpu arch, uint64_t addr, int is_crashing_frame,
                   const lp_crash_ctx *ctx, uint64_t *out);

typedef enum lp_adjust_mode {
    LP_ADJUST_AUTO = 0,
    LP_ADJUST_ALL,
    LP_ADJUST_ALL_BUT_FIRST,
    LP_ADJUST_NONE,
} lp_adjust_mode;

/* "auto", "all", "all_but_first", "none"; -1 for anything else. */
int lp_adjust_mode_parse(const char *s, lp_adjust_mode *out);
const char *lp_adjust_mode_name(lp_adjust_mode mode);

/* Per-frame adjust_instruction_addr: unset, false or true. */
enum { LP_ADJ_UNSET = -1, LP_ADJ_NO = 0, LP_ADJ_YES = 1 };

/* Stack-level mode -> per-frame flags (Sentry's processor mapping):
 * auto: all unset; all: [YES, unset...]; all_but_first: [NO, unset...];
 * none: NO everywhere. */
void lp_adjust_flags_for_mode(lp_adjust_mode mode, size_t n, int8_t *flags);

/* Lookup addresses for a callee-first stack of n frames. flags may be NULL
 * (all unset); ctx may be NULL (no signal, no registers). ok[i] is 1, or 0
 * when frame i's adjusted address would underflow (lookup[i] is then the
 * raw address and must not be looked up). */
void lp_adjust_stack(lp_cpu arch, size_t n, const uint64_t *addrs,
                     const int8_t *flags, const lp_crash_ctx *ctx,
                     uint64_t *lookup, uint8_t *ok);

/* Same as lp_adjust_flags_for_mode + lp_adjust_stack, without an array. */
void lp_adjust_stack_mode(lp_cpu arch, lp_adjust_mode mode, size_t n,
                          const uint64_t *addrs, const lp_crash_ctx *ctx,
                          uint64_t *lookup, uint8_t *ok);

/* What a frame address is (seed-000 §1.2): an interrupted PC or LBR target
 * (never adjusted), a return address (look up the previous instruction),
 * or a call site (already adjusted, e.g. llvm-profgen contexts). Keys that
 * deduplicate frames must include the kind or the lookup address, never
 * the raw address alone. */
typedef enum lp_addr_kind {
    LP_ADDR_IP = 0,
    LP_ADDR_RETURN,
    LP_ADDR_CALL_SITE,
} lp_addr_kind;

/* Lookup address for a frame of a known kind: IP and CALL_SITE aligned
 * (symbolicator's "No"), RETURN the previous instruction ("Yes"). -1 on
 * underflow. */
int lp_addr_lookup(lp_cpu cpu, lp_addr_kind kind, uint64_t addr, uint64_t *out);

/* The lookup address of frame `index` of a stack under `mode` (what
 * lp_adjust_stack_mode computes for that frame). -1 on underflow. */
int lp_adjust_frame(lp_cpu arch, lp_adjust_mode mode, size_t index,
                    uint64_t addr, const lp_crash_ctx *ctx, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif
