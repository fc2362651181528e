/* gpu_test.c : every op's correctness cases on an NVIDIA GPU, through the public API of the
 * statically linked library (code objects from the embedded bundle). Device memory comes from
 * the CUDA driver API, taken from libcuda.so.1 with dlsym. Prints a table, then
 * "N passed, N failed"; exits non-zero on any failure.
 *   gpu_test [-v] [--quick] [--only=moe|mhc|fmha] [--mma CUBIN]   the cases (--quick: a
 *                             subset; --only: one family's; --mma: also the matrix-fragment
 *                             probes of CUBIN against the host emulator)
 * (bench/coldstart.c times the cold start.) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_driver.h"
#include "emu.h"
#include "harness.h"
#include "harness_route.h"
#include "mma_case.h"
#include "mma_probe.h"
#include "ref.h"

/* 64 threads make their first call at once: each runs its own case; modules must be loaded
 * exactly once (the runtime's own counters). */
static harness_tally thread_tally[64];
static pthread_barrier_t start_line;

static void *first_call(void *arg)
{
    int i = (int)(intptr_t)arg;
    harness_mem m = cuda_mem(NULL);
    topk_case c = {100 + i, 64 + 8 * i, 1 + i % 8, i & 1, (aiter_aot_dtype)(i % 3), 0, 0};
    cuda_use_device(0);
    pthread_barrier_wait(&start_line);
    harness_topk(&m, &c, 5000 + (uint64_t)i, &thread_tally[i]);
    return NULL;
}

static int concurrent_first_calls(harness_tally *t)
{
    pthread_t th[64];
    pthread_barrier_init(&start_line, NULL, 64);
    for (int i = 0; i < 64; i++) pthread_create(&th[i], NULL, first_call, (void *)(intptr_t)i);
    for (int i = 0; i < 64; i++) pthread_join(th[i], NULL);
    int ok = 1;
    for (int i = 0; i < 64; i++) ok &= thread_tally[i].passed == 1 && thread_tally[i].failed == 0;
    aiter_aot_stats st = {.size = sizeof st};
    aiter_aot_get_stats(&st);
    const char *mods[16];
    char target[96];
    aiter_aot_device_target(target, sizeof target);
    size_t nmod = aiter_aot_kernels("sm_90a", mods, 16);
    ok &= st.modules_loaded == nmod && st.frames_decompressed == 1 && st.device_loads == 1;
    printf("%-4s 64 threads' first calls at once: %llu modules loaded (bundle has %zu for sm_90a), "
           "%llu frame decompressed, all outputs %s\n", ok ? "ok" : "FAIL", (unsigned long long)st.modules_loaded,
           nmod, (unsigned long long)st.frames_decompressed, ok ? "correct" : "checked: see above");
    t->passed += ok, t->failed += !ok;
    return ok;
}

/* ---- matrix fragments: the real mma.sync against the emulator's and against fp64 ---- */

/* Hardware accumulates the 17 terms of an element in fp32 in an order and with an alignment
 * rounding of its own (not specified by PTX); each step loses at most about one ulp of the
 * running magnitude, 17 * 2^-23 < 2^-19 of the terms' magnitude sum. The limit is 2^-17 of
 * it, four times that; the emulator itself is exact to 2^-24 (tests/mma). */
#define MMA_HW_TOL 0x1p-17

void mma_probe_m16n8k16_emu(const void *), mma_probe_wg_emu(const void *), cluster_probe_emu(const void *);

static void *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = len > 0 ? malloc((size_t)len) : NULL;
    if (p && fread(p, 1, (size_t)len, f) != (size_t)len) free(p), p = NULL;
    fclose(f);
    *n = (size_t)len;
    return p;
}

