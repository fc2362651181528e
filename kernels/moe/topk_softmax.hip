/* topk_softmax.hip : softmax over each row of gating logits, then the k largest, one wave per
 * row (semantics in runtime/include/aiter_aot_moe.h).
 *
 * The general path (topk_row), for any row the fast paths hand back:
 * 1. Lane l holds experts l, l+W, l+2W, ... (VPT of them; NaN and padding read as -inf).
 * 2. Wave max, then p = exp(x - max) and the wave sum (rows with +inf or no finite logit are
 *    special-cased so no inf-inf NaN appears).
 * 3. k rounds of a wave argmax (max of the order-preserving key of the logit, then min of the
 *    expert id among the lanes holding it): the winner is marked taken; lane s keeps round s's
 *    result, so the k outputs of a row are written by k lanes at once.
 * The fast paths: each lane holds a contiguous run of experts as 32-bit keys packing logit and
 * expert id and keeps its four best in order; a round is one wave max, noted in the wave's
 * slot of block-shared memory, and a pop; after the rounds lane s reads round s's key and the
 * weights are computed once. fp16/bf16 keys hold the whole logit (topk_row_packed); fp32 keys
 * hold it without its low bits, and rows where that could change the answer are handed back
 * (topk_row_f32).
 * Variants topk_softmax_v<VPT> exist for VPT = 1..32; the runtime picks the smallest with
 * VPT * wave >= experts, and topk_softmax_v<VPT>_full for rows of exactly VPT * wave experts
 * loaded whole (64, 128, ... 1024 on NVIDIA), whose lanes need no bounds tests: 204
 * instructions a row instead of 222 at 256 experts (bf16), 3-5 % faster on the H200. */
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
AOT_DEV void write_row(const aot_topk_kargs &a, int row, int lane, float w, int id)
{
    if (lane >= a.k) return;
    const int o = row * a.k + lane; /* tokens * k < 2^31 (checked by the runtime) */
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
    if (a.renormalize && chosen_sum > 0.0f) my_w /= chosen_sum;
    write_row(a, row, lane, my_w, my_id);
}

/* ---- 16-bit logits: value and expert id packed in one 32-bit key ----
 * Lane l holds experts l*VPT .. l*VPT+VPT-1 (one 16-byte load per 8 of them where the row is
 * aligned), each as b = its bits << 16 (for bf16 that is the fp32 value) and as
 *   key = 0x80000000 + signed(logit bits) << 16 + (0xffff - expert),
 * the sign-magnitude bits turned two's complement, so one unsigned max gives the largest logit
 * and, among equal logits (+0 and -0 included), the lowest expert. Padding has key 0.
 * Each lane keeps its four best keys in order; a round is one wave max over the lanes' best and
 * a pop on the winning lane. This path assumes a finite row max, no NaN and no lane holding
 * more than four of a row's k largest; a row that breaks one (seen from the row max, the sum
 * and the lanes left empty) takes topk_row instead. BF16 is a constant (one instantiation per
 * type). */

/* Keys of the two 16-bit logits in word w (experts e, e + 1), two at a time: each half's bits
 * made two's complement + 0x8000 (a positive half x gives x ^ 0x8000, a negative one
 * (x ^ 0xffff) + 1 = 0x10000 - x, so -0 and +0 both give 0x8000; no carry crosses halves, as
 * x ^ 0xffff < 0x8000 there), then the id fields from ids = id_field(e + 1) << 16 | id_field(e). */
AOT_DEV void keys2(aot_u32 w, aot_u32 ids, aot_u32 &lo, aot_u32 &hi)
{
    const aot_u32 neg = aot_sign_mask16x2(w); /* 0xffff in each negative half */
    const aot_u32 k = (w ^ (neg | 0x80008000u)) + (neg & 0x00010001u);
    lo = aot_join_lo16(k, ids);
    hi = aot_join_hi16(k, ids);
}

/* The id fields of experts e and e + 1 in one word, as keys2 takes them (0xffff - id: lower
 * ids win ties). */
