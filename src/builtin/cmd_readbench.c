/*
 * cmd_readbench.c - `lbr2prof readbench`: a developer tool for the reader.
 * Walks every event of an input and prints per-kind counts plus the raw
 * throughput (MB/s, samples/s), or with --dump one line per event, or with
 * --brstack perf script's `-F ip,brstack` lines, with --callchain raw
 * callchains, user registers and stacks as `perf report -D` shows them,
 * with --buildids the build-id table as `perf buildid-list` prints it,
 * with --events the event names as `perf evlist` prints them (used by the reader tests to
 * compare against perf). Not a user-facing formatter:
 * `lbr2prof script` is that.
 * LP_BUILTIN_DEV(readbench, cmd_readbench, "reader throughput and record counts")
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/builtin.h"
#include "lbr2prof/reader.h"

/* perf script -F ip,brstack, without the branch type column. */
static void dump_brstack(const lp_event *ev)
{
    const lp_sample *s = &ev->u.sample;
    if (ev->kind != LP_EV_SAMPLE)
        return;
    printf("%" PRIx64, s->ip);
    for (uint64_t i = 0; i < s->branch_nr; i++) {
        uint64_t f = s->branches[i].flags;
        printf(" 0x%" PRIx64 "/0x%" PRIx64 "/%c/%c/%c/%u", s->branches[i].from,
               s->branches[i].to,
               LP_BR_MISPRED(f) ? 'M' : LP_BR_PREDICTED(f) ? 'P' : '-',
               LP_BR_IN_TX(f) ? 'X' : '-', LP_BR_ABORT(f) ? 'A' : '-',
               LP_BR_CYCLES(f));
    }
    printf("\n");
}

/* Raw callchains (markers included), user registers and user stack sizes
 * as `perf report -D` prints them. */
static void dump_callchain(const lp_event *ev)
{
    const lp_sample *s = &ev->u.sample;
    if (ev->kind != LP_EV_SAMPLE)
        return;
    if (s->sample_type & LP_SAMPLE_CALLCHAIN) {
        printf("chain nr:%" PRIu64 "\n", s->callchain_nr);
        for (uint64_t i = 0; i < s->callchain_nr; i++)
            printf("%016" PRIx64 "\n", s->callchain[i]);
    }
    if (s->regs_user_abi) {
        uint64_t n = 0;
        printf("regs mask 0x%" PRIx64 "\n", s->regs_user_mask);
        for (uint64_t m = s->regs_user_mask; m; m &= m - 1)
            printf("0x%016" PRIx64 "\n", s->regs_user[n++]);
    }
    if (s->stack_user_size)
        printf("ustack %" PRIu64 "\n", s->stack_user_dyn_size);
}

static void dump_event(const lp_event *ev)
{
    switch (ev->kind) {
    case LP_EV_SAMPLE: {
        const lp_sample *s = &ev->u.sample;
        printf("SAMPLE %u/%u %" PRIu64 " %" PRIx64 " cpu=%u period=%" PRIu64
               " cc=%" PRIu64 " br=%" PRIu64,
               s->pid, s->tid, s->time, s->ip, s->cpu, s->period,
               s->callchain_nr, s->branch_nr);
        for (uint64_t i = 0; i < s->branch_nr && i < 4; i++)
            printf(" %" PRIx64 "/%" PRIx64 "/%" PRIx64, s->branches[i].from,
                   s->branches[i].to, s->branches[i].flags);
        printf("\n");
        break;
    }
    case LP_EV_MMAP:
        printf("MMAP%s %d/%d %" PRIu64 " [%#" PRIx64 "(%#" PRIx64 ") @ %#"
               PRIx64 "] %s\n", ev->u.mmap.is_mmap2 ? "2" : "",
               (int)ev->u.mmap.pid, (int)ev->u.mmap.tid, ev->time,
               ev->u.mmap.start, ev->u.mmap.len, ev->u.mmap.pgoff,
               ev->u.mmap.filename);
        break;
    case LP_EV_COMM:
        printf("COMM %d/%d %" PRIu64 " %s%s\n", (int)ev->u.comm.pid,
               (int)ev->u.comm.tid, ev->time, ev->u.comm.comm,
               ev->u.comm.exec ? " exec" : "");
        break;
    default:
        printf("%s type=%u %" PRIu64 "\n", lp_event_kind_name(ev->kind),
               ev->type, ev->time);
        break;
    }
}

/* The header's build-id table like `perf buildid-list`: "hex filename". */
static void dump_build_ids(const lp_file_info *in)
{
    for (size_t i = 0; i < in->nr_build_ids; i++) {
        const lp_build_id *b = &in->build_ids[i];
        for (unsigned k = 0; k < b->size; k++)
            printf("%02x", b->id[k]);
        printf(" %s\n", b->filename);
    }
}

/* Event names like `perf evlist`. */
static void dump_events(const lp_file_info *in)
{
    for (size_t i = 0; i < in->nr_attrs; i++)
        printf("%s\n", in->attrs[i].name ? in->attrs[i].name : "(unnamed)");
}

