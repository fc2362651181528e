/* moe_sorting.hip : group (token, slot) pairs by expert, stably, padded per expert to a
 * multiple of block_size (semantics in runtime/include/aiter_aot_moe.h). Four launches:
 *  1. moe_sort_count      per chunk of AOT_MOE_CHUNK_TOKENS tokens, how many pairs each expert
 *                         got (and the optional zero-fill of moe_buf);
 *  2. moe_sort_chunk_scan per expert, exclusive scan of its chunk counts -> where each chunk's
 *                         pairs start inside the expert's segment, and the expert's total;
 *  3. moe_sort_experts    one block: mask, padding and exclusive scan over experts -> segment
 *                         starts, sorted_expert_ids, padding entries and num_valid_ids;
 *  4. moe_sort_scatter    per chunk, each expert's pairs in (token, slot) order to their place.
 * Counting and scattering walk a chunk's pairs in order, a wave's width at a time, finding the
 * lanes with the same expert in one wave operation (rank_pairs). Every step is deterministic;
 * no atomics. */
#include "aot_device.h"
#include "moe_kargs.h"

#define CHUNK_PAIRS (AOT_MOE_CHUNK_TOKENS * 32) /* k <= 32 */

AOT_DEV int load_chunk(const aot_moe_sort_kargs &a, int chunk, int *ids_s)
{
    int t0 = chunk * AOT_MOE_CHUNK_TOKENS;
    int nt = a.tokens - t0 < AOT_MOE_CHUNK_TOKENS ? a.tokens - t0 : AOT_MOE_CHUNK_TOKENS;
    int pairs = nt * a.k;
    for (int p = aot_thread_x(); p < pairs; p += AOT_MOE_BLOCK) ids_s[p] = a.ids[(aot_i64)t0 * a.k + p];
    aot_sync_block();
    return pairs;
}

/* Walks the chunk's pairs in order, a wave's width at a time on wave 0: a pair of expert e
 * goes to run[e] + (how many earlier pairs of this step have e), then run[e] moves past them,
 * so each expert's pairs keep their (token, slot) order. place(p, pos) is called for every
 * pair whose id is an expert. Every thread of the block must call it (the barriers). */
template <class F>
AOT_DEV void rank_pairs(const int *ids_s, int pairs, int experts, int *run, F place)
{
    const bool w0 = aot_thread_x() < AOT_WAVE;
    for (int p0 = 0; p0 < pairs; p0 += AOT_WAVE) {
        const int p = p0 + aot_lane(), id = p < pairs ? ids_s[p] : -1, e = id >= 0 && id < experts ? id : -1;
        int rank = 0, count = 0, pos = 0;
        if (w0) aot_wave_peers(e, &rank, &count);
        if (w0 && e >= 0) pos = run[e] + rank;
        aot_sync_block(); /* every lane has read run[e] before it moves */
        if (w0 && e >= 0) {
            place(p, pos);
            if (rank == count - 1) run[e] += count;
        }
        aot_sync_block();
    }
}

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MOE_BLOCK) void moe_sort_count(aot_moe_sort_kargs a)
{
    AOT_SHARED(int, ids_s, CHUNK_PAIRS);
    AOT_SHARED(int, run, AOT_MOE_MAX_EXPERTS);
    const int c = aot_block_x();
    for (int e = aot_thread_x(); e < a.experts; e += AOT_MOE_BLOCK) run[e] = 0;
    int pairs = load_chunk(a, c, ids_s); /* its barrier also covers run */
    rank_pairs(ids_s, pairs, a.experts, run, [](int, int) {});
    for (int e = aot_thread_x(); e < a.experts; e += AOT_MOE_BLOCK) a.counts[(aot_i64)e * a.chunks + c] = run[e];
    if (a.moe_buf)
        for (aot_i64 w = (aot_i64)c * AOT_MOE_BLOCK + aot_thread_x(); w < a.moe_buf_words;
             w += (aot_i64)a.chunks * AOT_MOE_BLOCK)
            a.moe_buf[w] = 0;
}
AOT_EMU_ENTRY(moe_sort_count, aot_moe_sort_kargs)

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MOE_BLOCK) void moe_sort_chunk_scan(aot_moe_sort_kargs a)
{
    AOT_SHARED(int, scratch, AOT_MOE_BLOCK / AOT_WAVE);
    const int e = aot_block_x();
    int *row = a.counts + (aot_i64)e * a.chunks, carry = 0;
    for (int c0 = 0; c0 < a.chunks; c0 += AOT_MOE_BLOCK) {
        int c = c0 + aot_thread_x(), v = c < a.chunks ? row[c] : 0, tile;
        int before = aot_block_exclusive_scan_i32<AOT_MOE_BLOCK>(v, scratch, &tile);
        if (c < a.chunks) row[c] = carry + before;
        carry += tile;
    }
    if (aot_thread_x() == 0) a.expert_info[e] = carry;
}
AOT_EMU_ENTRY(moe_sort_chunk_scan, aot_moe_sort_kargs)

