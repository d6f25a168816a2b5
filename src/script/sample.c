/*
 * sample.c - one sample as perf 6.1's `perf script` prints it: the line
 * start, the ip field (a callchain, one line per entry, file offsets for
 * file-backed user maps, or the bare IP), the brstack field; with
 * --fp-callchain the user part of the chain comes from a frame-pointer
 * walk of the sample's user stack. Owns the sample's text; not the field
 * rules (fields.c), the walk (src/fpunwind) or process state
 * (src/machine).
 */
#include <inttypes.h>
#include <string.h>

#include "script/sc_internal.h"

#define SC_FP_BUF (2 * LP_FPU_MAX_FRAMES + 8)

/* The sym field: " NAME", or " [unknown]" (no map, no symbol). */
static void print_sym(sc_state *s, const lp_map *mp, uint64_t ip)
{
    const char *name = NULL;

    if (mp && (s->syms || (s->syms = sc_symbols_new())))
        name = sc_symbol_name(s->syms, mp, ip);
    fprintf(s->out, " %s", name ? name : "[unknown]");
}

/* One callchain frame; `mode` is the cpumode set by the last marker. */
static void print_frame(sc_state *s, const lp_sample *sm, uint64_t ip,
                        unsigned mode, unsigned f)
{
    const lp_map *mp = mode == LP_CPUMODE_HV ? NULL
                       : lp_machine_find_map(s->m, sm->pid, ip, mode);

    fprintf(s->out, "\t%16" PRIx64,
            mp && !s->o->raw_addr ? lp_map_rel_addr(mp, ip) : ip);
    if (f & SC_SYM)
        print_sym(s, mp, ip);
    fputc('\n', s->out);
}

/* A corrupt marker discards the whole chain, unless perf stops at
 * max_stack entries before reaching it. */
static bool chain_discarded(const sc_state *s, const lp_sample *sm)
{
    uint64_t i, k = 0;

    for (i = 0; i < sm->callchain_nr; i++) {
        uint64_t ip = sm->callchain[i];
        if (ip >= LP_CONTEXT_MAX && ip != LP_CONTEXT_HV &&
            ip != LP_CONTEXT_KERNEL && ip != LP_CONTEXT_USER)
            break;
        k += ip < LP_CONTEXT_MAX;
    }
    return i < sm->callchain_nr && k < s->max_stack;
}

/* thread__resolve_callchain_sample (callee order) + the printing loop. */
static void print_callchain(sc_state *s, const lp_sample *sm, unsigned f)
{
    unsigned mode = LP_CPUMODE_USER;
    uint64_t i, n = 0;

    if (chain_discarded(s, sm))
        return;
    for (i = 0; i < sm->callchain_nr && n < s->max_stack; i++) {
        uint64_t ip = sm->callchain[i];
        if (ip >= LP_CONTEXT_MAX) {
            mode = ip == LP_CONTEXT_HV       ? LP_CPUMODE_HV
                   : ip == LP_CONTEXT_KERNEL ? LP_CPUMODE_KERNEL
                                             : LP_CPUMODE_USER;
            continue;
        }
        n++;
        print_frame(s, sm, ip, mode, f);
    }
}

/* --fp-callchain: the recorded kernel part (up to the user marker), then
 * the user frames walked from the sample's stack. 1: *copy uses buf; 0: no
 * user stack (print the sample as recorded); -1: error. */
static int fp_callchain(sc_state *s, const lp_sample *sm, lp_sample *copy,
                        uint64_t *buf, lp_error *err)
{
    uint64_t user[LP_FPU_MAX_FRAMES], i;
    size_t nu, k = 0;
    int r = lp_fp_sample_user_chain(s->fps, s->m, sm, s->o->fp_mode, user,
                                    LP_FPU_MAX_FRAMES, &nu, err);

    if (r <= 0)
        return r;
    for (i = 0; sm->callchain && i < sm->callchain_nr &&
                k < SC_FP_BUF - 1 - LP_FPU_MAX_FRAMES;
         i++) {
        if (sm->callchain[i] == LP_CONTEXT_USER)
            break;
        buf[k++] = sm->callchain[i];
    }
    buf[k++] = LP_CONTEXT_USER;
    memcpy(buf + k, user, nu * sizeof *user);
    *copy = *sm;
    copy->callchain = buf;
    copy->callchain_nr = k + nu;
    return 1;
}

static char mispred_char(uint64_t fl)
{
    if (!LP_BR_MISPRED(fl) && !LP_BR_PREDICTED(fl))
        return '-';
    return LP_BR_PREDICTED(fl) ? 'P' : 'M';
}

