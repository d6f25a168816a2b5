/*
 * cmd_script.c - `lbr2prof script`: prints the samples of a perf.data (or
 * perf script text) the way perf 6.1 prints them with
 * `perf script -F comm,pid,tid,time,ip,brstack`, byte for byte, optionally
 * with the MMAP (--show-mmap-events) and COMM/FORK/EXIT
 * (--show-task-events) records. Callchain entries in a file-backed user
 * mapping print as file offsets like perf 6.1 (--raw-addresses: absolute).
 * --fp-callchain=plain|validated|repaired replaces the user part of each
 * callchain by a frame-pointer walk of the sample's user stack
 * (src/fpunwind; perf record --call-graph dwarf).
 * LP_BUILTIN(script, cmd_script, "print samples as perf script -F comm,pid,tid,time,ip,brstack does")
 * --format=symbolicate-v5 prints the samples as a Symbolication API v5
 * request instead (src/symbolicate/perfreq.c does the work).
 *
 * Owns the output format and perf's field rules only; reading is the
 * reader's job, process state the machine's.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/fpunwind.h"
#include "lbr2prof/machine.h"
#include "lbr2prof/reader.h"
#include "lbr2prof/symbolicate.h"

enum sc_field {
    F_COMM = 1u << 0,
    F_PID = 1u << 1,
    F_TID = 1u << 2,
    F_TIME = 1u << 3,
    F_IP = 1u << 4,
    F_BRSTACK = 1u << 5,
    F_SYM = 1u << 6, /* only as perf adds it in pipe mode; always "[unknown]" */
};

/* perf's output[] slots: PERF_TYPE_HARDWARE..BREAKPOINT, then "other". */
#define SC_NR_TYPES 8
#define SC_TYPE_OTHER 7
#define SC_MAX_STACK 127 /* perf script's default scripting_max_stack */

#define SC_MAX_BINARIES 64

typedef struct sc_opts {
    unsigned fields;
    int show_mmap, show_task, raw_addr;
    int fp_mode, fp_stats; /* enum lp_fp_mode, 0: the recorded callchain */
    const char *input;
    int v5;                         /* --format=symbolicate-v5 */
    lp_sym_perf_opts v5o;
    const char *binaries[SC_MAX_BINARIES];
} sc_opts;

typedef struct sc_state {
    const sc_opts *o;
    lp_reader *r;
    lp_machine *m;
    lp_sym_perf *v5;                /* --format=symbolicate-v5 */
    lp_fp_sampler *fps;
    lp_error *err;          /* where print_sample reports a failure */
    int failed;
    FILE *out;
    int type_checked[SC_NR_TYPES];
    unsigned type_fields[SC_NR_TYPES];
} sc_state;

static const struct {
    const char *name;
    unsigned bit;
} field_names[] = {
    {"comm", F_COMM}, {"pid", F_PID}, {"tid", F_TID},
    {"time", F_TIME}, {"ip", F_IP},   {"brstack", F_BRSTACK},
};

/* ---- perf's field rules ---------------------------------------------------- */

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
        f &= ~(unsigned)(F_PID | F_TID);
    if (!(st & LP_SAMPLE_TIME))
        f &= ~(unsigned)F_TIME;
    if (!(st & LP_SAMPLE_IP))
        f &= ~(unsigned)F_IP;
    if (!(st & LP_SAMPLE_BRANCH_STACK))
        f &= ~(unsigned)F_BRSTACK;
    return f;
}

/* Pipe mode (perf's process_attr): when the events seen so far sample
 * callchains or branch stacks, perf turns on ip and sym for the type. */
static unsigned pipe_extra_fields(const lp_file_info *info, size_t upto)
{
    uint64_t st = 0;
    size_t i;

    for (i = 0; i <= upto; i++)
        st |= info->attrs[i].sample_type;
    if ((st & (LP_SAMPLE_CALLCHAIN | LP_SAMPLE_BRANCH_STACK)) ||
        ((st & LP_SAMPLE_REGS_USER) && (st & LP_SAMPLE_STACK_USER)))
        return F_IP | F_SYM;
    return 0;
}

