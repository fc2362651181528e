/* mma_case.c : see mma_case.h. */
#include "mma_case.h"

#include <math.h>

#include "mma_probe.h"
#include "ref.h"

static double value16(uint16_t h, int f16) { return f16 ? ref_f16_value(h) : ref_bf16_value(h); }

/* One N(0,1) draw rounded to bf16 or fp16. */
static uint16_t draw16(ref_rng *r, int f16)
{
    const float x = (float)ref_normal(r);
    return f16 ? ref_to_f16(x) : ref_to_bf16(x);
}

void mma_case_inputs(const mma_shape *s, int f16, uint64_t seed, uint16_t *a, uint16_t *b, float *c, float *d)
{
    ref_rng r;
    ref_seed(&r, seed);
    for (int i = 0; i < s->m * s->k; i++) a[i] = draw16(&r, f16);
    for (int i = 0; i < s->k * s->n; i++) b[i] = draw16(&r, f16);
    for (int i = 0; i < s->m * s->n; i++) c[i] = (float)ref_normal(&r);
    ref_poison(d, sizeof(float) * (size_t)(s->m * s->n));
}

/* Element (i, j) of C + A*B in fp64, and the magnitude |c| + sum |a*b| that made it. */
static double element(const mma_shape *s, int f16, const uint16_t *a, const uint16_t *b, const float *c, int i,
                      int j, double *mag)
{
    double ref = c[i * s->n + j];
    *mag = fabs(ref);
    for (int k = 0; k < s->k; k++) {
        double t = value16(a[i * s->k + k], f16) * value16(b[k * s->n + j], f16);
        ref += t, *mag += fabs(t);
    }
    return ref;
}

/* max over elements of |x - y| / magnitude, where y is d2 or (d2 == NULL) the fp64 result */
static double worst(const mma_shape *s, int f16, const uint16_t *a, const uint16_t *b, const float *c,
                    const float *d1, const float *d2)
{
    double w = 0;
    for (int i = 0; i < s->m; i++)
        for (int j = 0; j < s->n; j++) {
            double mag, ref = element(s, f16, a, b, c, i, j, &mag);
            double x = d1[i * s->n + j], y = d2 ? d2[i * s->n + j] : ref, e = fabs(x - y) / mag;
            if (!(e == e)) return INFINITY; /* NaN: an unwritten (poisoned) element */
            if (e > w) w = e;
        }
    return w;
}

double mma_case_error(const mma_shape *s, int f16, const uint16_t *a, const uint16_t *b, const float *c, const float *d)
{
    return worst(s, f16, a, b, c, d, NULL);
}

double mma_case_distance(const mma_shape *s, int f16, const uint16_t *a, const uint16_t *b, const float *c,
                         const float *d1, const float *d2)
{
    return worst(s, f16, a, b, c, d1, d2);
}

/* Product element (i, j) of X [64][K] and the K x n matrix whose (k, j) is y[k * ys + j * js]. */
static double wg_worst(int f16, const uint16_t *x, const uint16_t *y, int ys, int js, int n, const float *d)
{
    double w = 0;
    for (int i = 0; i < 64; i++)
        for (int j = 0; j < n; j++) {
            double ref = 0, mag = 0;
            for (int k = 0; k < AOT_WG_PROBE_K; k++) {
                double t = value16(x[i * AOT_WG_PROBE_K + k], f16) * value16(y[k * ys + j * js], f16);
                ref += t, mag += fabs(t);
            }
            double e = fabs(d[i * n + j] - ref) / (mag > 0 ? mag : 1);
            if (!(e == e)) return INFINITY;
            if (e > w) w = e;
        }
    return w;
}

void mma_wg_inputs(int f16, uint64_t seed, uint16_t *x, uint16_t *y, float *d)
{
    ref_rng r;
    ref_seed(&r, seed);
    for (int i = 0; i < 64 * AOT_WG_PROBE_K; i++) x[i] = draw16(&r, f16);
    for (int i = 0; i < AOT_WG_PROBE_K * 128; i++) y[i] = draw16(&r, f16);
    ref_poison(d, sizeof(float) * AOT_WG_PROBE_OUT);
}

double mma_wg_error(int f16, const uint16_t *x, const uint16_t *y, const float *d)
{
    const int n = 128; /* Y's row length */
    double a = wg_worst(f16, x, y, 1, n, 64, d);                                /* X Y[0:64]^T */
    double b = wg_worst(f16, x, y, n, 1, 128, d + 64 * 64);                     /* X Y */
    double c = wg_worst(f16, x, y + 64 * n, 1, n, 64, d + 64 * 64 + 64 * 128); /* X Y[64:128]^T */
    return fmax(a, fmax(b, c));
}

int mma_cluster_first_wrong(const int32_t *out, unsigned grid, unsigned threads, unsigned cluster)
{
    for (unsigned j = 0; j < grid * threads; j++) {
        const unsigned r = j / threads % cluster, t = j % threads;
        const unsigned want = 1000 * ((r + 1) % cluster) + t + 1000 * ((r + cluster - 1) % cluster) + (t + 1) % threads;
        if (out[j] != (int32_t)want) return (int)j;
    }
    return -1;
}
