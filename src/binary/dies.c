/*
 * dies.c - the walk over every DIE of a unit, pre-order (llvm's CU.dies()
 * order), with each DIE parsed once. libdw's dwarf_siblingof on a DIE with
 * children re-reads its whole subtree to find where it ends (clang emits
 * no DW_AT_sibling), so a walk made of dwarf_child + dwarf_siblingof reads
 * a DIE at depth d about d times. Here the walk of a children list says
 * where the list ended, and the DIE after a subtree is made from that
 * address, as dwarf_siblingof makes it. The one place libdw does not tell where a
 * DIE ends - a childless DIE last in its list, or an empty children list -
 * is found from its attributes (dwarf_getattrs and the size of the last
 * one's form). Whatever cannot be told for sure falls back to
 * dwarf_siblingof, i.e. to the plain walk.
 */
#include <dwarf.h>
#include <string.h>

#include "binary/binary_internal.h"

#define MAX_DEPTH 256

int lp_bin_die_unit(Dwarf_Die *unit, lp_die_unit *u)
{
    Dwarf_Half ver;
    uint8_t asz, osz;
    Dwarf_Die probe;
    Dwarf *dbg = dwarf_cu_getdwarf(unit->cu);
    Dwarf_Off off = dwarf_dieoffset(unit), hdr = dwarf_cuoffset(unit), next;
    memset(u, 0, sizeof *u);
    if (!dbg || dwarf_cu_info(unit->cu, &ver, NULL, NULL, NULL, NULL, &asz,
                              &osz) != 0 ||
        off == (Dwarf_Off)-1 || hdr == (Dwarf_Off)-1 || hdr > off ||
        dwarf_next_unit(dbg, off - hdr, &next, NULL, NULL, NULL, NULL, NULL,
                        NULL, NULL) != 0 || next <= off)
        return -1;
    const unsigned char *end = (const unsigned char *)unit->addr + (next - off);
    /* The unit's last byte is in the section and in this unit. */
    if (!dwarf_die_addr_die(dbg, (void *)(end - 1), &probe) ||
        probe.cu != unit->cu)
        return -1;
    *u = (lp_die_unit){end, dbg, ver, asz, osz};
    return 0;
}

/* Length of the LEB128 at p, or -1 if it runs past lim. */
static ptrdiff_t leb_len(const unsigned char *p, const unsigned char *lim)
{
    for (const unsigned char *q = p; q < lim; q++)
        if (!(*q & 0x80))
            return q + 1 - p;
    return -1;
}

/* Size of the value of attribute a, or -1 if not known here. */
static ptrdiff_t value_len(const lp_die_unit *u, Dwarf_Attribute *a)
{
    const unsigned char *p = a->valp;
    Dwarf_Block blk;
    switch (a->form) {
    case DW_FORM_flag_present:
        return 0;
    case DW_FORM_data1: case DW_FORM_ref1: case DW_FORM_flag:
    case DW_FORM_strx1: case DW_FORM_addrx1:
        return 1;
    case DW_FORM_data2: case DW_FORM_ref2: case DW_FORM_strx2:
    case DW_FORM_addrx2:
        return 2;
    case DW_FORM_strx3: case DW_FORM_addrx3:
        return 3;
    case DW_FORM_data4: case DW_FORM_ref4: case DW_FORM_strx4:
    case DW_FORM_addrx4: case DW_FORM_ref_sup4:
        return 4;
    case DW_FORM_data8: case DW_FORM_ref8: case DW_FORM_ref_sig8:
    case DW_FORM_ref_sup8:
        return 8;
    case DW_FORM_data16:
        return 16;
    case DW_FORM_addr:
        return u->addr_size;
    case DW_FORM_ref_addr:
        return u->version == 2 ? u->addr_size : u->offset_size;
    case DW_FORM_strp: case DW_FORM_sec_offset: case DW_FORM_line_strp:
    case DW_FORM_strp_sup: case DW_FORM_GNU_ref_alt:
    case DW_FORM_GNU_strp_alt:
        return u->offset_size;
    case DW_FORM_udata: case DW_FORM_sdata: case DW_FORM_ref_udata:
    case DW_FORM_strx: case DW_FORM_addrx: case DW_FORM_loclistx:
    case DW_FORM_rnglistx: case DW_FORM_GNU_addr_index:
    case DW_FORM_GNU_str_index:
        return leb_len(p, u->end);
    case DW_FORM_string: {
        const unsigned char *z = memchr(p, 0, (size_t)(u->end - p));
        return z ? z + 1 - p : -1;
    }
    case DW_FORM_block1: case DW_FORM_block2: case DW_FORM_block4:
    case DW_FORM_block: case DW_FORM_exprloc:
        if (dwarf_formblock(a, &blk) != 0)
            return -1;
        return blk.data + blk.length - p;
    default:                    /* DW_FORM_indirect and anything new */
        return -1;
    }
}

typedef struct attrs_end {
    const lp_die_unit *u;
    const unsigned char *p;     /* end of the attributes seen so far */
} attrs_end;