static unsigned fields_for(sc_state *s, const lp_attr *a)
{
    const lp_file_info *info = lp_reader_info(s->r);
    int t = output_type(a);
    size_t i;

    /* perf script text has no comm, pid, tid or time to print. */
    if (info->format == LP_FMT_PERF_SCRIPT)
        return s->o->fields & (F_IP | F_BRSTACK);
    if (s->type_checked[t])
        return s->type_fields[t];
    s->type_fields[t] = s->o->fields;
    /* Pipe mode checks only the standard types (process_attr). */
    if (t == SC_TYPE_OTHER && info->format == LP_FMT_PERF_PIPE) {
        s->type_checked[t] = 1;
        return s->type_fields[t];
    }
    for (i = 0; i < info->nr_attrs; i++)
        if (output_type(&info->attrs[i]) == t) {
            s->type_fields[t] = check_fields(s->o->fields, &info->attrs[i]);
            if (info->format == LP_FMT_PERF_PIPE)
                s->type_fields[t] |= pipe_extra_fields(info, i);
            break;
        }
    s->type_checked[t] = 1;
    return s->type_fields[t];
}

/* The event a non-sample record belongs to (evlist__id2evsel). */
static const lp_attr *attr_of_record(sc_state *s, const lp_event *ev)
{
    const lp_file_info *info = lp_reader_info(s->r);
    const lp_attr *a = NULL;

    if (ev->sid.present && ev->sid.id && info->nr_attrs > 1)
        a = lp_reader_attr_by_id(s->r, ev->sid.id);
    if (!a && info->nr_attrs)
        a = &info->attrs[0];
    return a;
}

/* ---- printing ------------------------------------------------------------- */

/* perf_sample__fprintf_start: comm, pid/tid, time. */
static void print_start(sc_state *s, unsigned f, const lp_attr *a,
                        const char *comm, uint32_t tid_for_comm, int32_t pid,
                        int32_t tid, uint64_t time)
{
    FILE *o = s->out;

    if (f & F_COMM) {
        char dflt[32];
        if (!comm) {
            snprintf(dflt, sizeof dflt, ":%d", (int32_t)tid_for_comm);
            comm = dflt;
        }
        if ((f & F_IP) && a && (a->sample_type & LP_SAMPLE_CALLCHAIN))
            fprintf(o, "%s ", comm);
        else
            fprintf(o, "%16s ", comm);
    }
    if ((f & F_PID) && (f & F_TID))
        fprintf(o, "%5d/%-5d ", pid, tid);
    else if (f & F_PID)
        fprintf(o, "%5d ", pid);
    else if (f & F_TID)
        fprintf(o, "%5d ", tid);
    if (f & F_TIME) {
        char ts[48];
        snprintf(ts, sizeof ts, "%" PRIu64 ".%06" PRIu64, time / 1000000000u,
                 (time % 1000000000u) / 1000u);
        fprintf(o, "%12s: ", ts);
    }
}

/* One callchain frame; `mode` is the cpumode set by the last marker. */
static void print_frame(sc_state *s, const lp_sample *sm, uint64_t ip,
                        unsigned mode, unsigned f)
{
    uint64_t addr = ip;

    if (!s->o->raw_addr && mode != LP_CPUMODE_HV) {
        const lp_map *mp = lp_machine_find_map(s->m, sm->pid, ip, mode);
        if (mp)
            addr = lp_map_rel_addr(mp, ip);
    }
    fprintf(s->out, "\t%16" PRIx64 "%s\n", addr, (f & F_SYM) ? " [unknown]" : "");
}

