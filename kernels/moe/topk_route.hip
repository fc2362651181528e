/* topk_route.hip : the MoE routers of aiter_aot_topk_route (semantics in
 * runtime/include/aiter_aot_moe.h and docs/routing.md). A row of L lanes takes one token (the
 * rows and select layouts: L of 8 or 16, several rows a wave; elsewhere L is the wave):
 * 1. Each lane holds VPT experts: in the rows layout runs of 4 (run c at 4 (l + L c)), in the
 *    lane-groups layout the run l VPT .. l VPT + VPT - 1, strided (l, l + W, ...) where runs
 *    do not load whole; NaN logits read as -inf.
 * 2. Scores: softmax (row max and sum first), sigmoid or sqrt(softplus); the selection score
 *    is the score plus the optional correction bias.
 * 3. Grouped selection (n_group > 1): each group's score (the sum of its two largest selection
 *    scores with a bias, its largest without) comes from a butterfly over the lanes holding
 *    the group (or a wave reduction a group where groups do not fall on whole lanes);
 *    topk_group rounds of an argmax keep the groups, and the experts of the others are marked
 *    taken.
 * 4. k rounds of an argmax over the row's lanes' best candidates (ties: the lower expert).
 *    Each lane keeps its two best; a win promotes the second, and the lanes look over their
 *    slots again only after some lane has won twice. Lane s keeps round s's expert and computes
 *    its unbiased score from its logit again, so the k outputs are written by k lanes at once.
 *    The select layout ranks the few candidates above a threshold instead (its section below).
 * Hash routing reads the k experts from tid2eid instead of 3 and 4; without softmax it takes a
 * few lanes a row (hash_lanes).
 * The kernels, one per layout, experts-per-lane count VPT and L, are listed in moe_variants.h
 * (AOT_ROUTE_VARIANTS); the runtime picks one (op_route.c: route_plan_for). */
#include "aot_device.h"
#include "moe_kargs.h"
#include "moe_variants.h" /* the kernels this file instantiates */

/* Logit e of a row, of element type DT (AOT_GATING_*: a template argument, so a row's loads
 * carry no type test), or of a.dtype where DT < 0; NaN reads as -inf. */
template <int DT>
AOT_DEV float route_logit(const aot_route_kargs &a, aot_i64 row, int e)
{
    const aot_i64 at = row * a.row_stride + e;
    float x;
    const int dt = DT < 0 ? a.dtype : DT;
    if (dt == AOT_GATING_F32) x = ((const float *)a.gating)[at];
    else if (dt == AOT_GATING_BF16) x = aot_bf16_to_f32(((const aot_u16 *)a.gating)[at]);
    else x = aot_f16_to_f32(((const aot_u16 *)a.gating)[at]);
    return x != x ? -AOT_INF : x;
}

/* sqrt(softplus(x)), softplus as PyTorch's (log1p(exp(x)), x itself above 20), written as
 * max(x, 0) + log1p(v), v = exp(-|x|) in [0, 1]: above 20, v < 2.1e-9 leaves x unchanged in
 * fp32 as PyTorch's threshold does. log1p(v) = v p(v), p of degree 8 (the Chebyshev
 * interpolant of log1p(v) / v on [0, 1]: relative error 2.2e-7 evaluated in fp32): no branch and
 * no log (the hardware log2 of 1 + v loses v's low bits; a series below 0.1 and the log above
 * it took a divergent branch a logit). sqrt(y) = y rsqrt(y). */
AOT_DEV float sqrt_softplus(float x)
{
    const float v = aot_exp_fast(-aot_fmaxf(x, -x));
    float p = 0.005126102f;
    p = aot_fmaf(p, v, -0.029074065f);
    p = aot_fmaf(p, v, 0.07751609f);
    p = aot_fmaf(p, v, -0.13602248f);
    p = aot_fmaf(p, v, 0.19076881f);
    p = aot_fmaf(p, v, -0.24835399f);
    p = aot_fmaf(p, v, 0.3331812f);
    p = aot_fmaf(p, v, -0.49999446f);
    p = aot_fmaf(p, v, 0.99999994f);
    const float sp = aot_fmaf(v, p, aot_fmaxf(x, 0.0f)), r = sp * aot_rsqrt_fast(sp);
    return sp > 0.0f && sp < AOT_INF ? r : sp; /* 0 * rsqrt(0) and inf * rsqrt(inf) are NaN */
}

/* sigmoid(x); -inf gives 1 / (1 + inf) = 0 and +inf 1 without a test. */
AOT_DEV float route_sigmoid(float x) { return aot_rcp_fast(1.0f + aot_exp_fast(-x)); }

/* The score of logit x; softmax: mx is the row max, inv 1 / the sum of exp(x - mx) (rows whose
 * max is +-inf follow topk_softmax's rules: +inf experts share 1, an all -inf row is 0). */
AOT_DEV float route_score(int scoring, float x, float mx, float inv)
{
    if (scoring == AOT_ROUTE_SIGMOID) return route_sigmoid(x);
    if (scoring == AOT_ROUTE_SQRT_SOFTPLUS) return sqrt_softplus(x);
    if (mx == AOT_INF) return x == AOT_INF ? inv : 0.0f;
    if (mx == -AOT_INF) return 0.0f;
    return aot_exp_fast(x - mx) * inv;
}

/* route_score of slots 0 .. live - 1, the scoring's (and a finite softmax max's) test taken
 * once a row: per slot, the compiler kept a branch and a reconvergence point for each. Slots
 * from live on lie past the row on every lane (384 experts at wave 32 fill 12 of 16). */
