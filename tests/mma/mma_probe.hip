/* mma_probe.hip : one kernel per matrix shape the target has. Each lane loads its fragments
 * through the shape's maps, issues the instruction once, and stores its part of D. Built for
 * the AMD targets (the tests look for the MFMA instructions in the code objects), for sm_90a
 * (tests/gpu runs it against the emulator) and for the host emulator (tests/mma). Each probe
 * also checks the layer's fragment loads from a swizzled shared tile. */
#include "aot_device.h"
#include "mma_probe.h"

template <class S>
AOT_DEV void mma_probe(const aot_mma_probe_args &p)
{
    const int lane = aot_lane();
    unsigned short a[S::A], b[S::B];
    float c[S::C];
#pragma unroll
    for (int i = 0; i < S::A; i++) a[i] = p.a[S::a_row(lane, i) * S::K + S::a_k(lane, i)];
#pragma unroll
    for (int i = 0; i < S::B; i++) b[i] = p.b[S::b_k(lane, i) * S::N + S::b_col(lane, i)];
#pragma unroll
    for (int i = 0; i < S::C; i++) c[i] = p.c[S::c_row(lane, i) * S::N + S::c_col(lane, i)];
    if (p.f16) aot_mma_f16(S(), c, a, b);
    else aot_mma_bf16(S(), c, a, b);
#pragma unroll
    for (int i = 0; i < S::C; i++) p.d[S::c_row(lane, i) * S::N + S::c_col(lane, i)] = c[i];
}

/* The row maps of C (and C_TO_A's) agree with the element maps: d[0] = 0 when they do, else 1 +
 * the first failing lane. (Run by tests/mma on one lane; pure arithmetic, no wave operation.) */
template <class S>
AOT_DEV int row_maps_ok(void)
{
    for (int lane = 0; lane < AOT_WAVE; lane++) {
        for (int i = 0; i < S::C; i++) /* rows: same slot, same row; sharing lanes in the low bits */
            if (S::c_row(lane, i) != S::c_row(lane % S::ROW_LANES, i) + (lane / S::ROW_LANES) * (S::c_row(S::ROW_LANES, 0) - S::c_row(0, 0)) ||
                S::c_slot(i) >= S::C_ROWS)
                return 1 + lane;
        for (int i = 0; S::C_TO_A && i < S::A; i++) {
            const int e = S::c_elem(i);
            if (S::a_row(lane, i) != S::c_row(lane, e) || S::a_k(lane, i) != S::c_tile(i) * S::N + S::c_col(lane, e))
                return 1 + lane;
        }
    }
    return 0;
}

/* The fragment loads (aot_frag_a, aot_frag_b_cols, aot_frag_b_rows: ldmatrix on NVIDIA, the
 * maps elsewhere) from a swizzled shared tile agree with reading the plain tile through the
 * maps, at offsets that are not 0: 0 when they do, else 1 + the first failing lane. */
template <class S>
AOT_DEV int frag_loads_ok(const aot_u16 *g)
{
    constexpr int T = AOT_PROBE_TILE, R0 = 16, K0 = 8, C0 = T - 2 * S::N;
    AOT_SHARED_TILE(t, T * T);
    for (int i = aot_thread_x(); i < T * T; i += AOT_WAVE) t[aot_swz(i / T, i % T, T)] = g[i];
    aot_sync_block();
    const int lane = aot_lane();
    bool bad = false;
    aot_u16 a[S::A], b[2][S::B];
    aot_frag_a(S(), t, T, R0, K0, lane, a);
    for (int i = 0; i < S::A; i++) bad |= a[i] != g[(R0 + S::a_row(lane, i)) * T + K0 + S::a_k(lane, i)];
    aot_frag_b_cols(S(), t, T, K0, C0, lane, b); /* (k, c) in row c, column k */
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < S::B; i++) bad |= b[n][i] != g[(C0 + n * S::N + S::b_col(lane, i)) * T + K0 + S::b_k(lane, i)];
    aot_frag_b_rows(S(), t, T, K0, C0, lane, b); /* (k, c) in row k, column c */
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < S::B; i++) bad |= b[n][i] != g[(K0 + S::b_k(lane, i)) * T + C0 + n * S::N + S::b_col(lane, i)];
    const aot_u32 first = aot_wave_min_u32(bad ? (aot_u32)lane : 0xffffffffu);
    return first == 0xffffffffu ? 0 : 1 + (int)first;
}

