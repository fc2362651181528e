/* emu.h : a host SIMT emulator for the portability layer (kernels/include/aot_host.h).
 * A launch runs every block of the grid in turn; the threads of a block are cooperative
 * fibers that switch only at barriers and wave operations, so wave operations see all lanes
 * in lockstep. Detected and reported as errors: a barrier some threads never reach (divergence
 * or early exit), a wave operation not reached by every lane of the wave, a shuffle from a lane
 * outside the wave, and (through guard pages, as a fault naming block and thread) reads or
 * writes past the end of emu_alloc'ed or shared memory. */
#ifndef AOT_EMU_H
#define AOT_EMU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*emu_kernel_fn)(const void *args);

/* Runs `kernel` over grid x block threads with waves of `wave` lanes.
 * @return 0, or -1 with a one-line reason in err. */
int emu_launch(emu_kernel_fn kernel, const void *args, unsigned grid, unsigned block,
               unsigned wave, char *err, size_t cap);

/* "Device" memory: its end touches a guard page (sizes round up to 16 bytes for alignment, so
 * an overrun of less than that padding is not caught), filled with 0xff bytes (NaN as fp32,
 * -1 as int32) so unwritten outputs show. */
void *emu_alloc(size_t bytes);
void emu_free(void *p);

/* Called from kernels through aot_host.h. */
int emu_thread_x(void);
int emu_block_x(void);
void emu_barrier(void);
int emu_shfl(int v, int src_lane);
void *emu_shared(const void *key, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif
