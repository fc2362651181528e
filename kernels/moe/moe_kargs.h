/* moe_kargs.h : kernel argument structs of the MoE routing kernels. Each kernel takes one of
 * these by value, so its kernarg layout is this struct's C layout on host and device alike
 * (only fixed-size fields and 64-bit pointers). The runtime checks sizeof against the
 * explicit-argument size recorded in the bundle. */
#ifndef AOT_MOE_KARGS_H
#define AOT_MOE_KARGS_H

#include <stdint.h>

#define AOT_TOPK_BLOCK 256     /* threads per block */
#define AOT_MOE_BLOCK 256      /* threads per block of the sorting kernels */
#define AOT_MOE_CHUNK_TOKENS 64 /* tokens per counting/scatter block */
#define AOT_MOE_MAX_EXPERTS 1024
#define AOT_MOE_MAX_K 32        /* k of topk_softmax and moe_sorting; the kernels size buffers by it */
#define AOT_MOE_PAD_EXPERTS 8   /* the scatter launch has a block per this many experts at least */
/* Rows a wave of the topk_softmax_v<vpt>_rows4 variants (vpt <= 8; _rows4_f32 for fp32 logits)
 * takes, consecutive; the others take one. The runtime picks them once one row a wave would not
 * fit the device at once. */
#define AOT_TOPK_ROWS 4
#define AOT_TOPK_ONE_ROW_BLOCKS 8 /* blocks a multiprocessor holds of the one-row variants (vpt <= 8) */
#define AOT_TOPK_SLOTS (AOT_MOE_MAX_K + 8) /* block-shared words a row (a multiple of 8: no bank conflicts) */

enum { AOT_GATING_F32 = 0, AOT_GATING_F16 = 1, AOT_GATING_BF16 = 2 };

typedef struct {
    const void *gating;
    float *weights;
    int32_t *ids;
    int32_t *token_expert_indices; /* may be NULL */
    int64_t row_stride;            /* elements */
    int32_t tokens, experts, k, renormalize;
    int32_t dtype;
    int32_t wide_rows;             /* a lane's run of VPT logits loads whole (experts % VPT == 0, rows
                                    * aligned to min(VPT logits, 16 bytes)); set by the runtime */
} aot_topk_kargs;

typedef struct {
    const int32_t *ids;     /* [tokens, k] */
    const float *weights;   /* [tokens, k] */
    const int32_t *mask;    /* [experts] or NULL */
    int32_t *sorted_ids;
    float *sorted_weights;
    int32_t *sorted_expert_ids;
    int32_t *num_valid;
    int32_t *counts;        /* workspace [experts][chunks]: counts, then offsets inside the expert */
    int32_t *expert_info;   /* workspace [3 * experts]: totals, segment starts (-1: none), local ids */
    int32_t *ranked;        /* workspace [tokens * k]: each pair's expert + 1 and rank in its chunk */
    int32_t *done;          /* workspace [1]: blocks of moe_sort_chunk_scan finished */
    uint32_t *moe_buf;      /* zero-filled, moe_buf_words 32-bit words, or NULL */
    int64_t moe_buf_words;
    int32_t tokens, k, experts, block_size;
    int32_t chunks, max_padded, max_blocks, scatter_blocks; /* scatter_blocks >= chunks */
} aot_moe_sort_kargs;

/* ---- topk_route (kernels/moe/topk_route.hip) and moe_align_block_size (moe_align.hip) ---- */
#define AOT_ROUTE_MAX_GROUPS 32 /* n_group: one lane a group */
/* Bytes of one load of a lane's run of `bytes` logits or bias values in the lane-groups layout:
 * the largest of 16, 8 and 4 that divides the run, 0 where none does (no whole-run loads). The
 * kernel and the runtime (which checks the alignment) both take it from here. */
#define AOT_ROUTE_CHUNK(bytes) ((bytes) % 16 == 0 ? 16 : (bytes) % 8 == 0 ? 8 : (bytes) % 4 == 0 ? 4 : 0)
enum { AOT_ROUTE_SOFTMAX = 0, AOT_ROUTE_SIGMOID = 1, AOT_ROUTE_SQRT_SOFTPLUS = 2 };

typedef struct {
    const void *gating;      /* [tokens, experts], row stride row_stride elements */
    const float *bias;       /* [experts] or NULL: added to the scores for selection only */
    const void *input_ids;   /* [tokens] int32/int64 (hash_int64), or NULL: no hash routing */
    const void *tid2eid;     /* [vocab, k] int32/int64 */
    float *weights;          /* [tokens, k] */
    void *ids;               /* [tokens, k] int32 or int64 (ids_int64) */
    int64_t row_stride;      /* elements */
    int64_t vocab;
    int32_t tokens, experts, k, scoring;
    int32_t n_group, topk_group, renormalize, dtype;
    int32_t ids_int64, hash_int64;
    float scale;             /* routed_scaling_factor */
    int32_t vec;             /* set by the runtime: the lane-groups layout, every lane's run wholly
                              * in or out of the row, rows aligned to AOT_ROUTE_CHUNK of a run:
                              * each lane's run read in loads of that size */
    int32_t vec_bias;        /* set by the runtime: vec, and bias aligned for the same of its
                              * (fp32) run */
    int32_t group_shift;     /* set by the runtime for the select layout: log2 of a group's lanes */
} aot_route_kargs;

/* moe_align_block_size runs moe_sort_count and moe_sort_chunk_scan on `sort` (no mask, no
 * weights, num_valid in the workspace), then moe_align_scatter writes vLLM's layout. */
typedef struct {
    aot_moe_sort_kargs sort;
    int32_t *sorted_ids;        /* [max_padded] flat token * k + slot; padding tokens * k */
    int32_t *expert_ids;        /* [max_blocks] */
    int32_t *post_pad;          /* [1] */
    const int32_t *expert_map;  /* [experts] or NULL */
    int32_t max_padded, max_blocks, scatter_blocks, pad_;
} aot_moe_align_kargs;

#endif
