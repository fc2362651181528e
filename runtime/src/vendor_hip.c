/* vendor_hip.c : the HIP table. Every entry point is bound with the symbol version this code
 * was written for (hip_4.2, the ABI the ROCm 5 and 6 libraries keep). The one call that fills
 * a struct whose layout changed between releases, hipGetDeviceProperties, is bound as
 * hipGetDevicePropertiesR0600@hip_6.0 when the library has it (ROCm 6+) and read with that
 * layout, else as the legacy hipGetDeviceProperties@hip_4.2 with the legacy layout: the
 * mismatch behind AITER #4585 cannot happen. Everything else uses struct-free calls. */
#include <stdio.h>
#include <string.h>

#include "gpu.h"

typedef int hipError_t;

/* Offsets of gcnArchName[256]: 396 in ROCm 5's hipDeviceProp_t (checked against Debian's
 * libamdhip64-dev 5.2 headers by tests/unit/test_hip_layout.c), 1160 in hipDeviceProp_tR0600
 * (sizeof 1472; checked against ROCm 7.2's headers by tests/rocm/test_hip_layout_r0600.c). */
#define GCN_ARCH_OFFSET_R0600 1160
#define GCN_ARCH_OFFSET_LEGACY 396
#define PROPS_BYTES 4096

enum { HIP_ATTR_MULTIPROCESSOR_COUNT = 63 };

static struct {
    hipError_t (*init)(unsigned);
    hipError_t (*get_device_count)(int *);
    hipError_t (*get_device)(int *);
    hipError_t (*device_get_attribute)(int *, int, int);
    hipError_t (*props_r0600)(void *, int);
    hipError_t (*props_legacy)(void *, int);
    hipError_t (*module_load_data)(void **, const void *);
    hipError_t (*module_get_function)(void **, void *, const char *);
    hipError_t (*module_unload)(void *);
    hipError_t (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, void *, void **, void **);
    const char *(*error_string)(hipError_t);
} hip;

static aiter_aot_status hip_fail(aot_diag *d, aiter_aot_status s, const char *call, hipError_t r)
{
    return aot_fail(d, s, "%s failed: HIP error %d (%s)", call, r,
                    hip.error_string ? hip.error_string(r) : "unknown");
}

#define HIP_CHECK(call, s) do { hipError_t r_ = (call); if (r_ != 0) return hip_fail(d, s, #call, r_); } while (0)
#define HIP_ERR AITER_AOT_STATUS_GPU_RUNTIME

static aiter_aot_status hip_device_count(int *count, aot_diag *d)
{
    hipError_t r = hip.get_device_count(count);
    if (r == 100 /* hipErrorNoDevice */ || (r == 0 && *count == 0))
        return aot_fail(d, AITER_AOT_STATUS_NO_DEVICE, "HIP reports no device (hipGetDeviceCount: %d)", r);
    HIP_CHECK(r, HIP_ERR);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status hip_current_device(int *device, aot_diag *d)
{
    int n;
    AOT_FORWARD(hip_device_count(&n, d));
    *device = -1; /* under the opt-out an interposer's hipGetDevice may succeed and write nothing */
    HIP_CHECK(hip.get_device(device), HIP_ERR);
    if (*device < 0 || *device >= n)
        return aot_fail(d, AITER_AOT_STATUS_GPU_RUNTIME, "hipGetDevice gave device %d of %d", *device, n);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status hip_device_target(int device, char *buf, size_t cap, aot_diag *d)
{
    unsigned char props[PROPS_BYTES]; /* larger than either layout */
    size_t off = hip.props_r0600 ? GCN_ARCH_OFFSET_R0600 : GCN_ARCH_OFFSET_LEGACY;
    memset(props, 0, sizeof props);
    HIP_CHECK(hip.props_r0600 ? hip.props_r0600(props, device) : hip.props_legacy(props, device), HIP_ERR);
    props[off + 255] = 0;
    snprintf(buf, cap, "amdgcn-amd-amdhsa--%s", (const char *)props + off);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status hip_multiprocessors(int device, int *count, aot_diag *d)
{
    HIP_CHECK(hip.device_get_attribute(count, HIP_ATTR_MULTIPROCESSOR_COUNT, device), HIP_ERR);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status hip_load_module(int device, const void *image, void **module, aot_diag *d)
{
    (void)device; /* the current device, which the loader checked */
    HIP_CHECK(hip.module_load_data(module, image), HIP_ERR);
    return AITER_AOT_STATUS_OK;
}

static void hip_unload_module(int device, void *module)
{
    (void)device;
    hip.module_unload(module);
}

static aiter_aot_status hip_get_function(void *module, const char *name, void **fn, aot_diag *d)
{
    hipError_t r = hip.module_get_function(fn, module, name);
    if (r != 0) return hip_fail(d, HIP_ERR, name, r);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status hip_launch(void *fn, unsigned grid, unsigned block, unsigned shared, unsigned flags,
                                   void *stream, void *args, aot_diag *d)
{
    (void)flags; /* HIP launches in stream order */
    void *params[] = {args};
    HIP_CHECK(hip.launch(fn, grid, 1, 1, block, 1, 1, shared, stream, params, NULL),
              AITER_AOT_STATUS_LAUNCH_FAILED);
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aot_gpu_bind_hip(aot_gpu *gpu, int may_load, int global, aot_diag *d)
{
    static const char *const sonames[] = {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5",
                                          "libamdhip64.so", NULL};
    const aot_symbol syms[] = {
        {"hipInit", "hip_4.2", (void **)&hip.init, 0},
        {"hipGetDeviceCount", "hip_4.2", (void **)&hip.get_device_count, 0},
        {"hipGetDevice", "hip_4.2", (void **)&hip.get_device, 0},
        {"hipDeviceGetAttribute", "hip_4.2", (void **)&hip.device_get_attribute, 0},
        {"hipGetDevicePropertiesR0600", "hip_6.0", (void **)&hip.props_r0600, 1},
        {"hipGetDeviceProperties", "hip_4.2", (void **)&hip.props_legacy, 0},
        {"hipModuleLoadData", "hip_4.2", (void **)&hip.module_load_data, 0},
        {"hipModuleGetFunction", "hip_4.2", (void **)&hip.module_get_function, 0},
        {"hipModuleUnload", "hip_4.2", (void **)&hip.module_unload, 1},
        {"hipModuleLaunchKernel", "hip_4.2", (void **)&hip.launch, 0},
        {"hipGetErrorString", "hip_4.2", (void **)&hip.error_string, 0},
        {NULL, NULL, NULL, 0}};
    void *handle;
    AOT_FORWARD(aot_vendor_open(sonames, may_load, &handle, gpu->library, sizeof gpu->library, d));
    AOT_FORWARD(aot_vendor_resolve(handle, gpu->library, syms, global, d));
    hipError_t r = hip.init(0);
    if (r == 100 || r == 101 /* no device / invalid device */)
        return aot_fail(d, AITER_AOT_STATUS_NO_DEVICE, "HIP reports no device (hipInit: %d %s)", r,
                        hip.error_string(r));
    HIP_CHECK(r, HIP_ERR);
    gpu->name = "HIP";
    gpu->device_count = hip_device_count;
    gpu->current_device = hip_current_device;
    gpu->device_target = hip_device_target;
    gpu->multiprocessors = hip_multiprocessors;
    gpu->load_module = hip_load_module;
    gpu->get_function = hip_get_function;
    gpu->unload_module = hip.module_unload ? hip_unload_module : NULL;
    gpu->launch = hip_launch;
    return AITER_AOT_STATUS_OK;
}
