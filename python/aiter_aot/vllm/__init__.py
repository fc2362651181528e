"""Drop-in forms of the vLLM ops this library implements, in vLLM's argument and return order:
the routing ops as vllm._custom_ops and torch.ops._moe_C take them (topk_softmax,
topk_sigmoid, topk_softplus_sqrt, grouped_topk, moe_align_block_size), and the mHC wrappers as vLLM's DeepSeek-V4
code calls them (vllm/model_executor/kernels/mhc). The Python-level forms of vLLM's fused_moe
package (grouped_topk, moe_align_block_size, whose names clash with the ops') are in
aiter_aot.vllm.fused_moe. See docs/python.md."""
import torch

from .. import _native as N
from .. import torch as T
from ..aiter import mhc_fused_post_pre, mhc_post, mhc_pre
from ..torch import _bias32, _compiling, _route_fill, _s, _t

__all__ = ["topk_softmax", "topk_sigmoid", "topk_softplus_sqrt", "grouped_topk", "moe_align_block_size", "mhc_pre", "mhc_post",
           "mhc_fused_post_pre", "mhc_pre_broadcast", "hc_head", "mhc_pre_delayed", "mhc_fused_post_pre_delayed"]


def _unsupported(name, value, why):
    raise NotImplementedError(f"aiter_aot.vllm: {name}={value!r} is not supported ({why})")


def _token_expert_indices(tei):
    """token_expert_indices[t, j] = j * tokens + t, as vLLM's top-k kernels write it (here an
    arange and a copy, since topk_route has no such output)."""
    n, k = tei.shape
    tei.copy_(torch.arange(n * k, dtype=torch.int32, device=tei.device).view(k, n).t())


def _routed(topk_weights, topk_ids, token_expert_indices, gating_output, scoring, renormalize, bias, scale=1.0,
            input_ids=None, tid2eid=None):
    """The top-k ops through topk_route: int32 or int64 ids directly."""
    _route_fill(gating_output, topk_weights, topk_ids, scoring, renormalize, _bias32(bias), scale=scale,
                input_ids=input_ids, tid2eid=tid2eid)
    _token_expert_indices(token_expert_indices)


def topk_softmax(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize=False, bias=None):
    """torch.ops._moe_C.topk_softmax: fills topk_weights fp32, topk_ids (int32 or int64) and
    token_expert_indices int32 in place. int64 ids are computed as int32 and widened (one more
    copy kernel). With bias (e_score_correction_bias) the experts are chosen by softmax plus
    bias and weighted by the softmax alone: topk_route's softmax scoring, then
    token_expert_indices from an arange."""
    if bias is not None:
        return _routed(topk_weights, topk_ids, token_expert_indices, gating_output, "softmax", renormalize, bias)
    ids = topk_ids if topk_ids.dtype == torch.int32 else torch.empty(topk_ids.shape, dtype=torch.int32,
                                                                     device=topk_ids.device)
    if _compiling():
        torch.ops.aiter_aot.topk_softmax_out(gating_output, topk_weights, ids, token_expert_indices,
                                             bool(renormalize), None)
    else:
        N.topk_softmax(_t(gating_output), _t(topk_weights), _t(ids), _t(token_expert_indices), bool(renormalize),
                       _s(None, gating_output))
    if ids is not topk_ids:
        topk_ids.copy_(ids)


def _no_padding(is_padding):
    if is_padding is not None:
        _unsupported("is_padding", "a tensor", "rows marked as padding are not skipped; pass None")


def topk_sigmoid(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize=False, bias=None,
                 routed_scaling_factor=1.0, is_padding=None):
    """torch.ops._moe_C.topk_sigmoid (Llama-4): the k largest sigmoid scores (plus bias, which
    picks the experts but does not weight them), renormalized if asked, then times
    routed_scaling_factor (newer vLLM's argument; older ones end at bias). Fills topk_weights
    fp32, topk_ids (int32 or int64) and token_expert_indices int32 in place. is_padding must be
    None."""
    _no_padding(is_padding)
    _routed(topk_weights, topk_ids, token_expert_indices, gating_output, "sigmoid", renormalize, bias,
            routed_scaling_factor)


