/*
 * fields.c - perf 6.1's field rules for `perf script -F`: which of the
 * asked fields an event can give (checked on the first event of each
 * output type, as evsel__check_attr), the ip/sym fields pipe mode adds,
 * the event a non-sample record belongs to, and the start of every line
 * (perf_sample__fprintf_start: comm, pid/tid, time). Owns those rules and
 * the field names; not the rest of a line (sample.c, records.c).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "script/sc_internal.h"

static const struct {
    const char *name;
    unsigned bit;
} field_names[] = {
    {"comm", LP_SCRIPT_COMM}, {"pid", LP_SCRIPT_PID}, {"tid", LP_SCRIPT_TID},
    {"time", LP_SCRIPT_TIME}, {"ip", LP_SCRIPT_IP},   {"brstack", LP_SCRIPT_BRSTACK},
};

static int field_bit(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof field_names / sizeof *field_names; i++)
        if (strcmp(name, field_names[i].name) == 0)
            return (int)field_names[i].bit;
    return -1;
}

int lp_script_fields_parse(const char *list, unsigned *fields)
{
    char *dup = strdup(list), *tok, *save = NULL;
    unsigned f = 0;
    int bit = 0;

    if (!dup)
        return -1;
    for (tok = strtok_r(dup, ",", &save); tok && bit >= 0;
         tok = strtok_r(NULL, ",", &save))
        if ((bit = field_bit(tok)) >= 0)
            f |= (unsigned)bit;
    free(dup);
    if (bit < 0 || !f)
        return -1;
    *fields = f;
    return 0;
}

static int output_type(const lp_attr *a)
{
    return a && a->type < 6 ? (int)a->type : SC_TYPE_OTHER;
}

/* evsel__check_attr on the first event of a type: fields the event cannot
 * give are dropped for the whole type (perf only checks the first one). */
static unsigned check_fields(unsigned f, const lp_attr *a)
{
    uint64_t st = a->sample_type;

    if (!(st & LP_SAMPLE_TID))
        f &= ~(unsigned)(LP_SCRIPT_PID | LP_SCRIPT_TID);
    if (!(st & LP_SAMPLE_TIME))
        f &= ~(unsigned)LP_SCRIPT_TIME;
    if (!(st & LP_SAMPLE_IP))
        f &= ~(unsigned)LP_SCRIPT_IP;
    if (!(st & LP_SAMPLE_BRANCH_STACK))
        f &= ~(unsigned)LP_SCRIPT_BRSTACK;
    return f;
}

/* perf's process_attr: with callchains on, the events seen so far
 * sampling callchains, branch stacks or user stacks make perf turn on ip
 * and sym for the type of the event being added. */
static unsigned stack_extra_fields(uint64_t st)
{
    if ((st & (LP_SAMPLE_CALLCHAIN | LP_SAMPLE_BRANCH_STACK)) ||
        ((st & LP_SAMPLE_REGS_USER) && (st & LP_SAMPLE_STACK_USER)))
        return LP_SCRIPT_IP | SC_SYM;
    return 0;
}

/* Pipe mode: every attr arrives through process_attr (callchains on). */
static unsigned pipe_extra_fields(const lp_file_info *info, size_t upto)
{
    uint64_t st = 0;
    size_t i;

    for (i = 0; i <= upto; i++)
        st |= info->attrs[i].sample_type;
    return stack_extra_fields(st);
}

/* The attrs the Intel PT synthesizer adds go through process_attr too:
 * the first of an output type no recorded event has is checked - but in a
 * file with AUX area data (HEADER_AUXTRACE) evsel__check_attr keeps the
 * fields asked for even when the event lacks them (allow_user_set), so
 * instruction samples print their branch stacks after branch samples -,
 * and gets ip and sym when callchains are on (`g` turns them on, as does
 * a recorded event with callchains). 0 if no synthesized attr has type t. */
