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

/* X(name, kargs, d, dv, keys): built only where AOT_PIPELINES is (sm_90a; the emulator at wave
 * 32); keys a step of the key loop (a ring stage), as many as let two stages fit. None at
 * d = 64: the kernels above were 3-8 % faster there on the H100 and the H200, causal or not. */
#define AOT_FMHA_PIPELINE_VARIANTS(X)                                                           \
    X(fmha_ws_d128, aot_fmha_ws_kargs, 128, 128, 128)                                           \
    X(fmha_ws_d192_128, aot_fmha_ws_kargs, 192, 128, 128)                                       \
    X(fmha_ws_d256, aot_fmha_ws_kargs, 256, 256, 64)

#endif
