/*
 * ptenc.c - `record --simulate --intel-pt`: the exact branch trace of every
 * thread encoded as Intel PT packets (libipt's encoder) in AUXTRACE
 * records, as `perf record -e intel_pt//u --per-thread` would write them:
 * an AUXTRACE_INFO record first, one AUX buffer per thread (ITRACE_START
 * when it starts, AUX + AUXTRACE records as it fills and at its end).
 *
 * What is encoded (user-space tracing, return compression off, TSC on,
 * no MTC/CYC): a conditional branch is one TNT bit, an indirect jump or
 * call and every return a TIP with the target, direct jumps and calls
 * nothing; a syscall disables tracing (TIP.PGD, IP suppressed) and its
 * return enables it again (TSC, MODE.Exec, TIP.PGE at the resume address,
 * which covers sigreturn and exec); an asynchronous signal delivery is a
 * FUP at the interrupted instruction and a TIP.PGD, the handler's first
 * instruction a TIP.PGE. PSB+ (PSB, TSC, MODE.Exec, FUP when tracing,
 * PSBEND) starts every thread's trace and recurs every PSB_PERIOD bytes.
 * TSC is the simulator's clock (instructions retired by all threads), so
 * the AUXTRACE_INFO conversion is the identity (1 tick = 1 ns).
 * Does not decide when branches happen (tracer.c does).
 */
#include <intel-pt.h>
#include <stdlib.h>
#include <string.h>

#include "simulate/sim.h"

enum {
    PT_BUF = 64 * 1024,     /* bytes encoded before a thread's flush */
    PT_SLACK = 64,          /* room kept for the largest packet group */
    PSB_PERIOD = 4096,      /* bytes between PSB+ */
};

/* The AUXTRACE_INFO of the recording (perf's INTEL_PT_* private words). */
enum { PRIV_PMU_TYPE, PRIV_TIME_SHIFT, PRIV_TIME_MULT, PRIV_TIME_ZERO,
       PRIV_CAP_USER_TIME_ZERO, PRIV_TSC_BIT, PRIV_NORETCOMP_BIT,
       PRIV_HAVE_SCHED_SWITCH, PRIV_SNAPSHOT_MODE, PRIV_PER_CPU_MMAPS,
       PRIV_MTC_BIT, PRIV_MTC_FREQ_BITS, PRIV_TSC_CTC_N, PRIV_TSC_CTC_D,
       PRIV_CYC_BIT, PRIV_MAX_NONTURBO_RATIO, PRIV_FILTER_STR_LEN,
       PRIV_COUNT };

struct sim_pt_thread {
    struct pt_encoder *enc;
    uint8_t buf[PT_BUF + PT_SLACK];
    uint64_t aux_off;       /* bytes of this thread's AUX buffer written */
    uint64_t last_ip;       /* for IP compression (0 after a PSB) */
    uint64_t since_psb;     /* bytes since the last PSB */
    uint64_t tnt_bits;      /* pending TNT bits, oldest highest */
    uint8_t tnt_n;
    uint8_t on;             /* tracing enabled (PacketEn) */
    uint32_t idx;           /* AUX mmap index */
};

/* ---- packets ------------------------------------------------------------- */

static int enc(sim *s, sim_pt_thread *p, struct pt_packet *pk, lp_error *err)
{
    int n;

    pk->size = 0;
    n = pt_enc_next(p->enc, pk);
    if (n < 0)
        return lp_error_set(err, LP_EIO, "simulate: libipt encoder: %s",
                            pt_errstr(pt_errcode(n)));
    p->since_psb += (uint64_t)n;
    (void)s;
    return 0;
}

/* The smallest compression of `ip` against the last IP (perf's and the
 * SDM's rules: update 16, 32 or 48 low bits, else the sign-extended 48). */
static enum pt_ip_compression ip_compression(uint64_t last, uint64_t ip)
{
    if ((last >> 16) == (ip >> 16))
        return pt_ipc_update_16;
    if ((last >> 32) == (ip >> 32))
        return pt_ipc_update_32;
    if ((last >> 48) == (ip >> 48))
        return pt_ipc_update_48;
    return pt_ipc_sext_48;
}

static int put_ip(sim *s, sim_pt_thread *p, enum pt_packet_type type,
                  uint64_t ip, int suppressed, lp_error *err)
{
    struct pt_packet pk;

    memset(&pk, 0, sizeof pk);
    pk.type = type;
    if (suppressed) {
        pk.payload.ip.ipc = pt_ipc_suppressed;
    } else {
        pk.payload.ip.ipc = ip_compression(p->last_ip, ip);
        pk.payload.ip.ip = ip;
        p->last_ip = ip;
    }
    return enc(s, p, &pk, err);
}

