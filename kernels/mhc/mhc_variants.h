/* mhc_variants.h : every kernel of mhc.hip; see kernels/include/aot_variants.h. */
#ifndef AOT_MHC_VARIANTS_H
#define AOT_MHC_VARIANTS_H

/* X(name, kargs, streams, terms): the projection on matrix fragments; streams of its input (4,
 * or 1 with broadcast), terms: reads fn's bf16 terms made by mhc_fn_terms */
#define AOT_MHC_GEMM_VARIANTS(X)                                                                \
    X(mhc_gemm_n4, aot_mhc_gemm_kargs, AOT_MHC_N, false)                                        \
    X(mhc_gemm_n1, aot_mhc_gemm_kargs, 1, false)                                                \
    X(mhc_gemm_n4_terms, aot_mhc_gemm_kargs, AOT_MHC_N, true)                                   \
    X(mhc_gemm_n1_terms, aot_mhc_gemm_kargs, 1, true)

/* X(name, kargs, broadcast, norm, delayed): the pre kernel; delayed: DeepSeek-V4.1's, whose
 * collapse takes the previous boundary's pre and which stores its own */
#define AOT_MHC_PRE_VARIANTS(X)                                                                 \
    X(mhc_pre, aot_mhc_pre_kargs, false, false, false)                                          \
    X(mhc_pre_norm, aot_mhc_pre_kargs, false, true, false)                                      \
    X(mhc_pre_broadcast, aot_mhc_pre_kargs, true, false, false)                                 \
    X(mhc_pre_broadcast_norm, aot_mhc_pre_kargs, true, true, false)                             \
    X(mhc_pre_delayed, aot_mhc_pre_kargs, false, false, true)                                   \
    X(mhc_pre_delayed_norm, aot_mhc_pre_kargs, false, true, true)

/* X(name, kargs, rounded): the post-mix and projection in one kernel, for few tokens; rounded:
 * the projection reads the new residual rounded to bf16, as stored (the delayed op), else
 * the fp32 value (fused_post_pre) */
#define AOT_MHC_FUSED_VARIANTS(X)                                                               \
    X(mhc_gemm_fused, aot_mhc_gemm_kargs, false)                                                \
    X(mhc_gemm_fused_bf16, aot_mhc_gemm_kargs, true)

/* X(name, kargs): kernels of one form each */
#define AOT_MHC_SINGLE_VARIANTS(X)                                                              \
    X(mhc_fn_terms, aot_mhc_gemm_kargs)                                                         \
    X(mhc_post, aot_mhc_post_kargs)                                                             \
    X(mhc_head, aot_mhc_head_kargs)

/* X(name, kargs, hidden, slots, post, lo, from): the one-pass pre on clusters at one hidden
 * size, with `slots` tiles in its ring (as many as fit in 227 KiB of shared memory); post: the
 * previous sublayer's post-mix first (fused_post_pre_delayed); lo: fn's low bf16 term in shared
 * memory instead of registers (the product waves' registers hold 12 (C / 512) words of fn with
 * both terms: 168 at C = 7168, too many; at 5120 with post the mix waves got 72 registers beside
 * the product waves' 184 and spilled, 275 us on the H100 at T = 4096). None with post at 7168:
 * x's buffers do not fit beside the ring. from: the fewest tiles of AOT_MHC_CL_TOKENS tokens a
 * cluster (of those that fit at once) it serves; with fewer, the lo variants' longer set-up
 * (fn's slice through the ring in rounds) made two passes (post, then the one pass, for the
 * post variant) faster on the H100. */
#define AOT_MHC_CLUSTER_VARIANTS(X)                                                             \
    X(mhc_pre_cluster_c4096, aot_mhc_cluster_kargs, 4096, 6, false, false, 0)                   \
    X(mhc_pre_cluster_c5120, aot_mhc_cluster_kargs, 5120, 4, false, false, 0)                   \
    X(mhc_pre_cluster_c7168, aot_mhc_cluster_kargs, 7168, 2, false, true, 3)                    \
    X(mhc_post_pre_cluster_c4096, aot_mhc_cluster_kargs, 4096, 5, true, false, 0)               \
    X(mhc_post_pre_cluster_c5120, aot_mhc_cluster_kargs, 5120, 2, true, true, 27)

/* X(name, kargs, post, delayed): the decode kernel (up to AOT_MHC_DEC_TOKENS tokens), the
 * projection on every multiprocessor before the pre kernel; delayed: it also makes
 * layer_input from pre_in; post: first the previous sublayer's post-mix */
#define AOT_MHC_DECODE_VARIANTS(X)                                                              \
    X(mhc_decode, aot_mhc_decode_kargs, false, false)                                           \
    X(mhc_decode_delayed, aot_mhc_decode_kargs, false, true)                                    \
    X(mhc_decode_post_delayed, aot_mhc_decode_kargs, true, true)

/* built only where AOT_PIPELINES is (sm_90a; the emulator at wave 32) */
#define AOT_MHC_PIPELINE_VARIANTS(X) AOT_MHC_CLUSTER_VARIANTS(X) AOT_MHC_DECODE_VARIANTS(X)

/* every kernel every target has */
#define AOT_MHC_VARIANTS(X)                                                                     \
    AOT_MHC_GEMM_VARIANTS(X) AOT_MHC_PRE_VARIANTS(X) AOT_MHC_FUSED_VARIANTS(X) AOT_MHC_SINGLE_VARIANTS(X)

#endif
