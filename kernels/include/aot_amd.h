/* aot_amd.h : the AMD part of the portability layer, on clang's AMDGPU builtins only (no ROCm
 * headers, no device libraries: compiled with -nogpuinc -nogpulib). */
#ifndef AOT_AMD_H
#define AOT_AMD_H

#define AOT_KERNEL extern "C" __attribute__((global))
#define AOT_DEV static inline __attribute__((device, always_inline))
#define AOT_LAUNCH_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#define AOT_LAUNCH_BOUNDS_MIN(n, blocks) AOT_LAUNCH_BOUNDS(n) /* the thread bound only: see aot_device.h */
#define AOT_SHARED(T, name, n) __attribute__((shared)) T name[n]
#define AOT_SHARED_DYN(T, name, n) extern __attribute__((shared)) T name[]

/* CDNA (gfx9) runs wave64; RDNA would be wave32 and is not a target yet. */
#if defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
#define AOT_WAVE 64
#else
#error "aot_amd.h: unknown AMD target; add its wave size"
#endif

/* fp16 -> fp32 is exact: v_cvt_f32_f16 gives aot_device.h's value in one step. */
#define AOT_F16_TO_F32 1
AOT_DEV float aot_f16_to_f32(unsigned short h) { return (float)__builtin_bit_cast(_Float16, h); }

AOT_DEV int aot_thread_x(void) { return (int)__builtin_amdgcn_workitem_id_x(); }
AOT_DEV int aot_block_x(void) { return (int)__builtin_amdgcn_workgroup_id_x(); }
AOT_DEV int aot_grid_x(void) { return (int)(__builtin_amdgcn_grid_size_x() / __builtin_amdgcn_workgroup_size_x()); }

