/*
 * addrtaken.c - which function entries an indirect call or jump may reach:
 * those whose address the program holds somewhere. A caller inferred from
 * the direct calls alone (src/unwind/infer.c) is proven only for a function
 * no indirect call can enter. One pass over the binary, at the first
 * question, collects every entry that
 *  - some loaded data holds as an 8-byte value (any byte offset; 4-byte
 *    values too in a non-PIE binary); the dynamic relocations are loaded
 *    data too, so a PIE's R_X86_64_RELATIVE addends count (lld leaves the
 *    relocated word 0),
 *  - code names by a RIP-relative operand (a ModRM of the RIP form; the
 *    displacement counted from the ends of instructions with 0, 1, 2 or 4
 *    immediate bytes after it) or, in a non-PIE binary, by an absolute
 *    4- or 8-byte immediate or displacement,
 *  - the dynamic symbol table defines (another module may call it, and
 *    its relocations against the symbol hold no address).
 * Byte patterns, not decoding: a superset of the real ones, so "not taken"
 * is proven and "taken" may be a false alarm (a lost inference, never a
 * wrong one). x86-64 only, as xref.c. Owns that set; not the direct
 * references (xref.c) nor decoding (disasm.c).
 */
#include <stdlib.h>
#include <string.h>

#include "binary/binary_internal.h"
#include "util/grow.h"

struct lp_taken_index {
    uint64_t *e;                /* sorted, unique after build */
    size_t n, cap;
    uint64_t lo, hi;            /* bounds of every entry: a cheap filter */
};

void lp_taken_free(lp_taken_index *t)
{
    if (t)
        free(t->e);
    free(t);
}

/* v into the set when it is a function's entry. 0, or -1 (no memory). */
static int note(lp_binary *b, lp_taken_index *t, uint64_t v)
{
    const lp_func_range *r;

    if (v < t->lo || v > t->hi || !(r = lp_binary_func_range(b, v)) ||
        !r->is_entry || r->start != v)
        return 0;
    if (lp_grow_array(&t->e, &t->cap, t->n + 1, sizeof *t->e, 1024))
        return -1;
    t->e[t->n++] = v;
    return 0;
}

/* The absolute values at p: 8 bytes, and 4 (zero- and sign-extended)
 * when the binary is not position-independent. */
static int note_abs(lp_binary *b, lp_taken_index *t, const uint8_t *p,
                    size_t left)
{
    uint64_t q;
    int32_t d;

    if (left >= 8) {
        memcpy(&q, p, 8);
        if (note(b, t, q))
            return -1;
    }
    if (b->is_pie || left < 4)
        return 0;
    memcpy(&d, p, 4);
    return note(b, t, (uint32_t)d) || note(b, t, (uint64_t)(int64_t)d) ? -1 : 0;
}

/* A RIP-relative operand whose ModRM is at p (address a). */
static int note_rip(lp_binary *b, lp_taken_index *t, const uint8_t *p,
                    size_t left, uint64_t a)
{
    static const unsigned imm[] = {0, 1, 2, 4};
    int32_t d;
    size_t i;

    if ((p[0] & 0xc7) != 0x05 || left < 5)
        return 0;
    memcpy(&d, p + 1, 4);
    for (i = 0; i < sizeof imm / sizeof *imm; i++)
        if (note(b, t, a + 5 + imm[i] + (uint64_t)(int64_t)d))
            return -1;
    return 0;
}

static int scan_bytes(lp_binary *b, lp_taken_index *t,
                      const uint8_t *p, size_t n, uint64_t addr, bool code)
{
    size_t off;

    for (off = 0; off < n; off++) {
        if ((!code || !b->is_pie) && note_abs(b, t, p + off, n - off))
            return -1;
        if (code && note_rip(b, t, p + off, n - off, addr + off))
            return -1;
    }
    return 0;
}

/* The functions .dynsym defines: callable from other modules. */
static int scan_dynsym(lp_binary *b, lp_taken_index *t, Elf_Scn *s)
{
    Elf_Data *d = elf_getdata(s, NULL);
    GElf_Sym sym;
    int i;

    for (i = 0; d && gelf_getsym(d, i, &sym); i++)
        if (sym.st_shndx != SHN_UNDEF && GELF_ST_TYPE(sym.st_info) == STT_FUNC &&
            note(b, t, sym.st_value))
            return -1;
    return 0;
}

static int scan_section(lp_binary *b, lp_taken_index *t, Elf_Scn *s)
{
    GElf_Shdr sh;
    Elf_Data *d;

    if (!gelf_getshdr(s, &sh))
        return 0;
    if (sh.sh_type == SHT_DYNSYM)
        return scan_dynsym(b, t, s);
    if (!(sh.sh_flags & SHF_ALLOC) || sh.sh_type == SHT_NOBITS ||
        !(d = lp_bin_scn_data(s, &sh)) || !d->d_buf)
        return 0;
    return scan_bytes(b, t, d->d_buf, d->d_size, sh.sh_addr,
                      (sh.sh_flags & SHF_EXECINSTR) != 0);
}

static int u64_cmp(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, c = *(const uint64_t *)pb;

    return a < c ? -1 : a > c;
}

static lp_taken_index *build(lp_binary *b, lp_error *err)
{
    lp_taken_index *t = calloc(1, sizeof *t);
    Elf_Scn *s = NULL;

    if (!t)
        goto oom;
    if (b->nmap) {
        t->lo = b->map_start[0];
        t->hi = b->map_start[b->nmap - 1];
    } else {
        t->lo = 1;
    }
    while ((s = elf_nextscn(b->elf, s)))
        if (scan_section(b, t, s))
            goto oom;
    if (t->n)
        qsort(t->e, t->n, sizeof *t->e, u64_cmp);
    return t;
oom:
    lp_taken_free(t);
    lp_error_set(err, LP_ENOMEM, "%s: out of memory indexing taken addresses",
                 b->path);
    return NULL;
}

int lp_binary_addr_taken(lp_binary *b, uint64_t entry, lp_error *err)
{
    lp_taken_index *t;
    size_t l = 0, h;

    if (b->arch != LP_ARCH_X86_64)
        return lp_error_set(err, LP_EUSAGE, "%s: taken addresses are only "
                            "indexed for x86-64", b->path);
    if (!b->taken && !(b->taken = build(b, err)))
        return -1;
    t = b->taken;
    h = t->n;
    while (l < h) {
        size_t mid = l + (h - l) / 2;
        if (t->e[mid] < entry)
            l = mid + 1;
        else
            h = mid;
    }
    return l < t->n && t->e[l] == entry;
}
