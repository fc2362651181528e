/* mhc.hip : manifold-constrained hyper-connections (DeepSeek-V4's mHC, n = 4 streams), the
 * math of ../shared/reference/mhc.md; the op contracts are in runtime/include/aiter_aot_mhc.h.
 *
 * mhc_gemm_n4/n1 the projection x . fn^T and sum x^2 as split-K partials, on the matrix
 *                units through the fragment API: x is bf16 already, and fn (fp32) is split
 *                into three bf16 terms hi + mid + lo that carry all 24 bits of its mantissa,
 *                so the products are those of fp32 arithmetic and the sums are fp32 (no
 *                tf32). Each wave owns 32 tokens (tiles of S::M); a block walks one split's
 *                range of k in chunks of 64: the block's residual rows arrive in shared
 *                memory by asynchronous copies several chunks ahead, the chunk's fn terms
 *                are staged beside them. n1: the first layer's un-expanded [T, C] input.
 * mhc_gemm_fused post-mix of the previous sublayer and the projection of its fp32 result, for
 *                few tokens (4 per wave, fn values from shared memory, plain fp32 FMA).
 * mhc_pre_*      one block per token: reduce the partials, RMS scale, pre, the pre-mix over
 *                the hidden size (16-byte accesses), optionally the sublayer's RMSNorm; then
 *                post and comb (Sinkhorn on 16 lanes of wave 0, rows and columns by shuffles)
 *                last, so the other waves never wait for it.
 * mhc_post       new[k][h] = post[k] y[h] + sum_j comb[j][k] res[j][h], 8 positions a thread.
 * mhc_head       one block per token: the 4 projections and sum x^2, pre, then the collapse. */
#include "aot_device.h"
#include "mhc_kargs.h"

#define N_ AOT_MHC_N
#define HC AOT_MHC_GEMM_CHUNK
#define R_ AOT_MHC_GEMM_TOKENS

/* ---- the fused post-mix + projection (few tokens; fp32 FMA) ---- */

/* The fused projection's input: the previous sublayer's post-mix of token t at position h,
 * new[k] = post[k] y + sum_j comb[j][k] residual[j] in fp32 (stored rounded to bf16); zeros
 * past the last token. */
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
        x[k] = v;
        a.residual_out[row + k * C] = aot_f32_to_bf16(v);
    }
}

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void mhc_gemm_fused(aot_mhc_gemm_kargs a)
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
                post_mix(a, t0 + r, h0 + hh, x);
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
AOT_EMU_ENTRY(mhc_gemm_fused, aot_mhc_gemm_kargs)

/* ---- projection on the matrix units ---- */

#if defined(AOT_MMA_SYNC)
typedef aot_mma_m16n8k16 mhc_mma;
#elif defined(AOT_MMA_MFMA_GFX950)
typedef aot_mfma_16x16x32 mhc_mma;
#else
typedef aot_mfma_16x16x16 mhc_mma;
#endif

#define KC AOT_MHC_TC_CHUNK
#define KCP (KC + 2) /* row stride of the staged terms (33 words): B-fragment reads of the 8
                        * columns x 4 lane groups of mma.sync hit 32 distinct banks */

/* fn[o][k0 .. k0+KC) is staged in shared memory as three bf16 terms [term][o][k] that carry
 * all 24 bits of each fp32 mantissa (outputs padded with zeros to OP). Each thread moves
 * FPT values: loaded to registers one chunk ahead, stored (split) after the chunk's matrix work. */
template <int OP>
struct fn_stage {
    enum { FPT = OP * KC / AOT_MHC_BLOCK };
    float v[FPT];
};

template <int OP>
AOT_DEV void fn_load(const aot_mhc_gemm_kargs &a, aot_i64 K, aot_i64 k0, fn_stage<OP> &r)
{
#pragma unroll
    for (int j = 0; j < fn_stage<OP>::FPT; j++) {
        const int i = aot_thread_x() + j * AOT_MHC_BLOCK, o = i / KC;
        r.v[j] = o < AOT_MHC_MIX ? a.fn[o * K + k0 + i % KC] : 0.0f;
    }
}

