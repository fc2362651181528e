/* fakecuda.c : a libcuda.so.1 for tests. It exports the driver entry points the runtime binds
 * (runtime/src/vendor_cuda.c; libcuda's names carry no symbol versions) and plays one H200:
 * compute capability 9.0, 132 multiprocessors, one primary context. cuModuleLoadData takes
 * only a CUDA ELF image (a cubin) for sm_90 (the SM number in bits 8-15 of e_flags) while a context is current, cuModuleGetFunction only a
 * function the cubin defines, and the launches check the opt-ins the driver demands (dynamic
 * shared memory beyond 48 KiB, clusters beyond 8 blocks) and record the launch without running
 * anything. Every call is counted (fakegpu.h). */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "cuda_launch.h"
#include "fakegpu_core.h"

typedef int CUresult;
enum {
    CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1, CUDA_ERROR_NOT_INITIALIZED = 3, CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_INVALID_IMAGE = 200, CUDA_ERROR_INVALID_CONTEXT = 201, CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500
};
enum { SHARED_DEFAULT = 48 * 1024, SHARED_MAX = 227 * 1024 };

static int initialised;
static int primary; /* the one context: its address is the handle */
static _Thread_local void *stack[8];
static _Thread_local int depth; /* stack[depth - 1] is current; 0: none */

FG_EXPORT CUresult cuInit(unsigned flags)
{
    fg_count("cuInit");
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    __atomic_store_n(&initialised, 1, __ATOMIC_RELEASE);
    return CUDA_SUCCESS;
}

static CUresult ready(void) { return __atomic_load_n(&initialised, __ATOMIC_ACQUIRE) ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED; }