#define MMA_PROBE(name, shape)                                                                 \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_WAVE) void mma_probe_##name(aot_mma_probe_args p)         \
    {                                                                                          \
        mma_probe<shape>(p);                                                                   \
        const int frag = frag_loads_ok<shape>(p.tile);                                         \
        if (aot_thread_x() == 0)                                                               \
            p.d[shape::M * shape::N] = (float)row_maps_ok<shape>(), p.d[shape::M * shape::N + 1] = (float)frag; \
    }                                                                                          \
    AOT_EMU_ENTRY(mma_probe_##name, aot_mma_probe_args)

#if defined(AOT_MMA_SYNC)
MMA_PROBE(m16n8k16, aot_mma_m16n8k16)

/* Rows of c (a wave's 16-row share of a 64-row product) to d [64][n]. */
template <class S, int NT>
AOT_DEV void store_rows(const float (&c)[NT][S::C], float *d, int n)
{
    const int r0 = S::M * (aot_thread_x() / AOT_WAVE), lane = aot_lane();
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < S::C; i++) d[(r0 + S::c_row(lane, i)) * n + t * S::N + S::c_col(lane, i)] = c[t][i];
}

/* The three products of aot_wg_probe_args, tiles filled by the asynchronous copies. */
template <int F16>
AOT_DEV void wg_probe(const aot_wg_probe_args &p, aot_u16 *xs, aot_u16 *ys)
{
    typedef aot_mma_m16n8k16 S;
    constexpr int K = AOT_WG_PROBE_K, T = 4 * AOT_WAVE;
    for (int i = aot_thread_x(); i < 64 * K / 8; i += T) aot_copy16_async(xs + aot_swz(i / (K / 8), i % (K / 8) * 8, 64), p.x + 8 * i, true);
    for (int i = aot_thread_x(); i < K * 128 / 8; i += T) aot_copy16_async(ys + aot_swz(i / 16, i % 16 * 8, K), p.y + 8 * i, true);
    aot_copy_async_commit();
    aot_copy_async_wait_all();
    aot_wg_shared_fence(); /* the products read the tiles through the async proxy */
    aot_sync_block();
    const int r0 = S::M * (aot_thread_x() / AOT_WAVE), lane = aot_lane();
    aot_u16 a[K / S::K][S::A]; /* X's fragments, read through the maps in pairs (k, k + 1) */
    for (int ks = 0; ks < K / S::K; ks++)
        for (int i = 0; i < S::A; i += 2) {
            const aot_u32 x = aot_load_u16x2(p.x + (r0 + S::a_row(lane, i)) * K + ks * S::K + S::a_k(lane, i));
            a[ks][i] = (aot_u16)x, a[ks][i + 1] = (aot_u16)(x >> 16);
        }
    float c[8][S::C], r[16][S::C] = {};
    for (int n = 0; n < 8; n++) /* the first k-step overwrites c (add false): a sum would show this */
        for (int i = 0; i < S::C; i++) c[n][i] = 1e30f;
    aot_wg_begin(c);
    for (int ks = 0; ks < K / S::K; ks++) aot_wg_mma_ss<S, F16>(S(), c, xs, ks * S::K, ys, K, 0, ks > 0);
    aot_wg_end(c);
    store_rows<S, 8>(c, p.d, 64);
    aot_wg_begin(r);
    for (int ks = 0; ks < K / S::K; ks++) aot_wg_mma_rs<S, F16, true>(S(), r, a[ks], ys, K, ks * S::K, 0);
    aot_wg_end(r);
    store_rows<S, 16>(r, p.d + 64 * 64, 128);
    float e[8][S::C] = {};
    aot_wg_begin(e);
    for (int ks = 0; ks < K / S::K; ks++) aot_wg_mma_rs<S, F16, false>(S(), e, a[ks], ys, K, ks * S::K, 64);
    aot_wg_end(e);
    store_rows<S, 8>(e, p.d + 64 * 64 + 64 * 128, 64);
}

AOT_KERNEL AOT_LAUNCH_BOUNDS(4 * AOT_WAVE) void mma_probe_wg(aot_wg_probe_args p)
{
    AOT_SHARED_TILE(xs, 64 * AOT_WG_PROBE_K);
    AOT_SHARED_TILE(ys, AOT_WG_PROBE_K * 128);
    if (p.f16) wg_probe<1>(p, xs, ys);
    else wg_probe<0>(p, xs, ys);
}
AOT_EMU_ENTRY(mma_probe_wg, aot_wg_probe_args)
#endif
#if defined(AOT_MMA_MFMA)
MMA_PROBE(32x32x8, aot_mfma_32x32x8)
MMA_PROBE(16x16x16, aot_mfma_16x16x16)
#endif
#if defined(AOT_MMA_MFMA_GFX950)
MMA_PROBE(32x32x16, aot_mfma_32x32x16)
MMA_PROBE(16x16x32, aot_mfma_16x16x32)
#endif