/* d gets D, then the group-map and fragment-load checks (0 = agree). */
static int mma_on_gpu(void *fn, const uint16_t *a, const uint16_t *b, const float *c, const uint16_t *tile, float *d, int f16)
{
    const harness_mem g = cuda_mem(NULL);
    const mma_shape s = {"m16n8k16", 16, 8, 16};
    size_t na = (size_t)s.m * s.k * 2, nb = (size_t)s.k * s.n * 2, nc = (size_t)s.m * s.n * 4;
    size_t nt = AOT_PROBE_TILE * AOT_PROBE_TILE * 2;
    void *da = g.alloc(na), *db = g.alloc(nb), *dc = g.alloc(nc), *dd = g.alloc(nc + 8), *dt = g.alloc(nt);
    aot_mma_probe_args p = {da, db, dc, dd, f16, 0, dt};
    void *params[] = {&p};
    int rc = !da || !db || !dc || !dd || !dt || g.upload(da, a, na) || g.upload(db, b, nb) || g.upload(dc, c, nc) ||
             g.upload(dt, tile, nt) || cu.launch(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) || g.sync() ||
             g.download(d, dd, nc + 8);
    g.release(da), g.release(db), g.release(dc), g.release(dd), g.release(dt);
    return rc;
}

/* The warp-group products (wgmma on sm_90a) against fp64 and the emulator's generic version:
 * 128 terms an element, the limit scaled from mma.sync's 17. */
#define WG_HW_TOL (MMA_HW_TOL * 8)

static void wg_cases(void *mod, harness_tally *t)
{
    const harness_mem g = cuda_mem(NULL);
    void *fn = NULL;
    static uint16_t x[64 * AOT_WG_PROBE_K], y[AOT_WG_PROBE_K * 128];
    static float hw[AOT_WG_PROBE_OUT], emu[AOT_WG_PROBE_OUT];
    const size_t nx = sizeof x, ny = sizeof y, nd = sizeof hw;
    void *dx = g.alloc(nx), *dy = g.alloc(ny), *dd = g.alloc(nd);
    double worst_hw = 0, worst_emu = 0;
    int cases = 0, bad = cu.get_function(&fn, mod, "mma_probe_wg") || !dx || !dy || !dd;
    for (int f16 = 0; f16 < 2 && !bad; f16++)
        for (uint64_t seed = 0; seed < 10 && !bad; seed++, cases++) {
            mma_wg_inputs(f16, 5000 + seed + 100 * f16, x, y, hw);
            ref_poison(emu, nd);
            aot_wg_probe_args p = {dx, dy, dd, f16, 0}, pe = {x, y, emu, f16, 0};
            void *params[] = {&p};
            char err[256] = "";
            bad |= g.upload(dx, x, nx) || g.upload(dy, y, ny) || g.upload(dd, hw, nd) ||
                   cu.launch(fn, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL) || g.sync() || g.download(hw, dd, nd) ||
                   emu_launch(mma_probe_wg_emu, &pe, 1, 128, 0, 32, err, sizeof err);
            if (bad) break;
            double e = mma_wg_error(f16, x, y, hw), de = mma_wg_error(f16, x, y, emu);
            worst_hw = e > worst_hw ? e : worst_hw, worst_emu = de > worst_emu ? de : worst_emu;
            bad |= !(e <= WG_HW_TOL && de <= WG_HW_TOL);
        }
    g.release(dx), g.release(dy), g.release(dd);
    printf("%-4s warp-group products (aot_wg_mma_ss/rs: wgmma) bf16+f16, %d random cases: max |hw - fp64| %.3g, "
           "|emulator - fp64| %.3g of the magnitudes (limit %.3g)\n", bad ? "FAIL" : "ok", cases, worst_hw, worst_emu, WG_HW_TOL);
    t->passed += !bad, t->failed += !!bad;
}

/* The layer's clusters (cluster_probe, aot_cluster_*: barrier.cluster, mapa) on the GPU and in
 * the emulator, clusters of 1, 2, 8 blocks: every block reads its neighbours' shared memory. */
