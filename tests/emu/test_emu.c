/* test_emu.c : every op's cases on the host emulator, at the wave size this binary was built
 * for (tests/emu_w32, tests/emu_w64). Shapes are smaller than on the GPU (the emulator runs
 * each lane as a fiber) but cover every kernel variant and every special case.
 *   emu_wNN [-v] [--quick]
 * --quick (make check) runs every op and family of kernel variants, the special values and
 * every bad-argument case, leaving out the large token counts that take most of the time
 * (make check-long runs all cases, and prints the kernels of the emulator's table none ran). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "emu_unlaunched.h"
#include "harness.h"

static void *emu_mem_alloc(size_t n) { return emu_alloc(n ? n : 1); }
static int copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return 0; }
static int no_sync(void) { return 0; }

static uint64_t seed = 1000;

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* A case is long when it runs hundreds of rows through the emulator's fibers (seconds each):
 * --quick keeps the first of them, for the many-rows variants. */
static int skip_long(int quick, int tokens, int *kept)
{
    if (!quick || tokens < 240) return 0;
    if (*kept) return 1;
    *kept = 1;
    return 0;
}

static void run_topk(const harness_mem *m, int quick, harness_tally *t)
{
    static const int experts[] = {8, 64, 160, 256, 512, 1024};
    static const int ks[] = {1, 2, 6, 8};
    for (size_t e = 0; e < COUNT(experts); e++)
        for (size_t k = 0; k < COUNT(ks); k++) {
            if (quick && k != e % COUNT(ks)) continue; /* every expert count, every k once */
            topk_case c = {experts[e] >= 512 ? 7 : 33, experts[e], ks[k], (int)(k & 1),
                           (aiter_aot_dtype)((e + k) % 3), 0, 0};
            harness_topk(m, &c, seed++, t);
        }
    static const topk_case specials[] = {
        {301, 256, 8, 1, AITER_AOT_DTYPE_BF16, 0, 0},
        {9, 64, 8, 0, AITER_AOT_DTYPE_F32, 1, 0},   {9, 64, 8, 1, AITER_AOT_DTYPE_BF16, 1, 0},
        {12, 40, 4, 1, AITER_AOT_DTYPE_F16, 1, 3},  {16, 128, 8, 0, AITER_AOT_DTYPE_F32, 2, 0},
        {5, 1, 1, 0, AITER_AOT_DTYPE_F32, 0, 0},    {3, 32, 32, 1, AITER_AOT_DTYPE_BF16, 0, 5},
        {1, 384, 8, 1, AITER_AOT_DTYPE_BF16, 0, 0}, {2, 1000, 32, 0, AITER_AOT_DTYPE_F16, 0, 24},
        {12, 256, 8, 1, AITER_AOT_DTYPE_BF16, 2, 0}, {12, 128, 6, 0, AITER_AOT_DTYPE_F16, 2, 0},
        {10, 256, 8, 0, AITER_AOT_DTYPE_F16, 1, 0}, {6, 256, 8, 1, AITER_AOT_DTYPE_BF16, 3, 0},
        {6, 1024, 32, 0, AITER_AOT_DTYPE_F16, 3, 0}, /* k = experts: a NaN row's NaN is chosen */
        {9, 8, 8, 1, AITER_AOT_DTYPE_BF16, 1, 0},   {9, 8, 8, 1, AITER_AOT_DTYPE_F16, 1, 0},
        {33, 256, 8, 1, AITER_AOT_DTYPE_BF16, 4, 0}, {33, 128, 6, 0, AITER_AOT_DTYPE_F16, 4, 0},
        {33, 64, 8, 1, AITER_AOT_DTYPE_F32, 4, 0},   {33, 256, 8, 1, AITER_AOT_DTYPE_F32, 5, 0},
        {33, 160, 6, 0, AITER_AOT_DTYPE_F32, 5, 2}, {12, 1024, 32, 1, AITER_AOT_DTYPE_F32, 3, 0},
        {12, 256, 8, 0, AITER_AOT_DTYPE_F32, 2, 0}, {12, 256, 8, 1, AITER_AOT_DTYPE_F32, 1, 0},
        /* (--quick runs the first of the long cases below: 16-bit _rows4 at VPT = 4 or 8)
         * more tokens than the emulated device holds a wave per row for (4 multiprocessors; 4
         * times as many for fp32): four rows a wave (_rows4, _rows4_f32), the last wave partial */
        {301, 64, 8, 1, AITER_AOT_DTYPE_BF16, 1, 0},
        {302, 128, 6, 0, AITER_AOT_DTYPE_F16, 2, 0}, {1031, 32, 8, 1, AITER_AOT_DTYPE_F32, 5, 0},
        {300, 160, 2, 0, AITER_AOT_DTYPE_BF16, 3, 3}, {1030, 64, 8, 0, AITER_AOT_DTYPE_F32, 0, 0},
        {301, 8, 8, 1, AITER_AOT_DTYPE_F16, 1, 0},  {300, 40, 4, 1, AITER_AOT_DTYPE_F16, 4, 0},
        /* lists in shared memory (_rows4 at VPT = 8): fp32 rows of 256 experts at wave 32, 16-bit
         * rows of 512 at wave 64; monotonic rows, whose k largest lie in one lane, which spends
         * its list */
        {1029, 256, 8, 1, AITER_AOT_DTYPE_F32, 1, 0}, {301, 512, 8, 0, AITER_AOT_DTYPE_BF16, 2, 0},
        {301, 256, 8, 1, AITER_AOT_DTYPE_BF16, 3, 0},
        /* the variants no row above reaches at one wave or the other: rows that are not full
         * (100, 200, 400, 24, 48 experts) and full ones (32 at wave 32, 128, 512), a wave a row
         * and _rows4 for 16-bit and fp32 logits */
        {33, 100, 6, 1, AITER_AOT_DTYPE_F16, 0, 0},    {301, 100, 6, 0, AITER_AOT_DTYPE_BF16, 0, 0},
        {1031, 100, 4, 1, AITER_AOT_DTYPE_F32, 0, 0},  {1031, 128, 8, 0, AITER_AOT_DTYPE_F32, 0, 0},
        {1031, 200, 8, 1, AITER_AOT_DTYPE_F32, 0, 0},  {301, 400, 8, 1, AITER_AOT_DTYPE_BF16, 0, 0},
        {1031, 400, 8, 0, AITER_AOT_DTYPE_F32, 0, 0},  {1031, 512, 8, 1, AITER_AOT_DTYPE_F32, 0, 0},
        {301, 32, 4, 1, AITER_AOT_DTYPE_F16, 0, 0},    {1031, 24, 4, 0, AITER_AOT_DTYPE_F32, 0, 0},
        {1031, 48, 6, 1, AITER_AOT_DTYPE_F32, 0, 0}};
    int kept = 0;
    for (size_t i = 0; i < COUNT(specials); i++)
        if (!skip_long(quick, specials[i].tokens, &kept)) harness_topk(m, &specials[i], seed++, t);
    harness_bad_args(m, t);
}

