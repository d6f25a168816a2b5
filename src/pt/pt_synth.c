/*
 * pt_synth.c - Intel PT samples interleaved with a reader's events, as
 * perf 6.1's intel-pt.c makes them: the AUX data of the file is queued
 * first (one queue per AUX buffer index: per thread or per CPU), and
 * before each event with a timestamp the queues are decoded up to it,
 * oldest first (a heap by each queue's current timestamp). Each decoder
 * state becomes samples: `instructions` when the period elapsed (with
 * the thread's last branches for `l`), `branches` for every branch, an
 * error for every decoding error. The code comes from the files the
 * process had mapped (MMAP records seen so far; [vdso] from our own
 * process, as perf copies its own); a file that cannot be read is an
 * error the first two times, as in perf, then a silent resync.
 * The packet walk itself is pt_walk.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lbr2prof/machine.h"
#include "pt/pt_internal.h"

#define KERNEL_START (1ull << 63)
#define AUXTRACE_INFO 70
#define AUXTRACE 71
#define REC_AUX 11
#define REC_ITRACE_START 12
#define REC_SWITCH 14
#define REC_SWITCH_CPU_WIDE 15
#define AUX_FLAG_TRUNCATED 1
#define OUT_SLOTS 8

enum { PRIV_PMU_TYPE, PRIV_TIME_SHIFT, PRIV_TIME_MULT, PRIV_TIME_ZERO,
       PRIV_CAP_USER_TIME_ZERO, PRIV_TSC_BIT, PRIV_NORETCOMP_BIT,
       PRIV_HAVE_SCHED_SWITCH, PRIV_SNAPSHOT_MODE, PRIV_PER_CPU_MMAPS,
       PRIV_MTC_BIT, PRIV_MTC_FREQ_BITS, PRIV_TSC_CTC_N, PRIV_TSC_CTC_D,
       PRIV_CYC_BIT, PRIV_MAX_NONTURBO_RATIO, PRIV_COUNT = 32 };

/* A mapped file the walk reads code from (perf's dso data). */
typedef struct dso_file {
    char *path;
    int fd;                 /* -1: not open */
    int error, seen;        /* a read failed; that was seen by a walk */
    struct dso_file *next;
} dso_file;

typedef struct tid_pid {
    int32_t tid, pid;
    struct tid_pid *next;
} tid_pid;

/* One AUX queue and its decoder (perf's intel_pt_queue). */
typedef struct ptq {
    uint8_t *data;
    size_t len, cap;
    uint64_t ref;           /* reference TSC of the first buffer */
    int32_t tid, cpu;       /* of the queue (-1: from the switch records) */
    int trace_nr;
    pt_decoder *dec;
    const pt_state *state;
    int32_t pid, cur_tid, cur_cpu;
    bool have_thread, have_sample, on_heap, done, setup;
    uint64_t timestamp, last_insn_cnt;
} ptq;

typedef struct heap_item {
    uint32_t qi;
    uint64_t ordinal;
} heap_item;

typedef struct out_slot {
    lp_event ev;
    lp_branch_entry *br;
    uint64_t *chain;
    lp_auxtrace_error err;
} out_slot;

struct lp_ptsynth {
    lp_itrace o;
    uint64_t priv[PRIV_COUNT];
    lp_attr pt_attr;
    bool have_pt_attr, return_compression, branch_enable, per_cpu;
    bool native;            /* recorded on this machine's arch (perf's native_arch) */
    unsigned mtc_shift;
    lp_attr branches_attr, insn_attr;
    uint64_t synth_ids[2];  /* their ids (perf: the PT event's + 1e9) */
    ptq *q;
    size_t nq;
    int next_buffer_nr;
    heap_item *heap;        /* perf's auxtrace_heap, same tie order */
    size_t heap_n;
    lp_machine *m;
    dso_file *dsos;
    pt_stacks *stacks;      /* per thread: call stack, last branches */
    tid_pid *tids;
    int32_t *cur_tid;       /* per CPU (ITRACE_START / SWITCH) */
    size_t ncpu;
    uint64_t num_events, nr_errors, nr_samples;
    /* the generator */
    ptq *run;               /* queue being decoded */
    uint64_t run_limit;     /* ... until its timestamp reaches this */
    uint64_t target;        /* decode queues below this timestamp */
    bool processing, have_pending, at_end, setup_done;
    const lp_event *pending;
    out_slot out[OUT_SLOTS];
    unsigned out_head, out_n;
    bool failed;            /* out of memory while decoding */
};

/* ---- time ------------------------------------------------------------------ */

static uint64_t tsc_to_perf(const lp_ptsynth *p, uint64_t tsc)
{
    uint64_t shift = p->priv[PRIV_TIME_SHIFT], mult = p->priv[PRIV_TIME_MULT];
    uint64_t quot = tsc >> shift, rem = tsc & ((1ull << shift) - 1);

    return p->priv[PRIV_TIME_ZERO] + quot * mult + ((rem * mult) >> shift);
}

static uint64_t perf_to_tsc(const lp_ptsynth *p, uint64_t ns)
{
    uint64_t mult = p->priv[PRIV_TIME_MULT], shift = p->priv[PRIV_TIME_SHIFT];
    uint64_t t = ns - p->priv[PRIV_TIME_ZERO], quot, rem;

    if (!mult)
        return 0;
    quot = t / mult;
    rem = t % mult;
    return (quot << shift) + (rem << shift) / mult;
}

