/* test_mma.c : the layout test of every matrix instruction the emulator plays at this binary's
 * wave size (tests/mma_w32: mma.sync m16n8k16; tests/mma_w64: the four MFMA shapes). The
 * probe kernel places A, B and C through the layer's maps (kernels/include/aot_mfma.h,
 * aot_mma_sync.h); the emulator reads them through its own tables (kernels/host/emu_mma.c), both
 * written from the vendors' documents; D must equal the plain matrix product C + A*B in fp64,
 * rounded once to fp32. A single misplaced element anywhere in either map fails the case. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "mma_case.h"
#include "mma_probe.h"

#if AOT_EMU_WAVE == 64
void mma_probe_32x32x8_emu(const void *), mma_probe_16x16x16_emu(const void *);
void mma_probe_32x32x16_emu(const void *), mma_probe_16x16x32_emu(const void *);
static const struct {
    mma_shape s;
    emu_kernel_fn fn;
} shapes[] = {{{"32x32x8", 32, 32, 8}, mma_probe_32x32x8_emu},
              {{"16x16x16", 16, 16, 16}, mma_probe_16x16x16_emu},
              {{"32x32x16", 32, 32, 16}, mma_probe_32x32x16_emu},
              {{"16x16x32", 16, 16, 32}, mma_probe_16x16x32_emu}};
#else
void mma_probe_m16n8k16_emu(const void *), mma_probe_wg_emu(const void *);
static const struct {
    mma_shape s;
    emu_kernel_fn fn;
} shapes[] = {{{"m16n8k16", 16, 8, 16}, mma_probe_m16n8k16_emu}};
#endif

void cluster_probe_emu(const void *);

#if AOT_EMU_WAVE == 32
void pipeline_probe_emu(const void *);

/* The probe's tile element at (row, col) of its one 64-column panel (kernels/include/aot_tile.h). */
static int swz4(int row, int col) { return row * 64 + (((col >> 3) & 7) ^ (row & 7)) * 8 + (col & 7); }

/* pipeline_probe (mma_probe.h): the remote stores, the tile copy with its zeros, and a deadlock
 * reported. @return failures. */
static int pipeline_cases(void)
{
    static uint16_t tensor[2][3][64], tile_out[2 * 256];
    static int32_t out[8];
    for (int z = 0; z < 2; z++)
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 64; x++) tensor[z][y][x] = (uint16_t)(1 + x + 64 * y + 1000 * z);
    int fails = 0;
    for (int deadlock = 0; deadlock < 2; deadlock++) {
        aot_pipeline_probe_args p;
        memset(&p, 0, sizeof p);
        const emu_tile_map m = {&tensor[0][0][0], {64, 3, 2}, {64 * 2, 3 * 64 * 2}, {64, 2, 2}};
        memcpy(p.map, &m, sizeof m);
        p.out = out, p.tile_out = tile_out, p.deadlock = deadlock;
        memset(out, 0xff, sizeof out), memset(tile_out, 0xff, sizeof tile_out);
        char err[256] = "";
        const int rc = emu_launch_cluster(pipeline_probe_emu, &p, 2, 64, 2, 0, 32, err, sizeof err);
        int ok = deadlock ? rc != 0 && strstr(err, "deadlock") != NULL : rc == 0;
        for (int r = 0; !deadlock && r < 2; r++) {
            for (int i = 0; i < 4; i++) ok &= out[4 * r + i] == 100 * (1 - r) + i;
            for (int z = 0; z < 2; z++)
                for (int y = 0; y < 2; y++)
                    for (int x = 0; x < 64; x++)
                        ok &= tile_out[256 * r + swz4(2 * z + y, x)] == (y == 0 ? tensor[z][2][x] : 0);
        }
        ok ? 0 : fails++;
        printf("%-4s pipeline probe, wave 32: %s %s\n", ok ? "ok" : "FAIL",
               deadlock ? "a wait nothing completes is reported" : "remote stores, tile copy with zeros past the end",
               deadlock ? err : "");
    }
    return fails;
}
#endif

