/*
 * elf.c - opens the binary (and the --debug-binary file) with libelf:
 * validation against truncation, PT_LOAD segments, preferred base, build-id,
 * symbol table, a section's (decompressed) data, file offset <-> vaddr
 * conversion, warnings, interned strings, and lp_binary_open/close. Does
 * not disassemble (disasm.c) nor read DWARF (dwarf.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "binary/binary_internal.h"
#include "util/pages.h"

#define PAGE_MASK_4K (~(uint64_t)0xfff)

void lp_bin_warn(lp_binary *b, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **w = realloc(b->warnings, (b->nwarnings + 1) * sizeof *w);
    if (!w)
        return;
    b->warnings = w;
    w[b->nwarnings] = strdup(buf);
    if (w[b->nwarnings])
        b->nwarnings++;
}

const char *lp_bin_intern(lp_binary *b, const char *s)
{
    lp_str *e;
    if (!s)
        s = "";
    HASH_FIND_STR(b->strs, s, e);
    if (e)
        return e->s;
    e = malloc(sizeof *e);
    if (!e)
        return NULL;
    e->s = strdup(s);
    if (!e->s) {
        free(e);
        return NULL;
    }
    HASH_ADD_KEYPTR(hh, b->strs, e->s, strlen(e->s), e);
    return e->s;
}

static bool past_end(uint64_t off, uint64_t size, uint64_t fsize)
{
    return off > fsize || size > fsize - off;
}

/* Every header table, PT_LOAD file range and section must lie inside the
 * file. Returns NULL, or what is wrong with *where set to its offset. */
static const char *check_extents(Elf *e, const GElf_Ehdr *eh, uint64_t fsize,
                                 uint64_t *where)
{
    size_t phnum = eh->e_phnum, shnum = eh->e_shnum;
    *where = 0;
    if ((phnum == PN_XNUM && elf_getphdrnum(e, &phnum) != 0) ||
        (shnum == 0 && eh->e_shoff && elf_getshdrnum(e, &shnum) != 0))
        return "program/section header count unreadable";
    *where = eh->e_phoff;
    if (phnum && past_end(eh->e_phoff, (uint64_t)phnum * eh->e_phentsize,
                          fsize))
        return "program headers extend past end of file";
    *where = eh->e_shoff;
    if (shnum && past_end(eh->e_shoff, (uint64_t)shnum * eh->e_shentsize,
                          fsize))
        return "section headers extend past end of file";
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph))
            return "unreadable program header";
        *where = ph.p_offset;
        if (ph.p_type == PT_LOAD && past_end(ph.p_offset, ph.p_filesz, fsize))
            return "PT_LOAD segment extends past end of file";
    }
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh))
            return "unreadable section header";
        *where = sh.sh_offset;
        if (sh.sh_type != SHT_NOBITS && past_end(sh.sh_offset, sh.sh_size,
                                                 fsize))
            return "section contents extend past end of file";
    }
    return NULL;
}

/* Open path read-only as an ELF whose extents are all inside the file, so
 * that truncation is reported, never read past. */
Elf *lp_bin_open_elf(const char *path, int *fdp, lp_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return lp_error_set(err, LP_EIO, "%s: cannot open: %s", path,
                            strerror(errno)), NULL;
    struct stat st;
    unsigned char ident[EI_NIDENT] = {0};
    Elf *e = NULL;
    GElf_Ehdr eh;
    const char *why = NULL;
    uint64_t where = 0;
    int code = LP_EFORMAT;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        why = "not a regular file";
        code = LP_EIO;
    } else if (pread(fd, ident, sizeof ident, 0) < 4 ||
               memcmp(ident, ELFMAG, SELFMAG) != 0) {
        why = "not an ELF file (expected magic 7f 45 4c 46)";
    } else if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL)) ||
               elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh)) {
        why = "truncated or malformed ELF header";
    } else {
        why = check_extents(e, &eh, (uint64_t)st.st_size, &where);
    }
    if (!why) {
        *fdp = fd;
        return e;
    }
    if (e)
        elf_end(e);
    close(fd);
    if (code == LP_EIO || where == 0)
        return lp_error_set(err, code, "%s: offset 0: %s", path, why), NULL;
    return lp_error_set(err, code, "%s: offset 0x%llx: %s (file is %llu "
                        "bytes; truncated ELF?)", path,
                        (unsigned long long)where, why,
                        (unsigned long long)st.st_size), NULL;
}

