/*
 * rd_header.c - everything about a perf.data file that is not a kernel
 * record: the file header, the attr table (every perf_event_attr size), the
 * sample-id -> attr map, feature sections (file mode) and the pipe-mode user
 * records that carry the same information (HEADER_ATTR, HEADER_FEATURE,
 * HEADER_BUILD_ID). It does not walk the data section (rd_input.c) nor
 * decode records (rd_decode.c).
 */
#include <stdlib.h>
#include <uthash.h>

#include "reader/rd_internal.h"

struct rd_idmap {
    uint64_t id;
    size_t idx;
    UT_hash_handle hh;
};

#define ATTR_KNOWN 144  /* PERF_ATTR_SIZE_VER9 */
#define ATTR_VER0 64

static const uint64_t PERF_MAGIC2 = 0x32454c4946524550ull;

/* ---- attrs ---------------------------------------------------------------- */

static uint8_t bitrev8(uint8_t b)
{
    b = (uint8_t)((b & 0xf0) >> 4 | (b & 0x0f) << 4);
    b = (uint8_t)((b & 0xcc) >> 2 | (b & 0x33) << 2);
    return (uint8_t)((b & 0xaa) >> 1 | (b & 0x55) << 1);
}

static int popcount_positions(const lp_attr *a, int *id_pos, int *is_pos)
{
    uint64_t st = a->sample_type;
    if (st & LP_SAMPLE_IDENTIFIER) {
        *id_pos = 0;
        *is_pos = 1;
    } else if (!(st & LP_SAMPLE_ID)) {
        *id_pos = *is_pos = -1;
    } else {
        *id_pos = !!(st & LP_SAMPLE_IP) + !!(st & LP_SAMPLE_TID) +
                  !!(st & LP_SAMPLE_TIME) + !!(st & LP_SAMPLE_ADDR);
        *is_pos = 1 + !!(st & LP_SAMPLE_CPU) + !!(st & LP_SAMPLE_STREAM_ID);
    }
    return 0;
}

static int grow_attrs(lp_reader *r, lp_error *err)
{
    if (r->info.nr_attrs < r->attr_cap)
        return 0;
    size_t cap = r->attr_cap ? r->attr_cap * 2 : 256;
    lp_attr *n = realloc(r->attrs, cap * sizeof *n);
    if (!n)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    r->attrs = n;
    r->attr_cap = cap;
    r->info.attrs = n;
    return 0;
}

static int map_id(lp_reader *r, uint64_t id, size_t idx, lp_error *err)
{
    struct rd_idmap *m;
    HASH_FIND(hh, r->idmap, &id, sizeof id, m);
    if (m)
        return 0; /* first owner wins, as in perf */
    m = malloc(sizeof *m);
    if (!m)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    m->id = id;
    m->idx = idx;
    HASH_ADD(hh, r->idmap, id, sizeof m->id, m);
    return 0;
}

/*
 * Add one perf_event_attr found at p (avail bytes may be read), with its
 * sample ids (nr_ids u64s at ids, in file order, unaligned).
 */
