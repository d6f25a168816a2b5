/*
 * dump.c - ELF file -> lp_bp_module, the logic of Breakpad's dump_syms.
 * Owns: the ELF identity (build-id note, or a hash of .text; load address =
 * lowest PT_LOAD p_vaddr), enumeration of every function, line row and
 * inlined call in the DWARF (libdw, over the units and split units that
 * lbr2prof/dwunits.h gives: .dwo files, a .dwp next to the file,
 * -gsplit-dwarf=single), and PUBLIC records from the symbol table for
 * functions without DWARF. Not the .sym syntax (write.c) nor lookups
 * (module.c).
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>
#include <unistd.h>

#include "lbr2prof/adjust.h"
#include "lbr2prof/breakpad.h"
#include "lbr2prof/dwunits.h"
#include "util/demangle.h"

/* A string -> number table (FILE and INLINE_ORIGIN numbering). */
typedef struct name_num {
    char *name;
    uint32_t num;
    UT_hash_handle hh;
} name_num;

/* One line-table row turned into a range. */
typedef struct line_range {
    uint64_t addr, end;   /* module offsets */
    uint32_t line, file;  /* global FILE number */
} line_range;

/* An executable PT_LOAD: only code inside one is described. */
typedef struct exec_range {
    uint64_t lo, hi;      /* vaddrs */
} exec_range;

#define MAX_EXEC 16

/* State of one dump. */
typedef struct dump_ctx {
    const char *path;
    lp_bp_module *m;
    uint64_t base;        /* lowest PT_LOAD p_vaddr */
    exec_range exec[MAX_EXEC];
    size_t nexec;
    name_num *files, *origins;
    uint32_t nfiles, norigins;
    line_range *lr;       /* current CU's rows, sorted */
    size_t nlr, caplr;
    Dwarf_Files *cu_files;
    size_t cu_nfiles;
    const char *comp_dir;  /* current CU's DW_AT_comp_dir, or NULL */
    lp_dwunits *units;     /* units and split units (their range lists) */
    lp_demangler dm;       /* C++ names (libstdc++ loaded at the first) */
    lp_error *err;
} dump_ctx;

static int intern(dump_ctx *c, name_num **tab, uint32_t *counter, const char *s,
                  int is_file, uint32_t *out)
{
    name_num *e;
    size_t len = strlen(s);

    HASH_FIND(hh, *tab, s, len, e);
    if (e) {
        *out = e->num;
        return 0;
    }
    e = calloc(1, sizeof *e);
    if (!e || !(e->name = strdup(s))) {
        free(e);
        return lp_error_set(c->err, LP_ENOMEM, "%s: out of memory", c->path);
    }
    e->num = (*counter)++;
    HASH_ADD_KEYPTR(hh, *tab, e->name, len, e);
    *out = e->num;
    return is_file ? lp_bp_add_file(c->m, e->num, s, c->err)
                   : lp_bp_add_origin(c->m, e->num, s, c->err);
}

static void free_table(name_num **tab)
{
    name_num *e, *t;

    HASH_ITER(hh, *tab, e, t) {
        HASH_DEL(*tab, e);
        free(e->name);
        free(e);
    }
}

/* ---- identity ---- */

/* Executable segments. Ranges outside them are linker tombstones (code
 * dropped by --gc-sections or folded by ICF gets address 0 or -1). */
static void load_exec(dump_ctx *c, Elf *e)
{
    size_t n, i;
    GElf_Phdr ph;

    c->nexec = 0;
    if (elf_getphdrnum(e, &n) != 0)
        return;
    for (i = 0; i < n && c->nexec < MAX_EXEC; i++)
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            c->exec[c->nexec].lo = ph.p_vaddr;
            c->exec[c->nexec++].hi = ph.p_vaddr + ph.p_memsz;
        }
}