AOT_DEV void aot_sync_block(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/* A wave runs in lockstep: ordering its shared-memory accesses is all a wave barrier needs. */
AOT_DEV void aot_sync_wave(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

AOT_DEV int aot_lane(void) { return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }

/* A wave's vote is one scalar compare of the ballot mask. */
#define AOT_WAVE_ANY 1
AOT_DEV bool aot_wave_any(bool p) { return __builtin_amdgcn_ballot_w64(p) != 0; }

/* ds_bpermute_b32 takes a byte address: lane * 4. */
AOT_DEV int aot_shfl_i32(int v, int src) { return __builtin_amdgcn_ds_bpermute(src << 2, v); }
AOT_DEV int aot_uniform_i32(int v) { return __builtin_amdgcn_readfirstlane(v); }

AOT_DEV float aot_exp2_fast(float x) { return __builtin_amdgcn_exp2f(x); }
AOT_DEV float aot_log2_fast(float x) { return __builtin_amdgcn_logf(x); }
AOT_DEV float aot_rsqrt_fast(float x) { return __builtin_amdgcn_rsqf(x); }
AOT_DEV float aot_rcp_fast(float x) { return __builtin_amdgcn_rcpf(x); }
AOT_DEV float aot_fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
AOT_DEV float aot_fminf(float a, float b) { return __builtin_fminf(a, b); }
AOT_DEV float aot_fmaf(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
AOT_DEV float aot_f32_from_bits(unsigned u) { return __builtin_bit_cast(float, u); }
AOT_DEV int aot_popc_u32(unsigned m) { return __builtin_popcount(m); }
AOT_DEV int aot_popc_u64(unsigned long long m) { return __builtin_popcountll(m); }
AOT_DEV int aot_ctz_u32(unsigned m) { return __builtin_ctz(m); }
AOT_DEV int aot_ctz_u64(unsigned long long m) { return __builtin_ctzll(m); }
AOT_DEV unsigned aot_bits_from_f32(float f) { return __builtin_bit_cast(unsigned, f); }
AOT_DEV int aot_atomic_add_i32(int *p, int v) { return __hip_atomic_fetch_add(p, v, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
AOT_DEV void aot_fence_device(void) { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
AOT_DEV int aot_load_device_i32(const int *p) { return __hip_atomic_load(p, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }

/* ---- matrix fragments: MFMA (layouts in aot_mfma.h) ---- */
#define AOT_MMA_MFMA 1
#if defined(__gfx950__)
#define AOT_MMA_MFMA_GFX950 1 /* the double-K shapes 32x32x16 and 16x16x32 */
#endif
#include "aot_mfma.h"

typedef float aot_amd_f32x4 __attribute__((ext_vector_type(4)));
typedef float aot_amd_f32x16 __attribute__((ext_vector_type(16)));
typedef short aot_amd_s16x4 __attribute__((ext_vector_type(4)));
typedef _Float16 aot_amd_h16x4 __attribute__((ext_vector_type(4)));
#if defined(AOT_MMA_MFMA_GFX950)
typedef __bf16 aot_amd_b16x8 __attribute__((ext_vector_type(8)));
typedef _Float16 aot_amd_h16x8 __attribute__((ext_vector_type(8)));
#endif

/* The builtins take 16-bit elements as vectors of their own type: same bits, reinterpreted. */
template <class V, int N>
AOT_DEV V aot_amd_vec16(const unsigned short (&x)[N])
{
    typedef short S __attribute__((ext_vector_type(N)));
    S s;
#pragma unroll
    for (int i = 0; i < N; i++) s[i] = (short)x[i];
    return __builtin_bit_cast(V, s);
}

/* One overload per (shape, input type): c += a * b for the whole wave. */
#define AOT_AMD_MFMA(fn, shape, builtin, in_t, acc_t)                                          \
    AOT_DEV void fn(shape, float (&c)[shape::C], const unsigned short (&a)[shape::A],          \
                    const unsigned short (&b)[shape::B])                                       \
    {                                                                                          \
        acc_t acc;                                                                             \
        _Pragma("unroll") for (int i = 0; i < shape::C; i++) acc[i] = c[i];                    \
        acc = builtin(aot_amd_vec16<in_t>(a), aot_amd_vec16<in_t>(b), acc, 0, 0, 0);           \
        _Pragma("unroll") for (int i = 0; i < shape::C; i++) c[i] = acc[i];                    \
    }
AOT_AMD_MFMA(aot_mma_bf16, aot_mfma_32x32x8, __builtin_amdgcn_mfma_f32_32x32x8bf16_1k, aot_amd_s16x4, aot_amd_f32x16)
AOT_AMD_MFMA(aot_mma_bf16, aot_mfma_16x16x16, __builtin_amdgcn_mfma_f32_16x16x16bf16_1k, aot_amd_s16x4, aot_amd_f32x4)
AOT_AMD_MFMA(aot_mma_f16, aot_mfma_32x32x8, __builtin_amdgcn_mfma_f32_32x32x8f16, aot_amd_h16x4, aot_amd_f32x16)
AOT_AMD_MFMA(aot_mma_f16, aot_mfma_16x16x16, __builtin_amdgcn_mfma_f32_16x16x16f16, aot_amd_h16x4, aot_amd_f32x4)
#if defined(AOT_MMA_MFMA_GFX950)
AOT_AMD_MFMA(aot_mma_bf16, aot_mfma_32x32x16, __builtin_amdgcn_mfma_f32_32x32x16_bf16, aot_amd_b16x8, aot_amd_f32x16)
AOT_AMD_MFMA(aot_mma_bf16, aot_mfma_16x16x32, __builtin_amdgcn_mfma_f32_16x16x32_bf16, aot_amd_b16x8, aot_amd_f32x4)
AOT_AMD_MFMA(aot_mma_f16, aot_mfma_32x32x16, __builtin_amdgcn_mfma_f32_32x32x16_f16, aot_amd_h16x8, aot_amd_f32x16)
AOT_AMD_MFMA(aot_mma_f16, aot_mfma_16x16x32, __builtin_amdgcn_mfma_f32_16x16x32_f16, aot_amd_h16x8, aot_amd_f32x4)
#endif
#undef AOT_AMD_MFMA

#endif
