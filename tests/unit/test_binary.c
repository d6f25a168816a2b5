/*
 * test_binary.c - unit tests for src/binary (the binary loader), against the
 * reference tools run at test time on the real test binaries:
 *   - llvm-profgen-19 --show-disassembly-only --show-source-locations: the
 *     exact instruction set, order and inline stacks llvm-profgen uses;
 *   - llvm-symbolizer-19 (on a copy without .symtab): file/line/column/
 *     start line of every inline frame;
 *   - llvm-dwarfdump-19: DW_TAG_subprogram names and ranges;
 *   - readelf / nm: segments, build-id, ELF type, function entry symbols;
 *   - objcopy/llvm-strip-19/yaml2obj-19/clang-19: stripped, debug-split,
 *     split-DWARF and lld-linked PIE variants made in a scratch directory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dwarf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/binary.h"
#include "binary/binary_internal.h"

#define IN "tests/data/llvm-profgen-inputs/"

static char scratch[64];

/* ---- helpers ------------------------------------------------------------- */

static bool have_tool(const char *t)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", t);
    return system(cmd) == 0;
}

static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

/* Run a command, return its whole stdout (malloc'd) or NULL. */
static char *run(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    FILE *p = popen(cmd, "r");
    if (!p)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (cap - n < 4096) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb;
        }
    }
    pclose(p);
    if (buf)
        buf[n] = 0;
    return buf;
}

static lp_binary *open_ok(const char *path, const lp_binary_opts *o)
{
    lp_error e = {0};
    lp_binary *b = lp_binary_open(path, o, &e);
    if (!b)
        fail_msg("open %s: %s", path, e.msg);
    return b;
}

/* ---- llvm-profgen listing ---------------------------------------------- */

typedef struct pg_frame {
    char name[256];
    unsigned off, disc;
} pg_frame;

typedef struct pg_inst {
    uint64_t addr;
    char mnem[32];
    bool indirect;      /* operand starts with '*' */
    int block;          /* symbol block number */
    int nframes;
    pg_frame frames[16]; /* leaf first, as printed */
} pg_inst;

static bool parse_frame(const char *tok, pg_frame *f)
{
    const char *colon = strrchr(tok, ':');
    if (!colon || colon == tok || colon[1] < '0' || colon[1] > '9')
        return false;
    size_t nl = (size_t)(colon - tok);
    if (nl >= sizeof f->name)
        return false;
    memcpy(f->name, tok, nl);
    f->name[nl] = 0;
    char *end;
    f->off = (unsigned)strtoul(colon + 1, &end, 10);
    f->disc = 0;
    if (*end == '.')
        f->disc = (unsigned)strtoul(end + 1, &end, 10);
    return *end == 0;
}

/* Frames are the trailing " @ "-joined tokens; a line ending in a space
 * has none (llvm-profgen pads the instruction text to a column). */
static void parse_frames(char *line, pg_inst *pi)
{
    size_t len = strlen(line);
    pi->nframes = 0;
    if (len == 0 || line[len - 1] == ' ')
        return;
    char *toks[256];
    int nt = 0;
    for (char *t = strtok(line, " \t"); t && nt < 256; t = strtok(NULL, " \t"))
        toks[nt++] = t;
    int i = nt - 1;
    pg_frame tmp[16];
    int n = 0;
    while (i >= 0 && n < 16 && parse_frame(toks[i], &tmp[n])) {
        n++;
        if (i >= 2 && strcmp(toks[i - 1], "@") == 0)
            i -= 2;
        else
            break;
    }
    for (int k = 0; k < n; k++) /* back to printed (leaf-first) order */
        pi->frames[k] = tmp[n - 1 - k];
    pi->nframes = n;
}

static pg_inst *profgen_listing(const char *bin, size_t *np)
{
    /* run where the binary is: relative DW_AT_comp_dir (split DWARF) */
    char *out = run("cd \"$(dirname '%s')\" && llvm-profgen-19 "
                    "--binary=\"$(basename '%s')\" --show-disassembly-only "
                    "--show-source-locations --perfscript=/dev/null "
                    "--output=%s/o.prof 2>/dev/null", bin, bin, scratch);
    assert_non_null(out);
    size_t cap = 1024, n = 0;
    pg_inst *v = malloc(cap * sizeof *v);
    int block = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        if (l[0] == '<') {
            block++;
            continue;
        }
        char *end;
        if (strncmp(l, "  ", 2) != 0)
            continue;
        uint64_t a = strtoull(l + 2, &end, 16);
        if (end == l + 2 || *end != ':' || end[1] != '\t')
            continue;
        if (n == cap)
            v = realloc(v, (cap *= 2) * sizeof *v);
        pg_inst *pi = &v[n++];
        memset(pi, 0, sizeof *pi);
        pi->addr = a;
        pi->block = block;
        char *m = end + 2;
        size_t ml = strcspn(m, "\t ");
        static const char *const prefixes[] = {"rep", "repz", "repne", "bnd",
                                               "notrack", "lock", "data16"};
        /* "rep\t\tstosq\t...": a prefix, then the mnemonic after a tab;
         * a standalone one (LLVM's LOCK_PREFIX: "lock   f:7") is the
         * instruction, its location after spaces */
        for (size_t k = 0; k < sizeof prefixes / sizeof *prefixes; k++)
            if (ml == strlen(prefixes[k]) && strncmp(m, prefixes[k], ml) == 0 &&
                m[ml] == '\t') {
                m += ml;
                m += strspn(m, "\t ");
                ml = strcspn(m, "\t ");
                break;
            }
        snprintf(pi->mnem, sizeof pi->mnem, "%.*s", (int)ml, m);
        pi->indirect = (m[ml] == '\t' && m[ml + 1] == '*') ||
                       !strcmp(pi->mnem, "blr") || !strcmp(pi->mnem, "br");
        parse_frames(m + ml, pi);
    }
    free(out);
    *np = n;
    return v;
}

/* Kind from the mnemonic: x86-64 AT&T (call/ret/jmp/jcc/loop) and AArch64
 * (bl/blr, ret, b/br, b.cc/cbz/cbnz/tbz/tbnz). */
static int expected_kind(const pg_inst *pi)
{
    const char *m = pi->mnem;
    if (strncmp(m, "call", 4) == 0 || !strcmp(m, "bl") || !strcmp(m, "blr"))
        return LP_INST_CALL;
    if (strncmp(m, "ret", 3) == 0 || strncmp(m, "iret", 4) == 0)
        return LP_INST_RET;
    if (strncmp(m, "jmp", 3) == 0 || strncmp(m, "ljmp", 4) == 0 ||
        !strcmp(m, "b") || !strcmp(m, "br"))
        return LP_INST_UNCOND_BR;
    if (m[0] == 'j' || strncmp(m, "loop", 4) == 0 || strncmp(m, "b.", 2) == 0
        || !strcmp(m, "cbz") || !strcmp(m, "cbnz") || !strcmp(m, "tbz") ||
        !strcmp(m, "tbnz"))
        return LP_INST_COND_BR;
    return LP_INST_OTHER;
}

/* Instructions: set, order, sizes, kinds; next/prev/call-site. */
static void check_disasm(const char *bin)
{
    size_t n;
    pg_inst *v = profgen_listing(bin, &n);
    assert_true(n > 10);
    lp_binary *b = open_ok(bin, NULL);
    lp_error e = {0};
    size_t calls = 0, rets = 0, jumps = 0;
    for (size_t i = 0; i < n; i++) {
        lp_inst in;
        if (lp_binary_inst(b, v[i].addr, &in, &e) != 1)
            fail_msg("%s: 0x%" PRIx64 " (%s) not decoded", bin, v[i].addr,
                     v[i].mnem);
        if (in.kind != expected_kind(&v[i]))
            fail_msg("%s: 0x%" PRIx64 " %s: kind %d", bin, v[i].addr,
                     v[i].mnem, in.kind);
        if (in.kind == LP_INST_CALL || in.kind == LP_INST_UNCOND_BR)
            assert_int_equal(in.indirect, v[i].indirect);
        calls += in.kind == LP_INST_CALL;
        rets += in.kind == LP_INST_RET;
        jumps += in.kind >= LP_INST_COND_BR;
        if (i + 1 < n && v[i + 1].block == v[i].block &&
            v[i + 1].addr > v[i].addr)
            assert_int_equal(in.size, v[i + 1].addr - v[i].addr);
        uint64_t nx;
        int r = lp_binary_next_inst(b, v[i].addr, &nx, &e);
        if (i + 1 < n) {
            assert_int_equal(r, 1);
            if (nx != v[i + 1].addr)
                fail_msg("%s: next of 0x%" PRIx64 " is 0x%" PRIx64
                         ", llvm-profgen 0x%" PRIx64, bin, v[i].addr, nx,
                         v[i + 1].addr);
        } else {
            assert_int_equal(r, 0);
        }
        if (i > 0) {
            uint64_t pv, cs;
            assert_int_equal(lp_binary_prev_inst(b, v[i].addr, &pv, &e), 1);
            assert_int_equal(pv, v[i - 1].addr);
            bool pcall = expected_kind(&v[i - 1]) == LP_INST_CALL;
            assert_int_equal(lp_binary_call_site(b, v[i].addr, &cs, &e),
                             pcall ? 1 : 0);
            if (pcall)
                assert_int_equal(cs, v[i - 1].addr);
            /* not an instruction start: lower_bound, as llvm-profgen */
            if (pcall && v[i].addr - v[i - 1].addr > 1) {
                assert_int_equal(lp_binary_call_site(b, v[i - 1].addr + 1,
                                                     &cs, &e), 1);
                assert_int_equal(cs, v[i - 1].addr);
            }
        }
        /* UncondBranchAddrSet excludes indirect jumps (MCInstrDesc). */
        bool unc = in.kind == LP_INST_CALL || in.kind == LP_INST_RET ||
                   (in.kind == LP_INST_UNCOND_BR && !v[i].indirect);
        assert_int_equal(lp_binary_is_uncond_branch(b, v[i].addr), unc);
        assert_int_equal(lp_binary_is_call(b, v[i].addr),
                         in.kind == LP_INST_CALL);
        assert_int_equal(lp_binary_is_return(b, v[i].addr),
                         in.kind == LP_INST_RET);
    }
    assert_true(calls > 0 && rets > 0 && jumps > 0);
    /* isValidFallThroughRange over windows of the listing: valid iff no
     * call/ret/direct jmp in [start, end) */
    for (size_t i = 0; i + 1 < n; i += 3) {
        bool ok = true;
        for (size_t j = i; j < n && j < i + 24; j++) {
            int r = lp_binary_valid_fallthrough(b, v[i].addr, v[j].addr, &e);
            assert_int_equal(r, ok ? 1 : 0);
            int k = expected_kind(&v[j]);
            if (k == LP_INST_CALL || k == LP_INST_RET ||
                (k == LP_INST_UNCOND_BR && !v[j].indirect))
                ok = false;
            assert_int_equal(lp_binary_is_branch(b, v[j].addr),
                             k == LP_INST_COND_BR || k == LP_INST_UNCOND_BR);
        }
        if (i > 0)
            assert_int_equal(lp_binary_valid_fallthrough(b, v[i].addr,
                                                         v[i - 1].addr, &e), 0);
    }
    /* An address inside an instruction is not code. */
    for (size_t i = 0; i + 1 < n; i++)
        if (v[i + 1].block == v[i].block && v[i + 1].addr - v[i].addr > 1) {
            assert_false(lp_binary_is_code(b, v[i].addr + 1));
            assert_int_equal(lp_binary_is_code_ready(b, v[i].addr + 1), 0);
            break;
        }
    /* every region walked above is disassembled: the lock-free answer is
     * there; in a fresh copy it is not, until lp_binary_is_code asks */
    for (size_t i = 0; i < n; i++)
        assert_int_equal(lp_binary_is_code_ready(b, v[i].addr), 1);
    lp_binary *b2 = open_ok(bin, NULL);
    size_t last = n - 1;
    if (lp_binary_is_code_ready(b2, v[last].addr) == -1) {
        assert_true(lp_binary_is_code(b2, v[last].addr));
        assert_int_equal(lp_binary_is_code_ready(b2, v[last].addr), 1);
    }
    lp_binary_close(b2);
    lp_binary_close(b);
    free(v);
}

