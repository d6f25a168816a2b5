/*
 * dwp.c - DWARF package files (.dwp, split DWARF) for libdw 0.188, which
 * cannot read them itself (DWP support came in elfutils 0.191), and the
 * .dwo files libdw cannot read either: the .o of -gsplit-dwarf=single
 * (skeleton and split unit in one file) and g++'s DWARF 5 .dwo files,
 * whose type units each come in a .debug_info.dwo section of their own
 * (libdw reads the first). Owns: the
 * .debug_cu_index (GNU version 2 for DWARF 4, version 5), finding a unit's
 * contributions by its 8-byte DWO id, and, per unit, a small in-memory ELF
 * that looks to libdw like that unit's .dwo file: the unit's slices of
 * every indexed section, the whole .debug_str.dwo, and as .debug_addr.dwo
 * the skeleton's part of the binary's .debug_addr starting at its
 * DW_AT_addr_base, so that the split unit's base 0 is right. No section
 * bytes are copied: the in-memory ELF's sections get the package's (and
 * the binary's) buffers. libdw cannot link such a unit to its skeleton,
 * so DW_AT_ranges lists (relative to the skeleton's DW_AT_low_pc) are
 * decoded here (lp_dwp_ranges). Does not walk DIEs (dwarf.c).
 */
#include <dwarf.h>
#include <endian.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/binary_internal.h"

/* Sections of the in-memory unit file, in section header order. */
enum {
    S_INFO, S_ABBREV, S_LINE, S_LOC, S_LOCLISTS, S_STR_OFFSETS, S_MACINFO,
    S_MACRO, S_RNGLISTS, S_STR, S_ADDR, S_COUNT
};

static const char *const sec_names[S_COUNT] = {
    ".debug_info.dwo", ".debug_abbrev.dwo", ".debug_line.dwo",
    ".debug_loc.dwo", ".debug_loclists.dwo", ".debug_str_offsets.dwo",
    ".debug_macinfo.dwo", ".debug_macro.dwo", ".debug_rnglists.dwo",
    ".debug_str.dwo", ".debug_addr.dwo",
};

/* DW_SECT_* column ids -> our sections (-1: not used, e.g. types). */
static int sect_v5(uint32_t id)
{
    static const int m[9] = {-1, S_INFO, -1, S_ABBREV, S_LINE, S_LOCLISTS,
                             S_STR_OFFSETS, S_MACRO, S_RNGLISTS};
    return id < 9 ? m[id] : -1;
}

static int sect_v2(uint32_t id)
{
    static const int m[9] = {-1, S_INFO, -1, S_ABBREV, S_LINE, S_LOC,
                             S_STR_OFFSETS, S_MACINFO, S_MACRO};
    return id < 9 ? m[id] : -1;
}

#define MAX_COLS 16

/* A .dwo file (not a package) opened for one of its units. */
typedef struct dwo_file {
    int fd;
    Elf *elf;
} dwo_file;

typedef struct dwp_unit {
    Dwarf *dw;                  /* key */
    char *image;                /* ELF header + section headers */
    Elf *elf;
    uint64_t low_pc;            /* the skeleton's: the CU base address */
    const uint8_t *info_end;    /* end of the .debug_info.dwo slice */
    const uint8_t *rng, *addr, *ranges;   /* rnglists slice; skeleton's */
    size_t rng_size, addr_size, ranges_size;
    uint8_t version, asize, osize; /* DWARF version, address/offset size */
    UT_hash_handle hh;
} dwp_unit;

struct lp_dwp {
    char *path;                 /* NULL: a set of .dwo files, no package */
    int fd;
    Elf *elf;
    uint32_t version;           /* 2 or 5 */
    const uint8_t *idx;         /* .debug_cu_index */
    size_t idx_size;
    uint64_t idx_off;           /* its file offset, for messages */
    uint32_t ncols, nunits, nslots;
    int col_sec[MAX_COLS];      /* column -> S_*, -1: ignored */
    Elf_Data *sec[S_COUNT];     /* the package's sections (S_STR incl.) */
    dwp_unit *units;            /* uthash by Dwarf handle */
    size_t nopen;
    dwo_file *dwos;             /* without a package: the files opened */
    size_t ndwos;
};