template <int VPT>
AOT_DEV void score_row(int scoring, float (&x)[VPT], float mx, float inv, int live)
{
    if (scoring == AOT_ROUTE_SIGMOID) {
#pragma unroll
        for (int j = 0; j < VPT; j++)
            if (j < live) x[j] = route_sigmoid(x[j]);
    } else if (scoring == AOT_ROUTE_SQRT_SOFTPLUS) {
#pragma unroll
        for (int j = 0; j < VPT; j++)
            if (j < live) x[j] = sqrt_softplus(x[j]);
    } else if (mx == AOT_INF || mx == -AOT_INF) {
#pragma unroll
        for (int j = 0; j < VPT; j++)
            if (j < live) x[j] = route_score(scoring, x[j], mx, inv);
    } else {
#pragma unroll
        for (int j = 0; j < VPT; j++)
            if (j < live) x[j] = aot_exp_fast(x[j] - mx) * inv;
    }
}

/* Softmax statistics of a row of L lanes: mx and 1 / sum. */
template <int VPT, int L = AOT_WAVE>
AOT_DEV void softmax_stats(const float (&x)[VPT], float &mx, float &inv)
{
    float m = -AOT_INF;
#pragma unroll
    for (int j = 0; j < VPT; j++) m = aot_fmaxf(m, x[j]);
    mx = aot_from_order_key(aot_lanes_max_u32<L>(aot_order_key(m)));
    float sum = 0.0f;
#pragma unroll
    for (int j = 0; j < VPT; j++)
        sum += mx == AOT_INF ? (x[j] == AOT_INF ? 1.0f : 0.0f) : mx == -AOT_INF ? 0.0f : aot_exp_fast(x[j] - mx);
    sum = aot_lanes_sum_f32<L>(sum);
    inv = sum > 0.0f ? 1.0f / sum : 0.0f;
}

/* Output slot s of a row: its weight and expert id (int32 or int64). */
AOT_DEV void store_slot(const aot_route_kargs &a, int row, int s, float w, int e)
{
    const aot_i64 o = (aot_i64)row * a.k + s;
    a.weights[o] = w;
    if (a.ids_int64) ((aot_i64 *)a.ids)[o] = e;
    else ((int *)a.ids)[o] = e;
}

/* Renormalizes over the row's L lanes (guarded as vLLM's: the sum is at least 1e-20), scales
 * and, where `live`, writes slot l, the row's lane (lanes below k; e < 0 writes id -1, weight 0). */
template <int L = AOT_WAVE>
AOT_DEV void write_slot(const aot_route_kargs &a, int row, int l, float w, int e, bool live = true)
{
    const bool on = l < a.k;
    if (!on) w = 0.0f;
    if (a.renormalize) w *= aot_rcp_fast(aot_fmaxf(aot_lanes_sum_f32<L>(w), 1e-20f)); /* <= 1 ulp */
    w *= a.scale;
    if (on && live) store_slot(a, row, l, w, e);
}

AOT_DEV aot_i64 hash_index(const void *p, int hash_int64, aot_i64 i)
{
    return hash_int64 ? ((const aot_i64 *)p)[i] : (aot_i64)((const int *)p)[i];
}

/* Hash routing's expert for slot s of a row: tid2eid[input_ids[row], s], or -1 for a token id
 * outside the table or an entry outside [0, experts). */
AOT_DEV int hash_expert(const aot_route_kargs &a, int row, int s)
{
    const aot_i64 tok = hash_index(a.input_ids, a.hash_int64, row);
    const aot_i64 id = tok >= 0 && tok < a.vocab ? hash_index(a.tid2eid, a.hash_int64, tok * a.k + s) : -1;
    return id >= 0 && id < a.experts ? (int)id : -1;
}

/* Hash routing: slot s's expert is tid2eid[input_ids[row], s]; an id outside the table, or an
 * entry outside [0, experts), gives that slot id -1 and weight 0. Softmax needs the row's
 * statistics; the others read only the k chosen logits. */
template <int VPT, int DT>
AOT_DEV void hash_row(const aot_route_kargs &a, int row)
{
    const int lane = aot_lane();
    float mx = 0.0f, inv = 0.0f;
    if (a.scoring == AOT_ROUTE_SOFTMAX) {
        float x[VPT];
#pragma unroll
        for (int j = 0; j < VPT; j++) x[j] = j * AOT_WAVE + lane < a.experts ? route_logit<DT>(a, row, j * AOT_WAVE + lane) : -AOT_INF;
        softmax_stats<VPT>(x, mx, inv);
    }
    const int e = lane < a.k ? hash_expert(a, row, lane) : -1;
    const float w = e >= 0 ? route_score(a.scoring, route_logit<DT>(a, row, e), mx, inv) : 0.0f;
    write_slot(a, row, lane, w, e);
}

/* Hash routing with sigmoid or sqrt-softplus (the AOT_ROUTE_HASH kernel): the scores need no
 * row statistics, so a row takes P lanes, P the power of two at or above k (8 for k = 6: four
 * rows a wave of 32), lane s of them slot s (hash_row's rules); the renormalization's sum is a
 * butterfly over the P lanes. Rows past the last still run (their lanes write nothing), as the
 * shuffles take the whole wave. */
template <int DT>
AOT_DEV void hash_lanes(const aot_route_kargs &a)
{
    int P = 1;
    while (P < a.k) P <<= 1;
    const int t = aot_thread_x(), s = t & (P - 1);
    const int row = aot_block_x() * (AOT_TOPK_BLOCK / P) + t / P;
    const bool on = row < a.tokens && s < a.k;
    const int e = on ? hash_expert(a, row, s) : -1;
    float w = e >= 0 ? route_score(a.scoring, route_logit<DT>(a, row, e), 0.0f, 0.0f) : 0.0f;
    if (a.renormalize) {
        float sum = w;
        for (int m = 1; m < P; m <<= 1) sum += aot_shfl_xor_f32(sum, m);
        w *= aot_rcp_fast(aot_fmaxf(sum, 1e-20f));
    }
    if (on) store_slot(a, row, s, w * a.scale, e);
}

