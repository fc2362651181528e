/* aot_amd.h : the AMD part of the portability layer, on clang's AMDGPU builtins only (no ROCm
 * headers, no device libraries: compiled with -nogpuinc -nogpulib). */
#ifndef AOT_AMD_H
#define AOT_AMD_H

#define AOT_KERNEL extern "C" __attribute__((global))
#define AOT_DEV static inline __attribute__((device, always_inline))
#define AOT_LAUNCH_BOUNDS(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#define AOT_SHARED(T, name, n) __attribute__((shared)) T name[n]

/* CDNA (gfx9) runs wave64; RDNA would be wave32 and is not a target yet. */
#if defined(__gfx90a__) || defined(__gfx942__) || defined(__gfx950__)
#define AOT_WAVE 64
#else
#error "aot_amd.h: unknown AMD target; add its wave size"
#endif

AOT_DEV int aot_thread_x(void) { return (int)__builtin_amdgcn_workitem_id_x(); }
AOT_DEV int aot_block_x(void) { return (int)__builtin_amdgcn_workgroup_id_x(); }

AOT_DEV void aot_sync_block(void)
{
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

AOT_DEV int aot_lane(void) { return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }

/* ds_bpermute_b32 takes a byte address: lane * 4. */
AOT_DEV int aot_shfl_i32(int v, int src) { return __builtin_amdgcn_ds_bpermute(src << 2, v); }

AOT_DEV float aot_exp2_fast(float x) { return __builtin_amdgcn_exp2f(x); }
AOT_DEV float aot_fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
AOT_DEV float aot_f32_from_bits(unsigned u) { return __builtin_bit_cast(float, u); }
AOT_DEV unsigned aot_bits_from_f32(float f) { return __builtin_bit_cast(unsigned, f); }

#endif
