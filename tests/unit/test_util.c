/*
 * test_util.c - unit tests for src/util: error formatting, atomic output
 * the small-array sort, the written-zero allocation, the release of
 * mapped files' pages, and the blocks' heap homes and free boxes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lbr2prof/error.h"
#include "lbr2prof/outfile.h"
#include "lbr2prof/phases.h"
#include "util/hash.h"
#include "util/arena.h"
#include "util/heaphome.h"
#include "util/pages.h"
#include "util/sort.h"
#include "util/zalloc.h"

static void test_error_set_and_prefix(void **state)
{
    lp_error e;
    (void)state;
    assert_int_equal(lp_error_set(&e, LP_EFORMAT, "offset 0x%x: bad", 0x1a8), -1);
    assert_int_equal(e.code, LP_EFORMAT);
    assert_string_equal(e.msg, "offset 0x1a8: bad");
    lp_error_prefix(&e, "%s", "f.data");
    assert_string_equal(e.msg, "f.data: offset 0x1a8: bad");
    assert_int_equal(lp_error_set(NULL, LP_EIO, "x"), -1); /* NULL is allowed */
    lp_error_clear(&e);
    assert_int_equal(e.code, LP_OK);
    assert_string_equal(e.msg, "");
}

static void test_outfile_commit_renames(void **state)
{
    char dir[] = "/tmp/lp-ut-XXXXXX", path[256], buf[32];
    lp_outfile o;
    lp_error e;
    FILE *f;
    struct stat st;
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.prof", dir);
    assert_int_equal(lp_outfile_open(&o, path, &e), 0);
    fputs("hello\n", o.fp);
    assert_int_not_equal(stat(path, &st), 0); /* not visible before commit */
    assert_int_equal(lp_outfile_commit(&o, &e), 0);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    assert_string_equal(buf, "hello\n");
    unlink(path);
    rmdir(dir);
}

static void test_outfile_abort_leaves_nothing(void **state)
{
    char dir[] = "/tmp/lp-ut-XXXXXX", path[256];
    lp_outfile o;
    lp_error e;
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.prof", dir);
    assert_int_equal(lp_outfile_open(&o, path, &e), 0);
    fputs("partial", o.fp);
    lp_outfile_abort(&o);
    assert_int_equal(rmdir(dir), 0); /* directory is empty again */
}

static void test_outfile_bad_dir(void **state)
{
    lp_outfile o;
    lp_error e;
    (void)state;
    assert_int_equal(lp_outfile_open(&o, "/nonexistent-dir/x.prof", &e), -1);
    assert_int_equal(e.code, LP_EIO);
    assert_non_null(strstr(e.msg, "/nonexistent-dir/x.prof"));
}

/* A FIFO (like /dev/null, not a regular file) is written in place, not
 * replaced by a renamed temporary file. */
static void test_outfile_special_in_place(void **state)
{
    char dir[] = "/tmp/lp-outfile-XXXXXX", path[64], buf[16] = {0};
    lp_outfile o;
    lp_error e;
    struct stat st;
    int rd;
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    rd = open(path, O_RDONLY | O_NONBLOCK); /* so that opening for writing does not block */
    assert_true(rd >= 0);
    assert_int_equal(lp_outfile_open(&o, path, &e), 0);
    fputs("profile", o.fp);
    assert_int_equal(lp_outfile_commit(&o, &e), 0);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(read(rd, buf, sizeof buf - 1), 7);
    assert_string_equal(buf, "profile");
    close(rd);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(rmdir(dir), 0); /* no temporary file was left */
}

typedef struct kv {
    int key, seq;
} kv;

static int kv_cmp(const void *x, const void *y)
{
    const kv *a = x, *b = y;

    return (a->key > b->key) - (a->key < b->key);
}

/* lp_sort is stable (equal keys keep their order, as glibc's merge-sort
 * qsort keeps them) for short, long and already sorted arrays, and says
 * whether anything moved */
