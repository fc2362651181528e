/* mhc.hip : manifold-constrained hyper-connections (DeepSeek-V4's mHC, n = 4 streams), the
 * math and the op contracts of runtime/include/aiter_aot_mhc.h (docs/semantics.md).
 *
 * mhc_gemm_n4/n1 the projection x . fn^T and sum x^2 as split-K partials, as warp-group
 *                products (wgmma on sm_90a): x is bf16 already, and fn (fp32) is split into
 *                three bf16 terms hi + mid + lo that carry all 24 bits of its mantissa, so
 *                the products are those of fp32 arithmetic and the sums are fp32 (no tf32).
 *                A block owns 16 tokens a wave (256 on NVIDIA, 128 on AMD) and walks one
 *                split's range of k in chunks of 64: its residual rows arrive in shared
 *                memory by asynchronous copies several chunks ahead, the chunk's fn terms are
 *                staged beside them, and both are read from there by the products. n1: the
 *                first layer's un-expanded [T, C] input. _terms: fn's terms come made by
 *                mhc_fn_terms and are copied with the stages.
 * mhc_fn_terms   fn's three bf16 terms, once per call, as the tiles the projection reads (for
 *                pre_full from 1024 tokens, where every token block would split fn again).
 * mhc_gemm_fused post-mix of the previous sublayer and the projection of its fp32 result, for
 *                few tokens (4 per wave, fn values from shared memory, plain fp32 FMA); _bf16:
 *                of the result as stored, rounded to bf16 (the delayed op's definition).
 * mhc_pre_*      one block per token: reduce the partials, RMS scale, pre, the pre-mix over
 *                the hidden size (16-byte accesses), optionally the sublayer's RMSNorm; then
 *                post and comb (Sinkhorn on 16 lanes of wave 0, rows and columns by shuffles)
 *                last, so the other waves never wait for it. _delayed (DeepSeek-V4.1):
 *                the collapse uses the previous boundary's pre, and this one's is stored.
 * mhc_post       new[k][h] = post[k] y[h] + sum_j comb[j][k] res[j][h], 8 positions a thread.
 * mhc_head       one block per token: the 4 projections and sum x^2, pre, then the collapse. */
#include "aot_device.h"
#include "mhc_kargs.h"
#include "mhc_variants.h" /* the kernels this file instantiates */

#define N_ AOT_MHC_N
#define HC AOT_MHC_GEMM_CHUNK
#define R_ AOT_MHC_GEMM_TOKENS

/* ---- the fused post-mix + projection (few tokens; fp32 FMA) ---- */

/* The fused projection's input: the previous sublayer's post-mix of token t at position h,
 * new[k] = post[k] y + sum_j comb[j][k] residual[j] in fp32 (stored rounded to bf16), or with
 * ROUND that stored bf16 value itself (the delayed op projects the residual as stored); zeros
 * past the last token. */
template <bool ROUND>
AOT_DEV void post_mix(const aot_mhc_gemm_kargs &a, int t, int h, float (&x)[N_])
{
    if (t >= a.tokens) {
#pragma unroll
        for (int j = 0; j < N_; j++) x[j] = 0.0f;
        return;
    }
    const aot_i64 C = a.hidden, row = (aot_i64)t * N_ * C + h;
    float r[N_];
#pragma unroll
    for (int j = 0; j < N_; j++) r[j] = aot_bf16_to_f32(a.residual[row + j * C]);
    const float y = aot_bf16_to_f32(a.y[(aot_i64)t * C + h]);
    const float *comb = a.comb + t * N_ * N_, *post = a.post + t * N_;
#pragma unroll
    for (int k = 0; k < N_; k++) {
        float v = post[k] * y;
#pragma unroll
        for (int j = 0; j < N_; j++) v += comb[j * N_ + k] * r[j];
        const aot_u16 b = aot_f32_to_bf16(v);
        x[k] = ROUND ? aot_bf16_to_f32(b) : v;
        a.residual_out[row + k * C] = b;
    }
}

template <bool ROUND>
AOT_DEV void gemm_fused_body(const aot_mhc_gemm_kargs &a)
{
    constexpr int WAVES = AOT_MHC_BLOCK / AOT_WAVE, FS = AOT_MHC_MIX * N_ * HC;
    const int tid = aot_thread_x(), lane = aot_lane(), split = aot_block_x() % a.splits;
    const int t0 = (aot_block_x() / a.splits) * WAVES * R_ + (tid / AOT_WAVE) * R_;
    const int chunks = a.hidden / HC, c_lo = split * chunks / a.splits, c_hi = (split + 1) * chunks / a.splits;
    const aot_i64 K = (aot_i64)N_ * a.hidden;
    AOT_SHARED(float, fs, FS); /* fn[o][j][hh] of the chunk */
    float acc[R_][AOT_MHC_MIX], sq[R_];
#pragma unroll
    for (int r = 0; r < R_; r++) {
        sq[r] = 0.0f;
#pragma unroll
        for (int o = 0; o < AOT_MHC_MIX; o++) acc[r][o] = 0.0f;
    }
    for (int c = c_lo; c < c_hi; c++) {
        const int h0 = c * HC;
        for (int i = tid; i < FS; i += AOT_MHC_BLOCK)
            fs[i] = a.fn[(i / (N_ * HC)) * K + ((i / HC) % N_) * a.hidden + h0 + i % HC];
        aot_sync_block();
        for (int hh = lane; hh < HC; hh += AOT_WAVE) {
#pragma unroll
            for (int r = 0; r < R_; r++) {
                float x[N_];
                post_mix<ROUND>(a, t0 + r, h0 + hh, x);
#pragma unroll
                for (int j = 0; j < N_; j++) sq[r] += x[j] * x[j];
#pragma unroll
                for (int o = 0; o < AOT_MHC_MIX; o++)
#pragma unroll
                    for (int j = 0; j < N_; j++) acc[r][o] += fs[(o * N_ + j) * HC + hh] * x[j];
            }
        }
        aot_sync_block();
    }
#pragma unroll
    for (int r = 0; r < R_; r++) {
        const int t = t0 + r;
        const aot_i64 at = (aot_i64)split * a.tokens + t;
        float s = aot_wave_sum_f32(sq[r]);
        if (lane == 0 && t < a.tokens) a.sqrsum[at] = s;
#pragma unroll
        for (int o = 0; o < AOT_MHC_MIX; o++) {
            s = aot_wave_sum_f32(acc[r][o]);
            if (lane == 0 && t < a.tokens) a.mix[at * AOT_MHC_MIX + o] = s;
        }
    }
}

#define MHC_GEMM_FUSED(name, kargs, rounded)                                                   \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void name(kargs a)                             \
    {                                                                                          \
        gemm_fused_body<rounded>(a);                                                           \
    }                                                                                          \
    AOT_EMU_ENTRY(name, kargs)

AOT_MHC_FUSED_VARIANTS(MHC_GEMM_FUSED)

/* ---- projection on the matrix units ---- */

#if defined(AOT_MMA_SYNC)
typedef aot_mma_m16n8k16 mhc_mma;
#elif defined(AOT_MMA_MFMA_GFX950)
typedef aot_mfma_16x16x32 mhc_mma;
#else
typedef aot_mfma_16x16x16 mhc_mma;
#endif

#define KC AOT_MHC_TC_CHUNK /* one 64-column panel of a swizzled tile (aot_tile.h) */

/* B of the products: the three bf16 terms of fn[o][k0 .. k0+KC), term q of output o in column
 * q * OPN + o, so each term fills whole N tiles and the three terms of an output land in the
 * same lane's accumulators (the columns past 24 of a term are zero). */
template <class S>
struct fn_cols {
    enum { OPN = (AOT_MHC_MIX + S::N - 1) / S::N * S::N, ROWS = 3 * OPN, NT = ROWS / S::N, NTQ = OPN / S::N };
    static_assert(ROWS == 3 * AOT_MHC_TC_OPN(AOT_WAVE), "the runtime's dynamic shared size");
};

/* Each thread moves PPT pairs of fn values (k, k + 1 of one output): loaded to registers one
 * chunk ahead, split and stored after the chunk's products are issued. */
template <int OPN>
struct fn_stage {
    enum { PAIRS = OPN * KC / 2, PPT = (PAIRS + AOT_MHC_TC_BLOCK - 1) / AOT_MHC_TC_BLOCK };
    float v[PPT][2];
};

template <int OPN>
AOT_DEV void fn_load(const float *fn, aot_i64 K, aot_i64 k0, fn_stage<OPN> &r)
{
#pragma unroll
    for (int j = 0; j < fn_stage<OPN>::PPT; j++) {
        const int p = aot_thread_x() + j * AOT_MHC_TC_BLOCK, o = p / (KC / 2);
        const float *f = fn + o * K + k0 + 2 * (p % (KC / 2));
        r.v[j][0] = o < AOT_MHC_MIX ? f[0] : 0.0f; /* also past PAIRS: not stored */
        r.v[j][1] = o < AOT_MHC_MIX ? f[1] : 0.0f;
    }
}

/* The bf16 pair in word w, back to fp32. */
AOT_DEV float lo_f32(aot_u32 w) { return aot_f32_from_bits(w << 16); }
AOT_DEV float hi_f32(aot_u32 w) { return aot_f32_from_bits(w & 0xffff0000u); }

/* hi + mid + lo = v exactly: each remainder is exact in fp32 and the three bf16 carry all 24
 * bits of the mantissa, so the products are those of fp32 arithmetic (no tf32). Two values at
 * a time (one paired conversion each). */
template <int OPN>
AOT_DEV void fn_store(const fn_stage<OPN> &r, aot_u16 *fs)
{
#pragma unroll
    for (int j = 0; j < fn_stage<OPN>::PPT; j++) {
        const int p = aot_thread_x() + j * AOT_MHC_TC_BLOCK, o = p / (KC / 2), k = 2 * (p % (KC / 2));
        if (fn_stage<OPN>::PAIRS % AOT_MHC_TC_BLOCK != 0 && p >= fn_stage<OPN>::PAIRS) break;
        const aot_u32 hi = aot_pack2_16(r.v[j][0], r.v[j][1], 0);
        const float r0 = r.v[j][0] - lo_f32(hi), r1 = r.v[j][1] - hi_f32(hi);
        const aot_u32 mid = aot_pack2_16(r0, r1, 0);
        *(aot_u32 *)(fs + aot_swz(o, k, 3 * OPN)) = hi;
        *(aot_u32 *)(fs + aot_swz(OPN + o, k, 3 * OPN)) = mid;
        *(aot_u32 *)(fs + aot_swz(2 * OPN + o, k, 3 * OPN)) = aot_pack2_16(r0 - lo_f32(mid), r1 - hi_f32(mid), 0);
    }
    aot_wg_shared_fence();
}

