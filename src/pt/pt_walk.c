/*
 * pt_walk.c - the walk over one queue's Intel PT packets: libipt's packet
 * decoder gives the packets; what is done with them follows perf 6.1's
 * intel-pt-decoder.c (read to understand, written anew): the packet
 * states (no PSB, no IP, resync after an error, in sync, TNT, TIP, FUP),
 * walking the code between packets, the return stack, resynchronisation
 * at the next IP packet after an error (not at the next PSB, as libipt's
 * flow decoders do), timestamps from TSC, TMA and MTC with perf's
 * estimates, and the instruction period (instructions, or TSC ticks
 * estimated as one per instruction since the last timestamp).
 * Not supported (perf's quick/hop modes, VM time correlation, PEBS, CFE):
 * packets libipt 2.0 does not know are bad packets, as in older perf.
 * Does not know about files or samples (pt_insn.c, pt_synth.c).
 */
#include <errno.h>
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "pt/pt_internal.h"
#include "util/grow.h"

#define BIT63 (1ull << 63)
#define RETURN 1          /* walk_insn: a sample-worthy stop */
#define MAX_LOOPS 100000

enum pkt_state { S_NO_PSB, S_NO_IP, S_ERR_RESYNC, S_IN_SYNC, S_TNT_CONT,
                 S_TNT, S_TIP, S_TIP_PGD, S_FUP, S_FUP_NO_TIP, S_FUP_IN_PSB };

/* The return stack: return addresses of calls walked, for compressed RETs. */
typedef struct ret_stack {
    uint64_t *ip;
    size_t n, cap;
} ret_stack;

struct pt_decoder {
    pt_params p;
    struct pt_packet_decoder *pkt;
    uint64_t pos, next_pos;     /* offsets of the current and next packet */
    pt_pkt packet, tnt;
    int last_packet_type;
    enum pkt_state pkt_state;
    pt_state state;
    ret_stack stack;
    bool pge, have_tma, have_last_ip, in_psb, overflow, continuous_period;
    bool set_fup_tx_flags, set_fup_ptw, set_fup_mwait, set_fup_pwre;
    bool set_fup_exstop, mtc_insn;
    unsigned fup_tx_flags, tx_flags;
    uint64_t last_ip, ip, psb_ip, ret_addr;
    uint64_t timestamp, tsc_timestamp, ref_timestamp, sample_timestamp;
    uint64_t ctc_timestamp, ctc_delta, timestamp_insn_cnt, sample_insn_cnt;
    uint32_t last_mtc, tsc_ctc_mult, ctc_rem_mask;
    bool fixup_last_mtc;
    unsigned cbr, cbr_seen;
    uint64_t tot_insn_cnt, period_insn_cnt, period_mask, period_ticks;
    uint64_t last_masked_timestamp;
    int no_progress, stuck_ip_prd, stuck_ip_cnt;
    uint64_t stuck_ip;
};

static uint64_t multdiv(uint64_t t, uint32_t n, uint32_t d)
{
    return d ? (t / d) * n + ((t % d) * n) / d : 0;
}

pt_decoder *pt_decoder_new(const pt_params *p)
{
    struct pt_config cfg;
    pt_decoder *d = calloc(1, sizeof *d);

    if (!d)
        return NULL;
    d->p = *p;
    pt_config_init(&cfg);
    cfg.begin = (uint8_t *)(uintptr_t)p->buf;
    cfg.end = (uint8_t *)(uintptr_t)p->buf + p->len;
    if (p->len && !(d->pkt = pt_pkt_alloc_decoder(&cfg))) {
        free(d);
        return NULL;
    }
    if (p->period_type == PERIOD_TICKS && p->period) {
        uint64_t x = p->period, pw = 1;
        while (x >>= 1)
            pw <<= 1;
        d->period_mask = ~(pw - 1);
        d->period_ticks = pw;
    }
    d->ctc_rem_mask = (1u << p->mtc_shift) - 1;
    if (!p->tsc_ctc_n)
        d->p.tsc_ctc_d = 0;
    if (d->p.tsc_ctc_d && !(p->tsc_ctc_n % d->p.tsc_ctc_d))
        d->tsc_ctc_mult = p->tsc_ctc_n / d->p.tsc_ctc_d;
    d->ref_timestamp = p->ref_timestamp;
    d->pkt_state = S_NO_PSB;
    return d;
}

void *pt_decoder_ctx(const pt_decoder *d)
{
    return d->p.ctx;
}

void pt_decoder_free(pt_decoder *d)
{
    if (!d)
        return;
    if (d->pkt)
        pt_pkt_free_decoder(d->pkt);
    free(d->stack.ip);
    free(d);
}

/* ---- return stack -------------------------------------------------------- */

static int push(ret_stack *s, uint64_t ip)
{
    if (lp_grow_array(&s->ip, &s->cap, s->n + 1, sizeof *s->ip, 64))
        return -ENOMEM;
    s->ip[s->n++] = ip;
    return 0;
}

static uint64_t pop(ret_stack *s)
{
    return s->n ? s->ip[--s->n] : 0;
}

/* ---- packets --------------------------------------------------------------- */

static void convert_ip(const struct pt_packet_ip *ip, pt_pkt *out)
{
    out->count = (int)ip->ipc;
    out->payload = ip->ip;
}

