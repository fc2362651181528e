"""AITER's aiter.fused_moe.moe_sorting: the allocating form."""
import torch

from .. import torch as T


def moe_sorting(topk_ids, topk_weights, num_experts, model_dim, moebuf_dtype, block_size=32, expert_mask=None,
                num_local_tokens=None, dispatch_policy=0):
    """Returns (sorted_ids, sorted_weights, sorted_expert_ids, num_valid_ids, moe_buf) as AITER
    does; moe_buf [tokens, model_dim] of moebuf_dtype is zero-filled by the same launches.
    dispatch_policy selects among AITER's kernels and has no effect here."""
    if num_local_tokens is not None:
        raise NotImplementedError("aiter_aot.aiter.fused_moe: num_local_tokens is not supported (the token count "
                                  "comes from topk_ids' shape)")
    moe_buf = torch.empty((topk_ids.shape[0], model_dim), dtype=moebuf_dtype, device=topk_ids.device)
    r = T.moe_sorting(topk_ids, topk_weights, num_experts, block_size, expert_mask, moe_buf)
    return (*r, moe_buf)
