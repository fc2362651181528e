"""FMHA varlen forward: aiter-aot (libaiter_aot.so through ctypes, on PyTorch tensors and the current
stream) side by side with PyTorch's scaled_dot_product_attention (FLASH_ATTENTION and
CUDNN_ATTENTION backends) and aten._flash_attention_forward (varlen), same inputs, one process.
bf16, d = 128, 8 sequences x 4096, 32 heads, causal and not. CUDA events, median; TFLOP/s =
4 b h s_q s_k d, halved for causal. Then every head dim (64, 128, 192/128, 256) at the same shape,
ours against the flash backend where d = d_v, and against other builds of the library named with
--compare NAME=PATH (an earlier commit's, say), each loaded into this process.
Usage: python3 bench/bench_fmha.py LIBAITER_AOT_SO OUT_DIR [--compare NAME=PATH ...]"""
import ctypes as C
import json
import os
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(__file__))
import aot_bench as A  # noqa: E402
from aot_bench import FmhaArgs, bench  # noqa: E402

lib = A.load(sys.argv[1])
out_dir = sys.argv[2] if len(sys.argv) > 2 else "."
others = []  # (name, library) from --compare NAME=PATH
for i, a in enumerate(sys.argv[3:-1], 3):
    if a == "--compare":
        name, path = sys.argv[i + 1].split("=", 1)
        others.append((name, A.load(path)))
dev = torch.device("cuda")


def run_ours(lib_, q, k, v, out, lse, cu, b, s, h, d, dv, causal):
    """A callable that runs lib_'s fmha on the tensors (k, v with h heads too; rows dense)."""
    args = FmhaArgs(C.sizeof(FmhaArgs), q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(),
                    cu.data_ptr(), cu.data_ptr(), 2, b, b * s, h, h, d, dv, s, 0, 0, 0, 0, d ** -0.5, 0.0,
                    int(causal), -1, -1)
    return lambda _: A.check(lib_, lib_.aiter_aot_fmha_varlen_fwd(args, torch.cuda.current_stream().cuda_stream), "fmha")


def head_dims(b, s, h):
    """Every head dim: ours (and each --compare build) and, where d = d_v, the flash backend."""
    rows = []
    for d, dv in ((64, 64), (128, 128), (192, 128), (256, 256)):
        q, k = (torch.randn(b * s, h, d, device=dev, dtype=torch.bfloat16) for _ in range(2))
        v = torch.randn(b * s, h, dv, device=dev, dtype=torch.bfloat16)
        out = torch.empty(b * s, h, dv, device=dev, dtype=torch.bfloat16)
        lse = torch.empty(h, b * s, device=dev)
        cu = torch.arange(0, (b + 1) * s, s, device=dev, dtype=torch.int32)
        q4, k4, v4 = (x.view(b, s, h, -1).transpose(1, 2) for x in (q, k, v))
        for causal in (False, True):
            flops = 2 * b * h * s * s * (d + dv) / (2 if causal else 1)
            res = {"d": d, "dv": dv, "causal": causal}
            for name, l in [("ours", lib)] + others:
                res[name + "_tflops"] = flops / (bench(run_ours(l, q, k, v, out, lse, cu, b, s, h, d, dv, causal), [0], reps=10) * 1e-6) / 1e12
            if d == dv:
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    us = bench(lambda _: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal), [0], reps=10)
                res["flash_tflops"] = flops / (us * 1e-6) / 1e12
            rows.append(res)
            print("  d %3d/%3d causal=%-5s " % (d, dv, causal) + ", ".join(f"{key[:-7]} {val:.1f}" for key, val in res.items() if key.endswith("_tflops"))
                  + (f"; ours / flash = {res['ours_tflops'] / res['flash_tflops']:.2f}" if d == dv else ""))
    return rows


def main():
    b, s, h, d = 8, 4096, 32, 128
    name = torch.cuda.get_device_name()
    print(f"device {name}, date {time.strftime('%Y-%m-%d')}; bf16, {b} x {s} tokens, {h} heads, d = {d}")
    q, k, v = (torch.randn(b * s, h, d, device=dev, dtype=torch.bfloat16) for _ in range(3))
    out = torch.empty_like(q)
    lse = torch.empty(h, b * s, device=dev)
    cu = torch.arange(0, (b + 1) * s, s, device=dev, dtype=torch.int32)
    q4, k4, v4 = (x.view(b, s, h, d).transpose(1, 2) for x in (q, k, v))
    rows = []
    for causal in (False, True):
        ours = run_ours(lib, q, k, v, out, lse, cu, b, s, h, d, d, causal)
        ours(0)
        ref = torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal)
        torch.cuda.synchronize()
        err = ((out.view(b, s, h, d).transpose(1, 2).float() - ref.float()).norm() / ref.float().norm()).item()
        assert err < 2e-2, f"fmha differs from SDPA: relative error {err}"
        flops = 4 * b * h * s * s * d / (2 if causal else 1)
        res = {"causal": causal, "rel_err_vs_sdpa": err, "ours_us": bench(ours, [0], reps=20)}
        for key, backend in (("flash_us", SDPBackend.FLASH_ATTENTION), ("cudnn_us", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    res[key] = bench(lambda _: torch.nn.functional.scaled_dot_product_attention(q4, k4, v4, is_causal=causal), [0], reps=20)
            except Exception as ex:  # report, keep the rest
                res[key] = float("nan")
                print(f"  {key}: {type(ex).__name__}: {ex}"[:200])
        try:
            res["aten_varlen_us"] = bench(lambda _: torch.ops.aten._flash_attention_forward(
                q, k, v, cu, cu, s, s, 0.0, causal, False, scale=d ** -0.5), [0], reps=20)
        except Exception as ex:
            res["aten_varlen_us"] = float("nan")
            print(f"  aten varlen: {type(ex).__name__}: {ex}"[:200])
        tf = {k2.replace("_us", "_tflops"): flops / (v2 * 1e-6) / 1e12 for k2, v2 in res.items() if k2.endswith("_us")}
        res.update(tf)
        rows.append(res)
        print(f"causal={causal}: ours {tf['ours_tflops']:.1f} TFLOP/s ({res['ours_us']:.0f} us), flash "
              f"{tf['flash_tflops']:.1f}, cuDNN {tf['cudnn_tflops']:.1f}, aten varlen {tf['aten_varlen_tflops']:.1f}; "
              f"ours / flash = {tf['ours_tflops'] / tf['flash_tflops']:.2f}, ours / cuDNN = "
              f"{tf['ours_tflops'] / tf['cudnn_tflops']:.2f}; relative error vs SDPA {err:.2e}")
    print(f"head dims (TFLOP/s = 2 b h s_q s_k (d + d_v), halved for causal; {b} x {s} tokens, {h} heads, bf16):")
    dims = head_dims(b, s, h)
    with open(os.path.join(out_dir, "bench_fmha.json"), "w") as f:
        json.dump({"device": name, "date": time.strftime("%Y-%m-%d"), "rows": rows, "head_dims": dims}, f, indent=1)


if __name__ == "__main__":
    main()
