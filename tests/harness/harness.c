/* harness.c : see harness.h. */
#include "harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

static const char *dtype_name(aiter_aot_dtype d) { return d == AITER_AOT_DTYPE_F32 ? "f32" : d == AITER_AOT_DTYPE_F16 ? "f16" : "bf16"; }

void harness_report(harness_tally *t, int ok, const char *what, const char *detail)
{
    if (ok) t->passed++;
    else t->failed++;
    if (!ok || t->verbose) printf("%-4s %-62s %s\n", ok ? "ok" : "FAIL", what, detail);
}

/* Draws logits and returns them both as the dtype's bytes and as the doubles the kernel sees. */
static void *make_logits(const topk_case *c, ref_rng *r, double *vals, int64_t stride)
{
    size_t esz = c->dtype == AITER_AOT_DTYPE_F32 ? 4 : 2;
    unsigned char *raw = calloc((size_t)c->tokens * (size_t)stride, esz);
    for (int t = 0; t < c->tokens; t++)
        for (int e = 0; e < c->experts; e++) {
            float x = (float)(2.0 * ref_normal(r));
            /* many ties; in odd rows the largest value is zero, as +0 and -0 */
            if (c->special == 2) x = (float)((int)(ref_uniform(r) * 5) - (t & 1 ? 4 : 2));
            if (c->special == 2 && x == 0.0f && ref_uniform(r) < 0.5) x = -0.0f;
            /* monotonic rows: the k largest are neighbours (one lane holds several of them) */
            if (c->special == 3) x = (t & 1 ? -0.01f : 0.01f) * (float)e;
            /* one logit per row ~120 above the rest: exp of the gap overflows fp32, so the weights
             * are finite only if every exponent is taken against the row's true max */
            if (c->special == 4 && e == t * 37 % c->experts) x = 120.0f + x;
            /* near ties: a few values, each moved by 0..63 ulps, so that most logits differ
             * only in their low mantissa bits (fp32; 16-bit types round them into ties) */
            if (c->special == 5) {
                uint32_t u;
                x = (float)((int)(ref_uniform(r) * 3) + (t & 1 ? -2 : 1));
                memcpy(&u, &x, 4), u += (uint32_t)(ref_uniform(r) * 64), memcpy(&x, &u, 4);
            }
            /* and every fourth row distinct negatives but for -0 and +0 at two neighbours, the
             * row's two largest: equal, so the lower expert (-0's) comes first */
            if (c->special == 5 && t % 4 == 0 && c->experts > 1) {
                int e0 = t * 7 % (c->experts - 1);
                x = e == e0 ? -0.0f : e == e0 + 1 ? 0.0f : (float)(-1.0 - ref_uniform(r));
            }
            if (c->special == 1 && t % 3 == 1 && e % 7 == 3) x = t / 3 % 2 ? -NAN : NAN; /* both signs */
            if (c->special == 1 && t % 5 == 2 && e == c->experts / 2) x = INFINITY;
            if (c->special == 1 && t % 4 == 3) x = -INFINITY; /* whole row -inf */
            size_t at = (size_t)t * (size_t)stride + e;
            double v;
            if (c->dtype == AITER_AOT_DTYPE_F32) memcpy(raw + at * 4, &x, 4), v = x;
            else if (c->dtype == AITER_AOT_DTYPE_BF16) {
                uint16_t h = ref_to_bf16(x);
                memcpy(raw + at * 2, &h, 2), v = ref_bf16_value(h);
            } else {
                uint16_t h = ref_to_f16(x);
                memcpy(raw + at * 2, &h, 2), v = ref_f16_value(h);
            }
            vals[(size_t)t * c->experts + e] = v;
        }
    return raw;
}

/* Indices must match exactly (the order is by logit, ties to the lower expert, +0 equal to -0,
 * NaN as -inf: all exact on the inputs); weights must be within 2e-6 relative (+1e-7
 * absolute) of fp64. */
static int topk_compare(const topk_case *c, const double *rw, const int32_t *rid, const int32_t *rtei,
                        const float *w, const int32_t *id, const int32_t *tei, char *why, size_t cap)
{
    for (int i = 0; i < c->tokens * c->k; i++) {
        int t = i / c->k;
        double err = fabs(w[i] - rw[i]);
        if (!(err <= 2e-6 * fabs(rw[i]) + 1e-7))
            return snprintf(why, cap, "weight[%d,%d] = %.9g, want %.9g", t, i % c->k, w[i], rw[i]), 0;
        if (id[i] != rid[i]) return snprintf(why, cap, "id[%d,%d] = %d, want %d", t, i % c->k, id[i], rid[i]), 0;
        if (tei[i] != rtei[i]) return snprintf(why, cap, "token_expert_indices[%d] = %d, want %d", i, tei[i], rtei[i]), 0;
    }
    return 1;
}

