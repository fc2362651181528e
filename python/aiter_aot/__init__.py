"""aiter_aot: ahead-of-time compiled GPU kernels (MoE routing, mHC, FMHA varlen forward) for
Python, with the library statically linked into one extension.

The functions here take tensors (any object with __dlpack__, or None where optional), write
into the outputs they are given and launch on `stream` (an integer CUstream / hipStream_t; 0
is the default stream). They never allocate device memory and never synchronise. PyTorch
users want `aiter_aot.torch` (allocating forms, out= forms, torch.compile, CUDA graphs) or
the drop-in modules `aiter_aot.aiter` and `aiter_aot.vllm`. See docs/python.md.
"""
from . import _native
from ._native import (ArgumentError, Error, device_target, fmha_varlen_fwd, gpu_library, init, kernels,
                      last_error, mhc_fused_post_pre, mhc_head, mhc_post, mhc_pre, mhc_pre_full,
                      mhc_prenorm_gemm, mhc_splits, mhc_workspace_size, moe_sorting, moe_sorting_sizes,
                      preload, stats, targets, topk_softmax)

__version__ = "0.1.0"

# DeepSeek-V4's mHC parameters, in the order the mhc_* functions take them:
# (rms_eps, pre_eps, sinkhorn_eps, post_mult, sinkhorn_iters, norm_eps)
MHC_PARAMS = (1e-6, 1e-6, 1e-6, 2.0, 20, 1e-6)

__all__ = ["ArgumentError", "Error", "MHC_PARAMS", "device_target", "fmha_varlen_fwd", "gpu_library", "init",
           "kernels", "last_error", "mhc_fused_post_pre", "mhc_head", "mhc_post", "mhc_pre", "mhc_pre_full",
           "mhc_prenorm_gemm", "mhc_splits", "mhc_workspace_size", "moe_sorting", "moe_sorting_sizes", "preload",
           "stats", "targets", "topk_softmax", "version"]


def version():
    """The linked library's version ("0.1.0")."""
    return _native.version()
