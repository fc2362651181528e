/* fmha.hip : flash attention forward over packed variable-length sequences (semantics in
 * runtime/include/aiter_aot_fmha.h). One block = 4 waves = 64 query rows of one sequence and one
 * query head; the loop walks the visible keys a tile at a time with an online softmax. Two
 * forms of one loop, picked by the fragment shape (every operand moves through the fragment
 * maps of aot_device.h, so no vendor appears here):
 *   - register path (shapes whose C fragments are the next A fragment: mma.sync): S and P stay
 *     in registers; K and V arrive by asynchronous copies into swizzled tiles, and the products
 *     are the layer's warp-group products (the 4 waves together; wgmma on sm_90a) (below);
 *   - shared-memory path (MFMA, one C column per lane): 32 keys a step; K and V (transposed)
 *     staged by plain loads, S written to shared memory, each row's max and sum taken by W/16
 *     lanes with shuffles, P written back in the input type with the row's rescale factor.
 * fp32 accumulation; P is rounded to bf16/fp16 for the second product (as FlashAttention). */
#include "aot_device.h"
#include "fmha_kargs.h"
#include "fmha_variants.h" /* the kernels this file instantiates */

#if defined(AOT_MMA_SYNC)
typedef aot_mma_m16n8k16 fmha_mma;
#elif defined(AOT_MMA_MFMA_GFX950)
typedef aot_mfma_16x16x32 fmha_mma;
#else
typedef aot_mfma_16x16x16 fmha_mma;
#endif

#define BM AOT_FMHA_ROWS
#define BN AOT_FMHA_KEYS
#define THREADS (AOT_FMHA_WAVES * AOT_WAVE)

/* (unused where the shared-memory path is not built) */
AOT_DEV __attribute__((unused)) aot_u16 to_16(float x, int f16) { return f16 ? aot_f32_to_f16(x) : aot_f32_to_bf16(x); }

/* One sequence's view: its query and key counts and where its rows start. */
typedef struct {
    int q0, sq, k0, sk, h, hkv;
} fmha_seq;

/* The keys query i sees (indices within the sequence): [*first, *last], empty when first >
 * last. The diagonal is bottom-right aligned. Written as bounds so that a mask costs two
 * compares per element. */
AOT_DEV void row_keys(const aot_fmha_kargs &a, const fmha_seq &s, int i, int *first, int *last)
{
    const int diag = i + s.sk - s.sq;
    int hi = s.sk - 1;
    if (a.causal && diag < hi) hi = diag;
    if (a.window_right >= 0 && a.window_right < hi - diag) hi = diag + a.window_right;
    *first = a.window_left >= 0 && diag > a.window_left ? diag - a.window_left : 0;
    *last = i < s.sq ? hi : -1;
}

AOT_DEV float score(const aot_fmha_kargs &a, float qk)
{
    const float s = qk * a.scale;
    if (a.softcap <= 0.0f) return s;
    const float e = aot_exp_fast(2.0f * s / a.softcap); /* tanh(x) = 1 - 2 / (e^2x + 1) */
    return a.softcap * (1.0f - 2.0f / (e + 1.0f));
}

/* The keys [lo, hi) any row of rows [r0, r1] may see, lo a multiple of BNT. */
template <int BNT>
AOT_DEV void key_range(const aot_fmha_kargs &a, const fmha_seq &s, int r0, int r1, int *lo, int *hi)
{
    const int right = a.causal ? 0 : a.window_right;
    *lo = a.window_left >= 0 ? r0 + s.sk - s.sq - a.window_left : 0;
    *lo = *lo < 0 ? 0 : *lo / BNT * BNT;
    *hi = right >= 0 ? r1 + s.sk - s.sq + right + 1 : s.sk;
    *hi = *hi > s.sk ? s.sk : *hi;
}

/* The steps [j0, j0 + bn) whose every key every row of [r0, r1] sees: those with lo <= j0 <=
 * hi. Such a step needs no mask; the range is set once a wave, so a step tests two integers. */
AOT_DEV void visible_steps(const aot_fmha_kargs &a, const fmha_seq &s, int r0, int r1, int bn, int *lo, int *hi)
{
    const aot_i64 off = (aot_i64)s.sk - s.sq; /* row i's diagonal is key i + off */
    aot_i64 h = (aot_i64)s.sk - bn, l = a.window_left >= 0 ? r1 + off - a.window_left : 0;
    if (a.causal && r0 + off - bn + 1 < h) h = r0 + off - bn + 1;
    if (a.window_right >= 0 && r0 + off + a.window_right - bn + 1 < h) h = r0 + off + a.window_right - bn + 1;
    *lo = l < 0 ? 0 : l > INT32_MAX ? INT32_MAX : (int)l;
    *hi = h < -1 ? -1 : (int)h; /* h <= sk - bn */
}

/* K rows [j0, j0 + BN) to Ks[key][d], V transposed to Vt[dv][key]; zeros past the end. */
template <int D, int DV>
AOT_DEV void stage_kv(const aot_fmha_kargs &a, const fmha_seq &s, int j0, aot_u16 *Ks, aot_u16 *Vt)
{
    for (int i = aot_thread_x(); i < BN * D / 2; i += THREADS) {
        const int key = i / (D / 2), d = 2 * (i % (D / 2)), j = j0 + key;
        const aot_u32 p = j < s.sk ? aot_load_u16x2(a.k + (aot_i64)(s.k0 + j) * a.k_row + s.hkv * D + d) : 0u;
        *(aot_u32 *)(Ks + key * (D + 2) + d) = p;
    }
    for (int i = aot_thread_x(); i < BN * DV / 2; i += THREADS) {
        const int key = i / (DV / 2), d = 2 * (i % (DV / 2)), j = j0 + key;
        const aot_u32 p = j < s.sk ? aot_load_u16x2(a.v + (aot_i64)(s.k0 + j) * a.v_row + s.hkv * DV + d) : 0u;
        Vt[d * (BN + 2) + key] = (aot_u16)p;
        Vt[(d + 1) * (BN + 2) + key] = (aot_u16)(p >> 16);
    }
}

template <class S>
AOT_DEV void mma(int f16, float (&c)[S::C], const aot_u16 (&x)[S::A], const aot_u16 (&y)[S::B])
{
    if (f16) aot_mma_f16(S(), c, x, y);
    else aot_mma_bf16(S(), c, x, y);
}

/* Sequence b's rows and keys for query head h. */
AOT_DEV fmha_seq seq_of(const aot_fmha_kargs &a, int b, int h)
{
    /* the same in every lane, and known so (aot_uniform_i32): the tile's loops, stage indices and
     * wgmma descriptors then stay in uniform registers, not moved over before every product */
    const int q0 = aot_uniform_i32(a.cu_q[b]), q1 = aot_uniform_i32(a.cu_q[b + 1]);
    const int k0 = aot_uniform_i32(a.cu_k[b]), k1 = aot_uniform_i32(a.cu_k[b + 1]);
    return {q0, q1 - q0, k0, k1 - k0, h, h / (a.hq / a.hk)};
}

