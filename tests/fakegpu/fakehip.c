/* fakehip.c : a libamdhip64.so.7 for tests. It exports the HIP entry points the runtime binds
 * (runtime/src/vendor_hip.c), with the real library's symbol versions (fakehip.map), and
 * plays one MI300X: gfx942:sramecc+:xnack-, 304 compute units. hipModuleLoadData takes
 * only a gfx942 AMDGPU code object, hipModuleGetFunction only a kernel the code object
 * defines (its NAME.kd descriptor), and hipModuleLaunchKernel checks and records the launch
 * without running anything. Every call is counted (fakegpu.h). */
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include "fakegpu_core.h"

typedef int hipError_t;
enum {
    hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorInvalidDevice = 101, hipErrorInvalidImage = 200,
    hipErrorInvalidHandle = 400, hipErrorNotFound = 500
};

#define ELFOSABI_AMDGPU_HSA 64
#define EF_AMDGPU_MACH 0x0ff
#define EF_AMDGPU_MACH_AMDGCN_GFX942 0x04c
#define PROPS_R0600_BYTES 1472 /* sizeof(hipDeviceProp_tR0600) */
#define ARCH_R0600 1160        /* offsetof(hipDeviceProp_tR0600, gcnArchName) */
#define ARCH_LEGACY 396        /* offsetof(hipDeviceProp_t, gcnArchName) before ROCm 6 */
#define ARCH_NAME "gfx942:sramecc+:xnack-"

FG_EXPORT hipError_t hipInit(unsigned flags)
{
    fg_count("hipInit");
    return flags == 0 ? hipSuccess : hipErrorInvalidValue;
}

FG_EXPORT hipError_t hipGetDeviceCount(int *count)
{
    fg_count("hipGetDeviceCount");
    if (count == NULL) return hipErrorInvalidValue;
    *count = 1;
    return hipSuccess;
}

FG_EXPORT hipError_t hipGetDevice(int *device)
{
    fg_count("hipGetDevice");
    if (device == NULL) return hipErrorInvalidValue;
    *device = 0;
    return hipSuccess;
}

FG_EXPORT hipError_t hipDeviceGetAttribute(int *value, int attr, int device)
{
    fg_count("hipDeviceGetAttribute");
    if (value == NULL) return hipErrorInvalidValue;
    if (device != 0) return hipErrorInvalidDevice;
    if (attr != 63 /* hipDeviceAttributeMultiprocessorCount */) return hipErrorInvalidValue;
    *value = 304;
    return hipSuccess;
}

static hipError_t props(void *p, int device, size_t bytes, size_t arch)
{
    if (p == NULL) return hipErrorInvalidValue;
    if (device != 0) return hipErrorInvalidDevice;
    memset(p, 0, bytes);
    strcpy(p, "AMD Instinct MI300X (fake)");
    strcpy((char *)p + arch, ARCH_NAME);
    return hipSuccess;
}

FG_EXPORT hipError_t hipGetDevicePropertiesR0600(void *p, int device)
{
    fg_count("hipGetDevicePropertiesR0600");
    return props(p, device, PROPS_R0600_BYTES, ARCH_R0600);
}

/* The legacy layout's gcnArchName ends at 652; nothing past it is written. */
FG_EXPORT hipError_t hipGetDeviceProperties(void *p, int device)
{
    fg_count("hipGetDeviceProperties");
    return props(p, device, ARCH_LEGACY + 256, ARCH_LEGACY);
}

FG_EXPORT hipError_t hipModuleLoadData(void **module, const void *image)
{
    fg_count("hipModuleLoadData");
    if (module == NULL || image == NULL) return hipErrorInvalidValue;
    size_t size = fg_elf_size(image, EM_AMDGPU);
    const Elf64_Ehdr *h = image;
    if (size == 0 || h->e_ident[EI_OSABI] != ELFOSABI_AMDGPU_HSA ||
        (h->e_flags & EF_AMDGPU_MACH) != EF_AMDGPU_MACH_AMDGCN_GFX942)
        return hipErrorInvalidImage; /* not a code object this device runs */
    fg_module *m = fg_module_new(image, size);
    if (m == NULL) return hipErrorInvalidValue;
    *module = m;
    return hipSuccess;
}

FG_EXPORT hipError_t hipModuleGetFunction(void **fn, void *module, const char *name)
{
    fg_count("hipModuleGetFunction");
    const fg_module *m = module;
    if (fn == NULL || name == NULL) return hipErrorInvalidValue;
    if (m == NULL || m->magic != FG_MODULE) return hipErrorInvalidHandle;
    char kd[160];
    if ((size_t)snprintf(kd, sizeof kd, "%s.kd", name) >= sizeof kd || !fg_elf_has_symbol(m, kd, STT_OBJECT))
        return hipErrorNotFound;
    fg_function *f = fg_function_new(m, name);
    if (f == NULL) return hipErrorInvalidValue;
    *fn = f;
    return hipSuccess;
}

FG_EXPORT hipError_t hipModuleLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                           unsigned by, unsigned bz, unsigned shared, void *stream,
                                           void **params, void **extra)
{
    fg_count("hipModuleLaunchKernel");
    const fg_function *f = fg_function_of(fn);
    if (f == NULL) return hipErrorInvalidHandle;
    const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz}, cluster[3] = {1, 1, 1};
    if (!gx || !gy || !gz || !bx || !by || !bz || (unsigned long)bx * by * bz > 1024 || shared > 64 * 1024 ||
        (params == NULL) == (extra == NULL))
        return hipErrorInvalidValue;
    fg_record_launch(f, grid, block, shared, cluster, stream, params);
    return hipSuccess;
}

FG_EXPORT const char *hipGetErrorString(hipError_t e)
{
    fg_count("hipGetErrorString");
    switch (e) {
    case hipSuccess: return "no error";
    case hipErrorInvalidValue: return "invalid argument";
    case hipErrorInvalidDevice: return "invalid device ordinal";
    case hipErrorInvalidImage: return "device kernel image is invalid";
    case hipErrorInvalidHandle: return "invalid resource handle";
    case hipErrorNotFound: return "named symbol not found";
    default: return "unknown error";
    }
}
