/*
 * pt_itrace.c - the --itrace option string, with perf 6.1's syntax and
 * defaults (itrace_do_parse_synth_opts): `i[N[i|t|ns|us|ms]]` (a number
 * without a unit is nanoseconds; default 100 us), `b`, `e[+-flags]`,
 * `l[N]` (default 64, at most 1024), `g[N]` (default 16, at most 1024),
 * `s[N]`; spaces and commas separate.
 * Owns the parsing only; what the options do is pt_synth.c.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "pt/pt_internal.h"

#define DEFAULT_PERIOD 100000
#define DEFAULT_LAST_BRANCH_SZ 64
#define MAX_LAST_BRANCH_SZ 1024
#define DEFAULT_CALLCHAIN_SZ 16
#define MAX_CALLCHAIN_SZ 1024

static const char *skip_sep(const char *p)
{
    while (*p == ' ' || *p == ',')
        p++;
    return p;
}

/* `i` followed by an optional period and unit. 0, or -1 on bad syntax. */
static int parse_period(const char **pp, lp_itrace *o, bool *period_set,
                        bool *type_set)
{
    const char *p = skip_sep(*pp);
    char *end;

    if (!isdigit((unsigned char)*p)) {
        *pp = p;
        return 0;
    }
    o->period = strtoull(p, &end, 10);
    *period_set = true;
    p = skip_sep(end);
    switch (*p) {
    case '\0': *pp = p; return 0;
    case 'i': o->period_type = LP_ITRACE_PERIOD_INSTRUCTIONS; p++; break;
    case 't': o->period_type = LP_ITRACE_PERIOD_TICKS; p++; break;
    case 'm': case 'u': case 'n':
        if (*p == 'm')
            o->period *= 1000;
        if (*p == 'm' || *p == 'u')
            o->period *= 1000;
        if (p[1] != 's')
            return -1;
        o->period_type = LP_ITRACE_PERIOD_NANOSECS;
        p += 2;
        break;
    default: return -1;
    }
    *type_set = true;
    *pp = p;
    return 0;
}

/* `e` flags: +o/-o (overflow), +l/-l (data lost). */
static int parse_error_flags(const char **pp, lp_itrace *o)
{
    const char *p = *pp;

    while (*p == '+' || *p == '-') {
        bool minus = *p == '-';
        if (p[1] == 'o')
            o->no_overflow_errors = minus;
        else if (p[1] == 'l')
            o->no_lost_errors = minus;
        else
            return -1;
        p += 2;
    }
    *pp = p;
    return 0;
}

static int parse_number(const char **pp, uint64_t *v, uint64_t max)
{
    const char *p = skip_sep(*pp);
    char *end;

    if (!isdigit((unsigned char)*p))
        return 0;
    *v = strtoull(p, &end, 10);
    if (!*v || *v > max)
        return -1;
    *pp = end;
    return 0;
}

static int bad(lp_error *err, const char *s, const char *why)
{
    return lp_error_set(err, LP_EUSAGE, "bad --itrace options '%s': %s", s,
                        why);
}

int lp_itrace_parse(const char *s, lp_itrace *o, lp_error *err)
{
    bool period_set = false, type_set = false;
    const char *p = s;
    uint64_t v;

    memset(o, 0, sizeof *o);
    o->set = true;
    while (*p) {
        char c = *p++;
        switch (c) {
        case 'i':
            o->instructions = true;
            if (parse_period(&p, o, &period_set, &type_set))
                return bad(err, s, "a period is a number followed by i, t, "
                           "ns, us or ms");
            break;
        case 'b': o->branches = true; break;
        case 'e':
            o->errors = true;
            if (parse_error_flags(&p, o))
                return bad(err, s, "error flags are +o, -o, +l, -l");
            break;
        case 'l':
            o->last_branch = true;
            v = DEFAULT_LAST_BRANCH_SZ;
            if (parse_number(&p, &v, MAX_LAST_BRANCH_SZ))
                return bad(err, s, "the branch stack size is 1..1024");
            o->last_branch_sz = (unsigned)v;
            break;
        case 'g':
            o->callchain = true;
            v = DEFAULT_CALLCHAIN_SZ;
            if (parse_number(&p, &v, MAX_CALLCHAIN_SZ))
                return bad(err, s, "the callchain size is 1..1024");
            o->callchain_sz = (unsigned)v;
            break;
        case 's':
            v = 0;
            if (parse_number(&p, &v, UINT64_MAX))
                return bad(err, s, "s wants a number of samples to skip");
            o->initial_skip = v;
            break;
        case ' ': case ',': break;
        case 'c': case 'r': case 'x': case 'w': case 'p': case 'o': case 'd':
        case 'G': case 'L': case 'q': case 'Z': case 'y': case 'A':
        case 'I': case 'm': case 'M': case 'f': case 'T':
            return lp_error_set(err, LP_EUNSUPP, "--itrace option '%c' is not "
                                "supported by lbr2prof (it synthesizes i, b, "
                                "l, g, e and s)", c);
        default:
            return bad(err, s, "unknown option letter");
        }
    }
    if (o->instructions) {
        if (!type_set)
            o->period_type = LP_ITRACE_PERIOD_NANOSECS;
        if (!period_set)
            o->period = DEFAULT_PERIOD;
    }
    return 0;
}
