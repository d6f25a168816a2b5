/*
 * cmd_symbolicate.c - `lbr2prof symbolicate`: a Symbolication API v5 (or v4)
 * request in, the service's response out, offline. Owns option parsing and
 * reading the request; the work is in src/symbolicate.
 * LP_BUILTIN(symbolicate, cmd_symbolicate, "answer a Mozilla Symbolication API v5/v4 request offline")
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/symbolicate.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: lbr2prof symbolicate [--symbols DIR]... [--binary ELF|DIR]... [--debug-dir DIR]...\n"
        "         [--api=v5|v4] [--adjust=auto|all|all_but_first|none] [--arch=ARCH]\n"
        "         [--pretty] [--debug] [-o OUT.json] [REQUEST.json | -]\n"
        "  --symbols DIR   Breakpad store: DIR/<debug_file>/<debug_id>/<debug_file>.sym\n"
        "  --binary PATH   ELF file(s) with DWARF, found by the debug id of their build-id\n"
        "  --debug-dir DIR separate debug files in DIR/.build-id/xx/yyyy.debug (/usr/lib/debug)\n"
        "  --api           request/response version (default v5)\n"
        "  --adjust MODE   treat stack entries as return addresses and look up the\n"
        "                  call site (seed 000); adds \"lookup_offset\" to v5 frames\n"
        "  --arch ARCH     instruction alignment for --adjust (default: the module's)\n"
        "  --debug         add the service's \"debug\" statistics (as header Debug: true)\n"
        "A request the service would refuse prints its error title; exit status 2.\n");
}

/* Read all of a stream into a NUL-terminated buffer. */
static char *slurp(FILE *in, size_t *len, lp_error *err)
{
    size_t cap = 65536, n = 0, got;
    char *buf = malloc(cap), *nb;

    while (buf && (got = fread(buf + n, 1, cap - n - 1, in)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            if (!(nb = realloc(buf, cap * 2))) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
    }
    if (!buf) {
        lp_error_set(err, LP_ENOMEM, "request: out of memory");
        return NULL;
    }
    if (ferror(in)) {
        free(buf);
        lp_error_set(err, LP_EIO, "request: read error: %s", strerror(errno));
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

typedef struct sym_args {
    const char *input, *output;
    int v4;
    lp_sym_opts opts;
} sym_args;

static int parse_args(int argc, char **argv, lp_sym_store *st, sym_args *a, lp_error *err)
{
    int i;
    const char *v;

    for (i = 1; i < argc; i++) {
        const char *o = argv[i];
        if ((!strcmp(o, "--symbols") || !strcmp(o, "--binary") || !strcmp(o, "--debug-dir") ||
             !strcmp(o, "-o")) && i + 1 < argc) {
            v = argv[++i];
            if (!strcmp(o, "-o"))
                a->output = v;
            else if ((!strcmp(o, "--symbols") ? lp_sym_store_add_dir(st, v, err)
                      : !strcmp(o, "--binary") ? lp_sym_store_add_elf(st, v, err)
                                               : lp_sym_store_add_debug_dir(st, v, err)) < 0)
                return -1;
        } else if (!strncmp(o, "--symbols=", 10)) {
            if (lp_sym_store_add_dir(st, o + 10, err) < 0)
                return -1;
        } else if (!strncmp(o, "--binary=", 9)) {
            if (lp_sym_store_add_elf(st, o + 9, err) < 0)
                return -1;
        } else if (!strcmp(o, "--api=v4") || !strcmp(o, "--api=v5")) {
            a->v4 = o[7] == '4';
        } else if (!strncmp(o, "--adjust=", 9)) {
            if (lp_adjust_mode_parse(o + 9, &a->opts.mode) < 0)
                return lp_error_set(err, LP_EUSAGE, "--adjust: expected auto, all, all_but_first or none, not '%s'", o + 9);
            a->opts.adjust = 1;
        } else if (!strncmp(o, "--arch=", 7)) {
            if ((a->opts.arch = lp_cpu_from_name(o + 7)) == LP_CPU_UNKNOWN)
                return lp_error_set(err, LP_EUSAGE, "--arch: unknown architecture '%s'", o + 7);
        } else if (!strcmp(o, "--pretty")) {
            a->opts.pretty = 1;
        } else if (!strcmp(o, "--debug")) {
            a->opts.debug = 1;
        } else if ((o[0] != '-' || !strcmp(o, "-")) && !a->input) {
            a->input = o;
        } else {
            return lp_error_set(err, LP_EUSAGE, "symbolicate: unexpected argument '%s' (see --help)", o);
        }
    }
    return 0;
}

static int run(lp_sym_store *st, const sym_args *a, lp_error *err)
{
    FILE *in = !a->input || !strcmp(a->input, "-") ? stdin : fopen(a->input, "rb");
    size_t len = 0;
    char *body, *resp;
    lp_outfile of;

    if (!in)
        return lp_error_set(err, LP_EIO, "%s: %s", a->input, strerror(errno));
    body = slurp(in, &len, err);
    if (in != stdin)
        fclose(in);
    if (!body)
        return -1;
    resp = a->v4 ? lp_symbolicate_v4(st, body, len, &a->opts, err)
                 : lp_symbolicate_v5(st, body, len, &a->opts, err);
    free(body);
    if (!resp)
        return -1;
    if (lp_outfile_open(&of, a->output ? a->output : "-", err) < 0) {
        free(resp);
        return -1;
    }
    fputs(resp, of.fp);
    fputc('\n', of.fp);
    free(resp);
    if (lp_outfile_commit(&of, err) < 0) {
        lp_outfile_abort(&of);
        return -1;
    }
    return 0;
}

int cmd_symbolicate(int argc, char **argv)
{
    sym_args a = {NULL, NULL, 0, {0, LP_ADJUST_AUTO, LP_CPU_UNKNOWN, 0, 0}};
    lp_sym_store *st;
    lp_error err;
    int i, r;

    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
    if (!(st = lp_sym_store_new(&err)))
        return lp_cli_fail(&err);
    r = parse_args(argc, argv, st, &a, &err) < 0 || run(st, &a, &err) < 0;
    lp_sym_store_free(st);
    return r ? lp_cli_fail(&err) : 0;
}
