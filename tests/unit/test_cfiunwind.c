/*
 * test_cfiunwind.c - the CFI stack walker (src/cfiunwind): walks of real
 * stacks of a fixture built now by gcc and clang-19 at -O2 without frame
 * pointers (tests/unit/fixtures/cfi_target.c: it dumps its registers,
 * stack and maps at its deepest point, as perf's REGS_USER + STACK_USER
 * would hold them), through libc to _start and through glibc's signal
 * trampoline; the same with .debug_frame only; every CFI row of the
 * fixture against `readelf -wF`; expressions; the guards (short copies,
 * no room, missing registers, garbage stacks) and the errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <dwarf.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/cfiunwind.h"

static char scratch[64];

/* ---- helpers ----------------------------------------------------------------- */

static bool have_tool(const char *t)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", t);
    return system(cmd) == 0;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* What the fixture wrote: registers, stack, maps. */
typedef struct dump {
    uint64_t regs[17];
    uint8_t *stack;
    size_t size;
    char *maps;
} dump;

static void read_dump(const char *path, dump *d)
{
    FILE *f = fopen(path, "rb");
    char magic[9];
    uint64_t n;
    long at, end;

    assert_non_null(f);
    assert_int_equal(fread(magic, 1, 9, f), 9);
    assert_memory_equal(magic, "CFIDUMP1\n", 9);
    assert_int_equal(fread(d->regs, 8, 17, f), 17);
    assert_int_equal(fread(&n, 8, 1, f), 1);
    assert_non_null(d->stack = malloc(n ? n : 1));
    assert_int_equal(fread(d->stack, 1, n, f), n);
    d->size = n;
    at = ftell(f);
    fseek(f, 0, SEEK_END);
    end = ftell(f);
    fseek(f, at, SEEK_SET);
    assert_non_null(d->maps = calloc(1, (size_t)(end - at) + 1));
    assert_int_equal(fread(d->maps, 1, (size_t)(end - at), f), (size_t)(end - at));
    fclose(f);
}

static void free_dump(dump *d)
{
    free(d->stack);
    free(d->maps);
}

/* The process's executable mappings and their files' CFI: the walker's
 * lp_cfi_find_fn for these tests. */
typedef struct pmap {
    uint64_t start, end, off;
    char path[256];
} pmap;

typedef struct world {
    pmap m[64];
    size_t n;
    struct { char path[256]; lp_cfi *cfi; } f[16];
    size_t nf;
} world;

static void load_maps(world *w, const char *maps)
{
    const char *l;
    unsigned long long s, e, off;
    char perm[8], path[256];

    memset(w, 0, sizeof *w);
    for (l = maps; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
        path[0] = 0;
        if (sscanf(l, "%llx-%llx %7s %llx %*s %*s %255s", &s, &e, perm, &off, path) >= 4 &&
            perm[2] == 'x' && w->n < 64) {
            w->m[w->n] = (pmap){s, e, off, ""};
            snprintf(w->m[w->n].path, sizeof w->m[w->n].path, "%s", path);
            w->n++;
        }
    }
}

static const pmap *map_of(const world *w, uint64_t pc)
{
    size_t i;

    for (i = 0; i < w->n; i++)
        if (pc >= w->m[i].start && pc < w->m[i].end)
            return &w->m[i];
    return NULL;
}

static lp_cfi *cfi_of(world *w, const char *path)
{
    lp_error err;
    size_t i;

    for (i = 0; i < w->nf; i++)
        if (strcmp(w->f[i].path, path) == 0)
            return w->f[i].cfi;
    assert_true(w->nf < 16);
    snprintf(w->f[w->nf].path, sizeof w->f[w->nf].path, "%s", path);
    w->f[w->nf].cfi = lp_cfi_open(path, &err);
    return w->f[w->nf++].cfi;
}

static int find(void *ctx, uint64_t pc, lp_cfi **cfi, uint64_t *bias)
{
    world *w = ctx;
    const pmap *m = map_of(w, pc);
    uint64_t va;

    *cfi = NULL;
    if (!m)
        return -1;
    if (m->path[0] == '/' && (*cfi = cfi_of(w, m->path)) &&
        lp_cfi_vaddr_of_offset(*cfi, pc - m->start + m->off, &va) == 0)
        *bias = pc - va;
    else
        *cfi = NULL;
    return 0;
}

