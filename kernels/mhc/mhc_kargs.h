/* mhc_kargs.h : kernel argument structs of the mHC kernels (kernels/mhc/mhc.hip), passed by
 * value, so their kernarg layout is this C layout on host and device alike. n = 4 streams,
 * 24 mix logits per token in the order [pre 4 | post 4 | comb 16 (row-major [j][k])]. */
#ifndef AOT_MHC_KARGS_H
#define AOT_MHC_KARGS_H

#include <stdint.h>

#include "aot_tile_map.h"

#define AOT_MHC_N 4
#define AOT_MHC_MIX 24
#define AOT_MHC_BLOCK 256        /* threads per block of every mHC kernel */
#define AOT_MHC_GEMM_TOKENS 4    /* tokens per wave in the fused projection */
#define AOT_MHC_TC_BLOCK 512     /* threads per block of the matrix-unit projection (4 warp groups on NVIDIA) */
#define AOT_MHC_TC_TOKENS 16     /* its tokens per wave: a warp group multiplies 64-row tiles */
#define AOT_MHC_GEMM_CHUNK 64    /* hidden positions per step of the fused projection; splits come in these */
#define AOT_MHC_MAX_HIDDEN 16384
#define AOT_MHC_POST_SPAN 2048   /* hidden positions per block of mhc_post (8 a thread) */
#define AOT_MHC_TC_CHUNK 64      /* k positions per step of the matrix-unit projection */
/* The matrix-unit projection stages each chunk of its block's residual rows in shared memory
 * (asynchronous copies, AOT_MHC_TC_STAGES chunks in flight or in use) as a swizzled tile
 * beside AOT_MHC_TC_FN_BUFS buffers of fn's three bf16 terms (3 OPN rows: 24 outputs rounded
 * up to the matrix shape's N, 8 on NVIDIA, 16 on AMD); the launch provides them as dynamic
 * shared memory, plus the 1024 bytes of aot_device.h's AOT_TILE_SLACK. gfx942's 64 KiB of LDS
 * holds two stages. LAG: product groups left running into the next chunk (NVIDIA's are
 * asynchronous), which keeps a chunk's buffers one chunk longer. The fn buffers: 2 + LAG where
 * the block splits fn itself; with fn's terms made ahead (mhc_fn_terms) they are copied with
 * each stage, one buffer a stage. */
#define AOT_MHC_TC_STAGES(wave) ((wave) == 64 ? 2 : 4)
#define AOT_MHC_TC_LAG(wave) ((wave) == 64 ? 0 : 1)
#define AOT_MHC_TC_OPN(wave) ((wave) == 64 ? 32 : 24)
#define AOT_MHC_TC_FN_BUFS(wave, terms) ((terms) ? AOT_MHC_TC_STAGES(wave) : 2 + AOT_MHC_TC_LAG(wave))
#define AOT_MHC_TC_SHARED(wave, terms)                                                            \
    (1024 + 2 * (AOT_MHC_TC_FN_BUFS(wave, terms) * 3 * AOT_MHC_TC_OPN(wave) * AOT_MHC_TC_CHUNK +    \
                 AOT_MHC_TC_STAGES(wave) * (AOT_MHC_TC_BLOCK / (wave)) * AOT_MHC_TC_TOKENS * AOT_MHC_TC_CHUNK))
/* Bytes of fn's terms (bf16, 3 OPN rows of k) for a projection of k = streams * hidden, at the
 * larger OPN (AMD's), whatever the device. */
#define AOT_MHC_TERMS_BYTES(k) ((size_t)(k) * 3 * AOT_MHC_TC_OPN(64) * 2)

/* Projection partials: mix[s][t][o] = sum over this split's hidden range of x[t][k] fn[o][k],
 * sqrsum[s][t] = sum of x^2, k = j*hidden + h. x is residual (streams 4, or 1 for the
 * broadcast input) or, fused, the new residual post[j]*y[h] + sum_i comb[i][j]*residual[i][h]
 * in fp32, which is also stored (rounded to bf16) to residual_out. */
