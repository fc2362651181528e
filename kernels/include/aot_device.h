/* aot_device.h : the device portability layer. The one place that picks the vendor; kernel
 * files include only this header (and their own argument headers), never a vendor header.
 *
 * Each vendor header (aot_amd.h, aot_nvidia.h, aot_host.h for the CPU emulator) defines:
 *   AOT_KERNEL             an extern "C" kernel entry point
 *   AOT_DEV                a device helper (static, inlined)
 *   AOT_WAVE               lanes per wave, a compile-time constant (64 on CDNA, 32 on NVIDIA)
 *   AOT_LAUNCH_BOUNDS(n)   the kernel runs with at most n threads per block
 *   AOT_LAUNCH_BOUNDS_MIN(n, blocks)  the same, registers capped so that `blocks` blocks fit on
 *                          a multiprocessor (NVIDIA; AMD keeps the thread bound only, as its
 *                          register budget is per wave and no AMD variant should change)
 *   AOT_SHARED(T, name, n) a block-shared array T name[n]
 *   AOT_SHARED_DYN(T, name, n)  a block-shared T name[n] whose bytes the launch provides
 *                          (the host passes at least n * sizeof(T) as the launch's dynamic
 *                          shared memory; NVIDIA caps static shared memory at 48 KiB); one per
 *                          kernel
 *   aot_thread_x(), aot_block_x()            thread and block index (x only)
 *   aot_grid_x()           blocks in the launch (x only)
 *   aot_sync_block()       barrier for the block, with shared-memory ordering
 *   aot_sync_wave()        barrier for the wave, with shared-memory ordering among its lanes
 *   aot_lane()             lane within the wave
 *   aot_shfl_i32(v, src)   v of lane `src` of the same wave (every lane must take part)
 *   aot_uniform_i32(v)     v of the wave's first lane (every lane must take part): for a value
 *                          the same in every lane that the compiler cannot prove so (loaded
 *                          from memory, or computed from the thread's index), so that it and
 *                          what follows from it stay in uniform (NVIDIA) or scalar (AMD)
 *                          registers and branches on it stay uniform
 *   aot_exp2_fast(x)       2^x in fp32, hardware approximation (<= 2 ulp on both vendors; a
 *                          result below 2^-126 may flush to zero)
 *   aot_log2_fast(x)       log2(x) in fp32, hardware approximation (<= 2 ulp on both vendors)
 *   aot_rsqrt_fast(x)      1/sqrt(x) in fp32, hardware approximation (<= 2 ulp)
 *   aot_rcp_fast(x)        1/x in fp32, hardware approximation (<= 1 ulp for normal x)
 *   aot_fmaxf(a, b), aot_fminf(a, b)  fp32 max, min (the other operand when one is NaN)
 *   aot_fmaf(a, b, c)      a * b + c with one rounding (not left to the compiler's contraction)
 *   aot_f32_from_bits(u), aot_bits_from_f32(f)   bit casts
 *   aot_popc_u32(m), aot_popc_u64(m)  set bits of m; aot_ctz_u32(m), aot_ctz_u64(m) the lowest
 *                          set bit's place (m != 0)
 *   aot_atomic_add_i32(p, v)  adds v to the global int *p, returns the old value (device scope)
 *   aot_fence_device()     orders this thread's global writes before its later ones for every
 *                          block of the launch (with an atomic: the "last block" pattern)
 *   aot_load_device_i32(p) a global int another block of the launch wrote before its fence
 *
 * Early launches (a vendor that can start a kernel's blocks before the kernel before it in the
 * stream has ended defines AOT_GRID_DEPENDENCY; elsewhere both calls do nothing and kernels run
 * one after another). The runtime launches a kernel early only after another kernel of the same
 * op (AOT_LAUNCH_FOLLOWS in runtime/src/gpu.h); before aot_grid_wait such a kernel may read the
 * op's inputs, never what an earlier kernel of the op writes, and may write nothing they read:
 *   aot_grid_wait()        waits until the kernel before this one in the stream has ended and
 *                          its writes are visible (at once for a kernel launched in order)
 *   aot_grid_launch_next() lets the next kernel's blocks start on free multiprocessors (they
 *                          wait in their own aot_grid_wait); a kernel that calls it early
 *                          hides the next one's launch behind its own tail
 *
 * Thread-block clusters (a vendor that has them defines AOT_CLUSTERS; a kernel that uses them
 * is built for those targets only, and launched in clusters):
 *   aot_cluster_rank()     this block's place in its cluster
 *   aot_cluster_sync()     barrier for every thread of the cluster, ordering the shared-memory
 *                          writes before it for every block of the cluster after it (a block
 *                          must not exit while another may still read its shared memory)
 *   aot_cluster_map(p, r)  the address in block r's shared memory of what p, an address in this
 *                          block's shared memory, addresses here
 *
 * Warp-specialized pipelines (a vendor that has them defines AOT_PIPELINES: sm_90a, and the
 * emulator at wave 32; a kernel that uses them is built for those only, launched in clusters):
 *   aot_mbar               a barrier object in block-shared memory: a phase completes when its
 *                          arrivals and the bytes it expects have all come
 *   aot_mbar_init(b, n)    n arrivals a phase (one thread, before an aot_cluster_sync)
 *   aot_mbar_arrive(b)     one arrival
 *   aot_mbar_expect(b, n)  one arrival that also expects n more bytes of copies or remote
 *                          stores in this phase (they may land before it)
 *   aot_mbar_wait(b, parity)  until the phase of that parity (0, 1, 0, ... as they complete)
 *                          has completed; the block's tensor copies completed on it, and what
 *                          the block's threads stored before their arrivals, are then visible
 *   aot_mbar_wait_cluster(b, parity)  the same, and other blocks' aot_store_remote completed on
 *                          b are visible too, with what their threads did before those stores
 *                          (a wider acquire, which costs more on NVIDIA: use it for such
 *                          barriers only; the emulator reports aot_mbar_wait on one)
 *   aot_copy_tile(dst, map, c0, c1, c2, b)  the tensor copy of map's box at element (c0, c1,
 *                          c2) into dst, a 64-column panel of a swizzled tile (aot_swz) whose
 *                          rows are the box's, c1 fastest (1024-byte aligned); elements outside
 *                          the tensor arrive as zeros; completes the box's bytes on b
 *   aot_store_remote(p, b, rank, v)  unsigned v[4] to p in block rank's shared memory,
 *                          completing 16 bytes on that block's b
 *   aot_sync_named(id, n)  barrier for the n threads (whole waves) that call it with id 1..15
 *   aot_arrive_named(id, n)  counts this wave among barrier id's n threads without waiting
 *                          (the others sync; n counts both)
 *   aot_regs_raise<N>(), aot_regs_lower<N>()  a warp group's registers a thread (every wave
 *                          of the group calls it; the kernel is bounded to one block an SM)
 *   aot_cluster_id(), aot_cluster_count()  the cluster's index in the grid, and their number
 *   AOT_GRID_CONSTANT      the kernel argument struct of such a kernel, read where it lies
 *   aot_frag_a_x2, aot_frag_b_cols_x2, aot_mma_bf16_x2  aot_frag_a, aot_frag_b_cols and
 *                          aot_mma_bf16 with k pairs packed in 32 bits
 *
 * Matrix fragments (one wave computes C[MxN] += A[MxK] * B[KxN], fp32 accumulators, bf16 or
 * fp16 inputs given as their 16-bit patterns). A shape is a type S with enums M, N, K and A, B,
 * C (elements per lane of each operand) and the maps from (lane, element) to the matrix:
 *   S::a_row(lane, i), S::a_k(lane, i)    element i of the lane's A fragment is A[row][k]
 *   S::b_k(lane, i), S::b_col(lane, i)    element i of the lane's B fragment is B[k][col]
 *   S::c_row(lane, i), S::c_col(lane, i)  element i of the lane's C fragment is C[row][col]
 *   aot_mma_bf16(S(), c, a, b), aot_mma_f16(S(), c, a, b)
 *        float c[S::C], unsigned short a[S::A], b[S::B]; every lane of the wave must call it.
 * A kernel loads its fragments through the maps, so one source serves every shape.
 * Rows of C: a lane holds S::C_ROWS rows (element i in slot S::c_slot(i)); the S::ROW_LANES
 * lanes holding the same rows differ in the low bits of the lane (reduce with xor 1, 2, ...).
 * S::C_TO_A = 1 (mma.sync): the C fragments of the K/N tiles of a k-step are that step's A
 * fragment, element i being element S::c_elem(i) of tile S::c_tile(i). Shapes by
 * feature macro:
 *   AOT_MMA_MFMA        aot_mfma_32x32x8, aot_mfma_16x16x16          (aot_mfma.h, wave 64)
 *   AOT_MMA_MFMA_GFX950 also aot_mfma_32x32x16, aot_mfma_16x16x32    (gfx950)
 *   AOT_MMA_SYNC        aot_mma_m16n8k16                             (aot_mma_sync.h, sm_80+)
 * Loads and conversions with vendor fast paths (generic versions below): aot_frag_a and
 * aot_frag_b_cols/rows (fragments from swizzled shared tiles, aot_swz), aot_wg_mma_ss/rs
 * (products of 4 waves with B from a tile) and aot_wg_shared_fence, AOT_SHARED_TILE and
 * AOT_SHARED_DYN_TILE (aligned for them), aot_copy16_async (+ commit, wait_all),
 * aot_copy_async_wait_prior<N>, aot_pack2_16, aot_sign_mask16x2, aot_shl16_add,
 * aot_shfl_xor_i32, aot_wave_any.
 * Everything below is written once on top of those. */