FG_EXPORT CUresult cuDeviceGetCount(int *count)
{
    fg_count("cuDeviceGetCount");
    if (ready()) return ready();
    if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
    *count = 1;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuDeviceGet(int *dev, int ordinal)
{
    fg_count("cuDeviceGet");
    if (ready()) return ready();
    if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
    *dev = 0;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuDeviceGetAttribute(int *value, int attr, int dev)
{
    fg_count("cuDeviceGetAttribute");
    if (ready()) return ready();
    if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case 16: *value = 132; return CUDA_SUCCESS; /* multiprocessors */
    case 75: *value = 9; return CUDA_SUCCESS;   /* compute capability major */
    case 76: *value = 0; return CUDA_SUCCESS;   /* minor */
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

FG_EXPORT CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev)
{
    fg_count("cuDevicePrimaryCtxRetain");
    if (ready()) return ready();
    if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
    *ctx = &primary;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuCtxGetCurrent(void **ctx)
{
    fg_count("cuCtxGetCurrent");
    if (ready()) return ready();
    if (ctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    *ctx = depth ? stack[depth - 1] : NULL;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuCtxSetCurrent(void *ctx)
{
    fg_count("cuCtxSetCurrent");
    if (ready()) return ready();
    if (ctx != NULL && ctx != &primary) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx == NULL) depth = depth ? depth - 1 : 0;
    else if (depth) stack[depth - 1] = ctx;
    else stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuCtxGetDevice(int *dev)
{
    fg_count("cuCtxGetDevice");
    if (ready()) return ready();
    if (dev == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!depth) return CUDA_ERROR_INVALID_CONTEXT;
    *dev = 0;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuCtxPushCurrent_v2(void *ctx)
{
    fg_count("cuCtxPushCurrent_v2");
    if (ready()) return ready();
    if (ctx != &primary || depth == (int)(sizeof stack / sizeof stack[0])) return CUDA_ERROR_INVALID_CONTEXT;
    stack[depth++] = ctx;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuCtxPopCurrent_v2(void **ctx)
{
    fg_count("cuCtxPopCurrent_v2");
    if (ready()) return ready();
    if (!depth) return CUDA_ERROR_INVALID_CONTEXT;
    depth--;
    if (ctx) *ctx = stack[depth];
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuModuleLoadData(void **module, const void *image)
{
    fg_count("cuModuleLoadData");
    if (ready()) return ready();
    if (module == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!depth) return CUDA_ERROR_INVALID_CONTEXT;
    size_t size = fg_elf_size(image, EM_CUDA);
    const Elf64_Ehdr *h = image;
    if (size == 0 || (h->e_flags >> 8 & 0xff) != 90) return CUDA_ERROR_INVALID_IMAGE; /* not for sm_90 */
    fg_module *m = fg_module_new(image, size);
    if (m == NULL) return CUDA_ERROR_INVALID_VALUE;
    *module = m;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuModuleGetFunction(void **fn, void *module, const char *name)
{
    fg_count("cuModuleGetFunction");
    const fg_module *m = module;
    if (fn == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (m == NULL || m->magic != FG_MODULE) return CUDA_ERROR_INVALID_HANDLE;
    if (!fg_elf_has_symbol(m, name, STT_FUNC)) return CUDA_ERROR_NOT_FOUND;
    fg_function *f = fg_function_new(m, name);
    if (f == NULL) return CUDA_ERROR_INVALID_VALUE;
    *fn = f;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuFuncSetAttribute(void *fn, int attr, int value)
{
    fg_count("cuFuncSetAttribute");
    fg_function *f = fg_function_of(fn);
    if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (attr == 8 && value >= 0 && value <= SHARED_MAX) __atomic_store_n(&f->max_shared, (unsigned)value, __ATOMIC_RELAXED);
    else if (attr == 14 && (value == 0 || value == 1)) __atomic_store_n(&f->wide_clusters, value, __ATOMIC_RELAXED);
    else return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* What the driver checks of any launch: a handle of ours, sizes in range, shared memory and
 * cluster sizes the function opted in to. */
static CUresult check_launch(const fg_function *f, const unsigned grid[3], const unsigned block[3], unsigned shared,
                             const unsigned cluster[3], void **params, void **extra)
{
    if (f == NULL) return CUDA_ERROR_INVALID_HANDLE;
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2] ||
        (unsigned long)block[0] * block[1] * block[2] > 1024 || (params == NULL) == (extra == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (shared > SHARED_DEFAULT && shared > __atomic_load_n(&f->max_shared, __ATOMIC_RELAXED)) return CUDA_ERROR_INVALID_VALUE;
    unsigned long blocks = (unsigned long)cluster[0] * cluster[1] * cluster[2];
    if (blocks > 16 || (blocks > 8 && !__atomic_load_n(&f->wide_clusters, __ATOMIC_RELAXED))) return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < 3; i++)
        if (cluster[i] == 0 || grid[i] % cluster[i]) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                  unsigned bz, unsigned shared, void *stream, void **params, void **extra)
{
    fg_count("cuLaunchKernel");
    const fg_function *f = fg_function_of(fn);
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz}, cluster[3] = {1, 1, 1};
    CUresult r = check_launch(f, grid, block, shared, cluster, params, extra);
    if (r == CUDA_SUCCESS) fg_record_launch(f, grid, block, shared, cluster, stream, params);
    return r;
}

/* The cluster dimension among cfg's attributes, {1, 1, 1} when there is none. */
static CUresult config_cluster(const cu_launch_config *cfg, unsigned cluster[3])
{
    cluster[0] = cluster[1] = cluster[2] = 1;
    if (cfg->nattrs && cfg->attrs == NULL) return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < cfg->nattrs; i++) {
        if (cfg->attrs[i].id == CU_LAUNCH_ATTR_CLUSTER_DIMENSION) {
            cluster[0] = cfg->attrs[i].value.cluster.x;
            cluster[1] = cfg->attrs[i].value.cluster.y;
            cluster[2] = cfg->attrs[i].value.cluster.z;
        } else if (cfg->attrs[i].id != CU_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION) {
            return CUDA_ERROR_INVALID_VALUE; /* nothing else is expected of the runtime */
        }
    }
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuLaunchKernelEx(const cu_launch_config *cfg, void *fn, void **params, void **extra)
{
    fg_count("cuLaunchKernelEx");
    const fg_function *f = fg_function_of(fn);
    unsigned cluster[3];
    if (cfg == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = config_cluster(cfg, cluster);
    if (r == CUDA_SUCCESS) r = check_launch(f, cfg->grid, cfg->block, cfg->shared, cluster, params, extra);
    if (r == CUDA_SUCCESS) fg_record_launch(f, cfg->grid, cfg->block, cfg->shared, cluster, cfg->stream, params);
    return r;
}

/* Two clusters a multiprocessor pair, as if each cluster's blocks needed a whole GPC share. */
FG_EXPORT CUresult cuOccupancyMaxActiveClusters(int *count, void *fn, const cu_launch_config *cfg)
{
    fg_count("cuOccupancyMaxActiveClusters");
    unsigned cluster[3];
    if (count == NULL || cfg == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = config_cluster(cfg, cluster);
    if (r == CUDA_SUCCESS) r = check_launch(fg_function_of(fn), cfg->grid, cfg->block, cfg->shared, cluster, (void **)&cfg, NULL);
    if (r != CUDA_SUCCESS) return r;
    *count = (int)(132 / (cluster[0] * cluster[1] * cluster[2]));
    return CUDA_SUCCESS;
}

/* Checks what the driver checks of a tiled map (alignment of map and base, strides multiples
 * of 16 bytes, boxes of at most 256 elements a side) and writes a recognisable map. */
FG_EXPORT CUresult cuTensorMapEncodeTiled(void *map, int dtype, unsigned rank, void *base, const uint64_t *dims,
                                          const uint64_t *strides, const unsigned *box, const unsigned *unit,
                                          int interleave, int swizzle, int l2, int oob)
{
    fg_count("cuTensorMapEncodeTiled");
    (void)dtype, (void)interleave, (void)swizzle, (void)l2, (void)oob;
    if (map == NULL || (uintptr_t)map % 64 || base == NULL || (uintptr_t)base % 16 || rank < 1 || rank > 5 ||
        dims == NULL || box == NULL || unit == NULL || (rank > 1 && strides == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < rank; i++)
        if (dims[i] == 0 || box[i] == 0 || box[i] > 256 || unit[i] == 0 || (i + 1 < rank && strides[i] % 16))
            return CUDA_ERROR_INVALID_VALUE;
    memset(map, 0, 128);
    memcpy(map, &base, sizeof base);
    return CUDA_SUCCESS;
}

FG_EXPORT CUresult cuGetErrorString(CUresult e, const char **s)
{
    fg_count("cuGetErrorString");
    if (s == NULL) return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
    case CUDA_SUCCESS: *s = "no error"; break;
    case CUDA_ERROR_INVALID_VALUE: *s = "invalid argument"; break;
    case CUDA_ERROR_NOT_INITIALIZED: *s = "initialization error"; break;
    case CUDA_ERROR_INVALID_DEVICE: *s = "invalid device ordinal"; break;
    case CUDA_ERROR_INVALID_IMAGE: *s = "device kernel image is invalid"; break;
    case CUDA_ERROR_INVALID_CONTEXT: *s = "invalid device context"; break;
    case CUDA_ERROR_INVALID_HANDLE: *s = "invalid resource handle"; break;
    case CUDA_ERROR_NOT_FOUND: *s = "named symbol not found"; break;
    default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
