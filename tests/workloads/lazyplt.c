/* lazyplt.c - workload: first calls through lazily bound PLT stubs (link
 * WITHOUT -z now). The first call of each libc function jumps through its
 * GOT slot to the next instruction of its stub (push; jmp to PLT0), on to
 * ld.so's resolver, then to the function; later calls go straight to it.
 * The calls are made from a thread's start routine (whose caller is libc:
 * its context has no callers) and from a function it calls, with a
 * condition variable and clock_gettime (vDSO) as a reader thread has
 * them. Deterministic; the argument scales the work. */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct q {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, stop;
} q;

static volatile unsigned long sink;

__attribute__((noinline)) static void fill(int k)
{
    for (int i = 0; i < 40 + k; i++)
        sink += (unsigned long)(i * k);
}

/* first calls from a function the start routine calls */
__attribute__((noinline)) static void firsts(void)
{
    char buf[32];

    fill(3);
    sink += strlen("abc");
    fill(5);
    snprintf(buf, sizeof buf, "%d", 7);
    sink += (unsigned long)atoi(buf);
    fill(7);
    sink += (unsigned long)toupper('a');
}

static void *producer(void *arg)
{
    q *f = arg;
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);     /* first calls from here */
    sink += (unsigned long)labs(-(long)t.tv_nsec % 5);
    firsts();
    for (int k = 0;; k++) {
        pthread_mutex_lock(&f->mu);
        while (f->n == 4 && !f->stop)
            pthread_cond_wait(&f->cv, &f->mu);
        if (f->stop || k == 30) {
            f->stop = 1;
            pthread_cond_broadcast(&f->cv);
            pthread_mutex_unlock(&f->mu);
            return NULL;
        }
        pthread_mutex_unlock(&f->mu);
        fill(k);
        pthread_mutex_lock(&f->mu);
        f->n++;
        pthread_cond_broadcast(&f->cv);
        pthread_mutex_unlock(&f->mu);
    }
}

int main(int argc, char **argv)
{
    static q f = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};
    int rounds = argc > 1 ? atoi(argv[1]) : 1;
    pthread_t t;

    for (int r = 0; r < rounds; r++) {
        f.n = f.stop = 0;
        pthread_create(&t, NULL, producer, &f);
        for (;;) {
            pthread_mutex_lock(&f.mu);
            while (f.n == 0 && !f.stop)
                pthread_cond_wait(&f.cv, &f.mu);
            if (f.n == 0 && f.stop) {
                pthread_mutex_unlock(&f.mu);
                break;
            }
            f.n--;
            pthread_cond_broadcast(&f.cv);
            pthread_mutex_unlock(&f.mu);
            fill(r);
        }
        pthread_join(t, NULL);
    }
    printf("%lu\n", sink);
    return 0;
}