def topk_softplus_sqrt(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize,
                       routed_scaling_factor, correction_bias=None, input_ids=None, tid2eid=None, is_padding=None):
    """torch.ops._moe_C.topk_softplus_sqrt (DeepSeek-V4's router): scores sqrt(softplus(logit)),
    the k best chosen with correction_bias added (not weighted by it), or, with input_ids
    [tokens] and tid2eid [vocab, k] (hash routing, the first layers), the experts the table
    gives; renormalized if asked, then times routed_scaling_factor. Fills topk_weights fp32,
    topk_ids (int32 or int64) and token_expert_indices int32 in place. is_padding must be None."""
    _no_padding(is_padding)
    _routed(topk_weights, topk_ids, token_expert_indices, gating_output, "sqrtsoftplus", renormalize,
            correction_bias, routed_scaling_factor, input_ids, tid2eid)


def grouped_topk(scores, num_expert_group, topk_group, topk, renormalize, routed_scaling_factor, bias,
                 scoring_func=0):
    """torch.ops._moe_C.grouped_topk (DeepSeek-V3's fused router): with scoring_func=1, scores
    are logits and are scored by sigmoid; the experts are chosen by score plus bias in the
    topk_group best of num_expert_group groups (a group scores its two best). Returns
    (topk_values fp32, topk_indices int32), each [tokens, topk]. scoring_func=0 (scores already
    activated) raises NotImplementedError: pass the logits to aiter_aot.vllm.fused_moe.grouped_topk
    instead."""
    if scoring_func != 1:
        _unsupported("scoring_func", scoring_func, "the op scores logits itself; 1 (sigmoid) is supported, and "
                     "aiter_aot.vllm.fused_moe.grouped_topk takes softmax logits")
    return T.topk_route(scores, topk, "sigmoid", renormalize, bias=_bias32(bias), n_group=num_expert_group,
                        topk_group=topk_group, routed_scaling_factor=routed_scaling_factor)


def _ids32(topk_ids):
    """int32 ids for the align op (vLLM's takes any integer dtype; one conversion kernel)."""
    return topk_ids if topk_ids.dtype == torch.int32 else topk_ids.int()


def _local_ids(topk_ids, expert_map, num_experts):
    """Each pair's local expert expert_map[id], -1 for an id outside [0, num_experts): the op
    drops -1 like any id out of range. This is vLLM's path with an expert map given to the
    align op itself (ignore_invalid_experts): pairs of other ranks take no place at all."""
    inside = (topk_ids >= 0) & (topk_ids < num_experts)
    local = expert_map.index_select(0, topk_ids.clamp(0, num_experts - 1).flatten()).view(topk_ids.shape)
    return local.masked_fill(~inside, -1)