static void free_world(world *w)
{
    size_t i;

    for (i = 0; i < w->nf; i++)
        lp_cfi_close(w->f[i].cfi);
}

static void regs_of(const dump *d, lp_cfi_regs *r)
{
    memset(r, 0, sizeof *r);
    memcpy(r->r, d->regs, sizeof d->regs);
    r->known = (1u << LP_CFI_NREGS) - 1;
}

/* The fixture's function at pc (name up to a '.' suffix), "-" outside it. */
static void name_of(const world *w, lp_binary *b, const char *bin, uint64_t pc,
                    char *out, size_t n)
{
    const pmap *m = map_of(w, pc);
    uint64_t va, start;
    const char *s;

    snprintf(out, n, "-");
    if (!m || strcmp(m->path, bin) || lp_binary_map_to_vaddr(b, m->start, m->off, pc, &va) ||
        !(s = lp_binary_symbol_name(b, va, &start)))
        return;
    snprintf(out, n, "%.*s", (int)strcspn(s, "."), s);
}

/* The walk's frames inside the fixture, as "name name ..." (others "-",
 * runs of them collapsed), and the frames flagged exact. */
static void walk_names(const dump *d, const char *bin, char *out, size_t n,
                       lp_cfi_result *res, char *exact, size_t ne)
{
    static lp_cfi_frame f[LP_CFI_MAX_FRAMES];
    world w;
    lp_cfi_walker wk = {find, NULL, &w};
    lp_cfi_regs r;
    lp_fpu_stack st = {d->regs[7], d->stack, d->size};
    lp_binary *b;
    lp_error err;
    char nm[128];
    size_t i;

    load_maps(&w, d->maps);
    regs_of(d, &r);
    assert_non_null(b = lp_binary_open(bin, NULL, &err));
    *res = lp_cfi_unwind(&wk, &r, &st, f, LP_CFI_MAX_FRAMES);
    out[0] = exact[0] = 0;
    for (i = 0; i < res->frames; i++) {
        name_of(&w, b, bin, f[i].pc, nm, sizeof nm);
        if (nm[0] == '-' && strlen(out) >= 2 && strcmp(out + strlen(out) - 2, " -") == 0)
            continue;
        snprintf(out + strlen(out), n - strlen(out), " %s", nm);
        if (f[i].exact && i > 0)
            snprintf(exact + strlen(exact), ne - strlen(exact), " %s", nm);
    }
    lp_binary_close(b);
    free_world(&w);
}

/* The fixture built by cc with flags, run in mode: its dump. */
static bool fixture(const char *cc, const char *flags, const char *mode,
                    char *bin, size_t nbin, dump *d)
{
    char path[256];

    if (!have_tool(cc))
        return false;
    snprintf(bin, nbin, "%s/ct_%s_%s", scratch, cc, flags[0] ? "dbg" : "eh");
    snprintf(path, sizeof path, "%s.%s", bin, mode);
    assert_int_equal(sh("%s -O2 -g %s tests/unit/fixtures/cfi_target.c -o %s", cc, flags, bin), 0);
    assert_int_equal(sh("%s %s %s > /dev/null", bin, mode, path), 0);
    read_dump(path, d);
    return true;
}

/* ---- walks of real stacks ------------------------------------------------------ */

static const char *const compilers[] = {"gcc", "clang-19"};

/* Each compiler's fixture in mode: the walk's names, its frames flagged
 * exact, and the whole stack (the outermost frame's return address is
 * undefined in _start's CFI). */
static void check_walks(const char *mode, const char *want, const char *want_exact)
{
    char bin[160], names[1024], exact[256];
    lp_cfi_result r;
    int done = 0;
    size_t i;
    dump d;

    for (i = 0; i < 2; i++) {
        if (!fixture(compilers[i], "", mode, bin, sizeof bin, &d))
            continue;
        walk_names(&d, bin, names, sizeof names, &r, exact, sizeof exact);
        fprintf(stderr, "%s %s: %zu frames, stop %s:%s (exact:%s)\n", compilers[i],
                mode, r.frames, lp_cfi_stop_name(r.stop), names, exact);
        assert_string_equal(names, want);
        assert_string_equal(exact, want_exact);
        assert_int_equal(r.stop, LP_CFI_STOP_END);
        free_dump(&d);
        done++;
    }
    if (!done)
        skip();
}

