/* ref_mhc.h : fp64 references of the mHC ops, written from runtime/include/aiter_aot_mhc.h
 * and docs/semantics.md, never from a kernel. Inputs are the values the kernels read (bf16
 * tensors already turned into doubles); n = 4 streams, 24 mix logits [pre 4 | post 4 | comb 16]. */
#ifndef AOT_REF_MHC_H
#define AOT_REF_MHC_H

typedef struct {
    double rms_eps, pre_eps, sinkhorn_eps, post_mult, norm_eps;
    int sinkhorn_iters;
} ref_mhc_params;

/* For each token: dot[t][o] = x[t] . fn[o] over K values, sq[t] = x[t] . x[t], and mag[t][o] =
 * sum |x fn| (the scale of the dot's rounding error); rows of `outs` dots (24, or 4 for head). */
void ref_mhc_project(const double *x, const float *fn, int tokens, long k, int outs, double *dot, double *sq,
                     double *mag);

/* The coefficients of one token from its 24 dots, sum of squares and K = streams * C. */
void ref_mhc_coefficients(const double *dot, double sq, long k, const float *scale, const float *base,
                          const ref_mhc_params *p, double pre[4], double post[4], double comb[16]);

/* Sinkhorn-Knopp of a 4x4 matrix of logits, in place (row-major [j][k]). */
void ref_mhc_sinkhorn(double c[16], int iters, double eps);

/* The collapse of one token: u[h] = sum_j pre[j] r[j][h] (r: [4][C]), mag[h] = sum |pre r|. */
void ref_mhc_collapse(const double pre[4], const double *r, int c, double *u, double *mag);

/* The post-mix of one token: out[k][h] = post[k] y[h] + sum_j comb[j][k] r[j][h], mag alike. */
void ref_mhc_post(const double comb[16], const double post[4], const double *r, const double *y, int c,
                  double *out, double *mag);

#endif
