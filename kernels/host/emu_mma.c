/* emu_mma.c : the matrix instructions of the portability layer, played on the CPU as one
 * collective wave operation. The placement of every matrix element is written here a second
 * time, independently of kernels/include/aot_mfma.h and aot_mma_sync.h and in the other
 * direction (element -> lane and register, as the vendors' tables read), so that the layout
 * tests (tests/mma) compare two readings of the documents:
 *   - AMD: "AMD Instinct MI300 ISA" chapter "Matrix Arithmetic Instructions" and AMD's matrix
 *     instruction calculator. For v_mfma_f32_MxNxK (M = N = 32 or 16), KL = M*K/64:
 *       A[i][k] -> lane i + M*(k/KL), register k%KL        (B[k][j] likewise with j for i)
 *       D[i][j] -> lane j + M*((i/4) % (64/M)), register 4*(i/(4*64/M)) + i%4
 *   - NVIDIA: PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type":
 *       A[r][k] -> lane 4*(r%8) + (k%8)/2, register k%2 + 2*(r/8) + 4*(k/8)
 *       B[k][c] -> lane 4*c + (k%8)/2,     register k%2 + 2*(k/8)
 *       D[r][c] -> lane 4*(r%8) + c/2,     register c%2 + 2*(r/8)
 * Products of 16-bit floats are exact in fp64 and the sum of at most 33 of them is nearly so:
 * the emulator returns the exact result rounded once to fp32. Hardware accumulates in its own
 * order and precision; tests/gpu compares the two with a stated tolerance. */
#include <stdio.h>
#include <string.h>

#include "emu.h"

typedef struct {
    int m, n, k, f16;
    float *c;
    const unsigned short *a, *b;
} mma_lane;

typedef struct {
    int lane, reg;
} place;

static double half_value(unsigned short h, int f16)
{
    if (!f16) {
        unsigned u = (unsigned)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? m * 0x1p-24 : e == 31 ? (m ? 0.0 / 0.0 : 1.0 / 0.0) : (1024 + m) * 0x1p-25 * (double)(1 << e);
    return (h & 0x8000) ? -v : v;
}

/* ---- where each element lives, per family ---- */

static place mfma_in(int m, int k, int row_or_col, int kk) /* A[i][k] or B[k][j] */
{
    int kl = m * k / 64;
    return (place){row_or_col + m * (kk / kl), kk % kl};
}

static place mfma_out(int m, int i, int j)
{
    int groups = 64 / m;
    return (place){j + m * ((i / 4) % groups), 4 * (i / (4 * groups)) + i % 4};
}

static place sync_a(int r, int k) { return (place){4 * (r % 8) + (k % 8) / 2, k % 2 + 2 * (r / 8) + 4 * (k / 8)}; }
static place sync_b(int k, int c) { return (place){4 * c + (k % 8) / 2, k % 2 + 2 * (k / 8)}; }
static place sync_d(int r, int c) { return (place){4 * (r % 8) + c / 2, c % 2 + 2 * (r / 8)}; }

static int is_mfma(int m, int n, int k, unsigned lanes)
{
    return lanes == 64 && m == n && ((m == 32 && (k == 8 || k == 16)) || (m == 16 && (k == 16 || k == 32)));
}

static int is_sync(int m, int n, int k, unsigned lanes) { return lanes == 32 && m == 16 && n == 8 && k == 16; }

static int play(void *const *lane_data, unsigned lanes, char *err, size_t cap)
{
    const mma_lane *l0 = lane_data[0];
    int m = l0->m, n = l0->n, k = l0->k, f16 = l0->f16, mfma = is_mfma(m, n, k, lanes);
    if (!mfma && !is_sync(m, n, k, lanes))
        return snprintf(err, cap, "emu: no matrix instruction %dx%dx%d at wave %u", m, n, k, lanes), -1;
    for (unsigned l = 1; l < lanes; l++) {
        const mma_lane *x = lane_data[l];
        if (x->m != m || x->n != n || x->k != k || x->f16 != f16)
            return snprintf(err, cap, "emu: lanes 0 and %u issue different matrix instructions", l), -1;
    }
    double acc[32 * 32];
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            place d = mfma ? mfma_out(m, i, j) : sync_d(i, j);
            double s = ((const mma_lane *)lane_data[d.lane])->c[d.reg];
            for (int kk = 0; kk < k; kk++) {
                place pa = mfma ? mfma_in(m, k, i, kk) : sync_a(i, kk);
                place pb = mfma ? mfma_in(m, k, j, kk) : sync_b(kk, j);
                s += half_value(((const mma_lane *)lane_data[pa.lane])->a[pa.reg], f16) *
                     half_value(((const mma_lane *)lane_data[pb.lane])->b[pb.reg], f16);
            }
            acc[i * n + j] = s;
        }
    for (int i = 0; i < m; i++) /* every lane has read its inputs: now write the results */
        for (int j = 0; j < n; j++) {
            place d = mfma ? mfma_out(m, i, j) : sync_d(i, j);
            ((const mma_lane *)lane_data[d.lane])->c[d.reg] = (float)acc[i * n + j];
        }
    return 0;
}

void emu_mma(int m, int n, int k, int f16, float *c, const unsigned short *a, const unsigned short *b)
{
    mma_lane me = {m, n, k, f16, c, a, b};
    emu_wave_collective(&me, play);
}