/* libc's frames between main and _start ("-"); rec(0) tail-calls crunch */
static void test_walk_frameless(void **state)
{
    (void)state;
    check_walks("normal", " point crunch rec rec rec outer main - _start", "");
}

/* The frame-pointer walk of the same registers and stack does not get
 * there: the fixture has no frame pointers (what makes the test above
 * mean something). */
static void test_fp_walk_fails_there(void **state)
{
    char bin[160];
    uint64_t out[64];
    lp_fpu_regs fr;
    lp_fpu_result r;
    dump d;

    (void)state;
    if (!fixture("gcc", "", "normal", bin, sizeof bin, &d))
        skip();
    fr.ip = d.regs[16];
    fr.sp = d.regs[7];
    fr.bp = d.regs[6];
    r = lp_fpu_unwind_stack(&fr, &(lp_fpu_stack){d.regs[7], d.stack, d.size}, 0, out, 64);
    assert_true(r.frames_written < 9);
    free_dump(&d);
}

/* the handler, glibc's restorer ('S' FDE), then the interrupted pc in
 * poke - exact, not a return address - and its callers */
static void test_walk_signal_frame(void **state)
{
    (void)state;
    check_walks("sig", " on_segv - poke crunch rec rec rec outer main - _start", " poke");
}

/* Built with -fno-asynchronous-unwind-tables: the fixture's functions
 * have .debug_frame only (libc keeps its .eh_frame). */
static void test_walk_debug_frame(void **state)
{
    char bin[160], names[1024], exact[256];
    lp_cfi_result r;
    dump d;

    (void)state;
    if (!have_tool("readelf") ||
        !fixture("gcc", "-fno-asynchronous-unwind-tables -fno-unwind-tables",
                 "normal", bin, sizeof bin, &d))
        skip();
    assert_int_equal(sh("readelf -wf %s | grep -q 'FDE.*pc=' && "
                        "readelf -S %s | grep -q debug_frame", bin, bin), 0);
    walk_names(&d, bin, names, sizeof names, &r, exact, sizeof exact);
    fprintf(stderr, "gcc .debug_frame: %s\n", names);
    assert_string_equal(names, " point crunch rec rec rec outer main - _start");
    free_dump(&d);
}

/* ---- rows against readelf ---------------------------------------------------- */

static int reg_of_name(const char *n)
{
    static const char *const names[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                        "rbp", "rsp", "r8", "r9", "r10", "r11",
                                        "r12", "r13", "r14", "r15", "ra"};
    int i;

    for (i = 0; i < LP_CFI_NREGS; i++)
        if (strcmp(n, names[i]) == 0)
            return i;
    return -1;
}

/* One readelf cell ("rsp+8", "c-16", "u", ...) against a rule. */
static void check_cell(const char *cell, const lp_cfi_rule *r, bool cfa, int reg,
                       size_t *checked)
{
    char rn[8];
    long off;

    if (cfa && sscanf(cell, "%7[a-z0-9]%ld", rn, &off) == 2) {
        assert_int_equal(r->kind, LP_CFI_CFA_PLUS);
        assert_int_equal(r->reg, reg_of_name(rn));
        assert_int_equal(r->off, off);
    } else if (!cfa && sscanf(cell, "c%ld", &off) == 1) {
        assert_int_equal(r->kind, LP_CFI_AT_CFA);
        assert_int_equal(r->off, off);
    } else if (!cfa && strcmp(cell, "u") == 0 &&
               (reg == LP_CFI_RBX || reg == LP_CFI_RBP || reg >= LP_CFI_R12)) {
        assert_int_equal(r->kind, LP_CFI_SAME); /* callee-saved, unmentioned */
    } else {
        return;
    }
    (*checked)++;
}

