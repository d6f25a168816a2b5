/*
 * symbols.c - the names perf 6.1's `perf script` prints in its sym field
 * for user code, made the way perf's dso__load makes a file's symbols
 * (symbol.c, symbol-elf.c; read, not copied):
 *
 *  - the candidate files in perf's order: the .gnu_debuglink target (next
 *    to the file, in its .debug/, under /usr/lib/debug), the build-id
 *    cache ($PERF_BUILDID_DIR or ~/.debug: .build-id/xx/rest/elf, /debug),
 *    /usr/lib/debug/PATH.debug and /usr/lib/debug/PATH, /usr/lib/debug/
 *    .build-id/xx/rest.debug, the file itself; each an ELF file whose
 *    build-id is the map's (or the file's own); the first with a .symtab
 *    gives the symbols, the first with a .dynsym the sections and PLT;
 *  - functions, objects and labels of text or data sections that are
 *    loaded, at their file offsets (the section's address - offset taken
 *    off); C++ names demangled;
 *  - a symbol of size 0 reaching the next one (the last: its page and the
 *    next), one of several at an address kept by perf's preference (sized,
 *    not weak, global, fewer leading underscores, longer name, first);
 *  - the PLT as perf 6.1 names it: `NAME@plt` for each relocation of
 *    .rela.plt in its order, from the .plt entry after the header (one
 *    entry's size: .plt's sh_entsize), an empty NAME for IRELATIVE ones;
 *    .plt.sec is not named (perf 6.3 did that).
 *
 * An address is looked up by its file offset in its map, in a tree of
 * perf's shape (symtree.c): where symbols overlap (a size-0 symbol grown
 * over .plt, say), the one found is perf's. Owns that; not
 * the lines (sample.c). Kernel and anonymous maps have no names here
 * (perf would read kallsyms or a vmlinux, or /tmp/perf-PID.map).
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uthash.h>

#include "script/sc_internal.h"
#include "script/symtree.h"
#include "util/demangle.h"

typedef struct ss_dso {
    char *key;                  /* path, then the build-id in hex */
    st_tree t;                  /* its symbols, in perf's tree */
    UT_hash_handle hh;
} ss_dso;

struct sc_symbols {
    ss_dso *dsos;
    lp_demangler dm;
};

/* One candidate file (perf's symsrc). */
typedef struct ss_src {
    int fd;
    Elf *elf;
    void *image;                /* [vdso]: a copy of our own */
    Elf_Scn *symtab, *dynsym;
    size_t symtab_idx, dynsym_idx;
} ss_src;

/* ---- files ------------------------------------------------------------------- */

static bool regular_file(const char *p)
{
    struct stat st;

    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static Elf_Scn *section_by_name(Elf *e, const char *name, GElf_Shdr *sh,
                                size_t *idx)
{
    size_t shstrndx;
    Elf_Scn *s = NULL;

    if (elf_getshdrstrndx(e, &shstrndx))
        return NULL;
    while ((s = elf_nextscn(e, s))) {
        const char *n;
        if (gelf_getshdr(s, sh) && (n = elf_strptr(e, shstrndx, sh->sh_name)) &&
            strcmp(n, name) == 0) {
            if (idx)
                *idx = elf_ndxscn(s);
            return s;
        }
    }
    return NULL;
}

/* The GNU build-id note of e: its length (0: none). */
static size_t read_build_id(Elf *e, uint8_t *id, size_t max)
{
    Elf_Scn *s = NULL;
    GElf_Shdr sh;

    while ((s = elf_nextscn(e, s))) {
        Elf_Data *d;
        size_t off = 0, noff, doff;
        GElf_Nhdr nh;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_NOTE ||
            !(d = elf_getdata(s, NULL)))
            continue;
        while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0)
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
                memcmp((char *)d->d_buf + noff, "GNU", 4) == 0) {
                size_t n = nh.n_descsz < max ? nh.n_descsz : max;
                memcpy(id, (char *)d->d_buf + doff, n);
                return n;
            }
    }
    return 0;
}

