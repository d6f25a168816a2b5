/*
 * request.c - validation of Symbolication API requests (v5 and v4).
 * Owns the JSON shape checks and the service's exact error titles (Eliot's
 * validate_modules / validate_stacks / _validate_and_measure_jobs). Not the
 * lookups nor the response (response.c).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "symbolicate/internal.h"

static int match_chars(const char *s, const char *extra, int hex)
{
    for (; *s; s++) {
        if (hex ? isxdigit((unsigned char)*s)
                : (isalnum((unsigned char)*s) || strchr(extra, *s)))
            continue;
        return 0;
    }
    return 1;
}

/* Returns NULL or the message of the first invalid module. */
static const char *check_modules(const json_t *mods, char *buf, size_t n)
{
    size_t i;
    const json_t *it, *f, *id;

    if (!json_is_array(mods))
        return "modules must be a list";
    json_array_foreach(mods, i, it) {
        if (!json_is_array(it) || json_array_size(it) != 2) {
            snprintf(buf, n, "module index %zu does not have a debug_filename and debug_id", i);
            return buf;
        }
        f = json_array_get(it, 0);
        id = json_array_get(it, 1);
        if (!json_is_string(f) || strlen(json_string_value(f)) != json_string_length(f) ||
            !match_chars(json_string_value(f), "_.+{}@<> ~-", 0)) {
            snprintf(buf, n, "module index %zu has an invalid debug_filename", i);
            return buf;
        }
        if (!json_is_string(id) || strlen(json_string_value(id)) != json_string_length(id) ||
            !match_chars(json_string_value(id), "", 1)) {
            snprintf(buf, n, "module index %zu has an invalid debug_id", i);
            return buf;
        }
    }
    return NULL;
}

static const char *check_frame(const json_t *fr, size_t s, size_t f, size_t nmods, int big,
                               char *buf, size_t n)
{
    long long idx, off;

    if (!json_is_array(fr) || json_array_size(fr) != 2)
        return snprintf(buf, n, "stack %zu frame %zu is not a list of two items", s, f), buf;
    if (!lp_sym_json_int(json_array_get(fr, 0), big, &idx))
        return snprintf(buf, n, "stack %zu frame %zu has an invalid module_index", s, f), buf;
    if (idx < -1 || idx >= (long long)nmods)
        return snprintf(buf, n, "stack %zu frame %zu has a module_index that isn't in modules",
                        s, f), buf;
    if (!lp_sym_json_int(json_array_get(fr, 1), big, &off) || off < -1)
        return snprintf(buf, n, "stack %zu frame %zu has an invalid module_offset", s, f), buf;
    return NULL;
}

static const char *check_stacks(const json_t *stacks, size_t nmods, int big, char *buf,
                                size_t n)
{
    size_t s, f;
    const json_t *st, *fr;
    const char *msg;

    if (!json_is_array(stacks))
        return "stacks must be a list of lists";
    if (json_array_size(stacks) == 0)
        return "no stacks specified";
    json_array_foreach(stacks, s, st) {
        if (!json_is_array(st))
            return snprintf(buf, n, "stack %zu is not a list", s), buf;
        json_array_foreach(st, f, fr)
            if ((msg = check_frame(fr, s, f, nmods, big, buf, n)))
                return msg;
    }
    return NULL;
}

int lp_sym_validate_jobs(const json_t *jobs, int big, lp_error *err)
{
    size_t i;
    const json_t *job, *stacks, *mods;
    const char *msg;
    char buf[160];

    json_array_foreach(jobs, i, job) {
        if (!json_is_object(job))
            return lp_error_set(err, LP_EFORMAT, "job %zu is invalid", i);
        stacks = json_object_get(job, "stacks");
        mods = json_object_get(job, "memoryMap");
        if (!stacks)
            return lp_error_set(err, LP_EFORMAT, "job %zu is invalid: no stacks specified", i);
        if (!mods)
            return lp_error_set(err, LP_EFORMAT, "job %zu is invalid: no memoryMap specified", i);
        if ((msg = check_modules(mods, buf, sizeof buf)))
            return lp_error_set(err, LP_EFORMAT, "job %zu has invalid modules: %s", i, msg);
        if ((msg = check_stacks(stacks, json_array_size(mods), big, buf, sizeof buf)))
            return lp_error_set(err, LP_EFORMAT, "job %zu has invalid stacks: %s", i, msg);
    }
    return 0;
}

json_t *lp_sym_parse_body(const char *body, size_t len, int *big, lp_error *err)
{
    json_error_t je;
    json_t *root = body ? json_loadb(body, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je) : NULL;
    char *rw;
    size_t rwlen;

    *big = 0;
    /* Integers beyond 64 bits are valid JSON (bigint.c). */
    if (!root && body && strstr(je.text, "too big") &&
        (rw = lp_sym_rewrite_big_ints(body, len, &rwlen))) {
        root = json_loadb(rw, rwlen, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        *big = root != NULL;
        free(rw);
    }
    if (!root)
        lp_error_set(err, LP_EFORMAT, "Payload is not valid JSON");
    return root;
}

json_t *lp_sym_v5_jobs(json_t *root, lp_error *err)
{
    json_t *jobs = json_is_object(root) ? json_object_get(root, "jobs") : NULL;

    if (jobs && json_is_array(jobs)) {
        if (json_array_size(jobs) > LP_SYM_MAX_JOBS) {
            lp_error_set(err, LP_EFORMAT,
                         "please limit number of jobs in a single request to <= %d",
                         LP_SYM_MAX_JOBS);
            return NULL;
        }
        return json_incref(jobs);
    }
    if (jobs) { /* not a list: the service fails on its first element */
        lp_error_set(err, LP_EFORMAT, "job 0 is invalid");
        return NULL;
    }
    jobs = json_array();
    if (!jobs || json_array_append(jobs, root) < 0) {
        json_decref(jobs);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    return jobs;
}