static void test_rows_vs_readelf(void **state)
{
    char bin[160], line[1024], *tok, *save;
    int col[32], ncol, i, k;
    bool fde = false;
    size_t rows = 0, cells = 0;
    uint64_t locs[256];
    const lp_cfi_row *row;
    unsigned long long loc;
    lp_error err;
    lp_cfi *c;
    FILE *p;
    dump d;

    (void)state;
    if (!have_tool("readelf") || !fixture("clang-19", "", "normal", bin, sizeof bin, &d))
        skip();
    free_dump(&d);
    assert_non_null(c = lp_cfi_open(bin, &err));
    snprintf(line, sizeof line, "readelf -wF %s", bin);
    assert_non_null(p = popen(line, "r"));
    ncol = 0;
    while (fgets(line, sizeof line, p)) {
        if (strstr(line, " CIE") || strstr(line, " FDE ")) {
            ncol = 0;                           /* only an FDE's rows */
            fde = strstr(line, " FDE ") != NULL;
            continue;
        }
        if (fde && strncmp(line, "   LOC", 6) == 0) { /* a header: columns */
            ncol = 0;
            for (tok = strtok_r(line, " \n", &save); tok && ncol < 32;
                 tok = strtok_r(NULL, " \n", &save))
                col[ncol++] = strcmp(tok, "CFA") == 0 ? 100 : reg_of_name(tok);
            continue;
        }
        if (!ncol || strspn(line, "0123456789abcdef") != 16 ||
            sscanf(line, "%llx", &loc) != 1)
            continue;                           /* not a row (CIE, FDE) */
        assert_int_equal(lp_cfi_row_at(c, loc, &row, &err), 1);
        assert_int_equal(row->start, loc);
        if (rows < 256)
            locs[rows] = loc;
        tok = strtok_r(line, " \n", &save);         /* LOC */
        for (i = 1, k = 0; (tok = strtok_r(NULL, " \n", &save)) && i < ncol; i++) {
            if (col[i] == 100)
                check_cell(tok, &row->cfa, true, 0, &cells);
            else if (col[i] >= 0)
                check_cell(tok, &row->regs[col[i]], false, col[i], &cells);
            k++;
        }
        rows++;
    }
    pclose(p);
    for (i = 0; i < (int)rows && i < 256; i++) {   /* again: from the caches */
        assert_int_equal(lp_cfi_row_at(c, locs[i], &row, &err), 1);
        assert_int_equal(row->start, locs[i]);
        if (row->end - row->start > 1) {
            assert_int_equal(lp_cfi_row_at(c, row->end - 1, &row, &err), 1);
            assert_int_equal(row->start, locs[i]);
        }
    }
    assert_true(lp_cfi_stats_get(c)->addr_hits >= rows &&
                lp_cfi_stats_get(c)->row_hits > 0);
    fprintf(stderr, "clang-19 fixture: %zu rows, %zu cells as readelf shows them; "
                    "cache: %llu lookups, %llu rows read\n", rows, cells,
            (unsigned long long)lp_cfi_stats_get(c)->lookups,
            (unsigned long long)lp_cfi_stats_get(c)->rows);
    assert_true(rows >= 20 && cells >= 2 * rows);
    /* each row read from libdw once: the second pass was all cache hits */
    assert_int_equal(lp_cfi_stats_get(c)->rows, rows);
    lp_cfi_close(c);
}

/* ---- expressions --------------------------------------------------------------- */

static int eval(const lp_cfi_op *ops, size_t n, const lp_cfi_regs *r,
                const lp_fpu_stack *st, uint64_t *v, bool *is_value)
{
    return lp_cfi_eval(ops, n, r, st, true, 0x7000, v, is_value);
}