static void cluster_cases(void *mod, harness_tally *t)
{
    const harness_mem g = cuda_mem(NULL);
    void *fn = NULL;
    enum { THREADS = 64, MAX_GRID = 16 };
    static int32_t hw[MAX_GRID * THREADS], emu[MAX_GRID * THREADS];
    void *dout = g.alloc(sizeof hw);
    int bad = cu.get_function(&fn, mod, "cluster_probe") || !dout, wrong_hw = -1, wrong_emu = -1;
    static const unsigned sizes[] = MMA_CLUSTER_SIZES;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && !bad; i++) {
        const unsigned n = sizes[i], grid = 2 * n;
        ref_poison(hw, sizeof hw), ref_poison(emu, sizeof emu);
        aot_cluster_probe_args p = {dout, THREADS, (int32_t)n}, pe = {emu, THREADS, (int32_t)n};
        cu_launch_attr attr = {CU_LAUNCH_ATTR_CLUSTER_DIMENSION, {0}, {{0}}};
        attr.value.cluster.x = n, attr.value.cluster.y = 1, attr.value.cluster.z = 1;
        const cu_launch_config cfg = {{grid, 1, 1}, {THREADS, 1, 1}, 0, NULL, &attr, 1};
        void *params[] = {&p};
        char err[256] = "";
        bad |= g.upload(dout, hw, sizeof hw) || cu.launch_ex(&cfg, fn, params, NULL) || g.sync() ||
               g.download(hw, dout, sizeof hw) ||
               emu_launch_cluster(cluster_probe_emu, &pe, grid, THREADS, n, 0, 32, err, sizeof err);
        if (bad) break;
        wrong_hw = mma_cluster_first_wrong(hw, grid, THREADS, n), wrong_emu = mma_cluster_first_wrong(emu, grid, THREADS, n);
        bad |= wrong_hw >= 0 || wrong_emu >= 0;
    }
    g.release(dout);
    printf("%-4s clusters of 1, 2, 8 blocks (aot_cluster_sync, aot_cluster_map): neighbours' shared memory on the GPU "
           "and in the emulator (first wrong value: GPU %d, emulator %d; -1 none)%s\n", bad ? "FAIL" : "ok", wrong_hw,
           wrong_emu, bad && wrong_hw < 0 && wrong_emu < 0 ? " (launch failed)" : "");
    t->passed += !bad, t->failed += !!bad;
}

static void mma_cases(const char *cubin, harness_tally *t)
{
    size_t n;
    void *image = read_file(cubin, &n), *mod = NULL, *fn = NULL;
    if (!image || cu.module_load(&mod, image) || cu.get_function(&fn, mod, "mma_probe_m16n8k16")) {
        printf("FAIL mma.sync probe: cannot load mma_probe_m16n8k16 from %s\n", cubin);
        t->failed++;
        free(image);
        return;
    }
    const mma_shape s = {"m16n8k16", 16, 8, 16};
    double worst_hw = 0, worst_diff = 0;
    int cases = 0, bad = 0, loads_bad = 0;
    for (int f16 = 0; f16 < 2; f16++)
        for (uint64_t seed = 0; seed < 100; seed++, cases++) {
            uint16_t a[16 * 16], b[16 * 8], tile[AOT_PROBE_TILE * AOT_PROBE_TILE];
            float c[16 * 8], hw[16 * 8 + 2], emu[16 * 8 + 2];
            mma_case_inputs(&s, f16, 9000 + seed + 1000 * f16, a, b, c, hw);
            for (int j = 0; j < AOT_PROBE_TILE * AOT_PROBE_TILE; j++) tile[j] = (uint16_t)(j ^ seed * 0x1357); /* distinct */
            ref_poison(emu, sizeof emu);
            ref_poison(hw, sizeof hw);
            aot_mma_probe_args p = {a, b, c, emu, f16, 0, tile};
            char err[256] = "";
            if (mma_on_gpu(fn, a, b, c, tile, hw, f16) || emu_launch(mma_probe_m16n8k16_emu, &p, 1, 32, 0, 32, err, sizeof err)) {
                bad++;
                continue;
            }
            loads_bad += hw[16 * 8 + 1] != 0.0f || emu[16 * 8 + 1] != 0.0f;
            double e = mma_case_error(&s, f16, a, b, c, hw), diff = mma_case_distance(&s, f16, a, b, c, hw, emu);
            worst_hw = e > worst_hw ? e : worst_hw;
            worst_diff = diff > worst_diff ? diff : worst_diff;
            bad += !(e <= MMA_HW_TOL && diff <= MMA_HW_TOL);
        }
    int ok = bad == 0;
    printf("%-4s mma.sync m16n8k16 bf16+f16, %d random cases: max |hw - fp64| %.3g, |hw - emulator| %.3g of the "
           "magnitudes (limit %.3g)\n", ok ? "ok" : "FAIL", cases, worst_hw, worst_diff, MMA_HW_TOL);
    t->passed += ok, t->failed += !ok;
    printf("%-4s fragment loads from a swizzled shared tile (ldmatrix, .trans) agree with the maps in %d of %d cases\n",
           loads_bad ? "FAIL" : "ok", cases - loads_bad, cases);
    t->passed += !loads_bad, t->failed += !!loads_bad;
    wg_cases(mod, t);
    cluster_cases(mod, t);
    free(image);
}