static void src_close(ss_src *s)
{
    if (s->elf)
        elf_end(s->elf);
    if (s->fd >= 0)
        close(s->fd);
    free(s->image);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

static void src_sections(ss_src *s)
{
    GElf_Shdr sh;

    s->symtab = section_by_name(s->elf, ".symtab", &sh, &s->symtab_idx);
    if (s->symtab && sh.sh_type != SHT_SYMTAB)
        s->symtab = NULL;
    s->dynsym = section_by_name(s->elf, ".dynsym", &sh, &s->dynsym_idx);
    if (s->dynsym && sh.sh_type != SHT_DYNSYM)
        s->dynsym = NULL;
}

/* perf's symsrc__init: an ELF file, with the build-id `id` if n > 0. */
static int src_open(ss_src *s, const char *path, const uint8_t *id, size_t n)
{
    uint8_t got[64];

    memset(s, 0, sizeof *s);
    if ((s->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0 ||
        !(s->elf = elf_begin(s->fd, ELF_C_READ_MMAP, NULL)) ||
        elf_kind(s->elf) != ELF_K_ELF ||
        (n && (read_build_id(s->elf, got, sizeof got) != n || memcmp(got, id, n)))) {
        src_close(s);
        return -1;
    }
    src_sections(s);
    return 0;
}

/* [vdso]: perf reads its own, which is the traced process's too. */
static int src_vdso(ss_src *s)
{
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    size_t size = 2 * 4096;

    memset(s, 0, sizeof *s);
    s->fd = -1;
    if (!base || !(s->image = malloc(size)))
        return -1;
    memcpy(s->image, (const void *)base, size);
    if (!(s->elf = elf_memory(s->image, size)) || elf_kind(s->elf) != ELF_K_ELF) {
        src_close(s);
        return -1;
    }
    src_sections(s);
    return 0;
}

/* The debug file .gnu_debuglink names, where perf looks for it. */
static char *debuglink(const char *path)
{
    static const char *const fmt[] = {"%.0s%s", "%s/%s", "%s/.debug/%s",
                                      "/usr/lib/debug%s/%s"};
    char dir[4096], *p = NULL;
    const char *slash = strrchr(path, '/');
    GElf_Shdr sh;
    Elf_Data *d;
    ss_src s;

    if (!slash || (size_t)(slash - path) >= sizeof dir || src_open(&s, path, NULL, 0))
        return NULL;
    memcpy(dir, path, (size_t)(slash - path));
    dir[slash - path] = 0;
    Elf_Scn *scn = section_by_name(s.elf, ".gnu_debuglink", &sh, NULL);
    if (scn && (d = elf_getdata(scn, NULL)) && d->d_size &&
        memchr(d->d_buf, 0, d->d_size))
        for (size_t i = 0; i < sizeof fmt / sizeof *fmt && !p; i++) {
            if (asprintf(&p, fmt[i], dir, (const char *)d->d_buf) < 0)
                p = NULL;
            else if (!regular_file(p)) {
                free(p);
                p = NULL;
            }
        }
    src_close(&s);
    return p;
}

/* perf's binary_type_symtab order for a user file (the kernel's and the
 * modules' types do not apply). */
static int candidates(const char *path, const char *hex, char **out)
{
    const char *bdir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
    char cache[4096];
    int n = 0;

    if (bdir && *bdir)
        snprintf(cache, sizeof cache, "%s", bdir);
    else
        snprintf(cache, sizeof cache, "%s/.debug", home ? home : "");
    out[n++] = debuglink(path);
    if (*hex) {
        if (asprintf(&out[n++], "%s/.build-id/%.2s/%s/elf", cache, hex, hex + 2) < 0)
            out[n - 1] = NULL;
        if (asprintf(&out[n++], "%s/.build-id/%.2s/%s/debug", cache, hex, hex + 2) < 0)
            out[n - 1] = NULL;
    }
    if (asprintf(&out[n++], "/usr/lib/debug%s.debug", path) < 0)
        out[n - 1] = NULL;
    if (asprintf(&out[n++], "/usr/lib/debug%s", path) < 0)
        out[n - 1] = NULL;
    if (*hex && asprintf(&out[n++], "/usr/lib/debug/.build-id/%.2s/%s.debug",
                         hex, hex + 2) < 0)
        out[n - 1] = NULL;
    out[n++] = strdup(path);
    return n;
}

/* ---- symbols ------------------------------------------------------------------ */

/* symbol__new + __symbols__insert. */
static int add_sym(sc_symbols *t, ss_dso *d, uint64_t start, uint64_t size,
                   int bind, int type, const char *name)
{
    st_tree *tr = &d->t;
    char *dm = lp_demangle(&t->dm, name);
    st_sym *s;

    if (tr->n == tr->cap) {
        size_t cap = tr->cap ? 2 * tr->cap : 256;
        st_sym *v = cap < INT32_MAX ? realloc(tr->v, cap * sizeof *v) : NULL;
        if (!v) {
            free(dm);
            return -1;
        }
        tr->v = v;
        tr->cap = cap;
    }
    s = &tr->v[tr->n];
    memset(s, 0, sizeof *s);
    s->start = start;
    s->end = start + size;
    s->bind = (uint8_t)bind;
    s->type = (uint8_t)type;
    if (!(s->name = dm ? dm : strdup(name)))
        return -1;
    st_insert(tr, (int32_t)tr->n++);
    return 0;
}

/* A section's name (perf takes the names from the runtime file). */
static bool name_has(Elf *e, const GElf_Shdr *sh, const char *what)
{
    size_t shstrndx;
    const char *n;

    return !elf_getshdrstrndx(e, &shstrndx) &&
           (n = elf_strptr(e, shstrndx, sh->sh_name)) && strstr(n, what);
}

/* dso__load_sym: the symbols of syms (its .symtab, else .dynsym), the
 * sections of runtime where syms has no bits (a debug file). */
static int load_syms(sc_symbols *t, ss_dso *d, ss_src *syms, ss_src *run)
{
    Elf_Scn *scn = syms->symtab ? syms->symtab : syms->dynsym, *sec;
    GElf_Shdr sh, ssh;
    Elf_Data *data;
    GElf_Sym sym;
    Elf *se;

    if (!scn || !gelf_getshdr(scn, &sh) || !(data = elf_getdata(scn, NULL)) ||
        !sh.sh_entsize)
        return 0;
    for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
        const char *name;
        int type;
        bool label;
        if (!gelf_getsym(data, (int)i, &sym) || !sym.st_name ||
            sym.st_shndx == SHN_UNDEF || sym.st_shndx == SHN_ABS)
            continue;
        type = GELF_ST_TYPE(sym.st_info);
        label = type == STT_NOTYPE;
        if (!label && type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_OBJECT)
            continue;
        se = syms->elf;
        if (!(sec = elf_getscn(se, sym.st_shndx)) || !gelf_getshdr(sec, &ssh))
            return 0;           /* perf stops loading there */
        if (!(ssh.sh_flags & SHF_ALLOC))
            continue;
        if (ssh.sh_type == SHT_NOBITS) {
            se = run->elf;
            if (!(sec = elf_getscn(se, sym.st_shndx)) || !gelf_getshdr(sec, &ssh))
                return 0;
        }
        if (label && !name_has(run->elf, &ssh, "text") &&
            !name_has(run->elf, &ssh, "data"))
            continue;
        if (!(name = elf_strptr(syms->elf, sh.sh_link, sym.st_name)))
            continue;
        if (add_sym(t, d, sym.st_value - (ssh.sh_addr - ssh.sh_offset), sym.st_size,
                    GELF_ST_BIND(sym.st_info), type, name))
            return -1;
    }
    return 0;
}

static size_t underscores(const char *s)
{
    size_t n = 0;

    while (s[n] == '_')
        n++;
    return n;
}

/* choose_best_symbol: true if a is kept over b. */
static bool better(const st_sym *a, const st_sym *b)
{
    bool az = a->end == a->start, bz = b->end == b->start;
    size_t ua, ub, la, lb;

    if (az != bz)
        return bz;
    if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
        return b->bind == STB_WEAK;
    if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
        return a->bind == STB_GLOBAL;
    ua = underscores(a->name);
    ub = underscores(b->name);
    if (ua != ub)
        return ua < ub;
    la = strlen(a->name);
    lb = strlen(b->name);
    return la >= lb;
}

/* symbols__fixup_end: a size 0 reaches the next symbol (the last one:
 * the end of its page and one more). */
static void fixup_end(st_tree *t)
{
    int32_t prev = st_first(t), cur;

    if (prev == ST_NIL)
        return;
    for (cur = st_next(t, prev); cur != ST_NIL; prev = cur, cur = st_next(t, cur))
        if (t->v[prev].end == t->v[prev].start)
            t->v[prev].end = t->v[cur].start;
    if (t->v[prev].end == t->v[prev].start)
        t->v[prev].end = ((t->v[prev].start + 4095) & ~4095ull) + 4096;
}

static void drop(st_tree *t, int32_t i)
{
    st_erase(t, i);
    free(t->v[i].name);
    t->v[i].name = NULL;
}

/* symbols__fixup_duplicate: of symbols at one address, one is kept. */
static void fixup_duplicate(st_tree *t)
{
    int32_t cur, nd = st_first(t);

    while (nd != ST_NIL) {
        cur = nd;
        for (;;) {
            if ((nd = st_next(t, cur)) == ST_NIL || t->v[cur].start != t->v[nd].start)
                break;
            if (better(&t->v[cur], &t->v[nd])) {
                drop(t, nd);
                continue;
            }
            nd = st_next(t, cur);
            drop(t, cur);
            break;
        }
    }
}

/* dso__synthesize_plt_symbols as perf 6.1 has it (x86: the entry size is
 * .plt's sh_entsize, the header one entry). */
static int plt_syms(sc_symbols *t, ss_dso *d, ss_src *s)
{
    GElf_Shdr rsh, plt, ssh;
    Elf_Scn *r;
    Elf_Data *rd, *syms;
    uint64_t off;
    size_t n, i;
    int rc = 0;

    if (!s->dynsym)
        return 0;
    if (!(r = section_by_name(s->elf, ".rela.plt", &rsh, NULL)) &&
        !(r = section_by_name(s->elf, ".rel.plt", &rsh, NULL)))
        return 0;
    if (rsh.sh_link != s->dynsym_idx || !rsh.sh_entsize ||
        !section_by_name(s->elf, ".plt", &plt, NULL) ||
        !(rd = elf_getdata(r, NULL)) || !(syms = elf_getdata(s->dynsym, NULL)) ||
        !gelf_getshdr(s->dynsym, &ssh))
        return 0;
    n = rsh.sh_size / rsh.sh_entsize;
    off = plt.sh_offset + plt.sh_entsize;
    for (i = 0; i < n && rc == 0; i++, off += plt.sh_entsize) {
        size_t symi;
        GElf_Rela ra;
        GElf_Rel rl;
        GElf_Sym sym;
        const char *nm = NULL;
        char *dm, buf[1100];
        if (rsh.sh_type == SHT_RELA && gelf_getrela(rd, (int)i, &ra))
            symi = GELF_R_SYM(ra.r_info);
        else if (rsh.sh_type == SHT_REL && gelf_getrel(rd, (int)i, &rl))
            symi = GELF_R_SYM(rl.r_info);
        else
            break;
        if (gelf_getsym(syms, (int)symi, &sym))
            nm = elf_strptr(s->elf, ssh.sh_link, sym.st_name);
        if (!nm)
            nm = "";
        dm = *nm ? lp_demangle(&t->dm, nm) : NULL;
        snprintf(buf, sizeof buf, "%s@plt", dm ? dm : nm);
        free(dm);
        rc = add_sym(t, d, off, plt.sh_entsize, STB_GLOBAL, STT_FUNC, buf);
    }
    return rc;
}

/* dso__load for a user file: the candidates, the symbols, the fixups, the
 * PLT. A file without symbols gets an empty table (names [unknown]). */
static void dso_load(sc_symbols *t, ss_dso *d, const lp_map *mp)
{
    uint8_t id[64];
    size_t nid = mp->build_id_size, i, nc;
    char hex[2 * sizeof id + 1] = "", *cand[8];
    ss_src src[2] = {{.fd = -1}, {.fd = -1}}, *syms = NULL, *run = NULL, *cur;
    ss_src self;

    if (strcmp(mp->filename, "[vdso]") == 0) {
        if (src_vdso(&src[0]) == 0) {
            syms = run = &src[0];
            goto load;
        }
        return;
    }
    memcpy(id, mp->build_id, nid);
    if (!nid && regular_file(mp->filename) && src_open(&self, mp->filename, NULL, 0) == 0) {
        nid = read_build_id(self.elf, id, sizeof id);
        src_close(&self);
    }
    for (i = 0; i < nid; i++)
        sprintf(hex + 2 * i, "%02x", id[i]);
    nc = (size_t)candidates(mp->filename, hex, cand);
    for (i = 0; i < nc && !(syms && run); i++) {
        cur = &src[syms || run ? 1 : 0];
        if (!cand[i] || !regular_file(cand[i]) || src_open(cur, cand[i], id, nid))
            continue;
        bool used = false;
        if (!syms && cur->symtab)
            syms = cur, used = true;
        if (!run && cur->dynsym)
            run = cur, used = true;
        if (!used)
            src_close(cur);
    }
    for (i = 0; i < nc; i++)
        free(cand[i]);
    if (!syms)
        syms = run;
    if (!run)
        run = syms;
    if (!syms)
        return;
load:
    if (load_syms(t, d, syms, run) == 0 && d->t.n) {
        fixup_end(&d->t);
        fixup_duplicate(&d->t);
        (void)plt_syms(t, d, run);
    }
    src_close(&src[0]);
    src_close(&src[1]);
}

/* ---- the table ------------------------------------------------------------------ */

sc_symbols *sc_symbols_new(void)
{
    sc_symbols *t = calloc(1, sizeof *t);

    if (t)
        elf_version(EV_CURRENT);
    return t;
}

void sc_symbols_free(sc_symbols *t)
{
    ss_dso *d, *tmp;

    if (!t)
        return;
    HASH_ITER(hh, t->dsos, d, tmp) {
        HASH_DEL(t->dsos, d);
        for (size_t i = 0; i < d->t.n; i++)
            free(d->t.v[i].name);
        free(d->t.v);
        free(d->key);
        free(d);
    }
    lp_demangler_close(&t->dm);
    free(t);
}

static ss_dso *dso_of(sc_symbols *t, const lp_map *mp)
{
    char key[4096 + 2 * 20 + 2];
    ss_dso *d;
    int n = snprintf(key, sizeof key, "%s", mp->filename);

    for (size_t i = 0; i < mp->build_id_size && n + 3 < (int)sizeof key; i++)
        n += snprintf(key + n, sizeof key - (size_t)n, i ? "%02x" : "|%02x",
                      mp->build_id[i]);
    HASH_FIND_STR(t->dsos, key, d);
    if (d)
        return d;
    if (!(d = calloc(1, sizeof *d)) || !(d->key = strdup(key))) {
        free(d);
        return NULL;
    }
    d->t.root = ST_NIL;
    dso_load(t, d, mp);
    HASH_ADD_KEYPTR(hh, t->dsos, d->key, strlen(d->key), d);
    return d;
}

const char *sc_symbol_name(sc_symbols *t, const lp_map *mp, uint64_t ip)
{
    const ss_dso *d;
    uint64_t off;
    int32_t i;

    if (!t || !mp || mp->kernel || mp->anon || !mp->filename ||
        (mp->filename[0] != '/' && strcmp(mp->filename, "[vdso]") != 0))
        return NULL;
    off = strcmp(mp->filename, "[vdso]") == 0 ? ip - mp->start
                                              : ip - mp->start + mp->pgoff;
    if (!(d = dso_of(t, mp)))
        return NULL;
    i = st_find(&d->t, off);
    return i == ST_NIL ? NULL : d->t.v[i].name;
}
