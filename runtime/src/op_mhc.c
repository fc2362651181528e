/* op_mhc.c : the aiter_aot_mhc_* ops: argument checks, split choice and launches. The kernels
 * are kernels/mhc/mhc.hip. */
#include <stdint.h>
#include <string.h>

#include "aiter_aot.h"
#include "api.h"
#include "kernel_ids.h"
#include "mhc_kargs.h"
#include "op.h"

#define MAX_TOKENS (1 << 24)
#define MAX_SPLITS 128

/* ---- shared checks (each returns OK or INVALID_ARGUMENT with the message in d) ---- */

/* Do [a, a + bytes) and [b, b + bytes) share a byte? (An output that overlaps an input another
 * block still reads is not an in-place update: the ops refuse it.) */
static int overlap(const void *a, const void *b, size_t bytes)
{
    const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    return bytes && x < y + bytes && y < x + bytes;
}

/* Bytes of a bf16 residual [tokens][4][hidden] (tokens <= 2^24, hidden <= 16384: no overflow). */
static size_t residual_bytes(int32_t tokens, int32_t hidden) { return (size_t)tokens * AOT_MHC_N * (size_t)hidden * 2; }

static aiter_aot_status check_shape(const char *op, int32_t hc_mult, int32_t tokens, int32_t hidden, aot_diag *d)
{
    AOT_INVALID_IF(hc_mult != AOT_MHC_N, d, "%s: hc_mult = %d; only 4 streams are built", op, hc_mult);
    AOT_INVALID_IF(hidden < 256 || hidden > AOT_MHC_MAX_HIDDEN || hidden % 256, d,
                   "%s: hidden = %d; need a multiple of 256 in 256..%d", op, hidden, AOT_MHC_MAX_HIDDEN);
    AOT_INVALID_IF(tokens < 0 || tokens > MAX_TOKENS, d, "%s: tokens = %d; supported 0..%d", op, tokens, MAX_TOKENS);
    return AITER_AOT_STATUS_OK;
}

/* Every pointer p[i] is non-NULL and aligned to align[i] bytes ('2', '4', or 'x' for 16);
 * names lists them. */
static aiter_aot_status check_ptrs(const char *op, const char *names, const char *align, const void *const *p, aot_diag *d)
{
    for (int i = 0; align[i]; i++) {
        if (p[i] != NULL && !aot_misaligned(p[i], align[i] == 'x' ? 16 : (size_t)(align[i] - '0'))) continue;
        const char *name = names;
        for (int j = 0; j < i; j++) name = strchr(name, ',') + 2;
        int len = (int)(strchr(name, ',') ? (size_t)(strchr(name, ',') - name) : strlen(name));
        return AOT_INVALID(d, "%s: %.*s is %s", op, len, name, p[i] ? "not aligned (bf16 tensors: 16 bytes, fp32: 4)" : "NULL");
    }
    return AITER_AOT_STATUS_OK;
}
#define PTRS(op, names, align, ...) check_ptrs(op, names, align, (const void *const[]){__VA_ARGS__}, d)

/* At least one chunk of the 4 * hidden projection inputs per split. (The one-stream and fused
 * projections have a quarter as many chunks; their surplus splits add zeros.) */
static int32_t max_splits(int32_t hidden)
{
    const int32_t chunks = AOT_MHC_N * hidden / AOT_MHC_GEMM_CHUNK;
    return chunks < MAX_SPLITS ? chunks : MAX_SPLITS;
}

static aiter_aot_status check_splits(const char *op, int32_t splits, int32_t hidden, aot_diag *d)
{
    AOT_INVALID_IF(splits < 1 || splits > max_splits(hidden), d,
                   "%s: splits = %d; need 1..%d for hidden = %d", op, splits, max_splits(hidden), hidden);
    return AITER_AOT_STATUS_OK;
}

/* ---- split choice ---- */

/* Splits are chosen in units of 64 tokens (a block of the matrix-unit projection holds 256
 * tokens at wave 32, 128 at wave 64). */
static int32_t tiles_of(int32_t tokens) { return tokens > 64 ? (tokens + 63) / 64 : 1; }

/* The largest split pre_full may pick, whatever the device (sizes its workspace). */
static int32_t split_bound(int32_t tokens, int32_t hidden)
{
    int32_t b = 2048 / tiles_of(tokens);
    b = b < 1 ? 1 : b;
    return b < max_splits(hidden) ? b : max_splits(hidden);
}

/* About four blocks per multiprocessor, no more than the bound. */
static int32_t pick_splits(int32_t tokens, int32_t hidden, int mps)
{
    int32_t s = 4 * mps / tiles_of(tokens);
    s = s < 1 ? 1 : s;
    return s < split_bound(tokens, hidden) ? s : split_bound(tokens, hidden);
}

aiter_aot_status aiter_aot_mhc_splits(int32_t tokens, int32_t hidden, int32_t *splits)
{
    aot_diag dd, *d = &dd;
    aiter_aot_status s = check_shape("mhc_splits", AOT_MHC_N, tokens, hidden, d);
    if (s == AITER_AOT_STATUS_OK && splits == NULL) s = AOT_INVALID(d, "mhc_splits: splits is NULL");
    int mps = 0;
    if (s == AITER_AOT_STATUS_OK) s = aot_op_multiprocessors(&mps, d);
    if (s == AITER_AOT_STATUS_OK) *splits = pick_splits(tokens, hidden, mps);
    return aot_api_return(s, d);
}

/* pre_full's workspace: the partials, then fn's terms from the next 16-byte boundary (the
 * copies read them 16 bytes at a time). */
size_t aiter_aot_mhc_workspace_size(int32_t tokens, int32_t hidden)
{
    if (check_shape("mhc_workspace_size", AOT_MHC_N, tokens, hidden, NULL) != AITER_AOT_STATUS_OK) return 0;
    return (size_t)split_bound(tokens, hidden) * (size_t)tokens * (AOT_MHC_MIX + 1) * sizeof(float) + 16 +
           AOT_MHC_TERMS_BYTES(AOT_MHC_N * hidden);
}

