/* topk_route.hip : the MoE routers of aiter_aot_topk_route (semantics in
 * runtime/include/aiter_aot_moe.h and docs/routing.md). A wave takes one token row:
 * 1. Lane l holds experts l, l+W, l+2W, ... (VPT of them); NaN logits read as -inf.
 * 2. Scores: softmax (wave max and sum first), sigmoid or sqrt(softplus); the selection score
 *    is the score plus the optional correction bias.
 * 3. Grouped selection (n_group > 1): each group's score (the sum of its two largest selection
 *    scores with a bias, its largest without) is reduced over the wave and lands on lane g;
 *    topk_group rounds of a wave argmax over those lanes keep the groups, and the experts of
 *    the others are marked taken. Where groups fall on whole lanes (lane_groups), lane l holds
 *    experts l VPT .. l VPT + VPT - 1 instead, and a butterfly over each group's lanes gives
 *    every group's score at once (keep_lane_groups).
 * 4. k rounds of a wave argmax over the selection scores (ties: the lower expert); lane s keeps
 *    round s's expert and computes its unbiased score from its logit again, so the k outputs are
 *    written by k lanes at once.
 * Hash routing reads the k experts from tid2eid instead of 3 and 4.
 * Variants topk_route_v<VPT> exist for VPT = 1..32 (AOT_ROUTE_VARIANTS, moe_variants.h); the
 * runtime picks the smallest with VPT * wave >= experts. */
#include "aot_device.h"
#include "moe_kargs.h"
#include "moe_variants.h" /* the kernels this file instantiates */

AOT_DEV float route_logit(const aot_route_kargs &a, aot_i64 row, int e)
{
    const aot_i64 at = row * a.row_stride + e;
    float x;
    if (a.dtype == AOT_GATING_F32) x = ((const float *)a.gating)[at];
    else if (a.dtype == AOT_GATING_BF16) x = aot_bf16_to_f32(((const aot_u16 *)a.gating)[at]);
    else x = aot_f16_to_f32(((const aot_u16 *)a.gating)[at]);
    return x != x ? -AOT_INF : x;
}

/* log(1 + u) for u >= 0: a series below 0.1, where 1 + u would lose u's low bits (error
 * u^8 / 8, relative < 2e-8), else the hardware log2 (relative error < 2e-6 from 1.1 up). */
AOT_DEV float log1p_pos(float u)
{
    if (u < 0.1f) return u * (1.0f - u * (0.5f - u * (1.0f / 3 - u * (0.25f - u * (0.2f - u * (1.0f / 6 - u * (1.0f / 7)))))));
    return aot_log2_fast(1.0f + u) * 0.69314718f;
}

/* sqrt(softplus(x)), softplus as PyTorch's (x itself above 20). sqrt(y) = y * rsqrt(y). */
AOT_DEV float sqrt_softplus(float x)
{
    const float sp = x > 20.0f ? x : log1p_pos(aot_exp_fast(x));
    return sp > 0.0f && sp < AOT_INF ? sp * aot_rsqrt_fast(sp) : sp; /* +inf * rsqrt(+inf) would be NaN */
}

/* The score of logit x; softmax: mx is the row max, inv 1 / the sum of exp(x - mx) (rows whose
 * max is +-inf follow topk_softmax's rules: +inf experts share 1, an all -inf row is 0). */
AOT_DEV float route_score(int scoring, float x, float mx, float inv)
{
    if (scoring == AOT_ROUTE_SIGMOID) return x == -AOT_INF ? 0.0f : 1.0f / (1.0f + aot_exp_fast(-x));
    if (scoring == AOT_ROUTE_SQRT_SOFTPLUS) return x == -AOT_INF ? 0.0f : sqrt_softplus(x);
    if (mx == AOT_INF) return x == AOT_INF ? inv : 0.0f;
    if (mx == -AOT_INF) return 0.0f;
    return aot_exp_fast(x - mx) * inv;
}

/* Softmax statistics of the wave's row: mx and 1 / sum. */
template <int VPT>
AOT_DEV void softmax_stats(const float (&x)[VPT], float &mx, float &inv)
{
    float m = -AOT_INF;
#pragma unroll
    for (int j = 0; j < VPT; j++) m = aot_fmaxf(m, x[j]);
    mx = aot_from_order_key(aot_wave_max_u32(aot_order_key(m)));
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < VPT; j++)
        sum += mx == AOT_INF ? (x[j] == AOT_INF ? 1.0f : 0.0f) : mx == -AOT_INF ? 0.0f : aot_exp_fast(x[j] - mx);
    sum = aot_wave_sum_f32(sum);
    inv = sum > 0.0f ? 1.0f / sum : 0.0f;
}

/* Renormalizes (guarded as vLLM's: the sum is at least 1e-20), scales and writes slot `lane`
 * (lanes below k; e < 0 writes id -1, weight 0). */
