/*
 * elfsec.c - what the probe decoder reads from an ELF file: the bytes of
 * .pseudo_probe_desc and .pseudo_probe (several sections of one name are
 * concatenated, as the decoder reads them one after the other) and the
 * .symtab symbols (the function start addresses the probe encoding is
 * relative to). Owns lp_probes_open/free and lp_probes_present; the
 * decoding is decode.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/probe_internal.h"
#include "util/grow.h"

typedef struct pb_elf {
    int fd;
    Elf *e;
    size_t shstrndx;
} pb_elf;

static int elf_in(pb_elf *x, const char *path, lp_error *err)
{
    x->e = NULL;
    if ((x->fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return lp_error_set(err, LP_EIO, "%s: cannot open: %s", path,
                            strerror(errno));
    elf_version(EV_CURRENT);
    x->e = elf_begin(x->fd, ELF_C_READ, NULL);
    if (!x->e || elf_kind(x->e) != ELF_K_ELF ||
        elf_getshdrstrndx(x->e, &x->shstrndx) != 0)
        return lp_error_set(err, LP_EFORMAT, "%s: not an ELF file with "
                            "section headers (%s)", path, elf_errmsg(-1));
    return 0;
}

static void elf_out(pb_elf *x)
{
    if (x->e)
        elf_end(x->e);
    if (x->fd >= 0)
        close(x->fd);
}

static const char *scn_name(const pb_elf *x, Elf_Scn *s, GElf_Shdr *sh)
{
    if (!gelf_getshdr(s, sh))
        return NULL;
    return elf_strptr(x->e, x->shstrndx, sh->sh_name);
}

int lp_probes_present(const char *path, lp_error *err)
{
    pb_elf x;
    Elf_Scn *s = NULL;
    GElf_Shdr sh;
    const char *n;
    int desc = 0, probe = 0;

    if (elf_in(&x, path, err)) {
        elf_out(&x);
        return err && err->code == LP_EIO ? -1 : 0;
    }
    while ((s = elf_nextscn(x.e, s))) {
        if (!(n = scn_name(&x, s, &sh)))
            continue;
        desc |= strcmp(n, ".pseudo_probe_desc") == 0;
        probe |= strcmp(n, ".pseudo_probe") == 0;
    }
    elf_out(&x);
    return desc && probe;
}

/* Append a section's bytes (decompressed if need be) to *buf. */
static int append_scn(const char *path, const char *name, Elf_Scn *s,
                      unsigned char **buf, size_t *len, lp_error *err)
{
    GElf_Shdr sh;
    Elf_Data *d;
    size_t cap = *len;

    if (gelf_getshdr(s, &sh) && (sh.sh_flags & SHF_COMPRESSED) &&
        elf_compress(s, 0, 0) < 0)
        return lp_error_set(err, LP_EFORMAT, "%s: %s: cannot decompress (%s)",
                            path, name, elf_errmsg(-1));
    if (!gelf_getshdr(s, &sh) || sh.sh_type == SHT_NOBITS ||
        !(d = elf_getdata(s, NULL)))
        return lp_error_set(err, LP_EFORMAT, "%s: %s: section data unreadable "
                            "(%s)", path, name, elf_errmsg(-1));
    if (d->d_size == 0)
        return 0;
    if (lp_grow_bytes((void **)buf, &cap, *len + d->d_size, d->d_size))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    memcpy(*buf + *len, d->d_buf, d->d_size);
    *len += d->d_size;
    return 0;
}

static int sym_cmp(const void *a, const void *b)
{
    const pb_sym *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* .symtab: every symbol's name and value (LLVM's ObjectFile::symbols()).
 * Names point into a copy of the string table; sorted by address, ties in
 * table order. */
