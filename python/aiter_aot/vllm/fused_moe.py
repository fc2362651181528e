"""The Python-level routing functions of vLLM's fused_moe package, in its argument and return
order: grouped_topk (vllm/model_executor/layers/fused_moe/router/grouped_topk_router.py) and
moe_align_block_size (vllm/model_executor/layers/fused_moe/moe_align_block_size.py). The ops
of the same names, as torch.ops._moe_C takes them, are in aiter_aot.vllm. See docs/python.md."""
from .. import torch as T
from ..torch import _bias32
from . import _ids32, _local_ids

__all__ = ["grouped_topk", "moe_align_block_size"]


def grouped_topk(hidden_states, gating_output, topk, renormalize, num_expert_group=0, topk_group=0,
                 scoring_func="softmax", routed_scaling_factor=1.0, e_score_correction_bias=None):
    """vLLM's grouped_topk (DeepSeek-V2/V3): scores by scoring_func ('softmax' or 'sigmoid';
    'sqrtsoftplus' too), groups scored by their best (by their two best with
    e_score_correction_bias, which picks the experts but does not weight them), the topk_group
    best of num_expert_group kept. Returns (topk_weights fp32, topk_ids int32), each
    [tokens, topk]. hidden_states is only checked against the token count, as vLLM does."""
    if hidden_states.shape[0] != gating_output.shape[0]:
        raise ValueError(f"aiter_aot.vllm.fused_moe: hidden_states has {hidden_states.shape[0]} tokens, "
                         f"gating_output {gating_output.shape[0]} (vLLM: 'Number of tokens mismatch')")
    return T.topk_route(gating_output, topk, scoring_func, renormalize, bias=_bias32(e_score_correction_bias),
                        n_group=num_expert_group, topk_group=topk_group, routed_scaling_factor=routed_scaling_factor)


def _vllm_length(numel, num_experts, block_size, pad_sorted_ids):
    """The length vLLM gives sorted_ids: max_num_tokens_padded, rounded up to block_size with
    pad_sorted_ids, and no more than numel * block_size when numel < num_experts. A block_size
    below 1 sizes as 1: the library refuses it with its own message."""
    bs = max(block_size, 1)
    n = numel + num_experts * (bs - 1)
    if pad_sorted_ids:
        n = -(-n // bs) * bs
    if numel < num_experts:
        n = min(numel * bs, n)
    return n


def moe_align_block_size(topk_ids, block_size, num_experts, expert_map=None, pad_sorted_ids=False,
                         ignore_invalid_experts=False):
    """vLLM's moe_align_block_size: returns (sorted_ids, expert_ids, num_tokens_post_pad), int32,
    of vLLM's lengths. With expert_map, the blocks' ids are mapped (-1: not on this rank), or,
    with ignore_invalid_experts, the pairs of other ranks are left out and the blocks carry
    local ids. int64 topk_ids are converted first (one more kernel)."""
    ids = _ids32(topk_ids)
    if expert_map is not None and ignore_invalid_experts:
        ids, expert_map = _local_ids(ids, expert_map, num_experts), None
    P, B = T._align_sizes(ids, num_experts, block_size)
    L = _vllm_length(ids.numel(), num_experts, block_size, pad_sorted_ids)
    if L > P:
        # pad_sorted_ids: the library writes the first P entries, the rest are vLLM's fill (the
        # block count, ceil(L / block_size), is the same)
        sorted_ids = ids.new_empty((L,))
        _, e, n = T.moe_align_block_size(ids, num_experts, block_size, expert_map,
                                         out=(sorted_ids[:P], ids.new_empty((B,)), ids.new_empty((1,))))
        sorted_ids[P:].fill_(ids.numel())
        return sorted_ids, e, n
    s, e, n = T.moe_align_block_size(ids, num_experts, block_size, expert_map)
    # a shorter length (numel < num_experts) still holds the whole layout: its first entries
    return s[:L], e[:-(-L // block_size)], n
