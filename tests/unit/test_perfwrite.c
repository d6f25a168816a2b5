/*
 * test_perfwrite.c - unit tests for src/perfwrite: the bytes of a written
 * perf.data are checked field by field against the layout of perf 6.1
 * (shared perf-data-format.md §3): header, attr, records with their
 * sample_id trailers, sample fields in order, feature table and sections.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lbr2prof/perfwrite.h"

typedef struct file {
    uint8_t *p;
    size_t n;
} file;

static uint64_t u64(const file *f, size_t off)
{
    uint64_t v;
    assert_true(off + 8 <= f->n);
    memcpy(&v, f->p + off, 8);
    return v;
}

static uint32_t u32(const file *f, size_t off)
{
    uint32_t v;
    assert_true(off + 4 <= f->n);
    memcpy(&v, f->p + off, 4);
    return v;
}

static uint16_t u16(const file *f, size_t off)
{
    uint16_t v;
    assert_true(off + 2 <= f->n);
    memcpy(&v, f->p + off, 2);
    return v;
}

static void slurp(const char *path, file *f)
{
    FILE *fp = fopen(path, "rb");
    struct stat st;

    assert_non_null(fp);
    assert_int_equal(fstat(fileno(fp), &st), 0);
    f->n = (size_t)st.st_size;
    f->p = malloc(f->n);
    assert_non_null(f->p);
    assert_int_equal(fread(f->p, 1, f->n, fp), f->n);
    fclose(fp);
}

static void make_opts(lp_perfwrite_opts *o, char **argv)
{
    memset(o, 0, sizeof *o);
    o->attr.type = 4;
    o->attr.config = 0x20c4;
    o->attr.sample_period = 1000;
    o->attr.sample_type = LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_TIME |
                          LP_SAMPLE_PERIOD | LP_SAMPLE_CALLCHAIN |
                          LP_SAMPLE_BRANCH_STACK;
    o->attr.branch_sample_type = LP_BRANCH_USER | LP_BRANCH_ANY;
    o->attr.flags = LP_ATTR_EXCLUDE_KERNEL | LP_ATTR_SAMPLE_ID_ALL |
                    LP_ATTR_MMAP2 | LP_ATTR_BUILD_ID;
    o->event_name = "br_inst_retired.near_taken:u";
    o->argc = 2;
    o->argv = argv;
    o->hostname = "host";
    o->osrelease = "6.1.0";
    o->arch = "x86_64";
}

/* Writes: COMM, MMAP2 (build-id), SAMPLE, FINISHED_ROUND, EXIT. */
static void write_file(const char *path)
{
    char *argv[] = {"lbr2prof", "record"};
    lp_perfwrite_opts o;
    lp_perfwrite *w;
    lp_error err;
    lp_comm_event c = {10, 11, 1, "prog"};
    lp_mmap_event m;
    lp_sample s;
    uint64_t chain[] = {LP_CONTEXT_USER, 0x401000, 0x401234};
    lp_branch_entry br[] = {{0x400ff0, 0x401000, 0}, {0x400f00, 0x400fe0, 0}};
    lp_task_event ex = {10, 10, 11, 11, 99};

    make_opts(&o, argv);
    w = lp_perfwrite_open(path, &o, &err);
    assert_non_null(w);
    assert_int_equal(lp_perfwrite_comm(w, &c, 5, &err), 0);
    memset(&m, 0, sizeof m);
    m.pid = 10; m.tid = 11; m.start = 0x400000; m.len = 0x2000; m.pgoff = 0x1000;
    m.build_id_size = 20;
    memset(m.build_id, 0xab, 20);
    m.prot = 5; m.flags = 2;
    m.filename = "/bin/prog";
    assert_int_equal(lp_perfwrite_mmap2(w, &m, 6, &err), 0);
    memset(&s, 0, sizeof s);
    s.ip = 0x401000; s.pid = 10; s.tid = 11; s.time = 7; s.period = 1000;
    s.callchain_nr = 3; s.callchain = chain;
    s.branch_nr = 2; s.branches = br;
    assert_int_equal(lp_perfwrite_sample(w, &s, LP_CPUMODE_USER, &err), 0);
    assert_int_equal(lp_perfwrite_nr_samples(w), 1);
    assert_int_equal(lp_perfwrite_finished_round(w, &err), 0);
    assert_int_equal(lp_perfwrite_exit(w, &ex, &err), 0);
    assert_int_equal(lp_perfwrite_close(w, &err), 0);
}