/* libipt's packet as perf's packet decoder would give it. */
static void convert(const struct pt_packet *in, pt_pkt *out)
{
    memset(out, 0, sizeof *out);
    switch (in->type) {
    case ppt_pad: out->type = K_PAD; break;
    case ppt_psb: out->type = K_PSB; break;
    case ppt_psbend: out->type = K_PSBEND; break;
    case ppt_fup: out->type = K_FUP; convert_ip(&in->payload.ip, out); break;
    case ppt_tip: out->type = K_TIP; convert_ip(&in->payload.ip, out); break;
    case ppt_tip_pge: out->type = K_TIP_PGE; convert_ip(&in->payload.ip, out); break;
    case ppt_tip_pgd: out->type = K_TIP_PGD; convert_ip(&in->payload.ip, out); break;
    case ppt_tnt_8:
    case ppt_tnt_64:
        out->type = K_TNT;
        out->count = in->payload.tnt.bit_size;
        out->payload = out->count ? in->payload.tnt.payload << (64 - out->count) : 0;
        break;
    case ppt_mode:
        if (in->payload.mode.leaf == pt_mol_exec) {
            out->type = K_MODE_EXEC;
            out->payload = pt_get_exec_mode(&in->payload.mode.bits.exec);
        } else {
            out->type = K_MODE_TSX;
            out->payload = (in->payload.mode.bits.tsx.intx ? SF_IN_TX : 0) |
                           (in->payload.mode.bits.tsx.abrt ? SF_ABORT_TX : 0);
        }
        break;
    case ppt_pip: out->type = K_PIP; out->payload = in->payload.pip.cr3; break;
    case ppt_vmcs: out->type = K_VMCS; break;
    case ppt_cbr: out->type = K_CBR; out->payload = in->payload.cbr.ratio; break;
    case ppt_tsc: out->type = K_TSC; out->payload = in->payload.tsc.tsc; break;
    case ppt_tma:
        out->type = K_TMA;
        out->payload = in->payload.tma.ctc;
        out->count = in->payload.tma.fc;
        break;
    case ppt_mtc: out->type = K_MTC; out->payload = in->payload.mtc.ctc; break;
    case ppt_cyc: out->type = K_CYC; out->payload = in->payload.cyc.value; break;
    case ppt_stop: out->type = K_TRACESTOP; break;
    case ppt_ovf: out->type = K_OVF; break;
    case ppt_mnt: out->type = K_MNT; break;
    case ppt_exstop:
        out->type = in->payload.exstop.ip ? K_EXSTOP_IP : K_EXSTOP;
        break;
    case ppt_mwait: out->type = K_MWAIT; out->payload = in->payload.mwait.hints; break;
    case ppt_pwre: out->type = K_PWRE; break;
    case ppt_pwrx: out->type = K_PWRX; break;
    case ppt_ptw:
        out->type = in->payload.ptw.ip ? K_PTWRITE_IP : K_PTWRITE;
        out->payload = in->payload.ptw.payload;
        break;
    default: out->type = K_BAD; break;
    }
}

/* perf's intel_pt_bad_packet: one byte is stepped over. */
static int bad_packet(pt_decoder *d)
{
    d->tx_flags = 0;
    d->have_tma = false;
    d->next_pos = d->pos + 1; /* the state stays (INTEL_PT_STATE_ERR1) */
    return -EBADMSG;
}

static int get_next_packet(pt_decoder *d)
{
    struct pt_packet pk;
    int rc;

    d->last_packet_type = d->packet.type;
    do {
        d->pos = d->next_pos;
        if (!d->pkt || d->pos >= d->p.len)
            return -ENODATA;
        if (pt_pkt_sync_set(d->pkt, d->pos) < 0)
            return -ENODATA;
        rc = pt_pkt_next(d->pkt, &pk, sizeof pk);
        if (rc <= 0) {
            d->packet.type = K_BAD;
            return bad_packet(d);
        }
        convert(&pk, &d->packet);
        if (d->packet.type == K_BAD)
            return bad_packet(d);
        d->next_pos = d->pos + (uint64_t)rc;
    } while (d->packet.type == K_PAD);
    return 0;
}

/* ---- IPs -------------------------------------------------------------------- */

static uint64_t calc_ip(const pt_pkt *p, uint64_t last)
{
    uint64_t ip;

    switch (p->count) {
    case 1: return (last & 0xffffffffffff0000ull) | p->payload;
    case 2: return (last & 0xffffffff00000000ull) | p->payload;
    case 3:
        ip = p->payload;
        if (ip & 0x800000000000ull)
            ip |= 0xffff000000000000ull;
        return ip;
    case 4: return (last & 0xffff000000000000ull) | p->payload;
    case 6: return p->payload;
    default: return 0;
    }
}

static void set_last_ip(pt_decoder *d)
{
    d->last_ip = calc_ip(&d->packet, d->last_ip);
    d->have_last_ip = true;
}

static void set_ip(pt_decoder *d)
{
    set_last_ip(d);
    d->ip = d->last_ip;
}

static bool have_ip(const pt_decoder *d)
{
    return d->packet.count && (d->have_last_ip || d->packet.count == 3 ||
                               d->packet.count == 6);
}

/* ---- timestamps ------------------------------------------------------------ */

static void update_sample_time(pt_decoder *d)
{
    d->sample_timestamp = d->timestamp;
    d->sample_insn_cnt = d->timestamp_insn_cnt;
}

static uint64_t tsc_8b(uint64_t ts, uint64_t ref)
{
    ts |= ref & (0xffull << 56);
    if (ts < ref) {
        if (ref - ts > (1ull << 55))
            ts += 1ull << 56;
    } else if (ts - ref > (1ull << 55)) {
        ts -= 1ull << 56;
    }
    return ts;
}

