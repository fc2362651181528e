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

/* sm_70+ finds the lanes holding the same value in one instruction (match.any). */
#if __CUDA_ARCH__ >= 700
#define AOT_WAVE_PEERS 1
AOT_DEV void aot_wave_peers(int v, int *rank, int *count)
{
    const unsigned m = __match_any_sync(0xffffffffu, v), before = (1u << aot_lane()) - 1u;
    *rank = __popc(m & before), *count = __popc(m);
}
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

/* Two fp32 rounded (to nearest even) into one register of bf16 or fp16, lo in the low half. */
#define AOT_PACK2_16 1
AOT_DEV unsigned aot_pack2_16(float lo, float hi, int f16)
{
    unsigned r;
    if (f16) asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* Asynchronous 16-byte copies global -> shared (cp.async, sm_80+): the bytes land by
 * aot_copy_async_wait_all(); invalid copies write zeros and read nothing. */
#define AOT_COPY_ASYNC 1
AOT_DEV void aot_copy16_async(void *shared_dst, const void *src, bool valid)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(shared_dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
}
AOT_DEV void aot_copy_async_commit(void) { asm volatile("cp.async.commit_group;"); }
AOT_DEV void aot_copy_async_wait_all(void) { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

/* Fragments of m16n8k16 from swizzled shared tiles (aot_swz, in aot_device.h; this header
 * comes first, hence the local copy) with ldmatrix x4: four 8x8 matrices, lane l pointing at
 * row l % 8 of matrix l / 8; each row is 16 bytes of one chunk. A: matrices (rows 0-7, k 0-7),
 * (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15). B, two N tiles per
 * instruction: (tile 0, k 0-7), (tile 0, k 8-15), (tile 1, k 0-7), (tile 1, k 8-15); "cols"
 * (B's columns are tile rows) plain, "rows" (B's k are tile rows) transposed. */
#define AOT_FRAG_LOADS 1
AOT_DEV int aot_nv_swz(int row, int col, int ld) { return row * ld + ((col >> 3) ^ (row & 7)) * 8 + (col & 7); }

AOT_DEV void aot_nv_ldmatrix_x4(const unsigned short *p, bool trans, unsigned (&r)[4])
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(p);
    if (trans)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(s));
}

template <class S>
AOT_DEV void aot_nv_check_shape(void)
{
    static_assert(S::M == 16 && S::N == 8 && S::K == 16, "ldmatrix fragments: m16n8k16");
}

template <class S>
AOT_DEV void aot_frag_a(S, const unsigned short *t, int ld, int r0, int k0, int lane, unsigned short (&a)[S::A])
{
    aot_nv_check_shape<S>();
    const int m = lane / 8;
    unsigned x[4];
    aot_nv_ldmatrix_x4(t + aot_nv_swz(r0 + 8 * (m % 2) + lane % 8, k0 + 8 * (m / 2), ld), false, x);
#pragma unroll
    for (int j = 0; j < 4; j++) a[2 * j] = (unsigned short)x[j], a[2 * j + 1] = (unsigned short)(x[j] >> 16);
}

template <class S, int NT, bool BY_ROWS>
AOT_DEV void aot_nv_frag_b(const unsigned short *t, int ld, int k0, int c0, int lane, unsigned short (&b)[NT][S::B])
{
    aot_nv_check_shape<S>();
    static_assert(NT % 2 == 0, "ldmatrix B fragments: pairs of tiles");
    const int m = lane / 8, k = k0 + 8 * (m % 2), r = lane % 8;
#pragma unroll
    for (int n = 0; n < NT; n += 2) {
        const int c = c0 + 8 * n + 8 * (m / 2);
        unsigned x[4];
        aot_nv_ldmatrix_x4(t + (BY_ROWS ? aot_nv_swz(k + r, c, ld) : aot_nv_swz(c + r, k, ld)), BY_ROWS, x);
#pragma unroll
        for (int j = 0; j < 4; j++)
            b[n + j / 2][2 * (j % 2)] = (unsigned short)x[j], b[n + j / 2][2 * (j % 2) + 1] = (unsigned short)(x[j] >> 16);
    }
}
template <class S, int NT>
AOT_DEV void aot_frag_b_cols(S, const unsigned short *t, int ld, int k0, int c0, int lane, unsigned short (&b)[NT][S::B])
{
    aot_nv_frag_b<S, NT, false>(t, ld, k0, c0, lane, b);
}
template <class S, int NT>
AOT_DEV void aot_frag_b_rows(S, const unsigned short *t, int ld, int k0, int c0, int lane, unsigned short (&b)[NT][S::B])
{
    aot_nv_frag_b<S, NT, true>(t, ld, k0, c0, lane, b);
}
#endif

#endif