/* mHC's delayed pre (DeepSeek-V4.1), both ops, at T in {1, 4, 16, 128, 1024, 4096} and C in
 * {4096, 5120, 7168}: with the previous pre mix and the norm and with neither, or each alone,
 * by turns, so that every T and every C meets all four; vLLM's draws and the wide ones (logits
 * of order 1, where the projection's rounding shows), aux on half the fused cases; the first
 * layer's [T, C] projection input at each C. fused_post_pre_delayed is one kernel up to 16
 * tokens, post and the projection beyond, with fn's terms made first from 1024. --quick: a
 * third of the shapes, none at 4096 tokens. */
static void mhc_delayed_cases(const harness_mem *m, harness_tally *t, int quick, uint64_t *seed)
{
    static const int tok[] = {1, 4, 16, 128, 1024, 4096}, hid[] = {4096, 5120, 7168};
    for (int a = 0; a < 6; a++)
        for (int h = 0; h < 3; h++) {
            if (quick && ((a + h) % 3 || tok[a] >= 4096)) continue;
            const int turn = (a + h) % 2, wide = (a + h) % 4 >= 2 ? MHC_WIDE : 0;
            const mhc_case cs[] = {
                {MHC_PRE_DELAYED, tok[a], hid[h], !turn, 0, 0, (turn ? MHC_NO_PRE_MIX : 0) | wide},
                {MHC_PRE_DELAYED, tok[a], hid[h], turn, 0, 0, (turn ? 0 : MHC_NO_PRE_MIX) | (wide ^ MHC_WIDE)},
                {MHC_FUSED_DELAYED, tok[a], hid[h], !turn, 0, 0, (turn ? MHC_NO_PRE_MIX : MHC_AUX) | wide},
                {MHC_FUSED_DELAYED, tok[a], hid[h], turn, 0, 0, (turn ? MHC_AUX : MHC_NO_PRE_MIX) | (wide ^ MHC_WIDE)}};
            for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) harness_mhc(m, &cs[i], (*seed)++, t);
        }
    for (int h = 0; h < 3; h++) {
        if (quick && h) continue;
        const mhc_case x = {MHC_PRE_DELAYED, h ? 700 : 16, hid[h], 1, 0, 0, MHC_X_C | MHC_WIDE};
        harness_mhc(m, &x, (*seed)++, t);
    }
    /* fn only 4- or 8-byte aligned: two passes (the one pass copies fn 16 bytes at a time) */
    const mhc_case moved[] = {{MHC_PRE_DELAYED, 300, 4096, 0, 0, 1, 0}, {MHC_FUSED_DELAYED, 300, 5120, 0, 0, 2, 0},
                              {MHC_FUSED_DELAYED, 40, 4096, 0, 0, 1, MHC_AUX}};
    for (size_t i = 0; i < sizeof moved / sizeof moved[0]; i++) harness_mhc(m, &moved[i], (*seed)++, t);
}

