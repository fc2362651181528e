/* mhc.hip : manifold-constrained hyper-connections (DeepSeek-V4's mHC, n = 4 streams), the
 * math of ../shared/reference/mhc.md; the op contracts are in runtime/include/aiter_aot_mhc.h.
 *
 * mhc_gemm_*     the projection x . fn^T and sum x^2 as split-K partials. A block owns
 *                (block/AOT_WAVE) * 4 tokens (4 per wave, so each fn value read from shared
 *                memory feeds 4 tokens) and one split's range of hidden positions, walked in
 *                chunks of 64 whose fn columns are staged in shared memory. Variants: 4
 *                streams, 1 stream (the first layer's un-expanded input), and fused (x is the
 *                post-mix of the previous sublayer, computed here in fp32 and stored in bf16).
 * mhc_pre_*      one block per token: reduce the partials, RMS scale, the 24 coefficients
 *                (Sinkhorn on 16 lanes of wave 0, rows and columns by shuffles), then the
 *                pre-mix over the hidden size, optionally with the sublayer's RMSNorm.
 * mhc_post       new[k][h] = post[k] y[h] + sum_j comb[j][k] res[j][h], 4 positions a thread.
 * mhc_head       one block per token: the 4 projections and sum x^2, pre, then the collapse. */
#include "aot_device.h"
#include "mhc_kargs.h"

#define N_ AOT_MHC_N
#define HC AOT_MHC_GEMM_CHUNK
#define R_ AOT_MHC_GEMM_TOKENS

/* ---- projection ---- */

/* The projection's input x[t][j][h] for streams j < NJ (all zero past the last token). */
template <int NJ, bool FUSED>
AOT_DEV void gemm_input(const aot_mhc_gemm_kargs &a, int t, int h, float (&x)[NJ])
{
    if (t >= a.tokens) {
#pragma unroll
        for (int j = 0; j < NJ; j++) x[j] = 0.0f;
        return;
    }
    const aot_i64 C = a.hidden, row = (aot_i64)t * NJ * C + h;
    float r[NJ];
#pragma unroll
    for (int j = 0; j < NJ; j++) r[j] = aot_bf16_to_f32(a.residual[row + j * C]);
    if (!FUSED) {
#pragma unroll
        for (int j = 0; j < NJ; j++) x[j] = r[j];
        return;
    }
    const float y = aot_bf16_to_f32(a.y[(aot_i64)t * C + h]);
    const float *comb = a.comb + t * N_ * N_, *post = a.post + t * N_;
#pragma unroll
    for (int k = 0; k < NJ; k++) {
        float v = post[k] * y;
#pragma unroll
        for (int j = 0; j < NJ; j++) v += comb[j * N_ + k] * r[j];
        x[k] = v;
        a.residual_out[row + k * C] = aot_f32_to_bf16(v);
    }
}

