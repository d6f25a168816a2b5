/*
 * server.c - HTTP front end of the Symbolication API, on libmicrohttpd.
 * Owns routing, body accumulation with its size bound, status codes and
 * headers. The symbolication itself is src/symbolicate's. libmicrohttpd
 * (with its TLS chain) is loaded at lp_server_start (util/dynlib.h), so
 * that only `serve` pays for loading it.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lbr2prof/serve.h"
#include "util/dynlib.h"

/* The libmicrohttpd functions used, typed from its header. */
typedef struct mhd_api {
    __typeof__(MHD_start_daemon) *start_daemon;
    __typeof__(MHD_stop_daemon) *stop_daemon;
    __typeof__(MHD_get_daemon_info) *get_daemon_info;
    __typeof__(MHD_create_response_from_buffer) *create_response_from_buffer;
    __typeof__(MHD_add_response_header) *add_response_header;
    __typeof__(MHD_queue_response) *queue_response;
    __typeof__(MHD_destroy_response) *destroy_response;
    __typeof__(MHD_lookup_connection_value) *lookup_connection_value;
} mhd_api;

static const lp_dynsym mhd_syms[] = {
    LP_DYNSYM(mhd_api, start_daemon, MHD_start_daemon),
    LP_DYNSYM(mhd_api, stop_daemon, MHD_stop_daemon),
    LP_DYNSYM(mhd_api, get_daemon_info, MHD_get_daemon_info),
    LP_DYNSYM(mhd_api, create_response_from_buffer, MHD_create_response_from_buffer),
    LP_DYNSYM(mhd_api, add_response_header, MHD_add_response_header),
    LP_DYNSYM(mhd_api, queue_response, MHD_queue_response),
    LP_DYNSYM(mhd_api, destroy_response, MHD_destroy_response),
    LP_DYNSYM(mhd_api, lookup_connection_value, MHD_lookup_connection_value),
};

struct lp_server {
    struct MHD_Daemon *d;
    lp_sym_store *store;
    lp_server_opts opts;
    void *lib;                  /* libmicrohttpd.so.12 */
    mhd_api mhd;
};

/* One request in flight. */
typedef struct req_ctx {
    char *body;
    size_t len, cap;
    int too_big;
} req_ctx;

static enum MHD_Result send_text(const mhd_api *m, struct MHD_Connection *c,
                                 unsigned status, char *text, const char *ctype)
{
    struct MHD_Response *r =
        m->create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    enum MHD_Result ret;

    if (!r) {
        free(text);
        return MHD_NO;
    }
    m->add_response_header(r, "Content-Type", ctype);
    m->add_response_header(r, "Access-Control-Allow-Origin", "*");
    m->add_response_header(r, "Access-Control-Allow-Methods", "POST");
    m->add_response_header(r, "Access-Control-Allow-Headers", "Content-Type, Debug");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        m->add_response_header(r, "Allow", "POST");
    ret = m->queue_response(c, status, r);
    m->destroy_response(r);
    return ret;
}

/* {"title": msg} with the given status (the service's error body). */
static enum MHD_Result send_title(const mhd_api *m, struct MHD_Connection *c,
                                  unsigned status, const char *msg)
{
    json_t *o = json_pack("{s:s}", "title", msg);
    char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;

    json_decref(o);
    if (!t)
        return MHD_NO;
    return send_text(m, c, status, t, "application/json");
}