/* fn's terms made once per call: chunk c's tile, as fn_store leaves it in shared memory, at
 * fn_terms + c * BUF. pre_full runs it where many token blocks would each split fn again (the
 * split is a quarter of the projection's instructions). A block per chunk. */
AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_TC_BLOCK) void mhc_fn_terms(aot_mhc_gemm_kargs a)
{
    typedef fn_cols<mhc_mma> F;
    const aot_i64 K = (aot_i64)a.streams * a.hidden, c = aot_block_x();
    aot_grid_launch_next(); /* the projection's blocks may start copying residual rows */
    fn_stage<F::OPN> fr;
    fn_load<F::OPN>(a.fn, K, c * KC, fr);
    fn_store<F::OPN>(fr, a.fn_terms + c * F::ROWS * KC);
}
AOT_EMU_ENTRY(mhc_fn_terms, aot_mhc_gemm_kargs)

/* Copies chunk c's terms tile into buf (16 bytes a piece, the tile's layout as it is). */
template <int BUF>
AOT_DEV void terms_issue(const aot_u16 *fn_terms, aot_i64 c, aot_u16 *buf)
{
    static_assert(BUF % 8 == 0, "whole pieces");
#pragma unroll
    for (int j = 0; j < (BUF / 8 + AOT_MHC_TC_BLOCK - 1) / AOT_MHC_TC_BLOCK; j++) {
        const int p = aot_thread_x() + j * AOT_MHC_TC_BLOCK;
        if (p < BUF / 8) aot_copy16_async(buf + 8 * p, fn_terms + c * BUF + 8 * p, true);
    }
}

/* Where (row, k) of a stage lies: the stage is a run of swizzled tiles of 4 S::M rows, one per
 * warp-group product. */
AOT_DEV int stage_at(int row, int k)
{
    constexpr int GM = 4 * mhc_mma::M;
    return row / GM * (GM * KC) + aot_swz(row % GM, k, GM);
}

/* This thread's share of filling a stage with a chunk of the block's TB token rows: rows
 * row, row + STEP, ... (N of them), one 16-byte piece each, at the same column, so that every
 * address is the first one plus a multiple of a constant. Rows past the last token are left as
 * they are: a row of A only reaches its own row of the products and of the squares, and those
 * are never stored. */
template <int TB>
struct stage_share {
    enum { SEGS = KC / 8, STEP = AOT_MHC_TC_BLOCK / SEGS, N = TB / STEP };
    /* a stage is rows of one 64-column panel, 128 bytes apart, whose swizzle repeats every 8 rows */
    static_assert(KC == 64 && STEP % 8 == 0 && TB % STEP == 0, "each further row is the same piece STEP rows on");
    const aot_u16 *src; /* the first row's piece at k = 0 */
    int dst, t;         /* its place in a stage; its token */
};

template <int TB>
AOT_DEV stage_share<TB> stage_share_of(const aot_mhc_gemm_kargs &a, aot_i64 K, int tb0)
{
    typedef stage_share<TB> H;
    const int row = aot_thread_x() / H::SEGS, k = aot_thread_x() % H::SEGS * 8;
    return {a.residual + (aot_i64)(tb0 + row) * K + k, stage_at(row, k), tb0 + row};
}

/* Copies chunk k0 of the block's rows into a stage. */
template <int TB>
AOT_DEV void stage_issue(const aot_mhc_gemm_kargs &a, const stage_share<TB> &h, aot_i64 K, aot_i64 k0, aot_u16 *stage)
{
    typedef stage_share<TB> H;
#pragma unroll
    for (int j = 0; j < H::N; j++)
        if (h.t + j * H::STEP < a.tokens) aot_copy16_async(stage + h.dst + j * H::STEP * KC, h.src + j * H::STEP * K + k0, true);
}

/* Sum of x^2 over a staged chunk: TPR threads per row, each KC / TPR columns. */
template <int TB>
AOT_DEV float chunk_squares(const aot_u16 *stage, int row)
{
    constexpr int TPR = AOT_MHC_TC_BLOCK / TB, SEGS = KC / 8 / TPR;
    const int seg0 = aot_thread_x() % TPR * SEGS;
    float s = 0.0f;
#pragma unroll
    for (int g = 0; g < SEGS; g++) {
        const aot_u16x8 q = aot_load_u16x8(stage + stage_at(row, (seg0 + g) * 8));
#pragma unroll
        for (int e = 0; e < 8; e += 2) { /* a pair's halves as fp32: one operation each */
            const aot_u32 w = q.v[e] | (aot_u32)q.v[e + 1] << 16;
            s += lo_f32(w) * lo_f32(w);
            s += hi_f32(w) * hi_f32(w);
        }
    }
    return s;
}

/* The projection as warp-group products (aot_device.h): each group of 4 waves owns TW tiles of
 * 4 S::M token rows and reads them, and the fn terms, from shared memory (sm_90a: wgmma from
 * descriptors, asynchronous, so the squares and the next fn terms are done meanwhile). The
 * block's residual rows come through STAGES chunks filled by asynchronous copies (AHEAD in
 * flight while one is multiplied). Where the products are asynchronous (NVIDIA), a chunk's
 * products run on into the next chunk (LAG = 1; 1 % faster at T = 4096 on the H200), so its
 * stage and fn buffer stay untouched one chunk longer. TERMS: each chunk's fn terms are copied
 * with its stage (one fn buffer a stage); else the block splits fn itself a chunk ahead (2 + LAG
 * buffers). One barrier per chunk. */
template <int NJ, bool TERMS>
AOT_DEV void gemm_tc_body(const aot_mhc_gemm_kargs &a)
{
    typedef mhc_mma S;
    typedef fn_cols<S> F;
    constexpr int WAVES = AOT_MHC_TC_BLOCK / AOT_WAVE, GM = 4 * S::M, TB = WAVES * AOT_MHC_TC_TOKENS;
    constexpr int TW = 4 * AOT_MHC_TC_TOKENS / GM, TPR = AOT_MHC_TC_BLOCK / TB;
    constexpr int BUF = F::ROWS * KC, STAGES = AOT_MHC_TC_STAGES(AOT_WAVE), STAGE = TB * KC;
    /* LAG: product groups left running at a chunk's end; AHEAD: chunks copied ahead */
    constexpr int FNB = AOT_MHC_TC_FN_BUFS(AOT_WAVE, TERMS), LAG = AOT_MHC_TC_LAG(AOT_WAVE), AHEAD = STAGES - 1 - LAG;
    static_assert(AOT_MHC_TC_SHARED(AOT_WAVE, TERMS) == (FNB * BUF + STAGES * STAGE) * 2 + AOT_TILE_SLACK, "the runtime's dynamic shared size");
    static_assert(AHEAD >= 1, "a chunk copied ahead");
    static_assert(WAVES % 4 == 0 && TPR >= 1 && KC / 8 % TPR == 0, "whole warp groups; whole pieces per thread");
    const int tid = aot_thread_x(), lane = aot_lane(), split = aot_block_x() % a.splits;
    const int tb0 = (aot_block_x() / a.splits) * TB, g0 = tid / (4 * AOT_WAVE) * TW * GM, t0 = tb0 + g0;
    const int sq_row = tid / TPR;
    const aot_i64 K = (aot_i64)NJ * a.hidden;
    const int chunks = (int)(K / KC), c_lo = split * chunks / a.splits, c_hi = (split + 1) * chunks / a.splits;
    AOT_SHARED_DYN_TILE(smem, FNB * BUF + STAGES * STAGE); /* fn terms [FNB][BUF], then the stages */
    aot_u16 *const fs = smem, *const stages = smem + FNB * BUF;
    const stage_share<TB> share = stage_share_of<TB>(a, K, tb0);
    float acc[TW][F::NT][S::C], sq = 0.0f;
#pragma unroll
    for (int w = 0; w < TW; w++)
#pragma unroll
        for (int n = 0; n < F::NT; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) acc[w][n][i] = 0.0f;
    /* No aot_grid_launch_next: pre's blocks, started early beside these, made pre_full slower (H200:
     * 1-2 us at 16-512 tokens); pre still launches as the last of these blocks leave. */
#pragma unroll
    for (int s = 0; s < AHEAD; s++)
        if (c_lo + s < c_hi) stage_issue<TB>(a, share, K, (aot_i64)(c_lo + s) * KC, stages + s * STAGE);
    aot_grid_wait(); /* launched early after mhc_fn_terms: the residual's copies start before its terms are there */
#pragma unroll
    for (int s = 0; s < AHEAD; s++) { /* the first group holds every stage above */
        if (TERMS && c_lo + s < c_hi) terms_issue<BUF>(a.fn_terms, c_lo + s, fs + s * BUF);
        aot_copy_async_commit(); /* empty groups too: the wait below counts groups */
    }
    fn_stage<F::OPN> fr;
    if (!TERMS && c_lo < c_hi) {
        fn_load<F::OPN>(a.fn, K, (aot_i64)c_lo * KC, fr);
        fn_store<F::OPN>(fr, fs);
    }
    for (int c = c_lo; c < c_hi; c++) {
        const unsigned i = (unsigned)(c - c_lo); /* unsigned: the modulos below are masks or multiplies */
        const aot_u16 *const stage = stages + i % STAGES * STAGE, *const terms = fs + i % FNB * BUF;
        aot_copy_async_wait_prior<AHEAD - 1>(); /* this thread's copies of chunk c have landed */
        aot_wg_shared_fence(); /* for the products (async proxy): the copies, and fn's stores of the last step */
        aot_sync_block(); /* everyone's have; chunk c - 1 - LAG's products are done: its stage and fn buffer are free */
        if (c + AHEAD < c_hi) {
            stage_issue<TB>(a, share, K, (aot_i64)(c + AHEAD) * KC, stages + (i + AHEAD) % STAGES * STAGE);
            if (TERMS) terms_issue<BUF>(a.fn_terms, c + AHEAD, fs + (i + AHEAD) % FNB * BUF);
        }
        aot_copy_async_commit();
        const bool more = c + 1 < c_hi;
        if (!TERMS && more) fn_load<F::OPN>(a.fn, K, (aot_i64)(c + 1) * KC, fr);
        /* every group multiplies, past the last token too: products under a branch would be
         * serialized by ptxas, which cannot see that the branch is uniform in the group */
#pragma unroll
        for (int w = 0; w < TW; w++) aot_wg_begin(acc[w]);
#pragma unroll
        for (int s = 0; s < KC / S::K; s++)
#pragma unroll
            for (int w = 0; w < TW; w++) aot_wg_mma_ss<S, 0>(S(), acc[w], stage + (g0 + w * GM) * KC, s * S::K, terms, F::ROWS, 0, true);
        if (tb0 + sq_row < a.tokens) sq += chunk_squares<TB>(stage, sq_row);
        if (!TERMS && more) fn_store<F::OPN>(fr, fs + (i + 1) % FNB * BUF);
        aot_wg_commit();
#pragma unroll
        for (int w = 0; w < TW; w++) aot_wg_wait<LAG>(acc[w]);
    }
#pragma unroll
    for (int w = 0; w < TW; w++) aot_wg_wait<0>(acc[w]);
    aot_copy_async_wait_all();
    const aot_i64 base = (aot_i64)split * a.tokens;
    const int wave_row = tid / AOT_WAVE % 4 * S::M; /* the wave's rows of each of its group's tiles */
#pragma unroll
    for (int w = 0; w < TW; w++)
#pragma unroll
        for (int n = 0; n < F::NTQ; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) {
                const int t = t0 + w * GM + wave_row + S::c_row(lane, i), o = n * S::N + S::c_col(lane, i);
                const float v = acc[w][n][i] + acc[w][n + F::NTQ][i] + acc[w][n + 2 * F::NTQ][i];
                if (t < a.tokens && o < AOT_MHC_MIX) a.mix[(base + t) * AOT_MHC_MIX + o] = v;
            }
#pragma unroll
    for (int m = 1; m < TPR; m <<= 1) sq += aot_shfl_xor_f32(sq, m);
    if (tid % TPR == 0 && tb0 + sq_row < a.tokens) a.sqrsum[base + tb0 + sq_row] = sq;
}