#ifndef AOT_DEVICE_H
#define AOT_DEVICE_H

#if defined(AOT_HOST_EMU)
#include "aot_host.h"
#elif defined(__HIP__) || defined(__AMDGCN__)
#include "aot_amd.h"
#elif defined(__CUDACC__)
#include "aot_nvidia.h"
#else
#error "aot_device.h: compile as HIP (clang -x hip), CUDA (nvcc) or with -DAOT_HOST_EMU"
#endif

/* AOT_EMU_ENTRY(kernel, args_t) makes a kernel callable by the host emulator; nothing on GPUs. */
#if !defined(AOT_EMU_ENTRY)
#define AOT_EMU_ENTRY(kernel, args_t)
#endif

typedef unsigned int aot_u32;
typedef int aot_i32;
typedef unsigned short aot_u16;
typedef long long aot_i64;

#define AOT_INF aot_f32_from_bits(0x7f800000u)

AOT_DEV float aot_shfl_f32(float v, int src) { return aot_f32_from_bits((aot_u32)aot_shfl_i32((int)aot_bits_from_f32(v), src)); }
/* v of lane (this lane xor mask). A vendor with a butterfly shuffle defines AOT_SHFL_XOR and
 * its own (no lane arithmetic). */
#if !defined(AOT_SHFL_XOR)
AOT_DEV int aot_shfl_xor_i32(int v, int mask) { return aot_shfl_i32(v, aot_lane() ^ mask); }
#endif
AOT_DEV float aot_shfl_xor_f32(float v, int mask) { return aot_f32_from_bits((aot_u32)aot_shfl_xor_i32((int)aot_bits_from_f32(v), mask)); }

