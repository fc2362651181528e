"""The ops for PyTorch: allocating (functional) forms and out= forms, each registered with
torch.library.custom_op and a fake implementation, so that torch.compile(fullgraph=True) traces
them without a graph break and CUDA graphs capture them.

Eager calls go straight to the extension with (data_ptr, shape, strides, dtype, device) tuples:
the dispatcher and a DLPack export would cost more than the launch (docs/python.md has the
numbers). Under torch.compile the same functions call torch.ops.aiter_aot.*; an out= call then
computes into a fresh tensor and copies it into out (topk_softmax has a mutating op of its own).

Outputs and workspaces are allocated with torch (the caching allocator, the current device, so
they come from the graph's pool under capture). The stream is `stream` when given, else the
current stream of the tensors' device.
"""
from typing import List, Optional, Tuple

import torch

from . import MHC_PARAMS, _route_scoring
from . import _native as N

Tensor = torch.Tensor

_DT = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.int32: 3, torch.int64: 4, torch.uint8: 5,
       torch.int8: 6, torch.int16: 7, torch.float64: 8, torch.bool: 9}
_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
_current_device = getattr(torch._C, "_cuda_getDevice", None) or (lambda: torch.cuda.current_device())
_compiling = getattr(getattr(torch, "compiler", None), "is_compiling", None) or torch._dynamo.is_compiling


def _t(x):
    """The extension's fast tensor form."""
    return (x.data_ptr(), x.shape, x.stride(), _DT.get(x.dtype, 99), x.get_device())


def _o(x):
    return None if x is None else _t(x)


def _s(stream, x):
    """The stream to launch on: the caller's, else the current stream of x's device. The
    library launches on the current device, so x must be on it."""
    dev = x.get_device()
    if dev < 0:
        return 0  # a CPU tensor: the extension refuses it with a clear message
    cur = _current_device()
    if dev != cur:
        raise ValueError(f"aiter_aot: the tensors are on cuda:{dev}, the current device is cuda:{cur}; "
                         f"call it under torch.cuda.device({dev})")
    if stream is not None:
        return stream
    if _raw_stream is not None:
        return _raw_stream(dev)
    return torch.cuda.current_stream(dev).cuda_stream


def _params(p):
    p = tuple(p)
    if len(p) != 6:
        raise ValueError(f"params: got {len(p)} values; mHC needs (rms_eps, pre_eps, sinkhorn_eps, post_mult, "
                         "sinkhorn_iters, norm_eps)")
    return (float(p[0]), float(p[1]), float(p[2]), float(p[3]), int(p[4]), float(p[5]))


def _plist(p):
    """params for a custom op's List[float] argument."""
    return [float(x) for x in _params(p)]


def _post2(post):
    """vLLM's post is [T, 4, 1]; the ops read [T, 4]."""
    return post.view(post.shape[0], post.shape[1]) if post.dim() == 3 else post


# ---- topk_softmax ---------------------------------------------------------------------------

def _topk_out(gating, w, ids, tei, renormalize, stream):
    N.topk_softmax(_t(gating), _t(w), _t(ids), _o(tei), renormalize, _s(stream, gating))


def _topk_new(gating, topk, with_indices=True):
    T = gating.shape[0]
    w = torch.empty((T, topk), dtype=torch.float32, device=gating.device)
    ids = torch.empty((T, topk), dtype=torch.int32, device=gating.device)
    tei = torch.empty((T, topk), dtype=torch.int32, device=gating.device) if with_indices else None
    return w, ids, tei


@torch.library.custom_op("aiter_aot::topk_softmax", mutates_args=())
def _op_topk(gating: Tensor, topk: int, renormalize: bool,
             stream: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor]:
    w, ids, tei = _topk_new(gating, topk)
    _topk_out(gating, w, ids, tei, renormalize, stream)
    return w, ids, tei


@_op_topk.register_fake
def _(gating, topk, renormalize, stream=None):
    return _topk_new(gating, topk)


@torch.library.custom_op("aiter_aot::topk_softmax_out", mutates_args=("topk_weights", "topk_ids",
                                                                      "token_expert_indices"))
def _op_topk_out(gating: Tensor, topk_weights: Tensor, topk_ids: Tensor, token_expert_indices: Tensor,
                 renormalize: bool, stream: Optional[int] = None) -> None:
    _topk_out(gating, topk_weights, topk_ids, token_expert_indices, renormalize, stream)


@_op_topk_out.register_fake
def _(gating, topk_weights, topk_ids, token_expert_indices, renormalize, stream=None):
    return None