static void test_header_and_attr(void **state)
{
    char path[] = "/tmp/lp-pw-XXXXXX";
    int fd = mkstemp(path);
    file f;
    (void)state;
    close(fd);
    write_file(path);
    slurp(path, &f);
    assert_memory_equal(f.p, "PERFILE2", 8);
    assert_int_equal(u64(&f, 8), 104);
    assert_int_equal(u64(&f, 16), 128 + 16);     /* attr_size */
    assert_int_equal(u64(&f, 24), 104);          /* attrs.offset */
    assert_int_equal(u64(&f, 32), 144);          /* one attr */
    assert_int_equal(u64(&f, 40), 248);          /* data.offset */
    assert_int_equal(u64(&f, 40) + u64(&f, 48) < f.n, 1);
    /* attr: type, size, config, period, sample_type, branch_sample_type */
    assert_int_equal(u32(&f, 104), 4);
    assert_int_equal(u32(&f, 108), 128);
    assert_int_equal(u64(&f, 112), 0x20c4);
    assert_int_equal(u64(&f, 120), 1000);
    assert_int_equal(u64(&f, 128), 0x927);        /* IP|TID|TIME|CALLCHAIN|PERIOD|BRANCH_STACK */
    assert_int_equal((u64(&f, 144) >> 18) & 1, 1); /* sample_id_all */
    assert_int_equal(u64(&f, 104 + 72), 9);       /* USER|ANY */
    assert_int_equal(u64(&f, 104 + 128), 0);      /* ids section empty */
    assert_int_equal(u64(&f, 104 + 136), 0);
    free(f.p);
    unlink(path);
}

static void test_records(void **state)
{
    char path[] = "/tmp/lp-pw-XXXXXX";
    int fd = mkstemp(path);
    file f;
    size_t p, end;
    uint32_t types[8];
    int n = 0;
    (void)state;
    close(fd);
    write_file(path);
    slurp(path, &f);
    p = u64(&f, 40);
    end = p + u64(&f, 48);
    while (p < end && n < 8) {
        uint16_t size = u16(&f, p + 6);
        uint32_t type = u32(&f, p);
        assert_true(size >= 8);
        types[n++] = type;
        if (type == 3) { /* COMM: pid tid "prog" + trailer pid tid time */
            assert_int_equal(u16(&f, p + 4), 2 | (1 << 13));
            assert_int_equal(u32(&f, p + 8), 10);
            assert_memory_equal(f.p + p + 16, "prog\0", 5);
            assert_int_equal(size, 8 + 8 + 8 + 8 + 8);
            assert_int_equal(u64(&f, p + size - 8), 5);
        } else if (type == 10) { /* MMAP2 with build-id */
            assert_int_equal(u16(&f, p + 4), 2 | (1 << 14));
            assert_int_equal(u64(&f, p + 16), 0x400000);
            assert_int_equal(u64(&f, p + 24), 0x2000);
            assert_int_equal(u64(&f, p + 32), 0x1000);
            assert_int_equal(f.p[p + 40], 20);
            assert_int_equal(f.p[p + 44], 0xab);
            assert_int_equal(u32(&f, p + 64), 5);
            assert_memory_equal(f.p + p + 72, "/bin/prog\0", 10);
            assert_int_equal(u64(&f, p + size - 8), 6);
        } else if (type == 9) { /* SAMPLE */
            assert_int_equal(u64(&f, p + 8), 0x401000);
            assert_int_equal(u32(&f, p + 16), 10);
            assert_int_equal(u32(&f, p + 20), 11);
            assert_int_equal(u64(&f, p + 24), 7);
            assert_int_equal(u64(&f, p + 32), 1000);
            assert_int_equal(u64(&f, p + 40), 3);
            assert_int_equal(u64(&f, p + 48), LP_CONTEXT_USER);
            assert_int_equal(u64(&f, p + 64), 0x401234);
            assert_int_equal(u64(&f, p + 72), 2);
            assert_int_equal(u64(&f, p + 80), 0x400ff0);
            assert_int_equal(u64(&f, p + 88), 0x401000);
            assert_int_equal(u64(&f, p + 104), 0x400f00);
            assert_int_equal(size, 8 + 8 + 8 + 8 + 8 + 8 + 24 + 8 + 48);
        } else if (type == 4) { /* EXIT */
            assert_int_equal(u64(&f, p + 24), 99);
        }
        p += size;
    }
    assert_int_equal(p, end);
    assert_int_equal(n, 5);
    assert_int_equal(types[0], 3);
    assert_int_equal(types[1], 10);
    assert_int_equal(types[2], 9);
    assert_int_equal(types[3], 68);
    assert_int_equal(types[4], 4);
    free(f.p);
    unlink(path);
}