/* Inline stacks: every instruction, against llvm-profgen's own output. */
static void check_symbolize(const char *bin, const lp_binary_opts *o,
                            const char *ref_bin)
{
    size_t n, nonempty = 0, inlined = 0;
    pg_inst *v = profgen_listing(ref_bin ? ref_bin : bin, &n);
    lp_binary *b = open_ok(bin, o), *b1 = open_ok(bin, o);
    lp_error e = {0};
    static lp_frame buf[LP_BINARY_MAX_FRAMES];
    for (size_t i = 0; i < n; i++) {
        const lp_frame *fr, *f1;
        size_t nf, n1;
        assert_int_equal(lp_binary_symbolize(b, v[i].addr, &fr, &nf, &e), 0);
        /* symbolize_once: the same frames, in buf, never cached */
        for (int twice = 0; twice < 2; twice++) {
            assert_int_equal(lp_binary_symbolize_once(b1, v[i].addr, buf, &f1, &n1, &e), 0);
            assert_int_equal(n1, nf);
            assert_ptr_equal(f1, buf);
            for (size_t k = 0; k < nf; k++) {
                assert_string_equal(f1[k].func, fr[k].func);
                assert_int_equal(f1[k].line_offset, fr[k].line_offset);
                assert_int_equal(f1[k].discriminator, fr[k].discriminator);
            }
        }
        if ((int)nf != v[i].nframes)
            fail_msg("%s: 0x%" PRIx64 ": %zu frames, llvm-profgen %d (%s)",
                     bin, v[i].addr, nf, v[i].nframes,
                     v[i].nframes ? v[i].frames[0].name : "-");
        for (size_t k = 0; k < nf; k++) {
            const pg_frame *p = &v[i].frames[nf - 1 - k]; /* leaf first */
            if (strcmp(fr[k].func, p->name) != 0 ||
                fr[k].line_offset != p->off || fr[k].discriminator != p->disc)
                fail_msg("%s: 0x%" PRIx64 " frame %zu: %s:%u.%u, "
                         "llvm-profgen %s:%u.%u", bin, v[i].addr, k,
                         fr[k].func, fr[k].line_offset, fr[k].discriminator,
                         p->name, p->off, p->disc);
        }
        nonempty += nf > 0;
        inlined += nf > 1;
        /* cached: same pointer the second time */
        const lp_frame *fr2;
        size_t nf2;
        lp_binary_symbolize(b, v[i].addr, &fr2, &nf2, &e);
        assert_ptr_equal(fr, fr2);
        assert_int_equal(nf, nf2);
        /* once cached, symbolize_once gives the cache's */
        assert_int_equal(lp_binary_symbolize_once(b, v[i].addr, buf, &f1, &n1, &e), 0);
        assert_ptr_equal(f1, fr);
    }
    assert_true(nonempty > 0);
    print_message("%s: %zu instructions, %zu symbolized, %zu inlined\n", bin,
                  n, nonempty, inlined);
    lp_binary_close(b1);
    lp_binary_close(b);
    free(v);
}

static void check_functions(const char *bin);
static void check_warnings(const char *bin);

/* ---- tests: disassembly and symbolization ------------------------------ */

static const char *const bins[] = {
    IN "inline-noprobe.perfbin",      IN "func-split.perfbin",
    IN "inline-cs-noprobe.perfbin",   IN "fs-discriminator.perfbin",
    IN "unique-linkage-name-dwarf.perfbin", IN "coroutine.perfbin",
    IN "multi-load-segs.perfbin",     IN "symbolize.perfbin",
    IN "noprobe.perfbin",             IN "cs-preinline-cost.perfbin",
    IN "callback-external-addr.perfbin", IN "cmov_3.perfbin",
    IN "fs-discriminator-probe.perfbin", IN "inline-cs-pseudoprobe.perfbin",
    IN "inline-noprobe2.perfbin",     IN "noinline-cs-noprobe.perfbin",
    IN "noinline-cs-pseudoprobe.perfbin", IN "noinline-tailcall-probe.perfbin",
    IN "recursion-compression-noprobe.perfbin",
    IN "recursion-compression-pseudoprobe.perfbin",
    IN "truncated-pseudoprobe.perfbin", IN "unique-linkage-name-probe.perfbin",
    "tests/data/autofdo/test.binary",
};

static void test_disasm_matches_profgen(void **state)
{
    (void)state;
    if (!have_tool("llvm-profgen-19"))
        skip();
    for (size_t i = 0; i < sizeof bins / sizeof *bins; i++)
        check_disasm(bins[i]);
}

static void test_symbolize_matches_profgen(void **state)
{
    (void)state;
    if (!have_tool("llvm-profgen-19"))
        skip();
    for (size_t i = 0; i < sizeof bins / sizeof *bins; i++)
        check_symbolize(bins[i], NULL, NULL);
}

/* This test program itself: GCC-built, DWARF 5, a few thousand functions
 * (the whole library, cmocka stubs, and under ASan the instrumentation). */
static void test_self_matches_profgen(void **state)
{
    (void)state;
    if (!have_tool("llvm-profgen-19"))
        skip();
    char *self = realpath("/proc/self/exe", NULL);
    assert_non_null(self);
    check_disasm(self);
    check_symbolize(self, NULL, NULL);
    if (have_tool("llvm-dwarfdump-19"))
        check_functions(self);
    check_warnings(self);
    free(self);
}

/* File, line, column and start line against llvm-symbolizer, on a copy
 * without .symtab so that it reports DWARF names like llvm-profgen. */
static long json_int(const char *s, const char *key)
{
    const char *p = strstr(s, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static void test_symbolize_matches_llvm_symbolizer(void **state)
{
    (void)state;
    if (!have_tool("llvm-symbolizer-19") || !have_tool("llvm-objcopy-19") ||
        !have_tool("llvm-profgen-19"))
        skip();
    const char *src = IN "inline-cs-noprobe.perfbin";
    char nosym[128], addrs[128];
    snprintf(nosym, sizeof nosym, "%s/nosym", scratch);
    snprintf(addrs, sizeof addrs, "%s/addrs", scratch);
    assert_int_equal(sh("llvm-objcopy-19 --remove-section=.symtab "
                        "--remove-section=.strtab %s %s", src, nosym), 0);
    size_t n;
    pg_inst *v = profgen_listing(src, &n);
    FILE *f = fopen(addrs, "w");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "0x%" PRIx64 "\n", v[i].addr);
    fclose(f);
    char *out = run("llvm-symbolizer-19 --obj=%s --inlining --output-style=JSON"
                    " --functions=linkage --no-demangle < %s", nosym, addrs);
    assert_non_null(out);
    lp_binary *b = open_ok(src, NULL);
    lp_error e = {0};
    char *save = NULL, *line = strtok_r(out, "\n", &save);
    size_t checked = 0;
    for (size_t i = 0; i < n && line; i++, line = strtok_r(NULL, "\n", &save)) {
        const lp_frame *fr;
        size_t nf;
        lp_binary_symbolize(b, v[i].addr, &fr, &nf, &e);
        /* split the JSON line into frames (leaf first) */
        char *fs[32];
        size_t nj = 0;
        for (char *p = strstr(line, "{\"Column\":"); p && nj < 32;
             p = strstr(p + 1, "{\"Column\":"))
            fs[nj++] = p;
        for (size_t k = 0; k + 1 < nj; k++)
            fs[k + 1][-1] = 0;
        if (nf == 0)
            continue;
        assert_true(nj >= nf);
        for (size_t k = 0; k < nf; k++) {
            const char *j = fs[nj - 1 - k];
            char want[300];
            snprintf(want, sizeof want, "\"FunctionName\":\"%s\"", fr[k].func);
            if (!strstr(j, want))
                fail_msg("0x%" PRIx64 " frame %zu: %s vs %s", v[i].addr, k,
                         fr[k].func, j);
            assert_int_equal(json_int(j, "\"Line\":"), fr[k].line);
            assert_int_equal(json_int(j, "\"Column\":"), fr[k].column);
            assert_int_equal(json_int(j, "\"StartLine\":"), fr[k].start_line);
            assert_int_equal(json_int(j, "\"Discriminator\":"),
                             fr[k].discriminator);
            snprintf(want, sizeof want, "\"FileName\":\"%s\"", fr[k].file);
            if (!strstr(j, want))
                fail_msg("0x%" PRIx64 " frame %zu: file %s vs %s", v[i].addr,
                         k, fr[k].file, j);
            checked++;
        }
    }
    assert_true(checked > 20);
    lp_binary_close(b);
    free(out);
    free(v);
}


/* The warnings of lp_binary_open are llvm-profgen's load-time warnings
 * (same lines, same order) for binaries it accepts. */
static void check_warnings(const char *bin)
{
    char *out = run("cd \"$(dirname '%s')\" && llvm-profgen-19 "
                    "--binary=\"$(basename '%s')\" --show-disassembly-only "
                    "--perfscript=/dev/null --output=%s/o.prof 2>&1 >/dev/null"
                    " | sed -n 's/^warning: *//p'", bin, bin, scratch);
    lp_binary *b = open_ok(bin, NULL);
    size_t i = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save), i++) {
        const char *w = lp_binary_warning(b, i);
        if (!w || strcmp(w, l) != 0)
            fail_msg("%s: warning %zu: '%s', llvm-profgen '%s'", bin, i,
                     w ? w : "(none)", l);
    }
    if (lp_binary_warning(b, i))
        fail_msg("%s: extra warning '%s'", bin, lp_binary_warning(b, i));
    lp_binary_close(b);
    free(out);
}

static void test_warnings_match_profgen(void **state)
{
    (void)state;
    if (!have_tool("llvm-profgen-19") || !have_tool("llvm-strip-19") ||
        !have_tool("llvm-objcopy-19"))
        skip();
    for (size_t i = 0; i < sizeof bins / sizeof *bins; i++)
        check_warnings(bins[i]);
    char p[128];
    snprintf(p, sizeof p, "%s/w-stripped", scratch);
    assert_int_equal(sh("llvm-strip-19 -o %s %s", p, IN "noprobe.perfbin"), 0);
    check_warnings(p);
    snprintf(p, sizeof p, "%s/w-nodebug", scratch);
    assert_int_equal(sh("llvm-objcopy-19 --strip-debug %s %s",
                        IN "noprobe.perfbin", p), 0);
    check_warnings(p);
    check_warnings(IN "split-dwarf-split.exe"); /* its .dwo is absent */
}

/* ---- tests: functions ---------------------------------------------------- */

/* Every DW_TAG_subprogram (name: linkage, else name, else the referenced
 * DIE's) with ranges: each valid range must be a range of that function. */