#define MHC_GEMM(name, kargs, streams, terms)                                                  \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_TC_BLOCK) void name(kargs a)                          \
    {                                                                                          \
        gemm_tc_body<streams, terms>(a);                                                       \
    }                                                                                          \
    AOT_EMU_ENTRY(name, kargs)

AOT_MHC_GEMM_VARIANTS(MHC_GEMM)

/* ---- coefficients ---- */

/* Sinkhorn-Knopp on the 4x4 comb logits z, element e = lane % 16 = row*4 + col, every lane
 * of the wave taking part (lanes 16+ repeat lanes 0..15): row softmax + eps, then columns,
 * then (iters - 1) times rows and columns, eps inside every division. Each division is a
 * product with the fast reciprocal: the chain of about 40 is the tail of every pre block, and the
 * reciprocal's ulp stays far inside the 1e-4 tolerance (H200: pre_full 2 % faster at 4096
 * tokens, 5 % at 16; docs/performance.md). */
AOT_DEV float sinkhorn(float z, int iters, float eps)
{
    float m = aot_fmaxf(z, aot_shfl_xor_f32(z, 1));
    m = aot_fmaxf(m, aot_shfl_xor_f32(m, 2));
    float c = aot_exp_fast(z - m), s = c + aot_shfl_xor_f32(c, 1);
    s += aot_shfl_xor_f32(s, 2);
    c = c * aot_rcp_fast(s) + eps;
    for (int it = 0; it < iters; it++) {
        if (it > 0) {
            s = c + aot_shfl_xor_f32(c, 1);
            s += aot_shfl_xor_f32(s, 2);
            c = c * aot_rcp_fast(s + eps);
        }
        s = c + aot_shfl_xor_f32(c, 4);
        s += aot_shfl_xor_f32(s, 8);
        c = c * aot_rcp_fast(s + eps);
    }
    return c;
}

/* The 24 mix sums and the sum of squares of token t over the splits, into mix_s[0..24]. Lane e
 * of wave g adds splits g, g + WAVES, ..., 8 loads issued together (predicated, so that a
 * count that is not a multiple of 8 does not leave a tail of loads one after another): a decode
 * step's 64-128 splits cost two trips to L2. */
AOT_DEV void reduce_partials(const aot_mhc_pre_kargs &a, int t, float *mix_s)
{
    constexpr int WAVES = AOT_MHC_BLOCK / AOT_WAVE, V = AOT_MHC_MIX + 1, BATCH = 8;
    AOT_SHARED(float, part, WAVES * V);
    const int tid = aot_thread_x(), e = aot_lane(), g = tid / AOT_WAVE;
    if (e < V) {
        float s = 0.0f;
        for (int p0 = g; p0 < a.splits; p0 += BATCH * WAVES) {
            float v[BATCH];
#pragma unroll
            for (int i = 0; i < BATCH; i++) {
                const aot_i64 p = p0 + i * WAVES;
                v[i] = p >= a.splits ? 0.0f
                       : e < AOT_MHC_MIX ? a.mix[(p * a.tokens + t) * AOT_MHC_MIX + e]
                                         : a.sqrsum[p * a.tokens + t];
            }
#pragma unroll
            for (int i = 0; i < BATCH; i++) s += v[i];
        }
        part[g * V + e] = s;
    }
    aot_sync_block();
    if (tid < V) {
        float s = 0.0f;
#pragma unroll
        for (int w = 0; w < WAVES; w++) s += part[w * V + tid];
        mix_s[tid] = s;
    }
    aot_sync_block();
}

AOT_DEV float rms_of(const aot_mhc_pre_kargs &a, const float *mix_s, float streams)
{
    return aot_rsqrt_fast(mix_s[AOT_MHC_MIX] / (streams * (float)a.hidden) + a.rms_eps);
}

/* Wave 0: post and comb of token t (out). */
AOT_DEV void post_and_comb(const aot_mhc_pre_kargs &a, int t, const float *mix_s, float rms)
{
    const int lane = aot_lane(), e = lane % 16;
    const float z = mix_s[2 * N_ + e] * rms * a.scale[2] + a.base[2 * N_ + e];
    const float c = sinkhorn(z, a.sinkhorn_iters, a.sinkhorn_eps);
    if (lane < 16) a.comb[(aot_i64)t * 16 + e] = c;
    if (lane < N_)
        a.post[(aot_i64)t * N_ + lane] = aot_sigmoid(mix_s[N_ + lane] * rms * a.scale[1] + a.base[N_ + lane]) * a.post_mult;
}

/* ---- pre: pre, the pre-mix (and the sublayer's RMSNorm), then post and comb ---- */

/* The pre-mix of 8 consecutive positions h..h+7 (fp32), and the broadcast copies. */
template <bool BROADCAST>
AOT_DEV void collapse8(const aot_mhc_pre_kargs &a, aot_i64 t, aot_i64 h, const float (&p)[N_], float (&u)[8])
{
    const aot_i64 C = a.hidden;
    if (BROADCAST) {
        const aot_u16x8 x = aot_load_u16x8(a.residual + t * C + h);
#pragma unroll
        for (int j = 0; j < N_; j++) aot_store_u16x8(a.residual_out + (t * N_ + j) * C + h, x);
#pragma unroll
        for (int i = 0; i < 8; i++) {
            const float v = aot_bf16_to_f32(x.v[i]);
            u[i] = p[0] * v + p[1] * v + p[2] * v + p[3] * v;
        }
    } else {
        aot_u16x8 r[N_];
#pragma unroll
        for (int j = 0; j < N_; j++) r[j] = aot_load_u16x8(a.residual + (t * N_ + j) * C + h);
#pragma unroll
        for (int i = 0; i < 8; i++)
            u[i] = p[0] * aot_bf16_to_f32(r[0].v[i]) + p[1] * aot_bf16_to_f32(r[1].v[i]) +
                   p[2] * aot_bf16_to_f32(r[2].v[i]) + p[3] * aot_bf16_to_f32(r[3].v[i]);
    }
}

/* The delayed collapse of 8 positions h..h+7: bf16(sum_j p[j] residual[j]) with the previous
 * boundary's pre p, or stream 0's bits as they are without it (the torch reference's
 * residual[:, 0]; a gate (1, 0, 0, 0) would turn another stream's inf into NaN); and aux, the
 * streams added in order in fp32, divided by 4 and rounded once. */
AOT_DEV aot_u16x8 delayed8(const aot_mhc_pre_kargs &a, aot_i64 t, aot_i64 h, const float (&p)[N_])
{
    const aot_i64 C = a.hidden;
    aot_u16x8 r[N_];
    r[0] = aot_load_u16x8(a.residual + t * N_ * C + h);
    if (a.pre_in == nullptr && a.aux == nullptr) return r[0]; /* the other streams are not read */
#pragma unroll
    for (int j = 1; j < N_; j++) r[j] = aot_load_u16x8(a.residual + (t * N_ + j) * C + h);
    if (a.aux != nullptr) {
        aot_u16x8 m;
#pragma unroll
        for (int i = 0; i < 8; i++)
            m.v[i] = aot_f32_to_bf16((aot_bf16_to_f32(r[0].v[i]) + aot_bf16_to_f32(r[1].v[i]) + aot_bf16_to_f32(r[2].v[i]) +
                                      aot_bf16_to_f32(r[3].v[i])) * 0.25f);
        aot_store_u16x8(a.aux + t * C + h, m);
    }
    if (a.pre_in == nullptr) return r[0];
    aot_u16x8 o;
#pragma unroll
    for (int i = 0; i < 8; i++)
        o.v[i] = aot_f32_to_bf16(p[0] * aot_bf16_to_f32(r[0].v[i]) + p[1] * aot_bf16_to_f32(r[1].v[i]) +
                                 p[2] * aot_bf16_to_f32(r[2].v[i]) + p[3] * aot_bf16_to_f32(r[3].v[i]));
    return o;
}

