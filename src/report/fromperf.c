/*
 * fromperf.c - a report straight from the samples of a perf.data or perf
 * script: each sample's callchain (leaf = the sampled IP, the others
 * return addresses, looked up at their call instruction) is symbolized
 * with the binary loader, every address expanded into its inline frames,
 * and added as one stack. Also counts the sample quality. Owns the
 * address -> frames step and the choice of binaries (--binary by
 * build-id or base name, else the mapped file when it is on disk); not
 * reading (src/reader), process state (src/machine) or DWARF
 * (src/binary).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/machine.h"
#include "lbr2prof/reader.h"
#include "report/internal.h"

#define MAX_CHAIN 127       /* perf's default kernel.perf_event_max_stack */

/* A file seen in the trace and the binary used for it (NULL: none). */
typedef struct pf_file {
    const char *name;       /* key: the mapped file name (machine-owned) */
    lp_binary *bin;         /* owned unless `given` */
    bool given, used;
    char *pseudo;           /* "[basename]" */
    UT_hash_handle hh;
} pf_file;

/* An mmap of a perf script text (its samples carry no pid). */
typedef struct pf_tmap {
    lp_map m;
    char *name;
} pf_tmap;

typedef struct pf_state {
    const lp_report_perf_opts *o;
    const char *trace;
    lp_report *r;
    lp_machine *m;
    lp_binary **given;      /* opened --binary files */
    size_t ngiven;
    pf_file *files;
    pf_tmap *tmaps;
    size_t ntmaps, tcap;
    lp_report_frame *fr;    /* frames of the current sample, root first */
    size_t nfr, frcap;
    uint64_t *addrs;        /* leaf first */
    unsigned *modes;
    size_t nad, adcap;
    lp_report_quality q;
} pf_state;

/* ---- binaries ---------------------------------------------------------- */

static bool same_build_id(lp_binary *b, const lp_map *mp)
{
    const uint8_t *id;
    size_t n = lp_binary_build_id(b, &id);

    return n && mp->build_id_size && n == mp->build_id_size &&
           !memcmp(id, mp->build_id, n);
}

/* --binary matched by build-id, else by base name. */
static lp_binary *match_given(pf_state *s, const lp_map *mp)
{
    const char *bn = basename(mp->filename);
    size_t i;

    for (i = 0; i < s->ngiven; i++)
        if (same_build_id(s->given[i], mp))
            return s->given[i];
    for (i = 0; i < s->ngiven; i++)
        if (!strcmp(basename(lp_binary_path(s->given[i])), bn))
            return s->given[i];
    return NULL;
}

/* b without DWARF but with a build-id: the same binary with its separate
 * debug file DIR/.build-id/xx/yyyy.debug when one exists (as perf and gdb
 * find them), else b itself. */
static lp_binary *with_debug_file(pf_state *s, lp_binary *b)
{
    const char *hex = lp_binary_build_id_hex(b);
    lp_binary_opts bo = s->o->bopts;
    lp_binary *d = NULL;
    char *p = NULL;
    size_t i;

    if (lp_binary_has_dwarf(b) || strlen(hex) < 3 || bo.debug_path)
        return b;
    for (i = 0; !d && i < s->o->ndebug_dirs; i++) {
        if (asprintf(&p, "%s/.build-id/%.2s/%s.debug", s->o->debug_dirs[i],
                     hex, hex + 2) < 0)
            return b;
        if (access(p, R_OK) == 0) {
            bo.debug_path = p;
            d = lp_binary_open(lp_binary_path(b), &bo, NULL);
        }
        free(p);
    }
    if (!d)
        return b;
    lp_binary_close(b);
    return d;
}

/* The mapped file at its recorded path, else next to the trace. */
static lp_binary *open_mapped(pf_state *s, const lp_map *mp)
{
    const char *slash = strrchr(s->trace, '/');
    lp_binary *b = NULL;
    char *p = NULL;

    if (mp->filename[0] == '/' && access(mp->filename, R_OK) == 0)
        b = lp_binary_open(mp->filename, &s->o->bopts, NULL);
    if (!b && slash &&
        asprintf(&p, "%.*s/%s", (int)(slash - s->trace), s->trace,
                 basename(mp->filename)) > 0 && access(p, R_OK) == 0)
        b = lp_binary_open(p, &s->o->bopts, NULL);
    free(p);
    /* A file that is not the one recorded would give wrong symbols. */
    if (b && mp->build_id_size && !same_build_id(b, mp)) {
        lp_binary_close(b);
        b = NULL;
    }
    return b ? with_debug_file(s, b) : NULL;
}

/* "[kernel.kallsyms]", "[vdso]" (perf's own names, cut at the ']'),
 * "[anon]", else "[basename]". */