/* Is [lo, hi) code? (No program headers, e.g. a relocatable: accept.) */
static int is_code(const dump_ctx *c, uint64_t lo, uint64_t hi)
{
    size_t i;

    if (hi <= lo || lo < c->base)
        return 0;
    if (!c->nexec)
        return 1;
    for (i = 0; i < c->nexec; i++)
        if (lo >= c->exec[i].lo && lo < c->exec[i].hi)
            return 1;
    return 0;
}

static uint64_t load_base(Elf *e)
{
    size_t n, i;
    GElf_Phdr ph;
    uint64_t base = UINT64_MAX;

    if (elf_getphdrnum(e, &n) != 0)
        return 0;
    for (i = 0; i < n; i++)
        if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < base)
            base = ph.p_vaddr;
    return base == UINT64_MAX ? 0 : base;
}

/* No build-id: XOR the first 4096 bytes of .text in 16-byte chunks. */
static void text_hash(Elf *e, uint8_t out[16])
{
    Elf_Scn *s = NULL;
    GElf_Shdr sh;
    size_t shstr, i;
    Elf_Data *d;
    const char *name;

    memset(out, 0, 16);
    if (elf_getshdrstrndx(e, &shstr) != 0)
        return;
    while ((s = elf_nextscn(e, s))) {
        if (!gelf_getshdr(s, &sh) || !(name = elf_strptr(e, shstr, sh.sh_name)) ||
            strcmp(name, ".text") != 0 || sh.sh_type == SHT_NOBITS)
            continue;
        if (!(d = elf_getdata(s, NULL)) || !d->d_buf)
            return;
        for (i = 0; i < d->d_size && i < 4096; i++)
            out[i % 16] ^= ((const uint8_t *)d->d_buf)[i];
        return;
    }
}

/* A file cut short still opens with libelf; refuse it instead of writing a
 * module with symbols missing. */
static int check_extent(Elf *e, const GElf_Ehdr *eh, const char *path, lp_error *err)
{
    size_t size = 0;
    uint64_t need = eh->e_phoff + (uint64_t)eh->e_phnum * eh->e_phentsize;
    Elf_Scn *s = NULL;
    GElf_Shdr sh;

    if (!elf_rawfile(e, &size))
        return lp_error_set(err, LP_EFORMAT, "%s: cannot read the ELF file", path);
    if (eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize > need)
        need = eh->e_shoff + (uint64_t)eh->e_shnum * eh->e_shentsize;
    while ((s = elf_nextscn(e, s)) && gelf_getshdr(s, &sh))
        if (sh.sh_type != SHT_NOBITS && sh.sh_offset + sh.sh_size > need)
            need = sh.sh_offset + sh.sh_size;
    if (need > size)
        return lp_error_set(err, LP_EFORMAT,
                            "%s: truncated ELF file (%zu bytes, its headers describe %llu)",
                            path, size, (unsigned long long)need);
    return 0;
}

static int identify(Elf *e, const char *path, lp_bp_elf_id *id, lp_error *err)
{
    GElf_Ehdr eh;
    const void *bid = NULL;
    ssize_t n;
    uint8_t h[16];

    if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
        return lp_error_set(err, LP_EFORMAT, "%s: not an ELF file", path);
    if (check_extent(e, &eh, path, err) < 0)
        return -1;
    id->arch = lp_cpu_name(lp_cpu_from_elf(eh.e_machine, eh.e_ident[EI_CLASS]));
    n = dwelf_elf_gnu_build_id(e, &bid);
    if (n > 0 && n <= 64) {
        lp_bp_debug_id(bid, (size_t)n, id->debug_id);
        lp_bp_code_id(bid, (size_t)n, id->code_id);
    } else {
        text_hash(e, h);
        lp_bp_debug_id(h, 16, id->debug_id);
        id->code_id[0] = '\0';
    }
    return 0;
}

static Elf *open_elf(const char *path, int *fd, lp_error *err)
{
    Elf *e;

    elf_version(EV_CURRENT);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) {
        lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
        return NULL;
    }
    e = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
    if (!e) {
        close(*fd);
        lp_error_set(err, LP_EFORMAT, "%s: not an ELF file (%s)", path, elf_errmsg(-1));
    }
    return e;
}