static void test_sort_stable(void **state)
{
    static const size_t sizes[] = {0, 1, 2, 5, 24, 25, 100};
    kv v[100];
    size_t k, i, n;
    (void)state;

    for (k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        n = sizes[k];
        for (i = 0; i < n; i++)
            v[i] = (kv){(int)((i * 7 + 3) % 5), (int)i};
        assert_int_equal(lp_sort(v, n, sizeof *v, kv_cmp), n > 1);
        for (i = 1; i < n; i++) {
            assert_true(v[i - 1].key <= v[i].key);
            if (v[i - 1].key == v[i].key)
                assert_true(v[i - 1].seq < v[i].seq);
        }
        assert_int_equal(lp_sort(v, n, sizeof *v, kv_cmp), 0);
    }
}

/* lp_zalloc_written's memory is written when made: every page of it is
 * resident at once. Were the malloc + memset pair turned into calloc (GCC
 * does this unless kept apart), the fresh pages of a large block would
 * not be, and the first write into each would need a TLB shoot-down. */
/* Burn about `s` seconds of CPU on the calling thread. */
static void spin(double s)
{
    struct timespec a, b;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9 < s);
}

typedef struct seen {
    int calls, finals;
    lp_phase phases[16];
    lp_progress last;
} seen;

static void record_progress(void *ctx, const lp_progress *p)
{
    seen *s = ctx;

    if (s->calls < 16)
        s->phases[s->calls] = p->phase;
    s->calls++;
    s->finals += p->final;
    s->last = *p;
}

/* Time goes to the phase that was current, adds up when a phase comes
 * back, and the callback sees every change, the reading's numbers at most
 * every period, and the end once. */
static void test_phases_account_and_report(void **state)
{
    lp_phases ph;
    seen s = {0};
    char buf[4096];
    FILE *f;
    (void)state;

    lp_phases_init(&ph, record_progress, &s, 1000.0);
    lp_phases_enter(&ph, LP_PHASE_READ);
    spin(0.02);
    lp_phases_read(&ph, 10, 100, 7);            /* not due: no call */
    assert_int_equal(s.calls, 1);
    lp_phases_enter(&ph, LP_PHASE_UNWIND);
    lp_phases_items(&ph, 3, 9);
    lp_phases_enter(&ph, LP_PHASE_READ);
    spin(0.02);
    lp_phases_enter(&ph, LP_PHASE_READ);        /* no change: no call */
    lp_phases_end(&ph);
    lp_phases_end(&ph);                         /* once */
    assert_int_equal(s.calls, 4);
    assert_int_equal(s.finals, 1);
    assert_int_equal(s.phases[0], LP_PHASE_READ);
    assert_int_equal(s.phases[1], LP_PHASE_UNWIND);
    assert_int_equal(s.phases[2], LP_PHASE_READ);
    assert_int_equal(s.last.bytes, 10);
    assert_int_equal(s.last.total_bytes, 100);
    assert_int_equal(s.last.samples, 7);
    assert_true(ph.cpu[LP_PHASE_READ] >= 0.035);
    assert_true(ph.wall[LP_PHASE_READ] >= 0.035);
    assert_true(ph.cpu[LP_PHASE_UNWIND] < 0.01);
    assert_true(ph.wall[LP_PHASE_GENERATE] == 0);
    assert_non_null(f = fmemopen(buf, sizeof buf, "w"));
    lp_phases_print(&ph, "test", f);
    fclose(f);
    assert_non_null(strstr(buf, "reading the trace"));
    assert_non_null(strstr(buf, "unwinding"));
    assert_null(strstr(buf, "generation"));     /* phases never entered */
    assert_non_null(strstr(buf, "Total"));
    assert_null(strstr(buf, "Samples unwound"));  /* none given */
    lp_phases_unwound(NULL, 1, 1, 0);
    lp_phases_unwound(&ph, 1552882, 71092, 1233);
    assert_non_null(f = fmemopen(buf, sizeof buf, "w"));
    lp_phases_print(&ph, "test", f);
    fclose(f);
    assert_non_null(strstr(buf, " Total\n\n  Samples unwound: 1552882 (71092 distinct)\n"
                                "  Distinct samples recorded ahead: 1233\n\n"));
}

