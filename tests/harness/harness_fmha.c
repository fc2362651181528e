/* harness_fmha.c : the FMHA varlen forward cases (see harness.h). q, k, v ~ N(0, 1) rounded to
 * the input type; softmax_scale = 1/sqrt(d); outputs poisoned first. Tolerances, and why:
 *   out: per (row, head), |out - ref| <= 1e-2 |ref| (2-norms): P is rounded to bf16/fp16
 *        before it multiplies V (about 2^-9 per element), and out itself to the input type;
 *   lse: |lse - ref| <= 1e-4 |ref| + 1e-5 (fp32 sums; the exp/log approximations are ~1e-6);
 *   a row that sees no key: out exactly 0 and lse -inf. */
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref.h"
#include "ref_fmha.h"

/* aiter_aot_fmha_varlen_fwd_args as version 0.1 laid it out, before total_k */
typedef struct {
    size_t size;
    const void *q, *k, *v;
    void *out;
    float *softmax_lse;
    const int32_t *cu_seqlens_q, *cu_seqlens_k;
    aiter_aot_dtype dtype;
    int32_t batch, total_q, hq, hk, head_dim, head_dim_v, max_seqlen_q;
    int64_t q_row_stride, k_row_stride, v_row_stride, out_row_stride;
    float softmax_scale, logits_soft_cap;
    int32_t causal, window_left, window_right;
} fmha_args_v01;

static uint16_t to16(float x, aiter_aot_dtype t) { return t == AITER_AOT_DTYPE_F16 ? ref_to_f16(x) : ref_to_bf16(x); }
static double val16(uint16_t h, aiter_aot_dtype t) { return t == AITER_AOT_DTYPE_F16 ? ref_f16_value(h) : ref_bf16_value(h); }

static uint16_t *tensor(ref_rng *r, long n, aiter_aot_dtype t, double *vals)
{
    uint16_t *b = malloc((size_t)(n ? n : 1) * 2);
    for (long i = 0; i < n; i++) b[i] = to16((float)ref_normal(r), t), vals[i] = val16(b[i], t);
    return b;
}

/* rows x len values laid out with row stride len + pad; the padding is NaN (fill). */
static uint16_t *spread(const uint16_t *packed, long rows, long len, int pad, uint16_t fill)
{
    uint16_t *b = malloc((size_t)(rows * (len + pad) + 1) * 2);
    for (long r = 0; r < rows; r++) {
        memcpy(b + r * (len + pad), packed + r * len, (size_t)len * 2);
        for (int i = 0; i < pad; i++) b[r * (len + pad) + len + i] = fill;
    }
    return b;
}

/* Checks every written row of one head; returns 1 or 0 with the reason. */
static int check_rows(const fmha_case *c, const ref_fmha_params *p, const int32_t *cq, const int32_t *ck,
                      const double *q, const double *k, const double *v, const uint16_t *out, const float *lse,
                      int total_q, char *why, size_t cap)
{
    double *ref = malloc(sizeof(double) * (size_t)c->dv);
    int ok = 1;
    for (int b = 0; ok && b < c->batch; b++) {
        const int sq = cq[b + 1] - cq[b], sk = ck[b + 1] - ck[b];
        for (int i = 0; ok && i < sq; i++)
            for (int h = 0; ok && h < c->hq; h++) {
                const long row = (long)(cq[b] + i) * c->hq + h;
                const float l = lse[(long)h * total_q + cq[b] + i];
                double num = 0, den = 0;
                for (int x = 0; x < c->dv; x++) num += isnan(val16(out[row * c->dv + x], c->dtype));
                if (num > 0 || isnan(l)) {
                    snprintf(why, cap, "seq %d row %d head %d: not written", b, i, h), ok = 0;
                    break;
                }
                if (i % c->sample && i != sq - 1) continue;
                double rl = ref_fmha_row(p, q + row * c->d, h, i, sq, sk, k + (long)ck[b] * c->hk * c->d,
                                         v + (long)ck[b] * c->hk * c->dv, ref);
                for (int x = 0; x < c->dv; x++) {
                    double e = val16(out[row * c->dv + x], c->dtype) - ref[x];
                    num += e * e, den += ref[x] * ref[x];
                }
                if (rl == -INFINITY ? (num != 0 || l != -INFINITY)
                                    : !(sqrt(num) <= 1e-2 * sqrt(den) + 1e-6 && fabs(l - rl) <= 1e-4 * fabs(rl) + 1e-5))
                    snprintf(why, cap, "seq %d row %d head %d: |out-ref|/|ref| = %.3g, lse %.7g want %.7g", b, i, h,
                             sqrt(num / (den > 0 ? den : 1)), l, rl), ok = 0;
            }
    }
    free(ref);
    return ok;
}