static void calc_tsc_timestamp(pt_decoder *d)
{
    uint64_t ts;

    d->have_tma = false;
    if (d->ref_timestamp) {
        ts = tsc_8b(d->packet.payload, d->ref_timestamp);
        d->tsc_timestamp = d->timestamp = ts;
        d->ref_timestamp = 0;
        d->timestamp_insn_cnt = 0;
    } else if (d->timestamp) {
        ts = d->packet.payload | (d->timestamp & (0xffull << 56));
        d->tsc_timestamp = ts;
        if (ts < d->timestamp && d->timestamp - ts < 0x10000)
            ts = d->timestamp; /* a TSC slipping past MTCs */
        if (ts < d->timestamp) {
            ts += 1ull << 56; /* wraparound (no buffer reference check) */
            d->tsc_timestamp = ts;
        }
        d->timestamp = ts;
        d->timestamp_insn_cnt = 0;
    }
}

static void calc_tma(pt_decoder *d)
{
    uint32_t ctc = (uint32_t)d->packet.payload, fc = (uint32_t)d->packet.count;
    uint32_t rem = ctc & d->ctc_rem_mask;

    if (!d->p.tsc_ctc_d)
        return;
    d->last_mtc = (ctc >> d->p.mtc_shift) & 0xff;
    d->ctc_timestamp = d->tsc_timestamp - fc;
    if (d->tsc_ctc_mult)
        d->ctc_timestamp -= (uint64_t)rem * d->tsc_ctc_mult;
    else
        d->ctc_timestamp -= multdiv(rem, d->p.tsc_ctc_n, d->p.tsc_ctc_d);
    d->ctc_delta = 0;
    d->have_tma = true;
    d->fixup_last_mtc = true;
}

static void fixup_last_mtc(uint32_t mtc, unsigned shift, uint32_t *last)
{
    uint32_t first_missing = 1u << (16 - shift), mask = ~(first_missing - 1);

    *last |= mtc & mask;
    if (*last >= mtc) {
        *last -= first_missing;
        *last &= 0xff;
    }
}

static void calc_mtc_timestamp(pt_decoder *d)
{
    uint32_t mtc, delta;
    uint64_t ts;

    if (!d->have_tma)
        return;
    mtc = (uint32_t)d->packet.payload;
    if (d->p.mtc_shift > 8 && d->fixup_last_mtc) {
        d->fixup_last_mtc = false;
        fixup_last_mtc(mtc, d->p.mtc_shift, &d->last_mtc);
    }
    delta = mtc > d->last_mtc ? mtc - d->last_mtc : mtc + 256 - d->last_mtc;
    d->ctc_delta += (uint64_t)delta << d->p.mtc_shift;
    if (d->tsc_ctc_mult)
        ts = d->ctc_timestamp + d->ctc_delta * d->tsc_ctc_mult;
    else
        ts = d->ctc_timestamp + multdiv(d->ctc_delta, d->p.tsc_ctc_n,
                                        d->p.tsc_ctc_d);
    if (ts >= d->timestamp)
        d->timestamp = ts;
    d->timestamp_insn_cnt = 0;
    d->last_mtc = mtc;
}

static void calc_cbr(pt_decoder *d)
{
    d->cbr = (unsigned)(d->packet.payload & 0xff);
}

/* ---- instruction periods ------------------------------------------------ */

static uint64_t next_period(pt_decoder *d)
{
    uint64_t ts = d->timestamp + d->timestamp_insn_cnt, masked;

    masked = ts & d->period_mask;
    if (d->continuous_period) {
        if (masked > d->last_masked_timestamp)
            return 1;
    } else {
        ts += 1;
        masked = ts & d->period_mask;
        if (masked > d->last_masked_timestamp) {
            d->last_masked_timestamp = masked;
            d->continuous_period = true;
        }
    }
    if (masked < d->last_masked_timestamp)
        return d->period_ticks;
    return d->period_ticks - (ts - masked);
}

static uint64_t next_sample(pt_decoder *d)
{
    switch (d->p.period_type) {
    case PERIOD_INSTRUCTIONS: return d->p.period - d->period_insn_cnt;
    case PERIOD_TICKS: return next_period(d);
    default: return 0;
    }
}

static void sample_insn(pt_decoder *d)
{
    uint64_t ts, masked;

    if (d->p.period_type == PERIOD_INSTRUCTIONS) {
        d->period_insn_cnt = 0;
    } else if (d->p.period_type == PERIOD_TICKS) {
        ts = d->timestamp + d->timestamp_insn_cnt;
        masked = ts & d->period_mask;
        if (masked > d->last_masked_timestamp)
            d->last_masked_timestamp = masked;
        else
            d->last_masked_timestamp += d->period_ticks;
    }
    d->state.type |= ST_INSTRUCTION;
}

/* ---- walking code ----------------------------------------------------------- */

static void count_insns(pt_decoder *d, uint64_t n)
{
    d->tot_insn_cnt += n;
    d->timestamp_insn_cnt += n;
    d->sample_insn_cnt += n;
    d->period_insn_cnt += n;
}

/* An unconditional branch: detect a never-ending loop (perf's stuck ip). */
static int uncond_progress(pt_decoder *d)
{
    int cnt = d->no_progress++;

    if (!cnt)
        return RETURN;
    if (cnt == 1) {
        d->stuck_ip = d->state.to_ip;
        d->stuck_ip_prd = 1;
        d->stuck_ip_cnt = 1;
    } else if (cnt > MAX_LOOPS || d->state.to_ip == d->stuck_ip) {
        d->pkt_state = S_ERR_RESYNC;
        return -ELOOP;
    } else if (!--d->stuck_ip_cnt) {
        d->stuck_ip_prd += 1;
        d->stuck_ip_cnt = d->stuck_ip_prd;
        d->stuck_ip = d->state.to_ip;
    }
    return RETURN;
}

