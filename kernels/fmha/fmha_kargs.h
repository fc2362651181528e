/* fmha_kargs.h : the argument struct of the FMHA varlen forward kernels (fmha.hip), passed by
 * value: its kernarg layout is this C layout on host and device alike. */
#ifndef AOT_FMHA_KARGS_H
#define AOT_FMHA_KARGS_H

#include <stdint.h>

#define AOT_FMHA_WAVES 4     /* waves per block, 16 query rows each (the fragments' M) */
#define AOT_FMHA_ROWS 16     /* query rows per wave */
#define AOT_FMHA_KEYS 32     /* keys per step of the key loop */

typedef struct {
    const uint16_t *q, *k, *v;       /* bf16 or fp16 [total, heads, dim] with the row strides below */
    uint16_t *out;                   /* [total_q, hq, dv] */
    float *lse;                      /* [hq, total_q] or NULL */
    const int32_t *cu_q, *cu_k;      /* [batch + 1] */
    int64_t q_row, k_row, v_row, o_row; /* elements between consecutive tokens */
    int32_t batch, hq, hk, total_q;
    int32_t q_tiles;                 /* blocks per (sequence, head): ceil(max_seqlen_q / block rows) */
    int32_t causal, window_left, window_right; /* -1: unbounded */
    int32_t f16, reserved;
    float scale, softcap;            /* softcap 0: none */
} aot_fmha_kargs;

#endif
