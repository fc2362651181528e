/* aot_nvidia.h : the NVIDIA part of the portability layer (nvcc, warp 32). */
#ifndef AOT_NVIDIA_H
#define AOT_NVIDIA_H

#define AOT_KERNEL extern "C" __global__
#define AOT_DEV static __device__ __forceinline__
#define AOT_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define AOT_SHARED(T, name, n) __shared__ T name[n]
#define AOT_WAVE 32

AOT_DEV int aot_thread_x(void) { return (int)threadIdx.x; }
AOT_DEV int aot_block_x(void) { return (int)blockIdx.x; }
AOT_DEV void aot_sync_block(void) { __syncthreads(); }
AOT_DEV int aot_lane(void) { return (int)(threadIdx.x & 31u); }
AOT_DEV int aot_shfl_i32(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }
AOT_DEV float aot_exp2_fast(float x) { return exp2f(x); }
AOT_DEV float aot_log2_fast(float x) { return __log2f(x); }
AOT_DEV float aot_rsqrt_fast(float x) { return rsqrtf(x); }
AOT_DEV float aot_fmaxf(float a, float b) { return fmaxf(a, b); }
AOT_DEV float aot_f32_from_bits(unsigned u) { return __uint_as_float(u); }
AOT_DEV unsigned aot_bits_from_f32(float f) { return __float_as_uint(f); }

/* sm_80+ reduces a warp in one instruction (redux.sync). */
#if __CUDA_ARCH__ >= 800
#define AOT_WAVE_REDUCE_U32 1
AOT_DEV unsigned aot_wave_max_u32(unsigned v) { return __reduce_max_sync(0xffffffffu, v); }
AOT_DEV unsigned aot_wave_min_u32(unsigned v) { return __reduce_min_sync(0xffffffffu, v); }
#endif

/* ---- matrix fragments: mma.sync m16n8k16 (sm_80+; layout in aot_mma_sync.h) ---- */
#if __CUDA_ARCH__ >= 800
#define AOT_MMA_SYNC 1
#include "aot_mma_sync.h"

AOT_DEV unsigned aot_nv_pack2(unsigned short lo, unsigned short hi) { return lo | (unsigned)hi << 16; }

#define AOT_NV_MMA(fn, type)                                                                   \
    AOT_DEV void fn(aot_mma_m16n8k16, float (&c)[4], const unsigned short (&a)[8],              \
                    const unsigned short (&b)[4])                                              \
    {                                                                                          \
        asm("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 "                     \
            "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                            \
            : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                                   \
            : "r"(aot_nv_pack2(a[0], a[1])), "r"(aot_nv_pack2(a[2], a[3])),                    \
              "r"(aot_nv_pack2(a[4], a[5])), "r"(aot_nv_pack2(a[6], a[7])),                    \
              "r"(aot_nv_pack2(b[0], b[1])), "r"(aot_nv_pack2(b[2], b[3])));                   \
    }
AOT_NV_MMA(aot_mma_bf16, "bf16")
AOT_NV_MMA(aot_mma_f16, "f16")
#undef AOT_NV_MMA
#endif

#endif
