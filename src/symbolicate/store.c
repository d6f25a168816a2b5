/*
 * store.c - where symbols come from: Breakpad directories and ELF files.
 * Owns path construction (and its containment checks), the ELF debug-id
 * index and the thread-safe cache of loaded modules. Not the request
 * format (request.c) nor lookups (breakpad/module.c).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <uthash.h>

#include "lbr2prof/symbolicate.h"

#define MAX_CACHED 256      /* modules kept loaded; beyond, load per use */

typedef struct elf_entry {
    char debug_id[34];
    char *path;
} elf_entry;

typedef struct cache_entry {
    char *key;              /* "<debug_file>/<DEBUG_ID>" */
    lp_bp_module *m;
    UT_hash_handle hh;
} cache_entry;

struct lp_sym_store {
    char **dirs;            /* realpath of each Breakpad directory */
    size_t ndirs;
    char **dbgdirs;         /* realpath of each .build-id debug directory */
    size_t ndbgdirs;
    elf_entry *elfs;
    size_t nelfs, cap_elfs;
    cache_entry *cache;     /* guarded by lock */
    size_t ncached;
    pthread_mutex_t lock;
};

lp_sym_store *lp_sym_store_new(lp_error *err)
{
    lp_sym_store *s = calloc(1, sizeof *s);

    if (!s) {
        lp_error_set(err, LP_ENOMEM, "symbol store: out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    return s;
}

void lp_sym_store_free(lp_sym_store *s)
{
    cache_entry *e, *t;
    size_t i;

    if (!s)
        return;
    HASH_ITER(hh, s->cache, e, t) {
        HASH_DEL(s->cache, e);
        lp_bp_free(e->m);
        free(e->key);
        free(e);
    }
    for (i = 0; i < s->ndirs; i++)
        free(s->dirs[i]);
    for (i = 0; i < s->ndbgdirs; i++)
        free(s->dbgdirs[i]);
    free(s->dbgdirs);
    for (i = 0; i < s->nelfs; i++)
        free(s->elfs[i].path);
    free(s->dirs);
    free(s->elfs);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

static int add_dir(char ***arr, size_t *n, const char *dir, lp_error *err)
{
    char *rp = realpath(dir, NULL), **nd;
    struct stat st;

    if (!rp || stat(rp, &st) < 0 || !S_ISDIR(st.st_mode)) {
        free(rp);
        return lp_error_set(err, LP_EUSAGE, "%s: not a directory", dir);
    }
    nd = realloc(*arr, (*n + 1) * sizeof *nd);
    if (!nd) {
        free(rp);
        return lp_error_set(err, LP_ENOMEM, "symbol store: out of memory");
    }
    *arr = nd;
    (*arr)[(*n)++] = rp;
    return 0;
}

int lp_sym_store_add_dir(lp_sym_store *s, const char *dir, lp_error *err)
{
    return add_dir(&s->dirs, &s->ndirs, dir, err);
}

int lp_sym_store_add_debug_dir(lp_sym_store *s, const char *dir, lp_error *err)
{
    return add_dir(&s->dbgdirs, &s->ndbgdirs, dir, err);
}

static int add_one_elf(lp_sym_store *s, const char *path, int quiet, lp_error *err)
{
    lp_bp_elf_id id;
    elf_entry *ne;
    lp_error e2;

    if (lp_bp_elf_identify(path, &id, &e2) < 0) {
        if (quiet)
            return 0; /* directories may hold other files */
        *err = e2;
        return -1;
    }
    if (s->nelfs == s->cap_elfs) {
        size_t ncap = s->cap_elfs ? s->cap_elfs * 2 : 16;
        if (!(ne = realloc(s->elfs, ncap * sizeof *ne)))
            return lp_error_set(err, LP_ENOMEM, "symbol store: out of memory");
        s->elfs = ne;
        s->cap_elfs = ncap;
    }
    if (!(s->elfs[s->nelfs].path = strdup(path)))
        return lp_error_set(err, LP_ENOMEM, "symbol store: out of memory");
    memcpy(s->elfs[s->nelfs].debug_id, id.debug_id, sizeof id.debug_id);
    s->nelfs++;
    return 0;
}

int lp_sym_store_add_elf(lp_sym_store *s, const char *path, lp_error *err)
{
    struct stat st;
    DIR *d;
    struct dirent *de;
    char full[PATH_MAX];
    int r = 0;

    if (stat(path, &st) < 0)
        return lp_error_set(err, LP_EUSAGE, "%s: %s", path, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return add_one_elf(s, path, 0, err);
    if (!(d = opendir(path)))
        return lp_error_set(err, LP_EIO, "%s: %s", path, strerror(errno));
    while (r == 0 && (de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        if (snprintf(full, sizeof full, "%s/%s", path, de->d_name) >= (int)sizeof full)
            continue;
        if (stat(full, &st) == 0 && S_ISREG(st.st_mode))
            r = add_one_elf(s, full, 1, err);
    }
    closedir(d);
    return r;
}

/* ---- paths ---- */

static int valid_name(const char *f)
{
    if (!*f || !strcmp(f, ".") || !strcmp(f, ".."))
        return 0;
    for (; *f; f++)
        if (!isalnum((unsigned char)*f) && !strchr("_.+{}@<> ~-", *f))
            return 0;
    return 1;
}

static int valid_id(const char *id)
{
    if (!*id)
        return 0;
    for (; *id; id++)
        if (!isxdigit((unsigned char)*id))
            return 0;
    return 1;
}

int lp_sym_path(const char *dir, const char *debug_file, const char *debug_id,
                char *out, size_t outsz)
{
    size_t n = strlen(debug_file);
    int w;

    if (!valid_name(debug_file) || !valid_id(debug_id))
        return -1;
    if (n > 4 && !strcmp(debug_file + n - 4, ".pdb"))
        w = snprintf(out, outsz, "%s/%s/%s/%.*s.sym", dir, debug_file, debug_id,
                     (int)(n - 4), debug_file);
    else
        w = snprintf(out, outsz, "%s/%s/%s/%s.sym", dir, debug_file, debug_id, debug_file);
    return w < 0 || (size_t)w >= outsz ? -1 : 0;
}

/* The .sym path must resolve to a file below dir (symlinks included). */
static int inside(const char *dir, const char *path)
{
    char *rp = realpath(path, NULL);
    size_t n = strlen(dir);
    int ok = rp && !strncmp(rp, dir, n) && rp[n] == '/';

    free(rp);
    return ok;
}

/* Parse a .sym and check its MODULE id against the requested one. */
static lp_bp_module *load_sym(const char *path, const char *debug_id)
{
    lp_error err;
    lp_bp_module *m = lp_bp_parse_file(path, &err);

    if (m && strcasecmp(m->debug_id, debug_id) != 0) {
        lp_bp_free(m);
        return NULL;
    }
    return m;
}

static lp_bp_module *load_from_dirs(lp_sym_store *s, const char *file, const char *id,
                                    lp_sym_handle *h)
{
    char path[PATH_MAX], up[64];
    size_t i, k;
    struct stat st;

    for (k = 0; id[k] && k < sizeof up - 1; k++)
        up[k] = (char)toupper((unsigned char)id[k]);
    up[k] = '\0';
    for (i = 0; i < s->ndirs; i++) {
        /* As given first, then with the id upper-cased (the usual form). */
        if ((lp_sym_path(s->dirs[i], file, id, path, sizeof path) == 0 &&
             stat(path, &st) == 0 && inside(s->dirs[i], path)) ||
            (strcmp(up, id) && lp_sym_path(s->dirs[i], file, up, path, sizeof path) == 0 &&
             stat(path, &st) == 0 && inside(s->dirs[i], path))) {
            h->loaded = 1;
            h->bytes = (long long)st.st_size;
            return load_sym(path, id);
        }
    }
    return NULL;
}

static lp_bp_module *load_from_elfs(lp_sym_store *s, const char *id, lp_sym_handle *h)
{
    size_t i;
    lp_error err;
    struct stat st;

    for (i = 0; i < s->nelfs; i++)
        if (!strcasecmp(s->elfs[i].debug_id, id)) {
            h->loaded = 1;
            h->bytes = stat(s->elfs[i].path, &st) == 0 ? (long long)st.st_size : -1;
            return lp_bp_from_elf(s->elfs[i].path, &err);
        }
    return NULL;
}

/* The first 16 build-id bytes a 33-character debug id stands for, as
 * lower-case hex (the GUID swap undone). -1 for any other id. */
static int id_to_build_id_prefix(const char *id, char out[33])
{
    static const int order[16] = {3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15};
    int i;

    if (strlen(id) != 33)
        return -1;
    for (i = 0; i < 16; i++) { /* id byte i is build-id byte order[i] */
        out[2 * order[i]] = (char)tolower((unsigned char)id[2 * i]);
        out[2 * order[i] + 1] = (char)tolower((unsigned char)id[2 * i + 1]);
    }
    out[32] = '\0';
    return 0;
}

/* DIR/.build-id/xx/<rest of the 16 bytes>*.debug whose own id matches. */
static lp_bp_module *load_from_debug_dirs(lp_sym_store *s, const char *id, lp_sym_handle *h)
{
    char pre[33], sub[PATH_MAX], path[PATH_MAX];
    size_t i, n;
    DIR *d;
    struct dirent *de;
    lp_bp_elf_id eid;
    lp_error err;
    struct stat st;

    if (id_to_build_id_prefix(id, pre) < 0)
        return NULL;
    for (i = 0; i < s->ndbgdirs; i++) {
        snprintf(sub, sizeof sub, "%s/.build-id/%.2s", s->dbgdirs[i], pre);
        if (!(d = opendir(sub)))
            continue;
        while ((de = readdir(d))) {
            n = strlen(de->d_name);
            if (strncmp(de->d_name, pre + 2, 30) || n < 6 || strcmp(de->d_name + n - 6, ".debug") ||
                snprintf(path, sizeof path, "%s/%s", sub, de->d_name) >= (int)sizeof path ||
                lp_bp_elf_identify(path, &eid, &err) < 0 || strcasecmp(eid.debug_id, id))
                continue;
            closedir(d);
            h->loaded = 1;
            h->bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
            return lp_bp_from_elf(path, &err);
        }
        closedir(d);
    }
    return NULL;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *cache_key(const char *file, const char *id)
{
    size_t n = strlen(file), k = strlen(id), i;
    char *key = malloc(n + k + 2);

    if (!key)
        return NULL;
    memcpy(key, file, n);
    key[n] = '/';
    for (i = 0; i < k; i++)
        key[n + 1 + i] = (char)toupper((unsigned char)id[i]);
    key[n + k + 1] = '\0';
    return key;
}

/* Keep m in the cache (or hand it back as owned when the cache is full or
 * another thread loaded it first). */
static void cache_put(lp_sym_store *s, char *key, lp_bp_module *m, lp_sym_handle *h)
{
    cache_entry *e;

    pthread_mutex_lock(&s->lock);
    HASH_FIND_STR(s->cache, key, e);
    if (e) {
        h->m = e->m;
        h->owned = 0;
        lp_bp_free(m);
        free(key);
    } else if (s->ncached < MAX_CACHED && (e = calloc(1, sizeof *e))) {
        e->key = key;
        e->m = m;
        HASH_ADD_KEYPTR(hh, s->cache, e->key, strlen(e->key), e);
        s->ncached++;
        h->m = m;
        h->owned = 0;
    } else {
        h->m = m;
        h->owned = 1;
        free(key);
    }
    pthread_mutex_unlock(&s->lock);
}

int lp_sym_store_get(lp_sym_store *s, const char *debug_file, const char *debug_id,
                     lp_sym_handle *h)
{
    char *key;
    cache_entry *e;
    lp_bp_module *m;

    double t0;

    memset(h, 0, sizeof *h);
    h->bytes = -1;
    if (!valid_name(debug_file) || !valid_id(debug_id) || !(key = cache_key(debug_file, debug_id)))
        return 0;
    pthread_mutex_lock(&s->lock);
    HASH_FIND_STR(s->cache, key, e);
    if (e)
        h->m = e->m;
    pthread_mutex_unlock(&s->lock);
    if (h->m) {
        h->cache_hit = 1;
        free(key);
        return 1;
    }
    /* Load outside the lock: parsing a big module must not stall others. */
    t0 = now();
    m = load_from_dirs(s, debug_file, debug_id, h);
    if (!m) /* none, or one that did not parse: the ELF files may have it */
        m = load_from_elfs(s, debug_id, h);
    if (!m)
        m = load_from_debug_dirs(s, debug_id, h);
    h->load_seconds = now() - t0;
    if (!m) {
        free(key);
        return 0;
    }
    cache_put(s, key, m, h);
    return 1;
}

void lp_sym_store_release(lp_sym_store *s, lp_sym_handle *h)
{
    (void)s;
    if (h->owned)
        lp_bp_free((lp_bp_module *)h->m);
    h->m = NULL;
    h->owned = 0;
}
