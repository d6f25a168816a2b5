/*
 * kernelize.c - test helper: turns a `record --simulate` recording of a
 * user program into a recording of kernel code, for --kernel tests (perf
 * cannot record a kernel here). The program's "kernel part" (one object,
 * runtime range [LO, HI)) is also linked alone at a kernel address (the
 * test's vmlinux): every address in [LO, HI) - sampled IPs, callchain
 * entries, branch ends - moves by SHIFT into it; a sample whose IP moved
 * is a kernel sample (misc cpumode kernel) and its callchain becomes
 * perf's kernel one: PERF_CONTEXT_KERNEL and the kernel frames, then
 * PERF_CONTEXT_USER and the user frames. The file starts with the
 * kernel's own mmap as perf writes it (PERF_RECORD_MMAP, pid -1, pgoff =
 * start, "[kernel.kallsyms]_text") at [KSTART, KSTART + KLEN), then a
 * kernel module's mmap just above (which --kernel must not take for the
 * image). Everything else is copied. Uses the project's reader and
 * perf.data writer (liblbr2prof.a).
 *
 *   kernelize LO HI SHIFT KSTART KLEN OUT IN      (numbers in hex)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/perfwrite.h"
#include "lbr2prof/reader.h"

#define MAXCHAIN 1024
#define MAXBR 64

typedef struct kz {
    uint64_t lo, hi, shift;
} kz;

static int die(const lp_error *e)
{
    fprintf(stderr, "kernelize: %s\n", e->msg);
    return 1;
}

static int in_part(const kz *k, uint64_t a) { return a >= k->lo && a < k->hi; }
static uint64_t move(const kz *k, uint64_t a) { return in_part(k, a) ? a + k->shift : a; }

/* PERF_RECORD_MMAP (pid -1, kernel cpumode) with the TID/TIME trailer. */
static int kernel_mmap(lp_perfwrite *w, uint64_t start, uint64_t len, const char *name,
                       lp_error *e)
{
    uint8_t rec[256] = {0};
    size_t n = (strlen(name) + 8) & ~(size_t)7, size = 8 + 8 + 24 + n + 16;
    uint32_t u32;
    uint16_t u16;
    uint64_t pgoff = start;

    u32 = 1;                    /* PERF_RECORD_MMAP */
    memcpy(rec, &u32, 4);
    u16 = 1;                    /* PERF_RECORD_MISC_KERNEL */
    memcpy(rec + 4, &u16, 2);
    u16 = (uint16_t)size;
    memcpy(rec + 6, &u16, 2);
    u32 = (uint32_t)-1;
    memcpy(rec + 8, &u32, 4);   /* pid -1, tid 0 */
    memcpy(rec + 16, &start, 8);
    memcpy(rec + 24, &len, 8);
    memcpy(rec + 32, &pgoff, 8);
    memcpy(rec + 40, name, strlen(name));
    memcpy(rec + 40 + n, &u32, 4); /* trailer: pid -1, tid 0, time 0 */
    return lp_perfwrite_raw(w, rec, size, e);
}

/* The sample with its kernel part moved; 1 if its IP is kernel code. */
static int move_sample(const kz *k, const lp_sample *in, lp_sample *out, uint64_t *chain,
                       lp_branch_entry *br)
{
    size_t i, j = 0, u;
    int kern = in_part(k, in->ip);

    *out = *in;
    out->ip = move(k, in->ip);
    for (i = 0; i < in->branch_nr && i < MAXBR; i++) {
        br[i] = in->branches[i];
        br[i].from = move(k, br[i].from);
        br[i].to = move(k, br[i].to);
    }
    out->branch_nr = i;
    out->branches = br;
    if (!kern || !in->callchain_nr || in->callchain_nr > MAXCHAIN - 2)
        return kern;
    /* [USER, frames...] -> [KERNEL, kernel frames, USER, user frames] */
    u = in->callchain[0] == LP_CONTEXT_USER ? 1 : 0;
    chain[j++] = LP_CONTEXT_KERNEL;
    for (i = u; i < in->callchain_nr && in_part(k, in->callchain[i]); i++)
        chain[j++] = move(k, in->callchain[i]);
    if (i < in->callchain_nr)
        chain[j++] = LP_CONTEXT_USER;
    for (; i < in->callchain_nr; i++)
        chain[j++] = in->callchain[i];
    out->callchain = chain;
    out->callchain_nr = j;
    return 1;
}

static int copy(lp_perfwrite *w, const kz *k, const lp_event *ev, lp_error *e)
{
    static uint64_t chain[MAXCHAIN];
    static lp_branch_entry br[MAXBR];
    lp_sample s;
    int kern;

    switch (ev->kind) {
    case LP_EV_SAMPLE:
        kern = move_sample(k, &ev->u.sample, &s, chain, br);
        return lp_perfwrite_sample(w, &s, (uint16_t)((ev->misc & ~7u) | (kern ? 1 : 2)), e);
    case LP_EV_MMAP: return lp_perfwrite_mmap2(w, &ev->u.mmap, ev->time, e);
    case LP_EV_COMM: return lp_perfwrite_comm(w, &ev->u.comm, ev->time, e);
    case LP_EV_FORK: return lp_perfwrite_fork(w, &ev->u.task, e);
    case LP_EV_EXIT: return lp_perfwrite_exit(w, &ev->u.task, e);
    case LP_EV_FINISHED_ROUND: return lp_perfwrite_finished_round(w, e);
    default: return 0;
    }
}

int main(int argc, char **argv)
{
    kz k;
    uint64_t kstart, klen;
    lp_perfwrite_opts wo;
    lp_perfwrite *w;
    lp_reader *r;
    const lp_event *ev;
    lp_error e = {0};
    int rc;

    if (argc != 8) {
        fprintf(stderr, "usage: kernelize LO HI SHIFT KSTART KLEN OUT IN\n");
        return 2;
    }
    k.lo = strtoull(argv[1], NULL, 16);
    k.hi = strtoull(argv[2], NULL, 16);
    k.shift = strtoull(argv[3], NULL, 16);
    kstart = strtoull(argv[4], NULL, 16);
    klen = strtoull(argv[5], NULL, 16);
    if (!(r = lp_reader_open(argv[7], NULL, &e)))
        return die(&e);
    memset(&wo, 0, sizeof wo);
    wo.attr = lp_reader_info(r)->attrs[0];
    wo.attr.flags &= ~LP_ATTR_EXCLUDE_KERNEL;
    wo.attr.branch_sample_type |= 2; /* PERF_SAMPLE_BRANCH_KERNEL */
    wo.event_name = "br_inst_retired.near_taken";
    if (!(w = lp_perfwrite_open(argv[6], &wo, &e)))
        return die(&e);
    if (kernel_mmap(w, kstart, klen, "[kernel.kallsyms]_text", &e) < 0 ||
        kernel_mmap(w, kstart + klen + 0x1000000, 0x4000,
                    "/lib/modules/6.1.0/kernel/drivers/test/kmod.ko", &e) < 0)
        return die(&e);
    while ((rc = lp_reader_next(r, &ev, &e)) == 1)
        if (copy(w, &k, ev, &e) < 0)
            return die(&e);
    if (rc < 0)
        return die(&e);
    lp_reader_close(r);
    if (lp_perfwrite_close(w, &e) < 0)
        return die(&e);
    return 0;
}
