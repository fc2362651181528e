"""Drop-in forms of the AITER (ROCm/aiter) ops this library implements: same names, argument
order, defaults and return values, so that `import aiter` can become
`import aiter_aot.aiter as aiter` for these ops. Arguments this library cannot honour raise
NotImplementedError naming the argument; none is silently ignored (the hints that do not change
the result are listed per function in docs/python.md)."""
import torch

from .. import MHC_PARAMS
from .. import _native as N
from .. import torch as T
from ..torch import _bias32, _compiling, _o, _route_fill, _s, _t

__all__ = ["topk_softmax", "moe_sorting_fwd", "biased_grouped_topk", "grouped_topk", "topk_gating", "topk_softplus",
           "fmha_v3_varlen_fwd", "mhc_pre", "mhc_post", "mhc_fused_post_pre"]


def _unsupported(name, value, why):
    raise NotImplementedError(f"aiter_aot.aiter: {name}={value!r} is not supported ({why})")


def topk_softmax(topk_weights, topk_indices, token_expert_indices, gating_output, need_renorm,
                 num_shared_experts=0, shared_expert_scoring_func=""):
    """AITER's topk_softmax: fills topk_weights fp32 [tokens, k], topk_indices int32 and
    token_expert_indices int32 ([t, j] = j * tokens + t) in place; returns None."""
    if num_shared_experts:
        _unsupported("num_shared_experts", num_shared_experts, "shared experts are not implemented")
    if shared_expert_scoring_func:
        _unsupported("shared_expert_scoring_func", shared_expert_scoring_func, "shared experts are not implemented")
    if _compiling():
        torch.ops.aiter_aot.topk_softmax_out(gating_output, topk_weights, topk_indices, token_expert_indices,
                                             bool(need_renorm), None)
        return None
    N.topk_softmax(_t(gating_output), _t(topk_weights), _t(topk_indices), _o(token_expert_indices),
                   bool(need_renorm), _s(None, gating_output))


def moe_sorting_fwd(topk_ids, topk_weights, sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids,
                    moe_buf, num_experts, unit_size, local_expert_mask=None, num_local_tokens=None,
                    dispatch_policy=0):
    """AITER's moe_sorting_fwd (CK): fills the four sorted outputs and zero-fills moe_buf in
    place. dispatch_policy picks among AITER's kernels and does not change the result; it is
    accepted and has no effect here."""
    if num_local_tokens is not None:
        _unsupported("num_local_tokens", "<tensor>", "the token count comes from topk_ids' shape")
    T.moe_sorting(topk_ids, topk_weights, num_experts, unit_size, local_expert_mask, moe_buf,
                  out=(sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids))


def biased_grouped_topk(gating_output, correction_bias, topk_weights, topk_ids, num_expert_group, topk_group,
                        need_renorm, routed_scaling_factor=1.0):
    """AITER's biased_grouped_topk (DeepSeek-V3): sigmoid scores, selection by score plus
    correction_bias [experts], groups scored by their two best, the topk_group best kept.
    Fills topk_weights fp32 and topk_ids int32 [tokens, k] in place; returns None. A bias of
    another dtype than fp32 is converted first (one more kernel)."""
    _route_fill(gating_output, topk_weights, topk_ids, "sigmoid", need_renorm, _bias32(correction_bias),
                num_expert_group, topk_group, routed_scaling_factor)


def grouped_topk(gating_output, topk_weights, topk_ids, num_expert_group, topk_group, need_renorm, is_softmax=True,
                 routed_scaling_factor=1.0):
    """AITER's grouped_topk: softmax (or, with is_softmax=False, sigmoid) scores, groups scored
    by their best, no bias. Fills topk_weights and topk_ids in place; returns None."""
    _route_fill(gating_output, topk_weights, topk_ids, "softmax" if is_softmax else "sigmoid", need_renorm, None,
                num_expert_group, topk_group, routed_scaling_factor)


_SCORE_FUNCS = ("sqrtsoftplus", "sigmoid", "softmax")


def topk_gating(topk_weights, topk_indices, gating_output, correction_bias=None, need_renorm=True,
                routed_scaling_factor=1.0, score_func="sqrtsoftplus"):
    """AITER's topk_gating: top-k without groups under score_func 'sqrtsoftplus' (DeepSeek-V4),
    'sigmoid' (Llama-4) or 'softmax', selection by score plus correction_bias when given.
    Fills topk_weights fp32 and topk_indices int32 in place; returns None."""
    if score_func not in _SCORE_FUNCS:
        raise ValueError(f"aiter_aot.aiter: score_func={score_func!r}; AITER takes 'sqrtsoftplus', 'sigmoid' or "
                         "'softmax'")
    _route_fill(gating_output, topk_weights, topk_indices, score_func, need_renorm, _bias32(correction_bias), 0, 0,
                routed_scaling_factor)


# AITER's earlier name of topk_gating, which it keeps as an alias
topk_softplus = topk_gating


_EMPTY = {}


def _empty(device, dtype):
    """A shared zero-element tensor per device and dtype: AITER returns these where nothing is
    computed, and allocating them costs more than the launch."""
    key = (device, dtype)
    t = _EMPTY.get(key)
    if t is None:
        t = _EMPTY[key] = torch.empty((0,), dtype=dtype, device=device)
    return t