static void check_functions(const char *bin)
{
    char *out = run("llvm-dwarfdump-19 --debug-info %s", bin);
    assert_non_null(out);
    lp_binary *b = open_ok(bin, NULL);
    size_t want = 0;
    char *save = NULL;
    char *l = strtok_r(out, "\n", &save);
    while (l) {
        if (!strstr(l, "DW_TAG_subprogram")) {
            l = strtok_r(NULL, "\n", &save);
            continue;
        }
        char lname[512] = "", sname[512] = "", rname[512] = "";
        uint64_t lo = 0, hi = 0, rl[64][2];
        size_t nr = 0;
        bool haslo = false, in_ranges = false;
        for (l = strtok_r(NULL, "\n", &save); l && !strstr(l, "DW_TAG_");
             l = strtok_r(NULL, "\n", &save)) {
            char *q;
            if (strstr(l, "DW_AT_"))
                in_ranges = strstr(l, "DW_AT_ranges") != NULL;
            if (strstr(l, "DW_AT_linkage_name") && (q = strchr(l, '"')))
                sscanf(q + 1, "%511[^\"]", lname);
            else if (strstr(l, "DW_AT_name") && (q = strchr(l, '"')))
                sscanf(q + 1, "%511[^\"]", sname);
            else if ((strstr(l, "DW_AT_abstract_origin") ||
                      strstr(l, "DW_AT_specification")) && (q = strchr(l, '"')))
                sscanf(q + 1, "%511[^\"]", rname);
            else if (strstr(l, "DW_AT_low_pc"))
                haslo = sscanf(strchr(l, '(') + 1, "%" SCNx64, &lo) == 1;
            else if (strstr(l, "DW_AT_high_pc"))
                sscanf(strchr(l, '(') + 1, "%" SCNx64, &hi);
            else if (in_ranges && (q = strstr(l, "[0x")) && nr < 64 &&
                     sscanf(q, "[%" SCNx64 ", %" SCNx64 ")", &rl[nr][0],
                            &rl[nr][1]) == 2)
                nr++;
        }
        if (haslo && nr == 0) {
            rl[0][0] = lo;
            rl[0][1] = hi;
            nr = 1;
        }
        const char *name = lname[0] ? lname : sname[0] ? sname : rname;
        for (size_t k = 0; name[0] && k < nr; k++) {
            if (rl[k][1] <= rl[k][0] || rl[k][0] < lp_binary_preferred_base(b))
                continue;
            want++;
            const lp_function *f = lp_binary_function(b, name);
            if (!f)
                fail_msg("%s: function %s missing", bin, name);
            bool found = false;
            for (size_t j = 0; j < f->nranges; j++)
                found |= f->ranges[j]->start == rl[k][0] &&
                         f->ranges[j]->end == rl[k][1];
            if (!found)
                fail_msg("%s: %s lacks range [%" PRIx64 ", %" PRIx64 ")", bin,
                         name, rl[k][0], rl[k][1]);
            const lp_func_range *fr = lp_binary_func_range(b, rl[k][0]);
            assert_non_null(fr);
            assert_true(lp_binary_func_range(b, rl[k][1] - 1) != NULL);
        }
    }
    size_t total = 0;
    const lp_function *const *fs;
    size_t nf = lp_binary_functions(b, &fs);
    for (size_t i = 0; i < nf; i++)
        total += fs[i]->nranges;
    assert_int_equal(total, want);
    assert_true(want > 0);
    lp_binary_close(b);
    free(out);
}

static void test_functions_match_dwarfdump(void **state)
{
    (void)state;
    if (!have_tool("llvm-dwarfdump-19"))
        skip();
    for (size_t i = 0; i < sizeof bins / sizeof *bins; i++)
        check_functions(bins[i]);
}

/* Entries: a range is an entry iff its function has one range or a symbol
 * inside it has the function's (canonical) name; callee names follow. */
static void test_func_entries_and_callee_names(void **state)
{
    (void)state;
    if (!have_tool("nm"))
        skip();
    const char *bin = IN "func-split.perfbin";
    lp_binary *b = open_ok(bin, NULL);
    char *out = run("nm %s", bin);
    const lp_function *const *fs;
    size_t nf = lp_binary_functions(b, &fs), multi = 0, cold = 0;
    for (size_t i = 0; i < nf; i++) {
        for (size_t j = 0; j < fs[i]->nranges; j++) {
            const lp_func_range *r = fs[i]->ranges[j];
            bool named = false;
            char *copy = strdup(out), *save = NULL;
            for (char *l = strtok_r(copy, "\n", &save); l;
                 l = strtok_r(NULL, "\n", &save)) {
                uint64_t a;
                char t, nm[256];
                if (sscanf(l, "%" SCNx64 " %c %255s", &a, &t, nm) == 3 &&
                    a >= r->start && a < r->end &&
                    strcmp(nm, fs[i]->name) == 0)
                    named = true;
            }
            free(copy);
            bool want = fs[i]->nranges == 1 || named;
            assert_int_equal(r->is_entry, want);
            const char *cn = lp_binary_callee_name(b, r->start);
            if (want)
                assert_string_equal(cn, fs[i]->name);
            else
                assert_null(cn);
            multi += fs[i]->nranges > 1;
            cold += !want;
            if (r->end - r->start > 1)
                assert_null(lp_binary_callee_name(b, r->start + 1));
        }
    }
    assert_true(multi > 0 && cold > 0); /* foo has a non-entry cold part */
    free(out);
    lp_binary_close(b);
}

/* ---- tests: ELF facts and addresses -------------------------------------- */

static void check_elf_facts(const char *bin)
{
    lp_binary *b = open_ok(bin, NULL);
    char *out = run("readelf -lW %s 2>/dev/null", bin);
    assert_non_null(out);
    const lp_segment *segs, *xs;
    size_t ns = lp_binary_segments(b, &segs), nx = lp_binary_exec_segments(b, &xs);
    size_t k = 0, kx = 0;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l;
         l = strtok_r(NULL, "\n", &save)) {
        uint64_t off, va, pa, fsz, msz;
        char fl[16] = "";
        if (sscanf(l, " LOAD 0x%" SCNx64 " 0x%" SCNx64 " 0x%" SCNx64
                      " 0x%" SCNx64 " 0x%" SCNx64 " %15[RWE ]",
                   &off, &va, &pa, &fsz, &msz, fl) < 6)
            continue;
        assert_true(k < ns);
        assert_int_equal(segs[k].offset, off);
        assert_int_equal(segs[k].vaddr, va);
        assert_int_equal(segs[k].filesz, fsz);
        assert_int_equal(segs[k].memsz, msz);
        k++;
        if (strchr(fl, 'E')) {
            if (kx == 0)
                assert_int_equal(lp_binary_preferred_base(b), va & ~0xfffULL);
            assert_true(kx < nx);
            assert_int_equal(xs[kx].vaddr, va);
            kx++;
        }
        if (k == 1)
            assert_int_equal(lp_binary_first_loadable(b), va & ~0xfffULL);
    }
    assert_int_equal(k, ns);
    assert_int_equal(kx, nx);
    free(out);
    out = run("readelf -n %s 2>/dev/null | sed -n 's/.*Build ID: *//p'", bin);
    out[strcspn(out, "\n")] = 0;
    assert_string_equal(lp_binary_build_id_hex(b), out);
    const uint8_t *id;
    assert_int_equal(lp_binary_build_id(b, &id) * 2, strlen(out));
    free(out);
    out = run("readelf -hW %s 2>/dev/null | grep -c 'Type: *DYN'", bin);
    assert_int_equal(lp_binary_is_pie(b), atoi(out) > 0);
    free(out);
    lp_binary_close(b);
}

/* A PIE linked by lld (R segment at offset 0, RX at a non-zero offset) with
 * a build-id, made at test time. Returns its path or NULL (no clang). */
static const char *make_lld_pie(void)
{
    static char path[128];
    if (!have_tool("clang-19") || !have_tool("ld.lld"))
        return NULL;
    char src[128];
    snprintf(src, sizeof src, "%s/t.c", scratch);
    snprintf(path, sizeof path, "%s/pie", scratch);
    FILE *f = fopen(src, "w");
    fputs("static int __attribute__((noinline)) sq(int x) { return x * x; }\n"
          "static inline int add(int a, int b) { return sq(a) + b; }\n"
          /* the branches compilers rarely emit (LLVM: isBranch) */
          "static long __attribute__((noinline)) spin(long c) {\n"
          "  __asm__ volatile(\"1: loop 1b\\n2: loope 2b\\n3: loopne 3b\\n\"\n"
          "                   \"jrcxz 4f\\njecxz 4f\\n4:\" : \"+c\"(c));\n"
          "  return c;\n}\n"
          "int main(int argc, char **argv) {\n"
          "  int s = (int)spin(argc);\n  for (int i = 0; i < argc * 1000; i++)\n"
          "    s += add(i, argc);\n  (void)argv;\n  return s & 1;\n}\n", f);
    fclose(f);
    if (sh("clang-19 -O2 -g -fdebug-info-for-profiling -funroll-loops "
           "-fPIE -pie -fuse-ld=lld -Wl,--build-id=sha1 -o %s %s", path,
           src) != 0)
        return NULL;
    return path;
}

static void test_elf_facts_match_readelf(void **state)
{
    (void)state;
    if (!have_tool("readelf"))
        skip();
    for (size_t i = 0; i < sizeof bins / sizeof *bins; i++)
        check_elf_facts(bins[i]);
    const char *pie = make_lld_pie();
    if (pie) {
        check_elf_facts(pie);
        if (have_tool("llvm-profgen-19")) { /* DWARF 5, discriminators */
            check_disasm(pie);
            check_symbolize(pie, NULL, NULL);
        }
        lp_binary *b = open_ok(pie, NULL);
        assert_true(lp_binary_is_pie(b));
        assert_int_equal(lp_binary_build_id(b, NULL), 20);
        lp_binary_close(b);
    }
}

/* AVX-512 code (tests/workloads/vecloop.c built with -march=znver4; it
 * need not run here): capstone 4 cannot decode 52 of its 685
 * instructions, LLVM can; lbr2prof decodes those with Zydis and lists
 * what llvm-profgen lists (addresses, sizes, kinds). Symbolization is not
 * compared: llvm-profgen runs long AVX-512 operands into the source
 * location column ("%ymm27main:12"). */
static void test_znver4_matches_profgen(void **state)
{
    (void)state;
    if (!have_tool("clang-19") || !have_tool("llvm-profgen-19"))
        skip();
    char bin[128];
    snprintf(bin, sizeof bin, "%s/znver4", scratch);
    assert_int_equal(sh("clang-19 -O2 -g -march=znver4 -o %s "
                        "tests/workloads/vecloop.c", bin), 0);
    check_disasm(bin);
}

/* AArch64: a static, libc-free program cross-built by clang-19/lld. */
static void test_aarch64(void **state)
{
    (void)state;
    if (!have_tool("clang-19") || !have_tool("ld.lld") ||
        !have_tool("llvm-profgen-19"))
        skip();
    char src[128], bin[128];
    snprintf(src, sizeof src, "%s/a64.c", scratch);
    snprintf(bin, sizeof bin, "%s/a64", scratch);
    FILE *f = fopen(src, "w");
    fputs("static int __attribute__((noinline)) sq(int x) { return x * x; }\n"
          "static inline int add(int a, int b) { return sq(a) + b; }\n"
          "int (*fp)(int) = sq;\n"
          "int main(int argc, char **argv) {\n  int s = 0;\n"
          "  for (int i = 0; i < argc * 1000; i++) {\n"
          "    s += add(i, argc);\n    if (s & 4) s += fp(i);\n"
          "    switch (i & 7) { case 0: s++; break; case 1: s--; break;\n"
          "    case 2: s ^= 3; break; case 3: s += 7; break;\n"
          "    case 5: s *= 3; break; default: break; }\n  }\n"
          "  (void)argv;\n  return s & 1;\n}\n", f);
    fclose(f);
    if (sh("clang-19 --target=aarch64-linux-gnu -O2 -g "
           "-fdebug-info-for-profiling -nostdlib -static -fuse-ld=lld "
           "-Wl,-e,main -o %s %s", bin, src) != 0)
        skip();
    lp_binary *b = open_ok(bin, NULL);
    assert_int_equal(lp_binary_arch(b), LP_ARCH_AARCH64);
    lp_binary_close(b);
    check_disasm(bin);
    check_symbolize(bin, NULL, NULL);
    check_elf_facts(bin);
}

