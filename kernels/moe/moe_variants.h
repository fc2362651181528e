/* moe_variants.h : every kernel of the MoE family (topk_softmax.hip, moe_sorting.hip,
 * topk_route.hip, moe_align.hip); see
 * kernels/include/aot_variants.h. */
#ifndef AOT_MOE_VARIANTS_H
#define AOT_MOE_VARIANTS_H

/* The logits' types a topk kernel takes: any, 16-bit only or fp32 only (the _rows4 kernels
 * come in the latter two, each with its own register budget). */
#define TOPK_ANY 0
#define TOPK_16BIT 1
#define TOPK_F32 2

/* X(name, kargs, vpt, full, rows, dtypes, blocks): vpt logits a lane; full: rows of exactly
 * vpt * wave experts; rows a wave; blocks a multiprocessor must hold on NVIDIA (topk_softmax.hip
 * says why each). */
#define AOT_TOPK_VARIANTS(X)                                                                    \
    X(topk_softmax_v1, aot_topk_kargs, 1, false, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)          \
    X(topk_softmax_v1_full, aot_topk_kargs, 1, true, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)      \
    X(topk_softmax_v2, aot_topk_kargs, 2, false, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)          \
    X(topk_softmax_v2_full, aot_topk_kargs, 2, true, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)      \
    X(topk_softmax_v4, aot_topk_kargs, 4, false, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)          \
    X(topk_softmax_v4_full, aot_topk_kargs, 4, true, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)      \
    X(topk_softmax_v8, aot_topk_kargs, 8, false, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)          \
    X(topk_softmax_v8_full, aot_topk_kargs, 8, true, 1, TOPK_ANY, AOT_TOPK_ONE_ROW_BLOCKS)      \
    X(topk_softmax_v16, aot_topk_kargs, 16, false, 1, TOPK_ANY, 6)                              \
    X(topk_softmax_v16_full, aot_topk_kargs, 16, true, 1, TOPK_ANY, 6)                          \
    X(topk_softmax_v1_rows4, aot_topk_kargs, 1, false, AOT_TOPK_ROWS, TOPK_16BIT, 5)            \
    X(topk_softmax_v1_rows4_full, aot_topk_kargs, 1, true, AOT_TOPK_ROWS, TOPK_16BIT, 5)        \
    X(topk_softmax_v1_rows4_f32, aot_topk_kargs, 1, false, AOT_TOPK_ROWS, TOPK_F32, 5)          \
    X(topk_softmax_v1_rows4_f32_full, aot_topk_kargs, 1, true, AOT_TOPK_ROWS, TOPK_F32, 5)      \
    X(topk_softmax_v2_rows4, aot_topk_kargs, 2, false, AOT_TOPK_ROWS, TOPK_16BIT, 5)            \
    X(topk_softmax_v2_rows4_full, aot_topk_kargs, 2, true, AOT_TOPK_ROWS, TOPK_16BIT, 5)        \
    X(topk_softmax_v2_rows4_f32, aot_topk_kargs, 2, false, AOT_TOPK_ROWS, TOPK_F32, 5)          \
    X(topk_softmax_v2_rows4_f32_full, aot_topk_kargs, 2, true, AOT_TOPK_ROWS, TOPK_F32, 5)      \
    X(topk_softmax_v4_rows4, aot_topk_kargs, 4, false, AOT_TOPK_ROWS, TOPK_16BIT, 5)            \
    X(topk_softmax_v4_rows4_full, aot_topk_kargs, 4, true, AOT_TOPK_ROWS, TOPK_16BIT, 5)        \
    X(topk_softmax_v4_rows4_f32, aot_topk_kargs, 4, false, AOT_TOPK_ROWS, TOPK_F32, 5)          \
    X(topk_softmax_v4_rows4_f32_full, aot_topk_kargs, 4, true, AOT_TOPK_ROWS, TOPK_F32, 5)      \
    X(topk_softmax_v8_rows4, aot_topk_kargs, 8, false, AOT_TOPK_ROWS, TOPK_16BIT, 6)            \
    X(topk_softmax_v8_rows4_full, aot_topk_kargs, 8, true, AOT_TOPK_ROWS, TOPK_16BIT, 6)        \
    X(topk_softmax_v8_rows4_f32, aot_topk_kargs, 8, false, AOT_TOPK_ROWS, TOPK_F32, 5)          \
    X(topk_softmax_v8_rows4_f32_full, aot_topk_kargs, 8, true, AOT_TOPK_ROWS, TOPK_F32, 5)

