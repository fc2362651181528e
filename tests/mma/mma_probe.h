/* mma_probe.h : the argument struct of the matrix-fragment probe kernels (mma_probe.hip):
 * one wave computes D = C + A * B with the portability layer's aot_mma_* for one shape.
 * Matrices are row-major: A [M][K] and B [K][N] as 16-bit patterns, C and D [M][N] fp32. */
#ifndef AOT_MMA_PROBE_H
#define AOT_MMA_PROBE_H

#include <stdint.h>

#define AOT_PROBE_TILE 64 /* the fragment-load check's tile: 64 x 64 16-bit values */

typedef struct {
    const uint16_t *a, *b;
    const float *c;
    float *d;                   /* [M][N], then two floats: 0 when the lane-group maps agree,
                                 * 0 when the fragment loads from a swizzled tile agree with
                                 * the maps (else 1 + the first failing lane) */
    int32_t f16, reserved; /* f16 = 1: fp16 inputs, else bf16 */
    const uint16_t *tile;       /* [64][64] values for the fragment-load check */
} aot_mma_probe_args;

#endif
