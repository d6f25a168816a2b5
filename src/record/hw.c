/*
 * hw.c - hardware `lbr2prof record`: perf_event_open with branch-stack
 * sampling (ANY, user) and frame-pointer callchains on every online CPU
 * (inherit, so threads and children are followed), ring buffers drained
 * into perfwrite verbatim, LOST records counted. Fails with one line
 * pointing to --simulate when the PMU cannot sample branches. Does not
 * encode event names (pfm.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lbr2prof/perfwrite.h"
#include "lbr2prof/record.h"

#define RING_PAGES 64 /* data pages per CPU (256 KiB) */

typedef struct ring {
    int fd;
    struct perf_event_mmap_page *meta;
    uint8_t *data;
    size_t size;
} ring;

typedef struct hw {
    const lp_record_opts *o;
    lp_record_stats *st;
    lp_perfwrite *pw;
    ring *rings;
    int nr;
    uint8_t rec[65536];
} hw;

static const char hint[] = "; use `lbr2prof record --simulate -- CMD` for "
                           "exact software LBR";

static int no_branch_sampling(lp_error *err, const char *why)
{
    return lp_error_set(err, LP_EUNSUPP, "this machine's PMU cannot sample "
                        "taken branches (%s)%s", why, hint);
}

static void fill_attr(const lp_record_opts *o, const lp_pfm_event *ev,
                      struct perf_event_attr *a, int is_pid)
{
    memset(a, 0, sizeof *a);
    a->size = sizeof *a;
    a->type = ev->type;
    a->config = ev->config;
    a->config1 = ev->config1;
    a->config2 = ev->config2;
    a->sample_period = o->freq ? o->freq : o->period;
    a->freq = o->freq != 0;
    a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN |
                     PERF_SAMPLE_BRANCH_STACK;
    if (o->user_stack) {
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = LP_X86_REGS_USER_MASK;
        a->sample_stack_user = o->user_stack;
    }
    a->branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->exclude_callchain_kernel = 1;
    a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = 1;
    a->sample_id_all = 1;
    a->build_id = 1;
    a->inherit = 1;
    a->disabled = !is_pid;
    a->enable_on_exec = !is_pid;
    a->wakeup_events = 0;
}

static int open_rings(hw *h, struct perf_event_attr *a, pid_t pid,
                      lp_error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_CONF), c;
    size_t len = (RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);

    h->rings = calloc((size_t)ncpu, sizeof *h->rings);
    if (!h->rings)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (c = 0; c < ncpu; c++) {
        ring *r = &h->rings[h->nr];
        r->fd = (int)syscall(SYS_perf_event_open, a, pid, (int)c, -1,
                             PERF_FLAG_FD_CLOEXEC);
        if (r->fd < 0) {
            if (errno == ENODEV || (errno == EINVAL && c > 0))
                continue; /* offline CPU */
            if (errno == EOPNOTSUPP || errno == ENOENT || errno == EINVAL)
                return no_branch_sampling(err, strerror(errno));
            return lp_error_set(err, LP_EIO, "perf_event_open(cpu %ld): %s%s",
                                c, strerror(errno),
                                errno == EACCES || errno == EPERM
                                    ? " (see /proc/sys/kernel/perf_event_paranoid)"
                                    : "");
        }
        r->meta = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
        if (r->meta == MAP_FAILED) {
            close(r->fd);
            return lp_error_set(err, LP_EIO, "mmap of the perf ring: %s",
                                strerror(errno));
        }
        r->data = (uint8_t *)r->meta + sysconf(_SC_PAGESIZE);
        r->size = len - (size_t)sysconf(_SC_PAGESIZE);
        h->nr++;
    }
    return 0;
}

/* Copy every complete record out of one ring. */
static int drain(hw *h, ring *r, lp_error *err)
{
    uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = r->meta->data_tail;

    while (tail < head) {
        struct perf_event_header hd;
        size_t off = tail % r->size, i;
        for (i = 0; i < sizeof hd; i++)
            ((uint8_t *)&hd)[i] = r->data[(off + i) % r->size];
        if (hd.size < sizeof hd)
            break;
        for (i = 0; i < hd.size; i++)
            h->rec[i] = r->data[(off + i) % r->size];
        if (hd.type == PERF_RECORD_LOST) {
            uint64_t lost;
            memcpy(&lost, h->rec + 16, 8);
            h->st->lost += lost;
        } else if (hd.type == PERF_RECORD_SAMPLE) {
            h->st->samples++;
        }
        if (lp_perfwrite_raw(h->pw, h->rec, hd.size, err))
            return -1;
        tail += hd.size;
    }
    __atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
    return 0;
}