static int walk_insn(pt_decoder *d, ptw_insn *in, uint64_t ip)
{
    uint64_t max = next_sample(d), cnt = 0;
    int err;

    d->mtc_insn = true;
    memset(in, 0, sizeof *in);
    err = d->p.walk(d->p.ctx, in, &cnt, &d->ip, ip, max);
    count_insns(d, cnt);
    if (err) {
        d->no_progress = 0;
        d->pkt_state = S_NO_IP; /* INTEL_PT_STATE_ERR2 */
        return err == -ENOENT ? -ENOLINK : -EILSEQ;
    }
    if (ip && d->ip == ip) {
        err = -EAGAIN;
        goto out;
    }
    if (max && cnt >= max)
        sample_insn(d);
    if (in->branch == BR_NONE) {
        d->state.type = ST_INSTRUCTION;
        d->state.from_ip = d->ip;
        d->state.to_ip = 0;
        d->ip += in->length;
        err = RETURN;
        goto out;
    }
    if (in->op == OP_CALL) {
        if (in->branch != BR_UNCONDITIONAL || in->rel) {
            if ((err = push(&d->stack, d->ip + in->length)))
                goto out;
        }
    } else if (in->op == OP_RET) {
        d->ret_addr = pop(&d->stack);
    }
    if (in->branch == BR_UNCONDITIONAL) {
        d->state.from_ip = d->ip;
        d->ip += in->length + (int64_t)in->rel;
        d->state.to_ip = d->ip;
        err = uncond_progress(d);
        goto out_no_progress;
    }
out:
    d->no_progress = 0;
out_no_progress:
    d->state.insn_op = in->op;
    d->state.insn_len = in->length;
    if (d->tx_flags & SF_IN_TX)
        d->state.flags |= SF_IN_TX;
    return err;
}

/* ---- FUP events --------------------------------------------------------------- */

/* A pending FUP event of kind `type`: taken into the state, once. */
static bool take_fup(pt_decoder *d, bool *flag, int type)
{
    if (!*flag)
        return false;
    *flag = false;
    d->state.type |= type;
    return true;
}

static bool fup_event(pt_decoder *d)
{
    int type = d->state.type;
    bool ret = false;

    d->state.type &= ~ST_BRANCH;
    if (d->set_fup_tx_flags) {
        d->set_fup_tx_flags = false;
        d->tx_flags = d->fup_tx_flags;
        d->state.type |= ST_TRANSACTION;
        if (d->fup_tx_flags & SF_ABORT_TX)
            d->state.type |= ST_BRANCH;
        d->state.flags = (int)d->fup_tx_flags;
        ret = true;
    }
    ret |= take_fup(d, &d->set_fup_ptw, ST_PTW);
    ret |= take_fup(d, &d->set_fup_mwait, ST_MWAIT);
    ret |= take_fup(d, &d->set_fup_pwre, ST_PWRE);
    ret |= take_fup(d, &d->set_fup_exstop, ST_EXSTOP);
    if (d->overflow) {
        d->overflow = false;
        if (!ret && !d->pge) {
            d->pge = true;
            d->state.type |= ST_BRANCH | ST_TRACE_BEGIN;
            d->state.from_ip = 0;
            d->state.to_ip = d->ip;
            return true;
        }
    }
    if (ret) {
        d->state.from_ip = d->ip;
        d->state.to_ip = 0;
    } else {
        d->state.type = type;
    }
    return ret;
}

static void clear_fup_event(pt_decoder *d)
{
    d->set_fup_tx_flags = d->set_fup_ptw = d->set_fup_mwait = false;
    d->set_fup_pwre = d->set_fup_exstop = false;
}

static int walk_fup(pt_decoder *d)
{
    ptw_insn in;
    uint64_t ip = d->last_ip;
    int err;

    for (;;) {
        err = walk_insn(d, &in, ip);
        if (err == RETURN)
            return 0;
        if (err == -EAGAIN) {
            bool no_tip = d->pkt_state != S_FUP;
            d->pkt_state = S_IN_SYNC;
            if (fup_event(d) && no_tip)
                return 0;
            return -EAGAIN;
        }
        d->set_fup_tx_flags = false;
        if (err)
            return err;
        if (in.branch == BR_INDIRECT || in.branch == BR_CONDITIONAL) {
            d->pkt_state = S_ERR_RESYNC;
            return -ENOENT;
        }
        d->pkt_state = S_NO_PSB; /* intel_pt_bug */
        return -ENOSYS;
    }
}

static void tip_target(pt_decoder *d)
{
    d->state.from_ip = d->ip;
    if (d->packet.count == 0) {
        d->state.to_ip = 0;
    } else {
        d->state.to_ip = d->last_ip;
        d->ip = d->last_ip;
    }
}

static int walk_tip(pt_decoder *d)
{
    ptw_insn in;
    int err = walk_insn(d, &in, 0);

    if (err == RETURN)
        return 0;
    if (err)
        return err;
    if (in.branch == BR_INDIRECT) {
        if (d->pkt_state == S_TIP_PGD) {
            d->pge = false;
            d->continuous_period = false;
            d->state.type |= ST_TRACE_END;
        }
        d->pkt_state = S_IN_SYNC;
        tip_target(d);
        return 0;
    }
    if (in.branch == BR_CONDITIONAL) {
        d->pkt_state = S_ERR_RESYNC;
        return -ENOENT;
    }
    d->pkt_state = S_NO_PSB;
    return -ENOSYS;
}

static void tnt_step(pt_decoder *d)
{
    d->tnt.count -= 1;
    d->pkt_state = d->tnt.count ? S_TNT_CONT : S_IN_SYNC;
}