typedef struct {
    const uint16_t *residual;   /* bf16 [T][streams][C] */
    const float *fn;            /* [24][streams*C] */
    uint16_t *fn_terms;         /* mhc_fn_terms writes, mhc_gemm_n*_terms read: [k / 64] tiles, 16-byte aligned */
    float *mix;                 /* [S][T][24] */
    float *sqrsum;              /* [S][T] */
    const uint16_t *y;          /* fused: bf16 [T][C] */
    const float *post, *comb;   /* fused: [T][4], [T][4][4] */
    uint16_t *residual_out;     /* fused: bf16 [T][4][C] */
    int32_t tokens, hidden, splits, streams; /* streams: of the projection's input, 4 or 1 */
} aot_mhc_gemm_kargs;

typedef struct {
    const float *mix, *sqrsum;  /* partials [S][T][24], [S][T] */
    const float *scale, *base;  /* [3], [24] */
    const uint16_t *residual;   /* bf16 [T][4][C], or [T][C] broadcast */
    const uint16_t *norm_weight;/* bf16 [C] or NULL */
    float *post, *comb;         /* [T][4], [T][4][4] */
    uint16_t *layer_input;      /* bf16 [T][C] */
    uint16_t *residual_out;     /* broadcast: bf16 [T][4][C] */
    /* the delayed variants: the collapse uses pre_in (the previous boundary's pre; NULL: stream
     * 0 as it is), this boundary's pre goes to pre_out, and aux (or NULL) gets the streams' mean */
    const float *pre_in;        /* [T][4] or NULL */
    float *pre_out;             /* [T][4] */
    uint16_t *aux;              /* bf16 [T][C] or NULL */
    int32_t tokens, hidden, splits, sinkhorn_iters;
    float rms_eps, pre_eps, sinkhorn_eps, post_mult, norm_eps;
    int32_t rms_streams;        /* delayed: the projection input had rms_streams * hidden values */
} aot_mhc_pre_kargs;

typedef struct {
    const float *comb, *post;   /* [T][4][4], [T][4] */
    const uint16_t *residual;   /* bf16 [T][4][C] */
    const uint16_t *x;          /* bf16 [T][C] */
    uint16_t *out;              /* bf16 [T][4][C] */
    int32_t tokens, hidden;
} aot_mhc_post_kargs;

/* The one-pass pre on thread-block clusters (mhc_pre_cluster_c*; sm_90a, and the emulator at
 * wave 32): pre_full and pre_delayed without norm, broadcast or x, at the hidden sizes C of
 * AOT_MHC_PIPELINE_VARIANTS. Clusters of AOT_MHC_CL_BLOCKS blocks, as many as fit at once, take
 * tiles of AOT_MHC_CL_TOKENS tokens in turn; block r of a cluster owns hidden positions
 * [r W, r W + W), W = C / AOT_MHC_CL_BLOCKS, of all 4 streams, and its tiles pass through
 * `slots` shared-memory slots (the variant's; as many as fit). The post variants make the new
 * residual of fused_post_pre_delayed first; lo: fn's low term lies in shared memory, 6 words a
 * product thread a k16 step (12 hidden bytes). */
#define AOT_MHC_CL_BLOCKS 16
#define AOT_MHC_CL_TOKENS 16
#define AOT_MHC_CL_THREADS 512
#define AOT_MHC_CL_RECORD 28     /* a token's partial sums: 24 mix, sum of squares, 3 unused */
#define AOT_MHC_CL_BATCH 32      /* tiles whose post and comb the finisher wave makes together */
#define AOT_MHC_CL_SHARED(hidden, slots, post, lo)                                                  \
    (1024 + ((lo) ? 12 * (hidden) : 16) + (slots) * AOT_MHC_CL_TOKENS * 4 * ((hidden) / AOT_MHC_CL_BLOCKS) * 2 + \
     4 * (8 + (slots)) * AOT_MHC_CL_TOKENS * AOT_MHC_CL_RECORD + 4 * ((slots) + 1) * AOT_MHC_CL_TOKENS * 4 + \
     2 * 2 * ((post) ? AOT_MHC_CL_TOKENS * ((hidden) / AOT_MHC_CL_BLOCKS) : 8) + 4 * AOT_MHC_CL_TOKENS * 20 + \
     2 * 4 * AOT_MHC_CL_BATCH * 20 + 16 * (5 * (slots) + 6))

