/* topk_softmax.hip : softmax over each row of gating logits, then the k largest (semantics in
 * runtime/include/aiter_aot_moe.h). A wave takes one row, or AOT_TOPK_ROWS consecutive rows in
 * the _rows4 variants.
 *
 * The general path (topk_row), one row at a time, for any row the fast paths hand back:
 * 1. Lane l holds experts l, l+W, l+2W, ... (VPT of them; NaN and padding read as -inf).
 * 2. Wave max, then p = exp(x - max) and the wave sum (rows with +inf or no finite logit are
 *    special-cased so no inf-inf NaN appears).
 * 3. k rounds of a wave argmax (max of the order-preserving key of the logit, then min of the
 *    expert id among the lanes holding it): the winner is marked taken; lane s keeps round s's
 *    result, so the k outputs of a row are written by k lanes at once.
 * The fast paths: each lane holds a contiguous run of experts as 32-bit keys packing logit and
 * expert id and keeps its four best in order; a round is one wave max, noted in the row's slot
 * of block-shared memory, and a pop. fp16/bf16 keys hold the whole logit (list_packed); fp32
 * keys hold it without its low bits, and rows where that could change the answer are handed
 * back (list_f32). After the rounds of all its rows the wave writes them together
 * (write_rows): with k = 8 and four rows on NVIDIA each lane computes and stores one output,
 * where a wave per row leaves three lanes in four idle for the tail, and the rows' rounds
 * overlap. The _rows4 variants are 23-24 % faster at 262144 tokens (bf16, 256 experts, H200) and
 * 0.4-0.6 µs slower at decode sizes, hence both.
 * Variants topk_softmax_v<VPT> exist for VPT = 1..32; the runtime picks the smallest with
 * VPT * wave >= experts, and topk_softmax_v<VPT>_full for rows of exactly VPT * wave experts
 * loaded whole (64, 128, ... 1024 on NVIDIA), whose lanes need no bounds tests. */
#include "aot_device.h"
#include "moe_kargs.h"
#include "moe_variants.h" /* the kernels this file instantiates, TOPK_ANY/16BIT/F32 */

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
 *   key = order(logit bits) << 16 | (0xffff - expert),
 * order(x) = x ^ 0x8000 for a positive x and x ^ 0xffff (ones' complement) for a negative one,
 * so one unsigned max gives the largest logit and, among equal logits, the lowest expert;
 * only -0 and +0, equal logits, get different keys (0x7fff and 0x8000), so a row whose
 * chosen logits include a zero takes topk_row. Padding has key 0.
 * Each lane keeps its four best keys in order; a round is one wave max over the lanes' best and
 * a pop on the winning lane. This path assumes a finite row max, no NaN, no chosen zero and no
 * lane holding more than four of a row's k largest; a row that breaks one (seen from the row
 * max, the sum, the chosen keys and the lanes left empty) takes topk_row instead. BF16 is a
 * constant (one instantiation per type). */

/* Keys of the two 16-bit logits in word w (experts e, e + 1) given their id fields (0xffff -
 * expert: lower ids win ties): both halves ordered at once, then the low key's shift and join
 * as one multiply-add on the multiply-add pipe (the integer pipe is the kernel's busiest;
 * aot_shl16_add keeps the compiler from splitting it into a shift, an or with the lane's id
 * base and an add: 3 % at 262144 tokens on the H200) and the high key's join as one logic
 * operation. Ones' complement rather than two's for negative halves saves two integer
 * operations a word (measured: 8 instructions a row of 256 experts). */
AOT_DEV void keys2(aot_u32 w, aot_u32 id_lo, aot_u32 id_hi, aot_u32 &lo, aot_u32 &hi)
{
    const aot_u32 k = w ^ (aot_sign_mask16x2(w) | 0x80008000u);
    lo = aot_shl16_add(k, id_lo);
    hi = (k & 0xffff0000u) | id_hi;
}

template <int BF16>
AOT_DEV float bits16_logit(aot_u32 b) { return BF16 ? aot_f32_from_bits(b) : aot_f16_to_f32((aot_u16)(b >> 16)); }

