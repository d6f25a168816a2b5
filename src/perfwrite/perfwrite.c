/*
 * perfwrite.c - writes perf.data in file mode (layout: docs/record.md and
 * shared perf-data-format.md §3). Owns the byte layout of the header, the
 * attr, records and feature sections; does not decide what is recorded
 * (src/simulate, src/record do).
 *
 * Layout written: [header 104][attr 128 + ids section 16][data ...]
 * [feature table][feature bodies]. The header is rewritten at close, when
 * the data size and the feature bitmap are known.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "lbr2prof/lbr2prof.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/perfwrite.h"

/* ---- data structures --------------------------------------------------- */

enum { HDR_SIZE = 104, ATTR_OFF = HDR_SIZE, IDS_SECT = 16,
       IDS_OFF = ATTR_OFF + LP_PERF_ATTR_SIZE + IDS_SECT,
       MAX_DATA_OFF = IDS_OFF + 8 };

enum { REC_MMAP2 = 10, REC_COMM = 3, REC_EXIT = 4, REC_FORK = 7,
       REC_SAMPLE = 9, REC_LOST = 2, REC_AUX = 11, REC_ITRACE_START = 12,
       REC_FINISHED_ROUND = 68, REC_AUXTRACE_INFO = 70, REC_AUXTRACE = 71 };

enum { FEAT_BUILD_ID = 2, FEAT_HOSTNAME = 3, FEAT_OSRELEASE = 4,
       FEAT_VERSION = 5, FEAT_ARCH = 6, FEAT_NRCPUS = 7, FEAT_CMDLINE = 11,
       FEAT_EVENT_DESC = 12, FEAT_BRANCH_STACK = 15 };

#define SUPPORTED_SAMPLE                                                    \
    (LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_TIME | LP_SAMPLE_PERIOD |     \
     LP_SAMPLE_CALLCHAIN | LP_SAMPLE_BRANCH_STACK | LP_SAMPLE_REGS_USER |   \
     LP_SAMPLE_STACK_USER | LP_SAMPLE_IDENTIFIER)

typedef struct dso_bid {
    char *filename;
    uint8_t id[20];
    uint8_t size;
} dso_bid;

/* A growable byte buffer: records and feature bodies are built in one. */
typedef struct buf {
    uint8_t *p;
    size_t len, cap;
} buf;

struct lp_perfwrite {
    lp_outfile out;
    lp_attr attr;
    uint64_t id;            /* the event's sample id, 0: none */
    uint64_t data_off;      /* where the records start */
    char *event_name;
    char **argv;
    int argc;
    char *hostname, *osrelease, *arch, *version;
    uint64_t data_size;
    uint64_t nr_samples;
    dso_bid *bids;
    size_t nr_bids, cap_bids;
    buf rec;
};

/* ---- byte buffer ------------------------------------------------------- */

