/*
 * cmd_serve.c - `lbr2prof serve`: the Symbolication API v5/v4 over HTTP on
 * loopback until SIGINT/SIGTERM. Owns option parsing and the signal wait;
 * the server is src/serve, the symbolication src/symbolicate.
 * LP_BUILTIN(serve, cmd_serve, "serve POST /symbolicate/v5 and v4 over HTTP")
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/serve.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: lbr2prof serve [--listen HOST:PORT] [--symbols DIR]... [--binary ELF|DIR]...\n"
        "         [--debug-dir DIR]...\n"
        "         [--max-body BYTES] [--threads N] [--adjust=MODE] [--arch=ARCH]\n"
        "         [--port-file FILE] [--allow-remote]\n"
        "  --listen        IPv4 address and port (default 127.0.0.1:8000; port 0 = any)\n"
        "  --max-body      largest request body accepted (default 8388608); larger: 413\n"
        "  --threads       requests handled at once (default 4)\n"
        "  --port-file     write the bound port number to FILE once listening\n"
        "  --allow-remote  permit a non-loopback address (off: loopback only)\n"
        "Runs until SIGINT or SIGTERM.\n");
}

typedef struct serve_args {
    char host[64];
    const char *port_file;
    int allow_remote;
    lp_server_opts o;
} serve_args;

static int parse_num(const char *s, unsigned long long max, unsigned long long *out)
{
    char *end;

    *out = strtoull(s, &end, 10);
    return !*s || *end || *out == 0 || *out > max ? -1 : 0;
}

static int opt_value(serve_args *a, lp_sym_store *st, const char *o, const char *v,
                     lp_error *err)
{
    unsigned long long n;

    if (!strcmp(o, "--listen"))
        return lp_server_parse_listen(v, a->host, sizeof a->host, &a->o.port) < 0
                   ? lp_error_set(err, LP_EUSAGE, "--listen: expected IPV4:PORT, not '%s'", v) : 0;
    if (!strcmp(o, "--symbols"))
        return lp_sym_store_add_dir(st, v, err);
    if (!strcmp(o, "--binary"))
        return lp_sym_store_add_elf(st, v, err);
    if (!strcmp(o, "--debug-dir"))
        return lp_sym_store_add_debug_dir(st, v, err);
    if (!strcmp(o, "--port-file"))
        return a->port_file = v, 0;
    if (!strcmp(o, "--max-body")) {
        if (parse_num(v, 1ULL << 32, &n) < 0)
            return lp_error_set(err, LP_EUSAGE, "--max-body: expected a byte count, not '%s'", v);
        return a->o.max_body = (size_t)n, 0;
    }
    if (!strcmp(o, "--threads")) {
        if (parse_num(v, 256, &n) < 0)
            return lp_error_set(err, LP_EUSAGE, "--threads: expected 1..256, not '%s'", v);
        return a->o.threads = (unsigned)n, 0;
    }
    return lp_error_set(err, LP_EUSAGE, "serve: unknown option '%s' (see --help)", o);
}

static int parse_args(int argc, char **argv, lp_sym_store *st, serve_args *a, lp_error *err)
{
    int i;
    char *eq;
    char name[32];

    for (i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--allow-remote")) {
            a->allow_remote = 1;
        } else if (!strncmp(o, "--adjust=", 9)) {
            if (lp_adjust_mode_parse(o + 9, &a->o.sym.mode) < 0)
                return lp_error_set(err, LP_EUSAGE, "--adjust: expected auto, all, all_but_first or none");
            a->o.sym.adjust = 1;
        } else if (!strncmp(o, "--arch=", 7)) {
            if ((a->o.sym.arch = lp_cpu_from_name(o + 7)) == LP_CPU_UNKNOWN)
                return lp_error_set(err, LP_EUSAGE, "--arch: unknown architecture '%s'", o + 7);
        } else if ((eq = strchr(o, '=')) && (size_t)(eq - o) < sizeof name) {
            memcpy(name, o, (size_t)(eq - o));
            name[eq - o] = '\0';
            if (opt_value(a, st, name, eq + 1, err) < 0)
                return -1;
        } else if (i + 1 < argc && !strncmp(o, "--", 2)) {
            if (opt_value(a, st, o, argv[++i], err) < 0)
                return -1;
        } else {
            return lp_error_set(err, LP_EUSAGE, "serve: unexpected argument '%s' (see --help)", o);
        }
    }
    if (!a->allow_remote && !lp_server_is_loopback(a->host))
        return lp_error_set(err, LP_EUSAGE,
                            "serve: %s is not a loopback address (add --allow-remote to allow it)",
                            a->host);
    return 0;
}

static int write_port(const char *path, unsigned port, lp_error *err)
{
    lp_outfile of;

    if (lp_outfile_open(&of, path, err) < 0)
        return -1;
    fprintf(of.fp, "%u\n", port);
    if (lp_outfile_commit(&of, err) < 0) {
        lp_outfile_abort(&of);
        return -1;
    }
    return 0;
}

static int run(serve_args *a, lp_sym_store *st, lp_error *err)
{
    sigset_t set;
    int sig;
    lp_server *srv;

    /* Block the signals first: the server threads inherit the mask and
     * only this thread receives them, in sigwait. */
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    a->o.host = a->host;
    if (!(srv = lp_server_start(&a->o, st, err)))
        return -1;
    fprintf(stderr, "lbr2prof serve: listening on http://%s:%u/symbolicate/v5\n", a->host,
            lp_server_port(srv));
    if (a->port_file && write_port(a->port_file, lp_server_port(srv), err) < 0) {
        lp_server_stop(srv);
        return -1;
    }
    sigwait(&set, &sig);
    lp_server_stop(srv);
    fprintf(stderr, "lbr2prof serve: stopped (signal %d)\n", sig);
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    serve_args a = {"127.0.0.1", NULL, 0, {NULL, 8000, 8u << 20, 4, 64, 30, {0, LP_ADJUST_AUTO, LP_CPU_UNKNOWN, 0, 0}}};
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
    r = parse_args(argc, argv, st, &a, &err) < 0 || run(&a, st, &err) < 0;
    lp_sym_store_free(st);
    return r ? lp_cli_fail(&err) : 0;
}
