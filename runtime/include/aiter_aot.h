/*
 * aiter_aot.h : the public C API of libaiter_aot.
 *
 * Every kernel the library can launch was compiled ahead of time and is embedded in the library.
 * Nothing is compiled, read from disk or dlopened at run time except the vendor GPU runtime
 * itself (libamdhip64 or libcuda), and every GPU-runtime entry point is taken from that library,
 * never from the global symbol scope (see docs/runtime.md).
 *
 * Conventions
 *  - Every call returns an aiter_aot_status. On failure, aiter_aot_last_error() holds one line
 *    saying what failed, where and why. The library never prints, aborts or exits.
 *  - Each op takes a pointer to an arguments struct whose first field is its own size: fill it
 *    with designated initializers, e.g.
 *        aiter_aot_topk_softmax_args a = { .size = sizeof a, .gating = p, ... };
 *    Fields added in later versions go at the end. A size down to the struct's size in the
 *    version that introduced the op is accepted (fields added since read as zero); a smaller
 *    one is refused with AITER_AOT_STATUS_INVALID_ARGUMENT. Every op's struct is still as
 *    version 0.1 introduced it, so today that minimum is its sizeof, but for
 *    aiter_aot_fmha_varlen_fwd_args, which gained total_k (aiter_aot_fmha.h).
 *  - `stream` is the caller's hipStream_t or CUstream, passed as void *. NULL is the default
 *    stream. Ops launch asynchronously on it and return.
 *  - Pointers in the arguments structs are device pointers of the current device.
 *
 * Environment
 *  AITER_AOT_GLOBAL_SYMBOLS=1  resolve GPU-runtime entry points through the ordinary global scope
 *                              (for profilers, sanitizers and LD_PRELOAD tools that interpose on
 *                              purpose). Read once, at the first call.
 */
#ifndef AITER_AOT_H_5F3C91
#define AITER_AOT_H_5F3C91

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t, uint32_t */

#include "aiter_aot_status.h" /* aiter_aot_status */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define AITER_AOT_API __attribute__((visibility("default")))
#else
#define AITER_AOT_API
#endif

#define AITER_AOT_VERSION_MAJOR 0
#define AITER_AOT_VERSION_MINOR 1
#define AITER_AOT_VERSION_PATCH 0
#define AITER_AOT_VERSION_NUMBER \
    (AITER_AOT_VERSION_MAJOR * 10000 + AITER_AOT_VERSION_MINOR * 100 + AITER_AOT_VERSION_PATCH)


/*! aiter_aot_status_string() :
 *  @return a static, constant name for `status` ("invalid argument"); never NULL. */
AITER_AOT_API const char *aiter_aot_status_string(aiter_aot_status status);

/*! aiter_aot_last_error() :
 *  @return the calling thread's last error message, one line, or "" when the thread's last
 *          call succeeded. Valid until the thread's next call into the library. */
AITER_AOT_API const char *aiter_aot_last_error(void);

/*! aiter_aot_version_number() :
 *  @return AITER_AOT_VERSION_NUMBER of the library actually linked. */
AITER_AOT_API unsigned aiter_aot_version_number(void);

/*! aiter_aot_version_string() :
 *  @return "0.1.0" style version of the library actually linked. */
AITER_AOT_API const char *aiter_aot_version_string(void);

/*! aiter_aot_init() :
 *  Optional. Binds the GPU runtime and checks the embedded bundle now instead of at the first
 *  op. Safe to call from several threads and more than once.
 *  @return AITER_AOT_STATUS_OK, or the reason the library cannot run. */
AITER_AOT_API aiter_aot_status aiter_aot_init(void);

/*! aiter_aot_preload() :
 *  Loads every code object of `device` (an ordinal of the vendor runtime, as hipSetDevice /
 *  cuDeviceGet count them) now, instead of at that device's first op: decompresses the frame
 *  for its target and hands the objects to the GPU loader, once per device and process, as the
 *  first op would. Call it before capturing a graph whose first op would otherwise load them.
 *  The load (here or at the first op) decodes the frame in a short-lived thread of its own
 *  (the only one the library makes): it blocks every signal but those a fault raises and is
 *  joined before the call returns.
 *  Does not change the current device. Safe to call from several threads and more than once
 *  (later calls return the first one's result).
 *  @return AITER_AOT_STATUS_OK; INVALID_ARGUMENT when `device` is not below the device count;
 *          NO_DEVICE, NO_CODE_OBJECT (the device's target is not embedded), CORRUPT_BUNDLE,
 *          GPU_RUNTIME or INTERPOSED otherwise, with aiter_aot_last_error(). */
