/*
 * perf-split.c - benchmark input maker (compiled and run by
 * scripts/bench-fleet.sh; not part of lbr2prof): splits one perf.data
 * into N shards as a fleet would hold them. Every non-sample record
 * (COMM, MMAP, FORK, EXIT) goes to every shard, so each resolves its
 * addresses alone; the samples are cut into N consecutive runs of about
 * the same size, in the reader's (time) order. Uses the project's reader
 * and perf.data writer (liblbr2prof.a).
 *
 *   perf-split IN N OUTPREFIX     writes OUTPREFIX.0.data ... .N-1.data
 */
#include <stdio.h>
#include <stdlib.h>

#include "lbr2prof/perfwrite.h"
#include "lbr2prof/reader.h"

#define MAXOUT 1024

static int die(const lp_error *e)
{
    fprintf(stderr, "perf-split: %s\n", e->msg);
    return 1;
}

static int count_samples(const char *in, unsigned long *n, lp_error *e)
{
    lp_reader *r = lp_reader_open(in, NULL, e);
    const lp_event *ev;
    int k;

    *n = 0;
    if (!r)
        return -1;
    while ((k = lp_reader_next(r, &ev, e)) == 1)
        *n += ev->kind == LP_EV_SAMPLE;
    lp_reader_close(r);
    return k;
}

/* ev into shard k (a sample) or every shard (anything else); a
 * FINISHED_ROUND after every 1000 records of a shard. */
static int put(lp_perfwrite **w, unsigned long *nrec, int n, int k,
               const lp_event *ev, lp_error *e)
{
    int i;

    for (i = 0; i < n; i++) {
        if (ev->kind == LP_EV_SAMPLE && i != k)
            continue;
        if (lp_perfwrite_event(w[i], ev, e) < 0 ||
            (++nrec[i] % 1000 == 0 && lp_perfwrite_finished_round(w[i], e) < 0))
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static lp_perfwrite *w[MAXOUT];
    static unsigned long nrec[MAXOUT];
    unsigned long total, seen = 0;
    lp_perfwrite_opts wo = {0};
    const lp_event *ev;
    lp_error e = {0};
    lp_reader *r;
    char path[4096];
    int n = argc == 4 ? atoi(argv[2]) : 0, i, k;

    if (n < 1 || n > MAXOUT) {
        fprintf(stderr, "usage: perf-split IN N OUTPREFIX (1 <= N <= %d)\n", MAXOUT);
        return 2;
    }
    if (count_samples(argv[1], &total, &e) < 0 || !(r = lp_reader_open(argv[1], NULL, &e)))
        return die(&e);
    wo.attr = lp_reader_info(r)->attrs[0];
    wo.event_name = wo.attr.name;
    for (i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s.%d.data", argv[3], i);
        if (!(w[i] = lp_perfwrite_open(path, &wo, &e)))
            return die(&e);
    }
    while ((k = lp_reader_next(r, &ev, &e)) == 1) {
        int shard = total ? (int)((unsigned long long)seen * (unsigned)n / total) : 0;
        if (put(w, nrec, n, shard, ev, &e) < 0)
            return die(&e);
        seen += ev->kind == LP_EV_SAMPLE;
    }
    if (k < 0)
        return die(&e);
    lp_reader_close(r);
    for (i = 0; i < n; i++)
        if (lp_perfwrite_close(w[i], &e) < 0)
            return die(&e);
    fprintf(stderr, "perf-split: %lu samples into %d shards\n", total, n);
    return 0;
}