/* DELAYED (DeepSeek-V4.1): this token's pre goes to pre_out, the collapse takes pre_in
 * (delayed8), the RMS divides by the projection input's rms_streams * hidden, and the norm's
 * sum of squares is over the bf16 collapse (as the delayed TileLang and AITER kernels take it;
 * the others square the fp32 one). */
template <bool BROADCAST, bool NORM, bool DELAYED>
AOT_DEV void pre_body(const aot_mhc_pre_kargs &a)
{
    const int t = aot_block_x(), tid = aot_thread_x();
    const aot_i64 C = a.hidden;
    AOT_SHARED(float, pre_s, N_);
    AOT_SHARED(float, mix_s, AOT_MHC_MIX + 1);
    AOT_SHARED(float, scratch, AOT_MHC_BLOCK / AOT_WAVE);
    AOT_SHARED(aot_u16x8, li_s, NORM ? AOT_MHC_MAX_HIDDEN / 8 : 1);
    aot_grid_wait(); /* pre_full launches it early, after the projection */
    reduce_partials(a, t, mix_s);
    const float rms = rms_of(a, mix_s, DELAYED ? (float)a.rms_streams : BROADCAST ? 1.0f : (float)N_);
    if (tid < N_) {
        const float pre = aot_sigmoid(mix_s[tid] * rms * a.scale[0] + a.base[tid]) + a.pre_eps;
        if (DELAYED) a.pre_out[(aot_i64)t * N_ + tid] = pre;
        pre_s[tid] = !DELAYED ? pre : a.pre_in != nullptr ? a.pre_in[(aot_i64)t * N_ + tid] : 0.0f;
    }
    aot_sync_block();
    const float p[N_] = {pre_s[0], pre_s[1], pre_s[2], pre_s[3]};
    /* after the delayed decode kernel, which made layer_input (and aux) itself: only the coefficients */
    const bool collapse = !DELAYED || a.layer_input != nullptr;
    float sumsq = 0.0f;
    for (aot_i64 h = tid * 8; collapse && h < C; h += AOT_MHC_BLOCK * 8) {
        aot_u16x8 o;
        if (DELAYED) {
            o = delayed8(a, t, h, p);
#pragma unroll
            for (int i = 0; i < 8; i++) sumsq += aot_bf16_to_f32(o.v[i]) * aot_bf16_to_f32(o.v[i]);
        } else {
            float u[8];
            collapse8<BROADCAST>(a, t, h, p, u);
#pragma unroll
            for (int i = 0; i < 8; i++) o.v[i] = aot_f32_to_bf16(u[i]), sumsq += u[i] * u[i];
        }
        if (NORM) li_s[h / 8] = o;
        else aot_store_u16x8(a.layer_input + t * C + h, o);
    }
    if (NORM) { /* the sum of squares (above), the scale applied to the bf16 values */
        const float inv = aot_rsqrt_fast(aot_block_sum_f32<AOT_MHC_BLOCK>(sumsq, scratch) / (float)C + a.norm_eps);
        for (aot_i64 h = tid * 8; h < C; h += AOT_MHC_BLOCK * 8) {
            const aot_u16x8 v = li_s[h / 8], w = aot_load_u16x8(a.norm_weight + h);
            aot_u16x8 o;
#pragma unroll
            for (int i = 0; i < 8; i++) o.v[i] = aot_f32_to_bf16(aot_bf16_to_f32(v.v[i]) * inv * aot_bf16_to_f32(w.v[i]));
            aot_store_u16x8(a.layer_input + t * C + h, o);
        }
    }
    if (tid < AOT_WAVE) post_and_comb(a, t, mix_s, rms);
}

#define MHC_PRE(name, kargs, broadcast, norm, delayed)                                         \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void name(kargs a)                             \
    {                                                                                          \
        pre_body<broadcast, norm, delayed>(a);                                                 \
    }                                                                                          \
    AOT_EMU_ENTRY(name, kargs)

AOT_MHC_PRE_VARIANTS(MHC_PRE)

/* ---- post ---- */

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void mhc_post(aot_mhc_post_kargs a)
{
    const int spans = (a.hidden + AOT_MHC_POST_SPAN - 1) / AOT_MHC_POST_SPAN;
    const aot_i64 t = aot_block_x() / spans, C = a.hidden;
    const aot_i64 h = (aot_i64)(aot_block_x() % spans) * AOT_MHC_POST_SPAN + aot_thread_x() * 8;
    if (h >= C) return;
    const float *comb = a.comb + t * 16, *post = a.post + t * N_;
    const aot_u16x8 y = aot_load_u16x8(a.x + t * C + h);
    aot_u16x8 r[N_];
#pragma unroll
    for (int j = 0; j < N_; j++) r[j] = aot_load_u16x8(a.residual + (t * N_ + j) * C + h);
#pragma unroll
    for (int k = 0; k < N_; k++) {
        aot_u16x8 o;
#pragma unroll
        for (int i = 0; i < 8; i++) {
            float v = post[k] * aot_bf16_to_f32(y.v[i]);
#pragma unroll
            for (int j = 0; j < N_; j++) v += comb[j * N_ + k] * aot_bf16_to_f32(r[j].v[i]);
            o.v[i] = aot_f32_to_bf16(v);
        }
        aot_store_u16x8(a.out + (t * N_ + k) * C + h, o);
    }
}
AOT_EMU_ENTRY(mhc_post, aot_mhc_post_kargs)

/* ---- head ---- */

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void mhc_head(aot_mhc_head_kargs a)
{
    const int t = aot_block_x(), tid = aot_thread_x();
    const aot_i64 C = a.hidden;
    const aot_u16 *res = a.residual + (aot_i64)t * N_ * C;
    AOT_SHARED(float, scratch, AOT_MHC_BLOCK / AOT_WAVE);
    float d[N_] = {0.0f, 0.0f, 0.0f, 0.0f}, sq = 0.0f;
    for (aot_i64 k = tid; k < N_ * C; k += AOT_MHC_BLOCK) {
        const float x = aot_bf16_to_f32(res[k]);
        sq += x * x;
#pragma unroll
        for (int m = 0; m < N_; m++) d[m] += a.fn[m * N_ * C + k] * x;
    }
    const float rms = aot_rsqrt_fast(aot_block_sum_f32<AOT_MHC_BLOCK>(sq, scratch) / (float)(N_ * C) + a.rms_eps);
    float pre[N_];
#pragma unroll
    for (int m = 0; m < N_; m++)
        pre[m] = aot_sigmoid(aot_block_sum_f32<AOT_MHC_BLOCK>(d[m], scratch) * rms * a.scale[0] + a.base[m]) + a.eps;
    for (aot_i64 h = tid; h < C; h += AOT_MHC_BLOCK)
        a.out[t * C + h] = aot_f32_to_bf16(pre[0] * aot_bf16_to_f32(res[h]) + pre[1] * aot_bf16_to_f32(res[C + h]) +
                                           pre[2] * aot_bf16_to_f32(res[2 * C + h]) +
                                           pre[3] * aot_bf16_to_f32(res[3 * C + h]));
}
AOT_EMU_ENTRY(mhc_head, aot_mhc_head_kargs)

/* ---- pre_full and pre_delayed in one pass, on thread-block clusters (AOT_PIPELINES) ----
 * The two kernels above read the residual twice (projection, then the pre-mix once pre is
 * known). Here a cluster of 16 blocks keeps a tile of 16 tokens on chip from its copy to its
 * mix, so it crosses DRAM once (H200, T = 4096, C = 4096: docs/performance.md). Block r owns
 * positions [r W, r W + W) of all 4 streams (W = C / 16), and its slice of fn, as two bf16
 * terms hi + lo (16 bits of mantissa: three would not fit), stays in the registers of its 8
 * product waves (it comes in through the last slots, before their first tile: fn_read). At
 * C = 7168 both terms would take 168 registers a thread: there (`lo` variants) the lo term lies
 * in shared memory in the order each thread reads it, beside a ring of 2 slots, and fn comes in
 * through the slots in two rounds of two streams each.
 * Waves, and what passes between them (each hand-over an mbarrier of a slot q, or of a batch
 * buffer b):
 *   0      producer  the tile's 4 tensor copies into slot q                      -> full[q]
 *   4-11   products  the slot times fn's terms, sum of squares; the 8 waves' sums
 *                    added, each token's record stored into its owner block      -> part[q]
 *   1      owner     block t owns token t of the tile: the 16 records added, pre
 *                    stored into every block of the cluster                      -> cf[q]
 *                    the token's comb logits and post into a batch buffer        -> zfull[b]
 *   2      finisher  post and comb (Sinkhorn, a lane a token) of a batch of
 *                    AOT_MHC_CL_BATCH tiles, since nothing waits for them        -> zempty[b]
 *   12-15  mix       layer_input of the block's positions from the slot          -> empty[q]
 *                    (post variants: first the new residual, into the slot       -> posted[q],
 *                    which the products wait for instead of full[q])
 *   3      idle      (the mix on six waves, 2-3 and 12-15, two of them sharing a
 *                    scheduler with two product waves, measured no faster)
 * A slot is reused only after its tile's mix has seen cf[q], the pre of every owner of the
 * tile, and each owner had read every block's records, so the records and pre of a slot's next
 * tile never land before its present ones were read. The delayed collapse (pre_in) does not
 * wait for the owners: its mix waits for cf[q] after its stores, and hands the slot back a tile
 * later (in a ring of 2 slots, at once: a tile late would leave no tile to copy ahead). */
#if defined(AOT_PIPELINES)
constexpr int CL_B = AOT_MHC_CL_BLOCKS, CL_T = AOT_MHC_CL_TOKENS, CL_RV = AOT_MHC_CL_RECORD, CL_ROWS = 4 * CL_T;
constexpr int CL_PANEL = CL_ROWS * 64, CL_PW = 8, CL_MIX_THREADS = 4 * 32; /* 16-bit elements; product waves */

