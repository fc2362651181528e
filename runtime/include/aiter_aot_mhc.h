/*
 * aiter_aot_mhc.h : mHC (manifold-constrained hyper-connections, DeepSeek-V4) with n = 4 streams.
 * Included by aiter_aot.h; self-contained, so it may also be included alone. The residual state
 * is n streams of C values a token, residual[tokens][4][C] in bf16. Per token t, with
 * x = residual[t] (n*C values) and fn an fp32 [24][n*C] matrix (as the TileLang kernels of
 * DeepSeek-V4 define it):
 *   mix  = (x . fn^T) * rsqrt(sum x^2 / (n*C) + rms_eps)                      24 logits
 *   pre  = sigmoid(mix[0:4]  * scale[0] + base[0:4])  + pre_eps
 *   post = sigmoid(mix[4:8]  * scale[1] + base[4:8])  * post_mult
 *   comb = Sinkhorn(mix[8:24] * scale[2] + base[8:24]) as 4x4, row-major [j][k]: row softmax
 *          + eps, a column normalisation, then (iters - 1) row and column ones, eps inside
 *          every division
 *   layer_input[h] = bf16(sum_j pre[j] * residual[j][h])
 * and after the sublayer (its output y[C]) the post-mix, comb transposed applied to the streams:
 *   out[k][h] = bf16(post[k] * y[h] + sum_j comb[j][k] * residual[j][h])
 * Tensors are contiguous; bf16 tensors are passed as their 16-bit patterns. C ("hidden") is a
 * multiple of 256 up to 16384; 0 <= tokens <= 2^24; hc_mult must be 4 (at 0 tokens an op checks
 * hc_mult, tokens and hidden only, launches nothing and returns AITER_AOT_STATUS_OK: an empty
 * batch's tensors may have NULL data). fp32 tensors are 4-byte
 * aligned, bf16 tensors 16-byte aligned (head's 2-byte). All arithmetic is fp32 (no tf32), but
 * for the one case pre_full states below. A bad argument returns
 * AITER_AOT_STATUS_INVALID_ARGUMENT, launches nothing, and aiter_aot_last_error() names the
 * argument and its accepted range. docs/semantics.md has the same definitions with their
 * origin and the tests' tolerances.
 */
#ifndef AITER_AOT_MHC_H_7C19E2
#define AITER_AOT_MHC_H_7C19E2

#include <stddef.h> /* size_t */
#include <stdint.h> /* int32_t */

#include "aiter_aot_status.h" /* aiter_aot_status */

#ifndef AITER_AOT_API /* as aiter_aot.h defines it, for a program that includes this header alone */
#if defined(__GNUC__)
#define AITER_AOT_API __attribute__((visibility("default")))
#else
#define AITER_AOT_API
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Parameters of the coefficients; DeepSeek-V4 uses 1e-6, 1e-6, 1e-6, 2.0, 20 and its
 * rms_norm_eps (1e-6) for norm_eps. */
typedef struct {
    float rms_eps, pre_eps, sinkhorn_eps, post_mult;
    int32_t sinkhorn_iters;        /* 1..10000 */
    float norm_eps;                /* with norm_weight only */
} aiter_aot_mhc_params;

/* ------------------------------------------------------------------------------------------
 * prenorm_gemm: the projection as split-K partials.
 *   mix[s, t, o] + ... over s = residual[t] . fn[o],  sqrsum[s, t] + ... over s = sum x^2
 * broadcast != 0: residual is [tokens, C] (the first layer's input) and fn is [24, C].
 * splits: 1..min(128, C/16); aiter_aot_mhc_splits() gives the one pre_full uses.
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;             /* sizeof(aiter_aot_mhc_prenorm_gemm_args) */
    int32_t hc_mult;         /* streams n: must be 4 */
    const void *residual;    /* bf16 [tokens, 4, C], or [tokens, C] with broadcast */
    const float *fn;         /* [24, 4*C], or [24, C] with broadcast */
    float *mix;              /* [splits, tokens, 24] */
    float *sqrsum;           /* [splits, tokens] */
    int32_t tokens, hidden, splits, broadcast;
} aiter_aot_mhc_prenorm_gemm_args;

/*! aiter_aot_mhc_prenorm_gemm() :
 *  @return AITER_AOT_STATUS_OK, or a status and aiter_aot_last_error(); nothing is launched on
 *          an invalid argument. (Every op below returns the same way.) */
AITER_AOT_API aiter_aot_status aiter_aot_mhc_prenorm_gemm(const aiter_aot_mhc_prenorm_gemm_args *args,
                                                          void *stream);

/*! aiter_aot_mhc_splits() :
 *  The split count pre_full picks for this shape on the current device (from its number of
 *  multiprocessors / compute units). */
AITER_AOT_API aiter_aot_status aiter_aot_mhc_splits(int32_t tokens, int32_t hidden, int32_t *splits);

