/* harness_route.c : see harness_route.h. */
#include "harness_route.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"
#include "ref_route.h"

static const char *scoring_name(int s) { return s == 0 ? "softmax" : s == 1 ? "sigmoid" : "sqrt-softplus"; }
static const char *dtype_name(aiter_aot_dtype d) { return d == AITER_AOT_DTYPE_F32 ? "f32" : d == AITER_AOT_DTYPE_F16 ? "f16" : "bf16"; }

/* One logit as the dtype's bytes at raw[i]; returns the value the kernel reads. */
static double put_logit(aiter_aot_dtype dt, unsigned char *raw, size_t i, float x)
{
    if (dt == AITER_AOT_DTYPE_F32) return memcpy(raw + 4 * i, &x, 4), x;
    uint16_t h = dt == AITER_AOT_DTYPE_BF16 ? ref_to_bf16(x) : ref_to_f16(x);
    memcpy(raw + 2 * i, &h, 2);
    return dt == AITER_AOT_DTYPE_BF16 ? ref_bf16_value(h) : ref_f16_value(h);
}

static void *make_logits(const route_case *c, ref_rng *r, double *vals)
{
    const size_t stride = (size_t)c->experts + c->extra_stride;
    unsigned char *raw = malloc((size_t)c->tokens * stride * 4 + 4);
    for (int t = 0; t < c->tokens; t++)
        for (int e = 0; e < c->experts; e++) {
            float x = (float)(2.0 * ref_normal(r));
            if (c->special == 2) x = (float)((int)(ref_uniform(r) * 4) - 2); /* many equal logits */
            if (c->special == 1 && t % 3 == 1 && e % 5 == 2) x = t % 2 ? NAN : -NAN;
            if (c->special == 1 && t % 4 == 3 && e % 3 == 0) x = -INFINITY;
            if (c->special == 3 && t % 3 == 1 && e % 17 == 4) x = INFINITY;
            if (c->special == 4) x *= 20.0f; /* softplus's x > 20 branch, sigmoid near 0 and 1 */
            vals[(size_t)t * c->experts + e] = put_logit(c->dtype, raw, (size_t)t * stride + e, x);
            if (c->special == 5 && t % 3 == 1 && e % 5 == 2) { /* signaling NaN bit patterns */
                const size_t i = (size_t)t * stride + e;
                if (c->dtype == AITER_AOT_DTYPE_F32) { uint32_t u = t % 2 ? 0x7f800001u : 0xff800001u; memcpy((unsigned char *)raw + 4 * i, &u, 4); }
                else { uint16_t h = c->dtype == AITER_AOT_DTYPE_BF16 ? (t % 2 ? 0x7f81 : 0xff81) : (t % 2 ? 0x7c01 : 0xfc01); memcpy((unsigned char *)raw + 2 * i, &h, 2); }
                vals[(size_t)t * c->experts + e] = NAN;
            }
        }
    for (int t = 0; t < c->tokens; t++) /* the gaps between rows hold NaN, which must not be read */
        for (int e = c->experts; e < (int)stride; e++) put_logit(c->dtype, raw, (size_t)t * stride + e, NAN);
    return raw;
}

/* DeepSeek-V3's biases are small; V4's sit near 8 for every expert, so the bias decides among
 * nearly equal selection scores. special 2 repeats three values, so that selection scores tie. */
static void make_bias(const route_case *c, ref_rng *r, float *bf, double *bd)
{
    for (int e = 0; e < c->experts; e++) {
        float b = c->bias == 2 ? (float)(8.0 + 0.01 * ref_normal(r)) : (float)(0.3 * ref_normal(r));
        if (c->special == 2) b = 0.25f * (float)(e % 3);
        bf[e] = b, bd[e] = b;
    }
}