void harness_fmha(const harness_mem *m, const fmha_case *c, uint64_t seed, harness_tally *t)
{
    char what[160], why[200] = "";
    snprintf(what, sizeof what, "fmha b=%d q<=%d k+%d h=%d/%d d=%d/%d%s win=%d,%d cap=%g %s%s%s%s", c->batch, c->max_q,
             c->extra_k, c->hq, c->hk, c->d, c->dv, c->causal ? " causal" : "", c->window_left, c->window_right,
             (double)c->softcap, c->dtype == AITER_AOT_DTYPE_F16 ? "f16" : "bf16", c->pad ? " strided" : "",
             c->tail < 0 ? " no-total_k" : c->tail > 0 ? " nan-tail" : "", c->max_extra ? " max+" : "");
    ref_rng r;
    ref_seed(&r, seed);
    int32_t *cq = malloc(sizeof(int32_t) * (size_t)(c->batch + 1)), *ck = malloc(sizeof(int32_t) * (size_t)(c->batch + 1));
    cq[0] = ck[0] = 0;
    int max_q = 0;
    for (int b = 0; b < c->batch; b++) {
        int sq = 1 + (int)(ref_uniform(&r) * c->max_q);
        if (c->batch >= 3 && b == 1) sq = 0; /* a zero-length sequence */
        int sk = sq + (int)(ref_uniform(&r) * (c->extra_k + (c->extra_k < 0 ? -1 : 1)));
        sk = sk < 0 ? 0 : sk;
        cq[b + 1] = cq[b] + sq, ck[b + 1] = ck[b] + sk, max_q = sq > max_q ? sq : max_q;
    }
    const int tq = cq[c->batch], tail = c->tail > 0 ? c->tail : 0, tk = ck[c->batch] + tail; /* k, v rows */
    const long nq = (long)tq * c->hq * c->d, nk = (long)tk * c->hk * c->d, nv = (long)tk * c->hk * c->dv, no = (long)tq * c->hq * c->dv;
    double *q = malloc(sizeof(double) * (size_t)(nq + 1)), *k = malloc(sizeof(double) * (size_t)(nk + 1)), *v = malloc(sizeof(double) * (size_t)(nv + 1));
    uint16_t *qb = tensor(&r, nq, c->dtype, q), *kb = tensor(&r, nk, c->dtype, k), *vb = tensor(&r, nv, c->dtype, v);
    const int pad = c->pad;
    const uint16_t nan16 = c->dtype == AITER_AOT_DTYPE_F16 ? 0x7e00 : 0x7fc0;
    for (long i = (long)(tk - tail) * c->hk * c->d; i < nk; i++) kb[i] = nan16; /* rows no sequence has */
    for (long i = (long)(tk - tail) * c->hk * c->dv; i < nv; i++) vb[i] = nan16;
    const long lq = (long)c->hq * c->d, lk = (long)c->hk * c->d, lv = (long)c->hk * c->dv, lo = (long)c->hq * c->dv;
    uint16_t *sq_ = spread(qb, tq, lq, pad, nan16), *sk_ = spread(kb, tk, lk, pad, nan16), *sv_ = spread(vb, tk, lv, pad, nan16);
    const size_t bq = (size_t)tq * (lq + pad) * 2, bk = (size_t)tk * (lk + pad) * 2, bv = (size_t)tk * (lv + pad) * 2,
                 bo = (size_t)tq * (lo + pad) * 2;
    void *dq = m->alloc(bq), *dk = m->alloc(bk), *dv = m->alloc(bv), *dout = m->alloc(bo);
    void *dlse = m->alloc(sizeof(float) * (size_t)tq * c->hq), *dcq = m->alloc(sizeof(int32_t) * (size_t)(c->batch + 1));
    void *dck = m->alloc(sizeof(int32_t) * (size_t)(c->batch + 1));
    int ok = dq && dk && dv && dout && dlse && dcq && dck && m->upload(dq, sq_, bq) == 0 &&
             m->upload(dk, sk_, bk) == 0 && m->upload(dv, sv_, bv) == 0 &&
             m->upload(dcq, cq, sizeof(int32_t) * (size_t)(c->batch + 1)) == 0 &&
             m->upload(dck, ck, sizeof(int32_t) * (size_t)(c->batch + 1)) == 0;
    aiter_aot_fmha_varlen_fwd_args a = {.size = sizeof a, .q = dq, .k = dk, .v = dv, .out = dout, .softmax_lse = dlse,
                                        .cu_seqlens_q = dcq, .cu_seqlens_k = dck, .dtype = c->dtype, .batch = c->batch,
                                        .total_q = tq, .hq = c->hq, .hk = c->hk, .head_dim = c->d, .head_dim_v = c->dv,
                                        .max_seqlen_q = max_q + c->max_extra, .softmax_scale = (float)(1.0 / sqrt(c->d)),
                                        .q_row_stride = pad ? lq + pad : 0, .k_row_stride = pad ? lk + pad : 0,
                                        .v_row_stride = pad ? lv + pad : 0, .out_row_stride = pad ? lo + pad : 0,
                                        .logits_soft_cap = c->softcap, .causal = c->causal,
                                        .window_left = c->window_left, .window_right = c->window_right,
                                        .total_k = c->tail < 0 ? 0 : tk};
    /* without total_k, as a caller built against 0.1 passes the args: its struct's size, whose
     * tail padding holds whatever the caller's stack held */
    fmha_args_v01 old;
    memset(&old, 0xff, sizeof old);
    memcpy(&old, &a, offsetof(fmha_args_v01, window_right) + sizeof old.window_right);
    old.size = sizeof old;
    const void *args = c->tail < 0 ? (const void *)&old : (const void *)&a;
    aiter_aot_status s = !ok ? AITER_AOT_STATUS_OUT_OF_MEMORY : aiter_aot_fmha_varlen_fwd(args, m->stream);
    uint16_t *out = malloc((size_t)(no ? no : 1) * 2), *sout = malloc(bo ? bo : 2);
    float *lse = malloc(sizeof(float) * (size_t)(tq * c->hq + 1));
    if (s != AITER_AOT_STATUS_OK) snprintf(why, sizeof why, "status %d: %s", s, aiter_aot_last_error()), ok = 0;
    else ok = m->sync() == 0 && m->download(sout, dout, bo) == 0 && m->download(lse, dlse, sizeof(float) * (size_t)tq * c->hq) == 0;
    for (long r = 0; ok && r < tq; r++) { /* gather the rows; the padding must still be poison */
        memcpy(out + r * lo, sout + r * (lo + pad), (size_t)lo * 2);
        for (int i = 0; i < pad; i++)
            if (sout[r * (lo + pad) + lo + i] != 0xffff) ok = 0, snprintf(why, sizeof why, "out row %ld: padding written", r);
    }
    ref_fmha_params p = {c->hq, c->hk, c->d, c->dv, c->causal, c->window_left, c->window_right, 1.0 / sqrt(c->d), c->softcap};
    if (ok) ok = check_rows(c, &p, cq, ck, q, k, v, out, lse, tq, why, sizeof why);
    harness_report(t, ok, what, why);
    m->release(dq), m->release(dk), m->release(dv), m->release(dout), m->release(dlse), m->release(dcq), m->release(dck);
    free(cq), free(ck), free(q), free(k), free(v), free(qb), free(kb), free(vb), free(out), free(lse);
    free(sq_), free(sk_), free(sv_), free(sout);
}