static int drain_all(hw *h, lp_error *err)
{
    int i;

    for (i = 0; i < h->nr; i++)
        if (drain(h, &h->rings[i], err))
            return -1;
    return lp_perfwrite_finished_round(h->pw, err);
}

static void close_rings(hw *h)
{
    size_t len = (RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
    int i;

    for (i = 0; i < h->nr; i++) {
        munmap(h->rings[i].meta, len);
        close(h->rings[i].fd);
    }
    free(h->rings);
}

/* Fork the command, held before exec until the events exist. */
static pid_t fork_held(const lp_record_opts *o, int *go, lp_error *err)
{
    int p[2];
    pid_t pid;
    char c;

    if (pipe2(p, O_CLOEXEC))
        return lp_error_set(err, LP_EIO, "pipe: %s", strerror(errno));
    pid = fork();
    if (pid < 0)
        return lp_error_set(err, LP_EIO, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(p[1]);
        if (read(p[0], &c, 1) != 1)
            _exit(127);
        execvp(o->argv[0], o->argv);
        _exit(127);
    }
    close(p[0]);
    *go = p[1];
    return pid;
}

static int wait_and_drain(hw *h, pid_t child, lp_error *err)
{
    struct pollfd *pf = calloc((size_t)h->nr + 1, sizeof *pf);
    int i, status, done = 0;

    if (!pf)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; i < h->nr; i++) {
        pf[i].fd = h->rings[i].fd;
        pf[i].events = POLLIN;
    }
    while (!done) {
        poll(pf, (nfds_t)h->nr, 100);
        if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
            h->st->exit_status = status;
            done = 1;
        } else if (child <= 0 && kill(-child, 0) != 0) {
            done = 1;
        }
        if (drain_all(h, err)) {
            free(pf);
            return -1;
        }
    }
    free(pf);
    return 0;
}

int lp_hw_record(const lp_record_opts *o, lp_record_stats *st, lp_error *err)
{
    hw h;
    lp_pfm_event ev;
    lp_perfwrite_opts po;
    struct perf_event_attr a;
    const char *name = o->event;
    pid_t child = 0;
    int go = -1, rc;

    memset(&h, 0, sizeof h);
    memset(st, 0, sizeof *st);
    h.o = o;
    h.st = st;
    if ((!name && !(name = lp_pfm_default_event(err))) ||
        lp_pfm_encode(name, &ev, err)) {
        char why[LP_ERRMSG_MAX];
        snprintf(why, sizeof why, "%s", err ? err->msg : "libpfm4");
        return no_branch_sampling(err, why);
    }
    fill_attr(o, &ev, &a, o->pid != 0);
    if (!o->pid && (child = fork_held(o, &go, err)) < 0)
        return -1;
    rc = open_rings(&h, &a, o->pid ? o->pid : child, err);
    memset(&po, 0, sizeof po);
    po.attr.type = a.type;
    po.attr.config = a.config;
    po.attr.sample_period = a.sample_period;
    po.attr.sample_type = a.sample_type;
    memcpy(&po.attr.flags, (uint8_t *)&a + 40, 8);
    po.attr.branch_sample_type = a.branch_sample_type;
    po.attr.sample_regs_user = a.sample_regs_user;
    po.attr.sample_stack_user = a.sample_stack_user;
    po.event_name = ev.fstr;
    po.argc = o->record_argc;
    po.argv = o->record_argv;
    if (rc == 0 && !(h.pw = lp_perfwrite_open(o->output, &po, err)))
        rc = -1;
    if (child > 0) {
        if (rc == 0 && write(go, "g", 1) != 1)
            rc = lp_error_set(err, LP_EIO, "cannot start the command");
        close(go);
        if (rc)
            kill(child, SIGKILL);
    }
    if (rc == 0)
        rc = wait_and_drain(&h, o->pid ? -o->pid : child, err);
    if (rc == 0)
        rc = lp_perfwrite_close(h.pw, err);
    else
        lp_perfwrite_abort(h.pw);
    if (rc && child > 0)
        waitpid(child, NULL, 0);
    close_rings(&h);
    return rc;
}
