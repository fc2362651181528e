/* op.c : see op.h. */
#include "op.h"

aiter_aot_status aot_op_find(const char *name, unsigned kargs_size, aot_op_kernel *k, aot_diag *d)
{
    int dev = -1;
    AOT_FORWARD(aot_kernel(name, kargs_size, &k->fn, &k->gpu, &dev, d));
    k->wave = k->fn->wave_size ? k->fn->wave_size : 32; /* cubins record none: NVIDIA warps are 32 */
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_op_lanes(const char *probe, unsigned kargs_size, int experts, unsigned *wave, unsigned *vpt,
                              aot_diag *d)
{
    aot_op_kernel k;
    AOT_FORWARD(aot_op_find(probe, kargs_size, &k, d));
    *wave = k.wave, *vpt = 1;
    while (*vpt * *wave < (unsigned)experts) *vpt *= 2;
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_op_run(const aot_op_kernel *k, void *kargs, unsigned grid, unsigned block, unsigned shared,
                            unsigned flags, void *stream, aot_diag *d)
{
    AOT_FORWARD(k->gpu->launch(k->fn->fn, grid, block, shared, flags, stream, kargs, d));
    aot_count_launch();
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_op_run_cluster(const aot_op_kernel *k, void *kargs, unsigned grid, unsigned block, unsigned shared,
                                    unsigned cluster, void *stream, aot_diag *d)
{
    if (k->gpu->launch_cluster == NULL)
        return aot_fail(d, AITER_AOT_STATUS_UNSUPPORTED, "%s: %s launches no thread-block clusters", k->fn->name, k->gpu->name);
    AOT_FORWARD(k->gpu->launch_cluster(k->fn->fn, grid, block, shared, cluster, stream, kargs, d));
    aot_count_launch();
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_op_multiprocessors(int *count, aot_diag *d)
{
    const aot_gpu *gpu;
    int dev = -1; /* a global-scope hipGetDevice that writes nothing must not leave it undefined */
    AOT_FORWARD(aot_gpu_bind(&gpu, d));
    AOT_FORWARD(gpu->current_device(&dev, d));
    return gpu->multiprocessors(dev, count, d);
}

aiter_aot_status aot_op_launch(const char *name, void *kargs, unsigned kargs_size, unsigned grid,
                               unsigned block, unsigned flags, void *stream, aot_diag *d)
{
    aot_op_kernel k;
    AOT_FORWARD(aot_op_find(name, kargs_size, &k, d));
    return aot_op_run(&k, kargs, grid, block, 0, flags, stream, d);
}