/* A due reading report calls back; NULL is taken everywhere. */
static void test_phases_read_when_due(void **state)
{
    lp_phases ph;
    seen s = {0};
    (void)state;

    lp_phases_init(&ph, record_progress, &s, 0.001);
    lp_phases_enter(&ph, LP_PHASE_READ);
    spin(0.005);
    lp_phases_read(&ph, 5, 0, 1);
    assert_int_equal(s.calls, 2);
    assert_int_equal(s.last.phase, LP_PHASE_READ);
    assert_true(s.last.elapsed > 0);
    lp_phases_init(NULL, NULL, NULL, 0);
    lp_phases_enter(NULL, LP_PHASE_READ);
    lp_phases_read(NULL, 1, 2, 3);
    lp_phases_items(NULL, 1, 2);
    lp_phases_end(NULL);
    assert_string_equal(lp_phase_name(LP_PHASE_PREINLINE), "pre-inlining");
}

static void test_zalloc_written_is_resident(void **state)
{
    size_t bytes = 4u << 20, page = (size_t)sysconf(_SC_PAGESIZE), i, n;
    unsigned char *p = lp_zalloc_written(bytes), *vec;
    uintptr_t lo, hi;
    (void)state;

    assert_non_null(p);
    lo = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    hi = ((uintptr_t)p + bytes) & ~(uintptr_t)(page - 1);
    n = (hi - lo) / page;
    vec = malloc(n);
    assert_non_null(vec);
    assert_int_equal(mincore((void *)lo, hi - lo, vec), 0);
    for (i = 0; i < n; i++)
        assert_true(vec[i] & 1);
    for (i = 0; i < bytes; i += 512)   /* read only after mincore */
        assert_int_equal(p[i], 0);
    free(vec);
    free(p);
}

/* Rss in KB of the mapping that starts at p (/proc/self/smaps). */
static long mapping_rss_kb(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    unsigned long lo, hi;
    long kb = -1, v;
    int in = 0;

    assert_non_null(f);
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)  /* a mapping's line */
            in = lo == (uintptr_t)p;
        else if (in && sscanf(line, "Rss: %ld", &v) == 1)
            kb = v;
    }
    fclose(f);
    return kb;
}

/* A 256 KiB file of a known pattern, mapped with prot. */
static unsigned char *map_pattern(size_t len, int prot, char *path)
{
    unsigned char *buf = malloc(len), *p;
    size_t i;
    int fd = mkstemp(path);

    assert_true(fd >= 0 && buf);
    for (i = 0; i < len; i++)
        buf[i] = (unsigned char)(i * 7 + 3);
    assert_int_equal(write(fd, buf, len), (ssize_t)len);
    p = mmap(NULL, len, prot, MAP_PRIVATE, fd, 0);
    assert_true(p != MAP_FAILED);
    close(fd);
    free(buf);
    return p;
}

/* A read-only file mapping's pages given back by release (either check:
 * smaps, or maps for a mapping never writable), and read again intact. */
static void check_release_clean(void (*release)(const void *, size_t))
{
    char path[] = "/tmp/lp-pages-XXXXXX";
    size_t len = 256 * 1024, i;
    unsigned char *p = map_pattern(len, PROT_READ, path);
    unsigned sum = 0;

    for (i = 0; i < len; i += 4096)
        sum += p[i];
    assert_true(mapping_rss_kb(p) >= 200);
    release(p, len);
    assert_int_equal(mapping_rss_kb(p), 0);   /* given back */
    for (i = 0; i < len; i++)                 /* and read again intact */
        assert_int_equal(p[i], (unsigned char)(i * 7 + 3));
    assert_true(mapping_rss_kb(p) >= 200);
    assert_true(sum > 0);
    munmap(p, len);
    unlink(path);
}

static void test_pages_release_clean_file_pages(void **state)
{
    (void)state;
    check_release_clean(lp_pages_release);
    check_release_clean(lp_pages_release_ro);
}