def topk_softmax(gating_output: Tensor, topk: int, renormalize: bool = False, *, out=None, stream=None):
    """softmax over each row of gating_output [tokens, experts] (fp32/fp16/bf16), then its topk
    largest: returns (topk_weights fp32, topk_ids int32, token_expert_indices int32), each
    [tokens, topk]. out=(topk_weights, topk_ids, token_expert_indices or None) writes those
    instead and returns them."""
    if out is None:
        if _compiling():
            return torch.ops.aiter_aot.topk_softmax(gating_output, topk, renormalize, stream)
        w, ids, tei = _topk_new(gating_output, topk)
        _topk_out(gating_output, w, ids, tei, renormalize, stream)
        return w, ids, tei
    w, ids, tei = out
    if _compiling():
        if tei is None:
            tei = torch.empty_like(ids)
        torch.ops.aiter_aot.topk_softmax_out(gating_output, w, ids, tei, renormalize, stream)
    else:
        _topk_out(gating_output, w, ids, tei, renormalize, stream)
    return out


# ---- moe_sorting ----------------------------------------------------------------------------

def _sort_new(topk_ids, num_experts, block_size):
    # the header's sizes, in Python so that the fake works on symbolic shapes too
    T, k = topk_ids.shape
    bs = block_size or 32
    P = T * k + num_experts * bs - k
    blocks = (P + bs - 1) // bs
    dev = topk_ids.device
    return (torch.empty((P,), dtype=torch.int32, device=dev), torch.empty((P,), dtype=torch.float32, device=dev),
            torch.empty((blocks,), dtype=torch.int32, device=dev), torch.empty((2,), dtype=torch.int32, device=dev))


def _sort_out(topk_ids, topk_weights, num_experts, block_size, expert_mask, moe_buf, out, stream):
    T, k = topk_ids.shape
    ws = torch.empty((N.moe_sorting_sizes(T, k, num_experts, block_size)[2],), dtype=torch.uint8,
                     device=topk_ids.device)
    N.moe_sorting(_t(topk_ids), _t(topk_weights), _o(expert_mask), _t(out[0]), _t(out[1]), _t(out[2]), _t(out[3]),
                  None if moe_buf is None or moe_buf.numel() == 0 else _t(moe_buf), _t(ws), num_experts, block_size,
                  _s(stream, topk_ids))
    return out


@torch.library.custom_op("aiter_aot::moe_sorting", mutates_args=())
def _op_sort(topk_ids: Tensor, topk_weights: Tensor, num_experts: int, block_size: int,
             expert_mask: Optional[Tensor] = None, stream: Optional[int] = None) -> List[Tensor]:
    out = _sort_new(topk_ids, num_experts, block_size)
    return list(_sort_out(topk_ids, topk_weights, num_experts, block_size, expert_mask, None, out, stream))


@_op_sort.register_fake
def _(topk_ids, topk_weights, num_experts, block_size, expert_mask=None, stream=None):
    return list(_sort_new(topk_ids, num_experts, block_size))


def moe_sorting(topk_ids: Tensor, topk_weights: Tensor, num_experts: int, block_size: int = 32,
                expert_mask: Optional[Tensor] = None, moe_buf: Optional[Tensor] = None, *, out=None, stream=None):
    """Groups the (token, slot) pairs of topk_ids [tokens, k] int32 by expert (AITER's
    moe_sorting). Returns (sorted_token_ids, sorted_weights, sorted_expert_ids, num_valid_ids);
    out= takes the same four. moe_buf, when given, is zero-filled by the same launches (its
    size in bytes a multiple of 16). The workspace is allocated per call."""
    if _compiling():
        r = torch.ops.aiter_aot.moe_sorting(topk_ids, topk_weights, num_experts, block_size, expert_mask, stream)
        if moe_buf is not None:
            moe_buf.zero_()
        if out is None:
            return tuple(r)
        for o, x in zip(out, r):
            o.copy_(x)
        return out
    if out is None:
        out = _sort_new(topk_ids, num_experts, block_size)
    return _sort_out(topk_ids, topk_weights, num_experts, block_size, expert_mask, moe_buf, out, stream)


# ---- topk_route -------------------------------------------------------------------------------

def _route_out(gating, w, ids, scoring, renormalize, bias, n_group, topk_group, scale, input_ids, tid2eid, stream):
    N.topk_route(_t(gating), _o(bias), _o(input_ids), _o(tid2eid), _t(w), _t(ids), scoring, n_group, topk_group,
                 renormalize, scale, _s(stream, gating))


def _route_new(gating, topk, ids_int64):
    T = gating.shape[0]
    return (torch.empty((T, topk), dtype=torch.float32, device=gating.device),
            torch.empty((T, topk), dtype=torch.int64 if ids_int64 else torch.int32, device=gating.device))