static void test_expressions(void **state)
{
    /* the PLT's CFA: rsp + 8 + ((rip & 15) >= 11) * 8 */
    static const lp_cfi_op plt[] = {
        {DW_OP_breg7, 8, 0}, {DW_OP_breg16, 0, 0}, {DW_OP_lit15, 0, 0},
        {DW_OP_and, 0, 0}, {DW_OP_lit11, 0, 0}, {DW_OP_ge, 0, 0},
        {DW_OP_lit3, 0, 0}, {DW_OP_shl, 0, 0}, {DW_OP_plus, 0, 0}};
    static const lp_cfi_op sigrip[] = {{DW_OP_breg7, 16, 0}, {DW_OP_deref, 0, 0}};
    static const lp_cfi_op cfa_val[] = {{DW_OP_call_frame_cfa, 0, 0},
                                        {DW_OP_consts, (uint64_t)-16, 0},
                                        {DW_OP_plus, 0, 0}, {DW_OP_stack_value, 0, 0}};
    static const lp_cfi_op bad_skip[] = {{DW_OP_lit1, 0, 0}, {DW_OP_skip, 2, 0}};
    static const lp_cfi_op not_last[] = {{DW_OP_lit1, 0, 0}, {DW_OP_stack_value, 0, 0},
                                         {DW_OP_lit2, 0, 0}};
    static const lp_cfi_op underflow[] = {{DW_OP_plus, 0, 0}};
    static const lp_cfi_op unknown_reg[] = {{DW_OP_breg3, 0, 0}};
    static const lp_cfi_op xmm[] = {{DW_OP_bregx, 17, 0}};
    uint64_t mem[4] = {0x1111, 0x2222, 0x401234, 0x4444}, v;
    lp_cfi_op deep[LP_CFI_MAX_OPS];
    lp_fpu_stack st = {0x1000, (const uint8_t *)mem, sizeof mem};
    lp_cfi_regs r = {{0}, 0};
    bool isv;
    size_t i;

    (void)state;
    r.r[LP_CFI_RSP] = 0x1000;
    r.r[LP_CFI_RA] = 0x401020;                  /* rip & 15 == 0 */
    r.known = 1u << LP_CFI_RSP | 1u << LP_CFI_RA;
    assert_int_equal(eval(plt, 9, &r, &st, &v, &isv), 1);
    assert_int_equal(v, 0x1008);
    r.r[LP_CFI_RA] = 0x40102b;                  /* & 15 == 11: pushed */
    assert_int_equal(eval(plt, 9, &r, &st, &v, &isv), 1);
    assert_int_equal(v, 0x1010);
    assert_false(isv);
    assert_int_equal(eval(sigrip, 2, &r, &st, &v, &isv), 1);
    assert_int_equal(v, 0x401234);
    r.r[LP_CFI_RSP] = 0x1020;                   /* the read leaves the copy */
    assert_int_equal(eval(sigrip, 2, &r, &st, &v, &isv), 0);
    assert_int_equal(eval(cfa_val, 4, &r, &st, &v, &isv), 1);
    assert_int_equal(v, 0x7000 - 16);
    assert_true(isv);
    assert_int_equal(lp_cfi_eval(cfa_val, 4, &r, &st, false, 0, &v, &isv), -1);
    assert_int_equal(eval(bad_skip, 2, &r, &st, &v, &isv), -1);
    assert_int_equal(eval(not_last, 3, &r, &st, &v, &isv), -1);
    assert_int_equal(eval(underflow, 1, &r, &st, &v, &isv), -1);
    assert_int_equal(eval(unknown_reg, 1, &r, &st, &v, &isv), 0);
    assert_int_equal(eval(xmm, 1, &r, &st, &v, &isv), 0);
    for (i = 0; i < LP_CFI_MAX_OPS; i++)        /* 64 pushes: 16 fit */
        deep[i] = (lp_cfi_op){DW_OP_lit1, 0, 0};
    assert_int_equal(eval(deep, LP_CFI_MAX_OPS, &r, &st, &v, &isv), -1);
    assert_int_equal(eval(deep, LP_CFI_MAX_OPS + 1, &r, &st, &v, &isv), -1);
    assert_int_equal(eval(deep, 0, &r, &st, &v, &isv), -1);
}

/* ---- guards ----------------------------------------------------------------------- */