static int walk_tnt_indirect(pt_decoder *d)
{
    int err = get_next_packet(d);

    if (err)
        return err;
    if (d->packet.type != K_TIP || d->packet.count == 0) {
        d->pkt_state = S_ERR_RESYNC; /* INTEL_PT_STATE_ERR3 */
        d->next_pos = d->pos;        /* pkt_step = 0 */
        return -ENOENT;
    }
    set_last_ip(d);
    d->state.from_ip = d->ip;
    d->state.to_ip = d->last_ip;
    d->ip = d->last_ip;
    return 0;
}

static int walk_tnt(pt_decoder *d)
{
    ptw_insn in;
    int err;

    for (;;) {
        err = walk_insn(d, &in, 0);
        if (err == RETURN)
            return 0;
        if (err)
            return err;
        if (in.op == OP_RET) {
            if (!d->p.return_compression || !d->ret_addr ||
                !(d->tnt.payload & BIT63)) {
                d->pkt_state = S_ERR_RESYNC;
                return -ENOENT;
            }
            tnt_step(d);
            d->tnt.payload <<= 1;
            d->state.from_ip = d->ip;
            d->ip = d->ret_addr;
            d->state.to_ip = d->ip;
            return 0;
        }
        if (in.branch == BR_INDIRECT)
            return walk_tnt_indirect(d);
        if (in.branch != BR_CONDITIONAL) {
            d->pkt_state = S_NO_PSB;
            return -ENOSYS;
        }
        tnt_step(d);
        if (d->tnt.payload & BIT63) {
            d->tnt.payload <<= 1;
            d->state.from_ip = d->ip;
            d->ip += in.length + (int64_t)in.rel;
            d->state.to_ip = d->ip;
            return 0;
        }
        if (d->state.type & ST_INSTRUCTION) { /* sample at a not-taken jcc */
            d->tnt.payload <<= 1;
            d->state.type = ST_INSTRUCTION;
            d->state.from_ip = d->ip;
            d->state.to_ip = 0;
            d->ip += in.length;
            return 0;
        }
        d->ip += in.length;
        if (!d->tnt.count) {
            update_sample_time(d);
            return -EAGAIN;
        }
        d->tnt.payload <<= 1;
    }
}

static int overflow(pt_decoder *d)
{
    d->tx_flags = 0;
    d->timestamp_insn_cnt = 0;
    d->pkt_state = S_IN_SYNC;
    d->state.from_ip = d->ip;
    d->ip = 0;
    d->pge = false;
    clear_fup_event(d);
    d->overflow = true;
    return -EOVERFLOW;
}

/* The packets that only update the timing and TSX state: the same in
 * PSB+, while syncing and while looking for an IP. */
static bool state_packet(pt_decoder *d)
{
    switch (d->packet.type) {
    case K_TSC: calc_tsc_timestamp(d); return true;
    case K_TMA: calc_tma(d); return true;
    case K_MTC: calc_mtc_timestamp(d); return true;
    case K_CBR: calc_cbr(d); return true;
    case K_MODE_TSX: d->tx_flags = (unsigned)d->packet.payload & SF_IN_TX; return true;
    default: return false;
    }
}

/* PSB+ when in sync (perf's intel_pt_walk_psbend). */
static int walk_psbend(pt_decoder *d)
{
    int err;

    d->in_psb = true;
    for (;;) {
        if ((err = get_next_packet(d)))
            break;
        if (state_packet(d))
            continue;
        switch (d->packet.type) {
        case K_PSBEND: err = 0; goto out;
        case K_TIP_PGD: case K_TIP_PGE: case K_TIP: case K_TNT:
        case K_TRACESTOP: case K_BAD: case K_PSB: case K_PTWRITE:
        case K_PTWRITE_IP: case K_EXSTOP: case K_EXSTOP_IP: case K_MWAIT:
        case K_PWRE: case K_PWRX:
            d->have_tma = false;
            err = -EAGAIN;
            goto out;
        case K_OVF: err = overflow(d); goto out;
        case K_FUP:
            d->pge = true;
            if (d->packet.count) {
                set_last_ip(d);
                d->psb_ip = d->last_ip;
            }
            break;
        default: break;
        }
    }
out:
    d->in_psb = false;
    return err;
}

static int walk_fup_tip(pt_decoder *d)
{
    int err;

    if (d->tx_flags & SF_ABORT_TX) {
        d->tx_flags = 0;
        d->state.flags &= ~SF_IN_TX;
        d->state.flags |= SF_ABORT_TX;
    } else {
        d->state.flags |= SF_ASYNC;
    }
    for (;;) {
        if ((err = get_next_packet(d)))
            return err;
        switch (d->packet.type) {
        case K_TNT: case K_FUP: case K_TRACESTOP: case K_PSB: case K_TSC:
        case K_TMA: case K_MODE_TSX: case K_BAD: case K_PSBEND:
        case K_PTWRITE: case K_PTWRITE_IP: case K_EXSTOP: case K_EXSTOP_IP:
        case K_MWAIT: case K_PWRE: case K_PWRX:
            d->pkt_state = S_ERR_RESYNC;
            d->next_pos = d->pos;
            return -ENOENT;
        case K_CBR: calc_cbr(d); break;
        case K_OVF: return overflow(d);
        case K_TIP_PGD:
            d->state.from_ip = d->ip;
            if (d->packet.count == 0) {
                d->state.to_ip = 0;
            } else {
                set_ip(d);
                d->state.to_ip = d->ip;
            }
            d->pge = false;
            d->continuous_period = false;
            d->state.type |= ST_TRACE_END;
            return 0;
        case K_TIP_PGE:
            d->pge = true;
            d->state.from_ip = 0;
            if (d->packet.count == 0) {
                d->state.to_ip = 0;
            } else {
                set_ip(d);
                d->state.to_ip = d->ip;
            }
            d->state.type |= ST_TRACE_BEGIN;
            return 0;
        case K_TIP:
            d->state.from_ip = d->ip;
            if (d->packet.count == 0) {
                d->state.to_ip = 0;
            } else {
                set_ip(d);
                d->state.to_ip = d->ip;
            }
            return 0;
        case K_MTC: calc_mtc_timestamp(d); break;
        default: break;
        }
    }
}