/* Token ids and the [vocab, k] table; hash 2 puts token ids and entries out of range. */
static void make_hash(const route_case *c, ref_rng *r, int64_t vocab, int64_t *ids, int64_t *table)
{
    for (int t = 0; t < c->tokens; t++) {
        ids[t] = (int64_t)(ref_uniform(r) * (double)vocab);
        if (c->hash == 2 && t % 7 == 3) ids[t] = t % 2 ? vocab : -1;
    }
    for (int64_t v = 0; v < vocab; v++)
        for (int j = 0; j < c->k; j++) {
            int64_t e = (int64_t)(ref_uniform(r) * c->experts);
            if (c->hash == 2 && (v * c->k + j) % 11 == 5) e = (v + j) % 2 ? c->experts : -2;
            table[v * c->k + j] = e;
        }
}

/* Either int32 or int64 copies of n int64 values. */
static void *as_ids(const int64_t *v, size_t n, int wide)
{
    void *p = malloc(n * (wide ? 8 : 4) + 8);
    for (size_t i = 0; i < n; i++)
        if (wide) ((int64_t *)p)[i] = v[i];
        else ((int32_t *)p)[i] = (int32_t)v[i];
    return p;
}

/* Row t's ids must be the reference's, but a different expert may stand at slot j when its
 * selection score differs from the reference expert's by a near tie (fp32 rounding, not a true
 * tie: true ties must go to the lower expert exactly). The weights are checked against the fp64
 * weights of the ids the kernel chose: 1e-5 relative. */
static int route_compare(const route_case *c, const ref_route_opts *o, const double *vals, const double *sel,
                         const int32_t *rid, const float *w, const int32_t *id, int *near, char *why, size_t cap)
{
    double *s = malloc(sizeof(double) * c->experts), rw[32];
    int ok = 1;
    for (int t = 0; ok && t < c->tokens; t++) {
        const double *ct = sel + (size_t)t * c->experts;
        ref_route_scores(vals + (size_t)t * c->experts, c->experts, o->scoring, s);
        for (int j = 0; ok && j < c->k; j++) {
            int a = id[(size_t)t * c->k + j], b = rid[(size_t)t * c->k + j];
            if (a == b) continue;
            int in = a >= 0 && a < c->experts && b >= 0;
            double tol = in ? 1e-5 * fmax(fmax(fabs(ct[a]), fabs(ct[b])), 1e-3) : 0;
            for (int q = 0; in && q < j; q++) in = id[(size_t)t * c->k + q] != a;
            if (!in || ct[a] == ct[b] || fabs(ct[a] - ct[b]) > tol)
                ok = 0, snprintf(why, cap, "id[%d,%d] = %d, want %d", t, j, a, b);
            else ++*near;
        }
        double sum = 0;
        for (int j = 0; j < c->k; j++) {
            int a = id[(size_t)t * c->k + j];
            rw[j] = a >= 0 && a < c->experts ? s[a] : 0.0, sum += rw[j];
        }
        for (int j = 0; ok && j < c->k; j++) {
            double want = (o->renormalize ? rw[j] / fmax(sum, 1e-20) : rw[j]) * o->scale, got = w[(size_t)t * c->k + j];
            if (!(fabs(got - want) <= 1e-5 * fabs(want) + 1e-12))
                ok = 0, snprintf(why, cap, "weight[%d,%d] = %.9g, want %.9g", t, j, got, want);
        }
    }
    free(s);
    return ok;
}

typedef struct {
    void *gating, *bias, *ids_in, *table, *w, *id;
} route_dev;

static void route_release(const harness_mem *m, route_dev *d)
{
    m->release(d->gating), m->release(d->bias), m->release(d->ids_in), m->release(d->table), m->release(d->w), m->release(d->id);
}

