/*
 * aiter_aot_moe.h : MoE routing ops (topk_softmax, moe_sorting), with AITER's semantics.
 * Included by aiter_aot.h; not meant to be included alone.
 */
#ifndef AITER_AOT_MOE_H_2B7D40
#define AITER_AOT_MOE_H_2B7D40

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------
 * topk_softmax
 *
 * For each token t:  p = softmax(gating[t, 0..experts)) in fp32; the k largest p are written in
 * descending order to topk_weights[t, 0..k) with their expert ids in topk_ids[t, 0..k), and
 * token_expert_indices[t, j] = j * tokens + t.
 * - Ties are broken toward the lower expert id.
 * - NaN logits count as -inf: they get weight 0 and are chosen only after every other expert.
 * - A row with +inf logits gives each +inf expert weight 1/(number of +inf) and the others 0.
 * - A row with no finite logit and no +inf (all -inf/NaN) gives weight 0 to every expert; the
 *   ids are then 0..k-1.
 * - renormalize != 0 divides the k chosen weights by their sum (when that sum is > 0).
 * Limits: 1 <= experts <= 1024, 1 <= k <= min(32, experts), 1 <= tokens < 2^31 / experts,
 * gating_row_stride >= experts (in elements). Output rows are contiguous (k elements).
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                   /* sizeof(aiter_aot_topk_softmax_args) */
    const void *gating;            /* [tokens, experts] logits, row stride gating_row_stride */
    aiter_aot_dtype gating_dtype;  /* F32, F16 or BF16 */
    int64_t gating_row_stride;     /* elements between consecutive rows */
    int32_t tokens;
    int32_t experts;
    int32_t k;
    int32_t renormalize;
    float *topk_weights;           /* [tokens, k] */
    int32_t *topk_ids;             /* [tokens, k] */
    int32_t *token_expert_indices; /* [tokens, k], or NULL to skip */
} aiter_aot_topk_softmax_args;

/*! aiter_aot_topk_softmax() :
 *  Validates `args` and launches on `stream`.
 *  @return AITER_AOT_STATUS_OK, or a status and aiter_aot_last_error(); nothing is launched on
 *          an invalid argument. */
AITER_AOT_API aiter_aot_status aiter_aot_topk_softmax(const aiter_aot_topk_softmax_args *args,
                                                      void *stream);

/* ------------------------------------------------------------------------------------------
 * moe_sorting
 *
 * Groups the (token, slot) pairs of topk_ids [tokens, k] by expert. Expert e's pairs form one
 * segment, ordered by token then slot (a stable sort), padded to a multiple of block_size.
 * Segments follow each other in expert order; experts with no pair get no block.
 * - sorted_token_ids[i] = (slot << 24) | token; padding is (k << 24) | tokens.
 * - sorted_weights[i] = topk_weights[token, slot]; padding is 0.
 * - sorted_expert_ids[b] = the (local) expert of block b; blocks past the last one hold -1.
 * - num_valid_ids[0] = total padded length, num_valid_ids[1] = tokens.
 * - Entries of sorted_token_ids / sorted_weights past the total are padding as well, so every
 *   element of the outputs is written.
 * - expert_mask (optional, [experts] int32): experts with mask 0 are dropped, the others are
 *   renumbered 0, 1, ... in order (local ids), and segments and sorted_expert_ids use local ids.
 * - ids outside [0, experts) are dropped like masked experts.
 * - moe_buf (optional): moe_buf_bytes bytes zero-filled in the same launch sequence.
 * Sizes: sorted_token_ids and sorted_weights hold max_num_tokens_padded =
 *        tokens*k + experts*block_size - k elements; sorted_expert_ids holds
 *        ceil(max_num_tokens_padded / block_size). `workspace` holds
 *        aiter_aot_moe_sorting_workspace_size(tokens, k, experts) bytes of device memory.
 * Limits: 1 <= tokens < 2^24, 1 <= k <= 32, k <= experts <= 1024, block_size in 1..256.
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                   /* sizeof(aiter_aot_moe_sorting_args) */
    const int32_t *topk_ids;       /* [tokens, k] contiguous */
    const float *topk_weights;     /* [tokens, k] contiguous */
    int32_t tokens;
    int32_t k;
    int32_t experts;
    int32_t block_size;            /* 0 means 32 */
    const int32_t *expert_mask;    /* [experts] or NULL */
    int32_t *sorted_token_ids;     /* [max_num_tokens_padded] */
    float *sorted_weights;         /* [max_num_tokens_padded] */
    int32_t *sorted_expert_ids;    /* [ceil(max_num_tokens_padded / block_size)] */
    int32_t *num_valid_ids;        /* [2] */
    void *moe_buf;                 /* or NULL */
    size_t moe_buf_bytes;          /* a multiple of 16 */
    void *workspace;               /* device memory, see aiter_aot_moe_sorting_workspace_size */
    size_t workspace_size;
} aiter_aot_moe_sorting_args;

/*! aiter_aot_moe_sorting_workspace_size() :
 *  @return bytes of device workspace moe_sorting needs for this shape, 0 for an invalid one. */
AITER_AOT_API size_t aiter_aot_moe_sorting_workspace_size(int32_t tokens, int32_t k, int32_t experts);

/*! aiter_aot_moe_sorting_max_padded() :
 *  @return max_num_tokens_padded = tokens*k + experts*block_size - k (block_size 0 means 32),
 *          or 0 when tokens, k or experts is below 1 or block_size negative. */
AITER_AOT_API size_t aiter_aot_moe_sorting_max_padded(int32_t tokens, int32_t k, int32_t experts,
                                                      int32_t block_size);

/*! aiter_aot_moe_sorting() :
 *  Validates `args` and launches on `stream` (three kernels; the first also zero-fills moe_buf).
 *  The workspace is scratch for one call at a time: calls in flight together on different
 *  streams need workspaces of their own.
 *  @return AITER_AOT_STATUS_OK, or a status and aiter_aot_last_error(). */
AITER_AOT_API aiter_aot_status aiter_aot_moe_sorting(const aiter_aot_moe_sorting_args *args,
                                                     void *stream);

#ifdef __cplusplus
}
#endif

#endif /* AITER_AOT_MOE_H_2B7D40 */
