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
 * Limits: 1 <= experts <= 1024, 1 <= k <= min(32, experts), 0 <= tokens, tokens * k < 2^31
 * (0 tokens: nothing is launched), gating_row_stride >= experts (in elements), and tokens rows
 * of it within a 64-bit byte offset. Output rows are contiguous (k elements).
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

/* ------------------------------------------------------------------------------------------
 * topk_route : the routers of DeepSeek-V3/R1 (grouped, biased sigmoid), DeepSeek-V4-style
 * sqrt-softplus with hash routing for the first layers, and Llama-4-style sigmoid top-1, in
 * one entry point. Definitions and their sources: docs/routing.md.
 *
 * For each token t, with x = gating[t, 0..experts) (NaN read as -inf):
 * 1. scores s: SOFTMAX softmax(x) in fp32 (a row with +inf logits gives each +inf expert
 *    1/(their count) and the others 0; an all -inf row gives 0); SIGMOID 1/(1+exp(-x));
 *    SQRT_SOFTPLUS sqrt(softplus(x)), softplus(x) = x above 20, else log(1+exp(x)).
 *    -inf gives 0 under all three; +inf gives 1 under SIGMOID and +inf under SQRT_SOFTPLUS
 *    (whose weights are then +inf, or NaN once renormalized, as in the references).
 * 2. selection scores c = s + bias (bias: [experts] fp32, optional, finite; NULL: c = s).
 *    The bias changes which experts are chosen, never the weights.
 * 3. grouped selection (n_group > 1): experts are n_group groups of experts / n_group
 *    consecutive ones. A group's score is the sum of its two largest c with a bias (its one c
 *    when groups have one expert), its largest c without. The topk_group best groups are
 *    kept (ties: the lower group); only their experts can be chosen.
 * 4. the k largest c among the candidates, in descending order of c (ties: the lower expert),
 *    go to topk_ids[t, 0..k); topk_weights[t, j] = s at that expert.
 * 5. renormalize != 0: the k weights are divided by max(their sum, 1e-20). Then every weight
 *    is multiplied by routed_scaling_factor (0 means 1).
 * Hash routing (input_ids != NULL): steps 2-4 are replaced by
 *    topk_ids[t, j] = tid2eid[input_ids[t], j]; the weights are s at those experts (5 applies).
 *    A token id outside [0, vocab) or a table entry outside [0, experts) gives that slot id
 *    -1 and weight 0 (device values: not checked before the launch). bias is not used.
 * Limits: 1 <= experts <= 1024, 1 <= k <= min(32, experts), 0 <= tokens, tokens * k < 2^31,
 *    gating_row_stride >= experts and tokens rows of it within a 64-bit byte offset; grouped: n_group <= 32 divides experts,
 *    1 <= topk_group <= n_group, k <= topk_group * experts / n_group (n_group 0 or 1: no
 *    groups, topk_group ignored). Hash: vocab >= 1, tid2eid [vocab, k] contiguous, n_group <= 1.
 * Errors: AITER_AOT_STATUS_INVALID_ARGUMENT with aiter_aot_last_error() naming the argument,
 *    nothing launched: NULL gating / topk_weights / topk_ids, NULL tid2eid with input_ids, a
 *    scoring or dtype outside the enums, a limit above broken, a pointer not aligned to its
 *    element size, a non-finite routed_scaling_factor.
 * ------------------------------------------------------------------------------------------ */
typedef enum {
    AITER_AOT_ROUTE_SOFTMAX = 0,
    AITER_AOT_ROUTE_SIGMOID = 1,
    AITER_AOT_ROUTE_SQRT_SOFTPLUS = 2
} aiter_aot_route_scoring;

typedef struct {
    size_t size;                    /* sizeof(aiter_aot_topk_route_args) */
    const void *gating;             /* [tokens, experts] logits, row stride gating_row_stride */
    aiter_aot_dtype gating_dtype;   /* F32, F16 or BF16 */
    int64_t gating_row_stride;      /* elements between consecutive rows */
    int32_t tokens;
    int32_t experts;
    int32_t k;
    aiter_aot_route_scoring scoring;
    const float *bias;              /* [experts] e_score_correction_bias, or NULL */
    int32_t n_group;                /* 0 or 1: no grouped selection */
    int32_t topk_group;
    int32_t renormalize;
    float routed_scaling_factor;    /* 0 means 1 */
    const void *input_ids;          /* [tokens] token ids for hash routing, or NULL */
    const void *tid2eid;            /* [vocab, k] experts of each token id */
    int64_t vocab;
    int32_t hash_ids_int64;         /* input_ids and tid2eid are int64 (else int32) */
    float *topk_weights;            /* [tokens, k] */
    void *topk_ids;                 /* [tokens, k] int32, or int64 with topk_ids_int64 */
    int32_t topk_ids_int64;
} aiter_aot_topk_route_args;

