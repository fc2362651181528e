/* op_moe.c : aiter_aot_topk_softmax and aiter_aot_moe_sorting: argument checks, variant
 * choice and launches. The kernels are kernels/moe/. */
#include <stdint.h>
#include <string.h>

#include "aiter_aot.h"
#include "api.h"
#include "kernel_ids.h"
#include "moe_kargs.h"
#include "op.h"

static aiter_aot_status topk_check(const aiter_aot_topk_softmax_args *a, aot_diag *d)
{
    const size_t esize = a->gating_dtype == AITER_AOT_DTYPE_F32 ? 4 : 2;
    AOT_INVALID_IF(!a->gating || !a->topk_weights || !a->topk_ids, d,
                   "topk_softmax: gating, topk_weights and topk_ids must not be NULL");
    AOT_INVALID_IF((unsigned)a->gating_dtype > AITER_AOT_DTYPE_BF16, d,
                   "topk_softmax: gating_dtype %d is not F32, F16 or BF16", (int)a->gating_dtype);
    AOT_INVALID_IF(a->experts < 1 || a->experts > 1024, d, "topk_softmax: experts = %d; supported 1..1024", a->experts);
    AOT_INVALID_IF(a->k < 1 || a->k > AOT_MOE_MAX_K || a->k > a->experts, d,
                   "topk_softmax: k = %d; need 1 <= k <= min(%d, experts = %d)", a->k, AOT_MOE_MAX_K, a->experts);
    AOT_INVALID_IF(a->tokens < 0 || (int64_t)a->tokens * a->k > INT32_MAX, d, "topk_softmax: tokens = %d out of range",
                   a->tokens);
    AOT_INVALID_IF(a->gating_row_stride < a->experts, d, "topk_softmax: gating_row_stride %lld < experts %d",
                   (long long)a->gating_row_stride, a->experts);
    AOT_INVALID_IF(a->gating_row_stride > INT64_MAX / (int64_t)esize / (a->tokens ? a->tokens : 1), d,
                   "topk_softmax: gating_row_stride %lld: tokens rows of it overflow a byte offset",
                   (long long)a->gating_row_stride);
    AOT_INVALID_IF(aot_misaligned(a->gating, esize) || aot_misaligned(a->topk_weights, 4) ||
                       aot_misaligned(a->topk_ids, 4) || aot_misaligned(a->token_expert_indices, 4),
                   d, "topk_softmax: a pointer is not aligned to its element size");
    return AITER_AOT_STATUS_OK;
}

/* Whether the kernel may load each lane's run of vpt logits whole (min(vpt logits, 16 bytes) at
 * a time): every run inside the row and every row aligned for those loads. */
static int32_t wide_rows(const aiter_aot_topk_softmax_args *a, unsigned vpt)
{
    const unsigned esize = a->gating_dtype == AITER_AOT_DTYPE_F32 ? 4 : 2;
    const unsigned wide = esize * vpt < 16 ? esize * vpt : 16;
    return a->experts % vpt == 0 && (uintptr_t)a->gating % wide == 0 && (uint64_t)a->gating_row_stride * esize % wide == 0;
}

/* The kernel of moe_variants.h for a choice; every choice the op makes is in the list. */
static const char *topk_variant(unsigned vpt, int full, unsigned rows, int dtypes)
{
#define TOPK_ROW(name, kargs, v, f, r, dt, blocks) {AOT_K_##name, v, f, r, dt},
    static const struct { aot_kernel_id id; unsigned vpt; bool full; unsigned rows; int dtypes; } variants[] = {
        AOT_TOPK_VARIANTS(TOPK_ROW) AOT_TOPK_WAVE32_VARIANTS(TOPK_ROW)};
#undef TOPK_ROW
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (variants[i].vpt == vpt && variants[i].full == (full != 0) && variants[i].rows == rows &&
            variants[i].dtypes == dtypes)
            return aot_kernel_name(variants[i].id);
    return "topk_softmax (no such variant)"; /* not reached: aot_op_find then names it */
}

