/*
 * test_machine.c - unit tests for src/machine: comms through COMM/FORK,
 * maps through MMAP with overlap fixup, fork copies, exec resets, kernel
 * maps shared by every process.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "lbr2prof/machine.h"

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

static lp_event comm_ev(uint32_t pid, uint32_t tid, const char *comm, int exec)
{
    lp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = LP_EV_COMM;
    ev.u.comm.pid = pid;
    ev.u.comm.tid = tid;
    ev.u.comm.comm = comm;
    ev.u.comm.exec = exec;
    return ev;
}

static lp_event fork_ev(uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid)
{
    lp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = LP_EV_FORK;
    ev.u.task.pid = pid;
    ev.u.task.ppid = ppid;
    ev.u.task.tid = tid;
    ev.u.task.ptid = ptid;
    return ev;
}

static void feed(lp_machine *m, lp_event ev)
{
    lp_error e;
    assert_int_equal(lp_machine_process_event(m, &ev, &e), 0);
}

static void test_comm_and_fork(void **state)
{
    lp_error e;
    lp_machine *m = lp_machine_new(0, &e);
    (void)state;

    assert_non_null(m);
    assert_string_equal(lp_machine_comm(m, 0, 0), "swapper");
    assert_null(lp_machine_comm(m, 10, 10));
    feed(m, comm_ev(10, 10, "bash", 0));
    assert_string_equal(lp_machine_comm(m, 10, 10), "bash");
    feed(m, fork_ev(20, 10, 20, 10));   /* new process */
    feed(m, fork_ev(10, 10, 11, 10));   /* new thread */
    assert_string_equal(lp_machine_comm(m, 20, 20), "bash");
    assert_string_equal(lp_machine_comm(m, 10, 11), "bash");
    feed(m, comm_ev(20, 20, "ls", 1));
    assert_string_equal(lp_machine_comm(m, 20, 20), "ls");
    assert_string_equal(lp_machine_comm(m, 10, 10), "bash");
    feed(m, fork_ev(30, 99, 30, 99));   /* unknown parent */
    assert_null(lp_machine_comm(m, 30, 30));
    feed(m, comm_ev(40, 40, "x", 0));
    feed(m, fork_ev(41, 10, 40, 10));   /* tid 40 reused */
    assert_string_equal(lp_machine_comm(m, 41, 40), "bash");
    lp_machine_free(m);
}

static void test_maps_overlap(void **state)
{
    lp_error e;
    lp_machine *m = lp_machine_new(0, &e);
    const lp_map *mp;
    (void)state;

    feed(m, mmap_ev(10, 0x1000, 0x9000, 0, "/bin/a")); /* [0x1000,0xa000) */
    mp = lp_machine_find_map(m, 10, 0x1000, LP_CPUMODE_USER);
    assert_non_null(mp);
    assert_string_equal(mp->filename, "/bin/a");
    assert_int_equal(lp_map_rel_addr(mp, 0x1234), 0x234);
    assert_null(lp_machine_find_map(m, 10, 0xa000, LP_CPUMODE_USER));
    assert_null(lp_machine_find_map(m, 11, 0x1000, LP_CPUMODE_USER));
    /* A map in the middle splits /bin/a in two; the right part's pgoff
     * follows the file. */
    feed(m, mmap_ev(10, 0x3000, 0x2000, 0x100000, "/lib/b.so"));
    assert_int_equal(lp_machine_nr_maps(m, 10), 3);
    mp = lp_machine_find_map(m, 10, 0x2fff, LP_CPUMODE_USER);
    assert_string_equal(mp->filename, "/bin/a");
    assert_int_equal(mp->end, 0x3000);
    mp = lp_machine_find_map(m, 10, 0x4000, LP_CPUMODE_USER);
    assert_string_equal(mp->filename, "/lib/b.so");
    assert_int_equal(lp_map_rel_addr(mp, 0x4000), 0x101000);
    mp = lp_machine_find_map(m, 10, 0x5000, LP_CPUMODE_USER);
    assert_string_equal(mp->filename, "/bin/a");
    assert_int_equal(mp->start, 0x5000);
    assert_int_equal(mp->pgoff, 0x4000);
    assert_int_equal(lp_map_rel_addr(mp, 0x5010), 0x4010);
    /* A map covering several replaces them all. */
    feed(m, mmap_ev(10, 0x0, 0x10000, 0, "/bin/c"));
    assert_int_equal(lp_machine_nr_maps(m, 10), 1);
    /* Anonymous memory prints absolute addresses. */
    feed(m, mmap_ev(10, 0x20000, 0x1000, 0, "//anon"));
    mp = lp_machine_find_map(m, 10, 0x20010, LP_CPUMODE_USER);
    assert_int_equal(lp_map_rel_addr(mp, 0x20010), 0x20010);
    lp_machine_free(m);
}

