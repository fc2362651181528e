/* moe_sorting.hip : group (token, slot) pairs by expert, stably, padded per expert to a
 * multiple of block_size (semantics in runtime/include/aiter_aot_moe.h). Three launches, the
 * second and third launched early (aot_grid_wait; each waits for the one before it):
 *  1. moe_sort_count      per chunk of AOT_MOE_CHUNK_TOKENS tokens: each pair's rank among the
 *                         chunk's pairs of its expert (to the `ranked` workspace), how many pairs
 *                         each expert got (and the optional zero-fill of moe_buf);
 *  2. moe_sort_chunk_scan per expert, exclusive scan of its chunk counts -> where each chunk's
 *                         pairs start inside the expert's segment, and the expert's total; the
 *                         last block to finish lays out the experts (mask, padding, exclusive
 *                         scan -> segment starts, local ids, num_valid_ids);
 *  3. moe_sort_scatter    per chunk, each pair to its place; every block (at least one per
 *                         AOT_MOE_PAD_EXPERTS experts) also writes the padding and block
 *                         ids of a share of the experts, and of the unused tail.
 * Counting ranks a chunk's pairs with every wave at once (rank_chunk). The output is
 * deterministic: the one atomic only elects the block that lays out the experts. */
#include "aot_device.h"
#include "moe_kargs.h"

#define CHUNK_PAIRS (AOT_MOE_CHUNK_TOKENS * AOT_MOE_MAX_K)
#define WAVES (AOT_MOE_BLOCK / AOT_WAVE)
#define RANK_SHIFT 11 /* packed pair: expert + 1 (0..1024) below, rank (< CHUNK_PAIRS) above */

/* The expert of a packed pair (rank_chunk), -1 when it names none. */
AOT_DEV int packed_expert(int x) { return (x & ((1 << RANK_SHIFT) - 1)) - 1; }

/* What a block knows of its chunk: first token, pairs, and the pairs each wave ranks. */
typedef struct {
    int t0, pairs, span;
} chunk_view;

AOT_DEV chunk_view chunk_of(const aot_moe_sort_kargs &a, int chunk)
{
    const int t0 = chunk * AOT_MOE_CHUNK_TOKENS, nt = a.tokens - t0 < AOT_MOE_CHUNK_TOKENS ? a.tokens - t0 : AOT_MOE_CHUNK_TOKENS;
    const int pairs = nt * a.k;
    return {t0, pairs, (pairs + AOT_MOE_BLOCK - 1) / AOT_MOE_BLOCK * AOT_WAVE};
}

/* Ranks the chunk's pairs by expert, stably. Wave w takes pairs [w span, (w + 1) span), a
 * wave's width at a time: the lanes holding one expert find each other in one wave operation
 * (aot_wave_peers), the first of them reads how many of that expert the wave has met so far
 * and the last adds them. After it (and its closing barrier) counts[w][e] is how many pairs of
 * expert e wave w holds, and packed[p] holds pair p's expert + 1 (0: not an expert) and its
 * rank among the wave's pairs of that expert. Every thread of the block must call it. */