aiter_aot_status aiter_aot_topk_softmax(const aiter_aot_topk_softmax_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_topk_softmax_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "topk_softmax", &d);
    if (s == AITER_AOT_STATUS_OK) s = topk_check(&a, &d);
    if (s != AITER_AOT_STATUS_OK || a.tokens == 0) return aot_api_return(s, &d);
    unsigned wave, vpt;
    s = aot_op_lanes(aot_kernel_name(AOT_K_topk_softmax_v1), sizeof(aot_topk_kargs), a.experts, &wave, &vpt, &d);
    if (s != AITER_AOT_STATUS_OK) return aot_api_return(s, &d);
    const int32_t wide = wide_rows(&a, vpt);
    /* _full: rows of exactly vpt * wave experts loaded whole, with no bounds tests */
    const int full = wide && vpt * wave == (unsigned)a.experts;
    /* _rows4 once a wave per row would not fit the device at once, fp32 rows (_rows4_f32, kernels
     * of their own for their own register budget) from 4 times that: on the H200 (132 SMs)
     * 16-bit rows are 24 % faster at 262144 tokens and level at 16384; fp32 rows 8 % faster at
     * 131072 and 3-6 % slower at 32768 than with a wave per row (docs/performance.md). Decode
     * sizes, below one multiprocessor's share, skip the query. */
    unsigned rows = 1;
    const int64_t per_mp = (int64_t)AOT_TOPK_ONE_ROW_BLOCKS * (AOT_TOPK_BLOCK / wave) *
                           (a.gating_dtype == AITER_AOT_DTYPE_F32 ? 4 : 1);
    if (vpt <= 8 && a.tokens > per_mp) {
        int mps;
        s = aot_op_multiprocessors(&mps, &d);
        if (s != AITER_AOT_STATUS_OK) return aot_api_return(s, &d);
        if (a.tokens > per_mp * mps) rows = AOT_TOPK_ROWS;
    }
    const int dtypes = rows == 1 ? TOPK_ANY : a.gating_dtype == AITER_AOT_DTYPE_F32 ? TOPK_F32 : TOPK_16BIT;
    const char *name = topk_variant(vpt, full, rows, dtypes);
    aot_topk_kargs k = {.gating = a.gating, .weights = a.topk_weights, .ids = a.topk_ids,
                        .token_expert_indices = a.token_expert_indices, .row_stride = a.gating_row_stride,
                        .tokens = a.tokens, .experts = a.experts, .k = a.k, .renormalize = a.renormalize != 0,
                        .dtype = (int32_t)a.gating_dtype, .wide_rows = wide};
    unsigned rows_per_block = AOT_TOPK_BLOCK / wave * rows;
    unsigned grid = (unsigned)((a.tokens + rows_per_block - 1) / rows_per_block);
    s = aot_op_launch(name, &k, sizeof k, grid, AOT_TOPK_BLOCK, 0, stream, &d);
    return aot_api_return(s, &d);
}

/* ---- moe_sorting ---- */

static int64_t chunks_for(int32_t tokens) { return ((int64_t)tokens + AOT_MOE_CHUNK_TOKENS - 1) / AOT_MOE_CHUNK_TOKENS; }

/* Layout (int32): counts [experts][chunks], expert_info [3 * experts], done [1], ranked [tokens * k]. */
size_t aiter_aot_moe_sorting_workspace_size(int32_t tokens, int32_t k, int32_t experts)
{
    if (tokens < 1 || tokens >= (1 << 24) || k < 1 || k > AOT_MOE_MAX_K || k > experts || experts > AOT_MOE_MAX_EXPERTS)
        return 0;
    return (size_t)(experts * chunks_for(tokens) + 3 * (int64_t)experts + 1 + (int64_t)tokens * k) * sizeof(int32_t);
}

size_t aiter_aot_moe_sorting_max_padded(int32_t tokens, int32_t k, int32_t experts, int32_t block_size)
{
    int64_t bs = block_size ? block_size : 32;
    if (tokens < 1 || k < 1 || experts < 1 || bs < 1) return 0; /* moe_sorting needs a token */
    return (size_t)((int64_t)tokens * k + (int64_t)experts * bs - k);
}