/* The logit of a key: order is its own inverse (a field >= 0x8000 is a positive logit's). */
template <int BF16>
AOT_DEV float key_logit(aot_u32 key)
{
    const aot_u32 t = key & 0xffff0000u;
    return bits16_logit<BF16>(t ^ ((aot_i32)t < 0 ? 0x80000000u : 0xffff0000u));
}

/* The bits of +inf in a 16-bit logit. */
template <int BF16>
AOT_DEV aot_u32 inf_bits16() { return BF16 ? 0x7f80u : 0x7c00u; }

/* The lane's logits as 16-bit pairs (expert e0 + 2c in the low half of w[c]); padding reads
 * as -inf. A lane's run is all in or all out of the row when vec (experts % VPT == 0 and the
 * row aligned for the wide loads). */
#define WORDS(vpt) (((vpt) + 1) / 2)
template <int VPT, int BF16>
AOT_DEV void load_words16(const aot_u16 *g, int e0, int E, bool vec, aot_u32 (&w)[WORDS(VPT)])
{
    const aot_u32 pad = 0x8000u | inf_bits16<BF16>(); /* -inf */
    if (vec && e0 < E && VPT >= 8) {
#pragma unroll
        for (int c = 0; c < VPT / 8; c++) { /* as words: 16-bit halves cost ptxas byte permutes */
            const aot_u32x4 q = aot_load_u32x4((const aot_u32 *)(g + e0 + 8 * c));
#pragma unroll
            for (int i = 0; i < 4; i++) w[4 * c + i] = q.v[i];
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

/* How many keys a lane's list holds; whether the _rows4 kernels keep them in shared memory. */
#define TOPK_LIST(vpt) ((vpt) < 4 ? (vpt) : 4)
#define TOPK_SHARED_LISTS(vpt, rows) ((rows) > 1 && (vpt) > TOPK_LIST(vpt))

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

/* ---- the lanes' lists through the rounds ----
 * A lane's candidate (its best key not yet taken) is l.h[r][0]; the rest of its list waits
 * either in registers, where a pop moves every entry up (TOPN - 1 selects on every lane, on
 * the integer pipe), or, with SHARED, in a column of block-shared memory ending in key 0, from
 * which only the lane that won loads its next key (a load and an add). Shared: the _rows4
 * kernels at VPT = 8 (256 experts on NVIDIA), where the integer pipe bounded the kernel (69
 * against 88 ALU instructions a row at 262144 tokens); a lane whose list is its whole run pops
 * in one to three selects, and the one-row kernels wait on the load (2 % slower), so they keep
 * registers. */
template <int TOPN, int R, bool SHARED>
struct topk_lists {
    aot_u32 h[R][SHARED ? 1 : TOPN];
    const aot_u32 *at[R]; /* SHARED: the entry that replaces the candidate */
};

/* Keeps list h of row r; col is this lane's column (entry j of row r at col[(r * TOPN + j) *
 * AOT_WAVE], conflict-free whatever each lane's position). */
template <int TOPN, int R, bool SHARED>
AOT_DEV void keep_list(topk_lists<TOPN, R, SHARED> &l, int r, const aot_u32 (&h)[TOPN], aot_u32 *col)
{
    if constexpr (SHARED) {
#pragma unroll
        for (int j = 0; j < TOPN; j++) col[(r * TOPN + j) * AOT_WAVE] = j + 1 < TOPN ? h[j + 1] : 0u;
        l.h[r][0] = h[0], l.at[r] = col + r * TOPN * AOT_WAVE;
    } else {
#pragma unroll
        for (int j = 0; j < TOPN; j++) l.h[r][j] = h[j];
    }
}

/* The lane holding row r's best gives it away. With ZERO or SHARED its list ends in 0 (a
 * padding key, which never wins); in registers without ZERO its last key stays where it was,
 * so a lane that has given all TOPN away offers a key already taken, which the row's final
 * check catches (one select fewer per round). */
template <int TOPN, int R, bool SHARED, bool ZERO>
AOT_DEV void pop(topk_lists<TOPN, R, SHARED> &l, int r, aot_u32 best)
{
    const bool won = l.h[r][0] == best;
    if constexpr (SHARED) {
        if (won) l.h[r][0] = *l.at[r], l.at[r] += AOT_WAVE;
    } else {
#pragma unroll
        for (int i = 0; i + 1 < TOPN; i++) l.h[r][i] = won ? l.h[r][i + 1] : l.h[r][i];
        if (ZERO) l.h[r][TOPN - 1] = won ? 0u : l.h[r][TOPN - 1];
    }
}

/* Has the lane given away its whole list of row r (so its next key might have been due)? */
template <int TOPN, int R, bool SHARED>
AOT_DEV bool spent(const topk_lists<TOPN, R, SHARED> &l, int r, aot_u32 last, const aot_u32 *col)
{
    if constexpr (SHARED) return l.at[r] == col + (r + 1) * TOPN * AOT_WAVE;
    else return l.h[r][0] >= last;
}

/* Round s of k for each of the wave's R rows: the row's best key left, noted in its slot s and
 * popped (a store instead of a compare and select per round on each lane, which would load the
 * busier integer pipe). Every lane stores the same value. */
template <int TOPN, int R, bool SHARED, bool ZERO>
AOT_DEV void round_step(topk_lists<TOPN, R, SHARED> &l, aot_u32 *won, int s, aot_u32 (&last)[R])
{
#pragma unroll
    for (int r = 0; r < R; r++) {
        last[r] = aot_wave_max_u32(l.h[r][0]);
        won[r * AOT_TOPK_SLOTS + s] = last[r];
        pop<TOPN, R, SHARED, ZERO>(l, r, last[r]);
    }
}

/* The k rounds of R rows, round 0's best keys given (the rows' maxima, which the caller needed
 * first), the rows' rounds side by side so that their reductions overlap: each round's key in
 * its row's slot s (visible to the wave's lanes after aot_sync_wave); last: the last round's. */
template <int TOPN, int R, bool SHARED, bool ZERO>
AOT_DEV void rounds(const aot_topk_kargs &a, topk_lists<TOPN, R, SHARED> &l, aot_u32 *won, aot_u32 (&last)[R])
{
#pragma unroll
    for (int r = 0; r < R; r++) won[r * AOT_TOPK_SLOTS] = last[r], pop<TOPN, R, SHARED, ZERO>(l, r, last[r]);
    if (a.k == 8) /* DeepSeek-V3's and Qwen3's k, unrolled: 5-7 % faster on the H200 */
#pragma unroll
        for (int s = 1; s < 8; s++) round_step<TOPN, R, SHARED, ZERO>(l, won, s, last);
    else
        for (int s = 1; s < a.k; s++) round_step<TOPN, R, SHARED, ZERO>(l, won, s, last);
}

/* Is the logit of key finite? Fields of finite logits lie strictly between -inf's, 0x7fff - inf
 * (inf: the bits of +inf), and +inf's, 0x8000 + inf; NaNs lie outside both. */
template <int BF16>
AOT_DEV bool finite_key(aot_u32 key)
{
    const aot_u32 inf = inf_bits16<BF16>();
    return (key >> 16) - (0x8000u - inf) < 2 * inf;
}

/* ---- a wave's rows, as both fast paths run them ----
 * won: AOT_TOPK_SLOTS words of block-shared memory a row: rounds 0 .. k - 1 in the first k,
 * then (fp32 only) the (k + 1)-th key in slot k; without renormalization the row max times
 * log2 e and the numerators' sum in WON_MXL and WON_SUM. Every lane stores the same values, so
 * any lane may read any slot after aot_sync_wave. */
#define WON_MXL (AOT_MOE_MAX_K + 1)
#define WON_SUM (AOT_MOE_MAX_K + 2)

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

/* A row of 16-bit logits from its words (load_words16): its keys, the lane's best TOPN in h, the
 * row max returned (round 0's key); without renormalization the row's max and sum in won. Sets
 * bad for a non-finite max or a NaN in the sum. */
template <int VPT, int BF16, int TOPN>
AOT_DEV aot_u32 list_packed(const aot_topk_kargs &a, int E, const aot_u32 (&w)[WORDS(VPT)], aot_u32 (&h)[TOPN], aot_u32 *won, bool &bad)
{
    const int e0 = aot_lane() * VPT;
    aot_u32 b[VPT], key[VPT];
#pragma unroll
    for (int j = 0; j < VPT; j++) b[j] = j & 1 ? w[j / 2] & 0xffff0000u : w[j / 2] << 16;
#pragma unroll
    for (int c = 0; c < WORDS(VPT); c++) {
        const aot_u32 id = 0xffffu - (aot_u32)(e0 + 2 * c);
        aot_u32 hi;
        keys2(w[c], id, id - 1, key[2 * c], hi);
        if (2 * c + 1 < VPT) key[2 * c + 1] = hi;
    }
    if (e0 + VPT > E) /* a lane at the row's end */
#pragma unroll
        for (int j = 0; j < VPT; j++) key[j] = e0 + j < E ? key[j] : 0u;
    top_n<VPT, TOPN>(key, h);
    const aot_u32 best = aot_wave_max_u32(h[0]);
    bad = !finite_key<BF16>(best); /* the whole wave's: best is the row's */
    /* numerators 2^(x log2 e - mx log2 e), each one fma against the rounded mx log2 e: that
     * rounding scales every numerator alike, so it cancels in the weights, as long as the sum's
     * terms and the chosen numerators are computed the same way (both aot_fmaf) */
    if (!a.renormalize) {
        const float mxl = key_logit<BF16>(best) * AOT_LOG2E;
        won[WON_MXL] = aot_bits_from_f32(mxl);
        won[WON_SUM] = aot_bits_from_f32(row_sum<VPT, BF16>(b, mxl, bad));
    }
    return best;
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

/* The order key of fp32 bits u: 0x80000000 + the signed magnitude (-0 and +0 both 0x80000000,
 * unlike keys2's 16-bit keys). The inverse of a cut key: a logit at most the key's. */
AOT_DEV aot_u32 order_key32(aot_u32 u) { return (u ^ ((aot_u32)((aot_i32)u >> 31) | 0x80000000u)) + (u >> 31); }
AOT_DEV float key32_logit(aot_u32 k)
{
    return aot_f32_from_bits(k & 0x80000000u ? k & 0x7fffffffu : (0u - k) | 0x80000000u);
}

/* The low bits of an fp32 key that hold the expert (VPT * AOT_WAVE >= E, a power of two), and
 * the keys of -inf and +inf: cut keys strictly between are finite (a row max within 2^ID_BITS
 * ulps of -FLT_MAX is taken for -inf, and the row goes to topk_row). */
template <int VPT>
AOT_DEV aot_u32 id_mask32() { return VPT * AOT_WAVE - 1; }
#define KEY32_NEG_INF 0x00800000u
#define KEY32_POS_INF 0xff800000u

template <int VPT, int TOPN>
AOT_DEV aot_u32 list_f32(const aot_topk_kargs &a, int E, const aot_u32 (&u)[VPT], aot_u32 (&h)[TOPN], aot_u32 *won, bool &bad)
{
    const aot_u32 ID_MASK = id_mask32<VPT>(), CUT = ~ID_MASK;
    const int e0 = aot_lane() * VPT;
    aot_u32 key[VPT];
#pragma unroll
    for (int j = 0; j < VPT; j++) key[j] = e0 + j < E ? (order_key32(u[j]) & CUT) | (ID_MASK - (aot_u32)(e0 + j)) : 0u;
    top_n<VPT, TOPN>(key, h);
    const aot_u32 best = aot_wave_max_u32(h[0]);
    bad = (best & CUT) - (KEY32_NEG_INF + 1) >= KEY32_POS_INF - (KEY32_NEG_INF + 1); /* the row max is not finite */
    if (!a.renormalize) { /* as in list_packed; the cut max is as good a shift as the max */
        const float mxl = key32_logit(best & CUT) * AOT_LOG2E;
        won[WON_MXL] = aot_bits_from_f32(mxl);
        won[WON_SUM] = aot_bits_from_f32(row_sum<VPT, 1>(u, mxl, bad)); /* fp32 bits read as bf16's shifted up */
    }
    return best;
}

/* ---- the rows' outputs ----
 * KIND says how a chosen key reads: 0 fp16 and 1 bf16 (the whole logit, the expert in the low
 * 16 bits), 2 fp32 (the logit cut, the expert in the low log2(VPT * wave) bits). */
enum { KIND_F16 = 0, KIND_BF16 = 1, KIND_F32 = 2 };

/* Must the row whose chosen key is mine (the next one after) be handed back? 16 bits: a chosen
 * zero (see the keys) or NaN (only a negative one can be chosen here: its key is below -inf's;
 * without renormalization the sum has caught it already). fp32: two of the k + 1 largest share
 * a cut key, or a chosen logit is -inf or NaN. */
template <int KIND, int VPT>
AOT_DEV bool chosen_bad(aot_u32 mine, aot_u32 after)
{
    if constexpr (KIND == KIND_F32) {
        const aot_u32 CUT = ~id_mask32<VPT>();
        return ((mine ^ after) & CUT) == 0 || (mine & CUT) <= KEY32_NEG_INF;
    } else {
        return mine >> 16 < 0x7fffu - inf_bits16<KIND>() || (mine >> 16) - 0x7fffu < 2u; /* below -inf's field, or a zero */
    }
}

template <int KIND, int VPT>
AOT_DEV int chosen_expert(aot_u32 key)
{
    if constexpr (KIND == KIND_F32) return (int)(id_mask32<VPT>() - (key & id_mask32<VPT>()));
    else return (int)(0xffffu - (key & 0xffffu));
}

/* The chosen logit whole: 16-bit keys hold it; fp32 ones are read back from the row (cache hits). */
template <int KIND, int VPT>
AOT_DEV float chosen_logit(const aot_topk_kargs &a, int row, aot_u32 key)
{
    if constexpr (KIND == KIND_F32) return ((const float *)a.gating)[(aot_i64)row * a.row_stride + chosen_expert<KIND, VPT>(key)];
    else return key_logit<KIND>(key);
}

/* Writes rows row0 .. row0 + R - 1 (those below tokens) from their rounds in won, all rows'
 * slots at once: the wave's lanes in groups of G >= k, group i writing row i's k outputs (4 rows
 * of k = 8 on NVIDIA: every lane busy, the stores contiguous). Renormalized, a row's shift is
 * its max (its group's first lane's logit) and its scale the sum of the numerators of the
 * group's first SPAN >= k lanes (the rest hold zeros); otherwise
 * both come from the whole row (WON_MXL, WON_SUM). Rows that some lane flagged in fail or whose
 * chosen keys fail chosen_bad are left unwritten, one vote for them all; returns them (bit r). */
template <int KIND, int VPT, int R, int G, int SPAN>
AOT_DEV aot_u32 write_rows(const aot_topk_kargs &a, int row0, const aot_u32 *won, const bool (&fail)[R])
{
    const int PASSES = (R * G + AOT_WAVE - 1) / AOT_WAVE;
    const int lane = aot_lane(), s = lane % G, k = a.k;
    aot_u32 mine[PASSES];
    bool any = false, slot_bad[PASSES];
#pragma unroll
    for (int r = 0; r < R; r++) any |= fail[r];
#pragma unroll
    for (int p = 0; p < PASSES; p++) { /* the chosen keys, and their tests */
        const int r = p * (AOT_WAVE / G) + lane / G;
        const aot_u32 *rw = won + r * AOT_TOPK_SLOTS;
        const bool on = r < R && s < k;
        mine[p] = on ? rw[s] : 0u;
        slot_bad[p] = on && chosen_bad<KIND, VPT>(mine[p], rw[s + 1]);
        any |= slot_bad[p];
    }
    aot_u32 back = 0;
    if (aot_wave_any(any)) /* rare: which rows */
#pragma unroll
        for (int r = 0; r < R; r++) {
            bool b = fail[r];
#pragma unroll
            for (int p = 0; p < PASSES; p++) b |= slot_bad[p] && p * (AOT_WAVE / G) + lane / G == r;
            back |= aot_wave_any(b) ? 1u << r : 0u;
        }
    const float L = AOT_LOG2E;
#pragma unroll
    for (int p = 0; p < PASSES; p++) {
        const int r = p * (AOT_WAVE / G) + lane / G, row = row0 + r;
        const aot_u32 *rw = won + r * AOT_TOPK_SLOTS;
        const bool on = r < R && s < k && row < a.tokens && !(back >> r & 1u);
        const float x = on ? chosen_logit<KIND, VPT>(a, row, mine[p]) : 0.0f;
        float mxl, sum;
        if (a.renormalize) mxl = aot_shfl_f32(x, lane - s) * L; /* cheaper than decoding the max's key */
        else mxl = on ? aot_f32_from_bits(rw[WON_MXL]) : 0.0f, sum = on ? aot_f32_from_bits(rw[WON_SUM]) : 1.0f;
        const float num = on ? aot_exp2_fast(aot_fmaf(x, L, -mxl)) : 0.0f;
        if (a.renormalize) { /* the group's sum, in all its lanes */
            sum = num;
#pragma unroll
            for (int m = 1; m < SPAN; m <<= 1) sum += aot_shfl_xor_f32(sum, m);
        }
        if (on) {
            const int o = row * k + s; /* tokens * k < 2^31 (checked by the runtime) */
            a.weights[o] = num * aot_rcp_fast(sum); /* the sum is in [1, experts] */
            a.ids[o] = chosen_expert<KIND, VPT>(mine[p]);
            if (a.token_expert_indices) a.token_expert_indices[o] = s * a.tokens + row;
        }
    }
    return back;
}

/* Rows row0 .. row0 + R - 1 by a fast path (rows past the last read the last row again, and
 * are not written); returns the rows handed back. A lane that has given away all TOPN of its
 * list (its next key might have been due, or its stale last key won again) still offers a key
 * >= the last round's, where every other lane's is below it (keys are distinct); false alarms
 * when it gave its last key in the last round; rare either way. The infinite-max and NaN tests
 * wait for the rows' one vote (write_rows) instead of leaving early: one branch, not three. */
template <int KIND, int VPT, int R>
AOT_DEV aot_u32 fast_rows(const aot_topk_kargs &a, int E, bool vec, int row0, aot_u32 *won, aot_u32 *lists)
{
    const int TOPN = TOPK_LIST(VPT);
    const bool ZERO = VPT <= TOPN, SHARED = TOPK_SHARED_LISTS(VPT, R); /* ZERO: a lane's list is all it holds */
    const int NW = KIND == KIND_F32 ? VPT : WORDS(VPT); /* words a lane loads */
    aot_u32 w[R][NW], last[R];
    bool fail[R];
#pragma unroll
    for (int r = 0; r < R; r++) {
        const aot_i64 row = (aot_u32)(row0 + r < a.tokens ? row0 + r : a.tokens - 1); /* through unsigned: no sign extension */
        if constexpr (KIND == KIND_F32) load_words32<VPT>((const aot_u32 *)a.gating + row * a.row_stride, aot_lane() * VPT, E, vec, w[r]);
        else load_words16<VPT, KIND>((const aot_u16 *)a.gating + row * a.row_stride, aot_lane() * VPT, E, vec, w[r]);
    }
    topk_lists<TOPN, R, SHARED> l;
    aot_u32 *const col = lists + aot_lane();
#pragma unroll
    for (int r = 0; r < R; r++) {
        aot_u32 h[TOPN];
        if constexpr (KIND == KIND_F32) last[r] = list_f32<VPT, TOPN>(a, E, w[r], h, won + r * AOT_TOPK_SLOTS, fail[r]);
        else last[r] = list_packed<VPT, KIND, TOPN>(a, E, w[r], h, won + r * AOT_TOPK_SLOTS, fail[r]);
        keep_list(l, r, h, col);
    }
    rounds<TOPN, R, SHARED, ZERO>(a, l, won, last);
#pragma unroll
    for (int r = 0; r < R; r++) {
        fail[r] |= !ZERO && spent(l, r, last[r], col);
        if (KIND == KIND_F32) won[r * AOT_TOPK_SLOTS + a.k] = aot_wave_max_u32(l.h[r][0]); /* the (k + 1)-th key */
    }
    aot_sync_wave();
    /* groups of 8 or 32 lanes a row; one row: the whole wave, so every lane's row is known at
     * compile time */
    const int G8 = R == 1 ? AOT_WAVE : 8, G32 = R == 1 ? AOT_WAVE : 32;
    return a.k <= 8 ? write_rows<KIND, VPT, R, G8, 8>(a, row0, won, fail) : write_rows<KIND, VPT, R, G32, 32>(a, row0, won, fail);
}

/* A wave takes R consecutive rows. FULL: rows of exactly VPT * AOT_WAVE experts, aligned for
 * the wide loads (the runtime's choice), so no lane needs a bounds test. DT: the logits' types
 * the kernel takes (TOPK_ANY, TOPK_16BIT, TOPK_F32 in moe_variants.h; the _rows4 kernels take
 * 16-bit or fp32 rows, each with its own register budget; below). */
template <int VPT, bool FULL, int R, int DT>
AOT_DEV void topk_kernel_body(const aot_topk_kargs &a)
{
    const int wave = (int)((unsigned)aot_thread_x() / AOT_WAVE); /* unsigned: a shift, not a signed division */
    const int row0 = (aot_block_x() * (AOT_TOPK_BLOCK / AOT_WAVE) + wave) * R;
    if (row0 >= a.tokens) return; /* whole waves leave together */
    const bool vec = FULL || a.wide_rows != 0;
    const int E = FULL ? VPT * AOT_WAVE : a.experts;
    AOT_SHARED(aot_u32, won, AOT_TOPK_BLOCK / AOT_WAVE * R * AOT_TOPK_SLOTS);
    AOT_SHARED(aot_u32, lists, TOPK_SHARED_LISTS(VPT, R) ? AOT_TOPK_BLOCK * R * TOPK_LIST(VPT) : 1);
    aot_u32 *const wave_won = won + wave * R * AOT_TOPK_SLOTS, *const wave_lists = lists + wave * AOT_WAVE * R * TOPK_LIST(VPT);
    aot_u32 back;
    /* the fp32 path is compiled into TOPK_F32 and TOPK_ANY kernels only */
    if constexpr (DT == TOPK_F32) back = fast_rows<KIND_F32, VPT, R>(a, E, vec, row0, wave_won, wave_lists);
    else if (a.dtype == AOT_GATING_BF16) back = fast_rows<KIND_BF16, VPT, R>(a, E, vec, row0, wave_won, wave_lists);
    else if (DT == TOPK_16BIT || a.dtype == AOT_GATING_F16) back = fast_rows<KIND_F16, VPT, R>(a, E, vec, row0, wave_won, wave_lists);
    else if constexpr (DT == TOPK_ANY) back = fast_rows<KIND_F32, VPT, R>(a, E, vec, row0, wave_won, wave_lists);
    if (back) /* rows the fast paths handed back (rare) */
#pragma unroll 1
        for (int r = 0; r < R; r++)
            if ((back >> r & 1u) && row0 + r < a.tokens) topk_row<VPT>(a, row0 + r);
}

/* blocks: how many blocks a multiprocessor must hold on NVIDIA (registers capped to fit). 8 for
 * VPT <= 8 (32 registers, no spills; 64 warps per SM against 48 at the 40 registers the compiler
 * chose): 256 experts 5-7 % faster at 65536-262144 tokens on the H200, 3-6 % slower at
 * 1024-4096 (every block resident either way) and 2 % for fp32 rows at 262144, measured when
 * those still took topk_row (docs/performance.md). 6 for VPT = 16 (8 would spill), 3 for
 * VPT = 32 (a floor, not a cap: the compiler's 64 registers fit 4). */
#define TOPK_KERNEL(name, kargs, vpt, full, rows, dt, blocks)                                   \
    AOT_KERNEL AOT_LAUNCH_BOUNDS_MIN(AOT_TOPK_BLOCK, blocks) void name(kargs a)                 \
    {                                                                                          \
        topk_kernel_body<vpt, full, rows, dt>(a);                                              \
    }                                                                                          \
    AOT_EMU_ENTRY(name, kargs)

/* The _rows4 kernels at 5 blocks: 48 registers (8 bytes of spills for fp32 rows at VPT = 8).
 * 16-bit rows of 256 experts (VPT = 8, lists in shared memory) at 6 blocks, 40 registers:
 * 53.6-53.8 µs at 262144 tokens on the H200 against 56.0-56.2 at 5 blocks, in a kernel without
 * the fp32 path, which would spill 100 bytes at 40 */
AOT_TOPK_VARIANTS(TOPK_KERNEL)
#if AOT_WAVE == 32
AOT_TOPK_WAVE32_VARIANTS(TOPK_KERNEL)
#endif