int lp_bp_elf_identify(const char *path, lp_bp_elf_id *id, lp_error *err)
{
    int fd, r;
    Elf *e = open_elf(path, &fd, err);

    if (!e)
        return -1;
    r = identify(e, path, id, err);
    elf_end(e);
    close(fd);
    return r;
}

/* ---- names ---- */

/* The function name of a subprogram/inlined DIE, following
 * abstract_origin/specification: the linkage name, demangled when it is an
 * Itanium name (kept as is otherwise, e.g. "bar.__uniq.123", which profiles
 * need), else DW_AT_name. *owned is set when the result must be freed. */
static const char *die_name(dump_ctx *c, Dwarf_Die *die, char **owned)
{
    Dwarf_Attribute a;
    const char *ln = NULL, *n;
    char *d;

    *owned = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
        ln = dwarf_formstring(&a);
    if (ln && (d = lp_demangle(&c->dm, ln)))
        return *owned = d;
    if (ln)
        return ln;
    n = dwarf_attr_integrate(die, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
    return n ? n : "<name omitted>";
}

/* ---- file names ---- */

/* FILE number of a source path from libdw. libdw joins an entry with its
 * include directory but leaves the result relative when that directory is
 * relative; like llvm-symbolizer (and dump_syms), such paths are then
 * taken relative to the CU's comp_dir: "../sysdeps/x.h" in comp_dir
 * "./stdlib" is "./stdlib/../sysdeps/x.h". */
static int intern_file(dump_ctx *c, const char *src, uint32_t *num)
{
    size_t n = c->comp_dir ? strlen(c->comp_dir) : 0;
    char *joined = NULL;
    int r;

    if (!src)
        src = "<unknown>";
    else if (n && src[0] != '/' && !(strncmp(src, c->comp_dir, n) == 0 && src[n] == '/') &&
             asprintf(&joined, "%s%s%s", c->comp_dir, c->comp_dir[n - 1] == '/' ? "" : "/",
                      src) < 0)
        return lp_error_set(c->err, LP_ENOMEM, "%s: out of memory", c->path);
    r = intern(c, &c->files, &c->nfiles, joined ? joined : src, 1, num);
    free(joined);
    return r;
}

/* ---- line table ---- */

static int cmp_lr(const void *a, const void *b)
{
    const line_range *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int load_lines(dump_ctx *c, Dwarf_Die *cu)
{
    Dwarf_Lines *lines;
    Dwarf_Line *l, *nx;
    size_t n, i;
    Dwarf_Addr a, b;
    bool end;
    int ln;
    const char *src;
    line_range *r;

    c->nlr = 0;
    if (dwarf_getsrclines(cu, &lines, &n) != 0)
        return 0; /* a CU without a line table: functions without lines */
    for (i = 0; i + 1 < n; i++) {
        l = dwarf_onesrcline(lines, i);
        nx = dwarf_onesrcline(lines, i + 1);
        if (!l || !nx || dwarf_lineendsequence(l, &end) != 0 || end ||
            dwarf_lineaddr(l, &a) != 0 || dwarf_lineaddr(nx, &b) != 0 || !is_code(c, a, b))
            continue;
        if (c->nlr == c->caplr) {
            size_t ncap = c->caplr ? c->caplr * 2 : 256;
            line_range *p = realloc(c->lr, ncap * sizeof *p);
            if (!p)
                return lp_error_set(c->err, LP_ENOMEM, "%s: out of memory", c->path);
            c->lr = p;
            c->caplr = ncap;
        }
        r = &c->lr[c->nlr];
        r->addr = a - c->base;
        r->end = b - c->base;
        r->line = dwarf_lineno(l, &ln) == 0 && ln > 0 ? (uint32_t)ln : 0;
        src = dwarf_linesrc(l, NULL, NULL);
        if (intern_file(c, src, &r->file) < 0)
            return -1;
        c->nlr++;
    }
    if (c->nlr > 1)
        qsort(c->lr, c->nlr, sizeof *c->lr, cmp_lr);
    return 0;
}

/* Add the line records of [lo, hi), clipped to it. */
static int add_lines(dump_ctx *c, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = c->nlr, mid;
    lp_bp_line l;

    while (a < b) { /* first range ending after lo */
        mid = a + (b - a) / 2;
        if (c->lr[mid].end <= lo)
            a = mid + 1;
        else
            b = mid;
    }
    for (; a < c->nlr && c->lr[a].addr < hi; a++) {
        if (c->lr[a].end <= lo)
            continue;
        l.addr = c->lr[a].addr > lo ? c->lr[a].addr : lo;
        l.size = (c->lr[a].end < hi ? c->lr[a].end : hi) - l.addr;
        l.line = c->lr[a].line;
        l.file = c->lr[a].file;
        if (lp_bp_add_line(c->m, &l, c->err) < 0)
            return -1;
    }
    return 0;
}

/* ---- functions and inlines ---- */

static uint32_t call_file(dump_ctx *c, Dwarf_Die *die)
{
    Dwarf_Attribute a;
    Dwarf_Word idx;
    const char *s;
    uint32_t num = 0;

    if (!dwarf_attr(die, DW_AT_call_file, &a) || dwarf_formudata(&a, &idx) != 0 ||
        !c->cu_files || idx >= c->cu_nfiles ||
        !(s = dwarf_filesrc(c->cu_files, idx, NULL, NULL)))
        s = NULL;
    intern_file(c, s, &num);
    return num;
}

static int walk_inlines(dump_ctx *c, Dwarf_Die *parent, uint32_t depth);

static int add_inline(dump_ctx *c, Dwarf_Die *die, uint32_t depth)
{
    lp_bp_inline in = {0};
    Dwarf_Attribute a;
    Dwarf_Word w;
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    char *owned;
    const char *name = die_name(c, die, &owned);
    int r = intern(c, &c->origins, &c->norigins, name, 0, &in.origin);

    free(owned);
    if (r < 0)
        return -1;
    in.depth = depth;
    in.call_line = dwarf_attr(die, DW_AT_call_line, &a) && dwarf_formudata(&a, &w) == 0
                       ? (uint32_t)w : 0;
    in.call_file = call_file(c, die);
    while ((off = lp_dwunits_ranges(c->units, die, off, &base, &lo, &hi)) > 0) {
        if (!is_code(c, lo, hi))
            continue;
        in.addr = lo - c->base;
        in.size = hi - lo;
        if (lp_bp_add_inline(c->m, &in, c->err) < 0)
            return -1;
    }
    return walk_inlines(c, die, depth + 1);
}

/* Inlined calls below `parent` (through lexical blocks), at `depth`. */
static int walk_inlines(dump_ctx *c, Dwarf_Die *parent, uint32_t depth)
{
    Dwarf_Die ch;
    int tag;

    if (dwarf_child(parent, &ch) != 0)
        return 0;
    do {
        tag = dwarf_tag(&ch);
        if (tag == DW_TAG_inlined_subroutine) {
            if (add_inline(c, &ch, depth) < 0)
                return -1;
        } else if (tag == DW_TAG_lexical_block) {
            if (walk_inlines(c, &ch, depth) < 0)
                return -1;
        }
    } while (dwarf_siblingof(&ch, &ch) == 0);
    return 0;
}

/* One FUNC per contiguous range of a subprogram; the inlines of the
 * subprogram go with every range (lookups only use the covering ones). */
static int add_subprogram(dump_ctx *c, Dwarf_Die *die)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    char *owned;
    const char *name;
    int r = 0, any = 0;

    while ((off = lp_dwunits_ranges(c->units, die, off, &base, &lo, &hi)) > 0) {
        if (!is_code(c, lo, hi))
            continue;
        name = die_name(c, die, &owned);
        r = lp_bp_add_func(c->m, lo - c->base, hi - lo, 0, name, 0, c->err);
        free(owned);
        if (r < 0 || add_lines(c, lo - c->base, hi - c->base) < 0 ||
            walk_inlines(c, die, 0) < 0)
            return -1;
        any = 1;
    }
    (void)any;
    return 0;
}

static int walk_dies(dump_ctx *c, Dwarf_Die *parent)
{
    Dwarf_Die ch;
    int tag;

    if (dwarf_child(parent, &ch) != 0)
        return 0;
    do {
        tag = dwarf_tag(&ch);
        if (tag == DW_TAG_subprogram) {
            if (add_subprogram(c, &ch) < 0)
                return -1;
        }
        if (tag != DW_TAG_inlined_subroutine && dwarf_haschildren(&ch) > 0 &&
            walk_dies(c, &ch) < 0)
            return -1;
    } while (dwarf_siblingof(&ch, &ch) == 0);
    return 0;
}

/* One unit of the walk: the functions of `die`, with the line table,
 * file names and compilation directory of `skel` (the unit itself, or the
 * skeleton of a split unit, as the binary loader reads them). */
static int dump_unit(void *ctx, Dwarf_Die *die, Dwarf_Die *skel)
{
    dump_ctx *c = ctx;
    Dwarf_Attribute a;

    c->comp_dir = dwarf_attr(skel, DW_AT_comp_dir, &a) ? dwarf_formstring(&a) : NULL;
    if (dwarf_getsrcfiles(skel, &c->cu_files, &c->cu_nfiles) != 0) {
        c->cu_files = NULL;
        c->cu_nfiles = 0;
    }
    return load_lines(c, skel) < 0 || walk_dies(c, die) < 0 ? 1 : 0;
}

static int dump_dwarf(dump_ctx *c, Elf *e)
{
    Dwarf *dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
    int r;

    if (!dw)
        return 0; /* no DWARF: PUBLIC records only */
    if (!(c->units = lp_dwunits_open(dw, e, c->path, NULL, c->err))) {
        dwarf_end(dw);
        return -1;
    }
    r = lp_dwunits_walk(c->units, dump_unit, c, c->err);
    lp_dwunits_close(c->units);
    c->units = NULL;
    dwarf_end(dw);
    return r != 0 ? -1 : 0;
}

/* ---- PUBLIC records ---- */

/* A symbol-table function that no FUNC covers. */
typedef struct pub_cand {
    uint64_t addr;
    const char *name;
    int global;
} pub_cand;

static int cmp_cand(const void *a, const void *b)
{
    const pub_cand *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->global != y->global) /* prefer the global name of aliases */
        return y->global - x->global;
    return strcmp(x->name, y->name);
}