/* The kernels only a 32-lane wave reaches, built only where AOT_WAVE is 32: 32 experts a lane
 * serve 513..1024 experts there, and a 64-lane wave holds the ops' 1024 with 16. */
#define AOT_TOPK_WAVE32_VARIANTS(X)                                                             \
    X(topk_softmax_v32, aot_topk_kargs, 32, false, 1, TOPK_ANY, 3)                              \
    X(topk_softmax_v32_full, aot_topk_kargs, 32, true, 1, TOPK_ANY, 3)

/* X(name, kargs): moe_sorting's three kernels, in launch order */
#define AOT_MOE_SORT_VARIANTS(X)                                                                \
    X(moe_sort_count, aot_moe_sort_kargs)                                                       \
    X(moe_sort_chunk_scan, aot_moe_sort_kargs)                                                  \
    X(moe_sort_scatter, aot_moe_sort_kargs)

/* X(name, kargs, vpt, layout, lanes, blocks): the routers (topk_route.hip), vpt experts a lane,
 * lanes lanes a row (0: the whole wave), blocks a multiprocessor must hold on NVIDIA (registers
 * capped to fit; 0: the compiler's choice). route_plan_for (op_route.c) picks one. Layouts, each
 * its own kernel so that one path's registers do not limit another's occupancy:
 *   AOT_ROUTE_ROWS         lanes lanes a row, wave / lanes rows a wave; lane l holds runs of 4
 *                          experts, run c at 4 (l + lanes c): ungrouped rows, and groups of
 *                          4 lanes experts (DeepSeek-V3's 32 at 8 lanes), where every run loads
 *                          whole, k <= lanes and the bias (if any) is 16-byte aligned,
 *                          from 8192 tokens (op_route.c: ROWS_MIN_TOKENS);
 *   AOT_ROUTE_STRIDED      lane l holds experts l, l + wave, ...: other ungrouped rows whose
 *                          runs do not load whole;
 *   AOT_ROUTE_GENERAL      the same layout for groups that do not fall on whole lanes and for
 *                          hash routing with softmax;
 *   AOT_ROUTE_LANE_GROUPS  lane l holds experts l vpt .. l vpt + vpt - 1, each group on whole
 *                          lanes, or ungrouped rows whose runs load whole (vpt 6 and 12: 384
 *                          experts at wave 64 and 32);
 *   AOT_ROUTE_HASH         hash routing with sigmoid or sqrt-softplus: a power-of-two group of
 *                          lanes a row, a lane a slot (vpt unused);
 *   AOT_ROUTE_SELECT       lanes lanes a row, lane l holding experts l vpt .. l vpt + vpt - 1:
 *                          rows of exactly vpt * lanes experts whose runs load whole, groups (if
 *                          any) on whole lanes, k <= lanes, a 16-byte aligned bias; a threshold
 *                          and a ranked list in place of k rounds (topk_route.hip).
 * Elsewhere vpt is the smallest power of two with vpt * wave >= experts. */
