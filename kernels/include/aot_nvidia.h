/* aot_nvidia.h : the NVIDIA part of the portability layer (nvcc, warp 32). */
#ifndef AOT_NVIDIA_H
#define AOT_NVIDIA_H

#define AOT_KERNEL extern "C" __global__
#define AOT_DEV static __device__ __forceinline__
#define AOT_LAUNCH_BOUNDS(n) __launch_bounds__(n)
#define AOT_LAUNCH_BOUNDS_MIN(n, blocks) __launch_bounds__(n, blocks)
#define AOT_SHARED(T, name, n) __shared__ T name[n]
#define AOT_SHARED_DYN(T, name, n) extern __shared__ __align__(16) T name[]
#define AOT_WAVE 32

AOT_DEV int aot_thread_x(void) { return (int)threadIdx.x; }
AOT_DEV int aot_block_x(void) { return (int)blockIdx.x; }
AOT_DEV int aot_grid_x(void) { return (int)gridDim.x; }
AOT_DEV void aot_sync_block(void) { __syncthreads(); }
AOT_DEV void aot_sync_wave(void) { __syncwarp(); }
AOT_DEV int aot_lane(void) { return (int)(threadIdx.x & 31u); }
AOT_DEV int aot_shfl_i32(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }
AOT_DEV int aot_uniform_i32(int v) { return __shfl_sync(0xffffffffu, v, 0); }
#define AOT_SHFL_XOR 1
AOT_DEV int aot_shfl_xor_i32(int v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
/* ex2.approx.ftz: one MUFU.EX2 (exp2f adds a rescale for results below 2^-126; they flush to
 * zero here, as in AMD's v_exp_f32 with denormals off) */
AOT_DEV float aot_exp2_fast(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
AOT_DEV float aot_log2_fast(float x) { return __log2f(x); }
AOT_DEV float aot_rsqrt_fast(float x) { return rsqrtf(x); }
AOT_DEV float aot_rcp_fast(float x)
{
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
AOT_DEV float aot_fmaxf(float a, float b) { return fmaxf(a, b); }
AOT_DEV float aot_fminf(float a, float b) { return fminf(a, b); }
AOT_DEV float aot_fmaf(float a, float b, float c) { return __fmaf_rn(a, b, c); }
AOT_DEV float aot_f32_from_bits(unsigned u) { return __uint_as_float(u); }
AOT_DEV int aot_popc_u32(unsigned m) { return __popc(m); }
AOT_DEV int aot_popc_u64(unsigned long long m) { return __popcll(m); }
AOT_DEV int aot_ctz_u32(unsigned m) { return __ffs((int)m) - 1; }
AOT_DEV int aot_ctz_u64(unsigned long long m) { return __ffsll((long long)m) - 1; }
AOT_DEV unsigned aot_bits_from_f32(float f) { return __float_as_uint(f); }
AOT_DEV int aot_atomic_add_i32(int *p, int v) { return atomicAdd(p, v); }
AOT_DEV void aot_fence_device(void) { __threadfence(); }
AOT_DEV int aot_load_device_i32(const int *p) { return __ldcg(p); } /* from L2, not a stale L1 line */

/* Clusters (sm_90+): the barrier's arrive releases and its wait acquires; mapa gives the
 * generic address of the same shared variable in another block of the cluster. */
#if __CUDA_ARCH__ >= 900
#define AOT_CLUSTERS 1
AOT_DEV int aot_cluster_rank(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return (int)r;
}
AOT_DEV void aot_cluster_sync(void) { asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory"); }
template <class T>
AOT_DEV T *aot_cluster_map(T *p, int rank)
{
    T *r;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(p), "r"(rank));
    return r;
}
#endif

/* Early launches (sm_90+): griddepcontrol, a no-op for a kernel launched in order. */
#if __CUDA_ARCH__ >= 900
#define AOT_GRID_DEPENDENCY 1
AOT_DEV void aot_grid_wait(void) { asm volatile("griddepcontrol.wait;" ::: "memory"); }
AOT_DEV void aot_grid_launch_next(void) { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
#endif

/* sm_80+ reduces a warp in one instruction (redux.sync). */
#if __CUDA_ARCH__ >= 800
#define AOT_WAVE_REDUCE_U32 1
AOT_DEV unsigned aot_wave_max_u32(unsigned v) { return __reduce_max_sync(0xffffffffu, v); }
AOT_DEV unsigned aot_wave_min_u32(unsigned v) { return __reduce_min_sync(0xffffffffu, v); }
#endif

#define AOT_WAVE_ANY 1
AOT_DEV bool aot_wave_any(bool p) { return __any_sync(0xffffffffu, p) != 0; }

/* sm_70+ finds the lanes holding the same value in one instruction (match.any). */
#if __CUDA_ARCH__ >= 700
#define AOT_WAVE_PEERS 1
AOT_DEV void aot_wave_peers(int v, int *rank, int *count, int *first)
{
    const unsigned m = __match_any_sync(0xffffffffu, v), before = (1u << aot_lane()) - 1u;
    *rank = __popc(m & before), *count = __popc(m), *first = __ffs(m) - 1;
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

/* fp16 -> fp32 is exact: the conversion instruction gives aot_device.h's value in one step. */
#define AOT_F16_TO_F32 1
AOT_DEV float aot_f16_to_f32(unsigned short h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

/* Two fp32 rounded (to nearest even) into one register of bf16 or fp16, lo in the low half. */
#define AOT_PACK2_16 1
AOT_DEV unsigned aot_pack2_16(float lo, float hi, int f16)
{
    unsigned r;
    if (f16) asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* prmt's selector nibbles 9 and b replicate the top bit of bytes 1 and 3. */
#define AOT_SIGN_MASK16X2 1
AOT_DEV unsigned aot_sign_mask16x2(unsigned w)
{
    unsigned r;
    asm("prmt.b32 %0, %1, 0, 0xbb99;" : "=r"(r) : "r"(w));
    return r;
}

/* One mad.lo, which ptxas keeps as one IMAD (the multiply-add pipe). Written plainly, LLVM
 * reassociates a lane's id (0xffff - e0 - 2c) into an or and an add on the integer pipe. */
#define AOT_SHL16_ADD 1
AOT_DEV unsigned aot_shl16_add(unsigned k, unsigned lo)
{
    unsigned r;
    asm("mad.lo.u32 %0, %1, 65536, %2;" : "=r"(r) : "r"(k), "r"(lo));
    return r;
}

/* Asynchronous 16-byte copies global -> shared (cp.async, sm_80+): the bytes land by
 * aot_copy_async_wait_all() (cp.async.wait_all: committed or not, as aot_device.h promises);
 * invalid copies write zeros and read nothing. The waits order the bytes for this thread's
 * plain loads only: a tile that wgmma reads (the async proxy) needs aot_wg_shared_fence()
 * after the wait, and a barrier. */
#define AOT_COPY_ASYNC 1
AOT_DEV void aot_copy16_async(void *shared_dst, const void *src, bool valid)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(shared_dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(src), "r"(valid ? 16 : 0));
}
AOT_DEV void aot_copy_async_commit(void) { asm volatile("cp.async.commit_group;"); }
AOT_DEV void aot_copy_async_wait_all(void) { asm volatile("cp.async.wait_all;" ::: "memory"); }

#define AOT_COPY_ASYNC_PRIOR 1
template <int N>
AOT_DEV void aot_copy_async_wait_prior(void)
{
    if (N == 0) aot_copy_async_wait_all();
    else asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

/* Fragments of m16n8k16 from swizzled shared tiles (aot_swz) with ldmatrix x4: four 8x8
 * matrices, lane l pointing at row l % 8 of matrix l / 8; each row is 16 bytes of one chunk. A: matrices (rows 0-7, k 0-7),
 * (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15). B, two N tiles per
 * instruction: (tile 0, k 0-7), (tile 0, k 8-15), (tile 1, k 0-7), (tile 1, k 8-15); "cols"
 * (B's columns are tile rows) plain, "rows" (B's k are tile rows) transposed. */
#define AOT_FRAG_LOADS 1
#include "aot_tile.h"

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
AOT_DEV void aot_frag_a(S, const unsigned short *t, int rows, int r0, int k0, int lane, unsigned short (&a)[S::A])
{
    aot_nv_check_shape<S>();
    const int m = lane / 8;
    unsigned x[4];
    aot_nv_ldmatrix_x4(t + aot_swz(r0 + 8 * (m % 2) + lane % 8, k0 + 8 * (m / 2), rows), false, x);
#pragma unroll
    for (int j = 0; j < 4; j++) a[2 * j] = (unsigned short)x[j], a[2 * j + 1] = (unsigned short)(x[j] >> 16);
}

/* Packed B fragments: each ldmatrix gives two N tiles' registers as they are. */
template <class S, int NT, bool BY_ROWS>
AOT_DEV void aot_nv_frag_b_x2(const unsigned short *t, int rows, int k0, int c0, int lane, unsigned (&b)[NT][S::B / 2])
{
    aot_nv_check_shape<S>();
    static_assert(NT % 2 == 0, "ldmatrix B fragments: pairs of tiles");
    const int m = lane / 8, k = k0 + 8 * (m % 2), r = lane % 8;
#pragma unroll
    for (int n = 0; n < NT; n += 2) {
        const int c = c0 + 8 * n + 8 * (m / 2);
        unsigned x[4];
        aot_nv_ldmatrix_x4(t + (BY_ROWS ? aot_swz(k + r, c, rows) : aot_swz(c + r, k, rows)), BY_ROWS, x);
        b[n][0] = x[0], b[n][1] = x[1], b[n + 1][0] = x[2], b[n + 1][1] = x[3];
    }
}
template <class S, int NT, bool BY_ROWS>
AOT_DEV void aot_nv_frag_b(const unsigned short *t, int rows, int k0, int c0, int lane, unsigned short (&b)[NT][S::B])
{
    unsigned x[NT][S::B / 2];
    aot_nv_frag_b_x2<S, NT, BY_ROWS>(t, rows, k0, c0, lane, x);
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < S::B; i++) b[n][i] = (unsigned short)(x[n][i / 2] >> (16 * (i % 2)));
}
template <class S, int NT>
AOT_DEV void aot_frag_b_cols(S, const unsigned short *t, int rows, int k0, int c0, int lane, unsigned short (&b)[NT][S::B])
{
    aot_nv_frag_b<S, NT, false>(t, rows, k0, c0, lane, b);
}
template <class S, int NT>
AOT_DEV void aot_frag_b_rows(S, const unsigned short *t, int rows, int k0, int c0, int lane, unsigned short (&b)[NT][S::B])
{
    aot_nv_frag_b<S, NT, true>(t, rows, k0, c0, lane, b);
}

/* Products of a warp group (aot_device.h) on sm_90a: one wgmma.mma_async m64nNk16 per call,
 * A's and B's tiles read through descriptors of the 128-byte swizzle (aot_tile.h's panels:
 * 8-row atoms 1024 bytes apart; a k-step inside a panel moves the start 32 bytes, the hardware
 * applies the xor to the address). B "cols" is K-major; B_ROWS is MN-major (transposed), its
 * next 64 columns one panel (rows * 128 bytes) on. Tiles start 1024-byte aligned
 * (AOT_SHARED_TILE). The C registers are fenced on both sides so the compiler neither moves
 * their writes past the start nor their reads before the wait. */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define AOT_WG_MMA 1
#define AOT_SHARED_TILE(name, n) __shared__ __align__(1024) unsigned short name[n]
#define AOT_SHARED_DYN_TILE(name, n)                                                              \
    extern __shared__ __align__(16) unsigned short name##_dyn[];                                  \
    unsigned short *const name = name##_dyn + (-(unsigned)__cvta_generic_to_shared(name##_dyn) & 1023u) / 2
#include "aot_wgmma.h"

template <int NT, int C>
AOT_DEV void aot_nv_fence_regs(float (&c)[NT][C])
{
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < C; i++) asm volatile("" : "+f"(c[n][i])::"memory");
}
#define AOT_WG_SHARED_FENCE 1
AOT_DEV void aot_wg_shared_fence(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
template <int NT, int C>
AOT_DEV void aot_wg_begin(float (&c)[NT][C])
{
    aot_nv_fence_regs(c);
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
AOT_DEV void aot_wg_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int NT, int C>
AOT_DEV void aot_wg_fence(float (&c)[NT][C]) { aot_nv_fence_regs(c); }
template <int N, int NT, int C>
AOT_DEV void aot_wg_wait(float (&c)[NT][C])
{
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
    aot_nv_fence_regs(c);
}

/* Descriptor of 8-row atoms from element `off` (a multiple of 8) of tile t on: start,
 * leading (lbo) and stride (1024) byte offsets, 128-byte swizzle. The start is the tile's plus
 * off in 16-byte units, so that the descriptors of one tile differ by constants. */
AOT_DEV unsigned long long aot_nv_wg_desc(const unsigned short *t, unsigned off, unsigned lbo)
{
    const unsigned start = (((unsigned)__cvta_generic_to_shared(t) & 0x3ffffu) >> 4) + off / 8;
    return (unsigned long long)(start | (lbo >> 4) << 16) | 64ull << 32 | 1ull << 62;
}
/* K-major operand: rows r0.. (a multiple of 8, so aot_swz leaves the start unpermuted) of the
 * tile, from column k0 (a multiple of 16); the leading offset is unused. */
AOT_DEV unsigned long long aot_nv_wg_desc_k(const unsigned short *t, int rows, int r0, int k0)
{
    return aot_nv_wg_desc(t, (unsigned)aot_swz(r0, k0, rows), 16);
}
/* MN-major operand: tile rows k0.. (a multiple of 16) as k, columns c0.. (a multiple of 64). */
AOT_DEV unsigned long long aot_nv_wg_desc_mn(const unsigned short *t, int rows, int k0, int c0)
{
    return aot_nv_wg_desc(t, (unsigned)aot_swz(k0, c0, rows), (unsigned)rows * 128u);
}

#define AOT_NV_WG_CASE(FORM, NT_, TB, c, a, db, add)                                            \
    if (F16) AOT_NV_WGMMA_##FORM##_##NT_("f16", TB, c, a, db, add);                              \
    else AOT_NV_WGMMA_##FORM##_##NT_("bf16", TB, c, a, db, add);
#define AOT_NV_WG_CASES(FORM, TB, c, a, db, add)                                                \
    static_assert(NT == 2 || NT == 4 || NT == 8 || NT == 9 || NT == 16 || NT == 32, "wgmma widths: 16 .. 256"); \
    if constexpr (NT == 2) { AOT_NV_WG_CASE(FORM, 2, TB, c, a, db, add) }                             \
    else if constexpr (NT == 4) { AOT_NV_WG_CASE(FORM, 4, TB, c, a, db, add) }                        \
    else if constexpr (NT == 8) { AOT_NV_WG_CASE(FORM, 8, TB, c, a, db, add) }                        \
    else if constexpr (NT == 9) { AOT_NV_WG_CASE(FORM, 9, TB, c, a, db, add) }                        \
    else if constexpr (NT == 16) { AOT_NV_WG_CASE(FORM, 16, TB, c, a, db, add) }                      \
    else if constexpr (NT == 32) { AOT_NV_WG_CASE(FORM, 32, TB, c, a, db, add) }

template <class S, int F16, bool B_ROWS, int NT>
AOT_DEV void aot_wg_mma_rs_x2(S, float (&c)[NT][S::C], const unsigned (&ar)[S::A / 2], const unsigned short *bt, int b_rows, int k0, int c0)
{
    aot_nv_check_shape<S>();
    if constexpr (B_ROWS) {
        const unsigned long long db = aot_nv_wg_desc_mn(bt, b_rows, k0, c0);
        AOT_NV_WG_CASES(RS, 1, c, ar, db, 1)
    } else {
        const unsigned long long db = aot_nv_wg_desc_k(bt, b_rows, c0, k0);
        AOT_NV_WG_CASES(RS, 0, c, ar, db, 1)
    }
}
template <class S, int F16, bool B_ROWS, int NT>
AOT_DEV void aot_wg_mma_rs(S, float (&c)[NT][S::C], const unsigned short (&a)[S::A], const unsigned short *bt, int b_rows, int k0, int c0)
{
    const unsigned ar[4] = {aot_nv_pack2(a[0], a[1]), aot_nv_pack2(a[2], a[3]), aot_nv_pack2(a[4], a[5]), aot_nv_pack2(a[6], a[7])};
    aot_wg_mma_rs_x2<S, F16, B_ROWS>(S(), c, ar, bt, b_rows, k0, c0);
}
template <class S, int F16, int NT>
AOT_DEV void aot_wg_mma_ss(S, float (&c)[NT][S::C], const unsigned short *at, int k0, const unsigned short *bt, int b_rows, int c0, bool add)
{
    aot_nv_check_shape<S>();
    const unsigned long long da = aot_nv_wg_desc_k(at, 4 * S::M, 0, k0), db = aot_nv_wg_desc_k(bt, b_rows, c0, k0);
    AOT_NV_WG_CASES(SS, 0, c, da, db, (int)add)
}
#undef AOT_NV_WG_CASES
#undef AOT_NV_WG_CASE
#endif
#endif

/* ---- warp-specialized pipelines (sm_90a): mbarriers, tensor copies, st.async ---- */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define AOT_PIPELINES 1
#define AOT_GRID_CONSTANT const __grid_constant__
/* 8 bytes are the hardware's; 16 keep the emulator's layout (aot_host.h) the same size. */
struct __align__(16) aot_mbar {
    unsigned long long state, unused;
};
AOT_DEV unsigned aot_nv_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }
AOT_DEV unsigned aot_nv_mapa(unsigned a, int rank)
{
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    return r;
}
/* fence.mbarrier_init: the other blocks may arrive on it after the aot_cluster_sync that follows */
AOT_DEV void aot_mbar_init(aot_mbar *b, int n)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n\tfence.mbarrier_init.release.cluster;"
                 ::"r"(aot_nv_smem(b)), "r"(n) : "memory");
}
AOT_DEV void aot_mbar_arrive(aot_mbar *b) { asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(aot_nv_smem(b)) : "memory"); }
AOT_DEV void aot_mbar_expect(aot_mbar *b, int bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(aot_nv_smem(b)), "r"(bytes) : "memory");
}
/* try_wait suspends the thread for a while before it answers no, so the loop does not spin hot.
 * The acquire is the block's: enough for the block's own arrivals and tensor copies. A barrier
 * that other blocks' st.async complete needs the cluster's (aot_mbar_wait_cluster), which costs
 * an invalidation of the L1 cache (CCTL.IVALL) after every wait. */
#define AOT_NV_MBAR_WAIT(scope, b, parity)                                                      \
    unsigned done;                                                                              \
    do {                                                                                        \
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.acquire." scope ".shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }" \
                     : "=r"(done) : "r"(aot_nv_smem(b)), "r"(parity) : "memory");               \
    } while (!done)
AOT_DEV void aot_mbar_wait(aot_mbar *b, int parity) { AOT_NV_MBAR_WAIT("cta", b, parity); }
AOT_DEV void aot_mbar_wait_cluster(aot_mbar *b, int parity) { AOT_NV_MBAR_WAIT("cluster", b, parity); }
#undef AOT_NV_MBAR_WAIT
AOT_DEV void aot_copy_tile(unsigned short *dst, const void *map, int c0, int c1, int c2, aot_mbar *b)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(aot_nv_smem(dst)), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(aot_nv_smem(b)) : "memory");
}
AOT_DEV void aot_store_remote(void *p, aot_mbar *b, int rank, const unsigned (&v)[4])
{
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
                 ::"r"(aot_nv_mapa(aot_nv_smem(p), rank)), "r"(v[0]), "r"(v[1]), "r"(v[2]), "r"(v[3]),
                 "r"(aot_nv_mapa(aot_nv_smem(b), rank)) : "memory");
}
AOT_DEV void aot_sync_named(int id, int threads) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory"); }
AOT_DEV void aot_arrive_named(int id, int threads) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory"); }
template <int N>
AOT_DEV void aot_regs_raise(void) { asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N)); }
template <int N>
AOT_DEV void aot_regs_lower(void) { asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N)); }
AOT_DEV int aot_cluster_id(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return (int)r;
}
AOT_DEV int aot_cluster_count(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
    return (int)r;
}

/* Packed fragments (k pairs in one register, as the instruction takes them). */
#define AOT_FRAG_PACKED 1
template <class S>
AOT_DEV void aot_frag_a_x2(S, const unsigned short *t, int rows, int r0, int k0, int lane, unsigned (&a)[S::A / 2])
{
    aot_nv_check_shape<S>();
    const int m = lane / 8;
    aot_nv_ldmatrix_x4(t + aot_swz(r0 + 8 * (m % 2) + lane % 8, k0 + 8 * (m / 2), rows), false, a);
}
template <class S, int NT>
AOT_DEV void aot_frag_b_cols_x2(S, const unsigned short *t, int rows, int k0, int c0, int lane, unsigned (&b)[NT][S::B / 2])
{
    aot_nv_frag_b_x2<S, NT, false>(t, rows, k0, c0, lane, b);
}
AOT_DEV void aot_mma_bf16_x2(aot_mma_m16n8k16, float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2])
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

#endif