/* One variant's sizes: hidden C, W positions a block, NS slots of SLOT 16-bit elements, KS k16
 * steps a product wave (stream w / 2, half of W). The product waves hold fn's slice, 12 KS
 * registers (6 KS with LO, the lo term in shared memory, LOW words), and get PREGS registers a
 * thread of the 256 a pair of waves may share (ptxas spills nothing with these margins but 4
 * bytes in the post mix). POST: the previous sublayer's post-mix comes first
 * (fused_post_pre_delayed), x through XT-element buffers. */
template <int HIDDEN, int SLOTS, bool POST_, bool LO_>
struct cl_geom {
    enum { C = HIDDEN, W = C / CL_B, NS = SLOTS, SLOT = CL_PANEL * (W / 64), KS = W / 2 / 16, XT = POST_ ? CL_T * W : 8 };
    enum { NEED = ((LO_ ? 6 : 12) * KS + (POST_ ? 48 : 72) + 7) / 8 * 8 };
    enum { PREGS = NEED > 136 ? NEED : 136, OREGS = 256 - PREGS }; /* raised and lowered from the launch's 128 */
    enum { LOW = LO_ ? 6 * KS * CL_PW * 32 : 4 };
    static constexpr bool POST = POST_, LO = LO_;
    static_assert(W % 64 == 0 && PREGS <= 232 && OREGS >= 48, "whole panels; registers for both roles");
};

template <class G>
struct cl_shared {
    aot_u16 slot[G::NS][G::SLOT]; /* swizzled tiles (aot_swz): row = stream * 16 + token */
    aot_u32 lo[G::LOW];           /* LO: fn's lo term, [ks][n][product thread][2] (cl_lo_at) */
    float red[CL_PW][CL_T][CL_RV];
    float recv[G::NS][CL_B][CL_RV];
    float coef[G::NS][CL_T][4];
    float pre_in[CL_T][4]; /* delayed: the tile's pre_in, for the mix */
    aot_u16 x[2][G::XT];   /* post: x of a tile, [token][W], copied a tile ahead */
    float pc[CL_T][20];    /* post: the tile's post_in (4) and comb_in (16) a token */
    float zbuf[2][AOT_MHC_CL_BATCH][20]; /* the owner's comb logits and post, a batch's tokens */
    aot_mbar full[G::NS], empty[G::NS], part[G::NS], cf[G::NS], posted[G::NS], zfull[2], zempty[2], fn_read;
};

/* The block's slice of fn (AOT_MHC_MIX x 4 streams x W floats, three slots' bytes) is staged in
 * the last slots, whose first tiles wait until the product waves have read it; with LO, in two
 * rounds of JR = 2 streams from the first slot on, and the first tile waits for both. */
template <class G>
struct cl_fn {
    enum { BYTES = AOT_MHC_MIX * 4 * G::W * 4, ROUNDS = G::LO ? 2 : 1, JR = 4 / ROUNDS };
    enum { FIRST_SLOT = G::LO ? 0 : G::NS - BYTES / (G::SLOT * 2) };
    static_assert(G::LO ? BYTES / ROUNDS <= G::NS * G::SLOT * 2
                        : FIRST_SLOT >= 1 && BYTES == (G::NS - FIRST_SLOT) * G::SLOT * 2,
                  "fn's slice fills whole slots (a round of it fits in the ring)");
};

/* A cluster's tiles are cid, cid + clusters, ...; `it` counts them, slot it % NS, whose
 * barriers are in phase it / NS. */
#define CL_TILES(it, tile) for (int it = 0, tile = aot_cluster_id(); tile * CL_T < a.tokens; it++, tile += aot_cluster_count())

/* How many tiles CL_TILES gives this cluster. */
AOT_DEV int cl_tile_count(const aot_mhc_cluster_kargs &a)
{
    const int tiles = (a.tokens + CL_T - 1) / CL_T, cid = aot_cluster_id(), count = aot_cluster_count();
    return (tiles - cid + count - 1) / count;
}

/* Whether the collapse takes pre_in (the delayed protocol): always with post, whose products wait
 * for the mix, so its mix may not wait for cf first. */
template <class G>
AOT_DEV bool cl_delayed(const aot_mhc_cluster_kargs &a) { return G::POST || a.delayed; }

template <class G>
AOT_DEV void cl_producer(const aot_mhc_cluster_kargs &a, cl_shared<G> &s, int r)
{
    if (aot_lane() != 0) return;
    CL_TILES(it, tile) {
        const int q = it % G::NS;
        if (it >= G::NS) aot_mbar_wait(&s.empty[q], (it / G::NS - 1) & 1);
        if (it == cl_fn<G>::FIRST_SLOT) aot_mbar_wait(&s.fn_read, 0);
        aot_mbar_expect(&s.full[q], G::SLOT * 2);
        for (int p = 0; p < G::W / 64; p++)
            aot_copy_tile(s.slot[q] + p * CL_PANEL, &a.residual, r * G::W + 64 * p, tile * CL_T, 0, &s.full[q]);
    }
}

/* Where fn[o][j][k] of the block's slice is staged (in its round): row o JR + j % JR, its 16-byte
 * units swizzled by o, so that a fragment load's 8 rows (8 o's) take 2 bank wavefronts rather
 * than 8. */
template <class G>
AOT_DEV int cl_fn_at(int o, int j, int k)
{
    constexpr int JR = cl_fn<G>::JR;
    return (o * JR + j % JR) * G::W + ((k / 4) ^ ((o & 3) << 1)) * 4 + k % 4;
}

/* Where product thread mt's lo term words (p = 0, 1) of output group n at k16 step ks lie: a
 * wave's 8-byte loads are consecutive (no bank conflict). */
template <class G>
AOT_DEV int cl_lo_at(int ks, int n, int mt) { return ((ks * 3 + n) * CL_PW * 32 + mt) * 2; }

/* Product thread mt's share of the copies of fn's slice into the stage, 16 bytes each, all in
 * flight at once. Loaded straight into registers, nvcc issued fn's 96 loads a thread a few at a
 * time (it compiles for 128 registers a thread), each few behind the tiles' first copies:
 * the first product waited 9 us (H200, docs/performance.md). */
template <class G>
AOT_DEV void cl_fn_stage(const aot_mhc_cluster_kargs &a, float *stage, int r, int mt, int round)
{
    constexpr int JR = cl_fn<G>::JR;
    for (int c = mt; c < cl_fn<G>::BYTES / cl_fn<G>::ROUNDS / 16; c += CL_PW * 32) { /* unit c: row c / (W / 4) */
        const int o = c / (JR * G::W / 4), j = round * JR + c / (G::W / 4) % JR, k = c % (G::W / 4) * 4;
        aot_copy16_async(stage + cl_fn_at<G>(o, j, k), a.fn + (aot_i64)(o * 4 + j) * G::C + r * G::W + k, true);
    }
    aot_copy_async_commit();
    aot_copy_async_wait_all();
    aot_wg_shared_fence(); /* before the slots' tensor copies (the async proxy) write these bytes again */
}

/* fn's two terms at one k pair (8-byte aligned: k is even): hi = bf16(x), lo = bf16(x - hi). */
AOT_DEV void cl_fn_terms(const float *p, aot_u32 &hi, aot_u32 &lo)
{
    const aot_f32x2 x = aot_load_f32x2(p);
    hi = aot_pack2_16(x.v[0], x.v[1], 0);
    lo = aot_pack2_16(x.v[0] - lo_f32(hi), x.v[1] - hi_f32(hi), 0);
}

/* Product wave w: stream w / 2, positions (w % 2) W / 2 .. + W / 2 of the block's. The sums of
 * squares are the diagonal of the tile's Gram matrix X X^T, two more products a k-step (the
 * matrix units square exactly and add in fp32; one by one they took 16 instructions a k-step).
 * A token's products of fn's two terms add into one accumulator. */
template <class G>
AOT_DEV void cl_products(const aot_mhc_cluster_kargs &a, cl_shared<G> &s, int r, int w)
{
    typedef aot_mma_m16n8k16 S;
    const int lane = aot_lane(), j = w / 2, h0 = w % 2 * (G::W / 2), mt = aot_thread_x() - 4 * 32;
    aot_u32 fh[3][G::KS][2], fl[3][G::LO ? 1 : G::KS][2];
    float *stage = (float *)s.slot[cl_fn<G>::FIRST_SLOT];
    for (int round = 0; round < cl_fn<G>::ROUNDS; round++) {
        cl_fn_stage<G>(a, stage, r, mt, round);
        aot_sync_named(1, CL_PW * 32);
        if (j / cl_fn<G>::JR == round)
#pragma unroll
            for (int n = 0; n < 3; n++)
#pragma unroll
                for (int ks = 0; ks < G::KS; ks++)
#pragma unroll
                    for (int p = 0; p < 2; p++) {
                        const int o = n * S::N + S::b_col(lane, 2 * p), k = h0 + ks * 16 + S::b_k(lane, 2 * p);
                        aot_u32 lo;
                        cl_fn_terms(stage + cl_fn_at<G>(o, j, k), fh[n][ks][p], lo);
                        if constexpr (G::LO) s.lo[cl_lo_at<G>(ks, n, mt) + p] = lo;
                        else fl[n][ks][p] = lo;
                    }
        aot_sync_named(1, CL_PW * 32); /* the stage is read before the next round, or a tile, lands */
    }
    if (mt == 0) aot_mbar_arrive(&s.fn_read);
    CL_TILES(it, tile) {
        const int q = it % G::NS;
        aot_mbar_wait(G::POST ? &s.posted[q] : &s.full[q], it / G::NS & 1); /* post: the slot holds the new residual */
        float acc[3][S::C] = {}, gram[2][S::C] = {};
#pragma unroll
        for (int ks = 0; ks < G::KS; ks++) {
            aot_u32 x[S::A / 2], xt[2][S::B / 2];
            aot_frag_a_x2(S(), s.slot[q], CL_ROWS, j * CL_T, h0 + ks * 16, lane, x);
            aot_frag_b_cols_x2<S, 2>(S(), s.slot[q], CL_ROWS, h0 + ks * 16, j * CL_T, lane, xt);
#pragma unroll
            for (int n = 0; n < 3; n++) {
                aot_u32 lo[2];
                if constexpr (G::LO) {
                    const aot_words<2> v = aot_load_words<2>(&s.lo[cl_lo_at<G>(ks, n, mt)]);
                    lo[0] = v.v[0], lo[1] = v.v[1];
                } else {
                    lo[0] = fl[n][ks][0], lo[1] = fl[n][ks][1];
                }
                aot_mma_bf16_x2(S(), acc[n], x, fh[n][ks]);
                aot_mma_bf16_x2(S(), acc[n], x, lo);
            }
            aot_mma_bf16_x2(S(), gram[0], x, xt[0]), aot_mma_bf16_x2(S(), gram[1], x, xt[1]);
        }
#pragma unroll
        for (int n = 0; n < 3; n++) /* C elements i, i + 1: a row's neighbours (mma.sync) */
#pragma unroll
            for (int i = 0; i < S::C; i += 2)
                aot_store_f32x2(&s.red[w][S::c_row(lane, i)][n * S::N + S::c_col(lane, i)], acc[n][i], acc[n][i + 1]);
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++)
                if (S::c_row(lane, i) == n * S::N + S::c_col(lane, i)) s.red[w][S::c_row(lane, i)][AOT_MHC_MIX] = gram[n][i];
        aot_sync_named(1, CL_PW * 32);
        if (mt < CL_T * CL_RV / 4) { /* four values of one token's record */
            const int t = mt / (CL_RV / 4), c = mt % (CL_RV / 4) * 4;
            float sum[4] = {};
#pragma unroll
            for (int ww = 0; ww < CL_PW; ww++) { /* 16-byte loads: the other waves wait for these sums */
                const aot_u32x4 x = aot_load_u32x4((const aot_u32 *)&s.red[ww][t][c]);
#pragma unroll
                for (int i = 0; i < 4; i++) sum[i] += aot_f32_from_bits(x.v[i]);
            }
            unsigned v[4];
#pragma unroll
            for (int i = 0; i < 4; i++) v[i] = aot_bits_from_f32(sum[i]);
            aot_store_remote(&s.recv[q][r][c], &s.part[q], t, v);
        }
        aot_sync_named(1, CL_PW * 32); /* red is read before the next tile writes it */
    }
}