void race_probe_emu(const void *);

/* race_probe (mma_probe.h) in `launches` launches with EMU_STAGGER as `stagger` (NULL: unset).
 * @return how many launches saw the race, or -1 if one failed. */
static int race_launches(const char *stagger, int launches)
{
    const char *was = getenv("EMU_STAGGER");
    char saved[64] = "";
    if (was) snprintf(saved, sizeof saved, "%s", was);
    stagger ? setenv("EMU_STAGGER", stagger, 1) : unsetenv("EMU_STAGGER");
    int saw = 0;
    for (int i = 0; i < launches && saw >= 0; i++) {
        int32_t seen = -1;
        aot_race_probe_args p = {&seen};
        char err[256] = "";
        if (emu_launch(race_probe_emu, &p, 1, 2 * AOT_EMU_WAVE, 0, AOT_EMU_WAVE, err, sizeof err) != 0 || seen < 0) saw = -1;
        else saw += seen > 0;
    }
    was ? setenv("EMU_STAGGER", saved, 1) : unsetenv("EMU_STAGGER");
    return saw;
}

/* The emulator's schedules: lockstep hides the probe's race, EMU_STAGGER shows it (in some of
 * 16 launches: each draws the waves' speeds anew). @return failures. */
static int race_cases(void)
{
    const int lockstep = race_launches(NULL, 4), staggered = race_launches("1", 16);
    const int ok = lockstep == 0 && staggered > 0;
    printf("%-4s schedules, wave %d: a race between waves hidden in lockstep (%d of 4 launches saw it), "
           "shown with EMU_STAGGER (%d of 16)\n", ok ? "ok" : "FAIL", AOT_EMU_WAVE, lockstep, staggered);
    return !ok;
}

void copy_probe_emu(const void *);

/* copy_probe (mma_probe.h): nothing lands before a wait, a wait for all but the newest group
 * lands the older one only, wait_all the rest. @return failures. */
static int copy_cases(void)
{
    static const uint32_t src[8] __attribute__((aligned(16))) = {11, 12, 13, 14, 15, 16, 17, 18};
    uint32_t out[4] = {7, 7, 7, 7};
    aot_copy_probe_args p = {src, out};
    char err[256] = "";
    const int rc = emu_launch(copy_probe_emu, &p, 1, AOT_EMU_WAVE, 0, AOT_EMU_WAVE, err, sizeof err);
    const int ok = rc == 0 && out[0] == 0 && out[1] == 11 && out[2] == 0 && out[3] == 15;
    printf("%-4s asynchronous copies, wave %d: land at the wait that covers their group (read %u, %u, %u, %u; "
           "want 0, 11, 0, 15) %s\n", ok ? "ok" : "FAIL", AOT_EMU_WAVE, out[0], out[1], out[2], out[3], err);
    return !ok;
}

/* Exact up to one fp32 rounding of the result: relative to the magnitudes, 2^-24 at most
 * (twice that for margin against the fp64 reference's own rounding). */
#define EXACT_TOL 0x1p-23