AOT_DEV void write_slot(const aot_route_kargs &a, int row, float w, int e)
{
    const int lane = aot_lane();
    const bool on = lane < a.k;
    if (!on) w = 0.0f;
    if (a.renormalize) w = w / aot_fmaxf(aot_wave_sum_f32(w), 1e-20f);
    w *= a.scale;
    if (!on) return;
    const aot_i64 o = (aot_i64)row * a.k + lane;
    a.weights[o] = w;
    if (a.ids_int64) ((aot_i64 *)a.ids)[o] = e;
    else ((int *)a.ids)[o] = e;
}

AOT_DEV aot_i64 hash_index(const void *p, int hash_int64, aot_i64 i)
{
    return hash_int64 ? ((const aot_i64 *)p)[i] : (aot_i64)((const int *)p)[i];
}

/* Hash routing: slot s's expert is tid2eid[input_ids[row], s]; an id outside the table, or an
 * entry outside [0, experts), gives that slot id -1 and weight 0. Softmax needs the row's
 * statistics; the others read only the k chosen logits. */
template <int VPT>
AOT_DEV void hash_row(const aot_route_kargs &a, int row)
{
    const int lane = aot_lane();
    float mx = 0.0f, inv = 0.0f;
    if (a.scoring == AOT_ROUTE_SOFTMAX) {
        float x[VPT];
#pragma unroll
        for (int j = 0; j < VPT; j++) x[j] = j * AOT_WAVE + lane < a.experts ? route_logit(a, row, j * AOT_WAVE + lane) : -AOT_INF;
        softmax_stats<VPT>(x, mx, inv);
    }
    int e = -1;
    if (lane < a.k) {
        const aot_i64 tok = hash_index(a.input_ids, a.hash_int64, row);
        const aot_i64 t = tok >= 0 && tok < a.vocab ? hash_index(a.tid2eid, a.hash_int64, tok * a.k + lane) : -1;
        e = t >= 0 && t < a.experts ? (int)t : -1;
    }
    const float w = e >= 0 ? route_score(a.scoring, route_logit(a, row, e), mx, inv) : 0.0f;
    write_slot(a, row, w, e);
}

/* Expert of slot j of the lane: strided (j W + lane) or, with CONTIG, the lane's own run
 * (lane VPT + j). Ascending j is ascending expert either way, which the tie rule relies on. */
template <int VPT, bool CONTIG>
AOT_DEV int expert_of(int j, int lane) { return CONTIG ? lane * VPT + j : j * AOT_WAVE + lane; }

/* The wave's best (key, expert) among candidates (key 0: none); ties to the lower expert. */
AOT_DEV aot_u32 wave_argmax(aot_u32 key, int e, int &be)
{
    const aot_u32 best = aot_wave_max_u32(key);
    be = (int)aot_wave_min_u32(key == best ? (aot_u32)e : 0x7fffffffu);
    return best;
}

/* Grouped selection: marks taken the experts of every group not among the topk_group best.
 * Group g = experts [g G, (g + 1) G); its score lands on lane g. */
template <int VPT>
AOT_DEV void keep_groups(const aot_route_kargs &a, const float (&c)[VPT], aot_u32 &taken)
{
    const int lane = aot_lane(), G = a.experts / a.n_group;
    const bool top2 = a.bias != 0;
    float my_gs = 0.0f;
    for (int g = 0; g < a.n_group; g++) {
        aot_u32 k1 = 0, k2 = 0; /* the lane's two best keys in group g */
        int e1 = 0x7fffffff;
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const int e = j * AOT_WAVE + lane;
            if (e < g * G || e >= (g + 1) * G) continue;
            const aot_u32 key = aot_order_key(c[j]);
            if (key > k1) k2 = k1, k1 = key, e1 = e;
            else if (key > k2) k2 = key;
        }
        int be;
        const aot_u32 m1 = wave_argmax(k1, e1, be);
        float gs = aot_from_order_key(m1);
        if (top2 && G > 1) /* the second: the best left once the first's expert is out */
            gs += aot_from_order_key(aot_wave_max_u32(e1 == be && k1 == m1 ? k2 : k1));
        if (lane == g) my_gs = gs;
    }
    aot_u32 kept = 0;
    for (int r = 0; r < a.topk_group; r++) {
        int bg;
        const bool cand = lane < a.n_group && !(kept >> lane & 1u);
        wave_argmax(cand ? aot_order_key(my_gs) : 0u, cand ? lane : 0x7fffffff, bg);
        kept |= 1u << bg;
    }
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        const int e = j * AOT_WAVE + lane;
        if (e < a.experts && !(kept >> (e / G) & 1u)) taken |= 1u << j;
    }
}