/* ---- launches ---- */

/* matrix_units: mhc_gemm_n4/n1 (AOT_MHC_TC_TOKENS a wave, the staged residual in dynamic shared
 * memory), else mhc_gemm_fused. flags: as aot_op_run's. */
static aiter_aot_status launch_gemm(const char *name, int matrix_units, aot_mhc_gemm_kargs *k, unsigned flags,
                                    void *stream, aot_diag *d)
{
    aot_op_kernel kern;
    AOT_FORWARD(aot_op_find(name, sizeof *k, &kern, d));
    unsigned threads = matrix_units ? AOT_MHC_TC_BLOCK : AOT_MHC_BLOCK;
    unsigned tokens_per_block = threads / kern.wave * (matrix_units ? AOT_MHC_TC_TOKENS : AOT_MHC_GEMM_TOKENS);
    unsigned tiles = ((unsigned)k->tokens + tokens_per_block - 1) / tokens_per_block;
    unsigned shared = matrix_units ? AOT_MHC_TC_SHARED(kern.wave, k->fn_terms != NULL) : 0;
    return aot_op_run(&kern, k, tiles * (unsigned)k->splits, threads, shared, flags, stream, d);
}

static const char *pre_kernel(int broadcast, int norm, int delayed)
{
#define PRE_ROW(name, kargs, b, n, dl) {AOT_K_##name, b, n, dl},
    static const struct { aot_kernel_id id; bool broadcast, norm, delayed; } variants[] = {AOT_MHC_PRE_VARIANTS(PRE_ROW)};
#undef PRE_ROW
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (variants[i].broadcast == (broadcast != 0) && variants[i].norm == (norm != 0) &&
            variants[i].delayed == (delayed != 0))
            return aot_kernel_name(variants[i].id);
    return "mhc_pre (no such variant)"; /* not reached: the ops ask only for variants of the list */
}

/* ---- prenorm_gemm ---- */

static aiter_aot_status gemm_check(const aiter_aot_mhc_prenorm_gemm_args *a, aot_diag *d)
{
    AOT_FORWARD(check_shape("mhc_prenorm_gemm", a->hc_mult, a->tokens, a->hidden, d));
    if (a->tokens == 0) return AITER_AOT_STATUS_OK; /* nothing is read: an empty tensor's NULL will do */
    AOT_FORWARD(check_splits("mhc_prenorm_gemm", a->splits, a->hidden, d));
    return PTRS("mhc_prenorm_gemm", "residual, fn, mix, sqrsum", "x444", a->residual, a->fn, a->mix, a->sqrsum);
}

/* fn_terms: NULL, or pre_full's workspace for fn's terms, made first by mhc_fn_terms (a block per
 * chunk of the projection's k) and then copied by every token block instead of split again (the
 * projection launched early, its residual copies under way while the terms are made). */
static aiter_aot_status gemm_run(const aiter_aot_mhc_prenorm_gemm_args *a, uint16_t *fn_terms, void *stream, aot_diag *d)
{
    aot_mhc_gemm_kargs k = {.residual = a->residual, .fn = a->fn, .fn_terms = fn_terms, .mix = a->mix,
                            .sqrsum = a->sqrsum, .tokens = a->tokens, .hidden = a->hidden, .splits = a->splits,
                            .streams = a->broadcast ? 1 : AOT_MHC_N};
    if (fn_terms == NULL) return launch_gemm(aot_kernel_name(a->broadcast ? AOT_K_mhc_gemm_n1 : AOT_K_mhc_gemm_n4), 1, &k, 0, stream, d);
    AOT_FORWARD(aot_op_launch(aot_kernel_name(AOT_K_mhc_fn_terms), &k, sizeof k, (unsigned)(k.streams * a->hidden / AOT_MHC_TC_CHUNK),
                              AOT_MHC_TC_BLOCK, 0, stream, d));
    return launch_gemm(aot_kernel_name(a->broadcast ? AOT_K_mhc_gemm_n1_terms : AOT_K_mhc_gemm_n4_terms), 1, &k,
                       AOT_LAUNCH_FOLLOWS, stream, d);
}

aiter_aot_status aiter_aot_mhc_prenorm_gemm(const aiter_aot_mhc_prenorm_gemm_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_mhc_prenorm_gemm_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "mhc_prenorm_gemm", &d);
    if (s == AITER_AOT_STATUS_OK) s = gemm_check(&a, &d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = gemm_run(&a, NULL, stream, &d);
    return aot_api_return(s, &d);
}

/* ---- pre ---- */

