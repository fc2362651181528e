/* ref_route.h : fp64 references of topk_route and moe_align_block_size, written from their
 * definitions (runtime/include/aiter_aot_moe.h, docs/routing.md), never from a kernel. */
#ifndef AOT_REF_ROUTE_H
#define AOT_REF_ROUTE_H

#include <stdint.h>

typedef struct {
    int scoring;             /* 0 softmax, 1 sigmoid, 2 sqrt-softplus */
    const double *bias;      /* [experts] or NULL */
    int n_group, topk_group; /* n_group <= 1: no groups */
    int renormalize;
    double scale;
    const int64_t *input_ids; /* [tokens] or NULL: hash routing when set */
    const int64_t *tid2eid;   /* [vocab, k] */
    int64_t vocab;
} ref_route_opts;

/* The scores of one row (logits as the kernel reads them; NaN counts as -inf). */
void ref_route_scores(const double *x, int experts, int scoring, double *s);

/* logits: tokens x experts doubles, rows contiguous. Writes weights/ids [tokens, k]; sel (may
 * be NULL) gets each row's selection scores [tokens, experts] (score + bias). */
void ref_topk_route(const double *logits, int tokens, int experts, int k, const ref_route_opts *o,
                    double *weights, int32_t *ids, double *sel);

/* vLLM's moe_align_block_size layout. sorted [max_padded], eids [max_blocks] (allocated by the
 * caller); returns num_tokens_post_pad. */
int32_t ref_moe_align(const int32_t *ids, int tokens, int k, int experts, int block_size, const int32_t *expert_map,
                      int32_t *sorted, int64_t max_padded, int32_t *eids, int64_t max_blocks);

#endif
