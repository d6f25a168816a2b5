/*
 * listing.c - llvm-profgen's --show-disassembly-only listing
 * (ProfiledBinary::disassemble / dissassembleSymbol with ShowDisassembly):
 * "Disassembly of FILE:", then per executable section in section-header
 * order its header ("Disassembly of section .text [0xSTART, 0xEND]:"),
 * nothing more for .plt, and for each symbol of the section's .symtab, in
 * (address, name) order, "<name>:" and the instructions from its address
 * to the next symbol's (bytes up to the section end), each as "%8x:" and
 * the instruction text, padded to column 40 and followed by the source
 * location with --show-source-locations. Owns the printing only: the text
 * of an instruction is insttext.c's, stacks are symbolize.c's.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"
#include "lbr2prof/listing.h"

/* llvm's PseudoProbeDwarfDiscriminator::extractProbeIndex */
static uint32_t probe_index(uint32_t d) { return (d >> 3) & 0xffff; }

int lp_binary_print_location(lp_binary *b, uint64_t addr,
                             const lp_listing_opts *o, char *out, size_t cap,
                             lp_error *err)
{
    const lp_frame *f;
    size_t n, len = 0;

    if (cap)
        out[0] = 0;
    if (lp_binary_symbolize(b, addr, &f, &n, err))
        return -1;
    for (size_t i = n; i-- > 0 && len + 1 < cap;) {
        const char *name = f[i].func;
        size_t nl = o->canonical_names ? lp_canonical_fn_len(name)
                                       : strlen(name);
        uint32_t line = o->probe_line_offsets ? probe_index(f[i].discriminator)
                                              : f[i].line_offset;
        uint32_t disc = o->probe_line_offsets ? 0 : f[i].discriminator;
        int k = snprintf(out + len, cap - len, "%s%.*s:%u", i + 1 < n ? " @ "
                         : "", (int)nl, name, line);
        if (k > 0)
            len += (size_t)k;
        if (disc && len + 1 < cap && (k = snprintf(out + len, cap - len,
                                                   ".%u", disc)) > 0)
            len += (size_t)k;
    }
    if (len >= cap && cap)
        out[cap - 1] = 0;
    return 0;
}

/* ---- one symbol at a time -------------------------------------------- */

typedef struct lister {
    lp_binary *b;
    const lp_listing_opts *o;
    FILE *out;
    csh cs;
    cs_insn *in;
    lp_error *err;
} lister;

typedef struct lsym {
    uint64_t addr;
    const char *name;
} lsym;

static int lsym_cmp(const void *x, const void *y)
{
    const lsym *a = x, *c = y;

    if (a->addr != c->addr)
        return a->addr < c->addr ? -1 : 1;
    return strcmp(a->name, c->name);
}

static const char *prefix_inst(const lp_binary *b, const uint8_t *p,
                               size_t n)
{
    return b->arch == LP_ARCH_X86_64 ? lp_x86_prefix_inst(p, n) : NULL;
}

/* One line; returns the bytes the instruction took (>= 1). */
static size_t print_inst(lister *l, const uint8_t *code, size_t left,
                         uint64_t addr, char *loc, size_t loccap)
{
    char text[320];
    const uint8_t *c = code;
    size_t n = left, size = 1, cur;
    uint64_t a = addr;
    const char *pre = prefix_inst(l->b, code, left);

    if (l->o->before_inst)
        l->o->before_inst(l->o->ctx, addr, l->out);
    if (pre) {
        snprintf(text, sizeof text, "\t%s", pre);
    } else if (cs_disasm_iter(l->cs, &c, &n, &a, l->in)) {
        lp_inst li = {0};
        l->b->ops->classify(l->in, &li);
        lp_inst_text(l->in, l->b->arch, li.kind != LP_INST_OTHER &&
                     li.kind != LP_INST_RET && !li.indirect, text,
                     sizeof text);
        size = l->in->size;
    } else {
        snprintf(text, sizeof text, "\t<unknown>");
    }
    fprintf(l->out, "%8" PRIx64 ":%s", addr, text);
    if (l->o->source_locations) {
        cur = strlen(text);
        if (lp_binary_print_location(l->b, addr, l->o, loc, loccap, NULL))
            loc[0] = 0;     /* an unreadable DWARF unit: no location */
        fprintf(l->out, "%*s%s", cur < 40 ? (int)(40 - cur) : 0, "", loc);
    }
    fputc('\n', l->out);
    return size;
}

static bool wanted(const lp_listing_opts *o, const char *name, size_t len)
{
    if (!o->nfunctions)
        return true;
    for (size_t i = 0; i < o->nfunctions; i++)
        if (strlen(o->functions[i]) == len &&
            !strncmp(o->functions[i], name, len))
            return true;
    return false;
}