template <int OP>
AOT_DEV void fn_store(const fn_stage<OP> &r, aot_u16 *fs)
{
#pragma unroll
    for (int j = 0; j < fn_stage<OP>::FPT; j++) {
        const int i = aot_thread_x() + j * AOT_MHC_BLOCK, o = i / KC, k = i % KC;
        const aot_u16 hi = aot_f32_to_bf16(r.v[j]);
        const float r1 = r.v[j] - aot_bf16_to_f32(hi); /* exact in fp32 */
        const aot_u16 mid = aot_f32_to_bf16(r1);
        fs[o * KCP + k] = hi;
        fs[(OP + o) * KCP + k] = mid;
        fs[(2 * OP + o) * KCP + k] = aot_f32_to_bf16(r1 - aot_bf16_to_f32(mid));
    }
}

/* Where k goes: the lanes of group g own the contiguous range [g * KC/G, (g+1) * KC/G) of the
 * chunk and take K/G of it per step, so A is read with 16-byte loads (aot_device.h's lane
 * groups: A and B agree on the permutation, so the sums are unchanged). */
template <class S>
AOT_DEV int phys_k(int group, int step, int rank) { return group * (KC / S::G) + step * (S::K / S::G) + rank; }

#define RS AOT_MHC_TC_ROW

/* The tile row that a lane's A row slot r holds. */
template <class S>
AOT_DEV int a_slot_row(int lane, int r) { return S::a_row(lane, 0) + r * (S::M / S::A_ROWS); }

/* Copies chunk k0 of the block's TB token rows (from token tb0) into a stage of shared memory,
 * [TB][RS]. Rows past the last token are left as they are: a row of A only reaches its own row
 * of the products and of the squares, and those are never stored. */
template <int TB>
AOT_DEV void stage_issue(const aot_mhc_gemm_kargs &a, aot_i64 K, aot_i64 k0, int tb0, aot_u16 *stage)
{
    constexpr int SEGS = KC / 8; /* 16-byte pieces per row */
#pragma unroll
    for (int j = 0; j < TB * SEGS / AOT_MHC_BLOCK; j++) {
        const int p = aot_thread_x() + j * AOT_MHC_BLOCK, row = p / SEGS, seg = p % SEGS, t = tb0 + row;
        if (t < a.tokens) aot_copy16_async(stage + row * RS + seg * 8, a.residual + (aot_i64)t * K + k0 + seg * 8, true);
    }
}

/* The lane's A fragment of tile w at step s, from a staged chunk whose wave rows start at wr0:
 * per row slot, its group's K/G consecutive k (aot_device.h's lane groups). */
template <class S>
AOT_DEV void a_fragment(const aot_u16 *stage, int wr0, int w, int s, aot_u16 (&f)[S::A])
{
    const int lane = aot_lane(), k = phys_k<S>(S::k_group(lane), s, 0);
#pragma unroll
    for (int r = 0; r < S::A_ROWS; r++) {
        const aot_u16 *p = stage + (wr0 + w * S::M + a_slot_row<S>(lane, r)) * RS + k;
        aot_u16 v[S::K / S::G];
#pragma unroll
        for (int q = 0; q < S::K / S::G; q += 2) {
            const aot_u32 pair = aot_load_u16x2(p + q);
            v[q] = (aot_u16)pair, v[q + 1] = (aot_u16)(pair >> 16);
        }
#pragma unroll
        for (int i = 0; i < S::A; i++)
            if (S::a_slot(i) == r) f[i] = v[S::a_rank(i)];
    }
}

/* One chunk's products: per k step, the A fragments (and their squares) against the three fn
 * terms of every output tile. */