static aiter_aot_status check_params(const char *op, const aiter_aot_mhc_params *p, aot_diag *d)
{
    AOT_INVALID_IF(p->sinkhorn_iters < 1 || p->sinkhorn_iters > 10000, d,
                   "%s: params.sinkhorn_iters = %d; need 1..10000", op, p->sinkhorn_iters);
    AOT_INVALID_IF(!(p->rms_eps >= 0 && p->pre_eps >= 0 && p->sinkhorn_eps >= 0 && p->norm_eps >= 0), d,
                   "%s: params: every eps must be >= 0 (and not NaN)", op);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status pre_check(const aiter_aot_mhc_pre_args *a, aot_diag *d)
{
    AOT_FORWARD(check_shape("mhc_pre", a->hc_mult, a->tokens, a->hidden, d));
    if (a->tokens == 0) return AITER_AOT_STATUS_OK; /* nothing is read: an empty tensor's NULL will do */
    AOT_FORWARD(check_splits("mhc_pre", a->splits, a->hidden, d));
    AOT_FORWARD(check_params("mhc_pre", &a->params, d));
    AOT_FORWARD(PTRS("mhc_pre", "mix, sqrsum, scale, base, residual, post, comb, layer_input", "4444x44x",
                     a->mix, a->sqrsum, a->scale, a->base, a->residual, a->post, a->comb, a->layer_input));
    AOT_INVALID_IF(a->norm_weight && aot_misaligned(a->norm_weight, 16), d,
                   "mhc_pre: norm_weight is not 16-byte aligned");
    AOT_INVALID_IF(a->broadcast ? (a->residual_out == NULL ||
                       aot_misaligned(a->residual_out, 16)) : a->residual_out != NULL,
                   d,
                   "mhc_pre: residual_out must be given (16-byte aligned) with broadcast, and NULL without");
    return AITER_AOT_STATUS_OK;
}

/* flags: AOT_LAUNCH_FOLLOWS after pre_full's projection. */
static aiter_aot_status pre_run(const aiter_aot_mhc_pre_args *a, unsigned flags, void *stream, aot_diag *d)
{
    const aiter_aot_mhc_params *p = &a->params;
    aot_mhc_pre_kargs k = {.mix = a->mix, .sqrsum = a->sqrsum, .scale = a->scale, .base = a->base,
                           .residual = a->residual, .norm_weight = a->norm_weight, .post = a->post, .comb = a->comb,
                           .layer_input = a->layer_input, .residual_out = a->residual_out, .tokens = a->tokens,
                           .hidden = a->hidden, .splits = a->splits, .sinkhorn_iters = p->sinkhorn_iters,
                           .rms_eps = p->rms_eps, .pre_eps = p->pre_eps, .sinkhorn_eps = p->sinkhorn_eps,
                           .post_mult = p->post_mult, .norm_eps = p->norm_eps};
    return aot_op_launch(pre_kernel(a->broadcast, a->norm_weight != NULL, 0), &k, sizeof k, (unsigned)a->tokens,
                         AOT_MHC_BLOCK, flags, stream, d);
}

aiter_aot_status aiter_aot_mhc_pre(const aiter_aot_mhc_pre_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_mhc_pre_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "mhc_pre", &d);
    if (s == AITER_AOT_STATUS_OK) s = pre_check(&a, &d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = pre_run(&a, 0, stream, &d);
    return aot_api_return(s, &d);
}

/* ---- pre_full ---- */

/* From this many tokens (4 projection blocks of 256 on NVIDIA, 8 of 128 on AMD) pre_full makes
 * fn's terms once instead of letting every token block split fn again: on the H200 the same time
 * at 1024 tokens, 3 % less at 2048, 5 % at 4096 (docs/performance.md). */
#define TERMS_MIN_TOKENS 1024

/* The one-pass kernel for a hidden size, with or without the post-mix first
 * (AOT_MHC_CLUSTER_VARIANTS), or NULL: its name, the bytes of shared memory it takes and the
 * fewest tiles a cluster it serves. */
static const char *cluster_kernel(int32_t hidden, bool post, unsigned *shared, int *from)
{
#define CLUSTER_ROW(name, kargs, c, n, p, lo, f) {AOT_K_##name, c, p, f, AOT_MHC_CL_SHARED(c, n, p, lo)},
    static const struct { aot_kernel_id id; int32_t hidden; bool post; int from; unsigned shared; } variants[] = {
        AOT_MHC_CLUSTER_VARIANTS(CLUSTER_ROW)};
#undef CLUSTER_ROW
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++)
        if (variants[i].hidden == hidden && variants[i].post == post)
            return *shared = variants[i].shared, *from = variants[i].from, aot_kernel_name(variants[i].id);
    return NULL;
}

/* Tiles of AOT_MHC_CL_TOKENS tokens the one-pass kernel takes for `tokens`. */
static int32_t cluster_tiles(int32_t tokens) { return (int32_t)(((int64_t)tokens + AOT_MHC_CL_TOKENS - 1) / AOT_MHC_CL_TOKENS); }

/* The one-pass kernel (mhc_pre_cluster_c*) as found for a call: serves a hidden size with a
 * variant, fn 16-byte aligned, enough tokens for the variant's tiles a cluster, on a device
 * whose code objects have the kernel (sm_90a) and whose vendor launches clusters; the callers
 * leave out the norm, broadcast, x and aux. */
typedef struct {
    aot_op_kernel k;
    unsigned shared;
    int clusters; /* that fit at once */
} one_pass;

/* @return OK with o filled, UNSUPPORTED where the one pass does not serve (the op then takes two
 * passes), or an error. */
static aiter_aot_status one_pass_find(int32_t hidden, bool post, int32_t tokens, const float *fn, one_pass *o,
                                      aot_diag *d)
{
    int from;
    const char *name = cluster_kernel(hidden, post, &o->shared, &from);
    if (name == NULL || aot_misaligned(fn, 16)) return AITER_AOT_STATUS_UNSUPPORTED; /* fn is copied 16 bytes at a time */
    const aiter_aot_status found = aot_op_find(name, sizeof(aot_mhc_cluster_kargs), &o->k, d);
    if (found == AITER_AOT_STATUS_NO_CODE_OBJECT || (found == AITER_AOT_STATUS_OK && o->k.gpu->tile_map == NULL))
        return AITER_AOT_STATUS_UNSUPPORTED;
    AOT_FORWARD(found);
    AOT_FORWARD(o->k.gpu->clusters_that_fit(o->k.fn->fn, AOT_MHC_CL_THREADS, o->shared, AOT_MHC_CL_BLOCKS, &o->clusters, d));
    return o->clusters < 1 || cluster_tiles(tokens) < (int64_t)from * o->clusters ? AITER_AOT_STATUS_UNSUPPORTED
                                                                                  : AITER_AOT_STATUS_OK;
}

/* Launches it on residual, c holding every other argument. */
static aiter_aot_status one_pass_launch(one_pass *o, const void *residual, int32_t hidden, aot_mhc_cluster_kargs *c,
                                        void *stream, aot_diag *d)
{
    const uint64_t C = (uint64_t)hidden, dims[3] = {C, (uint64_t)c->tokens, AOT_MHC_N}, strides[2] = {AOT_MHC_N * C * 2, C * 2};
    const uint32_t box[3] = {64, AOT_MHC_CL_TOKENS, AOT_MHC_N};
    AOT_FORWARD(o->k.gpu->tile_map(&c->residual, residual, dims, strides, box, d));
    const int tiles = cluster_tiles(c->tokens);
    const int clusters = o->clusters < tiles ? o->clusters : tiles;
    return aot_op_run_cluster(&o->k, c, (unsigned)(clusters * AOT_MHC_CL_BLOCKS), AOT_MHC_CL_THREADS, o->shared,
                              AOT_MHC_CL_BLOCKS, stream, d);
}

