/*
 * lbr2prof/serve.h - the Symbolication API over HTTP (libmicrohttpd).
 *
 * POST /symbolicate/v5 and POST /symbolicate/v4 answer like the service
 * (200 with the response, 400 with {"title": ...}); other methods get 405,
 * other paths 404, bodies over max_body bytes 413. CORS: any origin, POST.
 * Requests run concurrently on a pool of threads; the server binds to the
 * given IPv4 address (loopback unless the caller allows otherwise).
 */
#ifndef LBR2PROF_SERVE_H
#define LBR2PROF_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "lbr2prof/error.h"
#include "lbr2prof/symbolicate.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lp_server_opts {
    const char *host;        /* IPv4 address, e.g. "127.0.0.1" */
    uint16_t port;           /* 0: any free port */
    size_t max_body;         /* bytes */
    unsigned threads;
    unsigned max_connections;
    unsigned timeout_s;      /* idle connection timeout */
    lp_sym_opts sym;
} lp_server_opts;

typedef struct lp_server lp_server;

/* The store must outlive the server. */
lp_server *lp_server_start(const lp_server_opts *opts, lp_sym_store *store,
                           lp_error *err);
uint16_t lp_server_port(const lp_server *s);
void lp_server_stop(lp_server *s);

/* Parse "HOST:PORT" (IPv4). Returns -1 on a malformed value. */
int lp_server_parse_listen(const char *s, char *host, size_t hostsz, uint16_t *port);
/* 1 if host is an IPv4 loopback address (127.0.0.0/8). */
int lp_server_is_loopback(const char *host);

#ifdef __cplusplus
}
#endif
#endif