static int load_segments(lp_binary *b, lp_error *err)
{
    size_t phnum = 0;
    elf_getphdrnum(b->elf, &phnum);
    b->segs = calloc(phnum ? phnum : 1, sizeof *b->segs);
    b->xsegs = calloc(phnum ? phnum : 1, sizeof *b->xsegs);
    if (!b->segs || !b->xsegs)
        return lp_error_set(err, LP_ENOMEM, "%s: out of memory", b->path);
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(b->elf, (int)i, &ph))
            return lp_error_set(err, LP_EFORMAT,
                                "%s: program header %zu unreadable",
                                b->path, i);
        if (ph.p_type != PT_LOAD)
            continue;
        lp_segment s = {ph.p_vaddr, ph.p_memsz, ph.p_offset, ph.p_filesz,
                        ph.p_flags};
        if (b->nsegs == 0)
            b->first_loadable = ph.p_vaddr & PAGE_MASK_4K;
        b->segs[b->nsegs++] = s;
        if (ph.p_flags & PF_X) {
            if (b->nxsegs == 0)
                b->preferred_base = ph.p_vaddr & PAGE_MASK_4K;
            b->xsegs[b->nxsegs++] = s;
        }
    }
    if (b->nxsegs == 0)
        lp_bin_warn(b, "%s: no executable PT_LOAD segment", b->path);
    return 0;
}

static int take_build_id(lp_binary *b, Elf_Data *d)
{
    GElf_Nhdr nh;
    size_t off = 0, noff, doff;
    while (d && off < d->d_size &&
           (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
        const char *nm = (const char *)d->d_buf + noff;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            memcmp(nm, "GNU", 4) == 0 && nh.n_descsz > 0) {
            b->build_id = malloc(nh.n_descsz);
            b->build_id_hex = malloc(2 * nh.n_descsz + 1);
            if (!b->build_id || !b->build_id_hex)
                return -1;
            memcpy(b->build_id, (const char *)d->d_buf + doff, nh.n_descsz);
            b->build_id_len = nh.n_descsz;
            for (size_t i = 0; i < nh.n_descsz; i++)
                sprintf(b->build_id_hex + 2 * i, "%02x", b->build_id[i]);
            return 1;
        }
    }
    return 0;
}

Elf_Data *lp_bin_scn_data(Elf_Scn *s, const GElf_Shdr *sh)
{
    if (sh->sh_type == SHT_NOBITS)
        return NULL;
    if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(s, 0, 0) < 0)
        return NULL;
    Elf_Data *d = elf_getdata(s, NULL);
    return d && d->d_buf ? d : NULL;
}

static int load_build_id(lp_binary *b, lp_error *err)
{
    for (Elf_Scn *s = NULL; (s = elf_nextscn(b->elf, s));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_NOTE)
            continue;
        int r = take_build_id(b, elf_getdata(s, NULL));
        if (r < 0)
            return lp_error_set(err, LP_ENOMEM, "%s: out of memory", b->path);
        if (r > 0)
            return 0;
    }
    b->build_id_hex = strdup("");
    return b->build_id_hex ? 0
                           : lp_error_set(err, LP_ENOMEM, "out of memory");
}

int lp_bin_load_elf(lp_binary *b, lp_error *err)
{
    GElf_Ehdr eh;
    gelf_getehdr(b->elf, &eh);
    if (eh.e_machine == EM_X86_64)
        b->arch = LP_ARCH_X86_64;
    else if (eh.e_machine == EM_AARCH64)
        b->arch = LP_ARCH_AARCH64;
    else
        return lp_error_set(err, LP_EUNSUPP,
                            "%s: ELF machine %u is not supported (expected "
                            "x86-64 or AArch64)", b->path, eh.e_machine);
    b->ops = lp_arch_ops_for(b->arch);
    b->is_pie = eh.e_type == ET_DYN;
    if (load_segments(b, err) != 0 || load_build_id(b, err) != 0)
        return -1;
    return 0;
}

/* The index of the first of the n symbols (sorted by address) whose
 * address is above addr; n if none. */
