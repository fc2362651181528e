/* fmha_kargs.h : the argument struct of the FMHA varlen forward kernels (fmha.hip), passed by
 * value: its kernarg layout is this C layout on host and device alike. */
#ifndef AOT_FMHA_KARGS_H
#define AOT_FMHA_KARGS_H

#include <stdint.h>

#include "aot_tile_map.h"

#define AOT_FMHA_WAVES 4     /* waves per block, 16 query rows each (the fragments' M) */
#define AOT_FMHA_ROWS 16     /* query rows per wave */
#define AOT_FMHA_KEYS 32     /* keys per step of the key loop */

typedef struct {
    const uint16_t *q, *k, *v;       /* bf16 or fp16 [total, heads, dim] with the row strides below */
    uint16_t *out;                   /* [total_q, hq, dv] */
    float *lse;                      /* [hq, total_q] or NULL */
    const int32_t *cu_q, *cu_k;      /* [batch + 1] */
    int64_t q_row, k_row, v_row, o_row; /* elements between consecutive tokens */
    int32_t batch, hq, hk, total_q;
    int32_t q_tiles;                 /* blocks per (sequence, head): ceil(max_seqlen_q / block rows) */
    int32_t causal, window_left, window_right; /* -1: unbounded */
    int32_t f16;
    int32_t pairs;                   /* fmha_ws_*: query tiles dealt in pairs (j, n - 1 - j) of a sequence's n */
    float scale, softcap;            /* softcap 0: none */
} aot_fmha_kargs;

/* The warp-specialized kernels (fmha_ws_*; sm_90a, and the emulator at wave 32): persistent
 * blocks of AOT_FMHA_WS_THREADS(groups) threads take tiles of AOT_FMHA_WS_ROWS(groups) query
 * rows of one sequence and head in turn (a.q_tiles counts them a sequence and head; `groups`
 * comes from the variant list); a block's first warp group copies Q, K and V tiles by tensor
 * copies, K and V through a ring of AOT_FMHA_WS_STAGES stages, and each of the other `groups`
 * computes 64 of the rows. The maps view
 * q, k and v as {d, heads, tokens} (strides: d and the row stride, in bytes) in boxes of
 * {64, 1, 64} (q) or {64, 1, keys} (k, v: keys from the variant list). */
#define AOT_FMHA_WS_ROWS(groups) (64 * (groups))
#define AOT_FMHA_WS_THREADS(groups) (128 * (1 + (groups)))
#define AOT_FMHA_WS_STAGES 2
/* Units of work a sequence and head gives the persistent blocks: a query tile each, or with
 * pairs a pair of tiles each (fmha.hip: ws_units). The host sizes the grid by the same count. */
#define AOT_FMHA_WS_UNITS_PER_HEAD(q_tiles, pairs) ((pairs) ? ((q_tiles) + 1) / 2 : (q_tiles))
/* Dynamic shared memory of a variant: the Q tile, the ring, its barriers and the alignment. */
#define AOT_FMHA_WS_SHARED(d, dv, keys, groups)                                                          \
    (1024 + 2 * (AOT_FMHA_WS_ROWS(groups) * (d) + AOT_FMHA_WS_STAGES * (keys) * ((d) + (dv))) +           \
     16 * (2 * (groups) + 5 * AOT_FMHA_WS_STAGES))

typedef struct {
    aot_tile_map q, k, v;
    aot_fmha_kargs a;
} aot_fmha_ws_kargs;

#endif