/* thread__resolve_callchain_sample (callee order) + the printing loop. */
static void print_callchain(sc_state *s, const lp_sample *sm, unsigned f)
{
    unsigned mode = LP_CPUMODE_USER;
    uint64_t i, n = 0;

    /* A corrupt marker discards the whole chain: check first. */
    for (i = 0; i < sm->callchain_nr; i++) {
        uint64_t ip = sm->callchain[i];
        if (ip >= LP_CONTEXT_MAX && ip != LP_CONTEXT_HV &&
            ip != LP_CONTEXT_KERNEL && ip != LP_CONTEXT_USER)
            break;
    }
    if (i < sm->callchain_nr) {
        uint64_t stop = i, k = 0;
        for (i = 0; i < stop; i++)
            k += sm->callchain[i] < LP_CONTEXT_MAX;
        if (k < SC_MAX_STACK) /* perf stops at max_stack before the marker */
            return;
    }
    for (i = 0; i < sm->callchain_nr && n < SC_MAX_STACK; i++) {
        uint64_t ip = sm->callchain[i];
        if (ip >= LP_CONTEXT_MAX) {
            mode = ip == LP_CONTEXT_HV       ? LP_CPUMODE_HV
                   : ip == LP_CONTEXT_KERNEL ? LP_CPUMODE_KERNEL
                                             : LP_CPUMODE_USER;
            continue;
        }
        n++;
        print_frame(s, sm, ip, mode, f);
    }
}

/* --fp-callchain: the recorded kernel part (up to the user marker), then
 * the user frames walked from the sample's stack. 1: *copy uses buf; 0: no
 * user stack (print the sample as recorded); -1: error. */
#define SC_FP_BUF (2 * LP_FPU_MAX_FRAMES + 8)
static int fp_callchain(sc_state *s, const lp_sample *sm, lp_sample *copy,
                        uint64_t *buf)
{
    uint64_t user[LP_FPU_MAX_FRAMES], i;
    size_t nu, k = 0;
    int r = lp_fp_sample_user_chain(s->fps, s->m, sm, s->o->fp_mode, user,
                                    LP_FPU_MAX_FRAMES, &nu, s->err);

    if (r <= 0)
        return r;
    for (i = 0; sm->callchain && i < sm->callchain_nr &&
                k < SC_FP_BUF - 1 - LP_FPU_MAX_FRAMES;
         i++) {
        if (sm->callchain[i] == LP_CONTEXT_USER)
            break;
        buf[k++] = sm->callchain[i];
    }
    buf[k++] = LP_CONTEXT_USER;
    memcpy(buf + k, user, nu * sizeof *user);
    *copy = *sm;
    copy->callchain = buf;
    copy->callchain_nr = k + nu;
    return 1;
}

static char mispred_char(uint64_t fl)
{
    if (!LP_BR_MISPRED(fl) && !LP_BR_PREDICTED(fl))
        return '-';
    return LP_BR_PREDICTED(fl) ? 'P' : 'M';
}

static const char *branch_type_name(uint64_t fl)
{
    static const char *const names[] = {
        "",        "COND",     "UNCOND", "IND",       "CALL",
        "IND_CALL", "RET",     "SYSCALL", "SYSRET",   "COND_CALL",
        "COND_RET", "ERET",    "IRQ",    "SERROR",    "NO_TX",
    };
    static const char *const new_names[] = {
        "FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1",
        "ARCH_2",     "ARCH_3",     "ARCH_4",     "ARCH_5",
    };
    unsigned t = LP_BR_TYPE(fl), nt = LP_BR_NEW_TYPE(fl);

    if (t < sizeof names / sizeof *names)
        return names[t];
    return nt < sizeof new_names / sizeof *new_names ? new_names[nt] : "";
}

static void print_brstack(sc_state *s, const lp_sample *sm)
{
    uint64_t i;

    for (i = 0; i < sm->branch_nr; i++) {
        const lp_branch_entry *b = &sm->branches[i];
        fprintf(s->out, " 0x%" PRIx64 "/0x%" PRIx64 "/%c/%c/%c/%u/%s ",
                b->from, b->to, mispred_char(b->flags),
                LP_BR_IN_TX(b->flags) ? 'X' : '-',
                LP_BR_ABORT(b->flags) ? 'A' : '-', LP_BR_CYCLES(b->flags),
                branch_type_name(b->flags));
    }
}

