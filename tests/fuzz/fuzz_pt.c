/*
 * fuzz_pt.c - libFuzzer target for the Intel PT decoder path (src/pt):
 * the --itrace parser on a short prefix, then the packet walk over the
 * rest. Input: [1 option byte][1 length byte n][n bytes of --itrace text]
 * [512 bytes of code][trace]. The code is "mapped" everywhere: an IP
 * reads code[ip % 512] on, so any IP the trace names decodes something
 * (real x86 from a seed keeps the walk going). The option byte picks the
 * period (instructions or ticks), return compression and branch enable.
 * Every state is drawn until "no more data" or 20,000 states (walks of at most 256 instructions: a bound of the harness, where any IP is code). Any crash,
 * sanitizer report, hang or leak is a bug; decode errors are expected.
 * Each state also goes to the thread stacks (pt_stack.c: `l` ring and `g`
 * call stack, sizes from the parsed options, three threads taking turns,
 * the trace number changing now and then), which give a callchain and a
 * branch stack every 16 states.
 * Seeds: the first KiB of code of a binary and the AUX data of
 * `record --simulate --intel-pt` recordings (docs/pt.md).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pt/pt_internal.h"

#define CODE 512

typedef struct code_ctx {
    const uint8_t *code;
} code_ctx;

static long read_code(void *ctx, uint64_t ip, uint8_t *buf)
{
    const code_ctx *c = ctx;

    for (int i = 0; i < 16; i++)
        buf[i] = c->code[(ip + (uint64_t)i) % CODE];
    return 16;
}

/* A straight line ends after 256 instructions' worth of bytes: as an
 * unreadable map (any IP is code here, so it could run forever). */
static int walk(void *ctx, ptw_insn *in, uint64_t *cnt, uint64_t *ip,
                uint64_t to_ip, uint64_t max)
{
    int rc;

    *cnt = 0;
    if (to_ip && *ip == to_ip)
        return 0;
    rc = pt_walk_straight(read_code, ctx, in, cnt, ip, to_ip, max, *ip + 256 * 4);
    return rc == 1 ? -EINVAL : rc;
}

/* Draw the states, feeding each branch to the thread stacks as the
 * synthesizer does. */
static void stacks_run(pt_decoder *d, const lp_itrace *it, uint8_t opt)
{
    unsigned br_sz = it->last_branch && it->last_branch_sz <= 1024 ? it->last_branch_sz : 8;
    unsigned cc_sz = it->callchain && it->callchain_sz <= 1024 ? it->callchain_sz : 16;
    pt_stacks *s = pt_stacks_new(br_sz, !(opt & 0x80));
    lp_branch_entry br[1024];
    uint64_t chain[1025];
    int trace_nr = 1;

    for (int i = 0; s && i < 20000; i++) {
        const pt_state *st = pt_decode(d);
        int32_t tid = i % 3, cpu = i % 5 - 1;
        pt_branch b;
        if (st->err == PT_ERR_NODATA)
            break;
        if (st->err) {
            trace_nr += (opt >> 6) & 1; /* some errors start another trace */
            continue;
        }
        if (i % 16 == 0) {
            const pt_tstack *t = pt_stacks_find(s, 0, tid, cpu);
            (void)pt_stack_callchain(t, st->from_ip, chain, cc_sz + 1);
            (void)pt_stack_branches(s, t, br);
        }
        if (!(st->type & ST_BRANCH))
            continue;
        b.flags = pt_branch_flags(st, &b.insn_len);
        b.from = st->from_ip;
        b.to = st->to_ip;
        b.trace_nr = trace_nr;
        if (pt_stack_event(s, 0, tid, cpu, &b) < 0)
            break;
    }
    pt_stacks_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char opts[64];
    lp_itrace it;
    lp_error err;
    code_ctx c;
    pt_params p;
    pt_decoder *d;
    size_t n;

    if (size < 2)
        return 0;
    n = data[1] < sizeof opts - 1 ? data[1] : sizeof opts - 1;
    if (size < 2 + n + CODE)
        return 0;
    memcpy(opts, data + 2, n);
    opts[n] = 0;
    (void)lp_itrace_parse(opts, &it, &err);
    c.code = data + 2 + n;
    memset(&p, 0, sizeof p);
    p.buf = data + 2 + n + CODE;
    p.len = size - 2 - n - CODE;
    p.ref_timestamp = data[0] & 1 ? 0x123456789ull : 0;
    p.return_compression = (data[0] >> 1) & 1;
    p.branch_enable = !((data[0] >> 2) & 1);
    p.period_type = (data[0] >> 3) & 1 ? PERIOD_TICKS : PERIOD_INSTRUCTIONS;
    p.period = (uint64_t)(data[0] >> 4) + 1;
    p.mtc_shift = 3;
    p.tsc_ctc_n = 100;
    p.tsc_ctc_d = 2;
    p.max_non_turbo_ratio = 12;
    p.walk = walk;
    p.ctx = &c;
    if (!(d = pt_decoder_new(&p)))
        return 0;
    stacks_run(d, &it, data[0]);
    pt_decoder_free(d);
    return 0;
}