static int buf_reserve(buf *b, size_t n)
{
    size_t cap;
    uint8_t *p;

    if (b->len + n <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < b->len + n)
        cap *= 2;
    p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

static int put(buf *b, const void *d, size_t n)
{
    if (buf_reserve(b, n))
        return -1;
    memcpy(b->p + b->len, d, n);
    b->len += n;
    return 0;
}

static int put64(buf *b, uint64_t v) { return put(b, &v, 8); }
static int put32(buf *b, uint32_t v) { return put(b, &v, 4); }

static int put_zero(buf *b, size_t n)
{
    if (buf_reserve(b, n))
        return -1;
    memset(b->p + b->len, 0, n);
    b->len += n;
    return 0;
}

/* NUL-terminated string padded with zeros to a multiple of `align`. */
static int put_padded_str(buf *b, const char *s, size_t align)
{
    size_t n = strlen(s) + 1, padded = (n + align - 1) / align * align;

    return put(b, s, n - 1) || put_zero(b, padded - n + 1);
}

/* perf_header_string: u32 len (padded to 64, NUL included), bytes. */
static int put_hstring(buf *b, const char *s)
{
    size_t n = strlen(s) + 1, padded = (n + 63) / 64 * 64;

    return put32(b, (uint32_t)padded) || put_padded_str(b, s, 64);
}

/* ---- attr encoding ----------------------------------------------------- */

static void encode_attr(const lp_attr *a, uint8_t out[LP_PERF_ATTR_SIZE])
{
    uint32_t size = LP_PERF_ATTR_SIZE;

    memset(out, 0, LP_PERF_ATTR_SIZE);
    memcpy(out + 0, &a->type, 4);
    memcpy(out + 4, &size, 4);
    memcpy(out + 8, &a->config, 8);
    memcpy(out + 16, &a->sample_period, 8);
    memcpy(out + 24, &a->sample_type, 8);
    memcpy(out + 32, &a->read_format, 8);
    memcpy(out + 40, &a->flags, 8);
    memcpy(out + 56, &a->config1, 8);
    memcpy(out + 64, &a->config2, 8);
    memcpy(out + 72, &a->branch_sample_type, 8);
    memcpy(out + 80, &a->sample_regs_user, 8);
    memcpy(out + 88, &a->sample_stack_user, 4);
    memcpy(out + 92, &a->clockid, 4);
    memcpy(out + 96, &a->sample_regs_intr, 8);
}

/* ---- open / strings ---------------------------------------------------- */

static char *dup_or(const char *s, const char *dflt)
{
    return strdup(s ? s : dflt);
}

static int copy_opts(lp_perfwrite *w, const lp_perfwrite_opts *o)
{
    struct utsname u;
    int i;

    if (uname(&u) != 0)
        memset(&u, 0, sizeof u);
    w->attr = o->attr;
    w->id = o->id;
    w->data_off = o->id ? IDS_OFF + 8 : IDS_OFF;
    w->attr.size = LP_PERF_ATTR_SIZE;
    w->attr.ids = NULL;
    w->attr.nr_ids = 0;
    w->attr.name = NULL;
    w->event_name = dup_or(o->event_name, "unknown");
    w->hostname = dup_or(o->hostname, u.nodename);
    w->osrelease = dup_or(o->osrelease, u.release);
    w->arch = dup_or(o->arch, u.machine);
    w->version = dup_or(o->version, "lbr2prof " LP_VERSION);
    w->argv = calloc((size_t)o->argc + 1, sizeof *w->argv);
    if (!w->event_name || !w->hostname || !w->osrelease || !w->arch ||
        !w->version || !w->argv)
        return -1;
    w->argc = o->argc;
    for (i = 0; i < o->argc; i++)
        if (!(w->argv[i] = strdup(o->argv[i])))
            return -1;
    return 0;
}

static void free_writer(lp_perfwrite *w)
{
    size_t i;

    if (!w)
        return;
    for (i = 0; w->argv && (int)i < w->argc; i++)
        free(w->argv[i]);
    for (i = 0; i < w->nr_bids; i++)
        free(w->bids[i].filename);
    free(w->bids);
    free(w->argv);
    free(w->event_name);
    free(w->hostname);
    free(w->osrelease);
    free(w->arch);
    free(w->version);
    free(w->rec.p);
    free(w);
}

lp_perfwrite *lp_perfwrite_open(const char *path, const lp_perfwrite_opts *o,
                                lp_error *err)
{
    lp_perfwrite *w;
    uint8_t zero[MAX_DATA_OFF];

    if (!path || strcmp(path, "-") == 0) {
        lp_error_set(err, LP_EUSAGE,
                     "perf.data output cannot be standard output (the header "
                     "is rewritten at the end); give a file name");
        return NULL;
    }
    if (o->attr.sample_type & ~(uint64_t)SUPPORTED_SAMPLE) {
        lp_error_set(err, LP_EUNSUPP, "%s: sample_type 0x%llx has bits the "
                     "writer does not support (0x%llx)", path,
                     (unsigned long long)o->attr.sample_type,
                     (unsigned long long)(o->attr.sample_type & ~(uint64_t)SUPPORTED_SAMPLE));
        return NULL;
    }
    w = calloc(1, sizeof *w);
    if (!w || copy_opts(w, o)) {
        free_writer(w);
        lp_error_set(err, LP_ENOMEM, "%s: out of memory", path);
        return NULL;
    }
    if (lp_outfile_open(&w->out, path, err)) {
        free_writer(w);
        return NULL;
    }
    memset(zero, 0, sizeof zero); /* header + attr, rewritten at close */
    if (fwrite(zero, 1, w->data_off, w->out.fp) != w->data_off) {
        lp_error_set(err, LP_EIO, "%s: write failed: %s", path, strerror(errno));
        lp_perfwrite_abort(w);
        return NULL;
    }
    return w;
}

/* ---- records ----------------------------------------------------------- */

static int begin_rec(lp_perfwrite *w, uint32_t type, uint16_t misc)
{
    w->rec.len = 0;
    return put32(&w->rec, type) || put32(&w->rec, misc); /* misc + size */
}

static int put_id_trailer(lp_perfwrite *w, uint32_t pid, uint32_t tid,
                          uint64_t time)
{
    if (!(w->attr.flags & LP_ATTR_SAMPLE_ID_ALL))
        return 0;
    if ((w->attr.sample_type & LP_SAMPLE_TID) &&
        (put32(&w->rec, pid) || put32(&w->rec, tid)))
        return -1;
    if ((w->attr.sample_type & LP_SAMPLE_TIME) && put64(&w->rec, time))
        return -1;
    if ((w->attr.sample_type & LP_SAMPLE_IDENTIFIER) && put64(&w->rec, w->id))
        return -1;
    return 0;
}

static int end_rec(lp_perfwrite *w, int oom, lp_error *err)
{
    uint16_t size;

    if (oom)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", w->out.path);
    if (w->rec.len > 0xffff)
        return lp_error_set(err, LP_EUSAGE, "%s: record of %zu bytes exceeds "
                            "the 65535-byte limit of perf records",
                            w->out.path, w->rec.len);
    size = (uint16_t)w->rec.len;
    memcpy(w->rec.p + 6, &size, 2);
    return lp_perfwrite_raw(w, w->rec.p, w->rec.len, err);
}

int lp_perfwrite_raw(lp_perfwrite *w, const void *rec, size_t size,
                     lp_error *err)
{
    if (fwrite(rec, 1, size, w->out.fp) != size)
        return lp_error_set(err, LP_EIO, "%s: write failed: %s", w->out.path,
                            strerror(errno));
    w->data_size += size;
    return 0;
}

int lp_perfwrite_comm(lp_perfwrite *w, const lp_comm_event *c, uint64_t time,
                      lp_error *err)
{
    int oom = begin_rec(w, REC_COMM, (uint16_t)(LP_CPUMODE_USER |
                                    (c->exec ? LP_MISC_COMM_EXEC : 0)));

    oom = oom || put32(&w->rec, c->pid) || put32(&w->rec, c->tid) ||
          put_padded_str(&w->rec, c->comm, 8) ||
          put_id_trailer(w, c->pid, c->tid, time);
    return end_rec(w, oom, err);
}

static int remember_build_id(lp_perfwrite *w, const lp_mmap_event *m)
{
    size_t i;
    dso_bid *b;

    for (i = 0; i < w->nr_bids; i++)
        if (strcmp(w->bids[i].filename, m->filename) == 0)
            return 0;
    if (w->nr_bids == w->cap_bids) {
        size_t cap = w->cap_bids ? 2 * w->cap_bids : 16;
        b = realloc(w->bids, cap * sizeof *b);
        if (!b)
            return -1;
        w->bids = b;
        w->cap_bids = cap;
    }
    b = &w->bids[w->nr_bids];
    if (!(b->filename = strdup(m->filename)))
        return -1;
    memset(b->id, 0, sizeof b->id);
    memcpy(b->id, m->build_id, m->build_id_size);
    b->size = m->build_id_size;
    w->nr_bids++;
    return 0;
}

int lp_perfwrite_mmap2(lp_perfwrite *w, const lp_mmap_event *m,
                       uint64_t time, lp_error *err)
{
    int has_bid = m->build_id_size > 0 && m->build_id_size <= 20;
    uint8_t mid[24] = {0};
    int oom;

    if (has_bid) {
        mid[0] = m->build_id_size;
        memcpy(mid + 4, m->build_id, m->build_id_size);
    } else {
        memcpy(mid, &m->maj, 4);
        memcpy(mid + 4, &m->min, 4);
        memcpy(mid + 8, &m->ino, 8);
        memcpy(mid + 16, &m->ino_generation, 8);
    }
    oom = begin_rec(w, REC_MMAP2, (uint16_t)(LP_CPUMODE_USER |
                           (has_bid ? LP_MISC_MMAP_BUILD_ID : 0)));
    oom = oom || put32(&w->rec, m->pid) || put32(&w->rec, m->tid) ||
          put64(&w->rec, m->start) || put64(&w->rec, m->len) ||
          put64(&w->rec, m->pgoff) || put(&w->rec, mid, sizeof mid) ||
          put32(&w->rec, m->prot) || put32(&w->rec, m->flags) ||
          put_padded_str(&w->rec, m->filename, 8) ||
          put_id_trailer(w, m->pid, m->tid, time);
    oom = oom || (has_bid && remember_build_id(w, m));
    return end_rec(w, oom, err);
}

static int task_rec(lp_perfwrite *w, uint32_t type, const lp_task_event *t,
                    lp_error *err)
{
    int oom = begin_rec(w, type, LP_CPUMODE_USER);

    oom = oom || put32(&w->rec, t->pid) || put32(&w->rec, t->ppid) ||
          put32(&w->rec, t->tid) || put32(&w->rec, t->ptid) ||
          put64(&w->rec, t->time) || put_id_trailer(w, t->pid, t->tid, t->time);
    return end_rec(w, oom, err);
}

int lp_perfwrite_fork(lp_perfwrite *w, const lp_task_event *t, lp_error *err)
{
    return task_rec(w, REC_FORK, t, err);
}

int lp_perfwrite_exit(lp_perfwrite *w, const lp_task_event *t, lp_error *err)
{
    return task_rec(w, REC_EXIT, t, err);
}

int lp_perfwrite_event(lp_perfwrite *w, const lp_event *ev, lp_error *err)
{
    switch (ev->kind) {
    case LP_EV_SAMPLE: return lp_perfwrite_sample(w, &ev->u.sample, ev->misc, err);
    case LP_EV_MMAP: return lp_perfwrite_mmap2(w, &ev->u.mmap, ev->time, err);
    case LP_EV_COMM: return lp_perfwrite_comm(w, &ev->u.comm, ev->time, err);
    case LP_EV_FORK: return lp_perfwrite_fork(w, &ev->u.task, err);
    case LP_EV_EXIT: return lp_perfwrite_exit(w, &ev->u.task, err);
    default: return 0;
    }
}

static int put_sample_tail(lp_perfwrite *w, const lp_sample *s)
{
    uint64_t st = w->attr.sample_type, i;
    buf *b = &w->rec;
    int n;

    if (st & LP_SAMPLE_BRANCH_STACK) {
        if (put64(b, s->branch_nr))
            return -1;
        if ((w->attr.branch_sample_type & LP_BRANCH_HW_INDEX) &&
            put64(b, s->hw_idx))
            return -1;
        for (i = 0; i < s->branch_nr; i++)
            if (put64(b, s->branches[i].from) || put64(b, s->branches[i].to) ||
                put64(b, s->branches[i].flags))
                return -1;
    }
    if (st & LP_SAMPLE_REGS_USER) {
        if (put64(b, s->regs_user ? s->regs_user_abi : 0))
            return -1;
        n = __builtin_popcountll(w->attr.sample_regs_user);
        if (s->regs_user && put(b, s->regs_user, (size_t)n * 8))
            return -1;
    }
    if (st & LP_SAMPLE_STACK_USER) {
        if (put64(b, s->stack_user_size))
            return -1;
        if (s->stack_user_size &&
            (put(b, s->stack_user, s->stack_user_size) ||
             put64(b, s->stack_user_dyn_size)))
            return -1;
    }
    return 0;
}

int lp_perfwrite_sample(lp_perfwrite *w, const lp_sample *s, uint16_t misc,
                        lp_error *err)
{
    uint64_t st = w->attr.sample_type, i;
    buf *b = &w->rec;
    int oom = begin_rec(w, REC_SAMPLE, misc);

    if (!oom && (st & LP_SAMPLE_IDENTIFIER))
        oom = put64(b, w->id);
    if (!oom && (st & LP_SAMPLE_IP))
        oom = put64(b, s->ip);
    if (!oom && (st & LP_SAMPLE_TID))
        oom = put32(b, s->pid) || put32(b, s->tid);
    if (!oom && (st & LP_SAMPLE_TIME))
        oom = put64(b, s->time);
    if (!oom && (st & LP_SAMPLE_PERIOD))
        oom = put64(b, s->period);
    if (!oom && (st & LP_SAMPLE_CALLCHAIN)) {
        oom = put64(b, s->callchain_nr);
        for (i = 0; !oom && i < s->callchain_nr; i++)
            oom = put64(b, s->callchain[i]);
    }
    oom = oom || put_sample_tail(w, s);
    if (end_rec(w, oom, err))
        return -1;
    w->nr_samples++;
    return 0;
}

int lp_perfwrite_lost(lp_perfwrite *w, uint64_t id, uint64_t lost,
                      uint32_t pid, uint32_t tid, uint64_t time,
                      lp_error *err)
{
    int oom = begin_rec(w, REC_LOST, LP_CPUMODE_USER);

    oom = oom || put64(&w->rec, id) || put64(&w->rec, lost) ||
          put_id_trailer(w, pid, tid, time);
    return end_rec(w, oom, err);
}

int lp_perfwrite_itrace_start(lp_perfwrite *w, uint32_t pid, uint32_t tid,
                              uint64_t time, lp_error *err)
{
    int oom = begin_rec(w, REC_ITRACE_START, LP_CPUMODE_USER);

    oom = oom || put32(&w->rec, pid) || put32(&w->rec, tid) ||
          put_id_trailer(w, pid, tid, time);
    return end_rec(w, oom, err);
}

int lp_perfwrite_aux(lp_perfwrite *w, uint64_t aux_offset, uint64_t aux_size,
                     uint64_t flags, uint32_t pid, uint32_t tid, uint64_t time,
                     lp_error *err)
{
    int oom = begin_rec(w, REC_AUX, LP_CPUMODE_USER);

    oom = oom || put64(&w->rec, aux_offset) || put64(&w->rec, aux_size) ||
          put64(&w->rec, flags) || put_id_trailer(w, pid, tid, time);
    return end_rec(w, oom, err);
}

int lp_perfwrite_auxtrace_info(lp_perfwrite *w, uint32_t type,
                               const uint64_t *priv, size_t n, lp_error *err)
{
    int oom = begin_rec(w, REC_AUXTRACE_INFO, 0);

    oom = oom || put32(&w->rec, type) || put32(&w->rec, 0) ||
          put(&w->rec, priv, n * 8);
    return end_rec(w, oom, err);
}

int lp_perfwrite_auxtrace(lp_perfwrite *w, const void *data, uint64_t size,
                          const lp_perfwrite_aux_buf *a, lp_error *err)
{
    uint64_t padded = (size + 7) & ~7ull;
    static const uint8_t zeros[8];
    int oom = begin_rec(w, REC_AUXTRACE, 0);

    oom = oom || put64(&w->rec, padded) || put64(&w->rec, a->offset) ||
          put64(&w->rec, a->reference) || put32(&w->rec, a->idx) ||
          put32(&w->rec, a->tid) || put32(&w->rec, a->cpu) ||
          put32(&w->rec, 0);
    if (end_rec(w, oom, err) || lp_perfwrite_raw(w, data, size, err))
        return -1;
    return padded > size ? lp_perfwrite_raw(w, zeros, padded - size, err) : 0;
}

int lp_perfwrite_finished_round(lp_perfwrite *w, lp_error *err)
{
    int oom = begin_rec(w, REC_FINISHED_ROUND, 0);

    return end_rec(w, oom, err);
}

uint64_t lp_perfwrite_nr_samples(const lp_perfwrite *w)
{
    return w->nr_samples;
}

uint64_t lp_perfwrite_data_size(const lp_perfwrite *w)
{
    return w->data_size;
}

/* ---- feature sections -------------------------------------------------- */

static int feat_build_id(lp_perfwrite *w, buf *b)
{
    size_t i, start;
    uint16_t misc = LP_CPUMODE_USER | 0x8000, size;
    uint32_t type = 0;
    int32_t pid = -1;
    uint8_t pad[3] = {0};

    for (i = 0; i < w->nr_bids; i++) {
        start = b->len;
        if (put32(b, type) || put(b, &misc, 2) || put_zero(b, 2) ||
            put(b, &pid, 4) || put(b, w->bids[i].id, 20) ||
            put(b, &w->bids[i].size, 1) || put(b, pad, 3) ||
            put_padded_str(b, w->bids[i].filename, 64))
            return -1;
        size = (uint16_t)(b->len - start);
        memcpy(b->p + start + 6, &size, 2);
    }
    return 0;
}

static int feat_cmdline(lp_perfwrite *w, buf *b)
{
    int i;

    if (put32(b, (uint32_t)w->argc))
        return -1;
    for (i = 0; i < w->argc; i++)
        if (put_hstring(b, w->argv[i]))
            return -1;
    return 0;
}

static int feat_event_desc(lp_perfwrite *w, buf *b)
{
    uint8_t a[LP_PERF_ATTR_SIZE];

    encode_attr(&w->attr, a);
    return put32(b, 1) || put32(b, LP_PERF_ATTR_SIZE) || put(b, a, sizeof a) ||
           put32(b, w->id ? 1 : 0) || put_hstring(b, w->event_name) ||
           (w->id && put64(b, w->id));
}

static int feat_nrcpus(buf *b)
{
    long n = sysconf(_SC_NPROCESSORS_CONF), on = sysconf(_SC_NPROCESSORS_ONLN);

    return put32(b, (uint32_t)(n > 0 ? n : 1)) ||
           put32(b, (uint32_t)(on > 0 ? on : 1));
}

/* Build feature `id` into `b`; returns -1 on out of memory. */
static int build_feature(lp_perfwrite *w, int id, buf *b)
{
    switch (id) {
    case FEAT_BUILD_ID: return feat_build_id(w, b);
    case FEAT_HOSTNAME: return put_hstring(b, w->hostname);
    case FEAT_OSRELEASE: return put_hstring(b, w->osrelease);
    case FEAT_VERSION: return put_hstring(b, w->version);
    case FEAT_ARCH: return put_hstring(b, w->arch);
    case FEAT_NRCPUS: return feat_nrcpus(b);
    case FEAT_CMDLINE: return feat_cmdline(w, b);
    case FEAT_EVENT_DESC: return feat_event_desc(w, b);
    default: return 0; /* BRANCH_STACK: an empty flag section */
    }
}

static const int features[] = {
    FEAT_BUILD_ID, FEAT_HOSTNAME, FEAT_OSRELEASE, FEAT_VERSION, FEAT_ARCH,
    FEAT_NRCPUS, FEAT_CMDLINE, FEAT_EVENT_DESC, FEAT_BRANCH_STACK,
};
#define NR_FEATURES (sizeof features / sizeof features[0])

/* Feature table + bodies, appended after the data; fills the bitmap. */
static int write_features(lp_perfwrite *w, uint64_t bitmap[4], lp_error *err)
{
    buf table = {0}, bodies = {0};
    int has_br = (w->attr.sample_type & LP_SAMPLE_BRANCH_STACK) != 0;
    uint64_t nfeat = NR_FEATURES - (has_br ? 0 : 1);
    uint64_t base = w->data_off + w->data_size + nfeat * 16, off;
    size_t i;
    int oom = 0;

    for (i = 0; i < NR_FEATURES && !oom; i++) {
        size_t before = bodies.len;
        if (features[i] == FEAT_BRANCH_STACK && !has_br)
            continue;
        oom = build_feature(w, features[i], &bodies);
        off = base + before;
        oom = oom || put64(&table, off) || put64(&table, bodies.len - before);
        bitmap[features[i] / 64] |= 1ull << (features[i] % 64);
    }
    if (!oom && (fwrite(table.p, 1, table.len, w->out.fp) != table.len ||
                 fwrite(bodies.p, 1, bodies.len, w->out.fp) != bodies.len))
        oom = 2;
    free(table.p);
    free(bodies.p);
    if (oom == 1)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", w->out.path);
    if (oom == 2)
        return lp_error_set(err, LP_EIO, "%s: write failed: %s", w->out.path,
                            strerror(errno));
    return 0;
}

static int write_header(lp_perfwrite *w, const uint64_t bitmap[4],
                        lp_error *err)
{
    uint8_t h[MAX_DATA_OFF] = {0}, attr[LP_PERF_ATTR_SIZE];
    uint64_t v;

    memcpy(h, "PERFILE2", 8);
    v = HDR_SIZE; memcpy(h + 8, &v, 8);
    v = LP_PERF_ATTR_SIZE + IDS_SECT; memcpy(h + 16, &v, 8);
    v = ATTR_OFF; memcpy(h + 24, &v, 8);
    v = LP_PERF_ATTR_SIZE + IDS_SECT; memcpy(h + 32, &v, 8);
    v = w->data_off; memcpy(h + 40, &v, 8);
    memcpy(h + 48, &w->data_size, 8);
    memcpy(h + 72, bitmap, 32);
    encode_attr(&w->attr, attr);
    memcpy(h + ATTR_OFF, attr, sizeof attr); /* ids section: {0, 0} or the id */
    if (w->id) {
        v = IDS_OFF; memcpy(h + ATTR_OFF + LP_PERF_ATTR_SIZE, &v, 8);
        v = 8; memcpy(h + ATTR_OFF + LP_PERF_ATTR_SIZE + 8, &v, 8);
        memcpy(h + IDS_OFF, &w->id, 8);
    }
    if (fseek(w->out.fp, 0, SEEK_SET) != 0 ||
        fwrite(h, 1, w->data_off, w->out.fp) != w->data_off)
        return lp_error_set(err, LP_EIO, "%s: cannot rewrite the header: %s",
                            w->out.path, strerror(errno));
    return 0;
}

int lp_perfwrite_close(lp_perfwrite *w, lp_error *err)
{
    uint64_t bitmap[4] = {0};

    if (write_features(w, bitmap, err) || write_header(w, bitmap, err) ||
        lp_outfile_commit(&w->out, err)) {
        lp_perfwrite_abort(w);
        return -1;
    }
    free_writer(w);
    return 0;
}

void lp_perfwrite_abort(lp_perfwrite *w)
{
    if (!w)
        return;
    if (w->out.fp || w->out.tmp)
        lp_outfile_abort(&w->out);
    free_writer(w);
}
