/* ref_fmha.c : see ref_fmha.h. */
#include "ref_fmha.h"

#include <math.h>
#include <stdlib.h>

static int visible(const ref_fmha_params *p, int i, int j, int sq, int sk)
{
    int diag = i + sk - sq; /* bottom-right aligned */
    if (p->causal && j > diag) return 0;
    if (p->window_left >= 0 && j < diag - p->window_left) return 0;
    if (p->window_right >= 0 && j > diag + p->window_right) return 0;
    return 1;
}

double ref_fmha_row(const ref_fmha_params *p, const double *q_row, int h, int i, int sq, int sk, const double *k,
                    const double *v, double *out)
{
    const int hkv = h / (p->hq / p->hk);
    double *s = malloc(sizeof(double) * (sk ? sk : 1)), mx = -INFINITY, sum = 0;
    for (int j = 0; j < sk; j++) {
        s[j] = -INFINITY;
        if (!visible(p, i, j, sq, sk)) continue;
        double dot = 0;
        for (int x = 0; x < p->d; x++) dot += q_row[x] * k[((long)j * p->hk + hkv) * p->d + x];
        dot *= p->scale;
        s[j] = p->softcap > 0 ? p->softcap * tanh(dot / p->softcap) : dot;
        mx = fmax(mx, s[j]);
    }
    for (int x = 0; x < p->dv; x++) out[x] = 0;
    if (mx == -INFINITY) return free(s), -INFINITY;
    for (int j = 0; j < sk; j++) {
        if (s[j] == -INFINITY) continue;
        double e = exp(s[j] - mx);
        sum += e;
        for (int x = 0; x < p->dv; x++) out[x] += e * v[((long)j * p->hk + hkv) * p->dv + x];
    }
    for (int x = 0; x < p->dv; x++) out[x] /= sum;
    free(s);
    return mx + log(sum);
}
