/* mma_probe.h : the argument struct of the matrix-fragment probe kernels (mma_probe.hip):
 * one wave computes D = C + A * B with the portability layer's aot_mma_* for one shape.
 * Matrices are row-major: A [M][K] and B [K][N] as 16-bit patterns, C and D [M][N] fp32. */
#ifndef AOT_MMA_PROBE_H
#define AOT_MMA_PROBE_H

#include <stdint.h>

typedef struct {
    const uint16_t *a, *b;
    const float *c;
    float *d;                   /* [M][N], then one float: 0 when the lane-group maps agree */
    int32_t f16, reserved; /* f16 = 1: fp16 inputs, else bf16 */
} aot_mma_probe_args;

#endif