/* ------------------------------------------------------------------------------------------
 * pre: reduces the partials and computes post, comb and layer_input (the math above).
 * norm_weight != NULL fuses the sublayer's RMSNorm:
 *   u = sum_j pre[j] residual[j][h] (fp32),  r = rsqrt(sum_h u^2 / C + norm_eps),
 *   layer_input[h] = bf16(bf16(u) * r * norm_weight[h])   (squares of the fp32 u, as the
 *   TileLang kernel does; a reference that squares bf16(u) differs by about one bf16 ulp).
 * broadcast != 0 (first layer): residual is [tokens, C], every stream is that row, the RMS
 * divides by C, and residual_out [tokens, 4, C] receives the expanded copy.
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                 /* sizeof(aiter_aot_mhc_pre_args) */
    int32_t hc_mult;             /* streams n: must be 4 */
    const float *mix, *sqrsum;   /* partials from prenorm_gemm: [splits, tokens, 24], [splits, tokens] */
    const float *scale;          /* [3]: alpha_pre, alpha_post, alpha_res */
    const float *base;           /* [24] */
    const void *residual;        /* bf16 [tokens, 4, C], or [tokens, C] with broadcast */
    const void *norm_weight;     /* bf16 [C], or NULL */
    float *post;                 /* [tokens, 4] */
    float *comb;                 /* [tokens, 4, 4] */
    void *layer_input;           /* bf16 [tokens, C] */
    void *residual_out;          /* bf16 [tokens, 4, C]; broadcast only, else NULL */
    int32_t tokens, hidden, splits, broadcast;
    aiter_aot_mhc_params params;
} aiter_aot_mhc_pre_args;

AITER_AOT_API aiter_aot_status aiter_aot_mhc_pre(const aiter_aot_mhc_pre_args *args, void *stream);

/* ------------------------------------------------------------------------------------------
 * pre_full: prenorm_gemm with aiter_aot_mhc_splits(), then pre. The partials go to workspace,
 * at least aiter_aot_mhc_workspace_size(tokens, hidden) bytes, 4-byte aligned; from 1024 tokens
 * so do fn's bf16 terms (fn split once per call rather than once per block of tokens).
 * On sm_90a without norm_weight or broadcast: up to 64 tokens (hidden up to 8192, fn 8-byte
 * aligned) a decode kernel makes the projection on every multiprocessor and the pre kernel
 * follows (H100, one token: 7.7 us against 9.6 before it); beyond, at hidden = 4096, 5120 or
 * 7168 with fn 16-byte aligned, one kernel on thread-block clusters does it all and reads the
 * residual once (workspace then unused; H100, T = 4096: 67.5 us at C = 4096, 81.7 against 146.4
 * for two passes at 5120, 135.9 against 198.5 at 7168; docs/performance.md). At 7168 that
 * kernel serves from 3 tiles of 16 tokens a cluster (about 400 tokens on an H100; two passes
 * were faster below). Other cases take two passes. The decode and one-pass projections carry
 * fn as two bf16 terms, 16 bits of mantissa where the others carry all 24, with fp32 sums (post
 * and comb came within 1e-6 relative of the fp32 path's in the design's first measurement; the
 * tests hold every path to 1e-4 of an fp64 reference).
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                 /* sizeof(aiter_aot_mhc_pre_full_args) */
    int32_t hc_mult;             /* streams n: must be 4 */
    const void *residual;        /* bf16 [tokens, 4, C], or [tokens, C] with broadcast */
    const float *fn;             /* [24, 4*C], or [24, C] with broadcast */
    const float *scale, *base;   /* [3], [24] */
    const void *norm_weight;     /* bf16 [C], or NULL */
    float *post, *comb;          /* [tokens, 4], [tokens, 4, 4] */
    void *layer_input;           /* bf16 [tokens, C] */
    void *residual_out;          /* broadcast only: bf16 [tokens, 4, C] */
    void *workspace;
    size_t workspace_size;
    int32_t tokens, hidden, broadcast, reserved;
    aiter_aot_mhc_params params;
} aiter_aot_mhc_pre_full_args;

AITER_AOT_API aiter_aot_status aiter_aot_mhc_pre_full(const aiter_aot_mhc_pre_full_args *args, void *stream);

/*! aiter_aot_mhc_workspace_size() : bytes of workspace pre_full needs (0 for an invalid shape). */
AITER_AOT_API size_t aiter_aot_mhc_workspace_size(int32_t tokens, int32_t hidden);

