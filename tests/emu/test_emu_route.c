/* test_emu_route.c : the routers' cases (tests/harness/harness_route.c) on the host emulator, at
 * the wave size this binary was built for (tests/emu_route_w32, tests/emu_route_w64). Every
 * kernel of the wave's table (experts per lane 1..32 at wave 32, 1..16 at 64; a kernel no case
 * runs fails), every scoring and dtype, the group edge cases, hash routing with ids outside the
 * table, ties, NaN and -inf, and the align layout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "emu_unlaunched.h"
#include "harness_route.h"

static void *emu_mem_alloc(size_t n) { return emu_alloc(n ? n : 1); }
static int copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return 0; }
static int no_sync(void) { return 0; }

#define F32 AITER_AOT_DTYPE_F32
#define F16 AITER_AOT_DTYPE_F16
#define BF16 AITER_AOT_DTYPE_BF16
#define SOFTMAX AITER_AOT_ROUTE_SOFTMAX
#define SIGMOID AITER_AOT_ROUTE_SIGMOID
#define SPLUS AITER_AOT_ROUTE_SQRT_SOFTPLUS

int main(int argc, char **argv)
{
    harness_mem m = {emu_mem_alloc, emu_free, copy, copy, no_sync, NULL};
    harness_tally t = {0, 0, argc > 1 && strcmp(argv[1], "-v") == 0};
    uint64_t seed = 3800;
    /* tokens, experts, k, scoring, dtype, bias, n_group, topk_group, renorm, scale, hash, i64, special,
     * extra stride, gating offset, bias offset */
    route_case rc[] = {
        /* DeepSeek-V3/R1: 256 experts, 8 groups, 4 kept, k 8, biased sigmoid, x2.5 */
        {33, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {17, 256, 8, SIGMOID, F32, 1, 8, 4, 1, 2.5f, 0, 1, 0, 0, 0, 0},
        {9, 256, 8, SIGMOID, F16, 1, 8, 4, 1, 2.5f, 0, 0, 1, 0, 0, 0},
        {12, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 2, 0, 0, 0},
        /* 6 groups of 32: at wave 32 lanes 24..31 hold no experts in the 16-byte-load path */
        {33, 192, 8, SIGMOID, BF16, 1, 6, 3, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        /* DeepSeek-V2-style: softmax groups without a bias (group score: the max) */
        {21, 160, 6, SOFTMAX, BF16, 0, 8, 3, 0, 1.0f, 0, 0, 0, 0, 0, 0},
        {13, 64, 6, SOFTMAX, F32, 0, 8, 3, 1, 16.0f, 0, 0, 2, 0, 0, 0},
        /* DeepSeek-V4-style sqrt-softplus: 384 experts, k 6, x1.5, bias near 8; hash routing */
        {19, 384, 6, SPLUS, BF16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 0, 0},
        {11, 384, 6, SPLUS, F32, 2, 0, 0, 1, 1.5f, 0, 1, 1, 0, 0, 0},
        {23, 384, 6, SPLUS, BF16, 0, 0, 0, 1, 1.5f, 1, 0, 0, 0, 0, 0},
        {29, 384, 6, SPLUS, F16, 0, 0, 0, 1, 1.5f, 2, 1, 0, 0, 0, 0},
        {15, 256, 8, SOFTMAX, F32, 0, 0, 0, 1, 1.0f, 2, 0, 1, 0, 0, 0}, /* hash with softmax: row statistics */
        {7, 128, 4, SIGMOID, BF16, 0, 0, 0, 0, 1.0f, 1, 0, 0, 0, 0, 0},
        /* Llama-4-style sigmoid top-1, no renormalization */
        {31, 128, 1, SIGMOID, BF16, 0, 0, 0, 0, 1.0f, 0, 0, 0, 0, 0, 0},
        {31, 16, 1, SIGMOID, F32, 0, 0, 0, 0, 1.0f, 0, 0, 1, 0, 0, 0},
        /* group edge cases: one expert a group (its top-2 sum is that one), every group kept,
         * k equal to the kept experts, one group kept, 32 groups */
        {10, 32, 4, SIGMOID, F32, 1, 32, 5, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {10, 64, 8, SIGMOID, BF16, 1, 4, 4, 1, 2.0f, 0, 0, 0, 0, 0, 0},
        {10, 64, 16, SIGMOID, F16, 1, 8, 2, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {10, 96, 12, SPLUS, F32, 1, 8, 1, 0, 1.0f, 0, 0, 0, 0, 0, 0},
        {10, 1024, 8, SIGMOID, BF16, 1, 32, 4, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {10, 512, 8, SOFTMAX, F32, 1, 16, 4, 1, 1.0f, 0, 0, 2, 0, 0, 0},
        /* every experts-per-lane variant at both waves, odd shapes, k up to 32 */
        {5, 1, 1, SOFTMAX, F32, 0, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {9, 7, 3, SIGMOID, F16, 1, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {37, 40, 5, SPLUS, BF16, 1, 0, 0, 0, 3.0f, 0, 0, 0, 0, 0, 0},
        {3, 100, 32, SOFTMAX, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {6, 200, 10, SIGMOID, F32, 0, 0, 0, 1, 1.0f, 0, 1, 0, 0, 0, 0},
        {4, 700, 8, SPLUS, F16, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {4, 1000, 32, SIGMOID, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {2, 1024, 8, SOFTMAX, F32, 0, 0, 0, 0, 1.0f, 0, 0, 2, 0, 0, 0},
        /* +inf logits (softmax: the +inf experts share 1; sigmoid: 1), logits over +-40, strided
         * rows whose gaps hold NaN */
        {14, 64, 4, SOFTMAX, F32, 0, 0, 0, 0, 1.0f, 0, 0, 3, 0, 0, 0},
        {14, 64, 4, SOFTMAX, BF16, 1, 4, 2, 1, 1.0f, 0, 0, 3, 0, 0, 0},
        {15, 256, 8, SOFTMAX, F16, 0, 0, 0, 1, 1.0f, 1, 0, 3, 0, 0, 0},
        {14, 96, 6, SIGMOID, F32, 1, 0, 0, 1, 1.0f, 0, 0, 3, 0, 0, 0},
        {21, 384, 6, SPLUS, F32, 1, 0, 0, 1, 1.5f, 0, 0, 4, 0, 0, 0},
        {21, 256, 8, SIGMOID, F32, 1, 8, 4, 1, 2.5f, 0, 1, 4, 0, 0, 0},
        {11, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 0, 5, 0, 0},
        {11, 384, 6, SPLUS, F32, 0, 0, 0, 1, 1.5f, 1, 0, 4, 3, 0, 0},
        /* more rows than a block: several blocks, the last partial */
        {301, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {150, 384, 6, SPLUS, BF16, 0, 0, 0, 1, 1.5f, 1, 0, 0, 0, 0, 0},
        /* the kernels no shape above reaches: strided rows of 49, 99 and 250 experts (2, 4, 8 a
         * lane at wave 32; 1, 2, 4 at 64), groups off whole lanes (24 experts in groups of 3, 48
         * of 6, 480 of 60, 960 of 120), 768 ungrouped experts (12 a lane at wave 64), and the
         * rows layout's 16 lanes a row (320 experts) */
        {13, 49, 4, SIGMOID, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {13, 99, 6, SOFTMAX, F16, 0, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {13, 250, 8, SPLUS, F32, 1, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {11, 24, 4, SIGMOID, F32, 1, 8, 4, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {11, 48, 6, SIGMOID, BF16, 1, 8, 3, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {7, 480, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {5, 960, 8, SOFTMAX, F16, 0, 8, 3, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {7, 768, 8, SIGMOID, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 0, 0, 0, 0},
        {8197, 320, 6, SIGMOID, BF16, 1, 0, 0, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        /* ungrouped rows in the lane-groups layout (12 a lane at wave 32, 6 at 64; 6 for 192
         * experts at 32), and the strided layout where the runs do not load whole: gating moved
         * by 1, 2 or 4 elements, odd row strides, bias moved by 1 or 2 floats */
        {19, 384, 6, SPLUS, F16, 2, 0, 0, 1, 1.5f, 0, 0, 1, 0, 0, 0},
        {19, 384, 6, SPLUS, F16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 1, 0},
        {19, 384, 6, SPLUS, BF16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 4, 0},
        {19, 384, 6, SPLUS, F32, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 2, 0},
        {19, 384, 6, SPLUS, F32, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 1, 0},
        {19, 384, 6, SPLUS, BF16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 1, 0, 0},
        {19, 384, 6, SPLUS, BF16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 4, 0, 0},
        {19, 384, 6, SPLUS, F32, 1, 0, 0, 1, 1.5f, 0, 0, 0, 0, 0, 1},
        {19, 384, 6, SPLUS, F16, 1, 0, 0, 1, 1.5f, 0, 0, 0, 0, 0, 2},
        {19, 384, 8, SOFTMAX, F16, 0, 0, 0, 1, 1.0f, 0, 0, 3, 0, 0, 0},
        {19, 384, 8, SOFTMAX, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {19, 384, 8, SIGMOID, F32, 1, 0, 0, 1, 1.0f, 0, 0, 2, 0, 0, 0},
        {19, 384, 32, SIGMOID, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {17, 192, 8, SIGMOID, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {17, 192, 8, SIGMOID, F16, 1, 0, 0, 1, 1.0f, 0, 0, 2, 0, 0, 0},
        {17, 192, 8, SOFTMAX, F32, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {9, 1, 1, SIGMOID, F32, 1, 0, 0, 0, 1.0f, 0, 0, 0, 0, 0, 0},
        {9, 1, 1, SPLUS, F32, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {9, 48, 6, SOFTMAX, F16, 0, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {9, 48, 6, SOFTMAX, F32, 0, 0, 0, 1, 1.0f, 0, 0, 3, 0, 0, 0},
        {9, 48, 32, SIGMOID, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {5, 1024, 8, SIGMOID, BF16, 1, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {5, 1024, 32, SOFTMAX, F16, 1, 0, 0, 1, 1.0f, 0, 0, 2, 0, 0, 0},
        {5, 1024, 8, SPLUS, F32, 2, 0, 0, 1, 1.0f, 0, 0, 4, 0, 0, 0},
        {7, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 0, 0, 4, 1},
        {7, 256, 8, SIGMOID, F16, 1, 8, 4, 1, 2.5f, 0, 0, 1, 0, 1, 0},
        {7, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 1, 2, 0, 0},
        {7, 64, 8, SIGMOID, F32, 1, 32, 4, 1, 2.5f, 0, 0, 1, 0, 0, 0},
        {19, 384, 6, SPLUS, BF16, 2, 0, 0, 1, 1.5f, 0, 0, 5, 0, 0, 0},
        {19, 384, 6, SPLUS, F16, 2, 0, 0, 1, 1.5f, 0, 0, 5, 0, 0, 0},
        {19, 384, 6, SPLUS, F32, 2, 0, 0, 1, 1.5f, 0, 0, 5, 0, 0, 0},
        {19, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 5, 0, 0, 0},
        {19, 384, 6, SPLUS, BF16, 2, 0, 0, 1, 1.5f, 0, 0, 5, 1, 0, 0},
        /* the rows layout (from 8192 tokens): grouped and not, every dtype, rows of exactly
         * VPT L experts and fewer, ties, NaN, signalling NaN with an extra stride, +inf, a
         * partial last wave */
        {8197, 256, 8, SIGMOID, BF16, 1, 8, 4, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {8197, 256, 8, SIGMOID, F32, 1, 8, 4, 1, 2.5f, 0, 1, 2, 0, 0, 0},
        {8197, 256, 8, SIGMOID, F16, 1, 8, 4, 1, 2.5f, 0, 0, 5, 4, 0, 0},
        {8197, 192, 8, SIGMOID, BF16, 1, 6, 3, 1, 2.5f, 0, 0, 1, 0, 0, 0},
        {8197, 384, 6, SPLUS, BF16, 2, 0, 0, 1, 1.5f, 0, 0, 0, 0, 0, 0},
        {8197, 128, 1, SIGMOID, F32, 0, 0, 0, 0, 1.0f, 0, 0, 1, 0, 0, 0},
        {8197, 160, 6, SOFTMAX, F16, 1, 0, 0, 1, 1.0f, 0, 0, 3, 0, 0, 0},
        {8197, 40, 5, SPLUS, F32, 0, 0, 0, 0, 3.0f, 0, 1, 2, 0, 0, 0},
        /* the select layout (from 8192 tokens, rows of 256 and 384 experts; 128 take the rows
         * layout): groups of two lanes, softmax groups, ties (rows past its list take the
         * rounds), NaN, wide logits */
        {8197, 256, 8, SIGMOID, BF16, 1, 4, 2, 1, 2.5f, 0, 0, 0, 0, 0, 0},
        {8197, 256, 8, SOFTMAX, F16, 0, 8, 3, 1, 1.0f, 0, 0, 1, 0, 0, 0},
        {8197, 384, 6, SPLUS, F16, 0, 0, 0, 1, 1.5f, 0, 1, 2, 0, 0, 0},
        {8197, 384, 6, SPLUS, F32, 1, 0, 0, 1, 1.5f, 0, 0, 4, 0, 0, 0},
        {8197, 128, 1, SIGMOID, BF16, 1, 0, 0, 0, 1.0f, 0, 0, 2, 0, 0, 0},
        {8197, 128, 4, SIGMOID, F16, 0, 0, 0, 1, 1.0f, 0, 0, 1, 0, 0, 0}};
    for (size_t i = 0; i < sizeof rc / sizeof rc[0]; i++) harness_route(&m, &rc[i], seed++, &t);

    align_case ac[] = {
        {1, 1, 8, 16, 0, 0},   {7, 2, 64, 16, 0, 0},  {128, 8, 256, 64, 0, 0}, {130, 8, 256, 16, 1, 0},
        {100, 6, 384, 128, 0, 1}, {65, 8, 1024, 32, 1, 1}, {200, 4, 160, 1, 0, 0}, {3, 8, 8, 256, 1, 0},
        {257, 6, 384, 16, 1, 1}};
    for (size_t i = 0; i < sizeof ac / sizeof ac[0]; i++) harness_align(&m, &ac[i], seed++, &t);
    harness_route_bad_args(&m, &t);
    report_unlaunched(&t, 1);
    return harness_finish(&t);
}