static void test_pages_release_keeps_written(void **state)
{
    char path[] = "/tmp/lp-pages-XXXXXX";
    size_t len = 256 * 1024, i;
    unsigned char *p = map_pattern(len, PROT_READ | PROT_WRITE, path);
    unsigned char *anon = mmap(NULL, len, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    (void)state;

    assert_true(anon != MAP_FAILED);
    p[4096] = 0xee;                     /* relocated, then read-only: RELRO */
    memset(anon, 0x5a, len);
    assert_int_equal(mprotect(p, len, PROT_READ), 0);
    lp_pages_release(p, len);
    lp_pages_release(anon, len);
    lp_pages_release_ro(anon, len);     /* not a file: left alone too */
    assert_int_equal(p[4096], 0xee);
    for (i = 0; i < len; i += 512)
        assert_int_equal(anon[i], 0x5a);
    munmap(p, len);
    munmap(anon, len);
    unlink(path);
}

/* The arena: 8-aligned pieces that do not overlap, a chunk of its own for
 * a request larger than a chunk, and after a reset the same memory again
 * (the flat aggregator refills it after each flush). */
static void test_arena_alloc_reset_free(void **state)
{
    lp_arena a = {0};
    unsigned char *p, *q, *big, *again;

    (void)state;
    assert_non_null(p = lp_arena_alloc(&a, 3));
    assert_non_null(q = lp_arena_alloc(&a, 16));
    assert_int_equal((uintptr_t)p % 8, 0);
    assert_ptr_equal(q, p + 8);
    memset(p, 0xab, 3);
    memset(q, 0xcd, 16);
    assert_int_equal(p[2], 0xab);
    assert_int_equal(a.bytes, 24);
    assert_non_null(big = lp_arena_alloc(&a, LP_ARENA_CHUNK + 1));
    assert_true(big + LP_ARENA_CHUNK < p || big > q + 16);
    memset(big, 1, LP_ARENA_CHUNK + 1);
    assert_int_equal(q[15], 0xcd);
    lp_arena_reset(&a);
    assert_int_equal(a.bytes, 0);
    assert_null(a.head);
    assert_non_null(again = lp_arena_alloc(&a, 8));
    assert_ptr_equal(again, p);     /* the kept chunk, refilled */
    assert_null(a.spare);           /* the oversized one was freed */
    lp_arena_free(&a);
    assert_null(a.head);
    assert_int_equal(a.bytes, 0);
}

/* The size of the readable and writable mapping holding p (0: none). */
static size_t rw_mapping_of(const void *p)
{
    FILE *f = fopen("/proc/self/maps", "r");
    unsigned long lo, hi;
    char perm[8], line[512];
    size_t size = 0;

    assert_non_null(f);
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) == 3 &&
            (uintptr_t)p >= lo && (uintptr_t)p < hi && !strncmp(perm, "rw", 2))
            size = hi - lo;
    fclose(f);
    return size;
}

static void *thread_reserves(void *arg)
{
    void **out = arg;
    void *p = malloc(4096);     /* this thread's arena, made now */

    out[1] = (void *)rw_mapping_of(p);
    lp_heap_reserve(out[0], 16u << 20);
    out[2] = (void *)rw_mapping_of(p);
    free(p);
    return NULL;
}

/* lp_heap_reserve: a new thread's glibc heap is writable for what it
 * used; readied for 16 MiB, it is writable for at least that (and
 * nothing is asked of another allocator). */
static void test_heap_reserve(void **state)
{
    lp_heapinfo h;
    void *out[3];
    pthread_t t;

    (void)state;
    lp_heapinfo_get(&h);
    out[0] = &h;
    assert_int_equal(pthread_create(&t, NULL, thread_reserves, out), 0);
    pthread_join(t, NULL);
    if (h.glibc) {
        assert_true((size_t)out[1] < (8u << 20));
        assert_true((size_t)out[2] >= (16u << 20));
    }
}

static void *thread_blocks(void *arg)
{
    void **out = arg;
    const lp_heapinfo *h = out[0];

    out[1] = malloc(4096);      /* from this thread's arena */
    out[2] = (void *)(intptr_t)lp_heap_home_self(h);
    return NULL;
}

/* Heap homes: under glibc (this build, unless a sanitizer's or a
 * preloaded malloc replaces it) the main thread's blocks are in the main
 * arena and a new thread's in another; a mapped block and every block of
 * another allocator are anyone's. */
