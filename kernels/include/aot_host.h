/* aot_host.h : the host part of the portability layer. Kernels compile as C++ on the CPU and
 * run inside the SIMT emulator (kernels/host/emu.c): every thread of a block is a fiber, and
 * barriers and wave operations are points where fibers switch, so a wave operation sees every
 * lane's value at once. AOT_EMU_WAVE (32 or 64) is given on the command line. */
#ifndef AOT_HOST_H
#define AOT_HOST_H

#include <math.h>   /* exp2f, log2f, fmaxf, fmaf, sqrtf */
#include <string.h> /* memcpy */

#include "emu.h"

#if !defined(AOT_EMU_WAVE)
#error "aot_host.h: define AOT_EMU_WAVE (32 or 64)"
#endif

#define AOT_KERNEL extern "C"
#define AOT_DEV static inline
#define AOT_LAUNCH_BOUNDS(n)
#define AOT_LAUNCH_BOUNDS_MIN(n, blocks)
#define AOT_WAVE AOT_EMU_WAVE
/* Each declaration gets the block's one copy: the emulator keys it by a static address and
 * hands out guard-paged, poisoned memory so that out-of-bounds shared access faults. */
#define AOT_SHARED(T, name, n) \
    static char name##_key_; \
    T *const name = (T *)emu_shared(&name##_key_, sizeof(T) * (n))

/* The launch's dynamic shared memory: the emulator fails the launch when the host passed less
 * than the kernel uses. */
#define AOT_SHARED_DYN(T, name, n) \
    static char name##_key_; \
    T *const name = (T *)emu_shared_dynamic(&name##_key_, sizeof(T) * (n))

/* Vector accesses (aot_device.h) must be aligned to their size on a GPU; the emulator checks. */
#define AOT_ALIGNED(T, p, bytes) ((T)emu_aligned((const void *)(p), (bytes)))

AOT_DEV int aot_thread_x(void) { return emu_thread_x(); }
AOT_DEV int aot_block_x(void) { return emu_block_x(); }
AOT_DEV int aot_grid_x(void) { return emu_grid_x(); }
AOT_DEV void aot_sync_block(void) { emu_barrier(); }
AOT_DEV int aot_lane(void) { return emu_thread_x() % AOT_WAVE; }
/* A wave operation with nothing to exchange: every lane reaches it before any goes on. */
AOT_DEV int aot_emu_no_exchange(void *const *, unsigned, char *, size_t) { return 0; }
AOT_DEV void aot_sync_wave(void) { emu_wave_collective(NULL, aot_emu_no_exchange); }
AOT_DEV int aot_shfl_i32(int v, int src) { return emu_shfl(v, src); }
AOT_DEV int aot_uniform_i32(int v) { return emu_shfl(v, 0); }
AOT_DEV float aot_exp2_fast(float x) { return exp2f(x); }
AOT_DEV float aot_log2_fast(float x) { return log2f(x); }
AOT_DEV float aot_rsqrt_fast(float x) { return 1.0f / sqrtf(x); }
AOT_DEV float aot_rcp_fast(float x) { return 1.0f / x; }
AOT_DEV float aot_fmaxf(float a, float b) { return fmaxf(a, b); }
AOT_DEV float aot_fminf(float a, float b) { return fminf(a, b); }
AOT_DEV float aot_fmaf(float a, float b, float c) { return fmaf(a, b, c); }
AOT_DEV float aot_f32_from_bits(unsigned u) { float f; memcpy(&f, &u, 4); return f; }
AOT_DEV int aot_popc_u32(unsigned m) { return __builtin_popcount(m); }
AOT_DEV int aot_popc_u64(unsigned long long m) { return __builtin_popcountll(m); }
AOT_DEV int aot_ctz_u32(unsigned m) { return __builtin_ctz(m); }
AOT_DEV int aot_ctz_u64(unsigned long long m) { return __builtin_ctzll(m); }
AOT_DEV unsigned aot_bits_from_f32(float f) { unsigned u; memcpy(&u, &f, 4); return u; }
/* A cluster's blocks run together in the emulator, each with its own shared memory. */
#define AOT_CLUSTERS 1
AOT_DEV int aot_cluster_rank(void) { return emu_cluster_rank(); }
AOT_DEV void aot_cluster_sync(void) { emu_cluster_barrier(); }
template <class T>
AOT_DEV T *aot_cluster_map(T *p, int rank) { return (T *)emu_cluster_map(p, rank); }

/* Warp-specialized pipelines at wave 32 (sm_90a's): fibers switch only where they wait, so an
 * mbarrier is plain memory; tensor copies and remote stores land later and complete their
 * bytes then. */
#if AOT_EMU_WAVE == 32
#define AOT_PIPELINES 1
#define AOT_GRID_CONSTANT const
struct aot_mbar { /* 16 bytes, as on the device */
    short pending, count; /* arrivals still due, a phase's arrivals */
    int tx, phases;       /* bytes due, phases done */
    int remote;           /* another block's aot_store_remote has completed on it */
};
AOT_DEV void aot_emu_mbar_settle(aot_mbar *b)
{
    if (b->pending == 0 && b->tx == 0) b->phases++, b->pending = b->count;
    emu_progress();
}
AOT_DEV void aot_mbar_init(aot_mbar *b, int n) { *b = aot_mbar{(short)n, (short)n, 0, 0, 0}, emu_progress(); }
AOT_DEV void aot_mbar_arrive(aot_mbar *b) { b->pending--, aot_emu_mbar_settle(b); }
AOT_DEV void aot_mbar_expect(aot_mbar *b, int bytes) { b->tx += bytes, b->pending--, aot_emu_mbar_settle(b); }
AOT_DEV void aot_emu_mbar_complete(aot_mbar *b, int bytes) { b->tx -= bytes, aot_emu_mbar_settle(b); }
AOT_DEV void aot_mbar_wait_cluster(aot_mbar *b, int parity)
{
    while ((b->phases & 1) == parity) emu_spin();
}
/* The device's block-scope acquire does not order other blocks' remote stores: a wait that
 * needs them must be aot_mbar_wait_cluster, which the emulator checks here. */
AOT_DEV void aot_mbar_wait(aot_mbar *b, int parity)
{
    aot_mbar_wait_cluster(b, parity);
    if (b->remote) emu_misuse("aot_mbar_wait on an mbarrier that other blocks' aot_store_remote complete: use aot_mbar_wait_cluster");
}
/* The map is an emu_tile_map (emu.h); the box lands as aot_swz's panel of 64 columns, later
 * (emu_later: at the end of the round, or staggered a few rounds on), and then completes its
 * bytes on the mbarrier, so a read of the tile before the wait sees what was there. */
#include "aot_tile.h"
struct aot_emu_tile_copy {
    unsigned short *dst;
    aot_mbar *bar;
    emu_tile_map m;
    int c0, c1, c2;
};
AOT_DEV void aot_emu_tile_land(void *p)
{
    const aot_emu_tile_copy &o = *(const aot_emu_tile_copy *)p;
    const emu_tile_map &m = o.m;
    emu_async_touch(o.dst, (size_t)64 * m.box[1] * m.box[2] * 2, "a tensor copy overwrites");
    for (unsigned i2 = 0; i2 < m.box[2]; i2++)
        for (unsigned i1 = 0; i1 < m.box[1]; i1++)
            for (unsigned i0 = 0; i0 < 64; i0++) {
                const unsigned long long x = o.c0 + i0, y = o.c1 + i1, z = o.c2 + i2;
                const unsigned row = i2 * m.box[1] + i1;
                unsigned short v = 0;
                if (x < m.dims[0] && y < m.dims[1] && z < m.dims[2]) v = m.base[x + (y * m.strides[0] + z * m.strides[1]) / 2];
                o.dst[aot_swz((int)row, (int)i0, (int)(m.box[1] * m.box[2]))] = v;
            }
    aot_emu_mbar_complete(o.bar, (int)(64 * m.box[1] * m.box[2] * 2));
}
AOT_DEV void aot_copy_tile(unsigned short *dst, const void *map, int c0, int c1, int c2, aot_mbar *b)
{
    aot_emu_tile_copy o = {dst, b, {}, c0, c1, c2};
    memcpy(&o.m, map, sizeof o.m);
    emu_later(aot_emu_tile_land, &o, sizeof o);
}
/* Remote stores land later too, with their bytes on the target's mbarrier. */
struct aot_emu_remote_store {
    void *p;
    aot_mbar *bar;
    unsigned v[4];
};
AOT_DEV void aot_emu_remote_land(void *p)
{
    const aot_emu_remote_store &o = *(const aot_emu_remote_store *)p;
    memcpy(o.p, o.v, 16);
    aot_emu_mbar_complete(o.bar, 16);
}
AOT_DEV void aot_store_remote(void *p, aot_mbar *b, int rank, const unsigned (&v)[4])
{
    aot_mbar *target = (aot_mbar *)emu_cluster_map(b, rank);
    if (rank != aot_cluster_rank()) target->remote = 1;
    const aot_emu_remote_store o = {emu_cluster_map(p, rank), target, {v[0], v[1], v[2], v[3]}};
    emu_later(aot_emu_remote_land, &o, sizeof o);
}
AOT_DEV void aot_sync_named(int id, int threads) { emu_named_barrier(id, threads); }
AOT_DEV void aot_arrive_named(int id, int threads) { emu_named_arrive(id, threads); }
template <int N>
AOT_DEV void aot_regs_raise(void) {}
template <int N>
AOT_DEV void aot_regs_lower(void) {}
AOT_DEV int aot_cluster_id(void) { return emu_cluster_id(); }
AOT_DEV int aot_cluster_count(void) { return emu_cluster_count(); }
#endif

/* Asynchronous copies land when this thread waits for them, not before (as they may on the
 * device), so a read before the wait sees the bytes as they were, and a wait for too few
 * groups shows; aot_device.h's contract (wait_all: committed or not). */
#define AOT_COPY_ASYNC 1
AOT_DEV void aot_copy16_async(void *shared_dst, const void *src, bool valid)
{
    emu_copy_async(emu_aligned(shared_dst, 16), valid ? emu_aligned(src, 16) : NULL, 16);
}
AOT_DEV void aot_copy_async_commit(void) { emu_copy_commit(); }
AOT_DEV void aot_copy_async_wait_all(void) { emu_copy_wait(-1); }
#define AOT_COPY_ASYNC_PRIOR 1
template <int N>
AOT_DEV void aot_copy_async_wait_prior(void) { emu_copy_wait(N == 0 ? -1 : N); }

/* The proxies: a copy's bytes, once landed, reach warp-group products and tensor copies only
 * after the waiting thread's aot_wg_shared_fence (emu.h, emu_async_touch); plain stores are
 * not tracked. */
#define AOT_WG_SHARED_FENCE 1
AOT_DEV void aot_wg_shared_fence(void) { emu_proxy_fence(); }
#define AOT_WG_READS 1
AOT_DEV void aot_wg_reads(const unsigned short *t, int first, int n) { emu_async_touch(t + first, (size_t)n * 2, "a warp-group product reads"); }

/* Blocks run one after another on one host thread: plain memory is already ordered. */
AOT_DEV int aot_atomic_add_i32(int *p, int v) { const int old = *p; *p = old + v; return old; }
AOT_DEV void aot_fence_device(void) {}
AOT_DEV int aot_load_device_i32(const int *p) { return *p; }

/* Matrix fragments: the emulator plays the instructions of the wave size it runs (wave 64:
 * every MFMA shape, gfx950's included, or with AOT_EMU_GFX942 gfx942's only, so kernels take
 * the shapes they take there; wave 32: mma.sync m16n8k16), as one wave operation. */
#if AOT_EMU_WAVE == 64
#define AOT_MMA_MFMA 1
#if !defined(AOT_EMU_GFX942)
#define AOT_MMA_MFMA_GFX950 1
#endif
#include "aot_mfma.h"
#else
#define AOT_MMA_SYNC 1
#include "aot_mma_sync.h"
#endif

template <class S>
AOT_DEV void aot_mma_bf16(S, float (&c)[S::C], const unsigned short (&a)[S::A], const unsigned short (&b)[S::B])
{
    emu_mma(S::M, S::N, S::K, 0, c, a, b);
}

template <class S>
AOT_DEV void aot_mma_f16(S, float (&c)[S::C], const unsigned short (&a)[S::A], const unsigned short (&b)[S::B])
{
    emu_mma(S::M, S::N, S::K, 1, c, a, b);
}

/* Wraps a kernel taking its argument struct by value into the emulator's entry type. */
#define AOT_EMU_ENTRY(kernel, args_t) \
    extern "C" void kernel##_emu(const void *p) { kernel(*(const args_t *)p); }

#endif