static uint64_t ns_to_ticks(const lp_ptsynth *p, uint64_t ns)
{
    uint64_t mult = p->priv[PRIV_TIME_MULT], shift = p->priv[PRIV_TIME_SHIFT];

    if (!mult)
        return 0;
    return ((ns / mult) << shift) + ((ns % mult) << shift) / mult;
}

/* ---- threads ------------------------------------------------------------- */

static void set_pid(lp_ptsynth *p, int32_t pid, int32_t tid)
{
    tid_pid *t;

    for (t = p->tids; t; t = t->next)
        if (t->tid == tid) {
            t->pid = pid;
            return;
        }
    if (!(t = calloc(1, sizeof *t)))
        return;
    t->tid = tid;
    t->pid = pid;
    t->next = p->tids;
    p->tids = t;
}

static bool find_pid(const lp_ptsynth *p, int32_t tid, int32_t *pid)
{
    const tid_pid *t;

    for (t = p->tids; t; t = t->next)
        if (t->tid == tid) {
            *pid = t->pid;
            return true;
        }
    return false;
}

/* perf's intel_pt_set_pid_tid_cpu. */
static void set_pid_tid_cpu(lp_ptsynth *p, ptq *q)
{
    if (q->tid == -1 || p->priv[PRIV_HAVE_SCHED_SWITCH]) {
        int32_t t = -1;
        if (q->cpu >= 0 && (size_t)q->cpu < p->ncpu)
            t = p->cur_tid[q->cpu];
        q->have_thread = false;
        q->cur_tid = t;
        if (t == -1)
            q->pid = -1;
    }
    if (!q->have_thread && q->cur_tid != -1)
        q->have_thread = find_pid(p, q->cur_tid, &q->pid);
}

/* ---- code ------------------------------------------------------------------- */

static dso_file *dso_get(lp_ptsynth *p, const char *path)
{
    dso_file *d;

    for (d = p->dsos; d; d = d->next)
        if (strcmp(d->path, path) == 0)
            return d;
    if (!(d = calloc(1, sizeof *d)) || !(d->path = strdup(path))) {
        free(d);
        return NULL;
    }
    d->fd = -2;
    d->next = p->dsos;
    p->dsos = d;
    return d;
}

/* [vdso]: perf reads its own vdso, which is the traced process's too. */
static ssize_t read_vdso(uint64_t off, uint8_t *buf, size_t n)
{
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    uint64_t size = 2 * 4096;

    if (!base || off >= size)
        return -1;
    if (n > size - off)
        n = (size_t)(size - off);
    memcpy(buf, (const void *)(base + off), n);
    return (ssize_t)n;
}

/* perf's try_to_open_dso: a file that cannot be opened marks its data
 * unreadable for good (DSO_DATA_STATUS_ERROR). 0, or -1 if unreadable. */
static int dso_open(dso_file *d)
{
    if (d->error)
        return -1;
    if (strcmp(d->path, "[vdso]") == 0)
        return 0;
    if (d->fd == -2)
        d->fd = open(d->path, O_RDONLY | O_CLOEXEC);
    if (d->fd < 0) {
        d->error = 1;
        return -1;
    }
    return 0;
}

/* dso__data_read_offset: a read past the end fails without marking the
 * file unreadable. */
static ssize_t dso_read(dso_file *d, uint64_t off, uint8_t *buf, size_t n)
{
    if (dso_open(d) < 0)
        return -1;
    if (strcmp(d->path, "[vdso]") == 0)
        return read_vdso(off, buf, n);
    return pread(d->fd, buf, n, (off_t)off);
}

/* dso__type: an ELF file of a known class. */
static bool dso_is_elf(dso_file *d)
{
    uint8_t id[5];

    return dso_read(d, 0, id, sizeof id) == (ssize_t)sizeof id &&
           memcmp(id, "\177ELF", 4) == 0 && (id[4] == 1 || id[4] == 2);
}

/* Where perf opens a file besides the walk, so that a missing file is
 * already marked unreadable when the walk first needs it: then the walk
 * reports it once, not twice (intel_pt_walk_next_insn's
 * DSO_DATA_STATUS_SEEN_ITRACE rule).
 *
 * A [vdso] map coming: machine__findnew_vdso asks the type of the
 * process's file maps (path starting with '/') in address order until
 * one is an ELF file (machine__thread_dso_type). */
static void probe_vdso_mmap(lp_ptsynth *p, const lp_event *ev)
{
    const lp_map *mp;
    dso_file *d;

    if (ev->kind != LP_EV_MMAP || !ev->u.mmap.filename ||
        strcmp(ev->u.mmap.filename, "[vdso]") != 0)
        return;
    for (size_t i = 0; (mp = lp_machine_map_at(p->m, ev->u.mmap.pid, i)); i++)
        if (mp->filename && mp->filename[0] == '/' &&
            (d = dso_get(p, mp->filename)) && dso_is_elf(d))
            return;
}

