/* loader.h : the embedded bundle and the per-device cache of loaded kernels. */
#ifndef AOT_LOADER_H
#define AOT_LOADER_H

#include "bundle.h"
#include "gpu.h"

#define AOT_MAX_DEVICES 64

typedef struct {
    void *fn;
    const char *name;          /* in the embedded bundle's string table */
    unsigned explicit_args;    /* bytes of the kernel's own arguments */
    unsigned wave_size;
} aot_kernel_fn;

/* The embedded bundle, checked once. @return OK or CORRUPT_BUNDLE. */
aiter_aot_status aot_embedded(const aot_bundle **b, aot_diag *d);

/* Binds the GPU runtime, finds the current device and, on the first call for that device,
 * loads every code object of its target (exactly once, whatever the number of threads).
 * Then finds kernel `name` and checks its argument size. */
aiter_aot_status aot_kernel(const char *name, unsigned args_size, const aot_kernel_fn **fn,
                            const aot_gpu **gpu, int *device, aot_diag *d);

/* What aot_load_frame loaded: the kernel table (malloc'ed, owned by the caller) and counts. */
typedef struct {
    aot_kernel_fn *fns;
    unsigned nfns, modules, frames;
    unsigned long long decompress_ns, module_load_ns, lookup_ns; /* wall time of each step */
} aot_loaded;

/* Picks the frame of checked bundle `b` that a device of `device_target` runs best,
 * decompresses it, loads each of its code objects through `gpu` and resolves every kernel.
 * It needs no device of its own: tests drive it on the CPU with crafted bundles.
 * @return OK with *out filled, or an error (then out->fns is NULL, its counts stay valid and
 *         the modules it loaded are unloaded where the GPU table can). */
aiter_aot_status aot_load_frame(const aot_bundle *b, const char *device_target, const aot_gpu *gpu,
                                int device, aot_loaded *out, aot_diag *d);

/* Counters behind aiter_aot_get_stats. */
typedef struct {
    unsigned long long modules_loaded, frames_decompressed, launches, device_loads;
    unsigned long long decompress_ns, module_load_ns, lookup_ns;
} aot_counters;
void aot_counters_read(aot_counters *c);
void aot_count_launch(void);

#endif
