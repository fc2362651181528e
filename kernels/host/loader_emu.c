/* loader_emu.c : the runtime's loader interface (runtime/src/loader.h) served by the host
 * emulator, so that emulator tests run the real op code (runtime/src/op_moe.c: checks,
 * variant choice, launch shapes) with kernels compiled for the CPU. AOT_EMU_WAVE selects the
 * wave size, as the kernels were compiled with. */
#include <stdio.h>
#include <string.h>

#include "emu.h"
#include "kernel_ids.h"
#include "loader.h"
#include "fmha_kargs.h"
#include "mhc_kargs.h"
#include "moe_kargs.h"

/* Every kernel of the families' variant lists (runtime/src/kernel_ids.h); those built where
 * AOT_PIPELINES is (sm_90a's warp-specialized pipelines) and the wave-32 lists only at wave 32. */
#define EMU_KERNELS(X)                                                                      \
    AOT_TOPK_VARIANTS(X) AOT_MOE_SORT_VARIANTS(X) AOT_ROUTE_VARIANTS(X) AOT_MOE_ALIGN_VARIANTS(X) \
    AOT_MHC_VARIANTS(X) AOT_FMHA_VARIANTS(X)

#if AOT_EMU_WAVE == 32
#define EMU_KERNELS_W32(X)                                                                  \
    AOT_TOPK_WAVE32_VARIANTS(X) AOT_ROUTE_WAVE32_VARIANTS(X) AOT_MHC_PIPELINE_VARIANTS(X) \
    AOT_FMHA_PIPELINE_VARIANTS(X)
#else
#define EMU_KERNELS_W32(X)
#endif

#define DECLARE(k, t, ...) void k##_emu(const void *args);
EMU_KERNELS(DECLARE)
EMU_KERNELS_W32(DECLARE)
#define ENTRY(k, t, ...) {(void *)k##_emu, #k, sizeof(t), AOT_EMU_WAVE},
static aot_kernel_fn table[] = {EMU_KERNELS(ENTRY) EMU_KERNELS_W32(ENTRY)};

static unsigned long long launches;
static unsigned long long launched[sizeof table / sizeof table[0]]; /* per kernel of the table */

static void count_kernel(void *fn)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].fn == fn) launched[i]++;
}

size_t emu_unlaunched(const char **names, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!launched[i] && n < cap) names[n++] = table[i].name;
    return n;
}

static aiter_aot_status emu_gpu_launch(void *fn, unsigned grid, unsigned block, unsigned shared, unsigned flags,
                                       void *stream, void *args, aot_diag *d)
{
    char err[256];
    (void)stream, (void)flags; /* kernels run one after another */
    count_kernel(fn);
    if (emu_launch((emu_kernel_fn)fn, args, grid, block, shared, AOT_EMU_WAVE, err, sizeof err) != 0)
        return aot_fail(d, AITER_AOT_STATUS_LAUNCH_FAILED, "%s", err);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status emu_gpu_launch_cluster(void *fn, unsigned grid, unsigned block, unsigned shared, unsigned cluster,
                                               void *stream, void *args, aot_diag *d)
{
    char err[256];
    (void)stream;
    count_kernel(fn);
    if (emu_launch_cluster((emu_kernel_fn)fn, args, grid, block, cluster, shared, AOT_EMU_WAVE, err, sizeof err) != 0)
        return aot_fail(d, AITER_AOT_STATUS_LAUNCH_FAILED, "%s", err);
    return AITER_AOT_STATUS_OK;
}

/* Two clusters at once, so that persistent kernels split their work. */
static aiter_aot_status emu_clusters_that_fit(void *fn, unsigned block, unsigned shared, unsigned cluster, int *count,
                                              aot_diag *d)
{
    (void)fn, (void)block, (void)shared, (void)cluster, (void)d;
    *count = 2;
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status emu_make_tile_map(void *map, const void *base, const uint64_t dims[3], const uint64_t strides[2],
                                     const uint32_t box[3], aot_diag *d)
{
    emu_tile_map m = {base, {dims[0], dims[1], dims[2]}, {strides[0], strides[1]}, {box[0], box[1], box[2]}};
    if (box[0] != 64) return aot_fail(d, AITER_AOT_STATUS_INVALID_ARGUMENT, "emu: tile boxes are 64 elements wide");
    memcpy(map, &m, sizeof m);
    return AITER_AOT_STATUS_OK;
}

/* The emulator plays a small device of 4 multiprocessors, so split choices stay > 1. */
static aiter_aot_status emu_current_device(int *device, aot_diag *d) { (void)d; *device = 0; return AITER_AOT_STATUS_OK; }
static aiter_aot_status emu_multiprocessors(int device, int *count, aot_diag *d) { (void)device, (void)d; *count = 4; return AITER_AOT_STATUS_OK; }

static const aot_gpu emu_gpu = {.name = "EMU", .library = "host emulator", .current_device = emu_current_device,
                                .multiprocessors = emu_multiprocessors, .launch = emu_gpu_launch,
                                .clusters_that_fit = emu_clusters_that_fit, .launch_cluster = emu_gpu_launch_cluster,
                                .tile_map = emu_make_tile_map};

aiter_aot_status aot_kernel(const char *name, unsigned args_size, const aot_kernel_fn **fn,
                            const aot_gpu **gpu, int *device, aot_diag *d)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(table[i].name, name) != 0) continue;
        if (table[i].explicit_args != args_size)
            return aot_fail(d, AITER_AOT_STATUS_CORRUPT_BUNDLE, "%s: argument size mismatch", name);
        *fn = &table[i], *gpu = &emu_gpu, *device = 0;
        return AITER_AOT_STATUS_OK;
    }
    return aot_fail(d, AITER_AOT_STATUS_NO_CODE_OBJECT, "emulator has no kernel %s", name);
}

aiter_aot_status aot_gpu_bind(const aot_gpu **gpu, aot_diag *d)
{
    (void)d;
    *gpu = &emu_gpu;
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_embedded(const aot_bundle **b, aot_diag *d)
{
    (void)b;
    return aot_fail(d, AITER_AOT_STATUS_UNSUPPORTED, "the emulator build embeds no bundle");
}

void aot_counters_read(aot_counters *c) { memset(c, 0, sizeof *c), c->launches = launches; }
void aot_count_launch(void) { launches++; }
