/*
 * table.c - one ELF file's call frame information: the file opened once
 * (.eh_frame through dwarf_getcfi_elf, .debug_frame through dwarf_getcfi
 * for what .eh_frame does not cover), its PT_LOAD segments (file offset ->
 * link-time address), and its CFI rows - each read from libdw once
 * (dwarf_cfi_addrframe, dwarf_frame_cfa, dwarf_frame_register), compiled
 * into an lp_cfi_row (plain rules recognised, other expressions copied)
 * and kept in an address-sorted table behind a direct-mapped cache of
 * addresses. Owns lp_cfi; not the evaluation of rules (expr.c, walk.c).
 */
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfiunwind/cfi_internal.h"
#include "util/grow.h"
#include "util/hash.h"

/* the row of addresses no CFI covers (cached like a row) */
static const lp_cfi_row cfi_none;

/* ---- opening ---------------------------------------------------------------- */

static int read_loads(lp_cfi *c, lp_error *err)
{
    size_t n, i;
    GElf_Phdr ph;

    if (elf_getphdrnum(c->elf, &n) != 0)
        return lp_error_set(err, LP_EFORMAT, "%s: no program headers: %s",
                            c->path, elf_errmsg(-1));
    if (!(c->loads = calloc(n ? n : 1, sizeof *c->loads)))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (i = 0; i < n; i++)
        if (gelf_getphdr(c->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
            c->loads[c->nloads++] = (cfi_load){ph.p_offset, ph.p_filesz, ph.p_vaddr};
    return 0;
}

static int open_elf(lp_cfi *c, lp_error *err)
{
    GElf_Ehdr eh;

    if ((c->fd = open(c->path, O_RDONLY | O_CLOEXEC)) < 0)
        return lp_error_set(err, LP_EIO, "%s: cannot open: %s", c->path,
                            strerror(errno));
    elf_version(EV_CURRENT);
    if (!(c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL)) ||
        elf_kind(c->elf) != ELF_K_ELF || !gelf_getehdr(c->elf, &eh))
        return lp_error_set(err, LP_EFORMAT, "%s: not an ELF file", c->path);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64)
        return lp_error_set(err, LP_EUNSUPP,
                            "%s: not a 64-bit x86-64 ELF file (class %d, "
                            "machine %d): its CFI is not unwound",
                            c->path, eh.e_ident[EI_CLASS], eh.e_machine);
    return read_loads(c, err);
}