/* Vector accesses: each address must be aligned to the access's size (a GPU faults otherwise).
 * AOT_ALIGNED(T, p, bytes) is p as a T; the emulator's vendor header defines its own, which
 * fails the launch on a misaligned p. */
#if !defined(AOT_ALIGNED)
#define AOT_ALIGNED(T, p, bytes) ((T)(p))
#endif
/* Eight 16-bit values moved as one 16-byte access. */
struct __attribute__((aligned(16))) aot_u16x8 {
    aot_u16 v[8];
};
AOT_DEV aot_u16x8 aot_load_u16x8(const aot_u16 *p) { return *AOT_ALIGNED(const aot_u16x8 *, p, 16); }
AOT_DEV void aot_store_u16x8(aot_u16 *p, const aot_u16x8 &x) { *AOT_ALIGNED(aot_u16x8 *, p, 16) = x; }
/* Four 32-bit words as one 16-byte access. */
struct __attribute__((aligned(16))) aot_u32x4 {
    aot_u32 v[4];
};
AOT_DEV aot_u32x4 aot_load_u32x4(const aot_u32 *p) { return *AOT_ALIGNED(const aot_u32x4 *, p, 16); }
AOT_DEV void aot_store_u32x4(aot_u32 *p, const aot_u32x4 &x) { *AOT_ALIGNED(aot_u32x4 *, p, 16) = x; }
/* W 32-bit words (1, 2 or 4) as one 4 W-byte access. */
template <int W>
struct __attribute__((aligned(4 * W))) aot_words {
    aot_u32 v[W];
};
template <int W>
AOT_DEV aot_words<W> aot_load_words(const aot_u32 *p) { return *AOT_ALIGNED(const aot_words<W> *, p, 4 * W); }
/* Two fp32 as one 8-byte access. */
struct __attribute__((aligned(8))) aot_f32x2 {
    float v[2];
};
AOT_DEV aot_f32x2 aot_load_f32x2(const float *p) { return *AOT_ALIGNED(const aot_f32x2 *, p, 8); }
AOT_DEV void aot_store_f32x2(float *p, float x, float y) { *AOT_ALIGNED(aot_f32x2 *, p, 8) = aot_f32x2{{x, y}}; }

/* Two 16-bit values as one 4-byte access (4-byte aligned), the lower index in the low half.
 * Every shape's fragments hold k in pairs (elements 2i and 2i+1: same row, k and k+1, k even),
 * so fragments load by pairs. */
AOT_DEV aot_u32 aot_load_u16x2(const aot_u16 *p) { return *AOT_ALIGNED(const aot_u32 *, p, 4); }