void harness_route(const harness_mem *m, const route_case *c, uint64_t seed, harness_tally *t)
{
    char what[160], why[160] = "";
    snprintf(what, sizeof what, "topk_route T=%d E=%d k=%d %s %s%s g=%d/%d renorm=%d x%g%s%s%s%s", c->tokens, c->experts, c->k,
             scoring_name(c->scoring), dtype_name(c->dtype), c->bias == 2 ? " bias~8" : c->bias ? " bias" : "",
             c->n_group, c->topk_group, c->renormalize, c->scale, c->hash == 2 ? " hash-oob" : c->hash ? " hash" : "",
             c->ids_int64 ? " i64" : "", c->special == 1 ? " nan/-inf" : c->special == 2 ? " ties" : c->special == 3 ? " +inf" : c->special == 4 ? " wide" : c->special == 5 ? " sNaN" : "",
             c->extra_stride ? " strided" : "");
    if (c->gating_offset || c->bias_offset)
        snprintf(what + strlen(what), sizeof what - strlen(what), " goff=%d boff=%d", c->gating_offset, c->bias_offset);
    ref_rng r;
    ref_seed(&r, seed);
    const size_t n = (size_t)c->tokens * c->k, ne = (size_t)c->tokens * c->experts, esz = c->dtype == AITER_AOT_DTYPE_F32 ? 4 : 2;
    const size_t nraw = (size_t)c->tokens * ((size_t)c->experts + c->extra_stride);
    const int64_t vocab = 1000 + c->tokens % 97;
    double *vals = malloc(ne * sizeof(double)), *sel = malloc(ne * sizeof(double)), *rw = malloc(n * sizeof(double));
    double *bd = malloc(sizeof(double) * c->experts);
    float *bf = malloc(sizeof(float) * c->experts), *w = malloc(n * 4);
    int32_t *rid = malloc(n * 4), *id = malloc(n * 4);
    int64_t *hid = malloc(sizeof(int64_t) * (c->tokens + 1)), *table = malloc(sizeof(int64_t) * (size_t)vocab * c->k);
    void *raw = make_logits(c, &r, vals);
    make_bias(c, &r, bf, bd);
    if (c->hash) make_hash(c, &r, vocab, hid, table);
    ref_route_opts o = {c->scoring, c->bias ? bd : NULL, c->n_group, c->topk_group, c->renormalize,
                        c->scale ? c->scale : 1.0, c->hash ? hid : NULL, table, vocab};
    ref_topk_route(vals, c->tokens, c->experts, c->k, &o, rw, rid, sel);
    void *hid_raw = as_ids(hid, (size_t)c->tokens, c->ids_int64), *table_raw = as_ids(table, (size_t)vocab * c->k, c->ids_int64);
    const size_t isz = c->ids_int64 ? 8 : 4;
    route_dev d = {m->alloc((nraw + c->gating_offset) * esz), m->alloc(4 * ((size_t)c->experts + c->bias_offset)), c->hash ? m->alloc(isz * c->tokens) : NULL,
                   c->hash ? m->alloc(isz * (size_t)vocab * c->k) : NULL, m->alloc(n * 4), m->alloc(n * isz)};
    char *gp = d.gating ? (char *)d.gating + c->gating_offset * esz : NULL;
    float *bp = d.bias ? (float *)d.bias + c->bias_offset : NULL;
    int ok = d.gating && d.bias && d.w && d.id && m->upload(gp, raw, nraw * esz) == 0 &&
             m->upload(bp, bf, 4 * (size_t)c->experts) == 0 &&
             (!c->hash || (m->upload(d.ids_in, hid_raw, isz * c->tokens) == 0 && m->upload(d.table, table_raw, isz * (size_t)vocab * c->k) == 0));
    aiter_aot_topk_route_args a = {.size = sizeof a, .gating = gp, .gating_dtype = c->dtype,
                                   .gating_row_stride = c->experts + c->extra_stride, .tokens = c->tokens, .experts = c->experts,
                                   .k = c->k, .scoring = c->scoring, .bias = c->bias ? bp : NULL,
                                   .n_group = c->n_group, .topk_group = c->topk_group, .renormalize = c->renormalize,
                                   .routed_scaling_factor = c->scale, .input_ids = d.ids_in, .tid2eid = d.table,
                                   .vocab = vocab, .hash_ids_int64 = c->ids_int64, .topk_weights = d.w,
                                   .topk_ids = d.id, .topk_ids_int64 = c->ids_int64};
    aiter_aot_status s = ok ? aiter_aot_topk_route(&a, m->stream) : AITER_AOT_STATUS_OUT_OF_MEMORY;
    void *id_raw = malloc(n * isz + 8);
    if (s != AITER_AOT_STATUS_OK) snprintf(why, sizeof why, "status %d: %s", s, aiter_aot_last_error()), ok = 0;
    else ok = m->sync() == 0 && m->download(w, d.w, n * 4) == 0 && m->download(id_raw, d.id, n * isz) == 0;
    for (size_t i = 0; ok && i < n; i++) {
        int64_t v = c->ids_int64 ? ((int64_t *)id_raw)[i] : ((int32_t *)id_raw)[i];
        id[i] = v < INT32_MIN || v > INT32_MAX ? INT32_MIN : (int32_t)v;
    }
    int near = 0;
    if (ok) ok = route_compare(c, &o, vals, sel, rid, w, id, &near, why, sizeof why);
    if (ok && near) snprintf(why, sizeof why, "%d near-tie swaps", near);
    harness_report(t, ok, what, why);
    route_release(m, &d);
    free(vals), free(sel), free(rw), free(bd), free(bf), free(w), free(rid), free(id), free(hid), free(table);
    free(raw), free(hid_raw), free(table_raw), free(id_raw);
}

