/*
 * fuzz_tail.c - libFuzzer target for the two tails of the reader, a
 * differential check: perf.data's (src/reader/tail.c) and perf script
 * text's (src/reader/pstail.c). Each input is written to a file and read
 * twice, walked sequentially and with the tail forced at a point the
 * input's last byte picks (LBR2PROF_DATA_SPLIT=N%/K for a file-mode
 * perf.data, in pieces of K rounds as the byte before picks, LBR2PROF_TEXT_SPLIT=OFFSET[+] for anything else, which the
 * reader takes for text), and the two readings must agree: the same events
 * other than samples (kind, time, offset) in the same order, between any
 * two of them the same samples counted with their repeats and calls
 * (order-free sums of their digests), the same statistics, progress,
 * return code, error and last warning. Any difference aborts, as do
 * crashes, sanitizer reports, hangs and leaks; errors in the input are
 * expected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lbr2prof/reader.h"
#include "util/hash.h"

/* What one reading saw: a running digest of the non-sample events and of
 * the sample sums closed at each of them. */
typedef struct seen {
    lp_digest trail;
    uint64_t sum_lo, sum_hi, weight, calls; /* samples since the last event */
    lp_reader_stats stats;
    uint64_t done, total;
    int rc;
    char err[256], warn[256];
} seen;

static void mix(lp_digest *d, const void *p, size_t n)
{
    uint8_t buf[16 + 64];

    if (n > 64)
        n = 64;
    memcpy(buf, d, 16);
    memcpy(buf + 16, p, n);
    *d = lp_digest_bytes(buf, 16 + n);
}

/* A sample's content: everything a consumer reads but its time and CPU. */
static lp_digest sample_digest(const lp_sample *s)
{
    uint64_t head[4] = {s->ip, (uint64_t)s->pid << 32 | s->tid, s->period,
                        s->sample_type};
    lp_digest d = lp_digest_bytes(head, sizeof head);

    if (s->callchain_nr)
        mix(&d, &(lp_digest){lp_hash_bytes(s->callchain, s->callchain_nr * 8),
                             s->callchain_nr}, 16);
    if (s->branch_nr)
        mix(&d, &(lp_digest){lp_hash_bytes(s->branches,
                                           s->branch_nr * sizeof *s->branches),
                             s->branch_nr}, 16);
    if (s->attr && s->attr->name)
        mix(&d, s->attr->name, strlen(s->attr->name));
    return d;
}

static void close_samples(seen *w)
{
    uint64_t v[4] = {w->sum_lo, w->sum_hi, w->weight, w->calls};

    mix(&w->trail, v, sizeof v);
    w->sum_lo = w->sum_hi = w->weight = w->calls = 0;
}

static void keep_warning(void *ctx, const char *msg)
{
    seen *w = ctx;
    snprintf(w->warn, sizeof w->warn, "%s", msg);
}

static void on_event(seen *w, const lp_event *ev)
{
    if (ev->kind == LP_EV_SAMPLE) {
        const lp_sample *s = &ev->u.sample;
        uint64_t n = s->repeat ? s->repeat : 1;
        lp_digest d = sample_digest(s);
        w->sum_lo += d.lo * n;
        w->sum_hi += d.hi * n;
        w->weight += n;
        w->calls += s->calls ? s->calls : 1;
    } else if (ev->kind != LP_EV_FINISHED_ROUND) {
        uint64_t v[3] = {ev->kind, ev->time, ev->offset};
        close_samples(w);
        mix(&w->trail, v, sizeof v);
    }
}

/* The variable that forces the tail of this kind of input. */
static const char *split_var(int perf)
{
    return perf ? "LBR2PROF_DATA_SPLIT" : "LBR2PROF_TEXT_SPLIT";
}

static void read_once(const char *path, const char *split, int perf,
                      lp_order order, seen *w)
{
    lp_reader_opts o = {.order = order, .fold_repeats = split != NULL,
                        .warn = keep_warning, .warn_ctx = w};
    const lp_event *ev;
    lp_error err;
    lp_reader *r;

    memset(w, 0, sizeof *w);
    /* both readers read their switch when they open */
    setenv(split_var(perf), split ? split : (perf ? "0" : "off"), 1);
    r = lp_reader_open(path, &o, &err);
    unsetenv(split_var(perf));
    if (!r) {
        w->rc = -2;
        snprintf(w->err, sizeof w->err, "%s", err.msg);
        return;
    }
    while ((w->rc = lp_reader_next(r, &ev, &err)) == 1)
        on_event(w, ev);
    close_samples(w);
    if (w->rc < 0)
        snprintf(w->err, sizeof w->err, "%s", err.msg);
    w->stats = *lp_reader_stats_get(r);
    lp_reader_progress(r, &w->done, &w->total);
    lp_reader_close(r);
}

static void check(const char *path, const char *split, int perf,
                  lp_order order)
{
    seen a, b;

    read_once(path, NULL, perf, order, &a);
    read_once(path, split, perf, order, &b);
    if (memcmp(&a.trail, &b.trail, sizeof a.trail) ||
        memcmp(&a.stats, &b.stats, sizeof a.stats) || a.rc != b.rc ||
        a.done != b.done || a.total != b.total || strcmp(a.err, b.err) ||
        strcmp(a.warn, b.warn)) {
        fprintf(stderr, "fuzz_tail: split %s, order %d: the readings differ "
                "(rc %d/%d, err '%s'/'%s', samples %llu/%llu)\n", split,
                (int)order, a.rc, b.rc, a.err, b.err,
                (unsigned long long)a.stats.samples,
                (unsigned long long)b.stats.samples);
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64], split[32];
    int perf, fd;

    if (size < 16)
        return 0;
    /* perf.data (its tail needs file mode: a pipe-mode file is read as
     * before and must agree too), or text */
    perf = memcmp(data, "PERFILE2", 8) == 0 || memcmp(data, "2ELIFREP", 8) == 0;
    fd = memfd_create("fuzz_tail", 0);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    if (perf) /* "/K": the region in pieces of K rounds (0: one piece) */
        snprintf(split, sizeof split, "%u%%/%u", 1u + data[size - 1] % 99u,
                 data[size - 2] % 4u);
    else /* an offset into the text; '+': the head stops the tail */
        snprintf(split, sizeof split, "%zu%s", 1 + size * data[size - 1] / 256,
                 data[size - 2] & 1 ? "+" : "");
    check(path, split, perf, LP_ORDER_TIME);
    if (perf)
        check(path, split, perf, LP_ORDER_FILE);
    close(fd);
    return 0;
}
