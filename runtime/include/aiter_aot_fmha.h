/*
 * aiter_aot_fmha.h : flash attention forward over packed variable-length sequences, with the
 * semantics of AITER's fmha_v3_varlen_fwd and FlashAttention's varlen forward. Included by
 * aiter_aot.h; not meant to be included alone.
 *
 * For each sequence b (queries cu_seqlens_q[b] .. cu_seqlens_q[b+1], keys likewise), each query
 * head h (key/value head h / (hq / hk)) and each query i < sq of the sequence:
 *   s_j   = softmax_scale * q_i . k_j                       (fp32)
 *   s_j   = cap * tanh(s_j / cap)                           when logits_soft_cap = cap > 0
 *   out_i = sum_j softmax(s)_j v_j over the visible keys j, in fp32, rounded to the input type
 *   lse_i = log(sum_j exp(s_j)) (natural log), written to softmax_lse[h, i] when it is not NULL
 * Visible: j < sk, and with d = i + sk - sq (the diagonal is aligned bottom-right, as in
 * FlashAttention and AITER): causal: j <= d; window_left >= 0: j >= d - window_left;
 * window_right >= 0: j <= d + window_right (-1: unbounded; causal is window_right = 0).
 * A query that sees no key gets out = 0 and lse = -inf. Rows of zero-length sequences are not
 * written. P is rounded to the input type before it multiplies V (as FlashAttention does).
 *
 * Head dims (d, d_v): (64, 64), (128, 128), (192, 128), (256, 256). bf16 or fp16. The last
 * dimension and the heads of a token are contiguous; token rows have the given strides
 * (elements; 0 = packed, hq * d etc.; given or packed, at most 2^31, so that a row's byte
 * offset fits 64 bits). q, k and v: 16-byte aligned, row strides multiples of 8 (the kernels
 * copy 16 bytes at a time, as FlashAttention's do); out: 4-byte aligned, even row stride.
 * softmax_scale finite; logits_soft_cap finite and >= 0.
 * total_k (rows of k and v) lets the sm_90a kernels read K and V by tensor copies, which stop
 * at that row (rows past it read as zeros; rows of a neighbouring sequence read in a sequence's
 * last key step are masked, and V's are zeroed before use, so non-finite values there never
 * reach an output). 0 takes the kernels that copy K and V with threads: the same results,
 * slower on sm_90a (docs/performance.md). The field came after version 0.1 and is 64 bits
 * wide so that it starts past that struct's end, padding included: a caller built against
 * 0.1 passes a size that stops before it, and reads as total_k = 0.
 * max_seqlen_q must be at least every sequence's query count (rows past it are not computed);
 * cu_seqlens must be non-decreasing and start at 0: both live in device memory and are not
 * checked (that would need a synchronisation). GQA/MQA: hq a multiple of hk. Every other
 * violation returns AITER_AOT_STATUS_INVALID_ARGUMENT, launches nothing, and
 * aiter_aot_last_error() names the argument and what it must be.
 */
#ifndef AITER_AOT_FMHA_H_4A81D0
#define AITER_AOT_FMHA_H_4A81D0

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    size_t size;                          /* sizeof(aiter_aot_fmha_varlen_fwd_args) */
    const void *q;                        /* [total_q, hq, d] */
    const void *k;                        /* [total_k, hk, d] */
    const void *v;                        /* [total_k, hk, d_v] */
    void *out;                            /* [total_q, hq, d_v] */
    float *softmax_lse;                   /* [hq, total_q], or NULL */
    const int32_t *cu_seqlens_q;          /* device, [batch + 1] */
    const int32_t *cu_seqlens_k;          /* device, [batch + 1] */
    aiter_aot_dtype dtype;                /* BF16 or F16 */
    int32_t batch, total_q, hq, hk, head_dim, head_dim_v, max_seqlen_q;
    int64_t q_row_stride, k_row_stride, v_row_stride, out_row_stride; /* 0: packed */
    float softmax_scale, logits_soft_cap; /* cap 0: none */
    int32_t causal, window_left, window_right;
    int64_t total_k;                      /* rows of k and v, 0..2^31-1; 0: not given (slower on sm_90a) */
} aiter_aot_fmha_varlen_fwd_args;

/*! aiter_aot_fmha_varlen_fwd() :
 *  @return AITER_AOT_STATUS_OK, or a status and aiter_aot_last_error(); nothing is launched on
 *          an invalid argument. */
AITER_AOT_API aiter_aot_status aiter_aot_fmha_varlen_fwd(const aiter_aot_fmha_varlen_fwd_args *args, void *stream);

#ifdef __cplusplus
}
#endif

#endif