/* Sinkhorn of one token's 4x4 logits c in one lane: the math of sinkhorn() above. */
AOT_DEV void cl_sinkhorn(float (&c)[16], int iters, float eps)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float m = aot_fmaxf(aot_fmaxf(c[4 * i], c[4 * i + 1]), aot_fmaxf(c[4 * i + 2], c[4 * i + 3]));
        float sum = 0.0f;
#pragma unroll
        for (int k = 0; k < 4; k++) c[4 * i + k] = aot_exp_fast(c[4 * i + k] - m), sum += c[4 * i + k];
        const float inv = aot_rcp_fast(sum);
#pragma unroll
        for (int k = 0; k < 4; k++) c[4 * i + k] = c[4 * i + k] * inv + eps;
    }
    for (int it = 0; it < iters; it++) {
        if (it > 0)
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const float inv = aot_rcp_fast(c[4 * i] + c[4 * i + 1] + c[4 * i + 2] + c[4 * i + 3] + eps);
#pragma unroll
                for (int k = 0; k < 4; k++) c[4 * i + k] *= inv;
            }
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float inv = aot_rcp_fast(c[k] + c[4 + k] + c[8 + k] + c[12 + k] + eps);
#pragma unroll
            for (int i = 0; i < 4; i++) c[4 * i + k] *= inv;
        }
    }
}

/* post and comb of a batch's n tokens from z, the first of tile `first`: a lane each. */
AOT_DEV void cl_finish(const aot_mhc_cluster_kargs &a, const float (*z)[20], int r, int first, int n)
{
    const int lane = aot_lane();
    if (lane < n) {
        const aot_i64 t = (aot_i64)(first + lane * aot_cluster_count()) * CL_T + r;
        float c[16];
#pragma unroll
        for (int e = 0; e < 16; e++) c[e] = z[lane][e];
        cl_sinkhorn(c, a.sinkhorn_iters, a.sinkhorn_eps);
        if (t < a.tokens) {
#pragma unroll
            for (int e = 0; e < 16; e++) a.comb[t * 16 + e] = c[e];
#pragma unroll
            for (int k = 0; k < 4; k++) a.post[t * 4 + k] = z[lane][16 + k];
        }
    }
}

/* The owner's batches of post and comb, in the other of two buffers while the owner fills one:
 * a Sinkhorn of 20 steps a lane is about a tile's time, which the owner, whom every mix waits
 * for, does not lose. */
template <class G>
AOT_DEV void cl_finisher(const aot_mhc_cluster_kargs &a, cl_shared<G> &s, int r)
{
    const int cid = aot_cluster_id(), count = aot_cluster_count(), mine = cl_tile_count(a);
    for (int b = 0; b * AOT_MHC_CL_BATCH < mine; b++) {
        const int n = mine - b * AOT_MHC_CL_BATCH < AOT_MHC_CL_BATCH ? mine - b * AOT_MHC_CL_BATCH : AOT_MHC_CL_BATCH;
        aot_mbar_wait(&s.zfull[b % 2], b / 2 & 1);
        cl_finish(a, s.zbuf[b % 2], r, cid + b * AOT_MHC_CL_BATCH * count, n);
        aot_mbar_arrive(&s.zempty[b % 2]); /* every lane, after its reads */
    }
}

/* Block t's owner wave takes token t of each tile: the 16 blocks' records added, pre stored
 * into every block of the cluster (delayed: and into pre_out), the comb logits and post into
 * the finisher's batch. */
template <class G>
AOT_DEV void cl_owner(const aot_mhc_cluster_kargs &a, cl_shared<G> &s, int r)
{
    const int lane = aot_lane(), e = lane < AOT_MHC_MIX ? lane : 0, part = e / N_ < 2 ? e / N_ : 2;
    const float scale = a.scale[part], base = a.base[e]; /* loaded before the tiles' copies queue */
    int n = 0, b = 0; /* tokens in batch b */
    CL_TILES(it, tile) {
        const int q = it % G::NS;
        if (lane == 0) aot_mbar_expect(&s.part[q], CL_B * CL_RV * 4);
        aot_mbar_wait_cluster(&s.part[q], it / G::NS & 1);
        float v = 0.0f;
        if (lane <= AOT_MHC_MIX)
            for (int k = 0; k < CL_B; k++) v += s.recv[q][k][lane];
        const float rms = aot_rsqrt_fast(aot_shfl_f32(v, AOT_MHC_MIX) / (4.0f * G::C) + a.rms_eps);
        const float z = v * rms * scale + base;
        const float sig = aot_sigmoid(z), pre = sig + a.pre_eps;
        unsigned p[4];
#pragma unroll
        for (int k = 0; k < 4; k++) p[k] = aot_bits_from_f32(aot_shfl_f32(pre, k));
        /* every lane's reads of recv before any lane's store: block j's next records wait (its
         * cluster acquire on cf) for lane j's store alone, and shuffles order no memory */
        aot_sync_wave();
        if (lane < CL_B) aot_store_remote(&s.coef[q][r][0], &s.cf[q], lane, p);
        const aot_i64 t = (aot_i64)tile * CL_T + r;
        if (cl_delayed<G>(a) && lane < N_ && t < a.tokens) a.pre_out[t * N_ + lane] = pre;
        if (n == 0 && b >= 2) aot_mbar_wait(&s.zempty[b % 2], (b / 2 - 1) & 1);
        if (lane >= 2 * N_ && lane < AOT_MHC_MIX) s.zbuf[b % 2][n][lane - 2 * N_] = z;
        if (lane >= N_ && lane < 2 * N_) s.zbuf[b % 2][n][16 + lane - N_] = sig * a.post_mult;
        if (++n == AOT_MHC_CL_BATCH) aot_mbar_arrive(&s.zfull[b % 2]), n = 0, b++; /* every lane, after its writes */
    }
    if (n) aot_mbar_arrive(&s.zfull[b % 2]);
}

/* Mix thread m's values of a tile's small inputs, loaded a tile ahead into registers and staged
 * in shared memory when the tile starts: pre_in (delayed, m < 64), and with post post_in and
 * comb_in (20 a token, 3 a thread). */
struct cl_small {
    float pre_in, pc[3];
};

template <class G>
AOT_DEV cl_small cl_small_load(const aot_mhc_cluster_kargs &a, int tile, int m)
{
    cl_small v = {0.0f, {0.0f, 0.0f, 0.0f}};
    const aot_i64 t0 = (aot_i64)tile * CL_T, t = t0 + m / 4;
    if (cl_delayed<G>(a) && a.pre_in != nullptr && m < 4 * CL_T && t < a.tokens) v.pre_in = a.pre_in[t * N_ + m % 4];
    if (G::POST)
#pragma unroll
        for (int i = 0; i < 3; i++) {
            const int e = m + i * CL_MIX_THREADS, tt = e / 20, c = e % 20;
            if (e < CL_T * 20 && t0 + tt < a.tokens) v.pc[i] = c < 4 ? a.post_in[(t0 + tt) * 4 + c] : a.comb_in[(t0 + tt) * 16 + c - 4];
        }
    return v;
}

template <class G>
AOT_DEV void cl_small_stage(cl_shared<G> &s, const cl_small &v, int m)
{
    if (m < 4 * CL_T) s.pre_in[m / 4][m % 4] = v.pre_in;
    if (G::POST)
#pragma unroll
        for (int i = 0; i < 3; i++)
            if (m + i * CL_MIX_THREADS < CL_T * 20) s.pc[(m + i * CL_MIX_THREADS) / 20][(m + i * CL_MIX_THREADS) % 20] = v.pc[i];
}

/* post: thread m's copies of x for its units of `tile` (those of cl_mix) into buffer b. */
template <class G>
AOT_DEV void cl_x_issue(const aot_mhc_cluster_kargs &a, cl_shared<G> &s, int r, int tile, int b, int m)
{
    constexpr int UNITS = CL_T * G::W / 8;
    for (int u = m; u < UNITS; u += CL_MIX_THREADS) {
        const int t = u / (G::W / 8), h = u % (G::W / 8) * 8;
        const aot_i64 tok = (aot_i64)tile * CL_T + t;
        const bool valid = tok < a.tokens;
        aot_copy16_async(s.x[b] + t * G::W + h, a.x + (valid ? tok : 0) * G::C + r * G::W + h, valid);
    }
    aot_copy_async_commit();
}