lp_cfi *lp_cfi_open(const char *path, lp_error *err)
{
    lp_cfi *c = calloc(1, sizeof *c);

    if (!c || !(c->path = strdup(path))) {
        free(c);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    c->fd = -1;
    if (open_elf(c, err)) {
        lp_cfi_close(c);
        return NULL;
    }
    c->eh = dwarf_getcfi_elf(c->elf);
    if ((c->dw = dwarf_begin_elf(c->elf, DWARF_C_READ, NULL)))
        c->dbg = dwarf_getcfi(c->dw);
    if (!c->eh && !c->dbg) {
        lp_error_set(err, LP_EFORMAT, "%s: no call frame information (neither "
                     ".eh_frame nor .debug_frame)", path);
        lp_cfi_close(c);
        return NULL;
    }
    return c;
}

void lp_cfi_close(lp_cfi *c)
{
    size_t i;

    if (!c)
        return;
    for (i = 0; i < c->nowned; i++)
        free(c->owned[i]);
    free(c->owned);
    free(c->rows);
    free(c->loads);
    if (c->eh)
        dwarf_cfi_end(c->eh);
    if (c->dw)
        dwarf_end(c->dw);       /* also ends c->dbg */
    if (c->elf)
        elf_end(c->elf);
    if (c->fd >= 0)
        close(c->fd);
    free(c->path);
    free(c);
}

const char *lp_cfi_path(const lp_cfi *c)
{
    return c->path;
}

const lp_cfi_stats *lp_cfi_stats_get(const lp_cfi *c)
{
    return &c->st;
}

int lp_cfi_vaddr_of_offset(const lp_cfi *c, uint64_t off, uint64_t *vaddr)
{
    size_t i;

    for (i = 0; i < c->nloads; i++)
        if (off >= c->loads[i].offset && off - c->loads[i].offset < c->loads[i].filesz) {
            *vaddr = off - c->loads[i].offset + c->loads[i].vaddr;
            return 0;
        }
    return -1;
}

/* ---- compiling a row ---------------------------------------------------------- */

/* A register rule from libdw's location description (dwarf_frame_register's
 * conventions: no ops and NULL = same value, no ops otherwise = undefined,
 * a trailing DW_OP_stack_value = a value, not a location). The plain shapes
 * become offsets; anything else keeps its ops (copied by the caller). */
static void reg_rule(const Dwarf_Op *ops, size_t n, lp_cfi_rule *r)
{
    bool value = n > 0 && ops[n - 1].atom == DW_OP_stack_value;
    size_t m = value ? n - 1 : n;

    memset(r, 0, sizeof *r);
    if (n == 0) {
        r->kind = ops ? LP_CFI_UNDEF : LP_CFI_SAME;
        return;
    }
    if (m >= 1 && m <= 2 && ops[0].atom == DW_OP_call_frame_cfa &&
        (m == 1 || ops[1].atom == DW_OP_plus_uconst)) {
        r->kind = value ? LP_CFI_CFA_PLUS : LP_CFI_AT_CFA;
        r->off = m == 2 ? (int64_t)ops[1].number : 0;
        return;
    }
    if (n == 1 && ops[0].atom == DW_OP_regx && ops[0].number < LP_CFI_NREGS) {
        r->kind = LP_CFI_IN_REG;
        r->reg = (uint8_t)ops[0].number;
        return;
    }
    r->kind = value ? LP_CFI_EXPR : LP_CFI_AT_EXPR;
    r->nops = (uint16_t)m;
}

static void cfa_rule(const Dwarf_Op *ops, size_t n, lp_cfi_rule *r)
{
    memset(r, 0, sizeof *r);
    if (n == 0) {
        r->kind = LP_CFI_UNDEF;
    } else if (n == 1 && ops[0].atom == DW_OP_bregx && ops[0].number < LP_CFI_NREGS) {
        r->kind = LP_CFI_CFA_PLUS;
        r->reg = (uint8_t)ops[0].number;
        r->off = (int64_t)ops[0].number2;
    } else {
        r->kind = LP_CFI_EXPR;
        r->nops = (uint16_t)n;
    }
}

/* The ops of each rule, as libdw gives them (valid while f lives). */
typedef struct raw_rules {
    Dwarf_Op *ops[LP_CFI_NREGS + 1];   /* [LP_CFI_NREGS]: the CFA */
    size_t nops[LP_CFI_NREGS + 1];
    Dwarf_Op mem[LP_CFI_NREGS][3];
} raw_rules;

static int read_rules(Dwarf_Frame *f, int ra, raw_rules *rr)
{
    int i, col;

    if (dwarf_frame_cfa(f, &rr->ops[LP_CFI_NREGS], &rr->nops[LP_CFI_NREGS]) != 0)
        return -1;
    for (i = 0; i < LP_CFI_NREGS; i++) {
        col = i == LP_CFI_RA ? ra : i;
        if (dwarf_frame_register(f, col, rr->mem[i], &rr->ops[i], &rr->nops[i]) != 0)
            return -1;
    }
    return 0;
}

/* libdw 0.188's x86-64 initial rules (backends/x86_64_cfi.c) name
 * register 0 (rax) where the psABI's callee-saved rbx (3) belongs: an rbx
 * no CFI instruction mentions comes back undefined and rax "same value".
 * Put the psABI's rules back (rax is caller-saved, rbx callee-saved); an
 * explicit DW_CFA_undefined for rbx, which no compiler emits, reads as
 * "same value" too. */
static void psabi_fix(unsigned reg, lp_cfi_rule *r)
{
    if (reg == LP_CFI_RBX && r->kind == LP_CFI_UNDEF)
        r->kind = LP_CFI_SAME;
    else if (reg == LP_CFI_RAX && r->kind == LP_CFI_SAME)
        r->kind = LP_CFI_UNDEF;
}

static void copy_ops(lp_cfi_op *dst, const Dwarf_Op *src, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        dst[i] = (lp_cfi_op){src[i].atom, src[i].number, src[i].number2};
}

static int keep(lp_cfi *c, void *p)
{
    if (lp_grow_bytes((void **)&c->owned, &c->owned_cap,
                      (c->nowned + 1) * sizeof *c->owned, 64 * sizeof *c->owned))
        return -1;
    c->owned[c->nowned++] = p;
    return 0;
}

/* Compile libdw's frame into a row owned by c (NULL: OOM or malformed). */
static lp_cfi_row *compile(lp_cfi *c, Dwarf_Frame *f, lp_error *err)
{
    Dwarf_Addr start, end;
    bool sig = false;
    int ra = dwarf_frame_info(f, &start, &end, &sig), i;
    size_t total = 0;
    raw_rules rr;
    lp_cfi_row *row;
    lp_cfi_op *o;

    if (ra < 0 || read_rules(f, ra, &rr)) {
        lp_error_set(err, LP_EFORMAT, "%s: malformed CFI at 0x%llx: %s", c->path,
                     (unsigned long long)start, dwarf_errmsg(-1));
        return NULL;
    }
    for (i = 0; i <= LP_CFI_NREGS; i++)
        total += rr.nops[i] > LP_CFI_MAX_OPS ? 0 : rr.nops[i];
    if (!(row = calloc(1, sizeof *row + total * sizeof(lp_cfi_op))) || keep(c, row)) {
        free(row);
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    row->start = start;
    row->end = end;
    row->signal = sig;
    o = (lp_cfi_op *)(row + 1);
    cfa_rule(rr.ops[LP_CFI_NREGS], rr.nops[LP_CFI_NREGS], &row->cfa);
    for (i = 0; i <= LP_CFI_NREGS; i++) {
        lp_cfi_rule *r = i == LP_CFI_NREGS ? &row->cfa : &row->regs[i];
        if (i < LP_CFI_NREGS) {
            reg_rule(rr.ops[i], rr.nops[i], r);
            psabi_fix((unsigned)i, r);
        }
        if (r->nops == 0)
            continue;
        if (rr.nops[i] > LP_CFI_MAX_OPS) {     /* too long: not evaluated */
            r->nops = UINT16_MAX;
            continue;
        }
        copy_ops(o, rr.ops[i], r->nops);
        r->ops = o;
        o += r->nops;
    }
    return row;
}

/* ---- the row table --------------------------------------------------------- */

/* Index of the first row starting above vaddr. */
static size_t upper(const lp_cfi *c, uint64_t vaddr)
{
    size_t lo = 0, hi = c->nrows;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->rows[mid]->start <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static const lp_cfi_row *table_find(const lp_cfi *c, uint64_t vaddr)
{
    size_t i = upper(c, vaddr);

    return i > 0 && vaddr < c->rows[i - 1]->end ? c->rows[i - 1] : NULL;
}

/* Insert a row unless it overlaps one (odd CFI: then it is only cached
 * per address). 0, or -1 on OOM. */
static int table_add(lp_cfi *c, lp_cfi_row *r)
{
    size_t i = upper(c, r->start);

    if ((i > 0 && c->rows[i - 1]->end > r->start) ||
        (i < c->nrows && c->rows[i]->start < r->end) || r->end <= r->start)
        return 0;
    if (lp_grow_bytes((void **)&c->rows, &c->rows_cap,
                      (c->nrows + 1) * sizeof *c->rows, 256 * sizeof *c->rows))
        return -1;
    memmove(c->rows + i + 1, c->rows + i, (c->nrows - i) * sizeof *c->rows);
    c->rows[i] = r;
    c->nrows++;
    return 0;
}

/* libdw's frame at vaddr: .eh_frame first, then .debug_frame. NULL when
 * neither covers it (libdw's error is not told apart from "no FDE"). */
static Dwarf_Frame *frame_at(lp_cfi *c, uint64_t vaddr)
{
    Dwarf_Frame *f = NULL;

    if (c->eh && dwarf_cfi_addrframe(c->eh, vaddr, &f) == 0)
        return f;
    if (c->dbg && dwarf_cfi_addrframe(c->dbg, vaddr, &f) == 0)
        return f;
    return NULL;
}

static cfi_slot *slot_of(lp_cfi *c, uint64_t vaddr)
{
    return &c->slots[lp_hash_fib(vaddr, CFI_SLOT_BITS)];
}

int lp_cfi_row_at(lp_cfi *c, uint64_t vaddr, const lp_cfi_row **row,
                  lp_error *err)
{
    cfi_slot *s = slot_of(c, vaddr);
    const lp_cfi_row *r;
    lp_cfi_row *nr;
    Dwarf_Frame *f;

    c->st.lookups++;
    if (s->row && s->addr == vaddr) {
        c->st.addr_hits++;
        r = s->row;
    } else if ((r = table_find(c, vaddr))) {
        c->st.row_hits++;
    } else if (!(f = frame_at(c, vaddr))) {
        c->st.misses++;
        r = &cfi_none;
    } else {
        nr = compile(c, f, err);
        free(f);
        if (!nr || table_add(c, nr))
            return nr ? lp_error_set(err, LP_ENOMEM, "out of memory") : -1;
        c->st.rows++;
        r = nr;
    }
    s->addr = vaddr;
    s->row = r;
    if (r == &cfi_none)
        return 0;
    *row = r;
    return 1;
}