/* Expert of slot j of the lane: strided (j W + lane) or, with CONTIG, the lane's own run
 * (lane VPT + j). Ascending j is ascending expert either way, which the tie rule relies on. */
template <int VPT, bool CONTIG>
AOT_DEV int expert_of(int j, int lane) { return CONTIG ? lane * VPT + j : j * AOT_WAVE + lane; }

/* The best (key, expert) among the candidates of a row of L lanes (key 0: none); ties to the
 * lower expert. */
template <int L = AOT_WAVE>
AOT_DEV aot_u32 lanes_argmax(aot_u32 key, int e, int &be)
{
    const aot_u32 best = aot_lanes_max_u32<L>(key);
    be = (int)aot_lanes_min_u32<L>(key == best ? (aot_u32)e : 0x7fffffffu);
    return best;
}

/* Adds v (not NaN) to the two largest so far, m1 >= m2 (-inf to start): three min/max, no
 * compare and select. */
AOT_DEV void top2_add(float &m1, float &m2, float v) { m2 = aot_fmaxf(m2, aot_fminf(v, m1)), m1 = aot_fmaxf(m1, v); }

/* Each lane's two largest become those of its aligned group of L lanes (a butterfly). */
AOT_DEV void top2_lanes(float &m1, float &m2, int L)
{
    for (int m = 1; m < L; m <<= 1) {
        const float o1 = aot_shfl_xor_f32(m1, m), o2 = aot_shfl_xor_f32(m2, m);
        m2 = aot_fmaxf(aot_fmaxf(m2, o2), m1 < o1 ? m1 : o1), m1 = aot_fmaxf(m1, o1);
    }
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
        const aot_u32 m1 = lanes_argmax(k1, e1, be);
        float gs = aot_from_order_key(m1);
        if (top2 && G > 1) /* the second: the best left once the first's expert is out */
            gs += aot_from_order_key(aot_wave_max_u32(e1 == be && k1 == m1 ? k2 : k1));
        if (lane == g) my_gs = gs;
    }
    aot_u32 kept = 0;
    for (int r = 0; r < a.topk_group; r++) {
        int bg;
        const bool cand = lane < a.n_group && !(kept >> lane & 1u);
        lanes_argmax(cand ? aot_order_key(my_gs) : 0u, cand ? lane : 0x7fffffff, bg);
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
    /* G, L and g by division: log2(L) from the runtime instead took the kernel from 32 registers
     * to 34 (6 blocks a multiprocessor instead of 8) */
    const int lane = aot_lane(), G = a.experts / a.n_group, L = G / VPT, g = lane * VPT / G;
    float m1 = -AOT_INF, m2 = -AOT_INF; /* the lane's two largest, then the group's */
#pragma unroll
    for (int j = 0; j < VPT; j++) top2_add(m1, m2, c[j]);
    top2_lanes(m1, m2, L);
    const float gs = a.bias && G > 1 ? m1 + m2 : m1;
    const bool group = g < a.n_group; /* lanes past the experts hold no group */
    aot_u32 kept = 0;
    for (int r = 0; r < a.topk_group; r++) {
        int bg;
        const bool cand = group && !(kept >> g & 1u);
        lanes_argmax(cand ? aot_order_key(gs) : 0u, cand ? g : 0x7fffffff, bg);
        kept |= 1u << bg;
    }
    if (!group || !(kept >> g & 1u)) taken = ~0u;
}

/* A 32-bit word of logits of type DT holding -inf in each. */
template <int DT>
AOT_DEV aot_u32 neg_inf_word() { return DT == AOT_GATING_F32 ? 0xff800000u : DT == AOT_GATING_BF16 ? 0xff80ff80u : 0xfc00fc00u; }

/* The logits in 32-bit word v of type DT into x: one fp32, or two 16-bit (the lower index in the
 * low half). */
template <int DT>
AOT_DEV void unpack_logits(aot_u32 v, float *x)
{
    if (DT == AOT_GATING_F32) x[0] = aot_f32_from_bits(v);
    else if (DT == AOT_GATING_BF16) x[0] = aot_f32_from_bits(v << 16), x[1] = aot_f32_from_bits(v & 0xffff0000u);
    else x[0] = aot_f16_to_f32((aot_u16)v), x[1] = aot_f16_to_f32((aot_u16)(v >> 16));
}

/* Words of the lane's run of N bytes at p, read in loads of AOT_ROUTE_CHUNK(N) bytes. */
template <int N>
AOT_DEV void load_run(const aot_u32 *p, aot_u32 (&w)[N / 4])
{
    constexpr int W = AOT_ROUTE_CHUNK(N) / 4;
#pragma unroll
    for (int c = 0; c < N / 4 / W; c++) {
        const aot_words<W> q = aot_load_words<W>(p + W * c);
#pragma unroll
        for (int i = 0; i < W; i++) w[W * c + i] = q.v[i];
    }
}

/* Run `run` of VPT logits of a row, read in whole loads (the lane-groups layout where a.vec, the
 * select layout always: the runtime checks the alignment); a run past the row (none where FULL)
 * reads the row's first run instead (a valid address) and holds -inf. */
