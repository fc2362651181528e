/* op_fmha.c : aiter_aot_fmha_varlen_fwd: argument checks, variant choice and the launch. The
 * kernels are kernels/fmha/fmha.hip. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

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

/* The warp-specialized kernel for a head-dim pair, its keys a step and its row groups a tile;
 * NULL for a pair none is built for, or where rows end at their diagonal (`diagonal`) and the
 * variant does not take them. */
static const char *ws_variant(int32_t dq, int32_t dv, bool diagonal, int32_t *keys, int32_t *groups)
{
#define FMHA_WS_ROW(name, kargs, d, d_v, k, g, diag) {AOT_K_##name, d, d_v, k, g, diag},
    static const struct { aot_kernel_id id; int32_t d, dv, keys, groups; bool diagonal; } variants[] = {
        AOT_FMHA_PIPELINE_VARIANTS(FMHA_WS_ROW)};
#undef FMHA_WS_ROW
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (variants[i].d == dq && variants[i].dv == dv && (variants[i].diagonal || !diagonal))
            return *keys = variants[i].keys, *groups = variants[i].groups, aot_kernel_name(variants[i].id);
    return NULL;
}

/* The row strides of q, k, v and out as given (0: packed) and their packed values. */
static void row_strides(const aiter_aot_fmha_varlen_fwd_args *a, int64_t given[4], int64_t packed[4])
{
    given[0] = a->q_row_stride, given[1] = a->k_row_stride, given[2] = a->v_row_stride, given[3] = a->out_row_stride;
    packed[0] = (int64_t)a->hq * a->head_dim, packed[1] = (int64_t)a->hk * a->head_dim;
    packed[2] = (int64_t)a->hk * a->head_dim_v, packed[3] = (int64_t)a->hq * a->head_dim_v;
}

/* Row strides up to 2^31 elements: a row index below 2^31 times one, in bytes, stays below 2^63. */
#define FMHA_MAX_ROW_STRIDE (INT64_C(1) << 31)

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
    AOT_INVALID_IF(a->batch < 0 || a->total_q < 0 || a->total_k < 0 || a->max_seqlen_q < 0, d,
                   "fmha_varlen_fwd: batch, total_q, total_k and max_seqlen_q must be >= 0");
    AOT_INVALID_IF(a->window_left < -1 || a->window_right < -1, d,
                   "fmha_varlen_fwd: window sizes are >= 0, or -1 for unbounded");
    AOT_INVALID_IF(!isfinite(a->softmax_scale) || !isfinite(a->logits_soft_cap) || a->logits_soft_cap < 0, d,
                   "fmha_varlen_fwd: softmax_scale must be finite and logits_soft_cap finite and >= 0");
    AOT_INVALID_IF(a->total_k > INT32_MAX, d, "fmha_varlen_fwd: total_k = %lld; at most %d", (long long)a->total_k,
                   INT32_MAX);
    int64_t given[4], packed[4];
    row_strides(a, given, packed);
    static const char *name[4] = {"q", "k", "v", "out"};
    for (int i = 0; i < 4; i++) { /* q, k, v are copied 16 bytes at a time, out written in pairs */
        const int unit = i < 3 ? 8 : 2;
        AOT_INVALID_IF(given[i] && (given[i] < packed[i] || given[i] % unit), d,
                       "fmha_varlen_fwd: %s row stride %lld; need 0 (packed) or a multiple of %d that is >= %lld",
                       name[i], (long long)given[i], unit, (long long)packed[i]);
        /* a row index (int32) times the stride, in bytes, must not pass int64 */
        AOT_INVALID_IF((given[i] ? given[i] : packed[i]) > FMHA_MAX_ROW_STRIDE, d,
                       "fmha_varlen_fwd: %s rows %lld elements apart; at most %lld", name[i],
                       (long long)(given[i] ? given[i] : packed[i]), (long long)FMHA_MAX_ROW_STRIDE);
    }
    AOT_INVALID_IF(aot_misaligned(a->q, 16) || aot_misaligned(a->k, 16) || aot_misaligned(a->v, 16), d,
                   "fmha_varlen_fwd: q, k and v must be 16-byte aligned");
    AOT_INVALID_IF(aot_misaligned(a->out, 4) || aot_misaligned(a->softmax_lse, 4) ||
                       aot_misaligned(a->cu_seqlens_q, 4) || aot_misaligned(a->cu_seqlens_k, 4),
                   d,
                   "fmha_varlen_fwd: out, softmax_lse and cu_seqlens must be 4-byte aligned");
    return AITER_AOT_STATUS_OK;
}

/* The copy engine's view of q, k or v ([tokens, heads, d], rows `row` elements apart) in boxes
 * of 64 elements of d, one head and `rows` tokens. */
static aiter_aot_status token_map(const aot_op_kernel *kern, aot_tile_map *map, const void *base, int32_t tokens,
                                  int32_t heads, int32_t d, int64_t row, uint32_t rows, aot_diag *dg)
{
    const uint64_t dims[3] = {(uint64_t)d, (uint64_t)heads, (uint64_t)tokens}, strides[2] = {(uint64_t)d * 2, (uint64_t)row * 2};
    const uint32_t box[3] = {64, 1, rows};
    return kern->gpu->tile_map(map, base, dims, strides, box, dg);
}

/* Short sequences at d <= 128 run faster on the kernels that copy with threads: H200,
 * 2026-12-06, b64 s512 h32 d128 causal: 239.8 against 214.2 TFLOP/s (docs/performance.md). */
#define WS_MIN_SEQLEN_Q 513

