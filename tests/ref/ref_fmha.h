/* ref_fmha.h : fp64 reference of the FMHA varlen forward (runtime/include/aiter_aot_fmha.h,
 * docs/semantics.md), never from a kernel. */
#ifndef AOT_REF_FMHA_H
#define AOT_REF_FMHA_H

#include <stdint.h>

typedef struct {
    int hq, hk, d, dv, causal, window_left, window_right;
    double scale, softcap;
} ref_fmha_params;

/* One query row: q_row [d] of head h at index i of a sequence with sq queries and sk keys whose
 * keys are k [sk][hk][d], v [sk][hk][dv] (rows of the whole tensors, pointing at the sequence's
 * first key). Writes out [dv] and returns the lse (-inf when no key is visible; out is then 0). */
double ref_fmha_row(const ref_fmha_params *p, const double *q_row, int h, int i, int sq, int sk, const double *k,
                    const double *v, double *out);

#endif