static void test_guards(void **state)
{
    static lp_cfi_frame f[LP_CFI_MAX_FRAMES];
    char bin[160];
    world w;
    lp_cfi_walker wk = {find, NULL, &w};
    lp_cfi_result r, full;
    lp_cfi_regs regs;
    lp_fpu_stack st;
    uint8_t *junk;
    unsigned seed = 1;
    size_t i, j;
    dump d;

    (void)state;
    if (!fixture("gcc", "", "normal", bin, sizeof bin, &d))
        skip();
    load_maps(&w, d.maps);
    regs_of(&d, &regs);
    st = (lp_fpu_stack){d.regs[7], d.stack, d.size};
    full = lp_cfi_unwind(&wk, &regs, &st, f, LP_CFI_MAX_FRAMES);
    assert_int_equal(full.stop, LP_CFI_STOP_END);
    /* no room: the frames that fit, and FULL */
    r = lp_cfi_unwind(&wk, &regs, &st, f, 3);
    assert_int_equal(r.frames, 3);
    assert_int_equal(r.stop, LP_CFI_STOP_FULL);
    r = lp_cfi_unwind(&wk, &regs, &st, f, 0);
    assert_int_equal(r.frames, 0);
    /* a copy cut short: the walk stops inside it, with the last frame's
     * registers */
    st.size = 64;
    r = lp_cfi_unwind(&wk, &regs, &st, f, LP_CFI_MAX_FRAMES);
    assert_int_equal(r.stop, LP_CFI_STOP_STACK);
    assert_true(r.frames >= 1 && r.frames < full.frames);
    assert_int_equal(r.last.r[LP_CFI_RA], f[r.frames - 1].pc);
    st.size = d.size;
    /* no sp: nothing; no CFI anywhere (an empty world) and no FP rule */
    regs.known &= ~(1u << LP_CFI_RSP);
    r = lp_cfi_unwind(&wk, &regs, &st, f, LP_CFI_MAX_FRAMES);
    assert_int_equal(r.frames, 0);
    assert_int_equal(r.stop, LP_CFI_STOP_REG);
    regs_of(&d, &regs);
    free_world(&w);
    memset(&w, 0, sizeof w);
    r = lp_cfi_unwind(&wk, &regs, &st, f, LP_CFI_MAX_FRAMES);
    assert_int_equal(r.frames, 1);
    assert_int_equal(r.stop, LP_CFI_STOP_UNMAPPED);
    /* garbage stacks from the fixture's real pc: every walk ends, inside
     * the bound, reading nothing but the copy (ASan would see it) */
    load_maps(&w, d.maps);
    assert_non_null(junk = malloc(d.size));
    for (i = 0; i < 300; i++) {
        for (j = 0; j < d.size; j++) {
            seed = seed * 1103515245u + 12345u;
            junk[j] = (i & 1) && j % 8 >= 6 ? 0 : (uint8_t)(seed >> 16);
        }
        if (i % 3 == 0)                 /* plausible return addresses too */
            for (j = 0; j + 8 <= d.size; j += 64)
                memcpy(junk + j, &d.regs[16], 8);
        r = lp_cfi_unwind(&wk, &regs, &(lp_fpu_stack){d.regs[7], junk, d.size}, f,
                          LP_CFI_MAX_FRAMES);
        assert_true(r.frames >= 1 && r.frames <= LP_CFI_MAX_FRAMES);
        for (j = 1; j < r.frames; j++)  /* each caller above its callee */
            assert_true(f[j].exact || f[j].sp > f[j - 1].sp);
    }
    free(junk);
    free_world(&w);
    free_dump(&d);
}

/* The frame-pointer rule where no CFI covers the code, when allowed. */
static bool fp_always(void *ctx, uint64_t pc, bool exact)
{
    (void)ctx;
    (void)pc;
    (void)exact;
    return true;
}

static int find_none(void *ctx, uint64_t pc, lp_cfi **cfi, uint64_t *bias)
{
    (void)ctx;
    (void)pc;
    *cfi = NULL;
    *bias = 0;
    return 0;
}

static void test_fp_fallback(void **state)
{
    /* frames: [0x100] = {saved 0x120, ret 0x401000}, [0x120] = {0, 0x402000} */
    uint64_t mem[8] = {0, 0, 0x1120, 0x401000, 0, 0, 0, 0x402000};
    lp_fpu_stack st = {0x1100 - 16, (const uint8_t *)mem, sizeof mem};
    lp_cfi_walker wk = {find_none, fp_always, NULL};
    lp_cfi_frame f[8];
    lp_cfi_regs r = {{0}, 0};
    lp_cfi_result res;

    (void)state;
    mem[4] = 0;                         /* [0x1120]: saved rbp 0 */
    mem[5] = 0x402000;
    r.r[LP_CFI_RA] = 0x400500;
    r.r[LP_CFI_RSP] = 0x10f0;
    r.r[LP_CFI_RBP] = 0x1100;
    r.known = 1u << LP_CFI_RA | 1u << LP_CFI_RSP | 1u << LP_CFI_RBP;
    res = lp_cfi_unwind(&wk, &r, &st, f, 8);
    assert_int_equal(res.frames, 3);
    assert_int_equal(f[1].pc, 0x401000);
    assert_int_equal(f[1].how, LP_CFI_HOW_FP);
    assert_int_equal(f[1].sp, 0x1110);
    assert_int_equal(f[2].pc, 0x402000);
    /* the third frame's rbp is 0: below the copy, a bad frame */
    assert_true(res.stop == LP_CFI_STOP_BAD || res.stop == LP_CFI_STOP_STACK);
    wk.fp_ok = NULL;                    /* not allowed: no rule */
    res = lp_cfi_unwind(&wk, &r, &st, f, 8);
    assert_int_equal(res.frames, 1);
    assert_int_equal(res.stop, LP_CFI_STOP_NO_RULE);
}