static int find_sections(lp_dwp *d, lp_error *err)
{
    size_t shstrndx;
    if (elf_getshdrstrndx(d->elf, &shstrndx) != 0)
        return lp_error_set(err, LP_EFORMAT, "%s: offset 0: no section name "
                            "table", d->path);
    for (Elf_Scn *s = NULL; (s = elf_nextscn(d->elf, s));) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) ||
            !(nm = elf_strptr(d->elf, shstrndx, sh.sh_name)))
            continue;
        if (strcmp(nm, ".debug_cu_index") == 0) {
            Elf_Data *x = lp_bin_scn_data(s, &sh);
            d->idx = x ? x->d_buf : NULL;
            d->idx_size = x ? x->d_size : 0;
            d->idx_off = sh.sh_offset;
            continue;
        }
        for (int i = 0; i < S_COUNT; i++)
            if (strcmp(nm, sec_names[i]) == 0)
                d->sec[i] = lp_bin_scn_data(s, &sh);
    }
    if (!d->idx)
        return lp_error_set(err, LP_EFORMAT, "%s: no .debug_cu_index section "
                            "(expected a DWARF package made by dwp or "
                            "llvm-dwp)", d->path);
    return 0;
}

static int bad_index(const lp_dwp *d, uint64_t off, const char *what,
                     lp_error *err)
{
    return lp_error_set(err, LP_EFORMAT, "%s: offset 0x%llx (.debug_cu_index"
                        " + 0x%llx): %s", d->path,
                        (unsigned long long)(d->idx_off + off),
                        (unsigned long long)off, what);
}

/* Header, and that every table lies inside the section. */
static int parse_index(lp_dwp *d, lp_error *err)
{
    if (d->idx_size < 16)
        return bad_index(d, 0, "truncated header (expected 16 bytes)", err);
    d->version = lp_le(d->idx, 4);
    d->ncols = lp_le(d->idx + 4, 4);
    d->nunits = lp_le(d->idx + 8, 4);
    d->nslots = lp_le(d->idx + 12, 4);
    if (d->version != 2 && d->version != 5)
        return bad_index(d, 0, "version is not 2 (GNU, DWARF 4) nor 5", err);
    if (d->ncols == 0 && d->nunits == 0 && d->nslots == 0)
        return 0; /* an empty package (binutils' dwp on DWARF 5 units) */
    if (d->ncols == 0 || d->ncols > MAX_COLS)
        return bad_index(d, 4, "section count not in 1..16", err);
    if (d->nslots & (d->nslots - 1))
        return bad_index(d, 12, "slot count is not a power of 2", err);
    if (d->nunits > d->nslots)
        return bad_index(d, 8, "more units than hash slots", err);
    uint64_t need = 16 + 12 * (uint64_t)d->nslots + 4 * (uint64_t)d->ncols +
                    8 * (uint64_t)d->nunits * d->ncols;
    if (need > d->idx_size)
        return bad_index(d, d->idx_size, "truncated tables", err);
    const uint8_t *ids = d->idx + 16 + 12 * (size_t)d->nslots;
    bool info = false;
    for (uint32_t c = 0; c < d->ncols; c++) {
        uint32_t id = lp_le(ids + 4 * c, 4);
        int s = d->version == 5 ? sect_v5(id) : sect_v2(id);
        d->col_sec[c] = s;
        info |= s == S_INFO;
        if (s >= 0 && !d->sec[s])
            return bad_index(d, (size_t)(ids - d->idx) + 4 * c,
                             "column's section is missing from the file",
                             err);
    }
    if (!info)
        return bad_index(d, (size_t)(ids - d->idx), "no DW_SECT_INFO column",
                         err);
    if (!d->sec[S_STR])
        return lp_error_set(err, LP_EFORMAT, "%s: no .debug_str.dwo section",
                            d->path);
    return 0;
}

