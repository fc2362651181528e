/* mma_probe.hip : one kernel per matrix shape the target has. Each lane loads its fragments
 * through the shape's maps, issues the instruction once, and stores its part of D. Built for
 * the AMD targets (the tests look for the MFMA instructions in the code objects), for sm_90a
 * (tests/gpu runs it against the emulator) and for the host emulator (tests/mma). */
#include "aot_device.h"
#include "mma_probe.h"

template <class S>
AOT_DEV void mma_probe(const aot_mma_probe_args &p)
{
    const int lane = aot_lane();
    unsigned short a[S::A], b[S::B];
    float c[S::C];
#pragma unroll
    for (int i = 0; i < S::A; i++) a[i] = p.a[S::a_row(lane, i) * S::K + S::a_k(lane, i)];
#pragma unroll
    for (int i = 0; i < S::B; i++) b[i] = p.b[S::b_k(lane, i) * S::N + S::b_col(lane, i)];
#pragma unroll
    for (int i = 0; i < S::C; i++) c[i] = p.c[S::c_row(lane, i) * S::N + S::c_col(lane, i)];
    if (p.f16) aot_mma_f16(S(), c, a, b);
    else aot_mma_bf16(S(), c, a, b);
#pragma unroll
    for (int i = 0; i < S::C; i++) p.d[S::c_row(lane, i) * S::N + S::c_col(lane, i)] = c[i];
}

#define MMA_PROBE(name, shape)                                                                 \
    AOT_KERNEL AOT_LAUNCH_BOUNDS(AOT_WAVE) void mma_probe_##name(aot_mma_probe_args p)         \
    {                                                                                          \
        mma_probe<shape>(p);                                                                   \
    }                                                                                          \
    AOT_EMU_ENTRY(mma_probe_##name, aot_mma_probe_args)

#if defined(AOT_MMA_SYNC)
MMA_PROBE(m16n8k16, aot_mma_m16n8k16)
#endif
#if defined(AOT_MMA_MFMA)
MMA_PROBE(32x32x8, aot_mfma_32x32x8)
MMA_PROBE(16x16x16, aot_mfma_16x16x16)
#endif
#if defined(AOT_MMA_MFMA_GFX950)
MMA_PROBE(32x32x16, aot_mfma_32x32x16)
MMA_PROBE(16x16x32, aot_mfma_16x16x32)
#endif