int rd_add_attr(lp_reader *r, const uint8_t *p, size_t avail, const uint8_t *ids,
                size_t nr_ids, int ids_swap, uint64_t off, const char *fname,
                lp_error *err)
{
    uint8_t b[ATTR_KNOWN] = { 0 };
    int s = r->swap;

    if (avail < ATTR_VER0)
        return rd_errf(err, fname, off, 0,
                       "perf_event_attr needs 64 bytes, only %zu present",
                       avail);
    uint32_t size = rd_ld32(p + 4, s);
    size_t eff = size ? size : ATTR_VER0;
    if (eff < ATTR_VER0 || eff > avail)
        return rd_errf(err, fname, off, 0,
                       "perf_event_attr size %u, expected 0 or 64..%zu",
                       size, avail);
    memcpy(b, p, eff < ATTR_KNOWN ? eff : ATTR_KNOWN);
    if (grow_attrs(r, err) < 0)
        return -1;
    lp_attr *a = &r->attrs[r->info.nr_attrs];
    memset(a, 0, sizeof *a);
    a->type = rd_ld32(b, s);
    a->size = size;
    a->config = rd_ld64(b + 8, s);
    a->sample_period = rd_ld64(b + 16, s);
    a->sample_type = rd_ld64(b + 24, s);
    a->read_format = rd_ld64(b + 32, s);
    if (s)
        for (int i = 0; i < 8; i++)
            b[40 + i] = bitrev8(b[40 + i]);
    a->flags = rd_ld64(b + 40, 0);
    a->config1 = rd_ld64(b + 56, s);
    a->config2 = rd_ld64(b + 64, s);
    a->branch_sample_type = rd_ld64(b + 72, s);
    a->sample_regs_user = rd_ld64(b + 80, s);
    a->sample_stack_user = rd_ld32(b + 88, s);
    a->clockid = (int32_t)rd_ld32(b + 92, s);
    a->sample_regs_intr = rd_ld64(b + 96, s);
    a->freq = (int)((a->flags >> 10) & 1);
    a->sample_id_all = (int)((a->flags >> 18) & 1);
    a->exclude_user = (int)((a->flags >> 4) & 1);
    a->exclude_kernel = (int)((a->flags >> 5) & 1);
    if (nr_ids) {
        a->ids = malloc(nr_ids * sizeof *a->ids);
        if (!a->ids)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        for (size_t i = 0; i < nr_ids; i++)
            a->ids[i] = rd_ld64(ids + 8 * i, ids_swap);
        a->nr_ids = nr_ids;
    }
    size_t idx = r->info.nr_attrs++;
    for (size_t i = 0; i < nr_ids; i++)
        if (map_id(r, a->ids[i], idx, err) < 0)
            return -1;
    if (idx == 0)
        popcount_positions(a, &r->id_pos, &r->is_pos);
    return 0;
}

const lp_attr *lp_reader_attr_by_id(const lp_reader *r, uint64_t id)
{
    struct rd_idmap *m;
    if (!r || r->info.nr_attrs == 0)
        return NULL;
    if (r->info.nr_attrs == 1)
        return &r->attrs[0];
    HASH_FIND(hh, r->idmap, &id, sizeof id, m);
    return m ? &r->attrs[m->idx] : NULL;
}

/* perf's evlist__event2evsel: index of the attr of a record, -1 unknown. */
int rd_attr_for(const lp_reader *r, const rd_raw *raw, const uint8_t *body,
                size_t nwords)
{
    uint64_t id;
    struct rd_idmap *m;

    if (r->info.nr_attrs == 0)
        return -1;
    if (r->info.nr_attrs == 1)
        return 0;
    if (raw->type != RD_SAMPLE && !r->attrs[0].sample_id_all)
        return 0;
    if (raw->type == RD_SAMPLE) {
        if (r->id_pos < 0)
            return 0;
        if ((size_t)r->id_pos >= nwords)
            return -1;
        id = rd_ld64(body + 8 * (size_t)r->id_pos, r->swap);
    } else {
        if (r->is_pos < 0)
            return 0;
        if ((size_t)r->is_pos > nwords)
            return -1;
        id = rd_ld64(body + 8 * (nwords - (size_t)r->is_pos), r->swap);
    }
    if (id == 0)
        return 0;
    HASH_FIND(hh, r->idmap, &id, sizeof id, m);
    return m ? (int)m->idx : -1;
}

/* ---- feature sections -------------------------------------------------- */

typedef struct cur {  /* bounded cursor over a feature payload */
    const uint8_t *p;
    size_t len, pos;
    int swap;
} cur;

static int cur_u32(cur *c, uint32_t *v)
{
    if (c->len - c->pos < 4)
        return -1;
    *v = rd_ld32(c->p + c->pos, c->swap);
    c->pos += 4;
    return 0;
}