int lp_dwp_open(const char *path, lp_dwp **out, lp_error *err)
{
    lp_dwp *d = calloc(1, sizeof *d);
    *out = NULL;
    if (d)
        d->fd = -1;
    if (!d || !(d->path = strdup(path))) {
        free(d);
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    }
    GElf_Ehdr eh;
    if (!(d->elf = lp_bin_open_elf(path, &d->fd, err)) ||
        !gelf_getehdr(d->elf, &eh)) {
        lp_dwp_close(d);
        return -1;
    }
    if (eh.e_ident[EI_DATA] != ELFDATA2LSB ||
        BYTE_ORDER != LITTLE_ENDIAN) {
        lp_error_set(err, LP_EUNSUPP, "%s: offset 5: only little-endian "
                     "DWARF packages are read", path);
        lp_dwp_close(d);
        return -1;
    }
    if (find_sections(d, err) != 0 || parse_index(d, err) != 0) {
        lp_dwp_close(d);
        return -1;
    }
    *out = d;
    return 0;
}

/* Row (1-based) of the unit with this id, 0 if none, -1 on a bad index. */
static int64_t find_row(const lp_dwp *d, uint64_t id, lp_error *err)
{
    if (d->nslots == 0)
        return 0;
    const uint8_t *sig = d->idx + 16;
    const uint8_t *row = sig + 8 * (size_t)d->nslots;
    uint32_t mask = d->nslots - 1;
    uint32_t h = (uint32_t)id & mask, step = ((uint32_t)(id >> 32) & mask) | 1;
    for (uint32_t i = 0; i < d->nslots; i++, h = (h + step) & mask) {
        uint32_t r = lp_le(row + 4 * (size_t)h, 4);
        if (r == 0)
            return 0;
        if (lp_le(sig + 8 * (size_t)h, 8) != id)
            continue;
        if (r > d->nunits)
            return bad_index(d, 16 + 8 * (uint64_t)d->nslots + 4 * h,
                             "row index past the unit count", err);
        return r;
    }
    return 0;
}

/* One ELF64 header and section headers (null, .shstrtab, S_COUNT debug
 * sections of size 0 whose data is set afterwards) with the names. */
static char *make_image(size_t *size)
{
    size_t names = 1 + sizeof ".shstrtab";
    for (int i = 0; i < S_COUNT; i++)
        names += strlen(sec_names[i]) + 1;
    size_t shoff = (sizeof(Elf64_Ehdr) + names + 7) & ~(size_t)7;
    size_t nsh = 2 + S_COUNT;
    *size = shoff + nsh * sizeof(Elf64_Shdr);
    char *img = calloc(1, *size);
    if (!img)
        return NULL;
    Elf64_Ehdr *eh = (Elf64_Ehdr *)(void *)img;
    memcpy(eh->e_ident, ELFMAG, SELFMAG);
    eh->e_ident[EI_CLASS] = ELFCLASS64;
    eh->e_ident[EI_DATA] = ELFDATA2LSB;
    eh->e_ident[EI_VERSION] = EV_CURRENT;
    eh->e_type = ET_REL;
    eh->e_version = EV_CURRENT;
    eh->e_ehsize = sizeof *eh;
    eh->e_shoff = shoff;
    eh->e_shentsize = sizeof(Elf64_Shdr);
    eh->e_shnum = (Elf64_Half)nsh;
    eh->e_shstrndx = 1;
    Elf64_Shdr *sh = (Elf64_Shdr *)(void *)(img + shoff);
    char *str = img + sizeof *eh;
    size_t at = 1;
    for (size_t i = 1; i < nsh; i++) {
        const char *nm = i == 1 ? ".shstrtab" : sec_names[i - 2];
        sh[i].sh_name = (Elf64_Word)at;
        sh[i].sh_type = i == 1 ? SHT_STRTAB : SHT_PROGBITS;
        sh[i].sh_offset = i == 1 ? sizeof *eh : sizeof *eh + names;
        sh[i].sh_size = i == 1 ? names : 0;
        sh[i].sh_addralign = 1;
        memcpy(str + at, nm, strlen(nm) + 1);
        at += strlen(nm) + 1;
    }
    return img;
}

