/* aot_mfma.h : where the operands of AMD's MFMA instructions live, lane by lane (wave 64).
 * Pure arithmetic: included by aot_amd.h (which issues the instructions) and by aot_host.h at
 * wave 64 (where the emulator plays them). Written from the operand layouts AMD documents for
 * CDNA3/CDNA4 ("AMD Instinct MI300 ISA", chapter "Matrix Arithmetic Instructions", and AMD's
 * matrix instruction calculator for v_mfma_f32_{32x32x8,16x16x16}_{bf16,f16} and, gfx950
 * only, v_mfma_f32_{32x32x16,16x16x32}_{bf16,f16}).
 *
 * Each shape is C[MxN] (fp32) += A[MxK] * B[KxN] (bf16 or fp16), M = N, one wave of 64 lanes.
 * A lane holds KL = M*K/64 consecutive k of one row of A (and of one column of B), and
 * M*N/64 elements of C, all in one column of C. */
#ifndef AOT_MFMA_H
#define AOT_MFMA_H

template <int M_, int K_>
struct aot_mfma_shape {
    enum { M = M_, N = M_, K = K_, KL = M_ * K_ / 64, A = KL, B = KL, C = M_ * M_ / 64 };
    /* element i (0..A-1) of lane's A fragment is A[a_row][a_k] */
    AOT_DEV int a_row(int lane, int i) { return (void)i, lane % M; }
    AOT_DEV int a_k(int lane, int i) { return (lane / M) * KL + i; }
    /* element i of lane's B fragment is B[b_k][b_col] */
    AOT_DEV int b_k(int lane, int i) { return (lane / M) * KL + i; }
    AOT_DEV int b_col(int lane, int i) { return (void)i, lane % M; }
    /* element i (0..C-1) of lane's C fragment is C[c_row][c_col]: groups of 4 rows, the
     * 64/M lane groups interleaved within each 4*64/M rows */
    AOT_DEV int c_row(int lane, int i) { return (i / 4) * (4 * 64 / M) + (lane / M) * 4 + i % 4; }
    AOT_DEV int c_col(int lane, int i) { return (void)i, lane % M; }
    /* C by rows: lanes hold columns, so a row's C_ROWS... see aot_mma_sync.h; MFMA's C is
     * column-major across lanes, so C_TO_A does not hold (c_tile/c_elem are not used). */
    enum { C_ROWS = C, ROW_LANES = M, C_TO_A = 0 };
    AOT_DEV int c_slot(int i) { return i; }
    AOT_DEV int c_tile(int i) { return (void)i, 0; }
    AOT_DEV int c_elem(int i) { return i; }
};

typedef aot_mfma_shape<32, 8> aot_mfma_32x32x8;   /* gfx90a, gfx942, gfx950 */
typedef aot_mfma_shape<16, 16> aot_mfma_16x16x16; /* gfx90a, gfx942, gfx950 */
typedef aot_mfma_shape<32, 16> aot_mfma_32x32x16; /* gfx950 */
typedef aot_mfma_shape<16, 32> aot_mfma_16x16x32; /* gfx950 */

#endif
