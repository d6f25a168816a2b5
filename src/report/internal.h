/*
 * internal.h - the report module's private structures: the builder's hash
 * tables behind the public lp_report_node/lp_report_func views, and the
 * helpers the writers share. Not part of the API.
 */
#ifndef LBR2PROF_REPORT_INTERNAL_H
#define LBR2PROF_REPORT_INTERNAL_H

#include <uthash.h>

#include "lbr2prof/report.h"
#include "util/demangle.h"

typedef struct rp_line {
    lp_report_line l;           /* l.loc is the hash key */
    UT_hash_handle hh;
} rp_line;

typedef struct rp_func {
    lp_report_func f;           /* f.name is the hash key */
    rp_line *lines;             /* body lines summed over its nodes */
    int active;                 /* nodes of it on the current DFS path */
    UT_hash_handle hh;
} rp_func;

/* Children are keyed by (interned function, call site). */
typedef struct rp_key {
    const rp_func *func;
    uint32_t line, disc;
} rp_key;

typedef struct rp_node {
    lp_report_node n;           /* first: the public view */
    rp_key key;
    struct rp_node *kids;       /* hash of children */
    rp_line *lines;             /* hash of body lines */
    UT_hash_handle hh;
} rp_node;

struct lp_report {
    lp_report_unit unit;
    char *input, *kind;
    char **binaries;
    size_t nbinaries;
    lp_report_quality q;
    bool cs;                    /* some context has more than one frame */
    rp_func *funcs;
    rp_node root;
    bool finished;
    const lp_report_func **sorted;  /* functions, report order */
    size_t nfuncs;
    lp_demangler dm;            /* display names of C++ functions */
};

/* Writers (one file each). */
int rp_write_text(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                  lp_error *err);
int rp_write_json(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                  lp_error *err);
int rp_write_folded(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                    lp_error *err);
int rp_write_speedscope(FILE *f, const lp_report *r,
                        const lp_report_write_opts *o, lp_error *err);
int rp_write_svg(FILE *f, const lp_report *r, const lp_report_write_opts *o,
                 lp_error *err);

/* Display name of a function under the write options. */
static inline const char *rp_name(const lp_report_func *f,
                                  const lp_report_write_opts *o)
{
    return o->no_demangle ? f->name : f->display;
}

/* 100 * part / whole, 0 when whole is 0. */
static inline double rp_pct(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

#endif