/* perf_header_string: u32 len (with NUL and padding); bytes. */
static char *cur_string(cur *c)
{
    uint32_t n;
    if (cur_u32(c, &n) < 0 || c->len - c->pos < n)
        return NULL;
    char *s = strndup((const char *)c->p + c->pos, n);
    c->pos += n;
    return s;
}

static int feat_err(lp_error *err, const char *fname, uint64_t off,
                    const char *what)
{
    return rd_errf(err, fname, off, 0, "feature %s: section is malformed "
                   "(a count or length runs past its end)", what);
}

static int set_string(const char **dst, cur *c, const char *fname,
                      uint64_t off, const char *what, lp_error *err)
{
    char *s = cur_string(c);
    if (!s)
        return feat_err(err, fname, off, what);
    free((char *)*dst);
    *dst = s;
    return 0;
}

static int parse_cmdline(lp_reader *r, cur *c, const char *fname, uint64_t off,
                         lp_error *err)
{
    uint32_t nr;
    if (cur_u32(c, &nr) < 0 || nr > (c->len - c->pos) / 4)
        return feat_err(err, fname, off, "CMDLINE");
    if (r->cmdline) {
        for (size_t i = 0; i < r->info.cmdline_argc; i++)
            free(r->cmdline[i]);
        free(r->cmdline);
    }
    r->cmdline = calloc((size_t)nr + 1, sizeof *r->cmdline);
    r->info.cmdline = (const char *const *)r->cmdline;
    r->info.cmdline_argc = 0;
    if (!r->cmdline)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    for (uint32_t i = 0; i < nr; i++) {
        char *s = cur_string(c);
        if (!s)
            return feat_err(err, fname, off, "CMDLINE");
        r->cmdline[r->info.cmdline_argc++] = s;
    }
    return 0;
}

/* One build_id_event (feature section entry or HEADER_BUILD_ID record). */
static int add_build_id(lp_reader *r, const uint8_t *p, size_t len,
                        lp_error *err)
{
    if (r->info.nr_build_ids == r->bid_cap) {
        size_t cap = r->bid_cap ? r->bid_cap * 2 : 16;
        lp_build_id *n = realloc(r->build_ids, cap * sizeof *n);
        if (!n)
            return lp_error_set(err, LP_ENOMEM, "out of memory");
        r->build_ids = n;
        r->bid_cap = cap;
        r->info.build_ids = n;
    }
    lp_build_id *b = &r->build_ids[r->info.nr_build_ids];
    memset(b, 0, sizeof *b);
    b->misc = rd_ld16(p + 4, r->swap);
    b->pid = (int32_t)rd_ld32(p + 8, r->swap);
    memcpy(b->id, p + 12, 20);
    if (b->misc & 0x8000) {
        b->size = p[32] <= 20 ? p[32] : 20;
    } else { /* zero-padded: strip, then round up to a real id length */
        static const uint8_t len[] = { 8, 16, 20 };
        uint8_t n = 20;
        while (n > 0 && b->id[n - 1] == 0)
            n--;
        b->size = 0;
        for (size_t k = 0; n && k < sizeof len; k++)
            if (n <= len[k]) {
                b->size = len[k];
                break;
            }
    }
    b->filename = strndup((const char *)p + 36, len - 36);
    if (!b->filename)
        return lp_error_set(err, LP_ENOMEM, "out of memory");
    r->info.nr_build_ids++;
    return 0;
}

static int parse_build_ids(lp_reader *r, cur *c, const char *fname,
                           uint64_t off, lp_error *err)
{
    while (c->len - c->pos >= 8) {
        uint16_t size = rd_ld16(c->p + c->pos + 6, r->swap);
        if (size < 36 || size > c->len - c->pos)
            return rd_errf(err, fname, off + c->pos, 0,
                           "feature BUILD_ID: entry size %u, expected "
                           "36..%zu", size, c->len - c->pos);
        if (add_build_id(r, c->p + c->pos, size, err) < 0)
            return -1;
        c->pos += size;
    }
    return 0;
}

