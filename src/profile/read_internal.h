/*
 * read_internal.h - what the binary sample-profile readers share
 * (src/profile/binread.c: the byte cursor, the name table, function
 * profiles, the summary and the legacy "binary" format; extread.c: the
 * extbinary sections). Every read is bounds-checked; a failure names the
 * file, the offset (and section) and what was expected there.
 */
#ifndef LBR2PROF_PROFILE_READ_INTERNAL_H
#define LBR2PROF_PROFILE_READ_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/profile.h"
#include "profile/format.h"

/* A bounds-checked cursor over one buffer: the file, or one section
 * inflated from zlib. */
typedef struct rd {
    const uint8_t *p, *end;
    const uint8_t *base;        /* offsets in messages count from here */
    uint64_t base_off;          /* file offset of base */
    int inflated;               /* base is a section inflated from zlib */
    const char *file;           /* for messages */
    const char *sec;            /* section being read, or NULL */
    lp_error *err;
} rd;

int rd_fail(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int rd_uleb(rd *r, uint64_t *v, const char *what);
/* a ULEB128 number that must fit 32 bits (LLVM readNumber<uint32_t>) */
int rd_u32(rd *r, uint32_t *v, const char *what);
int rd_u64le(rd *r, uint64_t *v, const char *what);
int rd_cstr(rd *r, const char **s, const char *what);
/* a line offset (ULEB128), at most 16 bits as LLVM's isOffsetLegal asks */
int rd_line(rd *r, uint32_t *line);

/* The name table: names point into the file (or an inflated section) or,
 * for MD5 tables, into `arena` (decimal, as LLVM prints them). */
typedef struct name_tab {
    const char **v;
    size_t n;
    char *arena;
} name_tab;

void name_tab_free(name_tab *t);
/* SampleProfileReaderBinary::readNameTable: a count, NUL-terminated
 * names; with md5 (ExtBinary MD5 table without fixed length) ULEB128
 * hashes; with fixed, 8-byte little-endian hashes. */
int read_name_table(rd *r, name_tab *t, int md5, int fixed);
/* A name-table index (LLVM readStringFromTable). */
int read_name_ref(rd *r, const name_tab *t, const char **name);

/* What reading function profiles needs: the tables, and whether top-level
 * profiles are named by a CS context index. */
typedef struct prof_ctx {
    lp_profile *p;
    name_tab names;
    char **contexts;            /* CS name table: printed contexts */
    const char **leaves;        /* their leaf function names */
    size_t nr_contexts;
    int summary_seen;           /* the file had a summary */
} prof_ctx;

void prof_ctx_free(prof_ctx *c);
/* One top-level profile (SampleProfileReaderBinary::readFuncProfile):
 * head count, context or name index, then the body and inlinees. */
int read_func_profile(rd *r, prof_ctx *c);
/* A top-level profile's context index: into the CS table for CS
 * profiles, else into the name table. NULL name and key for errors. */
int read_context_ref(rd *r, const prof_ctx *c, const char **key,
                     const char **leaf);

/* The summary (readSummary) into info (may be NULL: skipped). */
int read_summary(rd *r, lp_prof_info *info);

/* The legacy binary format after its magic and version. */
int read_legacy(rd *r, prof_ctx *c, lp_prof_info *info);
/* The extbinary format after its magic and version: the section header
 * table, then every section. `file` is the whole file (offsets). With
 * header_only, the table alone (llvm-profdata show --show-sec-info-only). */
int read_extbinary(rd *r, const uint8_t *file, size_t len, prof_ctx *c,
                   lp_prof_info *info, int header_only);

#endif
