/* harness_route.h : topk_route and moe_align_block_size cases, shared by the emulator
 * (tests/emu/test_emu_route.c) and the GPU tests (tests/gpu/gpu_test.c). Same contract as
 * harness.h: fresh random inputs, poisoned outputs, the public API, every element checked
 * against the fp64 reference (tests/ref/ref_route.c). */
#ifndef AOT_HARNESS_ROUTE_H
#define AOT_HARNESS_ROUTE_H

#include "harness.h"

typedef struct {
    int tokens, experts, k;
    aiter_aot_route_scoring scoring;
    aiter_aot_dtype dtype;
    int bias;                 /* 1: a correction bias; 2: one near 8 for every expert (DeepSeek-V4's) */
    int n_group, topk_group;
    int renormalize;
    float scale;
    int hash;                 /* 1: hash routing; 2: and ids outside the table / entries outside the experts */
    int ids_int64;            /* topk_ids and the hash tables as int64 */
    int special;              /* 1: NaN and -inf logits; 2: equal logits (ties) and repeated bias values;
                               * 3: +inf logits in some rows; 4: logits spread over +-40;
                               * 5: signalling-NaN bit patterns in some rows */
    int extra_stride;         /* row stride = experts + extra_stride */
    int gating_offset;        /* gating pointer moved on by this many elements (misaligned runs) */
    int bias_offset;          /* bias pointer moved on by this many floats */
} route_case;

typedef struct {
    int tokens, k, experts, block_size;
    int mapped;               /* 1: an expert_map with -1 for about half the experts */
    int skewed;               /* 1: few experts take most pairs; some ids outside [0, experts) */
} align_case;

void harness_route(const harness_mem *m, const route_case *c, uint64_t seed, harness_tally *t);
void harness_align(const harness_mem *m, const align_case *c, uint64_t seed, harness_tally *t);
void harness_route_bad_args(const harness_mem *m, harness_tally *t);
/* The GPU list: DeepSeek-V3, DeepSeek-V4-style (with and without hash routing) and Llama-4-style
 * routers at 1 .. 65536 tokens, edge cases, the align layout; --quick takes a subset. */
void harness_route_gpu(const harness_mem *m, harness_tally *t, int quick, uint64_t *seed);

#endif
