/*
 * test_disasm.c - the region decoder (src/binary/disasm.c) gives, for every
 * instruction, exactly what decoding it with capstone's CS_OPT_DETAIL and
 * the arch's classify gives (the path that decoded everything with detail
 * before the plain-decode fast path): address, size, kind, indirect,
 * target. Checked on the whole code of real binaries (the llvm-profgen
 * inputs, the autofdo test binary, this test program, a cross-built
 * AArch64 program) and on an enumeration of the x86-64 opcode space and
 * of the AArch64 encoding classes, where every instruction classify calls
 * a branch must also be one ops->branch_id and ops->may_branch accept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "binary/binary_internal.h"
#include "helpers/x86space.h"
#include "insn/insn.h"

#define IN "tests/data/llvm-profgen-inputs/"

static char scratch[64];

/* ---- the reference: detail decode of every instruction ------------------ */

typedef struct ref_dec {
    const lp_arch_ops *ops;
    csh h;
    cs_insn *in;
    lp_zydis *zy;   /* x86: what capstone cannot decode */
} ref_dec;

static void ref_open(ref_dec *r, const lp_arch_ops *ops)
{
    lp_error e = {0};
    r->ops = ops;
    assert_int_equal(cs_open(ops->cs_arch, ops->cs_mode, &r->h), CS_ERR_OK);
    assert_int_equal(cs_option(r->h, CS_OPT_DETAIL, CS_OPT_ON), CS_ERR_OK);
    r->in = cs_malloc(r->h);
    assert_non_null(r->in);
    r->zy = NULL;
    if (ops->arch == LP_ARCH_X86_64 && !(r->zy = lp_zydis_open(&e)))
        fail_msg("%s", e.msg);
}

static void ref_close(ref_dec *r)
{
    cs_free(r->in, 1);
    cs_close(&r->h);
    lp_zydis_close(r->zy);
}

/* Zydis's decoding of a VEX/EVEX instruction as an lp_inst (the
 * generator's rule for what capstone cannot decode). */
static bool ref_zydis(ref_dec *r, const uint8_t *code, size_t left,
                      uint64_t addr, lp_inst *o)
{
    static const uint8_t kind[] = {
        [LP_FLOW_NONE] = LP_INST_OTHER, [LP_FLOW_CALL] = LP_INST_CALL,
        [LP_FLOW_RET] = LP_INST_RET, [LP_FLOW_JUMP] = LP_INST_UNCOND_BR,
        [LP_FLOW_COND] = LP_INST_COND_BR,
    };
    lp_x86_desc d;
    unsigned len = r->zy && lp_x86_bytes_vex(code, left)
                       ? lp_zydis_decode(r->zy, code, left, addr, &d)
                       : 0;
    if (!len)
        return false;
    lp_flow f = lp_x86_flow(&d);
    o->size = (uint8_t)len;
    o->kind = kind[f.kind];
    if (f.kind != LP_FLOW_NONE && f.kind != LP_FLOW_RET) {
        o->indirect = (f.flags & LP_FLOW_INDIRECT) != 0;
        o->target = f.target;
    }
    return true;
}

static bool ref_inst(ref_dec *r, const uint8_t *code, size_t left,
                     uint64_t addr, lp_inst *o)
{
    uint64_t a = addr;
    const uint8_t *c = code;
    size_t n = left;
    memset(o, 0, sizeof *o);
    o->addr = addr;
    if (r->ops->arch == LP_ARCH_X86_64 && lp_x86_prefix_inst(code, left)) {
        o->size = 1;    /* a prefix LLVM decodes as its own instruction */
        return true;
    }
    if (!cs_disasm_iter(r->h, &c, &n, &a, r->in))
        return ref_zydis(r, code, left, addr, o);
    o->size = (uint8_t)r->in->size;
    r->ops->classify(r->in, o);
    return true;
}

static void expect_same(const lp_inst *want, const lp_inst *got,
                        const char *where)
{
    if (want->addr != got->addr || want->size != got->size ||
        want->kind != got->kind || want->indirect != got->indirect ||
        want->target != got->target)
        fail_msg("%s: detail decode 0x%" PRIx64 " size %u kind %u ind %d "
                 "target 0x%" PRIx64 "; decoder 0x%" PRIx64 " size %u kind "
                 "%u ind %d target 0x%" PRIx64, where, want->addr,
                 want->size, want->kind, want->indirect, want->target,
                 got->addr, got->size, got->kind, got->indirect, got->target);
}

/* ---- whole binaries ------------------------------------------------------ */

/* Walk every region with the reference and compare with what the binary
 * decoded; kinds[k] counts instructions of each kind. */
