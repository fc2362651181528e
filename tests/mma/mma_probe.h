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
    float *d;                   /* [M][N], then two floats: 0 when the row maps of C agree,
                                 * 0 when the fragment loads from a swizzled tile agree with
                                 * the maps (else 1 + the first failing lane) */
    int32_t f16, reserved; /* f16 = 1: fp16 inputs, else bf16 */
    const uint16_t *tile;       /* [64][64] values for the fragment-load check */
} aot_mma_probe_args;

/* The warp-group product probe (mma_probe_wg, 4 waves, where the shape is m16n8k16): X [64][128]
 * and Y [128][128] as 16-bit patterns; d gets, one after the other,
 *   X * Y[0:64]^T    [64][64]   A and B ("cols") from tiles       (aot_wg_mma_ss)
 *   X * Y            [64][128]  A from fragments, B "rows"         (aot_wg_mma_rs, B_ROWS)
 *   X * Y[64:128]^T  [64][64]   A from fragments, B "cols" from 64 (aot_wg_mma_rs) */
#define AOT_WG_PROBE_K 128
#define AOT_WG_PROBE_OUT (64 * 64 + 64 * 128 + 64 * 64)

typedef struct {
    const uint16_t *x, *y;
    float *d;
    int32_t f16, reserved;
} aot_wg_probe_args;

/* The cluster probe (cluster_probe, where the layer has AOT_CLUSTERS): block b, rank r of a
 * cluster of `cluster` blocks of `threads` threads, writes out[b][t] = S(r + 1)[t] +
 * S(r - 1)[(t + 1) % threads] (ranks modulo the cluster), where S(q)[t] = 1000 q + t is what
 * rank q stored in its shared memory before the cluster barrier. */
typedef struct {
    int32_t *out;
    int32_t threads, cluster;
} aot_cluster_probe_args;

/* The race probe (race_probe, the emulator only): 2 waves; out[0] gets how many of wave 0's
 * 16 reads saw wave 1's unsynchronised store. */
typedef struct {
    int32_t *out;
} aot_race_probe_args;

/* The copy probe (copy_probe, the emulator only): out[0..3] as it describes, from src[0] and
 * src[4]. */
typedef struct {
    const uint32_t *src;
    uint32_t *out;
} aot_copy_probe_args;

/* The pipeline probe (pipeline_probe, where the layer has AOT_PIPELINES): a cluster of 2 blocks
 * of 64 threads. Thread 0 of block r stores {100 r + i} into the other block's shared memory
 * (aot_store_remote, perhaps before that block expects it), waits for the other's 4 values and
 * writes them to out[4 r + i]; then copies the box {64, 2, 2} at (0, 2, 0) of `map` (the
 * runtime's description of a {64, 3, 2} tensor, so its row 3 lies outside) into a 4-row tile
 * that both waves, after a named barrier, write to tile_out[256 r + i] as it lies (aot_swz).
 * deadlock = 1: thread 0 then waits for a phase nothing completes, which the emulator must
 * report instead of hanging. */
typedef struct {
    __attribute__((aligned(64))) uint64_t map[16];
    int32_t *out;
    uint16_t *tile_out;
    int32_t deadlock, reserved;
} aot_pipeline_probe_args;

#endif
