/*
 * phases.c - phase timings and progress callbacks of one run
 * (include/lbr2prof/phases.h): wall time from CLOCK_MONOTONIC, CPU time of
 * the whole process (every thread: the perf script parser's and the
 * reader's included) from CLOCK_PROCESS_CPUTIME_ID. Owns the clock reads
 * and the report's layout; what a phase is, and what the counts under the
 * table are, is the driver's.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "lbr2prof/phases.h"

static double clock_s(clockid_t id)
{
    struct timespec t;

    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void call(lp_phases *ph, double now)
{
    ph->last.phase = ph->cur;
    ph->last.elapsed = now - ph->start;
    ph->next = now + ph->every;
    ph->fn(ph->ctx, &ph->last);
}

void lp_phases_init(lp_phases *ph, lp_progress_fn fn, void *ctx, double every)
{
    if (!ph)
        return;
    memset(ph, 0, sizeof *ph);
    ph->start = ph->t_wall = clock_s(CLOCK_MONOTONIC);
    ph->t_cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    ph->t_own = clock_s(CLOCK_THREAD_CPUTIME_ID);
    ph->fn = fn;
    ph->ctx = ctx;
    ph->every = every > 0 ? every : 0.2;
    ph->next = ph->start + ph->every;
}

/* Charge the time since the last mark to the current phase. */
static double charge(lp_phases *ph)
{
    double w = clock_s(CLOCK_MONOTONIC), c = clock_s(CLOCK_PROCESS_CPUTIME_ID);
    double o = clock_s(CLOCK_THREAD_CPUTIME_ID);

    ph->wall[ph->cur] += w - ph->t_wall;
    ph->cpu[ph->cur] += c - ph->t_cpu;
    ph->own[ph->cur] += o - ph->t_own;
    ph->t_wall = w;
    ph->t_cpu = c;
    ph->t_own = o;
    return w;
}

void lp_phases_enter(lp_phases *ph, lp_phase p)
{
    double now;

    if (!ph || ph->ended || p < 0 || p >= LP_PHASE_COUNT || p == ph->cur)
        return;
    now = charge(ph);
    ph->cur = p;
    ph->last.done = ph->last.todo = 0;
    if (ph->fn)
        call(ph, now);
}

void lp_phases_read(lp_phases *ph, uint64_t bytes, uint64_t total_bytes,
                    uint64_t samples)
{
    double now;

    if (!ph || !ph->fn)
        return;
    ph->last.bytes = bytes;
    ph->last.total_bytes = total_bytes;
    ph->last.samples = samples;
    if ((now = clock_s(CLOCK_MONOTONIC)) >= ph->next)
        call(ph, now);
}

void lp_phases_items(lp_phases *ph, uint64_t done, uint64_t todo)
{
    double now;

    if (!ph || !ph->fn)
        return;
    ph->last.done = done;
    ph->last.todo = todo;
    if ((now = clock_s(CLOCK_MONOTONIC)) >= ph->next)
        call(ph, now);
}

void lp_phases_unwound(lp_phases *ph, uint64_t samples, uint64_t distinct,
                       uint64_t ahead)
{
    if (!ph)
        return;
    ph->unwound = samples;
    ph->distinct = distinct;
    ph->ahead = ahead;
}

void lp_phases_warmed(lp_phases *ph, uint64_t regions, uint64_t symbolized)
{
    if (!ph)
        return;
    ph->warmed = 1;
    ph->warm_regions = regions;
    ph->warm_symbolized = symbolized;
}

void lp_phases_end(lp_phases *ph)
{
    double now;

    if (!ph || ph->ended)
        return;
    now = charge(ph);
    ph->ended = 1;
    ph->last.final = 1;
    if (ph->fn)
        call(ph, now);
}

const char *lp_phase_name(lp_phase p)
{
    static const char *const names[LP_PHASE_COUNT] = {
        "start-up", "opening the binaries", "reading the trace", "unwinding",
        "generation", "pre-inlining", "post-processing", "writing",
    };

    return p >= 0 && p < LP_PHASE_COUNT ? names[p] : "?";
}

static double pct(double part, double all)
{
    return all > 0 ? 100.0 * part / all : 0;
}

void lp_phases_print(const lp_phases *ph, const char *title, FILE *f)
{
    static const char rule[] = "===-------------------------------------"
                               "------------------------------------===";
    double w = 0, c = 0, o = 0;
    int i;

    for (i = 0; i < LP_PHASE_COUNT; i++) {
        w += ph->wall[i];
        c += ph->cpu[i];
        o += ph->own[i];
    }
    fprintf(f, "%s\n%*s\n%s\n", rule, (int)(39 + strlen(title) / 2), title, rule);
    fprintf(f, "  Total Execution Time: %.4f seconds CPU (%.4f wall clock)\n\n",
            c, w);
    fprintf(f, "   ---CPU Time---   -Main Thread-   ---Wall Time---  --- Name ---\n");
    for (i = 0; i < LP_PHASE_COUNT; i++)
        if (ph->wall[i] > 0 || ph->cpu[i] > 0)
            fprintf(f, "  %8.4f (%5.1f%%)  %8.4f (%3.0f%%)  %8.4f (%5.1f%%)  %s\n",
                    ph->cpu[i], pct(ph->cpu[i], c), ph->own[i],
                    pct(ph->own[i], ph->cpu[i]), ph->wall[i], pct(ph->wall[i], w),
                    lp_phase_name((lp_phase)i));
    fprintf(f, "  %8.4f (100.0%%)  %8.4f (%3.0f%%)  %8.4f (100.0%%)  Total\n\n", c,
            o, pct(o, c), w);
    if (ph->unwound)
        fprintf(f, "  Samples unwound: %" PRIu64 " (%" PRIu64 " distinct)\n"
                "  Distinct samples recorded ahead: %" PRIu64 "\n\n",
                ph->unwound, ph->distinct, ph->ahead);
    if (ph->warmed)
        fprintf(f, "  Binary warmed while reading: %" PRIu64 " code regions "
                "decoded, %" PRIu64 " instructions symbolized\n\n",
                ph->warm_regions, ph->warm_symbolized);
}