AOT_DEV void rank_chunk(const aot_moe_sort_kargs &a, const chunk_view &v, int *packed, int *counts)
{
    for (int i = aot_thread_x(); i < WAVES * a.experts; i += AOT_MOE_BLOCK) counts[i] = 0;
    aot_sync_block();
    const int w = aot_thread_x() / AOT_WAVE;
    int *mine = counts + w * a.experts;
    for (int p0 = w * v.span; p0 < (w + 1) * v.span; p0 += AOT_WAVE) {
        const int p = p0 + aot_lane(), id = p < v.pairs ? a.ids[(aot_i64)v.t0 * a.k + p] : -1;
        const int e = id >= 0 && id < a.experts ? id : -1;
        int rank, count, first;
        aot_wave_peers(e, &rank, &count, &first);
        const int seen = aot_shfl_i32(e >= 0 && rank == 0 ? mine[e] : 0, first);
        if (p < v.pairs) packed[p] = (e + 1) | (seen + rank) << RANK_SHIFT;
        aot_sync_wave(); /* every first lane has read before a last lane writes */
        if (e >= 0 && rank == count - 1) mine[e] = seen + count;
        aot_sync_wave(); /* and the next step reads what it wrote */
    }
    aot_sync_block();
}

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MOE_BLOCK) void moe_sort_count(aot_moe_sort_kargs a)
{
    AOT_SHARED(int, packed, CHUNK_PAIRS);
    AOT_SHARED(int, counts, WAVES * AOT_MOE_MAX_EXPERTS);
    const int c = aot_block_x();
    aot_grid_launch_next(); /* each launch lets the next start, which waits for it */
    const chunk_view v = chunk_of(a, c);
    rank_chunk(a, v, packed, counts);
    for (int e = aot_thread_x(); e < a.experts; e += AOT_MOE_BLOCK) { /* counts become each wave's start */
        int at = 0;
        for (int w = 0; w < WAVES; w++) {
            const int n = counts[w * a.experts + e];
            counts[w * a.experts + e] = at, at += n;
        }
        a.counts[(aot_i64)e * a.chunks + c] = at;
    }
    if (c == 0 && aot_thread_x() == 0) *a.done = 0; /* for the next launch's election */
    aot_sync_block();
    for (int p = aot_thread_x(); p < v.pairs; p += AOT_MOE_BLOCK) {
        const int x = packed[p], e = packed_expert(x);
        a.ranked[(aot_i64)v.t0 * a.k + p] = e < 0 ? 0 : x + (counts[p / v.span * a.experts + e] << RANK_SHIFT);
    }
    if (a.moe_buf)
        for (aot_i64 w = (aot_i64)c * AOT_MOE_BLOCK + aot_thread_x(); w < a.moe_buf_words;
             w += (aot_i64)a.chunks * AOT_MOE_BLOCK)
            a.moe_buf[w] = 0;
}
AOT_EMU_ENTRY(moe_sort_count, aot_moe_sort_kargs)

AOT_DEV int round_up(int n, int m) { return (n + m - 1) / m * m; }

/* Thread t lays out experts t*per .. t*per+per-1 (per <= AOT_MOE_MAX_EXPERTS / AOT_MOE_BLOCK):
 * masked-in experts get segments of their total rounded up to block_size, in expert order,
 * and consecutive local ids. Every thread of the block must call it. */
AOT_DEV void layout_experts(const aot_moe_sort_kargs &a, int *scratch)
{
    const int per = (a.experts + AOT_MOE_BLOCK - 1) / AOT_MOE_BLOCK, e0 = aot_thread_x() * per;
    int padded[AOT_MOE_MAX_EXPERTS / AOT_MOE_BLOCK], local[AOT_MOE_MAX_EXPERTS / AOT_MOE_BLOCK], psum = 0, lsum = 0;
#pragma unroll
    for (int i = 0; i < AOT_MOE_MAX_EXPERTS / AOT_MOE_BLOCK; i++) {
        const int e = e0 + i, in = i < per && e < a.experts;
        local[i] = in && (a.mask == 0 || a.mask[e] != 0);
        padded[i] = local[i] ? round_up(aot_load_device_i32(a.expert_info + e), a.block_size) : 0;
        psum += padded[i], lsum += local[i];
    }
    int all, nlocal;
    int base = aot_block_exclusive_scan_i32<AOT_MOE_BLOCK>(psum, scratch, &all);
    int lid = aot_block_exclusive_scan_i32<AOT_MOE_BLOCK>(lsum, scratch, &nlocal);
#pragma unroll
    for (int i = 0; i < AOT_MOE_MAX_EXPERTS / AOT_MOE_BLOCK; i++) {
        const int e = e0 + i;
        if (i >= per || e >= a.experts) break;
        a.expert_info[a.experts + e] = padded[i] ? base : -1;
        a.expert_info[2 * a.experts + e] = lid;
        base += padded[i], lid += local[i];
    }
    if (aot_thread_x() == 0) a.num_valid[0] = all, a.num_valid[1] = a.tokens;
}

AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MOE_BLOCK) void moe_sort_chunk_scan(aot_moe_sort_kargs a)
{
    AOT_SHARED(int, scratch, AOT_MOE_BLOCK / AOT_WAVE + 1);
    const int e = aot_block_x();
    aot_grid_launch_next();
    aot_grid_wait();
    int *row = a.counts + (aot_i64)e * a.chunks, carry = 0;
    for (int c0 = 0; c0 < a.chunks; c0 += AOT_MOE_BLOCK) {
        int c = c0 + aot_thread_x(), v = c < a.chunks ? row[c] : 0, tile;
        int before = aot_block_exclusive_scan_i32<AOT_MOE_BLOCK>(v, scratch, &tile);
        if (c < a.chunks) row[c] = carry + before;
        carry += tile;
    }
    int *const last = scratch + AOT_MOE_BLOCK / AOT_WAVE;
    if (aot_thread_x() == 0) {
        a.expert_info[e] = carry;
        aot_fence_device(); /* the total is visible before the count says so */
        *last = aot_atomic_add_i32(a.done, 1) == a.experts - 1;
    }
    aot_sync_block();
    if (!*last) return; /* whole blocks leave together */
    aot_fence_device();
    layout_experts(a, scratch);
}
AOT_EMU_ENTRY(moe_sort_chunk_scan, aot_moe_sort_kargs)

AOT_DEV int padding_id(const aot_moe_sort_kargs &a) { return (a.k << 24) | a.tokens; }

/* The padding entries and block ids of every expert, and the entries past the last segment
 * (num_valid_ids[0] = the padded total), shared by all scatter blocks: one expert per wave, its
 * lanes on consecutive entries. */
AOT_DEV void fill_padding(const aot_moe_sort_kargs &a, int c)
{
    const int bs = a.block_size, t = aot_thread_x(), lane = aot_lane(), all = a.num_valid[0];
    const int waves = a.scatter_blocks * WAVES;
    for (int x = c * WAVES + t / AOT_WAVE; x < a.experts; x += waves) {
        const int b0 = a.expert_info[a.experts + x];
        if (b0 < 0) continue;
        const int total = a.expert_info[x], n = round_up(total, bs), lid = a.expert_info[2 * a.experts + x];
        for (int i = total + lane; i < n; i += AOT_WAVE) a.sorted_ids[b0 + i] = padding_id(a), a.sorted_weights[b0 + i] = 0.0f;
        for (int b = lane; b < n / bs; b += AOT_WAVE) a.sorted_expert_ids[b0 / bs + b] = lid;
    }
    const int stride = a.scatter_blocks * AOT_MOE_BLOCK;
    for (int i = all + c * AOT_MOE_BLOCK + t; i < a.max_padded; i += stride)
        a.sorted_ids[i] = padding_id(a), a.sorted_weights[i] = 0.0f;
    for (int b = all / bs + c * AOT_MOE_BLOCK + t; b < a.max_blocks; b += stride) a.sorted_expert_ids[b] = -1;
}

/* Blocks past the last chunk (there are scatter_blocks) only pad. */
AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_MOE_BLOCK) void moe_sort_scatter(aot_moe_sort_kargs a)
{
    AOT_SHARED(int, start, AOT_MOE_MAX_EXPERTS);
    const int c = aot_block_x();
    aot_grid_wait();
    if (c >= a.chunks) return fill_padding(a, c);
    const chunk_view v = chunk_of(a, c);
    for (int e = aot_thread_x(); e < a.experts; e += AOT_MOE_BLOCK) {
        const int base = a.expert_info[a.experts + e]; /* masked out: below 0 */
        start[e] = base < 0 ? -0x40000000 : base + a.counts[(aot_i64)e * a.chunks + c];
    }
    aot_sync_block();
    for (int p = aot_thread_x(); p < v.pairs; p += AOT_MOE_BLOCK) {
        const int x = a.ranked[(aot_i64)v.t0 * a.k + p], e = packed_expert(x);
        const int pos = e < 0 ? -1 : start[e] + (x >> RANK_SHIFT);
        if (pos < 0) continue;
        a.sorted_ids[pos] = (p % a.k) << 24 | (v.t0 + p / a.k);
        a.sorted_weights[pos] = a.weights[(aot_i64)v.t0 * a.k + p];
    }
    fill_padding(a, c);
}
AOT_EMU_ENTRY(moe_sort_scatter, aot_moe_sort_kargs)
