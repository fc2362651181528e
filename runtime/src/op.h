/* op.h : what every op's code (op_moe.c, op_mhc.c, op_fmha.c) shares: kernel lookup and launch. */
#ifndef AOT_OP_H
#define AOT_OP_H

#include <stdint.h>

#include "loader.h"

/* The one way ops report a bad argument (zstd's RETURN_ERROR_IF): AOT_INVALID is the failure as
 * a value, AOT_INVALID_IF returns it from the enclosing function when `cond` holds, so an op's
 * checks read one rule a line. `d` is an aot_diag pointer. */
#define AOT_INVALID(d, ...) aot_fail((d), AITER_AOT_STATUS_INVALID_ARGUMENT, __VA_ARGS__)
#define AOT_INVALID_IF(cond, d, ...)                      \
    do {                                                  \
        if (cond) return AOT_INVALID((d), __VA_ARGS__);   \
    } while (0)

static inline int aot_misaligned(const void *p, size_t align) { return ((uintptr_t)p & (align - 1)) != 0; }

/* A kernel of the current device, found once and launched from there. */
typedef struct {
    const aot_kernel_fn *fn;
    const aot_gpu *gpu;
    unsigned wave; /* lanes per wave */
} aot_op_kernel;

/* Looks kernel `name` up for the current device (loading its code objects if needed) and checks
 * its argument size against the bundle's record. */
aiter_aot_status aot_op_find(const char *name, unsigned kargs_size, aot_op_kernel *k, aot_diag *d);

/* For ops with a row of `experts` spread over a wave: *wave, the current device's wave size
 * (found through kernel `probe`, any variant of the op), and *vpt, the smallest power of two
 * with vpt * wave >= experts (the variant's experts a lane). */
aiter_aot_status aot_op_lanes(const char *probe, unsigned kargs_size, int experts, unsigned *wave, unsigned *vpt,
                              aot_diag *d);

/* Launches a found kernel with a 1-D grid and `shared` bytes of dynamic shared memory (what its
 * AOT_SHARED_DYN array takes); flags: 0 or AOT_LAUNCH_FOLLOWS (gpu.h). */
aiter_aot_status aot_op_run(const aot_op_kernel *k, void *kargs, unsigned grid, unsigned block, unsigned shared,
                            unsigned flags, void *stream, aot_diag *d);

/* The same in clusters of `cluster` blocks (grid a multiple of it); UNSUPPORTED where the vendor
 * has no clusters. */
aiter_aot_status aot_op_run_cluster(const aot_op_kernel *k, void *kargs, unsigned grid, unsigned block, unsigned shared,
                                    unsigned cluster, void *stream, aot_diag *d);

/* Multiprocessors (CUs / SMs) of the current device. */
aiter_aot_status aot_op_multiprocessors(int *count, aot_diag *d);

/* aot_op_find, then aot_op_run. */
aiter_aot_status aot_op_launch(const char *name, void *kargs, unsigned kargs_size, unsigned grid,
                               unsigned block, unsigned flags, void *stream, aot_diag *d);

#endif