static void run_sort(const harness_mem *m, int quick, harness_tally *t)
{
    static const int bss[] = {16, 32, 64, 128};
    static const sort_case sorts[] = {
        {1, 8, 1, 32, 0, 0, 0},    {7, 64, 2, 16, 0, 0, 0},    {128, 64, 6, 32, 0, 1, 64},
        {130, 256, 8, 64, 1, 0, 0}, {100, 384, 8, 128, 0, 0, 4096}, {65, 1024, 8, 32, 1, 1, 0},
        {200, 160, 8, 16, 0, 1, 0}, {3, 8, 8, 1, 0, 0, 0}};
    for (size_t i = 0; i < COUNT(sorts); i++) {
        if (quick && sorts[i].experts > 256) continue; /* seconds each; bs = 128 comes below */
        harness_sort(m, &sorts[i], seed++, t);
    }
    for (size_t b = 0; b < COUNT(bss); b++) {
        if (quick && b + 1 < COUNT(bss)) continue;
        sort_case c = {96, 128, 6, bss[b], (int)(b & 1), (int)(b >> 1), 0};
        harness_sort(m, &c, seed++, t);
    }
}

/* --quick: short cases (C = 4096 once, for the cluster kernel), but fused_post_pre at 260 tokens (a second, partial projection block
 * at either wave size, in about 2 s); 16 splits of the fused case take seconds, and 2 splits
 * show the same surplus handling. */
