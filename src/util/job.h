/*
 * util/job.h - lp_job: a function run on a second thread when the process
 * may use a second CPU, else run where it is waited for. Owns only the
 * starting and the joining; what the job computes and where its result
 * goes belong to its caller.
 */
#ifndef LBR2PROF_UTIL_JOB_H
#define LBR2PROF_UTIL_JOB_H

#include <pthread.h>
#include <stdbool.h>

#include "util/cpus.h"

typedef struct lp_job {
    void *(*fn)(void *);
    void *arg;
    bool started;               /* on its own thread */
    bool done;                  /* waited for */
    pthread_t th;
} lp_job;

static inline void lp_job_start(lp_job *j, void *(*fn)(void *), void *arg)
{
    j->fn = fn;
    j->arg = arg;
    j->done = false;
    j->started = lp_cpus() >= 2 && pthread_create(&j->th, NULL, fn, arg) == 0;
}

/* Returns once fn(arg) has run; again later: at once. */
static inline void lp_job_wait(lp_job *j)
{
    if (j->done)
        return;
    if (j->started)
        pthread_join(j->th, NULL);
    else
        j->fn(j->arg);
    j->done = true;
}

#endif