/* What a block works on: its sequence, the first row of the block and of this wave. */
typedef struct {
    fmha_seq s;
    int rb, rw, lane;
    int vis_lo, vis_hi; /* the wave's steps that need no mask (visible_steps) */
} fmha_block;

/* The wave's rows [rw, rw + rows) and the steps of bn keys they see whole. */
AOT_DEV void wave_rows(const aot_fmha_kargs &a, fmha_block &k, int rw, int rows, int bn)
{
    k.rw = rw;
    visible_steps(a, k.s, rw, rw + rows - 1, bn, &k.vis_lo, &k.vis_hi);
}
AOT_DEV bool needs_mask(const fmha_block &k, int j0) { return j0 < k.vis_lo || j0 > k.vis_hi; }

/* @return false when the block holds no row of its sequence (the whole block leaves). */
AOT_DEV bool block_of(const aot_fmha_kargs &a, fmha_block &k, int bn)
{
    const int tile = aot_block_x() % a.q_tiles, h = (aot_block_x() / a.q_tiles) % a.hq, b = aot_block_x() / a.q_tiles / a.hq;
    k.s = seq_of(a, b, h);
    k.lane = aot_lane();
    k.rb = tile * AOT_FMHA_WAVES * BM;
    wave_rows(a, k, k.rb + aot_thread_x() / AOT_WAVE * BM, BM, bn);
    return k.rb < k.s.sq;
}

/* The keys the block's rows may see, in whole steps from a multiple of BNT. */
template <int BNT>
AOT_DEV void block_keys(const aot_fmha_kargs &a, const fmha_block &k, int *lo, int *hi)
{
    const int last = (k.rb + AOT_FMHA_WAVES * BM < k.s.sq ? k.rb + AOT_FMHA_WAVES * BM : k.s.sq) - 1;
    key_range<BNT>(a, k.s, k.rb, last, lo, hi);
}

/* -inf where key j0 + column does not see the row (C fragments of NS tiles of this wave). */
template <class S, int NS>
AOT_DEV void mask(const aot_fmha_kargs &a, const fmha_block &k, int j0, float (&sc)[NS][S::C])
{
    int first[S::C], last[S::C];
#pragma unroll
    for (int i = 0; i < S::C; i++) row_keys(a, k.s, k.rw + S::c_row(k.lane, i), &first[i], &last[i]);
#pragma unroll
    for (int n = 0; n < NS; n++)
#pragma unroll
        for (int i = 0; i < S::C; i++) {
            const int j = j0 + n * S::N + S::c_col(k.lane, i);
            if (j < first[i] || j > last[i]) sc[n][i] = -AOT_INF;
        }
}

/* This wave's Q fragments (D / S::K steps): in registers for the whole loop up to d = 128;
 * above, re-read from global memory (L1) at each step, as registers would spill. */
template <class S, int D>
struct q_frags {
    enum { IN_REGS = D <= 128 };
    aot_u32 v[IN_REGS ? D / S::K : 1][S::A / 2];
};

template <class S, int D>
AOT_DEV aot_u32 q_pair(const aot_fmha_kargs &a, const fmha_block &k, int ks, int i)
{
    const int r = k.rw + S::a_row(k.lane, i);
    return r < k.s.sq ? aot_load_u16x2(a.q + (aot_i64)(k.s.q0 + r) * a.q_row + k.s.h * D + ks * S::K + S::a_k(k.lane, i)) : 0u;
}

template <class S, int D>
AOT_DEV void load_q(const aot_fmha_kargs &a, const fmha_block &k, q_frags<S, D> &q)
{
    if constexpr (q_frags<S, D>::IN_REGS)
#pragma unroll
        for (int ks = 0; ks < D / S::K; ks++)
#pragma unroll
            for (int i = 0; i < S::A; i += 2) q.v[ks][i / 2] = q_pair<S, D>(a, k, ks, i);
}

template <class S, int D>
AOT_DEV void q_fragment(const aot_fmha_kargs &a, const fmha_block &k, const q_frags<S, D> &q, int ks, aot_u16 (&af)[S::A])
{
#pragma unroll
    for (int i = 0; i < S::A; i += 2) {
        aot_u32 p;
        if constexpr (q_frags<S, D>::IN_REGS) p = q.v[ks][i / 2];
        else p = q_pair<S, D>(a, k, ks, i);
        af[i] = (aot_u16)p, af[i + 1] = (aot_u16)(p >> 16);
    }
}

template <int N, int M>
AOT_DEV void zero(float (&x)[N][M])
{
#pragma unroll
    for (int n = 0; n < N; n++)
#pragma unroll
        for (int i = 0; i < M; i++) x[n][i] = 0.0f;
}

/* The B fragment of tile n at k-step ks from shared memory laid out [column][k], row stride ld. */
template <class S>
AOT_DEV void b_fragment(const aot_u16 *base, int ld, int n, int ks, int lane, aot_u16 (&bf)[S::B])
{
#pragma unroll
    for (int i = 0; i < S::B; i += 2) {
        const aot_u32 p = aot_load_u16x2(base + (n * S::N + S::b_col(lane, i)) * ld + ks * S::K + S::b_k(lane, i));
        bf[i] = (aot_u16)p, bf[i + 1] = (aot_u16)(p >> 16);
    }
}

/* S = Q K^T for the staged keys, scaled, capped and masked (-inf where a key is not visible). */
template <class S, int D, int NS>
AOT_DEV void scores(const aot_fmha_kargs &a, const fmha_block &k, int j0, const q_frags<S, D> &qf, const aot_u16 *Ks,
                    float (&sc)[NS][S::C])
{
    zero<NS, S::C>(sc);
#pragma unroll
    for (int ks = 0; ks < D / S::K; ks++) {
        aot_u16 af[S::A], bf[S::B];
        q_fragment<S, D>(a, k, qf, ks, af);
#pragma unroll
        for (int n = 0; n < NS; n++) b_fragment<S>(Ks, D + 2, n, ks, k.lane, bf), mma<S>(a.f16, sc[n], af, bf);
    }
#pragma unroll
    for (int n = 0; n < NS; n++)
#pragma unroll
        for (int i = 0; i < S::C; i++) sc[n][i] = score(a, sc[n][i]);
    if (needs_mask(k, j0)) mask<S, NS>(a, k, j0, sc);
}

