/* cuda_launch.h : cuLaunchKernelEx's configuration in cuda.h's layout (the driver's ABI), for
 * the runtime (runtime/src/vendor_cuda.c) and the GPU tests, neither of which includes cuda.h.
 * Only the attributes they set are named. */
#ifndef AOT_CUDA_LAUNCH_H
#define AOT_CUDA_LAUNCH_H

enum {
    CU_LAUNCH_ATTR_CLUSTER_DIMENSION = 4,                 /* value.cluster */
    CU_LAUNCH_ATTR_PROGRAMMATIC_STREAM_SERIALIZATION = 6, /* value.on */
};

typedef struct {
    unsigned id;
    char pad[4];
    union {
        char raw[64];
        int on;
        struct { unsigned x, y, z; } cluster;
    } value;
} cu_launch_attr;

typedef struct {
    unsigned grid[3], block[3], shared;
    void *stream;
    cu_launch_attr *attrs;
    unsigned nattrs;
} cu_launch_config;

#endif