#define EXPERT_BLOCK AOT_MOE_MAX_EXPERTS

AOT_DEV int padding_id(const aot_moe_sort_kargs &a) { return (a.k << 24) | a.tokens; }

AOT_KERNEL AOT_LAUNCH_BOUNDS(EXPERT_BLOCK) void moe_sort_experts(aot_moe_sort_kargs a)
{
    AOT_SHARED(int, scratch, EXPERT_BLOCK / AOT_WAVE);
    const int e = aot_thread_x(), bs = a.block_size;
    int total = e < a.experts ? a.expert_info[e] : 0;
    int local = e < a.experts && (a.mask == 0 || a.mask[e] != 0);
    int padded = local ? (total + bs - 1) / bs * bs : 0, all, nlocal;
    int base = aot_block_exclusive_scan_i32<EXPERT_BLOCK>(padded, scratch, &all);
    int lid = aot_block_exclusive_scan_i32<EXPERT_BLOCK>(local, scratch, &nlocal);
    if (e < a.experts) a.expert_info[a.experts + e] = padded ? base : -1;
    for (int i = total; i < padded; i++) a.sorted_ids[base + i] = padding_id(a), a.sorted_weights[base + i] = 0.0f;
    for (int b = 0; b < padded / bs; b++) a.sorted_expert_ids[base / bs + b] = lid;
    for (int i = all + e; i < a.max_padded; i += EXPERT_BLOCK)
        a.sorted_ids[i] = padding_id(a), a.sorted_weights[i] = 0.0f;
    for (int b = all / bs + e; b < a.max_blocks; b += EXPERT_BLOCK) a.sorted_expert_ids[b] = -1;
    if (e == 0) a.num_valid[0] = all, a.num_valid[1] = a.tokens;
}
AOT_EMU_ENTRY(moe_sort_experts, aot_moe_sort_kargs)

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MOE_BLOCK) void moe_sort_scatter(aot_moe_sort_kargs a)
{
    AOT_SHARED(int, ids_s, CHUNK_PAIRS);
    AOT_SHARED(int, run, AOT_MOE_MAX_EXPERTS);
    const int c = aot_block_x(), t0 = c * AOT_MOE_CHUNK_TOKENS;
    for (int e = aot_thread_x(); e < a.experts; e += AOT_MOE_BLOCK) { /* masked-out experts: below 0 */
        const int base = a.expert_info[a.experts + e];
        run[e] = base < 0 ? -0x40000000 : base + a.counts[(aot_i64)e * a.chunks + c];
    }
    int pairs = load_chunk(a, c, ids_s);
    rank_pairs(ids_s, pairs, a.experts, run, [&](int p, int pos) {
        if (pos < 0) return;
        a.sorted_ids[pos] = (p % a.k) << 24 | (t0 + p / a.k);
        a.sorted_weights[pos] = a.weights[(aot_i64)t0 * a.k + p];
    });
}
AOT_EMU_ENTRY(moe_sort_scatter, aot_moe_sort_kargs)
