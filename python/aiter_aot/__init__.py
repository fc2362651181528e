"""aiter_aot: ahead-of-time compiled GPU kernels (MoE routing, mHC, FMHA varlen forward) for
Python, with the library statically linked into one extension.

The functions here take tensors (any object with __dlpack__, or None where optional), write
into the outputs they are given and launch on `stream` (an integer CUstream / hipStream_t; 0
is the default stream). They never allocate device memory and never synchronise. PyTorch
users want `aiter_aot.torch` (allocating forms, out= forms, torch.compile, CUDA graphs) or
the drop-in modules `aiter_aot.aiter` and `aiter_aot.vllm`. See docs/python.md.
"""
from . import _native
from ._native import (ArgumentError, Error, device_target, gpu_library, init, kernels, last_error, mhc_splits,
                      mhc_workspace_size, moe_align_sizes, moe_sorting_sizes, preload, stats, targets)

__version__ = "0.1.0"

# DeepSeek-V4's mHC parameters, in the order the mhc_* functions take them:
# (rms_eps, pre_eps, sinkhorn_eps, post_mult, sinkhorn_iters, norm_eps)
MHC_PARAMS = (1e-6, 1e-6, 1e-6, 2.0, 20, 1e-6)

# topk_route's scorings by name (the numbers of aiter_aot_route_scoring); the names are the
# scoring_func / score_func strings of vLLM and AITER
ROUTE_SCORING = {"softmax": 0, "sigmoid": 1, "sqrtsoftplus": 2}

__all__ = ["ArgumentError", "Error", "MHC_PARAMS", "ROUTE_SCORING", "device_target", "fmha_varlen_fwd", "gpu_library",
           "init", "kernels", "last_error", "mhc_fused_post_pre", "mhc_fused_post_pre_delayed", "mhc_head", "mhc_post",
           "mhc_pre", "mhc_pre_delayed", "mhc_pre_full", "mhc_prenorm_gemm", "mhc_splits", "mhc_workspace_size",
           "moe_align_block_size", "moe_align_sizes", "moe_sorting", "moe_sorting_sizes", "preload", "stats",
           "targets", "topk_route", "topk_softmax", "version"]


def version():
    """The linked library's version ("0.1.0")."""
    return _native.version()


# The ops, with keyword arguments (the extension takes them by position, which is what the torch
# layer uses). Tensors: objects with __dlpack__, None where optional; outputs are written in
# place; stream: a CUstream / hipStream_t as an int, 0 for the default stream.

def topk_softmax(gating_output, topk_weights, topk_ids, token_expert_indices, renormalize, stream=0):
    """gating_output [tokens, experts] fp32/fp16/bf16 (rows may be strided) -> topk_weights
    fp32, topk_ids int32, token_expert_indices int32 (or None), each [tokens, k]."""
    _native.topk_softmax(gating_output, topk_weights, topk_ids, token_expert_indices, renormalize, stream)


def moe_sorting(topk_ids, topk_weights, expert_mask, sorted_token_ids, sorted_weights, sorted_expert_ids,
                num_valid_ids, moe_buf, workspace, num_experts, block_size=32, stream=0):
    """Sizes: moe_sorting_sizes(tokens, k, num_experts, block_size)."""
    _native.moe_sorting(topk_ids, topk_weights, expert_mask, sorted_token_ids, sorted_weights, sorted_expert_ids,
                        num_valid_ids, moe_buf, workspace, num_experts, block_size, stream)


def _route_scoring(scoring, op="topk_route"):
    """The number of a scoring name of ROUTE_SCORING; a number passes as it is (the library
    checks it)."""
    if isinstance(scoring, str):
        if scoring not in ROUTE_SCORING:
            raise ValueError(f"{op}: scoring {scoring!r}; the op takes 'softmax', 'sigmoid' or 'sqrtsoftplus'")
        return ROUTE_SCORING[scoring]
    return int(scoring)


def topk_route(gating_output, bias, input_ids, tid2eid, topk_weights, topk_ids, scoring="softmax", n_group=0,
               topk_group=0, renormalize=False, routed_scaling_factor=1.0, stream=0):
    """gating_output [tokens, experts] fp32/fp16/bf16 (rows may be strided) -> topk_weights fp32
    and topk_ids int32 or int64, each [tokens, k]. bias fp32 [experts] or None; input_ids
    [tokens] and tid2eid [vocab, k] (int32 or int64 alike) for hash routing, or both None.
    scoring: 'softmax', 'sigmoid' or 'sqrtsoftplus'. docs/routing.md has the definition."""
    _native.topk_route(gating_output, bias, input_ids, tid2eid, topk_weights, topk_ids, _route_scoring(scoring),
                       n_group, topk_group, renormalize, routed_scaling_factor, stream)


