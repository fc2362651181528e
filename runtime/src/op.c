/* op.c : see op.h. */
#include "op.h"

aiter_aot_status aot_op_wave(const char *name, unsigned kargs_size, unsigned *wave, aot_diag *d)
{
    const aot_kernel_fn *fn;
    const aot_gpu *gpu;
    int dev;
    AOT_FORWARD(aot_kernel(name, kargs_size, &fn, &gpu, &dev, d));
    *wave = fn->wave_size ? fn->wave_size : 32; /* cubins record none: NVIDIA warps are 32 */
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_op_multiprocessors(int *count, aot_diag *d)
{
    const aot_gpu *gpu;
    int dev;
    AOT_FORWARD(aot_gpu_bind(&gpu, d));
    AOT_FORWARD(gpu->current_device(&dev, d));
    return gpu->multiprocessors(dev, count, d);
}

aiter_aot_status aot_op_launch(const char *name, void *kargs, unsigned kargs_size, unsigned grid,
                               unsigned block, void *stream, aot_diag *d)
{
    const aot_kernel_fn *fn;
    const aot_gpu *gpu;
    int dev;
    AOT_FORWARD(aot_kernel(name, kargs_size, &fn, &gpu, &dev, d));
    AOT_FORWARD(gpu->launch(fn->fn, grid, block, 0, stream, kargs, d));
    aot_count_launch();
    return AITER_AOT_STATUS_OK;
}
