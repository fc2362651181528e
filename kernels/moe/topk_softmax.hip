/* topk_softmax.hip : softmax over each row of gating logits, then the k largest, one wave per
 * row (semantics in runtime/include/aiter_aot_moe.h).
 *
 * 1. Lane l holds experts l, l+W, l+2W, ... (VPT of them; NaN and padding read as -inf).
 * 2. Wave max, then p = exp(x - max) and the wave sum (rows with +inf or no finite logit are
 *    special-cased so no inf-inf NaN appears).
 * 3. k rounds of a wave argmax (max of the order-preserving key of the logit, then min of the
 *    expert id among the lanes holding it): the winner is marked taken; lane s keeps round s's
 *    result, so the k outputs of a row are written by k lanes at once.
 * fp16/bf16 logits take a shorter path: logit and expert id packed in one 32-bit key, so each
 * round is a local max, one wave max and a clear, and the weights are computed once at the end
 * (topk_row_packed).
 * Variants topk_softmax_v<VPT> exist for VPT = 1..32; the runtime picks the smallest with
 * VPT * wave >= experts. */
#include "aot_device.h"
#include "moe_kargs.h"

AOT_DEV float load_logit(const aot_topk_kargs &a, aot_i64 row, int e)
{
    aot_i64 at = row * a.row_stride + e;
    float x;
    if (a.dtype == AOT_GATING_F32) x = ((const float *)a.gating)[at];
    else if (a.dtype == AOT_GATING_BF16) x = aot_bf16_to_f32(((const aot_u16 *)a.gating)[at]);
    else x = aot_f16_to_f32(((const aot_u16 *)a.gating)[at]);
    return x != x ? -AOT_INF : x;
}

/* Softmax numerator for logit x given the row max (see the header's rules for infinities). */
AOT_DEV float numerator(float x, float mx)
{
    if (mx == AOT_INF) return x == AOT_INF ? 1.0f : 0.0f;
    if (mx == -AOT_INF) return 0.0f;
    return aot_exp_fast(x - mx);
}

/* Lane s < k writes round s's result. */
AOT_DEV void write_row(const aot_topk_kargs &a, int row, int lane, float w, int id, float chosen_sum)
{
    if (lane >= a.k) return;
    if (a.renormalize && chosen_sum > 0.0f) w /= chosen_sum;
    aot_i64 o = (aot_i64)row * a.k + lane;
    a.weights[o] = w;
    a.ids[o] = id;
    if (a.token_expert_indices) a.token_expert_indices[o] = lane * a.tokens + row;
}

/* Does candidate (v, e) beat (bv, be)? Larger logit wins; equal logits: lower expert id. */
AOT_DEV bool beats(float v, int e, float bv, int be) { return v > bv || (v == bv && e < be); }

template <int VPT>
AOT_DEV void topk_row(const aot_topk_kargs &a, int row)
{
    const int lane = aot_lane(), E = a.experts;
    float v[VPT];
    float mx = -AOT_INF;
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        int e = j * AOT_WAVE + lane;
        v[j] = e < E ? load_logit(a, row, e) : -AOT_INF;
        mx = aot_fmaxf(mx, v[j]);
    }
    mx = aot_from_order_key(aot_wave_max_u32(aot_order_key(mx)));
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < VPT; j++) sum += numerator(v[j], mx);
    sum = aot_wave_sum_f32(sum);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;

    aot_u32 taken = 0;
    float my_w = 0.0f, chosen_sum = 0.0f;
    int my_id = 0;
    for (int s = 0; s < a.k; s++) {
        float bv = -AOT_INF;
        int be = 0x7fffffff;
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            int e = j * AOT_WAVE + lane;
            if (e < E && !(taken >> j & 1u) && beats(v[j], e, bv, be)) bv = v[j], be = e;
        }
        /* wave argmax in two reductions: the largest logit, then the lowest id holding it */
        aot_u32 key = aot_order_key(bv), best = aot_wave_max_u32(key);
        be = (int)aot_wave_min_u32(key == best ? (aot_u32)be : 0x7fffffffu);
        bv = aot_from_order_key(best);
        if (be % AOT_WAVE == lane) taken |= 1u << (be / AOT_WAVE);
        float w = numerator(bv, mx) * inv;
        chosen_sum += w;
        if (lane == s) my_w = w, my_id = be;
    }
    write_row(a, row, lane, my_w, my_id, chosen_sum);
}