int main(void)
{
    int pass = 0, fail = 0;
    uint64_t seed = 4242;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int f16 = 0; f16 < 2; f16++)
            for (int rep = 0; rep < 3; rep++) {
                const mma_shape *s = &shapes[i].s;
                uint16_t a[32 * 32], b[32 * 32];
                float c[32 * 32], d[32 * 32 + 2]; /* d[m*n], d[m*n+1]: the map and load checks */
                uint16_t tile[AOT_PROBE_TILE * AOT_PROBE_TILE];
                mma_case_inputs(s, f16, seed++, a, b, c, d);
                for (int j = 0; j < AOT_PROBE_TILE * AOT_PROBE_TILE; j++) tile[j] = (uint16_t)(j ^ rep * 0x1357); /* distinct */
                aot_mma_probe_args p = {a, b, c, d, f16, 0, tile};
                char err[256] = "";
                int rc = emu_launch(shapes[i].fn, &p, 1, AOT_EMU_WAVE, 0, AOT_EMU_WAVE, err, sizeof err);
                double e = rc ? 1.0 / 0.0 : mma_case_error(s, f16, a, b, c, d);
                const float maps = d[s->m * s->n], loads = d[s->m * s->n + 1];
                int ok = rc == 0 && e <= EXACT_TOL && maps == 0.0f && loads == 0.0f;
                if (rc == 0 && maps != 0.0f) snprintf(err, sizeof err, "row maps disagree at lane %d", (int)maps - 1);
                if (rc == 0 && loads != 0.0f) snprintf(err, sizeof err, "fragment loads disagree at lane %d", (int)loads - 1);
                ok ? pass++ : fail++;
                printf("%-4s %-9s %s wave %d: max error %.3g of the magnitudes (limit %.3g) %s\n", ok ? "ok" : "FAIL",
                       s->name, f16 ? "f16 " : "bf16", AOT_EMU_WAVE, e, EXACT_TOL, err);
            }
#if AOT_EMU_WAVE == 32
    for (int f16 = 0; f16 < 2; f16++) { /* the warp-group products, 4 waves */
        static uint16_t x[64 * AOT_WG_PROBE_K], y[AOT_WG_PROBE_K * 128];
        static float d[AOT_WG_PROBE_OUT];
        mma_wg_inputs(f16, seed++, x, y, d);
        aot_wg_probe_args p = {x, y, d, f16, 0};
        char err[256] = "";
        int rc = emu_launch(mma_probe_wg_emu, &p, 1, 4 * AOT_EMU_WAVE, 0, AOT_EMU_WAVE, err, sizeof err);
        double e = rc ? 1.0 / 0.0 : mma_wg_error(f16, x, y, d);
        int ok = rc == 0 && e <= EXACT_TOL * AOT_WG_PROBE_K / 16;
        ok ? pass++ : fail++;
        printf("%-4s warp-group %s wave %d: max error %.3g of the magnitudes (limit %.3g) %s\n", ok ? "ok" : "FAIL",
               f16 ? "f16 " : "bf16", AOT_EMU_WAVE, e, EXACT_TOL * AOT_WG_PROBE_K / 16, err);
    }
#endif
    static const unsigned clusters[] = MMA_CLUSTER_SIZES; /* the layer's clusters */
    for (size_t i = 0; i < sizeof clusters / sizeof clusters[0]; i++) {
        const unsigned n = clusters[i], threads = 2 * AOT_EMU_WAVE, grid = 2 * n;
        static int32_t out[16 * 256];
        memset(out, 0xff, sizeof out);
        aot_cluster_probe_args p = {out, (int32_t)threads, (int32_t)n};
        char err[256] = "";
        int rc = emu_launch_cluster(cluster_probe_emu, &p, grid, threads, n, 0, AOT_EMU_WAVE, err, sizeof err);
        const int bad = rc == 0 ? mma_cluster_first_wrong(out, grid, threads, n) : -1;
        if (bad >= 0) snprintf(err, sizeof err, "out[%d] = %d", bad, out[bad]);
        int ok = rc == 0 && bad < 0;
        ok ? pass++ : fail++;
        printf("%-4s clusters of %u blocks, wave %d: shared memory of the neighbours after the cluster barrier %s\n",
               ok ? "ok" : "FAIL", n, AOT_EMU_WAVE, err);
    }
#if AOT_EMU_WAVE == 32
    const int pf = pipeline_cases();
    fail += pf, pass += 2 - pf;
#endif
    const int rf = race_cases(), cf = copy_cases();
    fail += rf + cf, pass += 2 - rf - cf;
    printf("%d passed, %d failed\n", pass, fail);
    return fail != 0;
}
