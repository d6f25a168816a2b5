/*
 * perfreq.c - perf samples -> Symbolication API v5 requests (what
 * `lbr2prof script --format=symbolicate-v5` prints): one job per process,
 * one stack per sample (its callchain, or its IP), leaf first as the API
 * expects. Each address is kept with a snapshot of the mapping it fell in
 * at sample time; module debug names/ids come from the mapping's build-id
 * (MMAP2 or the perf.data build-id table), else from the ELF file, whose
 * PT_LOAD segments give the module offsets (client.c). Owns the
 * bookkeeping per process and per file; not the reading of events
 * (src/reader), the maps (src/machine) nor the JSON (client.c).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uthash.h>

#include "lbr2prof/machine.h"
#include "symbolicate/internal.h"

/* What is known about one mapped file. */
typedef struct pr_file {
    char *name;                 /* key: the file name as mapped */
    char *path;                 /* the ELF read for it, or NULL */
    char debug_id[34];          /* from that ELF, "" if none */
    char code_id[129];          /* its build-id, upper-case hex */
    lp_sym_load *loads;
    size_t nloads;
    UT_hash_handle hh;
} pr_file;

/* One process: its mapping snapshots and its stacks. */
typedef struct pr_proc {
    uint32_t pid;
    size_t order;               /* first-seen order */
    lp_sym_mapping *maps;
    char (*ids)[34];            /* debug id storage of maps[i] */
    size_t nmaps, mcap;
    uint64_t *addrs;            /* all stacks, concatenated */
    size_t naddrs, acap;
    size_t *ends;               /* end of stack i in addrs */
    size_t nstacks, scap;
    UT_hash_handle hh;
} pr_proc;

struct lp_sym_perf {
    lp_sym_perf_opts o;
    pr_file *files;
    pr_proc *procs;
    size_t nprocs;
    lp_cpu arch;
};

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
    size_t nc;
    void *nv;

    if (need <= *cap)
        return 0;
    nc = *cap ? *cap * 2 : 16;
    while (nc < need)
        nc *= 2;
    if (!(nv = realloc(*v, nc * elem)))
        return -1;
    *v = nv;
    *cap = nc;
    return 0;
}

lp_sym_perf *lp_sym_perf_new(const lp_sym_perf_opts *o, lp_error *err)
{
    lp_sym_perf *p = calloc(1, sizeof *p);

    if (!p) {
        lp_error_set(err, LP_ENOMEM, "request: out of memory");
        return NULL;
    }
    p->o = *o;
    p->arch = o->arch != LP_CPU_UNKNOWN ? o->arch : LP_CPU_X86_64;
    return p;
}

void lp_sym_perf_free(lp_sym_perf *p)
{
    pr_file *f, *ft;
    pr_proc *c, *ct;

    if (!p)
        return;
    HASH_ITER(hh, p->files, f, ft) {
        HASH_DEL(p->files, f);
        free(f->name);
        free(f->path);
        free(f->loads);
        free(f);
    }
    HASH_ITER(hh, p->procs, c, ct) {
        HASH_DEL(p->procs, c);
        free(c->maps);
        free(c->ids);
        free(c->addrs);
        free(c->ends);
        free(c);
    }
    free(p);
}

/* ---- files --------------------------------------------------------------- */