/*! aiter_aot_topk_route() :
 *  Validates `args` and launches on `stream` (one kernel).
 *  @return AITER_AOT_STATUS_OK, or a status and aiter_aot_last_error(); nothing is launched on
 *          an invalid argument. */
AITER_AOT_API aiter_aot_status aiter_aot_topk_route(const aiter_aot_topk_route_args *args, void *stream);

/* ------------------------------------------------------------------------------------------
 * moe_align_block_size : vLLM's layout of the (token, slot) pairs by expert, beside the AITER
 * layout of moe_sorting. Definitions and their sources: docs/routing.md.
 *
 * numel = tokens * k; pair i = token * k + slot (the flat index into topk_ids [tokens, k]).
 * - Expert e's pairs form one segment in ascending i, padded with the value numel to a multiple
 *   of block_size; segments follow in expert order; experts with no pair get none.
 * - sorted_token_ids[0 .. max_num_tokens_padded): the segments, then numel to the end.
 * - expert_ids[b] = the expert of block b (expert_map[expert] with expert_map); blocks past
 *   the last hold 0 (expert_map[0] with expert_map), as vLLM's zero-filled buffer mapped.
 * - num_tokens_post_pad[0] = the padded total.
 * - ids outside [0, experts) are dropped.
 * Sizes: max_num_tokens_padded = numel + experts * (block_size - 1)
 *        (aiter_aot_moe_align_max_padded); expert_ids holds
 *        ceil(max_num_tokens_padded / block_size); workspace holds
 *        aiter_aot_moe_align_workspace_size(tokens, k, experts) bytes of device memory.
 * Limits: 1 <= tokens < 2^24, 1 <= k <= 32, k <= experts <= 1024, block_size in 1..256.
 * Errors: AITER_AOT_STATUS_INVALID_ARGUMENT (nothing launched) for NULL pointers (but
 *         expert_map), limits, a workspace too small, pointers not 4-byte aligned.
 * ------------------------------------------------------------------------------------------ */
typedef struct {
    size_t size;                    /* sizeof(aiter_aot_moe_align_block_size_args) */
    const int32_t *topk_ids;        /* [tokens, k] contiguous */
    int32_t tokens;
    int32_t k;
    int32_t experts;
    int32_t block_size;
    const int32_t *expert_map;      /* [experts] local ids (-1: not on this rank), or NULL */
    int32_t *sorted_token_ids;      /* [max_num_tokens_padded] */
    int32_t *expert_ids;            /* [ceil(max_num_tokens_padded / block_size)] */
    int32_t *num_tokens_post_pad;   /* [1] */
    void *workspace;
    size_t workspace_size;
} aiter_aot_moe_align_block_size_args;

/*! aiter_aot_moe_align_workspace_size() :
 *  @return bytes of device workspace for this shape, 0 for an invalid one. */
AITER_AOT_API size_t aiter_aot_moe_align_workspace_size(int32_t tokens, int32_t k, int32_t experts);

/*! aiter_aot_moe_align_max_padded() :
 *  @return max_num_tokens_padded = tokens * k + experts * (block_size - 1), 0 for an invalid
 *          shape. */
AITER_AOT_API size_t aiter_aot_moe_align_max_padded(int32_t tokens, int32_t k, int32_t experts,
                                                    int32_t block_size);

/*! aiter_aot_moe_align_block_size() :
 *  Validates `args` and launches on `stream` (three kernels). The workspace is scratch for one
 *  call at a time.
 *  @return AITER_AOT_STATUS_OK, or a status and aiter_aot_last_error(). */
AITER_AOT_API aiter_aot_status aiter_aot_moe_align_block_size(const aiter_aot_moe_align_block_size_args *args,
                                                              void *stream);

#ifdef __cplusplus
}
#endif

#endif /* AITER_AOT_MOE_H_2B7D40 */