/* The one-pass kernel's arguments, the tile map left for one_pass_launch. */
static aot_mhc_cluster_kargs cluster_args(const float *fn, const float *scale, const float *base, float *post,
                                          float *comb, void *layer_input, int32_t tokens,
                                          const aiter_aot_mhc_params *p)
{
    aot_mhc_cluster_kargs c;
    memset(&c, 0, sizeof c);
    c.fn = fn, c.scale = scale, c.base = base, c.post = post, c.comb = comb, c.layer_input = layer_input;
    c.tokens = tokens, c.sinkhorn_iters = p->sinkhorn_iters, c.rms_eps = p->rms_eps, c.pre_eps = p->pre_eps;
    c.sinkhorn_eps = p->sinkhorn_eps, c.post_mult = p->post_mult;
    return c;
}

/* The workspace of pre_full and the delayed ops: the partials of `splits` splits, mix then
 * sqrsum; returns where fn's bf16 terms go (16-byte aligned, after them). */
static uint16_t *workspace_parts(void *workspace, int32_t splits, int32_t tokens, float **mix, float **sqrsum)
{
    *mix = workspace, *sqrsum = *mix + (size_t)splits * tokens * AOT_MHC_MIX;
    char *end = (char *)(*sqrsum + (size_t)splits * tokens);
    return (uint16_t *)(end + (16 - (uintptr_t)end % 16) % 16);
}

static aiter_aot_status check_workspace(const char *op, const void *workspace, size_t size, int32_t tokens,
                                        int32_t hidden, aot_diag *d)
{
    AOT_INVALID_IF(size < aiter_aot_mhc_workspace_size(tokens, hidden), d,
                   "%s: workspace_size %zu < %zu (aiter_aot_mhc_workspace_size)", op, size,
                   aiter_aot_mhc_workspace_size(tokens, hidden));
    AOT_INVALID_IF(workspace == NULL || aot_misaligned(workspace, 4), d,
                   "%s: workspace must be non-NULL and 4-byte aligned", op);
    return AITER_AOT_STATUS_OK;
}

/* ---- decode (up to AOT_MHC_DEC_TOKENS tokens) ---- */

/* Launches decode kernel `id` on k (mhc_decode*: the projection on every multiprocessor, a
 * block per split and tile of tokens, into the workspace's partials, hidden /
 * AOT_MHC_DEC_POSITIONS splits; the pre kernel follows it), or returns UNSUPPORTED where it does
 * not serve: more tokens, a hidden size past AOT_MHC_DEC_MAX_HIDDEN, fn not 8-byte aligned (read
 * in pairs), a device without the kernel (sm_90a has it). The callers leave out the norm,
 * broadcast and x. */
static aiter_aot_status decode_launch(aot_kernel_id id, aot_mhc_decode_kargs *k, void *workspace, int32_t *splits,
                                      void *stream, aot_diag *d)
{
    if (k->tokens > AOT_MHC_DEC_TOKENS || k->hidden > AOT_MHC_DEC_MAX_HIDDEN || aot_misaligned(k->fn, 8))
        return AITER_AOT_STATUS_UNSUPPORTED;
    aot_op_kernel kern;
    const aiter_aot_status found = aot_op_find(aot_kernel_name(id), sizeof *k, &kern, d);
    if (found == AITER_AOT_STATUS_NO_CODE_OBJECT) return AITER_AOT_STATUS_UNSUPPORTED;
    AOT_FORWARD(found);
    *splits = k->hidden / AOT_MHC_DEC_POSITIONS;
    workspace_parts(workspace, *splits, k->tokens, &k->mix, &k->sqrsum);
    const int32_t tiles = (k->tokens + AOT_MHC_DEC_TILE - 1) / AOT_MHC_DEC_TILE;
    return aot_op_run(&kern, k, (unsigned)(*splits * tiles), AOT_MHC_BLOCK, 0, 0, stream, d);
}

/* The two steps of pre_full with `splits` projection splits, laid out in its workspace; returns
 * where fn's bf16 terms go. */
static uint16_t *pre_full_parts(const aiter_aot_mhc_pre_full_args *a, int32_t splits,
                                aiter_aot_mhc_prenorm_gemm_args *g, aiter_aot_mhc_pre_args *p)
{
    float *mix, *sqrsum;
    uint16_t *terms = workspace_parts(a->workspace, splits, a->tokens, &mix, &sqrsum);
    *g = (aiter_aot_mhc_prenorm_gemm_args){.size = sizeof *g, .hc_mult = a->hc_mult, .residual = a->residual,
                                           .fn = a->fn, .mix = mix, .sqrsum = sqrsum, .tokens = a->tokens,
                                           .hidden = a->hidden, .splits = splits, .broadcast = a->broadcast};
    *p = (aiter_aot_mhc_pre_args){.size = sizeof *p, .hc_mult = a->hc_mult, .mix = mix, .sqrsum = sqrsum,
                                  .scale = a->scale, .base = a->base, .residual = a->residual,
                                  .norm_weight = a->norm_weight, .post = a->post, .comb = a->comb,
                                  .layer_input = a->layer_input, .residual_out = a->residual_out,
                                  .tokens = a->tokens, .hidden = a->hidden, .splits = splits,
                                  .broadcast = a->broadcast, .params = a->params};
    return terms;
}