AITER_AOT_API aiter_aot_status aiter_aot_preload(int device);

/*! aiter_aot_targets() :
 *  Writes up to `cap` target IDs embedded in the library ("amdgcn-amd-amdhsa--gfx942",
 *  "nvptx64-nvidia-cuda--sm_90a") into `out`; the strings are static.
 *  @return the number of targets (which may exceed cap), or 0 if the bundle is unreadable
 *          (see aiter_aot_last_error()). */
AITER_AOT_API size_t aiter_aot_targets(const char **out, size_t cap);

/*! aiter_aot_kernels() :
 *  Writes up to `cap` module names embedded for `target` (a full or short target ID, "gfx942",
 *  "sm_90a"; NULL for every target) into `out`; the strings are static.
 *  @return the number of modules (which may exceed cap). */
AITER_AOT_API size_t aiter_aot_kernels(const char *target, const char **out, size_t cap);

/* Per-process counters, for tests and monitoring. The times are wall-clock nanoseconds summed
 * over every device load: decompressing the target's frame (in a thread of the library's own,
 * so it overlaps the two others), handing its code objects to the GPU loader
 * (cuModuleLoadData / hipModuleLoadData), and resolving their kernels (cuModuleGetFunction /
 * hipModuleGetFunction). */
typedef struct {
    size_t size;               /* set to sizeof(aiter_aot_stats) before the call */
    uint64_t modules_loaded;   /* code objects handed to the GPU loader, all devices */
    uint64_t frames_decompressed;
    uint64_t launches;
    uint64_t device_loads;     /* devices whose modules were loaded */
    uint64_t decompress_ns, module_load_ns, function_lookup_ns;
} aiter_aot_stats;

/*! aiter_aot_get_stats() :
 *  Fills `stats` (whose .size is set by the caller). A caller built against the first
 *  version of the struct (up to device_loads) gets those fields only.
 *  @return AITER_AOT_STATUS_OK or AITER_AOT_STATUS_INVALID_ARGUMENT. */
AITER_AOT_API aiter_aot_status aiter_aot_get_stats(aiter_aot_stats *stats);

/*! aiter_aot_device_target() :
 *  Writes the current device's target ID (as the library matches it against the bundle) into
 *  `buf` of `cap` bytes, NUL-terminated.
 *  @return AITER_AOT_STATUS_OK, or why the device could not be queried. */
AITER_AOT_API aiter_aot_status aiter_aot_device_target(char *buf, size_t cap);

/*! aiter_aot_gpu_library() :
 *  Binds the GPU runtime if not yet done.
 *  @return the path of the vendor library (libamdhip64 or libcuda) whose entry points the
 *          library bound (also when that library then reported no device); under
 *          AITER_AOT_GLOBAL_SYMBOLS=1 "the global scope (AITER_AOT_GLOBAL_SYMBOLS=1)", since the
 *          entry points are then whatever the global scope names; "" if none could be bound
 *          (see aiter_aot_last_error()). */
AITER_AOT_API const char *aiter_aot_gpu_library(void);

/* Element types of tensors passed to ops. */
typedef enum {
    AITER_AOT_DTYPE_F32 = 0,
    AITER_AOT_DTYPE_F16 = 1,
    AITER_AOT_DTYPE_BF16 = 2
} aiter_aot_dtype;

#ifdef __cplusplus
}
#endif

#include "aiter_aot_moe.h" /* topk_softmax, moe_sorting */
#include "aiter_aot_mhc.h" /* mHC: prenorm_gemm, pre, pre_full, post, fused_post_pre, head, the delayed pre */
#include "aiter_aot_fmha.h" /* flash attention varlen forward */

#endif /* AITER_AOT_H_5F3C91 */
