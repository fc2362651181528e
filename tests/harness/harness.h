/* harness.h : op correctness cases shared by the emulator tests (tests/emu) and the GPU tests
 * (tests/gpu). Each case draws fresh random inputs, poisons the outputs, runs the op through
 * the public API, and checks every output element against the fp64 reference (tests/ref). */
#ifndef AOT_HARNESS_H
#define AOT_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "aiter_aot.h"

/* Where the op's buffers live. */
typedef struct {
    void *(*alloc)(size_t bytes);          /* poisoned (0xff) */
    void (*release)(void *p);
    int (*upload)(void *dst, const void *src, size_t bytes);
    int (*download)(void *dst, const void *src, size_t bytes);
    int (*sync)(void);
    void *stream;
} harness_mem;

typedef struct {
    int passed, failed;
    int verbose;
} harness_tally;

typedef struct {
    int tokens, experts, k, renormalize;
    aiter_aot_dtype dtype;
    int special;   /* 1: plant NaN, +inf and -inf in some rows; 2: equal logits (ties, +0 and -0); 3: monotonic rows;
                    * 4: one logit per row 120 above the others' scale; 5: logits a few ulps apart */
    int64_t extra_stride; /* row stride = experts + extra_stride */
} topk_case;

typedef struct {
    int tokens, experts, k, block_size;
    int masked;    /* 1: a random expert mask */
    int skewed;    /* 1: tokens go to few experts, so most have zero tokens */
    size_t moe_buf_bytes;
} sort_case;

void harness_topk(const harness_mem *m, const topk_case *c, uint64_t seed, harness_tally *t);
void harness_sort(const harness_mem *m, const sort_case *c, uint64_t seed, harness_tally *t);
/* Bad arguments: every one must give INVALID_ARGUMENT (nothing is launched). */
void harness_bad_args(const harness_mem *m, harness_tally *t);

/* Counts one result; prints it when it failed or the tally is verbose. */
void harness_report(harness_tally *t, int ok, const char *what, const char *detail);

/* Counts "OP rejects WHAT": s must be INVALID_ARGUMENT with a message. */
void harness_rejects(harness_tally *t, const char *op, const char *what, aiter_aot_status s);

/* mHC cases (harness_mhc.c). */
enum { MHC_PRE_FULL, MHC_GEMM_THEN_PRE, MHC_POST, MHC_FUSED, MHC_HEAD, MHC_PRE_DELAYED, MHC_FUSED_DELAYED };
/* flags of the delayed ops' cases (MHC_WIDE also of pre_full's) */
enum {
    MHC_NO_PRE_MIX = 1, /* no previous pre mix: layer_input is stream 0 */
    MHC_AUX = 2,        /* fused_post_pre_delayed: the streams' mean too */
    MHC_X_C = 4,        /* pre_delayed: the projection input is a [T, C] x with fn [24, C] */
    MHC_X_4C = 8,       /* pre_delayed: the projection input is a [T, 4C] x other than the residual */
    MHC_WIDE = 16       /* fn ~ 1e-2 N(0,1), scale ~ N(0,1): logits of order 1, so the projection's
                         * rounding shows in post, comb and next_pre_mix (with vLLM's draws the
                         * projection moves them by about 1e-7) */
};
typedef struct {
    int op, tokens, hidden;
    int norm, broadcast;  /* pre variants */
    int splits;           /* MHC_GEMM_THEN_PRE and MHC_FUSED; MHC_PRE_FULL and the delayed ops: fn
                           * this many floats into its buffer (1: only 4-byte aligned) */
    int flags;            /* MHC_PRE_DELAYED, MHC_FUSED_DELAYED: MHC_NO_PRE_MIX | ... */
} mhc_case;
void harness_mhc(const harness_mem *m, const mhc_case *c, uint64_t seed, harness_tally *t);
void harness_mhc_bad_args(const harness_mem *m, harness_tally *t);

/* FMHA varlen forward cases (harness_fmha.c). Query lengths are drawn in 1..max_q (one
 * sequence of length 0 when batch >= 3), key lengths are the query length plus 0..extra_k
 * (extra_k < 0: minus 0..-extra_k, at least 0; with causal, the first rows then see no key). */
typedef struct {
    int batch, max_q, extra_k, hq, hk, d, dv;
    int causal, window_left, window_right;
    float softcap;
    aiter_aot_dtype dtype;
    int sample;  /* check 1 row in `sample` (and each sequence's last) against fp64; all are
                  * checked to be written */
    int pad;     /* a multiple of 8: elements between token rows beyond the packed ones (0: packed); the
                  * padding holds NaNs in q, k, v and must stay untouched in out */
    int tail;    /* rows of NaN in k and v after the last sequence, counted in total_k (no
                  * query sees them); -1: none, and total_k not given (0) */
    int max_extra; /* added to the max_seqlen_q passed (a larger bound is allowed): 513 or more
                    * takes d <= 128 to the warp-specialized kernels on sm_90a */
} fmha_case;
void harness_fmha(const harness_mem *m, const fmha_case *c, uint64_t seed, harness_tally *t);
void harness_fmha_bad_args(const harness_mem *m, harness_tally *t);

/* Prints "N passed, N failed" and returns the exit status. */
int harness_finish(const harness_tally *t);

#endif