static void print_sample(sc_state *s, const lp_event *ev)
{
    const lp_sample *sm = &ev->u.sample;
    lp_sample fp_copy;
    uint64_t fp_buf[SC_FP_BUF];
    const lp_file_info *info = lp_reader_info(s->r);
    const lp_attr *a = sm->attr ? sm->attr
                                : (info->nr_attrs ? &info->attrs[0] : NULL);
    unsigned f = a ? fields_for(s, a) : s->o->fields;
    unsigned mode = ev->misc & LP_MISC_CPUMODE_MASK;
    int32_t pid = -1, tid = -1, count, chain;
    uint64_t time = UINT64_MAX;

    /* Guest samples are filtered out (perf_guest is off by default). */
    if (mode == LP_CPUMODE_GUEST_KERNEL || mode == LP_CPUMODE_GUEST_USER)
        return;
    if (sm->sample_type & LP_SAMPLE_TID) {
        pid = (int32_t)sm->pid;
        tid = (int32_t)sm->tid;
    }
    if (sm->sample_type & LP_SAMPLE_TIME)
        time = sm->time;
    if (!(sm->sample_type & (LP_SAMPLE_IP | LP_SAMPLE_CALLCHAIN)) &&
        lp_reader_info(s->r)->format == LP_FMT_PERF_SCRIPT)
        f &= ~(unsigned)F_IP; /* an LBR line without a leading IP */
    /* Aggregated perf script text: keep llvm-profgen's count line, on
     * its own line just before the sample's first address line. */
    count = sm->repeat != 1 &&
            lp_reader_info(s->r)->format == LP_FMT_PERF_SCRIPT;
    chain = (sm->sample_type & LP_SAMPLE_CALLCHAIN) && sm->callchain;
    if (s->o->fp_mode && (f & F_IP)) {
        int r = fp_callchain(s, sm, &fp_copy, fp_buf);
        if (r < 0) {
            s->failed = 1;
            return;
        }
        if (r > 0) {
            sm = &fp_copy;
            chain = 1;
        }
    }
    if (count && !((f & F_IP) && chain))
        fprintf(s->out, "%" PRIu64 "\n", sm->repeat);
    print_start(s, f, a, lp_machine_comm(s->m, (uint32_t)pid, (uint32_t)tid),
                (uint32_t)tid, pid, tid, time);
    if (f & F_IP) {
        fputc(chain ? '\n' : ' ', s->out);
        if (chain && count)
            fprintf(s->out, "%" PRIu64 "\n", sm->repeat);
        if (chain)
            print_callchain(s, sm, f);
        else
            fprintf(s->out, "%16" PRIx64 "%s", sm->ip,
                    (f & F_SYM) ? " [unknown]" : "");
    }
    if ((f & F_BRSTACK) && (sm->sample_type & LP_SAMPLE_BRANCH_STACK))
        print_brstack(s, sm);
    fputc('\n', s->out);
}

/* Header of a non-sample record: pid/tid/time from the sample_id trailer,
 * or from the record itself when the event has no sample_id_all. */
static void print_record_start(sc_state *s, const lp_event *ev, uint32_t pid,
                               uint32_t tid, uint64_t time_no_sid)
{
    const lp_attr *a = attr_of_record(s, ev);
    unsigned f = a ? fields_for(s, a) : s->o->fields;
    const char *comm = lp_machine_comm(s->m, pid, tid);

    if (lp_reader_info(s->r)->format == LP_FMT_PERF_SCRIPT)
        f = 0; /* text input: nothing to print before the record */
    if (ev->sid.present)
        print_start(s, f, a, comm, tid, (int32_t)ev->sid.pid,
                    (int32_t)ev->sid.tid, ev->sid.time);
    else
        print_start(s, f, a, comm, tid, (int32_t)pid, (int32_t)tid,
                    time_no_sid);
}