static int flush_tnt(sim *s, sim_pt_thread *p, lp_error *err)
{
    struct pt_packet pk;

    if (!p->tnt_n)
        return 0;
    memset(&pk, 0, sizeof pk);
    pk.type = ppt_tnt_8;
    pk.payload.tnt.bit_size = p->tnt_n;
    pk.payload.tnt.payload = p->tnt_bits;
    p->tnt_n = 0;
    p->tnt_bits = 0;
    return enc(s, p, &pk, err);
}

static int put_simple(sim *s, sim_pt_thread *p, enum pt_packet_type type,
                      lp_error *err)
{
    struct pt_packet pk;

    memset(&pk, 0, sizeof pk);
    pk.type = type;
    if (type == ppt_tsc)
        pk.payload.tsc.tsc = s->time & 0xffffffffffffffull;
    if (type == ppt_mode) {
        pk.payload.mode.leaf = pt_mol_exec;
        pk.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
    }
    return enc(s, p, &pk, err);
}

/* PSB+ ; `ip` is where execution is (a FUP when tracing is on). */
static int psb_plus(sim *s, sim_pt_thread *p, uint64_t ip, lp_error *err)
{
    p->last_ip = 0;
    if (put_simple(s, p, ppt_psb, err) || put_simple(s, p, ppt_tsc, err) ||
        put_simple(s, p, ppt_mode, err))
        return -1;
    if (p->on && put_ip(s, p, ppt_fup, ip, 0, err))
        return -1;
    if (put_simple(s, p, ppt_psbend, err))
        return -1;
    p->since_psb = 0;
    return 0;
}

/* ---- AUX buffer ------------------------------------------------------------ */

static int flush_buf(sim *s, thread_state *t, lp_error *err)
{
    sim_pt_thread *p = t->pt;
    lp_perfwrite_aux_buf a;
    uint64_t n, padded;
    int rc;

    rc = pt_enc_get_offset(p->enc, &n);
    if (rc < 0)
        return lp_error_set(err, LP_EIO, "simulate: libipt encoder: %s",
                            pt_errstr(pt_errcode(rc)));
    if (n == 0)
        return 0;
    padded = (n + 7) & ~7ull;
    memset(&a, 0, sizeof a);
    a.offset = p->aux_off;
    a.reference = s->time;
    a.idx = p->idx;
    a.tid = (uint32_t)t->tid;
    a.cpu = UINT32_MAX;
    if (lp_perfwrite_aux(s->pw, p->aux_off, padded, 0, (uint32_t)t->pid,
                         (uint32_t)t->tid, s->time, err) ||
        lp_perfwrite_auxtrace(s->pw, p->buf, n, &a, err))
        return -1;
    p->aux_off += padded;
    /* the padding decodes as PAD packets: they count towards the PSB period */
    p->since_psb += padded - n;
    rc = pt_enc_sync_set(p->enc, 0);
    return rc < 0 ? lp_error_set(err, LP_EIO, "simulate: libipt: %s",
                                 pt_errstr(pt_errcode(rc)))
                  : 0;
}

/* Room for the next packet group: flush the buffer when it is nearly full. */
static int room(sim *s, thread_state *t, lp_error *err)
{
    uint64_t n = 0;

    if (pt_enc_get_offset(t->pt->enc, &n) < 0 || n < PT_BUF)
        return 0;
    return flush_buf(s, t, err);
}

/* ---- the recording ------------------------------------------------------- */

void sim_pt_attr(lp_attr *a)
{
    memset(a, 0, sizeof *a);
    a->type = SIM_PT_PMU_TYPE;
    a->config = SIM_PT_CONFIG;
    a->sample_period = 1;
    a->sample_type = LP_SAMPLE_IP | LP_SAMPLE_TID | LP_SAMPLE_TIME |
                     LP_SAMPLE_IDENTIFIER;
    a->flags = LP_ATTR_DISABLED | LP_ATTR_INHERIT | LP_ATTR_EXCLUDE_KERNEL |
               LP_ATTR_EXCLUDE_HV | LP_ATTR_MMAP | LP_ATTR_COMM |
               LP_ATTR_ENABLE_ON_EXEC | LP_ATTR_TASK | LP_ATTR_SAMPLE_ID_ALL |
               LP_ATTR_MMAP2 | LP_ATTR_COMM_EXEC;
}