/* O += P V for k-step ks of the staged keys, P's A fragment given. */
template <class S, int NO>
AOT_DEV void pv_step(const aot_fmha_kargs &a, int lane, int ks, const aot_u16 (&pf)[S::A], const aot_u16 *Vt, float (&o)[NO][S::C])
{
#pragma unroll
    for (int n = 0; n < NO; n++) {
        aot_u16 bf[S::B];
        b_fragment<S>(Vt, BN + 2, n, ks, lane, bf);
        mma<S>(a.f16, o[n], pf, bf);
    }
}

/* out = O / l per row (0 where no key was visible); l given per C element. */
template <class S, int DV, int NO>
AOT_DEV void store_out(const aot_fmha_kargs &a, const fmha_block &k, const float (&o)[NO][S::C], const float (&l)[S::C])
{
    float inv[S::C]; /* one division per element slot, not per element */
#pragma unroll
    for (int i = 0; i < S::C; i++) inv[i] = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
    aot_u16 *base = a.out + (aot_i64)(k.s.q0 + k.rw) * a.o_row + k.s.h * DV;
    if constexpr (S::C_TO_A) /* C elements 2j and 2j + 1 are neighbours in a row: one 4-byte store */
#pragma unroll
        for (int n = 0; n < NO; n++)
#pragma unroll
            for (int i = 0; i < S::C; i += 2) {
                const int r = S::c_row(k.lane, i);
                if (k.rw + r < k.s.sq)
                    *(aot_u32 *)(base + r * a.o_row + n * S::N + S::c_col(k.lane, i)) =
                        aot_pack2_16(o[n][i] * inv[i], o[n][i + 1] * inv[i + 1], a.f16);
            }
    else
#pragma unroll
        for (int n = 0; n < NO; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) {
                const int r = S::c_row(k.lane, i);
                if (k.rw + r < k.s.sq) base[r * a.o_row + n * S::N + S::c_col(k.lane, i)] = to_16(o[n][i] * inv[i], a.f16);
            }
}

AOT_DEV float lse_of(float m, float l) { return l > 0.0f ? m + aot_log2_fast(l) * 0.6931471805599453f : -AOT_INF; }

/* Row statistics of the wave's 16 rows after one key step (W/16 lanes per row): new max, the
 * factor the old accumulators are scaled by, P in shared memory, the running sum. */
template <class S>
AOT_DEV void online_softmax(const aot_fmha_kargs &a, const float *Ss, aot_u16 *Ps, float *m_s, float *l_s, float *alpha_s)
{
    static_assert(S::M == BM, "a wave owns S::M rows");
    constexpr int PARTS = AOT_WAVE / BM, KP = BN / PARTS;
    const int lane = aot_lane(), row = lane % BM, k0 = (lane / BM) * KP;
    const float *s = Ss + row * (BN + 1);
    float mx = -AOT_INF;
    for (int k = k0; k < k0 + KP; k++) mx = aot_fmaxf(mx, s[k]);
    for (int m = BM; m < AOT_WAVE; m <<= 1) mx = aot_fmaxf(mx, aot_shfl_xor_f32(mx, m));
    const float m_old = m_s[row], m_new = aot_fmaxf(m_old, mx);
    const bool none = m_new == -AOT_INF; /* nothing visible yet in this row */
    float sum = 0.0f;
    for (int k = k0; k < k0 + KP; k++) {
        const float p = none ? 0.0f : aot_exp_fast(s[k] - m_new);
        Ps[row * (BN + 2) + k] = to_16(p, a.f16);
        sum += p;
    }
    for (int m = BM; m < AOT_WAVE; m <<= 1) sum += aot_shfl_xor_f32(sum, m);
    if (lane < BM) {
        const float alpha = none ? 1.0f : aot_exp_fast(m_old - m_new);
        alpha_s[row] = alpha, l_s[row] = l_s[row] * alpha + sum, m_s[row] = m_new;
    }
}

template <int D, int DV>
AOT_DEV void fmha_shared(const aot_fmha_kargs &a)
{
    typedef fmha_mma S;
    constexpr int NS = BN / S::N, NO = DV / S::N;
    fmha_block k;
    if (!block_of(a, k, BN)) return;
    const int w = aot_thread_x() / AOT_WAVE, lane = k.lane;
    AOT_SHARED(aot_u32, ks32, BN * (D + 2) / 2);
    AOT_SHARED(aot_u32, vt32, DV * (BN + 2) / 2);
    AOT_SHARED(float, ss_all, AOT_FMHA_WAVES * BM * (BN + 1));
    AOT_SHARED(aot_u32, ps32, AOT_FMHA_WAVES * BM * (BN + 2) / 2);
    AOT_SHARED(float, m_all, AOT_FMHA_WAVES * BM);
    AOT_SHARED(float, l_all, AOT_FMHA_WAVES * BM);
    AOT_SHARED(float, alpha_all, AOT_FMHA_WAVES * BM);
    aot_u16 *Ks = (aot_u16 *)ks32, *Vt = (aot_u16 *)vt32, *Ps = (aot_u16 *)ps32 + w * BM * (BN + 2);
    float *Ss = ss_all + w * BM * (BN + 1), *m_s = m_all + w * BM, *l_s = l_all + w * BM, *alpha_s = alpha_all + w * BM;
    if (lane < BM) m_s[lane] = -AOT_INF, l_s[lane] = 0.0f;
    q_frags<S, D> qf;
    load_q<S, D>(a, k, qf);
    float o[NO][S::C];
    zero<NO, S::C>(o);
    int lo, hi;
    block_keys<BN>(a, k, &lo, &hi);
    for (int j0 = lo; j0 < hi; j0 += BN) {
        aot_sync_block(); /* the previous step is done with the shared tiles */
        stage_kv<D, DV>(a, k.s, j0, Ks, Vt);
        aot_sync_block();
        float sc[NS][S::C];
        scores<S, D, NS>(a, k, j0, qf, Ks, sc);
#pragma unroll
        for (int n = 0; n < NS; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) Ss[S::c_row(lane, i) * (BN + 1) + n * S::N + S::c_col(lane, i)] = sc[n][i];
        aot_sync_block();
        online_softmax<S>(a, Ss, Ps, m_s, l_s, alpha_s);
        aot_sync_block();
#pragma unroll
        for (int n = 0; n < NO; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) o[n][i] *= alpha_s[S::c_row(lane, i)];
#pragma unroll
        for (int ks = 0; ks < BN / S::K; ks++) {
            aot_u16 af[S::A];
#pragma unroll
            for (int i = 0; i < S::A; i += 2) {
                const aot_u32 p = aot_load_u16x2(Ps + S::a_row(lane, i) * (BN + 2) + ks * S::K + S::a_k(lane, i));
                af[i] = (aot_u16)p, af[i + 1] = (aot_u16)(p >> 16);
            }
            pv_step<S, NO>(a, lane, ks, af, Vt, o);
        }
    }
    aot_sync_block(); /* l_s and m_s of the last step are complete */
    float l[S::C];
#pragma unroll
    for (int i = 0; i < S::C; i++) l[i] = l_s[S::c_row(lane, i)];
    store_out<S, DV, NO>(a, k, o, l);
    if (a.lse && lane < BM && k.rw + lane < k.s.sq)
        a.lse[(aot_i64)k.s.h * a.total_q + k.s.q0 + k.rw + lane] = lse_of(m_s[lane], l_s[lane]);
}

