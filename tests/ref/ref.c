/* ref.c : see ref.h. */
#include "ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void ref_seed(ref_rng *r, uint64_t seed) { r->s = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull; if (!r->s) r->s = 1; }

uint64_t ref_u64(ref_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

double ref_uniform(ref_rng *r) { return (double)(ref_u64(r) >> 11) * 0x1.0p-53; }

double ref_normal(ref_rng *r)
{
    double u = ref_uniform(r), v = ref_uniform(r);
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

uint16_t ref_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

uint16_t ref_to_f16(float f)
{
    /* exact rounding through double arithmetic: scale into the fp16 grid and round-half-even */
    double x = f, a = fabs(x);
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    if (isnan(x)) return sign | 0x7e00;
    if (a >= 65520.0) return sign | 0x7c00;
    if (a < 0x1p-14) return sign | (uint16_t)nearbyint(a * 0x1p24); /* subnormal */
    int e;
    frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    double q = nearbyint(a * ldexp(1.0, 11 - e));  /* 11 significant bits */
    if (q >= 2048.0) q /= 2, e++;
    return sign | (uint16_t)(((e - 1 + 15) << 10) | ((uint16_t)q & 0x3ff));
}

double ref_bf16_value(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

double ref_f16_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double s = (h & 0x8000) ? -1.0 : 1.0;
    if (e == 0x1f) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp(m, -24);
    return s * ldexp(1024 + m, e - 25);
}

void ref_poison(void *p, size_t n) { memset(p, 0xff, n); }

/* ---- topk_softmax: softmax in fp64 over the row, then a sort by (weight desc, id asc) ---- */

static double clean(double x) { return isnan(x) ? -INFINITY : x; }

void ref_topk_softmax(const double *logits, int tokens, int experts, int k, int renormalize,
                      double *weights, int32_t *ids, int32_t *tei)
{
    double *p = malloc(sizeof(double) * (size_t)experts);
    char *taken = malloc((size_t)experts);
    for (int t = 0; t < tokens; t++) {
        const double *x = logits + (size_t)t * experts;
        double mx = -INFINITY, sum = 0;
        for (int e = 0; e < experts; e++) mx = fmax(mx, clean(x[e]));
        for (int e = 0; e < experts; e++) {
            double v = clean(x[e]);
            p[e] = mx == INFINITY ? (v == INFINITY) : mx == -INFINITY ? 0.0 : exp(v - mx);
            sum += p[e];
        }
        for (int e = 0; e < experts; e++) p[e] = sum > 0 ? p[e] / sum : 0.0;
        memset(taken, 0, (size_t)experts);
        double chosen = 0;
        for (int s = 0; s < k; s++) {
            int best = -1;
            for (int e = 0; e < experts; e++) {
                if (taken[e]) continue;
                /* order by logit (equal to ordering by p, but exact for ties), then id */
                if (best < 0 || clean(x[e]) > clean(x[best])) best = e;
            }
            taken[best] = 1;
            weights[(size_t)t * k + s] = p[best];
            ids[(size_t)t * k + s] = best;
            tei[(size_t)t * k + s] = s * tokens + t;
            chosen += p[best];
        }
        if (renormalize && chosen > 0)
            for (int s = 0; s < k; s++) weights[(size_t)t * k + s] /= chosen;
    }
    free(p);
    free(taken);
}

/* ---- moe_sorting: literally group, in (token, slot) order, expert by expert ---- */

size_t ref_max_padded(int tokens, int k, int experts, int block_size)
{
    return (size_t)tokens * k + (size_t)experts * block_size - k;
}

void ref_moe_sorting(const int32_t *ids, const float *weights, int tokens, int k, int experts,
                     int block_size, const int32_t *mask, ref_sorted *out)
{
    size_t maxp = ref_max_padded(tokens, k, experts, block_size);
    size_t maxb = (maxp + block_size - 1) / block_size;
    out->sorted_ids = malloc(maxp * sizeof(int32_t));
    out->sorted_weights = malloc(maxp * sizeof(float));
    out->expert_ids = malloc(maxb * sizeof(int32_t));
    int32_t pad = (k << 24) | tokens;
    for (size_t i = 0; i < maxp; i++) out->sorted_ids[i] = pad, out->sorted_weights[i] = 0.0f;
    for (size_t b = 0; b < maxb; b++) out->expert_ids[b] = -1;
    size_t pos = 0;
    int local = 0;
    for (int e = 0; e < experts; e++) {
        if (mask && !mask[e]) continue;
        size_t start = pos;
        for (int t = 0; t < tokens; t++)
            for (int s = 0; s < k; s++)
                if (ids[(size_t)t * k + s] == e) {
                    out->sorted_ids[pos] = (s << 24) | t;
                    out->sorted_weights[pos] = weights[(size_t)t * k + s];
                    pos++;
                }
        size_t n = pos - start, padded = (n + block_size - 1) / block_size * block_size;
        for (size_t b = start / block_size; b < (start + padded) / block_size; b++) out->expert_ids[b] = local;
        pos = start + padded;
        local++;
    }
    out->num_valid[0] = (int32_t)pos;
    out->num_valid[1] = tokens;
}

void ref_sorted_free(ref_sorted *s)
{
    free(s->sorted_ids);
    free(s->sorted_weights);
    free(s->expert_ids);
}