/* Grouped selection when every lane's run lies in one group of L = G / VPT lanes (a power of
 * two; DeepSeek-V3's 32-expert groups: 4 lanes at wave 32, 8 at wave 64): the group scores come
 * from a butterfly over the group's lanes, all groups at once, instead of three wave reductions
 * a group. Each lane of group g ends with g's score; the topk_group rounds then pick groups by
 * a wave argmax over (score, group). */
template <int VPT>
AOT_DEV void keep_lane_groups(const aot_route_kargs &a, const float (&c)[VPT], aot_u32 &taken)
{
    const int lane = aot_lane(), G = a.experts / a.n_group, L = G / VPT, g = lane * VPT / G;
    float m1 = -AOT_INF, m2 = -AOT_INF; /* the lane's two largest, then the group's */
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        const float v = c[j];
        m2 = aot_fmaxf(m2, v < m1 ? v : m1), m1 = aot_fmaxf(m1, v); /* -inf fill: fmax keeps order */
    }
    for (int m = 1; m < L; m <<= 1) {
        const float o1 = aot_shfl_xor_f32(m1, m), o2 = aot_shfl_xor_f32(m2, m);
        m2 = aot_fmaxf(aot_fmaxf(m2, o2), m1 < o1 ? m1 : o1), m1 = aot_fmaxf(m1, o1);
    }
    const float gs = a.bias && G > 1 ? m1 + m2 : m1;
    const bool group = g < a.n_group; /* lanes past the experts hold no group */
    aot_u32 kept = 0;
    for (int r = 0; r < a.topk_group; r++) {
        int bg;
        const bool cand = group && !(kept >> g & 1u);
        wave_argmax(cand ? aot_order_key(gs) : 0u, cand ? g : 0x7fffffff, bg);
        kept |= 1u << bg;
    }
    if (!group || !(kept >> g & 1u)) taken = ~0u;
}

template <int VPT, bool CONTIG>
AOT_DEV void route_row(const aot_route_kargs &a, int row)
{
    const int lane = aot_lane(), E = a.experts;
    float x[VPT];
    aot_u32 taken = 0; /* bit j: the lane's expert j is not a candidate */
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        const int e = expert_of<VPT, CONTIG>(j, lane);
        x[j] = e < E ? route_logit(a, row, e) : -AOT_INF;
        if (e >= E) taken |= 1u << j;
    }
    float mx = 0.0f, inv = 0.0f;
    if (a.scoring == AOT_ROUTE_SOFTMAX) softmax_stats<VPT>(x, mx, inv);
#pragma unroll
    for (int j = 0; j < VPT; j++) { /* x becomes the selection score */
        const int e = expert_of<VPT, CONTIG>(j, lane);
        x[j] = route_score(a.scoring, x[j], mx, inv) + (a.bias && e < E ? a.bias[e] : 0.0f);
    }
    if (CONTIG) keep_lane_groups<VPT>(a, x, taken);
    else if (a.n_group > 1) keep_groups<VPT>(a, x, taken);
    int my_e = 0;
    for (int r = 0; r < a.k; r++) {
        aot_u32 key = 0;
        int e = 0x7fffffff;
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            const aot_u32 kj = aot_order_key(x[j]);
            if (!(taken >> j & 1u) && kj > key) key = kj, e = expert_of<VPT, CONTIG>(j, lane); /* ascending e: ties keep the lower */
        }
        int be;
        wave_argmax(key, e, be);
#pragma unroll
        for (int j = 0; j < VPT; j++)
            if (expert_of<VPT, CONTIG>(j, lane) == be) taken |= 1u << j;
        if (lane == r) my_e = be;
    }
    /* the unbiased score of the lane's expert, computed again from its logit (a cache hit) as
     * it was for the selection: keeping every score in registers as well doubled the largest
     * variant's registers */
    const float w = lane < a.k ? route_score(a.scoring, route_logit(a, row, my_e), mx, inv) : 0.0f;
    write_slot(a, row, w, my_e);
}

template <int VPT>
AOT_DEV void route_kernel_body(const aot_route_kargs &a)
{
    const int wave = (int)((unsigned)aot_thread_x() / AOT_WAVE);
    const int row = aot_block_x() * (AOT_TOPK_BLOCK / AOT_WAVE) + wave;
    if (row >= a.tokens) return; /* whole waves leave together */
    if (a.input_ids) hash_row<VPT>(a, row);
    else if (a.lane_groups) route_row<VPT, true>(a, row);
    else route_row<VPT, false>(a, row);
}

/* One variant per experts-per-lane count, from the family's list (moe_variants.h). */
#define ROUTE_KERNEL(name, kargs, vpt)                                                        \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_TOPK_BLOCK) void name(kargs a)                           \
    {                                                                                         \
        route_kernel_body<vpt>(a);                                                            \
    }                                                                                         \
    AOT_EMU_ENTRY(name, kargs)
AOT_ROUTE_VARIANTS(ROUTE_KERNEL)
