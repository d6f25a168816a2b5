/*
 * fuzz_binary.c - libFuzzer target for the binary loader: writes the input
 * to a temporary file (the loader takes paths), opens it and walks every
 * instruction, stack, function range and prolog/epilog query - with the
 * warmer (lp_binary_warm_start) decoding and symbolizing beside the walk
 * when the ELF identification's first padding byte (e_ident[9], which
 * nothing reads) is odd, waited for at the end when its second bit is
 * set, else stopped by the close. Any crash,
 * sanitizer report, hang or leak is a bug; open errors are expected.
 * Best seeded with the .perfbin files of tests/data/llvm-profgen-inputs.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lbr2prof/binary.h"

static void walk(lp_binary *b)
{
    lp_error err;
    uint64_t a;
    size_t steps = 0;
    volatile uint64_t sink = 0;
    if (lp_binary_inst_at_or_after(b, 0, &a, &err) != 1)
        return;
    do {
        const lp_frame *fr;
        size_t n;
        if (lp_binary_symbolize(b, a, &fr, &n, &err) == 0)
            for (size_t i = 0; i < n; i++)
                sink += fr[i].line_offset + (uint8_t)fr[i].func[0];
        sink += lp_binary_in_prolog_epilog(b, a);
        const lp_func_range *r = lp_binary_func_range(b, a);
        if (r)
            sink += r->end + (lp_binary_callee_name(b, r->start) != NULL) +
                    (uint64_t)lp_binary_addr_taken(b, r->start, &err);
    } while (++steps < 20000 && lp_binary_next_inst(b, a, &a, &err) == 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/lp-fuzz-bin-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    if (size && write(fd, data, size) == (ssize_t)size) {
        lp_error err;
        lp_binary *b = lp_binary_open(path, NULL, &err);
        if (b) {
            lp_binary_warm_stats st;
            uint8_t pad = size > 9 ? data[9] : 0;

            if (pad & 1)
                (void)lp_binary_warm_start(b);
            walk(b);
            if (pad & 2)
                lp_binary_warm_stop(b, true, &st);
            lp_binary_close(b);     /* stops a warmer still running */
        }
    }
    close(fd);
    unlink(path);
    return 0;
}