template <class S, int TW, int NT, int OP>
AOT_DEV void chunk_mma(const aot_u16 *stage, int wr0, const aot_u16 *terms, float (&acc)[TW][NT][S::C],
                       float (&sqa)[TW][S::A_ROWS])
{
    const int lane = aot_lane();
#pragma unroll
    for (int s = 0; s < KC / S::K; s++) {
        aot_u16 af[TW][S::A];
#pragma unroll
        for (int w = 0; w < TW; w++) {
            a_fragment<S>(stage, wr0, w, s, af[w]);
#pragma unroll
            for (int i = 0; i < S::A; i++) sqa[w][S::a_slot(i)] += aot_bf16_to_f32(af[w][i]) * aot_bf16_to_f32(af[w][i]);
        }
#pragma unroll
        for (int term = 0; term < 3; term++)
#pragma unroll
            for (int n = 0; n < NT; n++) {
                aot_u16 bf[S::B];
#pragma unroll
                for (int i = 0; i < S::B; i += 2) {
                    const aot_u32 pair = aot_load_u16x2(terms + (term * OP + n * S::N + S::b_col(lane, i)) * KCP +
                                                        phys_k<S>(S::k_group(lane), s, S::b_rank(i)));
                    bf[i] = (aot_u16)pair, bf[i + 1] = (aot_u16)(pair >> 16);
                }
#pragma unroll
                for (int w = 0; w < TW; w++) aot_mma_bf16(S(), acc[w][n], af[w], bf);
            }
    }
}

/* TW: tiles of S::M tokens per wave (each staged fn chunk feeds TW times the matrix work). The
 * block's residual rows come through STAGES chunks of shared memory filled by asynchronous
 * copies (STAGES - 1 in flight while one is multiplied), so many loads are in flight without
 * holding registers; the fn terms are double-buffered. One barrier per chunk. */
template <int NJ, int TW>
AOT_DEV void gemm_tc_body(const aot_mhc_gemm_kargs &a)
{
    typedef mhc_mma S;
    static_assert(S::M * TW == AOT_MHC_TC_TOKENS, "the runtime sizes the grid with AOT_MHC_TC_TOKENS");
    constexpr int WAVES = AOT_MHC_BLOCK / AOT_WAVE, NT = (AOT_MHC_MIX + S::N - 1) / S::N, OP = NT * S::N;
    constexpr int BUF = 3 * OP * KCP; /* u16 per buffer of staged terms */
    constexpr int TB = WAVES * AOT_MHC_TC_TOKENS, STAGES = AOT_MHC_TC_STAGES(AOT_WAVE), STAGE = TB * RS;
    static_assert(AOT_MHC_TC_SHARED(AOT_WAVE) == STAGES * STAGE * 2, "the runtime's dynamic shared size");
    static_assert(STAGE * 2 >= AOT_MHC_BLOCK * S::A_ROWS * 4, "the squares' gather reuses a stage");
    const int tid = aot_thread_x(), lane = aot_lane(), split = aot_block_x() % a.splits;
    const int tb0 = (aot_block_x() / a.splits) * TB, wr0 = (tid / AOT_WAVE) * AOT_MHC_TC_TOKENS, t0 = tb0 + wr0;
    const aot_i64 K = (aot_i64)NJ * a.hidden;
    const int chunks = (int)(K / KC), c_lo = split * chunks / a.splits, c_hi = (split + 1) * chunks / a.splits;
    AOT_SHARED(aot_u32, fs32, BUF); /* two buffers of BUF u16 */
    AOT_SHARED_DYN(aot_u16x8, stage8, STAGES * STAGE / 8);
    aot_u16 *const fs = (aot_u16 *)fs32, *const stages = (aot_u16 *)stage8;
    float acc[TW][NT][S::C], sqa[TW][S::A_ROWS]; /* squares by the lane's row slots */
#pragma unroll
    for (int w = 0; w < TW; w++) {
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) acc[w][n][i] = 0.0f;
#pragma unroll
        for (int r = 0; r < S::A_ROWS; r++) sqa[w][r] = 0.0f;
    }
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (c_lo + s < c_hi) stage_issue<TB>(a, K, (aot_i64)(c_lo + s) * KC, tb0, stages + s * STAGE);
        aot_copy_async_commit(); /* empty groups too: the wait below counts groups */
    }
    fn_stage<OP> fr;
    if (c_lo < c_hi) {
        fn_load<OP>(a, K, (aot_i64)c_lo * KC, fr);
        fn_store<OP>(fr, fs);
    }
    for (int c = c_lo; c < c_hi; c++) {
        const int i = c - c_lo;
        aot_copy_async_wait_prior<STAGES - 2>(); /* this thread's copies of chunk c have landed */
        aot_sync_block(); /* everyone's have; chunk c - 1's stage and fn buffer are free */
        if (c + STAGES - 1 < c_hi)
            stage_issue<TB>(a, K, (aot_i64)(c + STAGES - 1) * KC, tb0, stages + (i + STAGES - 1) % STAGES * STAGE);
        aot_copy_async_commit();
        const bool more = c + 1 < c_hi;
        if (more) fn_load<OP>(a, K, (aot_i64)(c + 1) * KC, fr);
        if (t0 < a.tokens) { /* a wave past the last token has nothing to multiply (decode) */
            chunk_mma<S, TW, NT, OP>(stages + i % STAGES * STAGE, wr0, fs + (i & 1) * BUF, acc, sqa);
        }
        if (more) fn_store<OP>(fr, fs + ((i + 1) & 1) * BUF);
    }
    aot_copy_async_wait_all();
    const aot_i64 base = (aot_i64)split * a.tokens;
