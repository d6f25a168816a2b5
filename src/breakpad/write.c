/*
 * write.c - lp_bp_module -> Breakpad .sym text (dump-syms output).
 * Owns record formatting only. Record order follows Breakpad's dump_syms:
 * MODULE, INFO CODE_ID, FILE, INLINE_ORIGIN, then each FUNC with its INLINE
 * and line records, then PUBLIC.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "lbr2prof/breakpad.h"

/* Names go on one line: a newline inside one would start a new record. */
static void put_name(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
    fputc('\n', out);
}

static void write_func(const lp_bp_module *m, const lp_bp_func *f, FILE *out)
{
    size_t i;
    const lp_bp_inline *in;
    const lp_bp_line *l;

    fprintf(out, "FUNC %s%" PRIx64 " %" PRIx64 " %" PRIx64 " ", f->multiple ? "m " : "",
            f->addr, f->size, f->param_size);
    put_name(out, f->name);
    for (i = 0; i < f->ninlines; i++) {
        in = &m->inlines[f->inl0 + i];
        fprintf(out, "INLINE %u %u %u %u %" PRIx64 " %" PRIx64 "\n", in->depth,
                in->call_line, in->call_file, in->origin, in->addr, in->size);
    }
    for (i = 0; i < f->nlines; i++) {
        l = &m->lines[f->line0 + i];
        fprintf(out, "%" PRIx64 " %" PRIx64 " %u %u\n", l->addr, l->size, l->line,
                l->file);
    }
}

int lp_bp_write(const lp_bp_module *m, FILE *out, lp_error *err)
{
    size_t i;

    fprintf(out, "MODULE %s %s %s ", m->os, m->arch, m->debug_id);
    put_name(out, m->name);
    if (m->code_id) {
        fprintf(out, "INFO CODE_ID %s", m->code_id);
        if (m->code_file) {
            fputc(' ', out);
            put_name(out, m->code_file);
        } else {
            fputc('\n', out);
        }
    }
    for (i = 0; i < m->nfiles; i++) {
        fprintf(out, "FILE %u ", m->files[i].num);
        put_name(out, m->files[i].name);
    }
    for (i = 0; i < m->norigins; i++) {
        fprintf(out, "INLINE_ORIGIN %u ", m->origins[i].num);
        put_name(out, m->origins[i].name);
    }
    for (i = 0; i < m->nfuncs; i++)
        write_func(m, &m->funcs[i], out);
    for (i = 0; i < m->npublics; i++) {
        fprintf(out, "PUBLIC %s%" PRIx64 " %" PRIx64 " ",
                m->publics[i].multiple ? "m " : "", m->publics[i].addr,
                m->publics[i].param_size);
        put_name(out, m->publics[i].name);
    }
    if (ferror(out))
        return lp_error_set(err, LP_EIO, "writing .sym: %s", strerror(errno));
    return 0;
}