/* A sample perf script prints without its instruction bytes (recorded
 * samples; synthesized ones of asynchronous branches): on a native
 * machine it reads them at the IP (arch_fetch_insn -> thread__memcpy). */
static void probe_sample_ip(lp_ptsynth *p, int32_t pid, uint64_t ip)
{
    bool kernel = ip >= KERNEL_START;
    const lp_map *mp;
    dso_file *d;

    if (!p->native || !ip)
        return;
    mp = lp_machine_find_map(p->m, (uint32_t)pid, ip,
                             kernel ? LP_CPUMODE_KERNEL : LP_CPUMODE_USER);
    if (mp && mp->filename && (d = dso_get(p, mp->filename)))
        dso_open(d);
}

typedef struct walk_ctx {
    lp_ptsynth *p;
    ptq *q;
} walk_ctx;

static const lp_map *code_map(walk_ctx *w, uint64_t ip)
{
    bool kernel = ip >= KERNEL_START;

    if (!w->q->have_thread) {
        if (!kernel)
            return NULL;
        return lp_machine_find_map(w->p->m, (uint32_t)-1, ip, LP_CPUMODE_KERNEL);
    }
    return lp_machine_find_map(w->p->m, (uint32_t)w->q->pid, ip,
                               kernel ? LP_CPUMODE_KERNEL : LP_CPUMODE_USER);
}

typedef struct map_reader {
    dso_file *d;
    const lp_map *mp;
} map_reader;

static long read_map(void *ctx, uint64_t ip, uint8_t *buf)
{
    const map_reader *m = ctx;

    return (long)dso_read(m->d, ip - m->mp->start + m->mp->pgoff, buf, 16);
}

/* perf's intel_pt_walk_next_insn (without its cache). */
static int walk_code(void *ctx, ptw_insn *in, uint64_t *cnt, uint64_t *ip,
                     uint64_t to_ip, uint64_t max)
{
    walk_ctx *w = ctx;
    map_reader m;
    int rc;

    *cnt = 0;
    in->length = 0;
    if (to_ip && *ip == to_ip)
        return 0;
    do {
        if (!(m.mp = code_map(w, *ip)) || !m.mp->filename ||
            !(m.d = dso_get(w->p, m.mp->filename)))
            return -EINVAL;
        if (m.d->error) { /* perf: reported twice, then a quiet resync */
            if (m.d->seen)
                return -ENOENT;
            m.d->seen = 1;
        }
        rc = pt_walk_straight(read_map, &m, in, cnt, ip, to_ip, max, m.mp->end);
    } while (rc == 1);
    return rc;
}

/* ---- output ------------------------------------------------------------------ */

static out_slot *out_new(lp_ptsynth *p)
{
    out_slot *s = &p->out[(p->out_head + p->out_n) % OUT_SLOTS];

    p->out_n++;
    memset(&s->ev, 0, sizeof s->ev);
    return s;
}

static bool skip_event(lp_ptsynth *p)
{
    return p->o.initial_skip && p->num_events++ < p->o.initial_skip;
}

static void synth_sample(lp_ptsynth *p, ptq *q, const lp_attr *a,
                         uint64_t period)
{
    out_slot *s = out_new(p);
    lp_sample *smp = &s->ev.u.sample;
    const pt_tstack *t = NULL;

    s->ev.kind = LP_EV_SAMPLE;
    s->ev.type = 9;
    s->ev.time = tsc_to_perf(p, q->timestamp);
    smp->attr = a;
    smp->sample_type = a->sample_type;
    smp->id = smp->stream_id = a->ids[0];
    smp->ip = q->state->from_ip;
    smp->addr = q->state->to_ip;
    smp->pid = (uint32_t)q->pid;
    smp->tid = (uint32_t)q->cur_tid;
    smp->cpu = (uint32_t)q->cur_cpu;
    smp->time = s->ev.time;
    smp->period = period;
    smp->repeat = 1;
    s->ev.misc = (smp->ip ? smp->ip : smp->addr) >= KERNEL_START
                     ? LP_CPUMODE_KERNEL : LP_CPUMODE_USER;
    if (a->sample_type & (LP_SAMPLE_BRANCH_STACK | LP_SAMPLE_CALLCHAIN))
        t = q->have_thread ? pt_stacks_find(p->stacks, q->pid, q->cur_tid,
                                            q->cur_cpu) : NULL;
    if (a->sample_type & LP_SAMPLE_CALLCHAIN) {
        smp->callchain_nr = pt_stack_callchain(t, smp->ip, s->chain,
                                               p->o.callchain_sz + 1);
        smp->callchain = s->chain;
    }
    if (a->sample_type & LP_SAMPLE_BRANCH_STACK) {
        smp->branch_nr = pt_stack_branches(p->stacks, t, s->br);
        smp->branches = s->br;
        smp->has_hw_idx = 1;
        smp->hw_idx = (uint64_t)-1;
    }
    p->nr_samples++;
    if (q->state->flags & (SF_ASYNC | SF_ABORT_TX)) /* no instruction bytes */
        probe_sample_ip(p, q->pid, smp->ip);
}