static aiter_aot_status sort_check(const aiter_aot_moe_sorting_args *a, aot_diag *d)
{
    AOT_INVALID_IF(!a->topk_ids || !a->topk_weights || !a->sorted_token_ids || !a->sorted_weights ||
                       !a->sorted_expert_ids || !a->num_valid_ids || !a->workspace,
                   d, "moe_sorting: topk_ids, topk_weights, the four outputs and workspace must not be NULL");
    AOT_INVALID_IF(a->tokens < 1 || a->tokens >= (1 << 24), d, "moe_sorting: tokens = %d; supported 1..2^24-1", a->tokens);
    AOT_INVALID_IF(a->experts < 1 || a->experts > AOT_MOE_MAX_EXPERTS, d, "moe_sorting: experts = %d; supported 1..1024",
                   a->experts);
    AOT_INVALID_IF(a->k < 1 || a->k > AOT_MOE_MAX_K || a->k > a->experts, d,
                   "moe_sorting: k = %d; need 1 <= k <= min(%d, experts = %d)", a->k, AOT_MOE_MAX_K, a->experts);
    AOT_INVALID_IF(a->block_size < 1 || a->block_size > 256, d, "moe_sorting: block_size = %d; supported 1..256",
                   a->block_size);
    const size_t need = aiter_aot_moe_sorting_workspace_size(a->tokens, a->k, a->experts);
    AOT_INVALID_IF(a->workspace_size < need, d,
                   "moe_sorting: workspace_size %zu < %zu (aiter_aot_moe_sorting_workspace_size)", a->workspace_size, need);
    AOT_INVALID_IF(a->moe_buf && (a->moe_buf_bytes % 16 || aot_misaligned(a->moe_buf, 16)), d,
                   "moe_sorting: moe_buf must be 16-byte aligned and moe_buf_bytes a multiple of 16");
    AOT_INVALID_IF(aot_misaligned(a->topk_ids, 4) || aot_misaligned(a->topk_weights, 4) ||
                       aot_misaligned(a->sorted_token_ids, 4) || aot_misaligned(a->sorted_weights, 4) ||
                       aot_misaligned(a->sorted_expert_ids, 4) || aot_misaligned(a->num_valid_ids, 4) ||
                       aot_misaligned(a->workspace, 4) || aot_misaligned(a->expert_mask, 4),
                   d, "moe_sorting: a pointer is not 4-byte aligned");
    return AITER_AOT_STATUS_OK;
}

/* The second and third launch early, each waiting in the kernel for the one before. */
static aiter_aot_status sort_launches(aot_moe_sort_kargs *k, void *stream, aot_diag *d)
{
    AOT_FORWARD(aot_op_launch(aot_kernel_name(AOT_K_moe_sort_count), k, sizeof *k, (unsigned)k->chunks, AOT_MOE_BLOCK, 0, stream, d));
    AOT_FORWARD(aot_op_launch(aot_kernel_name(AOT_K_moe_sort_chunk_scan), k, sizeof *k, (unsigned)k->experts, AOT_MOE_BLOCK,
                              AOT_LAUNCH_FOLLOWS, stream, d));
    return aot_op_launch(aot_kernel_name(AOT_K_moe_sort_scatter), k, sizeof *k, (unsigned)k->scatter_blocks, AOT_MOE_BLOCK,
                         AOT_LAUNCH_FOLLOWS, stream, d);
}

aiter_aot_status aiter_aot_moe_sorting(const aiter_aot_moe_sorting_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_moe_sorting_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "moe_sorting", &d);
    if (s == AITER_AOT_STATUS_OK && a.block_size == 0) a.block_size = 32;
    if (s == AITER_AOT_STATUS_OK) s = sort_check(&a, &d);
    if (s != AITER_AOT_STATUS_OK) return aot_api_return(s, &d);
    int64_t chunks = chunks_for(a.tokens), max_padded = (int64_t)aiter_aot_moe_sorting_max_padded(a.tokens, a.k, a.experts, a.block_size);
    int64_t pad_blocks = (a.experts + AOT_MOE_PAD_EXPERTS - 1) / AOT_MOE_PAD_EXPERTS;
    int32_t *ws = a.workspace, *info = ws + a.experts * chunks; /* layout: aiter_aot_moe_sorting_workspace_size */
    aot_moe_sort_kargs k = {.ids = a.topk_ids, .weights = a.topk_weights, .mask = a.expert_mask,
                            .sorted_ids = a.sorted_token_ids, .sorted_weights = a.sorted_weights,
                            .sorted_expert_ids = a.sorted_expert_ids, .num_valid = a.num_valid_ids, .counts = ws,
                            .expert_info = info, .ranked = info + 3 * a.experts + 1, .done = info + 3 * a.experts,
                            .moe_buf = a.moe_buf, .moe_buf_words = (int64_t)(a.moe_buf ? a.moe_buf_bytes / 4 : 0),
                            .tokens = a.tokens, .k = a.k, .experts = a.experts, .block_size = a.block_size,
                            .chunks = (int32_t)chunks, .max_padded = (int32_t)max_padded,
                            .max_blocks = (int32_t)((max_padded + a.block_size - 1) / a.block_size),
                            .scatter_blocks = (int32_t)(chunks > pad_blocks ? chunks : pad_blocks)};
    return aot_api_return(sort_launches(&k, stream, &d), &d);
}