AOT_DEV aot_u32 id_fields2(int e) { return 0xfffeffffu - (aot_u32)e * 0x00010001u; }

template <int BF16>
AOT_DEV float bits16_logit(aot_u32 b) { return BF16 ? aot_f32_from_bits(b) : aot_f16_to_f32((aot_u16)(b >> 16)); }

/* The logit of a key: its field is 0x8000 + the two's complement value v, so t below is
 * v << 16 as a signed word, and |t| with t's sign bit is the sign-magnitude bits (three
 * operations; -0 comes back as +0, an equal value). */
template <int BF16>
AOT_DEV float key_logit(aot_u32 key)
{
    const aot_u32 t = (key ^ 0x80000000u) & 0xffff0000u;
    const aot_u32 mag = (aot_i32)t < 0 ? 0u - t : t;
    return bits16_logit<BF16>(mag | (t & 0x80000000u));
}

/* The lane's logits as 16-bit pairs (expert e0 + 2c in the low half of w[c]); padding reads
 * as -inf. A lane's run is all in or all out of the row when vec (experts % VPT == 0 and the
 * row aligned for the wide loads). */
#define WORDS(vpt) (((vpt) + 1) / 2)
template <int VPT, int BF16>
AOT_DEV void load_words16(const aot_u16 *g, int e0, int E, bool vec, aot_u32 (&w)[WORDS(VPT)])
{
    const aot_u32 pad = BF16 ? 0xff80u : 0xfc00u;
    if (vec && e0 < E && VPT >= 8) {
#pragma unroll
        for (int c = 0; c < VPT / 8; c++) {
            const aot_u16x8 q = aot_load_u16x8(g + e0 + 8 * c);
#pragma unroll
            for (int i = 0; i < 4; i++) w[4 * c + i] = q.v[2 * i] | (aot_u32)q.v[2 * i + 1] << 16;
        }
    } else if (vec && e0 < E && VPT >= 2) {
#pragma unroll
        for (int c = 0; c < VPT / 2; c++) w[c] = aot_load_u16x2(g + e0 + 2 * c);
    } else {
#pragma unroll
        for (int c = 0; c < WORDS(VPT); c++) {
            const int e = e0 + 2 * c;
            const aot_u32 lo = e < E ? g[e] : pad, hi = 2 * c + 1 < VPT && e + 1 < E ? g[e + 1] : pad;
            w[c] = lo | hi << 16;
        }
    }
}

/* Compare-exchange: a >= b after. */
AOT_DEV void cx(aot_u32 &a, aot_u32 &b)
{
    const aot_u32 hi = a > b ? a : b;
    b = a > b ? b : a, a = hi;
}

/* The four largest of two descending runs of four, descending, into a: the pairwise maxima of a
 * and reversed b are those four (in bitonic order), then a half-cleaner sorts them. */
AOT_DEV void merge4(aot_u32 (&a)[4], const aot_u32 *b)
{
#pragma unroll
    for (int i = 0; i < 4; i++) a[i] = a[i] > b[3 - i] ? a[i] : b[3 - i];
    cx(a[0], a[2]), cx(a[1], a[3]), cx(a[0], a[1]), cx(a[2], a[3]);
}

/* Sorts four keys descending in place (five compare-exchanges). */
AOT_DEV void sort4(aot_u32 *a) { cx(a[0], a[1]), cx(a[2], a[3]), cx(a[0], a[2]), cx(a[1], a[3]), cx(a[1], a[2]); }

/* The lane's TOPN = min(4, VPT) largest keys, descending, into h (VPT is 1, 2 or a multiple of 4;
 * key is scratch). */
template <int VPT, int TOPN>
AOT_DEV void top_n(aot_u32 (&key)[VPT], aot_u32 (&h)[TOPN])
{
    if constexpr (VPT < 4) {
#pragma unroll
        for (int i = 0; i < TOPN; i++) h[i] = key[i];
        if (TOPN == 2) cx(h[0], h[TOPN - 1]);
    } else {
        sort4(key);
#pragma unroll
        for (int i = 0; i < 4; i++) h[i] = key[i];
#pragma unroll
        for (int g = 4; g < VPT; g += 4) sort4(key + g), merge4(h, key + g);
    }
}