typedef struct {
    aot_tile_map residual;      /* bf16 [T][4][C] as {C, T, 4} (strides 4C and C), box {64, 16, 4} */
    const float *fn;            /* [24][4*C] */
    const float *scale, *base;  /* [3], [24] */
    float *post, *comb;         /* [T][4], [T][4][4] */
    uint16_t *layer_input;      /* bf16 [T][C] */
    /* delayed (pre_delayed): the collapse takes pre_in (NULL: stream 0 as it is) and this
     * boundary's pre goes to pre_out; else the collapse takes this boundary's pre */
    const float *pre_in;        /* [T][4] or NULL */
    float *pre_out;             /* [T][4] */
    /* post (fused_post_pre_delayed): the residual above is the previous one, and the new one,
     * bf16(post_in[k] x + sum_j comb_in[j][k] residual[j]), goes to residual_out (and its mean
     * to aux, or NULL) before the rest reads it */
    const uint16_t *x;          /* bf16 [T][C] */
    const float *post_in, *comb_in; /* [T][4], [T][4][4] */
    uint16_t *residual_out, *aux; /* bf16 [T][4][C], [T][C] */
    int32_t tokens, sinkhorn_iters, delayed;
    float rms_eps, pre_eps, sinkhorn_eps, post_mult;
} aot_mhc_cluster_kargs;

/* The decode kernels (mhc_decode*; sm_90a, and the emulator at wave 32): up to
 * AOT_MHC_DEC_TOKENS tokens, hidden up to AOT_MHC_DEC_MAX_HIDDEN. Block (b, i), numbered
 * i S + b, owns hidden positions [b P, b P + P), P = AOT_MHC_DEC_POSITIONS, of all 4 streams
 * and tile i of AOT_MHC_DEC_TILE tokens, and writes split b of those tokens' projection
 * partials (S = hidden / P splits, laid out as aot_mhc_gemm_kargs's). delayed: also
 * layer_input at its positions, the collapse with pre_in; post: first the new residual
 * (fused_post_pre_delayed), which it stores, projects and collapses. */
#define AOT_MHC_DEC_TOKENS 64
#define AOT_MHC_DEC_TILE 16
#define AOT_MHC_DEC_POSITIONS 64
#define AOT_MHC_DEC_MAX_HIDDEN 8192

typedef struct {
    const uint16_t *residual;   /* bf16 [T][4][C] */
    const float *fn;            /* [24][4*C], 8-byte aligned */
    float *mix;                 /* [S][T][24] */
    float *sqrsum;              /* [S][T] */
    uint16_t *layer_input;      /* delayed: bf16 [T][C] */
    const float *pre_in;        /* delayed: [T][4] or NULL (stream 0 as it is) */
    const uint16_t *x;          /* post: bf16 [T][C] */
    const float *post_in, *comb_in; /* post: [T][4], [T][4][4] */
    uint16_t *residual_out, *aux; /* post: bf16 [T][4][C], [T][C] or NULL */
    int32_t tokens, hidden;
} aot_mhc_decode_kargs;

typedef struct {
    const uint16_t *residual;   /* bf16 [T][4][C] */
    const float *fn;            /* [4][4*C] */
    const float *scale, *base;  /* [1], [4] */
    uint16_t *out;              /* bf16 [T][C] */
    int32_t tokens, hidden;
    float rms_eps, eps;
} aot_mhc_head_kargs;

#endif
