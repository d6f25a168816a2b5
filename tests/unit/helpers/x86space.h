/*
 * x86space.h - walk the x86 encoding space for the unit tests of
 * decoders and classifiers (test_disasm, test_insn): every legacy prefix
 * string x escape x opcode x ModRM (or second opcode byte), each followed
 * by a fixed tail for SIB, displacement and immediates.
 */
#ifndef LBR2PROF_TESTS_X86SPACE_H
#define LBR2PROF_TESTS_X86SPACE_H

#include <stddef.h>
#include <stdint.h>

typedef void (*x86space_fn)(const uint8_t *code, size_t n, void *ctx);

/* fn(code, n, ctx) for pre[i] + esc[j] + opcode + m + tail, for every
 * opcode and for m = 0, mstep, 2 * mstep, ... < 256. */
void x86space_each(const char *const *pre, size_t npre,
                   const char *const *esc, size_t nesc, unsigned mstep,
                   x86space_fn fn, void *ctx);

#endif
