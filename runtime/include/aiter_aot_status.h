/* aiter_aot_status.h : the status every aiter-aot call returns (included by aiter_aot.h). On
 * its own so that code below the API, such as the bundle reader, needs only this. */
#ifndef AITER_AOT_STATUS_H_7A21E4
#define AITER_AOT_STATUS_H_7A21E4

/* Status codes. The numbers are pinned: new codes are added, none is renumbered. */
typedef enum {
    AITER_AOT_STATUS_OK = 0,
    AITER_AOT_STATUS_INVALID_ARGUMENT = 1, /* bad pointer, shape, stride or flag; nothing launched */
    AITER_AOT_STATUS_NO_DEVICE = 2,        /* the GPU runtime reports no usable device */
    AITER_AOT_STATUS_NO_CODE_OBJECT = 3,   /* the device's target is not in the embedded bundle */
    AITER_AOT_STATUS_CORRUPT_BUNDLE = 4,   /* the embedded bundle failed a check */
    AITER_AOT_STATUS_GPU_RUNTIME = 5,      /* the vendor library is missing or a call failed */
    AITER_AOT_STATUS_INTERPOSED = 6,       /* an entry point did not come from the vendor library */
    AITER_AOT_STATUS_OUT_OF_MEMORY = 7,
    AITER_AOT_STATUS_LAUNCH_FAILED = 8,
    AITER_AOT_STATUS_UNSUPPORTED = 9       /* a valid request this build cannot serve */
} aiter_aot_status;

#endif /* AITER_AOT_STATUS_H_7A21E4 */
