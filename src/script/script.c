/*
 * script.c - lp_script_run: one pass over a trace in time order, each
 * event into the process state (src/machine) and then printed in perf
 * 6.1's order (EXIT before it is processed), or handed to the
 * Symbolication API v5 request (lp_sym_perf); the --fp-callchain walk's
 * counters at the end. Owns the run and the routing; the text of each
 * line is fields.c's, sample.c's and records.c's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "script/sc_internal.h"

void lp_script_opts_default(lp_script_opts *o)
{
    memset(o, 0, sizeof *o);
    o->fields = LP_SCRIPT_ALL_FIELDS;
    o->v5o.pid = -1;
    o->v5o.adjust = 1;
    o->v5o.mode = LP_ADJUST_ALL_BUT_FIRST; /* perf: frame 0 is the IP */
}

/* One event: update the machine and print, in perf's order. */
static int handle(sc_state *s, const lp_event *ev, lp_error *err)
{
    if (ev->kind == LP_EV_EXIT && s->o->show_task)
        sc_print_task(s, ev); /* perf prints EXIT before processing it */
    if (lp_machine_process_event(s->m, ev, err) < 0)
        return -1;
    if (s->v5)
        return ev->kind == LP_EV_SAMPLE ? lp_sym_perf_sample(s->v5, s->m, ev, err) : 0;
    switch (ev->kind) {
    case LP_EV_SAMPLE: return sc_print_sample(s, ev, err);
    case LP_EV_AUXTRACE_ERROR:
        lp_auxtrace_error_print(ev->u.aux_error, s->out);
        return 0;
    case LP_EV_MMAP:
        if (s->o->show_mmap)
            sc_print_mmap(s, ev);
        return 0;
    case LP_EV_COMM:
        if (s->o->show_task)
            sc_print_comm(s, ev);
        return 0;
    case LP_EV_FORK:
        if (s->o->show_task)
            sc_print_task(s, ev);
        return 0;
    default: return 0;
    }
}

/* The v5 request, and a warning per file whose frames had to be left
 * without a module. */
static int v5_finish(sc_state *s, lp_error *err)
{
    const char **names;
    size_t n, i;

    if (lp_sym_perf_write(s->v5, s->out, err) < 0)
        return -1;
    n = lp_sym_perf_unreadable(s->v5, &names);
    for (i = 0; i < n; i++)
        lp_warnf(s->o->warn, s->o->warn_ctx, "cannot read %s: its frames are "
                 "[-1, address] (pass --binary)", names[i]);
    free(names);
    return 0;
}

static lp_reader *open_input(const char *input, const lp_script_opts *o,
                             lp_error *err)
{
    lp_reader_opts ro;

    memset(&ro, 0, sizeof ro);
    ro.order = LP_ORDER_TIME;
    ro.skip_payloads = !o->fp_mode; /* the walk needs regs and stack */
    ro.strict = o->strict;
    ro.warn = o->warn;
    ro.warn_ctx = o->warn_ctx;
    if (strcmp(input, "-") == 0)
        return lp_reader_open_stream(stdin, "-", &ro, err);
    return lp_reader_open(input, &ro, err);
}

/* The state besides the reader: machine, build-ids, v5, fp sampler. */
static int set_up(sc_state *s, lp_error *err)
{
    const lp_file_info *info = lp_reader_info(s->r);

    if (!(s->m = lp_machine_new(LP_MACHINE_KEEP_MAPS_ON_EXEC, err)))
        return -1;
    /* build-ids: module ids (v5); the fp repair refuses rebuilt files */
    if ((s->o->v5 || s->o->fp_mode) &&
        lp_machine_add_build_ids(s->m, info->build_ids, info->nr_build_ids, err) < 0)
        return -1;
    if (s->o->v5 && !(s->v5 = lp_sym_perf_new(&s->o->v5o, err)))
        return -1;
    if (s->o->fp_mode && !(s->fps = lp_fp_sampler_new(err)))
        return -1;
    return 0;
}

/* --itrace: the AUX data of the file, read ahead as perf does. */
static int open_pt(sc_state *s, const char *input, lp_error *err)
{
    if (!s->o->itrace)
        return 0;
    if (strcmp(input, "-") == 0)
        return lp_error_set(err, LP_EUSAGE, "--itrace needs a perf.data file, "
                            "not standard input (the AUX data is read first)");
    return lp_ptsynth_open(input, s->o->itrace, &s->pt, err);
}

static int next_event(sc_state *s, const lp_event **ev, lp_error *err)
{
    if (s->pt)
        return lp_ptsynth_next(s->pt, s->r, ev, err);
    return lp_reader_next(s->r, ev, err);
}

static int run(sc_state *s, const char *input, lp_error *err)
{
    const lp_event *ev;
    int r;

    if (!(s->r = open_input(input, s->o, err)) || set_up(s, err) < 0 ||
        open_pt(s, input, err) < 0)
        return -1;
    while ((r = next_event(s, &ev, err)) == 1)
        if (handle(s, ev, err) < 0)
            return -1;
    if (r == 0 && s->v5)
        return v5_finish(s, err);
    return r;
}

static void write_fp_stats(FILE *f, const lp_fp_sampler *fps)
{
    const lp_fp_sampler_stats *t = lp_fp_sampler_get_stats(fps);
    const lp_leaf_stats *l = &t->leaf;
    int i;

    fprintf(f, "fp-callchain: %" PRIu64 " samples walked, %" PRIu64
               " without user stack; binaries %" PRIu64 " opened, %" PRIu64
               " failed; %" PRIu64 " leaves in a file whose build-id differs\n",
            t->walked, t->no_user_stack, t->binaries_opened,
            t->binaries_failed, t->build_id_mismatch);
    if (!l->samples)
        return;
    fprintf(f, "fp-callchain: leaf");
    for (i = 0; i < LP_LEAF_NSTATES; i++)
        fprintf(f, " %s=%" PRIu64, lp_leaf_state_name((lp_leaf_state)i),
                l->by_state[i]);
    fprintf(f, "\nfp-callchain: at-entry=%" PRIu64 " at-exit=%" PRIu64
               " frameless=%" PRIu64 " repaired=%" PRIu64 " (equal to frame 1: %"
               PRIu64 ") already-correct=%" PRIu64 " unrepaired=%" PRIu64
               " classify-errors=%" PRIu64 "\n",
            l->at_entry, l->at_exit, l->frameless, l->repaired,
            l->equal_inserted, l->already_correct, l->unrepaired,
            t->classify_errors);
}

int lp_script_run(const char *input, const lp_script_opts *o, FILE *out,
                  lp_error *err)
{
    sc_state s;
    int r;

    memset(&s, 0, sizeof s);
    s.o = o;
    s.out = out;
    s.max_stack = SC_MAX_STACK;
    if (o->itrace && o->itrace->callchain && o->itrace->callchain_sz > s.max_stack)
        s.max_stack = o->itrace->callchain_sz;
    r = run(&s, input, err);
    fflush(out);
    if (s.pt)
        ((lp_script_opts *)o)->pt_errors = lp_ptsynth_nr_errors(s.pt);
    lp_ptsynth_close(s.pt);
    sc_symbols_free(s.syms);
    if (o->fp_stats && s.fps)
        write_fp_stats(o->fp_stats, s.fps);
    lp_fp_sampler_free(s.fps);
    lp_machine_free(s.m);
    lp_sym_perf_free(s.v5);
    if (s.r)
        lp_reader_close(s.r);
    return r < 0 ? -1 : 0;
}
