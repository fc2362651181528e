/* vendor_cuda.c : the CUDA driver table. Types are declared here from the driver API's ABI
 * (CUresult is an int, handles are pointers, CUdevice is an int) so no CUDA header is needed.
 * Modules are loaded into each device's primary context, the one the CUDA runtime (and so
 * PyTorch) uses, so its pointers and streams work with our kernels. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "cuda_launch.h"
#include "gpu.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;

enum { CU_ATTR_MULTIPROCESSOR_COUNT = 16, CU_ATTR_CC_MAJOR = 75, CU_ATTR_CC_MINOR = 76 };
enum { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 14 };
/* cuTensorMapEncodeTiled's enums, as cuda.h numbers them */
enum { CU_TENSOR_MAP_BFLOAT16 = 9, CU_TENSOR_MAP_SWIZZLE_128B = 3, CU_TENSOR_MAP_L2_PROMOTION_256B = 3 };

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get_count)(int *);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*device_get_attribute)(int *, int, CUdevice);
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*ctx_get_device)(CUdevice *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_push)(CUcontext);
    CUresult (*ctx_pop)(CUcontext *);
    CUresult (*module_load_data)(void **, const void *);
    CUresult (*module_get_function)(void **, void *, const char *);
    CUresult (*module_unload)(void *);
    CUresult (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, void *, void **, void **);
    CUresult (*launch_ex)(const cu_launch_config *, void *, void **, void **); /* CUDA 12+; may be NULL */
    CUresult (*func_set_attribute)(void *, int, int);
    CUresult (*get_error_string)(CUresult, const char **);
    CUresult (*max_active_clusters)(int *, void *, const cu_launch_config *);             /* CUDA 12+ */
    CUresult (*tensor_map_encode_tiled)(void *, int, unsigned, void *, const uint64_t *, const uint64_t *,
                                        const unsigned *, const unsigned *, int, int, int, int); /* CUDA 12+ */
} cu;

static aiter_aot_status cu_fail(aot_diag *d, aiter_aot_status s, const char *call, CUresult r)
{
    const char *msg = NULL;
    if (cu.get_error_string == NULL || cu.get_error_string(r, &msg) != 0 || msg == NULL) msg = "unknown error";
    return aot_fail(d, s, "%s failed: CUDA error %d (%s)", call, r, msg);
}

#define CU_CHECK(call, s) do { CUresult r_ = (call); if (r_ != 0) return cu_fail(d, s, #call, r_); } while (0)
#define CU_ERR AITER_AOT_STATUS_GPU_RUNTIME

static aiter_aot_status cuda_device_count(int *count, aot_diag *d)
{
    CUresult r = cu.device_get_count(count);
    if (r == 100 /* CUDA_ERROR_NO_DEVICE */ || (r == 0 && *count == 0))
        return aot_fail(d, AITER_AOT_STATUS_NO_DEVICE, "CUDA reports no device");
    CU_CHECK(r, CU_ERR);
    return AITER_AOT_STATUS_OK;
}

/* The device of the current context; with none, device 0's primary context is made current,
 * as the CUDA runtime does on its first call. */