#define AOT_ROUTE_STRIDED 0
#define AOT_ROUTE_LANE_GROUPS 1
#define AOT_ROUTE_HASH 2
#define AOT_ROUTE_GENERAL 3
#define AOT_ROUTE_ROWS 4
#define AOT_ROUTE_SELECT 5
#define AOT_ROUTE_VARIANTS(X)                                                                   \
    X(topk_route_select_v32_l8, aot_route_kargs, 32, AOT_ROUTE_SELECT, 8, 0)                    \
    X(topk_route_select_v48_l8, aot_route_kargs, 48, AOT_ROUTE_SELECT, 8, 3)                    \
    X(topk_route_rows_v8_l8, aot_route_kargs, 8, AOT_ROUTE_ROWS, 8, 0)                          \
    X(topk_route_rows_v16_l8, aot_route_kargs, 16, AOT_ROUTE_ROWS, 8, 0)                        \
    X(topk_route_rows_v32_l8, aot_route_kargs, 32, AOT_ROUTE_ROWS, 8, 0)                        \
    X(topk_route_rows_v24_l16, aot_route_kargs, 24, AOT_ROUTE_ROWS, 16, 0)                      \
    X(topk_route_v1, aot_route_kargs, 1, AOT_ROUTE_STRIDED, 0, 0)                               \
    X(topk_route_v2, aot_route_kargs, 2, AOT_ROUTE_STRIDED, 0, 0)                               \
    X(topk_route_v4, aot_route_kargs, 4, AOT_ROUTE_STRIDED, 0, 0)                               \
    X(topk_route_v8, aot_route_kargs, 8, AOT_ROUTE_STRIDED, 0, 0)                               \
    X(topk_route_v16, aot_route_kargs, 16, AOT_ROUTE_STRIDED, 0, 0)                             \
    X(topk_route_groups_v1, aot_route_kargs, 1, AOT_ROUTE_LANE_GROUPS, 0, 0)                    \
    X(topk_route_groups_v2, aot_route_kargs, 2, AOT_ROUTE_LANE_GROUPS, 0, 0)                    \
    X(topk_route_groups_v4, aot_route_kargs, 4, AOT_ROUTE_LANE_GROUPS, 0, 0)                    \
    X(topk_route_groups_v6, aot_route_kargs, 6, AOT_ROUTE_LANE_GROUPS, 0, 0)                    \
    X(topk_route_groups_v8, aot_route_kargs, 8, AOT_ROUTE_LANE_GROUPS, 0, 0)                    \
    X(topk_route_groups_v12, aot_route_kargs, 12, AOT_ROUTE_LANE_GROUPS, 0, 0)                  \
    X(topk_route_groups_v16, aot_route_kargs, 16, AOT_ROUTE_LANE_GROUPS, 0, 0)                  \
    X(topk_route_general_v1, aot_route_kargs, 1, AOT_ROUTE_GENERAL, 0, 0)                       \
    X(topk_route_general_v2, aot_route_kargs, 2, AOT_ROUTE_GENERAL, 0, 0)                       \
    X(topk_route_general_v4, aot_route_kargs, 4, AOT_ROUTE_GENERAL, 0, 0)                       \
    X(topk_route_general_v8, aot_route_kargs, 8, AOT_ROUTE_GENERAL, 0, 0)                       \
    X(topk_route_general_v16, aot_route_kargs, 16, AOT_ROUTE_GENERAL, 0, 0)                     \
    X(topk_route_hash, aot_route_kargs, 1, AOT_ROUTE_HASH, 0, 1)
/* The routers only a 32-lane wave reaches (AOT_TOPK_WAVE32_VARIANTS says why). */
#define AOT_ROUTE_WAVE32_VARIANTS(X)                                                            \
    X(topk_route_v32, aot_route_kargs, 32, AOT_ROUTE_STRIDED, 0, 0)                             \
    X(topk_route_groups_v32, aot_route_kargs, 32, AOT_ROUTE_LANE_GROUPS, 0, 0)                  \
    X(topk_route_general_v32, aot_route_kargs, 32, AOT_ROUTE_GENERAL, 0, 0)

/* X(name, kargs): moe_align_block_size's own kernel (moe_align.hip), launched after
 * moe_sorting's first two */
#define AOT_MOE_ALIGN_VARIANTS(X) X(moe_align_scatter, aot_moe_align_kargs)

#endif