/* The collapse of 8 positions (4 words of pairs) from the streams o: the weights p in stream
 * order, rounded once (stream0: stream 0 as it is); aux: their mean. */
AOT_DEV aot_u32x4 cl_collapse(const aot_u32x4 (&o)[N_], const float (&p)[4], bool stream0)
{
    if (stream0) return o[0];
    aot_u32x4 c;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float lo = p[0] * lo_f32(o[0].v[i]) + p[1] * lo_f32(o[1].v[i]) + p[2] * lo_f32(o[2].v[i]) + p[3] * lo_f32(o[3].v[i]);
        const float hi = p[0] * hi_f32(o[0].v[i]) + p[1] * hi_f32(o[1].v[i]) + p[2] * hi_f32(o[2].v[i]) + p[3] * hi_f32(o[3].v[i]);
        c.v[i] = aot_pack2_16(lo, hi, 0);
    }
    return c;
}

/* post: the new residual of 8 positions, v[k] = post[k] x + sum_j comb[j][k] r[j] in fp32 (as
 * mhc_post), rounded to bf16 in place of r, a word (two positions) at a time. */
AOT_DEV void cl_post8(aot_u32x4 (&r)[N_], const aot_u32x4 &x, const float *pc)
{
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float xl = lo_f32(x.v[i]), xh = hi_f32(x.v[i]);
        float rl[N_], rh[N_];
#pragma unroll
        for (int j = 0; j < N_; j++) rl[j] = lo_f32(r[j].v[i]), rh[j] = hi_f32(r[j].v[i]);
#pragma unroll
        for (int k = 0; k < N_; k++) {
            float vl = pc[k] * xl, vh = pc[k] * xh;
#pragma unroll
            for (int j = 0; j < N_; j++) vl += pc[4 + j * N_ + k] * rl[j], vh += pc[4 + j * N_ + k] * rh[j];
            r[k].v[i] = aot_pack2_16(vl, vh, 0);
        }
    }
}

AOT_DEV aot_u32x4 cl_mean4(const aot_u32x4 (&o)[N_])
{
    aot_u32x4 m;
#pragma unroll
    for (int i = 0; i < 4; i++)
        m.v[i] = aot_pack2_16((lo_f32(o[0].v[i]) + lo_f32(o[1].v[i]) + lo_f32(o[2].v[i]) + lo_f32(o[3].v[i])) * 0.25f,
                              (hi_f32(o[0].v[i]) + hi_f32(o[1].v[i]) + hi_f32(o[2].v[i]) + hi_f32(o[3].v[i])) * 0.25f, 0);
    return m;
}

/* Hands tile it's slot back to the producer once cf[q] has completed: every owner of the tile
 * has read every block's records, so the products are done with the slot and the records'
 * buffer is free. The cluster's acquire stays even where the mix reads nothing cf brought (the
 * delayed variants): it is what orders the other owners' reads of their records before this
 * block's next products store into them, as the chain after it (empty, the producer, full)
 * is the block's alone. */
template <class G>
AOT_DEV void cl_release(cl_shared<G> &s, int it, int m)
{
    const int q = it % G::NS;
    aot_mbar_wait_cluster(&s.cf[q], it / G::NS & 1);
    aot_sync_named(2, CL_MIX_THREADS);
    if (m == 0) aot_mbar_arrive(&s.empty[q]);
}

/* Thread m of the mix (0 .. CL_MIX_THREADS - 1) takes 8 positions of one token, for every
 * m + k CL_MIX_THREADS, ROUND of them at a time with their loads first (as many as its
 * registers hold). Positions stay in pairs, one 32-bit word each:
 * one instruction unpacks a value and one rounds two (built 16 bits at a time, the mix took
 * twice the instructions, and nvcc split its 16-byte store into 8).
 * pre_full waits for the owners' pre (cf) before its collapse. The delayed collapse needs
 * nothing from them: it runs when the tile lands, and the slot goes back a tile later, after
 * cf (in a ring of 2, right after its own cf). With POST it first makes the new residual
 * (stored to residual_out, and into the slot for the products, which wait for `posted`). */
template <class G>
AOT_DEV void cl_mix(const aot_mhc_cluster_kargs &a, cl_shared<G> &s, int r, int m)
{
    constexpr int UNITS = CL_T * G::W / 8, PER = (UNITS + CL_MIX_THREADS - 1) / CL_MIX_THREADS, ROUND = G::POST ? 1 : 2;
    static_assert(!G::POST || UNITS % CL_MIX_THREADS == 0, "post: every thread's units are in the tile");
    const bool delayed = cl_delayed<G>(a);
    const bool stream0 = delayed && a.pre_in == nullptr;
    /* the delayed slot goes back a tile late, except in a ring of 2, where that would leave no
     * tile to copy ahead (the mix then waits for cf) */
    const bool late = delayed && G::NS > 2;
    cl_small next = cl_small_load<G>(a, aot_cluster_id(), m);
    if (G::POST) cl_x_issue<G>(a, s, r, aot_cluster_id(), 0, m);
    CL_TILES(it, tile) {
        const int q = it % G::NS, n = (a.tokens - tile * CL_T < CL_T ? a.tokens - tile * CL_T : CL_T) * (G::W / 8);
        if (m == 0) aot_mbar_expect(&s.cf[q], CL_T * 16);
        if (delayed) {
            cl_small_stage<G>(s, next, m);
            next = cl_small_load<G>(a, tile + aot_cluster_count(), m);
            if (G::POST) cl_x_issue<G>(a, s, r, tile + aot_cluster_count(), (it + 1) & 1, m);
            aot_sync_named(2, CL_MIX_THREADS);
            aot_mbar_wait(&s.full[q], it / G::NS & 1);
            if (G::POST) aot_copy_async_wait_prior<1>(); /* this tile's x (the next tile's may be in flight) */
        } else {
            aot_mbar_wait_cluster(&s.cf[q], it / G::NS & 1);
        }
#pragma unroll 1
        for (int k0 = 0; k0 < PER; k0 += ROUND) {
            aot_u32x4 x[ROUND][N_];
#pragma unroll
            for (int k = 0; k < ROUND; k++) {
                /* a unit past the tile's tokens reads the last one's (post: its own, whose rows hold
                 * the copy's zeros, since the last one's thread is rewriting that) */
                const int own = m + (k0 + k) * CL_MIX_THREADS, u = G::POST || own < n ? own : n - 1;
                const int t = u / (G::W / 8), h = u % (G::W / 8) * 8;
#pragma unroll
                for (int jj = 0; jj < N_; jj++) x[k][jj] = aot_load_u32x4((const aot_u32 *)(s.slot[q] + aot_swz(jj * CL_T + t, h, CL_ROWS)));
            }
#pragma unroll
            for (int k = 0; k < ROUND; k++) {
                const int u = m + (k0 + k) * CL_MIX_THREADS, t = u / (G::W / 8), h = u % (G::W / 8) * 8, tc = t < CL_T ? t : CL_T - 1;
                const aot_i64 tok = (aot_i64)tile * CL_T + t, at = tok * G::C + r * G::W + h;
                if (G::POST) {
                    cl_post8(x[k], aot_load_u32x4((const aot_u32 *)(s.x[it & 1] + tc * G::W + h)), s.pc[tc]);
                    if (u < n)
#pragma unroll
                        for (int jj = 0; jj < N_; jj++) {
                            aot_store_u32x4((aot_u32 *)(s.slot[q] + aot_swz(jj * CL_T + t, h, CL_ROWS)), x[k][jj]);
                            aot_store_u32x4((aot_u32 *)(a.residual_out + (tok * N_ + jj) * G::C + r * G::W + h), x[k][jj]);
                        }
                    if (a.aux != nullptr && u < n) aot_store_u32x4((aot_u32 *)(a.aux + at), cl_mean4(x[k]));
                }
                const aot_u32x4 w = aot_load_u32x4((const aot_u32 *)(delayed ? s.pre_in[tc] : s.coef[q][tc]));
                const float p[4] = {aot_f32_from_bits(w.v[0]), aot_f32_from_bits(w.v[1]), aot_f32_from_bits(w.v[2]), aot_f32_from_bits(w.v[3])};
                if (u < n) aot_store_u32x4((aot_u32 *)(a.layer_input + at), cl_collapse(x[k], p, stream0));
            }
        }
        if (G::POST) { /* every mix thread, after its stores into the slot; which a tensor copy refills later: */
            aot_wg_shared_fence(); /* (fence.proxy.async) orders those stores before it */
            aot_mbar_arrive(&s.posted[q]);
        }
        if (!late) cl_release<G>(s, it, m);
        else if (it > 0) cl_release<G>(s, it - 1, m);
        else aot_sync_named(2, CL_MIX_THREADS); /* the next tile's staging waits for this one's reads (later, the release does) */
    }
    const int last = cl_tile_count(a) - 1;
    if (late && last >= 0) cl_release<G>(s, last, m);
    if (G::POST) aot_copy_async_wait_all();
}

