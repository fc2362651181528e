/* op_route.c : aiter_aot_topk_route and aiter_aot_moe_align_block_size: argument checks,
 * variant choice and launches. The kernels are kernels/moe/topk_route.hip and moe_align.hip
 * (which follows moe_sorting's first two kernels). */
#include <math.h>   /* isfinite */
#include <stdint.h>

#include "aiter_aot.h"
#include "api.h"
#include "kernel_ids.h"
#include "moe_kargs.h"
#include "op.h"

/* ---- topk_route ---- */

static aiter_aot_status groups_check(const aiter_aot_topk_route_args *a, aot_diag *d)
{
    AOT_INVALID_IF(a->n_group < 0 || a->n_group > AOT_ROUTE_MAX_GROUPS, d, "topk_route: n_group = %d; supported 0..%d",
                   a->n_group, AOT_ROUTE_MAX_GROUPS);
    if (a->n_group <= 1) return AITER_AOT_STATUS_OK;
    AOT_INVALID_IF(a->input_ids, d, "topk_route: n_group = %d with hash routing (input_ids); hash routing takes no groups",
                   a->n_group);
    AOT_INVALID_IF(a->experts % a->n_group, d, "topk_route: n_group = %d does not divide experts = %d", a->n_group,
                   a->experts);
    AOT_INVALID_IF(a->topk_group < 1 || a->topk_group > a->n_group, d,
                   "topk_route: topk_group = %d; need 1 <= topk_group <= n_group = %d", a->topk_group, a->n_group);
    AOT_INVALID_IF(a->k > a->topk_group * (a->experts / a->n_group), d,
                   "topk_route: k = %d > the %d experts of topk_group = %d kept groups", a->k,
                   a->topk_group * (a->experts / a->n_group), a->topk_group);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status route_check(const aiter_aot_topk_route_args *a, aot_diag *d)
{
    const size_t esize = a->gating_dtype == AITER_AOT_DTYPE_F32 ? 4 : 2, hsize = a->hash_ids_int64 ? 8 : 4;
    AOT_INVALID_IF(!a->gating || !a->topk_weights || !a->topk_ids, d,
                   "topk_route: gating, topk_weights and topk_ids must not be NULL");
    AOT_INVALID_IF((unsigned)a->gating_dtype > AITER_AOT_DTYPE_BF16, d, "topk_route: gating_dtype %d is not F32, F16 or BF16",
                   (int)a->gating_dtype);
    AOT_INVALID_IF((unsigned)a->scoring > AITER_AOT_ROUTE_SQRT_SOFTPLUS, d,
                   "topk_route: scoring %d is not SOFTMAX, SIGMOID or SQRT_SOFTPLUS", (int)a->scoring);
    AOT_INVALID_IF(a->experts < 1 || a->experts > AOT_MOE_MAX_EXPERTS, d, "topk_route: experts = %d; supported 1..%d",
                   a->experts, AOT_MOE_MAX_EXPERTS);
    AOT_INVALID_IF(a->k < 1 || a->k > AOT_MOE_MAX_K || a->k > a->experts, d,
                   "topk_route: k = %d; need 1 <= k <= min(%d, experts = %d)", a->k, AOT_MOE_MAX_K, a->experts);
    AOT_INVALID_IF(a->tokens < 0 || (int64_t)a->tokens * a->k > INT32_MAX, d, "topk_route: tokens = %d out of range",
                   a->tokens);
    AOT_INVALID_IF(a->gating_row_stride < a->experts, d, "topk_route: gating_row_stride %lld < experts %d",
                   (long long)a->gating_row_stride, a->experts);
    AOT_INVALID_IF(a->gating_row_stride > INT64_MAX / (int64_t)esize / (a->tokens ? a->tokens : 1), d,
                   "topk_route: gating_row_stride %lld: tokens rows of it overflow a byte offset",
                   (long long)a->gating_row_stride);
    AOT_INVALID_IF(!isfinite(a->routed_scaling_factor), d, "topk_route: routed_scaling_factor is not finite");
    AOT_INVALID_IF(a->input_ids && !a->tid2eid, d, "topk_route: input_ids without tid2eid");
    AOT_INVALID_IF(a->input_ids && (a->vocab < 1 || a->vocab > INT64_MAX / AOT_MOE_MAX_K), d,
                   "topk_route: vocab = %lld; need >= 1 with input_ids", (long long)a->vocab);
    AOT_INVALID_IF(aot_misaligned(a->gating, esize) || aot_misaligned(a->topk_weights, 4) ||
                       aot_misaligned(a->topk_ids, a->topk_ids_int64 ? 8 : 4) || aot_misaligned(a->bias, 4) ||
                       aot_misaligned(a->input_ids, hsize) || aot_misaligned(a->tid2eid, hsize),
                   d, "topk_route: a pointer is not aligned to its element size");
    return groups_check(a, d);
}

/* The routers of moe_variants.h. */
#define ROUTE_ROW(name, kargs, v, lay, l, blocks) {AOT_K_##name, v, lay, l},
static const struct {
    aot_kernel_id id;
    unsigned vpt;
    int layout;
    unsigned lanes;
} route_variants[] = {AOT_ROUTE_VARIANTS(ROUTE_ROW) AOT_ROUTE_WAVE32_VARIANTS(ROUTE_ROW)};
#undef ROUTE_ROW
#define ROUTE_VARIANT_COUNT (sizeof route_variants / sizeof route_variants[0])

/* The router for vpt experts a lane, a layout and (the rows layout) lanes a row, or NULL where
 * there is none. */
static const char *route_variant(unsigned vpt, int layout, unsigned lanes)
{
    for (size_t i = 0; i < ROUTE_VARIANT_COUNT; i++)
        if (route_variants[i].layout == layout && route_variants[i].lanes == lanes &&
            (route_variants[i].vpt == vpt || layout == AOT_ROUTE_HASH))
            return aot_kernel_name(route_variants[i].id);
    return NULL;
}

/* The kernel's choice for a row of a.experts on a wave of `wave` (moe_variants.h): the select
 * or the rows layout where one fits (route_select_plan, route_rows_plan), else vpt experts a
 * lane (the smallest power of two with vpt * wave >= experts from aot_op_lanes, or for
 * ungrouped rows in the lane-groups layout experts / wave where a kernel has that count), the
 * layout, whether each lane's run of logits (vec) and bias (vec_bias) loads whole in the
 * lane-groups layout, and the select layout's group_shift. */
typedef struct {
    unsigned vpt, lanes;
    int layout, vec, vec_bias, group_shift;
} route_plan;

/* Does a lane's run of vpt logits load whole: every run wholly in or out of the row, and the
 * row starts aligned to AOT_ROUTE_CHUNK of a run? */
static int route_whole_runs(const aiter_aot_topk_route_args *a, unsigned vpt, size_t esize)
{
    const unsigned chunk = AOT_ROUTE_CHUNK(vpt * esize);
    return chunk && a->experts % vpt == 0 && !aot_misaligned(a->gating, chunk) && a->gating_row_stride * esize % chunk == 0;
}

/* The select layout from this many tokens (H100, its first version against the wave-a-row
 * kernels: DeepSeek-V3's router 1.09x at 4096 tokens and 1.7x at 1024; 0.80x at 8192 with the
 * final kernel, 0.68x at 16384). */
#define SELECT_MIN_TOKENS 8192

/* The select layout's kernel for this row, if one fits (moe_variants.h: AOT_ROUTE_SELECT), the
 * first of the list that does. */
static int route_select_plan(const aiter_aot_topk_route_args *a, size_t esize, route_plan *p)
{
    if (a->tokens < SELECT_MIN_TOKENS || a->input_ids || aot_misaligned(a->bias, 16)) return 0;
    for (size_t i = 0; i < ROUTE_VARIANT_COUNT; i++) {
        const unsigned v = route_variants[i].vpt, l = route_variants[i].lanes;
        if (route_variants[i].layout != AOT_ROUTE_SELECT || v * l != (unsigned)a->experts || (unsigned)a->k > l ||
            !route_whole_runs(a, v, esize))
            continue;
        const unsigned G = a->n_group > 1 ? (unsigned)(a->experts / a->n_group) : v, LG = G / v;
        if (G % v || (LG & (LG - 1))) continue;
        p->vpt = v, p->lanes = l, p->layout = AOT_ROUTE_SELECT; /* its runs load whole: checked above */
        while (1u << p->group_shift < LG) p->group_shift++; /* the kernel shifts instead of dividing */
        return 1;
    }
    return 0;
}

/* The rows layout from this many tokens (H100, against the wave-a-row kernels: Llama-4's router
 * 0.86x at 8192 tokens and 0.63x at 65536, DeepSeek-V3's 1.02x and 0.93x, 1.12x at 4096 and up to
 * 1.8x at 1..1024): below it one row's latency (a shuffle a reduction step instead of one
 * redux.sync, up to 32 slots a lane to look over) outweighs the instructions it saves. */
#define ROWS_MIN_TOKENS 8192

/* The rows layout's kernel for this row, if one fits: the fewest slots that hold the row, every
 * run of 4 logits one aligned load, k <= lanes, a 16-byte aligned bias, and groups (if any) of
 * 4 lanes experts, a run column each. */
static int route_rows_plan(const aiter_aot_topk_route_args *a, size_t esize, route_plan *p)
{
    if (a->tokens < ROWS_MIN_TOKENS || a->input_ids || a->experts % 4 || a->gating_row_stride % 4 || aot_misaligned(a->gating, 4 * esize) ||
        aot_misaligned(a->bias, 16))
        return 0;
    unsigned best = 0; /* the fewest slots a row, then the fewest a lane */
    for (size_t i = 0; i < ROUTE_VARIANT_COUNT; i++) {
        const unsigned v = route_variants[i].vpt, l = route_variants[i].lanes;
        const int fits = route_variants[i].layout == AOT_ROUTE_ROWS && v * l >= (unsigned)a->experts && (unsigned)a->k <= l &&
                         (a->n_group <= 1 || (unsigned)(a->experts / a->n_group) == 4 * l);
        if (fits && (!best || v * l < best || (v * l == best && v < p->vpt))) best = v * l, p->vpt = v, p->lanes = l;
    }
    if (best) p->layout = AOT_ROUTE_ROWS;
    return best != 0;
}

static route_plan route_plan_for(const aiter_aot_topk_route_args *a, unsigned vpt, unsigned wave)
{
    const size_t esize = a->gating_dtype == AITER_AOT_DTYPE_F32 ? 4 : 2;
    route_plan p = {vpt, 0, AOT_ROUTE_STRIDED, 0, 0, 0};
    if (route_select_plan(a, esize, &p) || route_rows_plan(a, esize, &p)) return p;
    if (a->input_ids) {
        p.layout = a->scoring == AITER_AOT_ROUTE_SOFTMAX ? AOT_ROUTE_GENERAL : AOT_ROUTE_HASH;
        return p;
    }
    if (a->n_group > 1) {
        /* groups on whole lanes: each lane's run of vpt experts in one group, and a power of
         * two lanes a group (the kernel's butterfly) */
        const unsigned G = (unsigned)(a->experts / a->n_group), L = G / vpt;
        p.layout = G % vpt == 0 && L <= wave && (L & (L - 1)) == 0 ? AOT_ROUTE_LANE_GROUPS : AOT_ROUTE_GENERAL;
        p.vec = p.layout == AOT_ROUTE_LANE_GROUPS && route_whole_runs(a, vpt, esize);
    } else {
        /* ungrouped rows: one group of the whole wave in the lane-groups layout where the runs
         * load whole (typed loads, no slot past the row where experts / wave has a kernel:
         * 384 experts take 12 a lane at wave 32), else the strided layout */
        const unsigned exact = (unsigned)a->experts / wave;
        const unsigned v = a->experts % wave == 0 && route_variant(exact, AOT_ROUTE_LANE_GROUPS, 0) ? exact : vpt;
        if (route_whole_runs(a, v, esize)) p.vpt = v, p.layout = AOT_ROUTE_LANE_GROUPS, p.vec = 1;
    }
    p.vec_bias = p.vec && a->bias && !aot_misaligned(a->bias, AOT_ROUTE_CHUNK(4 * p.vpt));
    return p;
}

/* Rows a block of AOT_TOPK_BLOCK threads takes: a wave a row, the plan's lanes a row in the
 * rows layout, or for hash routing without softmax the power of two at or above k lanes a row. */
static unsigned route_rows_per_block(const route_plan *p, int k, unsigned wave)
{
    unsigned lanes = 1;
    while (p->layout == AOT_ROUTE_HASH && lanes < (unsigned)k) lanes <<= 1;
    return AOT_TOPK_BLOCK / (p->layout == AOT_ROUTE_HASH ? lanes : p->layout == AOT_ROUTE_ROWS || p->layout == AOT_ROUTE_SELECT ? p->lanes : wave);
}

aiter_aot_status aiter_aot_topk_route(const aiter_aot_topk_route_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_topk_route_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "topk_route", &d);
    if (s == AITER_AOT_STATUS_OK) s = route_check(&a, &d);
    if (s != AITER_AOT_STATUS_OK || a.tokens == 0) return aot_api_return(s, &d);
    unsigned wave, vpt;
    s = aot_op_lanes(aot_kernel_name(AOT_K_topk_route_v1), sizeof(aot_route_kargs), a.experts, &wave, &vpt, &d);
    if (s != AITER_AOT_STATUS_OK) return aot_api_return(s, &d);
    const route_plan p = route_plan_for(&a, vpt, wave);
    const int grouped = a.n_group > 1 && !a.input_ids;
    aot_route_kargs k = {.gating = a.gating, .bias = a.input_ids ? NULL : a.bias, .input_ids = a.input_ids,
                         .tid2eid = a.tid2eid, .weights = a.topk_weights, .ids = a.topk_ids,
                         .row_stride = a.gating_row_stride, .vocab = a.vocab, .tokens = a.tokens,
                         .experts = a.experts, .k = a.k, .scoring = (int32_t)a.scoring,
                         .n_group = grouped ? a.n_group : 1, .topk_group = grouped ? a.topk_group : 1,
                         .renormalize = a.renormalize != 0, .dtype = (int32_t)a.gating_dtype,
                         .ids_int64 = a.topk_ids_int64 != 0, .hash_int64 = a.hash_ids_int64 != 0,
                         .scale = a.routed_scaling_factor == 0.0f ? 1.0f : a.routed_scaling_factor, .vec = p.vec,
                         .vec_bias = p.vec_bias, .group_shift = p.group_shift};
    const unsigned rows_per_block = route_rows_per_block(&p, a.k, wave);
    const unsigned grid = (unsigned)((a.tokens + rows_per_block - 1) / rows_per_block);
    const char *name = route_variant(p.vpt, p.layout, p.lanes);
    if (name == NULL) /* not reached: experts <= 1024 and wave >= 32 */
        return aot_api_return(aot_fail(&d, AITER_AOT_STATUS_UNSUPPORTED, "topk_route: no kernel for %u experts a lane", p.vpt), &d);
    return aot_api_return(aot_op_launch(name, &k, sizeof k, grid, AOT_TOPK_BLOCK, 0, stream, &d), &d);
}

