/* ref.h : fp64 CPU references for every op, written from the ops' definitions
 * (runtime/include/aiter_aot_moe.h, docs/semantics.md), never from a
 * kernel; and the helpers tests share: random inputs, rounding, poisoning, error metrics. */
#ifndef AOT_REF_H
#define AOT_REF_H

#include <stddef.h>
#include <stdint.h>

/* ---- random numbers (xorshift64*, seeded per case) ---- */
typedef struct { uint64_t s; } ref_rng;
void ref_seed(ref_rng *r, uint64_t seed);
uint64_t ref_u64(ref_rng *r);
double ref_uniform(ref_rng *r);          /* [0, 1) */
double ref_normal(ref_rng *r);           /* N(0, 1) */

/* ---- rounding: fp32 -> bf16/fp16 bits, round to nearest even ---- */
uint16_t ref_to_bf16(float f);
uint16_t ref_to_f16(float f);
double ref_bf16_value(uint16_t h);
double ref_f16_value(uint16_t h);

/* Fills n bytes with 0xff: NaN as fp32, -1 as int32, so unwritten outputs are caught. */
void ref_poison(void *p, size_t n);

/* ---- topk_softmax ---- */
/* logits: tokens x experts doubles (already the values the kernel reads, i.e. after the
 * dtype rounding), rows contiguous. Writes weights/ids/tei [tokens, k]. */
void ref_topk_softmax(const double *logits, int tokens, int experts, int k, int renormalize,
                      double *weights, int32_t *ids, int32_t *tei);

/* ---- moe_sorting ---- */
typedef struct {
    int32_t *sorted_ids;   /* [max_padded] */
    float *sorted_weights; /* [max_padded] */
    int32_t *expert_ids;   /* [max_blocks] */
    int32_t num_valid[2];
} ref_sorted;
/* Allocates the outputs (free with ref_sorted_free). */
void ref_moe_sorting(const int32_t *ids, const float *weights, int tokens, int k, int experts,
                     int block_size, const int32_t *mask, ref_sorted *out);
void ref_sorted_free(ref_sorted *s);
size_t ref_max_padded(int tokens, int k, int experts, int block_size);

#endif