/* ---- moe_align_block_size ---- */

static void make_pairs(const align_case *c, ref_rng *r, int32_t *ids, int32_t *map)
{
    for (int t = 0; t < c->tokens; t++)
        for (int s = 0; s < c->k; s++) {
            int e, again;
            do { /* distinct experts per token, as top-k gives */
                e = (int)(ref_uniform(r) * (c->skewed && c->k < 4 ? 4 : c->experts));
                again = 0;
                for (int q = 0; q < s; q++) again |= ids[(size_t)t * c->k + q] == e;
            } while (again);
            if (c->skewed && (t * c->k + s) % 13 == 7) e = (t % 2) ? c->experts : -1; /* dropped */
            ids[(size_t)t * c->k + s] = e;
        }
    for (int e = 0, local = 0; map && e < c->experts; e++) map[e] = ref_uniform(r) < 0.5 ? local++ : -1;
}

void harness_align(const harness_mem *m, const align_case *c, uint64_t seed, harness_tally *t)
{
    char what[128], why[160] = "";
    snprintf(what, sizeof what, "moe_align_block_size T=%d k=%d E=%d bs=%d%s%s", c->tokens, c->k, c->experts,
             c->block_size, c->mapped ? " map" : "", c->skewed ? " skewed" : "");
    ref_rng r;
    ref_seed(&r, seed);
    size_t n = (size_t)c->tokens * c->k, maxp = aiter_aot_moe_align_max_padded(c->tokens, c->k, c->experts, c->block_size);
    size_t maxb = (maxp + c->block_size - 1) / c->block_size, ws = aiter_aot_moe_align_workspace_size(c->tokens, c->k, c->experts);
    int32_t *ids = malloc(n * 4), *map = c->mapped ? malloc(4 * (size_t)c->experts) : NULL;
    int32_t *rs = malloc(maxp * 4), *re = malloc(maxb * 4), *gs = malloc(maxp * 4), *ge = malloc(maxb * 4), gp = -7;
    make_pairs(c, &r, ids, map);
    int32_t rp = ref_moe_align(ids, c->tokens, c->k, c->experts, c->block_size, map, rs, (int64_t)maxp, re, (int64_t)maxb);
    void *d_ids = m->alloc(n * 4), *d_map = map ? m->alloc(4 * (size_t)c->experts) : NULL, *d_s = m->alloc(maxp * 4);
    void *d_e = m->alloc(maxb * 4), *d_p = m->alloc(4), *d_ws = m->alloc(ws);
    int ok = m->upload(d_ids, ids, n * 4) == 0 && (!map || m->upload(d_map, map, 4 * (size_t)c->experts) == 0);
    aiter_aot_moe_align_block_size_args a = {.size = sizeof a, .topk_ids = d_ids, .tokens = c->tokens, .k = c->k,
                                             .experts = c->experts, .block_size = c->block_size, .expert_map = d_map,
                                             .sorted_token_ids = d_s, .expert_ids = d_e, .num_tokens_post_pad = d_p,
                                             .workspace = d_ws, .workspace_size = ws};
    aiter_aot_status s = ok ? aiter_aot_moe_align_block_size(&a, m->stream) : AITER_AOT_STATUS_OUT_OF_MEMORY;
    if (s != AITER_AOT_STATUS_OK) snprintf(why, sizeof why, "status %d: %s", s, aiter_aot_last_error()), ok = 0;
    else ok = m->sync() == 0 && m->download(gs, d_s, maxp * 4) == 0 && m->download(ge, d_e, maxb * 4) == 0 &&
              m->download(&gp, d_p, 4) == 0;
    if (ok && gp != rp) ok = 0, snprintf(why, sizeof why, "num_tokens_post_pad = %d, want %d", gp, rp);
    for (size_t i = 0; ok && i < maxp; i++)
        if (gs[i] != rs[i]) ok = 0, snprintf(why, sizeof why, "sorted_token_ids[%zu] = %d, want %d", i, gs[i], rs[i]);
    for (size_t b = 0; ok && b < maxb; b++)
        if (ge[b] != re[b]) ok = 0, snprintf(why, sizeof why, "expert_ids[%zu] = %d, want %d", b, ge[b], re[b]);
    harness_report(t, ok, what, why);
    m->release(d_ids), m->release(d_map), m->release(d_s), m->release(d_e), m->release(d_p), m->release(d_ws);
    free(ids), free(map), free(rs), free(re), free(gs), free(ge);
}