/* ---- the register path (shapes with C_TO_A: mma.sync) ----
 * S stays in registers: the row max is reduced over the ROW_LANES lanes of a row with shuffles
 * (the row sum only once, at the end), and P (rounded to the input type) is already the A
 * fragment of P V. Scores are kept in log2 units (scale * log2 e folded in), so each
 * probability is one exp2. Q, K and V tiles ([row][d], swizzled: aot_swz) arrive by
 * asynchronous copies that overlap the products: V of this step during Q K^T and the softmax,
 * K of the next step during P V. Both products are warp-group products (aot_wg_mma_*): Q K^T
 * reads Q and K from their tiles, P V takes P from registers and V from its tile; on sm_90a
 * each k-step is one wgmma, so no Q, K or V fragment passes through registers.
 * Only the steps that cross the diagonal, a window edge or the end of the keys are masked. */

/* Max (or sum) over a row's lanes of the per-slot values. */
template <class S>
AOT_DEV void row_reduce(float (&v)[S::C_ROWS], bool max)
{
#pragma unroll
    for (int r = 0; r < S::C_ROWS; r++)
        for (int m = 1; m < S::ROW_LANES; m <<= 1) {
            const float o = aot_shfl_xor_f32(v[r], m);
            v[r] = max ? aot_fmaxf(v[r], o) : v[r] + o;
        }
}

/* Keys a step: as many as let the Q, K and V tiles fit the 48 KB of static shared memory (24,
 * 48, 44 and 48 KB at d = 64, 128, 192 and 256). */
template <int D>
struct fmha_reg_tiles {
    enum { KEYS = D <= 128 ? 64 : D <= 192 ? 32 : 16 };
    static_assert(AOT_FMHA_WAVES * BM == 4 * fmha_mma::M, "the block is one group of 4 waves (warp-group products)");
};

/* Start copying `rows` token rows of W elements (the rest of the ROWS rows: zeros) into a
 * swizzled tile of row length W. */
template <int W, int ROWS>
AOT_DEV void copy_tile(const aot_u16 *src, aot_i64 stride, int rows, aot_u16 *tile)
{
    constexpr int PIECES = W / 8; /* 16 bytes each */
    static_assert(ROWS * PIECES % THREADS == 0, "whole rounds of copies");
    if constexpr (THREADS % PIECES == 0) { /* a thread's rows are R apart, at one column */
        constexpr int R = THREADS / PIECES;
        const int r0 = aot_thread_x() / PIECES, e = aot_thread_x() % PIECES * 8;
        /* one pointer stepped by R rows: offsets kept per copy would hold 2 registers each */
        const aot_u16 *p = src + r0 * stride + e;
#pragma unroll
        for (int c = 0; c < ROWS / R; c++, p += R * stride)
            aot_copy16_async(tile + aot_swz(r0 + c * R, e, ROWS), r0 + c * R < rows ? p : src, r0 + c * R < rows);
    } else {
#pragma unroll
        for (int c = 0; c < ROWS * PIECES / THREADS; c++) {
            const int i = c * THREADS + aot_thread_x(), r = i / PIECES, e = i % PIECES * 8;
            aot_copy16_async(tile + aot_swz(r, e, ROWS), src + (r < rows ? r * stride + e : 0), r < rows);
        }
    }
    aot_copy_async_commit();
}

/* Issues S = Q K^T for the tile's keys as one run of warp-group products (aot_device.h), left
 * running: sc is the products' until an aot_wg_wait that covers the run. */
template <class S, int D, int NS, int F16>
AOT_DEV void qk_issue(const aot_u16 *Qs, const aot_u16 *Ks, float (&sc)[NS][S::C])
{
    aot_wg_begin(sc);
#pragma unroll
    for (int ks = 0; ks < D / S::K; ks++) aot_wg_mma_ss<S, F16>(S(), sc, Qs, ks * S::K, Ks, NS * S::N, 0, ks > 0);
    aot_wg_commit();
}

/* The products' S, masked to -inf where a key is not visible. In log2 units once multiplied by
 * the returned factor: without a soft cap (and with a positive scale) the softmax folds
 * scale * log2 e into its exp2 arguments (one fma), else it is applied here. */
template <class S, int NS>
AOT_DEV float qk_finish(const aot_fmha_kargs &a, const fmha_block &k, int j0, float (&sc)[NS][S::C])
{
    const float log2e = AOT_LOG2E, scale2 = a.scale * log2e;
    float mul = 1.0f;
    if (a.softcap > 0.0f) /* one test for the tile: per element it becomes a branch each */
#pragma unroll
        for (int n = 0; n < NS; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) sc[n][i] = score(a, sc[n][i]) * log2e;
    else if (scale2 > 0.0f)
        mul = scale2; /* order-preserving: the row max may be taken before scaling */
    else
#pragma unroll
        for (int n = 0; n < NS; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) sc[n][i] *= scale2;
    if (needs_mask(k, j0)) mask<S, NS>(a, k, j0, sc);
    return mul;
}

/* Both of the above, the products awaited. */
template <class S, int D, int NS, int F16>
AOT_DEV float scores_log2(const aot_fmha_kargs &a, const fmha_block &k, int j0, const aot_u16 *Qs, const aot_u16 *Ks,
                          float (&sc)[NS][S::C])
{
    qk_issue<S, D, NS, F16>(Qs, Ks, sc);
    aot_wg_wait<0>(sc);
    return qk_finish<S, NS>(a, k, j0, sc);
}

/* Per row slot, the max (or sum) of a lane's values of NS tiles, as a tree: a chain of NS * C
 * dependent operations would wait on each one's latency. Each tile's partial starts from its
 * first value of the slot (no -inf or 0 to fold in: 2 instructions a tile fewer). */
template <class S, int NS>
AOT_DEV void slot_reduce(const float (&v)[NS][S::C], bool max, float (&out)[S::C_ROWS])
{
    float t[NS][S::C_ROWS];
#pragma unroll
    for (int n = 0; n < NS; n++) {
        bool seen[S::C_ROWS] = {};
#pragma unroll
        for (int i = 0; i < S::C; i++) {
            const int r = S::c_slot(i);
            t[n][r] = !seen[r] ? v[n][i] : max ? aot_fmaxf(t[n][r], v[n][i]) : t[n][r] + v[n][i];
            seen[r] = true;
        }
    }
#pragma unroll
    for (int w = 1; w < NS; w *= 2)
#pragma unroll
        for (int n = 0; n + w < NS; n += 2 * w)
#pragma unroll
            for (int r = 0; r < S::C_ROWS; r++) t[n][r] = max ? aot_fmaxf(t[n][r], t[n + w][r]) : t[n][r] + t[n + w][r];
#pragma unroll
    for (int r = 0; r < S::C_ROWS; r++) out[r] = t[0][r];
}