static int read_syms(lp_probes *p, pb_elf *x, Elf_Scn *s, GElf_Shdr *sh,
                     lp_error *err)
{
    Elf_Data *d = elf_getdata(s, NULL), *sd;
    Elf_Scn *ss = elf_getscn(x->e, sh->sh_link);
    size_t i, n, slen;
    GElf_Sym sym;

    if (!d || !ss || !(sd = elf_getdata(ss, NULL)) || !sh->sh_entsize)
        return 0;               /* no usable symbols: no start addresses */
    n = d->d_size / sh->sh_entsize;
    slen = sd->d_size;
    if (!(p->strtab = malloc(slen + 1)) ||
        !(p->syms = calloc(n ? n : 1, sizeof *p->syms)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    if (slen)
        memcpy(p->strtab, sd->d_buf, slen);
    p->strtab[slen] = 0;
    for (i = 0; i < n; i++) {
        if (!gelf_getsym(d, (int)i, &sym) || sym.st_name >= slen)
            continue;
        p->syms[p->nsyms].addr = sym.st_value;
        p->syms[p->nsyms].name = p->strtab + sym.st_name;
        p->syms[p->nsyms].order = (uint32_t)i;
        p->nsyms++;
    }
    qsort(p->syms, p->nsyms, sizeof *p->syms, sym_cmp);
    return 0;
}

static int read_sections(lp_probes *p, pb_elf *x, lp_error *err)
{
    Elf_Scn *s = NULL;
    GElf_Shdr sh;
    const char *n;
    bool desc = false, probe = false;

    while ((s = elf_nextscn(x->e, s))) {
        if (!(n = scn_name(x, s, &sh)))
            continue;
        if (strcmp(n, ".pseudo_probe_desc") == 0) {
            desc = true;
            if (append_scn(p->path, n, s, &p->desc_sec, &p->desc_len, err))
                return -1;
        } else if (strcmp(n, ".pseudo_probe") == 0) {
            probe = true;
            if (append_scn(p->path, n, s, &p->probe_sec, &p->probe_len, err))
                return -1;
        } else if (sh.sh_type == SHT_SYMTAB && !p->syms &&
                   read_syms(p, x, s, &sh, err)) {
            return -1;
        }
    }
    if (!desc || !probe)
        return lp_error_set(err, LP_EUNSUPP, "%s: no pseudo probes (%s "
                            "missing)", p->path, desc ? ".pseudo_probe"
                                                      : ".pseudo_probe_desc");
    return 0;
}

lp_probes *lp_probes_from_bytes(const void *desc, size_t desc_len,
                                const void *probe, size_t probe_len,
                                const char *name, lp_error *err)
{
    lp_probes *p = calloc(1, sizeof *p);

    if (!p || !(p->path = strdup(name)) ||
        !(p->desc_sec = malloc(desc_len + 1)) ||
        !(p->probe_sec = malloc(probe_len + 1))) {
        lp_probes_free(p);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    if (desc_len)
        memcpy(p->desc_sec, desc, desc_len);
    if (probe_len)
        memcpy(p->probe_sec, probe, probe_len);
    p->desc_len = desc_len;
    p->probe_len = probe_len;
    if (pb_decode_descs(p, err)) {
        lp_probes_free(p);
        return NULL;
    }
    return p;
}

lp_probes *lp_probes_open(const char *path, lp_error *err)
{
    lp_probes *p = calloc(1, sizeof *p);
    pb_elf x = {.fd = -1};
    int rc;

    if (!p || !(p->path = strdup(path))) {
        free(p);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    rc = elf_in(&x, path, err) || read_sections(p, &x, err) ||
         pb_decode_descs(p, err);
    elf_out(&x);
    if (rc) {
        lp_probes_free(p);
        return NULL;
    }
    return p;
}

void lp_probes_free(lp_probes *p)
{
    if (!p)
        return;
    free(p->path);
    free(p->desc_sec);
    free(p->probe_sec);
    free(p->syms);
    free(p->strtab);
    free(p->descs);
    free(p->names);
    free(p->probes);
    free(p->nodes);
    free(p->tops);
    free(p->by_addr);
    free(p->addr_keys);
    free(p->bkt);
    free(p);
}