static int body_append(req_ctx *r, const char *data, size_t n, size_t max)
{
    char *nb;
    size_t ncap;

    if (r->too_big || r->len + n > max) {
        r->too_big = 1;
        return 0;
    }
    if (r->len + n + 1 > r->cap) {
        ncap = r->cap ? r->cap : 4096;
        while (ncap < r->len + n + 1)
            ncap *= 2;
        if (!(nb = realloc(r->body, ncap)))
            return -1;
        r->body = nb;
        r->cap = ncap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    return 0;
}

static enum MHD_Result finish(lp_server *s, struct MHD_Connection *c, req_ctx *r, int v4)
{
    lp_error err;
    char *resp;
    lp_sym_opts o = s->opts.sym;
    const char *dbg = s->mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Debug");

    if (r->too_big)
        return send_title(&s->mhd, c, MHD_HTTP_CONTENT_TOO_LARGE, "Payload Too Large");
    o.debug = dbg && *dbg; /* any value, as the service's truthiness test */
    resp = v4 ? lp_symbolicate_v4(s->store, r->body ? r->body : "", r->len, &o, &err)
              : lp_symbolicate_v5(s->store, r->body ? r->body : "", r->len, &o, &err);
    if (resp)
        return send_text(&s->mhd, c, MHD_HTTP_OK, resp, "application/json");
    return send_title(&s->mhd, c, err.code == LP_EFORMAT ? MHD_HTTP_BAD_REQUEST
                                                : MHD_HTTP_INTERNAL_SERVER_ERROR,
                      err.code == LP_EFORMAT ? err.msg : "Internal Server Error");
}

/* The first call of a request: route it, maybe answer at once. Returns 1
 * when a response was queued (in *ret). */
static int first_call(lp_server *s, struct MHD_Connection *c, const char *method,
                      int route, enum MHD_Result *ret)
{
    const char *cl;

    if (!route) {
        *ret = send_title(&s->mhd, c, MHD_HTTP_NOT_FOUND, "404 Not Found");
        return 1;
    }
    if (!strcmp(method, "OPTIONS")) {
        *ret = send_text(&s->mhd, c, MHD_HTTP_OK, strdup(""), "text/plain");
        return 1;
    }
    if (strcmp(method, "POST") != 0) {
        *ret = send_title(&s->mhd, c, MHD_HTTP_METHOD_NOT_ALLOWED, "405 Method Not Allowed");
        return 1;
    }
    cl = s->mhd.lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    if (cl && strtoull(cl, NULL, 10) > s->opts.max_body) {
        *ret = send_title(&s->mhd, c, MHD_HTTP_CONTENT_TOO_LARGE, "Payload Too Large");
        return 1;
    }
    return 0;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version,
                               const char *data, size_t *data_size, void **con_cls)
{
    lp_server *s = cls;
    req_ctx *r = *con_cls;
    int route = !strcmp(url, "/symbolicate/v5") ? 5 : !strcmp(url, "/symbolicate/v4") ? 4 : 0;
    enum MHD_Result ret;

    (void)version;
    if (!r) {
        if (first_call(s, c, method, route, &ret))
            return ret;
        if (!(r = calloc(1, sizeof *r)))
            return MHD_NO;
        *con_cls = r;
        return MHD_YES;
    }
    if (*data_size) {
        if (body_append(r, data, *data_size, s->opts.max_body) < 0)
            return MHD_NO;
        *data_size = 0;
        return MHD_YES;
    }
    return finish(s, c, r, route == 4);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe)
{
    req_ctx *r = *con_cls;

    (void)cls;
    (void)c;
    (void)toe;
    if (r) {
        free(r->body);
        free(r);
        *con_cls = NULL;
    }
}

lp_server *lp_server_start(const lp_server_opts *opts, lp_sym_store *store, lp_error *err)
{
    lp_server *s = calloc(1, sizeof *s);
    struct sockaddr_in sa;

    if (!s) {
        lp_error_set(err, LP_ENOMEM, "serve: out of memory");
        return NULL;
    }
    s->store = store;
    s->opts = *opts;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons(opts->port);
    if (inet_pton(AF_INET, opts->host, &sa.sin_addr) != 1) {
        lp_server_stop(s);
        lp_error_set(err, LP_EUSAGE, "serve: '%s' is not an IPv4 address", opts->host);
        return NULL;
    }
    if (!(s->lib = lp_dynlib_open("libmicrohttpd.so.12", "libmicrohttpd12", mhd_syms,
                                  sizeof mhd_syms / sizeof mhd_syms[0], &s->mhd, err))) {
        lp_server_stop(s);
        return NULL;
    }
    s->d = s->mhd.start_daemon(MHD_USE_AUTO_INTERNAL_THREAD,
                               opts->port, NULL, NULL, handler, s,
                               MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                               MHD_OPTION_THREAD_POOL_SIZE, (unsigned)(opts->threads ? opts->threads : 1),
                               MHD_OPTION_CONNECTION_LIMIT, (unsigned)(opts->max_connections ? opts->max_connections : 64),
                               MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(opts->timeout_s ? opts->timeout_s : 30),
                               MHD_OPTION_NOTIFY_COMPLETED, completed, s,
                               MHD_OPTION_END);
    if (!s->d) {
        lp_server_stop(s);
        lp_error_set(err, LP_EIO, "serve: cannot listen on %s:%u", opts->host, opts->port);
        return NULL;
    }
    return s;
}

uint16_t lp_server_port(const lp_server *s)
{
    const union MHD_DaemonInfo *i = s->mhd.get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);

    return i ? i->port : s->opts.port;
}

void lp_server_stop(lp_server *s)
{
    if (!s)
        return;
    if (s->d)
        s->mhd.stop_daemon(s->d);
    lp_dynlib_close(s->lib);
    free(s);
}

int lp_server_parse_listen(const char *s, char *host, size_t hostsz, uint16_t *port)
{
    const char *colon = strrchr(s, ':');
    char *end;
    unsigned long p;
    struct in_addr a;

    if (!colon || (size_t)(colon - s) >= hostsz || colon == s)
        return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = '\0';
    p = strtoul(colon + 1, &end, 10);
    if (!colon[1] || *end || p > 65535 || inet_pton(AF_INET, host, &a) != 1)
        return -1;
    *port = (uint16_t)p;
    return 0;
}

int lp_server_is_loopback(const char *host)
{
    struct in_addr a;

    return inet_pton(AF_INET, host, &a) == 1 && (ntohl(a.s_addr) >> 24) == 127;
}