static void synth_error(lp_ptsynth *p, ptq *q, const pt_state *st)
{
    out_slot *s;

    if ((st->err == PT_ERR_OVR && p->o.no_overflow_errors) ||
        (st->err == PT_ERR_LOST && p->o.no_lost_errors))
        return;
    s = out_new(p);
    s->ev.kind = LP_EV_AUXTRACE_ERROR;
    s->ev.type = 72;
    s->ev.time = tsc_to_perf(p, q->timestamp);
    s->err.type = 1;
    s->err.code = (uint32_t)st->err;
    s->err.cpu = q->cur_cpu;
    s->err.pid = q->pid;
    s->err.tid = q->cur_tid;
    s->err.ip = st->from_ip;
    s->err.time = s->ev.time;
    s->err.msg = pt_err_msg(st->err);
    s->ev.u.aux_error = &s->err;
    p->nr_errors++;
}

/* perf's intel_pt_sample for the queue's current state. */
static void sample_state(lp_ptsynth *p, ptq *q)
{
    const pt_state *st = q->state;

    if (!q->have_sample)
        return;
    q->have_sample = false;
    if (p->o.instructions && (st->type & ST_INSTRUCTION) && !skip_event(p)) {
        synth_sample(p, q, &p->insn_attr, st->tot_insn_cnt - q->last_insn_cnt);
        q->last_insn_cnt = st->tot_insn_cnt;
    }
    if (!(st->type & ST_BRANCH))
        return;
    if ((p->o.last_branch || p->o.callchain) && q->have_thread) {
        pt_branch b = {0};
        b.flags = pt_branch_flags(st, &b.insn_len);
        b.from = st->from_ip;
        b.to = st->to_ip;
        b.trace_nr = q->trace_nr;
        if (pt_stack_event(p->stacks, q->pid, q->cur_tid, q->cur_cpu, &b) < 0)
            p->failed = true;
    }
    if (p->o.branches && !skip_event(p))
        synth_sample(p, q, &p->branches_attr, 1);
}

/* ---- queues ------------------------------------------------------------------ */

static int new_decoder(lp_ptsynth *p, ptq *q)
{
    pt_params pp;
    walk_ctx *w = calloc(1, sizeof *w);

    if (!w)
        return -1;
    w->p = p;
    w->q = q;
    memset(&pp, 0, sizeof pp);
    pp.buf = q->data;
    pp.len = q->len;
    pp.ref_timestamp = q->ref;
    pp.return_compression = p->return_compression;
    pp.branch_enable = p->branch_enable;
    pp.mtc_shift = p->mtc_shift;
    pp.tsc_ctc_n = (unsigned)p->priv[PRIV_TSC_CTC_N];
    pp.tsc_ctc_d = (unsigned)p->priv[PRIV_TSC_CTC_D];
    pp.max_non_turbo_ratio = (unsigned)p->priv[PRIV_MAX_NONTURBO_RATIO];
    if (!pp.max_non_turbo_ratio && p->priv[PRIV_TIME_MULT])
        pp.max_non_turbo_ratio =
            (unsigned)((ns_to_ticks(p, 1000000000) + 50000000) / 100000000);
    if (p->o.instructions) {
        pp.period_type = p->o.period_type == LP_ITRACE_PERIOD_INSTRUCTIONS
                             ? PERIOD_INSTRUCTIONS : PERIOD_TICKS;
        pp.period = p->o.period_type == LP_ITRACE_PERIOD_NANOSECS
                        ? ns_to_ticks(p, p->o.period) : p->o.period;
        if (!pp.period) {
            pp.period_type = PERIOD_INSTRUCTIONS;
            pp.period = 1;
        }
    }
    pp.walk = walk_code;
    pp.ctx = w;
    if (!(q->dec = pt_decoder_new(&pp))) {
        free(w);
        return -1;
    }
    q->pid = q->cur_tid = q->cur_cpu = -1;
    q->cur_tid = q->tid;
    q->cur_cpu = q->cpu;
    return 0;
}

/* perf's auxtrace_heap: a binary min-heap whose ties fall out the way
 * perf's do (sift up while the parent is greater; pop moves the smaller
 * child up, the right one on a tie). */
static void heapify(heap_item *h, size_t pos, uint32_t qi, uint64_t ord)
{
    while (pos) {
        size_t parent = (pos - 1) >> 1;
        if (h[parent].ordinal <= ord)
            break;
        h[pos] = h[parent];
        pos = parent;
    }
    h[pos].qi = qi;
    h[pos].ordinal = ord;
}

static void heap_add(lp_ptsynth *p, ptq *q, uint64_t ord)
{
    heapify(p->heap, p->heap_n++, (uint32_t)(q - p->q), ord);
    q->on_heap = true;
}

static void heap_pop(lp_ptsynth *p)
{
    size_t pos = 0, n = p->heap_n, left, right;
    heap_item *h = p->heap;

    if (!n)
        return;
    p->heap_n = --n;
    for (;;) {
        left = (pos << 1) + 1;
        if (left >= n + 1)
            break;
        right = left + 1;
        if (right >= n + 1) {
            h[pos] = h[left];
            return;
        }
        if (h[left].ordinal < h[right].ordinal) {
            h[pos] = h[left];
            pos = left;
        } else {
            h[pos] = h[right];
            pos = right;
        }
    }
    heapify(h, pos, h[n].qi, h[n].ordinal);
}