/* ---- registers and errors -------------------------------------------------------- */

static void test_regs_from_perf(void **state)
{
    /* perf's mask for --call-graph dwarf: AX..SS, R8..R15 (no DS..GS) */
    uint64_t vals[20], mask = 0xff0fffull;
    lp_cfi_regs r;
    size_t i;

    (void)state;
    for (i = 0; i < 20; i++)
        vals[i] = 100 + i;
    assert_int_equal(lp_cfi_regs_from_perf(2, mask, vals, &r), 0);
    assert_int_equal(r.r[LP_CFI_RAX], 100);
    assert_int_equal(r.r[LP_CFI_RBX], 101);     /* perf BX is bit 1 */
    assert_int_equal(r.r[LP_CFI_RDX], 103);
    assert_int_equal(r.r[LP_CFI_RBP], 106);
    assert_int_equal(r.r[LP_CFI_RSP], 107);
    assert_int_equal(r.r[LP_CFI_RA], 108);      /* ip */
    assert_int_equal(r.r[LP_CFI_R8], 112);      /* after FLAGS, CS, SS */
    assert_int_equal(r.r[LP_CFI_R15], 119);
    assert_int_equal(r.known, (1u << LP_CFI_NREGS) - 1);
    /* ip, sp, bp only (perf --user-regs=ip,sp,bp) */
    assert_int_equal(lp_cfi_regs_from_perf(2, 0x1c0, vals, &r), 0);
    assert_int_equal(r.r[LP_CFI_RBP], 100);
    assert_int_equal(r.r[LP_CFI_RA], 102);
    assert_int_equal(r.known, 1u << LP_CFI_RBP | 1u << LP_CFI_RSP | 1u << LP_CFI_RA);
    assert_int_equal(lp_cfi_regs_from_perf(2, 0x140, vals, &r), -1);  /* no sp */
    assert_int_equal(lp_cfi_regs_from_perf(1, mask, vals, &r), -1);   /* 32-bit */
}

static void test_open_errors(void **state)
{
    char path[160];
    lp_error err;
    FILE *f;

    (void)state;
    assert_null(lp_cfi_open("/nonexistent/libx.so", &err));
    assert_int_equal(err.code, LP_EIO);
    assert_non_null(strstr(err.msg, "/nonexistent/libx.so"));
    snprintf(path, sizeof path, "%s/notelf", scratch);
    assert_non_null(f = fopen(path, "w"));
    fputs("not an ELF file\n", f);
    fclose(f);
    assert_null(lp_cfi_open(path, &err));
    assert_int_equal(err.code, LP_EFORMAT);
    assert_non_null(strstr(err.msg, "not an ELF file"));
    if (!have_tool("gcc"))
        return;
    snprintf(path, sizeof path, "%s/data.o", scratch);
    assert_int_equal(sh("printf 'int x = 1;\\n' | gcc -x c -c -o %s -", path), 0);
    assert_null(lp_cfi_open(path, &err));
    assert_int_equal(err.code, LP_EFORMAT);
    assert_non_null(strstr(err.msg, "no call frame information"));
}

/* ---- main ---------------------------------------------------------------------------- */

static int setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/lbr2prof-cfi.XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return sh("rm -rf %s", scratch) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_frameless),
        cmocka_unit_test(test_fp_walk_fails_there),
        cmocka_unit_test(test_walk_signal_frame),
        cmocka_unit_test(test_walk_debug_frame),
        cmocka_unit_test(test_rows_vs_readelf),
        cmocka_unit_test(test_expressions),
        cmocka_unit_test(test_guards),
        cmocka_unit_test(test_fp_fallback),
        cmocka_unit_test(test_regs_from_perf),
        cmocka_unit_test(test_open_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
