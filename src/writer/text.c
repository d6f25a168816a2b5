/*
 * text.c - the LLVM sample profile text format, written exactly like
 * SampleProfileWriterText: top-level profiles by total descending, body
 * lines by location, call targets by count descending, then inlinee blocks
 * by location and callee, one more space of indent per level, then the
 * metadata (!CFGChecksum of probe-based profiles, !Attributes). Owns the
 * text syntax only; the ordering comes from the model's sorted views.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/profile.h"
#include "util/grow.h"
#include "writer/writer.h"

/* Numbers, names and indents written directly: the text of a large CS
 * profile is ~10^6 lines and fprintf's format parsing was a fifth of a
 * run. The bytes are those of the printf formats they replace. They go
 * to a buffer of the writer's own, handed to stdio 64 KiB at a time: one
 * fwrite per number or name (stdio's lock, its bookkeeping) was 40% of
 * writing an 84k-context profile. */
typedef struct tout {
    FILE *f;
    size_t n;
    lp_target_view *tv;         /* one record's sorted targets */
    size_t tv_cap;
    char b[1 << 16];
} tout;

/* "00" .. "99": numbers are written two digits at a time */
static const char digits2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

static void flush(tout *o)
{
    fwrite(o->b, 1, o->n, o->f);
    o->n = 0;
}

/* Room for n more bytes (n <= sizeof o->b) at the buffer's end. Numbers,
 * indents and punctuation are written there in place: through a memcpy
 * per piece they were ~40% of writing a flat CS profile's text. */
static inline char *room(tout *o, size_t n)
{
    if (n > sizeof o->b - o->n)
        flush(o);
    return o->b + o->n;
}

static inline void put_mem(tout *o, const char *s, size_t n)
{
    if (n > sizeof o->b - o->n) {
        flush(o);
        if (n > sizeof o->b) {
            fwrite(s, 1, n, o->f);
            return;
        }
    }
    memcpy(o->b + o->n, s, n);
    o->n += n;
}

static inline void put_c(tout *o, char c)
{
    *room(o, 1) = c;
    o->n++;
}

static inline void put_u64(tout *o, uint64_t v)
{
    char *p = room(o, 20);
    size_t n = 1, i;
    uint64_t x;

    for (x = v; x >= 100; x /= 100)
        n += 2;
    n += x >= 10;
    for (i = n; v >= 100; v /= 100) {
        i -= 2;
        memcpy(p + i, digits2 + 2 * (v % 100), 2);
    }
    if (v >= 10)
        memcpy(p, digits2 + 2 * v, 2);
    else
        p[0] = (char)('0' + v);
    o->n += n;
}

static inline void put_str(tout *o, const char *s)
{
    put_mem(o, s, strlen(s));
}

static inline void put_indent(tout *o, int n)   /* printf("%*s", n, "") */
{
    char *p;
    int k, i;

    if (n > 0 && n <= 16) {     /* mostly: one 16-byte store */
        memcpy(room(o, 16), "                ", 16);
        o->n += (size_t)n;
        return;
    }
    for (; n > 0; n -= k) {     /* mostly a few spaces: no memset call */
        k = n < 256 ? n : 256;
        p = room(o, (size_t)k);
        for (i = 0; i < k; i++)
            p[i] = ' ';
        o->n += (size_t)k;
    }
}

static void put_loc(tout *o, lp_loc l)
{
    put_u64(o, l.line);
    if (l.disc) {
        put_c(o, '.');
        put_u64(o, l.disc);
    }
}

/* The body records of fs in location order, walked in place (views of
 * every record and their block per profile were a fifth of writing a
 * flat CS profile); only a record's targets are sorted, into the
 * writer's buffer. */
static int write_body(tout *f, const lp_fsamples *fs, int indent)
{
    size_t nb = lp_fs_nr_body(fs), nt, i, j;
    const lp_body_rec *b;

    for (i = 0; i < nb; i++) {
        b = lp_fs_body_at(fs, i);
        put_indent(f, indent + 1);
        put_loc(f, lp_body_loc(b));
        put_str(f, ": ");
        put_u64(f, lp_body_count(b));
        if ((nt = lp_body_nr_targets(b)) &&
            lp_grow_array(&f->tv, &f->tv_cap, nt, sizeof *f->tv, 16))
            return -1;
        nt = nt ? lp_body_sorted_targets(b, f->tv) : 0;
        for (j = 0; j < nt; j++) {
            put_c(f, ' ');
            put_str(f, f->tv[j].name);
            put_c(f, ':');
            put_u64(f, f->tv[j].count);
        }
        put_c(f, '\n');
    }
    return 0;
}

static int write_fs(tout *f, const lp_fsamples *fs, int indent,
                    const lp_profile *p)
{
    int is_cs = p->is_cs;
    lp_callee_view *c = NULL;
    size_t nc, i;
    int rc = 0;

    if (indent == 0 && is_cs) {
        put_c(f, '[');
        put_str(f, fs->context);
        put_str(f, "]:");
    } else {
        put_str(f, fs->name);
        put_c(f, ':');
    }
    put_u64(f, fs->total);
    if (indent == 0) {
        put_c(f, ':');
        put_u64(f, fs->head);
    }
    put_c(f, '\n');
    if (write_body(f, fs, indent))
        return -1;
    nc = lp_fs_sorted_callees(fs, &c);
    if (nc == (size_t)-1)
        return -1;
    for (i = 0; i < nc && rc == 0; i++) {
        put_indent(f, indent + 1);
        put_loc(f, c[i].loc);
        put_str(f, ": ");
        rc = write_fs(f, c[i].fs, indent + 1, p);
    }
    free(c);
    if (rc == 0 && p->is_probe_based) {
        put_indent(f, indent + 1);
        put_str(f, "!CFGChecksum: ");
        put_u64(f, fs->checksum);
        put_c(f, '\n');
    }
    if (rc == 0 && fs->attrs) {
        put_indent(f, indent + 1);
        put_str(f, "!Attributes: ");
        put_u64(f, fs->attrs);
        put_c(f, '\n');
    }
    return rc;
}

int lp_write_text(FILE *f, const lp_profile *p, lp_error *err)
{
    lp_fsamples **v = NULL;
    size_t n, i;
    int rc = 0;
    tout *o = malloc(sizeof *o);

    if (!o || (n = lp_profile_sorted(p, &v)) == (size_t)-1) {
        free(o);
        return lp_error_set(err, LP_ENOMEM, "text writer: out of memory");
    }
    o->f = f;
    o->n = 0;
    o->tv = NULL;
    o->tv_cap = 0;
    for (i = 0; i < n && rc == 0; i++)
        rc = write_fs(o, v[i], 0, p);
    flush(o);
    free(o->tv);
    free(o);
    free(v);
    if (rc)
        return lp_error_set(err, LP_ENOMEM, "text writer: out of memory");
    return 0;
}