static aiter_aot_status pre_full_run(const aiter_aot_mhc_pre_full_args *a, void *stream, aot_diag *d)
{
    AOT_FORWARD(check_workspace("mhc_pre_full", a->workspace, a->workspace_size, a->tokens, a->hidden, d));
    /* both kernels' arguments are checked before either launches, and before the device is
     * asked for its multiprocessors: bad arguments say so, also where there is no device */
    aiter_aot_mhc_prenorm_gemm_args g;
    aiter_aot_mhc_pre_args p;
    pre_full_parts(a, 1, &g, &p);
    AOT_FORWARD(gemm_check(&g, d));
    AOT_FORWARD(pre_check(&p, d));
    int mps;
    AOT_FORWARD(aot_op_multiprocessors(&mps, d));
    if (!a->norm_weight && !a->broadcast) {
        aot_mhc_decode_kargs k = {.residual = a->residual, .fn = a->fn, .tokens = a->tokens, .hidden = a->hidden};
        int32_t splits;
        const aiter_aot_status dec = decode_launch(AOT_K_mhc_decode, &k, a->workspace, &splits, stream, d);
        if (dec != AITER_AOT_STATUS_UNSUPPORTED) {
            pre_full_parts(a, splits, &g, &p);
            return dec == AITER_AOT_STATUS_OK ? pre_run(&p, AOT_LAUNCH_FOLLOWS, stream, d) : dec;
        }
    }
    uint16_t *fn_terms = pre_full_parts(a, pick_splits(a->tokens, a->hidden, mps), &g, &p);
    one_pass o;
    const aiter_aot_status one = a->norm_weight || a->broadcast
                                     ? AITER_AOT_STATUS_UNSUPPORTED
                                     : one_pass_find(a->hidden, false, a->tokens, a->fn, &o, d);
    if (one == AITER_AOT_STATUS_OK) {
        aot_mhc_cluster_kargs c = cluster_args(a->fn, a->scale, a->base, a->post, a->comb, a->layer_input, a->tokens,
                                               &a->params);
        return one_pass_launch(&o, a->residual, a->hidden, &c, stream, d);
    }
    if (one != AITER_AOT_STATUS_UNSUPPORTED) return one;
    AOT_FORWARD(gemm_run(&g, a->tokens >= TERMS_MIN_TOKENS ? fn_terms : NULL, stream, d));
    return pre_run(&p, AOT_LAUNCH_FOLLOWS, stream, d);
}

aiter_aot_status aiter_aot_mhc_pre_full(const aiter_aot_mhc_pre_full_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_mhc_pre_full_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "mhc_pre_full", &d);
    if (s == AITER_AOT_STATUS_OK) s = check_shape("mhc_pre_full", a.hc_mult, a.tokens, a.hidden, &d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = pre_full_run(&a, stream, &d);
    return aot_api_return(s, &d);
}

/* ---- post ---- */

static aiter_aot_status post_run(aot_mhc_post_kargs *k, void *stream, aot_diag *d)
{
    unsigned spans = ((unsigned)k->hidden + AOT_MHC_POST_SPAN - 1) / AOT_MHC_POST_SPAN;
    return aot_op_launch(aot_kernel_name(AOT_K_mhc_post), k, sizeof *k, (unsigned)k->tokens * spans, AOT_MHC_BLOCK, 0, stream, d);
}

aiter_aot_status aiter_aot_mhc_post(const aiter_aot_mhc_post_args *args, void *stream)
{
    aot_diag dd, *d = &dd;
    aiter_aot_mhc_post_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, aot_kernel_name(AOT_K_mhc_post), d);
    if (s == AITER_AOT_STATUS_OK) s = check_shape(aot_kernel_name(AOT_K_mhc_post), a.hc_mult, a.tokens, a.hidden, d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0)
        s = PTRS(aot_kernel_name(AOT_K_mhc_post), "comb, post, residual, x, out", "44xxx", a.comb, a.post, a.residual, a.x, a.out);
    if (s == AITER_AOT_STATUS_OK && overlap(a.out, a.residual, residual_bytes(a.tokens, a.hidden)))
        s = AOT_INVALID(d, "mhc_post: out overlaps residual; give it a buffer of its own");
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) {
        aot_mhc_post_kargs k = {.comb = a.comb, .post = a.post, .residual = a.residual, .x = a.x, .out = a.out,
                                .tokens = a.tokens, .hidden = a.hidden};
        s = post_run(&k, stream, d);
    }
    return aot_api_return(s, d);
}

/* ---- fused_post_pre ---- */

/* Up to this many tokens post and the projection run as one kernel (mhc_gemm_fused, fp32 FMA);
 * beyond, as the reference's wrapper does, mhc_post and then the projection of residual_out as
 * stored (the matrix-unit kernel, which reads bf16). */
#define FUSED_MAX_TOKENS 16

