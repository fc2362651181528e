"""What every benchmark script shares: ctypes bindings of libaiter_aot.so (the args structs of
runtime/include/aiter_aot_moe.h, aiter_aot_mhc.h and aiter_aot_fmha.h, field for field) and the
GPU timing helpers (CUDA events, CUDA graphs, copy bandwidth).

The structs need only ctypes; torch is imported by the timing helpers when they are first
called, so the bindings load where PyTorch is absent."""
import ctypes as C

P = C.c_void_p


class TopkArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("gating", P), ("gating_dtype", C.c_int),
                ("gating_row_stride", C.c_int64), ("tokens", C.c_int32), ("experts", C.c_int32),
                ("k", C.c_int32), ("renormalize", C.c_int32), ("topk_weights", P),
                ("topk_ids", P), ("token_expert_indices", P)]


class SortArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("topk_ids", P), ("topk_weights", P), ("tokens", C.c_int32),
                ("k", C.c_int32), ("experts", C.c_int32), ("block_size", C.c_int32),
                ("expert_mask", P), ("sorted_token_ids", P), ("sorted_weights", P),
                ("sorted_expert_ids", P), ("num_valid_ids", P), ("moe_buf", P),
                ("moe_buf_bytes", C.c_size_t), ("workspace", P), ("workspace_size", C.c_size_t)]


I32, F32 = C.c_int32, C.c_float


class MhcParams(C.Structure):
    _fields_ = [("rms_eps", F32), ("pre_eps", F32), ("sinkhorn_eps", F32), ("post_mult", F32),
                ("sinkhorn_iters", I32), ("norm_eps", F32)]


class MhcPreFullArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("residual", P), ("fn", P), ("scale", P), ("base", P),
                ("norm_weight", P), ("post", P), ("comb", P), ("layer_input", P), ("residual_out", P),
                ("workspace", P), ("workspace_size", C.c_size_t), ("tokens", I32), ("hidden", I32),
                ("broadcast", I32), ("reserved", I32), ("params", MhcParams)]


class MhcPostArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("comb", P), ("post", P), ("residual", P), ("x", P),
                ("out", P), ("tokens", I32), ("hidden", I32)]


class MhcFusedArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("comb", P), ("post", P), ("residual", P), ("x", P),
                ("fn", P), ("residual_out", P), ("mix", P), ("sqrsum", P), ("tokens", I32), ("hidden", I32),
                ("splits", I32), ("reserved", I32)]


class MhcPreDelayedArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("residual", P), ("x", P), ("fn", P), ("scale", P),
                ("base", P), ("pre_mix", P), ("norm_weight", P), ("post", P), ("comb", P), ("layer_input", P),
                ("next_pre_mix", P), ("workspace", P), ("workspace_size", C.c_size_t), ("tokens", I32),
                ("hidden", I32), ("x_width", I32), ("reserved", I32), ("params", MhcParams)]


class MhcFusedDelayedArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("x", P), ("residual", P), ("post_in", P), ("comb_in", P),
                ("fn", P), ("scale", P), ("base", P), ("pre_mix", P), ("norm_weight", P), ("residual_out", P),
                ("post", P), ("comb", P), ("layer_input", P), ("next_pre_mix", P), ("aux", P), ("workspace", P),
                ("workspace_size", C.c_size_t), ("tokens", I32), ("hidden", I32), ("params", MhcParams)]


class MhcPrenormGemmArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("residual", P), ("fn", P), ("mix", P), ("sqrsum", P),
                ("tokens", I32), ("hidden", I32), ("splits", I32), ("broadcast", I32)]


class MhcPreArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("mix", P), ("sqrsum", P), ("scale", P), ("base", P),
                ("residual", P), ("norm_weight", P), ("post", P), ("comb", P), ("layer_input", P),
                ("residual_out", P), ("tokens", I32), ("hidden", I32), ("splits", I32), ("broadcast", I32),
                ("params", MhcParams)]


class FmhaArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("q", P), ("k", P), ("v", P), ("out", P), ("softmax_lse", P),
                ("cu_seqlens_q", P), ("cu_seqlens_k", P), ("dtype", C.c_int), ("batch", I32), ("total_q", I32),
                ("hq", I32), ("hk", I32), ("head_dim", I32), ("head_dim_v", I32), ("max_seqlen_q", I32),
                ("q_row_stride", C.c_int64), ("k_row_stride", C.c_int64), ("v_row_stride", C.c_int64),
                ("out_row_stride", C.c_int64), ("softmax_scale", C.c_float), ("logits_soft_cap", C.c_float),
                ("causal", I32), ("window_left", I32), ("window_right", I32), ("total_k", C.c_int64)]