#if defined(AOT_CLUSTERS)
AOT_KERNEL AOT_LAUNCH_BOUNDS(256) void cluster_probe(aot_cluster_probe_args p)
{
    AOT_SHARED(int32_t, s, 256);
    const int t = aot_thread_x(), r = aot_cluster_rank(), n = p.cluster;
    s[t] = 1000 * r + t;
    aot_cluster_sync();
    const int32_t *right = aot_cluster_map(s, (r + 1) % n), *left = aot_cluster_map(s, (r + n - 1) % n);
    p.out[aot_block_x() * p.threads + t] = right[t] + left[(t + 1) % p.threads];
    aot_cluster_sync(); /* the others' reads of this block's shared memory are done */
}
AOT_EMU_ENTRY(cluster_probe, aot_cluster_probe_args)
#endif

#if defined(AOT_PIPELINES)
AOT_KERNEL AOT_LAUNCH_BOUNDS(64) void pipeline_probe(AOT_GRID_CONSTANT aot_pipeline_probe_args p)
{
    AOT_SHARED_TILE(tile, 4 * 64);
    AOT_SHARED(aot_mbar, bar, 2);
    AOT_SHARED(unsigned, got, 4);
    const int t = aot_thread_x(), r = aot_cluster_rank();
    if (t == 0) aot_mbar_init(&bar[0], 1), aot_mbar_init(&bar[1], 1);
    aot_cluster_sync();
    if (t == 0) {
        const unsigned v[4] = {100u * r, 100u * r + 1, 100u * r + 2, 100u * r + 3};
        aot_store_remote(got, &bar[0], 1 - r, v);
        aot_mbar_expect(&bar[0], 16);
        aot_mbar_wait_cluster(&bar[0], 0); /* the other block's store: the cluster's acquire */
        for (int i = 0; i < 4; i++) p.out[4 * r + i] = (int32_t)got[i];
        aot_mbar_expect(&bar[1], 64 * 2 * 2 * 2);
        aot_copy_tile(tile, p.map, 0, 2, 0, &bar[1]);
        aot_mbar_wait(&bar[1], 0);
        if (p.deadlock) aot_mbar_wait(&bar[1], 1);
    }
    aot_sync_named(1, 64);
    for (int i = t; i < 4 * 64; i += 64) p.tile_out[256 * r + i] = tile[i];
    aot_cluster_sync(); /* the other block's store into this one is long done; no block leaves early */
}
AOT_EMU_ENTRY(pipeline_probe, aot_pipeline_probe_args)
#endif

#if defined(AOT_HOST_EMU)
/* A race on purpose, for the emulator's test of its schedules: wave 0 reads v 16 times, a wave
 * operation apart, while wave 1, after as many wave operations and no barrier, stores 1 into it.
 * In lockstep wave 0's reads come first (seen 0); on a GPU, or with EMU_STAGGER, wave 1 may
 * get ahead and some read sees 1. */
AOT_KERNEL void race_probe(aot_race_probe_args p)
{
    AOT_SHARED(int32_t, v, 1);
    const int t = aot_thread_x();
    if (t == 0) v[0] = 0;
    aot_sync_block();
    int32_t seen = 0;
    for (int i = 0; i < 16; i++) {
        if (t < AOT_WAVE) seen += v[0];
        aot_sync_wave();
    }
    if (t == AOT_WAVE) v[0] = 1;
    if (t == 0) p.out[0] = seen;
}
AOT_EMU_ENTRY(race_probe, aot_race_probe_args)

/* Asynchronous copies in the emulator land at the issuing thread's wait: two groups of one
 * 16-byte copy each, read before any wait, after waiting for all but the newest group, and
 * after waiting for all (a GPU may show the bytes earlier). */
AOT_KERNEL void copy_probe(aot_copy_probe_args p)
{
    AOT_SHARED_TILE(s, 16);
    unsigned *const w = (unsigned *)s;
    if (aot_thread_x() != 0) return;
    for (int i = 0; i < 8; i++) w[i] = 0;
    aot_copy16_async(w, p.src, true);
    aot_copy_async_commit();
    aot_copy16_async(w + 4, p.src + 4, true);
    aot_copy_async_commit();
    p.out[0] = w[0];
    aot_copy_async_wait_prior<1>();
    p.out[1] = w[0], p.out[2] = w[4];
    aot_copy_async_wait_all();
    p.out[3] = w[4];
}
AOT_EMU_ENTRY(copy_probe, aot_copy_probe_args)
#endif