static aiter_aot_status fused_check(const aiter_aot_mhc_fused_post_pre_args *a, aot_diag *d)
{
    AOT_FORWARD(check_shape("mhc_fused_post_pre", a->hc_mult, a->tokens, a->hidden, d));
    if (a->tokens == 0) return AITER_AOT_STATUS_OK; /* nothing is read: an empty tensor's NULL will do */
    AOT_FORWARD(check_splits("mhc_fused_post_pre", a->splits, a->hidden, d));
    /* the two-kernel path moves the bf16 tensors 16 bytes at a time */
    AOT_FORWARD(PTRS("mhc_fused_post_pre", "comb, post, residual, x, fn, residual_out, mix, sqrsum",
                     a->tokens <= FUSED_MAX_TOKENS ? "44224244" : "44xx4x44", a->comb, a->post, a->residual, a->x,
                     a->fn, a->residual_out, a->mix, a->sqrsum));
    AOT_INVALID_IF(overlap(a->residual_out, a->residual, residual_bytes(a->tokens, a->hidden)), d,
                   "mhc_fused_post_pre: residual_out overlaps residual; give it a buffer of its own");
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status fused_run(const aiter_aot_mhc_fused_post_pre_args *a, void *stream, aot_diag *d)
{
    if (a->tokens <= FUSED_MAX_TOKENS) {
        aot_mhc_gemm_kargs k = {.residual = a->residual, .fn = a->fn, .mix = a->mix, .sqrsum = a->sqrsum, .y = a->x,
                                .post = a->post, .comb = a->comb, .residual_out = a->residual_out,
                                .tokens = a->tokens, .hidden = a->hidden, .splits = a->splits, .streams = AOT_MHC_N};
        return launch_gemm(aot_kernel_name(AOT_K_mhc_gemm_fused), 0, &k, 0, stream, d);
    }
    aot_mhc_post_kargs k = {.comb = a->comb, .post = a->post, .residual = a->residual, .x = a->x,
                            .out = a->residual_out, .tokens = a->tokens, .hidden = a->hidden};
    AOT_FORWARD(post_run(&k, stream, d));
    aiter_aot_mhc_prenorm_gemm_args g = {sizeof g, AOT_MHC_N, a->residual_out, a->fn, a->mix, a->sqrsum,
                                         a->tokens, a->hidden, a->splits, 0};
    return gemm_run(&g, NULL, stream, d);
}

aiter_aot_status aiter_aot_mhc_fused_post_pre(const aiter_aot_mhc_fused_post_pre_args *args, void *stream)
{
    aot_diag dd, *d = &dd;
    aiter_aot_mhc_fused_post_pre_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "mhc_fused_post_pre", d);
    if (s == AITER_AOT_STATUS_OK) s = fused_check(&a, d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = fused_run(&a, stream, d);
    return aot_api_return(s, d);
}

/* ---- head ---- */

aiter_aot_status aiter_aot_mhc_head(const aiter_aot_mhc_head_args *args, void *stream)
{
    aot_diag dd, *d = &dd;
    aiter_aot_mhc_head_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, aot_kernel_name(AOT_K_mhc_head), d);
    if (s == AITER_AOT_STATUS_OK) s = check_shape(aot_kernel_name(AOT_K_mhc_head), a.hc_mult, a.tokens, a.hidden, d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0)
        s = PTRS(aot_kernel_name(AOT_K_mhc_head), "residual, fn, scale, base, out", "24442", a.residual, a.fn, a.scale, a.base, a.out);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0 && !(a.rms_eps >= 0 && a.eps >= 0))
        s = AOT_INVALID(d, "mhc_head: rms_eps and eps must be >= 0");
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) {
        aot_mhc_head_kargs k = {.residual = a.residual, .fn = a.fn, .scale = a.scale, .base = a.base, .out = a.out,
                                .tokens = a.tokens, .hidden = a.hidden, .rms_eps = a.rms_eps, .eps = a.eps};
        s = aot_op_launch(aot_kernel_name(AOT_K_mhc_head), &k, sizeof k, (unsigned)a.tokens, AOT_MHC_BLOCK, 0, stream, d);
    }
    return aot_api_return(s, d);
}

/* ---- the delayed pre (DeepSeek-V4.1): pre_delayed and fused_post_pre_delayed ---- */

/* What the two delayed ops hand the pre kernel: its residual (the collapse's streams), inputs
 * and outputs. */
typedef struct {
    const char *op;
    const void *residual;
    const float *fn, *scale, *base, *pre_mix;
    const void *norm_weight;
    float *post, *comb, *next_pre_mix;
    void *layer_input, *aux;
    int32_t tokens, hidden;
    const aiter_aot_mhc_params *params;
} delayed_pre;

/* NULL, or aligned to `align` bytes. */
static aiter_aot_status check_optional(const char *op, const char *name, const void *p, size_t align, aot_diag *d)
{
    AOT_INVALID_IF(p != NULL && aot_misaligned(p, align), d, "%s: %s is not %zu-byte aligned", op, name, align);
    return AITER_AOT_STATUS_OK;
}

static aiter_aot_status delayed_check(const delayed_pre *p, aot_diag *d)
{
    AOT_FORWARD(check_params(p->op, p->params, d));
    AOT_FORWARD(PTRS(p->op, "scale, base, post, comb, layer_input, next_pre_mix", "4444x4", p->scale, p->base, p->post,
                     p->comb, p->layer_input, p->next_pre_mix));
    AOT_FORWARD(check_optional(p->op, "pre_mix", p->pre_mix, 4, d));
    /* a token's next_pre_mix may be stored before another block reads its pre_mix */
    AOT_INVALID_IF(p->pre_mix != NULL && overlap(p->pre_mix, p->next_pre_mix, (size_t)p->tokens * 16), d,
                   "%s: next_pre_mix overlaps pre_mix; give it a buffer of its own", p->op);
    AOT_FORWARD(check_optional(p->op, "norm_weight", p->norm_weight, 16, d));
    return check_optional(p->op, "aux", p->aux, 16, d);
}

/* The pre kernel after the projection (launched early: it waits for the projection first).
 * rms_streams: the projection input's values a token, in units of hidden. */
static aiter_aot_status delayed_run(const delayed_pre *p, const float *mix, const float *sqrsum, int32_t splits,
                                    int32_t rms_streams, void *stream, aot_diag *d)
{
    const aiter_aot_mhc_params *q = p->params;
    aot_mhc_pre_kargs k = {.mix = mix, .sqrsum = sqrsum, .scale = p->scale, .base = p->base,
                           .residual = p->residual, .norm_weight = p->norm_weight, .post = p->post,
                           .comb = p->comb, .layer_input = p->layer_input, .pre_in = p->pre_mix,
                           .pre_out = p->next_pre_mix, .aux = p->aux, .tokens = p->tokens, .hidden = p->hidden,
                           .splits = splits, .sinkhorn_iters = q->sinkhorn_iters, .rms_eps = q->rms_eps,
                           .pre_eps = q->pre_eps, .sinkhorn_eps = q->sinkhorn_eps, .post_mult = q->post_mult,
                           .norm_eps = q->norm_eps, .rms_streams = rms_streams};
    return aot_op_launch(pre_kernel(0, p->norm_weight != NULL, 1), &k, sizeof k, (unsigned)p->tokens, AOT_MHC_BLOCK,
                         AOT_LAUNCH_FOLLOWS, stream, d);
}

/* At decode sizes: the decode kernel, which also makes layer_input (post: and the new residual
 * and aux), then the pre kernel for the coefficients alone; UNSUPPORTED where the decode kernel
 * does not serve (decode_launch). */