static aiter_aot_status cuda_current_device(int *device, aot_diag *d)
{
    CUcontext ctx = NULL;
    CU_CHECK(cu.ctx_get_current(&ctx), CU_ERR);
    if (ctx == NULL) {
        int n;
        AOT_FORWARD(cuda_device_count(&n, d));
        CUdevice dev0;
        CU_CHECK(cu.device_get(&dev0, 0), CU_ERR);
        CU_CHECK(cu.primary_retain(&ctx, dev0), CU_ERR);
        CU_CHECK(cu.ctx_set_current(ctx), CU_ERR);
    }
    CUdevice dev;
    CU_CHECK(cu.ctx_get_device(&dev), CU_ERR);
    *device = dev;
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status cuda_device_target(int device, char *buf, size_t cap, aot_diag *d)
{
    int major, minor;
    CU_CHECK(cu.device_get_attribute(&major, CU_ATTR_CC_MAJOR, device), CU_ERR);
    CU_CHECK(cu.device_get_attribute(&minor, CU_ATTR_CC_MINOR, device), CU_ERR);
    snprintf(buf, cap, "nvptx64-nvidia-cuda--sm_%d%d", major, minor);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status cuda_multiprocessors(int device, int *count, aot_diag *d)
{
    CU_CHECK(cu.device_get_attribute(count, CU_ATTR_MULTIPROCESSOR_COUNT, device), CU_ERR);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status cuda_load_module(int device, const void *image, void **module, aot_diag *d)
{
    CUcontext ctx, popped;
    CU_CHECK(cu.primary_retain(&ctx, device), CU_ERR);
    CU_CHECK(cu.ctx_push(ctx), CU_ERR);
    CUresult r = cu.module_load_data(module, image);
    cu.ctx_pop(&popped);
    if (r != 0) return cu_fail(d, CU_ERR, "cuModuleLoadData", r);
    return AITER_AOT_STATUS_OK;
}

static void cuda_unload_module(int device, void *module)
{
    CUcontext ctx, popped;
    if (cu.primary_retain(&ctx, device) != 0 || cu.ctx_push(ctx) != 0) return;
    cu.module_unload(module);
    cu.ctx_pop(&popped);
}

static aiter_aot_status cuda_get_function(void *module, const char *name, void **fn, aot_diag *d)
{
    CUresult r = cu.module_get_function(fn, module, name);
    if (r != 0) return cu_fail(d, CU_ERR, name, r);
    return AITER_AOT_STATUS_OK;
}

/* What each function was allowed and asked, so the driver calls behind it are made once per
 * function instead of before every launch: the most dynamic shared memory beyond the default
 * 48 KiB, clusters beyond 8 blocks, and how many clusters of its one configuration fit at
 * once (functions are per device, so the answer is the device's). Open addressing on the
 * function's address; entries are never removed (functions live as long as the process). A
 * race makes a call twice, which is harmless; a full table only means it is made every time. */
#define OPTED_SLOTS 256
typedef struct {
    _Atomic(void *) fn;
    _Atomic unsigned shared;
    _Atomic int wide_clusters;
    _Atomic uint64_t fit; /* fit_key(...) | clusters that fit; 0 before it was asked */
} opted_entry;
static opted_entry opted[OPTED_SLOTS];

/* fn's entry, claimed for it when `claim` and it has none; NULL when it has none (or the table
 * is full). */
static opted_entry *opted_entry_of(void *fn, int claim)
{
    unsigned h = (unsigned)(((uintptr_t)fn >> 4) * 2654435761u) % OPTED_SLOTS;
    for (unsigned i = 0; i < OPTED_SLOTS; i++, h = (h + 1) % OPTED_SLOTS) {
        void *f = atomic_load_explicit(&opted[h].fn, memory_order_acquire);
        if (f == fn) return &opted[h];
        if (f != NULL) continue; /* another function's */
        if (!claim) return NULL;  /* fn's would have been here */
        if (atomic_compare_exchange_strong(&opted[h].fn, &f, fn) || f == fn) return &opted[h];
        /* another function took the slot first: look on */
    }
    return NULL;
}

/* e->shared = max(e->shared, shared); nothing for no entry. */
static void opted_raise(opted_entry *e, unsigned shared)
{
    unsigned old = e ? atomic_load(&e->shared) : shared;
    while (old < shared && !atomic_compare_exchange_weak(&e->shared, &old, shared)) {}
}

/* Beyond the default 48 KiB a function must opt in, once per function and size. */
static aiter_aot_status opt_in_shared(void *fn, unsigned shared, aot_diag *d)
{
    if (shared <= 48 * 1024) return AITER_AOT_STATUS_OK;
    const opted_entry *seen = opted_entry_of(fn, 0);
    if (seen == NULL || atomic_load(&seen->shared) < shared) {
        CU_CHECK(cu.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared),
                 AITER_AOT_STATUS_LAUNCH_FAILED);
        opted_raise(opted_entry_of(fn, 1), shared);
    }
    return AITER_AOT_STATUS_OK;
}

/* Clusters beyond 8 blocks (Hopper allows 16) need the function's opt-in, once. */
static aiter_aot_status opt_in_wide_clusters(void *fn, unsigned cluster, aot_diag *d)
{
    if (cluster <= 8) return AITER_AOT_STATUS_OK;
    const opted_entry *seen = opted_entry_of(fn, 0);
    if (seen == NULL || !atomic_load(&seen->wide_clusters)) {
        CU_CHECK(cu.func_set_attribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                 AITER_AOT_STATUS_LAUNCH_FAILED);
        opted_entry *e = opted_entry_of(fn, 1);
        if (e != NULL) atomic_store(&e->wide_clusters, 1);
    }
    return AITER_AOT_STATUS_OK;
}

/* The configuration a cached cluster count answers, in the bits above the count's 16. */
static uint64_t fit_key(unsigned block, unsigned shared, unsigned cluster)
{
    return ((uint64_t)(block & 0xffff) << 48 | (uint64_t)(cluster & 0xff) << 40 | (uint64_t)(shared & 0xffffff) << 16);
}

static aiter_aot_status cuda_launch(void *fn, unsigned grid, unsigned block, unsigned shared, unsigned flags,
                                    void *stream, void *args, aot_diag *d)
{
    void *params[] = {args};
    AOT_FORWARD(opt_in_shared(fn, shared, d));
    if ((flags & AOT_LAUNCH_FOLLOWS) && cu.launch_ex != NULL) {
        cu_launch_attr early = {.id = CU_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION, .value.on = 1};
        const cu_launch_config cfg = {{grid, 1, 1}, {block, 1, 1}, shared, stream, &early, 1};
        CU_CHECK(cu.launch_ex(&cfg, fn, params, NULL), AITER_AOT_STATUS_LAUNCH_FAILED);
        return AITER_AOT_STATUS_OK;
    }
    CU_CHECK(cu.launch(fn, grid, 1, 1, block, 1, 1, shared, stream, params, NULL),
             AITER_AOT_STATUS_LAUNCH_FAILED);
    return AITER_AOT_STATUS_OK;
}

/* Every cluster kernel here takes shared memory beyond the default: both opt-ins, then the
 * launch's configuration. */
static aiter_aot_status cluster_config(void *fn, unsigned grid, unsigned block, unsigned shared, unsigned cluster,
                                       void *stream, cu_launch_attr *attr, cu_launch_config *cfg, aot_diag *d)
{
    AOT_FORWARD(opt_in_shared(fn, shared, d));
    AOT_FORWARD(opt_in_wide_clusters(fn, cluster, d));
    *attr = (cu_launch_attr){.id = CU_LAUNCH_ATTR_CLUSTER_DIMENSION, .value.cluster = {cluster, 1, 1}};
    *cfg = (cu_launch_config){{grid, 1, 1}, {block, 1, 1}, shared, stream, attr, 1};
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status cuda_clusters_that_fit(void *fn, unsigned block, unsigned shared, unsigned cluster, int *count,
                                               aot_diag *d)
{
    const uint64_t key = fit_key(block, shared, cluster);
    opted_entry *e = opted_entry_of(fn, 0);
    const uint64_t seen = e ? atomic_load(&e->fit) : 0;
    if (seen != 0 && (seen & ~(uint64_t)0xffff) == key) {
        *count = (int)(seen & 0xffff);
        return AITER_AOT_STATUS_OK;
    }
    cu_launch_attr attr;
    cu_launch_config cfg;
    AOT_FORWARD(cluster_config(fn, cluster, block, shared, cluster, NULL, &attr, &cfg, d));
    CU_CHECK(cu.max_active_clusters(count, fn, &cfg), AITER_AOT_STATUS_LAUNCH_FAILED);
    if (*count > 0 && *count <= 0xffff && (e = opted_entry_of(fn, 1)) != NULL) atomic_store(&e->fit, key | (uint64_t)*count);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status cuda_launch_cluster(void *fn, unsigned grid, unsigned block, unsigned shared, unsigned cluster,
                                            void *stream, void *args, aot_diag *d)
{
    void *params[] = {args};
    cu_launch_attr attr;
    cu_launch_config cfg;
    AOT_FORWARD(cluster_config(fn, grid, block, shared, cluster, stream, &attr, &cfg, d));
    CU_CHECK(cu.launch_ex(&cfg, fn, params, NULL), AITER_AOT_STATUS_LAUNCH_FAILED);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status cuda_tile_map(void *map, const void *base, const uint64_t dims[3], const uint64_t strides[2],
                                      const uint32_t box[3], aot_diag *d)
{
    static const unsigned unit[3] = {1, 1, 1};
    CU_CHECK(cu.tensor_map_encode_tiled(map, CU_TENSOR_MAP_BFLOAT16, 3, (void *)base, dims, strides, box, unit, 0,
                                        CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_256B, 0),
             AITER_AOT_STATUS_INVALID_ARGUMENT);
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_gpu_bind_cuda(aot_gpu *gpu, int may_load, int global, aot_diag *d)
{
    static const char *const sonames[] = {"libcuda.so.1", NULL};
    const aot_symbol syms[] = {
        {"cuInit", NULL, (void **)&cu.init, 0},
        {"cuDeviceGetCount", NULL, (void **)&cu.device_get_count, 0},
        {"cuDeviceGet", NULL, (void **)&cu.device_get, 0},
        {"cuDeviceGetAttribute", NULL, (void **)&cu.device_get_attribute, 0},
        {"cuCtxGetCurrent", NULL, (void **)&cu.ctx_get_current, 0},
        {"cuCtxSetCurrent", NULL, (void **)&cu.ctx_set_current, 0},
        {"cuCtxGetDevice", NULL, (void **)&cu.ctx_get_device, 0},
        {"cuDevicePrimaryCtxRetain", NULL, (void **)&cu.primary_retain, 0},
        {"cuCtxPushCurrent_v2", NULL, (void **)&cu.ctx_push, 0},
        {"cuCtxPopCurrent_v2", NULL, (void **)&cu.ctx_pop, 0},
        {"cuModuleLoadData", NULL, (void **)&cu.module_load_data, 0},
        {"cuModuleGetFunction", NULL, (void **)&cu.module_get_function, 0},
        {"cuModuleUnload", NULL, (void **)&cu.module_unload, 1},
        {"cuLaunchKernel", NULL, (void **)&cu.launch, 0},
        {"cuLaunchKernelEx", NULL, (void **)&cu.launch_ex, 1},
        {"cuFuncSetAttribute", NULL, (void **)&cu.func_set_attribute, 0},
        {"cuGetErrorString", NULL, (void **)&cu.get_error_string, 0},
        {"cuOccupancyMaxActiveClusters", NULL, (void **)&cu.max_active_clusters, 1},
        {"cuTensorMapEncodeTiled", NULL, (void **)&cu.tensor_map_encode_tiled, 1},
        {NULL, NULL, NULL, 0}};
    void *handle;
    AOT_FORWARD(aot_vendor_open(sonames, may_load, &handle, gpu->library, sizeof gpu->library, d));
    AOT_FORWARD(aot_vendor_resolve(handle, gpu->library, syms, global, d));
    CU_CHECK(cu.init(0), CU_ERR);
    gpu->name = "CUDA";
    gpu->device_count = cuda_device_count;
    gpu->current_device = cuda_current_device;
    gpu->device_target = cuda_device_target;
    gpu->multiprocessors = cuda_multiprocessors;
    gpu->load_module = cuda_load_module;
    gpu->get_function = cuda_get_function;
    gpu->unload_module = cu.module_unload ? cuda_unload_module : NULL;
    gpu->launch = cuda_launch;
    if (cu.launch_ex != NULL && cu.max_active_clusters != NULL && cu.tensor_map_encode_tiled != NULL) {
        gpu->clusters_that_fit = cuda_clusters_that_fit;
        gpu->launch_cluster = cuda_launch_cluster;
        gpu->tile_map = cuda_tile_map;
    }
    return AITER_AOT_STATUS_OK;
}