/* The warp-specialized kernel (fmha_ws_*): where one is built for the head dims and the device
 * (sm_90a), its vendor makes tensor maps, the caller gave total_k and the shape is one it is
 * faster at.
 * @return OK once launched, UNSUPPORTED where it does not serve, or an error. */
static aiter_aot_status ws_run(const aiter_aot_fmha_varlen_fwd_args *a, const aot_fmha_kargs *base, void *stream, aot_diag *d)
{
    /* where a row's keys end at its diagonal, tile j costs about j + 1 steps: deal them in pairs
     * of equal cost (ws_units in fmha.hip) */
    const bool diagonal = base->causal || base->window_right >= 0;
    int32_t keys, groups;
    const char *name = ws_variant(a->head_dim, a->head_dim_v, diagonal, &keys, &groups);
    if (name == NULL || a->total_k < 1 || a->total_q < 1 || (a->head_dim <= 128 && a->max_seqlen_q < WS_MIN_SEQLEN_Q))
        return AITER_AOT_STATUS_UNSUPPORTED;
    aot_op_kernel kern;
    const aiter_aot_status found = aot_op_find(name, sizeof(aot_fmha_ws_kargs), &kern, d);
    if (found == AITER_AOT_STATUS_NO_CODE_OBJECT || (found == AITER_AOT_STATUS_OK && kern.gpu->tile_map == NULL))
        return AITER_AOT_STATUS_UNSUPPORTED;
    AOT_FORWARD(found);
    aot_fmha_ws_kargs w;
    memset(&w, 0, sizeof w);
    w.a = *base;
    w.a.q_tiles = (int32_t)(((int64_t)a->max_seqlen_q + AOT_FMHA_WS_ROWS(groups) - 1) / AOT_FMHA_WS_ROWS(groups));
    AOT_FORWARD(token_map(&kern, &w.q, a->q, a->total_q, a->hq, a->head_dim, base->q_row, 64, d));
    AOT_FORWARD(token_map(&kern, &w.k, a->k, (int32_t)a->total_k, a->hk, a->head_dim, base->k_row, (uint32_t)keys, d));
    AOT_FORWARD(token_map(&kern, &w.v, a->v, (int32_t)a->total_k, a->hk, a->head_dim_v, base->v_row, (uint32_t)keys, d));
    w.a.pairs = diagonal;
    int sms;
    AOT_FORWARD(aot_op_multiprocessors(&sms, d));
    const int64_t units = AOT_FMHA_WS_UNITS_PER_HEAD(w.a.q_tiles, w.a.pairs) * (int64_t)a->hq * a->batch;
    if (units > INT32_MAX - (int64_t)sms) return AITER_AOT_STATUS_UNSUPPORTED; /* a block's unit index would pass int32 */
    return aot_op_run(&kern, &w, (unsigned)(units < sms ? units : sms), AOT_FMHA_WS_THREADS(groups), /* persistent */
                      AOT_FMHA_WS_SHARED(a->head_dim, a->head_dim_v, keys, groups), 0, stream, d);
}

aiter_aot_status aiter_aot_fmha_varlen_fwd(const aiter_aot_fmha_varlen_fwd_args *args, void *stream)
{
    aot_diag dd, *d = &dd;
    aiter_aot_fmha_varlen_fwd_args a;
    /* callers built against 0.1, before total_k, pass the size up to it (its padding included) */
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, offsetof(aiter_aot_fmha_varlen_fwd_args, total_k), "fmha_varlen_fwd", d);
    if (s == AITER_AOT_STATUS_OK) s = check(&a, d);
    if (s != AITER_AOT_STATUS_OK || a.batch == 0 || a.max_seqlen_q == 0) return aot_api_return(s, d);
    const int64_t rows_per_block = AOT_FMHA_WAVES * AOT_FMHA_ROWS, tiles = (a.max_seqlen_q + rows_per_block - 1) / rows_per_block;
    /* tiles < 2^26 and hq < 2^31: their product fits int64; the batch is divided out, not multiplied */
    if (tiles * a.hq > INT32_MAX / a.batch)
        return aot_api_return(AOT_INVALID(d, "fmha_varlen_fwd: %lld blocks of %lld rows a head x hq = %d x batch = %d; at most %d",
                                          (long long)tiles, (long long)rows_per_block, a.hq, a.batch, INT32_MAX), d);
    int64_t given[4], packed[4], row[4];
    row_strides(&a, given, packed);
    for (int i = 0; i < 4; i++) row[i] = given[i] ? given[i] : packed[i];
    aot_fmha_kargs k = {.q = a.q, .k = a.k, .v = a.v, .out = a.out, .lse = a.softmax_lse, .cu_q = a.cu_seqlens_q,
                        .cu_k = a.cu_seqlens_k, .q_row = row[0], .k_row = row[1], .v_row = row[2], .o_row = row[3],
                        .batch = a.batch, .hq = a.hq, .hk = a.hk, .total_q = a.total_q, .q_tiles = (int32_t)tiles,
                        .causal = a.causal != 0, .window_left = a.window_left, .window_right = a.window_right,
                        .f16 = a.dtype == AITER_AOT_DTYPE_F16, .scale = a.softmax_scale, .softcap = a.logits_soft_cap};
    s = ws_run(&a, &k, stream, d);
    if (s != AITER_AOT_STATUS_UNSUPPORTED) return aot_api_return(s, d);
    aot_op_kernel kern;
    s = aot_op_find(variant(a.head_dim, a.head_dim_v), sizeof(aot_fmha_kargs), &kern, d);
    if (s == AITER_AOT_STATUS_OK) s = aot_op_run(&kern, &k, (unsigned)(tiles * a.hq * a.batch), AOT_FMHA_WAVES * kern.wave, 0, 0, stream, d);
    return aot_api_return(s, d);
}