void harness_topk(const harness_mem *m, const topk_case *c, uint64_t seed, harness_tally *t)
{
    char what[128], why[160] = "";
    snprintf(what, sizeof what, "topk_softmax T=%d E=%d k=%d %s renorm=%d%s%s", c->tokens, c->experts, c->k,
             dtype_name(c->dtype), c->renormalize, c->special == 1 ? " nan/inf" : c->special == 2 ? " ties" : c->special == 3 ? " monotonic" : c->special == 4 ? " wide" : c->special == 5 ? " near-ties" : "",
             c->extra_stride ? " strided" : "");
    ref_rng r;
    ref_seed(&r, seed);
    int64_t stride = c->experts + c->extra_stride;
    size_t n = (size_t)c->tokens * c->k, esz = c->dtype == AITER_AOT_DTYPE_F32 ? 4 : 2;
    double *vals = malloc(sizeof(double) * (size_t)c->tokens * c->experts), *rw = malloc(n * sizeof(double));
    int32_t *rid = malloc(n * 4), *rtei = malloc(n * 4), *id = malloc(n * 4), *tei = malloc(n * 4);
    float *w = malloc(n * 4);
    void *raw = make_logits(c, &r, vals, stride);
    ref_topk_softmax(vals, c->tokens, c->experts, c->k, c->renormalize, rw, rid, rtei);
    size_t gbytes = (size_t)c->tokens * (size_t)stride * esz;
    void *dg = m->alloc(gbytes), *dw = m->alloc(n * 4), *did = m->alloc(n * 4), *dtei = m->alloc(n * 4);
    int ok = dg && dw && did && dtei && m->upload(dg, raw, gbytes) == 0;
    aiter_aot_topk_softmax_args a = {.size = sizeof a, .gating = dg, .gating_dtype = c->dtype,
                                     .gating_row_stride = stride, .tokens = c->tokens, .experts = c->experts,
                                     .k = c->k, .renormalize = c->renormalize, .topk_weights = dw,
                                     .topk_ids = did, .token_expert_indices = dtei};
    aiter_aot_status s = ok ? aiter_aot_topk_softmax(&a, m->stream) : AITER_AOT_STATUS_OUT_OF_MEMORY;
    if (s != AITER_AOT_STATUS_OK) snprintf(why, sizeof why, "status %d: %s", s, aiter_aot_last_error()), ok = 0;
    else ok = m->sync() == 0 && m->download(w, dw, n * 4) == 0 && m->download(id, did, n * 4) == 0 &&
              m->download(tei, dtei, n * 4) == 0;
    if (ok) ok = topk_compare(c, rw, rid, rtei, w, id, tei, why, sizeof why);
    harness_report(t, ok, what, why);
    m->release(dg), m->release(dw), m->release(did), m->release(dtei);
    free(vals), free(rw), free(rid), free(rtei), free(id), free(tei), free(w), free(raw);
}

static void make_routing(const sort_case *c, ref_rng *r, int32_t *ids, float *w, int32_t *mask)
{
    int hot = c->experts < 4 ? c->experts : 4;
    for (int t = 0; t < c->tokens; t++)
        for (int s = 0; s < c->k; s++) {
            int e;
            int again;
            do { /* distinct experts per token, as top-k gives */
                e = c->skewed ? (int)(ref_uniform(r) * (c->k > hot ? c->experts : hot))
                              : (int)(ref_uniform(r) * c->experts);
                again = 0;
                for (int q = 0; q < s; q++) again |= ids[(size_t)t * c->k + q] == e;
            } while (again);
            ids[(size_t)t * c->k + s] = e;
            w[(size_t)t * c->k + s] = (float)ref_uniform(r);
        }
    for (int e = 0; mask && e < c->experts; e++) mask[e] = ref_uniform(r) < 0.6;
}