template <int VPT, int DT, bool FULL = false>
AOT_DEV void load_whole_run(const aot_route_kargs &a, int row, int run, float (&x)[VPT])
{
    constexpr int BYTES = VPT * (DT == AOT_GATING_F32 ? 4 : 2);
    const bool in = FULL || run * VPT < a.experts;
    const aot_i64 at = (aot_i64)row * a.row_stride + (in ? run * VPT : 0);
    aot_u32 w[BYTES / 4];
    load_run<BYTES>(DT == AOT_GATING_F32 ? (const aot_u32 *)a.gating + at : (const aot_u32 *)((const aot_u16 *)a.gating + at), w);
#pragma unroll
    for (int i = 0; i < BYTES / 4; i++) unpack_logits<DT>(in ? w[i] : neg_inf_word<DT>(), x + (DT == AOT_GATING_F32 ? i : 2 * i));
#pragma unroll
    for (int j = 0; j < VPT; j++) x[j] = aot_fmaxf(x[j], -AOT_INF); /* NaN reads as -inf: one max, not a test */
}

/* The lane's logits, slot j holding expert_of(j) (-inf past the row). */
template <int VPT, bool CONTIG, int DT>
AOT_DEV void load_row(const aot_route_kargs &a, int row, float (&x)[VPT])
{
    if constexpr (CONTIG && DT >= 0 && AOT_ROUTE_CHUNK(VPT * (DT == AOT_GATING_F32 ? 4 : 2)) != 0)
        if (a.vec) return load_whole_run<VPT, DT>(a, row, aot_lane(), x);
    /* slots past the row read the row's expert 0 and discard it: a load under a per-slot
     * branch took a branch, a reconvergence point and its own address (about 8 instructions a
     * slot against 4) */
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        const int e = expert_of<VPT, CONTIG>(j, aot_lane());
        const float v = route_logit<DT>(a, row, e < a.experts ? e : 0);
        x[j] = e < a.experts ? v : -AOT_INF;
    }
}

/* Adds the correction bias to the lane's selection scores; slots past the row become
 * candidates of none. With a.vec_bias the lane's run of bias comes in whole loads. (Reading it
 * with the logits, so that one load's latency hides the other's, took topk_route_groups_v8 from
 * 32 registers to 40: 6 blocks a multiprocessor instead of 8.) */
template <int VPT, bool CONTIG>
AOT_DEV void add_bias(const aot_route_kargs &a, float (&x)[VPT], aot_u32 &taken)
{
    const int lane = aot_lane();
    if (CONTIG && a.vec_bias) {
        const bool in = lane * VPT < a.experts;
        aot_u32 b[VPT];
        load_run<4 * VPT>((const aot_u32 *)a.bias + (in ? lane * VPT : 0), b);
#pragma unroll
        for (int j = 0; j < VPT; j++) x[j] += aot_f32_from_bits(b[j]);
        if (!in) taken = ~0u;
        return;
    }
#pragma unroll
    for (int j = 0; j < VPT; j++)
        if (expert_of<VPT, CONTIG>(j, lane) >= a.experts) taken |= 1u << j;
    if (!a.bias) return;
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        const int e = expert_of<VPT, CONTIG>(j, lane);
        x[j] += a.bias[e < a.experts ? e : 0]; /* past the row: taken already */
    }
}

/* A bit a slot of a lane: 32 bits up to 32 slots, 64 above (the select layout's 48). */
template <bool WIDE>
struct slot_mask_of { typedef aot_u32 type; };
template <>
struct slot_mask_of<true> { typedef unsigned long long type; };
template <int VPT>
struct slot_mask : slot_mask_of<(VPT > 32)> {};

/* The lane's two best candidates among the slots not in `taken`: keys bk >= sk (0: none) and
 * their slots; ties keep the lower slot first, which holds the lower expert. */
template <int VPT>
AOT_DEV void lane_top2(const aot_u32 (&key)[VPT], typename slot_mask<VPT>::type taken, aot_u32 &bk, int &bj, aot_u32 &sk, int &sj)
{
    bk = 0, bj = 0, sk = 0, sj = 0;
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        const aot_u32 kj = taken >> j & 1u ? 0u : key[j];
        if (kj > bk) sk = bk, sj = bj, bk = kj, bj = j;
        else if (kj > sk) sk = kj, sj = j;
    }
}

/* k rounds of an argmax over a row of L lanes (step 4 above; a pass over every slot in every
 * round made the rounds most of the kernel's instructions): the expert of round l, this lane's
 * place in its row, or -1 where no candidate was left (keys of 0 from NaN bias). key: the
 * lane's order keys (0: none); expert(j): the expert of its slot j. Experts are distinct, so the
 * lane holding the round's expert is the winner. (Keeping each lane's expert from round to
 * round, and a look over the slots on the winner's own branch instead of after a wave vote,
 * took topk_route_groups_v8 from 34 registers to 40.) */
template <int VPT, int L, class Expert>
AOT_DEV int select_k(const aot_route_kargs &a, const aot_u32 (&key)[VPT], typename slot_mask<VPT>::type taken, int l, Expert expert)
{
    typedef typename slot_mask<VPT>::type M;
    aot_u32 bk, sk;
    int bj, sj, my_e = -1;
    lane_top2<VPT>(key, 0, bk, bj, sk, sj); /* taken slots hold key 0 already */
    for (int r = 0; r < a.k; r++) {
        const int e = bk ? expert(bj) : 0x7fffffff;
        int be;
        lanes_argmax<L>(bk, e, be);
        const bool won = bk && e == be;
        if (won) taken |= (M)1 << bj, bk = sk, bj = sj, sk = 0;
        if (aot_wave_any(won && bk == 0 && r + 1 < a.k)) lane_top2<VPT>(key, taken, bk, bj, sk, sj);
        if (l == r) my_e = be;
    }
    return my_e < a.experts ? my_e : -1;
}