/* ---- PSB ------------------------------------------------------------------- */

/* perf's intel_pt_psb_lookahead_cb: a FUP in this PSB+ not followed by a
 * TIP.PGE (within 6 packets after PSBEND). */
static bool psb_fup_lookahead(pt_decoder *d, pt_pkt *fup)
{
    uint64_t pos = d->next_pos;
    struct pt_packet pk;
    pt_pkt p;
    bool found = false;
    int after = 0, rc;

    while (pos < d->p.len) {
        if (pt_pkt_sync_set(d->pkt, pos) < 0 ||
            (rc = pt_pkt_next(d->pkt, &pk, sizeof pk)) <= 0)
            break;
        pos += (uint64_t)rc;
        convert(&pk, &p);
        switch (p.type) {
        case K_PAD: continue;
        case K_MNT: case K_TSC: case K_TMA: case K_MODE_EXEC: case K_MODE_TSX:
        case K_MTC: case K_CYC: case K_VMCS: case K_CBR: case K_PIP:
        case K_PTWRITE: case K_PTWRITE_IP: case K_EXSTOP: case K_EXSTOP_IP:
        case K_MWAIT: case K_PWRE: case K_PWRX:
            if (after && !--after)
                return found;
            if (!after && p.type >= K_PTWRITE)
                return found;
            continue;
        case K_FUP:
            if (after || found || !p.count)
                return found;
            *fup = p;
            found = true;
            continue;
        case K_PSBEND:
            if (!found)
                return false;
            after = 6;
            continue;
        case K_TIP_PGE:
            return after ? false : found;
        default:
            return found;
        }
    }
    return found;
}

static int do_psb(pt_decoder *d)
{
    int err;

    d->last_ip = 0;
    d->psb_ip = 0;
    d->have_last_ip = true;
    d->stack.n = 0;
    if ((err = walk_psbend(d)))
        return err;
    d->state.type = ST_PSB_EVT;
    d->state.from_ip = d->psb_ip;
    d->state.to_ip = 0;
    return 0;
}

static int fup_in_psb(pt_decoder *d)
{
    int err;

    if (d->ip != d->last_ip) {
        err = walk_fup(d);
        if (!err || err != -EAGAIN)
            return err;
    }
    d->pkt_state = S_IN_SYNC;
    if (do_psb(d)) {
        d->pkt_state = S_ERR_RESYNC;
        return -ENOENT;
    }
    return 0;
}

static bool psb_with_fup(pt_decoder *d, int *err)
{
    pt_pkt fup;

    if (!d->p.branch_enable || !psb_fup_lookahead(d, &fup))
        return false;
    d->packet = fup;
    set_last_ip(d);
    d->pkt_state = S_FUP_IN_PSB;
    *err = fup_in_psb(d);
    return true;
}

/* ---- walking the trace --------------------------------------------------- */

static int trace_fup(pt_decoder *d, bool *no_tip)
{
    int err;

    if (d->packet.count == 0) {
        *no_tip = false;
        return 1;
    }
    set_last_ip(d);
    if (!d->p.branch_enable || !d->pge) {
        d->ip = d->last_ip;
        if (fup_event(d))
            return 0;
        *no_tip = false;
        return 1;
    }
    if (d->set_fup_mwait)
        *no_tip = true;
    d->pkt_state = *no_tip ? S_FUP_NO_TIP : S_FUP;
    err = walk_fup(d);
    if (err != -EAGAIN)
        return err;
    if (*no_tip) {
        *no_tip = false;
        return 1;
    }
    return walk_fup_tip(d);
}

/* A packet that may be followed by its FUP: 1 with no_tip set if so. */
static int expect_fup(pt_decoder *d, bool *flag, bool *no_tip)
{
    int err = get_next_packet(d);

    if (err)
        return err;
    if (d->packet.type == K_FUP) {
        *flag = true;
        *no_tip = true;
    }
    return 0;
}