/* The lane holding this round's best gives it away. With ZERO its list refills with 0 (a
 * padding key, which never wins); without, its last key stays where it was, so a lane that has
 * given all TOPN away offers a key already taken, which the row's final check catches (one
 * select fewer per round, on the busier integer pipe). */
template <int TOPN, bool ZERO>
AOT_DEV void pop(aot_u32 (&h)[TOPN], aot_u32 best)
{
    const bool won = h[0] == best;
#pragma unroll
    for (int i = 0; i + 1 < TOPN; i++) h[i] = won ? h[i + 1] : h[i];
    if (ZERO) h[TOPN - 1] = won ? 0u : h[TOPN - 1];
}

/* Round s of k: the wave's best key left, noted in the wave's slot s and popped (a store
 * instead of a compare and select per round on each lane, which would load the busier integer
 * pipe). */
template <int TOPN, bool ZERO>
AOT_DEV aot_u32 round_step(aot_u32 (&h)[TOPN], aot_u32 *won, int s)
{
    const aot_u32 best = aot_wave_max_u32(h[0]);
    won[s] = best; /* every lane stores the same value */
    pop<TOPN, ZERO>(h, best);
    return best;
}

/* The k rounds, round 0's best key given (the row max, which the caller needed first): each
 * round's key in won[s], visible to every lane of the wave on return; returns the last. */
template <int TOPN, bool ZERO>
AOT_DEV aot_u32 rounds(const aot_topk_kargs &a, aot_u32 (&h)[TOPN], aot_u32 best, aot_u32 *won)
{
    won[0] = best;
    pop<TOPN, ZERO>(h, best);
    aot_u32 last = best;
    if (a.k == 8) /* DeepSeek-V3's and Qwen3's k, unrolled: 5-7 % faster on the H200 */
#pragma unroll
        for (int s = 1; s < 8; s++) last = round_step<TOPN, ZERO>(h, won, s);
    else
        for (int s = 1; s < a.k; s++) last = round_step<TOPN, ZERO>(h, won, s);
    aot_sync_wave();
    return last;
}

/* Is the logit of key finite? Its field is 0x8000 + the logit's two's complement value, so
 * finite logits are those within 0x8000 -+ (the bits of inf) exclusive. */
template <int BF16>
AOT_DEV bool finite_key(aot_u32 key)
{
    const aot_u32 inf = BF16 ? 0x7f80u : 0x7c00u;
    return (key >> 16) - (0x8001u - inf) < 2 * inf - 1;
}

/* The sum of v over lanes 0 .. k - 1, the other lanes holding zeros, in lanes 0 .. k - 1: three
 * butterfly steps for k <= 8 (the common case) instead of the whole wave's. */
AOT_DEV float chosen_sum(float v, int k)
{
    if (k > 8) return aot_wave_sum_f32(v);
#pragma unroll
    for (int m = 1; m < 8; m <<= 1) v += aot_shfl_xor_f32(v, m);
    return v;
}

/* Lane s < k's chosen logit x as its weight, written with its expert id. Renormalized, the
 * shift is the row max (lane 0's x) and the scale the chosen numerators' sum; otherwise both
 * come from the whole row: mxl (max times log2 e) and sum, its numerators' sum. */
AOT_DEV void write_chosen(const aot_topk_kargs &a, int row, float x, float mxl, float sum, int id)
{
    const int lane = aot_lane();
    const float L = AOT_LOG2E;
    if (a.renormalize) mxl = aot_shfl_f32(x, 0) * L; /* cheaper than decoding the max's key */
    const float num = lane < a.k ? aot_exp2_fast(aot_fmaf(x, L, -mxl)) : 0.0f;
    const float scale = aot_rcp_fast(a.renormalize ? chosen_sum(num, a.k) : sum); /* both in [1, experts] */
    write_row(a, row, lane, num * scale, id);
}