void harness_fmha_bad_args(const harness_mem *m, harness_tally *t)
{
    char *p = m->alloc(1 << 16);
    aiter_aot_fmha_varlen_fwd_args good = {.size = sizeof good, .q = p, .k = p, .v = p, .out = p, .cu_seqlens_q = (int32_t *)p,
                                           .cu_seqlens_k = (int32_t *)p, .dtype = AITER_AOT_DTYPE_BF16, .batch = 1,
                                           .total_q = 4, .hq = 4, .hk = 2, .head_dim = 128, .head_dim_v = 128,
                                           .max_seqlen_q = 4, .softmax_scale = 0.1f, .window_left = -1, .window_right = -1};
    struct { const char *what; aiter_aot_fmha_varlen_fwd_args a; } bad[] = {
        {"head dims (96, 96)", good}, {"hq % hk != 0", good}, {"NULL k", good}, {"dtype F32", good},
        {"odd q row stride", good}, {"row stride < heads * d", good}, {"window_left = -2", good},
        {"negative soft cap", good}, {"v 8-byte aligned only", good}, {"k row stride not a multiple of 8", good},
        {"misaligned out", good}, {"negative total_k", good}, {"max_seqlen_q = INT32_MAX, 64 heads (grid)", good},
        {"grid of 2^24 heads x 2^24 tiles x INT32_MAX sequences (overflowed int64)", good},
        {"q rows 2^31 + 8 elements apart", good}, {"out rows 2^62 elements apart (byte offsets wrap)", good},
        {"k rows 2^31 + 8 elements apart", good}, {"logits_soft_cap = +inf", good}, {"softmax_scale = +inf", good},
        {"total_k = 2^31", good}};
    bad[0].a.head_dim = bad[0].a.head_dim_v = 96, bad[1].a.hk = 3, bad[2].a.k = NULL, bad[3].a.dtype = AITER_AOT_DTYPE_F32;
    bad[4].a.q_row_stride = 513, bad[5].a.k_row_stride = 200, bad[6].a.window_left = -2, bad[7].a.logits_soft_cap = -1;
    bad[8].a.v = p + 8, bad[9].a.k_row_stride = 2 * 128 + 2, bad[10].a.out = p + 2, bad[11].a.total_k = -1;
    bad[12].a.max_seqlen_q = INT32_MAX, bad[12].a.hq = 64; /* its block counts overflowed int32 */
    bad[13].a.max_seqlen_q = INT32_MAX, bad[13].a.hq = bad[13].a.hk = 1 << 24, bad[13].a.batch = INT32_MAX;
    bad[14].a.q_row_stride = (INT64_C(1) << 31) + 8, bad[15].a.out_row_stride = INT64_C(1) << 62;
    bad[16].a.k_row_stride = (INT64_C(1) << 31) + 8, bad[17].a.logits_soft_cap = INFINITY;
    bad[18].a.softmax_scale = INFINITY, bad[19].a.total_k = INT64_C(1) << 31;
    aiter_aot_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    aiter_aot_get_stats(&before);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        harness_rejects(t, "fmha_varlen_fwd", bad[i].what, aiter_aot_fmha_varlen_fwd(&bad[i].a, m->stream));
    aiter_aot_get_stats(&after);
    harness_report(t, after.launches == before.launches, "fmha: no bad call launched anything", "");
    m->release(p);
}
