/*
 * pfm.c - hardware event names to perf_event_attr encodings with libpfm4,
 * and the default taken-branch event of the CPU's core PMU. Does not open
 * events (hw.c). libpfm4 is loaded here at lp_pfm_open (util/dynlib.h):
 * every other command would otherwise pay its load and relocations.
 * LIBPFM_FORCE_PMU=name makes libpfm4 pretend a PMU is present (used by
 * the unit tests).
 */
#include <perfmon/pfmlib_perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lbr2prof/record.h"
#include "util/dynlib.h"

/* The libpfm4 functions used, typed from its header. */
struct lp_pfm {
    void *lib;
    int inited;
    __typeof__(pfm_initialize) *initialize;
    __typeof__(pfm_strerror) *strerror;
    __typeof__(pfm_get_pmu_info) *get_pmu_info;
    __typeof__(pfm_get_event_info) *get_event_info;
    __typeof__(pfm_get_os_event_encoding) *get_os_event_encoding;
};

static const lp_dynsym pfm_syms[] = {
    LP_DYNSYM(lp_pfm, initialize, pfm_initialize),
    LP_DYNSYM(lp_pfm, strerror, pfm_strerror),
    LP_DYNSYM(lp_pfm, get_pmu_info, pfm_get_pmu_info),
    LP_DYNSYM(lp_pfm, get_event_info, pfm_get_event_info),
    LP_DYNSYM(lp_pfm, get_os_event_encoding, pfm_get_os_event_encoding),
};

lp_pfm *lp_pfm_open(lp_error *err)
{
    lp_pfm *p = calloc(1, sizeof *p);

    if (!p) {
        lp_error_set(err, LP_ENOMEM, "libpfm4: out of memory");
        return NULL;
    }
    p->lib = lp_dynlib_open("libpfm.so.4", "libpfm4", pfm_syms,
                            sizeof pfm_syms / sizeof pfm_syms[0], p, err);
    if (!p->lib) {
        free(p);
        return NULL;
    }
    return p;
}

/* pfm_initialize at the first query (its failure is the PMU's, not the
 * library's: hw.c words the two differently). */
static int pfm_init(lp_pfm *pf, lp_error *err)
{
    int rc;

    if (pf->inited)
        return 0;
    if ((rc = pf->initialize()) != PFM_SUCCESS)
        return lp_error_set(err, LP_EUNSUPP, "libpfm4: cannot initialize: %s",
                            pf->strerror(rc));
    pf->inited = 1;
    return 0;
}

void lp_pfm_close(lp_pfm *p)
{
    if (!p)
        return;
    lp_dynlib_close(p->lib);
    free(p);
}

/* The default core PMU that is present, or -1. */
static int core_pmu(lp_pfm *pf, pfm_pmu_info_t *info)
{
    int p, fallback = -1;

    pfm_for_all_pmus(p) {
        memset(info, 0, sizeof *info);
        info->size = sizeof *info;
        if (pf->get_pmu_info((pfm_pmu_t)p, info) != PFM_SUCCESS ||
            !info->is_present || info->type != PFM_PMU_TYPE_CORE)
            continue;
        if (info->is_dfl)
            return p;
        if (fallback < 0)
            fallback = p;
    }
    if (fallback >= 0) {
        info->size = sizeof *info;
        pf->get_pmu_info((pfm_pmu_t)fallback, info);
    }
    return fallback;
}

const char *lp_pfm_default_event(lp_pfm *pf, lp_error *err)
{
    pfm_pmu_info_t info;

    if (pfm_init(pf, err))
        return NULL;
    if (core_pmu(pf, &info) < 0) {
        lp_error_set(err, LP_EUNSUPP, "libpfm4 sees no hardware core PMU; "
                     "a VM without PMU passthrough?");
        return NULL;
    }
    if (strncmp(info.name, "amd64", 5) == 0)
        return "RETIRED_TAKEN_BRANCH_INSTRUCTIONS";
    if (strncmp(info.name, "arm", 3) == 0)
        return "BR_RETIRED";
    return "BR_INST_RETIRED:NEAR_TAKEN";
}

int lp_pfm_encode(lp_pfm *pf, const char *name, lp_pfm_event *ev, lp_error *err)
{
    struct perf_event_attr attr;
    pfm_perf_encode_arg_t arg;
    pfm_event_info_t einfo;
    pfm_pmu_info_t pinfo;
    char *fstr = NULL;
    int rc;

    if (pfm_init(pf, err))
        return -1;
    memset(&attr, 0, sizeof attr);
    memset(&arg, 0, sizeof arg);
    arg.attr = &attr;
    arg.fstr = &fstr;
    arg.size = sizeof arg;
    rc = pf->get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    if (rc == PFM_ERR_NOTFOUND && !strstr(name, "::") && core_pmu(pf, &pinfo) >= 0) {
        /* some PMUs (e.g. amd64_fam17h) only match qualified names */
        char q[256];
        snprintf(q, sizeof q, "%s::%s", pinfo.name, name);
        memset(&attr, 0, sizeof attr);
        rc = pf->get_os_event_encoding(q, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
    }
    if (rc != PFM_SUCCESS) {
        free(fstr);
        return lp_error_set(err, LP_EUNSUPP, "event '%s': %s", name,
                            pf->strerror(rc));
    }
    memset(ev, 0, sizeof *ev);
    ev->type = attr.type;
    ev->config = attr.config;
    ev->config1 = attr.config1;
    ev->config2 = attr.config2;
    ev->exclude_kernel = attr.exclude_kernel;
    ev->exclude_user = attr.exclude_user;
    snprintf(ev->fstr, sizeof ev->fstr, "%s", fstr ? fstr : name);
    free(fstr);
    memset(&einfo, 0, sizeof einfo);
    einfo.size = sizeof einfo;
    memset(&pinfo, 0, sizeof pinfo);
    pinfo.size = sizeof pinfo;
    if (pf->get_event_info(arg.idx, PFM_OS_NONE, &einfo) == PFM_SUCCESS &&
        pf->get_pmu_info(einfo.pmu, &pinfo) == PFM_SUCCESS)
        snprintf(ev->pmu, sizeof ev->pmu, "%s", pinfo.name);
    return 0;
}
