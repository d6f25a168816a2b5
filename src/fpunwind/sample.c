/*
 * sample.c - frame-pointer callchains of perf samples that carry user
 * registers and stack (perf record --call-graph dwarf, or --user-regs +
 * --user-stack): the walk of the dump, and the leaf repair with the binary
 * the process had mapped at the leaf IP, opened lazily by path.
 *
 * Owns the per-file binary cache and the per-function analysis cache
 * behind lp_fp_sampler. Does not own the walk (walk.c), the detection
 * (leaf.c), process maps (lp_machine) or ELF (lp_binary).
 */
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "lbr2prof/binary.h"
#include "lbr2prof/fpunwind.h"
#include "lbr2prof/machine.h"
#include "lbr2prof/reader.h"

/* One file, opened on first use; b == NULL: it could not be opened. */
typedef struct fs_bin {
    lp_binary *b;
    UT_hash_handle hh;
    char path[];
} fs_bin;

struct lp_fp_sampler {
    fs_bin *bins;
    lp_leaf_cache *cache;
    lp_fp_sampler_stats st;
};

lp_fp_sampler *lp_fp_sampler_new(lp_error *err)
{
    lp_fp_sampler *s = calloc(1, sizeof *s);

    if (!s) {
        lp_error_set(err, LP_ENOMEM, "out of memory");
        return NULL;
    }
    s->cache = lp_leaf_cache_new(err);
    if (!s->cache) {
        free(s);
        return NULL;
    }
    return s;
}

void lp_fp_sampler_free(lp_fp_sampler *s)
{
    fs_bin *e, *tmp;

    if (!s)
        return;
    HASH_ITER(hh, s->bins, e, tmp) {
        HASH_DEL(s->bins, e);
        lp_binary_close(e->b);
        free(e);
    }
    lp_leaf_cache_free(s->cache);
    free(s);
}

const lp_fp_sampler_stats *lp_fp_sampler_get_stats(const lp_fp_sampler *s)
{
    return &s->st;
}

/* A build-id recorded for the map that is not the file's: the file on
 * disk is not what ran (rebuilt since), its code would mislead. */
static bool stale(lp_fp_sampler *s, const lp_map *mp, const lp_binary *b)
{
    const uint8_t *id;
    size_t n = lp_binary_build_id(b, &id);

    if (!mp->build_id_size || !n)
        return false;
    if (n == mp->build_id_size && memcmp(id, mp->build_id, n) == 0)
        return false;
    s->st.build_id_mismatch++;
    return true;
}

/* The binary for a file-backed map, or NULL (anonymous, [vdso], cannot
 * be opened: remembered, tried once; or not the file that ran). */
static lp_binary *binary_for(lp_fp_sampler *s, const lp_map *mp)
{
    lp_binary_opts o;
    lp_error e;
    fs_bin *f;
    size_t n;

    if (!mp || mp->kernel || mp->anon || !mp->filename ||
        mp->filename[0] != '/')
        return NULL;
    n = strlen(mp->filename);
    HASH_FIND(hh, s->bins, mp->filename, n, f);
    if (f)
        return f->b && !stale(s, mp, f->b) ? f->b : NULL;
    f = malloc(sizeof *f + n + 1);
    if (!f)
        return NULL;
    memcpy(f->path, mp->filename, n + 1);
    memset(&o, 0, sizeof o);
    o.fs_discriminator = -1;
    o.symtab_functions = 1;
    f->b = lp_binary_open(f->path, &o, &e);
    if (!f->b)
        s->st.binaries_failed++;
    else
        s->st.binaries_opened++;
    HASH_ADD_KEYPTR(hh, s->bins, f->path, n, f);
    return f->b && !stale(s, mp, f->b) ? f->b : NULL;
}

int lp_fp_sampler_classify(lp_fp_sampler *s, const lp_machine *m,
                           uint32_t pid, uint64_t ip, lp_leaf_info *out,
                           lp_error *err)
{
    const lp_map *mp = lp_machine_find_map(m, pid, ip, LP_CPUMODE_USER);
    lp_binary *b = binary_for(s, mp);
    uint64_t vaddr;

    memset(out, 0, sizeof *out);
    if (!b || lp_binary_arch(b) != LP_ARCH_X86_64 ||
        lp_binary_map_to_vaddr(b, mp->start, mp->pgoff, ip, &vaddr) < 0)
        return 0;
    return lp_leaf_classify_cached(s->cache, b, vaddr, out, err);
}

int lp_fp_sample_user_chain(lp_fp_sampler *s, const lp_machine *m,
                            const lp_sample *sm, enum lp_fp_mode mode,
                            uint64_t *out, size_t cap, size_t *n,
                            lp_error *err)
{
    lp_fpu_regs regs;
    lp_fpu_stack st;
    lp_fpu_result r;
    lp_leaf_info li;

    *n = 0;
    if (lp_fpu_regs_from_perf(sm->regs_user_abi, sm->regs_user_mask,
                              sm->regs_user, &regs) < 0 ||
        !sm->stack_user) {
        s->st.no_user_stack++;
        return 0;
    }
    st.base = regs.sp;
    st.data = sm->stack_user;
    st.size = sm->stack_user_dyn_size < sm->stack_user_size
                  ? sm->stack_user_dyn_size
                  : sm->stack_user_size;
    r = lp_fpu_unwind_stack(&regs, &st, mode == LP_FP_PLAIN ? LP_FPU_PLAIN : 0,
                            out, cap);
    *n = r.frames_written;
    s->st.walked++;
    if (mode != LP_FP_REPAIRED)
        return 1;
    if (lp_fp_sampler_classify(s, m, sm->pid, regs.ip, &li, err) < 0) {
        if (err && err->code == LP_ENOMEM)
            return -1;
        s->st.classify_errors++; /* e.g. the file changed: no repair */
        memset(&li, 0, sizeof li);
    }
    /* our chain is an FP walk of these very registers: the caller is
     * missing even when it equals frame 1 (recursion) */
    lp_leaf_repair_stack(&li, &regs, &st, out, n, cap,
                         LP_LEAF_CHAIN_IS_FP_WALK, &s->st.leaf);
    return 1;
}

int lp_fp_mode_parse(const char *s, enum lp_fp_mode *mode)
{
    static const char *const names[] = {
        [LP_FP_PLAIN] = "plain", [LP_FP_VALIDATED] = "validated",
        [LP_FP_REPAIRED] = "repaired",
    };
    int i;

    for (i = LP_FP_PLAIN; i <= LP_FP_REPAIRED; i++)
        if (strcmp(s, names[i]) == 0) {
            *mode = (enum lp_fp_mode)i;
            return 0;
        }
    return -1;
}