static void print_mmap(sc_state *s, const lp_event *ev)
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
    if (ev->misc & LP_MISC_MMAP_BUILD_ID) {
        int i;
        fputs(" <", o);
        for (i = 0; i < m->build_id_size && i < 20; i++)
            fprintf(o, "%02x", m->build_id[i]);
        fputc('>', o);
    } else {
        fprintf(o, " %02x:%02x %" PRIu64 " %" PRIu64, m->maj, m->min, m->ino,
                m->ino_generation);
    }
    fprintf(o, "]: %c%c%c%c %s\n", (m->prot & 1) ? 'r' : '-',
            (m->prot & 2) ? 'w' : '-', (m->prot & 4) ? 'x' : '-',
            (m->flags & 1) ? 's' : 'p', m->filename);
}

static void print_task(sc_state *s, const lp_event *ev)
{
    const lp_task_event *t = &ev->u.task;

    print_record_start(s, ev, t->pid, t->tid, t->time);
    fprintf(s->out, "PERF_RECORD_%s(%d:%d):(%d:%d)\n",
            ev->kind == LP_EV_FORK ? "FORK" : "EXIT", (int32_t)t->pid,
            (int32_t)t->tid, (int32_t)t->ppid, (int32_t)t->ptid);
}

static void print_comm(sc_state *s, const lp_event *ev)
{
    const lp_comm_event *c = &ev->u.comm;

    print_record_start(s, ev, c->pid, c->tid, 0);
    fprintf(s->out, "PERF_RECORD_COMM%s: %s:%d/%d\n", c->exec ? " exec" : "",
            c->comm, (int32_t)c->pid, (int32_t)c->tid);
}

/* One event: update the machine and print, in perf's order. */
static int handle(sc_state *s, const lp_event *ev, lp_error *err)
{
    if (ev->kind == LP_EV_EXIT && s->o->show_task)
        print_task(s, ev); /* perf prints EXIT before processing it */
    if (lp_machine_process_event(s->m, ev, err) < 0)
        return -1;
    if (s->v5)
        return ev->kind == LP_EV_SAMPLE ? lp_sym_perf_sample(s->v5, s->m, ev, err) : 0;
    switch (ev->kind) {
    case LP_EV_SAMPLE:
        print_sample(s, ev);
        if (s->failed)
            return -1;
        break;
    case LP_EV_MMAP:
        if (s->o->show_mmap)
            print_mmap(s, ev);
        break;
    case LP_EV_COMM:
        if (s->o->show_task)
            print_comm(s, ev);
        break;
    case LP_EV_FORK:
        if (s->o->show_task)
            print_task(s, ev);
        break;
    default: break;
    }
    return 0;
}

/* ---- command line --------------------------------------------------------- */

static void usage(FILE *o)
{
    fprintf(o,
            "usage: lbr2prof script [options] FILE   (FILE may be '-')\n"
            "  -F, --fields LIST     comma list of comm,pid,tid,time,ip,brstack\n"
            "                        (default: all of them)\n"
            "  -i, --input FILE      input file (perf script style)\n"
            "      --show-mmap-events  print MMAP/MMAP2 records\n"
            "      --show-task-events  print COMM/FORK/EXIT records\n"
            "      --raw-addresses   print callchain addresses absolute, not\n"
            "                        relative to their mapping\n"
            "      --format=symbolicate-v5  print a Symbolication API v5 request\n"
            "                        (one job per process, one stack per sample)\n"
            "      --binary ELF      v5: ELF standing in for a mapped file\n"
            "      --adjust MODE     v5: all_but_first (default), all, none\n"
            "      --fp-callchain=MODE  user part of the callchain from a\n"
            "                        frame-pointer walk of the sampled user stack\n"
            "                        (perf record --call-graph dwarf): plain (the\n"
            "                        kernel's walk), validated, or repaired (also\n"
            "                        the caller lost at a function's entry/exit)\n"
            "      --fp-stats        with --fp-callchain: counters on stderr\n");
}

static int parse_fields(const char *list, unsigned *out)
{
    char *dup = strdup(list), *tok, *save = NULL;
    unsigned f = 0;
    size_t i;

    if (!dup)
        return -1;
    for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (i = 0; i < sizeof field_names / sizeof *field_names; i++)
            if (strcmp(tok, field_names[i].name) == 0)
                break;
        if (i == sizeof field_names / sizeof *field_names) {
            free(dup);
            return -1;
        }
        f |= field_names[i].bit;
    }
    free(dup);
    *out = f;
    return f ? 0 : -1;
}