/* perf's intel_pt_setup_queue: the first state with a timestamp. */
static void setup_queue(lp_ptsynth *p, ptq *q)
{
    const pt_state *st;

    q->setup = true;
    set_pid_tid_cpu(p, q);
    for (;;) {
        st = pt_decode(q->dec);
        if (st->err) {
            if (st->err == PT_ERR_NODATA) {
                q->done = true;
                return;
            }
            continue;
        }
        if (st->timestamp)
            break;
    }
    q->timestamp = st->timestamp;
    q->state = st;
    q->have_sample = true;
    heap_add(p, q, q->timestamp);
}

/* One step of perf's intel_pt_run_decoder: sample the state, decode the
 * next. 0: go on; 1: back on the heap at its new timestamp; 2: no data. */
static int run_step(lp_ptsynth *p, ptq *q)
{
    const pt_state *st;

    sample_state(p, q);
    st = pt_decode(q->dec);
    if (st->err) {
        if (st->err == PT_ERR_NODATA)
            return 2;
        q->timestamp = st->est_timestamp;
        if (p->o.errors)
            synth_error(p, q, st);
        return 0;
    }
    q->state = st;
    q->have_sample = true;
    if ((st->from_ip >= KERNEL_START || !st->from_ip) && st->to_ip &&
        st->to_ip < KERNEL_START)
        q->timestamp = st->est_timestamp;
    else if (st->timestamp > q->timestamp)
        q->timestamp = st->timestamp;
    if (q->timestamp >= p->run_limit)
        return 1; /* back on the heap at its new timestamp */
    return 0;
}

/* perf's intel_pt_process_queues: the queue at the top of the heap runs
 * until its timestamp passes the next queue's (or the target). */
static bool next_run(lp_ptsynth *p)
{
    ptq *top;

    if (!p->heap_n || p->heap[0].ordinal >= p->target)
        return false;
    top = &p->q[p->heap[0].qi];
    heap_pop(p);
    top->on_heap = false;
    p->run_limit = p->heap_n ? p->heap[0].ordinal + 1 : p->target;
    if (p->run_limit > p->target)
        p->run_limit = p->target;
    set_pid_tid_cpu(p, top);
    p->run = top;
    return true;
}

/* Decode until there is output or nothing is left below the target. */
static void pump(lp_ptsynth *p)
{
    while (!p->out_n && p->processing) {
        if (!p->run && !next_run(p)) {
            p->processing = false;
            return;
        }
        int rc = run_step(p, p->run);
        if (rc) {
            if (rc == 1)
                heap_add(p, p->run, p->run->timestamp);
            p->run = NULL;
        }
    }
}

/* ---- the first pass: AUX data and its description --------------------------- */

static ptq *queue_for(lp_ptsynth *p, uint32_t idx)
{
    if (idx > 4096)
        return NULL;
    if (idx >= p->nq) {
        ptq *q = realloc(p->q, (idx + 1) * sizeof *q);
        if (!q)
            return NULL;
        memset(q + p->nq, 0, (idx + 1 - p->nq) * sizeof *q);
        p->q = q;
        p->nq = idx + 1;
    }
    return &p->q[idx];
}

static int add_buffer(lp_ptsynth *p, const lp_event *ev, lp_error *err)
{
    uint64_t size, ref;
    uint32_t idx, tid, cpu;
    ptq *q;

    if (ev->body_size < 40)
        return lp_error_set(err, LP_EFORMAT, "%s: offset 0x%llx: AUXTRACE "
                            "record of %u bytes, expected 48", ev->source,
                            (unsigned long long)ev->offset, ev->body_size + 8);
    memcpy(&size, ev->body, 8);
    memcpy(&ref, ev->body + 16, 8);
    memcpy(&idx, ev->body + 24, 4);
    memcpy(&tid, ev->body + 28, 4);
    memcpy(&cpu, ev->body + 32, 4);
    if (!(q = queue_for(p, idx)))
        return lp_error_set(err, LP_EFORMAT, "%s: offset 0x%llx: AUXTRACE "
                            "index %u, expected at most 4096", ev->source,
                            (unsigned long long)ev->offset, idx);
    if (!q->data) {
        q->ref = ref;
        q->tid = (int32_t)tid;
        q->cpu = (int32_t)cpu;
        q->trace_nr = p->next_buffer_nr + 1;
    }
    p->next_buffer_nr++;
    if (q->len + ev->payload_size > q->cap) {
        size_t cap = q->cap ? q->cap : 65536;
        uint8_t *d;
        while (cap < q->len + ev->payload_size)
            cap *= 2;
        if (!(d = realloc(q->data, cap)))
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        q->data = d;
        q->cap = cap;
    }
    memcpy(q->data + q->len, ev->payload, ev->payload_size);
    q->len += ev->payload_size;
    return 0;
}

static void read_info(lp_ptsynth *p, const lp_event *ev)
{
    uint32_t type;
    size_t n = (ev->body_size - 8) / 8;

    memcpy(&type, ev->body, 4);
    if (type != 1 /* PERF_AUXTRACE_INTEL_PT */ || ev->body_size < 8)
        return;
    if (n > PRIV_COUNT)
        n = PRIV_COUNT;
    memcpy(p->priv, ev->body + 8, n * 8);
    p->have_pt_attr = true; /* the attr is looked up below */
}