static lp_attr *attr_for_desc(lp_reader *r, uint32_t i, const uint64_t *ids,
                              uint32_t nr_ids)
{
    if (nr_ids > 0) {
        const lp_attr *a = lp_reader_attr_by_id(r, ids[0]);
        if (a)
            return (lp_attr *)a;
    }
    return i < r->info.nr_attrs ? &r->attrs[i] : NULL;
}

static int parse_event_desc(lp_reader *r, cur *c, const char *fname,
                            uint64_t off, lp_error *err)
{
    uint32_t nr, asz;
    if (cur_u32(c, &nr) < 0 || cur_u32(c, &asz) < 0)
        return feat_err(err, fname, off, "EVENT_DESC");
    for (uint32_t i = 0; i < nr; i++) {
        uint32_t nr_ids;
        uint64_t id0 = 0;
        if (c->len - c->pos < asz)
            return feat_err(err, fname, off, "EVENT_DESC");
        c->pos += asz;
        if (cur_u32(c, &nr_ids) < 0)
            return feat_err(err, fname, off, "EVENT_DESC");
        char *name = cur_string(c);
        if (!name || nr_ids > (c->len - c->pos) / 8) {
            free(name);
            return feat_err(err, fname, off, "EVENT_DESC");
        }
        if (nr_ids)
            id0 = rd_ld64(c->p + c->pos, r->swap);
        c->pos += (size_t)nr_ids * 8;
        lp_attr *a = attr_for_desc(r, i, &id0, nr_ids);
        if (a && !a->name)
            a->name = name;
        else
            free(name);
    }
    return 0;
}

static int parse_feature(lp_reader *r, int feat, const uint8_t *p, size_t len,
                         uint64_t off, const char *fname, lp_error *err)
{
    cur c = { p, len, 0, r->swap };
    lp_file_info *in = &r->info;

    switch (feat) {
    case RD_FEAT_BUILD_ID:
        return parse_build_ids(r, &c, fname, off, err);
    case RD_FEAT_HOSTNAME:
        return set_string(&in->hostname, &c, fname, off, "HOSTNAME", err);
    case RD_FEAT_OSRELEASE:
        return set_string(&in->os_release, &c, fname, off, "OSRELEASE", err);
    case RD_FEAT_VERSION:
        return set_string(&in->perf_version, &c, fname, off, "VERSION", err);
    case RD_FEAT_ARCH:
        return set_string(&in->arch, &c, fname, off, "ARCH", err);
    case RD_FEAT_CPUDESC:
        return set_string(&in->cpu_desc, &c, fname, off, "CPUDESC", err);
    case RD_FEAT_CPUID:
        return set_string(&in->cpuid, &c, fname, off, "CPUID", err);
    case RD_FEAT_CMDLINE:
        return parse_cmdline(r, &c, fname, off, err);
    case RD_FEAT_EVENT_DESC:
        return parse_event_desc(r, &c, fname, off, err);
    case RD_FEAT_COMPRESSED: {
        uint32_t v[5];
        in->compressed = 1;
        for (int i = 0; i < 5; i++)
            if (cur_u32(&c, &v[i]) < 0)
                return feat_err(err, fname, off, "COMPRESSED");
        r->comp_mmap_len = v[4];
        return 0;
    }
    default:
        return 0;
    }
}

/*
 * Parse one feature section. A malformed section is ignored, as perf does
 * (real files have them: a perf 3.14 armv7 CPUDESC); only running out of
 * memory is an error.
 */
int rd_parse_feature(lp_reader *r, int feat, const uint8_t *p, size_t len,
                     uint64_t off, const char *fname, lp_error *err)
{
    lp_error e;
    if (parse_feature(r, feat, p, len, off, fname, &e) == 0)
        return 0;
    if (e.code == LP_ENOMEM) {
        if (err)
            *err = e;
        return -1;
    }
    r->bad_features++;
    return 0;
}