/* ---- bad arguments: each must be INVALID_ARGUMENT, with a message, and launch nothing ---- */

void harness_route_bad_args(const harness_mem *m, harness_tally *t)
{
    void *buf = m->alloc(1 << 16);
    char *p = buf;
    aiter_aot_topk_route_args g = {.size = sizeof g, .gating = p, .gating_dtype = AITER_AOT_DTYPE_BF16,
                                   .gating_row_stride = 256, .tokens = 4, .experts = 256, .k = 8,
                                   .scoring = AITER_AOT_ROUTE_SIGMOID, .bias = (float *)(p + 4096), .n_group = 8,
                                   .topk_group = 4, .renormalize = 1, .routed_scaling_factor = 2.5f,
                                   .topk_weights = (float *)(p + 8192), .topk_ids = p + 12288};
    struct { const char *what; aiter_aot_topk_route_args a; } r[] = {
        {"n_group not dividing experts", g}, {"topk_group > n_group", g}, {"topk_group = 0", g},
        {"k > kept experts", g}, {"n_group = 33", g}, {"k > experts", g}, {"NULL gating", g},
        {"bad scoring", g}, {"bad dtype", g}, {"misaligned bias", g}, {"input_ids without tid2eid", g},
        {"vocab = 0 with input_ids", g}, {"hash with n_group", g}, {"misaligned int64 ids", g},
        {"infinite scale", g}, {"args.size = 0", g}, {"experts = 1025", g},
        {"fp32 rows 2^62 - 1024 elements apart (byte offsets wrap)", g}};
    r[0].a.n_group = 6, r[1].a.topk_group = 9, r[2].a.topk_group = 0;
    r[3].a.n_group = 16, r[3].a.topk_group = 1, r[3].a.k = 17; /* one kept group of 16 experts */
    r[4].a.n_group = 33, r[5].a.experts = 8, r[5].a.n_group = 0, r[5].a.k = 9, r[6].a.gating = NULL;
    r[7].a.scoring = (aiter_aot_route_scoring)3, r[8].a.gating_dtype = (aiter_aot_dtype)5;
    r[9].a.bias = (float *)(p + 4098), r[10].a.input_ids = p, r[10].a.n_group = 0;
    r[11].a.input_ids = p, r[11].a.tid2eid = p, r[11].a.vocab = 0, r[11].a.n_group = 0;
    r[12].a.input_ids = p, r[12].a.tid2eid = p, r[12].a.vocab = 10;
    r[13].a.topk_ids = p + 12292, r[13].a.topk_ids_int64 = 1;
    r[14].a.routed_scaling_factor = INFINITY, r[15].a.size = 0, r[16].a.experts = 1025;
    r[17].a.gating_dtype = AITER_AOT_DTYPE_F32, r[17].a.tokens = 2, r[17].a.gating_row_stride = (INT64_C(1) << 62) - 1024;
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++)
        harness_rejects(t, "topk_route", r[i].what, aiter_aot_topk_route(&r[i].a, m->stream));
    aiter_aot_moe_align_block_size_args al = {.size = sizeof al, .topk_ids = (int32_t *)p, .tokens = 4, .k = 2,
                                              .experts = 8, .block_size = 16, .sorted_token_ids = (int32_t *)p,
                                              .expert_ids = (int32_t *)p, .num_tokens_post_pad = (int32_t *)p,
                                              .workspace = p, .workspace_size = 1 << 16};
    struct { const char *what; aiter_aot_moe_align_block_size_args a; } b[] = {
        {"k > experts", al}, {"block_size = 0", al}, {"NULL topk_ids", al}, {"workspace one int short", al},
        {"misaligned expert_map", al}, {"tokens = 2^24", al}};
    b[0].a.k = 9, b[1].a.block_size = 0, b[2].a.topk_ids = NULL;
    b[3].a.workspace_size = aiter_aot_moe_align_workspace_size(4, 2, 8) - 4;
    b[4].a.expert_map = (int32_t *)(p + 2), b[5].a.tokens = 1 << 24;
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        harness_rejects(t, "moe_align_block_size", b[i].what, aiter_aot_moe_align_block_size(&b[i].a, m->stream));
    /* the size helpers give 0 for every shape the ops refuse */
    harness_report(t, aiter_aot_moe_align_workspace_size(4, 9, 8) == 0 && aiter_aot_moe_sorting_workspace_size(4, 9, 8) == 0 &&
                          aiter_aot_moe_align_max_padded(0, 2, 8, 16) == 0 && aiter_aot_moe_align_max_padded(4, 33, 1024, 16) == 0 &&
                          aiter_aot_moe_align_max_padded(4, 2, 8, 257) == 0 && aiter_aot_moe_align_max_padded(4, 2, 1025, 16) == 0,
                   "moe size helpers: 0 for refused shapes", "k > experts, tokens 0, k 33, block_size 257, 1025 experts");
    m->release(buf);
}

