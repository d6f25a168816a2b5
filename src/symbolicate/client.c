/*
 * client.c - the client side of the Symbolication API: perf mappings and
 * sampled stacks -> v5 requests. Owns module offsets (relative to the
 * lowest PT_LOAD vaddr, through the segment that maps the file offset),
 * pseudo-mapping detection, per-job memoryMap building and the split into
 * requests of <= 10 jobs. Not reading perf.data (src/reader).
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolicate/internal.h"

struct lp_sym_req {
    lp_cpu arch;
    int adjust;
    lp_adjust_mode mode;
    json_t *jobs;                  /* all jobs so far */
    json_t *job;                   /* the current one (borrowed) */
    const lp_sym_mapping *maps;    /* the current job's mappings */
    size_t nmaps;
    long *mm_index;                /* mapping -> memoryMap index, -1 unset */
};

int lp_sym_is_pseudo_mapping(const char *f)
{
    size_t n = strlen(f);

    if (!n || f[0] == '[' || !strncmp(f, "//anon", 6) || !strncmp(f, "/dev/zero", 9) ||
        !strncmp(f, "memfd:", 6) || !strncmp(f, "/memfd:", 7) || !strncmp(f, "anon_inode:", 11) ||
        !strncmp(f, "/SYSV", 5))
        return 1;
    return n >= 9 && !strcmp(f + n - 9, "(deleted)");
}

int lp_sym_elf_loads(const char *path, lp_sym_load **loads, size_t *n, lp_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    Elf *e;
    size_t np, i;
    GElf_Phdr ph;

    *loads = NULL;
    *n = 0;
    if (fd < 0)
        return lp_error_set(err, LP_EIO, "%s: cannot open", path);
    elf_version(EV_CURRENT);
    e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &np) != 0) {
        elf_end(e);
        close(fd);
        return lp_error_set(err, LP_EFORMAT, "%s: not an ELF file with program headers", path);
    }
    *loads = calloc(np ? np : 1, sizeof **loads);
    for (i = 0; *loads && i < np; i++)
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
            (*loads)[*n].vaddr = ph.p_vaddr;
            (*loads)[*n].offset = ph.p_offset;
            (*loads)[(*n)++].filesz = ph.p_filesz;
        }
    elf_end(e);
    close(fd);
    return *loads ? 0 : lp_error_set(err, LP_ENOMEM, "%s: out of memory", path);
}

int lp_sym_module_offset(const lp_sym_mapping *m, uint64_t ip, uint64_t *off)
{
    uint64_t fo, base = UINT64_MAX;
    size_t i;
    const lp_sym_load *hit = NULL;

    if (ip < m->start || ip - m->start >= m->len)
        return -1;
    fo = ip - m->start + m->pgoff;
    for (i = 0; i < m->nloads; i++) {
        if (m->loads[i].vaddr < base)
            base = m->loads[i].vaddr;
        /* Segments may share a file page; prefer the one this mapping's
         * pgoff starts (perf maps each segment separately). */
        if (fo >= m->loads[i].offset && fo - m->loads[i].offset < m->loads[i].filesz &&
            (!hit || (m->loads[i].offset & ~(uint64_t)4095) == m->pgoff))
            hit = &m->loads[i];
    }
    if (!hit)
        return -1;
    *off = hit->vaddr + (fo - hit->offset) - base;
    return 0;
}

lp_sym_req *lp_sym_req_new(lp_cpu arch, int adjust, lp_adjust_mode mode, lp_error *err)
{
    lp_sym_req *r = calloc(1, sizeof *r);

    if (!r || !(r->jobs = json_array())) {
        free(r);
        lp_error_set(err, LP_ENOMEM, "request: out of memory");
        return NULL;
    }
    r->arch = arch;
    r->adjust = adjust;
    r->mode = mode;
    return r;
}

void lp_sym_req_free(lp_sym_req *r)
{
    if (!r)
        return;
    json_decref(r->jobs);
    free(r->mm_index);
    free(r);
}