template <int VPT, bool CONTIG, int DT, bool GROUPS = true>
AOT_DEV void route_row(const aot_route_kargs &a, int row)
{
    const int lane = aot_lane(), E = a.experts;
    float x[VPT];
    load_row<VPT, CONTIG, DT>(a, row, x);
    float mx = 0.0f, inv = 0.0f;
    if (a.scoring == AOT_ROUTE_SOFTMAX) softmax_stats<VPT>(x, mx, inv);
    aot_u32 taken = 0; /* bit j: the lane's expert j is not a candidate */
    score_row<VPT>(a.scoring, x, mx, inv, CONTIG ? VPT : (E + AOT_WAVE - 1) / AOT_WAVE);
    add_bias<VPT, CONTIG>(a, x, taken); /* x becomes the selection score */
    if (CONTIG && a.n_group > 1) keep_lane_groups<VPT>(a, x, taken);
    else if (GROUPS && a.n_group > 1) keep_groups<VPT>(a, x, taken);
    aot_u32 key[VPT]; /* the candidates' order keys (0: none) */
#pragma unroll
    for (int j = 0; j < VPT; j++) key[j] = taken >> j & 1u ? 0u : aot_order_key(x[j]);
    const int my_e = select_k<VPT, AOT_WAVE>(a, key, taken, lane, [=](int j) { return expert_of<VPT, CONTIG>(j, lane); });
    /* the unbiased score of the lane's expert, computed again from its logit (a cache hit) as
     * it was for the selection: keeping every score in registers as well doubled the largest
     * variant's registers */
    const float w = lane < a.k && my_e >= 0 ? route_score(a.scoring, route_logit<DT>(a, row, my_e), mx, inv) : 0.0f;
    write_slot(a, row, lane, w, my_e);
}

/* ---- The rows layout (AOT_ROUTE_ROWS): L lanes a row, AOT_WAVE / L rows a wave ----
 * Lane l of a row holds VPT experts in runs of 4, each one 8- or 16-byte load: slot j = 4 c + i
 * is expert 4 (l + L c) + i, so run column c of a row is experts [4 L c, 4 L (c + 1)), one group
 * where groups have 4 L experts (DeepSeek-V3's 32 at L = 8). Every step across lanes is a
 * butterfly over the row's L lanes, so one shuffle serves AOT_WAVE / L rows: with a wave a row,
 * the reductions, the rounds and each row's set-up were most of the instructions (ncu: 818 warp
 * instructions a row for DeepSeek-V3 in topk_route_groups_v8). */

template <int L>
AOT_DEV int rows_expert(int j, int l) { return 4 * (l + L * (j / 4)) + j % 4; }

/* The lane's logits; runs past the row (none where FULL: experts = VPT L) read as -inf, from
 * the row's first run. FULL rows load at fixed offsets from one address. */
template <int VPT, int L, int DT, bool FULL>
AOT_DEV void rows_load(const aot_route_kargs &a, int row, int l, float (&x)[VPT])
{
    constexpr int W = DT == AOT_GATING_F32 ? 4 : 2; /* words a run */
    const aot_u32 *row0 = (const aot_u32 *)a.gating + (aot_i64)row * (a.row_stride / 4) * W, *run0 = row0 + l * W;
#pragma unroll
    for (int c = 0; c < VPT / 4; c++) {
        const bool in = FULL || 4 * (l + L * c) < a.experts;
        const aot_words<W> q = aot_load_words<W>(in ? run0 + L * W * c : row0);
#pragma unroll
        for (int i = 0; i < W; i++) unpack_logits<DT>(in ? q.v[i] : neg_inf_word<DT>(), x + 4 * c + 4 / W * i);
    }
#pragma unroll
    for (int j = 0; j < VPT; j++) x[j] = aot_fmaxf(x[j], -AOT_INF); /* NaN reads as -inf */
}

/* Adds the bias (16-byte runs) and marks the slots past the row taken (rows_load's FULL). */
template <int VPT, int L, bool FULL>
AOT_DEV void rows_bias(const aot_route_kargs &a, int l, float (&x)[VPT], aot_u32 &taken)
{
    const aot_u32 *bias = (const aot_u32 *)a.bias, *run0 = bias + 4 * l;
#pragma unroll
    for (int c = 0; c < VPT / 4; c++) {
        const bool in = FULL || 4 * (l + L * c) < a.experts;
        if (!in) taken |= 0xfu << 4 * c;
        if (!a.bias) continue;
        const aot_u32x4 b = aot_load_u32x4(in ? run0 + 4 * L * c : bias);
#pragma unroll
        for (int i = 0; i < 4; i++) x[4 * c + i] += aot_f32_from_bits(b.v[i]);
    }
}

/* Grouped selection, group c = run column c: its score (keep_lane_groups' rule) from each
 * lane's two largest of the column and a butterfly, then topk_group rounds over the columns,
 * the same on every lane of the row; the other columns' slots are marked taken. */
template <int VPT, int L>
AOT_DEV void rows_keep_groups(const aot_route_kargs &a, const float (&x)[VPT], aot_u32 &taken)
{
    constexpr int C = VPT / 4;
    aot_u32 gk[C]; /* order keys of the group scores */
#pragma unroll
    for (int c = 0; c < C; c++) {
        float m1 = -AOT_INF, m2 = -AOT_INF;
#pragma unroll
        for (int i = 0; i < 4; i++) top2_add(m1, m2, x[4 * c + i]);
        top2_lanes(m1, m2, L);
        gk[c] = aot_order_key(a.bias ? m1 + m2 : m1); /* groups have 4 L >= 2 experts */
    }
    aot_u32 kept = 0;
    for (int r = 0; r < a.topk_group; r++) {
        aot_u32 best = 0;
        int bc = -1;
#pragma unroll
        for (int c = 0; c < C; c++) {
            const aot_u32 k = c < a.n_group && !(kept >> c & 1u) ? gk[c] : 0u;
            if (k > best) best = k, bc = c;
        }
        if (bc >= 0) kept |= 1u << bc;
    }
#pragma unroll
    for (int c = 0; c < C; c++)
        if (!(kept >> c & 1u)) taken |= 0xfu << 4 * c;
}

