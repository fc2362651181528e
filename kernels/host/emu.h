/* emu.h : a host SIMT emulator for the portability layer (kernels/include/aot_host.h).
 * A launch runs every block of the grid in turn (or every cluster of blocks: their threads
 * together); the threads of a block are cooperative fibers that switch only at barriers and
 * wave operations, so wave operations see all lanes in lockstep. The waves of a block advance
 * together too, unless EMU_STAGGER=SEED in the environment gives each wave of a launch a speed
 * drawn from SEED, so that they drift apart. Detected and reported as errors: a barrier some
 * threads never reach (divergence or early exit), a wave operation not reached by every lane of the wave, a shuffle from a lane
 * outside the wave, and (through guard pages, as a fault naming block and thread) reads or
 * writes past the end of emu_alloc'ed or shared memory. */
#ifndef AOT_EMU_H
#define AOT_EMU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*emu_kernel_fn)(const void *args);

/* Runs `kernel` over grid x block threads with waves of `wave` lanes and `dynamic_shared` bytes
 * of dynamic shared memory.
 * @return 0, or -1 with a one-line reason in err. */
int emu_launch(emu_kernel_fn kernel, const void *args, unsigned grid, unsigned block,
               size_t dynamic_shared, unsigned wave, char *err, size_t cap);
/* The same in clusters of `cluster` consecutive blocks (grid a multiple of it, at most 16)
 * that run together: each has its own shared memory, which the others reach through
 * emu_cluster_map, and emu_cluster_barrier waits for every thread of the cluster. */
int emu_launch_cluster(emu_kernel_fn kernel, const void *args, unsigned grid, unsigned block, unsigned cluster,
                       size_t dynamic_shared, unsigned wave, char *err, size_t cap);

/* The kernels of the emulator's loader (loader_emu.c) that no launch has run yet: up to cap
 * names, the count returned. */
size_t emu_unlaunched(const char **names, size_t cap);

/* "Device" memory: its end touches a guard page (sizes round up to 16 bytes for alignment, so
 * an overrun of less than that padding is not caught), filled with 0xff bytes (NaN as fp32,
 * -1 as int32) so unwritten outputs show. */
void *emu_alloc(size_t bytes);
void emu_free(void *p);

/* Called from kernels through aot_host.h. */
int emu_thread_x(void);
int emu_block_x(void);
int emu_grid_x(void);
void emu_barrier(void);
int emu_shfl(int v, int src_lane);
void *emu_shared(const void *key, size_t bytes);
/* The same for the launch's dynamic shared memory: the launch fails if it gave fewer bytes. */
void *emu_shared_dynamic(const void *key, size_t bytes);
/* p for a vector access of `align` bytes. One off its alignment fails the launch (a GPU faults
 * there; the host would not, or would stop the process) and touches a scratch buffer instead. */
void *emu_aligned(const void *p, unsigned align);
/* Clusters: this block's place in its cluster (0 for a plain launch), a barrier for every
 * thread of the cluster, and the address in block `rank`'s shared memory of what `shared`
 * addresses in this block's (NULL for an address outside shared memory or a rank outside the
 * cluster). */
int emu_cluster_rank(void);
void emu_cluster_barrier(void);
void *emu_cluster_map(const void *shared, int rank);
/* The cluster's index in the grid and the grid's number of clusters. */
int emu_cluster_id(void);
int emu_cluster_count(void);
/* Warp-specialized kernels: a barrier for `threads` threads of the block that name barrier
 * `id`; emu_spin lets the other fibers run (a wait on an mbarrier calls it until the phase
 * completes), and emu_progress marks a change of such state, so that fibers that only spin
 * are reported as a deadlock. */
void emu_named_barrier(int id, int threads);
void emu_named_arrive(int id, int threads); /* counts towards that barrier's next release, does not wait */
void emu_spin(void);
void emu_progress(void);
/* Asynchronous copies of `bytes` from src (NULL: zeros) into dst. They land only when the
 * issuing thread waits: emu_copy_wait(n) lands every copy of the groups it committed
 * (emu_copy_commit closes one) but the newest n, emu_copy_wait(-1) every copy, committed or
 * not. A thread that ends with copies it did not wait for fails as a misuse (below). */
void emu_copy_async(void *dst, const void *src, unsigned bytes);
void emu_copy_commit(void);
void emu_copy_wait(int newest);
/* The proxies (sm_90a): bytes a copy wrote, once landed, are generic-proxy writes that the async
 * proxy (warp-group products, tensor copies) may read or overwrite only after the thread that
 * waited for them fenced (emu_proxy_fence, aot_wg_shared_fence). emu_async_touch fails as a
 * misuse (below) where the async proxy would touch such bytes; `what` names the access. */
void emu_proxy_fence(void);
void emu_async_touch(const void *p, size_t bytes, const char *what);
/* An operation in flight (a tensor copy, a remote store): fn runs on a copy of data's `bytes`
 * (at most EMU_LATER_BYTES) at the end of the scheduler's round, or with EMU_STAGGER of one
 * of the next 8, as if the issuing block's thread 0 ran it; all that are left land when the
 * cluster's threads have ended. */
#define EMU_LATER_BYTES 128
void emu_later(void (*fn)(void *), const void *data, size_t bytes);
/* A kernel's misuse of the layer that the device would not report (a too-narrow acquire):
 * printed with the block and thread, then the process exits with status 86, as on a fault. */
void emu_misuse(const char *what);

/* What the emulator's runtime puts in an aot_tile_map (kernels/include/aot_tile_map.h) for
 * aot_copy_tile (aot_host.h): a 3-dimensional tensor of 16-bit elements, dims[0] contiguous,
 * the other two at the given byte strides; boxes of 64 x box[1] x box[2]. */
typedef struct {
    const unsigned short *base;
    unsigned long long dims[3], strides[2];
    unsigned box[3];
} emu_tile_map;

/* A wave operation over data every lane holds: when all lanes of the wave have called it with
 * the same fn, fn(lane_data, lanes) runs once with each lane's pointer, in lane order.
 * fn returns 0, or -1 after writing a reason into err. */
typedef int (*emu_collective_fn)(void *const *lane_data, unsigned lanes, char *err, size_t cap);
void emu_wave_collective(void *lane_data, emu_collective_fn fn);

/* The matrix instruction of shape MxNxK at the current wave size (emu_mma.c): wave 64 plays
 * MFMA 32x32x8, 16x16x16, 32x32x16, 16x16x32; wave 32 plays mma.sync m16n8k16. c += a * b with
 * 16-bit inputs (f16 = 1: fp16, else bf16) given as bits, fragments as aot_mfma.h /
 * aot_mma_sync.h lay them out. */
void emu_mma(int m, int n, int k, int f16, float *c, const unsigned short *a, const unsigned short *b);

#ifdef __cplusplus
}
#endif

#endif
