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
#include <dirent.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
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
    int *extra;                 /* events that write into a ring */
    int nr_extra;
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
                     PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
    if (!o->no_branch_stack)
        a->sample_type |= PERF_SAMPLE_BRANCH_STACK;
    if (o->user_stack) {
        a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
        a->sample_regs_user = LP_X86_REGS_USER_MASK;
        a->sample_stack_user = o->user_stack;
    }
    if (!o->no_branch_stack)
        a->branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY;
    a->exclude_kernel = 1;
    a->exclude_hv = 1;
    a->exclude_callchain_kernel = 1;
    a->exclude_callchain_user = o->no_user_callchain != 0;
    a->mmap = a->mmap2 = a->comm = a->comm_exec = a->task = 1;
    a->sample_id_all = 1;
    a->build_id = 1;
    a->inherit = 1;
    a->disabled = !is_pid;
    a->enable_on_exec = !is_pid;
    a->wakeup_events = 0;
}

/* perf_event_open for one thread on one CPU: the fd, -1 with `err` set,
 * -2 for an offline CPU, -3 for a thread that is gone. */
static int open_event(struct perf_event_attr *a, pid_t tid, int cpu,
                      int first, lp_error *err)
{
    int fd = (int)syscall(SYS_perf_event_open, a, tid, cpu, -1,
                          PERF_FLAG_FD_CLOEXEC);

    if (fd >= 0)
        return fd;
    if (first && (errno == ENODEV || (errno == EINVAL && cpu > 0)))
        return -2;
    if (errno == ESRCH)
        return -3;
    if (errno == EOPNOTSUPP || errno == ENOENT || errno == EINVAL)
        return no_branch_sampling(err, strerror(errno));
    return lp_error_set(err, LP_EIO, "perf_event_open(tid %d, cpu %d): %s%s",
                        (int)tid, cpu, strerror(errno),
                        errno == EACCES || errno == EPERM
                            ? " (see /proc/sys/kernel/perf_event_paranoid)" : "");
}

/* One ring per CPU, fed by the event of every target thread on that CPU
 * (PERF_EVENT_IOC_SET_OUTPUT). */
static int open_rings(hw *h, struct perf_event_attr *a, const pid_t *tids,
                      int ntids, lp_error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_CONF), c;
    size_t len = (RING_PAGES + 1) * (size_t)sysconf(_SC_PAGESIZE);
    int i;

    h->rings = calloc((size_t)ncpu, sizeof *h->rings);
    h->extra = calloc((size_t)(ncpu * ntids), sizeof *h->extra);
    if (!h->rings || !h->extra)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (c = 0; c < ncpu; c++) {
        ring *r = &h->rings[h->nr];
        for (i = 0; i < ntids; i++) {
            int fd = open_event(a, tids[i], (int)c, i == 0, err);
            if (fd == -2)
                break; /* offline CPU */
            if (fd == -3)
                continue; /* the thread exited meanwhile */
            if (fd < 0)
                return -1;
            if (r->meta) {
                h->extra[h->nr_extra++] = fd;
                if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, r->fd))
                    return lp_error_set(err, LP_EIO, "PERF_EVENT_IOC_SET_OUTPUT: %s",
                                        strerror(errno));
                continue;
            }
            r->fd = fd;
            r->meta = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (r->meta == MAP_FAILED) {
                r->meta = NULL;
                close(fd);
                return lp_error_set(err, LP_EIO, "mmap of the perf ring: %s",
                                    strerror(errno));
            }
            r->data = (uint8_t *)r->meta + sysconf(_SC_PAGESIZE);
            r->size = len - (size_t)sysconf(_SC_PAGESIZE);
        }
        if (r->meta)
            h->nr++;
    }
    if (h->nr == 0)
        return lp_error_set(err, LP_EUSAGE, "no thread to record (the process is gone?)");
    return 0;
}

/* Threads of process `pid` (from /proc/PID/task). */
static int list_tids(pid_t pid, pid_t **out, int *n, lp_error *err)
{
    char dn[64];
    DIR *d;
    struct dirent *e;
    int cap = 16;

    *n = 0;
    snprintf(dn, sizeof dn, "/proc/%d/task", (int)pid);
    if (!(d = opendir(dn)))
        return lp_error_set(err, LP_EUSAGE, "-p %d: no such process", (int)pid);
    *out = malloc((size_t)cap * sizeof **out);
    while (*out && (e = readdir(d))) {
        pid_t *p;
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        if (*n == cap && (p = realloc(*out, (size_t)(cap *= 2) * sizeof *p)))
            *out = p;
        else if (*n == cap)
            break;
        (*out)[(*n)++] = (pid_t)atoi(e->d_name);
    }
    closedir(d);
    if (!*out || *n == 0)
        return lp_error_set(err, LP_EUSAGE, "-p %d: no threads", (int)pid);
    return 0;
}