/* The online softmax of one step, in place: the scores (times mul in log2 units) become the
 * step's probabilities; m takes the new row maxima, alpha the factors the old accumulators are
 * scaled by, l this lane's share of the row sums. */
template <class S, int NS>
AOT_DEV void softmax_exp(float mul, float (&sc)[NS][S::C], float (&m)[S::C_ROWS], float (&l)[S::C_ROWS],
                         float (&alpha)[S::C_ROWS])
{
    float mx[S::C_ROWS], base[S::C_ROWS], sum[S::C_ROWS];
    slot_reduce<S, NS>(sc, true, mx);
    row_reduce<S>(mx, true);
#pragma unroll
    for (int r = 0; r < S::C_ROWS; r++) {
        const float m_new = aot_fmaxf(m[r], mx[r] * mul);
        base[r] = m_new == -AOT_INF ? 0.0f : m_new; /* a row with nothing visible yet: p = 0 */
        alpha[r] = aot_exp2_fast(m[r] - base[r]), m[r] = m_new;
    }
#pragma unroll
    for (int n = 0; n < NS; n++)
#pragma unroll
        for (int i = 0; i < S::C; i++) sc[n][i] = aot_exp2_fast(sc[n][i] * mul - base[S::c_slot(i)]);
    slot_reduce<S, NS>(sc, false, sum);
#pragma unroll
    for (int r = 0; r < S::C_ROWS; r++) l[r] = l[r] * alpha[r] + sum[r];
}

/* P rounded to the input type and packed in pairs: the A fragments of P V. */
template <class S, int NS>
AOT_DEV void pack_p(int f16, const float (&p)[NS][S::C], aot_u32 (&pp)[NS][S::C / 2])
{
#pragma unroll
    for (int n = 0; n < NS; n++)
#pragma unroll
        for (int i = 0; i < S::C; i += 2) pp[n][i / 2] = aot_pack2_16(p[n][i], p[n][i + 1], f16);
}

/* Issues O += P V for the tile's keys, left running (o and pp are the products' until an
 * aot_wg_wait that covers the run); P's A fragments are its C fragments, packed in pairs. */
template <class S, int NS, int NO, int F16>
AOT_DEV void pv_issue(const aot_u32 (&pp)[NS][S::C / 2], const aot_u16 *Vs, float (&o)[NO][S::C])
{
    constexpr int TPK = S::K / S::N; /* C tiles per k-step */
    aot_wg_begin(o);
#pragma unroll
    for (int ks = 0; ks < NS / TPK; ks++) {
        aot_u32 af[S::A / 2]; /* the registers of pp as they are: nothing computed between the products */
#pragma unroll
        for (int i = 0; i < S::A / 2; i++) af[i] = pp[ks * TPK + S::c_tile(2 * i)][S::c_elem(2 * i) / 2];
        aot_wg_mma_rs_x2<S, F16, true>(S(), o, af, Vs, NS * S::N, ks * S::K, 0);
    }
    aot_wg_commit();
}

template <class S, int NS, int NO, int F16>
AOT_DEV void pv(const aot_u32 (&pp)[NS][S::C / 2], const aot_u16 *Vs, float (&o)[NO][S::C])
{
    pv_issue<S, NS, NO, F16>(pp, Vs, o);
    aot_wg_wait<0>(o);
}

/* o *= alpha per row, skipped when no row of the wave moved (mostly, once the maxima settle). */
template <class S, int NO>
AOT_DEV void rescale(float (&o)[NO][S::C], const float (&alpha)[S::C_ROWS])
{
    bool same = true;
#pragma unroll
    for (int r = 0; r < S::C_ROWS; r++) same = same && alpha[r] == 1.0f;
    if (!aot_wave_min_u32(same))
#pragma unroll
        for (int n = 0; n < NO; n++)
#pragma unroll
            for (int i = 0; i < S::C; i++) o[n][i] *= alpha[S::c_slot(i)];
}

/* out and lse of the wave's rows from the loop's accumulators, maxima (log2 units) and this
 * lane's shares of the row sums. */
template <class S, int DV, int NO>
AOT_DEV void finish_rows(const aot_fmha_kargs &a, const fmha_block &k, const float (&o)[NO][S::C], const float (&m)[S::C_ROWS],
                         float (&l)[S::C_ROWS])
{
    row_reduce<S>(l, false);
    float le[S::C];
#pragma unroll
    for (int i = 0; i < S::C; i++) le[i] = l[S::c_slot(i)];
    store_out<S, DV, NO>(a, k, o, le);
    if (a.lse && k.lane % S::ROW_LANES == 0)
#pragma unroll
        for (int i = 0; i < S::C; i++) {
            const int r = k.rw + S::c_row(k.lane, i), slot = S::c_slot(i);
            if (r < k.s.sq && (i == 0 || S::c_slot(i - 1) != slot)) /* once per row */
                a.lse[(aot_i64)k.s.h * a.total_q + k.s.q0 + r] = lse_of(m[slot] * 0.6931471805599453f, l[slot]);
        }
}

/* F16 is the input type as a constant: the matrix instruction depends on it, and a flag read
 * at run time would issue both instructions, one predicated off. */