static int pseudo_name(const lp_map *mp, const char *name, char **out)
{
    const char *rb;

    if (mp->kernel)
        return asprintf(out, "[kernel.kallsyms]");
    if (name[0] == '[' && (rb = strchr(name, ']')))
        return asprintf(out, "%.*s", (int)(rb - name + 1), name);
    if (!name[0] || (mp->anon && name[0] != '/'))
        return asprintf(out, "[anon]");
    return asprintf(out, "[%s]", basename(name));
}

static pf_file *file_for(pf_state *s, const lp_map *mp)
{
    pf_file *f;
    const char *name = mp->filename ? mp->filename : "";

    HASH_FIND_STR(s->files, name, f);
    if (f)
        return f;
    if (!(f = calloc(1, sizeof *f)))
        return NULL;
    f->name = name;
    if (pseudo_name(mp, name, &f->pseudo) < 0) {
        free(f);
        return NULL;
    }
    if (!mp->kernel && !mp->anon && name[0]) {
        f->bin = match_given(s, mp);
        f->given = f->bin != NULL;
        if (!f->bin && s->o->search_mapped)
            f->bin = open_mapped(s, mp);
    }
    HASH_ADD_KEYPTR(hh, s->files, f->name, strlen(f->name), f);
    return f;
}

/* ---- frames ------------------------------------------------------------------- */

static int push(pf_state *s, const lp_report_frame *f)
{
    lp_report_frame *nv;

    if (s->nfr == s->frcap) {
        s->frcap = s->frcap ? s->frcap * 2 : 64;
        if (!(nv = realloc(s->fr, s->frcap * sizeof *nv)))
            return -1;
        s->fr = nv;
    }
    s->fr[s->nfr++] = *f;
    return 0;
}

/* One frame for code without symbols; consecutive equal ones collapse. */
static int push_pseudo(pf_state *s, const char *name)
{
    lp_report_frame f;

    if (s->nfr && s->fr[s->nfr - 1].external &&
        !strcmp(s->fr[s->nfr - 1].func, name))
        return 0;
    memset(&f, 0, sizeof f);
    f.func = name;
    f.external = true;
    return push(s, &f);
}

/* Inline frames of vaddr in b, outermost first; 0 if none. */
static int push_symbolized(pf_state *s, lp_binary *b, uint64_t vaddr)
{
    const lp_frame *fr;
    lp_report_frame f;
    const char *sym;
    size_t n, i;
    bool fs = lp_binary_fs_discriminator(b);

    if (lp_binary_symbolize(b, vaddr, &fr, &n, NULL) == 0 && n > 0) {
        for (i = 0; i < n; i++) {
            memset(&f, 0, sizeof f);
            f.func = fr[i].func;
            f.file = fr[i].file;
            f.start_line = fr[i].start_line;
            f.loc.line = fr[i].line_offset;
            f.loc.disc = lp_disc_base(fr[i].discriminator, fs);
            f.inlined = i > 0;
            if (push(s, &f))
                return -1;
        }
        return 1;
    }
    if ((sym = lp_binary_symbol_name_perf(b, vaddr, NULL))) {
        memset(&f, 0, sizeof f);
        f.func = sym;
        return push(s, &f) ? -1 : 1;
    }
    return 0;
}

static const lp_map *find_map(pf_state *s, const lp_sample *sm, uint64_t a,
                              unsigned mode)
{
    size_t i;

    if (sm->sample_type & LP_SAMPLE_TID)
        return lp_machine_find_map(s->m, sm->pid, a, mode);
    for (i = s->ntmaps; i-- > 0;)
        if (a >= s->tmaps[i].m.start && a < s->tmaps[i].m.end)
            return &s->tmaps[i].m;
    return NULL;
}

/* Frames of address i of the chain (i > 0: a return address). Returns 1
 * symbolized, 0 pseudo frame, 2 unmapped, -1 on OOM. */
static int push_addr(pf_state *s, const lp_sample *sm, size_t i)
{
    const lp_map *mp = find_map(s, sm, s->addrs[i], s->modes[i]);
    uint64_t va, cs;
    pf_file *f;
    int k;

    if (!mp)
        return push_pseudo(s, "[unknown]") ? -1 : 2;
    if (!(f = file_for(s, mp)))
        return -1;
    if (f->bin && lp_binary_map_to_vaddr(f->bin, mp->start, mp->pgoff,
                                         s->addrs[i], &va) == 0) {
        if (i > 0)
            va = lp_binary_call_site(f->bin, va, &cs, NULL) == 1 ? cs : va - 1;
        if ((k = push_symbolized(s, f->bin, va)) != 0) {
            f->used = true;
            return k < 0 ? -1 : 1;
        }
    }
    return push_pseudo(s, f->pseudo) ? -1 : 0;
}