static int synth_type_fields(sc_state *s, int t, unsigned *f)
{
    const lp_file_info *info = lp_reader_info(s->r);
    bool use_callchain = s->o->itrace && s->o->itrace->callchain;
    const lp_attr *sa[2];
    size_t n = s->pt ? lp_ptsynth_attrs(s->pt, sa) : 0, i;
    uint64_t st = 0;

    for (i = 0; i < info->nr_attrs; i++) {
        st |= info->attrs[i].sample_type;
        use_callchain |= (info->attrs[i].sample_type & LP_SAMPLE_CALLCHAIN) != 0;
    }
    for (i = 0; i < n; i++) {
        st |= sa[i]->sample_type;
        if (output_type(sa[i]) != t)
            continue;
        *f = s->o->fields;
        if (use_callchain)
            *f |= stack_extra_fields(st);
        return 1;
    }
    return 0;
}

unsigned sc_fields_for(sc_state *s, const lp_attr *a)
{
    const lp_file_info *info = lp_reader_info(s->r);
    int t = output_type(a);
    size_t i;

    /* perf script text has no comm, pid, tid or time to print. */
    if (info->format == LP_FMT_PERF_SCRIPT)
        return s->o->fields & (LP_SCRIPT_IP | LP_SCRIPT_BRSTACK);
    if (s->type_checked[t])
        return s->type_fields[t];
    s->type_fields[t] = s->o->fields;
    s->type_checked[t] = 1;
    /* Pipe mode checks only the standard types (process_attr). */
    if (t == SC_TYPE_OTHER && info->format == LP_FMT_PERF_PIPE)
        return s->type_fields[t];
    for (i = 0; i < info->nr_attrs; i++)
        if (output_type(&info->attrs[i]) == t) {
            s->type_fields[t] = check_fields(s->o->fields, &info->attrs[i]);
            if (info->format == LP_FMT_PERF_PIPE)
                s->type_fields[t] |= pipe_extra_fields(info, i);
            return s->type_fields[t];
        }
    synth_type_fields(s, t, &s->type_fields[t]);
    return s->type_fields[t];
}

/* The event a non-sample record belongs to (evlist__id2evsel). */
const lp_attr *sc_attr_of_record(sc_state *s, const lp_event *ev)
{
    const lp_file_info *info = lp_reader_info(s->r);
    const lp_attr *a = NULL;

    if (ev->sid.present && ev->sid.id && info->nr_attrs > 1)
        a = lp_reader_attr_by_id(s->r, ev->sid.id);
    if (!a && info->nr_attrs)
        a = &info->attrs[0];
    return a;
}

/* perf_sample__fprintf_start: comm, pid/tid, time. */
void sc_print_start(sc_state *s, unsigned f, const lp_attr *a,
                    const char *comm, uint32_t tid_for_comm, int32_t pid,
                    int32_t tid, uint64_t time)
{
    FILE *o = s->out;
    char dflt[32], ts[48];

    if (f & LP_SCRIPT_COMM) {
        if (!comm) {
            snprintf(dflt, sizeof dflt, ":%d", (int32_t)tid_for_comm);
            comm = dflt;
        }
        if ((f & LP_SCRIPT_IP) && a && (a->sample_type & LP_SAMPLE_CALLCHAIN))
            fprintf(o, "%s ", comm);
        else
            fprintf(o, "%16s ", comm);
    }
    if ((f & LP_SCRIPT_PID) && (f & LP_SCRIPT_TID))
        fprintf(o, "%5d/%-5d ", pid, tid);
    else if (f & LP_SCRIPT_PID)
        fprintf(o, "%5d ", pid);
    else if (f & LP_SCRIPT_TID)
        fprintf(o, "%5d ", tid);
    if (f & LP_SCRIPT_TIME) {
        snprintf(ts, sizeof ts, "%" PRIu64 ".%06" PRIu64, time / 1000000000u,
                 (time % 1000000000u) / 1000u);
        fprintf(o, "%12s: ", ts);
    }
}