/* ---- 16-bit logits: value and expert id packed in one 32-bit key ----
 * key = order16(logit) << 16 | (0xffff - expert): one unsigned max gives the largest logit and,
 * among equal logits, the lowest expert; a taken or padding entry has key 0. order16 maps fp16
 * or bf16 bits to an unsigned of the same order (NaN as -inf, -0 as +0). BF16 is a constant
 * (one instantiation per type): a run-time flag would compute both conversions every time. */
template <int BF16>
AOT_DEV aot_u32 order16(aot_u32 h)
{
    const aot_u32 ninf = BF16 ? 0xff80u : 0xfc00u, exp_mask = BF16 ? 0x7f80u : 0x7c00u;
    const aot_u32 man_mask = BF16 ? 0x007fu : 0x03ffu;
    if ((h & exp_mask) == exp_mask && (h & man_mask)) h = ninf; /* NaN */
    if (h == 0x8000u) h = 0;
    return (h & 0x8000u) ? (~h & 0xffffu) : (h | 0x8000u);
}

/* The logit as the kernel ranks it: NaN as -inf. */
template <int BF16>
AOT_DEV float logit16(aot_u16 h)
{
    const float x = BF16 ? aot_bf16_to_f32(h) : aot_f16_to_f32(h);
    return x != x ? -AOT_INF : x;
}

template <int BF16>
AOT_DEV float key_logit(aot_u32 key)
{
    const aot_u32 o = key >> 16, h = (o & 0x8000u) ? (o & 0x7fffu) : (~o & 0xffffu);
    return logit16<BF16>((aot_u16)h);
}

template <int VPT>
AOT_DEV aot_u32 local_max(const aot_u32 (&key)[VPT])
{
    aot_u32 m = 0;
#pragma unroll
    for (int j = 0; j < VPT; j++) m = key[j] > m ? key[j] : m;
    return m;
}

/* Each round only takes the wave max of the keys and clears the winner; lane s keeps round s's
 * key, and the k weights are computed once at the end, one per lane. */
template <int VPT, int BF16>
AOT_DEV void topk_row_packed(const aot_topk_kargs &a, int row)
{
    const int lane = aot_lane(), E = a.experts;
    const aot_u16 *g = (const aot_u16 *)a.gating + (aot_i64)row * a.row_stride;
    aot_u32 key[VPT];
    float v[VPT];
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        const int e = j * AOT_WAVE + lane;
        const aot_u16 h = e < E ? g[e] : (aot_u16)0;
        key[j] = e < E ? order16<BF16>(h) << 16 | (0xffffu - (aot_u32)e) : 0u;
        v[j] = e < E ? logit16<BF16>(h) : -AOT_INF; /* padding: numerator 0 */
    }
    aot_u32 best = aot_wave_max_u32(local_max(key));
    const float mx = key_logit<BF16>(best);
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < VPT; j++) sum += numerator(v[j], mx);
    sum = aot_wave_sum_f32(sum);
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    aot_u32 mine = 0;
    for (int s = 0; s < a.k; s++) {
        if (s > 0) best = aot_wave_max_u32(local_max(key));
#pragma unroll
        for (int j = 0; j < VPT; j++) key[j] = key[j] == best ? 0u : key[j];
        mine = lane == s ? best : mine;
    }
    const float w = lane < a.k ? numerator(key_logit<BF16>(mine), mx) * inv : 0.0f;
    write_row(a, row, lane, w, (int)(0xffffu - (mine & 0xffffu)), aot_wave_sum_f32(w));
}

template <int VPT>
AOT_DEV void topk_kernel_body(const aot_topk_kargs &a)
{
    int row = aot_block_x() * (AOT_TOPK_BLOCK / AOT_WAVE) + aot_thread_x() / AOT_WAVE;
    if (row >= a.tokens) return; /* whole waves leave together */
    if (a.dtype == AOT_GATING_F32) topk_row<VPT>(a, row);
    else if (a.dtype == AOT_GATING_BF16) topk_row_packed<VPT, 1>(a, row);
    else topk_row_packed<VPT, 0>(a, row);
}

#define TOPK_VARIANT(vpt)                                                                      \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_TOPK_BLOCK) void topk_softmax_v##vpt(aot_topk_kargs a)    \
    {                                                                                          \
        topk_kernel_body<vpt>(a);                                                              \
    }                                                                                          \
    AOT_EMU_ENTRY(topk_softmax_v##vpt, aot_topk_kargs)

TOPK_VARIANT(1)
TOPK_VARIANT(2)
TOPK_VARIANT(4)
TOPK_VARIANT(8)
TOPK_VARIANT(16)
TOPK_VARIANT(32)