def fmha_v3_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, min_seqlen_q, dropout_p,
                       softmax_scale, logits_soft_cap, zero_tensors, is_causal, window_size_left, window_size_right,
                       return_softmax_lse, return_dropout_randval, how_v3_bf16_cvt, out=None, block_table=None,
                       bias=None, alibi_slopes=None, q_descale=None, k_descale=None, v_descale=None, gen=None,
                       cu_seqlens_q_padded=None, cu_seqlens_k_padded=None):
    """AITER's fmha_v3_varlen_fwd: returns (out [total_q, hq, d_v], softmax_lse fp32
    [hq, total_q] (empty unless return_softmax_lse), p (empty), rng_state int64 [2]).
    max_seqlen_k, min_seqlen_q and how_v3_bf16_cvt (gfx942's bf16 rounding of the v3 assembly
    kernel; this kernel rounds to nearest even) are hints here and do not change the call."""
    if dropout_p:
        _unsupported("dropout_p", dropout_p, "no dropout")
    if return_dropout_randval:
        _unsupported("return_dropout_randval", return_dropout_randval, "no dropout")
    for name, val, why in (("block_table", block_table, "no paged KV"), ("bias", bias, "no attention bias"),
                           ("alibi_slopes", alibi_slopes, "no ALiBi"), ("q_descale", q_descale, "no fp8"),
                           ("k_descale", k_descale, "no fp8"), ("v_descale", v_descale, "no fp8"),
                           ("cu_seqlens_q_padded", cu_seqlens_q_padded, "no padded layouts"),
                           ("cu_seqlens_k_padded", cu_seqlens_k_padded, "no padded layouts")):
        if val is not None:
            _unsupported(name, "<tensor>", why)
    if how_v3_bf16_cvt not in (0, 1, 2):
        raise ValueError(f"aiter_aot.aiter: how_v3_bf16_cvt={how_v3_bf16_cvt!r}; AITER takes 0, 1 or 2")
    wr = 0 if is_causal else window_size_right
    if zero_tensors:
        if out is None:
            out = torch.zeros((q.shape[0], q.shape[1], v.shape[2]), dtype=q.dtype, device=q.device)
        else:
            out.zero_()
    if _compiling():
        o, lse = torch.ops.aiter_aot.fmha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                                     softmax_scale, bool(is_causal), window_size_left, wr,
                                                     logits_soft_cap, bool(return_softmax_lse), None)
        if out is not None:
            o = out.copy_(o)
        rng = torch.empty((2,), dtype=torch.int64, device=q.device)
        return o, lse, torch.empty((0,), dtype=torch.uint8, device=q.device), rng
    dev = q.device
    if out is None:
        out = torch.empty((q.shape[0], q.shape[1], v.shape[2]), dtype=q.dtype, device=dev)
    lse = torch.empty((q.shape[1], q.shape[0]), dtype=torch.float32, device=dev) if return_softmax_lse else None
    N.fmha_varlen_fwd(_t(q), _t(k), _t(v), _t(out), _o(lse), _t(cu_seqlens_q), _t(cu_seqlens_k), max_seqlen_q,
                      softmax_scale, logits_soft_cap, bool(is_causal), window_size_left, wr, _s(None, q))
    if lse is None:
        lse = _empty(dev, torch.float32)
    return out, lse, _empty(dev, torch.uint8), torch.empty((2,), dtype=torch.int64, device=dev)


def _params(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_eps):
    return (rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat, norm_eps)


def mhc_pre(residual, fn, hc_scale, hc_base, rms_eps=1e-6, hc_pre_eps=1e-6, hc_sinkhorn_eps=1e-6,
            hc_post_mult_value=2.0, sinkhorn_repeat=20, n_splits=1, norm_weight=None, norm_eps=0.0):
    """mHC pre in the argument order of vLLM's mhc_pre (and the torch references): returns
    (post [T, 4, 1], comb [T, 4, 4], layer_input bf16 [T, C]). n_splits is the caller's
    split-K count; the library picks its own (the same sum, in another order)."""
    p, c, li = T.mhc_pre(residual, fn, hc_scale, hc_base, norm_weight,
                         params=_params(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat,
                                        norm_eps))[:3]
    return p.unsqueeze(-1), c, li


def mhc_post(x, residual, post_layer_mix, comb_res_mix):
    """mHC post: returns bf16 [T, 4, C] = post * x + comb^T residual."""
    return T.mhc_post(comb_res_mix, post_layer_mix, residual, x)


def mhc_fused_post_pre(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps=1e-6,
                       hc_pre_eps=1e-6, hc_sinkhorn_eps=1e-6, hc_post_mult_value=2.0, sinkhorn_repeat=20,
                       n_splits=1, tile_n=1, norm_weight=None, norm_eps=0.0):
    """post then the next pre, vLLM's mhc_fused_post_pre order: returns (residual [T, 4, C],
    post [T, 4, 1], comb [T, 4, 4], layer_input [T, C]). n_splits and tile_n are the caller's
    tiling choices; the library makes its own (same result up to summation order)."""
    r, p, c, li = T.mhc_fused_post_pre(comb_res_mix, post_layer_mix, residual, x, fn, hc_scale, hc_base,
                                       norm_weight, params=_params(rms_eps, hc_pre_eps, hc_sinkhorn_eps,
                                                                   hc_post_mult_value, sinkhorn_repeat, norm_eps))
    return r, p.unsqueeze(-1), c, li


# AITER keeps MHC_PARAMS' defaults in its signatures; re-exported for callers that want them.
DEFAULT_MHC_PARAMS = MHC_PARAMS