static int quick_mhc(const mhc_case *c)
{
    if (c->norm && c->hidden > 2048) return 0; /* norm's first pass over C = 2304 or 4096: 10-20 s */
    if (c->op == MHC_FUSED) return c->tokens == 260 || (c->tokens < 240 && c->splits != 16);
    return c->tokens < 240;
}

/* The delayed pre (DeepSeek-V4.1): with and without the previous pre mix and the norm, at
 * 1, 4, 16 and 128+ tokens and hidden sizes 256, 512 and 1024, each op at each; the first
 * layer's projection inputs; aux; fused_post_pre_delayed in one kernel (up to 16 tokens) and
 * as post then the projection (17 and more); from 1024 tokens fn's terms made first. The
 * emulator's 4 multiprocessors give 16 splits at one tile: more than the one kernel's chunks
 * at 256 and 512 (capped), and more than the one-stream projection's at 256 (zeros). At wave
 * 32 (the sm_90a kernel set) up to 64 tokens without norm or x take the decode kernels
 * instead; wave 64 runs the kernels above.
 * --quick runs the first list (each option, token regime and the uncapped 1024 once: about
 * 23 s a build), the rest adds 25-60 s a build. */
static void run_mhc_delayed(const harness_mem *m, int quick, harness_tally *t)
{
    enum { NP = MHC_NO_PRE_MIX, AUX = MHC_AUX, XC = MHC_X_C, X4 = MHC_X_4C, W = MHC_WIDE };
    const int PD = MHC_PRE_DELAYED, FD = MHC_FUSED_DELAYED;
    const mhc_case short_cases[] = {
        {PD, 1, 256, 0, 0, 0, 0},     {PD, 1, 1024, 1, 0, 0, NP | W}, {PD, 4, 512, 1, 0, 0, W},
        {PD, 16, 512, 1, 0, 0, NP},   {PD, 130, 512, 0, 0, 0, NP},  {PD, 5, 256, 1, 0, 0, XC | W},
        {PD, 3, 512, 0, 0, 0, X4 | W}, {PD, 2, 256, 0, 0, 0, XC | NP},
        {FD, 1, 256, 0, 0, 0, NP},    {FD, 4, 1024, 0, 0, 0, W},   {FD, 4, 256, 1, 0, 0, NP | AUX | W},
        {FD, 16, 256, 1, 0, 0, NP | W}, {FD, 17, 256, 1, 0, 0, AUX | W}, {FD, 130, 256, 1, 0, 0, NP | AUX},
        /* the decode kernels at wave 32 (no norm, no x): with the previous pre mix, and without
         * (stream 0 as it is); fused: the post-mix first (aux too); 9 tokens: the squares of
         * rows 8-15 (the Gram matrix's second tile); 40 and 33: three tiles of tokens, the last
         * partial; fn only 4-byte aligned: two passes (the kernel reads fn in pairs) */
        {PD, 3, 4096, 0, 0, 0, W},    {PD, 6, 5120, 0, 0, 0, NP},  {FD, 5, 4096, 0, 0, 0, AUX},
        {FD, 9, 5120, 0, 0, 0, NP | W},   {PD, 4, 4096, 0, 0, 1, 0},   {FD, 3, 4096, 0, 0, 2, AUX},
        {PD, 40, 1024, 0, 0, 0, W},   {FD, 33, 512, 0, 0, 0, AUX | W},
        /* the one pass on clusters (wave 32, more than 64 tokens): */
        /* 11 tiles on 2 clusters: cluster 0 takes 6, its ring of 5 wraps, x's buffers swap, and
         * the slots go back a tile late; the last tile partial. 7168 (from 3 tiles a cluster): 7
         * tiles, cluster 0 takes 4 and its ring of 2 wraps, the slots going back at once */
        {FD, 170, 4096, 0, 0, 0, AUX}, {PD, 100, 7168, 0, 0, 0, W}};
    const mhc_case more_cases[] = {
        {PD, 4, 256, 0, 0, 0, NP},    {PD, 16, 1024, 0, 0, 0, W},  {PD, 128, 256, 1, 0, 0, W},
        {FD, 1, 512, 1, 0, 0, AUX | W}, {FD, 16, 512, 0, 0, 0, AUX}, {FD, 128, 512, 0, 0, 0, W},
        /* 128+ tokens at 1024, and fn's terms */
        {PD, 260, 1024, 1, 0, 0, W},  {FD, 200, 1024, 1, 0, 0, AUX}, {PD, 1030, 256, 0, 0, 0, W},
        {FD, 1024, 256, 1, 0, 0, NP | W}, {PD, 200, 4096, 0, 0, 0, 0}, {PD, 250, 5120, 0, 0, 0, NP},
        {FD, 250, 5120, 0, 0, 0, W},  {FD, 33, 4096, 0, 0, 0, NP},  {FD, 64, 7168, 0, 0, 0, AUX | W},
        /* rings of 2 wrapping: 7168 without the previous pre mix, and the post variant at 5120
         * with aux (from 27 tiles a cluster: 55 tiles, cluster 0 takes 28); the fused op at 7168
         * as post and then the one pass, and with aux (three passes); the fused op at 5120 with
         * aux below the post variant's tiles (three passes) */
        {PD, 100, 7168, 0, 0, 0, NP | W}, {FD, 870, 5120, 0, 0, 0, AUX | W}, {FD, 98, 7168, 0, 0, 0, W},
        {FD, 70, 7168, 0, 0, 0, AUX}, {FD, 300, 5120, 0, 0, 0, AUX}};
    for (size_t i = 0; i < COUNT(short_cases); i++) harness_mhc(m, &short_cases[i], seed++, t);
    for (size_t i = 0; i < COUNT(more_cases) && !quick; i++) harness_mhc(m, &more_cases[i], seed++, t);
}