static void make_attr(lp_ptsynth *p, lp_attr *a, uint64_t config,
                      uint64_t extra, uint64_t *id, const char *name)
{
    memset(a, 0, sizeof *a);
    a->type = 0; /* PERF_TYPE_HARDWARE */
    a->config = config;
    a->sample_period = 1;
    a->sample_type = (p->pt_attr.sample_type |
                      LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_PERIOD |
                      LP_SAMPLE_TIME | extra) &
                     ~(p->per_cpu ? 0ull : (uint64_t)LP_SAMPLE_CPU);
    a->exclude_kernel = p->pt_attr.exclude_kernel;
    a->exclude_user = p->pt_attr.exclude_user;
    a->sample_id_all = p->pt_attr.sample_id_all;
    a->name = name;
    a->ids = id;
    a->nr_ids = 1;
}

static int configure(lp_ptsynth *p, const lp_file_info *info, lp_error *err)
{
    uint64_t cfg, id, bits;
    size_t i;

    for (i = 0; i < info->nr_attrs; i++)
        if (info->attrs[i].type == p->priv[PRIV_PMU_TYPE] &&
            info->attrs[i].nr_ids)
            break;
    if (i == info->nr_attrs)
        return 1; /* "no selected events with Intel PT data" */
    p->pt_attr = info->attrs[i];
    cfg = p->pt_attr.config;
    for (i = 0; i < info->nr_attrs; i++)
        if (!(info->attrs[i].sample_type & LP_SAMPLE_TIME))
            break;
    if (!p->priv[PRIV_TSC_BIT] || !p->priv[PRIV_CAP_USER_TIME_ZERO] ||
        i < info->nr_attrs || !(cfg & p->priv[PRIV_TSC_BIT]))
        return lp_error_set(err, LP_EUNSUPP, "Intel PT without timestamps "
                            "(timeless decoding) is not supported");
    p->return_compression = !p->priv[PRIV_NORETCOMP_BIT] ||
                            !(cfg & p->priv[PRIV_NORETCOMP_BIT]);
    p->branch_enable = !((cfg & 1) && !(cfg & (1u << 13)));
    p->per_cpu = p->priv[PRIV_PER_CPU_MMAPS] != 0;
    bits = p->priv[PRIV_MTC_FREQ_BITS];
    if (bits) {
        unsigned shift = 0;
        while (!(bits & 1)) {
            bits >>= 1;
            shift++;
        }
        p->mtc_shift = (unsigned)((cfg & p->priv[PRIV_MTC_FREQ_BITS]) >> shift);
    }
    id = p->pt_attr.ids[0] + 1000000000;
    p->synth_ids[0] = id ? id : 1;
    p->synth_ids[1] = p->synth_ids[0] + (p->o.branches ? 1 : 0);
    make_attr(p, &p->branches_attr, 5, LP_SAMPLE_ADDR, &p->synth_ids[0],
              p->pt_attr.exclude_kernel ? "branches:u" : "branches");
    make_attr(p, &p->insn_attr, 1,
              (p->o.last_branch ? LP_SAMPLE_BRANCH_STACK : 0) |
                  (p->o.callchain ? LP_SAMPLE_CALLCHAIN : 0),
              &p->synth_ids[1],
              p->pt_attr.exclude_kernel ? "instructions:u" : "instructions");
    if (p->o.last_branch)
        p->insn_attr.branch_sample_type = LP_BRANCH_HW_INDEX;
    return 0;
}

/* perf script's native_arch: the recording's arch is this machine's. */
static bool is_native(const char *arch)
{
    struct utsname u;

    if (!arch || uname(&u) < 0)
        return false;
    return strcmp(u.machine, arch) == 0 ||
           (strcmp(u.machine, "x86_64") == 0 && strcmp(arch, "i386") == 0);
}

static int first_pass(lp_ptsynth *p, const char *path, lp_error *err)
{
    lp_reader_opts ro = {0};
    const lp_event *ev;
    lp_reader *r;
    int k;

    ro.order = LP_ORDER_FILE;
    ro.skip_payloads = 1;
    if (!(r = lp_reader_open(path, &ro, err)))
        return -1;
    if (lp_reader_info(r)->byte_swapped) {
        lp_reader_close(r);
        return 1;
    }
    p->native = is_native(lp_reader_info(r)->arch);
    while ((k = lp_reader_next(r, &ev, err)) == 1) {
        if (ev->kind != LP_EV_OTHER)
            continue;
        if (ev->type == AUXTRACE_INFO && !p->have_pt_attr)
            read_info(p, ev);
        else if (ev->type == AUXTRACE && p->have_pt_attr &&
                 add_buffer(p, ev, err))
            k = -1;
        if (k < 0)
            break;
    }
    if (k == 0 && p->have_pt_attr)
        k = configure(p, lp_reader_info(r), err);
    else if (k == 0)
        k = 1;
    lp_reader_close(r);
    return k;
}

