/*
 * test_addrmap.c - unit tests for src/machine/addrmap.c on real binaries:
 * llvm-profgen's noprobe (non-PIE), symbolize (PIE) and multi-load-segs
 * (lld, two executable segments, one at file offset 0x200000) test
 * binaries, and two tiny programs linked at test time with known
 * build-ids. Expected vaddrs come from readelf's program headers, read at
 * test time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lbr2prof/addrmap.h"

#define IN "tests/data/llvm-profgen-inputs/"

typedef struct warns {
    char buf[8192];
    int n;
} warns;

static void collect(void *ctx, const char *msg)
{
    warns *w = ctx;

    strncat(w->buf, msg, sizeof w->buf - strlen(w->buf) - 2);
    strcat(w->buf, "\n");
    w->n++;
}

static lp_binary *open_bin(const char *path)
{
    lp_error e = {0};
    lp_binary *b = lp_binary_open(path, NULL, &e);

    if (!b)
        fail_msg("%s", e.msg);
    return b;
}

static lp_event mmap_ev(uint32_t pid, uint64_t start, uint64_t len,
                        uint64_t pgoff, const char *file)
{
    lp_event ev;

    memset(&ev, 0, sizeof ev);
    ev.kind = LP_EV_MMAP;
    ev.misc = LP_CPUMODE_USER;
    ev.u.mmap.pid = ev.u.mmap.tid = pid;
    ev.u.mmap.start = start;
    ev.u.mmap.len = len;
    ev.u.mmap.pgoff = pgoff;
    ev.u.mmap.filename = file;
    return ev;
}

static lp_event fork_ev(uint32_t pid, uint32_t ppid, uint32_t tid)
{
    lp_event ev;

    memset(&ev, 0, sizeof ev);
    ev.kind = LP_EV_FORK;
    ev.u.task.pid = pid;
    ev.u.task.ppid = ppid;
    ev.u.task.tid = tid;
    ev.u.task.ptid = ppid;
    return ev;
}

static lp_event exec_ev(uint32_t pid)
{
    lp_event ev;

    memset(&ev, 0, sizeof ev);
    ev.kind = LP_EV_COMM;
    ev.u.comm.pid = ev.u.comm.tid = pid;
    ev.u.comm.comm = "x";
    ev.u.comm.exec = 1;
    return ev;
}

static void feed(lp_addrmap *m, lp_event ev)
{
    lp_error e = {0};

    if (lp_addrmap_event(m, &ev, &e))
        fail_msg("%s", e.msg);
}

/* resolve, expecting binary `bin` (or -1) and, for bin >= 0, vaddr */
static void expect(const lp_addrmap *m, uint32_t pid, uint64_t addr, int bin,
                   uint64_t vaddr)
{
    uint64_t got = 0;
    int r = lp_addrmap_resolve(m, pid, addr, &got);

    if (r != bin || (bin >= 0 && got != vaddr))
        fail_msg("pid %" PRIu32 " addr 0x%" PRIx64 ": got %d/0x%" PRIx64
                 ", want %d/0x%" PRIx64, pid, addr, r, got, bin, vaddr);
}

/* Non-PIE: every process maps it at its link address; a foreign mmap
 * over part of it cuts it back; an address past the file-backed part of
 * the segment resolves to nothing. */
static void test_non_pie(void **state)
{
    lp_binary *b = open_bin(IN "noprobe.perfbin");
    lp_addrmap *m = lp_addrmap_new(&b, 1, NULL, NULL);
    (void)state;

    assert_non_null(m);
    feed(m, mmap_ev(10, 0x400000, 0x1000, 0, "/home/x/noprobe.perfbin"));
    expect(m, 10, 0x4005b0, 0, 0x4005b0);
    expect(m, 11, 0x4005b0, -1, 0);           /* another process */
    expect(m, 10, 0x3fffff, -1, 0);
    expect(m, 10, 0x400a00, -1, 0);           /* past p_filesz 0x8a8 */
    feed(m, mmap_ev(10, 0x400800, 0x1000, 0, "/lib/other.so"));
    expect(m, 10, 0x4007ff, 0, 0x4007ff);
    expect(m, 10, 0x400800, -1, 0);
    assert_int_equal(lp_addrmap_nr_maps(m, 10), 1);
    assert_true(lp_addrmap_loaded(m, 0));
    lp_addrmap_free(m);
    lp_binary_close(b);
}