static void test_fork_exec_kernel(void **state)
{
    lp_error e;
    lp_machine *m = lp_machine_new(0, &e);
    lp_machine *keep = lp_machine_new(LP_MACHINE_KEEP_MAPS_ON_EXEC, &e);
    lp_event k = mmap_ev((uint32_t)-1, 0xffffffff81000000ull, 0x1000000,
                         0xffffffff81000000ull, "[kernel.kallsyms]_text");
    const lp_map *mp;
    (void)state;

    k.misc = LP_CPUMODE_KERNEL;
    feed(m, k);
    feed(keep, k);
    feed(m, mmap_ev(10, 0x400000, 0x1000, 0, "/bin/sh"));
    feed(keep, mmap_ev(10, 0x400000, 0x1000, 0, "/bin/sh"));
    feed(m, fork_ev(20, 10, 20, 10));
    feed(keep, fork_ev(20, 10, 20, 10));
    assert_non_null(lp_machine_find_map(m, 20, 0x400000, LP_CPUMODE_USER));
    feed(m, comm_ev(20, 20, "ls", 1));
    feed(keep, comm_ev(20, 20, "ls", 1));
    assert_null(lp_machine_find_map(m, 20, 0x400000, LP_CPUMODE_USER));
    assert_non_null(lp_machine_find_map(keep, 20, 0x400000, LP_CPUMODE_USER));
    assert_non_null(lp_machine_find_map(m, 10, 0x400000, LP_CPUMODE_USER));
    /* Kernel maps: shared, and only for kernel (or unknown) lookups. */
    mp = lp_machine_find_map(m, 20, 0xffffffff81000010ull, LP_CPUMODE_KERNEL);
    assert_non_null(mp);
    assert_true(mp->kernel);
    assert_int_equal(lp_map_rel_addr(mp, 0xffffffff81000010ull),
                     0xffffffff81000010ull);
    assert_null(lp_machine_find_map(m, 20, 0xffffffff81000010ull, LP_CPUMODE_USER));
    assert_non_null(lp_machine_find_map(m, 55, 0xffffffff81000010ull,
                                        LP_CPUMODE_UNKNOWN));
    assert_null(lp_machine_find_map(m, 20, 0xffffffff81000010ull, LP_CPUMODE_HV));
    lp_machine_free(m);
    lp_machine_free(keep);
}

static void test_build_ids(void **state)
{
    lp_error e;
    lp_machine *m = lp_machine_new(0, &e);
    lp_build_id ids[3];
    lp_event ev = mmap_ev(10, 0x400000, 0x1000, 0, "/bin/sh");
    const lp_map *mp;
    (void)state;

    memset(ids, 0, sizeof ids);
    ids[0].pid = -1;
    ids[0].filename = "/bin/sh";
    ids[0].size = 20;
    ids[0].id[0] = 0xab;
    ids[1].pid = 10;
    ids[1].filename = "/lib/x.so";
    ids[1].size = 16;
    ids[1].id[15] = 0xcd;
    ids[2].pid = -1;
    ids[2].filename = "[kernel.kallsyms]";
    ids[2].size = 20;
    ids[2].id[1] = 0x77;
    assert_int_equal(lp_machine_add_build_ids(m, ids, 3, &e), 0);
    ev = mmap_ev((uint32_t)-1, 0xffffffff81000000ull, 0x1000000, 0,
                 "[kernel.kallsyms]_text");
    ev.misc = LP_CPUMODE_KERNEL;
    feed(m, ev);
    mp = lp_machine_find_map(m, 10, 0xffffffff81000010ull, LP_CPUMODE_KERNEL);
    assert_int_equal(mp->build_id[1], 0x77);
    ev = mmap_ev(10, 0x400000, 0x1000, 0, "/bin/sh");
    feed(m, ev);
    feed(m, mmap_ev(10, 0x500000, 0x1000, 0, "/lib/x.so"));
    feed(m, mmap_ev(11, 0x500000, 0x1000, 0, "/lib/x.so"));
    ev = mmap_ev(12, 0x400000, 0x1000, 0, "/bin/sh");
    ev.u.mmap.build_id_size = 4; /* MMAP2 with its own build-id wins */
    ev.u.mmap.build_id[0] = 0x11;
    feed(m, ev);
    mp = lp_machine_find_map(m, 10, 0x400000, LP_CPUMODE_USER);
    assert_int_equal(mp->build_id_size, 20);
    assert_int_equal(mp->build_id[0], 0xab);
    mp = lp_machine_find_map(m, 10, 0x500000, LP_CPUMODE_USER);
    assert_int_equal(mp->build_id_size, 16);
    assert_int_equal(mp->build_id[15], 0xcd);
    mp = lp_machine_find_map(m, 11, 0x500000, LP_CPUMODE_USER);
    assert_int_equal(mp->build_id_size, 0); /* recorded for pid 10 only */
    mp = lp_machine_find_map(m, 12, 0x400000, LP_CPUMODE_USER);
    assert_int_equal(mp->build_id_size, 4);
    assert_int_equal(mp->build_id[0], 0x11);
    lp_machine_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comm_and_fork),
        cmocka_unit_test(test_maps_overlap),
        cmocka_unit_test(test_fork_exec_kernel),
        cmocka_unit_test(test_build_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