/* ---- file header ------------------------------------------------------- */

static int section_ok(const rd_file *f, uint64_t off, uint64_t size)
{
    return off <= f->end && size <= f->end - off;
}

/* Feature bitmap across byte orders (perf's rules, doc §3.12). */
static void feature_bitmap(lp_reader *r, const uint8_t *p)
{
    for (int i = 0; i < 4; i++)
        r->info.features[i] = rd_ld64(p + 8 * i, r->swap);
    if (!r->swap || (r->info.features[0] & (1u << RD_FEAT_HOSTNAME)) ||
        !(r->info.features[0] | r->info.features[1] | r->info.features[2] |
          r->info.features[3]))
        return;
    for (int i = 0; i < 4; i++) {
        uint32_t lo = rd_ld32(p + 8 * i, 1), hi = rd_ld32(p + 8 * i + 4, 1);
        r->info.features[i] = (uint64_t)hi << 32 | lo;
    }
    if (!(r->info.features[0] & (1u << RD_FEAT_HOSTNAME))) {
        memset(r->info.features, 0, sizeof r->info.features);
        r->info.features[0] = 1u << RD_FEAT_BUILD_ID;
    }
}

static int read_attrs(lp_reader *r, rd_file *f, const uint8_t *h, lp_error *err)
{
    uint64_t attr_size = rd_ld64(h + 16, r->swap);
    uint64_t aoff = rd_ld64(h + 24, r->swap), asize = rd_ld64(h + 32, r->swap);

    if (!section_ok(f, aoff, asize))
        return rd_errf(err, f->name, 24, 0,
                       "attr section [0x%llx, +0x%llx) lies outside the "
                       "file (%llu bytes)", (unsigned long long)aoff,
                       (unsigned long long)asize, (unsigned long long)f->end);
    if (asize == 0)
        return 0;
    if (attr_size < ATTR_VER0 + 16)
        return rd_errf(err, f->name, 16, 0,
                       "attr_size %llu, expected >= 80",
                       (unsigned long long)attr_size);
    if (asize % attr_size)
        return rd_errf(err, f->name, 32, 0,
                       "attr section size %llu is not a multiple of "
                       "attr_size %llu", (unsigned long long)asize,
                       (unsigned long long)attr_size);
    uint64_t nr = asize / attr_size;
    for (uint64_t i = 0; i < nr; i++) {
        uint64_t eoff = aoff + i * attr_size;
        const uint8_t *e = f->base + eoff;
        uint64_t ioff = rd_ld64(e + attr_size - 16, r->swap);
        uint64_t isize = rd_ld64(e + attr_size - 8, r->swap);
        if (!section_ok(f, ioff, isize))
            return rd_errf(err, f->name, eoff + attr_size - 16, 0,
                           "ids section [0x%llx, +0x%llx) of attr %llu lies "
                           "outside the file", (unsigned long long)ioff,
                           (unsigned long long)isize,
                           (unsigned long long)i);
        if (rd_add_attr(r, e, (size_t)(attr_size - 16),
                        f->base + ioff,
                        (size_t)(isize / 8), r->swap, eoff, f->name, err) < 0)
            return -1;
    }
    return 0;
}