static int alloc_output(lp_ptsynth *p)
{
    for (unsigned i = 0; i < OUT_SLOTS; i++) {
        if (p->o.last_branch &&
            !(p->out[i].br = calloc(p->o.last_branch_sz, sizeof *p->out[i].br)))
            return -1;
        if (p->o.callchain && !(p->out[i].chain = calloc(p->o.callchain_sz + 1,
                                                         sizeof *p->out[i].chain)))
            return -1;
    }
    p->stacks = pt_stacks_new(p->o.last_branch ? p->o.last_branch_sz : 0,
                              p->o.callchain);
    return p->stacks ? 0 : -1;
}

int lp_ptsynth_open(const char *path, const lp_itrace *o, lp_ptsynth **out,
                    lp_error *err)
{
    lp_ptsynth *p = calloc(1, sizeof *p);
    int rc;

    *out = NULL;
    if (!p)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    p->o = *o;
    rc = first_pass(p, path, err);
    if (rc == 0 && (alloc_output(p) ||
                    !(p->m = lp_machine_new(LP_MACHINE_KEEP_MAPS_ON_EXEC, err))))
        rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    for (size_t i = 0; rc == 0 && i < p->nq; i++)
        if (p->q[i].data && new_decoder(p, &p->q[i]))
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    if (rc == 0 && p->nq && !(p->heap = calloc(p->nq, sizeof *p->heap)))
        rc = lp_error_set(err, LP_ENOMEM, "out of memory");
    if (rc) {
        lp_ptsynth_close(p);
        return rc < 0 ? -1 : 0;
    }
    *out = p;
    return 0;
}

/* ---- the second pass: events in, events out ------------------------------ */

static void set_cur_tid(lp_ptsynth *p, int32_t cpu, int32_t tid)
{
    if (cpu < 0 || cpu > 4096)
        return;
    if ((size_t)cpu >= p->ncpu) {
        int32_t *t = realloc(p->cur_tid, (size_t)(cpu + 1) * sizeof *t);
        if (!t)
            return;
        for (size_t i = p->ncpu; i <= (size_t)cpu; i++)
            t[i] = -1;
        p->cur_tid = t;
        p->ncpu = (size_t)cpu + 1;
    }
    p->cur_tid[cpu] = tid;
}

/* perf's intel_pt_context_switch (without sched_switch tracepoints): a
 * switch-in names the task now on the CPU; with CPU-wide switch records
 * (have_sched_switch 3) a switch-out names the next one. */
static void context_switch(lp_ptsynth *p, const lp_event *ev)
{
    bool out = ev->misc & (1u << 13);
    int32_t pid = (int32_t)ev->sid.pid, tid = (int32_t)ev->sid.tid;
    uint64_t mode = p->priv[PRIV_HAVE_SCHED_SWITCH];

    if (mode != 2 && mode != 3)
        return;
    if (out && mode == 2)
        return;
    if (out) {
        if (ev->type != REC_SWITCH_CPU_WIDE || ev->body_size < 8)
            return;
        memcpy(&pid, ev->body, 4);
        memcpy(&tid, ev->body + 4, 4);
    }
    set_pid(p, pid, tid);
    set_cur_tid(p, (int32_t)ev->sid.cpu, tid);
}

/* What perf's machine and intel_pt_process_event learn from an event,
 * after the queues were decoded up to it. */
static int observe(lp_ptsynth *p, const lp_event *ev, lp_error *err)
{
    probe_vdso_mmap(p, ev);
    if (lp_machine_process_event(p->m, ev, err) < 0)
        return -1;
    switch (ev->kind) {
    case LP_EV_COMM: set_pid(p, (int32_t)ev->u.comm.pid, (int32_t)ev->u.comm.tid); break;
    case LP_EV_FORK: set_pid(p, (int32_t)ev->u.task.pid, (int32_t)ev->u.task.tid); break;
    case LP_EV_MMAP:
        if ((int32_t)ev->u.mmap.pid != -1)
            set_pid(p, (int32_t)ev->u.mmap.pid, (int32_t)ev->u.mmap.tid);
        break;
    case LP_EV_SAMPLE:
        set_pid(p, (int32_t)ev->u.sample.pid, (int32_t)ev->u.sample.tid);
        probe_sample_ip(p, (int32_t)ev->u.sample.pid, ev->u.sample.ip);
        break;
    default: break;
    }
    if (ev->type == REC_ITRACE_START && p->per_cpu && ev->body_size >= 8) {
        int32_t pid, tid;
        memcpy(&pid, ev->body, 4);
        memcpy(&tid, ev->body + 4, 4);
        set_pid(p, pid, tid);
        set_cur_tid(p, (int32_t)ev->sid.cpu, tid);
    }
    if ((ev->type == REC_SWITCH || ev->type == REC_SWITCH_CPU_WIDE) &&
        ev->sid.present)
        context_switch(p, ev);
    return 0;
}

static void setup_queues(lp_ptsynth *p)
{
    for (size_t i = 0; i < p->nq; i++)
        if (p->q[i].dec && !p->q[i].setup)
            setup_queue(p, &p->q[i]);
    p->setup_done = true;
}

