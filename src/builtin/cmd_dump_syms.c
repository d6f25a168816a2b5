/*
 * cmd_dump_syms.c - `lbr2prof dump-syms BINARY [-o OUT.sym]`: writes the
 * Breakpad .sym of an ELF file (FUNC/line/INLINE from DWARF, PUBLIC from
 * the symbol table), like Breakpad's dump_syms with inline records.
 * LP_BUILTIN(dump_syms, cmd_dump_syms, "write the Breakpad .sym of an ELF file")
 */
#include <stdio.h>
#include <string.h>

#include "cli/builtin.h"
#include "lbr2prof/breakpad.h"
#include "lbr2prof/outfile.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: lbr2prof dump-syms BINARY [-o OUT.sym]\n"
               "  Writes the Breakpad symbol file of BINARY (standard output by\n"
               "  default). Store it as DEBUG_FILE/DEBUG_ID/DEBUG_FILE.sym for\n"
               "  `lbr2prof symbolicate --symbols DIR`; `--id` prints only the\n"
               "  debug id, code id and that store path.\n");
}

static int print_id(const char *bin)
{
    lp_bp_elf_id id;
    lp_error err;
    const char *base = strrchr(bin, '/');

    if (lp_bp_elf_identify(bin, &id, &err) < 0)
        return lp_cli_fail(&err);
    base = base ? base + 1 : bin;
    printf("debug_id %s\ncode_id %s\narch %s\nsym_path %s/%s/%s.sym\n", id.debug_id,
           id.code_id[0] ? id.code_id : "-", id.arch, base, id.debug_id, base);
    return 0;
}

int cmd_dump_syms(int argc, char **argv)
{
    const char *bin = NULL, *out = "-";
    int i, only_id = 0;
    lp_bp_module *m;
    lp_outfile of;
    lp_error err;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--id")) {
            only_id = 1;
        } else if (argv[i][0] == '-' || bin) {
            usage(stderr);
            return lp_cli_usage_error("dump-syms", "unexpected argument '%s'", argv[i]);
        } else {
            bin = argv[i];
        }
    }
    if (!bin) {
        usage(stderr);
        return 2;
    }
    if (only_id)
        return print_id(bin);
    if (!(m = lp_bp_from_elf(bin, &err)))
        return lp_cli_fail(&err);
    if (lp_outfile_open(&of, out, &err) < 0 || lp_bp_write(m, of.fp, &err) < 0 ||
        lp_outfile_commit(&of, &err) < 0) {
        lp_outfile_abort(&of);
        lp_bp_free(m);
        return lp_cli_fail(&err);
    }
    lp_bp_free(m);
    return 0;
}