static int sort_compare(const ref_sorted *ref, const int32_t *ids, const float *w,
                        const int32_t *eids, const int32_t *nv, size_t maxp, size_t maxb, char *why, size_t cap)
{
    if (nv[0] != ref->num_valid[0] || nv[1] != ref->num_valid[1])
        return snprintf(why, cap, "num_valid_ids = {%d, %d}, want {%d, %d}", nv[0], nv[1], ref->num_valid[0], ref->num_valid[1]), 0;
    for (size_t i = 0; i < maxp; i++) {
        if (ids[i] != ref->sorted_ids[i]) return snprintf(why, cap, "sorted_token_ids[%zu] = 0x%x, want 0x%x", i, ids[i], ref->sorted_ids[i]), 0;
        if (memcmp(&w[i], &ref->sorted_weights[i], 4) != 0) return snprintf(why, cap, "sorted_weights[%zu] = %g, want %g", i, w[i], ref->sorted_weights[i]), 0;
    }
    for (size_t b = 0; b < maxb; b++)
        if (eids[b] != ref->expert_ids[b]) return snprintf(why, cap, "sorted_expert_ids[%zu] = %d, want %d", b, eids[b], ref->expert_ids[b]), 0;
    return 1;
}

static int check_zero(const harness_mem *m, void *dbuf, size_t bytes, char *why, size_t cap)
{
    unsigned char *h = malloc(bytes ? bytes : 1);
    int ok = m->download(h, dbuf, bytes) == 0;
    for (size_t i = 0; ok && i < bytes; i++)
        if (h[i]) ok = 0, snprintf(why, cap, "moe_buf byte %zu not zeroed", i);
    free(h);
    return ok;
}

void harness_sort(const harness_mem *m, const sort_case *c, uint64_t seed, harness_tally *t)
{
    char what[128], why[160] = "";
    snprintf(what, sizeof what, "moe_sorting T=%d E=%d k=%d bs=%d%s%s%s", c->tokens, c->experts, c->k,
             c->block_size, c->masked ? " mask" : "", c->skewed ? " skewed" : "", c->moe_buf_bytes ? " moe_buf" : "");
    ref_rng r;
    ref_seed(&r, seed);
    size_t n = (size_t)c->tokens * c->k, maxp = ref_max_padded(c->tokens, c->k, c->experts, c->block_size);
    size_t maxb = (maxp + c->block_size - 1) / c->block_size, ws = aiter_aot_moe_sorting_workspace_size(c->tokens, c->k, c->experts);
    int32_t *ids = malloc(n * 4), *mask = c->masked ? malloc((size_t)c->experts * 4) : NULL;
    float *w = malloc(n * 4);
    make_routing(c, &r, ids, w, mask);
    ref_sorted ref;
    ref_moe_sorting(ids, w, c->tokens, c->k, c->experts, c->block_size, mask, &ref);
    void *d_ids = m->alloc(n * 4), *d_w = m->alloc(n * 4), *d_mask = mask ? m->alloc((size_t)c->experts * 4) : NULL;
    void *o_ids = m->alloc(maxp * 4), *o_w = m->alloc(maxp * 4), *o_e = m->alloc(maxb * 4), *o_nv = m->alloc(8);
    void *d_ws = m->alloc(ws), *d_buf = c->moe_buf_bytes ? m->alloc(c->moe_buf_bytes) : NULL;
    int ok = m->upload(d_ids, ids, n * 4) == 0 && m->upload(d_w, w, n * 4) == 0 &&
             (!mask || m->upload(d_mask, mask, (size_t)c->experts * 4) == 0);
    aiter_aot_moe_sorting_args a = {.size = sizeof a, .topk_ids = d_ids, .topk_weights = d_w, .tokens = c->tokens,
                                    .k = c->k, .experts = c->experts, .block_size = c->block_size,
                                    .expert_mask = d_mask, .sorted_token_ids = o_ids, .sorted_weights = o_w,
                                    .sorted_expert_ids = o_e, .num_valid_ids = o_nv, .moe_buf = d_buf,
                                    .moe_buf_bytes = c->moe_buf_bytes, .workspace = d_ws, .workspace_size = ws};
    aiter_aot_status s = ok ? aiter_aot_moe_sorting(&a, m->stream) : AITER_AOT_STATUS_OUT_OF_MEMORY;
    int32_t *g_ids = malloc(maxp * 4), *g_e = malloc(maxb * 4), g_nv[2];
    float *g_w = malloc(maxp * 4);
    if (s != AITER_AOT_STATUS_OK) snprintf(why, sizeof why, "status %d: %s", s, aiter_aot_last_error()), ok = 0;
    else ok = m->sync() == 0 && m->download(g_ids, o_ids, maxp * 4) == 0 && m->download(g_w, o_w, maxp * 4) == 0 &&
              m->download(g_e, o_e, maxb * 4) == 0 && m->download(g_nv, o_nv, 8) == 0;
    if (ok) ok = sort_compare(&ref, g_ids, g_w, g_e, g_nv, maxp, maxb, why, sizeof why);
    if (ok && d_buf) ok = check_zero(m, d_buf, c->moe_buf_bytes, why, sizeof why);
    harness_report(t, ok, what, why);
    m->release(d_ids), m->release(d_w), m->release(d_mask), m->release(o_ids), m->release(o_w);
    m->release(o_e), m->release(o_nv), m->release(d_ws), m->release(d_buf);
    free(ids), free(mask), free(w), free(g_ids), free(g_e), free(g_w);
    ref_sorted_free(&ref);
}

