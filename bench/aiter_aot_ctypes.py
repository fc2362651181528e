"""ctypes bindings of libaiter_aot.so for the benchmarks: the args structs of
runtime/include/aiter_aot_moe.h and aiter_aot_mhc.h, field for field."""
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


class MhcPrenormGemmArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("residual", P), ("fn", P), ("mix", P), ("sqrsum", P),
                ("tokens", I32), ("hidden", I32), ("splits", I32), ("broadcast", I32)]


class MhcPreArgs(C.Structure):
    _fields_ = [("size", C.c_size_t), ("hc_mult", I32), ("mix", P), ("sqrsum", P), ("scale", P), ("base", P),
                ("residual", P), ("norm_weight", P), ("post", P), ("comb", P), ("layer_input", P),
                ("residual_out", P), ("tokens", I32), ("hidden", I32), ("splits", I32), ("broadcast", I32),
                ("params", MhcParams)]


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
