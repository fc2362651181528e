/* ref_mhc.c : see ref_mhc.h. */
#include "ref_mhc.h"

#include <math.h>

void ref_mhc_project(const double *x, const float *fn, int tokens, long k, int outs, double *dot, double *sq,
                     double *mag)
{
    for (int t = 0; t < tokens; t++) {
        const double *xt = x + (long)t * k;
        double s = 0;
        for (long i = 0; i < k; i++) s += xt[i] * xt[i];
        sq[t] = s;
        for (int o = 0; o < outs; o++) {
            double d = 0, m = 0;
            for (long i = 0; i < k; i++) d += xt[i] * fn[o * k + i], m += fabs(xt[i] * fn[o * k + i]);
            dot[t * outs + o] = d, mag[t * outs + o] = m;
        }
    }
}

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

void ref_mhc_sinkhorn(double c[16], int iters, double eps)
{
    for (int j = 0; j < 4; j++) { /* row softmax, + eps */
        double m = c[j * 4], s = 0;
        for (int k = 1; k < 4; k++) m = fmax(m, c[j * 4 + k]);
        for (int k = 0; k < 4; k++) s += exp(c[j * 4 + k] - m);
        for (int k = 0; k < 4; k++) c[j * 4 + k] = exp(c[j * 4 + k] - m) / s + eps;
    }
    for (int it = 0; it < iters; it++) {
        for (int j = 0; it > 0 && j < 4; j++) { /* rows, from the second round on */
            double s = c[j * 4] + c[j * 4 + 1] + c[j * 4 + 2] + c[j * 4 + 3];
            for (int k = 0; k < 4; k++) c[j * 4 + k] /= s + eps;
        }
        for (int k = 0; k < 4; k++) { /* columns */
            double s = c[k] + c[4 + k] + c[8 + k] + c[12 + k];
            for (int j = 0; j < 4; j++) c[j * 4 + k] /= s + eps;
        }
    }
}

void ref_mhc_coefficients(const double *dot, double sq, long k, const float *scale, const float *base,
                          const ref_mhc_params *p, double pre[4], double post[4], double comb[16])
{
    double rms = 1.0 / sqrt(sq / (double)k + p->rms_eps);
    for (int j = 0; j < 4; j++) {
        pre[j] = sigmoid(dot[j] * rms * scale[0] + base[j]) + p->pre_eps;
        post[j] = sigmoid(dot[4 + j] * rms * scale[1] + base[4 + j]) * p->post_mult;
    }
    for (int e = 0; e < 16; e++) comb[e] = dot[8 + e] * rms * scale[2] + base[8 + e];
    ref_mhc_sinkhorn(comb, p->sinkhorn_iters, p->sinkhorn_eps);
}

void ref_mhc_collapse(const double pre[4], const double *r, int c, double *u, double *mag)
{
    for (int h = 0; h < c; h++) {
        u[h] = mag[h] = 0;
        for (int j = 0; j < 4; j++) u[h] += pre[j] * r[(long)j * c + h], mag[h] += fabs(pre[j] * r[(long)j * c + h]);
    }
}

void ref_mhc_post(const double comb[16], const double post[4], const double *r, const double *y, int c,
                  double *out, double *mag)
{
    for (int k = 0; k < 4; k++)
        for (int h = 0; h < c; h++) {
            double v = post[k] * y[h], m = fabs(v);
            for (int j = 0; j < 4; j++) v += comb[j * 4 + k] * r[(long)j * c + h], m += fabs(comb[j * 4 + k] * r[(long)j * c + h]);
            out[(long)k * c + h] = v, mag[(long)k * c + h] = m;
        }
}