/* AOT_SHARED_TILE(name, n): a block-shared array of n 16-bit values for a swizzled tile
 * (aot_tile.h); a vendor whose tile products need more alignment defines its own. */
#if !defined(AOT_SHARED_TILE)
#define AOT_SHARED_TILE(name, n) AOT_SHARED(aot_u16x8, name##_x8, (n) / 8); aot_u16 *const name = (aot_u16 *)name##_x8
#endif
/* AOT_SHARED_DYN_TILE(name, n): the same from the launch's dynamic shared memory, whose start
 * has no alignment a kernel can rely on: the host passes n * 2 + AOT_TILE_SLACK bytes and a
 * vendor that needs it moves the start up to the alignment. */
#define AOT_TILE_SLACK 1024
#if !defined(AOT_SHARED_DYN_TILE)
#define AOT_SHARED_DYN_TILE(name, n) \
    AOT_SHARED_DYN(aot_u16x8, name##_x8, ((n) + AOT_TILE_SLACK / 2) / 8); aot_u16 *const name = (aot_u16 *)name##_x8
#endif

/* bf16 -> fp32 is exact: the bf16 bits are the high half of the fp32 bits. */
AOT_DEV float aot_bf16_to_f32(aot_u16 h) { return aot_f32_from_bits((aot_u32)h << 16); }

/* fp32 -> bf16 rounds to nearest, ties to even; NaN stays a (quiet) NaN. */
AOT_DEV aot_u16 aot_f32_to_bf16(float f)
{
    aot_u32 u = aot_bits_from_f32(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (aot_u16)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (aot_u16)(u >> 16);
}

/* fp16 -> fp32 is exact (normals, subnormals, inf, NaN), so a vendor's conversion instruction
 * (AOT_F16_TO_F32) gives the same value; here in integer arithmetic. */
#if !defined(AOT_F16_TO_F32)
AOT_DEV float aot_f16_to_f32(aot_u16 h)
{
    aot_u32 sign = (aot_u32)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return aot_f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp != 0) return aot_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
    /* subnormal or zero: man * 2^-24, exact in fp32 */
    float m = (float)man * 5.9604644775390625e-8f;
    return sign ? -m : m;
}
#endif

/* fp32 -> fp16 rounds to nearest, ties to even (overflow to inf, NaN stays NaN, subnormals
 * exact), in integer arithmetic so that every target computes the same bits. */
AOT_DEV aot_u16 aot_f32_to_f16(float f)
{
    aot_u32 u = aot_bits_from_f32(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (aot_u16)(sign | 0x7e00u);         /* NaN */
    if (a >= 0x477ff000u) return (aot_u16)(sign | 0x7c00u);        /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                         /* below 2^-14: subnormal */
        aot_u32 shift = 126u - (a >> 23), man = (a & 0x7fffffu) | 0x800000u; /* value = man * 2^-(shift+24) */
        if (shift > 24) return (aot_u16)sign;
        aot_u32 r = man >> shift, rem = man & ((1u << shift) - 1u), half = 1u << (shift - 1);
        r += rem > half || (rem == half && (r & 1u));
        return (aot_u16)(sign | r);
    }
    a += 0xfffu + ((a >> 13) & 1u); /* round the 13 dropped bits to even */
    return (aot_u16)(sign | ((a - 0x38000000u) >> 13));
}

/* Two fp32 rounded to nearest even into one register of bf16 (f16 = 0) or fp16, lo in the
 * low half. A vendor header with a paired conversion defines AOT_PACK2_16 and its own. */
#if !defined(AOT_PACK2_16)
AOT_DEV aot_u32 aot_pack2_16(float lo, float hi, int f16)
{
    return f16 ? aot_f32_to_f16(lo) | (aot_u32)aot_f32_to_f16(hi) << 16 : aot_f32_to_bf16(lo) | (aot_u32)aot_f32_to_bf16(hi) << 16;
}
#endif

/* 0xffff in each 16-bit half of w whose top bit is set, else 0. A vendor with a byte permute
 * that replicates sign bits defines AOT_SIGN_MASK16X2 and its own (one instruction). */
#if !defined(AOT_SIGN_MASK16X2)
AOT_DEV aot_u32 aot_sign_mask16x2(aot_u32 w) { return (w >> 15 & 0x00010001u) * 0xffffu; }
#endif

/* (k << 16) + lo. A vendor whose compiler would split it (reassociating lo's parts into other
 * operations) defines AOT_SHL16_ADD and its own, one multiply-add. */
#if !defined(AOT_SHL16_ADD)
AOT_DEV aot_u32 aot_shl16_add(aot_u32 k, aot_u32 lo) { return k * 0x10000u + lo; }
#endif

/* Copies of 16 bytes from global to block-shared memory (both 16-byte aligned) that may
 * complete later: they have landed once this thread has called aot_copy_async_wait_all();
 * other threads see them after a barrier that follows, warp-group products (aot_wg_mma_*)
 * after aot_wg_shared_fence() between the wait and the barrier. An invalid copy writes 16
 * zero bytes and reads nothing. Vendors with asynchronous copies define AOT_COPY_ASYNC; here the copy is
 * done at once. */
#if !defined(AOT_COPY_ASYNC)
AOT_DEV void aot_copy16_async(void *shared_dst, const void *src, bool valid)
{
    aot_u16x8 x = {};
    if (valid) x = aot_load_u16x8((const aot_u16 *)src);
    aot_store_u16x8((aot_u16 *)shared_dst, x);
}
AOT_DEV void aot_copy_async_commit(void) {}
AOT_DEV void aot_copy_async_wait_all(void) {}
#endif
/* Waits until at most N of this thread's committed groups of copies are still in flight. */
#if !defined(AOT_COPY_ASYNC_PRIOR)
template <int N>
AOT_DEV void aot_copy_async_wait_prior(void)
{
    if (N == 0) aot_copy_async_wait_all();
}
#endif

#include "aot_tile.h" /* aot_swz: where element (row, col) of a swizzled tile lies */

/* Fragments from swizzled tiles of `rows` rows (every lane of the wave must call them):
 *   aot_frag_a(S(), t, rows, r0, k0, lane, a)        A rows r0.., k k0..: element (r, k) in
 *                                                    row r of the tile, column k (as Q is)
 *   aot_frag_b_cols(S(), t, rows, k0, c0, lane, b)   B of NT N tiles from c0: (k, c) in row
 *                                                    c, column k (K for Q K^T)
 *   aot_frag_b_rows(S(), t, rows, k0, c0, lane, b)   the same with (k, c) in row k, column c
 *                                                    (V for P V)
 * k0 and c0 multiples of 8. Vendors with a matrix load (ldmatrix) define AOT_FRAG_LOADS;
 * here each lane reads its elements through the maps, k in pairs. */
#if !defined(AOT_FRAG_LOADS)
template <class S>
AOT_DEV void aot_frag_a(S, const aot_u16 *t, int rows, int r0, int k0, int lane, aot_u16 (&a)[S::A])
{
#pragma unroll
    for (int i = 0; i < S::A; i += 2) {
        const aot_u32 x = aot_load_u16x2(t + aot_swz(r0 + S::a_row(lane, i), k0 + S::a_k(lane, i), rows));
        a[i] = (aot_u16)x, a[i + 1] = (aot_u16)(x >> 16);
    }
}
template <class S, int NT>
AOT_DEV void aot_frag_b_cols(S, const aot_u16 *t, int rows, int k0, int c0, int lane, aot_u16 (&b)[NT][S::B])
{
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < S::B; i += 2) {
            const aot_u32 x = aot_load_u16x2(t + aot_swz(c0 + n * S::N + S::b_col(lane, i), k0 + S::b_k(lane, i), rows));
            b[n][i] = (aot_u16)x, b[n][i + 1] = (aot_u16)(x >> 16);
        }
}
template <class S, int NT>
AOT_DEV void aot_frag_b_rows(S, const aot_u16 *t, int rows, int k0, int c0, int lane, aot_u16 (&b)[NT][S::B])
{
#pragma unroll
    for (int n = 0; n < NT; n++)
#pragma unroll
        for (int i = 0; i < S::B; i++) b[n][i] = t[aot_swz(k0 + S::b_k(lane, i), c0 + n * S::N + S::b_col(lane, i), rows)];
}
#endif

