/*
 * sc_internal.h - what the files of src/script share: the state of one
 * run and the printers each file gives the others. Not installed.
 */
#ifndef LBR2PROF_SC_INTERNAL_H
#define LBR2PROF_SC_INTERNAL_H

#include <stdint.h>

#include "lbr2prof/fpunwind.h"
#include "lbr2prof/machine.h"
#include "lbr2prof/pt.h"
#include "lbr2prof/reader.h"
#include "lbr2prof/script.h"

/* Only as perf adds it (process_attr: pipe mode, Intel PT callchains). */
#define SC_SYM (1u << 6)

/* perf's output[] slots: PERF_TYPE_HARDWARE..BREAKPOINT, then "other". */
#define SC_NR_TYPES 8
#define SC_MAX_STACK 127 /* perf script's default scripting_max_stack */
#define SC_TYPE_OTHER 7

typedef struct sc_symbols sc_symbols;

typedef struct sc_state {
    const lp_script_opts *o;
    lp_reader *r;
    lp_machine *m;
    lp_sym_perf *v5;            /* o->v5 */
    lp_fp_sampler *fps;         /* o->fp_mode */
    lp_ptsynth *pt;             /* o->itrace: samples from Intel PT */
    sc_symbols *syms;           /* names for the sym field, made when used */
    FILE *out;
    unsigned max_stack;         /* perf's scripting_max_stack */
    int type_checked[SC_NR_TYPES];
    unsigned type_fields[SC_NR_TYPES];
} sc_state;

/* fields.c: the fields perf prints for events of attr `a` (checked once
 * per output type), the event a non-sample record belongs to, and the
 * start of a line (comm, pid/tid, time). */
unsigned sc_fields_for(sc_state *s, const lp_attr *a);
const lp_attr *sc_attr_of_record(sc_state *s, const lp_event *ev);
void sc_print_start(sc_state *s, unsigned f, const lp_attr *a,
                    const char *comm, uint32_t tid_for_comm, int32_t pid,
                    int32_t tid, uint64_t time);

/* symbols.c: the name perf prints for ip in user map mp (file offset
 * lookup in the file's symbols, loaded as perf's dso__load), or NULL
 * ([unknown]). The table is made at the first use. */
sc_symbols *sc_symbols_new(void);
void sc_symbols_free(sc_symbols *t);
const char *sc_symbol_name(sc_symbols *t, const lp_map *mp, uint64_t ip);

/* sample.c: one sample line (and its callchain lines). 0, or -1 with err
 * (the --fp-callchain walk). */
int sc_print_sample(sc_state *s, const lp_event *ev, lp_error *err);

/* records.c: MMAP/MMAP2, COMM, FORK/EXIT lines. */
void sc_print_mmap(sc_state *s, const lp_event *ev);
void sc_print_comm(sc_state *s, const lp_event *ev);
void sc_print_task(sc_state *s, const lp_event *ev);

#endif
