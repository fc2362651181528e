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
AOT_DEV float aot_fmaxf(float a, float b) { return fmaxf(a, b); }
AOT_DEV float aot_f32_from_bits(unsigned u) { return __uint_as_float(u); }
AOT_DEV unsigned aot_bits_from_f32(float f) { return __float_as_uint(f); }

/* sm_80+ reduces a warp in one instruction (redux.sync). */
#if __CUDA_ARCH__ >= 800
#define AOT_WAVE_REDUCE_U32 1
AOT_DEV unsigned aot_wave_max_u32(unsigned v) { return __reduce_max_sync(0xffffffffu, v); }
AOT_DEV unsigned aot_wave_min_u32(unsigned v) { return __reduce_min_sync(0xffffffffu, v); }
#endif

#endif
