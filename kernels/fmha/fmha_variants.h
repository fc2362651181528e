/* fmha_variants.h : every kernel of fmha.hip, one per head-dim pair; see
 * kernels/include/aot_variants.h. */
#ifndef AOT_FMHA_VARIANTS_H
#define AOT_FMHA_VARIANTS_H

/* X(name, kargs, d, dv, blocks): q/k head dim, v/out head dim, blocks a multiprocessor holds */
#define AOT_FMHA_VARIANTS(X)                                                                    \
    X(fmha_fwd_d64, aot_fmha_kargs, 64, 64, 4)                                                  \
    X(fmha_fwd_d128, aot_fmha_kargs, 128, 128, 3)                                               \
    X(fmha_fwd_d192_128, aot_fmha_kargs, 192, 128, 3)                                           \
    X(fmha_fwd_d256, aot_fmha_kargs, 256, 256, 2)

/* X(name, kargs, d, dv, keys, groups, diagonal): built only where AOT_PIPELINES is (sm_90a; the
 * emulator at wave 32); keys a step of the key loop (a ring stage), as many as let two stages
 * fit; groups of 64 query rows a tile, each its own warp group; diagonal 0: not taken where a
 * row's keys end at its diagonal (causal, a right window), which the kernels above do faster.
 * d = 64 takes three groups: with two, a group's softmax outlasted the other's products (half
 * those of d = 128), and the kernels above were 3-8 % faster everywhere; with three, 1.11x
 * them without a mask, 0.97x causal (H100, docs/performance.md). */
#define AOT_FMHA_PIPELINE_VARIANTS(X)                                                           \
    X(fmha_ws_d64, aot_fmha_ws_kargs, 64, 64, 128, 3, 0)                                        \
    X(fmha_ws_d128, aot_fmha_ws_kargs, 128, 128, 128, 2, 1)                                     \
    X(fmha_ws_d192_128, aot_fmha_ws_kargs, 192, 128, 128, 2, 1)                                 \
    X(fmha_ws_d256, aot_fmha_ws_kargs, 256, 256, 64, 2, 1)

#endif