/* ---- samples ---------------------------------------------------------------- */

static int add_addr(pf_state *s, uint64_t a, unsigned mode)
{
    uint64_t *na;
    unsigned *nm;

    if (s->nad == s->adcap) {
        s->adcap = s->adcap ? s->adcap * 2 : 128;
        na = realloc(s->addrs, s->adcap * sizeof *na);
        if (na)
            s->addrs = na;
        nm = realloc(s->modes, s->adcap * sizeof *nm);
        if (nm)
            s->modes = nm;
        if (!na || !nm)
            return -1;
    }
    s->addrs[s->nad] = a;
    s->modes[s->nad++] = mode;
    return 0;
}

/* The sample's addresses, leaf first. *truncated: a corrupt context
 * marker or the depth limit. */
static int collect_addrs(pf_state *s, const lp_event *ev, bool *truncated)
{
    const lp_sample *sm = &ev->u.sample;
    unsigned mode = ev->misc & LP_MISC_CPUMODE_MASK;
    uint64_t i, n = 0;

    s->nad = 0;
    if (!(sm->sample_type & LP_SAMPLE_CALLCHAIN) || !sm->callchain ||
        !sm->callchain_nr)
        return (sm->sample_type & LP_SAMPLE_IP) ? add_addr(s, sm->ip, mode) : 0;
    for (i = 0; i < sm->callchain_nr; i++) {
        uint64_t a = sm->callchain[i];
        if (a >= LP_CONTEXT_MAX) {
            if (a == LP_CONTEXT_KERNEL)
                mode = LP_CPUMODE_KERNEL;
            else if (a == LP_CONTEXT_USER)
                mode = LP_CPUMODE_USER;
            else if (a == LP_CONTEXT_HV)
                mode = LP_CPUMODE_HV;
            else {
                *truncated = true;
                break;
            }
            continue;
        }
        if (add_addr(s, a, mode))
            return -1;
        n++;
    }
    if (n >= MAX_CHAIN)
        *truncated = true;
    return 0;
}

static int do_sample(pf_state *s, const lp_event *ev, lp_error *err)
{
    const lp_sample *sm = &ev->u.sample;
    uint64_t count = sm->repeat ? sm->repeat : 1;
    unsigned mode = ev->misc & LP_MISC_CPUMODE_MASK;
    bool truncated = false, chain;
    size_t i, outer;
    int k = 0, leaf = 0;

    if (s->o->pid >= 0 && (sm->sample_type & LP_SAMPLE_TID) &&
        (int64_t)sm->pid != s->o->pid)
        return 0;
    s->q.samples += count;
    if (mode == LP_CPUMODE_GUEST_KERNEL || mode == LP_CPUMODE_GUEST_USER) {
        s->q.dropped += count;
        return 0;
    }
    if (collect_addrs(s, ev, &truncated))
        goto oom;
    /* Unmapped addresses at the outer end (a frame-pointer walk that ran
     * past the program's first frame) are cut off. */
    for (outer = s->nad; outer > 1 &&
                         !find_map(s, sm, s->addrs[outer - 1], s->modes[outer - 1]);
         outer--)
        truncated = true;
    s->nfr = 0;
    for (i = outer; i-- > 0;) {
        if ((k = push_addr(s, sm, i)) < 0)
            goto oom;
        if (i == 0)
            leaf = k;
        else if (k == 2)
            truncated = true;
    }
    if (s->nfr == 0) {
        s->q.dropped += count;
        return 0;
    }
    chain = (sm->sample_type & LP_SAMPLE_CALLCHAIN) && sm->callchain_nr;
    s->q.used += count;
    s->q.contextless += chain ? 0 : count;
    s->q.truncated += truncated ? count : 0;
    s->q.external += leaf != 1 ? count : 0;
    return lp_report_add_stack(s->r, s->fr, s->nfr, count, err);
oom:
    return lp_error_set(err, LP_ENOMEM, "report: out of memory");
}

static int add_tmap(pf_state *s, const lp_mmap_event *m)
{
    pf_tmap *nv;

    if (s->ntmaps == s->tcap) {
        s->tcap = s->tcap ? s->tcap * 2 : 16;
        if (!(nv = realloc(s->tmaps, s->tcap * sizeof *nv)))
            return -1;
        s->tmaps = nv;
    }
    memset(&s->tmaps[s->ntmaps], 0, sizeof *s->tmaps);
    if (!(s->tmaps[s->ntmaps].name = strdup(m->filename ? m->filename : "")))
        return -1;
    s->tmaps[s->ntmaps].m.start = m->start;
    s->tmaps[s->ntmaps].m.end = m->start + m->len;
    s->tmaps[s->ntmaps].m.pgoff = m->pgoff;
    s->tmaps[s->ntmaps].m.filename = s->tmaps[s->ntmaps].name;
    memcpy(s->tmaps[s->ntmaps].m.build_id, m->build_id, sizeof m->build_id);
    s->tmaps[s->ntmaps].m.build_id_size = m->build_id_size;
    s->ntmaps++;
    return 0;
}