static void check_regions(lp_binary *b, const char *path, size_t kinds[5])
{
    ref_dec r;
    ref_open(&r, b->ops);
    for (size_t i = 0; i < b->nregions; i++) {
        lp_code_region *reg = &b->regions[i];
        lp_inst want, got;
        lp_error e = {0};
        /* decode through the public lookup, as the pipeline does */
        assert_int_not_equal(lp_binary_inst(b, reg->start, &got, &e), -1);
        assert_int_equal(reg->state, LP_RG_DONE);
        size_t k = 0;
        for (uint64_t a = reg->start; a < reg->end;) {
            uint64_t off = a - reg->sec_addr;
            if (!ref_inst(&r, reg->sec_bytes + off, reg->sec_size - off, a,
                          &want)) {
                a++;
                continue;
            }
            if (k >= reg->ninsts)
                fail_msg("%s: region 0x%" PRIx64 ": decoder stops before "
                         "0x%" PRIx64, path, reg->start, a);
            assert_int_equal(reg->insts[k++].off, a - reg->start);
            assert_int_equal(lp_binary_inst(b, a, &got, &e), 1);
            expect_same(&want, &got, path);
            kinds[want.kind]++;
            a += want.size;
        }
        assert_int_equal(k, reg->ninsts);
    }
    ref_close(&r);
}

static void check_binary(const char *path, size_t kinds[5])
{
    lp_error e = {0};
    lp_binary *b = lp_binary_open(path, NULL, &e);
    if (!b)
        fail_msg("open %s: %s", path, e.msg);
    check_regions(b, path, kinds);
    lp_binary_close(b);
}

static void test_binaries_match_detail_decode(void **state)
{
    (void)state;
    size_t kinds[5] = {0}, nbins = 0;
    DIR *d = opendir(IN);
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));) {
        size_t l = strlen(de->d_name);
        char path[512];
        if (l < 8 || strcmp(de->d_name + l - 8, ".perfbin") != 0)
            continue;
        snprintf(path, sizeof path, IN "%s", de->d_name);
        check_binary(path, kinds);
        nbins++;
    }
    closedir(d);
    check_binary("tests/data/autofdo/test.binary", kinds);
    check_binary("/proc/self/exe", kinds);
    Dl_info di; /* a large optimized library: libdw, a dependency */
    assert_true(dladdr((void *)dwarf_begin, &di) && di.dli_fname);
    check_binary(di.dli_fname, kinds);
    assert_true(nbins >= 20);
    /* the comparison saw every kind, branches by the thousand */
    assert_true(kinds[LP_INST_OTHER] > 50000);
    assert_true(kinds[LP_INST_CALL] > 3000 && kinds[LP_INST_RET] > 1000);
    assert_true(kinds[LP_INST_COND_BR] > 8000 &&
                kinds[LP_INST_UNCOND_BR] > 2000);
}

/* AArch64: a static, libc-free program cross-built by clang-19/lld. */
static void test_aarch64_binary_matches_detail_decode(void **state)
{
    (void)state;
    char src[128], bin[128], cmd[512];
    snprintf(src, sizeof src, "%s/a64.c", scratch);
    snprintf(bin, sizeof bin, "%s/a64", scratch);
    FILE *f = fopen(src, "w");
    assert_non_null(f);
    fputs("int (*fp)(int);\n"
          "static int __attribute__((noinline)) sq(int x) { return x*x; }\n"
          "int main(int argc, char **argv) {\n  int s = 0;\n"
          "  for (int i = 0; i < argc * 1000; i++) {\n"
          "    s += sq(i);\n    if (s & 4) s += fp(i);\n"
          "    if (i & (1 << 9)) s--;\n"
          "    switch (i & 7) { case 0: s++; break; case 1: s--; break;\n"
          "    case 2: s ^= 3; break; case 3: s += 7; break;\n"
          "    case 5: s *= 3; break; default: break; }\n  }\n"
          "  (void)argv;\n  return s & 1;\n}\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "clang-19 --target=aarch64-linux-gnu -O2 "
             "-nostdlib -static -fuse-ld=lld -Wl,-e,main -o %s %s "
             ">/dev/null 2>&1", bin, src);
    if (system(cmd) != 0)
        skip();
    size_t kinds[5] = {0};
    lp_error e = {0};
    lp_binary *b = lp_binary_open(bin, NULL, &e);
    assert_non_null(b);
    assert_int_equal(lp_binary_arch(b), LP_ARCH_AARCH64);
    check_regions(b, bin, kinds);
    lp_binary_close(b);
    assert_true(kinds[LP_INST_OTHER] > 10 && kinds[LP_INST_CALL] >= 2 &&
                kinds[LP_INST_RET] >= 1 && kinds[LP_INST_COND_BR] >= 1);
}