/* The same with k pairs packed in 32 bits, the lower k in the low half (aot_device.h's list
 * above); a vendor whose instructions take registers so defines AOT_FRAG_PACKED and its own. */
#if defined(AOT_PIPELINES) && !defined(AOT_FRAG_PACKED)
template <class S>
AOT_DEV void aot_frag_a_x2(S, const aot_u16 *t, int rows, int r0, int k0, int lane, aot_u32 (&a)[S::A / 2])
{
    aot_u16 x[S::A];
    aot_frag_a(S(), t, rows, r0, k0, lane, x);
    for (int i = 0; i < S::A / 2; i++) a[i] = x[2 * i] | (aot_u32)x[2 * i + 1] << 16;
}
template <class S, int NT>
AOT_DEV void aot_frag_b_cols_x2(S, const aot_u16 *t, int rows, int k0, int c0, int lane, aot_u32 (&b)[NT][S::B / 2])
{
    aot_u16 x[NT][S::B];
    aot_frag_b_cols<S, NT>(S(), t, rows, k0, c0, lane, x);
    for (int n = 0; n < NT; n++)
        for (int i = 0; i < S::B / 2; i++) b[n][i] = x[n][2 * i] | (aot_u32)x[n][2 * i + 1] << 16;
}
template <class S>
AOT_DEV void aot_mma_bf16_x2(S, float (&c)[S::C], const aot_u32 (&a)[S::A / 2], const aot_u32 (&b)[S::B / 2])
{
    aot_u16 x[S::A], y[S::B];
    for (int i = 0; i < S::A; i++) x[i] = (aot_u16)(a[i / 2] >> (16 * (i % 2)));
    for (int i = 0; i < S::B; i++) y[i] = (aot_u16)(b[i / 2] >> (16 * (i % 2)));
    aot_mma_bf16(S(), c, x, y);
}
#endif