/* ---- moe_align_block_size ---- */

/* moe_sorting's workspace (aiter_aot_moe_sorting_workspace_size), then num_valid [2]. */
size_t aiter_aot_moe_align_workspace_size(int32_t tokens, int32_t k, int32_t experts)
{
    size_t n = aiter_aot_moe_sorting_workspace_size(tokens, k, experts);
    return n ? n + 2 * sizeof(int32_t) : 0;
}

size_t aiter_aot_moe_align_max_padded(int32_t tokens, int32_t k, int32_t experts, int32_t block_size)
{
    /* the op's limits (align_check): a shape it refuses has no size */
    if (aiter_aot_moe_align_workspace_size(tokens, k, experts) == 0 || block_size < 1 || block_size > 256) return 0;
    return (size_t)((int64_t)tokens * k + (int64_t)experts * (block_size - 1));
}

static aiter_aot_status align_check(const aiter_aot_moe_align_block_size_args *a, aot_diag *d)
{
    AOT_INVALID_IF(!a->topk_ids || !a->sorted_token_ids || !a->expert_ids || !a->num_tokens_post_pad || !a->workspace, d,
                   "moe_align_block_size: topk_ids, the three outputs and workspace must not be NULL");
    AOT_INVALID_IF(a->tokens < 1 || a->tokens >= (1 << 24), d, "moe_align_block_size: tokens = %d; supported 1..2^24-1",
                   a->tokens);
    AOT_INVALID_IF(a->experts < 1 || a->experts > AOT_MOE_MAX_EXPERTS, d,
                   "moe_align_block_size: experts = %d; supported 1..%d", a->experts, AOT_MOE_MAX_EXPERTS);
    AOT_INVALID_IF(a->k < 1 || a->k > AOT_MOE_MAX_K || a->k > a->experts, d,
                   "moe_align_block_size: k = %d; need 1 <= k <= min(%d, experts = %d)", a->k, AOT_MOE_MAX_K, a->experts);
    AOT_INVALID_IF(a->block_size < 1 || a->block_size > 256, d, "moe_align_block_size: block_size = %d; supported 1..256",
                   a->block_size);
    const size_t need = aiter_aot_moe_align_workspace_size(a->tokens, a->k, a->experts);
    AOT_INVALID_IF(a->workspace_size < need, d,
                   "moe_align_block_size: workspace_size %zu < %zu (aiter_aot_moe_align_workspace_size)", a->workspace_size,
                   need);
    AOT_INVALID_IF(aot_misaligned(a->topk_ids, 4) || aot_misaligned(a->sorted_token_ids, 4) ||
                       aot_misaligned(a->expert_ids, 4) || aot_misaligned(a->num_tokens_post_pad, 4) ||
                       aot_misaligned(a->workspace, 4) || aot_misaligned(a->expert_map, 4),
                   d, "moe_align_block_size: a pointer is not 4-byte aligned");
    return AITER_AOT_STATUS_OK;
}