template <int NJ, bool FUSED>
AOT_DEV void gemm_body(const aot_mhc_gemm_kargs &a)
{
    constexpr int WAVES = AOT_MHC_BLOCK / AOT_WAVE, FS = AOT_MHC_MIX * NJ * HC;
    const int tid = aot_thread_x(), lane = aot_lane(), split = aot_block_x() % a.splits;
    const int t0 = (aot_block_x() / a.splits) * WAVES * R_ + (tid / AOT_WAVE) * R_;
    const int chunks = a.hidden / HC, c_lo = split * chunks / a.splits, c_hi = (split + 1) * chunks / a.splits;
    const aot_i64 K = (aot_i64)NJ * a.hidden;
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
            fs[i] = a.fn[(i / (NJ * HC)) * K + ((i / HC) % NJ) * a.hidden + h0 + i % HC];
        aot_sync_block();
        for (int hh = lane; hh < HC; hh += AOT_WAVE) {
#pragma unroll
            for (int r = 0; r < R_; r++) {
                float x[NJ];
                gemm_input<NJ, FUSED>(a, t0 + r, h0 + hh, x);
#pragma unroll
                for (int j = 0; j < NJ; j++) sq[r] += x[j] * x[j];
#pragma unroll
                for (int o = 0; o < AOT_MHC_MIX; o++)
#pragma unroll
                    for (int j = 0; j < NJ; j++) acc[r][o] += fs[(o * NJ + j) * HC + hh] * x[j];
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

#define MHC_GEMM(name, nj, fused)                                                              \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MHC_BLOCK) void name(aot_mhc_gemm_kargs a)                \
    {                                                                                          \
        gemm_body<nj, fused>(a);                                                               \
    }                                                                                          \
    AOT_EMU_ENTRY(name, aot_mhc_gemm_kargs)

MHC_GEMM(mhc_gemm_n4, 4, false)
MHC_GEMM(mhc_gemm_n1, 1, false)
MHC_GEMM(mhc_gemm_fused, 4, true)

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

/* Wave 0 of the block: mix = partial sums * rms, then pre (to shared), post and comb (out). */
AOT_DEV void coefficients(const aot_mhc_pre_kargs &a, int t, float streams, float *pre_s, float *mix_s)
{
    const int tid = aot_thread_x(), lane = aot_lane();
    if (tid <= AOT_MHC_MIX) { /* 24 mix sums and the sum of squares */
        float s = 0.0f;
        for (int p = 0; p < a.splits; p++)
            s += tid < AOT_MHC_MIX ? a.mix[((aot_i64)p * a.tokens + t) * AOT_MHC_MIX + tid] : a.sqrsum[(aot_i64)p * a.tokens + t];
        mix_s[tid] = s;
    }
    aot_sync_block();
    if (tid >= AOT_WAVE) return;
    const float rms = aot_rsqrt_fast(mix_s[AOT_MHC_MIX] / (streams * (float)a.hidden) + a.rms_eps);
    const int e = lane % 16;
    float z = mix_s[2 * N_ + e] * rms * a.scale[2] + a.base[2 * N_ + e];
    float c = sinkhorn(z, a.sinkhorn_iters, a.sinkhorn_eps);
    if (lane < 16) a.comb[(aot_i64)t * 16 + e] = c;
    if (lane < N_) {
        pre_s[lane] = aot_sigmoid(mix_s[lane] * rms * a.scale[0] + a.base[lane]) + a.pre_eps;
        a.post[(aot_i64)t * N_ + lane] =
            aot_sigmoid(mix_s[N_ + lane] * rms * a.scale[1] + a.base[N_ + lane]) * a.post_mult;
    }
}

/* ---- pre: coefficients, then the pre-mix (and the sublayer's RMSNorm) ---- */

template <bool BROADCAST, bool NORM>
AOT_DEV void pre_body(const aot_mhc_pre_kargs &a)
{
    const int t = aot_block_x(), tid = aot_thread_x();
    const aot_i64 C = a.hidden;
    AOT_SHARED(float, pre_s, N_);
    AOT_SHARED(float, mix_s, AOT_MHC_MIX + 1);
    AOT_SHARED(float, scratch, AOT_MHC_BLOCK / AOT_WAVE);
    AOT_SHARED(aot_u16, li_s, NORM ? AOT_MHC_MAX_HIDDEN : 1);
    coefficients(a, t, BROADCAST ? 1.0f : (float)N_, pre_s, mix_s);
    aot_sync_block();
    const float p0 = pre_s[0], p1 = pre_s[1], p2 = pre_s[2], p3 = pre_s[3];
    float sumsq = 0.0f;
    for (aot_i64 h = tid; h < C; h += AOT_MHC_BLOCK) {
        float v;
        if (BROADCAST) {
            const aot_u16 xb = a.residual[t * C + h];
            const float x = aot_bf16_to_f32(xb);
            v = p0 * x + p1 * x + p2 * x + p3 * x;
#pragma unroll
            for (int j = 0; j < N_; j++) a.residual_out[(t * N_ + j) * C + h] = xb;
        } else {
            const aot_u16 *r = a.residual + t * N_ * C + h;
            v = p0 * aot_bf16_to_f32(r[0]) + p1 * aot_bf16_to_f32(r[C]) + p2 * aot_bf16_to_f32(r[2 * C]) +
                p3 * aot_bf16_to_f32(r[3 * C]);
        }
        if (NORM) li_s[h] = aot_f32_to_bf16(v), sumsq += v * v;
        else a.layer_input[t * C + h] = aot_f32_to_bf16(v);
    }
    if (!NORM) return;
    /* RMSNorm: the sum of squares from the fp32 values, the scale applied to the bf16 ones */
    const float inv = aot_rsqrt_fast(aot_block_sum_f32<AOT_MHC_BLOCK>(sumsq, scratch) / (float)C + a.norm_eps);
    for (aot_i64 h = tid; h < C; h += AOT_MHC_BLOCK)
        a.layer_input[t * C + h] =
            aot_f32_to_bf16(aot_bf16_to_f32(li_s[h]) * inv * aot_bf16_to_f32(a.norm_weight[h]));
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
    const int t = aot_block_x() / spans;
    const aot_i64 C = a.hidden, h0 = (aot_i64)(aot_block_x() % spans) * AOT_MHC_POST_SPAN + aot_thread_x() * 4;
    if (h0 >= C) return;
    const float *comb = a.comb + t * 16, *post = a.post + t * N_;
    const aot_u16 *res = a.residual + (aot_i64)t * N_ * C + h0;
    float r[N_][4], y[4];
#pragma unroll
    for (int i = 0; i < 4; i++) {
        y[i] = aot_bf16_to_f32(a.x[(aot_i64)t * C + h0 + i]);
#pragma unroll
        for (int j = 0; j < N_; j++) r[j][i] = aot_bf16_to_f32(res[j * C + i]);
    }
#pragma unroll
    for (int k = 0; k < N_; k++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float v = post[k] * y[i];
#pragma unroll
            for (int j = 0; j < N_; j++) v += comb[j * N_ + k] * r[j][i];
            a.out[((aot_i64)t * N_ + k) * C + h0 + i] = aot_f32_to_bf16(v);
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
