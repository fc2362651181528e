"""Drop-in forms of the vLLM ops this library implements, in vLLM's argument and return order:
`topk_softmax` as torch.ops._moe_C.topk_softmax takes it, and the mHC wrappers as vLLM's
DeepSeek-V4 code calls them (vllm/model_executor/kernels/mhc). See docs/python.md."""
import torch

from . import _native as N
from . import torch as T
from .aiter import mhc_fused_post_pre, mhc_post, mhc_pre
from .torch import _compiling, _s, _t

__all__ = ["topk_softmax", "mhc_pre", "mhc_post", "mhc_fused_post_pre", "mhc_pre_broadcast", "hc_head"]


def topk_softmax(topk_weights, topk_ids, token_expert_indices, gating_output, renormalize=False, bias=None):
    """torch.ops._moe_C.topk_softmax: fills topk_weights fp32, topk_ids (int32 or int64) and
    token_expert_indices int32 in place. int64 ids are computed as int32 and widened (one more
    copy kernel)."""
    if bias is not None:
        raise NotImplementedError("aiter_aot.vllm: topk_softmax bias (e_score_correction_bias) is not supported")
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