#pragma unroll
    for (int w = 0; w < TW; w++)
#pragma unroll
        for (int n = 0; n < NT; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) {
                const int t = t0 + w * S::M + S::c_row(lane, i), o = n * S::N + S::c_col(lane, i);
                if (t < a.tokens && o < AOT_MHC_MIX) a.mix[(base + t) * AOT_MHC_MIX + o] = acc[w][n][i];
            }
    /* sum of squares: each lane's sums per row slot, gathered by row, one tile at a time, in the
     * first stage (free once every wave is past its last chunk) */
    float *const sqs = (float *)stages;
    const float *own = sqs + (tid - lane) * S::A_ROWS;
#pragma unroll
    for (int w = 0; w < TW; w++) {
        aot_sync_block();
#pragma unroll
        for (int r = 0; r < S::A_ROWS; r++) sqs[tid * S::A_ROWS + r] = sqa[w][r];
        aot_sync_block();
        const int t = t0 + w * S::M + lane;
        if (lane < S::M && t < a.tokens) {
            float sum = 0.0f;
            for (int l = 0; l < AOT_WAVE; l++)
                for (int r = 0; r < S::A_ROWS; r++) sum += a_slot_row<S>(l, r) == lane ? own[l * S::A_ROWS + r] : 0.0f;
            a.sqrsum[base + t] = sum;
        }
    }
}

#define MHC_TW (AOT_MHC_TC_TOKENS / mhc_mma::M)
AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void mhc_gemm_n4(aot_mhc_gemm_kargs a) { gemm_tc_body<N_, MHC_TW>(a); }
AOT_EMU_ENTRY(mhc_gemm_n4, aot_mhc_gemm_kargs)
AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void mhc_gemm_n1(aot_mhc_gemm_kargs a) { gemm_tc_body<1, MHC_TW>(a); }
AOT_EMU_ENTRY(mhc_gemm_n1, aot_mhc_gemm_kargs)

/* ---- coefficients ---- */

/* Sinkhorn-Knopp on the 4x4 comb logits z, element e = lane % 16 = row*4 + col, every lane
 * of the wave taking part (lanes 16+ repeat lanes 0..15): row softmax + eps, then columns,
 * then (iters - 1) times rows and columns, eps inside every division. */