static void test_features(void **state)
{
    char path[] = "/tmp/lp-pw-XXXXXX";
    int fd = mkstemp(path);
    file f;
    uint64_t bits, table, off;
    int bit, idx = 0;
    (void)state;
    close(fd);
    write_file(path);
    slurp(path, &f);
    bits = u64(&f, 72);
    /* BUILD_ID HOSTNAME OSRELEASE VERSION ARCH NRCPUS CMDLINE EVENT_DESC BRANCH_STACK */
    assert_int_equal(bits, (1u << 2) | (1u << 3) | (1u << 4) | (1u << 5) |
                     (1u << 6) | (1u << 7) | (1u << 11) | (1u << 12) | (1u << 15));
    table = u64(&f, 40) + u64(&f, 48);
    for (bit = 0; bit < 64; bit++) {
        if (!((bits >> bit) & 1))
            continue;
        off = u64(&f, table + 16 * (size_t)idx);
        assert_true(off + u64(&f, table + 16 * (size_t)idx + 8) <= f.n);
        if (bit == 2) { /* build_id_event: misc 0x8002, pid -1, id, size 20, name */
            assert_int_equal(u16(&f, off + 4), 0x8002);
            assert_int_equal((int32_t)u32(&f, off + 8), -1);
            assert_int_equal(f.p[off + 12], 0xab);
            assert_int_equal(f.p[off + 32], 20);
            assert_memory_equal(f.p + off + 36, "/bin/prog\0", 10);
            assert_int_equal(u16(&f, off + 6), 36 + 64);
        } else if (bit == 3) { /* string: len padded to 64 */
            assert_int_equal(u32(&f, off), 64);
            assert_string_equal((char *)f.p + off + 4, "host");
        } else if (bit == 11) { /* string list */
            assert_int_equal(u32(&f, off), 2);
            assert_string_equal((char *)f.p + off + 8, "lbr2prof");
        } else if (bit == 12) { /* EVENT_DESC */
            assert_int_equal(u32(&f, off), 1);
            assert_int_equal(u32(&f, off + 4), 128);
            assert_int_equal(u64(&f, off + 8 + 8), 0x20c4);
            assert_int_equal(u32(&f, off + 8 + 128), 0); /* nr_ids */
            assert_string_equal((char *)f.p + off + 8 + 128 + 8,
                                "br_inst_retired.near_taken:u");
        } else if (bit == 15) {
            assert_int_equal(u64(&f, table + 16 * (size_t)idx + 8), 0);
        }
        idx++;
    }
    assert_int_equal(idx, 9);
    free(f.p);
    unlink(path);
}

static void test_refusals(void **state)
{
    char *argv[] = {"a", "b"};
    lp_perfwrite_opts o;
    lp_error err;
    char path[] = "/tmp/lp-pw-refuse.data";
    (void)state;
    make_opts(&o, argv);
    assert_null(lp_perfwrite_open("-", &o, &err));
    assert_int_equal(err.code, LP_EUSAGE);
    o.attr.sample_type |= LP_SAMPLE_RAW;
    unlink(path);
    assert_null(lp_perfwrite_open(path, &o, &err));
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_int_equal(access(path, F_OK), -1);
}

static void test_abort_leaves_nothing(void **state)
{
    char *argv[] = {"a", "b"};
    lp_perfwrite_opts o;
    lp_error err;
    lp_perfwrite *w;
    char dir[] = "/tmp/lp-pw-dir-XXXXXX", path[300];
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/x.data", dir);
    make_opts(&o, argv);
    w = lp_perfwrite_open(path, &o, &err);
    assert_non_null(w);
    assert_int_equal(lp_perfwrite_finished_round(w, &err), 0);
    lp_perfwrite_abort(w);
    assert_int_equal(rmdir(dir), 0); /* empty: no temp file, no output */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_and_attr),
        cmocka_unit_test(test_records),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_abort_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