static size_t first_after(const lp_sym *v, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int sym_cmp(const void *pa, const void *pb)
{
    const lp_sym *a = pa, *c = pb;
    if (a->addr != c->addr)
        return a->addr < c->addr ? -1 : 1;
    return a->idx < c->idx ? -1 : a->idx > c->idx; /* table order */
}

/* Reads the symbols of the first table of `type` in e into b->syms. */
static int read_symtab(lp_binary *b, Elf *e, Elf32_Word type, lp_error *err)
{
    for (Elf_Scn *s = NULL; (s = elf_nextscn(e, s));) {
        GElf_Shdr sh;
        if (!gelf_getshdr(s, &sh) || sh.sh_type != type || !sh.sh_entsize)
            continue;
        Elf_Data *d = elf_getdata(s, NULL);
        size_t n = d ? d->d_size / sh.sh_entsize : 0;
        b->syms = calloc(n ? n : 1, sizeof *b->syms);
        if (!b->syms)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        for (size_t i = 0; i < n; i++) {
            GElf_Sym sym;
            if (!gelf_getsym(d, (int)i, &sym))
                continue;
            int t = GELF_ST_TYPE(sym.st_info);
            if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= SHN_LORESERVE ||
                t == STT_FILE || t == STT_TLS)
                continue;
            const char *nm = elf_strptr(e, sh.sh_link, sym.st_name);
            lp_sym *o = &b->syms[b->nsyms++];
            o->addr = sym.st_value;
            o->size = sym.st_size;
            o->name = nm ? nm : "";
            o->shndx = sym.st_shndx;
            o->idx = i;
            o->type = (uint8_t)t;
        }
        return 1;
    }
    return 0;
}

int lp_bin_load_symbols(lp_binary *b, lp_error *err)
{
    /* Code symbols (region boundaries, entries) come from the binary, as
     * llvm-profgen's Obj->symbols(); the debug file fills in when the
     * binary has no .symtab. .dynsym is the last resort. */
    int r = read_symtab(b, b->elf, SHT_SYMTAB, err);
    b->code_symtab = r == 1;
    if (r == 0 && b->dbg_elf != b->elf)
        r = read_symtab(b, b->dbg_elf, SHT_SYMTAB, err);
    if (r == 0)
        r = read_symtab(b, b->elf, SHT_DYNSYM, err);
    if (r < 0)
        return -1;
    if (b->nsyms)
        qsort(b->syms, b->nsyms, sizeof *b->syms, sym_cmp);
    b->fsyms = calloc(b->nsyms ? b->nsyms : 1, sizeof *b->fsyms);
    if (!b->fsyms)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (size_t i = 0; i < b->nsyms; i++)
        if (b->syms[i].type == STT_FUNC && b->syms[i].size)
            b->fsyms[b->nfsyms++] = b->syms[i];
    return 0;
}

/* The end of section shndx of b's code file, 0 if it has none. */
static uint64_t section_end(const lp_binary *b, size_t shndx)
{
    Elf_Scn *scn = elf_getscn(b->elf, shndx);
    GElf_Shdr sh;

    return scn && gelf_getshdr(scn, &sh) ? sh.sh_addr + sh.sh_size : 0;
}

const char *lp_binary_symbol_name_perf(const lp_binary *b, uint64_t addr,
                                       uint64_t *sym_start)
{
    const char *name = lp_binary_symbol_name(b, addr, sym_start);
    size_t lo, i;
    uint64_t end;

    if (name)
        return name;
    lo = first_after(b->syms, b->nsyms, addr);
    for (i = lo; i-- > 0;) { /* the nearest function symbol at or before */
        const lp_sym *s = &b->syms[i];
        if (s->type != STT_FUNC)
            continue;
        if (s->size) /* a sized function ends before addr */
            return NULL;
        end = section_end(b, s->shndx);
        if (lo < b->nsyms && b->syms[lo].addr < end)
            end = b->syms[lo].addr;
        if (addr >= end)
            return NULL;
        if (sym_start)
            *sym_start = s->addr;
        return s->name;
    }
    return NULL;
}

/* ---- open / close ------------------------------------------------------ */