/* The sum over the wave of the row's numerators, for weights that are not renormalized: b are
 * the lane's logits as bits16_logit takes them (bf16 bits shifted up are fp32 bits, so fp32
 * rows pass BF16 = 1), mxl the row max times log2 e. Sets bad if a logit was NaN. */
template <int VPT, int BF16>
AOT_DEV float row_sum(const aot_u32 (&b)[VPT], float mxl, bool &bad)
{
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < VPT; j++) sum += aot_exp2_fast(aot_fmaf(bits16_logit<BF16>(b[j]), AOT_LOG2E, -mxl));
    sum = aot_wave_sum_f32(sum);
    bad |= sum != sum;
    return sum;
}

/* One row from its words (load_words16); false, having written nothing, for a row that needs
 * topk_row: a NaN or infinite logit, or a lane that gave away all TOPN of its best keys before
 * the last round (its next one might have been due). The infinite-max and NaN tests wait for
 * that last vote instead of leaving early: one branch, not three (222 instructions a row, not
 * 232, on the H200). won: the wave's AOT_MOE_MAX_K slots of block-shared memory (rounds
 * 0 .. k - 1 use the first k). */
template <int VPT, int BF16>
AOT_DEV bool topk_row_packed(const aot_topk_kargs &a, int E, int row, const aot_u32 (&w)[WORDS(VPT)], aot_u32 *won)
{
    const int TOPN = VPT < 4 ? VPT : 4;
    const int lane = aot_lane(), e0 = lane * VPT;
    aot_u32 b[VPT], key[VPT];
#pragma unroll
    for (int j = 0; j < VPT; j++) b[j] = j & 1 ? w[j / 2] & 0xffff0000u : w[j / 2] << 16;
    const aot_u32 ids0 = id_fields2(e0);
#pragma unroll
    for (int c = 0; c < WORDS(VPT); c++) {
        aot_u32 hi;
        keys2(w[c], ids0 - (aot_u32)c * 0x00020002u, key[2 * c], hi);
        if (2 * c + 1 < VPT) key[2 * c + 1] = hi;
    }
    if (e0 + VPT > E) /* a lane at the row's end */
#pragma unroll
        for (int j = 0; j < VPT; j++) key[j] = e0 + j < E ? key[j] : 0u;
    aot_u32 h[TOPN];
    top_n<VPT, TOPN>(key, h); /* key is sorted in groups of four from here on */
    const aot_u32 best = aot_wave_max_u32(h[0]);
    bool bad = !finite_key<BF16>(best); /* the whole wave's: best is the row's */
    /* numerators 2^(x log2 e - mx log2 e), each one fma against the rounded mx log2 e: that
     * rounding scales every numerator alike, so it cancels in the weights, as long as the sum's
     * terms and the chosen numerators are computed the same way (both aot_fmaf) */
    const float L = AOT_LOG2E;
    float sum = 0.0f, mxl = 0.0f; /* the row's sum, needed only when the weights are not rescaled */
    if (!a.renormalize) {
        mxl = key_logit<BF16>(best) * L;
        sum = row_sum<VPT, BF16>(b, mxl, bad);
    }
    const bool ZERO = VPT <= TOPN; /* a lane's list is all it holds */
    const aot_u32 last = rounds<TOPN, ZERO>(a, h, best, won);
    const aot_u32 mine = lane < a.k ? won[lane] : 0u; /* lane s writes round s's result */
    /* A lane that has given away all TOPN of its list (its next key might have been due, or
     * its stale last key won again) still offers a key >= the last round's, where every other
     * lane's is below it (keys are distinct); false alarms when it gave its last key in the
     * last round; rare either way. A chosen NaN sends the row back too (only a negative one
     * can be chosen here: its key is below -inf's; without renormalization the sum has caught
     * it already). */
    const aot_u32 neg_inf_key = BF16 ? 0x0080u : 0x0400u; /* 0x10000 - the bits of -inf */
    if (aot_wave_any(bad || (!ZERO && h[0] >= last) || (lane < a.k && mine >> 16 < neg_inf_key)))
        return false;
    write_chosen(a, row, key_logit<BF16>(mine), mxl, sum, (int)(0xffffu - (mine & 0xffffu)));
    return true;
}