static void test_addresses_through_segments(void **state)
{
    (void)state;
    const char *pie = make_lld_pie();
    const char *list[] = {IN "multi-load-segs.perfbin", pie};
    for (size_t t = 0; t < 2 && list[t]; t++) {
        lp_binary *b = open_ok(list[t], NULL);
        const lp_segment *xs;
        size_t nx = lp_binary_exec_segments(b, &xs);
        assert_true(nx >= 1);
        if (t == 0)
            assert_int_equal(nx, 2); /* two executable segments */
        for (size_t i = 0; i < nx; i++) {
            /* the kernel maps the page holding the segment start */
            uint64_t pgoff = xs[i].offset & ~0xfffULL;
            uint64_t start = 0x7f0000000000ULL + 0x100000 * i;
            uint64_t va = xs[i].vaddr + xs[i].filesz / 2, rt, back, off;
            assert_int_equal(lp_binary_vaddr_to_map(b, start, pgoff, va, &rt), 0);
            assert_int_equal(rt, va - xs[i].vaddr + xs[i].offset - pgoff + start);
            assert_int_equal(lp_binary_map_to_vaddr(b, start, pgoff, rt, &back), 0);
            assert_int_equal(back, va);
            assert_int_equal(lp_binary_vaddr_to_offset(b, va, &off), 0);
            assert_int_equal(lp_binary_offset_to_vaddr(b, off, &back), 0);
            assert_int_equal(back, va);
        }
        if (t == 1) /* lld: RX does not start at offset 0 */
            assert_true(xs[0].offset != 0 && xs[0].vaddr != xs[0].offset);
        uint64_t x;
        assert_int_equal(lp_binary_offset_to_vaddr(b, 1ULL << 40, &x), -1);
        assert_int_equal(lp_binary_canon_addr(b, 0x555500000000ULL,
                                              0x555500000000ULL + 0x40),
                         lp_binary_preferred_base(b) + 0x40);
        lp_binary_close(b);
    }
}

/* ---- tests: variants and errors ------------------------------------------ */

static void test_debug_binary_and_stripped(void **state)
{
    (void)state;
    if (!have_tool("llvm-objcopy-19") || !have_tool("llvm-strip-19") ||
        !have_tool("llvm-profgen-19"))
        skip();
    const char *src = IN "inline-noprobe.perfbin";
    char code[128], dbg[128], stripped[128];
    snprintf(code, sizeof code, "%s/code", scratch);
    snprintf(dbg, sizeof dbg, "%s/code.debug", scratch);
    snprintf(stripped, sizeof stripped, "%s/stripped", scratch);
    assert_int_equal(sh("llvm-objcopy-19 --strip-debug %s %s", src, code), 0);
    assert_int_equal(sh("llvm-objcopy-19 --only-keep-debug %s %s", src, dbg), 0);
    assert_int_equal(sh("llvm-strip-19 -o %s %s", stripped, src), 0);
    /* code from one file, DWARF from the other: same stacks as llvm-profgen
     * on the original */
    lp_binary_opts o = {dbg, NULL, -1};
    check_symbolize(code, &o, src);
    /* the code-only file has no DWARF: warning, symtab functions, no stacks */
    lp_binary *b = open_ok(code, NULL);
    assert_false(lp_binary_has_dwarf(b));
    assert_non_null(lp_binary_warning(b, 0));
    const lp_function *const *fs;
    assert_int_equal(lp_binary_functions(b, &fs), 0); /* as llvm-profgen 19 */
    lp_error ce = {0};
    assert_int_equal(lp_binary_check_symbolizable(b, &ce), -1);
    assert_non_null(strstr(ce.msg, "no DWARF"));
    assert_non_null(strstr(ce.msg, code));
    lp_binary_close(b);
    b = open_ok(src, NULL);
    assert_int_equal(lp_binary_check_symbolizable(b, &ce), 0);
    lp_binary_close(b);
    lp_binary_opts so = {NULL, NULL, -1, 1};
    b = open_ok(code, &so);
    size_t nfs = lp_binary_functions(b, &fs);
    assert_true(nfs > 0);
    char *nmout = run("nm %s | grep -c ' [Tt] '", code);
    assert_true(nfs <= (size_t)atoi(nmout));
    free(nmout);
    for (size_t i = 0; i < nfs; i++) {
        assert_true(fs[i]->from_symtab);
        uint64_t st;
        const char *sn = lp_binary_symbol_name(b, fs[i]->ranges[0]->start, &st);
        assert_non_null(sn);
        assert_int_equal(st, fs[i]->ranges[0]->start);
    }
    lp_binary_close(b);
    /* fully stripped: opens, disassembles, symbolizes nothing */
    b = open_ok(stripped, NULL);
    assert_false(lp_binary_has_symbols(b));
    assert_false(lp_binary_has_dwarf(b));
    char *out = run("readelf -hW %s | sed -n 's/.*Entry point address: *//p'",
                    stripped);
    uint64_t entry = strtoull(out, NULL, 16);
    free(out);
    lp_inst in;
    lp_error e = {0};
    assert_int_equal(lp_binary_inst(b, entry, &in, &e), 1);
    assert_true(in.size > 0);
    const lp_frame *fr;
    size_t nf = 9;
    assert_int_equal(lp_binary_symbolize(b, entry, &fr, &nf, &e), 0);
    assert_int_equal(nf, 0);
    assert_int_equal(lp_binary_check_symbolizable(b, &e), -1);
    assert_non_null(strstr(e.msg, "stripped"));
    lp_binary_close(b);
}

/* The address of symbol `name` in exe (nm), 0 if none. */
static uint64_t nm_addr(const char *exe, const char *name)
{
    char *out = run("nm %s | awk '$3 == \"%s\" { print $1 }'", exe, name);
    uint64_t a = out ? strtoull(out, NULL, 16) : 0;
    free(out);
    return a;
}

/* Reports name addresses as perf does: a size-0 function symbol (crt's
 * _init, assembly without .size) reaches the next symbol or its section's
 * end; lp_binary_symbol_name (llvm-profgen's rule) stays sized-only. */
static void test_symbol_name_perf(void **state)
{
    (void)state;
    char dir[128], exe[192];
    snprintf(dir, sizeof dir, "%s/zsym", scratch);
    assert_int_equal(sh("mkdir -p %s && cd %s && printf '"
                        "__asm__(\".text\\\\n.globl zsym\\\\n.type zsym,@function\\\\n"
                        "zsym: nop\\\\n nop\\\\n nop\\\\n ret\\\\n\");\\n"
                        "int main(void) { return 0; }\\n' > z.c && "
                        "cc -O1 -o z z.c", dir, dir), 0);
    snprintf(exe, sizeof exe, "%s/z", dir);
    uint64_t z = nm_addr(exe, "zsym"), m = nm_addr(exe, "main"),
             in = nm_addr(exe, "_init"), st = 0;
    assert_true(z && m && in);
    lp_binary *b = open_ok(exe, NULL);
    assert_null(lp_binary_symbol_name(b, z + 2, NULL));
    assert_string_equal(lp_binary_symbol_name_perf(b, z + 2, &st), "zsym");
    assert_int_equal(st, z);
    assert_string_equal(lp_binary_symbol_name_perf(b, in + 4, &st), "_init");
    assert_int_equal(st, in);
    assert_string_equal(lp_binary_symbol_name_perf(b, m, &st), "main");
    assert_int_equal(st, m);
    /* past .init's end (into .plt or padding): not _init any more */
    char *out = run("readelf -SW %s | awk '$2 == \".init\" { print $4, $6 }'", exe);
    unsigned long ia = 0, isz = 0;
    assert_non_null(out);
    assert_int_equal(sscanf(out, "%lx %lx", &ia, &isz), 2);
    free(out);
    const char *past = lp_binary_symbol_name_perf(b, ia + isz, NULL);
    assert_true(past == NULL || strcmp(past, "_init") != 0);
    lp_binary_close(b);
}

static void test_split_dwarf(void **state)
{
    (void)state;
    if (!have_tool("yaml2obj-19") || !have_tool("llvm-profgen-19"))
        skip();
    char dir[128], exe[160];
    snprintf(dir, sizeof dir, "%s/split", scratch);
    snprintf(exe, sizeof exe, "%s/split-dwarf-split.exe", dir);
    assert_int_equal(sh("mkdir -p %s && cp %s %s && yaml2obj-19 %s -o "
                        "%s/split-dwarf-split.dwo", dir,
                        IN "split-dwarf-split.exe", exe,
                        IN "split-dwarf-split.dwo.yaml", dir), 0);
    lp_binary *b = open_ok(exe, NULL);
    assert_non_null(lp_binary_function(b, "foo"));
    assert_non_null(lp_binary_function(b, "main"));
    lp_binary_close(b);
    check_symbolize(exe, NULL, NULL);
    assert_int_equal(sh("cp %s %s/ && yaml2obj-19 %s -o %s/split-dwarf-single.o",
                        IN "split-dwarf-single.exe", dir,
                        IN "split-dwarf-single.o.yaml", dir), 0);
    snprintf(exe, sizeof exe, "%s/split-dwarf-single.exe", dir);
    /* -gsplit-dwarf=single (the .dwo sections inside the .o, which libdw
     * 0.188 does not read): read by dwp.c, as llvm-profgen reads it */
    lp_binary_opts so = {NULL, NULL, -1, 1};
    b = open_ok(exe, &so);
    assert_null(lp_binary_warning(b, 0));
    const lp_function *fn = lp_binary_function(b, "foo");
    assert_non_null(fn);
    assert_false(fn->from_symtab);
    lp_error e = {0};
    assert_int_equal(lp_binary_check_symbolizable(b, &e), 0);
    lp_binary_close(b);
    check_symbolize(exe, NULL, NULL);
    check_warnings(exe);
    /* without the .o: missing, with llvm-profgen's warning and no stacks */
    assert_int_equal(sh("mv %s/split-dwarf-single.o %s/gone.o", dir, dir), 0);
    b = open_ok(exe, &so);
    assert_non_null(lp_binary_warning(b, 0));
    assert_non_null(strstr(lp_binary_warning(b, 0), "DWO"));
    assert_true(lp_binary_function(b, "foo")->from_symtab);
    assert_int_equal(lp_binary_check_symbolizable(b, &e), -1);
    assert_non_null(strstr(e.msg, ".dwo"));
    lp_binary_close(b);
    check_warnings(exe);
    assert_int_equal(sh("mv %s/gone.o %s/split-dwarf-single.o", dir, dir), 0);
    snprintf(exe, sizeof exe, "%s/split-dwarf-split.exe", dir);
    /* real clang-19 -gsplit-dwarf builds, DWARF 4 (GNU) and 5 */
    if (have_tool("clang-19")) {
        FILE *f;
        snprintf(exe, sizeof exe, "%s/t.c", dir);
        assert_non_null(f = fopen(exe, "w"));
        fputs("static int __attribute__((noinline)) sq(int x) "
              "{ return x * x; }\n"
              "static inline int add(int a, int b) { return sq(a) + b; }\n"
              "int main(int argc, char **argv) {\n  int s = 0;\n"
              "  for (int i = 0; i < argc * 100; i++) s += add(i, argc);\n"
              "  (void)argv;\n  return s & 1;\n}\n", f);
        fclose(f);
        for (int v = 4; v <= 5; v++) {
            assert_int_equal(sh("cd %s && clang-19 -O2 -g -gdwarf-%d "
                                "-gsplit-dwarf -o t%d t.c", dir, v, v), 0);
            snprintf(exe, sizeof exe, "%s/t%d", dir, v);
            check_symbolize(exe, NULL, NULL);
            check_warnings(exe);
            /* -gsplit-dwarf=single: the .o is the .dwo */
            assert_int_equal(sh("cd %s && clang-19 -O2 -g -gdwarf-%d "
                                "-gsplit-dwarf=single -c t.c -o s%d.o && "
                                "clang-19 s%d.o -o s%d", dir, v, v, v, v), 0);
            snprintf(exe, sizeof exe, "%s/s%d", dir, v);
            check_symbolize(exe, NULL, NULL);
            check_warnings(exe);
        }
        snprintf(exe, sizeof exe, "%s/split-dwarf-split.exe", dir);
    }
    /* g++'s DWARF 5 .dwo with type units: each in a .debug_info.dwo
     * section of its own (libdw reads only the first); and binutils' dwp
     * on DWARF 5 units, which writes an empty package (llvm warns) */
    if (have_tool("g++") && have_tool("dwp")) {
        assert_int_equal(sh("cd %s && printf 'struct A { int v[4]; int sum() const; "
                            "void add(int x) { v[x & 3] += x; } };\nint A::sum() const "
                            "{ return v[0] + v[3]; }\nint main(int c, char **) { A a{}; "
                            "for (int i = 0; i < c * 99; i++) a.add(i); return a.sum() "
                            "& 1; }\n' > tu.cc && g++ -O2 -g -gdwarf-5 -gsplit-dwarf "
                            "-fdebug-types-section -c tu.cc -o tu.o && g++ tu.o -o tu && "
                            "gcc -O2 -g -gdwarf-5 -gsplit-dwarf -c t.c -o g5.o && "
                            "gcc g5.o -o g5 && dwp -o g5.dwp g5.dwo", dir), 0);
        snprintf(exe, sizeof exe, "%s/tu", dir);
        check_symbolize(exe, NULL, NULL);
        check_warnings(exe);
        snprintf(exe, sizeof exe, "%s/g5", dir);
        check_warnings(exe);
        snprintf(exe, sizeof exe, "%s/split-dwarf-split.exe", dir);
    }
    /* without the .dwo: a warning, no functions from it */
    assert_int_equal(sh("rm %s/split-dwarf-split.dwo", dir), 0);
    b = open_ok(exe, NULL);
    bool warned = false;
    for (size_t i = 0; lp_binary_warning(b, i); i++)
        warned |= strstr(lp_binary_warning(b, i), "DWO") != NULL;
    assert_true(warned);
    lp_binary_close(b);
}