template <class G>
AOT_DEV void cl_body(const aot_mhc_cluster_kargs &a)
{
    static_assert(sizeof(cl_shared<G>) + 1024 <= AOT_MHC_CL_SHARED(G::C, G::NS, G::POST, G::LO), "AOT_MHC_CL_SHARED is the layout's size");
    AOT_SHARED_DYN(unsigned char, raw, AOT_MHC_CL_SHARED(G::C, G::NS, G::POST, G::LO));
    cl_shared<G> &s = *(cl_shared<G> *)(raw + ((1024 - ((unsigned long long)raw & 1023)) & 1023));
    const int r = aot_cluster_rank(), wave = aot_thread_x() / 32;
    if (aot_thread_x() == 0) {
        for (int q = 0; q < G::NS; q++)
            aot_mbar_init(&s.full[q], 1), aot_mbar_init(&s.empty[q], 1), aot_mbar_init(&s.part[q], 1), aot_mbar_init(&s.cf[q], 1),
                aot_mbar_init(&s.posted[q], CL_MIX_THREADS);
        for (int b = 0; b < 2; b++) aot_mbar_init(&s.zfull[b], AOT_WAVE), aot_mbar_init(&s.zempty[b], AOT_WAVE);
        aot_mbar_init(&s.fn_read, 1);
    }
    aot_cluster_sync();
    if (wave >= 4 && wave < 12) { /* warp groups 1 and 2 hold fn */
        aot_regs_raise<G::PREGS>();
        cl_products<G>(a, s, r, wave - 4);
    } else {
        aot_regs_lower<G::OREGS>();
        if (wave == 0) cl_producer<G>(a, s, r);
        else if (wave == 1) cl_owner<G>(a, s, r);
        else if (wave == 2) cl_finisher<G>(a, s, r);
        else if (wave >= 12) cl_mix<G>(a, s, r, aot_thread_x() - 384);
    }
    aot_cluster_sync(); /* no block leaves while another may still store into its shared memory */
}

#define MHC_CLUSTER(name, kargs, hidden, slots, post, lo, from)                                        \
    AOT_KERNEL AOT_LAUNCH_BOUNDS_MIN(AOT_MHC_CL_THREADS, 1) void name(AOT_GRID_CONSTANT kargs a)       \
    {                                                                                                  \
        cl_body<cl_geom<hidden, slots, post, lo>>(a);                                                  \
    }                                                                                                  \
    AOT_EMU_ENTRY(name, kargs)

AOT_MHC_CLUSTER_VARIANTS(MHC_CLUSTER)

/* ---- decode: few tokens, the projection on every multiprocessor (AOT_PIPELINES) ----
 * At decode sizes the one-pass kernel's set-up (fn into registers, its barriers, one cluster
 * for the one tile) costs several times the data's time. Here block (b, i) owns positions
 * [64 b, 64 b + 64) of all 4 streams and the i-th tile of 16 tokens: its slice of fn comes
 * straight from memory (L2 after the first tile's block) into registers as B fragments, the residual (or, post, the new residual the block
 * makes) into a tile in shared memory, and wave w multiplies stream w % 4 at 32 of the
 * positions, fn as two bf16 terms hi + lo with fp32 sums (the one-pass kernel's precision). The
 * block's sums go to split b of the partials; the pre kernel after it (launched early) adds
 * the splits and makes the coefficients. DELAYED: the block also makes layer_input at its
 * positions from pre_in, so the pre kernel reads only the partials; POST: first the previous
 * sublayer's post-mix, stored to residual_out (its mean to aux). */
constexpr int DEC_P = AOT_MHC_DEC_POSITIONS, DEC_T = AOT_MHC_DEC_TILE;
/* a token's row of the tile: 4 streams, 8 elements more so that the 8 rows a fragment reads
 * start 4 banks apart (132 words) */
constexpr int DEC_ROW = 4 * DEC_P + 8, DEC_WAVES = AOT_MHC_BLOCK / 32, DEC_KS = DEC_P / 2 / 16;

/* The staging thread of token t's positions h .. h + 7: the 4 streams (post: made from the
 * previous residual, x, post_in and comb_in, and stored), then layer_input (DELAYED) and aux. */
template <bool POST, bool DELAYED>
AOT_DEV void dec_stage(const aot_mhc_decode_kargs &a, int t, aot_i64 h, aot_u32x4 (&r)[N_])
{
    const aot_i64 C = a.hidden;
#pragma unroll
    for (int j = 0; j < N_; j++) r[j] = aot_load_u32x4((const aot_u32 *)(a.residual + ((aot_i64)t * N_ + j) * C + h));
    if (POST) {
        float pc[20];
#pragma unroll
        for (int i = 0; i < 20; i++) pc[i] = i < 4 ? a.post_in[t * 4 + i] : a.comb_in[t * 16 + i - 4];
        cl_post8(r, aot_load_u32x4((const aot_u32 *)(a.x + (aot_i64)t * C + h)), pc);
#pragma unroll
        for (int j = 0; j < N_; j++) aot_store_u32x4((aot_u32 *)(a.residual_out + ((aot_i64)t * N_ + j) * C + h), r[j]);
        if (a.aux != nullptr) aot_store_u32x4((aot_u32 *)(a.aux + (aot_i64)t * C + h), cl_mean4(r));
    }
    if (DELAYED) {
        float p[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        if (a.pre_in != nullptr)
#pragma unroll
            for (int j = 0; j < N_; j++) p[j] = a.pre_in[t * N_ + j];
        aot_store_u32x4((aot_u32 *)(a.layer_input + (aot_i64)t * C + h), cl_collapse(r, p, a.pre_in == nullptr));
    }
}

template <bool POST, bool DELAYED>
AOT_DEV void decode_body(const aot_mhc_decode_kargs &a)
{
    typedef aot_mma_m16n8k16 S;
    static_assert(DEC_T == S::M && DEC_WAVES == 8 && DEC_P / 2 % S::K == 0, "one tile of tokens; each wave half a stream's positions");
    AOT_SHARED(aot_u32x4, tile_x4, DEC_T * DEC_ROW / 8);
    AOT_SHARED(float, red, DEC_WAVES * DEC_T * 25);
    aot_u16 *const tile = (aot_u16 *)tile_x4;
    const int tid = aot_thread_x(), lane = aot_lane(), w = tid / 32, j = w % 4;
    const int splits = a.hidden / DEC_P, b = aot_block_x() % splits, t0 = aot_block_x() / splits * DEC_T;
    const aot_i64 C = a.hidden, K = N_ * C;
    const int hw = w / 4 * (DEC_P / 2); /* the wave's first position, from the block's */
    aot_grid_launch_next(); /* the pre kernel's blocks wait in their aot_grid_wait */
    aot_f32x2 f[3][DEC_KS][2]; /* fn[o][j C + 64 b + hw + k] at the lane's B fragment places */
#pragma unroll
    for (int n = 0; n < 3; n++)
#pragma unroll
        for (int ks = 0; ks < DEC_KS; ks++)
#pragma unroll
            for (int p = 0; p < 2; p++)
                f[n][ks][p] = aot_load_f32x2(a.fn + (n * S::N + S::b_col(lane, 2 * p)) * K + j * C + (aot_i64)b * DEC_P + hw +
                                             ks * S::K + S::b_k(lane, 2 * p));
    if (tid < DEC_T * DEC_P / 8) { /* row t's positions u .. u + 7 of the block's; rows past the last token zero */
        const int t = tid / (DEC_P / 8), u = tid % (DEC_P / 8) * 8;
        aot_u32x4 r[N_] = {};
        if (t0 + t < a.tokens) dec_stage<POST, DELAYED>(a, t0 + t, (aot_i64)b * DEC_P + u, r);
#pragma unroll
        for (int jj = 0; jj < N_; jj++) aot_store_u32x4((aot_u32 *)(tile + t * DEC_ROW + jj * DEC_P + u), r[jj]);
    }
    aot_sync_block();
    float acc[3][S::C] = {}, gram[2][S::C] = {};
#pragma unroll
    for (int ks = 0; ks < DEC_KS; ks++) {
        const aot_u16 *const at = tile + j * DEC_P + hw + ks * S::K;
        aot_u32 x[S::A / 2], xt[2][S::B / 2];
#pragma unroll
        for (int i = 0; i < S::A / 2; i++) x[i] = *(const aot_u32 *)(at + S::a_row(lane, 2 * i) * DEC_ROW + S::a_k(lane, 2 * i));
#pragma unroll
        for (int n = 0; n < 2; n++)
#pragma unroll
            for (int i = 0; i < S::B / 2; i++)
                xt[n][i] = *(const aot_u32 *)(at + (n * S::N + S::b_col(lane, 2 * i)) * DEC_ROW + S::b_k(lane, 2 * i));
#pragma unroll
        for (int n = 0; n < 3; n++) {
            aot_u32 hi[2], lo[2];
#pragma unroll
            for (int p = 0; p < 2; p++) {
                const aot_f32x2 v = f[n][ks][p];
                hi[p] = aot_pack2_16(v.v[0], v.v[1], 0);
                lo[p] = aot_pack2_16(v.v[0] - lo_f32(hi[p]), v.v[1] - hi_f32(hi[p]), 0);
            }
            aot_mma_bf16_x2(S(), acc[n], x, hi), aot_mma_bf16_x2(S(), acc[n], x, lo);
        }
        aot_mma_bf16_x2(S(), gram[0], x, xt[0]), aot_mma_bf16_x2(S(), gram[1], x, xt[1]); /* squares: X X^T's diagonal */
    }
    float(*const rw)[25] = (float(*)[25])(red + w * DEC_T * 25);
#pragma unroll
    for (int n = 0; n < 3; n++)
#pragma unroll
        for (int i = 0; i < S::C; i++) rw[S::c_row(lane, i)][n * S::N + S::c_col(lane, i)] = acc[n][i];
#pragma unroll
    for (int n = 0; n < 2; n++)
#pragma unroll
        for (int i = 0; i < S::C; i++)
            if (S::c_row(lane, i) == n * S::N + S::c_col(lane, i)) rw[S::c_row(lane, i)][AOT_MHC_MIX] = gram[n][i];
    aot_sync_block();
    const int rows = a.tokens - t0 < DEC_T ? a.tokens - t0 : DEC_T;
    for (int e = tid; e < rows * 25; e += AOT_MHC_BLOCK) {
        const int t = e / 25, o = e % 25;
        float s = 0.0f;
#pragma unroll
        for (int ww = 0; ww < DEC_WAVES; ww++) s += red[(ww * DEC_T + t) * 25 + o];
        const aot_i64 at = (aot_i64)b * a.tokens + t0 + t;
        if (o < AOT_MHC_MIX) a.mix[at * AOT_MHC_MIX + o] = s;
        else a.sqrsum[at] = s;
    }
}

#define MHC_DECODE(name, kargs, post, delayed)                                                 \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void name(kargs a)                             \
    {                                                                                          \
        decode_body<post, delayed>(a);                                                         \
    }                                                                                          \
    AOT_EMU_ENTRY(name, kargs)

AOT_MHC_DECODE_VARIANTS(MHC_DECODE)
#endif
