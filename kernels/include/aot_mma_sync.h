/* aot_mma_sync.h : where the operands of NVIDIA's mma.sync.aligned.m16n8k16 (fp32 accumulate,
 * bf16 or fp16 inputs, A row-major, B column-major) live, lane by lane (warp 32). Pure
 * arithmetic: included by aot_nvidia.h (which issues the instruction) and by aot_host.h at
 * wave 32 (where the emulator plays it). Written from the PTX ISA, section "Matrix Fragments
 * for mma.m16n8k16 with floating point type": with g = lane / 4 and t = lane % 4,
 *   A (16x16, 8 per lane):  row g + 8*((i/2)%2), col 2t + i%2 + 8*(i/4)
 *   B (16x8, 4 per lane):   row 2t + i%2 + 8*(i/2), col g
 *   C (16x8, 4 per lane):   row g + 8*(i/2),       col 2t + i%2
 * Elements 2j and 2j+1 of A and B share one 32-bit register, the lower index in the low half. */
#ifndef AOT_MMA_SYNC_H
#define AOT_MMA_SYNC_H

struct aot_mma_m16n8k16 {
    enum { M = 16, N = 8, K = 16, A = 8, B = 4, C = 4 };
    AOT_DEV int a_row(int lane, int i) { return lane / 4 + 8 * ((i / 2) % 2); }
    AOT_DEV int a_k(int lane, int i) { return 2 * (lane % 4) + i % 2 + 8 * (i / 4); }
    AOT_DEV int b_k(int lane, int i) { return 2 * (lane % 4) + i % 2 + 8 * (i / 2); }
    AOT_DEV int b_col(int lane, int i) { return (void)i, lane / 4; }
    AOT_DEV int c_row(int lane, int i) { return lane / 4 + 8 * (i / 2); }
    AOT_DEV int c_col(int lane, int i) { return 2 * (lane % 4) + i % 2; }
    /* C by rows: a lane holds C_ROWS rows (element i in row slot c_slot(i)), each shared with
     * the ROW_LANES lanes that differ from it in the low bits. C_TO_A: the C fragments of the
     * K/N tiles of one k-step, taken as they are, form the A fragment of that step: element i
     * of A is element c_elem(i) of tile c_tile(i) (the mma.sync layouts are built for it). */
    enum { C_ROWS = 2, ROW_LANES = 4, C_TO_A = 1 };
    AOT_DEV int c_slot(int i) { return i / 2; }
    AOT_DEV int c_tile(int i) { return i / 4; }
    AOT_DEV int c_elem(int i) { return i % 2 + 2 * ((i / 2) % 2); }
};

#endif