static int attr_end_cb(Dwarf_Attribute *a, void *arg)
{
    attrs_end *e = arg;
    if (a->form == DW_FORM_implicit_const) /* value in the abbreviation */
        return DWARF_CB_OK;
    const unsigned char *p = a->valp;
    ptrdiff_t n = value_len(e->u, a);
    if (n < 0 || p < e->p || p > e->u->end || n > e->u->end - p) {
        e->p = NULL;
        return DWARF_CB_ABORT;
    }
    e->p = p + n;
    return DWARF_CB_OK;
}

const unsigned char *lp_bin_die_attrs_end(const lp_die_unit *u,
                                          Dwarf_Die *die)
{
    const unsigned char *p = die->addr;
    ptrdiff_t n;
    if (!u->end || p >= u->end || (n = leb_len(p, u->end)) < 0)
        return NULL;
    attrs_end e = {u, p + n};   /* no attribute: right after the code */
    if (dwarf_getattrs(die, attr_end_cb, &e, 0) != 1)
        return NULL;
    return e.p;
}

typedef struct walker {
    lp_die_unit u;              /* u.end NULL: ends not known, libdw only */
    lp_die_visit visit;
    void *arg;
    Dwarf_Abbrev *abbrev[128];  /* by one-byte abbreviation code */
} walker;

/* Give d the abbreviation libdw found for an earlier DIE of the unit with
 * the same code: libdw's lookup (a locked hash table) is half of what
 * dwarf_tag costs, and libdw keeps its result in Dwarf_Die.abbrev. */
static void abbrev_of(walker *w, Dwarf_Die *d)
{
    unsigned code = *(const unsigned char *)d->addr;
    if (d->abbrev || code == 0 || code >= 128 ||
        (const unsigned char *)d->addr >= w->u.end)
        return;
    if (w->abbrev[code]) {
        d->abbrev = w->abbrev[code];
        return;
    }
    if (dwarf_tag(d) != DW_TAG_invalid && d->abbrev &&
        d->abbrev != (Dwarf_Abbrev *)-1l)
        w->abbrev[code] = d->abbrev;
}

/* Where the DIE after a subtree ending (children list included) at `end`
 * is: 0 and *next, 1 if its list ended at end (*list_end set), -1 not
 * known. */
static int after(walker *w, const unsigned char *end, Dwarf_Die *cur,
                 Dwarf_Die *next, const unsigned char **list_end)
{
    if (!end)
        return -1;
    if (end >= w->u.end) {      /* unit over: every list ends here */
        *list_end = w->u.end;
        return 1;
    }
    if (*end == 0) {
        *list_end = end + 1;
        return 1;
    }
    /* What dwarf_siblingof makes: the address and the unit (end is inside
     * it, lp_bin_die_unit checked its bounds with dwarf_die_addr_die). */
    *next = (Dwarf_Die){.addr = (void *)end, .cu = cur->cu};
    return 0;
}

/* Visit the list starting at *first and every subtree under it; depth is
 * the old recursion's: children of a DIE of this list are walked while
 * depth <= MAX_DEPTH. *list_end: just past the list's terminator, or NULL
 * if not known. Returns visit's non-zero value, else 0. */
static int walk_list(walker *w, Dwarf_Die *first, int depth,
                     const unsigned char **list_end)
{
    Dwarf_Die d = *first, c, n;
    *list_end = NULL;
    for (;;) {
        abbrev_of(w, &d);
        int r = w->visit(&d, w->arg);
        if (r)
            return r;
        const unsigned char *end = NULL;
        if (!dwarf_haschildren(&d)) {
            r = dwarf_siblingof(&d, &n);
            if (r == 0) {
                d = n;
                continue;
            }
            if (r < 0)
                return 0;
            end = lp_bin_die_attrs_end(&w->u, &d);
        } else if (depth <= MAX_DEPTH && (r = dwarf_child(&d, &c)) == 0) {
            if ((r = walk_list(w, &c, depth + 1, &end)))
                return r;
        } else if (depth <= MAX_DEPTH && r == 1) { /* empty children list */
            const unsigned char *a = lp_bin_die_attrs_end(&w->u, &d);
            if (a && a < w->u.end && *a == 0)
                end = a + 1;
        }
        r = after(w, end, &d, &n, list_end);
        if (r > 0)
            return 0;
        if (r < 0) {            /* the plain walk's way */
            *list_end = NULL;
            if (dwarf_siblingof(&d, &n) != 0)
                return 0;
        }
        d = n;
    }
}

int lp_bin_walk_dies(Dwarf_Die *unit, lp_die_visit visit, void *arg)
{
    walker w = {.visit = visit, .arg = arg};
    Dwarf_Die first;
    const unsigned char *end;
    if (lp_bin_die_unit(unit, &w.u) != 0)
        w.u.end = NULL;
    if (dwarf_child(unit, &first) != 0)
        return 0;
    return walk_list(&w, &first, 1, &end);
}