/* ---- the GPU list (tests/gpu/gpu_test.c): the served models' shapes at 1 .. 65536 tokens ---- */

void harness_route_gpu(const harness_mem *m, harness_tally *t, int quick, uint64_t *seed)
{
    static const int tokens[] = {1, 7, 64, 1024, 16384, 65536};
    /* DeepSeek-V3/R1, DeepSeek-V4-style with and without hash routing, Llama-4-style top-1 */
    const route_case models[] = {
        {0, 256, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_BF16, 1, 8, 4, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {0, 256, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_F32, 1, 8, 4, 1, 2.5f, 0, 1, 0, 0, 0, 0},
        {0, 384, 6, AITER_AOT_ROUTE_SQRT_SOFTPLUS, AITER_AOT_DTYPE_BF16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 0, 0},
        {0, 384, 6, AITER_AOT_ROUTE_SQRT_SOFTPLUS, AITER_AOT_DTYPE_BF16, 0, 0, 0, 1, 1.5f, 1, 0, 0, 0, 0, 0},
        {0, 128, 1, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_BF16, 0, 0, 0, 0, 1.0f, 0, 0, 0, 0, 0, 0},
        {0, 160, 6, AITER_AOT_ROUTE_SOFTMAX, AITER_AOT_DTYPE_F16, 0, 8, 3, 0, 1.0f, 0, 0, 0, 0, 0, 0}};
    for (size_t a = 0; a < sizeof tokens / sizeof tokens[0]; a++)
        for (size_t r = 0; r < sizeof models / sizeof models[0]; r++) {
            if (quick && (a + r) % 3) continue;
            route_case c = models[r];
            c.tokens = tokens[a];
            harness_route(m, &c, (*seed)++, t);
        }
    const route_case edges[] = {
        {4099, 256, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_F16, 1, 8, 4, 1, 2.5f, 0, 0, 1, 0, 0, 0},
        {4099, 256, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_BF16, 1, 8, 4, 1, 2.5f, 0, 0, 2, 0, 0, 0},
        {4099, 384, 6, AITER_AOT_ROUTE_SQRT_SOFTPLUS, AITER_AOT_DTYPE_F32, 0, 0, 0, 1, 1.5f, 2, 1, 1, 0, 0, 0},
        {333, 1024, 32, AITER_AOT_ROUTE_SOFTMAX, AITER_AOT_DTYPE_BF16, 1, 32, 8, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {333, 32, 4, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_F32, 1, 32, 5, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        /* 32-expert groups of 8-expert runs: lanes 24..31 lie past the row and once read before
         * the buffer in the 16-byte-load path (compute-sanitizer memcheck sees it) */
        {33, 192, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_BF16, 1, 6, 3, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {33, 192, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_F32, 1, 6, 3, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        /* ungrouped rows: 12 a lane (f16, NaN), 6 a lane (192 experts, ties), signalling NaNs, and
         * the strided fallback for gating 2 bytes off and a bias 4 bytes off */
        {4099, 384, 6, AITER_AOT_ROUTE_SQRT_SOFTPLUS, AITER_AOT_DTYPE_F16, 2, 0, 0, 1, 1.5f, 0, 0, 1, 0, 0, 0},
        {4099, 192, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_F16, 1, 0, 0, 1, 1.0f, 0, 0, 2, 0, 0, 0},
        {4099, 384, 6, AITER_AOT_ROUTE_SQRT_SOFTPLUS, AITER_AOT_DTYPE_BF16, 2, 0, 0, 1, 1.5f, 0, 0, 5, 0, 0, 0},
        {333, 384, 6, AITER_AOT_ROUTE_SQRT_SOFTPLUS, AITER_AOT_DTYPE_F16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 1, 1},
        /* from 8192 tokens, the select layout (256 and 384 experts; 128 take the rows layout): ties
         * (rows past its list take the rounds), NaN, groups of two lanes */
        {8200, 256, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_BF16, 1, 8, 4, 1, 2.5f, 0, 0, 2, 0, 0, 0},
        {8200, 384, 6, AITER_AOT_ROUTE_SQRT_SOFTPLUS, AITER_AOT_DTYPE_F16, 2, 0, 0, 1, 1.5f, 0, 0, 1, 0, 0, 0},
        {8200, 128, 1, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_F32, 0, 0, 0, 0, 1.0f, 0, 0, 2, 0, 0, 0},
        {8200, 256, 8, AITER_AOT_ROUTE_SIGMOID, AITER_AOT_DTYPE_F32, 1, 4, 2, 1, 2.5f, 0, 1, 0, 0, 0, 0}};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) harness_route(m, &edges[i], (*seed)++, t);
    static const int bss[] = {16, 64, 128};
    for (size_t a = 0; a < sizeof tokens / sizeof tokens[0]; a++)
        for (size_t b = 0; b < 3; b++) {
            if (quick && (a + b) % 2) continue;
            align_case c = {tokens[a], 8, 256, bss[b], (int)((a + b) % 2), (int)((a + b) % 3 == 2)};
            harness_align(m, &c, (*seed)++, t);
        }
    align_case big = {16384, 6, 384, 64, 1, 1};
    harness_align(m, &big, (*seed)++, t);
    harness_route_bad_args(m, t);
}
