/* ref_route.c : see ref_route.h. Plain loops in fp64, in the order the definitions state them. */
#include "ref_route.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double score_of(int scoring, double x, double mx, double sum, int n_inf)
{
    if (scoring == 1) return x == -INFINITY ? 0.0 : 1.0 / (1.0 + exp(-x));
    if (scoring == 2) return x == -INFINITY ? 0.0 : sqrt(x > 20.0 ? x : log1p(exp(x)));
    if (n_inf) return x == INFINITY ? 1.0 / n_inf : 0.0;
    if (mx == -INFINITY) return 0.0;
    return exp(x - mx) / sum;
}

void ref_route_scores(const double *row, int experts, int scoring, double *s)
{
    double mx = -INFINITY, sum = 0.0;
    int n_inf = 0;
    for (int e = 0; e < experts; e++) {
        double x = isnan(row[e]) ? -INFINITY : row[e];
        if (x > mx) mx = x;
        n_inf += x == INFINITY;
    }
    for (int e = 0; e < experts && !n_inf && mx > -INFINITY; e++) sum += isnan(row[e]) ? 0.0 : exp(row[e] - mx);
    for (int e = 0; e < experts; e++) s[e] = score_of(scoring, isnan(row[e]) ? -INFINITY : row[e], mx, sum, n_inf);
}

/* Does (v, i) come before (bv, bi)? Larger first, ties to the lower index. */
static int before(double v, int i, double bv, int bi) { return v > bv || (v == bv && i < bi); }

/* Marks allowed[e] = 1 for the experts of the topk_group best groups. */
static void keep_groups(const double *c, int experts, const ref_route_opts *o, int biased, char *allowed)
{
    int G = experts / o->n_group;
    double gs[64];
    char kept[64] = {0};
    for (int g = 0; g < o->n_group; g++) {
        int i1 = g * G; /* the group's largest, then the largest of the others */
        for (int e = g * G; e < (g + 1) * G; e++)
            if (c[e] > c[i1]) i1 = e;
        double m1 = c[i1], m2 = -INFINITY;
        for (int e = g * G; e < (g + 1) * G; e++)
            if (e != i1 && c[e] > m2) m2 = c[e];
        gs[g] = biased && G > 1 ? m1 + m2 : m1;
    }
    for (int r = 0; r < o->topk_group; r++) {
        int best = -1;
        for (int g = 0; g < o->n_group; g++)
            if (!kept[g] && (best < 0 || before(gs[g], g, gs[best], best))) best = g;
        kept[best] = 1;
    }
    for (int e = 0; e < experts; e++) allowed[e] = kept[e / G];
}

static void finish(double *w, int k, const ref_route_opts *o)
{
    double sum = 0.0;
    for (int j = 0; j < k; j++) sum += w[j];
    for (int j = 0; j < k; j++) w[j] = (o->renormalize ? w[j] / fmax(sum, 1e-20) : w[j]) * (o->scale ? o->scale : 1.0);
}

static void hash_row(const double *s, int experts, int k, const ref_route_opts *o, int64_t tok, double *w, int32_t *id)
{
    for (int j = 0; j < k; j++) {
        int64_t e = tok >= 0 && tok < o->vocab ? o->tid2eid[tok * k + j] : -1;
        if (e < 0 || e >= experts) e = -1;
        id[j] = (int32_t)e, w[j] = e >= 0 ? s[e] : 0.0;
    }
    finish(w, k, o);
}

void ref_topk_route(const double *logits, int tokens, int experts, int k, const ref_route_opts *o,
                    double *weights, int32_t *ids, double *sel)
{
    double *s = malloc(sizeof(double) * experts), *c = malloc(sizeof(double) * experts);
    char *allowed = malloc((size_t)experts);
    for (int t = 0; t < tokens; t++) {
        double *w = weights + (size_t)t * k;
        int32_t *id = ids + (size_t)t * k;
        ref_route_scores(logits + (size_t)t * experts, experts, o->scoring, s);
        for (int e = 0; e < experts; e++) c[e] = s[e] + (o->bias && !o->input_ids ? o->bias[e] : 0.0), allowed[e] = 1;
        if (sel) memcpy(sel + (size_t)t * experts, c, sizeof(double) * experts);
        if (o->input_ids) {
            hash_row(s, experts, k, o, o->input_ids[t], w, id);
            continue;
        }
        if (o->n_group > 1) keep_groups(c, experts, o, o->bias != NULL, allowed);
        for (int j = 0; j < k; j++) {
            int best = -1;
            for (int e = 0; e < experts; e++)
                if (allowed[e] && (best < 0 || before(c[e], e, c[best], best))) best = e;
            allowed[best] = 0, id[j] = best, w[j] = s[best];
        }
        finish(w, k, o);
    }
    free(s), free(c), free(allowed);
}

int32_t ref_moe_align(const int32_t *ids, int tokens, int k, int experts, int block_size, const int32_t *expert_map,
                      int32_t *sorted, int64_t max_padded, int32_t *eids, int64_t max_blocks)
{
    int64_t numel = (int64_t)tokens * k, at = 0;
    for (int64_t i = 0; i < max_padded; i++) sorted[i] = (int32_t)numel;
    for (int64_t b = 0; b < max_blocks; b++) eids[b] = expert_map ? expert_map[0] : 0;
    for (int e = 0; e < experts; e++) {
        int64_t n = 0;
        for (int64_t i = 0; i < numel; i++)
            if (ids[i] == e) sorted[at + n++] = (int32_t)i;
        int64_t padded = (n + block_size - 1) / block_size * block_size;
        for (int64_t b = at / block_size; b < (at + padded) / block_size; b++) eids[b] = expert_map ? expert_map[e] : e;
        at += padded;
    }
    return (int32_t)at;
}