static int read_features(lp_reader *r, rd_file *f, uint64_t table,
                         lp_error *err)
{
    int nbits = 0;
    for (int b = 0; b < 256; b++)
        nbits += (int)((r->info.features[b / 64] >> (b % 64)) & 1);
    if (!section_ok(f, table, (uint64_t)nbits * 16))
        return rd_errf(err, f->name, table, 0,
                       "feature table of %d entries runs past the end of "
                       "the file (%llu bytes)", nbits,
                       (unsigned long long)f->end);
    const uint8_t *t = f->base + table;
    for (int b = 0; b < 256; b++) {
        if (!((r->info.features[b / 64] >> (b % 64)) & 1))
            continue;
        uint64_t off = rd_ld64(t, r->swap), size = rd_ld64(t + 8, r->swap);
        if (!section_ok(f, off, size))
            return rd_errf(err, f->name, (uint64_t)(t - f->base), 0,
                           "feature %d section [0x%llx, +0x%llx) lies "
                           "outside the file", b, (unsigned long long)off,
                           (unsigned long long)size);
        if (b == RD_FEAT_DIR_FORMAT)
            r->info.format = LP_FMT_PERF_DIR;
        if (rd_parse_feature(r, b, f->base + off, (size_t)size, off, f->name,
                             err) < 0)
            return -1;
        t += 16;
    }
    return 0;
}

/* The feature sections after a complete data section run past the end of
 * the file: a file cut after its data. Not strict: the records are all
 * there, so only the features (build-ids, event names...) are lost, which
 * the warning says. */
static int cut_features(lp_reader *r, const rd_file *f, const lp_error *fe, lp_error *err)
{
    if (r->opts.strict || fe->code != LP_EFORMAT || f->end != f->size) {
        if (err)
            *err = *fe;
        return -1;
    }
    r->stats.cut_off++;
    if (r->opts.warn)
        lp_warnf(r->opts.warn, r->opts.warn_ctx,
                 "the file was cut off after its data section (%s); every record is read, "
                 "the header's features from there on (build-ids, event names, command "
                 "line...) are lost (--strict makes this an error)", fe->msg);
    return 0;
}

/*
 * Parse the file header of a memory-backed file. On return f->pos/end bound
 * the data section. Pipe headers (size 16) only set the format.
 */
int rd_read_file_header(lp_reader *r, rd_file *f, lp_error *err)
{
    uint8_t h[104] = { 0 };
    uint64_t magic, hsize;

    if (rd_file_read(f, h, 16, err) < 0)
        return lp_error_prefix(err, "reading the perf.data header");
    memcpy(&magic, h, 8);
    r->swap = magic == bswap_64(PERF_MAGIC2);
    r->info.byte_swapped = r->swap;
    hsize = rd_ld64(h + 8, r->swap);
    if (hsize == 16) {
        r->info.format = LP_FMT_PERF_PIPE;
        return 0;
    }
    if (!f->is_mem)
        return lp_error_set(err, LP_EUNSUPP,
                            "%s: file-mode perf.data (header size %llu) "
                            "needs a seekable file, not a pipe", f->name,
                            (unsigned long long)hsize);
    if (hsize != 104 && hsize != 72)
        return rd_errf(err, f->name, 8, 0,
                       "header size %llu, expected 104 (file), 72 (old file) "
                       "or 16 (pipe)", (unsigned long long)hsize);
    if (rd_file_read(f, h + 16, (size_t)hsize - 16, err) < 0)
        return lp_error_prefix(err, "reading the perf.data header");
    r->info.format = LP_FMT_PERF_FILE;
    if (read_attrs(r, f, h, err) < 0)
        return -1;
    if (r->info.nr_attrs == 0)
        return rd_errf(err, f->name, 24, 0,
                       "no event attributes (attr section of %llu bytes), "
                       "expected at least one",
                       (unsigned long long)rd_ld64(h + 32, r->swap));
    uint64_t doff = rd_ld64(h + 40, r->swap), dsize = rd_ld64(h + 48, r->swap);
    if (!section_ok(f, doff, dsize)) {
        /* Cut inside its data: its complete records are read (rd_input.c
         * cut_off says where it ends), the features after it are lost. */
        if (r->opts.strict || doff > f->end)
            return rd_errf(err, f->name, 40, 0,
                           "data section [0x%llx, +0x%llx) runs past the end of "
                           "the file (%llu bytes): truncated file?",
                           (unsigned long long)doff, (unsigned long long)dsize,
                           (unsigned long long)f->end);
        f->data_end = doff + dsize < doff ? UINT64_MAX : doff + dsize;
        dsize = 0;  /* to the end of the file */
    }
    r->info.data_offset = doff;
    r->info.data_size = dsize;
    if (hsize == 104 && dsize > 0) {
        lp_error fe;
        feature_bitmap(r, h + 72);
        if (read_features(r, f, doff + dsize, &fe) < 0 && cut_features(r, f, &fe, err) < 0)
            return -1;
    }
    f->pos = doff;
    if (dsize > 0)
        f->end = doff + dsize;
    return 0;
}