/* The unit's contributions: slices of the package's sections. */
static int unit_slices(const lp_dwp *d, uint32_t r, const uint8_t **buf,
                       size_t *len, lp_error *err)
{
    const uint8_t *offs = d->idx + 16 + 12 * (size_t)d->nslots +
                          4 * (size_t)d->ncols +
                          4 * (size_t)(r - 1) * d->ncols;
    const uint8_t *sizes = offs + 4 * (size_t)d->nunits * d->ncols;
    for (uint32_t c = 0; c < d->ncols; c++) {
        int s = d->col_sec[c];
        if (s < 0)
            continue;
        uint64_t o = lp_le(offs + 4 * c, 4), n = lp_le(sizes + 4 * c, 4);
        const Elf_Data *sd = d->sec[s];
        if (o > sd->d_size || n > sd->d_size - o)
            return bad_index(d, (size_t)(offs - d->idx) + 4 * c,
                             "contribution extends past the end of its "
                             "section", err);
        buf[s] = (const uint8_t *)sd->d_buf + o;
        len[s] = n;
    }
    buf[S_STR] = d->sec[S_STR]->d_buf;
    len[S_STR] = d->sec[S_STR]->d_size;
    return 0;
}

/* Give each section of the in-memory ELF its buffer (libdw reads the
 * Elf_Data that libelf caches per section, the one we fill in here). */
static int set_sections(Elf *e, const uint8_t **buf, const size_t *len)
{
    for (int i = 0; i < S_COUNT; i++) {
        Elf_Scn *s = elf_getscn(e, (size_t)i + 2);
        Elf_Data *dd = s ? elf_getdata(s, NULL) : NULL;
        if (!dd)
            return -1;
        dd->d_buf = len[i] ? (void *)(uintptr_t)buf[i] : NULL;
        dd->d_size = len[i];
    }
    return 0;
}

static void free_unit(dwp_unit *u)
{
    if (u->dw)
        dwarf_end(u->dw);
    if (u->elf)
        elf_end(u->elf);
    free(u->image);
    free(u);
}

