/* op_fmha.c : aiter_aot_fmha_varlen_fwd: argument checks, variant choice and the launch. The
 * kernels are kernels/fmha/fmha.hip. */
#include <stdint.h>

#include "aiter_aot.h"
#include "api.h"
#include "fmha_kargs.h"
#include "kernel_ids.h"
#include "op.h"

/* The kernel for a head-dim pair, from fmha_variants.h; NULL for a pair none is built for. */
static const char *variant(int32_t dq, int32_t dv)
{
#define FMHA_ROW(name, kargs, d, d_v, blocks) {AOT_K_##name, d, d_v},
    static const struct { aot_kernel_id id; int32_t d, dv; } variants[] = {AOT_FMHA_VARIANTS(FMHA_ROW)};
#undef FMHA_ROW
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (variants[i].d == dq && variants[i].dv == dv) return aot_kernel_name(variants[i].id);
    return NULL;
}

/* The row strides of q, k, v and out as given (0: packed) and their packed values. */
static void row_strides(const aiter_aot_fmha_varlen_fwd_args *a, int64_t given[4], int64_t packed[4])
{
    given[0] = a->q_row_stride, given[1] = a->k_row_stride, given[2] = a->v_row_stride, given[3] = a->out_row_stride;
    packed[0] = (int64_t)a->hq * a->head_dim, packed[1] = (int64_t)a->hk * a->head_dim;
    packed[2] = (int64_t)a->hk * a->head_dim_v, packed[3] = (int64_t)a->hq * a->head_dim_v;
}

static aiter_aot_status check(const aiter_aot_fmha_varlen_fwd_args *a, aot_diag *d)
{
    AOT_INVALID_IF(!a->q || !a->k || !a->v || !a->out || !a->cu_seqlens_q || !a->cu_seqlens_k, d,
                   "fmha_varlen_fwd: q, k, v, out, cu_seqlens_q and cu_seqlens_k must not be NULL");
    AOT_INVALID_IF(a->dtype != AITER_AOT_DTYPE_BF16 && a->dtype != AITER_AOT_DTYPE_F16, d,
                   "fmha_varlen_fwd: dtype %d; supported BF16 and F16", (int)a->dtype);
    AOT_INVALID_IF(!variant(a->head_dim, a->head_dim_v), d,
                   "fmha_varlen_fwd: head dims (%d, %d); supported (64, 64), (128, 128), (192, 128), (256, 256)",
                   a->head_dim, a->head_dim_v);
    AOT_INVALID_IF(a->hq < 1 || a->hk < 1 || a->hq % a->hk, d,
                   "fmha_varlen_fwd: hq = %d, hk = %d; need hq a multiple of hk, both >= 1", a->hq, a->hk);
    AOT_INVALID_IF(a->batch < 0 || a->total_q < 0 || a->max_seqlen_q < 0, d,
                   "fmha_varlen_fwd: batch, total_q and max_seqlen_q must be >= 0");
    AOT_INVALID_IF(a->window_left < -1 || a->window_right < -1, d,
                   "fmha_varlen_fwd: window sizes are >= 0, or -1 for unbounded");
    AOT_INVALID_IF(!(a->softmax_scale == a->softmax_scale) || !(a->logits_soft_cap >= 0), d,
                   "fmha_varlen_fwd: softmax_scale must be a number and logits_soft_cap >= 0");
    int64_t given[4], packed[4];
    row_strides(a, given, packed);
    static const char *name[4] = {"q", "k", "v", "out"};
    for (int i = 0; i < 4; i++) { /* q, k, v are copied 16 bytes at a time, out written in pairs */
        const int unit = i < 3 ? 8 : 2;
        AOT_INVALID_IF(given[i] && (given[i] < packed[i] || given[i] % unit), d,
                       "fmha_varlen_fwd: %s row stride %lld; need 0 (packed) or a multiple of %d that is >= %lld",
                       name[i], (long long)given[i], unit, (long long)packed[i]);
    }
    AOT_INVALID_IF(aot_misaligned(a->q, 16) || aot_misaligned(a->k, 16) || aot_misaligned(a->v, 16), d,
                   "fmha_varlen_fwd: q, k and v must be 16-byte aligned");
    AOT_INVALID_IF(aot_misaligned(a->out, 4) || aot_misaligned(a->softmax_lse, 4) ||
                       aot_misaligned(a->cu_seqlens_q, 4) || aot_misaligned(a->cu_seqlens_k, 4),
                   d,
                   "fmha_varlen_fwd: out, softmax_lse and cu_seqlens must be 4-byte aligned");
    return AITER_AOT_STATUS_OK;
}

aiter_aot_status aiter_aot_fmha_varlen_fwd(const aiter_aot_fmha_varlen_fwd_args *args, void *stream)
{
    aot_diag dd, *d = &dd;
    aiter_aot_fmha_varlen_fwd_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "fmha_varlen_fwd", d);
    if (s == AITER_AOT_STATUS_OK) s = check(&a, d);
    if (s != AITER_AOT_STATUS_OK || a.batch == 0 || a.max_seqlen_q == 0) return aot_api_return(s, d);
    aot_op_kernel kern;
    s = aot_op_find(variant(a.head_dim, a.head_dim_v), sizeof(aot_fmha_kargs), &kern, d);
    if (s != AITER_AOT_STATUS_OK) return aot_api_return(s, d);
    const int32_t rows_per_block = AOT_FMHA_WAVES * AOT_FMHA_ROWS, tiles = (a.max_seqlen_q + rows_per_block - 1) / rows_per_block;
    if ((int64_t)tiles * a.hq * a.batch > INT32_MAX) return aot_api_return(AOT_INVALID(d, "fmha_varlen_fwd: grid too large"), d);
    int64_t given[4], packed[4], row[4];
    row_strides(&a, given, packed);
    for (int i = 0; i < 4; i++) row[i] = given[i] ? given[i] : packed[i];
    aot_fmha_kargs k = {.q = a.q, .k = a.k, .v = a.v, .out = a.out, .lse = a.softmax_lse, .cu_q = a.cu_seqlens_q,
                        .cu_k = a.cu_seqlens_k, .q_row = row[0], .k_row = row[1], .v_row = row[2], .o_row = row[3],
                        .batch = a.batch, .hq = a.hq, .hk = a.hk, .total_q = a.total_q, .q_tiles = tiles,
                        .causal = a.causal != 0, .window_left = a.window_left, .window_right = a.window_right,
                        .f16 = a.dtype == AITER_AOT_DTYPE_F16, .scale = a.softmax_scale, .softcap = a.logits_soft_cap};
    s = aot_op_run(&kern, &k, (unsigned)(tiles * a.hq * a.batch), AOT_FMHA_WAVES * kern.wave, 0, 0, stream, d);
    return aot_api_return(s, d);
}
