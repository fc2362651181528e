/* gpu.h : what the runtime needs from a GPU runtime, as one table per vendor (vendor_hip.c,
 * vendor_cuda.c), filled once by aot_gpu_bind. Every function returns a status and explains
 * a failure in the aot_diag. */
#ifndef AOT_GPU_H
#define AOT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "diag.h"

/* What aiter_aot_gpu_library() names under AITER_AOT_GLOBAL_SYMBOLS=1: the entry points are
 * the global scope's, whichever object defines them, not necessarily the vendor library's. */
#define AOT_GLOBAL_SCOPE_LIBRARY "the global scope (AITER_AOT_GLOBAL_SYMBOLS=1)"

typedef struct {
    const char *name;      /* "HIP", "CUDA" */
    char library[512];     /* the vendor library every entry point was taken from */
    int global_symbols;    /* AITER_AOT_GLOBAL_SYMBOLS=1 was in force */
    aiter_aot_status (*device_count)(int *count, aot_diag *d);
    aiter_aot_status (*current_device)(int *device, aot_diag *d);
    aiter_aot_status (*device_target)(int device, char *buf, size_t cap, aot_diag *d);
    aiter_aot_status (*multiprocessors)(int device, int *count, aot_diag *d);
    aiter_aot_status (*load_module)(int device, const void *image, void **module, aot_diag *d);
    aiter_aot_status (*get_function)(void *module, const char *name, void **fn, aot_diag *d);
    /* Unloads a module of `device` that load_module made (best effort: a failed load of a
     * frame gives back the modules it had loaded); NULL where the vendor library has none. */
    void (*unload_module)(int device, void *module);
    aiter_aot_status (*launch)(void *fn, unsigned grid, unsigned block, unsigned shared_bytes,
                               unsigned flags, void *stream, void *args, aot_diag *d);
    /* Thread-block clusters and tensor copies; NULL where the vendor (or its driver) has none.
     * clusters_that_fit: how many clusters of `cluster` blocks can run at once. launch_cluster:
     * grid blocks (a multiple of cluster) in clusters. tile_map: the copy engine's description
     * (128 bytes at map, 64-byte aligned) of a 3-dimensional tensor of 16-bit elements (bf16)
     * at base, dims[0] contiguous, the others at strides[] bytes, copied in boxes of box[]
     * elements (box[0] * 2 = 128 bytes) with the 128-byte swizzle (kernels/include/aot_tile.h). */
    aiter_aot_status (*clusters_that_fit)(void *fn, unsigned block, unsigned shared_bytes, unsigned cluster,
                                          int *count, aot_diag *d);
    aiter_aot_status (*launch_cluster)(void *fn, unsigned grid, unsigned block, unsigned shared_bytes,
                                       unsigned cluster, void *stream, void *args, aot_diag *d);
    aiter_aot_status (*tile_map)(void *map, const void *base, const uint64_t dims[3], const uint64_t strides[2],
                                 const uint32_t box[3], aot_diag *d);
} aot_gpu;

/* launch flags. FOLLOWS: the kernel before this one in the stream is the same op's, and this
 * one calls aot_grid_wait (kernels/include/aot_device.h) before it touches what that one
 * writes, so the vendor may start its blocks early (CUDA: programmatic stream serialization,
 * where the driver has it; otherwise an ordinary launch). */
enum { AOT_LAUNCH_FOLLOWS = 1 };

/* Binds the vendor library once per process (thread-safe). @return OK with *gpu set, or
 * GPU_RUNTIME / INTERPOSED with the reason. */
aiter_aot_status aot_gpu_bind(const aot_gpu **gpu, aot_diag *d);

/* ---- shared by the vendor tables (symbols.c) ---- */

typedef struct {
    const char *name;
    const char *version; /* symbol version to bind (dlvsym), or NULL for an unversioned one */
    void **slot;
    int optional;        /* leave *slot NULL when missing instead of failing */
} aot_symbol;

/* Takes a handle to the first of `sonames` already loaded (RTLD_NOLOAD) or, with `may_load`,
 * loads it RTLD_LOCAL. Writes its path. @return OK or GPU_RUNTIME. */
aiter_aot_status aot_vendor_open(const char *const *sonames, int may_load, void **handle,
                                 char *path, size_t cap, aot_diag *d);

/* Resolves every symbol in the library itself (dlvsym/dlsym on the handle), or through the
 * global scope when `global` is set, and confirms with dladdr that each lies in `path`.
 * @return OK, GPU_RUNTIME (missing) or INTERPOSED (found elsewhere). */
aiter_aot_status aot_vendor_resolve(void *handle, const char *path, const aot_symbol *syms,
                                    int global, aot_diag *d);

/* The two vendor tables. `may_load` as for aot_vendor_open. */
aiter_aot_status aot_gpu_bind_cuda(aot_gpu *gpu, int may_load, int global, aot_diag *d);
aiter_aot_status aot_gpu_bind_hip(aot_gpu *gpu, int may_load, int global, aot_diag *d);

#endif
