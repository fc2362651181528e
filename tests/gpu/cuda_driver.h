/* cuda_driver.h : the CUDA driver calls the GPU tests make themselves (device memory, contexts,
 * streams, loading a test cubin), taken from libcuda.so.1 with dlsym, and a harness_mem over
 * them. The library under test finds its own entry points; these are the tests'. */
#ifndef AOT_CUDA_DRIVER_H
#define AOT_CUDA_DRIVER_H

#include <stddef.h>

#include "cuda_launch.h"
#include "harness.h"

typedef int CUresult;

typedef struct {
    CUresult (*init)(unsigned);
    CUresult (*device_count)(int *);
    CUresult (*device_get)(int *, int);
    CUresult (*device_pci_bus)(int *, int, int); /* cuDeviceGetAttribute */
    CUresult (*retain)(void **, int);
    CUresult (*set_current)(void *);
    CUresult (*alloc)(unsigned long long *, size_t);
    CUresult (*free)(unsigned long long);
    CUresult (*htod)(unsigned long long, const void *, size_t);
    CUresult (*dtoh)(void *, unsigned long long, size_t);
    CUresult (*memset8)(unsigned long long, unsigned char, size_t);
    CUresult (*sync)(void);
    CUresult (*stream_create)(void **, unsigned);
    CUresult (*stream_sync)(void *);
    CUresult (*stream_destroy)(void *);
    CUresult (*module_load)(void **, const void *);
    CUresult (*get_function)(void **, void *, const char *);
    CUresult (*launch)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, void *,
                       void **, void **);
    CUresult (*launch_ex)(const cu_launch_config *, void *, void **, void **);
} cuda_driver;

extern cuda_driver cu;

/* Binds the driver, initialises it and makes device 0's primary context current.
 * @return 0, or -1 after printing why. */
int cuda_bind(void);

/* Makes device `dev`'s primary context current in the calling thread. @return 0 or -1. */
int cuda_use_device(int dev);

/* Device memory of the current context, poisoned (0xff) on allocation; sync() waits for
 * `stream` (NULL: the whole context) in the calling thread. */
harness_mem cuda_mem(void *stream);

#endif