int main(int argc, char **argv)
{
    int verbose = 0, quick = 0;
    const char *mma_cubin = NULL, *only = NULL;
    setvbuf(stdout, NULL, _IOLBF, 0); /* a run cut short by a time limit keeps every line it printed */
    for (int i = 1; i < argc; i++) {
        verbose |= !strcmp(argv[i], "-v");
        quick |= !strcmp(argv[i], "--quick");
        if (!strcmp(argv[i], "--mma") && i + 1 < argc) mma_cubin = argv[++i];
        if (!strncmp(argv[i], "--only=", 7)) only = argv[i] + 7;
    }
#define FAMILY(name) (only == NULL || !strcmp(only, name))
    if (cuda_bind()) return 2;
    harness_mem m = cuda_mem(NULL);
    harness_tally t = {0, 0, verbose};
    concurrent_first_calls(&t); /* first: no call may have loaded anything yet */
    if (mma_cubin) mma_cases(mma_cubin, &t);
    static const int tokens[] = {1, 7, 128, 4096, 16384}, experts[] = {8, 64, 128, 160, 256, 384, 512};
    static const int ks[] = {1, 2, 6, 8}, bss[] = {16, 32, 64, 128};
    uint64_t seed = 77;
    if (FAMILY("moe")) {
        for (size_t a = 0; a < 5; a++)
            for (size_t e = 0; e < 7; e++)
                for (size_t k = 0; k < 4; k++)
                    for (int d = 0; d < 3; d++)
                        for (int r = 0; r < 2; r++) {
                            if (ks[k] > experts[e] || (quick && (a + e + k + d + r) % 7)) continue;
                            topk_case c = {tokens[a], experts[e], ks[k], r, (aiter_aot_dtype)d, 0, 0};
                            harness_topk(&m, &c, seed++, &t);
                        }
        topk_case extra[] = {{4096, 1024, 32, 1, AITER_AOT_DTYPE_BF16, 0, 0}, {333, 1000, 17, 0, AITER_AOT_DTYPE_F16, 0, 8},
                             {4096, 256, 8, 1, AITER_AOT_DTYPE_BF16, 1, 0}, {4096, 128, 8, 0, AITER_AOT_DTYPE_F32, 2, 0},
                             {4096, 256, 8, 1, AITER_AOT_DTYPE_BF16, 2, 0}, {4096, 384, 6, 0, AITER_AOT_DTYPE_F16, 2, 0},
                             {1024, 512, 8, 1, AITER_AOT_DTYPE_F16, 1, 0}, {1024, 256, 8, 1, AITER_AOT_DTYPE_BF16, 3, 0},
                             {256, 1024, 32, 0, AITER_AOT_DTYPE_F16, 3, 0},
                             {16384, 256, 8, 1, AITER_AOT_DTYPE_BF16, 0, 64}, {5, 1, 1, 0, AITER_AOT_DTYPE_F32, 0, 0},
                             {300, 8, 8, 1, AITER_AOT_DTYPE_BF16, 1, 0}, {300, 8, 8, 1, AITER_AOT_DTYPE_F16, 1, 0},
                             {4096, 256, 8, 1, AITER_AOT_DTYPE_BF16, 4, 0}, {4096, 128, 6, 0, AITER_AOT_DTYPE_F16, 4, 0},
                             {1024, 64, 8, 1, AITER_AOT_DTYPE_F32, 4, 0},
                             /* fp32 rows the fast path must hand back (near ties, -0 and +0) or keep */
                             {4096, 256, 8, 1, AITER_AOT_DTYPE_F32, 5, 0}, {1024, 160, 6, 0, AITER_AOT_DTYPE_F32, 5, 4},
                             {1024, 1024, 32, 1, AITER_AOT_DTYPE_F32, 3, 0}, {4096, 256, 8, 0, AITER_AOT_DTYPE_F32, 1, 0},
                             /* four rows a wave (_rows4: above 8448 tokens on an H200, 4 times that for
                              * fp32) with rows handed back among them */
                             {16384, 256, 8, 1, AITER_AOT_DTYPE_BF16, 1, 0}, {16384, 128, 6, 0, AITER_AOT_DTYPE_F16, 2, 0},
                             {9001, 256, 8, 1, AITER_AOT_DTYPE_BF16, 4, 3}, {40001, 256, 8, 1, AITER_AOT_DTYPE_F32, 5, 0},
                             {40000, 64, 8, 0, AITER_AOT_DTYPE_F32, 1, 0},
                             /* lists in shared memory (_rows4 at 256 experts): monotonic rows, whose
                              * k largest lie in one lane, which spends its list */
                             {16384, 256, 8, 1, AITER_AOT_DTYPE_BF16, 3, 0}, {40001, 256, 8, 0, AITER_AOT_DTYPE_F32, 3, 0}};
        for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++) harness_topk(&m, &extra[i], seed++, &t);
        for (size_t a = 0; a < 5; a++)
            for (size_t e = 0; e < 7; e++)
                for (size_t k = 0; k < 4; k++)
                    for (size_t b = 0; b < 4; b++) {
                        if (ks[k] > experts[e] || (quick && (a + e + k + b) % 5)) continue;
                        int variant = (int)((a + e + k + b) % 4);
                        sort_case c = {tokens[a], experts[e], ks[k], bss[b], variant == 1, variant == 2,
                                       variant == 3 ? 4096 : 0};
                        harness_sort(&m, &c, seed++, &t);
                    }
        sort_case big[] = {{16384, 1024, 8, 32, 1, 0, 0}, {65536, 256, 8, 32, 0, 0, 1 << 20}, {16384, 320, 8, 64, 0, 1, 0}};
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) harness_sort(&m, &big[i], seed++, &t);
        harness_bad_args(&m, &t);
        harness_route_gpu(&m, &t, quick, &seed); /* topk_route, moe_align_block_size */
    }
    if (FAMILY("mhc")) {
        /* mHC: the grid (T in {1, 4, 8, 16, 128, 1024}, C in {4096, 7168}) for pre_full
         * plain, with the norm and broadcast, post, head and fused_post_pre (one kernel to 16
         * tokens, post and the projection beyond); explicit splits; the largest hidden size. */
        static const int mtok[] = {1, 4, 8, 16, 128, 1024}, mhid[] = {4096, 7168};
        for (size_t a = 0; a < 6; a++)
            for (size_t h = 0; h < 2; h++) {
                if (quick && (a + h) % 3) continue;
                mhc_case cs[] = {{MHC_PRE_FULL, mtok[a], mhid[h], 0, 0, 0, 0}, {MHC_PRE_FULL, mtok[a], mhid[h], 1, 0, 0, 0},
                                 {MHC_PRE_FULL, mtok[a], mhid[h], 1, 1, 0, 0}, {MHC_POST, mtok[a], mhid[h], 0, 0, 0, 0},
                                 {MHC_HEAD, mtok[a], mhid[h], 0, 0, 0, 0},     {MHC_FUSED, mtok[a], mhid[h], 0, 0, 4, 0}};
                for (size_t i = 0; i < 6; i++)
                    harness_mhc(&m, &cs[i], seed++, &t);
            }
        mhc_case mextra[] = {{MHC_GEMM_THEN_PRE, 300, 4096, 0, 0, 7, 0}, {MHC_GEMM_THEN_PRE, 2, 16384, 1, 0, 64, 0},
                             {MHC_FUSED, 7, 16384, 0, 0, 16, 0},           {MHC_PRE_FULL, 4096, 4096, 0, 0, 0, 0},
                             /* pre_full at token counts that are not a multiple of the tiles, at 7168 (one
                              * pass, fn's lo term in shared memory; broadcast: two) and 8192 (two passes),
                              * with fn's terms made first (from 1024 tokens) and without */
                             {MHC_PRE_FULL, 1000, 7168, 0, 0, 0, MHC_WIDE}, {MHC_PRE_FULL, 600, 8192, 0, 0, 0, 0},
                             {MHC_PRE_FULL, 1100, 7168, 0, 1, 0, 0},       {MHC_PRE_FULL, 8200, 7168, 0, 0, 0, 0},
                             {MHC_PRE_FULL, 4096, 7168, 0, 0, 0, MHC_WIDE},
                             /* a partial last token block with the terms, and hidden 3072 (both took the one-pass
                              * kernel of commit 60bda2b, reverted) */
                             {MHC_PRE_FULL, 1030, 4096, 0, 0, 0, 0},       {MHC_PRE_FULL, 1500, 3072, 0, 0, 0, 0},
                             /* the one-pass kernel with 73 tiles a cluster on 7 clusters (past two batches
                              * of post and comb, AOT_MHC_CL_BATCH tiles each), its last tile partial */
                             {MHC_PRE_FULL, 8200, 4096, 0, 0, 0, 0},
                             /* the one pass at 5120 (a ring of 4 slots): decode, a partial tile, many tiles */
                             {MHC_PRE_FULL, 1, 5120, 0, 0, 0, 0},          {MHC_PRE_FULL, 37, 5120, 0, 0, 0, 0},
                             {MHC_PRE_FULL, 4096, 5120, 0, 0, 0, 0},       {MHC_PRE_FULL, 8200, 5120, 0, 0, 0, 0},
                             /* fn 4- or 8-byte aligned only: pre_full takes two passes (the one pass
                              * copies fn 16 bytes at a time, and would fault) */
                             {MHC_PRE_FULL, 300, 4096, 0, 0, 1, 0},        {MHC_PRE_FULL, 300, 4096, 0, 0, 2, 0}};
        for (size_t i = 0; i < sizeof mextra / sizeof mextra[0]; i++) harness_mhc(&m, &mextra[i], seed++, &t);
        mhc_delayed_cases(&m, &t, quick, &seed);
        harness_mhc_bad_args(&m, &t);
    }
    if (FAMILY("fmha")) {
        /* FMHA: every head-dim pair x hq/hk in {8/8, 32/8, 16/1} x causal, uneven lengths with q
         * shorter than k and a zero-length sequence, fully checked; then windows, soft cap, fp16,
         * and long sequences (up to 4096, 8 sequences) checked on a sample of rows. A
         * max_seqlen_q past 512 (max_extra) takes d <= 128 to the warp-specialized kernels on
         * sm_90a: the cases at 32/8 heads and some below run the other kernels there. */
        static const int dims[4][2] = {{64, 64}, {128, 128}, {192, 128}, {256, 256}}, heads[3][2] = {{8, 8}, {32, 8}, {16, 1}};
        for (int dd = 0; dd < 4; dd++)
            for (int hh = 0; hh < 3; hh++)
                for (int causal = 0; causal < 2; causal++) {
                    if (quick && (dd + hh + causal) % 3) continue;
                    fmha_case c = {3, 300, 200, heads[hh][0], heads[hh][1], dims[dd][0], dims[dd][1], causal, -1, -1, 0.0f,
                                   AITER_AOT_DTYPE_BF16, 1, 0, 0, hh == 1 ? 0 : 1000};
                    harness_fmha(&m, &c, seed++, &t);
                }
        fmha_case fx[] = {
            {3, 500, 300, 8, 8, 128, 128, 1, 256, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 1000},
            {2, 400, 100, 16, 1, 128, 128, 0, 128, 64, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 0},
            {3, 200, 64, 8, 8, 192, 128, 1, -1, -1, 50.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 0},
            {3, 300, 100, 32, 8, 64, 64, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_F16, 1, 0, 0, 1000},
            {1, 257, 300, 8, 8, 256, 256, 0, 32, 32, 0.0f, AITER_AOT_DTYPE_F16, 1, 0, 0, 0},
            {1, 64, 0, 1, 1, 128, 128, 0, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 0},
            {3, 300, 100, 8, 2, 192, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 24, 0, 0},
            /* NaN rows of k and v past the last sequence, within total_k (the warp-specialized
             * kernels' last step reads them, and must zero V's), at every head dim (d = 64 runs
             * the other kernels) */
            {3, 300, 100, 8, 2, 64, 64, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 5, 1000},
            {3, 300, 100, 8, 2, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 37, 1000},
            {2, 300, 100, 8, 8, 192, 128, 0, -1, -1, 0.0f, AITER_AOT_DTYPE_F16, 1, 0, 130, 0},
            {2, 300, 100, 8, 8, 256, 256, 0, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 11, 0},
            /* fewer keys than queries, causal: tiles whose rows see no key */
            {3, 400, -300, 8, 2, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 1000},
            {2, 400, -300, 8, 8, 256, 256, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, 0, 0},
            /* total_k not given: the kernels of copies by threads */
            {3, 300, 200, 8, 8, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 1, 0, -1, 0},
            {3, 300, 200, 16, 1, 256, 256, 0, 64, 0, 0.0f, AITER_AOT_DTYPE_F16, 1, 0, -1, 0}};
        for (size_t i = 0; i < sizeof fx / sizeof fx[0]; i++) harness_fmha(&m, &fx[i], seed++, &t);
        fmha_case longs[] = {{8, 4096, 512, 32, 8, 128, 128, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 61, 0, 0, 0},
                           {1, 4096, 0, 8, 8, 128, 128, 0, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 31, 0, 0, 0},
                           {3, 4096, 2048, 16, 1, 256, 256, 1, -1, -1, 0.0f, AITER_AOT_DTYPE_BF16, 97, 0, 0, 0}};
        for (size_t i = 0; !quick && i < sizeof longs / sizeof longs[0]; i++) harness_fmha(&m, &longs[i], seed++, &t);
        harness_fmha_bad_args(&m, &t);
    }
    aiter_aot_stats st = {.size = sizeof st};
    aiter_aot_get_stats(&st);
    char target[96] = "";
    aiter_aot_device_target(target, sizeof target);
    printf("device %s via %s: %llu modules loaded, %llu frames decompressed, %llu launches\n", target,
           aiter_aot_gpu_library(), (unsigned long long)st.modules_loaded,
           (unsigned long long)st.frames_decompressed, (unsigned long long)st.launches);
    return harness_finish(&t);
}