static int parse_args(int argc, char **argv, sc_opts *o)
{
    static const struct option longopts[] = {
        {"fields", required_argument, NULL, 'F'},
        {"input", required_argument, NULL, 'i'},
        {"show-mmap-events", no_argument, NULL, 'm'},
        {"show-task-events", no_argument, NULL, 't'},
        {"raw-addresses", no_argument, NULL, 'r'},
        {"format", required_argument, NULL, 'o'},
        {"binary", required_argument, NULL, 'b'},
        {"adjust", required_argument, NULL, 'a'},
        {"fp-callchain", required_argument, NULL, 'c'},
        {"fp-stats", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;

    memset(o, 0, sizeof *o);
    o->v5o.pid = -1;
    o->v5o.adjust = 1;
    o->v5o.mode = LP_ADJUST_ALL_BUT_FIRST; /* perf: frame 0 is the IP */
    o->v5o.binaries = o->binaries;
    o->fields = F_COMM | F_PID | F_TID | F_TIME | F_IP | F_BRSTACK;
    optind = 1;
    while ((c = getopt_long(argc, argv, "F:i:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'F':
            if (parse_fields(optarg, &o->fields) < 0)
                return lp_cli_usage_error("script", "bad field list '%s' "
                                          "(known: comm,pid,tid,time,ip,brstack)",
                                          optarg);
            break;
        case 'i': o->input = optarg; break;
        case 'm': o->show_mmap = 1; break;
        case 't': o->show_task = 1; break;
        case 'r': o->raw_addr = 1; break;
        case 'o':
            if (strcmp(optarg, "symbolicate-v5") && strcmp(optarg, "perf"))
                return lp_cli_usage_error("script", "unknown format '%s' "
                                          "(perf, symbolicate-v5)", optarg);
            o->v5 = !strcmp(optarg, "symbolicate-v5");
            break;
        case 'b':
            if (o->v5o.nbinaries == SC_MAX_BINARIES)
                return lp_cli_usage_error("script", "too many --binary");
            o->binaries[o->v5o.nbinaries++] = optarg;
            break;
        case 'a':
            if (lp_adjust_mode_parse(optarg, &o->v5o.mode) < 0)
                return lp_cli_usage_error("script", "bad --adjust '%s' (auto, "
                                          "all, all_but_first, none)", optarg);
            o->v5o.adjust = o->v5o.mode != LP_ADJUST_NONE;
            break;
        case 'c':
            if (strcmp(optarg, "plain") == 0)
                o->fp_mode = LP_FP_PLAIN;
            else if (strcmp(optarg, "validated") == 0)
                o->fp_mode = LP_FP_VALIDATED;
            else if (strcmp(optarg, "repaired") == 0)
                o->fp_mode = LP_FP_REPAIRED;
            else
                return lp_cli_usage_error("script", "bad --fp-callchain '%s' "
                                          "(known: plain, validated, repaired)",
                                          optarg);
            break;
        case 's': o->fp_stats = 1; break;
        case 'h': usage(stdout); return 1;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc && !o->input)
        o->input = argv[optind++];
    if (optind < argc)
        return lp_cli_usage_error("script", "unexpected argument '%s'",
                                  argv[optind]);
    if (!o->input)
        o->input = "perf.data"; /* perf's default */
    if (o->fp_stats && !o->fp_mode)
        return lp_cli_usage_error("script", "--fp-stats needs --fp-callchain");
    return 0;
}

/* --format=symbolicate-v5: the request, and a warning per file whose
 * frames had to be left without a module. */
static int v5_finish(sc_state *s, lp_error *err)
{
    const char **names;
    size_t n, i;

    if (lp_sym_perf_write(s->v5, s->out, err) < 0)
        return -1;
    n = lp_sym_perf_unreadable(s->v5, &names);
    for (i = 0; i < n; i++)
        fprintf(stderr, "lbr2prof script: warning: cannot read %s: its frames "
                        "are [-1, address] (pass --binary)\n", names[i]);
    free(names);
    return 0;
}

static int run(sc_state *s, lp_error *err)
{
    const lp_event *ev;
    lp_reader_opts ro;
    int r;

    memset(&ro, 0, sizeof ro);
    ro.order = LP_ORDER_TIME;
    ro.skip_payloads = !s->o->fp_mode; /* the walk needs regs and stack */
    if (strcmp(s->o->input, "-") == 0)
        s->r = lp_reader_open_stream(stdin, "-", &ro, err);
    else
        s->r = lp_reader_open(s->o->input, &ro, err);
    if (!s->r)
        return -1;
    s->m = lp_machine_new(LP_MACHINE_KEEP_MAPS_ON_EXEC, err);
    if (!s->m)
        return -1;
    if ((s->o->v5 || s->o->fp_mode) &&
        lp_machine_add_build_ids(s->m, lp_reader_info(s->r)->build_ids,
                                 lp_reader_info(s->r)->nr_build_ids, err) < 0)
        return -1; /* build-ids: module ids (v5); fp repair refuses rebuilt files */
    if (s->o->v5 && !(s->v5 = lp_sym_perf_new(&s->o->v5o, err)))
        return -1;
    if (s->o->fp_mode && !(s->fps = lp_fp_sampler_new(err)))
        return -1;
    while ((r = lp_reader_next(s->r, &ev, err)) == 1)
        if (handle(s, ev, err) < 0)
            return -1;
    if (r == 0 && s->v5)
        return v5_finish(s, err);
    return r;
}

static void print_fp_stats(const lp_fp_sampler *fps)
{
    const lp_fp_sampler_stats *t = lp_fp_sampler_get_stats(fps);
    const lp_leaf_stats *l = &t->leaf;
    int i;

    fprintf(stderr,
            "fp-callchain: %" PRIu64 " samples walked, %" PRIu64
            " without user stack; binaries %" PRIu64 " opened, %" PRIu64
            " failed; %" PRIu64 " leaves in a file whose build-id differs\n",
            t->walked, t->no_user_stack, t->binaries_opened,
            t->binaries_failed, t->build_id_mismatch);
    if (!l->samples)
        return;
    fprintf(stderr, "fp-callchain: leaf");
    for (i = 0; i < LP_LEAF_NSTATES; i++)
        fprintf(stderr, " %s=%" PRIu64, lp_leaf_state_name((lp_leaf_state)i),
                l->by_state[i]);
    fprintf(stderr,
            "\nfp-callchain: at-entry=%" PRIu64 " at-exit=%" PRIu64
            " frameless=%" PRIu64 " repaired=%" PRIu64 " (equal to frame 1: %"
            PRIu64 ") already-correct=%" PRIu64 " unrepaired=%" PRIu64
            " classify-errors=%" PRIu64 "\n",
            l->at_entry, l->at_exit, l->frameless, l->repaired,
            l->equal_inserted, l->already_correct, l->unrepaired,
            t->classify_errors);
}

int cmd_script(int argc, char **argv)
{
    static char obuf[1 << 16];
    sc_opts o;
    sc_state s;
    lp_error err;
    int st = parse_args(argc, argv, &o), r;

    if (st)
        return st == 1 ? 0 : st;
    memset(&s, 0, sizeof s);
    lp_error_clear(&err);
    s.o = &o;
    s.err = &err;
    s.out = stdout;
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    r = run(&s, &err);
    fflush(stdout);
    if (o.fp_stats && s.fps)
        print_fp_stats(s.fps);
    lp_fp_sampler_free(s.fps);
    lp_machine_free(s.m);
    lp_sym_perf_free(s.v5);
    if (s.r)
        lp_reader_close(s.r);
    if (r < 0)
        return lp_cli_fail(&err);
    if (ferror(stdout)) {
        lp_error_set(&err, LP_EIO, "-: write error on standard output");
        return lp_cli_fail(&err);
    }
    return 0;
}