template <int D, int DV, int F16>
AOT_DEV void fmha_regs(const aot_fmha_kargs &a, aot_u16 *Qs, aot_u16 *Ks, aot_u16 *Vs)
{
    typedef fmha_mma S;
    typedef fmha_reg_tiles<D> T;
    constexpr int NS = T::KEYS / S::N, NO = DV / S::N, BLOCK_ROWS = AOT_FMHA_WAVES * BM;
    fmha_block k;
    if (!block_of(a, k, T::KEYS)) return;
    const aot_u16 *kb = a.k + (aot_i64)k.s.k0 * a.k_row + k.s.hkv * D, *vb = a.v + (aot_i64)k.s.k0 * a.v_row + k.s.hkv * DV;
    int lo, hi;
    block_keys<T::KEYS>(a, k, &lo, &hi);
    copy_tile<D, BLOCK_ROWS>(a.q + (aot_i64)(k.s.q0 + k.rb) * a.q_row + k.s.h * D, a.q_row, k.s.sq - k.rb, Qs);
    if (lo < hi) copy_tile<D, T::KEYS>(kb + lo * a.k_row, a.k_row, k.s.sk - lo, Ks);
    float o[NO][S::C], m[S::C_ROWS], l[S::C_ROWS];
    zero<NO, S::C>(o);
#pragma unroll
    for (int r = 0; r < S::C_ROWS; r++) m[r] = -AOT_INF, l[r] = 0.0f;
    for (int j0 = lo; j0 < hi; j0 += T::KEYS) {
        aot_copy_async_wait_all();
        aot_wg_shared_fence(); /* the products read the tiles through the async proxy */
        aot_sync_block(); /* K of this step is in; every wave is done with the last V */
        copy_tile<DV, T::KEYS>(vb + j0 * a.v_row, a.v_row, k.s.sk - j0, Vs);
        float sc[NS][S::C], alpha[S::C_ROWS];
        aot_u32 pp[NS][S::C / 2];
        const float mul = scores_log2<S, D, NS, F16>(a, k, j0, Qs, Ks, sc);
        softmax_exp<S, NS>(mul, sc, m, l, alpha);
        pack_p<S, NS>(F16, sc, pp);
        rescale<S, NO>(o, alpha);
        aot_copy_async_wait_all();
        aot_wg_shared_fence();
        aot_sync_block(); /* V is in; every wave is done with K */
        if (j0 + T::KEYS < hi) copy_tile<D, T::KEYS>(kb + (j0 + T::KEYS) * a.k_row, a.k_row, k.s.sk - j0 - T::KEYS, Ks);
        pv<S, NS, NO, F16>(pp, Vs, o);
    }
    aot_copy_async_wait_all(); /* no copy outlives the block (Q's, when no key was visible) */
    finish_rows<S, DV, NO>(a, k, o, m, l);
}

template <int D, int DV>
AOT_DEV void fmha_body(const aot_fmha_kargs &a)
{
    if constexpr (fmha_mma::C_TO_A) { /* the tiles are declared here, once for both types */
        typedef fmha_reg_tiles<D> T;
        AOT_SHARED_TILE(Qs, AOT_FMHA_WAVES * BM * D);
        AOT_SHARED_TILE(Ks, T::KEYS * D);
        AOT_SHARED_TILE(Vs, T::KEYS * DV);
        if (a.f16) fmha_regs<D, DV, 1>(a, Qs, Ks, Vs);
        else fmha_regs<D, DV, 0>(a, Qs, Ks, Vs);
    }
    else fmha_shared<D, DV>(a);
}

/* blocks: how many blocks per multiprocessor the registers are capped for (sm_90a; d = 128 at
 * 3 blocks, 163 registers, ran 1.27x faster than at 2 (184) on the H200 of 2026-12-03; each
 * variant's count is the most that fits without spilling). */
#define FMHA_VARIANT(name, kargs, d, dv, blocks)                                               \
    AOT_KERNEL AOT_LAUNCH_BOUNDS_MIN(THREADS, blocks) void name(kargs a) { fmha_body<d, dv>(a); } \
    AOT_EMU_ENTRY(name, kargs)

AOT_FMHA_VARIANTS(FMHA_VARIANT)

/* ---- the warp-specialized path (AOT_PIPELINES: sm_90a, and the emulator at wave 32) ----
 * Persistent blocks (as many as the GPU holds at once) take tiles of AOT_FMHA_WS_ROWS(NG) =
 * 64 NG query rows of one sequence and head in turn, in 1 + NG warp groups (NG, `groups` in the
 * variant list, is 2 or 3):
 *   group 0, one warp    the producer (one lane issues): tensor copies of each tile's Q, then of
 *                        K and V of each key step into stage it % STAGES of a ring, `it`
 *                        running on from tile to tile                 -> q_full, k_full, v_full
 *   groups 1 to NG       64 rows each: S = Q K^T of the step from Q's and K's tiles, K's stage
 *                        released, the online softmax in registers, O += P V from V's tile,
 *                        V's stage released (Q's before the tile's last P V) -> k_empty,
 *                        v_empty, q_empty
 * so the copies of the next steps, and of the next tile, run under this step's products and
 * softmax and this tile's stores, and each group's softmax runs under the others' products
 * (turn_begin). The register path's qk_finish, softmax_exp and pack_p do the arithmetic.
 * Registers move from the producer's group to the others (aot_regs_lower / raise). Keys of a
 * sequence's last step past its end are the next sequence's (a tensor copy has no per-sequence
 * bound): K's are masked like any invisible key, and the producer's warp zeroes V's rows (a zero
 * probability times a NaN there would be NaN) before it completes the stage (v_land: the copy's
 * own barrier). Units of tiles (ws_units) are numbered with the query tile fastest, then heads,
 * then sequences, so the blocks at work at once share K and V in L2. */
#if defined(AOT_PIPELINES)
constexpr int WS_ST = AOT_FMHA_WS_STAGES, WS_GROUP = 4 * AOT_WAVE;
/* A consumer's registers once the producer's group has given up all but 24 of its own: the
 * multiprocessor's 64K shared by the groups, in the multiples of 8 setmaxnreg takes, at most 240 */
#define WS_CONSUMER_REGS(ng) ((512 - 24) / (ng) / 8 * 8 > 240 ? 240 : (512 - 24) / (ng) / 8 * 8)

template <int D, int DV, int KEYS, int NG>
struct ws_tiles { /* swizzled tiles (aot_swz), each 1024-byte aligned */
    aot_u16 k[WS_ST][KEYS * D];
    aot_u16 v[WS_ST][KEYS * DV];
    aot_u16 q[NG][64 * D];
    aot_mbar q_full[NG], q_empty[NG], k_full[WS_ST], k_empty[WS_ST], v_full[WS_ST], v_empty[WS_ST], v_land[WS_ST];
};

/* A block's work comes in units a grid apart. A unit is one query tile, or with a.pairs (the
 * host's choice where a row's keys end at its diagonal: causal, or a right window) the pair of
 * tiles n - 1 - j and j of a sequence's n. Tile j then costs about j + 1 key steps, so every pair
 * of a sequence costs the same and the blocks move through the units in step: they finish
 * together, and the units at work at once come from a few heads, whose K and V stay in L2. */
AOT_DEV int ws_units(const aot_fmha_kargs &a) { return AOT_FMHA_WS_UNITS_PER_HEAD(a.q_tiles, a.pairs) * a.hq * a.batch; }

/* Tile e (0 or 1) of unit u: its sequence, head and first row; false when there is none. */
AOT_DEV bool ws_tile_of(const aot_fmha_kargs &a, int rows, int u, int e, fmha_block &k)
{
    if (e && !a.pairs) return false;
    const int per = AOT_FMHA_WS_UNITS_PER_HEAD(a.q_tiles, a.pairs), j = u % per, h = u / per % a.hq, b = u / per / a.hq;
    k.s = seq_of(a, b, h);
    const int n = k.s.sq / rows + (k.s.sq % rows != 0), last = n - 1 - j;
    const int tile = e == 0 && a.pairs ? last : j;
    k.lane = aot_lane(), k.rb = tile * rows;
    return e == 0 ? (a.pairs ? j <= last : j < n) : j < last;
}