static void run_mhc(const harness_mem *m, int quick, harness_tally *t)
{
    enum { W = MHC_WIDE };
    /* mHC: every kernel and variant, hidden sizes of 256 and 512 (2 and 4 projection chunks per
     * split), token counts that leave partial tiles; the emulator's device has 4
     * multiprocessors, so pre_full picks 16 splits for one tile, more than the one-stream
     * (broadcast) projection has chunks at these sizes: its surplus splits must add zeros, as
     * must those of the fused case with 16 splits. 300 tokens: more than one projection block
     * (256 tokens at wave 32, 128 at wave 64), the last one partial. A hidden size of 2304: the
     * pre kernel's threads take 2 steps of 2048 positions, the second partial. From 1024 tokens
     * pre_full makes fn's terms first (mhc_fn_terms) and the projection copies them. Beyond 16
     * tokens fused_post_pre is post and then the projection of what it stored. */
    static const mhc_case mhc[] = {
        {MHC_PRE_FULL, 1, 256, 0, 0, 0, 0},      {MHC_PRE_FULL, 5, 512, 1, 0, 0, 0},
        {MHC_PRE_FULL, 3, 256, 1, 1, 0, 0},      {MHC_PRE_FULL, 2, 512, 0, 1, 0, 0},
        {MHC_GEMM_THEN_PRE, 37, 256, 0, 0, 1, 0}, {MHC_GEMM_THEN_PRE, 4, 512, 1, 0, 3, 0},
        {MHC_GEMM_THEN_PRE, 300, 256, 0, 0, 2, 0}, {MHC_GEMM_THEN_PRE, 300, 256, 0, 1, 2, 0},
        {MHC_GEMM_THEN_PRE, 3, 2304, 1, 0, 2, 0}, {MHC_GEMM_THEN_PRE, 2, 2304, 0, 1, 1, 0},
        {MHC_POST, 3, 1280, 0, 0, 0, 0},         {MHC_FUSED, 5, 256, 0, 0, 2, 0},
        {MHC_FUSED, 16, 512, 0, 0, 1, 0},        {MHC_FUSED, 5, 256, 0, 0, 16, 0},
        {MHC_HEAD, 3, 512, 0, 0, 0, 0},          {MHC_PRE_FULL, 1030, 256, 1, 0, 0, 0},
        {MHC_PRE_FULL, 1024, 256, 0, 1, 0, 0},   {MHC_FUSED, 17, 256, 0, 0, 3, 0},
        {MHC_FUSED, 260, 256, 0, 0, 2, 0},
        /* C = 4096, 5120 and 7168 at wave 32: 5 and 7 tokens the decode kernel; 15 tiles on the
         * one pass on clusters (2 emulated at once), so cluster 0 takes 8 and its ring of 6 slots
         * wraps (5120: 4 slots); 7168 (fn's lo term in shared memory, 2 slots, from 3 tiles a
         * cluster): 7 tiles, cluster 0 takes 4, and 70 tokens (5 tiles) two passes; norm keeps
         * two passes */
        {MHC_PRE_FULL, 5, 4096, 0, 0, 0, W},     {MHC_PRE_FULL, 240, 4096, 0, 0, 0, 0},
        {MHC_PRE_FULL, 3, 4096, 1, 0, 0, 0},     {MHC_PRE_FULL, 7, 5120, 0, 0, 0, W},
        {MHC_PRE_FULL, 240, 5120, 0, 0, 0, 0},   {MHC_PRE_FULL, 100, 7168, 0, 0, 0, W},
        {MHC_PRE_FULL, 70, 7168, 0, 0, 0, 0}};
    for (size_t i = 0; i < COUNT(mhc); i++)
        if (!quick || quick_mhc(&mhc[i])) harness_mhc(m, &mhc[i], seed++, t);
    run_mhc_delayed(m, quick, t);
    harness_mhc_bad_args(m, t);
}