/* ---- encoding spaces ----------------------------------------------------- */

typedef struct space {
    ref_dec ref;
    lp_decoder dec;
    size_t decoded, kinds[5];
} space;

static void space_open(space *s, enum lp_arch arch)
{
    const lp_arch_ops *ops = lp_arch_ops_for(arch);
    assert_non_null(ops);
    memset(s, 0, sizeof *s);
    ref_open(&s->ref, ops);
    assert_int_equal(lp_decoder_open(&s->dec, ops), 0);
}

static void space_close(space *s)
{
    ref_close(&s->ref);
    lp_decoder_close(&s->dec);
}

/* One encoding: same result both ways; a branch has a branch_id and
 * passes the byte screen. */
static void space_try(space *s, const uint8_t *buf, size_t n)
{
    lp_inst want, got;
    bool ok = ref_inst(&s->ref, buf, n, 0x400000, &want);
    char where[80];
    snprintf(where, sizeof where, "%02x %02x %02x %02x %02x", buf[0], buf[1],
             buf[2], buf[3], buf[4]);
    if (lp_decoder_inst(&s->dec, buf, n, 0x400000, &got) != ok)
        fail_msg("%s: decodes one way only", where);
    if (!ok)
        return;
    expect_same(&want, &got, where);
    s->decoded++;
    s->kinds[want.kind]++;
    if (want.kind == LP_INST_OTHER)
        return;
    if (!s->ref.ops->branch_id(s->ref.in->id))
        fail_msg("%s: %s %s: id %u classified %u but not a branch_id", where,
                 s->ref.in->mnemonic, s->ref.in->op_str, s->ref.in->id,
                 want.kind);
    if (!s->ref.ops->may_branch(buf, n))
        fail_msg("%s: %s %s: a branch the byte screen passes over", where,
                 s->ref.in->mnemonic, s->ref.in->op_str);
}

static void space_visit(const uint8_t *buf, size_t n, void *s)
{
    space_try(s, buf, n);
}

/* Prefixes x escapes x opcode x ModRM (or second opcode byte), then a
 * fixed tail for SIB, displacement and immediates. */
static void test_x86_opcode_space(void **state)
{
    (void)state;
    static const char *const pre[] = {"", "\x66", "\xf2", "\xf3", "\x48",
                                      "\x67", "\x2e", "\x41"};
    static const char *const esc[] = {"", "\x0f", "\x0f\x38", "\x0f\x3a"};
    space s;
    space_open(&s, LP_ARCH_X86_64);
    x86space_each(pre, sizeof pre / sizeof *pre, esc, sizeof esc / sizeof *esc,
                  1, space_visit, &s);
    space_close(&s);
    assert_true(s.decoded > 500000);
    assert_true(s.kinds[LP_INST_CALL] > 100 && s.kinds[LP_INST_RET] > 100 &&
                s.kinds[LP_INST_COND_BR] > 1000 &&
                s.kinds[LP_INST_UNCOND_BR] > 100);
}

/* Every value of bits 31:21 (the encoding classes and most opcode
 * fields) with several register/immediate patterns below. */
static void test_arm64_encoding_space(void **state)
{
    (void)state;
    static const uint32_t low[] = {0, 0x1f, 0x3e0, 0x3ff, 0x12345, 0x1fffff,
                                   0x0aaaaa, 0x155555, 0x1f0000, 0x1f03c0};
    space s;
    space_open(&s, LP_ARCH_AARCH64);
    for (uint32_t hi = 0; hi < 2048; hi++)
        for (size_t l = 0; l < sizeof low / sizeof *low; l++) {
            uint32_t w = hi << 21 | low[l];
            uint8_t buf[5] = {(uint8_t)w, (uint8_t)(w >> 8),
                              (uint8_t)(w >> 16), (uint8_t)(w >> 24), 0};
            space_try(&s, buf, 4);
        }
    space_close(&s);
    assert_true(s.decoded > 5000);
    assert_true(s.kinds[LP_INST_CALL] > 0 && s.kinds[LP_INST_RET] > 0 &&
                s.kinds[LP_INST_COND_BR] > 0 &&
                s.kinds[LP_INST_UNCOND_BR] > 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/lp-disasm-XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_binaries_match_detail_decode),
        cmocka_unit_test(test_aarch64_binary_matches_detail_decode),
        cmocka_unit_test(test_x86_opcode_space),
        cmocka_unit_test(test_arm64_encoding_space),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