/* Every address of every function: the same stacks from two opens. */
static size_t same_stacks(const char *bin, const lp_binary_opts *o1,
                          const lp_binary_opts *o2)
{
    lp_binary *a = open_ok(bin, o1), *b = open_ok(bin, o2);
    const lp_function *const *fa;
    size_t nf = lp_binary_functions(a, &fa), inl = 0;
    lp_error e = {0};
    assert_int_equal(nf, lp_binary_functions(b, NULL));
    for (size_t i = 0; i < nf; i++) {
        const lp_function *g = lp_binary_function(b, fa[i]->name);
        assert_non_null(g);
        assert_int_equal(fa[i]->nranges, g->nranges);
        for (size_t r = 0; r < fa[i]->nranges; r++) {
            assert_int_equal(fa[i]->ranges[r]->start, g->ranges[r]->start);
            assert_int_equal(fa[i]->ranges[r]->end, g->ranges[r]->end);
            for (uint64_t x = fa[i]->ranges[r]->start;
                 x < fa[i]->ranges[r]->end; x++) {
                const lp_frame *p, *q;
                size_t np, nq;
                assert_int_equal(lp_binary_symbolize(a, x, &p, &np, &e), 0);
                assert_int_equal(lp_binary_symbolize(b, x, &q, &nq, &e), 0);
                assert_int_equal(np, nq);
                for (size_t k = 0; k < np; k++) {
                    assert_string_equal(p[k].func, q[k].func);
                    assert_int_equal(p[k].line, q[k].line);
                    assert_int_equal(p[k].column, q[k].column);
                    assert_int_equal(p[k].discriminator, q[k].discriminator);
                    assert_int_equal(p[k].start_line, q[k].start_line);
                    assert_string_equal(p[k].file, q[k].file);
                }
                inl += np > 1;
            }
        }
    }
    lp_binary_close(a);
    lp_binary_close(b);
    return inl;
}

/* clang-19 -gsplit-dwarf, two units, packaged with llvm-dwp-19 (DWARF 5
 * and the GNU v2 index of DWARF 4): the package gives llvm-profgen's
 * stacks (it reads <exe>.dwp by default, as we do) and warnings, and the
 * same functions and stacks as the .dwo files; --dwp names another file. */
static void test_dwp(void **state)
{
    (void)state;
    if (!have_tool("clang-19") || !have_tool("llvm-dwp-19") ||
        !have_tool("llvm-profgen-19"))
        skip();
    char dir[128], exe[192], pkg[192];
    snprintf(dir, sizeof dir, "%s/dwp", scratch);
    assert_int_equal(sh("mkdir -p %s && cd %s && printf '%%s\n' "
                        "'static volatile int s;' "
                        "'static inline int f1(int x) { if (x & 1) s = x; "
                        "else s = x * 7; return s; }' "
                        "'static inline int f2(int x) { int r = 0; for (int "
                        "i = 0; i < x; i++) r += f1(i) * f1(r); return r; }' "
                        "'int g(int x) { return x > 3 ? f2(x) + f2(2 * x) : "
                        "f1(x); }' > a.c && printf '%%s\n' 'int g(int);' "
                        "'static inline int h(int x) { return g(x) + g(x + 1); }'"
                        " 'int main(int c, char **v) { (void)v; return h(c) & "
                        "1; }' > b.c", dir, dir), 0);
    for (int v = 4; v <= 5; v++) {
        assert_int_equal(sh("cd %s && rm -f *.dwo && for f in a b; do "
                            "clang-19 -O2 -g -gdwarf-%d -gsplit-dwarf -c $f.c "
                            "-o ${f}%d.o || exit 1; done && clang-19 -o d%d a%d.o "
                            "b%d.o && llvm-dwp-19 -e d%d -o d%d.dwp", dir, v,
                            v, v, v, v, v, v), 0);
        snprintf(exe, sizeof exe, "%s/d%d", dir, v);
        snprintf(pkg, sizeof pkg, "%s/other%d.dwp", dir, v);
        lp_binary_opts dwo = {NULL, NULL, -1, 0}, dwp = {NULL, pkg, -1, 0};
        /* the .dwo route (no package), then --dwp with the .dwo files gone */
        assert_int_equal(sh("mv %s.dwp %s", exe, pkg), 0);
        lp_binary *b = open_ok(exe, &dwo);
        size_t nf = lp_binary_functions(b, NULL);
        lp_binary_close(b);
        assert_int_equal(sh("cd %s && mkdir -p keep && mv a%d.dwo b%d.dwo "
                            "keep/", dir, v, v), 0);
        b = open_ok(exe, &dwo);
        assert_true(lp_binary_functions(b, NULL) < nf);
        lp_binary_close(b);
        assert_int_equal(sh("cd %s && cp keep/*.dwo .", dir), 0);
        /* same_stacks needs both routes open: the .dwo files stay for the
         * first, the package is what the second reads (it wins, as in
         * llvm, even with the .dwo files there) */
        size_t inl = same_stacks(exe, &dwo, &dwp);
        assert_true(inl > 0);
        assert_int_equal(sh("cd %s && rm a%d.dwo b%d.dwo", dir, v, v), 0);
        b = open_ok(exe, &dwp);
        assert_int_equal(lp_binary_functions(b, NULL), nf);
        assert_null(lp_binary_warning(b, 0));
        lp_binary_close(b);
        /* the default package, against llvm-profgen */
        assert_int_equal(sh("cp %s %s.dwp", pkg, exe), 0);
        check_symbolize(exe, NULL, NULL);
        check_warnings(exe);
        print_message("DWARF %d: %zu functions, %zu inlined addresses from "
                      "the package\n", v, nf, inl);
    }
}

/* A damaged index (every byte of it in turn set to 0xff, and truncated
 * copies): an error or a clean open, never a crash or a read outside. */
static void test_dwp_corrupt(void **state)
{
    (void)state;
    if (!have_tool("clang-19") || !have_tool("llvm-dwp-19"))
        skip();
    char dir[128], exe[192], pkg[192], bad[192];
    snprintf(dir, sizeof dir, "%s/dwpbad", scratch);
    assert_int_equal(sh("mkdir -p %s && cd %s && printf 'static inline int "
                        "f(int x) { return x * x + 1; }\nint main(int c, "
                        "char **v) { (void)v; return f(c); }\n' > m.c && "
                        "clang-19 -O2 -g -gsplit-dwarf -c m.c -o m.o && "
                        "clang-19 -o m m.o && llvm-dwp-19 -e m -o m.pkg && "
                        "rm m.dwo", dir, dir), 0);
    snprintf(exe, sizeof exe, "%s/m", dir);
    snprintf(pkg, sizeof pkg, "%s/m.pkg", dir);
    snprintf(bad, sizeof bad, "%s/bad.dwp", dir);
    char *out = run("readelf -SW %s | awk '/debug_cu_index/ { for (i = 1; "
                    "i <= NF; i++) if ($i == \"PROGBITS\") print $(i + 2), "
                    "$(i + 3) }'", pkg);
    assert_non_null(out);
    unsigned long off = 0, size = 0;
    assert_int_equal(sscanf(out, "%lx %lx", &off, &size), 2);
    free(out);
    FILE *f = fopen(pkg, "rb");
    assert_non_null(f);
    unsigned char img[1 << 16];
    size_t n = fread(img, 1, sizeof img, f);
    fclose(f);
    assert_true(n < sizeof img && off + size <= n);
    size_t errors = 0, opened = 0;
    lp_binary_opts o = {NULL, bad, -1, 0};
    for (size_t i = 0; i < size; i++) {
        unsigned char keep = img[off + i];
        img[off + i] = 0xff;
        assert_non_null(f = fopen(bad, "wb"));
        assert_int_equal(fwrite(img, 1, n, f), n);
        fclose(f);
        img[off + i] = keep;
        lp_error e = {0};
        lp_binary *b = lp_binary_open(exe, &o, &e);
        if (b) {
            const lp_function *const *fs;
            size_t nf = lp_binary_functions(b, &fs);
            for (size_t k = 0; k < nf; k++) {
                const lp_frame *fr;
                size_t nfr;
                lp_binary_symbolize(b, fs[k]->ranges[0]->start, &fr, &nfr,
                                    &e);
            }
            lp_binary_close(b);
            opened++;
        } else {
            assert_non_null(strstr(e.msg, "bad.dwp"));
            errors++;
        }
    }
    assert_true(errors > 0);
    for (size_t cut = 0; cut < n; cut += n / 7 + 1) {
        assert_non_null(f = fopen(bad, "wb"));
        assert_int_equal(fwrite(img, 1, cut, f), cut);
        fclose(f);
        lp_error e = {0};
        assert_null(lp_binary_open(exe, &o, &e));
        if (!strstr(e.msg, "bad.dwp"))
            fail_msg("cut at %zu: '%s' does not name bad.dwp", cut, e.msg);
    }
    print_message("index bytes set to 0xff: %zu errors, %zu opened\n",
                  errors, opened);
}

static void expect_open_error(const char *path, int code, const char *frag)
{
    lp_error e = {0};
    lp_binary *b = lp_binary_open(path, NULL, &e);
    if (b)
        fail_msg("%s opened", path);
    assert_int_equal(e.code, code);
    if (!strstr(e.msg, frag))
        fail_msg("message '%s' lacks '%s'", e.msg, frag);
    assert_non_null(strstr(e.msg, path));
}