/* PIE: two concurrent processes at different ASLR bases both resolve
 * (llvm-profgen 19 would move its one base to the last mmap); the
 * single-base answer (LP_ADDRMAP_ANY_PID) follows the last mmap. */
static void test_pie_two_processes(void **state)
{
    lp_binary *b = open_bin(IN "symbolize.perfbin");
    lp_addrmap *m = lp_addrmap_new(&b, 1, NULL, NULL);
    uint64_t v;
    (void)state;

    assert_true(lp_binary_is_pie(b));
    feed(m, mmap_ev(100, 0x555555554000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    feed(m, mmap_ev(200, 0x563412340000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    expect(m, 100, 0x555555554000 + 0x6a0, 0, 0x6a0);
    expect(m, 200, 0x563412340000 + 0x6a0, 0, 0x6a0);
    expect(m, 100, 0x563412340000 + 0x6a0, -1, 0);
    expect(m, LP_ADDRMAP_ANY_PID, 0x563412340000 + 0x6a0, 0, 0x6a0);
    assert_int_equal(lp_addrmap_single_base(m, 0), 0x563412340000);
    assert_int_equal(lp_addrmap_resolve(m, LP_ADDRMAP_ANY_PID,
                                        0x555555554000 + 0x6a0, &v), -1);
    lp_addrmap_free(m);
    lp_binary_close(b);
}

/* Another recording (lp_addrmap_next_input): the same pid is another
 * process, whose mappings start afresh; the binary stays loaded, the
 * single base carries on, and the change is counted. */
static void test_next_input(void **state)
{
    lp_binary *b = open_bin(IN "symbolize.perfbin");
    lp_addrmap *m = lp_addrmap_new(&b, 1, NULL, NULL);
    uint64_t changes;
    (void)state;

    feed(m, mmap_ev(100, 0x555555554000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    expect(m, 100, 0x555555554000 + 0x6a0, 0, 0x6a0);
    changes = lp_addrmap_changes(m);
    lp_addrmap_next_input(m);
    assert_true(lp_addrmap_changes(m) > changes);
    expect(m, 100, 0x555555554000 + 0x6a0, -1, 0);
    assert_int_equal(lp_addrmap_nr_maps(m, 100), 0);
    assert_true(lp_addrmap_loaded(m, 0));
    assert_int_equal(lp_addrmap_single_base(m, 0), 0x555555554000);
    feed(m, mmap_ev(100, 0x563412340000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    expect(m, 100, 0x563412340000 + 0x6a0, 0, 0x6a0);
    expect(m, 100, 0x555555554000 + 0x6a0, -1, 0);
    lp_addrmap_free(m);
    lp_binary_close(b);
}

/* single_base: the pid is ignored, as llvm-profgen 19 does. */
static void test_single_base_mode(void **state)
{
    lp_binary *b = open_bin(IN "symbolize.perfbin");
    lp_addrmap_opts o = {true, -1, NULL, NULL};
    lp_addrmap *m = lp_addrmap_new(&b, 1, &o, NULL);
    (void)state;

    assert_false(lp_addrmap_loaded(m, 0));
    expect(m, 1, 0x6a0, 0, 0x6a0);   /* preferred base until an mmap */
    feed(m, mmap_ev(100, 0x555555554000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    feed(m, mmap_ev(200, 0x563412340000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    assert_true(lp_addrmap_loaded(m, 0));
    expect(m, 100, 0x563412340000 + 0x6a0, 0, 0x6a0);
    expect(m, 100, 0x555555554000 + 0x6a0, -1, 0);
    lp_addrmap_free(m);
    lp_binary_close(b);
}

/* single_base with --pid: other processes' mmaps do not move the base. */
static void test_single_base_pid_filter(void **state)
{
    lp_binary *b = open_bin(IN "symbolize.perfbin");
    lp_addrmap_opts o = {true, 100, NULL, NULL};
    lp_addrmap *m = lp_addrmap_new(&b, 1, &o, NULL);
    (void)state;

    feed(m, mmap_ev(100, 0x555555554000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    feed(m, mmap_ev(200, 0x563412340000, 0x1000, 0, "/tmp/symbolize.perfbin"));
    assert_int_equal(lp_addrmap_single_base(m, 0), 0x555555554000);
    lp_addrmap_free(m);
    lp_binary_close(b);
}

/* lld layout: the second executable segment (file offset 0x200000, vaddr
 * 0x400000) is mapped on its own with a non-zero pgoff. Single-base mode
 * checks it the way updateBinaryAddress does; per process each mmap stands
 * on its own. */
static void test_nonzero_pgoff(void **state)
{
    lp_binary *b = open_bin(IN "multi-load-segs.perfbin");
    lp_addrmap_opts sb = {true, -1, NULL, NULL};
    lp_addrmap *m = lp_addrmap_new(&b, 1, NULL, NULL);
    lp_addrmap *s = lp_addrmap_new(&b, 1, &sb, NULL);
    lp_event bad = mmap_ev(7, 0x500000, 0x1000, 0x200000,
                           "multi-load-segs.perfbin");
    lp_error e = {0};
    int i;
    (void)state;

    for (i = 0; i < 2; i++) {
        lp_addrmap *x = i ? s : m;
        /* the first RX segment: file offset 0x760 -> vaddr 0x201760 */
        feed(x, mmap_ev(7, 0x201000, 0x1000, 0, "multi-load-segs.perfbin"));
        feed(x, mmap_ev(7, 0x400000, 0x1000, 0x200000, "multi-load-segs.perfbin"));
        expect(x, 7, 0x201800, 0, 0x201800);
        expect(x, 7, 0x400010, 0, 0x400010);
    }
    assert_int_equal(lp_addrmap_event(s, &bad, &e), -1);
    assert_int_equal(e.code, LP_EFORMAT);
    assert_non_null(strstr(e.msg, "Executable segments not loaded consecutively"));
    feed(m, bad);
    expect(m, 7, 0x500010, 0, 0x400010);
    lp_addrmap_free(m);
    lp_addrmap_free(s);
    lp_binary_close(b);
}

/* fork copies the parent's maps, a new mmap in the child does not touch
 * the parent, exec drops the child's maps, a reused pid starts afresh. */
static void test_fork_exec(void **state)
{
    lp_binary *b = open_bin(IN "symbolize.perfbin");
    lp_addrmap *m = lp_addrmap_new(&b, 1, NULL, NULL);
    (void)state;

    feed(m, mmap_ev(1, 0x10000, 0x1000, 0, "symbolize.perfbin"));
    feed(m, fork_ev(2, 1, 2));
    feed(m, fork_ev(1, 1, 5));           /* a thread: nothing to copy */
    expect(m, 2, 0x10000 + 0x6a0, 0, 0x6a0);
    feed(m, mmap_ev(2, 0x10000, 0x1000, 0, "/lib/libc.so.6"));
    expect(m, 2, 0x10000 + 0x6a0, -1, 0);
    expect(m, 1, 0x10000 + 0x6a0, 0, 0x6a0);
    feed(m, fork_ev(3, 1, 3));
    feed(m, exec_ev(3));
    expect(m, 3, 0x10000 + 0x6a0, -1, 0);
    feed(m, mmap_ev(3, 0x90000, 0x1000, 0, "symbolize.perfbin"));
    expect(m, 3, 0x90000 + 0x6a0, 0, 0x6a0);
    feed(m, fork_ev(3, 99, 3));         /* pid 3 reused, unknown parent */
    expect(m, 3, 0x90000 + 0x6a0, -1, 0);
    lp_addrmap_free(m);
    lp_binary_close(b);
}

/* lp_addrmap_changes grows with every call that can change what an
 * address resolves to (mmap, exec, fork, build-ids), and not with lookups
 * or events that change nothing (exit, samples). */
static void test_changes(void **state)
{
    lp_binary *b = open_bin(IN "symbolize.perfbin");
    lp_addrmap *m = lp_addrmap_new(&b, 1, NULL, NULL);
    lp_build_id id = {0};
    lp_event other;
    lp_error e = {0};
    uint64_t c;
    (void)state;

    c = lp_addrmap_changes(m);
    feed(m, mmap_ev(1, 0x10000, 0x1000, 0, "symbolize.perfbin"));
    assert_true(lp_addrmap_changes(m) > c);
    c = lp_addrmap_changes(m);
    expect(m, 1, 0x10000 + 0x6a0, 0, 0x6a0);
    memset(&other, 0, sizeof other);
    other.kind = LP_EV_EXIT;
    feed(m, other);
    other.kind = LP_EV_SAMPLE;
    feed(m, other);
    assert_int_equal(lp_addrmap_changes(m), c);
    feed(m, fork_ev(2, 1, 2));
    assert_true(lp_addrmap_changes(m) > c);
    c = lp_addrmap_changes(m);
    feed(m, exec_ev(2));
    assert_true(lp_addrmap_changes(m) > c);
    c = lp_addrmap_changes(m);
    assert_int_equal(lp_addrmap_add_build_ids(m, &id, 0, &e), 0);
    assert_int_equal(lp_addrmap_changes(m), c);
    id.pid = 1;
    id.size = 20;
    id.filename = "/lib/libc.so.6";
    assert_int_equal(lp_addrmap_add_build_ids(m, &id, 1, &e), 0);
    assert_true(lp_addrmap_changes(m) > c);
    lp_addrmap_free(m);
    lp_binary_close(b);
}

/* Several binaries at once; kernel mmaps are never matched; a binary that
 * nothing mapped is reported by lp_addrmap_finish. */
static void test_several_binaries(void **state)
{
    lp_binary *bins[3] = {open_bin(IN "noprobe.perfbin"),
                          open_bin(IN "symbolize.perfbin"),
                          open_bin(IN "inline-noprobe.perfbin")};
    warns w = {{0}, 0};
    lp_addrmap_opts o = {false, -1, collect, &w};
    lp_addrmap *m = lp_addrmap_new(bins, 3, &o, NULL);
    lp_event k = mmap_ev((uint32_t)-1, 0x400000, 0x1000, 0, "noprobe.perfbin");
    (void)state;

    k.misc = LP_CPUMODE_KERNEL;
    feed(m, k);
    feed(m, mmap_ev(5, 0x400000, 0x1000, 0, "/a/noprobe.perfbin"));
    feed(m, mmap_ev(5, 0x7f0000000000, 0x1000, 0, "/a/symbolize.perfbin"));
    expect(m, 5, 0x4005b0, 0, 0x4005b0);
    expect(m, 5, 0x7f00000006a0, 1, 0x6a0);
    lp_addrmap_finish(m);
    assert_int_equal(w.n, 1);
    assert_non_null(strstr(w.buf, "inline-noprobe.perfbin"));
    assert_true(lp_addrmap_loaded(m, 1));
    assert_false(lp_addrmap_loaded(m, 2));
    lp_addrmap_free(m);
    for (int i = 0; i < 3; i++)
        lp_binary_close(bins[i]);
}

/* --kernel: binary 0 is placed by the kernel's mmap only ([kernel.kallsyms]
 * names, pid -1), for every process, at one base (its start); a module's
 * mmap and a user file of the same name are not it; pid_filter drops the
 * kernel mmap (the preferred base stays) but not kernel samples; the
 * other binaries are per process as usual. noprobe.perfbin plays the
 * kernel (preferred base 0x400000), symbolize.perfbin a user program. */
static void test_kernel(void **state)
{
    lp_binary *bins[2] = {open_bin(IN "noprobe.perfbin"), open_bin(IN "symbolize.perfbin")};
    lp_addrmap_opts o = {false, -1, NULL, NULL, true};
    lp_addrmap *m = lp_addrmap_new(bins, 2, &o, NULL);
    lp_event k = mmap_ev((uint32_t)-1, 0x1400000, 0x1000000, 0x1400000, "[kernel.kallsyms]_text");
    lp_event mod = mmap_ev((uint32_t)-1, 0x400000, 0x4000, 0x400000, "/lib/modules/x/m.ko");
    (void)state;

    assert_true(lp_addrmap_kernel_image("[kernel.kallsyms]"));
    assert_true(lp_addrmap_kernel_image("[kernel.kallsyms]_stext"));
    assert_false(lp_addrmap_kernel_image("/boot/vmlinux"));
    /* before any kernel mmap: the preferred base */
    expect(m, 7, 0x4005b0, 0, 0x4005b0);
    assert_false(lp_addrmap_loaded(m, 0));
    k.misc = mod.misc = LP_CPUMODE_KERNEL;
    feed(m, k);
    feed(m, mod);
    feed(m, mmap_ev(5, 0x400000, 0x1000, 0, "/a/noprobe.perfbin")); /* not the kernel */
    feed(m, mmap_ev(5, 0x7f0000000000, 0x1000, 0, "/a/symbolize.perfbin"));
    expect(m, 5, 0x14005b0, 0, 0x4005b0);
    expect(m, 9, 0x14005b0, 0, 0x4005b0);      /* any process */
    expect(m, 5, 0x4005b0, -1, 0);             /* the module, the user file */
    expect(m, LP_ADDRMAP_ANY_PID, 0x14005b0, 0, 0x4005b0);
    expect(m, 5, 0x7f00000006a0, 1, 0x6a0);
    expect(m, 9, 0x7f00000006a0, -1, 0);
    assert_true(lp_addrmap_loaded(m, 0));
    lp_addrmap_free(m);
    /* --pid: the kernel mmap (pid -1) is dropped, as llvm-profgen does */
    o.pid_filter = 5;
    m = lp_addrmap_new(bins, 2, &o, NULL);
    feed(m, k);
    assert_false(lp_addrmap_loaded(m, 0));
    expect(m, 9, 0x4005b0, 0, 0x4005b0);
    expect(m, 9, 0x14005b0, -1, 0);
    lp_addrmap_free(m);
    /* without --kernel, the kernel mmap is nothing */
    o.pid_filter = -1;
    o.kernel = false;
    m = lp_addrmap_new(bins, 2, &o, NULL);
    feed(m, k);
    expect(m, 5, 0x14005b0, -1, 0);
    assert_false(lp_addrmap_loaded(m, 0));
    lp_addrmap_free(m);
    for (int i = 0; i < 2; i++)
        lp_binary_close(bins[i]);
}

/* ---- build-ids: two programs named "prog" with known ids -------------- */

static char scratch[64];
#define ID_A "0123456789abcdef0123456789abcdef01234567"
#define ID_B "fedcba9876543210fedcba9876543210fedcba98"

static int make_progs(void **state)
{
    char cmd[1024];
    (void)state;

    snprintf(scratch, sizeof scratch, "/tmp/lp-addrmap-XXXXXX");
    if (!mkdtemp(scratch))
        return -1;
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/a %s/b && printf 'int main(void){return 0;}\\n' > %s/p.c && "
             "cc -o %s/a/prog %s/p.c -Wl,--build-id=0x" ID_A " && "
             "cc -o %s/b/prog %s/p.c -Wl,--build-id=0x" ID_B,
             scratch, scratch, scratch, scratch, scratch, scratch, scratch);
    return system(cmd) == 0 ? 0 : -1;
}

static int remove_progs(void **state)
{
    char cmd[128];
    (void)state;

    snprintf(cmd, sizeof cmd, "rm -rf %s", scratch);
    return system(cmd) == 0 ? 0 : -1;
}

static void unhex(const char *h, uint8_t *out)
{
    for (int i = 0; i < 20; i++)
        sscanf(h + 2 * i, "%2hhx", &out[i]);
}

static lp_event bid_mmap(uint32_t pid, uint64_t start, const char *file,
                         const char *id)
{
    lp_event ev = mmap_ev(pid, start, 0x1000, 0x1000, file);

    ev.u.mmap.is_mmap2 = 1;
    ev.misc |= LP_MISC_MMAP_BUILD_ID;
    unhex(id, ev.u.mmap.build_id);
    ev.u.mmap.build_id_size = 20;
    return ev;
}

/* Build-id beats path: an mmap named a/prog with B's id is B; an mmap
 * whose id is nobody's is not used even though its basename matches, with
 * one warning naming both ids; without an id the path decides, and the
 * header table supplies ids for plain MMAP records. */
static void test_build_ids(void **state)
{
    char pa[128], pb[128];
    lp_binary *bins[2];
    warns w = {{0}, 0};
    lp_addrmap_opts o = {false, -1, collect, &w};
    lp_addrmap *m;
    lp_build_id hdr;
    uint64_t text;
    const lp_segment *segs;
    (void)state;

    snprintf(pa, sizeof pa, "%s/a/prog", scratch);
    snprintf(pb, sizeof pb, "%s/b/prog", scratch);
    bins[0] = open_bin(pa);
    bins[1] = open_bin(pb);
    assert_string_equal(lp_binary_build_id_hex(bins[0]), ID_A);
    assert_int_equal(lp_binary_exec_segments(bins[0], &segs) > 0, 1);
    assert_int_equal(segs[0].offset & ~0xfffull, 0x1000);
    text = segs[0].vaddr & ~0xfffull;
    m = lp_addrmap_new(bins, 2, &o, NULL);
    assert_non_null(m);

    feed(m, bid_mmap(1, 0x10000, pa, ID_B));
    expect(m, 1, 0x10010, 1, text + 0x10);
    feed(m, bid_mmap(2, 0x20000, "/elsewhere/renamed", ID_A));
    expect(m, 2, 0x20010, 0, text + 0x10);
    feed(m, bid_mmap(3, 0x30000, pa, "00000000000000000000000000000000000000aa"));
    feed(m, bid_mmap(4, 0x30000, pa, "00000000000000000000000000000000000000aa"));
    expect(m, 3, 0x30010, -1, 0);
    assert_int_equal(w.n, 1);
    assert_non_null(strstr(w.buf, "not used"));
    assert_non_null(strstr(w.buf, ID_A));
    assert_non_null(strstr(w.buf, "00000000000000000000000000000000000000aa"));
    /* no id in the record: full path first, then the header's table */
    feed(m, mmap_ev(5, 0x50000, 0x1000, 0x1000, pb));
    expect(m, 5, 0x50010, 1, text + 0x10);
    memset(&hdr, 0, sizeof hdr);
    unhex(ID_B, hdr.id);
    hdr.size = 20;
    hdr.pid = -1;
    hdr.filename = "/x/prog";
    assert_int_equal(lp_addrmap_add_build_ids(m, &hdr, 1, NULL), 0);
    feed(m, mmap_ev(6, 0x60000, 0x1000, 0x1000, "/x/prog"));
    expect(m, 6, 0x60010, 1, text + 0x10);
    /* basename only, no id anywhere: the first binary of that name */
    feed(m, mmap_ev(7, 0x70000, 0x1000, 0x1000, "/y/prog"));
    expect(m, 7, 0x70010, 0, text + 0x10);
    /* another recording: its header table is its own */
    lp_addrmap_next_input(m);
    feed(m, mmap_ev(6, 0x60000, 0x1000, 0x1000, "/x/prog"));
    expect(m, 6, 0x60010, 0, text + 0x10);
    lp_addrmap_free(m);
    lp_binary_close(bins[0]);
    lp_binary_close(bins[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_non_pie),
        cmocka_unit_test(test_pie_two_processes),
        cmocka_unit_test(test_next_input),
        cmocka_unit_test(test_single_base_mode),
        cmocka_unit_test(test_single_base_pid_filter),
        cmocka_unit_test(test_nonzero_pgoff),
        cmocka_unit_test(test_fork_exec),
        cmocka_unit_test(test_changes),
        cmocka_unit_test(test_several_binaries),
        cmocka_unit_test(test_kernel),
        cmocka_unit_test_setup_teardown(test_build_ids, make_progs, remove_progs),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