static bool file_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int open_all(lp_binary *b, const lp_binary_opts *o, lp_error *err)
{
    b->elf = lp_bin_open_elf(b->path, &b->fd, err);
    if (!b->elf)
        return -1;
    if (o->debug_path) {
        b->dbg_elf = lp_bin_open_elf(b->dbg_path, &b->dbg_fd, err);
        if (!b->dbg_elf)
            return lp_error_prefix(err, "--debug-binary");
    } else {
        b->dbg_elf = b->elf;
    }
    if (lp_bin_load_elf(b, err) || lp_bin_load_symbols(b, err) ||
        lp_bin_build_regions(b, err) || lp_bin_open_disasm(b, err))
        return -1;
    if (o->dwp_path && !file_exists(o->dwp_path))
        return lp_error_set(err, LP_EIO, "%s: --dwp file not found",
                            o->dwp_path);
    /* llvm's DWARFContext: --dwp, else "<DWARF file>.dwp" */
    b->dwp_given = o->dwp_path != NULL;
    if (o->dwp_path)
        b->dwp_path = strdup(o->dwp_path);
    else if (asprintf(&b->dwp_path, "%s.dwp", b->dbg_path) < 0)
        b->dwp_path = NULL;
    if (!b->dwp_path)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    if (lp_bin_load_dwarf(b, err))
        return -1;
    if (b->nmap == 0 && o->symtab_functions == LP_SYMTAB_IF_NO_DWARF &&
        lp_bin_functions_from_symtab(b, err))
        return -1;
    if (o->symtab_functions == LP_SYMTAB_LLVM22 &&
        lp_bin_functions_from_symtab22(b, o->detailed_warnings, err))
        return -1;
    lp_bin_mark_entries(b);
    bool fs = false;
    for (size_t i = 0; i < b->nsyms; i++)
        if (strcmp(b->syms[i].name, "__llvm_fs_discriminator__") == 0)
            fs = true;
    b->fs_disc = o->fs_discriminator < 0 ? fs : o->fs_discriminator > 0;
    b->no_file_names = o->no_file_names;
    return 0;
}

lp_binary *lp_binary_open(const char *path, const lp_binary_opts *opts,
                          lp_error *err)
{
    lp_binary_opts def = {NULL, NULL, -1, 0};
    const lp_binary_opts *o = opts ? opts : &def;
    if (!path)
        return lp_error_set(err, LP_EUSAGE, "no binary path given"), NULL;
    if (elf_version(EV_CURRENT) == EV_NONE)
        return lp_error_set(err, LP_EUNSUPP, "libelf: %s", elf_errmsg(-1)),
               NULL;
    lp_binary *b = calloc(1, sizeof *b);
    if (!b)
        return lp_error_set(err, LP_ENOMEM, "out of memory"), NULL;
    b->fd = b->dbg_fd = -1;
    b->path = strdup(path);
    b->dbg_path = strdup(o->debug_path ? o->debug_path : path);
    if (!b->path || !b->dbg_path) {
        lp_binary_close(b);
        return lp_error_set(err, LP_ENOMEM, "out of memory"), NULL;
    }
    if (open_all(b, o, err) != 0) {
        lp_binary_close(b);
        return NULL;
    }
    return b;
}

/* The mapped image of one ELF file (libelf's ELF_C_READ_MMAP: PROT_READ,
 * MAP_PRIVATE, never writable). Had mmap failed, elf_rawfile would read
 * the file into memory: lp_pages_release_ro then finds no file mapping
 * there and drops nothing. */
static void release_image(Elf *e)
{
    size_t n = 0;
    char *p = e ? elf_rawfile(e, &n) : NULL;

    if (p)
        lp_pages_release_ro(p, n);
}

void lp_binary_release_pages(lp_binary *b)
{
    if (!b)
        return;
    release_image(b->elf);
    if (b->dbg_elf != b->elf)
        release_image(b->dbg_elf);
}

void lp_binary_close(lp_binary *b)
{
    if (!b)
        return;
    lp_binary_warm_stop(b, false, NULL);
    lp_bin_free_dwarf(b);
    lp_xref_free(b->xrefs);
    lp_taken_free(b->taken);
    lp_bin_free_regions(b);
    lp_decoder_close(&b->dec);
    lp_str *s, *tmp;
    HASH_ITER(hh, b->strs, s, tmp) {
        HASH_DEL(b->strs, s);
        free(s->s);
        free(s);
    }
    if (b->dbg_elf && b->dbg_elf != b->elf)
        elf_end(b->dbg_elf);
    if (b->elf)
        elf_end(b->elf);
    if (b->dbg_fd >= 0)
        close(b->dbg_fd);
    if (b->fd >= 0)
        close(b->fd);
    for (size_t i = 0; i < b->nwarnings; i++)
        free(b->warnings[i]);
    free(b->warnings);
    free(b->syms);
    free(b->fsyms);
    free(b->segs);
    free(b->xsegs);
    free(b->build_id);
    free(b->build_id_hex);
    free(b->path);
    free(b->dbg_path);
    free(b->dwp_path);
    free(b);
}