/* Products of a group of 4 waves with B read from a swizzled tile (every wave of an aligned
 * group of 4 calls them together, with the same tile arguments): wave g of the group owns rows
 * S::M g .. S::M g + S::M - 1 of the product and its C fragments c[NT] (columns c0 .. c0 + NT
 * S::N - 1 of B). One call adds one k-step (S::K), from k0:
 *   aot_wg_mma_ss<S, F16>(S(), c, at, k0, bt, b_rows, c0, add) A from a tile of 4 S::M rows
 *                                                               (the group's rows), B "cols";
 *                                                               add false: c = A B (the run's
 *                                                               first step needs no zeroed c)
 *   aot_wg_mma_rs<S, F16, B_ROWS>(S(), c, a, bt, b_rows, k0, c0) A from the wave's fragment a
 *   aot_wg_mma_rs_x2<S, F16, B_ROWS>(...)  the same with a's k pairs packed in 32 bits (lower
 *                                          k low), as registers the products read directly
 * B "cols": B[k][c] is tile row c, column k (K of Q K^T); B_ROWS: tile row k, column c (V).
 * A run of them goes between aot_wg_begin(c) and aot_wg_end(c), and until the end nothing may
 * read or write c or a fragment given to them: a vendor may run the products asynchronously
 * (sm_90a: wgmma reading B, and A of ss, straight from shared memory). aot_wg_end is
 * aot_wg_commit() (the run so far becomes one group, left running) and aot_wg_wait<0>(c);
 * aot_wg_wait<N>(c) returns when at most N of the wave's groups still run, so a loop may leave
 * its last run going while it prepares the next (the tiles it reads must stay as they are).
 * aot_wg_fence(c) pins c's values at that point of the program: what computes them stays
 * before it, what reads them after (around a wait for other products, which the compiler
 * could otherwise move arithmetic across). F16: fp16 inputs, else bf16. Here they are
 * fragment loads and the wave's matrix instructions. Plain stores and asynchronous copies
 * (once waited for) reach them after aot_wg_shared_fence() by the storing thread and a barrier. */
#if !defined(AOT_WG_MMA)
template <int NT, int C>
AOT_DEV void aot_wg_begin(float (&)[NT][C]) {}
template <int NT, int C>
AOT_DEV void aot_wg_fence(float (&)[NT][C]) {}
AOT_DEV void aot_wg_commit(void) {}
template <int N, int NT, int C>
AOT_DEV void aot_wg_wait(float (&)[NT][C]) {}
/* aot_wg_reads(t, first, n): a warp-group product reads elements first .. first + n - 1 of tile t
 * (the emulator checks that no copy's bytes there wait for a proxy fence). */