DTYPE = {"float32": 0, "float16": 1, "bfloat16": 2}


def load(path):
    lib = C.CDLL(path)
    lib.aiter_aot_topk_softmax.argtypes = [C.POINTER(TopkArgs), P]
    lib.aiter_aot_moe_sorting.argtypes = [C.POINTER(SortArgs), P]
    lib.aiter_aot_moe_sorting_workspace_size.restype = C.c_size_t
    lib.aiter_aot_moe_sorting_workspace_size.argtypes = [C.c_int32, C.c_int32, C.c_int32]
    lib.aiter_aot_mhc_pre_full.argtypes = [C.POINTER(MhcPreFullArgs), P]
    lib.aiter_aot_mhc_prenorm_gemm.argtypes = [C.POINTER(MhcPrenormGemmArgs), P]
    lib.aiter_aot_mhc_pre.argtypes = [C.POINTER(MhcPreArgs), P]
    lib.aiter_aot_mhc_post.argtypes = [C.POINTER(MhcPostArgs), P]
    lib.aiter_aot_mhc_fused_post_pre.argtypes = [C.POINTER(MhcFusedArgs), P]
    lib.aiter_aot_mhc_pre_delayed.argtypes = [C.POINTER(MhcPreDelayedArgs), P]
    lib.aiter_aot_mhc_fused_post_pre_delayed.argtypes = [C.POINTER(MhcFusedDelayedArgs), P]
    lib.aiter_aot_fmha_varlen_fwd.argtypes = [C.POINTER(FmhaArgs), P]
    lib.aiter_aot_mhc_workspace_size.restype = C.c_size_t
    lib.aiter_aot_mhc_workspace_size.argtypes = [C.c_int32, C.c_int32]
    lib.aiter_aot_mhc_splits.argtypes = [C.c_int32, C.c_int32, C.POINTER(C.c_int32)]
    lib.aiter_aot_last_error.restype = C.c_char_p
    lib.aiter_aot_gpu_library.restype = C.c_char_p
    return lib


def topk_args(gating, weights, ids, tei, k, renorm):
    t, e = gating.shape
    return TopkArgs(C.sizeof(TopkArgs), gating.data_ptr(), DTYPE[str(gating.dtype).split(".")[1]],
                    gating.stride(0), t, e, k, int(renorm), weights.data_ptr(), ids.data_ptr(),
                    tei.data_ptr() if tei is not None else None)


def check(lib, status, what):
    if status != 0:
        raise RuntimeError(f"{what}: status {status}: {lib.aiter_aot_last_error().decode()}")


# ---- timing (GPU time in µs, median of `reps`; `sets` are inputs rotated so that no run finds
# the previous run's data in cache) ----

def bench(fn, sets, reps=200):
    """Time per timed region of one fn(set) call, CUDA events around it."""
    import torch
    for i in range(10):
        fn(sets[i % len(sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(sets[i % len(sets)])
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e3)
    times.sort()
    return times[len(times) // 2]


def bench_interleaved(fns, reps=30):
    """Median time of each fn(0) with the fns taken in turn, one call each a round, so that the
    card's clock drifting (power, heat) weighs on all of them alike: A/B of builds."""
    import torch
    for fn in fns:
        fn(0)
    torch.cuda.synchronize()
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, t in zip(fns, times):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(0)
            b.record()
            b.synchronize()
            t.append(a.elapsed_time(b) * 1e3)
    return [sorted(t)[len(t) // 2] for t in times]


def bench_graph(fn, sets, reps=200):
    """GPU time only: each set's launches captured in a CUDA graph, replays timed (the replay's
    own launch included)."""
    import torch
    graphs = []
    torch.cuda.synchronize()
    for x in sets:
        fn(x)  # warm up outside capture
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(x)
        graphs.append(g)
    return bench(lambda g: g.replay(), graphs, reps)


def bench_stream(fn, sets, calls, reps=50):
    """GPU time per call in a stream of calls: one CUDA graph holding `calls` calls, rotating
    over the sets, replayed; the replay's launch cost is shared by all of them, as it is by
    the ops of a model's captured step."""
    import torch
    torch.cuda.synchronize()
    for x in sets:
        fn(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for c in range(calls):
            fn(sets[c % len(sets)])
    return bench(lambda _: g.replay(), [0], reps) / calls


def copy_bandwidth():
    """Device-to-device copy of 1 GiB, read + write, in TB/s: the yardstick of the % columns."""
    import torch
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    us = bench(lambda _: y.copy_(x), [0], reps=30)
    return 2 * x.numel() / (us * 1e-6) / 1e12