static void test_heaphome_homes(void **state)
{
    lp_heapinfo h;
    void *out[3], *mine = malloc(4096), *big = malloc(64u << 20);
    pthread_t t;

    (void)state;
    lp_heapinfo_get(&h);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    if (!getenv("LD_PRELOAD"))  /* (a sanitizer's malloc is not glibc's) */
        assert_true(h.glibc);
#endif
    out[0] = &h;
    assert_int_equal(pthread_create(&t, NULL, thread_blocks, out), 0);
    pthread_join(t, NULL);
    assert_int_equal(lp_heap_home(&h, NULL), LP_HOME_ANY);
    assert_int_equal(lp_heap_home(&h, big), LP_HOME_ANY);
    if (h.glibc) {
        assert_int_equal(lp_heap_home(&h, mine), LP_HOME_MAIN);
        assert_int_equal(lp_heap_home_self(&h), LP_HOME_MAIN);
        assert_int_equal(lp_heap_home(&h, out[1]), LP_HOME_OTHER);
        assert_int_equal((intptr_t)out[2], LP_HOME_OTHER);
    } else {
        assert_int_equal(lp_heap_home(&h, mine), LP_HOME_ANY);
        assert_int_equal(lp_heap_home(&h, out[1]), LP_HOME_ANY);
        assert_int_equal((intptr_t)out[2], LP_HOME_ANY);
    }
    free(out[1]);
    free(mine);
    free(big);
}

#define BOX_BLOCKS (LP_FREEBOX_MAX / 2)

static void *thread_put(void *arg)
{
    void *p;
    int i;

    for (i = 0; i < BOX_BLOCKS; i++)
        if (!lp_freebox_put(arg, p = malloc(16 + i % 200)))
            free(p);
    return NULL;
}

/* A free box filled by two threads at once holds every block once (the
 * stack through their first words), takes no more once full, and a drain
 * empties it. */
static void test_freebox_put_drain(void **state)
{
    lp_freebox b = {0};
    pthread_t t;
    size_t n = 0;
    void *p;

    (void)state;
    lp_freebox_drain(&b);       /* empty: nothing to do */
    assert_int_equal(pthread_create(&t, NULL, thread_put, &b), 0);
    thread_put(&b);
    pthread_join(t, NULL);
    for (p = b.head; p; p = *(void **)p)
        n++;
    assert_int_equal(n, 2 * BOX_BLOCKS);
    assert_false(lp_freebox_put(&b, &n));    /* full: not taken */
    lp_freebox_drain(&b);
    assert_null(b.head);
    assert_int_equal(b.n, 0);
    assert_true(lp_freebox_put(&b, p = malloc(8)));
    lp_freebox_drain(&b);
}

/* lp_digest_inline is XXH3_128bits at every length, whichever code
 * computes it (from 256 bytes on, the AVX2 build where the CPU has it):
 * against libxxhash's dispatched code, over lengths and alignments
 * around the switch and XXH3's input-size classes. */
static void test_digest_inline_is_xxh3(void **state)
{
    unsigned char *buf = malloc(4200);
    size_t n, off;
    (void)state;

    assert_non_null(buf);
    for (n = 0; n < 4200; n++)
        buf[n] = (unsigned char)(n * 131 + (n >> 7));
    for (off = 0; off < 3; off++)
        for (n = 0; n + off <= 4200; n += n < 300 ? 1 : 37) {
            lp_digest h = lp_digest_long(buf + off, n);
            lp_digest d = lp_digest_inline(buf + off, n);
            assert_int_equal(d.lo, h.lo);
            assert_int_equal(d.hi, h.hi);
        }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_set_and_prefix),
        cmocka_unit_test(test_sort_stable),
        cmocka_unit_test(test_outfile_commit_renames),
        cmocka_unit_test(test_outfile_abort_leaves_nothing),
        cmocka_unit_test(test_outfile_bad_dir),
        cmocka_unit_test(test_outfile_special_in_place),
        cmocka_unit_test(test_zalloc_written_is_resident),
        cmocka_unit_test(test_phases_account_and_report),
        cmocka_unit_test(test_phases_read_when_due),
        cmocka_unit_test(test_pages_release_clean_file_pages),
        cmocka_unit_test(test_pages_release_keeps_written),
        cmocka_unit_test(test_arena_alloc_reset_free),
        cmocka_unit_test(test_heaphome_homes),
        cmocka_unit_test(test_heap_reserve),
        cmocka_unit_test(test_freebox_put_drain),
        cmocka_unit_test(test_digest_inline_is_xxh3),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