#if !defined(AOT_WG_READS)
AOT_DEV void aot_wg_reads(const aot_u16 *, int, int) {}
#endif
template <class S, int F16, bool B_ROWS, int NT>
AOT_DEV void aot_wg_mma_rs(S, float (&c)[NT][S::C], const aot_u16 (&a)[S::A], const aot_u16 *bt, int b_rows, int k0, int c0)
{
    constexpr int P = NT % 2 == 0 ? 2 : 1; /* B fragments load in pairs of tiles where NT allows */
    if (B_ROWS) /* rows k0 .. k0 + K - 1 of each panel the columns cross */
        for (int p = c0 / 64; p <= (c0 + NT * S::N - 1) / 64; p++) aot_wg_reads(bt, (p * b_rows + k0) * 64, S::K * 64);
    else /* rows c0 .. of the panel of k0 */
        aot_wg_reads(bt, (k0 / 64 * b_rows + c0) * 64, NT * S::N * 64);
#pragma unroll
    for (int n = 0; n < NT; n += P) {
        aot_u16 b[P][S::B];
        if (B_ROWS) aot_frag_b_rows(S(), bt, b_rows, k0, c0 + n * S::N, aot_lane(), b);
        else aot_frag_b_cols(S(), bt, b_rows, k0, c0 + n * S::N, aot_lane(), b);
#pragma unroll
        for (int j = 0; j < P; j++)
            if (F16) aot_mma_f16(S(), c[n + j], a, b[j]);
            else aot_mma_bf16(S(), c[n + j], a, b[j]);
    }
}
template <class S, int F16, int NT>
AOT_DEV void aot_wg_mma_ss(S, float (&c)[NT][S::C], const aot_u16 *at, int k0, const aot_u16 *bt, int b_rows, int c0, bool add)
{
    if (!add)
        for (int n = 0; n < NT; n++)
            for (int i = 0; i < S::C; i++) c[n][i] = 0.0f;
    aot_u16 a[S::A];
    const int r0 = S::M * (aot_thread_x() / AOT_WAVE % 4);
    aot_wg_reads(at, (k0 / 64 * 4 * S::M + r0) * 64, S::M * 64);
    aot_frag_a(S(), at, 4 * S::M, r0, k0, aot_lane(), a);
    aot_wg_mma_rs<S, F16, false>(S(), c, a, bt, b_rows, k0, c0);
}
#endif
#if !defined(AOT_WG_MMA)
template <class S, int F16, bool B_ROWS, int NT>
AOT_DEV void aot_wg_mma_rs_x2(S, float (&c)[NT][S::C], const aot_u32 (&a)[S::A / 2], const aot_u16 *bt, int b_rows, int k0, int c0)
{
    aot_u16 x[S::A];
    for (int i = 0; i < S::A; i++) x[i] = (aot_u16)(a[i / 2] >> (16 * (i % 2)));
    aot_wg_mma_rs<S, F16, B_ROWS>(S(), c, x, bt, b_rows, k0, c0);
}
#endif
template <int NT, int C>
AOT_DEV void aot_wg_end(float (&c)[NT][C])
{
    aot_wg_commit();
    aot_wg_wait<0>(c);
}
#if !defined(AOT_GRID_DEPENDENCY)
AOT_DEV void aot_grid_wait(void) {}
AOT_DEV void aot_grid_launch_next(void) {}
#endif

#if !defined(AOT_WG_SHARED_FENCE)
AOT_DEV void aot_wg_shared_fence(void) {}
#endif

/* log2(e) in fp32, for kernels that fold it into a scale of their own before aot_exp2_fast */
#define AOT_LOG2E 1.4426950408889634f

/* e^x through exp2: one multiply rounding (relative error about |x| * 2^-24) plus the
 * hardware exp2's. Callers pass x <= 0 (max-subtracted softmax), where it stays near 1e-6. */
AOT_DEV float aot_exp_fast(float x) { return aot_exp2_fast(x * AOT_LOG2E); }

/* 1 / (1 + e^-x), through the fast exp (relative error about 1e-6 for |x| < 20). */
AOT_DEV float aot_sigmoid(float x) { return 1.0f / (1.0f + aot_exp_fast(-x)); }

/* Wave-wide reductions; every lane of the wave must call them, every lane gets the result. */
AOT_DEV float aot_wave_max_f32(float v)
{
    for (int m = AOT_WAVE / 2; m > 0; m >>= 1) v = aot_fmaxf(v, aot_shfl_xor_f32(v, m));
    return v;
}

AOT_DEV float aot_wave_sum_f32(float v)
{
    for (int m = AOT_WAVE / 2; m > 0; m >>= 1) v += aot_shfl_xor_f32(v, m);
    return v;
}

AOT_DEV int aot_wave_sum_i32(int v)
{
    for (int m = AOT_WAVE / 2; m > 0; m >>= 1) v += aot_shfl_xor_i32(v, m);
    return v;
}

/* Wave-wide unsigned max/min. A vendor header that has single-instruction reductions defines
 * AOT_WAVE_REDUCE_U32 and its own versions (sm_80+: redux.sync); else they are shuffles. */
#if !defined(AOT_WAVE_REDUCE_U32)
AOT_DEV aot_u32 aot_wave_max_u32(aot_u32 v)
{
    for (int m = AOT_WAVE / 2; m > 0; m >>= 1) {
        aot_u32 o = (aot_u32)aot_shfl_xor_i32((int)v, m);
        v = o > v ? o : v;
    }
    return v;
}

AOT_DEV aot_u32 aot_wave_min_u32(aot_u32 v)
{
    for (int m = AOT_WAVE / 2; m > 0; m >>= 1) {
        aot_u32 o = (aot_u32)aot_shfl_xor_i32((int)v, m);
        v = o < v ? o : v;
    }
    return v;
}
#endif