static void test_open_errors(void **state)
{
    (void)state;
    char p[128];
    expect_open_error("tests/data/README.md", LP_EFORMAT, "not an ELF");
    expect_open_error("tests/data", LP_EIO, "not a regular file");
    snprintf(p, sizeof p, "%s/empty", scratch);
    assert_int_equal(sh(": > %s", p), 0);
    expect_open_error(p, LP_EFORMAT, "not an ELF");
    snprintf(p, sizeof p, "%s/missing", scratch);
    expect_open_error(p, LP_EIO, "cannot open");
    static const long cuts[] = {10, 100, 3000};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/trunc%zu", scratch, i);
        assert_int_equal(sh("head -c %ld %s > %s", cuts[i],
                            IN "inline-noprobe.perfbin", p), 0);
        expect_open_error(p, LP_EFORMAT, "trunc");
    }
    lp_error e = {0};
    assert_null(lp_binary_open(NULL, NULL, &e));
    assert_int_equal(e.code, LP_EUSAGE);
}


/* ---- tests: laziness, prolog/epilog, corrupt input ------------------------ */

static void test_lazy_disassembly(void **state)
{
    (void)state;
    const char *bin = "tests/data/autofdo/test.binary";
    lp_binary *b = open_ok(bin, NULL);
    size_t total;
    assert_int_equal(lp_binary_decoded_regions(b, &total), 0);
    assert_true(total > 50);
    const lp_function *f = lp_binary_function(b, "main");
    assert_non_null(f);
    uint64_t a = f->ranges[0]->start;
    lp_error e = {0};
    assert_int_equal(lp_binary_inst(b, a, NULL, &e), 1);
    const lp_frame *fr;
    size_t nf;
    assert_int_equal(lp_binary_symbolize(b, a, &fr, &nf, &e), 0);
    assert_true(nf >= 1);
    assert_string_equal(fr[0].func, "main");
    size_t after_one = lp_binary_decoded_regions(b, NULL);
    assert_true(after_one >= 1 && after_one <= 2);
    /* walking all code decodes everything, once */
    size_t n = 0;
    assert_int_equal(lp_binary_inst_at_or_after(b, 0, &a, &e), 1);
    do
        n++;
    while (lp_binary_next_inst(b, a, &a, &e) == 1);
    assert_true(n > 1000);
    assert_true(lp_binary_decoded_regions(b, NULL) > total / 2);
    lp_binary_close(b);
}

/* lp_binary_inst at every byte of the code, forwards then from the end
 * (the region found last is tried first): found exactly at the
 * instruction starts the walk gives, with that address; not found in
 * between, in gaps between regions or outside the code; and
 * lp_binary_inst_at_or_after gives the first start at or after it */
static void check_inst_at(lp_binary *b, uint64_t x, const uint64_t *starts,
                          size_t n)
{
    size_t lo = 0, hi = n, mid;
    lp_error e = {0};
    lp_inst in;
    int r = lp_binary_inst(b, x, &in, &e);

    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (starts[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (r != (lo < n && starts[lo] == x))
        fail_msg("%#" PRIx64 ": %d", x, r);
    if (r == 1 && in.addr != x)
        fail_msg("%#" PRIx64 ": instruction at %#" PRIx64, x, in.addr);
    /* and the first instruction at or after it: the next start */
    uint64_t after = 0;
    r = lp_binary_inst_at_or_after(b, x, &after, &e);
    if (r != (lo < n) || (r == 1 && after != starts[lo]))
        fail_msg("%#" PRIx64 ": at or after: %d, %#" PRIx64, x, r, after);
}

static void test_inst_lookup_every_byte(void **state)
{
    (void)state;
    lp_binary *b = open_ok("tests/data/autofdo/test.binary", NULL);
    lp_error e = {0};
    uint64_t a, x, *starts = NULL;
    size_t n = 0, cap = 0;

    assert_int_equal(lp_binary_inst_at_or_after(b, 0, &a, &e), 1);
    do {
        if (n == cap) {
            cap = cap ? cap * 2 : 1024;
            starts = realloc(starts, cap * sizeof *starts);
            assert_non_null(starts);
        }
        starts[n++] = a;
    } while (lp_binary_next_inst(b, a, &a, &e) == 1);
    assert_true(n > 1000);
    for (x = starts[0] - 70; x < starts[n - 1] + 70; x++)
        check_inst_at(b, x, starts, n);
    for (x = starts[n - 1] + 70; x > starts[0] - 70; x--)
        check_inst_at(b, x, starts, n);
    free(starts);
    lp_binary_close(b);
}

/* Prolog/epilog: range starts and the next instruction, rets and the
 * instruction before, as llvm-profgen's PrologEpilogTracker. */
static void test_prolog_epilog(void **state)
{
    (void)state;
    if (!have_tool("llvm-profgen-19"))
        skip();
    const char *bin = IN "inline-cs-noprobe.perfbin";
    size_t n, hits = 0;
    pg_inst *v = profgen_listing(bin, &n);
    lp_binary *b = open_ok(bin, NULL);
    for (size_t i = 0; i < n; i++) {
        const lp_func_range *r = lp_binary_func_range(b, v[i].addr);
        const lp_func_range *rp = i ? lp_binary_func_range(b, v[i - 1].addr)
                                    : NULL;
        bool want = (r && r->start == v[i].addr) ||
                    (rp && rp->start == v[i - 1].addr) ||
                    expected_kind(&v[i]) == LP_INST_RET ||
                    (i + 1 < n && expected_kind(&v[i + 1]) == LP_INST_RET);
        assert_int_equal(lp_binary_in_prolog_epilog(b, v[i].addr), want);
        hits += want;
    }
    assert_true(hits > 4 && hits < n);
    lp_binary_close(b);
    free(v);
}

/* Section [off, off+size) in the file, from readelf. */
static bool sec_extent(const char *bin, const char *name, long *off,
                       long *size)
{
    char *out = run("readelf -SW %s 2>/dev/null", bin);
    bool ok = false;
    for (char *save = NULL, *l = strtok_r(out, "\n", &save); l && !ok;
         l = strtok_r(NULL, "\n", &save)) {
        char *p = strstr(l, name);
        if (!p || p[strlen(name)] != ' ')
            continue;
        char type[32];
        unsigned long addr;
        ok = sscanf(p + strlen(name), " %31s %lx %lx %lx", type, &addr,
                    (unsigned long *)off, (unsigned long *)size) == 4;
    }
    free(out);
    return ok;
}

/* Corrupted DWARF and code bytes: a clean error or a loaded binary whose
 * queries answer without crashing (ASan/UBSan build checks memory). */
static void test_corrupt_sections(void **state)
{
    (void)state;
    const char *src = IN "inline-noprobe.perfbin";
    static const char *const secs[] = {".debug_line", ".debug_info",
                                       ".debug_abbrev", ".debug_ranges",
                                       ".text", ".symtab"};
    FILE *in = fopen(src, "rb");
    assert_non_null(in);
    fseek(in, 0, SEEK_END);
    long fsz = ftell(in);
    unsigned char *orig = malloc((size_t)fsz), *buf = malloc((size_t)fsz);
    rewind(in);
    assert_int_equal(fread(orig, 1, (size_t)fsz, in), (size_t)fsz);
    fclose(in);
    char path[128];
    snprintf(path, sizeof path, "%s/corrupt", scratch);
    uint32_t seed = 12345;
    size_t opened = 0, runs = 0;
    for (size_t s = 0; s < sizeof secs / sizeof *secs; s++) {
        long off, size;
        if (!sec_extent(src, secs[s], &off, &size) || size <= 0)
            continue;
        for (int round = 0; round < 12; round++, runs++) {
            memcpy(buf, orig, (size_t)fsz);
            for (int k = 0; k < 1 + round * 3; k++) {
                seed = seed * 1103515245u + 12345u;
                long at = off + (long)((seed >> 8) % (uint32_t)size);
                buf[at] = (unsigned char)(seed >> 24);
            }
            FILE *o = fopen(path, "wb");
            fwrite(buf, 1, (size_t)fsz, o);
            fclose(o);
            lp_error e = {0};
            lp_binary *b = lp_binary_open(path, NULL, &e);
            if (!b) {
                assert_true(e.msg[0] != 0);
                continue;
            }
            opened++;
            uint64_t a;
            size_t steps = 0;
            if (lp_binary_inst_at_or_after(b, 0, &a, &e) == 1)
                do {
                    const lp_frame *fr;
                    size_t nf;
                    lp_binary_symbolize(b, a, &fr, &nf, &e);
                    lp_binary_in_prolog_epilog(b, a);
                    lp_binary_func_range(b, a);
                } while (++steps < 100000 &&
                         lp_binary_next_inst(b, a, &a, &e) == 1);
            lp_binary_close(b);
        }
    }
    assert_true(runs >= 48 && opened > 0);
    free(orig);
    free(buf);
}

/* ---- tests: pure rules --------------------------------------------------- */

static void test_canonical_names(void **state)
{
    (void)state;
    static const struct { const char *in; size_t len; } c[] = {
        {"foo", 3}, {"foo.llvm.123", 3}, {"foo.part.0", 3}, {"foo.cold", 8},
        {"foo.part.0.llvm.77", 3}, {"foo.llvm.1.cold", 15},
        {"bar.__uniq.26267048767521081047744692097241227776", 49},
        {"bar.__uniq.1.llvm.2", 12}, {"a.llvm.b.c", 10}, {"", 0},
    };
    for (size_t i = 0; i < sizeof c / sizeof *c; i++)
        if (lp_canonical_fn_len(c[i].in) != c[i].len)
            fail_msg("%s -> %zu, want %zu", c[i].in,
                     lp_canonical_fn_len(c[i].in), c[i].len);
}

/* LLVM's encoding (DILocation::encodeDiscriminator), written from its
 * definition, to check decoding round-trips. */
static uint32_t enc_component(uint32_t c)
{
    return c > 0x1f ? (((c & 0xfe0) << 1) | (c & 0x1f) | 0x20) << 1 : c << 1;
}
static uint32_t enc_len(uint32_t c) { return c > 0x1f ? 14 : 7; }

static void test_discriminators(void **state)
{
    (void)state;
    static const uint32_t vals[] = {0, 1, 2, 5, 31, 32, 100, 4095};
    for (size_t i = 0; i < 8; i++)
        for (size_t j = 1; j < 8; j++) {
            uint32_t bse = vals[i], dup = vals[j];
            uint32_t d = enc_component(bse) |
                         (enc_component(dup) << enc_len(bse));
            if (bse == 0 && dup == 0)
                continue;
            assert_int_equal(lp_disc_base(d, false), bse);
            assert_int_equal(lp_disc_dup_factor(d, false), dup ? dup : 1);
            assert_int_equal(lp_disc_base(d, true), d);
            assert_int_equal(lp_disc_dup_factor(d, true), 1);
        }
    assert_int_equal(lp_disc_dup_factor(0, false), 1);
    /* pseudo-probe discriminators: probe index, or the packed base */
    uint32_t probe = (42u << 3) | 7;
    assert_int_equal(lp_disc_base(probe, false), 42);
    assert_int_equal(lp_disc_base(probe | (1u << 28) | (3u << 16), false), 3);
}

static void test_fs_discriminator_detected(void **state)
{
    (void)state;
    if (!have_tool("nm"))
        skip();
    const char *list[] = {IN "fs-discriminator.perfbin", IN "noprobe.perfbin"};
    for (size_t i = 0; i < 2; i++) {
        lp_binary *b = open_ok(list[i], NULL);
        assert_int_equal(lp_binary_fs_discriminator(b),
                         sh("nm %s | grep -q __llvm_fs_discriminator__",
                            list[i]) == 0);
        lp_binary_close(b);
        lp_binary_opts o = {NULL, NULL, 0};
        b = open_ok(list[i], &o);
        assert_false(lp_binary_fs_discriminator(b));
        lp_binary_close(b);
    }
}

/* ---- the DIE walk (dies.c) against the plain libdw walk ------------------ */

typedef struct die_offs {
    Dwarf_Off *v;
    size_t n, cap, stop_at;
} die_offs;

static int offs_visit(Dwarf_Die *die, void *arg)
{
    die_offs *o = arg;
    if (o->n == o->cap) {
        o->cap = o->cap * 2 + 256;
        assert_non_null(o->v = realloc(o->v, o->cap * sizeof *o->v));
    }
    o->v[o->n++] = dwarf_dieoffset(die);
    return o->n == o->stop_at ? 7 : 0;
}

/* The walk dies.c replaces: dwarf_child + dwarf_siblingof, 256 deep. */
static void plain_walk(Dwarf_Die *die, die_offs *o, int depth)
{
    Dwarf_Die c;
    if (depth > 256 || dwarf_child(die, &c) != 0)
        return;
    do {
        offs_visit(&c, o);
        if (dwarf_haschildren(&c))
            plain_walk(&c, o, depth + 1);
    } while (dwarf_siblingof(&c, &c) == 0);
}

/* Every DIE's attribute end against where libdw puts its first child, or
 * the next sibling of a childless DIE (without DW_AT_sibling). */
static size_t check_attr_ends(const lp_die_unit *u, Dwarf_Die *die)
{
    Dwarf_Die c, n;
    size_t checked = 0;
    if (dwarf_child(die, &c) != 0)
        return 0;
    do {
        const unsigned char *end = lp_bin_die_attrs_end(u, &c);
        if (dwarf_haschildren(&c)) {
            if (dwarf_child(&c, &n) == 0) {
                assert_ptr_equal(end, n.addr);
                checked++;
            }
            checked += check_attr_ends(u, &c);
        } else if (dwarf_siblingof(&c, &n) == 0 &&
                   !dwarf_hasattr(&c, DW_AT_sibling)) {
            assert_ptr_equal(end, n.addr);
            checked++;
        }
    } while (dwarf_siblingof(&c, &c) == 0);
    return checked;
}

/* One unit: the same DIEs in the same order; returns how many. */
static size_t check_unit_walk(Dwarf_Die *unit, size_t *ends)
{
    die_offs want = {0}, got = {0};
    lp_die_unit u;
    plain_walk(unit, &want, 0);
    assert_int_equal(lp_bin_walk_dies(unit, offs_visit, &got), 0);
    assert_int_equal(got.n, want.n);
    for (size_t i = 0; i < want.n; i++)
        if (got.v[i] != want.v[i])
            fail_msg("DIE %zu: walked 0x%" PRIx64 ", libdw 0x%" PRIx64, i,
                     (uint64_t)got.v[i], (uint64_t)want.v[i]);
    assert_int_equal(lp_bin_die_unit(unit, &u), 0);
    *ends += check_attr_ends(&u, unit);
    if (want.n > 2) {           /* a non-zero visit stops the walk */
        die_offs stop = {.stop_at = want.n / 2};
        assert_int_equal(lp_bin_walk_dies(unit, offs_visit, &stop), 7);
        assert_int_equal(stop.n, want.n / 2);
        free(stop.v);
    }
    free(want.v);
    free(got.v);
    return want.n;
}

/* Every unit of a file, the split units libdw finds included. */
static size_t check_file_walk(const char *path, size_t *ends)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    Dwarf *dw = dwarf_begin(fd, DWARF_C_READ);
    assert_non_null(dw);
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie, subdie;
    uint8_t ut;
    size_t n = 0;
    while (dwarf_get_units(dw, cu, &cu, NULL, &ut, &cudie, &subdie) == 0) {
        n += check_unit_walk(&cudie, ends);
        if (ut == DW_UT_skeleton && dwarf_tag(&subdie) == DW_TAG_compile_unit)
            n += check_unit_walk(&subdie, ends);
    }
    dwarf_end(dw);
    close(fd);
    return n;
}

/* The function table's walk (dies.c) visits every DIE once, in the order
 * of the plain dwarf_child/dwarf_siblingof walk (llvm's CU.dies()): the
 * test binaries, gcc builds (DW_AT_sibling, implicit_const, C nested
 * functions, blocks nested past the 256-level limit), g++ and clang-19
 * DWARF 4/5 and split DWARF. */
static void test_die_walk(void **state)
{
    (void)state;
    char dir[128], path[192];
    size_t ends = 0;
    for (size_t i = 0; i < sizeof bins / sizeof *bins; i++)
        assert_true(check_file_walk(bins[i], &ends) > 0);
    snprintf(dir, sizeof dir, "%s/walk", scratch);
    assert_int_equal(sh("mkdir -p %s && cd %s && "
        "printf 'int g(int x) {\\n  int outer(int y) {\\n"
        "    int inner(int z) { return z * x; }\\n"
        "    { int k = y + 1; return inner(k) + inner(y); }\\n  }\\n"
        "  struct e {} e; (void)e;\\n  return outer(x + 1);\\n}\\n"
        "int main(int c, char **v) { (void)v; return g(c) & 1; }\\n' > n.c && "
        "{ echo 'int deep(int a) {'; i=0; while [ $i -lt 300 ]; do "
        "echo \"{ volatile int v$i = a; a += v$i;\"; i=$((i+1)); done; "
        "i=0; while [ $i -lt 300 ]; do echo '}'; i=$((i+1)); done; "
        "echo 'return a; }'; } > d.c && "
        "printf '#include <vector>\\nnamespace ns { template <class T> struct S "
        "{ T t; int f() const { return (int)t.size(); } }; }\\n"
        "int h(int n) { ns::S<std::vector<int>> s; s.t.resize(n); "
        "return s.f(); }\\nint main() { return h(3); }\\n' > p.cc && "
        "gcc -O1 -g -o n n.c && gcc -O0 -g -c -o d.o d.c && "
        "g++ -O1 -g -o p p.cc", dir, dir), 0);
    const char *mine[] = {"n", "d.o", "p"};
    for (size_t i = 0; i < sizeof mine / sizeof *mine; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, mine[i]);
        assert_true(check_file_walk(path, &ends) > 0);
    }
    if (have_tool("clang-19")) {
        assert_int_equal(sh("cd %s && clang-19 -O2 -g -gdwarf-4 -c -o c4.o "
                            "-x c++ p.cc && clang-19 -O2 -g -gdwarf-5 "
                            "-gsplit-dwarf -o s5 -x c++ p.cc -lstdc++", dir), 0);
        for (int i = 0; i < 2; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, i ? "s5" : "c4.o");
            assert_true(check_file_walk(path, &ends) > 0);
        }
    }
    assert_true(ends > 1000);
}