static aiter_aot_status delayed_decode(aot_kernel_id id, aot_mhc_decode_kargs *k, void *workspace, delayed_pre p,
                                       void *stream, aot_diag *d)
{
    int32_t splits;
    AOT_FORWARD(decode_launch(id, k, workspace, &splits, stream, d));
    p.layer_input = NULL, p.aux = NULL; /* the pre kernel leaves out the collapse */
    return delayed_run(&p, k->mix, k->sqrsum, splits, AOT_MHC_N, stream, d);
}

/* The one pass's arguments for the delayed pre (no norm, no aux). */
static aot_mhc_cluster_kargs delayed_cluster_args(const delayed_pre *p)
{
    aot_mhc_cluster_kargs c = cluster_args(p->fn, p->scale, p->base, p->post, p->comb, p->layer_input, p->tokens, p->params);
    c.pre_in = p->pre_mix, c.pre_out = p->next_pre_mix, c.delayed = 1;
    return c;
}

static delayed_pre pre_delayed_parts(const aiter_aot_mhc_pre_delayed_args *a)
{
    return (delayed_pre){.op = "mhc_pre_delayed", .residual = a->residual, .fn = a->fn, .scale = a->scale, .base = a->base,
                         .pre_mix = a->pre_mix, .norm_weight = a->norm_weight, .post = a->post, .comb = a->comb,
                         .next_pre_mix = a->next_pre_mix, .layer_input = a->layer_input, .tokens = a->tokens,
                         .hidden = a->hidden, .params = &a->params};
}

static aiter_aot_status pre_delayed_check(const aiter_aot_mhc_pre_delayed_args *a, aot_diag *d)
{
    const delayed_pre p = pre_delayed_parts(a);
    AOT_FORWARD(PTRS(p.op, "residual, fn", "x4", a->residual, a->fn));
    AOT_INVALID_IF(a->x ? a->x_width != a->hidden && a->x_width != AOT_MHC_N * a->hidden : a->x_width != 0, d,
                   "mhc_pre_delayed: x_width = %d; with x it must be hidden (%d) or 4 * hidden, without x 0",
                   a->x_width, a->hidden);
    AOT_FORWARD(check_optional(p.op, "x", a->x, 16, d));
    AOT_INVALID_IF(a->reserved != 0, d, "mhc_pre_delayed: reserved = %d; must be 0", a->reserved);
    AOT_FORWARD(delayed_check(&p, d));
    return check_workspace(p.op, a->workspace, a->workspace_size, a->tokens, a->hidden, d);
}

/* The projection of x (one stream when x_width is hidden) or of the residual, then pre. */
static aiter_aot_status pre_delayed_run(const aiter_aot_mhc_pre_delayed_args *a, void *stream, aot_diag *d)
{
    if (!a->x && !a->norm_weight) {
        aot_mhc_decode_kargs k = {.residual = a->residual, .fn = a->fn, .layer_input = a->layer_input,
                                  .pre_in = a->pre_mix, .tokens = a->tokens, .hidden = a->hidden};
        const aiter_aot_status dec = delayed_decode(AOT_K_mhc_decode_delayed, &k, a->workspace, pre_delayed_parts(a), stream, d);
        if (dec != AITER_AOT_STATUS_UNSUPPORTED) return dec;
    }
    one_pass o;
    const aiter_aot_status found = a->x || a->norm_weight
                                       ? AITER_AOT_STATUS_UNSUPPORTED
                                       : one_pass_find(a->hidden, false, a->tokens, a->fn, &o, d);
    if (found == AITER_AOT_STATUS_OK) {
        const delayed_pre p = pre_delayed_parts(a);
        aot_mhc_cluster_kargs c = delayed_cluster_args(&p);
        return one_pass_launch(&o, a->residual, a->hidden, &c, stream, d);
    }
    if (found != AITER_AOT_STATUS_UNSUPPORTED) return found;
    int mps;
    AOT_FORWARD(aot_op_multiprocessors(&mps, d));
    const int32_t splits = pick_splits(a->tokens, a->hidden, mps);
    const int one = a->x != NULL && a->x_width == a->hidden;
    float *mix, *sqrsum;
    uint16_t *terms = workspace_parts(a->workspace, splits, a->tokens, &mix, &sqrsum);
    const aiter_aot_mhc_prenorm_gemm_args g = {.size = sizeof g, .hc_mult = AOT_MHC_N,
                                               .residual = a->x ? a->x : a->residual, .fn = a->fn, .mix = mix,
                                               .sqrsum = sqrsum, .tokens = a->tokens, .hidden = a->hidden,
                                               .splits = splits, .broadcast = one};
    AOT_FORWARD(gemm_run(&g, a->tokens >= TERMS_MIN_TOKENS ? terms : NULL, stream, d));
    const delayed_pre p = pre_delayed_parts(a);
    return delayed_run(&p, mix, sqrsum, splits, one ? 1 : AOT_MHC_N, stream, d);
}

