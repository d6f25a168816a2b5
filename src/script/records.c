/*
 * records.c - the non-sample records as perf 6.1's `perf script
 * --show-mmap-events --show-task-events` prints them: the line start from
 * the sample_id trailer (or from the record itself), then
 * perf_event__fprintf's text of MMAP/MMAP2, COMM, FORK and EXIT. Owns
 * those lines only; when they are printed is script.c's.
 */
#include <inttypes.h>

#include "script/sc_internal.h"

/* Start of a record's line: pid/tid/time from the sample_id trailer, or
 * from the record itself when the event has no sample_id_all. */
static void print_record_start(sc_state *s, const lp_event *ev, uint32_t pid,
                               uint32_t tid, uint64_t time_no_sid)
{
    const lp_attr *a = sc_attr_of_record(s, ev);
    unsigned f = a ? sc_fields_for(s, a) : s->o->fields;
    const char *comm = lp_machine_comm(s->m, pid, tid);

    if (lp_reader_info(s->r)->format == LP_FMT_PERF_SCRIPT)
        f = 0; /* text input: nothing to print before the record */
    if (ev->sid.present)
        sc_print_start(s, f, a, comm, tid, (int32_t)ev->sid.pid,
                       (int32_t)ev->sid.tid, ev->sid.time);
    else
        sc_print_start(s, f, a, comm, tid, (int32_t)pid, (int32_t)tid,
                       time_no_sid);
}

static void print_mmap2_id(FILE *o, const lp_event *ev)
{
    const lp_mmap_event *m = &ev->u.mmap;
    int i;

    if (ev->misc & LP_MISC_MMAP_BUILD_ID) {
        fputs(" <", o);
        for (i = 0; i < m->build_id_size && i < 20; i++)
            fprintf(o, "%02x", m->build_id[i]);
        fputc('>', o);
    } else {
        fprintf(o, " %02x:%02x %" PRIu64 " %" PRIu64, m->maj, m->min, m->ino,
                m->ino_generation);
    }
}

void sc_print_mmap(sc_state *s, const lp_event *ev)
{
    const lp_mmap_event *m = &ev->u.mmap;
    FILE *o = s->out;

    print_record_start(s, ev, m->pid, m->tid, 0);
    if (!m->is_mmap2) {
        fprintf(o, "PERF_RECORD_MMAP %d/%d: [%#" PRIx64 "(%#" PRIx64
                   ") @ %#" PRIx64 "]: %c %s\n",
                (int32_t)m->pid, (int32_t)m->tid, m->start, m->len, m->pgoff,
                (ev->misc & LP_MISC_MMAP_DATA) ? 'r' : 'x', m->filename);
        return;
    }
    fprintf(o, "PERF_RECORD_MMAP2 %d/%d: [%#" PRIx64 "(%#" PRIx64 ") @ %#" PRIx64,
            (int32_t)m->pid, (int32_t)m->tid, m->start, m->len, m->pgoff);
    print_mmap2_id(o, ev);
    fprintf(o, "]: %c%c%c%c %s\n", (m->prot & 1) ? 'r' : '-',
            (m->prot & 2) ? 'w' : '-', (m->prot & 4) ? 'x' : '-',
            (m->flags & 1) ? 's' : 'p', m->filename);
}

void sc_print_task(sc_state *s, const lp_event *ev)
{
    const lp_task_event *t = &ev->u.task;

    print_record_start(s, ev, t->pid, t->tid, t->time);
    fprintf(s->out, "PERF_RECORD_%s(%d:%d):(%d:%d)\n",
            ev->kind == LP_EV_FORK ? "FORK" : "EXIT", (int32_t)t->pid,
            (int32_t)t->tid, (int32_t)t->ppid, (int32_t)t->ptid);
}

void sc_print_comm(sc_state *s, const lp_event *ev)
{
    const lp_comm_event *c = &ev->u.comm;

    print_record_start(s, ev, c->pid, c->tid, 0);
    fprintf(s->out, "PERF_RECORD_COMM%s: %s:%d/%d\n", c->exec ? " exec" : "",
            c->comm, (int32_t)c->pid, (int32_t)c->tid);
}