static int setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/lp-bin-XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return sh("rm -rf %s", scratch) == 0 ? 0 : -1;
}

/* lp_binary_refs_to: direct calls and jumps to a function's entry,
 * conditional and short ones included; a byte sequence that looks like a
 * call to f inside another instruction's immediate is no site; nor is a
 * jump to a function's own start (a loop). Functions from the symbol
 * table (the program has no DWARF). */
static void test_refs_to(void **state)
{
    static const char src[] =
        ".text\n"
        ".globl _start\n.type _start,@function\n_start: call g\n call h\n ret\n.size _start,.-_start\n"
        ".type f,@function\nf: nop\n ret\n.size f,.-f\n"
        ".type g,@function\ng: call f\n jmp f\n.size g,.-g\n"
        ".type h,@function\nh: cmp $1,%edi\n je f\n {disp32} jmp f\n.size h,.-h\n"
        /* movabs $imm64,%rax whose immediate starts with e8 + rel32 to f */
        ".type k,@function\nk: .byte 0x48,0xb8,0xe8\n .long f-(.+4)\n"
        " .byte 0x90,0x90,0x90\n jmp k\n.size k,.-k\n";
    lp_binary_opts o = {0};
    lp_error err = {0};
    const lp_xref *x;
    uint64_t f, g, h;
    lp_binary *b;
    char *nm;
    long n, i;
    int calls = 0, jumps = 0, conds = 0;
    (void)state;

    if (!have_tool("clang-19"))
        skip();
    assert_int_equal(sh("printf '%%s' '%s' > %s/refs.s && clang-19 -nostdlib -static "
                        "-Wl,--build-id=none %s/refs.s -o %s/refs",
                        src, scratch, scratch, scratch), 0);
    nm = run("nm %s/refs | awk '$3==\"f\"||$3==\"g\"||$3==\"h\"{print $1}' | tr '\\n' ' '", scratch);
    assert_non_null(nm);
    assert_int_equal(sscanf(nm, "%" SCNx64 " %" SCNx64 " %" SCNx64, &f, &g, &h), 3);
    free(nm);
    o.symtab_functions = 1;
    snprintf(scratch + strlen(scratch), 16, "/refs");
    b = lp_binary_open(scratch, &o, &err);
    scratch[strlen(scratch) - 5] = 0;
    assert_non_null(b);
    n = lp_binary_refs_to(b, f, &x, &err);
    assert_int_equal(n, 4);     /* g's call and jmp, h's je and jmp */
    for (i = 0; i < n; i++) {
        assert_true(x[i].site > f);
        calls += x[i].kind == LP_INST_CALL;
        jumps += x[i].kind == LP_INST_UNCOND_BR;
        conds += x[i].kind == LP_INST_COND_BR;
    }
    assert_int_equal(calls, 1);
    assert_int_equal(jumps, 2);
    assert_int_equal(conds, 1);
    assert_int_equal(lp_binary_refs_to(b, g, &x, &err), 1);
    assert_int_equal(x[0].kind, LP_INST_CALL);
    assert_int_equal(lp_binary_refs_to(b, f + 1, &x, &err), 0); /* no entry */
    lp_binary_close(b);
}

/* lp_binary_addr_taken on one program built `cflags`: f is only called
 * directly (not taken), g's address is loaded by a RIP-relative lea, h's
 * is in data (a relocation in a PIE, the plain value otherwise). Each
 * apart from the others: no operand of one can name another's entry. */
static void addr_taken_case(const char *cflags)
{
    static const char src[] =
        ".text\n"
        ".globl _start\n.type _start,@function\n_start: call f\n lea g(%%rip),%%rax\n ret\n.size _start,.-_start\n"
        ".p2align 5\n.type f,@function\nf: nop\n ret\n.size f,.-f\n"
        ".p2align 5\n.type g,@function\ng: nop\n ret\n.size g,.-g\n"
        ".p2align 5\n.type h,@function\nh: nop\n ret\n.size h,.-h\n"
        ".data\n.quad h\n";
    lp_binary_opts o = {0};
    lp_error err = {0};
    uint64_t f, g, h;
    lp_binary *b;
    char *nm;

    assert_int_equal(sh("printf '%s' > %s/taken.s && clang-19 -nostdlib %s "
                        "-Wl,--build-id=none %s/taken.s -o %s/taken",
                        src, scratch, cflags, scratch, scratch), 0);
    nm = run("nm %s/taken | awk '$3==\"f\"||$3==\"g\"||$3==\"h\"{print $1}' | tr '\\n' ' '", scratch);
    assert_non_null(nm);
    assert_int_equal(sscanf(nm, "%" SCNx64 " %" SCNx64 " %" SCNx64, &f, &g, &h), 3);
    free(nm);
    o.symtab_functions = 1;
    snprintf(scratch + strlen(scratch), 16, "/taken");
    b = lp_binary_open(scratch, &o, &err);
    scratch[strlen(scratch) - 6] = 0;
    assert_non_null(b);
    assert_int_equal(lp_binary_addr_taken(b, f, &err), 0);
    assert_int_equal(lp_binary_addr_taken(b, g, &err), 1);
    assert_int_equal(lp_binary_addr_taken(b, h, &err), 1);
    assert_int_equal(lp_binary_addr_taken(b, g + 1, &err), 0); /* no entry */
    lp_binary_close(b);
}

/* The functions an indirect call may enter (the frame repair infers no
 * caller of theirs), in a static and in a position-independent program
 * (ld's and lld's). */