int lp_sym_req_begin_job(lp_sym_req *r, const lp_sym_mapping *maps, size_t n, lp_error *err)
{
    json_t *job = json_pack("{s:[],s:[]}", "memoryMap", "stacks");
    size_t i;

    free(r->mm_index);
    r->mm_index = malloc((n ? n : 1) * sizeof *r->mm_index);
    if (!job || !r->mm_index || json_array_append_new(r->jobs, job)) {
        lp_error_set(err, LP_ENOMEM, "request: out of memory");
        return -1;
    }
    for (i = 0; i < n; i++)
        r->mm_index[i] = -1;
    r->job = job;
    r->maps = maps;
    r->nmaps = n;
    return 0;
}

/* memoryMap index of mapping i, added on first use (deduplicated by
 * name and id: one file mapped in several segments is one module). */
static long mm_index(lp_sym_req *r, size_t i)
{
    json_t *mm = json_object_get(r->job, "memoryMap"), *e;
    const char *f = r->maps[i].filename, *slash = strrchr(f, '/');
    const char *id = r->maps[i].debug_id ? r->maps[i].debug_id : "";
    size_t k;

    if (r->mm_index[i] >= 0)
        return r->mm_index[i];
    f = slash ? slash + 1 : f;
    json_array_foreach(mm, k, e)
        if (!strcmp(json_string_value(json_array_get(e, 0)), f) &&
            !strcmp(json_string_value(json_array_get(e, 1)), id))
            return r->mm_index[i] = (long)k;
    if (json_array_append_new(mm, json_pack("[s,s]", f, id)))
        return -2;
    return r->mm_index[i] = (long)json_array_size(mm) - 1;
}

/* [module_index, module_offset] of one (already adjusted) address. */
static json_t *frame_of(lp_sym_req *r, uint64_t a)
{
    size_t i;
    uint64_t off;
    long k;

    for (i = 0; i < r->nmaps; i++) {
        if (a < r->maps[i].start || a - r->maps[i].start >= r->maps[i].len)
            continue;
        if (lp_sym_is_pseudo_mapping(r->maps[i].filename) ||
            lp_sym_module_offset(&r->maps[i], a, &off) < 0)
            break;
        if ((k = mm_index(r, i)) < -1)
            return NULL;
        return json_pack("[I,I]", (json_int_t)k, (json_int_t)off);
    }
    /* JSON integers here are signed 64-bit (jansson, and the service
     * refuses offsets below -1): a kernel address >= 2^63 becomes -1. */
    return json_pack("[i,I]", -1, a > (uint64_t)INT64_MAX ? (json_int_t)-1
                                                          : (json_int_t)a);
}

int lp_sym_req_add_stack(lp_sym_req *r, const uint64_t *addrs, size_t n, lp_error *err)
{
    json_t *st = json_array(), *fr;
    size_t i;
    uint64_t a;

    if (!r->job)
        return lp_error_set(err, LP_EUSAGE, "request: a stack before any job");
    if (!st || json_array_append_new(json_object_get(r->job, "stacks"), st))
        return lp_error_set(err, LP_ENOMEM, "request: out of memory");
    for (i = 0; i < n; i++) {
        a = addrs[i];
        if (r->adjust && lp_adjust_frame(r->arch, r->mode, i, addrs[i], NULL, &a) < 0)
            a = addrs[i];
        if (!(fr = frame_of(r, a)) || json_array_append_new(st, fr))
            return lp_error_set(err, LP_ENOMEM, "request: out of memory");
    }
    return 0;
}

size_t lp_sym_req_count(const lp_sym_req *r)
{
    size_t n = json_array_size(r->jobs);

    return (n + LP_SYM_MAX_JOBS - 1) / LP_SYM_MAX_JOBS;
}

char *lp_sym_req_json(const lp_sym_req *r, size_t i, lp_error *err)
{
    json_t *jobs = json_array(), *req;
    size_t k, n = json_array_size(r->jobs);
    char *s = NULL;

    for (k = i * LP_SYM_MAX_JOBS; jobs && k < n && k < (i + 1) * LP_SYM_MAX_JOBS; k++)
        json_array_append(jobs, json_array_get(r->jobs, k));
    req = jobs ? json_pack("{s:o}", "jobs", jobs) : NULL;
    if (req)
        s = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!s)
        lp_error_set(err, LP_ENOMEM, "request: out of memory");
    return s;
}