aiter_aot_status aiter_aot_mhc_pre_delayed(const aiter_aot_mhc_pre_delayed_args *args, void *stream)
{
    aot_diag d;
    aiter_aot_mhc_pre_delayed_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "mhc_pre_delayed", &d);
    if (s == AITER_AOT_STATUS_OK) s = check_shape("mhc_pre_delayed", a.hc_mult, a.tokens, a.hidden, &d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = pre_delayed_check(&a, &d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = pre_delayed_run(&a, stream, &d);
    return aot_api_return(s, &d);
}

static delayed_pre fused_delayed_parts(const aiter_aot_mhc_fused_post_pre_delayed_args *a)
{
    return (delayed_pre){.op = "mhc_fused_post_pre_delayed", .residual = a->residual_out, .fn = a->fn, .scale = a->scale,
                         .base = a->base, .pre_mix = a->pre_mix, .norm_weight = a->norm_weight, .post = a->post,
                         .comb = a->comb, .next_pre_mix = a->next_pre_mix, .layer_input = a->layer_input,
                         .aux = a->aux, .tokens = a->tokens, .hidden = a->hidden, .params = &a->params};
}

static aiter_aot_status fused_delayed_check(const aiter_aot_mhc_fused_post_pre_delayed_args *a, aot_diag *d)
{
    const delayed_pre p = fused_delayed_parts(a);
    AOT_FORWARD(PTRS(p.op, "x, residual, post_in, comb_in, fn, residual_out", "xx444x", a->x, a->residual,
                     a->post_in, a->comb_in, a->fn, a->residual_out));
    AOT_INVALID_IF(overlap(a->residual_out, a->residual, residual_bytes(a->tokens, a->hidden)), d,
                   "%s: residual_out overlaps residual; give it a buffer of its own", p.op);
    AOT_FORWARD(delayed_check(&p, d));
    return check_workspace(p.op, a->workspace, a->workspace_size, a->tokens, a->hidden, d);
}

/* Without the norm: the one pass with the post-mix inside it, or (no aux) post and then the one
 * pass. Else the post-mix and the projection of its stored result: one kernel up to
 * FUSED_MAX_TOKENS (its splits cut hidden, not 4 * hidden, into chunks: no more splits than
 * those), post and then the projection beyond; then the pre kernel. */
static aiter_aot_status fused_delayed_run(const aiter_aot_mhc_fused_post_pre_delayed_args *a, void *stream,
                                          aot_diag *d)
{
    if (!a->norm_weight) {
        aot_mhc_decode_kargs k = {.residual = a->residual, .fn = a->fn, .layer_input = a->layer_input,
                                  .pre_in = a->pre_mix, .x = a->x, .post_in = a->post_in, .comb_in = a->comb_in,
                                  .residual_out = a->residual_out, .aux = a->aux, .tokens = a->tokens,
                                  .hidden = a->hidden};
        const aiter_aot_status dec = delayed_decode(AOT_K_mhc_decode_post_delayed, &k, a->workspace, fused_delayed_parts(a), stream, d);
        if (dec != AITER_AOT_STATUS_UNSUPPORTED) return dec;
    }
    one_pass o;
    const delayed_pre p = fused_delayed_parts(a);
    aot_mhc_cluster_kargs c = delayed_cluster_args(&p);
    aiter_aot_status found =
        a->norm_weight ? AITER_AOT_STATUS_UNSUPPORTED : one_pass_find(a->hidden, true, a->tokens, a->fn, &o, d);
    if (found == AITER_AOT_STATUS_OK) { /* the post-mix, its stores and the delayed pre in one pass */
        c.x = a->x, c.post_in = a->post_in, c.comb_in = a->comb_in, c.residual_out = a->residual_out, c.aux = a->aux;
        return one_pass_launch(&o, a->residual, a->hidden, &c, stream, d);
    }
    if (found == AITER_AOT_STATUS_UNSUPPORTED && !a->norm_weight && !a->aux)
        found = one_pass_find(a->hidden, false, a->tokens, a->fn, &o, d);
    if (found == AITER_AOT_STATUS_OK) { /* post, then the one pass over what it stored */
        aot_mhc_post_kargs k = {.comb = a->comb_in, .post = a->post_in, .residual = a->residual, .x = a->x,
                                .out = a->residual_out, .tokens = a->tokens, .hidden = a->hidden};
        AOT_FORWARD(post_run(&k, stream, d));
        return one_pass_launch(&o, a->residual_out, a->hidden, &c, stream, d);
    }
    if (found != AITER_AOT_STATUS_UNSUPPORTED) return found;
    int mps;
    AOT_FORWARD(aot_op_multiprocessors(&mps, d));
    int32_t splits = pick_splits(a->tokens, a->hidden, mps);
    const int one_kernel = a->tokens <= FUSED_MAX_TOKENS;
    if (one_kernel && splits > a->hidden / AOT_MHC_GEMM_CHUNK) splits = a->hidden / AOT_MHC_GEMM_CHUNK;
    float *mix, *sqrsum;
    uint16_t *terms = workspace_parts(a->workspace, splits, a->tokens, &mix, &sqrsum);
    if (one_kernel) {
        aot_mhc_gemm_kargs k = {.residual = a->residual, .fn = a->fn, .mix = mix, .sqrsum = sqrsum, .y = a->x,
                                .post = a->post_in, .comb = a->comb_in, .residual_out = a->residual_out,
                                .tokens = a->tokens, .hidden = a->hidden, .splits = splits, .streams = AOT_MHC_N};
        AOT_FORWARD(launch_gemm(aot_kernel_name(AOT_K_mhc_gemm_fused_bf16), 0, &k, 0, stream, d));
    } else {
        aot_mhc_post_kargs k = {.comb = a->comb_in, .post = a->post_in, .residual = a->residual, .x = a->x,
                                .out = a->residual_out, .tokens = a->tokens, .hidden = a->hidden};
        AOT_FORWARD(post_run(&k, stream, d));
        const aiter_aot_mhc_prenorm_gemm_args g = {.size = sizeof g, .hc_mult = AOT_MHC_N, .residual = a->residual_out,
                                                   .fn = a->fn, .mix = mix, .sqrsum = sqrsum, .tokens = a->tokens,
                                                   .hidden = a->hidden, .splits = splits};
        AOT_FORWARD(gemm_run(&g, a->tokens >= TERMS_MIN_TOKENS ? terms : NULL, stream, d));
    }
    return delayed_run(&p, mix, sqrsum, splits, AOT_MHC_N, stream, d);
}

aiter_aot_status aiter_aot_mhc_fused_post_pre_delayed(const aiter_aot_mhc_fused_post_pre_delayed_args *args,
                                                      void *stream)
{
    aot_diag d;
    aiter_aot_mhc_fused_post_pre_delayed_args a;
    aiter_aot_status s = aot_api_args(&a, sizeof a, args, sizeof a, "mhc_fused_post_pre_delayed", &d);
    if (s == AITER_AOT_STATUS_OK) s = check_shape("mhc_fused_post_pre_delayed", a.hc_mult, a.tokens, a.hidden, &d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = fused_delayed_check(&a, &d);
    if (s == AITER_AOT_STATUS_OK && a.tokens > 0) s = fused_delayed_run(&a, stream, &d);
    return aot_api_return(s, &d);
}
