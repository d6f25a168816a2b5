/*
 * writer.h - internal interface of the profile writers (src/writer/):
 * one entry point per format, plus the growable byte buffer and LEB128
 * encoders the binary formats share. Public callers use lp_profile_write.
 */
#ifndef LBR2PROF_WRITER_WRITER_H
#define LBR2PROF_WRITER_WRITER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/profile.h"

typedef struct lp_buf {
    uint8_t *d;
    size_t n, cap;
    int oom;                /* sticky: an append failed */
} lp_buf;

void lp_buf_put(lp_buf *b, const void *p, size_t n);
void lp_buf_uleb(lp_buf *b, uint64_t v);
void lp_buf_u64le(lp_buf *b, uint64_t v);
void lp_buf_free(lp_buf *b);

int lp_write_text(FILE *f, const lp_profile *p, lp_error *err);
int lp_write_binary(FILE *f, const lp_profile *p, const lp_write_opts *o,
                    lp_error *err);

#endif
