/*
 * truth.c - the exact ground truth of a `record --simulate` run, written
 * as JSON (format in docs/record.md): per sample the true call stack (from
 * the emulated calls and returns) next to the frame-pointer chain, per
 * instruction its execution count, per (from, to) its taken count.
 * Version 2 adds per sample the LBR with the true stack in force at each
 * branch and the table of those stacks (nodes of stack.c). Samples are
 * streamed to a temporary file during the run and copied into the output
 * (atomically, lp_outfile) at the end.
 */
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/outfile.h"
#include "simulate/sim.h"

int sim_truth_begin(sim *s, lp_error *err)
{
    if (!s->opts->truth_path)
        return 0;
    if (lp_outfile_open(&s->truth_out, s->opts->truth_path, err))
        return -1;
    s->truth = tmpfile();
    s->truth_maps = tmpfile();
    if (!s->truth || !s->truth_maps)
        return lp_error_set(err, LP_EIO, "%s: cannot create a temporary file",
                            s->opts->truth_path);
    s->truth_first = 1;
    if (sim_stack_init(&s->stacks))
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    return 0;
}

/* One executable mapping ("start-end pgoff path", as procmaps keys it),
 * at the time it was reported. */
void sim_truth_map(sim *s, const char *key)
{
    unsigned long long start, end, pgoff;
    int pos = 0;
    const char *p;

    if (!s->truth_maps ||
        sscanf(key, "%llx-%llx %llx %n", &start, &end, &pgoff, &pos) < 3)
        return;
    fprintf(s->truth_maps, "%s\n  {\"time\": %llu, \"pid\": %d, \"start\": \"0x%llx\", "
            "\"end\": \"0x%llx\", \"pgoff\": \"0x%llx\", \"path\": \"",
            ftell(s->truth_maps) ? "," : "", (unsigned long long)s->time,
            (int)s->scan_pid, start, end, pgoff);
    for (p = key + pos; *p; p++) {
        if (*p == '"' || *p == '\\')
            fputc('\\', s->truth_maps);
        if ((unsigned char)*p >= 0x20)
            fputc(*p, s->truth_maps);
    }
    fputs("\"}", s->truth_maps);
}

/* "lbr": [[from, to, node], ...] most recent first, as in the sample's
 * BRANCH_STACK; "lbr_cut": indices whose straight-line run was entered
 * asynchronously (only when there are some). */
static void write_lbr(sim *s, const thread_state *t)
{
    unsigned i, k;
    int any = 0;

    fprintf(s->truth, ", \"node\": %u, \"lbr\": [", t->node);
    sim_stack_mark(&s->stacks, t->node);
    for (i = 0; i < t->ring_n; i++) {
        k = (t->ring_head + LP_LBR_DEPTH - 1 - i) % LP_LBR_DEPTH;
        fprintf(s->truth, "%s[\"0x%llx\", \"0x%llx\", %u]", i ? ", " : "",
                (unsigned long long)t->ring[k].from,
                (unsigned long long)t->ring[k].to, t->ring_node[k]);
        sim_stack_mark(&s->stacks, t->ring_node[k]);
    }
    fputc(']', s->truth);
    for (i = 0; i < t->ring_n; i++) {
        k = (t->ring_head + LP_LBR_DEPTH - 1 - i) % LP_LBR_DEPTH;
        if (!t->ring_cut[k])
            continue;
        fprintf(s->truth, "%s%u", any ? ", " : ", \"lbr_cut\": [", i);
        any = 1;
    }
    if (any)
        fputc(']', s->truth);
}

int sim_truth_sample(sim *s, const thread_state *t, uint64_t ip,
                     const lp_sample *smp)
{
    uint32_t n;
    uint64_t k;
    int first = 1;

    fprintf(s->truth, "%s\n  {\"time\": %llu, \"tid\": %d, \"pid\": %d, "
            "\"period\": %llu, \"stack\": [\"0x%llx\"", s->truth_first ? "" : ",",
            (unsigned long long)smp->time, (int)t->tid, (int)t->pid,
            (unsigned long long)smp->period, (unsigned long long)ip);
    for (n = t->node; n != 0; n = s->stacks.parent[n])
        fprintf(s->truth, ", \"0x%llx\"", (unsigned long long)s->stacks.ret[n]);
    fprintf(s->truth, "], \"fp_chain\": [");
    for (k = 0; k < smp->callchain_nr; k++) {
        if (smp->callchain[k] >= LP_CONTEXT_MAX)
            continue;
        fprintf(s->truth, "%s\"0x%llx\"", first ? "" : ", ",
                (unsigned long long)smp->callchain[k]);
        first = 0;
    }
    fputc(']', s->truth);
    write_lbr(s, t);
    fputc('}', s->truth);
    s->truth_first = 0;
    return ferror(s->truth) ? -1 : 0;
}

