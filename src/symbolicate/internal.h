/*
 * internal.h - shared between the files of src/symbolicate (not public):
 * request validation (request.c) feeding the symbolication (response.c).
 */
#ifndef LBR2PROF_SYMBOLICATE_INTERNAL_H
#define LBR2PROF_SYMBOLICATE_INTERNAL_H

#include <jansson.h>

#include "lbr2prof/symbolicate.h"

/* Integer (or boolean, as Python's int check) JSON value. */
int lp_sym_json_int(const json_t *v, long long *out);
/* Parse a request body; error title "Payload is not valid JSON". */
json_t *lp_sym_parse_body(const char *body, size_t len, lp_error *err);
/* The jobs array of a v5 request (new reference), MAX_JOBS checked. */
json_t *lp_sym_v5_jobs(json_t *root, lp_error *err);
/* Validate every job (stacks, memoryMap, modules, stacks) in order. */
int lp_sym_validate_jobs(const json_t *jobs, lp_error *err);

#endif