/* ---- fp32 logits: the same rounds on keys that give their low bits to the expert id ----
 * key = the logit's order key (sign-magnitude bits made unsigned-ordered) with its low
 * ID_BITS bits replaced by ID_MASK - expert, so one max again finds the largest logit and its
 * expert. The cut is monotonic, so the rounds' order is the logits' order wherever the cut
 * keys differ; a row where two of its k + 1 largest share a cut key (equal logits, or logits
 * within 2^ID_BITS ulps) goes to topk_row, as does a NaN or infinite row max or a chosen
 * -inf or NaN (its key is at most -inf's). The chosen logits are read back whole from the row
 * (cache hits). */

/* The lane's VPT logits' bits (expert e0 + j in u[j]); padding reads as -inf. */
template <int VPT>
AOT_DEV void load_words32(const aot_u32 *g, int e0, int E, bool vec, aot_u32 (&u)[VPT])
{
    if (vec && e0 < E && VPT >= 4) {
#pragma unroll
        for (int c = 0; c < VPT / 4; c++) {
            const aot_u32x4 q = aot_load_u32x4(g + e0 + 4 * c);
#pragma unroll
            for (int i = 0; i < 4; i++) u[4 * c + i] = q.v[i];
        }
    } else {
#pragma unroll
        for (int j = 0; j < VPT; j++) u[j] = e0 + j < E ? g[e0 + j] : 0xff800000u;
    }
}

/* The order key of fp32 bits u: 0x80000000 + the signed magnitude, as keys2 makes it for 16
 * bits (-0 and +0 both 0x80000000). The inverse of a cut key: a logit at most the key's. */
AOT_DEV aot_u32 order_key32(aot_u32 u) { return (u ^ ((aot_u32)((aot_i32)u >> 31) | 0x80000000u)) + (u >> 31); }
AOT_DEV float key32_logit(aot_u32 k)
{
    return aot_f32_from_bits(k & 0x80000000u ? k & 0x7fffffffu : (0u - k) | 0x80000000u);
}

template <int VPT>
AOT_DEV bool topk_row_f32(const aot_topk_kargs &a, int E, int row, const aot_u32 (&u)[VPT], aot_u32 *won)
{
    const int TOPN = VPT < 4 ? VPT : 4;
    const aot_u32 ID_MASK = VPT * AOT_WAVE - 1, CUT = ~ID_MASK; /* VPT * AOT_WAVE >= E, a power of two */
    /* keys of -inf and +inf: cut keys strictly between are finite (a row max within 2^ID_BITS
     * ulps of -FLT_MAX is taken for -inf, and the row goes to topk_row) */
    const aot_u32 NEG_INF = 0x00800000u, POS_INF = 0xff800000u;
    const int lane = aot_lane(), e0 = lane * VPT;
    aot_u32 key[VPT];
#pragma unroll
    for (int j = 0; j < VPT; j++) key[j] = e0 + j < E ? (order_key32(u[j]) & CUT) | (ID_MASK - (aot_u32)(e0 + j)) : 0u;
    aot_u32 h[TOPN];
    top_n<VPT, TOPN>(key, h);
    const aot_u32 best = aot_wave_max_u32(h[0]);
    bool bad = (best & CUT) - (NEG_INF + 1) >= POS_INF - (NEG_INF + 1); /* the row max is not finite */
    const float L = AOT_LOG2E;
    float sum = 0.0f, mxl = 0.0f; /* as in topk_row_packed; the cut max is as good a shift as the max */
    if (!a.renormalize) {
        mxl = key32_logit(best & CUT) * L;
        sum = row_sum<VPT, 1>(u, mxl, bad); /* fp32 bits read as bf16's shifted up */
    }
    const bool ZERO = VPT <= TOPN;
    const aot_u32 last = rounds<TOPN, ZERO>(a, h, best, won);
    const aot_u32 next = aot_wave_max_u32(h[0]); /* the (k + 1)-th key */
    const aot_u32 mine = lane < a.k ? won[lane] : 0u, after = lane + 1 < a.k ? won[lane + 1] : next;
    const bool tied = lane < a.k && (((mine ^ after) & CUT) == 0 || (mine & CUT) <= NEG_INF);
    if (aot_wave_any(bad || tied || (!ZERO && h[0] >= last))) return false;
    const int id = (int)(ID_MASK - (mine & ID_MASK));
    write_chosen(a, row, lane < a.k ? ((const float *)a.gating)[(aot_i64)row * a.row_stride + id] : 0.0f, mxl, sum, id);
    return true;
}