static const char *branch_type_name(uint64_t fl)
{
    static const char *const names[] = {
        "",        "COND",     "UNCOND", "IND",       "CALL",
        "IND_CALL", "RET",     "SYSCALL", "SYSRET",   "COND_CALL",
        "COND_RET", "ERET",    "IRQ",    "SERROR",    "NO_TX",
    };
    static const char *const new_names[] = {
        "FAULT_ALGN", "FAULT_DATA", "FAULT_INST", "ARCH_1",
        "ARCH_2",     "ARCH_3",     "ARCH_4",     "ARCH_5",
    };
    unsigned t = LP_BR_TYPE(fl), nt = LP_BR_NEW_TYPE(fl);

    if (t < sizeof names / sizeof *names)
        return names[t];
    return nt < sizeof new_names / sizeof *new_names ? new_names[nt] : "";
}

static void print_brstack(sc_state *s, const lp_sample *sm)
{
    uint64_t i;

    for (i = 0; i < sm->branch_nr; i++) {
        const lp_branch_entry *b = &sm->branches[i];
        fprintf(s->out, " 0x%" PRIx64 "/0x%" PRIx64 "/%c/%c/%c/%u/%s ",
                b->from, b->to, mispred_char(b->flags),
                LP_BR_IN_TX(b->flags) ? 'X' : '-',
                LP_BR_ABORT(b->flags) ? 'A' : '-', LP_BR_CYCLES(b->flags),
                branch_type_name(b->flags));
    }
}

/* The fields of the sample's line: its type's, less ip for an LBR line of
 * perf script text that has no leading IP. */
static unsigned sample_fields(sc_state *s, const lp_sample *sm,
                              const lp_attr *a)
{
    unsigned f = a ? sc_fields_for(s, a) : s->o->fields;

    if (!(sm->sample_type & (LP_SAMPLE_IP | LP_SAMPLE_CALLCHAIN)) &&
        lp_reader_info(s->r)->format == LP_FMT_PERF_SCRIPT)
        f &= ~(unsigned)LP_SCRIPT_IP;
    return f;
}

/* The ip field and what follows it. `count`: aggregated perf script text
 * keeps llvm-profgen's count line just before the first address line. */
static void print_rest(sc_state *s, const lp_sample *sm, unsigned f,
                       bool chain, bool count, unsigned mode)
{
    if (f & LP_SCRIPT_IP) {
        fputc(chain ? '\n' : ' ', s->out);
        if (chain && count)
            fprintf(s->out, "%" PRIu64 "\n", sm->repeat);
        if (chain)
            print_callchain(s, sm, f);
        else {
            fprintf(s->out, "%16" PRIx64, sm->ip);
            if (f & SC_SYM)
                print_sym(s, lp_machine_find_map(s->m, sm->pid, sm->ip, mode),
                          sm->ip);
        }
    }
    if ((f & LP_SCRIPT_BRSTACK) && (sm->sample_type & LP_SAMPLE_BRANCH_STACK))
        print_brstack(s, sm);
    fputc('\n', s->out);
}

int sc_print_sample(sc_state *s, const lp_event *ev, lp_error *err)
{
    const lp_sample *sm = &ev->u.sample;
    const lp_file_info *info = lp_reader_info(s->r);
    const lp_attr *a = sm->attr ? sm->attr : (info->nr_attrs ? &info->attrs[0] : NULL);
    unsigned f = sample_fields(s, sm, a), mode = ev->misc & LP_MISC_CPUMODE_MASK;
    bool count = sm->repeat != 1 && info->format == LP_FMT_PERF_SCRIPT;
    bool chain = (sm->sample_type & LP_SAMPLE_CALLCHAIN) && sm->callchain;
    bool has_tid = sm->sample_type & LP_SAMPLE_TID;
    int32_t pid = has_tid ? (int32_t)sm->pid : -1, tid = has_tid ? (int32_t)sm->tid : -1;
    uint64_t fp_buf[SC_FP_BUF];
    lp_sample fp_copy;
    int r;

    /* Guest samples are filtered out (perf_guest is off by default). */
    if (mode == LP_CPUMODE_GUEST_KERNEL || mode == LP_CPUMODE_GUEST_USER)
        return 0;
    if (s->o->fp_mode && (f & LP_SCRIPT_IP)) {
        if ((r = fp_callchain(s, sm, &fp_copy, fp_buf, err)) < 0)
            return -1;
        if (r > 0) {
            sm = &fp_copy;
            chain = true;
        }
    }
    if (count && !((f & LP_SCRIPT_IP) && chain))
        fprintf(s->out, "%" PRIu64 "\n", sm->repeat);
    sc_print_start(s, f, a, lp_machine_comm(s->m, (uint32_t)pid, (uint32_t)tid),
                   (uint32_t)tid, pid, tid,
                   (sm->sample_type & LP_SAMPLE_TIME) ? sm->time : UINT64_MAX);
    print_rest(s, sm, f, chain, count, mode);
    return 0;
}
