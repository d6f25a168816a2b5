/*
 * test_pfm.c - unit tests for src/record/pfm.c: libpfm4 event encoding
 * with a PMU forced by LIBPFM_FORCE_PMU, compared with the raw codes
 * documented by the vendors (Intel SDM: BR_INST_RETIRED.NEAR_TAKEN is
 * event 0xC4 umask 0x20; AMD PPR: Retired Taken Branch Instructions is
 * PMCx0C4), and the per-vendor default event.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lbr2prof/record.h"

/* libpfm4 reads LIBPFM_FORCE_PMU once per process: each group of tests
 * runs in its own child process (main) with the variable already set. */
static void force(const char *pmu)
{
    const char *cur = getenv("LIBPFM_FORCE_PMU");

    assert_non_null(cur);
    assert_string_equal(cur, pmu);
}

static void test_skylake_near_taken(void **state)
{
    lp_pfm_event ev;
    lp_error err;
    force("skl");
    assert_int_equal(lp_pfm_encode(*state, "BR_INST_RETIRED:NEAR_TAKEN", &ev, &err), 0);
    assert_int_equal(ev.type, 4); /* PERF_TYPE_RAW */
    assert_int_equal(ev.config & 0xffff, 0x20c4);
    assert_int_equal(ev.exclude_kernel, 1); /* user space only */
    assert_int_equal(ev.exclude_user, 0);
    assert_string_equal(ev.pmu, "skl");
    assert_non_null(strstr(ev.fstr, "BR_INST_RETIRED:NEAR_TAKEN"));
}

static void test_skylake_default_is_near_taken(void **state)
{
    lp_error err;
    const char *d;
    force("skl");
    d = lp_pfm_default_event(*state, &err);
    assert_non_null(d);
    assert_string_equal(d, "BR_INST_RETIRED:NEAR_TAKEN");
}

static void test_icelake_same_code(void **state)
{
    lp_pfm_event ev;
    lp_error err;
    force("icl");
    assert_int_equal(lp_pfm_encode(*state, "BR_INST_RETIRED:NEAR_TAKEN", &ev, &err), 0);
    assert_int_equal(ev.config & 0xffff, 0x20c4);
    assert_string_equal(ev.pmu, "icl");
}

static void test_amd_zen_default(void **state)
{
    lp_pfm_event ev;
    lp_error err;
    const char *d;
    force("amd64_fam17h");
    d = lp_pfm_default_event(*state, &err);
    assert_non_null(d);
    assert_string_equal(d, "RETIRED_TAKEN_BRANCH_INSTRUCTIONS");
    assert_int_equal(lp_pfm_encode(*state, d, &ev, &err), 0);
    assert_int_equal(ev.config & 0xff, 0xc4);
    assert_int_equal(ev.exclude_kernel, 1);
}

static void test_unknown_event(void **state)
{
    lp_pfm_event ev;
    lp_error err;
    force("skl");
    assert_int_equal(lp_pfm_encode(*state, "NO_SUCH_EVENT:AT_ALL", &ev, &err), -1);
    assert_int_equal(err.code, LP_EUNSUPP);
    assert_non_null(strstr(err.msg, "NO_SUCH_EVENT"));
}

/* Each test loads libpfm4 (lp_pfm_open) afresh. */
static int open_pfm(void **state)
{
    lp_error err;

    *state = lp_pfm_open(&err);
    if (!*state)
        print_error("%s\n", err.msg);
    return *state ? 0 : -1;
}

static int close_pfm(void **state)
{
    lp_pfm_close(*state);
    return 0;
}

#define pfm_test(f) cmocka_unit_test_setup_teardown(f, open_pfm, close_pfm)

static int run_group(const char *pmu, const struct CMUnitTest *t, size_t n)
{
    pid_t pid = fork();
    int st;

    if (pid == 0) {
        setenv("LIBPFM_FORCE_PMU", pmu, 1);
        _exit(_cmocka_run_group_tests(pmu, t, n, NULL, NULL) ? 1 : 0);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return 1;
    return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

int main(void)
{
    const struct CMUnitTest skl[] = {
        pfm_test(test_skylake_near_taken),
        pfm_test(test_skylake_default_is_near_taken),
        pfm_test(test_unknown_event),
    };
    const struct CMUnitTest icl[] = {
        pfm_test(test_icelake_same_code),
    };
    const struct CMUnitTest zen[] = {
        pfm_test(test_amd_zen_default),
    };
    int bad = 0;

    bad |= run_group("skl", skl, sizeof skl / sizeof skl[0]);
    bad |= run_group("icl", icl, sizeof icl / sizeof icl[0]);
    bad |= run_group("amd64_fam17h", zen, sizeof zen / sizeof zen[0]);
    return bad;
}