void harness_rejects(harness_tally *t, const char *op, const char *what, aiter_aot_status s)
{
    char line[128];
    snprintf(line, sizeof line, "%s rejects %s", op, what);
    harness_report(t, s == AITER_AOT_STATUS_INVALID_ARGUMENT && aiter_aot_last_error()[0], line, aiter_aot_last_error());
}

void harness_bad_args(const harness_mem *m, harness_tally *t)
{
    void *buf = m->alloc(1 << 16);
    char *p = buf;
    aiter_aot_topk_softmax_args good = {.size = sizeof good, .gating = p, .gating_dtype = AITER_AOT_DTYPE_F32,
                                        .gating_row_stride = 8, .tokens = 4, .experts = 8, .k = 2,
                                        .topk_weights = (float *)(p + 4096), .topk_ids = (int32_t *)(p + 8192)};
    struct { const char *what; aiter_aot_topk_softmax_args a; } topk[] = {
        {"k > experts", good}, {"experts = 0", good}, {"experts = 1025", good}, {"k = 33", good},
        {"NULL gating", good}, {"row stride < experts", good}, {"misaligned gating", good}, {"bad dtype", good},
        {"args.size = 0", good}};
    topk[0].a.k = 9, topk[1].a.experts = 0, topk[2].a.experts = 1025, topk[3].a.k = 33;
    topk[4].a.gating = NULL, topk[5].a.gating_row_stride = 7, topk[6].a.gating = p + 2;
    topk[7].a.gating_dtype = (aiter_aot_dtype)7, topk[8].a.size = 0;
    for (size_t i = 0; i < sizeof topk / sizeof topk[0]; i++)
        harness_rejects(t, "topk_softmax", topk[i].what, aiter_aot_topk_softmax(&topk[i].a, m->stream));
    aiter_aot_moe_sorting_args g = {.size = sizeof g, .topk_ids = (int32_t *)p, .topk_weights = (float *)p,
                                    .tokens = 4, .k = 2, .experts = 8, .block_size = 32,
                                    .sorted_token_ids = (int32_t *)p, .sorted_weights = (float *)p,
                                    .sorted_expert_ids = (int32_t *)p, .num_valid_ids = (int32_t *)p,
                                    .workspace = p, .workspace_size = 1 << 16};
    struct { const char *what; aiter_aot_moe_sorting_args a; } sort[] = {
        {"k > experts", g}, {"tokens = 2^24", g}, {"NULL topk_ids", g}, {"small workspace", g},
        {"misaligned output", g}, {"experts = 1025", g}, {"moe_buf_bytes % 16", g},
        {"workspace one int short", g}};
    sort[0].a.k = 9, sort[1].a.tokens = 1 << 24, sort[2].a.topk_ids = NULL, sort[3].a.workspace_size = 4;
    sort[7].a.workspace_size = aiter_aot_moe_sorting_workspace_size(4, 2, 8) - 4;
    sort[4].a.sorted_weights = (float *)(p + 2), sort[5].a.experts = 1025;
    sort[6].a.moe_buf = p, sort[6].a.moe_buf_bytes = 20;
    for (size_t i = 0; i < sizeof sort / sizeof sort[0]; i++)
        harness_rejects(t, "moe_sorting", sort[i].what, aiter_aot_moe_sorting(&sort[i].a, m->stream));
    /* the workspace grows with k (each pair's rank); shapes out of range have none */
    char sizes[96];
    size_t k2 = aiter_aot_moe_sorting_workspace_size(4, 2, 8), k8 = aiter_aot_moe_sorting_workspace_size(4, 8, 8);
    size_t k33 = aiter_aot_moe_sorting_workspace_size(4, 33, 8), t0 = aiter_aot_moe_sorting_workspace_size(0, 2, 8);
    snprintf(sizes, sizeof sizes, "k=2: %zu, k=8: %zu, k=33: %zu, tokens=0: %zu bytes", k2, k8, k33, t0);
    harness_report(t, k8 == k2 + 4 * 4 * 6 && k33 == 0 && t0 == 0, "moe_sorting_workspace_size", sizes);
    m->release(buf);
}

int harness_finish(const harness_tally *t)
{
    printf("%d passed, %d failed\n", t->passed, t->failed);
    return t->failed ? 1 : 0;
}
