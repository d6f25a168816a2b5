/*
 * fuzz_script.c - libFuzzer target for the perf script text route end to
 * end: the input (after one option byte) is the text llvm-profgen reads,
 * run through lp_profgen_run against noinline-cs-noprobe's binary - the
 * text reader on its thread with its block cache, the virtual unwinder
 * with its memo, CS or flat generation, post-processing - and the profile
 * written as text and extbinary to /dev/null. The option byte picks frame
 * repair, --script-fp-callchains, recursion compression, a context depth
 * limit, the pre-inliner and --skip-symbolization. Any crash, sanitizer
 * report, hang or leak is a bug; format errors are expected. Run from the
 * project root (the binary is found under tests/data); seed with
 * tests/data/llvm-profgen-inputs/ *.perfscript and *.aggperfscript.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lbr2prof/profgen.h"

#define BIN "tests/data/llvm-profgen-inputs/noinline-cs-noprobe.perfbin"

static void write_all(const lp_profile *p)
{
    static const lp_prof_format fmts[] = {LP_PROF_TEXT, LP_PROF_EXTBINARY};
    FILE *null = fopen("/dev/null", "w");
    lp_error err;
    size_t i;

    for (i = 0; null && i < 2; i++) {
        lp_write_opts o = {fmts[i], 0, 0, NULL, 0};
        lp_profile_write(null, p, &o, &err);
    }
    if (null)
        fclose(null);
}

static void options(lp_profgen_opts *o, uint8_t b)
{
    static const char *const bins[] = {BIN};

    lp_profgen_opts_default(o);
    o->binaries = bins;
    o->nbinaries = 1;
    o->no_repair_frames = b & 1;
    o->script_fp_callchains = (b >> 1) & 1;
    o->compress_recursion = (b >> 2) & 1 ? -1 : 0;
    o->max_context_depth = (b >> 3) & 1 ? 2 : -1;
    o->cs.preinliner = (b >> 4) & 1;
    o->skip_symbolization = (b >> 5) & 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lp_profgen_opts o;
    lp_profgen_result r;
    lp_error err;
    char path[64];
    int fd;

    if (size < 2 || (fd = memfd_create("fuzz_script", 0)) < 0)
        return 0;
    if (write(fd, data + 1, size - 1) == (ssize_t)(size - 1)) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        options(&o, data[0]);
        o.perfscript = path;
        if (lp_profgen_run(&o, &r, &err) == 0 && r.profile)
            write_all(r.profile);
        lp_profgen_result_free(&r);
    }
    close(fd);
    return 0;
}