/* Scores, softmax's rules a slot (route_score): score_row's separate path for a row whose max
 * is +-inf took topk_route_rows_v32_l8 from 116 registers to 256 and 27 spilled to AGPRs on
 * gfx942. */
template <int VPT>
AOT_DEV void rows_score(int scoring, float (&x)[VPT], float mx, float inv)
{
    if (scoring == AOT_ROUTE_SIGMOID) {
#pragma unroll
        for (int j = 0; j < VPT; j++) x[j] = route_sigmoid(x[j]);
    } else if (scoring == AOT_ROUTE_SQRT_SOFTPLUS) {
#pragma unroll
        for (int j = 0; j < VPT; j++) x[j] = sqrt_softplus(x[j]);
    } else {
#pragma unroll
        for (int j = 0; j < VPT; j++) x[j] = route_score(scoring, x[j], mx, inv);
    }
}

template <int VPT, int L, int DT>
AOT_DEV void route_rows(const aot_route_kargs &a)
{
    const int t = aot_thread_x(), l = t % L;
    const int wave_row = aot_block_x() * (AOT_TOPK_BLOCK / L) + t / AOT_WAVE * (AOT_WAVE / L);
    if (wave_row >= a.tokens) return; /* whole waves leave together */
    /* a row past the last runs on as the last (the butterflies take the whole wave) and
     * writes nothing */
    const int row0 = aot_block_x() * (AOT_TOPK_BLOCK / L) + t / L, row = row0 < a.tokens ? row0 : a.tokens - 1;
    float x[VPT];
    const bool full = a.experts == VPT * L;
    if (full) rows_load<VPT, L, DT, true>(a, row, l, x);
    else rows_load<VPT, L, DT, false>(a, row, l, x);
    float mx = 0.0f, inv = 0.0f;
    if (a.scoring == AOT_ROUTE_SOFTMAX) softmax_stats<VPT, L>(x, mx, inv);
    rows_score<VPT>(a.scoring, x, mx, inv);
    aot_u32 taken = 0; /* bit j: the lane's expert j is not a candidate */
    if (full) rows_bias<VPT, L, true>(a, l, x, taken);
    else rows_bias<VPT, L, false>(a, l, x, taken);
    if (a.n_group > 1) rows_keep_groups<VPT, L>(a, x, taken);
    aot_u32 key[VPT];
#pragma unroll
    for (int j = 0; j < VPT; j++) key[j] = taken >> j & 1u ? 0u : aot_order_key(x[j]);
    const int my_e = select_k<VPT, L>(a, key, taken, l, [=](int j) { return rows_expert<L>(j, l); });
    const float w = l < a.k && my_e >= 0 ? route_score(a.scoring, route_logit<DT>(a, row, my_e), mx, inv) : 0.0f;
    write_slot<L>(a, row, l, w, my_e, row0 < a.tokens);
}

/* ---- The select layout (AOT_ROUTE_SELECT): L lanes a row, AOT_WAVE / L rows a wave ----
 * Lane l of a row holds the run of experts [l VPT, (l + 1) VPT), for rows of exactly VPT L
 * experts whose runs load whole, groups (if any) on whole lanes, k <= L. In place of k rounds of
 * an argmax (the rows layout spent half of its 637 warp instructions a row for DeepSeek-V3 on
 * the lanes' looks over their slots between rounds), a threshold:
 * 1. th = the k-th largest of the candidate lanes' two largest selection scores: those are k
 *    distinct candidates at or above th, so the top k are all at or above it;
 * 2. the candidates at or above th (a few more than k where they do not tie) go to a
 *    block-shared list of the row, in expert order;
 * 3. an entry's place is the count of entries before it (larger, ties to the lower expert);
 *    places below k are the output slots.
 * A row with more than SELECT_LIST such candidates (exact ties at th) takes select_k's rounds,
 * and so does its whole wave (the rounds shuffle). */
#define SELECT_LIST 32
#define SELECT_NONE aot_f32_from_bits(0x7fc00000u) /* NaN: compares false, so it counts nowhere */

struct select_entry {
    float c; /* selection score */
    int e;   /* expert */
};

AOT_DEV int mask_popc(aot_u32 m) { return aot_popc_u32(m); }
AOT_DEV int mask_popc(unsigned long long m) { return aot_popc_u64(m); }
AOT_DEV int mask_ctz(aot_u32 m) { return aot_ctz_u32(m); }
AOT_DEV int mask_ctz(unsigned long long m) { return aot_ctz_u64(m); }

/* The bias [VPT L] into block-shared memory, run r at r (VPT + 4): the lanes of a row read their
 * runs 16 bytes at a time in other banks. Every thread of the block takes part. */
template <int VPT, int L>
AOT_DEV void select_bias_to_shared(const aot_route_kargs &a, float *bias)
{
    const int t = aot_thread_x();
    if (a.bias && t < VPT * L / 4) {
        const aot_u32x4 b = aot_load_u32x4((const aot_u32 *)a.bias + 4 * t);
        aot_store_u32x4((aot_u32 *)bias + 4 * t + 4 * t / VPT * 4, b);
    }
    aot_sync_block();
}

/* Is the lane's group among the row's topk_group best? A group lies on 2^group_shift lanes; m1 >=
 * m2 are the lane's two largest selection scores, `base` the row's first lane in the wave. */
AOT_DEV bool select_group_kept(const aot_route_kargs &a, int l, int base, float m1, float m2)
{
    const int g = l >> a.group_shift;
    top2_lanes(m1, m2, 1 << a.group_shift);
    const float gs = a.bias ? m1 + m2 : m1; /* groups have VPT >= 2 experts */
    int place = 0;
    for (int h = 0; h < a.n_group; h++) {
        const float o = aot_shfl_f32(gs, base + (h << a.group_shift));
        place += o > gs || (o == gs && h < g);
    }
    return place < a.topk_group;
}

