/*
 * fuzz_reader.c - libFuzzer target for the perf.data reader: opens the input
 * with lp_reader_open_mem in both orders (and pipe-mode inputs also as a
 * FILE stream) and reads every event. Any crash,
 * sanitizer report, hang or leak is a bug; errors are expected.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lbr2prof/reader.h"

static void walk(const uint8_t *data, size_t size, lp_order order, int stream)
{
    lp_reader_opts o = { 0 };
    lp_error err;
    const lp_event *ev;
    volatile uint64_t sink = 0;
    FILE *f = NULL;
    lp_reader *r;

    o.order = order;
    if (stream) { /* the pipe path: refill buffer, arena-held queue */
        f = fmemopen((void *)data, size, "r");
        if (!f)
            return;
        r = lp_reader_open_stream(f, "fuzz", &o, &err);
    } else {
        r = lp_reader_open_mem(data, size, "fuzz", &o, &err);
    }
    if (!r) {
        if (f)
            fclose(f);
        return;
    }
    while (lp_reader_next(r, &ev, &err) > 0) {
        if (ev->kind == LP_EV_SAMPLE) {
            const lp_sample *s = &ev->u.sample;
            for (uint64_t i = 0; i < s->branch_nr; i++)
                sink += s->branches[i].from ^ s->branches[i].flags;
            for (uint64_t i = 0; i < s->callchain_nr; i++)
                sink += s->callchain[i];
            if (s->stack_user_size)
                sink += s->stack_user[s->stack_user_size - 1];
        } else if (ev->kind == LP_EV_MMAP) {
            for (const char *p = ev->u.mmap.filename; *p; p++)
                sink += (uint8_t)*p;
        } else if (ev->kind == LP_EV_COMM) {
            for (const char *p = ev->u.comm.comm; *p; p++)
                sink += (uint8_t)*p;
        }
    }
    const lp_file_info *in = lp_reader_info(r);
    for (size_t i = 0; i < in->nr_attrs; i++)
        if (in->attrs[i].name)
            sink += (uint8_t)in->attrs[i].name[0];
    for (size_t i = 0; i < in->nr_build_ids; i++)
        sink += (uint8_t)in->build_ids[i].filename[0];
    (void)sink;
    lp_reader_close(r);
    if (f)
        fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Only perf.data inputs: text goes to another backend and fuzzer. */
    if (size < 8 || (data[0] != 'P' && data[0] != '2'))
        return 0;
    walk(data, size, LP_ORDER_TIME, 0);
    walk(data, size, LP_ORDER_FILE, 0);
    if (size >= 16 && data[8] == 16) /* pipe-mode header: also as a stream */
        walk(data, size, LP_ORDER_TIME, 1);
    return 0;
}