/* "<name>:" and the code of [start, end) (bytes up to the section end). */
static void print_symbol(lister *l, const lsym *s, uint64_t end,
                         const GElf_Shdr *sh, const Elf_Data *d)
{
    size_t len = l->o->canonical_names ? lp_canonical_fn_len(s->name)
                                       : strlen(s->name);
    char loc[4096];

    if (!wanted(l->o, s->name, len))
        return;
    fprintf(l->out, "<%.*s>:\n", (int)len, s->name);
    for (uint64_t a = s->addr; a < end && a >= sh->sh_addr &&
                               a - sh->sh_addr < d->d_size;) {
        size_t off = (size_t)(a - sh->sh_addr);
        a += print_inst(l, (const uint8_t *)d->d_buf + off, d->d_size - off,
                        a, loc, sizeof loc);
    }
    fputc('\n', l->out);
}

/* The section's symbols (the code file's .symtab only, as llvm's
 * Obj->symbols()), a section symbol named after its section. */
static lsym *section_symbols(const lp_binary *b, size_t shndx,
                             const char *secname, size_t *n)
{
    lsym *v = malloc((b->nsyms ? b->nsyms : 1) * sizeof *v);

    *n = 0;
    if (!v || !b->code_symtab)
        return v;
    for (size_t i = 0; i < b->nsyms; i++)
        if (b->syms[i].shndx == shndx)
            v[(*n)++] = (lsym){b->syms[i].addr, b->syms[i].type == STT_SECTION
                                                    ? secname
                                                    : b->syms[i].name};
    qsort(v, *n, sizeof *v, lsym_cmp);
    return v;
}

static int print_section(lister *l, Elf_Scn *scn, const GElf_Shdr *sh,
                         const char *name)
{
    Elf_Data *d;
    lsym *syms;
    size_t n;

    fprintf(l->out, "\nDisassembly of section %s [0x%" PRIx64 ", 0x%" PRIx64
            "]:\n\n", name, (uint64_t)sh->sh_addr,
            (uint64_t)(sh->sh_addr + sh->sh_size));
    if (!strcmp(name, ".plt") || sh->sh_type == SHT_NOBITS ||
        !(d = elf_getdata(scn, NULL)) || !d->d_buf)
        return 0;
    if (!(syms = section_symbols(l->b, elf_ndxscn(scn), name, &n)))
        return lp_error_set(l->err, LP_ENOMEM, "out of memory");
    for (size_t i = 0; i < n; i++)
        print_symbol(l, &syms[i], i + 1 < n ? syms[i + 1].addr
                                           : sh->sh_addr + sh->sh_size, sh, d);
    free(syms);
    return 0;
}

static int open_printer(lister *l)
{
    const lp_arch_ops *ops = l->b->ops;

    if (cs_open(ops->cs_arch, ops->cs_mode, &l->cs) != CS_ERR_OK)
        return lp_error_set(l->err, LP_EUNSUPP, "capstone cannot open the "
                            "disassembler");
    if ((ops->arch == LP_ARCH_X86_64 &&
         cs_option(l->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT) != CS_ERR_OK) ||
        cs_option(l->cs, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
        !(l->in = cs_malloc(l->cs))) {
        cs_close(&l->cs);
        return lp_error_set(l->err, LP_EUNSUPP, "capstone: no AT&T syntax or "
                            "detail");
    }
    return 0;
}

int lp_binary_print_listing(lp_binary *b, const lp_listing_opts *o,
                            FILE *out, lp_error *err)
{
    lister l = {b, o, out, 0, NULL, err};
    size_t shstrndx;
    int rc = 0;

    if (open_printer(&l))
        return -1;
    if (elf_getshdrstrndx(b->elf, &shstrndx) != 0)
        shstrndx = 0;
    fprintf(out, "\nDisassembly of %s:\n", o->name ? o->name : b->path);
    for (Elf_Scn *s = NULL; rc == 0 && (s = elf_nextscn(b->elf, s));) {
        GElf_Shdr sh;
        const char *nm;
        if (!gelf_getshdr(s, &sh) || !(sh.sh_flags & SHF_EXECINSTR) ||
            !sh.sh_size)
            continue;
        nm = elf_strptr(b->elf, shstrndx, sh.sh_name);
        rc = print_section(&l, s, &sh, nm ? nm : "");
    }
    cs_free(l.in, 1);
    cs_close(&l.cs);
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        return lp_error_set(err, LP_EIO, "writing the listing failed");
    return rc;
}