static int walk_trace(pt_decoder *d)
{
    bool no_tip = false, next = false;
    int err;

    for (;;) {
        if (!next && (err = get_next_packet(d)))
            return err;
        next = false;
        switch (d->packet.type) {
        case K_TNT:
            if (!d->packet.count)
                break;
            d->tnt = d->packet;
            d->pkt_state = S_TNT;
            err = walk_tnt(d);
            if (err == -EAGAIN)
                break;
            return err;
        case K_TIP_PGD:
            if (d->packet.count)
                set_last_ip(d);
            d->pkt_state = S_TIP_PGD;
            return walk_tip(d);
        case K_TIP_PGE:
            d->pge = true;
            d->overflow = false;
            if (d->packet.count == 0)
                break;
            set_ip(d);
            d->state.from_ip = 0;
            d->state.to_ip = d->ip;
            d->state.type |= ST_TRACE_BEGIN;
            return 0;
        case K_OVF:
            return overflow(d);
        case K_TIP:
            if (d->packet.count)
                set_last_ip(d);
            d->pkt_state = S_TIP;
            return walk_tip(d);
        case K_FUP:
            err = trace_fup(d, &no_tip);
            if (err == 1)
                break;
            return err;
        case K_TRACESTOP:
            d->pge = false;
            d->continuous_period = false;
            d->tx_flags = 0;
            d->have_tma = false;
            break;
        case K_PSB:
            d->psb_ip = 0;
            if (psb_with_fup(d, &err))
                return err;
            err = do_psb(d);
            if (err == -EAGAIN) {
                next = true;
                break;
            }
            return err;
        case K_MTC: calc_mtc_timestamp(d); break;
        case K_TSC: calc_tsc_timestamp(d); break;
        case K_TMA: calc_tma(d); break;
        case K_CBR:
            calc_cbr(d);
            if (d->cbr != d->cbr_seen) {
                d->state.type = 0;
                return 0;
            }
            break;
        case K_MODE_EXEC:
            if ((err = expect_fup(d, &(bool){false}, &no_tip)))
                return err;
            next = true;
            break;
        case K_MODE_TSX:
            if (!d->pge || d->in_psb) {
                d->tx_flags = (unsigned)d->packet.payload & SF_IN_TX;
                break;
            }
            d->fup_tx_flags = (unsigned)d->packet.payload;
            if ((err = get_next_packet(d)))
                return err;
            if (d->packet.type == K_FUP) {
                d->set_fup_tx_flags = true;
                if (!(d->fup_tx_flags & SF_ABORT_TX))
                    no_tip = true;
            } else {
                d->tx_flags = d->fup_tx_flags & SF_IN_TX;
            }
            next = true;
            break;
        case K_PTWRITE_IP:
            if ((err = expect_fup(d, &d->set_fup_ptw, &no_tip)))
                return err;
            next = true;
            break;
        case K_PTWRITE:
            d->state.type = ST_PTW;
            d->state.from_ip = d->ip;
            d->state.to_ip = 0;
            return 0;
        case K_MWAIT:
            d->set_fup_mwait = true;
            break;
        case K_PWRE:
            if (d->set_fup_mwait) {
                d->set_fup_pwre = true;
                break;
            }
            d->state.type = ST_PWRE;
            d->state.from_ip = d->ip;
            d->state.to_ip = 0;
            return 0;
        case K_EXSTOP_IP:
            if ((err = expect_fup(d, &d->set_fup_exstop, &no_tip)))
                return err;
            next = true;
            break;
        case K_EXSTOP:
        case K_PWRX:
            d->state.type = d->packet.type == K_EXSTOP ? ST_EXSTOP : ST_PWRX;
            d->state.from_ip = d->ip;
            d->state.to_ip = 0;
            return 0;
        case K_BAD:
            d->pkt_state = S_NO_PSB;
            return -ENOSYS;
        default: /* PIP, PSBEND, VMCS, MNT, PAD, CYC */
            break;
        }
    }
}

/* PSB+ to get in sync (perf's intel_pt_walk_psb). */
static int walk_psb(pt_decoder *d)
{
    int err;

    d->in_psb = true;
    for (;;) {
        if ((err = get_next_packet(d)))
            break;
        if (state_packet(d))
            continue;
        switch (d->packet.type) {
        case K_TIP_PGD:
            d->continuous_period = false;
            /* fall through */
        case K_TIP_PGE: case K_TIP: case K_PTWRITE: case K_PTWRITE_IP:
        case K_EXSTOP: case K_EXSTOP_IP: case K_MWAIT: case K_PWRE:
        case K_PWRX:
            err = -ENOENT;
            goto out;
        case K_FUP:
            d->pge = true;
            if (have_ip(d)) {
                set_ip(d);
                d->psb_ip = d->ip;
            }
            break;
        case K_TRACESTOP:
            d->pge = false;
            d->continuous_period = false;
            d->tx_flags = 0;
            /* fall through */
        case K_TNT:
            d->have_tma = false;
            d->pkt_state = d->ip ? S_IN_SYNC : S_ERR_RESYNC;
            err = -ENOENT;
            goto out;
        case K_BAD:
            d->pkt_state = S_NO_PSB;
            err = -ENOSYS;
            goto out;
        case K_OVF: err = overflow(d); goto out;
        case K_PSBEND: err = 0; goto out;
        default: break;
        }
    }
out:
    d->in_psb = false;
    return err;
}

static int walk_to_ip(pt_decoder *d)
{
    int err;

    for (;;) {
        if ((err = get_next_packet(d)))
            return err;
        if (state_packet(d))
            continue;
        switch (d->packet.type) {
        case K_TIP_PGD:
            d->continuous_period = false;
            d->pge = false;
            if (have_ip(d))
                set_ip(d);
            if (!d->ip)
                break;
            d->state.type |= ST_TRACE_END;
            return 0;
        case K_TIP_PGE:
            d->pge = true;
            if (have_ip(d))
                set_ip(d);
            if (!d->ip)
                break;
            d->state.type |= ST_TRACE_BEGIN;
            return 0;
        case K_TIP:
            d->pge = true;
            /* fall through */
        case K_FUP:
            if (have_ip(d))
                set_ip(d);
            if (d->ip)
                return 0;
            break;
        case K_OVF: return overflow(d);
        case K_BAD: d->pkt_state = S_NO_PSB; return -ENOSYS;
        case K_TRACESTOP:
            d->pge = false;
            d->continuous_period = false;
            d->tx_flags = 0;
            d->have_tma = false;
            break;
        case K_PSB:
            d->psb_ip = 0;
            d->last_ip = 0;
            d->have_last_ip = true;
            d->stack.n = 0;
            if ((err = walk_psb(d)))
                return err;
            d->state.type = ST_PSB_EVT;
            d->state.from_ip = d->psb_ip;
            d->state.to_ip = 0;
            return 0;
        default: break;
        }
    }
}

static int sync_ip(pt_decoder *d)
{
    int err;

    clear_fup_event(d);
    d->overflow = false;
    if (!d->p.branch_enable) {
        d->pkt_state = S_IN_SYNC;
        d->state.type = 0;
        return 0;
    }
    err = walk_to_ip(d);
    if (err || ((d->state.type & ST_PSB_EVT) && !d->ip))
        return err;
    d->pkt_state = S_IN_SYNC;
    d->state.from_ip = 0;
    d->state.to_ip = d->ip;
    return 0;
}