@torch.library.custom_op("aiter_aot::topk_route", mutates_args=())
def _op_route(gating: Tensor, topk: int, scoring: int, renormalize: bool, bias: Optional[Tensor], n_group: int,
              topk_group: int, routed_scaling_factor: float, input_ids: Optional[Tensor], tid2eid: Optional[Tensor],
              ids_int64: bool, stream: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    w, ids = _route_new(gating, topk, ids_int64)
    _route_out(gating, w, ids, scoring, renormalize, bias, n_group, topk_group, routed_scaling_factor, input_ids,
               tid2eid, stream)
    return w, ids


@_op_route.register_fake
def _(gating, topk, scoring, renormalize, bias, n_group, topk_group, routed_scaling_factor, input_ids, tid2eid,
      ids_int64, stream=None):
    return _route_new(gating, topk, ids_int64)


@torch.library.custom_op("aiter_aot::topk_route_out", mutates_args=("topk_weights", "topk_ids"))
def _op_route_out(gating: Tensor, topk_weights: Tensor, topk_ids: Tensor, scoring: int, renormalize: bool,
                  bias: Optional[Tensor], n_group: int, topk_group: int, routed_scaling_factor: float,
                  input_ids: Optional[Tensor], tid2eid: Optional[Tensor], stream: Optional[int] = None) -> None:
    _route_out(gating, topk_weights, topk_ids, scoring, renormalize, bias, n_group, topk_group, routed_scaling_factor,
               input_ids, tid2eid, stream)


@_op_route_out.register_fake
def _(gating, topk_weights, topk_ids, scoring, renormalize, bias, n_group, topk_group, routed_scaling_factor,
      input_ids, tid2eid, stream=None):
    return None


def _bias32(bias):
    """A correction bias as the op reads it: fp32 (one conversion kernel for another dtype)."""
    return bias if bias is None or bias.dtype == torch.float32 else bias.float()


def _route_fill(gating, w, ids, scoring, renormalize, bias=None, n_group=0, topk_group=0, scale=1.0, input_ids=None,
                tid2eid=None, stream=None):
    """topk_route into given outputs: the drop-ins' in-place form (a mutating op under compile)."""
    scoring = _route_scoring(scoring)
    if _compiling():
        torch.ops.aiter_aot.topk_route_out(gating, w, ids, scoring, bool(renormalize), bias, int(n_group),
                                           int(topk_group), float(scale), input_ids, tid2eid, stream)
    else:
        _route_out(gating, w, ids, scoring, bool(renormalize), bias, n_group, topk_group, scale, input_ids, tid2eid,
                   stream)


def topk_route(gating_output: Tensor, topk: int, scoring="softmax", renormalize: bool = False, *,
               bias: Optional[Tensor] = None, n_group: int = 0, topk_group: int = 0,
               routed_scaling_factor: float = 1.0, input_ids: Optional[Tensor] = None,
               tid2eid: Optional[Tensor] = None, ids_dtype=torch.int32, out=None, stream=None):
    """The routers of docs/routing.md over gating_output [tokens, experts] (fp32/fp16/bf16):
    scoring 'softmax', 'sigmoid' or 'sqrtsoftplus'; bias fp32 [experts] (selection only);
    n_group > 1 groups, the topk_group best kept; or hash routing, input_ids [tokens] and
    tid2eid [vocab, topk], int32 or int64 alike. Returns (topk_weights fp32, topk_ids of
    ids_dtype, int32 or int64), each [tokens, topk]; out=(topk_weights, topk_ids) writes those
    instead and returns them."""
    if out is not None:
        _route_fill(gating_output, out[0], out[1], scoring, renormalize, bias, n_group, topk_group,
                    routed_scaling_factor, input_ids, tid2eid, stream)
        return out
    if ids_dtype not in (torch.int32, torch.int64):
        raise ValueError(f"topk_route: ids_dtype {ids_dtype}; the op writes torch.int32 or torch.int64")
    wide, scoring = ids_dtype == torch.int64, _route_scoring(scoring)
    if _compiling():
        return torch.ops.aiter_aot.topk_route(gating_output, topk, scoring, bool(renormalize), bias, int(n_group),
                                              int(topk_group), float(routed_scaling_factor), input_ids, tid2eid,
                                              wide, stream)
    w, ids = _route_new(gating_output, topk, wide)
    _route_out(gating_output, w, ids, scoring, bool(renormalize), bias, n_group, topk_group, routed_scaling_factor,
               input_ids, tid2eid, stream)
    return w, ids


# ---- moe_align_block_size -----------------------------------------------------------------------

def _align_sizes(topk_ids, num_experts, block_size):
    """(max_num_tokens_padded, max_num_m_blocks): the header's sizes, in Python so that the fake
    works on symbolic shapes too. A block_size below 1 sizes as 1; the library refuses it."""
    bs = max(block_size, 1)
    P = topk_ids.shape[0] * topk_ids.shape[1] + num_experts * (bs - 1)
    return P, (P + bs - 1) // bs


def _align_new(topk_ids, num_experts, block_size):
    P, B = _align_sizes(topk_ids, num_experts, block_size)
    dev = topk_ids.device
    return (torch.empty((P,), dtype=torch.int32, device=dev), torch.empty((B,), dtype=torch.int32, device=dev),
            torch.empty((1,), dtype=torch.int32, device=dev))


def _align_out(topk_ids, num_experts, block_size, expert_map, out, stream):
    T, k = topk_ids.shape
    # at least 16 bytes, so that a shape the library refuses gets its message, not a NULL workspace's
    ws = torch.empty((max(N.moe_align_sizes(T, k, num_experts, block_size)[2], 16),), dtype=torch.uint8,
                     device=topk_ids.device)
    N.moe_align_block_size(_t(topk_ids), _o(expert_map), _t(out[0]), _t(out[1]), _t(out[2]), _t(ws), num_experts,
                           block_size, _s(stream, topk_ids))
    return out


@torch.library.custom_op("aiter_aot::moe_align_block_size", mutates_args=())
def _op_align(topk_ids: Tensor, num_experts: int, block_size: int, expert_map: Optional[Tensor] = None,
              stream: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor]:
    return tuple(_align_out(topk_ids, num_experts, block_size, expert_map,
                            _align_new(topk_ids, num_experts, block_size), stream))


@_op_align.register_fake
def _(topk_ids, num_experts, block_size, expert_map=None, stream=None):
    return _align_new(topk_ids, num_experts, block_size)


def moe_align_block_size(topk_ids: Tensor, num_experts: int, block_size: int, expert_map: Optional[Tensor] = None, *,
                         out=None, stream=None):
    """vLLM's block layout of the (token, slot) pairs of topk_ids [tokens, k] int32 by expert:
    returns (sorted_token_ids [max_num_tokens_padded], expert_ids [max_num_m_blocks],
    num_tokens_post_pad [1]), int32; out= takes the same three. expert_map int32
    [num_experts] maps the block ids (-1: not on this rank). The workspace is allocated per
    call."""
    if _compiling():
        r = torch.ops.aiter_aot.moe_align_block_size(topk_ids, num_experts, block_size, expert_map, stream)
        if out is None:
            return tuple(r)
        for o, x in zip(out, r):
            o.copy_(x)
        return out
    if out is None:
        out = _align_new(topk_ids, num_experts, block_size)
    return tuple(_align_out(topk_ids, num_experts, block_size, expert_map, out, stream))


# ---- mHC --------------------------------------------------------------------------------------

def _f32(shape, like):
    return torch.empty(shape, dtype=torch.float32, device=like.device)


def _bf16(shape, like):
    return torch.empty(shape, dtype=torch.bfloat16, device=like.device)


def _pre_new(residual, broadcast):
    T, C = residual.shape[0], residual.shape[-1]
    ro = _bf16((T, 4, C), residual) if broadcast else None
    return _f32((T, 4), residual), _f32((T, 4, 4), residual), _bf16((T, C), residual), ro


def _pre_full_impl(residual, fn, scale, base, norm_weight, params, broadcast, stream, out=None):
    post, comb, li, ro = _pre_new(residual, broadcast) if out is None else (tuple(out) + (None,))[:4]
    T, C = residual.shape[0], residual.shape[-1]
    ws = torch.empty((max(N.mhc_workspace_size(T, C), 16),), dtype=torch.uint8, device=residual.device)
    N.mhc_pre_full(_t(residual), _t(fn), _t(scale), _t(base), _o(norm_weight), _t(post), _t(comb), _t(li), _o(ro),
                   _t(ws), _params(params), broadcast, _s(stream, residual))
    return post, comb, li, ro


def _pre_ret(post, comb, li, ro):
    return [post, comb, li] + ([ro] if ro is not None else [])


@torch.library.custom_op("aiter_aot::mhc_pre", mutates_args=())
def _op_pre(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, norm_weight: Optional[Tensor],
            params: List[float], broadcast: bool, stream: Optional[int] = None) -> List[Tensor]:
    return _pre_ret(*_pre_full_impl(residual, fn, scale, base, norm_weight, params, broadcast, stream))


@_op_pre.register_fake
def _(residual, fn, scale, base, norm_weight, params, broadcast, stream=None):
    return _pre_ret(*_pre_new(residual, broadcast))


def mhc_pre(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, norm_weight: Optional[Tensor] = None, *,
            params=MHC_PARAMS, broadcast: bool = False, out=None, stream=None):
    """mHC pre (the library's pre_full: projection, coefficients, collapse, optional fused
    RMSNorm). residual bf16 [T, 4, C] (or [T, C] with broadcast), fn fp32 [24, 4C] ([24, C]),
    scale [3], base [24], norm_weight bf16 [C] or None. Returns (post [T, 4], comb [T, 4, 4],
    layer_input bf16 [T, C]) and, with broadcast, residual_out [T, 4, C] as a fourth; out= takes
    the same tensors. The workspace is allocated per call."""
    if _compiling():
        r = tuple(torch.ops.aiter_aot.mhc_pre(residual, fn, scale, base, norm_weight, _plist(params), broadcast,
                                              stream))
        if out is None:
            return r
        for o, x in zip(out, r):
            o.copy_(x)
        return tuple(out)
    return tuple(_pre_ret(*_pre_full_impl(residual, fn, scale, base, norm_weight, params, broadcast, stream, out)))


def _splits(T, C):
    return N.mhc_splits(T, C)


def _gemm_impl(residual, fn, splits, broadcast, stream):
    T, C = residual.shape[0], residual.shape[-1]
    mix, sq = _f32((splits, T, 24), residual), _f32((splits, T), residual)
    N.mhc_prenorm_gemm(_t(residual), _t(fn), _t(mix), _t(sq), broadcast, _s(stream, residual))
    return mix, sq


@torch.library.custom_op("aiter_aot::mhc_prenorm_gemm", mutates_args=())
def _op_gemm(residual: Tensor, fn: Tensor, splits: int, broadcast: bool,
             stream: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    return _gemm_impl(residual, fn, splits, broadcast, stream)


@_op_gemm.register_fake
def _(residual, fn, splits, broadcast, stream=None):
    T = residual.shape[0]
    return _f32((splits, T, 24), residual), _f32((splits, T), residual)


def mhc_prenorm_gemm(residual: Tensor, fn: Tensor, splits: int, broadcast: bool = False, *, stream=None):
    """The projection's split-K partials: returns (mix fp32 [splits, T, 24], sqrsum [splits, T])."""
    if _compiling():
        return torch.ops.aiter_aot.mhc_prenorm_gemm(residual, fn, splits, broadcast, stream)
    return _gemm_impl(residual, fn, splits, broadcast, stream)


def _pre_partials_impl(mix, sqrsum, scale, base, residual, norm_weight, params, broadcast, stream):
    post, comb, li, ro = _pre_new(residual, broadcast)
    N.mhc_pre(_t(mix), _t(sqrsum), _t(scale), _t(base), _t(residual), _o(norm_weight), _t(post), _t(comb), _t(li),
              _o(ro), _params(params), broadcast, _s(stream, residual))
    return post, comb, li, ro


@torch.library.custom_op("aiter_aot::mhc_pre_partials", mutates_args=())
def _op_pre_partials(mix: Tensor, sqrsum: Tensor, scale: Tensor, base: Tensor, residual: Tensor,
                     norm_weight: Optional[Tensor], params: List[float], broadcast: bool,
                     stream: Optional[int] = None) -> List[Tensor]:
    return _pre_ret(*_pre_partials_impl(mix, sqrsum, scale, base, residual, norm_weight, params, broadcast, stream))


@_op_pre_partials.register_fake
def _(mix, sqrsum, scale, base, residual, norm_weight, params, broadcast, stream=None):
    return _pre_ret(*_pre_new(residual, broadcast))


def mhc_pre_partials(mix: Tensor, sqrsum: Tensor, scale: Tensor, base: Tensor, residual: Tensor,
                     norm_weight: Optional[Tensor] = None, *, params=MHC_PARAMS, broadcast: bool = False, stream=None):
    """mHC pre from prenorm_gemm's (or fused_post_pre's) partials; returns as mhc_pre."""
    if _compiling():
        return tuple(torch.ops.aiter_aot.mhc_pre_partials(mix, sqrsum, scale, base, residual, norm_weight,
                                                          _plist(params), broadcast, stream))
    return tuple(_pre_ret(*_pre_partials_impl(mix, sqrsum, scale, base, residual, norm_weight, params, broadcast,
                                              stream)))


def _post_impl(comb, post, residual, x, out, stream):
    if out is None:
        out = torch.empty_like(residual)
    N.mhc_post(_t(comb), _t(_post2(post)), _t(residual), _t(x), _t(out), _s(stream, residual))
    return out


@torch.library.custom_op("aiter_aot::mhc_post", mutates_args=())
def _op_post(comb: Tensor, post: Tensor, residual: Tensor, x: Tensor, stream: Optional[int] = None) -> Tensor:
    return _post_impl(comb, post, residual, x, None, stream)


@_op_post.register_fake
def _(comb, post, residual, x, stream=None):
    return torch.empty_like(residual)


def mhc_post(comb: Tensor, post: Tensor, residual: Tensor, x: Tensor, *, out: Optional[Tensor] = None, stream=None):
    """out[t, k, h] = post[t, k] x[t, h] + sum_j comb[t, j, k] residual[t, j, h], bf16
    [T, 4, C]. post is [T, 4] or [T, 4, 1]; out may not overlap residual."""
    if _compiling():
        r = torch.ops.aiter_aot.mhc_post(comb, post, residual, x, stream)
        return r if out is None else out.copy_(r)
    return _post_impl(comb, post, residual, x, out, stream)


def _fused_impl(comb, post, residual, x, fn, scale, base, norm_weight, params, stream):
    T, C = residual.shape[0], residual.shape[-1]
    s = _s(stream, residual)
    splits = _splits(T, C)
    ro = torch.empty_like(residual)
    mix, sq = _f32((splits, T, 24), residual), _f32((splits, T), residual)
    N.mhc_fused_post_pre(_t(comb), _t(_post2(post)), _t(residual), _t(x), _t(fn), _t(ro), _t(mix), _t(sq), s)
    p2, c2, li, _ = _pre_partials_impl(mix, sq, scale, base, ro, norm_weight, params, False, s)
    return ro, p2, c2, li


@torch.library.custom_op("aiter_aot::mhc_fused_post_pre", mutates_args=())
def _op_fused(comb: Tensor, post: Tensor, residual: Tensor, x: Tensor, fn: Tensor, scale: Tensor, base: Tensor,
              norm_weight: Optional[Tensor], params: List[float],
              stream: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return _fused_impl(comb, post, residual, x, fn, scale, base, norm_weight, params, stream)


@_op_fused.register_fake
def _(comb, post, residual, x, fn, scale, base, norm_weight, params, stream=None):
    p, c, li, _ = _pre_new(residual, False)
    return torch.empty_like(residual), p, c, li


def mhc_fused_post_pre(comb: Tensor, post: Tensor, residual: Tensor, x: Tensor, fn: Tensor, scale: Tensor,
                       base: Tensor, norm_weight: Optional[Tensor] = None, *, params=MHC_PARAMS, stream=None):
    """post, then the next pre on its result, in two launches (fused_post_pre, then pre on
    its partials): returns (residual_out [T, 4, C], post [T, 4], comb [T, 4, 4],
    layer_input [T, C])."""
    if _compiling():
        return torch.ops.aiter_aot.mhc_fused_post_pre(comb, post, residual, x, fn, scale, base, norm_weight,
                                                      _plist(params), stream)
    return _fused_impl(comb, post, residual, x, fn, scale, base, norm_weight, params, stream)


def _head_impl(residual, fn, scale, base, rms_eps, eps, out, stream):
    if out is None:
        out = _bf16((residual.shape[0], residual.shape[-1]), residual)
    N.mhc_head(_t(residual), _t(fn), _t(scale), _t(base), _t(out), rms_eps, eps, _s(stream, residual))
    return out


@torch.library.custom_op("aiter_aot::mhc_head", mutates_args=())
def _op_head(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, rms_eps: float, eps: float,
             stream: Optional[int] = None) -> Tensor:
    return _head_impl(residual, fn, scale, base, rms_eps, eps, None, stream)


@_op_head.register_fake
def _(residual, fn, scale, base, rms_eps, eps, stream=None):
    return _bf16((residual.shape[0], residual.shape[-1]), residual)


def mhc_head(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, rms_eps: float = 1e-6, eps: float = 1e-6, *,
             out: Optional[Tensor] = None, stream=None):
    """The collapse before the LM head: bf16 [T, C] from residual [T, 4, C], fn [4, 4C],
    scale [1], base [4]."""
    if _compiling():
        r = torch.ops.aiter_aot.mhc_head(residual, fn, scale, base, rms_eps, eps, stream)
        return r if out is None else out.copy_(r)
    return _head_impl(residual, fn, scale, base, rms_eps, eps, out, stream)


# ---- the delayed pre (DeepSeek-V4.1) ---------------------------------------------------------

def _delayed_new(residual):
    T, C = residual.shape[0], residual.shape[-1]
    return _f32((T, 4), residual), _f32((T, 4, 4), residual), _bf16((T, C), residual), _f32((T, 4), residual)


def _workspace(residual):
    T, C = residual.shape[0], residual.shape[-1]
    return torch.empty((max(N.mhc_workspace_size(T, C), 16),), dtype=torch.uint8, device=residual.device)


def _pre_delayed_impl(residual, fn, scale, base, pre_mix, x, norm_weight, params, stream, out=None):
    post, comb, li, nxt = _delayed_new(residual) if out is None else tuple(out)
    N.mhc_pre_delayed(_t(residual), _o(x), _t(fn), _t(scale), _t(base), _o(pre_mix), _o(norm_weight), _t(post),
                      _t(comb), _t(li), _t(nxt), _t(_workspace(residual)), _params(params), _s(stream, residual))
    return post, comb, li, nxt


@torch.library.custom_op("aiter_aot::mhc_pre_delayed", mutates_args=())
def _op_pre_delayed(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, pre_mix: Optional[Tensor],
                    x: Optional[Tensor], norm_weight: Optional[Tensor], params: List[float],
                    stream: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    return _pre_delayed_impl(residual, fn, scale, base, pre_mix, x, norm_weight, params, stream)


@_op_pre_delayed.register_fake
def _(residual, fn, scale, base, pre_mix, x, norm_weight, params, stream=None):
    return _delayed_new(residual)


def mhc_pre_delayed(residual: Tensor, fn: Tensor, scale: Tensor, base: Tensor, pre_mix: Optional[Tensor] = None, *,
                    x: Optional[Tensor] = None, norm_weight: Optional[Tensor] = None, params=MHC_PARAMS, out=None,
                    stream=None):
    """DeepSeek-V4.1's delayed mHC pre: residual bf16 [T, 4, C], fn fp32 [24, 4C] (or
    [24, C] / [24, 4C] for the projection input x, bf16 [T, C] / [T, 4C]), scale [3], base
    [24], pre_mix fp32 [T, 4] (the previous boundary's next_pre_mix; None: layer_input is
    stream 0), norm_weight bf16 [C] or None. Returns (post [T, 4], comb [T, 4, 4],
    layer_input bf16 [T, C], next_pre_mix [T, 4]); out= takes the same four tensors. The
    workspace is allocated per call."""
    if _compiling():
        r = tuple(torch.ops.aiter_aot.mhc_pre_delayed(residual, fn, scale, base, pre_mix, x, norm_weight,
                                                      _plist(params), stream))
        if out is None:
            return r
        for o, v in zip(out, r):
            o.copy_(v)
        return tuple(out)
    return tuple(_pre_delayed_impl(residual, fn, scale, base, pre_mix, x, norm_weight, params, stream, out))


def _fused_delayed_new(residual, capture_aux):
    T, C = residual.shape[0], residual.shape[-1]
    return (torch.empty_like(residual),) + _delayed_new(residual) + (_bf16((T if capture_aux else 0, C), residual),)


def _fused_delayed_impl(x, residual, post, comb, fn, scale, base, pre_mix, norm_weight, capture_aux, params, stream,
                        out=None):
    if out is None:
        out = _fused_delayed_new(residual, capture_aux)
    elif len(out) == 5:
        out = tuple(out) + (_bf16((0, residual.shape[-1]), residual),)
    ro, p2, c2, li, nxt, aux = out
    N.mhc_fused_post_pre_delayed(_t(x), _t(residual), _t(_post2(post)), _t(comb), _t(fn), _t(scale), _t(base),
                                 _o(pre_mix), _o(norm_weight), _t(ro), _t(p2), _t(c2), _t(li), _t(nxt),
                                 _t(aux) if capture_aux else None, _t(_workspace(residual)), _params(params),
                                 _s(stream, residual))
    return ro, p2, c2, li, nxt, aux


@torch.library.custom_op("aiter_aot::mhc_fused_post_pre_delayed", mutates_args=())
def _op_fused_delayed(x: Tensor, residual: Tensor, post: Tensor, comb: Tensor, fn: Tensor, scale: Tensor, base: Tensor,
                      pre_mix: Optional[Tensor], norm_weight: Optional[Tensor], capture_aux: bool, params: List[float],
                      stream: Optional[int] = None) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    return _fused_delayed_impl(x, residual, post, comb, fn, scale, base, pre_mix, norm_weight, capture_aux, params,
                               stream)


@_op_fused_delayed.register_fake
def _(x, residual, post, comb, fn, scale, base, pre_mix, norm_weight, capture_aux, params, stream=None):
    return _fused_delayed_new(residual, capture_aux)


def mhc_fused_post_pre_delayed(x: Tensor, residual: Tensor, post: Tensor, comb: Tensor, fn: Tensor, scale: Tensor,
                               base: Tensor, pre_mix: Optional[Tensor] = None, norm_weight: Optional[Tensor] = None, *,
                               capture_aux: bool = False, params=MHC_PARAMS, out=None, stream=None):
    """The previous sublayer's post-mix (x bf16 [T, C], post [T, 4] or [T, 4, 1], comb
    [T, 4, 4]), then mhc_pre_delayed on the new residual as stored, in two or three launches.
    Returns (residual_out [T, 4, C], post [T, 4], comb [T, 4, 4], layer_input [T, C],
    next_pre_mix [T, 4], aux bf16 [T, C]: the mean of residual_out's streams with capture_aux,
    else [0, C]); out= takes the first five, and aux sixth with capture_aux."""
    if capture_aux and out is not None and len(out) != 6:
        raise ValueError("mhc_fused_post_pre_delayed: capture_aux with out= needs six tensors, aux the sixth")
    if _compiling():
        r = tuple(torch.ops.aiter_aot.mhc_fused_post_pre_delayed(x, residual, post, comb, fn, scale, base, pre_mix,
                                                                 norm_weight, capture_aux, _plist(params), stream))
        if out is None:
            return r
        for o, v in zip(out, r):
            o.copy_(v)
        return tuple(out) + r[len(out):]
    return tuple(_fused_delayed_impl(x, residual, post, comb, fn, scale, base, pre_mix, norm_weight, capture_aux,
                                     params, stream, out))


# ---- FMHA -------------------------------------------------------------------------------------

def _fmha_new(q, v, return_lse):
    out = q.new_empty((q.shape[0], q.shape[1], v.shape[2]))
    lse = _f32((q.shape[1], q.shape[0]) if return_lse else (0,), q)
    return out, lse


def _fmha_impl(q, k, v, cu_q, cu_k, max_sq, scale, causal, wl, wr, cap, return_lse, out, lse, stream):
    if out is None:
        out = q.new_empty((q.shape[0], q.shape[1], v.shape[2]))
    if lse is None and return_lse:
        lse = _f32((q.shape[1], q.shape[0]), q)
    if scale is None:
        scale = q.shape[2] ** -0.5
    N.fmha_varlen_fwd(_t(q), _t(k), _t(v), _t(out), _o(lse), _t(cu_q), _t(cu_k), max_sq, scale, cap, causal, wl, wr,
                      _s(stream, q))
    return out, lse


@torch.library.custom_op("aiter_aot::fmha_varlen_fwd", mutates_args=())
def _op_fmha(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, max_seqlen_q: int,
             softmax_scale: float, causal: bool, window_left: int, window_right: int, logits_soft_cap: float,
             return_lse: bool, stream: Optional[int] = None) -> Tuple[Tensor, Tensor]:
    out, lse = _fmha_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale, causal, window_left,
                          window_right, logits_soft_cap, return_lse, None, None, stream)
    return out, lse if lse is not None else _f32((0,), q)


@_op_fmha.register_fake
def _(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale, causal, window_left, window_right,
      logits_soft_cap, return_lse, stream=None):
    return _fmha_new(q, v, return_lse)


def fmha_varlen_fwd(q: Tensor, k: Tensor, v: Tensor, cu_seqlens_q: Tensor, cu_seqlens_k: Tensor, max_seqlen_q: int,
                    softmax_scale: Optional[float] = None, *, causal: bool = False, window_left: int = -1,
                    window_right: int = -1, logits_soft_cap: float = 0.0, return_lse: bool = False,
                    out: Optional[Tensor] = None, lse: Optional[Tensor] = None, stream=None):
    """Flash attention forward over packed sequences: q [total_q, hq, d], k [total_k, hk, d],
    v [total_k, hk, d_v] (bf16/fp16), cu_seqlens_* int32 [batch + 1]. softmax_scale defaults to
    d ** -0.5. Returns out [total_q, hq, d_v], or (out, lse fp32 [hq, total_q]) with return_lse
    (or when lse= is given)."""
    want_lse = return_lse or lse is not None
    if _compiling():
        o, l = torch.ops.aiter_aot.fmha_varlen_fwd(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q,
                                                   q.shape[2] ** -0.5 if softmax_scale is None else softmax_scale,
                                                   causal, window_left, window_right, logits_soft_cap, want_lse,
                                                   stream)
        if out is not None:
            o = out.copy_(o)
        if lse is not None:
            l = lse.copy_(l)
        return (o, l) if want_lse else o
    o, l = _fmha_impl(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, softmax_scale, causal, window_left,
                      window_right, logits_soft_cap, want_lse, out, lse, stream)
    return (o, l) if want_lse else o
