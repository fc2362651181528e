/* cuda_driver.c : see cuda_driver.h. */
#define _GNU_SOURCE
#include "cuda_driver.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

cuda_driver cu;
static _Thread_local void *sync_stream;

int cuda_bind(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) return fprintf(stderr, "cuda: %s\n", dlerror()), -1;
    struct { const char *n; void **p; } s[] = {
        {"cuInit", (void **)&cu.init}, {"cuDeviceGetCount", (void **)&cu.device_count},
        {"cuDeviceGet", (void **)&cu.device_get}, {"cuDeviceGetAttribute", (void **)&cu.device_pci_bus},
        {"cuDevicePrimaryCtxRetain", (void **)&cu.retain}, {"cuCtxSetCurrent", (void **)&cu.set_current},
        {"cuMemAlloc_v2", (void **)&cu.alloc}, {"cuMemFree_v2", (void **)&cu.free},
        {"cuMemcpyHtoD_v2", (void **)&cu.htod}, {"cuMemcpyDtoH_v2", (void **)&cu.dtoh},
        {"cuMemsetD8_v2", (void **)&cu.memset8}, {"cuCtxSynchronize", (void **)&cu.sync},
        {"cuStreamCreate", (void **)&cu.stream_create}, {"cuStreamSynchronize", (void **)&cu.stream_sync},
        {"cuStreamDestroy_v2", (void **)&cu.stream_destroy},
        {"cuModuleLoadData", (void **)&cu.module_load}, {"cuModuleGetFunction", (void **)&cu.get_function},
        {"cuLaunchKernel", (void **)&cu.launch}, {"cuLaunchKernelEx", (void **)&cu.launch_ex}};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (!(*s[i].p = dlsym(h, s[i].n))) return fprintf(stderr, "cuda: no %s\n", s[i].n), -1;
    if (cu.init(0) || cuda_use_device(0)) return fprintf(stderr, "cuda: no CUDA device\n"), -1;
    return 0;
}

int cuda_use_device(int dev)
{
    int d;
    void *ctx;
    return cu.device_get(&d, dev) || cu.retain(&ctx, d) || cu.set_current(ctx) ? -1 : 0;
}

static void *g_alloc(size_t n)
{
    unsigned long long p = 0;
    if (cu.alloc(&p, n ? n : 1)) return NULL;
    cu.memset8(p, 0xff, n ? n : 1); /* poison */
    return (void *)(uintptr_t)p;
}
static void g_free(void *p) { if (p) cu.free((unsigned long long)(uintptr_t)p); }
static int g_up(void *d, const void *s, size_t n) { return cu.htod((unsigned long long)(uintptr_t)d, s, n); }
static int g_down(void *d, const void *s, size_t n) { return cu.dtoh(d, (unsigned long long)(uintptr_t)s, n); }
static int g_sync(void) { return sync_stream ? cu.stream_sync(sync_stream) : cu.sync(); }

harness_mem cuda_mem(void *stream)
{
    sync_stream = stream;
    harness_mem m = {g_alloc, g_free, g_up, g_down, g_sync, stream};
    return m;
}