/* Scan for the next PSB (perf's intel_pt_scan_for_psb, in one buffer). */
static int scan_for_psb(pt_decoder *d)
{
    static const uint8_t psb[16] = {0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                    0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
                                    0x02, 0x82, 0x02, 0x82};
    const uint8_t *p;

    if (d->next_pos >= d->p.len)
        return -ENODATA;
    p = memmem(d->p.buf + d->next_pos, d->p.len - d->next_pos, psb, sizeof psb);
    if (!p) {
        d->next_pos = d->p.len;
        return -ENODATA;
    }
    d->next_pos = (uint64_t)(p - d->p.buf);
    return get_next_packet(d);
}

static int do_sync(pt_decoder *d)
{
    int err;

    d->pge = false;
    d->continuous_period = false;
    d->have_last_ip = false;
    d->last_ip = 0;
    d->psb_ip = 0;
    d->ip = 0;
    d->stack.n = 0;
    if ((err = scan_for_psb(d)))
        return err;
    d->have_last_ip = true;
    d->pkt_state = S_IN_SYNC;
    if ((err = walk_psb(d)))
        return err;
    d->state.type = ST_PSB_EVT;
    d->state.from_ip = d->psb_ip;
    d->state.to_ip = 0;
    return 0;
}

static bool sample_time_state(enum pkt_state s)
{
    return s == S_NO_PSB || s == S_NO_IP || s == S_ERR_RESYNC ||
           s == S_IN_SYNC || s == S_TNT_CONT;
}

static int ext_err(int code)
{
    switch (code) {
    case -ENOMEM: return PT_ERR_NOMEM;
    case -ENOSYS: return PT_ERR_INTERN;
    case -EBADMSG: return PT_ERR_BADPKT;
    case -ENODATA: return PT_ERR_NODATA;
    case -EILSEQ: return PT_ERR_NOINSN;
    case -ENOENT: return PT_ERR_MISMAT;
    case -EOVERFLOW: return PT_ERR_OVR;
    case -ENOSPC: return PT_ERR_LOST;
    case -ELOOP: return PT_ERR_NELOOP;
    default: return PT_ERR_UNK;
    }
}

static int step(pt_decoder *d)
{
    int err;

    switch (d->pkt_state) {
    case S_NO_PSB:
        return do_sync(d);
    case S_NO_IP:
        d->have_last_ip = false;
        d->last_ip = 0;
        d->ip = 0;
        /* fall through */
    case S_ERR_RESYNC:
        return sync_ip(d);
    case S_IN_SYNC:
        return walk_trace(d);
    case S_TNT:
    case S_TNT_CONT:
        err = walk_tnt(d);
        return err == -EAGAIN ? walk_trace(d) : err;
    case S_TIP:
    case S_TIP_PGD:
        return walk_tip(d);
    case S_FUP:
        err = walk_fup(d);
        return err == -EAGAIN ? walk_fup_tip(d) : err;
    case S_FUP_NO_TIP:
        err = walk_fup(d);
        return err == -EAGAIN ? walk_trace(d) : err;
    case S_FUP_IN_PSB:
        return fup_in_psb(d);
    default:
        d->pkt_state = S_NO_PSB;
        return -ENOSYS;
    }
}

static uint64_t est_timestamp(const pt_decoder *d)
{
    uint64_t est = d->sample_insn_cnt << 1;

    if (d->cbr && d->p.max_non_turbo_ratio) {
        est *= d->p.max_non_turbo_ratio;
        est /= d->cbr;
    }
    return d->sample_timestamp + est;
}

const pt_state *pt_decode(pt_decoder *d)
{
    int err;

    do {
        d->state.type = ST_BRANCH;
        d->state.flags = 0;
        err = step(d);
    } while (err == -ENOLINK);
    if (err) {
        d->state.err = ext_err(err);
        if (err != -EOVERFLOW)
            d->state.from_ip = d->ip;
        update_sample_time(d);
    } else {
        d->state.err = 0;
        if (d->cbr != d->cbr_seen) {
            d->cbr_seen = d->cbr;
            if (!d->state.type) {
                d->state.from_ip = d->ip;
                d->state.to_ip = 0;
            }
            d->state.type |= ST_CBR_CHG;
        }
        if (sample_time_state(d->pkt_state))
            update_sample_time(d);
    }
    if ((d->state.type & ST_PSB_EVT) && d->tsc_timestamp)
        d->sample_timestamp = d->tsc_timestamp;
    d->state.timestamp = d->sample_timestamp;
    d->state.est_timestamp = est_timestamp(d);
    d->state.tot_insn_cnt = d->tot_insn_cnt;
    return &d->state;
}

const char *pt_err_msg(int code)
{
    static const char *const msgs[PT_ERR_MAX] = {
        [PT_ERR_NOMEM] = "Memory allocation failed",
        [PT_ERR_INTERN] = "Internal error",
        [PT_ERR_BADPKT] = "Bad packet",
        [PT_ERR_NODATA] = "No more data",
        [PT_ERR_NOINSN] = "Failed to get instruction",
        [PT_ERR_MISMAT] = "Trace doesn't match instruction",
        [PT_ERR_OVR] = "Overflow packet",
        [PT_ERR_LOST] = "Lost trace data",
        [PT_ERR_UNK] = "Unknown error!",
        [PT_ERR_NELOOP] = "Never-ending loop (refer perf config intel-pt.max-loops)",
    };
    if (code < 1 || code >= PT_ERR_MAX)
        code = PT_ERR_UNK;
    return msgs[code];
}