/* The k-th largest of the 2 L values (m1, m2) of the row's lanes (NaN: not a candidate), or -inf
 * where fewer than k values are candidates. */
template <int L>
AOT_DEV float select_threshold(int k, int base, float m1, float m2)
{
    int n1 = 0, n2 = 0; /* values at or above m1, m2 */
#pragma unroll
    for (int o = 0; o < L; o++) {
        const float u1 = aot_shfl_f32(m1, base + o), u2 = aot_shfl_f32(m2, base + o);
        n1 += (u1 >= m1) + (u2 >= m1);
        n2 += (u1 >= m2) + (u2 >= m2);
    }
    float th = n1 >= k ? m1 : -AOT_INF;
    if (n2 >= k) th = aot_fmaxf(th, m2);
    for (int m = 1; m < L; m <<= 1) th = aot_fmaxf(th, aot_shfl_xor_f32(th, m));
    return th;
}

/* Count of this lane's run before it in the row's list: an exclusive sum over the row's lanes
 * (total: the row's). */
template <int L>
AOT_DEV int select_offset(int n, int l, int base, int &total)
{
    int s = n;
    for (int d = 1; d < L; d <<= 1) {
        const int o = aot_shfl_i32(s, aot_lane() - (l >= d ? d : 0));
        if (l >= d) s += o;
    }
    total = aot_shfl_i32(s, base + L - 1);
    return s - n;
}

/* Does list entry (c, j) come before (mc, i)? Larger first, ties to the lower place (expert). */
AOT_DEV bool select_before(float c, int j, float mc, int i) { return c > mc || (c == mc && j < i); }

/* Steps 2 and 3: the lane's entries (bits of `mask`) into the row's list at `at`, then each
 * entry's place, two entries a lane at a time; the slots below k land in `out` (weight,
 * expert). Returns the lane's slot l as (w, e), e = -1 past the candidates. */
template <int VPT, int L>
AOT_DEV int select_place(const aot_route_kargs &a, int row, int l, const float (&x)[VPT], typename slot_mask<VPT>::type mask,
                         int at, int n, select_entry *list, select_entry *out, float mx, float inv, float &w)
{
    if (mask) {
        /* read at the set bits only: a test and a store a slot took about 10 instructions a
         * slot; nvcc makes the read at a variable index a chain of selects (about 70
         * instructions an entry, ncu), a few entries a lane. The local copy keeps it there:
         * read through the reference, the scores went to a stack frame in local memory (128
         * and 192 bytes, ptxas) */
        float xs[VPT];
#pragma unroll
        for (int j = 0; j < VPT; j++) xs[j] = x[j];
        do {
            const int j = mask_ctz(mask);
            mask &= mask - 1;
            list[at++] = select_entry{xs[j], l * VPT + j};
        } while (mask);
    }
    aot_sync_wave();
    for (int i0 = l; i0 < n; i0 += 2 * L) {
        const int i1 = i0 + L < n ? i0 + L : i0;
        const select_entry m0 = list[i0], m1 = list[i1];
        int p0 = 0, p1 = 0;
        for (int j = 0; j < n; j++) {
            const float c = list[j].c;
            p0 += select_before(c, j, m0.c, i0);
            p1 += select_before(c, j, m1.c, i1);
        }
        if (p0 < a.k) out[p0] = select_entry{route_score(a.scoring, route_logit<-1>(a, row, m0.e), mx, inv), m0.e};
        if (i1 != i0 && p1 < a.k) out[p1] = select_entry{route_score(a.scoring, route_logit<-1>(a, row, m1.e), mx, inv), m1.e};
    }
    aot_sync_wave();
    const bool on = l < a.k && l < n;
    w = on ? out[l].c : 0.0f;
    return on ? out[l].e : -1;
}

/* lists: SELECT_LIST + 1 entries a row of the block (+ 1: a wave's rows in other banks), outs:
 * L a row, bias: the bias as select_bias_to_shared leaves it. */