int sim_pt_begin(sim *s, lp_error *err)
{
    uint64_t priv[PRIV_COUNT] = {0};

    priv[PRIV_PMU_TYPE] = SIM_PT_PMU_TYPE;
    priv[PRIV_TIME_SHIFT] = 0;
    priv[PRIV_TIME_MULT] = 1;          /* 1 TSC tick = 1 ns */
    priv[PRIV_TIME_ZERO] = 0;
    priv[PRIV_CAP_USER_TIME_ZERO] = 1;
    priv[PRIV_TSC_BIT] = SIM_PT_TSC_BIT;
    priv[PRIV_NORETCOMP_BIT] = SIM_PT_NORETCOMP_BIT;
    priv[PRIV_MTC_BIT] = 1u << 9;
    priv[PRIV_MTC_FREQ_BITS] = 0xfu << 14;
    priv[PRIV_CYC_BIT] = 1u << 1;
    return lp_perfwrite_auxtrace_info(s->pw, 1 /* PERF_AUXTRACE_INTEL_PT */,
                                      priv, PRIV_COUNT, err);
}

static int thread_new_pt(sim *s, thread_state *t, lp_error *err)
{
    struct pt_config cfg;
    sim_pt_thread *p = calloc(1, sizeof *p);

    if (!p)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    pt_config_init(&cfg);
    cfg.begin = p->buf;
    cfg.end = p->buf + sizeof p->buf;
    if (!(p->enc = pt_alloc_encoder(&cfg))) {
        free(p);
        return lp_error_set(err, LP_ENOMEM, "simulate: libipt encoder: out "
                            "of memory");
    }
    p->idx = s->pt_next_idx++;
    p->since_psb = PSB_PERIOD; /* a PSB+ starts the trace */
    t->pt = p;
    return lp_perfwrite_itrace_start(s->pw, (uint32_t)t->pid,
                                     (uint32_t)t->tid, s->time, err);
}

int sim_pt_enable(sim *s, thread_state *t, uint64_t ip, lp_error *err)
{
    sim_pt_thread *p;

    if (!t->pt && thread_new_pt(s, t, err))
        return -1;
    p = t->pt;
    if (p->on)
        return 0;
    if (room(s, t, err))
        return -1;
    if (p->since_psb >= PSB_PERIOD && psb_plus(s, p, ip, err))
        return -1;
    if (put_simple(s, p, ppt_tsc, err) || put_simple(s, p, ppt_mode, err) ||
        put_ip(s, p, ppt_tip_pge, ip, 0, err))
        return -1;
    p->on = 1;
    return 0;
}

int sim_pt_disable(sim *s, thread_state *t, uint64_t fup_ip, lp_error *err)
{
    sim_pt_thread *p = t->pt;

    if (!p || !p->on)
        return 0;
    if (room(s, t, err) || flush_tnt(s, p, err))
        return -1;
    if (fup_ip && put_ip(s, p, ppt_fup, fup_ip, 0, err))
        return -1;
    p->on = 0;
    return put_ip(s, p, ppt_tip_pgd, 0, 1, err);
}

int sim_pt_cti(sim *s, thread_state *t, const cti *c, int taken, uint64_t to,
               lp_error *err)
{
    sim_pt_thread *p = t->pt;

    if (!p || !p->on)
        return 0;
    if (room(s, t, err))
        return -1;
    if (p->since_psb >= PSB_PERIOD &&
        (flush_tnt(s, p, err) || psb_plus(s, p, c->addr, err)))
        return -1;
    switch (c->kind) {
    case CTI_JCC:
        p->tnt_bits = (p->tnt_bits << 1) | (taken ? 1 : 0);
        if (++p->tnt_n == 6)
            return flush_tnt(s, p, err);
        return 0;
    case CTI_JMP:
    case CTI_CALL:
        return 0;
    case CTI_JMP_IND:
    case CTI_CALL_IND:
    case CTI_RET:
        return flush_tnt(s, p, err) || put_ip(s, p, ppt_tip, to, 0, err);
    default: /* a single-stepped instruction that went elsewhere */
        if (!taken)
            return 0;
        return flush_tnt(s, p, err) || put_ip(s, p, ppt_tip, to, 0, err);
    }
}

int sim_pt_thread_end(sim *s, thread_state *t, lp_error *err)
{
    sim_pt_thread *p = t->pt;
    int rc;

    if (!p)
        return 0;
    rc = sim_pt_disable(s, t, 0, err);
    if (rc == 0)
        rc = flush_tnt(s, p, err);
    if (rc == 0)
        rc = flush_buf(s, t, err);
    sim_pt_thread_free(t);
    return rc;
}

void sim_pt_thread_free(thread_state *t)
{
    if (!t->pt)
        return;
    pt_free_encoder(t->pt->enc);
    free(t->pt);
    t->pt = NULL;
}