/* An AUX record marked truncated is a "lost trace data" error. */
static void aux_lost(lp_ptsynth *p, const lp_event *ev)
{
    uint64_t flags;
    out_slot *s;

    if (ev->type != REC_AUX || ev->body_size < 24 || !p->o.errors ||
        p->o.no_lost_errors)
        return;
    memcpy(&flags, ev->body + 16, 8);
    if (!(flags & AUX_FLAG_TRUNCATED))
        return;
    s = out_new(p);
    s->ev.kind = LP_EV_AUXTRACE_ERROR;
    s->ev.type = 72;
    s->ev.time = ev->time;
    s->err = (lp_auxtrace_error){1, PT_ERR_LOST, (int32_t)ev->sid.cpu,
                                 (int32_t)ev->sid.pid, (int32_t)ev->sid.tid, 0,
                                 ev->time, pt_err_msg(PT_ERR_LOST)};
    s->ev.u.aux_error = &s->err;
    p->nr_errors++;
}

/* Take the next reader event: it waits while the queues are decoded up to
 * its time. 0 at the end of input (then everything is decoded). */
static int intake(lp_ptsynth *p, lp_reader *r, lp_error *err)
{
    const lp_event *ev;
    int k = lp_reader_next(r, &ev, err);

    if (k < 0)
        return -1;
    if (k == 0) {
        if (!p->setup_done)
            setup_queues(p);
        p->at_end = true;
        p->target = UINT64_MAX;
        p->processing = true;
        return 0;
    }
    p->pending = ev;
    p->have_pending = true;
    if (ev->type < 64 && ev->time && ev->time != UINT64_MAX &&
        ev->kind != LP_EV_AUXTRACE_ERROR) {
        uint64_t ts = perf_to_tsc(p, ev->time);
        if (ts) {
            if (!p->setup_done)
                setup_queues(p);
            p->target = ts;
            p->processing = true;
        }
    }
    return 1;
}

int lp_ptsynth_next(lp_ptsynth *p, lp_reader *r, const lp_event **ev,
                    lp_error *err)
{
    for (;;) {
        if (p->failed)
            return lp_error_set(err, LP_ENOMEM, "out of memory (Intel PT "
                                "thread stacks)");
        if (p->out_n) {
            *ev = &p->out[p->out_head].ev;
            p->out_head = (p->out_head + 1) % OUT_SLOTS;
            p->out_n--;
            return 1;
        }
        if (p->processing) {
            pump(p);
            continue;
        }
        if (p->have_pending) {
            p->have_pending = false;
            if (observe(p, p->pending, err) < 0)
                return -1;
            aux_lost(p, p->pending);
            if (p->out_n) { /* the error goes after the event */
                out_slot *s = out_new(p);
                s->ev = *p->pending;
                /* rotate: deliver the event first */
                out_slot tmp = p->out[(p->out_head + p->out_n - 1) % OUT_SLOTS];
                p->out[(p->out_head + p->out_n - 1) % OUT_SLOTS] =
                    p->out[p->out_head];
                p->out[p->out_head] = tmp;
                continue;
            }
            *ev = p->pending;
            return 1;
        }
        if (p->at_end)
            return 0;
        if (intake(p, r, err) < 0)
            return -1;
    }
}

uint64_t lp_ptsynth_nr_errors(const lp_ptsynth *p) { return p->nr_errors; }
uint64_t lp_ptsynth_nr_samples(const lp_ptsynth *p) { return p->nr_samples; }

bool lp_ptsynth_made(const lp_ptsynth *p, const lp_sample *s)
{
    return p && (s->attr == &p->branches_attr || s->attr == &p->insn_attr);
}

size_t lp_ptsynth_attrs(const lp_ptsynth *p, const lp_attr *out[2])
{
    size_t n = 0;

    if (p->o.branches)
        out[n++] = &p->branches_attr;
    if (p->o.instructions)
        out[n++] = &p->insn_attr;
    return n;
}

void lp_ptsynth_close(lp_ptsynth *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->nq; i++) {
        if (p->q[i].dec) {
            free(pt_decoder_ctx(p->q[i].dec));
            pt_decoder_free(p->q[i].dec);
        }
        free(p->q[i].data);
    }
    free(p->q);
    free(p->heap);
    while (p->dsos) {
        dso_file *d = p->dsos;
        p->dsos = d->next;
        if (d->fd >= 0)
            close(d->fd);
        free(d->path);
        free(d);
    }
    pt_stacks_free(p->stacks);
    while (p->tids) {
        tid_pid *t = p->tids;
        p->tids = t->next;
        free(t);
    }
    for (unsigned i = 0; i < OUT_SLOTS; i++) {
        free(p->out[i].br);
        free(p->out[i].chain);
    }
    free(p->cur_tid);
    lp_machine_free(p->m);
    free(p);
}

void lp_auxtrace_error_print(const lp_auxtrace_error *e, FILE *out)
{
    fprintf(out, " %s error type %u", e->type == 1 ? "instruction trace"
                                                    : "unknown", e->type);
    if (e->time)
        fprintf(out, " time %llu.%09llu", (unsigned long long)(e->time / 1000000000u),
                (unsigned long long)(e->time % 1000000000u));
    else
        fprintf(out, " time 0");
    fprintf(out, " cpu %d pid %d tid %d ip %#llx code %u: %s\n", e->cpu,
            e->pid, e->tid, (unsigned long long)e->ip, e->code, e->msg);
}