/* COMM and MMAP2 for what an attached process had before recording. */
static int synth_existing(hw *h, pid_t pid, lp_error *err)
{
    char fn[64], comm[32] = "";
    lp_comm_event c;
    FILE *f;

    snprintf(fn, sizeof fn, "/proc/%d/comm", (int)pid);
    if ((f = fopen(fn, "re"))) {
        if (!fgets(comm, sizeof comm, f))
            comm[0] = 0;
        fclose(f);
    }
    comm[strcspn(comm, "\n")] = 0;
    memset(&c, 0, sizeof c);
    c.pid = c.tid = (uint32_t)pid;
    c.comm = comm;
    if (lp_perfwrite_comm(h->pw, &c, 0, err))
        return -1;
    return lp_perfwrite_proc_maps(h->pw, pid, pid, 0, NULL, NULL, err);
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

/* Drain every ring; a FINISHED_ROUND closes each pass that found data. */
static int drain_all(hw *h, lp_error *err)
{
    uint64_t before = lp_perfwrite_data_size(h->pw);
    int i;

    for (i = 0; i < h->nr; i++)
        if (drain(h, &h->rings[i], err))
            return -1;
    if (lp_perfwrite_data_size(h->pw) == before)
        return 0;
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
    for (i = 0; i < h->nr_extra; i++)
        close(h->extra[i]);
    free(h->rings);
    free(h->extra);
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

/* Drain until the command exits (or, with -p, the process is gone or
 * SIGINT/SIGTERM arrives: they are read from a signalfd while blocked). */
static int wait_and_drain(hw *h, pid_t child, pid_t attached, lp_error *err)
{
    struct pollfd *pf = calloc((size_t)h->nr + 1, sizeof *pf);
    sigset_t set, old;
    int i, status, done = 0, rc = 0, sfd;

    if (!pf)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, &old);
    sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    for (i = 0; i < h->nr; i++) {
        pf[i].fd = h->rings[i].fd;
        pf[i].events = POLLIN;
    }
    pf[h->nr].fd = sfd;
    pf[h->nr].events = POLLIN;
    while (!done && rc == 0) {
        poll(pf, (nfds_t)h->nr + 1, 100);
        if (child > 0 && waitpid(child, &status, WNOHANG) == child) {
            h->st->exit_status = status;
            done = 1;
        } else if (attached > 0 && kill(attached, 0) != 0) {
            done = 1;
        }
        if (sfd >= 0 && (pf[h->nr].revents & POLLIN)) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                if (child > 0)
                    kill(child, (int)si.ssi_signo);
                else
                    done = 1;
            }
        }
        rc = drain_all(h, err);
    }
    if (sfd >= 0)
        close(sfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(pf);
    return rc;
}

/* The attr as perfwrite stores it (the kernel's struct, field by field). */
static void writer_opts(const struct perf_event_attr *a, const char *name,
                        const lp_record_opts *o, lp_perfwrite_opts *po)
{
    memset(po, 0, sizeof *po);
    po->attr.type = a->type;
    po->attr.config = a->config;
    po->attr.sample_period = a->sample_period;
    po->attr.sample_type = a->sample_type;
    memcpy(&po->attr.flags, (const uint8_t *)a + 40, 8);
    po->attr.branch_sample_type = a->branch_sample_type;
    po->attr.sample_regs_user = a->sample_regs_user;
    po->attr.sample_stack_user = a->sample_stack_user;
    po->event_name = name;
    po->argc = o->record_argc;
    po->argv = o->record_argv;
}

/* The threads to open events for: those of -p PID, or the forked (and
 * held) command. */
static int targets(const lp_record_opts *o, pid_t *child, int *go,
                   pid_t **tids, int *ntids, lp_error *err)
{
    if (o->pid)
        return list_tids(o->pid, tids, ntids, err);
    if ((*child = fork_held(o, go, err)) < 0)
        return -1;
    if (!(*tids = malloc(sizeof **tids)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    (*tids)[(*ntids)++] = *child;
    return 0;
}

/* *name (the default taken-branch event when NULL) encoded by libpfm4,
 * which is loaded for this and closed again. A library that is not
 * installed is said as such, not as a PMU that cannot sample. */
static int encode_event(const char **name, lp_pfm_event *ev, lp_error *err)
{
    lp_pfm *pf = lp_pfm_open(err);
    char why[LP_ERRMSG_MAX];
    int rc = -1;

    if (!pf) {
        snprintf(why, sizeof why, "%s", err ? err->msg : "libpfm4");
        return lp_error_set(err, LP_EUNSUPP, "%s%s", why, hint);
    }
    if (*name || (*name = lp_pfm_default_event(pf, err)))
        rc = lp_pfm_encode(pf, *name, ev, err);
    lp_pfm_close(pf);
    if (rc < 0) {
        snprintf(why, sizeof why, "%s", err ? err->msg : "libpfm4");
        return no_branch_sampling(err, why);
    }
    return 0;
}

int lp_hw_record(const lp_record_opts *o, lp_record_stats *st, lp_error *err)
{
    hw h;
    lp_pfm_event ev;
    lp_perfwrite_opts po;
    struct perf_event_attr a;
    const char *name = o->event;
    pid_t child = 0, *tids = NULL;
    int go = -1, rc, ntids = 0;

    memset(&h, 0, sizeof h);
    memset(st, 0, sizeof *st);
    h.o = o;
    h.st = st;
    if (encode_event(&name, &ev, err) < 0)
        return -1;
    fill_attr(o, &ev, &a, o->pid != 0);
    rc = targets(o, &child, &go, &tids, &ntids, err);
    if (rc == 0)
        rc = open_rings(&h, &a, tids, ntids, err);
    free(tids);
    writer_opts(&a, name, o, &po);
    if (rc == 0 && !(h.pw = lp_perfwrite_open(o->output, &po, err)))
        rc = -1;
    if (rc == 0 && o->pid)
        rc = synth_existing(&h, o->pid, err);
    if (child > 0) {
        if (rc == 0 && write(go, "g", 1) != 1)
            rc = lp_error_set(err, LP_EIO, "cannot start the command");
        close(go);
        if (rc)
            kill(child, SIGKILL);
    }
    if (rc == 0)
        rc = wait_and_drain(&h, child, o->pid, err);
    if (rc == 0)
        rc = lp_perfwrite_close(h.pw, err);
    else
        lp_perfwrite_abort(h.pw);
    if (rc && child > 0)
        waitpid(child, NULL, 0);
    close_rings(&h);
    return rc;
}