/* The keys [lo, hi) the tile's rows see, in whole steps. */
template <int KEYS, int NG>
AOT_DEV void ws_keys(const aot_fmha_kargs &a, const fmha_block &k, int *lo, int *hi)
{
    const int rows = k.s.sq - k.rb < AOT_FMHA_WS_ROWS(NG) ? k.s.sq - k.rb : AOT_FMHA_WS_ROWS(NG);
    key_range<KEYS>(a, k.s, k.rb, k.rb + rows - 1, lo, hi);
}

/* The block's tiles; n counts them. */
#define WS_TILES(a, k, n)                                                                      \
    for (int u_ = aot_block_x(), n = 0; u_ < ws_units(a); u_ += aot_grid_x())                 \
        for (int e_ = 0; e_ < 2; e_++)                                                         \
            if (ws_tile_of(a, AOT_FMHA_WS_ROWS(NG), u_, e_, k) && (n++, true))

/* Does the step from j0 hold keys past the sequence's end? (Then it is the tile's last step.) */
template <int KEYS>
AOT_DEV bool ws_tail(const fmha_block &k, int j0) { return j0 + KEYS > k.s.sk; }

/* The producer's warp, its lanes together through every wait; lane 0 issues the copies. Where
 * a tile's last step has a tail, its V copy completes on v_land instead, and the warp zeroes the
 * tail's rows before it completes v_full (bit st of `lands`: the parity of stage st's next v_land
 * phase). */
template <int D, int DV, int KEYS, int NG>
AOT_DEV void ws_producer(const aot_fmha_ws_kargs &w, ws_tiles<D, DV, KEYS, NG> &t)
{
    const aot_fmha_kargs &a = w.a;
    const bool issue = aot_lane() == 0;
    fmha_block k;
    int it = 0;
    unsigned lands = 0;
    WS_TILES(a, k, n) {
        int lo, hi;
        ws_keys<KEYS, NG>(a, k, &lo, &hi);
        for (int g = 0; g < NG; g++) {
            if (n > 1) aot_mbar_wait(&t.q_empty[g], (n - 2) & 1);
            if (issue) aot_mbar_expect(&t.q_full[g], 64 * D * 2);
            for (int p = 0; issue && p < D / 64; p++)
                aot_copy_tile(t.q[g] + p * 64 * 64, &w.q, 64 * p, k.s.h, k.s.q0 + k.rb + 64 * g, &t.q_full[g]);
        }
        for (int j0 = lo; j0 < hi; j0 += KEYS, it++) {
            const int st = it % WS_ST, round = it / WS_ST, j = k.s.k0 + j0;
            const bool tail = ws_tail<KEYS>(k, j0);
            if (round) aot_mbar_wait(&t.k_empty[st], (round - 1) & 1);
            if (issue) aot_mbar_expect(&t.k_full[st], KEYS * D * 2);
            for (int p = 0; issue && p < D / 64; p++) aot_copy_tile(t.k[st] + p * KEYS * 64, &w.k, 64 * p, k.s.hkv, j, &t.k_full[st]);
            if (round) aot_mbar_wait(&t.v_empty[st], (round - 1) & 1);
            aot_mbar *b = tail ? &t.v_land[st] : &t.v_full[st];
            if (issue) aot_mbar_expect(b, KEYS * DV * 2);
            for (int p = 0; issue && p < DV / 64; p++) aot_copy_tile(t.v[st] + p * KEYS * 64, &w.v, 64 * p, k.s.hkv, j, b);
            if (!tail) continue;
            aot_mbar_wait(&t.v_land[st], lands >> st & 1);
            lands ^= 1u << st;
            const int first = k.s.sk - j0;
            const aot_u16x8 zero = {};
            for (int u = aot_lane(); u < (KEYS - first) * (DV / 8); u += AOT_WAVE)
                aot_store_u16x8(t.v[st] + aot_swz(first + u / (DV / 8), u % (DV / 8) * 8, KEYS), zero);
            aot_wg_shared_fence(); /* the products read the tile through the async proxy */
            aot_sync_wave();
            if (issue) aot_mbar_arrive(&t.v_full[st]);
        }
    }
}

/* The running state of a consumer group's rows. */
template <int NO, int NS>
struct ws_rows {
    float o[NO][fmha_mma::C], m[fmha_mma::C_ROWS], l[fmha_mma::C_ROWS], sc[NS][fmha_mma::C];
};

/* The groups take turns issuing their products, in a ring (named barriers 1 to NG: group g
 * waits at 1 + g, then lets the next go), so that one group's softmax runs while the others'
 * products keep the matrix units busy. Each group has the same number of turns a tile (its
 * steps plus one); the last group opens the first turn to group 0 and does not open one after
 * its last. */
AOT_DEV void turn_begin(int g) { aot_sync_named(1 + g, 2 * WS_GROUP); }
template <int NG>
AOT_DEV void turn_end(int g, bool last)
{
    if (!(last && g == NG - 1)) aot_arrive_named(1 + (g + 1) % NG, 2 * WS_GROUP);
}
AOT_DEV bool ws_lane0(void) { return aot_lane() == 0; } /* one arrival a wave */

/* Step it >= 1 (keys from j0) of a consumer group: this step's Q K^T and the last step's P V
 * (its P in p) are issued together; the softmax runs in the scores' registers once Q K^T is
 * done, while P V still runs, and P is packed into p once P V has read it. (With a second set
 * of P registers for the softmax to write, the 64 that P took left ptxas short of registers: it
 * waited for P V before the softmax, and a group's softmax no longer overlapped its P V.) The
 * fences keep the softmax before the wait for P V and the packing after it. */
template <int D, int DV, int KEYS, int NG, int F16>
AOT_DEV void ws_step(const aot_fmha_kargs &a, ws_tiles<D, DV, KEYS, NG> &t, const fmha_block &k, int g, int it, int j0,
                     ws_rows<DV / 8, KEYS / 8> &r, aot_u32 (&p)[KEYS / 8][2])
{
    typedef fmha_mma S;
    constexpr int NS = KEYS / S::N, NO = DV / S::N;
    it = aot_uniform_i32(it); /* the same in every lane; said so, the stage's descriptors are uniform */
    const int st = it % WS_ST, prev = (it - 1) % WS_ST;
    float alpha[S::C_ROWS];
    aot_mbar_wait(&t.k_full[st], it / WS_ST & 1);
    aot_mbar_wait(&t.v_full[prev], (it - 1) / WS_ST & 1);
    turn_begin(g);
    qk_issue<S, D, NS, F16>(t.q[g], t.k[st], r.sc);
    pv_issue<S, NS, NO, F16>(p, t.v[prev], r.o);
    turn_end<NG>(g, false);
    aot_wg_wait<1>(r.sc); /* Q K^T is done; P V may run on */
    if (ws_lane0()) aot_mbar_arrive(&t.k_empty[st]);
    softmax_exp<S, NS>(qk_finish<S, NS>(a, k, j0, r.sc), r.sc, r.m, r.l, alpha);
    aot_wg_fence(r.sc);
    aot_wg_wait<0>(r.o);
    aot_wg_fence(r.sc);
    if (ws_lane0()) aot_mbar_arrive(&t.v_empty[prev]);
    rescale<S, NO>(r.o, alpha);
    pack_p<S, NS>(F16, r.sc, p);
}