static Elf_Scn *symtab_scn(Elf *e)
{
    Elf_Scn *s = NULL, *use = NULL;
    GElf_Shdr sh;

    while ((s = elf_nextscn(e, s)))
        if (gelf_getshdr(s, &sh) && (sh.sh_type == SHT_SYMTAB ||
                                     (sh.sh_type == SHT_DYNSYM && !use)))
            use = s;
    return use;
}

static int add_cands(dump_ctx *c, const pub_cand *cand, size_t n)
{
    size_t i;
    char *dm;
    int r;

    for (i = 0; i < n; i++) {
        if (i && cand[i].addr == cand[i - 1].addr) {
            c->m->publics[c->m->npublics - 1].multiple = 1; /* aliases */
            continue;
        }
        dm = lp_demangle(&c->dm, cand[i].name);
        r = lp_bp_add_public(c->m, cand[i].addr, 0, dm ? dm : cand[i].name,
                             0, c->err);
        free(dm);
        if (r < 0)
            return -1;
    }
    c->m->finished = 0; /* index the new records */
    return lp_bp_finish(c->m, c->err);
}

/* The FUNC starting at addr (FUNCs sorted), or NULL. */
static lp_bp_func *func_at(lp_bp_module *m, uint64_t addr)
{
    size_t lo = 0, hi = m->nfuncs, mid;

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (m->funcs[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nfuncs && m->funcs[lo].addr == addr ? &m->funcs[lo] : NULL;
}

/* A second function symbol at a FUNC's address (ICF, aliases): "m". */
static void mark_multiple(dump_ctx *c, uint64_t addr, const char *sym)
{
    lp_bp_func *f = func_at(c->m, addr);
    char *dm;
    int same;

    if (!f || f->multiple)
        return;
    dm = lp_demangle(&c->dm, sym);
    same = !strcmp(f->name, dm ? dm : sym);
    free(dm);
    if (!same)
        f->multiple = 1;
}

/* Call after lp_bp_finish with FUNCs only: lookups then see FUNCs only. */
static int add_publics(dump_ctx *c, Elf *e)
{
    Elf_Scn *s = symtab_scn(e);
    GElf_Shdr sh;
    Elf_Data *d;
    GElf_Sym sym;
    size_t i, n, k = 0;
    const char *name;
    lp_bp_result r;
    pub_cand *cand;
    int ret;

    if (!s || !gelf_getshdr(s, &sh) || !(d = elf_getdata(s, NULL)) || !sh.sh_entsize)
        return 0;
    n = sh.sh_size / sh.sh_entsize;
    if (!(cand = calloc(n ? n : 1, sizeof *cand)))
        return lp_error_set(c->err, LP_ENOMEM, "%s: out of memory", c->path);
    for (i = 1; i < n; i++) {
        if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
            (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
             GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC) ||
            sym.st_value < c->base || !(name = elf_strptr(e, sh.sh_link, sym.st_name)) ||
            !*name)
            continue;
        if (lp_bp_lookup(c->m, sym.st_value - c->base, &r)) {
            mark_multiple(c, sym.st_value - c->base, name);
            continue;
        }
        cand[k].addr = sym.st_value - c->base;
        cand[k].name = name;
        cand[k++].global = GELF_ST_BIND(sym.st_info) == STB_GLOBAL;
    }
    if (k > 1)
        qsort(cand, k, sizeof *cand, cmp_cand);
    ret = add_cands(c, cand, k);
    free(cand);
    return ret;
}

/* Identical code folding leaves several functions at one address: keep the
 * first (in DWARF order) and mark it "m", as dump_syms does. Call after
 * lp_bp_finish (FUNCs sorted by address, ties in input order). */
static void merge_folded(lp_bp_module *m)
{
    size_t i, o = 0;

    for (i = 0; i < m->nfuncs; i++) {
        if (o && m->funcs[o - 1].addr == m->funcs[i].addr) {
            m->funcs[o - 1].multiple = 1;
            free(m->funcs[i].name); /* its line/INLINE records stay unused */
            continue;
        }
        m->funcs[o++] = m->funcs[i];
    }
    m->nfuncs = o;
}

lp_bp_module *lp_bp_from_elf(const char *path, lp_error *err)
{
    dump_ctx c = {.path = path, .err = err};
    lp_bp_elf_id id;
    const char *slash = strrchr(path, '/');
    int fd, ok = -1;
    Elf *e = open_elf(path, &fd, err);

    if (!e)
        return NULL;
    if (identify(e, path, &id, err) < 0)
        goto out;
    c.base = load_base(e);
    load_exec(&c, e);
    c.m = lp_bp_module_new("Linux", id.arch, id.debug_id, slash ? slash + 1 : path, err);
    if (!c.m || (id.code_id[0] && lp_bp_set_code_id(c.m, id.code_id, NULL, err) < 0))
        goto out;
    if (dump_dwarf(&c, e) < 0 || lp_bp_finish(c.m, err) < 0)
        goto out;
    merge_folded(c.m);
    if (add_publics(&c, e) < 0)
        goto out;
    ok = 0;
out:
    free_table(&c.files);
    free_table(&c.origins);
    free(c.lr);
    lp_demangler_close(&c.dm);
    elf_end(e);
    close(fd);
    if (ok < 0) {
        lp_bp_free(c.m);
        return NULL;
    }
    return c.m;
}