/* Add a block's runs to the per-instruction counts (at the end, or before
 * the block is forgotten). */
void sim_count_block(sim *s, block *b)
{
    uint32_t i;
    icount *ic;

    if (!s->opts->truth_path || !b->exec_count)
        return;
    for (i = 0; i < b->ninsn; i++) {
        uint64_t a = b->insn_addr[i];
        HASH_FIND(hh, s->icounts, &a, sizeof a, ic);
        if (!ic) {
            if (!(ic = calloc(1, sizeof *ic)))
                continue; /* out of memory: the count is lost, not wrong */
            ic->addr = a;
            HASH_ADD(hh, s->icounts, addr, sizeof ic->addr, ic);
        }
        ic->count += b->exec_count;
    }
    b->exec_count = 0;
}

static int by_addr(const icount *a, const icount *b)
{
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int by_edge(const edge *a, const edge *b)
{
    if (a->key.from != b->key.from)
        return a->key.from < b->key.from ? -1 : 1;
    return a->key.to < b->key.to ? -1 : a->key.to > b->key.to;
}

/* [id, parent, "0xRET"] for every stack a sample refers to (and their
 * ancestors), by id: a parent always comes before its children. */
static void write_nodes(const sim *s, FILE *f)
{
    const stack_store *st = &s->stacks;
    uint32_t i;
    int first = 1;

    for (i = 1; i < st->n; i++) {
        if (!st->marked[i])
            continue;
        fprintf(f, "%s\n  [%u, %u, \"0x%llx\"]", first ? "" : ",", i,
                st->parent[i], (unsigned long long)st->ret[i]);
        first = 0;
    }
}

static void write_counts(sim *s, FILE *f)
{
    block *b, *bt;
    icount *ic;
    edge *e;
    int first = 1;

    HASH_ITER(hh, s->blocks, b, bt)
        sim_count_block(s, b);
    HASH_SORT(s->icounts, by_addr);
    HASH_SORT(s->edges, by_edge);
    fprintf(f, "\n ],\n \"insn_counts\": [");
    for (ic = s->icounts; ic; ic = ic->hh.next, first = 0)
        fprintf(f, "%s\n  [\"0x%llx\", %llu]", first ? "" : ",",
                (unsigned long long)ic->addr, (unsigned long long)ic->count);
    fprintf(f, "\n ],\n \"branch_counts\": [");
    first = 1;
    for (e = s->edges; e; e = e->hh.next, first = 0)
        fprintf(f, "%s\n  [\"0x%llx\", \"0x%llx\", %llu]", first ? "" : ",",
                (unsigned long long)e->key.from, (unsigned long long)e->key.to,
                (unsigned long long)e->count);
    fprintf(f, "\n ],\n \"stack_nodes\": [");
    write_nodes(s, f);
    fprintf(f, "\n ]\n}\n");
}

void sim_truth_abort(sim *s)
{
    if (s->truth_out.fp || s->truth_out.tmp)
        lp_outfile_abort(&s->truth_out);
}

int sim_truth_finish(sim *s, lp_error *err)
{
    lp_outfile *o = &s->truth_out;
    char buf[65536];
    size_t n;

    if (!s->truth)
        return 0;
    fprintf(o->fp, "{\n \"format\": \"lbr2prof-truth\", \"version\": 2,\n"
            " \"instructions\": %llu, \"taken_branches\": %llu,\n"
            " \"lbr_depth\": %d, \"period\": %llu, \"seed\": %llu,\n"
            " \"samples\": [", (unsigned long long)s->st->instructions,
            (unsigned long long)s->st->taken_branches, LP_LBR_DEPTH,
            (unsigned long long)s->opts->period,
            (unsigned long long)s->opts->seed);
    rewind(s->truth);
    while ((n = fread(buf, 1, sizeof buf, s->truth)) > 0)
        fwrite(buf, 1, n, o->fp);
    fprintf(o->fp, "\n ],\n \"mappings\": [");
    rewind(s->truth_maps);
    while ((n = fread(buf, 1, sizeof buf, s->truth_maps)) > 0)
        fwrite(buf, 1, n, o->fp);
    write_counts(s, o->fp);
    return lp_outfile_commit(o, err);
}
