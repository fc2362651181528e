/* moe_align.hip : vLLM's moe_align_block_size layout (semantics in
 * runtime/include/aiter_aot_moe.h). The runtime first launches moe_sorting's moe_sort_count
 * and moe_sort_chunk_scan (kernels/moe/moe_sorting.hip), which rank each (token, slot) pair
 * among its expert's pairs, stably, and lay the experts' padded segments out; this kernel then
 * writes the pairs' flat ids to their places, the padding, the per-block expert ids and
 * num_tokens_post_pad. Launched early: it waits for moe_sort_chunk_scan first. */
#include "aot_device.h"
#include "moe_kargs.h"
#include "moe_variants.h" /* the kernel this file instantiates */

/* A ranked pair as moe_sort_count packs it (moe_sorting.hip's RANK_SHIFT, which this must
 * equal): expert + 1 in the low RANK_SHIFT bits, its rank in its chunk above. */
#define RANK_SHIFT 11

AOT_DEV int align_round_up(int n, int m) { return (n + m - 1) / m * m; }

/* The block id of expert e's blocks: the expert, or expert_map's local id. */
AOT_DEV int block_expert(const aot_moe_align_kargs &a, int e) { return a.expert_map ? a.expert_map[e] : e; }

/* Padding, block ids and the tail, shared by all blocks: one expert a wave. */
AOT_DEV void align_fill(const aot_moe_align_kargs &a, int c)
{
    const aot_moe_sort_kargs &s = a.sort;
    const int bs = s.block_size, t = aot_thread_x(), lane = aot_lane(), all = s.num_valid[0];
    const int pad = s.tokens * s.k, waves = a.scatter_blocks * (AOT_MOE_BLOCK / AOT_WAVE);
    for (int x = c * (AOT_MOE_BLOCK / AOT_WAVE) + t / AOT_WAVE; x < s.experts; x += waves) {
        const int b0 = s.expert_info[s.experts + x];
        if (b0 < 0) continue;
        const int total = s.expert_info[x], n = align_round_up(total, bs), id = block_expert(a, x);
        for (int i = total + lane; i < n; i += AOT_WAVE) a.sorted_ids[b0 + i] = pad;
        for (int b = lane; b < n / bs; b += AOT_WAVE) a.expert_ids[b0 / bs + b] = id;
    }
    const int stride = a.scatter_blocks * AOT_MOE_BLOCK;
    for (int i = all + c * AOT_MOE_BLOCK + t; i < a.max_padded; i += stride) a.sorted_ids[i] = pad;
    /* blocks past the last: vLLM zero-fills expert_ids before its map */
    for (int b = all / bs + c * AOT_MOE_BLOCK + t; b < a.max_blocks; b += stride) a.expert_ids[b] = block_expert(a, 0);
    if (c == 0 && t == 0) a.post_pad[0] = all;
}

/* Blocks past the last chunk (there are scatter_blocks) only pad. */
AOT_DEV void align_scatter_body(const aot_moe_align_kargs &a)
{
    AOT_SHARED(int, start, AOT_MOE_MAX_EXPERTS);
    const aot_moe_sort_kargs &s = a.sort;
    const int c = aot_block_x();
    aot_grid_wait();
    if (c < s.chunks) {
        const int t0 = c * AOT_MOE_CHUNK_TOKENS, nt = s.tokens - t0 < AOT_MOE_CHUNK_TOKENS ? s.tokens - t0 : AOT_MOE_CHUNK_TOKENS;
        const int pairs = nt * s.k;
        for (int e = aot_thread_x(); e < s.experts; e += AOT_MOE_BLOCK)
            start[e] = s.expert_info[s.experts + e] + s.counts[(aot_i64)e * s.chunks + c];
        aot_sync_block();
        for (int p = aot_thread_x(); p < pairs; p += AOT_MOE_BLOCK) {
            const int x = s.ranked[(aot_i64)t0 * s.k + p], e = (x & ((1 << RANK_SHIFT) - 1)) - 1;
            if (e >= 0) a.sorted_ids[start[e] + (x >> RANK_SHIFT)] = t0 * s.k + p;
        }
    }
    align_fill(a, c);
}

/* The kernel of the family's list (moe_variants.h). */
#define ALIGN_KERNEL(name, kargs)                                                             \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MOE_BLOCK) void name(kargs a)                            \
    {                                                                                         \
        align_scatter_body(a);                                                                \
    }                                                                                         \
    AOT_EMU_ENTRY(name, kargs)
AOT_MOE_ALIGN_VARIANTS(ALIGN_KERNEL)
