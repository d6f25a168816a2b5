/*
 * internal.h - shared between the files of src/symbolicate (not public):
 * request validation (request.c) feeding the symbolication (response.c),
 * integers of any size (bigint.c).
 */
#ifndef LBR2PROF_SYMBOLICATE_INTERNAL_H
#define LBR2PROF_SYMBOLICATE_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "lbr2prof/symbolicate.h"

/* Integer (or boolean, as Python's int check) JSON value; with big set
 * (the body was rewritten by lp_sym_rewrite_big_ints), an integer beyond
 * 64 bits too, saturated to LLONG_MIN/LLONG_MAX (bigint.c). */
int lp_sym_json_int(const json_t *v, int big, long long *out);
/* The body with every integer literal beyond 64 signed bits turned into a
 * marker string; NULL when there is none, a string holds an escaped NUL,
 * or a literal has more than 4300 digits (bigint.c). */
char *lp_sym_rewrite_big_ints(const char *body, size_t len, size_t *outlen);
/* Python's hex() of a valid module offset (-1, or 0 to any size) as a JSON
 * string; *val and *lookup = 1 when it is 0 to 2^64-1 (bigint.c). */
json_t *lp_sym_offset_hex(const json_t *v, int big, uint64_t *val, int *lookup);
/* Parse a request body; error title "Payload is not valid JSON". *big
 * says that integers beyond 64 bits were read as markers. */
json_t *lp_sym_parse_body(const char *body, size_t len, int *big, lp_error *err);
/* The jobs array of a v5 request (new reference), MAX_JOBS checked. */
json_t *lp_sym_v5_jobs(json_t *root, lp_error *err);
/* Validate every job (stacks, memoryMap, modules, stacks) in order. */
int lp_sym_validate_jobs(const json_t *jobs, int big, lp_error *err);

#endif