/* moe_sorting's counting and layout kernels, then the scatter, each launched early. */
static aiter_aot_status align_launches(aot_moe_align_kargs *k, void *stream, aot_diag *d)
{
    AOT_FORWARD(aot_op_launch(aot_kernel_name(AOT_K_moe_sort_count), &k->sort, sizeof k->sort, (unsigned)k->sort.chunks,
                              AOT_MOE_BLOCK, 0, stream, d));
    AOT_FORWARD(aot_op_launch(aot_kernel_name(AOT_K_moe_sort_chunk_scan), &k->sort, sizeof k->sort,
                              (unsigned)k->sort.experts, AOT_MOE_BLOCK, AOT_LAUNCH_FOLLOWS, stream, d));
    return aot_op_launch(aot_kernel_name(AOT_K_moe_align_scatter), k, sizeof *k, (unsigned)k->scatter_blocks, AOT_MOE_BLOCK,
                         AOT_LAUNCH_FOLLOWS, stream, d);
}

aiter_aot_status aiter_aot_moe_align_block_size(const aiter_aot_moe_align_block_size_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_moe_align_block_size_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "moe_align_block_size", &d);
    if (s == AITER_AOT_STATUS_OK) s = align_check(&a, &d);
    if (s != AITER_AOT_STATUS_OK) return aot_api_return(s, &d);
    const int64_t chunks = ((int64_t)a.tokens + AOT_MOE_CHUNK_TOKENS - 1) / AOT_MOE_CHUNK_TOKENS;
    const int64_t max_padded = (int64_t)aiter_aot_moe_align_max_padded(a.tokens, a.k, a.experts, a.block_size);
    const int64_t pad_blocks = (a.experts + AOT_MOE_PAD_EXPERTS - 1) / AOT_MOE_PAD_EXPERTS;
    /* the workspace as moe_sorting lays it out: counts [experts][chunks], expert_info
     * [3 experts], done [1], ranked [tokens k]; then num_valid [2] */
    int32_t *ws = a.workspace, *info = ws + a.experts * chunks, *ranked = info + 3 * a.experts + 1;
    aot_moe_align_kargs k = {.sort = {.ids = a.topk_ids, .counts = ws, .expert_info = info, .ranked = ranked,
                                      .done = info + 3 * a.experts, .num_valid = ranked + (int64_t)a.tokens * a.k,
                                      .tokens = a.tokens, .k = a.k, .experts = a.experts,
                                      .block_size = a.block_size, .chunks = (int32_t)chunks},
                             .sorted_ids = a.sorted_token_ids, .expert_ids = a.expert_ids,
                             .post_pad = a.num_tokens_post_pad, .expert_map = a.expert_map,
                             .max_padded = (int32_t)max_padded,
                             .max_blocks = (int32_t)((max_padded + a.block_size - 1) / a.block_size),
                             .scatter_blocks = (int32_t)(chunks > pad_blocks ? chunks : pad_blocks)};
    return aot_api_return(align_launches(&k, stream, &d), &d);
}