/* FULL: rows of exactly VPT * AOT_WAVE experts, aligned for the wide loads (the runtime's
 * choice), so no lane needs a bounds test. */
template <int VPT, bool FULL>
AOT_DEV void topk_kernel_body(const aot_topk_kargs &a)
{
    const int wave = (int)((unsigned)aot_thread_x() / AOT_WAVE); /* unsigned: a shift, not a signed division */
    const int row = aot_block_x() * (AOT_TOPK_BLOCK / AOT_WAVE) + wave;
    if (row >= a.tokens) return; /* whole waves leave together */
    const bool vec = FULL || a.wide_rows != 0;
    const int E = FULL ? VPT * AOT_WAVE : a.experts;
    const aot_u16 *g = (const aot_u16 *)a.gating + (aot_i64)row * a.row_stride;
    AOT_SHARED(aot_u32, won, AOT_TOPK_BLOCK / AOT_WAVE * AOT_MOE_MAX_K);
    aot_u32 *const wave_won = won + wave * AOT_MOE_MAX_K;
    aot_u32 w[WORDS(VPT)];
    bool done = false;
    if (a.dtype == AOT_GATING_BF16) {
        load_words16<VPT, 1>(g, aot_lane() * VPT, E, vec, w);
        done = topk_row_packed<VPT, 1>(a, E, row, w, wave_won);
    } else if (a.dtype == AOT_GATING_F16) {
        load_words16<VPT, 0>(g, aot_lane() * VPT, E, vec, w);
        done = topk_row_packed<VPT, 0>(a, E, row, w, wave_won);
    } else {
        aot_u32 u[VPT];
        load_words32<VPT>((const aot_u32 *)a.gating + (aot_i64)row * a.row_stride, aot_lane() * VPT, E, vec, u);
        done = topk_row_f32<VPT>(a, E, row, u, wave_won);
    }
    if (!done) topk_row<VPT>(a, row); /* a row the fast paths handed back */
}

/* blocks: how many blocks a multiprocessor must hold on NVIDIA (registers capped to fit). 8 for
 * VPT <= 8 (32 registers, no spills; 64 warps per SM against 48 at the 40 registers the compiler
 * chose): 256 experts 5-7 % faster at 65536-262144 tokens on the H200, 3-6 % slower at
 * 1024-4096 (every block resident either way) and 2 % for fp32 rows at 262144, measured when
 * those still took topk_row (docs/performance.md). 6 for VPT = 16 (8 would spill), 3 for
 * VPT = 32 (a floor, not a cap: the compiler's 64 registers fit 4). */
#define TOPK_KERNEL(name, vpt, full, blocks)                                                    \
    AOT_KERNEL AOT_LAUNCH_BOUNDS_MIN(AOT_TOPK_BLOCK, blocks) void name(aot_topk_kargs a)        \
    {                                                                                          \
        topk_kernel_body<vpt, full>(a);                                                        \
    }                                                                                          \
    AOT_EMU_ENTRY(name, aot_topk_kargs)
#define TOPK_VARIANT(vpt, blocks)                                                              \
    TOPK_KERNEL(topk_softmax_v##vpt, vpt, false, blocks)                                       \
    TOPK_KERNEL(topk_softmax_v##vpt##_full, vpt, true, blocks)

TOPK_VARIANT(1, 8)
TOPK_VARIANT(2, 8)
TOPK_VARIANT(4, 8)
TOPK_VARIANT(8, 8)
TOPK_VARIANT(16, 6)
TOPK_VARIANT(32, 3)