def moe_align_block_size(topk_ids, expert_map, sorted_token_ids, expert_ids, num_tokens_post_pad, workspace,
                         num_experts, block_size, stream=0):
    """vLLM's block layout of topk_ids [tokens, k] int32. Sizes: moe_align_sizes(tokens, k,
    num_experts, block_size); expert_map int32 [num_experts] or None."""
    _native.moe_align_block_size(topk_ids, expert_map, sorted_token_ids, expert_ids, num_tokens_post_pad, workspace,
                                 num_experts, block_size, stream)


def mhc_prenorm_gemm(residual, fn, mix, sqrsum, broadcast=False, stream=0):
    _native.mhc_prenorm_gemm(residual, fn, mix, sqrsum, broadcast, stream)


def mhc_pre(mix, sqrsum, scale, base, residual, norm_weight, post, comb, layer_input, residual_out=None,
            params=MHC_PARAMS, broadcast=False, stream=0):
    _native.mhc_pre(mix, sqrsum, scale, base, residual, norm_weight, post, comb, layer_input, residual_out,
                    tuple(params), broadcast, stream)


def mhc_pre_full(residual, fn, scale, base, norm_weight, post, comb, layer_input, residual_out, workspace,
                 params=MHC_PARAMS, broadcast=False, stream=0):
    """workspace: at least mhc_workspace_size(tokens, hidden) bytes."""
    _native.mhc_pre_full(residual, fn, scale, base, norm_weight, post, comb, layer_input, residual_out, workspace,
                         tuple(params), broadcast, stream)


def mhc_post(comb, post, residual, x, out, stream=0):
    _native.mhc_post(comb, post, residual, x, out, stream)


def mhc_fused_post_pre(comb, post, residual, x, fn, residual_out, mix, sqrsum, stream=0):
    _native.mhc_fused_post_pre(comb, post, residual, x, fn, residual_out, mix, sqrsum, stream)


def mhc_head(residual, fn, scale, base, out, rms_eps=1e-6, eps=1e-6, stream=0):
    _native.mhc_head(residual, fn, scale, base, out, rms_eps, eps, stream)


def mhc_pre_delayed(residual, x, fn, scale, base, pre_mix, norm_weight, post, comb, layer_input, next_pre_mix,
                    workspace, params=MHC_PARAMS, stream=0):
    """DeepSeek-V4.1's delayed pre: the projection of residual [T, 4, C] (or of x, bf16 [T, C] or
    [T, 4C], with fn [24, x's width]), post, comb and next_pre_mix [T, 4] from it, and
    layer_input collapsed with pre_mix (the previous boundary's next_pre_mix; None: stream 0).
    workspace: at least mhc_workspace_size(tokens, hidden) bytes. docs/semantics.md."""
    _native.mhc_pre_delayed(residual, x, fn, scale, base, pre_mix, norm_weight, post, comb, layer_input, next_pre_mix,
                            workspace, tuple(params), stream)


def mhc_fused_post_pre_delayed(x, residual, post_in, comb_in, fn, scale, base, pre_mix, norm_weight, residual_out, post,
                               comb, layer_input, next_pre_mix, aux, workspace, params=MHC_PARAMS, stream=0):
    """The previous sublayer's post-mix (x, post_in, comb_in) into residual_out, then
    mhc_pre_delayed on residual_out as stored; aux (or None): bf16 [T, C], the mean of
    residual_out's streams. workspace: at least mhc_workspace_size(tokens, hidden) bytes."""
    _native.mhc_fused_post_pre_delayed(x, residual, post_in, comb_in, fn, scale, base, pre_mix, norm_weight,
                                       residual_out, post, comb, layer_input, next_pre_mix, aux, workspace,
                                       tuple(params), stream)


def fmha_varlen_fwd(q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale,
                    logits_soft_cap=0.0, causal=False, window_left=-1, window_right=-1, stream=0):
    """softmax_lse: fp32 [hq, total_q] or None."""
    _native.fmha_varlen_fwd(q, k, v, out, softmax_lse, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale,
                            logits_soft_cap, causal, window_left, window_right, stream)