static void hex_upper(const uint8_t *b, size_t n, char *out)
{
    static const char d[] = "0123456789ABCDEF";
    size_t i;

    for (i = 0; i < n; i++) {
        out[2 * i] = d[b[i] >> 4];
        out[2 * i + 1] = d[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* The ELF to read for a mapped file: a --binary with the mapping's
 * build-id, else a --binary with its base name, else the file itself. */
static const char *elf_for(const lp_sym_perf *p, const lp_map *mp)
{
    const char *bn = strrchr(mp->filename, '/'), *gb;
    char want[41];
    lp_bp_elf_id id;
    size_t i;

    bn = bn ? bn + 1 : mp->filename;
    if (mp->build_id_size) {
        hex_upper(mp->build_id, mp->build_id_size, want);
        for (i = 0; i < p->o.nbinaries; i++)
            if (lp_bp_elf_identify(p->o.binaries[i], &id, NULL) == 0 &&
                !strcmp(id.code_id, want))
                return p->o.binaries[i];
    }
    for (i = 0; i < p->o.nbinaries; i++) {
        gb = strrchr(p->o.binaries[i], '/');
        if (!strcmp(gb ? gb + 1 : p->o.binaries[i], bn))
            return p->o.binaries[i];
    }
    return access(mp->filename, R_OK) == 0 ? mp->filename : NULL;
}

static pr_file *file_for(lp_sym_perf *p, const lp_map *mp)
{
    const char *elf;
    lp_bp_elf_id id;
    pr_file *f;

    HASH_FIND_STR(p->files, mp->filename, f);
    if (f)
        return f;
    if (!(f = calloc(1, sizeof *f)) || !(f->name = strdup(mp->filename))) {
        free(f);
        return NULL;
    }
    if ((elf = elf_for(p, mp)) && lp_bp_elf_identify(elf, &id, NULL) == 0 &&
        lp_sym_elf_loads(elf, &f->loads, &f->nloads, NULL) == 0) {
        memcpy(f->debug_id, id.debug_id, sizeof f->debug_id);
        memcpy(f->code_id, id.code_id, sizeof f->code_id);
        if (!(f->path = strdup(elf))) {
            free(f->loads);
            free(f->name);
            free(f);
            return NULL;
        }
    }
    HASH_ADD_KEYPTR(hh, p->files, f->name, strlen(f->name), f);
    return f;
}

/* ---- processes ------------------------------------------------------------ */

static pr_proc *proc_for(lp_sym_perf *p, uint32_t pid)
{
    pr_proc *c;

    HASH_FIND(hh, p->procs, &pid, sizeof pid, c);
    if (c)
        return c;
    if (!(c = calloc(1, sizeof *c)))
        return NULL;
    c->pid = pid;
    c->order = p->nprocs++;
    HASH_ADD(hh, p->procs, pid, sizeof pid, c);
    return c;
}

/* Record the mapping snapshot of mp in c (deduplicated). -1 on OOM. */
static int add_mapping(lp_sym_perf *p, pr_proc *c, const lp_map *mp)
{
    lp_sym_mapping *m;
    pr_file *f;
    size_t i;

    if (mp->kernel || mp->anon || !mp->filename ||
        lp_sym_is_pseudo_mapping(mp->filename))
        return 0; /* the request builder makes these [-1, address] */
    for (i = 0; i < c->nmaps; i++)
        if (c->maps[i].start == mp->start && c->maps[i].len == mp->end - mp->start &&
            c->maps[i].pgoff == mp->pgoff && !strcmp(c->maps[i].filename, mp->filename))
            return 0;
    if (!(f = file_for(p, mp)) ||
        grow((void **)&c->maps, &c->mcap, c->nmaps + 1, sizeof *c->maps) ||
        !(c->ids = realloc(c->ids, c->mcap * sizeof *c->ids)))
        return -1;
    m = &c->maps[c->nmaps];
    memset(m, 0, sizeof *m);
    m->start = mp->start;
    m->len = mp->end - mp->start;
    m->pgoff = mp->pgoff;
    m->filename = f->name;
    m->loads = f->loads;
    m->nloads = f->nloads;
    /* The build-id recorded for this mapping wins over the file's. */
    if (mp->build_id_size)
        lp_bp_debug_id(mp->build_id, mp->build_id_size, c->ids[c->nmaps]);
    else
        memcpy(c->ids[c->nmaps], f->debug_id, sizeof c->ids[0]);
    c->nmaps++;
    return 0;
}

int lp_sym_perf_sample(lp_sym_perf *p, const lp_machine *mc, const lp_event *ev,
                       lp_error *err)
{
    const lp_sample *s = &ev->u.sample;
    unsigned mode = ev->misc & LP_MISC_CPUMODE_MASK;
    const lp_map *mp;
    pr_proc *c;
    uint64_t i, a;
    int one = !(s->sample_type & LP_SAMPLE_CALLCHAIN) || !s->callchain_nr;

    if (ev->kind != LP_EV_SAMPLE || !(s->sample_type & LP_SAMPLE_TID) ||
        mode == LP_CPUMODE_GUEST_KERNEL || mode == LP_CPUMODE_GUEST_USER)
        return 0;
    if (p->o.pid >= 0 && (int64_t)s->pid != p->o.pid)
        return 0;
    if (one && !(s->sample_type & LP_SAMPLE_IP))
        return 0;
    if (!(c = proc_for(p, s->pid)))
        goto oom;
    for (i = 0; i < (one ? 1 : s->callchain_nr); i++) {
        a = one ? s->ip : s->callchain[i];
        if (a >= LP_CONTEXT_MAX) {
            mode = a == LP_CONTEXT_KERNEL ? LP_CPUMODE_KERNEL : LP_CPUMODE_USER;
            continue;
        }
        if ((mp = lp_machine_find_map(mc, s->pid, a, mode)) && add_mapping(p, c, mp))
            goto oom;
        if (grow((void **)&c->addrs, &c->acap, c->naddrs + 1, sizeof *c->addrs))
            goto oom;
        c->addrs[c->naddrs++] = a;
    }
    if (grow((void **)&c->ends, &c->scap, c->nstacks + 1, sizeof *c->ends))
        goto oom;
    c->ends[c->nstacks++] = c->naddrs;
    return 0;
oom:
    return lp_error_set(err, LP_ENOMEM, "request: out of memory");
}

/* ---- output --------------------------------------------------------------- */

static int by_order(const void *a, const void *b)
{
    const pr_proc *x = *(const pr_proc *const *)a, *y = *(const pr_proc *const *)b;

    return x->order < y->order ? -1 : x->order > y->order;
}

size_t lp_sym_perf_unreadable(const lp_sym_perf *p, const char ***names)
{
    const pr_file *f, *t;
    size_t n = 0;

    *names = calloc(HASH_COUNT(p->files) + 1, sizeof **names);
    if (!*names)
        return 0;
    HASH_ITER(hh, p->files, f, t)
        if (!f->path)
            (*names)[n++] = f->name;
    return n;
}

int lp_sym_perf_write(lp_sym_perf *p, FILE *out, lp_error *err)
{
    lp_sym_req *req = lp_sym_req_new(p->arch, p->o.adjust, p->o.mode, err);
    pr_proc **v = calloc(p->nprocs + 1, sizeof *v), *c, *t;
    size_t n = 0, i, k, start;
    char *json;
    int rc = -1;

    if (!req)
        goto done;
    if (!v) {
        lp_error_set(err, LP_ENOMEM, "request: out of memory");
        goto done;
    }
    HASH_ITER(hh, p->procs, c, t)
        v[n++] = c;
    qsort(v, n, sizeof *v, by_order);
    for (i = 0; i < n; i++) {
        c = v[i];
        for (k = 0; k < c->nmaps; k++)
            c->maps[k].debug_id = c->ids[k];
        if (lp_sym_req_begin_job(req, c->maps, c->nmaps, err))
            goto done;
        for (k = 0, start = 0; k < c->nstacks; start = c->ends[k++])
            if (lp_sym_req_add_stack(req, c->addrs + start, c->ends[k] - start, err))
                goto done;
    }
    if (lp_sym_req_count(req) == 0)
        fputs("{\"jobs\":[]}\n", out); /* no sample: still a valid request */
    for (i = 0; i < lp_sym_req_count(req); i++) {
        if (!(json = lp_sym_req_json(req, i, err)))
            goto done;
        fprintf(out, "%s\n", json);
        free(json);
    }
    rc = 0;
done:
    lp_sym_req_free(req);
    free(v);
    return rc;
}
