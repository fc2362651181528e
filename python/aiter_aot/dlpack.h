/*
 * dlpack.h : the DLPack data structures the extension reads, written from the DLPack
 * specification (https://dmlc.github.io/dlpack/latest/): the unversioned DLManagedTensor of
 * capsules named "dltensor" and DLPack 1.0's DLManagedTensorVersioned of capsules named
 * "dltensor_versioned". Only what a consumer needs; the layouts are the specification's.
 */
#ifndef AOT_PY_DLPACK_H
#define AOT_PY_DLPACK_H

#include <stdint.h>

typedef enum {
    kDLCPU = 1,
    kDLCUDA = 2,
    kDLCUDAHost = 3,
    kDLROCM = 10,
    kDLROCMHost = 11,
    kDLCUDAManaged = 13
} DLDeviceType;

typedef struct {
    int32_t device_type; /* DLDeviceType */
    int32_t device_id;
} DLDevice;

typedef enum { kDLInt = 0, kDLUInt = 1, kDLFloat = 2, kDLBfloat = 4, kDLComplex = 5, kDLBool = 6 } DLDataTypeCode;

typedef struct {
    uint8_t code;   /* DLDataTypeCode */
    uint8_t bits;
    uint16_t lanes;
} DLDataType;

typedef struct {
    void *data;            /* plus byte_offset: the first element */
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;      /* in elements; NULL: compact row-major */
    uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self); /* the consumer calls it when done; may be NULL */
} DLManagedTensor;

typedef struct {
    uint32_t major, minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)

typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

#endif