template <int VPT, int L>
AOT_DEV void route_select(const aot_route_kargs &a, select_entry *lists, select_entry *outs, const float *bias)
{
    typedef typename slot_mask<VPT>::type M;
    constexpr int ROWS = AOT_TOPK_BLOCK / L;
    const int t = aot_thread_x(), l = t % L, base = aot_lane() - l;
    const int wave_row = aot_block_x() * ROWS + t / AOT_WAVE * (AOT_WAVE / L);
    if (wave_row >= a.tokens) return; /* whole waves leave together */
    /* a row past the last runs on as the last (the shuffles take the whole wave) and writes
     * nothing */
    const int row0 = aot_block_x() * ROWS + t / L, row = row0 < a.tokens ? row0 : a.tokens - 1;
    float x[VPT];
    /* the logits' type only here: one copy of the rest (three typed copies took 282 KB more of
     * the sm_90a code object) */
    if (a.dtype == AOT_GATING_F32) load_whole_run<VPT, AOT_GATING_F32, true>(a, row, l, x);
    else if (a.dtype == AOT_GATING_BF16) load_whole_run<VPT, AOT_GATING_BF16, true>(a, row, l, x);
    else load_whole_run<VPT, AOT_GATING_F16, true>(a, row, l, x);
    float mx = 0.0f, inv = 0.0f;
    if (a.scoring == AOT_ROUTE_SOFTMAX) softmax_stats<VPT, L>(x, mx, inv);
    rows_score<VPT>(a.scoring, x, mx, inv);
    if (a.bias) {
#pragma unroll
        for (int c = 0; c < VPT / 4; c++) {
            const aot_u32x4 b = aot_load_u32x4((const aot_u32 *)bias + l * (VPT + 4) + 4 * c);
#pragma unroll
            for (int i = 0; i < 4; i++) x[4 * c + i] += aot_f32_from_bits(b.v[i]);
        }
    }
    float m1 = -AOT_INF, m2 = -AOT_INF;
#pragma unroll
    for (int j = 0; j < VPT; j++) top2_add(m1, m2, x[j]);
    const bool cand = a.n_group <= 1 || select_group_kept(a, l, base, m1, m2);
    const float th = select_threshold<L>(a.k, base, cand ? m1 : SELECT_NONE, cand ? m2 : SELECT_NONE);
    M mask = 0; /* the lane's slots at or above th */
    if (cand) {
#pragma unroll
        for (int j = 0; j < VPT; j++)
            if (x[j] >= th) mask |= (M)1 << j;
    }
    int total;
    const int at = select_offset<L>(mask_popc(mask), l, base, total);
    float w;
    int e;
    if (!aot_wave_any(total > SELECT_LIST)) {
        const int r = t / L;
        e = select_place<VPT, L>(a, row, l, x, mask, at, total, lists + r * (SELECT_LIST + 1), outs + r * L, mx, inv, w);
    } else {
        aot_u32 key[VPT]; /* select_k's rounds: the candidates' order keys (0: none) */
#pragma unroll
        for (int j = 0; j < VPT; j++) key[j] = cand ? aot_order_key(x[j]) : 0u;
        e = select_k<VPT, L>(a, key, 0, l, [=](int j) { return l * VPT + j; });
        w = l < a.k && e >= 0 ? route_score(a.scoring, route_logit<-1>(a, row, e), mx, inv) : 0.0f;
    }
    write_slot<L>(a, row, l, w, e, row0 < a.tokens);
}

/* A wave's row by layout (moe_variants.h). The logits' type is a template argument where that
 * keeps the registers of the kernel (the lane-groups kernel holds 32 at 8 experts a lane with
 * three typed copies); the other layouts read it from a.dtype, as three copies of their rows
 * took up to twice the registers (80 at 16 a lane, occupancy 37.5 %). */
template <int VPT, int LAYOUT, int DT>
AOT_DEV void route_typed(const aot_route_kargs &a, int row)
{
    if (LAYOUT == AOT_ROUTE_LANE_GROUPS) route_row<VPT, true, DT>(a, row);
    else if (LAYOUT == AOT_ROUTE_STRIDED) route_row<VPT, false, -1, false>(a, row);
    else if (a.input_ids) hash_row<VPT, -1>(a, row);
    else route_row<VPT, false, -1>(a, row);
}

template <int VPT, int LAYOUT>
AOT_DEV void route_layout(const aot_route_kargs &a)
{
    if (LAYOUT == AOT_ROUTE_HASH) {
        if (a.dtype == AOT_GATING_F32) hash_lanes<AOT_GATING_F32>(a);
        else if (a.dtype == AOT_GATING_BF16) hash_lanes<AOT_GATING_BF16>(a);
        else hash_lanes<AOT_GATING_F16>(a);
        return;
    }
    const int wave = (int)((unsigned)aot_thread_x() / AOT_WAVE);
    const int row = aot_block_x() * (AOT_TOPK_BLOCK / AOT_WAVE) + wave;
    if (row >= a.tokens) return; /* whole waves leave together */
    if (LAYOUT != AOT_ROUTE_LANE_GROUPS) route_typed<VPT, LAYOUT, -1>(a, row);
    else if (a.dtype == AOT_GATING_F32) route_typed<VPT, LAYOUT, AOT_GATING_F32>(a, row);
    else if (a.dtype == AOT_GATING_BF16) route_typed<VPT, LAYOUT, AOT_GATING_BF16>(a, row);
    else route_typed<VPT, LAYOUT, AOT_GATING_F16>(a, row);
}

template <int VPT, int LAYOUT, int L>
AOT_DEV void route_kernel_body(const aot_route_kargs &a)
{
    if constexpr (LAYOUT == AOT_ROUTE_ROWS) {
        if (a.dtype == AOT_GATING_F32) route_rows<VPT, L, AOT_GATING_F32>(a);
        else if (a.dtype == AOT_GATING_BF16) route_rows<VPT, L, AOT_GATING_BF16>(a);
        else route_rows<VPT, L, AOT_GATING_F16>(a);
    } else if constexpr (LAYOUT == AOT_ROUTE_SELECT) {
        /* the block's shared arrays: select_bias_to_shared fills one before route_select */
        AOT_SHARED(select_entry, lists, AOT_TOPK_BLOCK / L * (SELECT_LIST + 1));
        AOT_SHARED(select_entry, outs, AOT_TOPK_BLOCK);
        AOT_SHARED(aot_u32x4, bias, (VPT + 4) * L / 4);
        select_bias_to_shared<VPT, L>(a, (float *)bias);
        route_select<VPT, L>(a, lists, outs, (const float *)bias);
    } else {
        route_layout<VPT, LAYOUT>(a);
    }
}

/* One kernel per (experts a lane, layout, lanes a row), from the family's list (moe_variants.h). */
#define ROUTE_KERNEL(name, kargs, vpt, layout, lanes, blocks)                                 \
    AOT_KERNEL AOT_LAUNCH_BOUNDS_MIN(AOT_TOPK_BLOCK, blocks) void name(kargs a)               \
    {                                                                                         \
        route_kernel_body<vpt, layout, lanes>(a);                                             \
    }                                                                                         \
    AOT_EMU_ENTRY(name, kargs)
AOT_ROUTE_VARIANTS(ROUTE_KERNEL)
#if AOT_WAVE == 32
AOT_ROUTE_WAVE32_VARIANTS(ROUTE_KERNEL)
#endif