static void test_addr_taken(void **state)
{
    (void)state;
    if (!have_tool("clang-19"))
        skip();
    addr_taken_case("-static");
    addr_taken_case("-pie");
    if (have_tool("ld.lld"))    /* lld leaves the relocated word 0 */
        addr_taken_case("-pie -fuse-ld=lld");
}

/* LP_SYMTAB_LLVM22 (llvm-profgen 22's loadSymbolsFromSymtab): symbols in
 * .symtab order, canonical names (".cold", ".llvm.N", ".isra.N" cut;
 * "k.cold.1" kept), a second part of f joining f, an alias of f marking it
 * (NameStatus Mismatch, a detailed warning), a symbol inside f with f's
 * canonical name warned about, and table order deciding overlaps: zz,
 * listed before outer that holds it, keeps its range. Also the canonical
 * names alone. */
static void test_symtab_functions_llvm22(void **state)
{
    static const char src[] =
        ".text\n.type zz,@function\n"
        ".globl _start\n.type _start,@function\n_start: ret\n.size _start,.-_start\n"
        ".type f,@function\nf: nop\nf.warm: nop\n ret\n.size f,.-f\n"
        ".type f.warm,@function\n.size f.warm,1\n"
        ".type f2,@function\n.set f2,f\n.size f2,3\n"
        ".type g.llvm.123,@function\ng.llvm.123: ret\n.size g.llvm.123,.-g.llvm.123\n"
        ".type h.isra.0,@function\nh.isra.0: ret\n.size h.isra.0,.-h.isra.0\n"
        ".type k.cold.1,@function\nk.cold.1: ret\n.size k.cold.1,.-k.cold.1\n"
        ".type outer,@function\nouter: nop\nzz: nop\n ret\n.size outer,.-outer\n.size zz,1\n"
        ".type f.cold,@function\nf.cold: ret\n.size f.cold,.-f.cold\n";
    static const char *const sfx[] = {".cold", ".llvm."};
    lp_binary_opts o = {0};
    lp_error err = {0};
    const lp_function *f;
    const lp_func_range *r;
    uint64_t outer;
    lp_binary *b;
    char *nm, path[80];
    bool warm = false, alias = false;
    const char *w;
    (void)state;

    assert_int_equal(lp_canonical_fn_len_with("foo.cold", sfx, 2), 3);
    assert_int_equal(lp_canonical_fn_len_with("foo.cold.1", sfx, 2), 10);
    assert_int_equal(lp_canonical_fn_len_with("foo.llvm.12", sfx, 2), 3);
    assert_int_equal(lp_canonical_fn_len_with("foo.llvm.12.cold", sfx, 2), 3);
    assert_int_equal(lp_canonical_fn_len("foo.cold"), 8);
    if (!have_tool("clang-19"))
        skip();
    assert_int_equal(sh("printf '%%s' '%s' > %s/st.s && clang-19 -nostdlib -static "
                        "-Wl,--build-id=none %s/st.s -o %s/st",
                        src, scratch, scratch, scratch), 0);
    nm = run("nm %s/st | awk '$3==\"outer\"{print $1}'", scratch);
    assert_non_null(nm);
    assert_int_equal(sscanf(nm, "%" SCNx64, &outer), 1);
    free(nm);
    snprintf(path, sizeof path, "%s/st", scratch);
    o.symtab_functions = LP_SYMTAB_LLVM22;
    o.detailed_warnings = true;
    assert_non_null(b = lp_binary_open(path, &o, &err));
    assert_non_null(f = lp_binary_function(b, "f"));
    assert_int_equal(f->nranges, 2);        /* f and f.cold */
    assert_true(f->from_symtab && f->symtab_mismatch);
    assert_non_null(lp_binary_function(b, "g"));
    assert_non_null(lp_binary_function(b, "h"));
    assert_non_null(lp_binary_function(b, "k.cold.1"));
    assert_null(lp_binary_function(b, "f2"));
    assert_null(lp_binary_function(b, "f.warm"));
    assert_non_null(r = lp_binary_func_range(b, outer + 1));
    assert_string_equal(r->func->name, "zz");
    assert_non_null(r = lp_binary_func_range(b, outer));
    assert_string_equal(r->func->name, "outer");
    for (size_t k = 0; (w = lp_binary_warning(b, k)); k++) {
        warm |= strstr(w, "Conflicting range for symbol f.warm with range") != NULL;
        alias |= strstr(w, "Conflicting name for symbol f2 with range") != NULL;
    }
    assert_true(warm && alias);
    lp_binary_close(b);
    o.detailed_warnings = false;        /* the name conflict is a detail */
    assert_non_null(b = lp_binary_open(path, &o, &err));
    for (size_t k = 0; (w = lp_binary_warning(b, k)); k++)
        assert_null(strstr(w, "Conflicting name"));
    lp_binary_close(b);
}

/* ---- the warmer ----------------------------------------------------------- */

/* Every instruction start of b, in address order (a walk decodes all). */
static uint64_t *all_starts(lp_binary *b, size_t *n)
{
    lp_error e = {0};
    uint64_t a, *v = NULL;
    size_t cap = 0;

    *n = 0;
    assert_int_equal(lp_binary_inst_at_or_after(b, 0, &a, &e), 1);
    do {
        if (*n == cap) {
            cap = cap ? cap * 2 : 4096;
            assert_non_null(v = realloc(v, cap * sizeof *v));
        }
        v[(*n)++] = a;
    } while (lp_binary_next_inst(b, a, &a, &e) == 1);
    return v;
}

static bool frames_equal(const lp_frame *x, size_t nx, const lp_frame *y,
                         size_t ny)
{
    if (nx != ny)
        return false;
    for (size_t i = 0; i < nx; i++)
        if (strcmp(x[i].func, y[i].func) || strcmp(x[i].file, y[i].file) ||
            x[i].line != y[i].line || x[i].column != y[i].column ||
            x[i].discriminator != y[i].discriminator ||
            x[i].start_line != y[i].start_line)
            return false;
    return true;
}

/* The instruction and the inline frames at a, from b as from ref. */
static void check_same_at(lp_binary *b, lp_binary *ref, uint64_t a)
{
    lp_error e = {0};
    lp_inst x, y;
    const lp_frame *fx, *fy;
    size_t nx, ny;

    if (lp_binary_inst(b, a, &x, &e) != 1 || lp_binary_inst(ref, a, &y, &e) != 1 ||
        x.kind != y.kind || x.size != y.size || x.target != y.target ||
        x.indirect != y.indirect)
        fail_msg("%#" PRIx64 ": not the same instruction", a);
    if (lp_binary_symbolize(b, a, &fx, &nx, &e) ||
        lp_binary_symbolize(ref, a, &fy, &ny, &e) || !frames_equal(fx, nx, fy, ny))
        fail_msg("%#" PRIx64 ": not the same frames", a);
}

/* This test program itself: large enough (its library, with DWARF) for
 * the warmer to run while this thread asks. */
static char *self_path(void)
{
    char *p = realpath("/proc/self/exe", NULL);

    assert_non_null(p);
    return p;
}

/* A warmed binary and a cold one of the same program, and every
 * instruction start (the cold one's walk). */
typedef struct warm_fx {
    char *exe;
    lp_binary *ref, *b;
    uint64_t *v;
    size_t n;
} warm_fx;

static void warm_fx_open(warm_fx *f)
{
    f->exe = self_path();
    f->ref = open_ok(f->exe, NULL);
    f->b = open_ok(f->exe, NULL);
    f->v = all_starts(f->ref, &f->n);
}

static void warm_fx_close(warm_fx *f)
{
    free(f->v);
    free(f->exe);
    lp_binary_close(f->b);
    lp_binary_close(f->ref);
}

/* The warmer alone, through: every region decoded and every instruction
 * symbolized by it, and the answers a cold binary gives. */
static void test_warm_through(void **state)
{
    warm_fx f;
    lp_binary_warm_stats st;
    size_t total, i;

    (void)state;
    warm_fx_open(&f);
    assert_int_equal(lp_binary_decoded_regions(f.b, &total), 0);
    assert_int_equal(lp_binary_warm_start(f.b), 0);
    assert_int_equal(lp_binary_warm_start(f.b), -1);   /* one at a time */
    lp_binary_warm_stop(f.b, true, &st);
    assert_true(st.finished);
    assert_int_equal(st.regions, total);
    assert_int_equal(st.symbolized, f.n);
    assert_int_equal(lp_binary_decoded_regions(f.b, NULL), total);
    for (i = 0; i < f.n; i++)
        check_same_at(f.b, f.ref, f.v[i]);
    lp_binary_warm_stop(f.b, true, &st);                /* none: no-op */
    assert_int_equal(st.regions, 0);
    assert_false(st.finished);
    warm_fx_close(&f);
}

/* This thread asks from the end while the warmer goes from the start:
 * they meet (regions claimed by one, waited for by the other), the
 * answers are the cold binary's, and the warmer did part of the work. A
 * warmer stopped at once, started again, or left running at close,
 * leaves a binary that works. */
static void test_warm_while_asked(void **state)
{
    warm_fx f;
    lp_binary_warm_stats st;
    size_t total, i;

    (void)state;
    warm_fx_open(&f);
    assert_int_equal(lp_binary_warm_start(f.b), 0);
    for (i = f.n; i-- > 0;)
        check_same_at(f.b, f.ref, f.v[i]);
    lp_binary_warm_stop(f.b, false, &st);
    assert_true(st.regions > 0 && st.symbolized > 0);
    i = lp_binary_decoded_regions(f.b, &total);
    assert_int_equal(i, total);
    lp_binary_close(f.b);

    f.b = open_ok(f.exe, NULL);                         /* stopped at once */
    assert_int_equal(lp_binary_warm_start(f.b), 0);
    lp_binary_warm_stop(f.b, false, &st);
    for (i = 0; i < f.n; i += 97)
        check_same_at(f.b, f.ref, f.v[i]);
    assert_int_equal(lp_binary_warm_start(f.b), 0);     /* again, then closed */
    check_same_at(f.b, f.ref, f.v[f.n / 2]);
    warm_fx_close(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_disasm_matches_profgen),
        cmocka_unit_test(test_inst_lookup_every_byte),
        cmocka_unit_test(test_symbolize_matches_profgen),
        cmocka_unit_test(test_self_matches_profgen),
        cmocka_unit_test(test_symbolize_matches_llvm_symbolizer),
        cmocka_unit_test(test_functions_match_dwarfdump),
        cmocka_unit_test(test_warnings_match_profgen),
        cmocka_unit_test(test_func_entries_and_callee_names),
        cmocka_unit_test(test_elf_facts_match_readelf),
        cmocka_unit_test(test_addresses_through_segments),
        cmocka_unit_test(test_znver4_matches_profgen),
        cmocka_unit_test(test_aarch64),
        cmocka_unit_test(test_debug_binary_and_stripped),
        cmocka_unit_test(test_symbol_name_perf),
        cmocka_unit_test(test_split_dwarf),
        cmocka_unit_test(test_dwp),
        cmocka_unit_test(test_dwp_corrupt),
        cmocka_unit_test(test_open_errors),
        cmocka_unit_test(test_lazy_disassembly),
        cmocka_unit_test(test_prolog_epilog),
        cmocka_unit_test(test_corrupt_sections),
        cmocka_unit_test(test_canonical_names),
        cmocka_unit_test(test_discriminators),
        cmocka_unit_test(test_fs_discriminator_detected),
        cmocka_unit_test(test_die_walk),
        cmocka_unit_test(test_refs_to),
        cmocka_unit_test(test_addr_taken),
        cmocka_unit_test(test_symtab_functions_llvm22),
        cmocka_unit_test(test_warm_through),
        cmocka_unit_test(test_warm_while_asked),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