/* ---- accessors ---------------------------------------------------------- */

const char *lp_binary_warning(const lp_binary *b, size_t i)
{
    return i < b->nwarnings ? b->warnings[i] : NULL;
}
const char *lp_binary_path(const lp_binary *b) { return b->path; }
enum lp_arch lp_binary_arch(const lp_binary *b) { return b->arch; }
bool lp_binary_is_pie(const lp_binary *b) { return b->is_pie; }
bool lp_binary_has_symbols(const lp_binary *b) { return b->nsyms > 0; }
bool lp_binary_has_dwarf(const lp_binary *b) { return b->dw != NULL; }
uint64_t lp_binary_preferred_base(const lp_binary *b)
{
    return b->preferred_base;
}
uint64_t lp_binary_first_loadable(const lp_binary *b)
{
    return b->first_loadable;
}
bool lp_binary_fs_discriminator(const lp_binary *b) { return b->fs_disc; }

size_t lp_binary_build_id(const lp_binary *b, const uint8_t **bytes)
{
    if (bytes)
        *bytes = b->build_id;
    return b->build_id_len;
}
const char *lp_binary_build_id_hex(const lp_binary *b)
{
    return b->build_id_hex;
}

size_t lp_binary_segments(const lp_binary *b, const lp_segment **segs)
{
    if (segs)
        *segs = b->segs;
    return b->nsegs;
}
size_t lp_binary_exec_segments(const lp_binary *b, const lp_segment **segs)
{
    if (segs)
        *segs = b->xsegs;
    return b->nxsegs;
}

/* ---- address conversion ------------------------------------------------ */

int lp_binary_offset_to_vaddr(const lp_binary *b, uint64_t off,
                              uint64_t *vaddr)
{
    /* Executable segments first: with lld layouts the page holding the
     * start of RX is also mapped as part of R; code addresses want RX. */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < b->nsegs; i++) {
            const lp_segment *s = &b->segs[i];
            if (((s->flags & PF_X) != 0) != (pass == 0))
                continue;
            if (off >= s->offset && off - s->offset < s->filesz) {
                *vaddr = off - s->offset + s->vaddr;
                return 0;
            }
        }
    }
    return -1;
}

int lp_binary_vaddr_to_offset(const lp_binary *b, uint64_t vaddr,
                              uint64_t *off)
{
    for (size_t i = 0; i < b->nsegs; i++) {
        const lp_segment *s = &b->segs[i];
        if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
            *off = vaddr - s->vaddr + s->offset;
            return 0;
        }
    }
    return -1;
}

int lp_binary_map_to_vaddr(const lp_binary *b, uint64_t map_start,
                           uint64_t map_pgoff, uint64_t addr, uint64_t *vaddr)
{
    if (addr < map_start)
        return -1;
    return lp_binary_offset_to_vaddr(b, addr - map_start + map_pgoff, vaddr);
}

int lp_binary_vaddr_to_map(const lp_binary *b, uint64_t map_start,
                           uint64_t map_pgoff, uint64_t vaddr, uint64_t *addr)
{
    uint64_t off;
    if (lp_binary_vaddr_to_offset(b, vaddr, &off) != 0 || off < map_pgoff)
        return -1;
    *addr = off - map_pgoff + map_start;
    return 0;
}

uint64_t lp_binary_canon_addr(const lp_binary *b, uint64_t base_address,
                              uint64_t addr)
{
    return addr - base_address + b->preferred_base;
}

const char *lp_binary_symbol_name(const lp_binary *b, uint64_t addr,
                                  uint64_t *sym_start)
{
    size_t lo = first_after(b->fsyms, b->nfsyms, addr);
    while (lo > 0) {
        const lp_sym *s = &b->fsyms[--lo];
        if (addr - s->addr < s->size) {
            if (sym_start)
                *sym_start = s->addr;
            return s->name;
        }
        if (lo > 0 && b->fsyms[lo - 1].addr != s->addr)
            break;
    }
    return NULL;
}
