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
    for (int i = 0; i < 20000; i++) {
        const pt_state *st = pt_decode(d);
        if (st->err == PT_ERR_NODATA)
            break;
    }
    pt_decoder_free(d);
    return 0;
}