static void run_fmha(const harness_mem *m, harness_tally *t)
{
    /* FMHA: every head-dim variant, GQA/MQA, causal, windows, soft cap, both dtypes, q shorter
     * than k, a zero-length sequence; small enough for fibers. */
    static const fmha_case fm[] = {
        {2, 40, 30, 2, 1, 64, 64, 0, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 0},
        {3, 70, 0, 2, 2, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_F16, 1, 0, 0, 600},
        {2, 33, 40, 4, 2, 192, 128, 1, 8, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 0},
        {1, 20, 50, 2, 1, 256, 256, 0, 5, 3, 30.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 0},
        {3, 17, 9, 1, 1, 64, 64, 0, 0, 0, 5.0f, AITER_AOT_DTYPE_F16, 1, 0, 0, 0},
        {2, 30, 20, 4, 2, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 8, 0, 0},
        /* tiles of two row groups, NaN rows past the last sequence (the warp-specialized
         * kernels' last step reads them; max_seqlen_q above 512 takes d <= 128 there), and
         * total_k not given (the kernels that copy with threads) */
        {2, 150, 40, 2, 1, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 5, 0, 9, 600},
        {3, 40, 30, 2, 1, 64, 64, 0, 16, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 2, 600},
        /* fewer keys than queries, causal: whole tiles of rows that see no key */
        {2, 300, -250, 2, 1, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 7, 0, 0, 600},
        /* d = 64: tiles of three row groups (taken without a mask or right window), a left
         * window, ring positions past the two stages, keys past the last sequence */
        {2, 450, 40, 2, 1, 64, 64, 0, 200, -1, 0.0f, AITER_AOT_DTYPE_F16, 5, 0, 3, 600},
        {2, 90, 30, 2, 2, 256, 256, 0, -1, -1, 0.0f, AITER_AOT_DTYPE_F16, 5, 0, 3, 0},
        {2, 40, 30, 2, 1, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, -1, 0},
        {2, 20, 20, 2, 2, 192, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, -1, 0},
        {1, 20, 30, 2, 1, 256, 256, 0, -1, -1, 0.0f, AITER_AOT_DTYPE_F16, 1, 0, -1, 0}};
    for (size_t i = 0; i < COUNT(fm); i++) harness_fmha(m, &fm[i], seed++, t);
    harness_fmha_bad_args(m, t);
}

int main(int argc, char **argv)
{
    harness_mem m = {emu_mem_alloc, emu_free, copy, copy, no_sync, NULL};
    harness_tally t = {0, 0, 0};
    int quick = 0;
    const char *only = NULL; /* --only=topk|sort|mhc|fmha: that family's cases */
    for (int i = 1; i < argc; i++) {
        t.verbose |= strcmp(argv[i], "-v") == 0;
        quick |= strcmp(argv[i], "--quick") == 0;
        if (strncmp(argv[i], "--only=", 7) == 0) only = argv[i] + 7;
    }
#define FAMILY(name, call) if (only == NULL || strcmp(only, name) == 0) call
    FAMILY("topk", run_topk(&m, quick, &t));
    FAMILY("sort", run_sort(&m, quick, &t));
    FAMILY("mhc", run_mhc(&m, quick, &t));
    FAMILY("fmha", run_fmha(&m, &t));
#undef FAMILY
    if (!quick && only == NULL) report_unlaunched(&t, 0);
    return harness_finish(&t);
}