static int read_all(pf_state *s, lp_error *err)
{
    lp_reader_opts ro;
    const lp_file_info *info;
    const lp_reader_stats *st;
    const lp_event *ev;
    lp_reader *rd;
    int k;

    memset(&ro, 0, sizeof ro);
    ro.force_text = s->o->force_text;
    ro.skip_payloads = 1;
    ro.strict = s->o->strict;
    ro.warn = s->o->warn;
    ro.warn_ctx = s->o->warn_ctx;
    if (!(rd = lp_reader_open(s->trace, &ro, err)))
        return -1;
    info = lp_reader_info(rd);
    if (lp_machine_add_build_ids(s->m, info->build_ids, info->nr_build_ids, err)) {
        lp_reader_close(rd);
        return -1;
    }
    while ((k = lp_reader_next(rd, &ev, err)) == 1) {
        if (lp_machine_process_event(s->m, ev, err))
            k = -1;
        else if (ev->kind == LP_EV_MMAP && add_tmap(s, &ev->u.mmap))
            k = lp_error_set(err, LP_ENOMEM, "report: out of memory");
        else if (ev->kind == LP_EV_SAMPLE && do_sample(s, ev, err))
            k = -1;
        if (k < 0)
            break;
    }
    st = lp_reader_stats_get(rd);
    s->q.lost = st->lost_events + st->lost_samples;
    lp_reader_close(rd);
    return k < 0 ? -1 : 0;
}

/* ---- the whole run ------------------------------------------------------------ */

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Source description: the binaries that gave symbols, sorted. */
static int describe(pf_state *s, const char *kind, lp_error *err)
{
    lp_report_source src = {s->trace, kind, NULL, 0};
    const char **v = calloc(HASH_COUNT(s->files) + 1, sizeof *v);
    pf_file *f, *t;
    size_t n = 0, i;
    int rc;

    if (!v)
        return lp_error_set(err, LP_ENOMEM, "report: out of memory");
    HASH_ITER(hh, s->files, f, t)
        if (f->used && f->bin)
            v[n++] = lp_binary_path(f->bin);
    qsort(v, n, sizeof *v, str_cmp);
    for (i = 1, src.nbinaries = n ? 1 : 0; i < n; i++)
        if (strcmp(v[i], v[src.nbinaries - 1]))
            v[src.nbinaries++] = v[i];
    src.binaries = v;
    rc = lp_report_set_source(s->r, &src, err);
    free(v);
    return rc;
}

static void cleanup(pf_state *s)
{
    pf_file *f, *t;
    size_t i;

    HASH_ITER(hh, s->files, f, t) {
        HASH_DEL(s->files, f);
        if (!f->given)
            lp_binary_close(f->bin);
        free(f->pseudo);
        free(f);
    }
    for (i = 0; i < s->ngiven; i++)
        lp_binary_close(s->given[i]);
    for (i = 0; i < s->ntmaps; i++)
        free(s->tmaps[i].name);
    free(s->given);
    free(s->tmaps);
    free(s->fr);
    free(s->addrs);
    free(s->modes);
    lp_machine_free(s->m);
}

lp_report *lp_report_from_perf(const char *path, const lp_report_perf_opts *o,
                               lp_error *err)
{
    pf_state s;
    size_t i;
    int rc = -1;

    memset(&s, 0, sizeof s);
    s.o = o;
    s.trace = path;
    s.q.present = 1;
    if (!(s.r = lp_report_new(LP_REPORT_SAMPLES, err)) ||
        !(s.m = lp_machine_new(LP_MACHINE_KEEP_MAPS_ON_EXEC, err)))
        goto out;
    if (o->nbinaries && !(s.given = calloc(o->nbinaries, sizeof *s.given))) {
        lp_error_set(err, LP_ENOMEM, "report: out of memory");
        goto out;
    }
    for (i = 0; i < o->nbinaries; i++, s.ngiven++)
        if (!(s.given[i] = lp_binary_open(o->binaries[i], &o->bopts, err)))
            goto out;
    if (read_all(&s, err) || describe(&s, o->force_text ? "perf-script-samples"
                                                        : "perf-samples", err))
        goto out;
    lp_report_set_quality(s.r, &s.q);
    rc = lp_report_finish(s.r, err);
out:
    cleanup(&s);
    if (rc) {
        lp_report_free(s.r);
        return NULL;
    }
    return s.r;
}