typedef struct rb_opts {
    lp_reader_opts ro;
    int dump, brstack, callchain, buildids, events;
    const char *input;
} rb_opts;

static int parse_opts(int argc, char **argv, rb_opts *o)
{
    int i = 1;
    memset(o, 0, sizeof *o);
    for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--dump"))
            o->dump = 1;
        else if (!strcmp(a, "--brstack"))
            o->dump = o->brstack = 1;
        else if (!strcmp(a, "--callchain"))
            o->dump = o->callchain = 1;
        else if (!strcmp(a, "--buildids"))
            o->dump = o->buildids = 1;
        else if (!strcmp(a, "--events"))
            o->dump = o->events = 1;
        else if (!strcmp(a, "--file-order"))
            o->ro.order = LP_ORDER_FILE;
        else if (!strcmp(a, "--skip-payloads"))
            o->ro.skip_payloads = 1;
        else if (!strcmp(a, "--fold"))
            o->ro.fold_repeats = 1;
        else
            return lp_cli_usage_error("readbench", "unknown option %s", a);
    }
    if (i + 1 != argc)
        return lp_cli_usage_error("readbench",
                                  "usage: readbench [--dump|--brstack|--callchain|"
                                  "--buildids|--events] [--file-order] "
                                  "[--skip-payloads] [--fold] FILE");
    o->input = argv[i];
    return 0;
}

static double seconds(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) +
           (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void print_summary(FILE *out, const lp_reader *r, const uint64_t *n,
                          uint64_t chk, double sec, double cpu)
{
    const lp_reader_stats *st = lp_reader_stats_get(r);
    fprintf(out, "samples %" PRIu64 " mmaps %" PRIu64 " comms %" PRIu64
                 " forks %" PRIu64 " exits %" PRIu64 " lost %" PRIu64
                 " rounds %" PRIu64 " other %" PRIu64 " unknown_id %" PRIu64
                 "\n", n[LP_EV_SAMPLE], n[LP_EV_MMAP], n[LP_EV_COMM],
            n[LP_EV_FORK], n[LP_EV_EXIT], n[LP_EV_LOST],
            n[LP_EV_FINISHED_ROUND], n[LP_EV_OTHER], st->unknown_id);
    fprintf(out, "bytes %" PRIu64 " seconds %.6f MB/s %.1f samples/s %.0f "
                 "checksum %" PRIx64 " cpu_seconds %.6f cpu_MB/s %.1f\n",
            st->bytes_read, sec,
            sec > 0 ? (double)st->bytes_read / 1e6 / sec : 0.0,
            sec > 0 ? (double)n[LP_EV_SAMPLE] / sec : 0.0, chk, cpu,
            cpu > 0 ? (double)st->bytes_read / 1e6 / cpu : 0.0);
}

static void dump_one(const rb_opts *o, const lp_event *ev)
{
    if (o->buildids || o->events)
        return;
    if (o->brstack)
        dump_brstack(ev);
    else if (o->callchain)
        dump_callchain(ev);
    else if (o->dump)
        dump_event(ev);
}

int cmd_readbench(int argc, char **argv)
{
    rb_opts o;
    lp_error err;
    struct timespec t0, t1, c0, c1;
    uint64_t n[LP_EV_OTHER + 1] = { 0 }, chk = 0, folded = 0;
    const lp_event *ev;
    int rc;

    if (parse_opts(argc, argv, &o) != 0)
        return 2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    lp_reader *r = lp_reader_open(o.input, &o.ro, &err);
    if (!r)
        return lp_cli_fail(&err);
    while ((rc = lp_reader_next(r, &ev, &err)) > 0) {
        if ((unsigned)ev->kind <= LP_EV_OTHER)
            n[ev->kind]++;
        if (ev->kind == LP_EV_SAMPLE) {
            /* --fold: weighed by the repeat, so the checksum is the
             * unfolded reading's */
            uint64_t w = o.ro.fold_repeats && ev->u.sample.repeat ? ev->u.sample.repeat : 1;
            folded += w;
            chk += ev->u.sample.ip * w;
            for (uint64_t i = 0; i < ev->u.sample.branch_nr; i++)
                chk += ev->u.sample.branches[i].from * w;
        }
        dump_one(&o, ev);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    if (rc < 0) {
        fflush(stdout);
        int st = lp_cli_fail(&err);
        lp_reader_close(r);
        return st;
    }
    if (o.buildids)
        dump_build_ids(lp_reader_info(r));
    if (o.events)
        dump_events(lp_reader_info(r));
    print_summary(o.dump ? stderr : stdout, r, n, chk, seconds(&t0, &t1),
                  seconds(&c0, &c1));
    if (o.ro.fold_repeats) /* the reader may fold samples (docs/reader.md) */
        fprintf(o.dump ? stderr : stdout, "sample_events %" PRIu64
                " samples_with_repeats %" PRIu64 "\n", n[LP_EV_SAMPLE], folded);
    lp_reader_close(r);
    return 0;
}