/* ---- pipe-mode user records ------------------------------------------- */

static int header_attr(lp_reader *r, const rd_raw *raw, const char *fname,
                       lp_error *err)
{
    const uint8_t *body = raw->p + 8;
    size_t blen = raw->size - 8u;
    if (blen < ATTR_VER0)
        return rd_errf(err, fname, raw->off, raw->zst,
                       "HEADER_ATTR of %u bytes, expected >= 72", raw->size);
    uint32_t size = rd_ld32(body + 4, r->swap);
    size_t eff = size ? size : ATTR_VER0;
    if (eff > blen)
        return rd_errf(err, fname, raw->off, raw->zst,
                       "HEADER_ATTR attr.size %u exceeds the record (%zu "
                       "bytes)", size, blen);
    return rd_add_attr(r, body, eff,
                       body + eff,
                       (blen - eff) / 8, r->swap, raw->off, fname, err);
}

/* Act on a user record (type >= 64) before it is delivered. */
int rd_user_record(lp_reader *r, const rd_raw *raw, lp_error *err)
{
    const char *fname = r->files[raw->file_idx].name;
    switch (raw->type) {
    case RD_HEADER_ATTR:
        return header_attr(r, raw, fname, err);
    case RD_HEADER_FEATURE:
        if (raw->size < 16)
            return rd_errf(err, fname, raw->off, raw->zst,
                           "HEADER_FEATURE of %u bytes, expected >= 16",
                           raw->size);
        if (raw->size == 16)
            return 0; /* end-of-features marker */
        uint64_t feat = rd_ld64(raw->p + 8, r->swap);
        if (feat == RD_FEAT_DIR_FORMAT || feat >= 256)
            return 0;
        if (feat < 256)
            r->info.features[feat / 64] |= 1ull << (feat % 64);
        return rd_parse_feature(r, (int)feat, raw->p + 16, raw->size - 16u,
                                raw->off + 16, fname, err);
    case RD_HEADER_BUILD_ID:
        if (raw->size < 36)
            return rd_errf(err, fname, raw->off, raw->zst,
                           "HEADER_BUILD_ID of %u bytes, expected >= 36",
                           raw->size);
        return add_build_id(r, raw->p, raw->size, err);
    default:
        return 0;
    }
}

void rd_header_free(lp_reader *r)
{
    struct rd_idmap *m, *tmp;
    HASH_ITER(hh, r->idmap, m, tmp) {
        HASH_DEL(r->idmap, m);
        free(m);
    }
    for (size_t i = 0; i < r->info.nr_attrs; i++) {
        free(r->attrs[i].ids);
        free((char *)r->attrs[i].name);
    }
    free(r->attrs);
    for (size_t i = 0; i < r->info.nr_build_ids; i++)
        free((char *)r->build_ids[i].filename);
    free(r->build_ids);
    if (r->cmdline) {
        for (size_t i = 0; i < r->info.cmdline_argc; i++)
            free(r->cmdline[i]);
        free(r->cmdline);
    }
    free((char *)r->info.hostname);
    free((char *)r->info.os_release);
    free((char *)r->info.perf_version);
    free((char *)r->info.arch);
    free((char *)r->info.cpu_desc);
    free((char *)r->info.cpuid);
}