/* Open the in-memory unit file and check it holds the split unit. */
static int open_unit(lp_dwp *d, dwp_unit *u, const uint8_t **buf,
                     const size_t *len, uint64_t id, int64_t r,
                     Dwarf_Die *cudie, lp_error *err)
{
    size_t isz;
    if (!(u->image = make_image(&isz)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    if (!(u->elf = elf_memory(u->image, isz)) ||
        set_sections(u->elf, buf, len) != 0)
        return lp_error_set(err, LP_ENOMEM, "%s: in-memory unit file: %s",
                            d->path ? d->path : "(.dwo)", elf_errmsg(-1));
    Dwarf_CU *cu = NULL;
    uint8_t ut = 0, as = 0, os = 0;
    Dwarf_Half ver = 0;
    uint64_t uid = 0;
    if (!(u->dw = dwarf_begin_elf(u->elf, DWARF_C_READ, NULL)) ||
        dwarf_get_units(u->dw, NULL, &cu, NULL, NULL, cudie, NULL) != 0 ||
        dwarf_cu_info(cu, &ver, &ut, NULL, NULL, &uid, &as, &os) != 0 ||
        ut != DW_UT_split_compile || uid != id)
        return lp_error_set(err, LP_EFORMAT, "%s: unit 0x%016llx (index row "
                            "%lld): its .debug_info.dwo contribution is not "
                            "a split compile unit with that id (%s)",
                            d->path ? d->path : "(.dwo)",
                            (unsigned long long)id, (long long)r,
                            dwarf_errmsg(-1));
    u->version = (uint8_t)ver;
    u->asize = as;
    u->osize = os;
    return 0;
}

/* An opened unit: what its range lists need, and into the table. */
static void keep_unit(lp_dwp *d, dwp_unit *u, const uint8_t *const *buf, const size_t *len,
                      const lp_dwp_skel *sk)
{
    u->low_pc = sk->low_pc;
    u->info_end = buf[S_INFO] + len[S_INFO];
    u->rng = buf[S_RNGLISTS];
    u->rng_size = len[S_RNGLISTS];
    u->addr = sk->addr;
    u->addr_size = sk->addr_size;
    u->ranges = sk->ranges;
    u->ranges_size = sk->ranges_size;
    HASH_ADD_PTR(d->units, dw, u);
    d->nopen++;
}

int lp_dwp_unit(lp_dwp *d, const lp_dwp_skel *sk, Dwarf_Die *split,
                lp_error *err)
{
    int64_t r = find_row(d, sk->dwo_id, err);
    if (r <= 0)
        return (int)r;
    const uint8_t *buf[S_COUNT] = {0};
    size_t len[S_COUNT] = {0};
    if (unit_slices(d, (uint32_t)r, buf, len, err) != 0)
        return -1;
    buf[S_ADDR] = sk->addr;
    len[S_ADDR] = sk->addr_size;
    dwp_unit *u = calloc(1, sizeof *u);
    if (!u)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    if (open_unit(d, u, buf, len, sk->dwo_id, r, split, err) != 0) {
        free_unit(u);
        return -1;
    }
    keep_unit(d, u, buf, len, sk);
    return 1;
}

/* ---- .dwo files ------------------------------------------------------------- */

int lp_dwp_new_files(lp_dwp **out, lp_error *err)
{
    if (!(*out = calloc(1, sizeof **out)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    (*out)->fd = -1;
    return 0;
}

/* The unit of a .debug_info.dwo section at p whose header says it is the
 * split compile unit `id` (DWARF 5), or a DWARF 4 unit (whose id is a DIE
 * attribute: open_unit checks it): its length, else 0 with *next set. */
static size_t unit_at(const uint8_t *p, const uint8_t *end, uint64_t id, const uint8_t **next)
{
    lp_rd r = {p, end, false};
    uint64_t len = lp_rd_n(&r, 4);
    unsigned os = 4;
    if (len == 0xffffffffu) {
        len = lp_rd_n(&r, 8);
        os = 8;
    }
    if (r.bad || len > (uint64_t)(end - r.p)) {
        *next = end;
        return 0;
    }
    *next = r.p + len;
    uint64_t ver = lp_rd_n(&r, 2);
    if (ver >= 2 && ver <= 4)
        return (size_t)(*next - p);
    if (ver != 5 || lp_rd_n(&r, 1) != DW_UT_split_compile)
        return 0;
    lp_rd_n(&r, 1 + os); /* address size, abbrev offset */
    return !r.bad && lp_rd_n(&r, 8) == id ? (size_t)(*next - p) : 0;
}

/* Sections of a .dwo file: each named one whole, the one among its
 * .debug_info.dwo sections that holds unit `id` as S_INFO (sliced). Tries
 * each candidate unit with try_unit until one opens. */
typedef struct dwo_scan {
    Elf *elf;
    size_t shstrndx;
    const uint8_t *buf[S_COUNT];
    size_t len[S_COUNT];
} dwo_scan;

static int scan_dwo(dwo_scan *sc)
{
    if (elf_getshdrstrndx(sc->elf, &sc->shstrndx) != 0)
        return -1;
    for (Elf_Scn *s = NULL; (s = elf_nextscn(sc->elf, s));) {
        GElf_Shdr sh;
        const char *nm;
        Elf_Data *x;
        if (!gelf_getshdr(s, &sh) || !(nm = elf_strptr(sc->elf, sc->shstrndx, sh.sh_name)))
            continue;
        for (int i = 0; i < S_COUNT; i++)
            if (i != S_INFO && i != S_ADDR && strcmp(nm, sec_names[i]) == 0 &&
                (x = lp_bin_scn_data(s, &sh))) {
                sc->buf[i] = x->d_buf;
                sc->len[i] = x->d_size;
            }
    }
    return 0;
}

static int add_file_unit(lp_dwp *d, dwo_scan *sc, const uint8_t *info, size_t n,
                         const lp_dwp_skel *sk, Dwarf_Die *split)
{
    lp_error ignored;
    dwp_unit *u = calloc(1, sizeof *u);
    if (!u)
        return -1;
    sc->buf[S_INFO] = info;
    sc->len[S_INFO] = n;
    sc->buf[S_ADDR] = sk->addr;
    sc->len[S_ADDR] = sk->addr_size;
    if (open_unit(d, u, sc->buf, sc->len, sk->dwo_id, 0, split, &ignored) != 0) {
        free_unit(u);
        return 0;
    }
    keep_unit(d, u, sc->buf, sc->len, sk);
    return 1;
}

/* Every unit of every .debug_info.dwo section, until one is `id`. */
static int find_file_unit(lp_dwp *d, dwo_scan *sc, const lp_dwp_skel *sk, Dwarf_Die *split)
{
    for (Elf_Scn *s = NULL; (s = elf_nextscn(sc->elf, s));) {
        GElf_Shdr sh;
        const char *nm;
        Elf_Data *x;
        if (!gelf_getshdr(s, &sh) || !(nm = elf_strptr(sc->elf, sc->shstrndx, sh.sh_name)) ||
            strcmp(nm, ".debug_info.dwo") != 0 || !(x = lp_bin_scn_data(s, &sh)))
            continue;
        const uint8_t *p = x->d_buf, *end = p + x->d_size, *next;
        for (; p < end; p = next) {
            size_t n = unit_at(p, end, sk->dwo_id, &next);
            int r = n ? add_file_unit(d, sc, p, n, sk, split) : 0;
            if (r != 0)
                return r;
        }
    }
    return 0;
}

int lp_dwp_file_unit(lp_dwp *d, const char *path, const lp_dwp_skel *sk, Dwarf_Die *split,
                     lp_error *err)
{
    lp_error ignored;
    dwo_scan sc = {0};
    dwo_file *nf = realloc(d->dwos, (d->ndwos + 1) * sizeof *nf);
    int fd = -1, r;

    if (!nf)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    d->dwos = nf;
    if (!(sc.elf = lp_bin_open_elf(path, &fd, &ignored)))
        return 0; /* not there, or not ELF: missing, as llvm says */
    d->dwos[d->ndwos++] = (dwo_file){fd, sc.elf};
    if (scan_dwo(&sc) != 0)
        return 0;
    if ((r = find_file_unit(d, &sc, sk, split)) < 0)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return r;
}

/* ---- DW_AT_ranges of split units ---------------------------------------- */

static uint64_t addrx(const dwp_unit *u, uint64_t i, lp_rd *r)
{
    if (u->asize == 0 || i >= u->addr_size / u->asize) {
        r->bad = true;
        return 0;
    }
    lp_rd a = {u->addr + i * u->asize, u->addr + u->addr_size, false};
    return lp_rd_n(&a, u->asize);
}

/* Start of the list of attribute a (rnglistx or section offset) in sec. */
static int64_t list_start(const dwp_unit *u, const Dwarf_Attribute *a,
                          size_t sec_size)
{
    const uint8_t *v = a->valp;
    lp_rd r = {v, v < u->info_end ? u->info_end : v, false};
    if (a->form == DW_FORM_sec_offset) {
        uint64_t o = lp_rd_n(&r, u->osize);
        return r.bad || o >= sec_size ? -1 : (int64_t)o;
    }
    if (a->form != DW_FORM_rnglistx || !u->rng)
        return -1;
    uint64_t idx = lp_rd_uleb(&r);
    lp_rd h = {u->rng, u->rng + u->rng_size, false};
    unsigned os = lp_rd_n(&h, 4) == 0xffffffffu ? 8 : 4;
    if (os == 8)
        lp_rd_n(&h, 8);
    lp_rd_n(&h, 4); /* version, address size, segment selector size */
    uint64_t count = lp_rd_n(&h, 4);
    size_t base = (size_t)(h.p - u->rng);
    if (h.bad || idx >= count || idx > (u->rng_size - base) / os)
        return -1;
    lp_rd t = {h.p + idx * os, u->rng + u->rng_size, false};
    uint64_t o = lp_rd_n(&t, os);
    return t.bad || o >= u->rng_size - base ? -1 : (int64_t)(base + o);
}

/* One DWARF 5 range list entry at r; 1 range, 0 end, 2 base set, -1. */
static int rle(const dwp_unit *u, lp_rd *r, Dwarf_Addr *base, Dwarf_Addr *lo,
               Dwarf_Addr *hi)
{
    uint8_t as = u->asize;
    uint64_t a, b;
    switch (lp_rd_n(r, 1)) {
    case DW_RLE_end_of_list: return r->bad ? -1 : 0;
    case DW_RLE_base_addressx: *base = addrx(u, lp_rd_uleb(r), r); return 2;
    case DW_RLE_startx_endx:
        a = lp_rd_uleb(r), b = lp_rd_uleb(r);
        *lo = addrx(u, a, r), *hi = addrx(u, b, r);
        return 1;
    case DW_RLE_startx_length:
        a = lp_rd_uleb(r), b = lp_rd_uleb(r);
        *lo = addrx(u, a, r), *hi = *lo + b;
        return 1;
    case DW_RLE_offset_pair:
        a = lp_rd_uleb(r), b = lp_rd_uleb(r);
        *lo = *base + a, *hi = *base + b;
        return 1;
    case DW_RLE_base_address: *base = lp_rd_n(r, as); return 2;
    case DW_RLE_start_end:
        *lo = lp_rd_n(r, as), *hi = lp_rd_n(r, as);
        return 1;
    case DW_RLE_start_length:
        *lo = lp_rd_n(r, as), *hi = *lo + lp_rd_uleb(r);
        return 1;
    default: return -1;
    }
}

/* One DWARF 4 .debug_ranges entry: the same results. */
static int pair(const dwp_unit *u, lp_rd *r, Dwarf_Addr *base, Dwarf_Addr *lo,
                Dwarf_Addr *hi)
{
    uint64_t a = lp_rd_n(r, u->asize), b = lp_rd_n(r, u->asize);
    uint64_t all = u->asize == 8 ? ~(uint64_t)0 : 0xffffffffu;
    if (r->bad)
        return -1;
    if (a == 0 && b == 0)
        return 0;
    if (a == all) {
        *base = b;
        return 2;
    }
    *lo = *base + a, *hi = *base + b;
    return 1;
}

ptrdiff_t lp_dwp_ranges(lp_dwp *d, Dwarf_Die *die, ptrdiff_t off,
                        Dwarf_Addr *basep, Dwarf_Addr *lo, Dwarf_Addr *hi)
{
    Dwarf_Attribute a;
    dwp_unit *u = NULL;
    Dwarf *dw = die->cu ? dwarf_cu_getdwarf(die->cu) : NULL;
    if (dw)
        HASH_FIND_PTR(d->units, &dw, u);
    if (!u || !dwarf_attr(die, DW_AT_ranges, &a))
        return LP_DWP_NOT_MINE;
    bool v5 = u->version >= 5;
    const uint8_t *sec = v5 ? u->rng : u->ranges;
    size_t size = v5 ? u->rng_size : u->ranges_size;
    if (off == 0) {
        int64_t st = list_start(u, &a, size);
        if (st < 0 || !sec)
            return -1;
        off = (ptrdiff_t)st + 1; /* positions are offset + 1, never 0 */
        *basep = u->low_pc;
    }
    if (off < 1 || (size_t)off - 1 >= size)
        return -1;
    lp_rd r = {sec + off - 1, sec + size, false};
    for (unsigned n = 0; n < 1u << 20; n++) {
        int k = v5 ? rle(u, &r, basep, lo, hi) : pair(u, &r, basep, lo, hi);
        if (k != 2)
            return k < 0 || r.bad ? -1
                   : k == 0 ? 0 : (ptrdiff_t)(r.p - sec) + 1;
    }
    return -1;
}

size_t lp_dwp_units_read(const lp_dwp *d) { return d ? d->nopen : 0; }
const char *lp_dwp_path(const lp_dwp *d) { return d->path; }

void lp_dwp_close(lp_dwp *d)
{
    if (!d)
        return;
    dwp_unit *u, *tmp;
    HASH_ITER(hh, d->units, u, tmp) {
        HASH_DEL(d->units, u);
        free_unit(u);
    }
    for (size_t i = 0; i < d->ndwos; i++) {
        elf_end(d->dwos[i].elf);
        close(d->dwos[i].fd);
    }
    free(d->dwos);
    if (d->elf)
        elf_end(d->elf);
    if (d->fd >= 0)
        close(d->fd);
    free(d->path);
    free(d);
}