/* ------------------------------------------------------------------------------------------
 * post: out[t][k][h] = bf16(post[t][k] * x[t][h] + sum_j comb[t][j][k] * residual[t][j][h])
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                 /* sizeof(aiter_aot_mhc_post_args) */
    int32_t hc_mult;             /* streams n: must be 4 */
    const float *comb;           /* [tokens, 4, 4] */
    const float *post;           /* [tokens, 4] */
    const void *residual;        /* bf16 [tokens, 4, C] */
    const void *x;               /* bf16 [tokens, C]: the sublayer's output */
    void *out;                   /* bf16 [tokens, 4, C]; may not overlap residual */
    int32_t tokens, hidden;
} aiter_aot_mhc_post_args;

AITER_AOT_API aiter_aot_status aiter_aot_mhc_post(const aiter_aot_mhc_post_args *args, void *stream);

/* ------------------------------------------------------------------------------------------
 * fused_post_pre: post, and the next projection's partials:
 *   v[k][h] = post[k] x[h] + sum_j comb[j][k] residual[j][h];  residual_out = bf16(v);
 *   mix[s, t, o], sqrsum[s, t] as prenorm_gemm computes them, from
 *     tokens <= 16: v itself, fp32 and unrounded, in the same kernel;
 *     tokens > 16:  residual_out as stored (post, then prenorm_gemm on it, as the reference's
 *                   wrapper does there; residual, x and residual_out 16-byte aligned).
 * Then call aiter_aot_mhc_pre on residual_out with the same splits. From about 1024 tokens
 * post and then pre_full are faster: pre_full makes fn's bf16 terms once for all token blocks
 * (H200, T = 4096, C = 4096: 161 against 169 us for both; docs/performance.md).
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                 /* sizeof(aiter_aot_mhc_fused_post_pre_args) */
    int32_t hc_mult;             /* streams n: must be 4 */
    const float *comb, *post;    /* the previous sublayer's: [tokens, 4, 4], [tokens, 4] */
    const void *residual;        /* bf16 [tokens, 4, C] */
    const void *x;               /* bf16 [tokens, C] */
    const float *fn;             /* [24, 4*C] */
    void *residual_out;          /* bf16 [tokens, 4, C]; may not overlap residual */
    float *mix, *sqrsum;         /* [splits, tokens, 24], [splits, tokens] */
    int32_t tokens, hidden, splits, reserved;
} aiter_aot_mhc_fused_post_pre_args;

AITER_AOT_API aiter_aot_status aiter_aot_mhc_fused_post_pre(const aiter_aot_mhc_fused_post_pre_args *args,
                                                            void *stream);

/* ------------------------------------------------------------------------------------------
 * pre_delayed: DeepSeek-V4.1's pre block, whose collapse uses the previous boundary's pre and
 * which hands its own pre on to the next boundary. Per token, X the projection input of K
 * values (residual[t] flattened, K = 4C; or the row of x, K = x_width):
 *   mix  = (X . fn^T) * rsqrt(sum X^2 / K + rms_eps)
 *   next_pre_mix = sigmoid(mix[0:4] * scale[0] + base[0:4]) + pre_eps         (returned)
 *   post, comb as pre computes them
 *   u[h] = sum_j pre_mix[j] residual[j][h] (fp32, streams in order), or residual[0][h]
 *          exactly when pre_mix is NULL
 *   layer_input[h] = bf16(u[h]), or with norm_weight
 *   layer_input[h] = bf16(bf16(u) * r * norm_weight[h]), r = rsqrt(sum_h bf16(u)^2 / C + norm_eps)
 *          (the squares of the bf16 collapse, as the delayed TileLang and AITER kernels take
 *          them; pre's norm squares the fp32 u).
 * Workspace: at least aiter_aot_mhc_workspace_size(tokens, hidden) bytes, 4-byte aligned. Without
 * x and norm_weight, on sm_90a: up to 64 tokens (hidden up to 8192, fn 8-byte aligned) the decode
 * kernel makes the projection's partials (in workspace) and layer_input, since the collapse
 * needs no projection result, and the pre kernel the coefficients; beyond, at hidden = 4096, 5120
 * or 7168 (fn 16-byte aligned; 7168 as pre_full's), pre_full's one-pass kernel (workspace
 * unused). Else two passes:
 * the projection as prenorm_gemm (split-K partials in workspace), then one block a token. All bf16 tensors 16-byte aligned. pre_mix is read from device memory and not checked.
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                 /* sizeof(aiter_aot_mhc_pre_delayed_args) */
    int32_t hc_mult;             /* streams n: must be 4 */
    const void *residual;        /* bf16 [tokens, 4, C] */
    const void *x;               /* bf16 [tokens, x_width]: the projection input instead of the
                                  * residual (the first layer's [tokens, C] embedding), or NULL */
    const float *fn;             /* [24, K]: K = 4*C, or x_width with x */
    const float *scale, *base;   /* [3], [24] */
    const float *pre_mix;        /* [tokens, 4]: the previous boundary's next_pre_mix, or NULL */
    const void *norm_weight;     /* bf16 [C], or NULL */
    float *post, *comb;          /* [tokens, 4], [tokens, 4, 4] */
    void *layer_input;           /* bf16 [tokens, C] */
    float *next_pre_mix;         /* [tokens, 4]; may not overlap pre_mix */
    void *workspace;
    size_t workspace_size;
    int32_t tokens, hidden;
    int32_t x_width;             /* with x: C or 4*C; without: 0 */
    int32_t reserved;            /* 0 */
    aiter_aot_mhc_params params;
} aiter_aot_mhc_pre_delayed_args;

