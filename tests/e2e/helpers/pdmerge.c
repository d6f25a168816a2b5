/*
 * pdmerge.c - test helper: merges perf.data files recorded by
 * `lbr2prof record --simulate` (one process each) into one file, events
 * interleaved by time, as if the processes had run at the same time. The
 * simulator's TIME is "instructions retired so far", so two runs started
 * together interleave sample by sample. Uses the project's reader and
 * perf.data writer (liblbr2prof.a); COMM, MMAP, FORK, EXIT and SAMPLE
 * records are kept, the event of the first file is used. With --drop,
 * the samples of those numbers (0 = the first sample written, in the
 * merged order) are left out: a test's way to take samples out of a
 * recording without touching the rest.
 *
 *   pdmerge [--drop N,N,...] OUT IN1 IN2 ...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/perfwrite.h"
#include "lbr2prof/reader.h"

#define MAXIN 8
#define MAXDROP 4096

typedef struct droplist {       /* sample numbers to leave out, ascending */
    unsigned long n[MAXDROP];
    size_t len, next;
} droplist;

static int die(const lp_error *e)
{
    fprintf(stderr, "pdmerge: %s\n", e->msg);
    return 1;
}

/* "3,7,12" (ascending) into d; -1 on a malformed list */
static int parse_drop(const char *s, droplist *d)
{
    char *end;

    d->len = d->next = 0;
    while (*s) {
        if (d->len == MAXDROP || *s < '0' || *s > '9')
            return -1;
        d->n[d->len] = strtoul(s, &end, 10);
        if (d->len > 0 && d->n[d->len] <= d->n[d->len - 1])
            return -1;
        d->len++;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return 0;
}

/* whether sample number k (asked in ascending order) is to be left out */
static int dropped(droplist *d, unsigned long k)
{
    if (d->next < d->len && d->n[d->next] == k) {
        d->next++;
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static droplist drop;
    unsigned long nsample = 0;
    lp_reader *r[MAXIN];
    const lp_event *head[MAXIN];
    lp_perfwrite_opts wo;
    lp_perfwrite *w;
    lp_error e = {0};
    int n, i, k, best, written = 0;

    if (argc > 2 && strcmp(argv[1], "--drop") == 0) {
        if (parse_drop(argv[2], &drop) < 0) {
            fprintf(stderr, "pdmerge: --drop %s: expected ascending sample numbers, N,N,...\n", argv[2]);
            return 2;
        }
        argc -= 2;
        argv += 2;
    }
    n = argc - 2;
    if (n < 1 || n > MAXIN) {
        fprintf(stderr, "usage: pdmerge [--drop N,N,...] OUT IN1 [IN2 ...]\n");
        return 2;
    }
    for (i = 0; i < n; i++) {
        if (!(r[i] = lp_reader_open(argv[i + 2], NULL, &e)))
            return die(&e);
        if ((k = lp_reader_next(r[i], &head[i], &e)) < 0)
            return die(&e);
        if (k == 0)
            head[i] = NULL;
    }
    memset(&wo, 0, sizeof wo);
    wo.attr = lp_reader_info(r[0])->attrs[0];
    wo.event_name = wo.attr.name;
    if (!(w = lp_perfwrite_open(argv[1], &wo, &e)))
        return die(&e);
    for (;;) {
        for (best = -1, i = 0; i < n; i++)
            if (head[i] && (best < 0 || head[i]->time < head[best]->time))
                best = i;
        if (best < 0)
            break;
        if (!(head[best]->kind == LP_EV_SAMPLE && dropped(&drop, nsample)) &&
            lp_perfwrite_event(w, head[best], &e) < 0)
            return die(&e);
        if (head[best]->kind == LP_EV_SAMPLE)
            nsample++;
        if (++written % 1000 == 0 && lp_perfwrite_finished_round(w, &e) < 0)
            return die(&e);
        if ((k = lp_reader_next(r[best], &head[best], &e)) < 0)
            return die(&e);
        if (k == 0)
            head[best] = NULL;
    }
    if (drop.next < drop.len) {
        fprintf(stderr, "pdmerge: --drop: sample %lu: there are only %lu samples\n",
                drop.n[drop.next], nsample);
        return 1;
    }
    for (i = 0; i < n; i++)
        lp_reader_close(r[i]);
    if (lp_perfwrite_close(w, &e) < 0)
        return die(&e);
    return 0;
}