def _align_fill(topk_ids, num_experts, block_size, sorted_ids, expert_ids, num_tokens_post_pad):
    """The align op into vLLM's buffers, whatever their length L: vLLM sizes sorted_token_ids
    as the op's max_num_tokens_padded P, rounded up to block_size (pad_sorted_ids), or
    topk_ids.numel() * block_size when that is smaller. The library writes exactly P entries:
    a longer buffer gets the rest filled as vLLM's kernel fills it (numel, block id 0), a
    shorter one is computed into scratch and copied (two more copy kernels)."""
    P, B = T._align_sizes(topk_ids, num_experts, block_size)
    L = sorted_ids.shape[0]
    LB = -(-L // max(block_size, 1))  # a block_size below 1 reaches the library, which refuses it
    if expert_ids.shape[0] < LB:
        raise ValueError(f"aiter_aot.vllm: experts_ids has {expert_ids.shape[0]} entries; sorted_token_ids of "
                         f"{L} needs ceil({L} / block_size) = {LB}")
    if L >= P:
        T.moe_align_block_size(topk_ids, num_experts, block_size, out=(sorted_ids[:P], expert_ids[:B],
                                                                       num_tokens_post_pad))
        if L > P:
            sorted_ids[P:].fill_(topk_ids.numel())
        if LB > B:
            expert_ids[B:LB].fill_(0)
        return
    s, e, n = T.moe_align_block_size(topk_ids, num_experts, block_size)
    sorted_ids.copy_(s[:L])
    expert_ids[:LB].copy_(e[:LB])
    num_tokens_post_pad.copy_(n)


def moe_align_block_size(topk_ids, num_experts, block_size, sorted_token_ids, experts_ids, num_tokens_post_pad,
                         expert_map=None):
    """vllm._custom_ops.moe_align_block_size (torch.ops._moe_C.moe_align_block_size): fills
    sorted_token_ids, experts_ids and num_tokens_post_pad in place. With expert_map, pairs of
    experts mapped to -1 are left out and the blocks carry local ids, as vLLM's kernel does
    (here a few small torch kernels map the ids first)."""
    ids = _ids32(topk_ids)
    if expert_map is not None:
        ids = _local_ids(ids, expert_map, num_experts)
    _align_fill(ids, num_experts, block_size, sorted_token_ids, experts_ids, num_tokens_post_pad)


def mhc_pre_broadcast(residual, fn_broadcast, hc_scale, hc_base, norm_weight, rms_eps=1e-6, hc_pre_eps=1e-6,
                      hc_sinkhorn_eps=1e-6, hc_post_mult_value=2.0, sinkhorn_repeat=20, norm_eps=1e-6):
    """The first layer's pre on the un-expanded embedding [T, C] (fn_broadcast [24, C]):
    returns (residual_out [T, 4, C], post [T, 4, 1], comb [T, 4, 4], layer_input [T, C])."""
    p, c, li, ro = T.mhc_pre(residual, fn_broadcast, hc_scale, hc_base, norm_weight, broadcast=True,
                             params=(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat,
                                     norm_eps))
    return ro, p.unsqueeze(-1), c, li


def hc_head(residual, fn, hc_scale, hc_base, rms_eps=1e-6, hc_eps=1e-6):
    """The collapse before the LM head: bf16 [T, C]."""
    return T.mhc_head(residual, fn, hc_scale, hc_base, rms_eps, hc_eps)


def mhc_pre_delayed(residual, fn, hc_scale, hc_base, rms_eps=1e-6, hc_pre_eps=1e-6, hc_sinkhorn_eps=1e-6,
                    hc_post_mult_value=2.0, sinkhorn_repeat=20, pre_mix=None, x=None, norm_weight=None, norm_eps=1e-6):
    """DeepSeek-V4.1's delayed pre in the order of vLLM's mhc_pre_delayed_tilelang (and
    mhc_pre_delayed_torch): returns (post [T, 4, 1], comb [T, 4, 4], layer_input bf16 [T, C],
    next_pre_mix [T, 4]). pre_mix None collapses to stream 0; x (bf16 [T, C] or [T, 4C]) is the
    projection input instead of the residual."""
    p, c, li, nxt = T.mhc_pre_delayed(residual, fn, hc_scale, hc_base, pre_mix, x=x, norm_weight=norm_weight,
                                      params=(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value,
                                              sinkhorn_repeat, norm_eps))
    return p.unsqueeze(-1), c, li, nxt


def mhc_fused_post_pre_delayed(x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, rms_eps=1e-6,
                               hc_pre_eps=1e-6, hc_sinkhorn_eps=1e-6, hc_post_mult_value=2.0, sinkhorn_repeat=20,
                               pre_mix=None, norm_weight=None, norm_eps=1e-6, capture_aux=False):
    """One post block and the next delayed pre in the order of vLLM's
    mhc_fused_post_pre_delayed_tilelang: returns (residual [T, 4, C], post [T, 4, 1],
    comb [T, 4, 4], layer_input [T, C], next_pre_mix [T, 4], aux [T, C] with capture_aux, else
    [0, C]). The projection reads the new residual as stored in bf16 at every token count
    (TileLang's small-token kernel projects its fp32 value: docs/semantics.md)."""
    r, p, c, li, nxt, aux = T.mhc_fused_post_pre_delayed(
        x, residual, post_layer_mix, comb_res_mix, fn, hc_scale, hc_base, pre_mix, norm_weight,
        capture_aux=capture_aux, params=(rms_eps, hc_pre_eps, hc_sinkhorn_eps, hc_post_mult_value, sinkhorn_repeat,
                                         norm_eps))
    return r, p.unsqueeze(-1), c, li, nxt, aux