AITER_AOT_API aiter_aot_status aiter_aot_mhc_pre_delayed(const aiter_aot_mhc_pre_delayed_args *args, void *stream);

/* ------------------------------------------------------------------------------------------
 * fused_post_pre_delayed: the previous sublayer's post-mix, then pre_delayed on its result:
 *   v[k][h] = post_in[k] x[h] + sum_j comb_in[j][k] residual[j][h] (fp32);  residual_out = bf16(v)
 *   then pre_delayed with X = residual_out as stored (K = 4C) and the collapse over it, and
 *   aux[h] = bf16((residual_out[0][h] + ... + residual_out[3][h]) / 4) when aux is given.
 * The projection reads bf16(v) at every token count (AITER's seam does; TileLang's fused
 * kernel projects the fp32 v up to 16 tokens: docs/semantics.md says why this op does not).
 * Without norm_weight, on sm_90a: up to 64 tokens (hidden up to 8192, fn 8-byte aligned) the
 * decode kernel makes the post-mix, its stores, layer_input and the projection's partials, and
 * the pre kernel the coefficients; beyond, at hidden = 4096 (and at 5120 from 27 tiles of 16
 * tokens a cluster, about 3500 tokens on an H100) one kernel does it all, the post-mix inside
 * pre_delayed's one pass (H100, T = 4096, C = 4096: 145 us, 78 % of copy bandwidth, against 229
 * for three passes); otherwise, without aux, post and then pre_delayed's one pass where it
 * serves.
 * Else, up to 16 tokens the post-mix and the projection are one kernel, beyond post then the
 * projection; then one block a token. Workspace as pre_delayed's; all bf16 tensors 16-byte
 * aligned; residual_out may not overlap residual.
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                 /* sizeof(aiter_aot_mhc_fused_post_pre_delayed_args) */
    int32_t hc_mult;             /* streams n: must be 4 */
    const void *x;               /* bf16 [tokens, C]: the previous sublayer's output */
    const void *residual;        /* bf16 [tokens, 4, C] */
    const float *post_in;        /* [tokens, 4]: the previous sublayer's post */
    const float *comb_in;        /* [tokens, 4, 4]: the previous sublayer's comb */
    const float *fn;             /* [24, 4*C] */
    const float *scale, *base;   /* [3], [24] */
    const float *pre_mix;        /* [tokens, 4]: the previous boundary's next_pre_mix, or NULL */
    const void *norm_weight;     /* bf16 [C], or NULL */
    void *residual_out;          /* bf16 [tokens, 4, C] */
    float *post, *comb;          /* [tokens, 4], [tokens, 4, 4] */
    void *layer_input;           /* bf16 [tokens, C] */
    float *next_pre_mix;         /* [tokens, 4]; may not overlap pre_mix */
    void *aux;                   /* bf16 [tokens, C]: the mean of residual_out's streams, or NULL */
    void *workspace;
    size_t workspace_size;
    int32_t tokens, hidden;
    aiter_aot_mhc_params params;
} aiter_aot_mhc_fused_post_pre_delayed_args;

AITER_AOT_API aiter_aot_status aiter_aot_mhc_fused_post_pre_delayed(const aiter_aot_mhc_fused_post_pre_delayed_args *args,
                                                                    void *stream);

/* ------------------------------------------------------------------------------------------
 * head: the collapse before the LM head (no Sinkhorn, no post):
 *   pre[m] = sigmoid((residual[t] . fn[m]) * rsqrt(sum x^2/(4C) + rms_eps) * scale[0] + base[m]) + eps
 *   out[t][h] = bf16(sum_m pre[m] residual[t][m][h])
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                 /* sizeof(aiter_aot_mhc_head_args) */
    int32_t hc_mult;             /* streams n: must be 4 */
    const void *residual;        /* bf16 [tokens, 4, C] */
    const float *fn;             /* [4, 4*C] */
    const float *scale;          /* [1] */
    const float *base;           /* [4] */
    void *out;                   /* bf16 [tokens, C] */
    int32_t tokens, hidden;
    float rms_eps, eps;
} aiter_aot_mhc_head_args;

AITER_AOT_API aiter_aot_status aiter_aot_mhc_head(const aiter_aot_mhc_head_args *args, void *stream);

#ifdef __cplusplus
}
#endif

#endif
