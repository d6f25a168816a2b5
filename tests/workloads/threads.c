/* threads.c - workload: two worker threads and the main thread, each
 * running its own loop (the recorder must follow clone). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static unsigned work(unsigned seed, unsigned n)
{
    unsigned i, x = seed;

    for (i = 0; i < n; i++)
        x = x * 2654435761u + (i & 7 ? i : x >> 3);
    return x;
}

static void *worker(void *arg)
{
    unsigned *v = arg;

    *v = work(*v, 20000);
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    unsigned v[2] = {1, 2}, m;
    int i;

    for (i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, worker, &v[i]))
            return 1;
    m = work(3, 10000);
    for (i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    printf("%u %u %u\n", v[0], v[1], m);
    return 0;
}