/* The same over each aligned group of L lanes (L a power of two up to the wave): every lane gets
 * its group's result. L = AOT_WAVE is the wave reductions above. */
template <int L>
AOT_DEV aot_u32 aot_lanes_max_u32(aot_u32 v)
{
    if constexpr (L == AOT_WAVE) {
        return aot_wave_max_u32(v);
    } else {
        for (int m = 1; m < L; m <<= 1) {
            const aot_u32 o = (aot_u32)aot_shfl_xor_i32((int)v, m);
            v = o > v ? o : v;
        }
        return v;
    }
}

template <int L>
AOT_DEV aot_u32 aot_lanes_min_u32(aot_u32 v)
{
    if constexpr (L == AOT_WAVE) {
        return aot_wave_min_u32(v);
    } else {
        for (int m = 1; m < L; m <<= 1) {
            const aot_u32 o = (aot_u32)aot_shfl_xor_i32((int)v, m);
            v = o < v ? o : v;
        }
        return v;
    }
}

template <int L>
AOT_DEV float aot_lanes_sum_f32(float v)
{
    if constexpr (L == AOT_WAVE) {
        return aot_wave_sum_f32(v);
    } else {
        for (int m = 1; m < L; m <<= 1) v += aot_shfl_xor_f32(v, m);
        return v;
    }
}

/* Does any lane of the wave hold p? A vendor with a vote instruction defines AOT_WAVE_ANY. */
#if !defined(AOT_WAVE_ANY)
AOT_DEV bool aot_wave_any(bool p) { return aot_wave_max_u32(p ? 1u : 0u) != 0u; }
#endif

/* fp32 <-> an unsigned key with the same order (-0 and +0 map to one key; no NaN expected). */
AOT_DEV aot_u32 aot_order_key(float f)
{
    aot_u32 u = aot_bits_from_f32(f);
    if (u == 0x80000000u) u = 0;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

AOT_DEV float aot_from_order_key(aot_u32 k)
{
    return aot_f32_from_bits((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* Among the lanes of the wave holding the same v: *rank = how many of them come before this
 * lane, *count = how many there are (this one included), *first = the lowest such lane. Every
 * lane must call it. A vendor with a match instruction defines AOT_WAVE_PEERS and its own; here
 * one shuffle per lane. */
#if !defined(AOT_WAVE_PEERS)
AOT_DEV void aot_wave_peers(int v, int *rank, int *count, int *first)
{
    const int lane = aot_lane();
    int r = 0, n = 0, f = lane;
    for (int j = AOT_WAVE - 1; j >= 0; j--) {
        const int same = aot_shfl_i32(v, j) == v;
        r += same && j < lane, n += same, f = same ? j : f;
    }
    *rank = r, *count = n, *first = f;
}
#endif

/* Inclusive prefix sum across the wave. */
AOT_DEV int aot_wave_inclusive_scan_i32(int v)
{
    int lane = aot_lane();
    for (int d = 1; d < AOT_WAVE; d <<= 1) {
        int t = aot_shfl_i32(v, lane >= d ? lane - d : lane);
        if (lane >= d) v += t;
    }
    return v;
}

/* Sum across a block of BLOCK threads (all must call it; all get the sum). `scratch` is
 * block-shared memory of BLOCK / AOT_WAVE floats. */
template <int BLOCK>
AOT_DEV float aot_block_sum_f32(float v, float *scratch)
{
    v = aot_wave_sum_f32(v);
    if (aot_lane() == 0) scratch[aot_thread_x() / AOT_WAVE] = v;
    aot_sync_block();
    float s = 0.0f;
    for (int i = 0; i < BLOCK / AOT_WAVE; i++) s += scratch[i];
    aot_sync_block(); /* scratch may be reused after this */
    return s;
}

/* Exclusive prefix sum across a block of BLOCK threads (all must call it); *total gets the
 * block's sum. `scratch` is block-shared memory of BLOCK / AOT_WAVE ints. */
template <int BLOCK>
AOT_DEV int aot_block_exclusive_scan_i32(int v, int *scratch, int *total)
{
    const int lane = aot_lane(), w = aot_thread_x() / AOT_WAVE;
    int inc = aot_wave_inclusive_scan_i32(v);
    if (lane == AOT_WAVE - 1) scratch[w] = inc;
    aot_sync_block();
    int before = 0, all = 0;
    for (int i = 0; i < BLOCK / AOT_WAVE; i++) {
        int s = scratch[i];
        before += i < w ? s : 0;
        all += s;
    }
    aot_sync_block(); /* scratch may be reused after this */
    *total = all;
    return before + inc - v;
}

#endif
