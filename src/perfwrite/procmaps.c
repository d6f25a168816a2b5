/*
 * procmaps.c - MMAP2 records (with GNU build-ids) synthesized from
 * /proc/PID/maps, for the executable mappings of a process; used by
 * `record --simulate` after exec and mmap, and by hardware `record -p`
 * for what the process mapped before recording started. Owns parsing of
 * the maps file and reading build-ids; not when to scan.
 */
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lbr2prof/perfwrite.h"

/* The GNU build-id of `path`, or 0 bytes. */
static int file_build_id(const char *path, uint8_t out[20])
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;
    const void *id = NULL;
    Elf *e;
    ssize_t len;

    if (fd < 0)
        return 0;
    elf_version(EV_CURRENT);
    e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (e) {
        len = dwelf_elf_gnu_build_id(e, &id);
        if (len > 0 && len <= 20) {
            memcpy(out, id, (size_t)len);
            n = (int)len;
        }
        elf_end(e);
    }
    close(fd);
    return n;
}

typedef struct map_line {
    uint64_t start, end, pgoff, ino;
    unsigned maj, min;
    char perms[8];
    char path[400];
} map_line;

static int parse_line(const char *line, map_line *m)
{
    int pos = 0;

    m->path[0] = 0;
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
               &m->start, &m->end, m->perms, &m->pgoff, &m->maj, &m->min,
               &m->ino, &pos) < 7)
        return -1;
    snprintf(m->path, sizeof m->path, "%s", line + pos);
    m->path[strcspn(m->path, "\n")] = 0;
    return 0;
}

static int emit_map(lp_perfwrite *w, pid_t pid, pid_t tid, uint64_t time,
                    const map_line *m, lp_error *err)
{
    lp_mmap_event e;

    memset(&e, 0, sizeof e);
    e.pid = (uint32_t)pid;
    e.tid = (uint32_t)tid;
    e.start = m->start;
    e.len = m->end - m->start;
    e.pgoff = m->pgoff;
    e.is_mmap2 = 1;
    e.maj = m->maj;
    e.min = m->min;
    e.ino = m->ino;
    e.prot = PROT_EXEC | (m->perms[0] == 'r' ? PROT_READ : 0) |
             (m->perms[1] == 'w' ? PROT_WRITE : 0);
    e.flags = m->perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
    e.filename = m->path[0] ? m->path : "//anon";
    if (m->path[0] == '/')
        e.build_id_size = (uint8_t)file_build_id(m->path, e.build_id);
    return lp_perfwrite_mmap2(w, &e, time, err);
}

int lp_perfwrite_proc_maps(lp_perfwrite *w, pid_t pid, pid_t tid,
                           uint64_t time, lp_perfwrite_seen_fn seen, void *ctx,
                           lp_error *err)
{
    char fn[64], line[1024], key[512];
    FILE *f;
    map_line m;
    int rc = 0, r;

    snprintf(fn, sizeof fn, "/proc/%d/maps", (int)pid);
    f = fopen(fn, "re");
    if (!f)
        return 0; /* the process is gone */
    while (rc == 0 && fgets(line, sizeof line, f)) {
        if (parse_line(line, &m) || m.perms[2] != 'x' ||
            strcmp(m.path, "[vsyscall]") == 0)
            continue;
        snprintf(key, sizeof key, "%" PRIx64 "-%" PRIx64 " %" PRIx64 " %.400s",
                 m.start, m.end, m.pgoff, m.path);
        r = seen ? seen(ctx, key) : 0;
        if (r < 0)
            rc = lp_error_set(err, LP_ENOMEM, "out of memory");
        else if (r == 0)
            rc = emit_map(w, pid, tid, time, &m, err);
    }
    fclose(f);
    return rc;
}