/* The last step's P V. */
template <int D, int DV, int KEYS, int NG, int F16>
AOT_DEV void ws_last_pv(ws_tiles<D, DV, KEYS, NG> &t, int g, int it, ws_rows<DV / 8, KEYS / 8> &r,
                        const aot_u32 (&p)[KEYS / 8][2])
{
    if (ws_lane0()) aot_mbar_arrive(&t.q_empty[g]); /* the tile's last Q K^T is done */
    aot_mbar_wait(&t.v_full[it % WS_ST], it / WS_ST & 1);
    turn_begin(g);
    pv_issue<fmha_mma, KEYS / 8, DV / 8, F16>(p, t.v[it % WS_ST], r.o);
    turn_end<NG>(g, true);
    aot_wg_wait<0>(r.o);
    if (ws_lane0()) aot_mbar_arrive(&t.v_empty[it % WS_ST]);
}

/* A consumer group's 64 rows of the tile (group g of the block's NG), steps from ring position
 * *it on. */
template <int D, int DV, int KEYS, int NG, int F16>
AOT_DEV void ws_rows_of_tile(const aot_fmha_kargs &a, ws_tiles<D, DV, KEYS, NG> &t, const fmha_block &k, int g, int n, int *it)
{
    typedef fmha_mma S;
    constexpr int NS = KEYS / S::N, NO = DV / S::N;
    static_assert(S::N == 8 && S::C == 4, "ws_rows and ws_step are written for mma.sync's fragments");
    ws_rows<NO, NS> r;
    aot_u32 p[NS][S::C / 2];
    float alpha[S::C_ROWS];
    int lo, hi;
    ws_keys<KEYS, NG>(a, k, &lo, &hi);
    zero<NO, S::C>(r.o);
#pragma unroll
    for (int i = 0; i < S::C_ROWS; i++) r.m[i] = -AOT_INF, r.l[i] = 0.0f;
    aot_mbar_wait(&t.q_full[g], (n - 1) & 1);
    if (lo >= hi) {
        if (ws_lane0()) aot_mbar_arrive(&t.q_empty[g]);
    } else {
        if (g == NG - 1) aot_arrive_named(1, 2 * WS_GROUP); /* group 0 goes first */
        aot_mbar_wait(&t.k_full[*it % WS_ST], *it / WS_ST & 1);
        turn_begin(g);
        qk_issue<S, D, NS, F16>(t.q[g], t.k[*it % WS_ST], r.sc);
        turn_end<NG>(g, false);
        aot_wg_wait<0>(r.sc);
        if (ws_lane0()) aot_mbar_arrive(&t.k_empty[*it % WS_ST]);
        softmax_exp<S, NS>(qk_finish<S, NS>(a, k, lo, r.sc), r.sc, r.m, r.l, alpha);
        pack_p<S, NS>(F16, r.sc, p);
        int i = *it + 1;
        for (int j0 = lo + KEYS; j0 < hi; j0 += KEYS) ws_step<D, DV, KEYS, NG, F16>(a, t, k, g, i++, j0, r, p);
        ws_last_pv<D, DV, KEYS, NG, F16>(t, g, i - 1, r, p);
        *it = i;
    }
    finish_rows<S, DV, NO>(a, k, r.o, r.m, r.l);
}

template <int D, int DV, int KEYS, int NG, int F16>
AOT_DEV void ws_consumer(const aot_fmha_kargs &a, ws_tiles<D, DV, KEYS, NG> &t, int g)
{
    fmha_block k;
    int it = 0;
    WS_TILES(a, k, n) {
        wave_rows(a, k, k.rb + 64 * g + BM * (aot_thread_x() / AOT_WAVE % 4), BM, KEYS);
        ws_rows_of_tile<D, DV, KEYS, NG, F16>(a, t, k, g, n, &it);
    }
}

template <int D, int DV, int KEYS, int NG>
AOT_DEV void fmha_ws(const aot_fmha_ws_kargs &w)
{
    typedef ws_tiles<D, DV, KEYS, NG> T;
    static_assert(sizeof(T) + 1024 <= AOT_FMHA_WS_SHARED(D, DV, KEYS, NG), "AOT_FMHA_WS_SHARED is the layout's size");
    AOT_SHARED_DYN(unsigned char, raw, AOT_FMHA_WS_SHARED(D, DV, KEYS, NG));
    T &t = *(T *)(raw + ((1024 - ((unsigned long long)raw & 1023)) & 1023));
    if (aot_thread_x() == 0) {
        for (int g = 0; g < NG; g++) aot_mbar_init(&t.q_full[g], 1), aot_mbar_init(&t.q_empty[g], 4);
        for (int st = 0; st < WS_ST; st++) {
            aot_mbar_init(&t.k_full[st], 1), aot_mbar_init(&t.v_full[st], 1), aot_mbar_init(&t.v_land[st], 1);
            aot_mbar_init(&t.k_empty[st], 4 * NG), aot_mbar_init(&t.v_empty[st], 4 * NG);
        }
    }
    aot_sync_block();
    const int group = aot_uniform_i32(aot_thread_x() / WS_GROUP); /* said uniform: so are the group's tiles */
    if (group == 0) {
        aot_regs_lower<24>();
        if (aot_thread_x() < AOT_WAVE) ws_producer<D, DV, KEYS, NG>(w, t);
    } else {
        aot_regs_raise<WS_CONSUMER_REGS(NG)>();
        if (w.a.f16) ws_consumer<D, DV, KEYS, NG, 1>(w.a, t, group - 1);
        else ws_consumer<D, DV, KEYS, NG, 0>(w.a, t, group - 1);
    }
}

#define FMHA_WS_VARIANT(name, kargs, d, dv, keys, groups, diagonal)                                                   \
    AOT_KERNEL AOT_LAUNCH_BOUNDS_MIN(AOT_FMHA_WS_THREADS(groups), 1) void name(AOT_GRID_CONSTANT kargs w)          \
    {                                                                                                       \
        fmha_ws<d, dv, keys, groups>(w);                                                                    \
    }                                                                                                       \
    AOT_EMU_ENTRY(name, kargs)

AOT_FMHA_PIPELINE_VARIANTS(FMHA_WS_VARIANT)
#endif