AOT_DEV float sinkhorn(float z, int iters, float eps)
{
    float m = aot_fmaxf(z, aot_shfl_xor_f32(z, 1));
    m = aot_fmaxf(m, aot_shfl_xor_f32(m, 2));
    float c = aot_exp_fast(z - m), s = c + aot_shfl_xor_f32(c, 1);
    s += aot_shfl_xor_f32(s, 2);
    c = c / s + eps;
    for (int it = 0; it < iters; it++) {
        if (it > 0) {
            s = c + aot_shfl_xor_f32(c, 1);
            s += aot_shfl_xor_f32(s, 2);
            c = c / (s + eps);
        }
        s = c + aot_shfl_xor_f32(c, 4);
        s += aot_shfl_xor_f32(s, 8);
        c = c / (s + eps);
    }
    return c;
}

/* The 24 mix sums and the sum of squares of token t over the splits, into mix_s[0..24]. Lane e
 * of wave g adds splits g, g + WAVES, ...: the loads are independent, so a decode step's many
 * splits cost a few trips to L2 rather than one per split. */
AOT_DEV void reduce_partials(const aot_mhc_pre_kargs &a, int t, float *mix_s)
{
    constexpr int WAVES = AOT_MHC_BLOCK / AOT_WAVE, V = AOT_MHC_MIX + 1;
    AOT_SHARED(float, part, WAVES * V);
    const int tid = aot_thread_x(), e = aot_lane(), g = tid / AOT_WAVE;
    if (e < V) {
        float s = 0.0f;
#pragma unroll 4
        for (int p = g; p < a.splits; p += WAVES)
            s += e < AOT_MHC_MIX ? a.mix[((aot_i64)p * a.tokens + t) * AOT_MHC_MIX + e] : a.sqrsum[(aot_i64)p * a.tokens + t];
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

template <bool BROADCAST, bool NORM>
AOT_DEV void pre_body(const aot_mhc_pre_kargs &a)
{
    const int t = aot_block_x(), tid = aot_thread_x();
    const aot_i64 C = a.hidden;
    AOT_SHARED(float, pre_s, N_);
    AOT_SHARED(float, mix_s, AOT_MHC_MIX + 1);
    AOT_SHARED(float, scratch, AOT_MHC_BLOCK / AOT_WAVE);
    AOT_SHARED(aot_u16x8, li_s, NORM ? AOT_MHC_MAX_HIDDEN / 8 : 1);
    reduce_partials(a, t, mix_s);
    const float rms = rms_of(a, mix_s, BROADCAST ? 1.0f : (float)N_);
    if (tid < N_) pre_s[tid] = aot_sigmoid(mix_s[tid] * rms * a.scale[0] + a.base[tid]) + a.pre_eps;
    aot_sync_block();
    const float p[N_] = {pre_s[0], pre_s[1], pre_s[2], pre_s[3]};
    float sumsq = 0.0f;
    for (aot_i64 h = tid * 8; h < C; h += AOT_MHC_BLOCK * 8) {
        float u[8];
        collapse8<BROADCAST>(a, t, h, p, u);
        aot_u16x8 o;
#pragma unroll
        for (int i = 0; i < 8; i++) o.v[i] = aot_f32_to_bf16(u[i]), sumsq += u[i] * u[i];
        if (NORM) li_s[h / 8] = o;
        else aot_store_u16x8(a.layer_input + t * C + h, o);
    }
    if (NORM) { /* the sum of squares from the fp32 values, the scale applied to the bf16 ones */
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

#define MHC_PRE(name, broadcast, norm)                                                         \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void name(aot_mhc_pre_kargs a)                 \
    {                                                                                          \
        pre_body<broadcast, norm>(a);                                                          \
    }                                                                                          \
    AOT_EMU_ENTRY(name, aot_mhc_pre_kargs)

MHC_PRE(mhc_pre, false, false)
MHC_PRE(mhc_pre_norm, false, true)
MHC_PRE(mhc_pre_broadcast, true, false)
MHC_PRE(mhc_pre_broadcast_norm, true, true)

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
