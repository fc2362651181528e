/* mma_case.h : random cases for the matrix-fragment probes and their fp64 check, shared by the
 * emulator test (test_mma.c) and the GPU test (tests/gpu). */
#ifndef AOT_MMA_CASE_H
#define AOT_MMA_CASE_H

#include <stdint.h>

typedef struct {
    const char *name; /* the probe kernel is mma_probe_<name> */
    int m, n, k;
} mma_shape;

/* Draws A, B (N(0,1) rounded to bf16 or fp16) and C (N(0,1) fp32); poisons D. Sizes: a m*k,
 * b k*n, c and d m*n elements. */
void mma_case_inputs(const mma_shape *s, int f16, uint64_t seed, uint16_t *a, uint16_t *b, float *c, float *d);

/* The largest |d - ref| over the matrix, each divided by the sum of the magnitudes that made
 * the element (|c| + sum |a*b|); NaN (unwritten) counts as infinite. */
double mma_case_error(const mma_shape *s, int f16, const uint16_t *a, const uint16_t *b, const float *c, const float *d);

/* The largest |d1 - d2| over the matrix, each divided by the same magnitudes. */
double mma_case_distance(const mma_shape *s, int f16, const uint16_t *a, const uint16_t *b, const float *c,
                         const float *d1, const float *d2);

/* The warp-group probe (mma_probe.h): X and Y drawn N(0,1) and rounded, D poisoned; then the
 * largest |d - fp64| over its three products, each divided by the sum of the magnitudes that
 * made the element (NaN counts as infinite). */
void mma_wg_inputs(int f16, uint64_t seed, uint16_t *x, uint16_t *y, float *d);
double mma_wg_error(int f16, const uint16_t *x, const uint16_t *y, const float *d);

/* The cluster probe (mma_probe.h), run in clusters of each of these sizes, two clusters a time;
 * its output of `grid` blocks of `threads` threads checked: -1 when every value is right, else
 * the index of the first wrong one. */
#define MMA_CLUSTER_SIZES {1, 2, 8}
int mma_cluster_first_wrong(const int32_t *out, unsigned grid, unsigned threads, unsigned cluster);

#endif
